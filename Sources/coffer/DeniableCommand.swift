// `coffer deniable …`: the CoverDrop-style deniable store, by hand. Each command is one
// process, so a session lasts one command and ends (locks) when the process exits.

import ArgumentParser
import Coffer
import CofferDevelopment
import CofferSync
import Foundation

#if canImport(Glibc)
import Glibc
#endif

struct DeniableCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "deniable",
        abstract: "Deniable storage: vault, private sending queue, mailbox, dead drops.",
        discussion: """
            Files live in STORE/deniable. Public keys and dead drops come from a development CoverNode kept in \
            STORE/deniable-dev-service, or in --dev-service DIR (real keys; an app bundles its service's trust \
            anchor instead); stores that share one service receive the same dead drops. Every command first runs \
            the app-start routine (the same file work for every install, used or not); `start` runs only it. \
            The vault's passphrase comes from --passphrase-env VAR, else it is read from standard input.
            """,
        subcommands: [
            Start.self, Init.self, Unlock.self, Status.self, Send.self, Dequeue.self, Background.self, Lock.self, Reply.self,
            CheckVectors.self,
        ])

    @OptionGroup var storeOptions: StoreOptions
    @OptionGroup var vault: VaultPassphraseOptions

    struct Start: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Run only the app-start routine: rewrite vault and queue, refresh keys, fetch dead drops.")
        @OptionGroup var storeOptions: StoreOptions
        @OptionGroup var service: DeniableServiceOptions
        @Flag(
            help:
                "Development: also fetch the service's dead drops now, whenever the last fetch was (the start routine fetches at most hourly, as CoverDrop's apps do)."
        )
        var fetchDeadDrops = false

        func run() async throws {
            let (store, _) = try await DeniableCLI.open(storeOptions, service)
            if fetchDeadDrops { await store.refreshDeadDrops() }
            let s = try await store.status()
            try await store.close()
            print(JSONValue.object([("started", .bool(true))] + DeniableCLI.startFields(s.lastStart)).jsonText)
        }
    }

    struct Init: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Replace the vault with a new one and print its new passphrase (write it down).")
        @OptionGroup var storeOptions: StoreOptions
        @OptionGroup var service: DeniableServiceOptions

        func run() async throws {
            let (store, _) = try await DeniableCLI.open(storeOptions, service)
            TestPause.at("deniable-ready") // debug builds only: lets tests act between the open and the new vault
            let passphrase = try await store.createVault()
            try await store.close()
            print(
                JSONValue.object([
                    ("passphrase", .string(passphrase)),
                    ("vault", .string(store.folder.appendingPathComponent("vault").path)),
                ]).jsonText)
        }
    }

    struct Unlock: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Unlock the vault, collect replies from dead drops, print the mailbox, lock again.")
        @OptionGroup var storeOptions: StoreOptions
        @OptionGroup var vault: VaultPassphraseOptions
        @OptionGroup var service: DeniableServiceOptions

        func run() async throws {
            let (store, _) = try await DeniableCLI.open(storeOptions, service)
            try await store.unlock(passphrase: vault.passphrase())
            let messages = try await store.mailbox()
            let queued = try await store.queuedMessageCount()
            try await store.close()
            print(
                JSONValue.object([
                    ("unlocked", .bool(true)),
                    ("queued", .number(String(queued))),
                    ("mailbox", .array(messages.map(DeniableCLI.json))),
                ]).jsonText)
        }
    }

    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print sizes and counts; with a passphrase also the queue fill level and mailbox size.")
        @OptionGroup var storeOptions: StoreOptions
        @OptionGroup var vault: VaultPassphraseOptions
        @OptionGroup var service: DeniableServiceOptions

        func run() async throws {
            let (store, _) = try await DeniableCLI.open(storeOptions, service)
            if vault.variable != nil {
                try await store.unlock(passphrase: vault.passphrase())
            }
            let s = try await store.status()
            try await store.close()
            func n(_ v: Int) -> JSONValue { .number(String(v)) }
            var fields: [(String, JSONValue)] = [
                ("unlocked", .bool(s.unlocked)), ("vaultFileBytes", n(s.vaultFileBytes)),
                ("queueFileBytes", n(s.queueFileBytes)), ("queueSlots", n(s.queueSlots)),
                ("deadDrops", n(s.deadDrops)), ("verifiedKeys", n(s.verifiedKeys)),
            ]
            if let q = s.queuedMessages { fields.append(("queued", n(q))) }
            if let m = s.mailboxMessages { fields.append(("mailbox", n(m))) }
            if let t = s.publicKeysFetchedAt { fields.append(("publicKeysFetchedAt", .string(ISO8601DateFormatter().string(from: t)))) }
            fields += DeniableCLI.startFields(s.lastStart)
            print(JSONValue.object(fields).jsonText)
        }
    }

    struct Send: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Unlock, put a message in the sending queue, lock.")
        @OptionGroup var storeOptions: StoreOptions
        @OptionGroup var vault: VaultPassphraseOptions
        @OptionGroup var service: DeniableServiceOptions
        @Option(
            help: ArgumentHelp(
                "Recipient: a journalist id from the service's key bundle (the development service lists alice, bob and journalist).",
                valueName: "id"))
        var to: String
        @Argument(help: "Message text.") var text: String

        func run() async throws {
            let (store, _) = try await DeniableCLI.open(storeOptions, service)
            try await store.unlock(passphrase: vault.passphrase())
            TestPause.at("deniable-ready") // debug builds only: lets tests line processes up
            let message = try await store.send(text, to: to)
            let queued = try await store.queuedMessageCount()
            try await store.close()
            print(JSONValue.object([("sent", DeniableCLI.json(message)), ("queued", .number(String(queued)))]).jsonText)
        }
    }

    struct Dequeue: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Background sender: take the head of the queue (no passphrase), append a cover, print the item.")
        @OptionGroup var storeOptions: StoreOptions
        @OptionGroup var service: DeniableServiceOptions

        func run() async throws {
            let (store, node) = try await DeniableCLI.open(storeOptions, service)
            TestPause.at("deniable-ready") // debug builds only: lets tests line processes up
            let item = try await store.dequeue()
            var fields: [(String, JSONValue)] = [("item", .string(item.base64EncodedString()))]
            // What the development CoverNode reads from it: a real message, or a cover.
            if let real = node.read(queueItem: item) {
                fields.append(
                    (
                        "coverNode",
                        .object([
                            ("recipient", .string(real.recipient)), ("text", .string(real.text)),
                            ("replyKey", .string(real.replyKey.base64EncodedString())),
                        ])
                    ))
            } else {
                fields.append(("coverNode", .string("cover")))
            }
            print(JSONValue.object(fields).jsonText)
        }
    }

    struct Background: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Background sender: one run of the schedule (2 queue items to the service, at most hourly), no passphrase.",
            discussion: """
                What an app's background task (BGAppRefreshTask, WorkManager) runs. The start routine first catches up \
                a run that was due; the run itself is skipped when the last successful one was less than an hour \
                ago. Prints {"sent": N, "nextRunAfter": TIME, "rateLimited": BOOL, "failed": BOOL} (of the start's \
                catch-up when it ran); schedule the next run at nextRunAfter. Items go to the development service, \
                which records the real messages it receives.
                """)
        @OptionGroup var storeOptions: StoreOptions
        @OptionGroup var service: DeniableServiceOptions
        @Option(
            help: ArgumentHelp(
                "Run as if the time were this (ISO 8601, e.g. 2026-11-25T21:00:00Z); default: now.", valueName: "time"))
        var now: String?

        func validate() throws {
            if let now, ISO8601DateFormatter().date(from: now) == nil {
                throw ValidationError("--now \(now) is not an ISO 8601 time such as 2026-11-25T21:00:00Z")
            }
        }

        func run() async throws {
            // validate() checked that it parses.
            let time = now.flatMap { ISO8601DateFormatter().date(from: $0) }
            let (store, _) = try await DeniableCLI.open(storeOptions, service, now: time)
            // The start routine may have run it already (it was due): that run is this one.
            let report: BackgroundSendReport
            if let caughtUp = try await store.status().lastStart?.backgroundRun {
                report = caughtUp
            } else {
                report = try await store.runBackgroundSend()
            }
            try await store.close()
            print(
                JSONValue.object([
                    ("sent", .number(String(report.sent))),
                    ("nextRunAfter", .string(ISO8601DateFormatter().string(from: report.nextRunAfter))),
                    ("rateLimited", .bool(report.rateLimited)), ("failed", .bool(report.failed)),
                ]).jsonText)
        }
    }

    struct Lock: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "End any session: the vault is rewritten with fresh bytes, used or not.")
        @OptionGroup var storeOptions: StoreOptions
        @OptionGroup var service: DeniableServiceOptions

        func run() async throws {
            let (store, _) = try await DeniableCLI.open(storeOptions, service)
            try await store.lock()
            print(JSONValue.object([("locked", .bool(true))]).jsonText)
        }
    }

    struct Reply: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Development: the service publishes a dead drop with a journalist's reply to this user (needs the passphrase to learn the user's public key); every store of the service fetches it at its next start."
        )
        @OptionGroup var storeOptions: StoreOptions
        @OptionGroup var vault: VaultPassphraseOptions
        @OptionGroup var service: DeniableServiceOptions
        @Option(help: ArgumentHelp("Sender: a journalist id of the development service (alice, bob, journalist).", valueName: "id"))
        var from: String
        @Option(
            help: ArgumentHelp(
                "Instead of a text, hand the conversation over to this journalist (CoverDrop's handover message).", valueName: "id"))
        var handoverTo: String?
        @Argument(help: "Reply text (none with --handover-to).") var text: String?

        func validate() throws {
            if (text == nil) == (handoverTo == nil) { throw ValidationError("give a reply text or --handover-to ID (exactly one)") }
        }

        func run() async throws {
            let (store, node) = try await DeniableCLI.open(storeOptions, service)
            try await store.unlock(passphrase: vault.passphrase())
            let userKey = try await store.userPublicKey()
            try await store.close()
            // validate() made sure exactly one of them is given.
            let message: JournalistMessage = if let text { .text(text) } else { .handover(handoverTo!) }
            let drop = try node.publish([(from, message)], to: userKey)
            // This store fetches what the service published at once (`kept`), whenever it
            // last fetched; other stores of the service fetch it at their next due fetch.
            let kept = await store.refreshDeadDrops()
            try await store.close()
            print(
                JSONValue.object([
                    ("deadDrop", .number(String(drop.id))), ("kept", .number(String(kept))),
                    ("published", .bool(true)),
                ]).jsonText)
        }
    }
}

extension DeniableCommand {
    struct CheckVectors: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "check-vectors",
            abstract: "Check a folder laid out like CoverDrop's common/tests/vectors/ through Coffer's implementation.",
            discussion: """
                Opens each box with the given secret keys and compares it with the message, verifies each signature and \
                reproduces it from the secret key, rebuilds the certificate data, and opens the journalist dead drop. \
                Prints one JSON object with a field per vector group ("pass", "fail: …" or "skipped (absent)"). Exit 0 \
                when every group present passes, 5 when one fails, 2 when the folder is not in that layout.
                """)
        @Argument(help: ArgumentHelp("The vectors folder (holding anonymous_box/, signature/, …).", valueName: "dir"))
        var directory: String

        func run() throws {
            let results = try CoverDropVectors.check(folder: URL(fileURLWithPath: directory))
            print(JSONValue.object(results.map { ($0.group, .string($0.outcome.description)) }).jsonText)
            if results.contains(where: { if case .fail = $0.outcome { return true } else { return false } }) { throw ExitCode(5) }
        }
    }
}

/// The vault's passphrase (`deniable unlock|status|send|reply`).
struct VaultPassphraseOptions: ParsableArguments {
    @Option(
        name: .customLong("passphrase-env"),
        help: ArgumentHelp(
            "Name of an environment variable holding the vault's passphrase (without it, the passphrase is typed or read from standard input).",
            valueName: "var"))
    var passphraseEnv: String?

    /// `--passphrase-env` is also the root's (`coffer --passphrase-env VAR deniable unlock`, as the
    /// tests and docs have it); the parser gives the option to the root wherever it stands.
    @ParentCommand var coffer: CofferCommand

    /// The variable named on the command line, if any.
    var variable: String? { passphraseEnv ?? coffer.walletKey.passphraseEnv }

    func passphrase() throws -> String { try DeniableCLI.passphrase(variable: variable) }
}

/// Where the development service lives (`deniable` subcommands).
struct DeniableServiceOptions: ParsableArguments {
    @Option(
        name: .customLong("dev-service"),
        help: ArgumentHelp(
            "Folder of the development CoverNode (default: STORE/deniable-dev-service); stores that share it receive the same dead drops.",
            valueName: "dir"))
    var devService: String?
}

enum DeniableCLI {
    /// Opens the store against the development service (also its transport); `now` fixes the
    /// clock of the store and the service (`deniable background --now`).
    static func open(_ options: StoreOptions, _ service: DeniableServiceOptions, now: Date? = nil) async throws -> (
        DeniableStorage, DevelopmentCoverNode
    ) {
        let serviceFolder =
            service.devService.map { URL(fileURLWithPath: $0) }
            ?? options.storeDirectory.appendingPathComponent("deniable-dev-service")
        let clock: @Sendable () -> Date
        if let now { clock = { now } } else { clock = { Date() } }
        let node = try DevelopmentCoverNode(folder: serviceFolder, clock: clock)
        let store = try await DeniableStorage(
            folder: options.storeDirectory.appendingPathComponent("deniable"),
            trustAnchor: node.trustAnchor, keySource: node, deadDropSource: node, transport: node, clock: clock)
        return (store, node)
    }

    /// What the app-start routine of this run found, as JSON fields.
    static func startFields(_ report: DeniableStartReport?) -> [(String, JSONValue)] {
        guard let r = report else { return [] }
        return [
            (
                "start",
                .object([
                    ("created", .array(r.created.map { .string($0) })),
                    ("replaced", .array(r.replaced.map { .string($0) })),
                    ("converted", .array(r.converted.map { .string($0) })),
                    ("publicKeysRefreshed", .bool(r.publicKeysRefreshed)),
                    ("deadDropsReceived", .number(String(r.deadDropsReceived))),
                ])
            )
        ]
    }

    /// The vault's passphrase: from the environment variable `variable` names, else typed or read from standard input.
    static func passphrase(variable: String?) throws -> String {
        if let variable {
            return try CLIKeys.passphrase(fromEnvironment: variable, option: "--passphrase-env")
        }
        // At a terminal the passphrase is typed without echo; otherwise it is read as one line.
        let typed: String?
        if isatty(STDIN_FILENO) == 1, let raw = getpass("passphrase: ") {
            typed = String(cString: raw)
        } else {
            typed = readLine(strippingNewline: true)
        }
        guard let line = typed, !line.isEmpty else {
            throw DeniableError.invalidPassphrase("none was given (use --passphrase-env VAR or type it)")
        }
        return line
    }

    static func json(_ m: MailboxMessage) -> JSONValue {
        .object(
            [
                ("direction", .string(m.direction == .sent ? "sent" : "received")),
                ("peer", .string(m.peer)),
                ("text", .string(m.text)),
                ("date", .string(ISO8601DateFormatter().string(from: m.date))),
            ] + (m.handoverTo.map { [("handoverTo", JSONValue.string($0))] } ?? []))
    }
}
