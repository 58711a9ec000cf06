// Deniability as an adversary checks it: two stores driven through the same schedule, one of
// them also used, each copied before and after, and the copies compared file by file.

import CofferCrypto
import CofferDeniable
import CofferDevelopment
import CofferTestSupport
import Foundation
import Testing

/// One copy of a deniable folder: what an adversary with the device's storage reads.
struct DeniableSnapshot {
    struct File: Equatable {
        var bytes: Data
        var mode: Int
        var mtime: Date
    }

    var folderMode: Int
    var folderMtime: Date
    var files: [String: File]

    init(_ folder: URL) throws {
        let fm = FileManager.default
        let attributes = try fm.attributesOfItem(atPath: folder.path)
        folderMode = (attributes[.posixPermissions] as? NSNumber)?.intValue ?? -1
        folderMtime = attributes[.modificationDate] as? Date ?? .distantPast
        files = [:]
        for name in try fm.contentsOfDirectory(atPath: folder.path) {
            let path = folder.appendingPathComponent(name).path
            let a = try fm.attributesOfItem(atPath: path)
            files[name] = File(
                bytes: try Data(contentsOf: URL(fileURLWithPath: path)),
                mode: (a[.posixPermissions] as? NSNumber)?.intValue ?? -1,
                mtime: a[.modificationDate] as? Date ?? .distantPast)
        }
    }

    /// The cleartext header fields of a file, by name, as an adversary parses them.
    static func headerFields(_ name: String, _ bytes: Data) -> [String: Data] {
        func field(_ range: Range<Int>) -> Data { bytes.count >= range.upperBound ? bytes.subdata(in: range) : Data() }
        switch name {
        case "vault":
            return ["magic": field(0..<8), "contentBytes": field(8..<12), "outerSalt": field(12..<28), "outerNonce": field(28..<52)]
        case "sending-queue":
            return [
                "magic": field(0..<8), "slots": field(8..<12), "itemBytes": field(12..<16), "hintBytes": field(16..<20),
                "outerSalt": field(20..<36), "outerNonce": field(36..<60),
            ]
        case let n where n.hasSuffix(".sqlite"):
            // SQLite's database header (https://sqlite.org/fileformat.html, section 1.3).
            let offsets: [(String, Range<Int>)] = [
                ("writeVersion", 18..<19), ("readVersion", 19..<20), ("changeCounter", 24..<28), ("pages", 28..<32),
                ("freelistTrunk", 32..<36), ("freelistPages", 36..<40), ("schemaCookie", 40..<44), ("schemaFormat", 44..<48),
                ("largestRoot", 52..<56), ("userVersion", 60..<64), ("versionValidFor", 92..<96), ("sqliteVersion", 96..<100),
            ]
            return Dictionary(uniqueKeysWithValues: offsets.map { ($0.0, field($0.1)) })
        case let n where n.hasSuffix(".json"):
            // Cleartext through and through: its top-level keys and their values.
            guard let object = try? JSONSerialization.jsonObject(with: bytes) as? [String: Any] else { return ["whole": bytes] }
            return object.mapValues {
                (try? JSONSerialization.data(withJSONObject: $0, options: [.fragmentsAllowed, .sortedKeys])) ?? Data()
            }
        default:
            return [:]
        }
    }

    /// How each file changed from `self` to `after`: what must be the same for a user and a non-user.
    func changes(to after: DeniableSnapshot) -> [String: String] {
        var out = ["<folder>": "mode \(String(after.folderMode, radix: 8)) mtimeChanged \(after.folderMtime != folderMtime)"]
        for name in Set(files.keys).union(after.files.keys) {
            guard let new = after.files[name] else {
                out[name] = "removed"
                continue
            }
            guard let old = files[name] else {
                out[name] = "created size \(new.bytes.count) mode \(String(new.mode, radix: 8))"
                continue
            }
            let oldFields = Self.headerFields(name, old.bytes)
            let newFields = Self.headerFields(name, new.bytes)
            let changedFields = Set(oldFields.keys).union(newFields.keys).filter { oldFields[$0] != newFields[$0] }.sorted()
            out[name] =
                "size \(old.bytes.count)->\(new.bytes.count) mode \(String(new.mode, radix: 8)) "
                + "bytesChanged \(old.bytes != new.bytes) mtimeChanged \(old.mtime != new.mtime) fields \(changedFields)"
        }
        return out
    }

    /// What one copy alone shows: names, sizes, modes, and whether every file carries one time.
    var shape: [String: String] {
        var out = ["<folder>": "mode \(String(folderMode, radix: 8))"]
        for (name, file) in files { out[name] = "size \(file.bytes.count) mode \(String(file.mode, radix: 8))" }
        out["<times>"] = "distinct mtimes \(Set(files.values.map(\.mtime) + [folderMtime]).count)"
        return out
    }
}

/// A clock both stores and the service share.
final class SharedClock: @unchecked Sendable {
    private let lock = NSLock()
    private var current = Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down))
    var now: Date { lock.withLock { current } }
    func advance(_ seconds: TimeInterval) { lock.withLock { current = current.addingTimeInterval(seconds) } }
    var function: @Sendable () -> Date { { [self] in now } }
}

/// Two installs of one app against one development service: `plain` never uses the feature.
struct TwoStores {
    let root = TemporaryFolders.path("coffer-deniable-snapshot")
    let clock = SharedClock()
    let configuration: DeniableConfiguration = {
        var c = DeniableConfiguration()
        c.vaultContentBytes = 16 * 1024
        c.passphraseKDF = .minimum
        return c
    }()
    let node: DevelopmentCoverNode

    init() throws {
        node = try DevelopmentCoverNode(
            folder: root.appendingPathComponent("service"), configuration: configuration,
            clock: clock.function)
    }

    func folder(_ name: String) -> URL { root.appendingPathComponent(name).appendingPathComponent("deniable") }

    /// An app start: opening the store runs the start routine.
    func start(_ name: String) async throws -> DeniableStorage {
        try await DeniableStorage(
            folder: folder(name), configuration: configuration,
            trustAnchor: TrustAnchor(publicKey: node.trustAnchor.publicKey, notValidAfter: clock.now.addingTimeInterval(365 * 86_400)),
            keySource: node, deadDropSource: node, transport: node, clock: clock.function,
            // One random source for both: their background schedules differ only if use shows.
            random: { 0.5 })
    }

    func snapshot() throws -> (user: DeniableSnapshot, plain: DeniableSnapshot) {
        (try DeniableSnapshot(folder("user")), try DeniableSnapshot(folder("plain")))
    }
}

/// Checks that two before/after pairs look alike, and each copy alone too.
func expectIndistinguishable(
    before: (user: DeniableSnapshot, plain: DeniableSnapshot),
    after: (user: DeniableSnapshot, plain: DeniableSnapshot),
    sourceLocation: SourceLocation = #_sourceLocation
) {
    #expect(before.user.shape == before.plain.shape, sourceLocation: sourceLocation)
    #expect(after.user.shape == after.plain.shape, sourceLocation: sourceLocation)
    let user = before.user.changes(to: after.user)
    let plain = before.plain.changes(to: after.plain)
    #expect(user == plain, sourceLocation: sourceLocation)
    // The comparison sees changes at all: the start routine rewrites vault and queue in both.
    #expect(user["vault"]?.contains("bytesChanged true") == true, "\(user)", sourceLocation: sourceLocation)
    #expect(user["sending-queue"]?.contains("bytesChanged true") == true, "\(user)", sourceLocation: sourceLocation)
    #expect(user["secure-element-p256.key"]?.contains("bytesChanged false") == true, "\(user)", sourceLocation: sourceLocation)
    #expect(user["storage.key"]?.contains("bytesChanged false") == true, "\(user)", sourceLocation: sourceLocation)
}

@Suite("Deniable storage across storage snapshots")
struct DeniableSnapshotTests {
    @Test("a user who sets up, sends, unlocks and locks changes the same files the same way as a non-user")
    func librarySchedule() async throws {
        let stores = try TwoStores()
        for name in ["user", "plain"] { _ = try await stores.start(name) }
        let before = try stores.snapshot()

        // Day 1: both apps start; the user sets up the feature and sends; both background-send.
        let user = try await stores.start("user")
        let plain = try await stores.start("plain")
        let passphrase = try await user.createVault()
        try await user.unlock(passphrase: passphrase)
        try await user.send("meet at noon", to: "journalist")
        try await user.lock()
        for store in [user, plain] { _ = try await store.runBackgroundSend() }
        // Two hours later: both start again (the service publishes a dead drop), send, and the user reads.
        stores.clock.advance(2 * 3_600)
        let user2 = try await stores.start("user")
        let plain2 = try await stores.start("plain")
        for store in [user2, plain2] { _ = try await store.dequeue() }
        try await user2.unlock(passphrase: passphrase)
        try await user2.lock()
        let after = try stores.snapshot()

        expectIndistinguishable(before: before, after: after)
        #expect(after.user.files["dead-drops.sqlite"]?.bytes != before.user.files["dead-drops.sqlite"]?.bytes)
    }

    @Test("background runs (caught up at start, rate-limited, failed, on time) change both stores the same way")
    func backgroundSchedule() async throws {
        let stores = try TwoStores()
        for name in ["user", "plain"] { _ = try await stores.start(name) }
        let before = try stores.snapshot()

        let user = try await stores.start("user")
        let plain = try await stores.start("plain")
        let passphrase = try await user.createVault()
        try await user.unlock(passphrase: passphrase)
        try await user.send("first", to: "journalist")
        try await user.send("second", to: "journalist")
        try await user.send("third", to: "journalist")
        try await user.lock()
        for store in [user, plain] { try await store.didEnterBackground() }
        // The system skipped the run: the next start catches it up.
        stores.clock.advance(30 * 60)
        let user2 = try await stores.start("user")
        let plain2 = try await stores.start("plain")
        #expect(try await user2.status().lastStart?.backgroundRun?.sent == 2)
        #expect(try await plain2.status().lastStart?.backgroundRun?.sent == 2)
        for store in [user2, plain2] { #expect(try await store.runBackgroundSend().rateLimited) }
        stores.clock.advance(70 * 60)
        for store in [user2, plain2] {
            #expect(try await store.runBackgroundSend().sent == 2)
            try await store.willEnterForeground()
        }
        let after = try stores.snapshot()

        expectIndistinguishable(before: before, after: after)
        #expect(try stores.node.delivered().map(\.text) == ["first", "second", "third"])
        #expect(after.user.files["background-schedule.json"]?.bytes != before.user.files["background-schedule.json"]?.bytes)
    }

    @Test("a reply that arrives for the user changes both stores the same way")
    func replySchedule() async throws {
        let stores = try TwoStores()
        let setup = try await stores.start("user")
        _ = try await stores.start("plain")
        let passphrase = try await setup.createVault()
        try await setup.unlock(passphrase: passphrase)
        let userKey = try await setup.userPublicKey()
        // CoverDrop collects replies only from journalists the user has written to.
        _ = try await setup.send("a tip", to: "journalist")
        try await setup.lock()
        // A later start for both, so that "before" follows the set-up as any start does (an
        // hour on: dead drops are fetched at most hourly).
        stores.clock.advance(3_600)
        for name in ["user", "plain"] { _ = try await stores.start(name) }
        let before = try stores.snapshot()

        try stores.node.publishReplies([("journalist", "got it")], to: userKey)
        stores.clock.advance(3_600)
        let user = try await stores.start("user")
        let plain = try await stores.start("plain")
        for store in [user, plain] { _ = try await store.dequeue() }
        try await user.unlock(passphrase: passphrase)
        let mailbox = try await user.mailbox()
        try await user.lock()
        let after = try stores.snapshot()

        #expect(mailbox.filter { $0.direction == .received }.map(\.text) == ["got it"])
        #expect(try await user.status().deadDrops == plain.status().deadDrops)
        expectIndistinguishable(before: before, after: after)
    }

    @Test("through the CLI: start, init, send, dequeue, background and status change both stores the same way and log nothing at info")
    func cliSchedule() async throws {
        let root = TemporaryFolders.path("coffer-deniable-cli-snapshot")
        let service = root.appendingPathComponent("service").path
        let user = root.appendingPathComponent("user")
        let plain = root.appendingPathComponent("plain")
        // Logs at .info and above go to stderr: a user's commands must log nothing a non-user's do not.
        func run(_ store: URL, _ args: [String], env: [String: String] = [:]) async throws -> CLIResult {
            let r = try await CLI.run(
                ["deniable"] + args + ["--dev-service", service], store: store, env: env.merging(["COFFER_LOG_LEVEL": "info"]) { a, _ in a }
            )
            #expect(r.status == 0, "\(args): \(r.stderr)")
            #expect(r.stderr.isEmpty, "\(args) logged: \(r.stderr)")
            return r
        }
        for store in [user, plain] { _ = try await run(store, ["start"]) }
        func snap() throws -> (user: DeniableSnapshot, plain: DeniableSnapshot) {
            (try DeniableSnapshot(user.appendingPathComponent("deniable")), try DeniableSnapshot(plain.appendingPathComponent("deniable")))
        }
        let before = try snap()

        let initialized = try await run(user, ["init"])
        let passphrase =
            (try JSONSerialization.jsonObject(with: Data(initialized.stdout.utf8)) as? [String: Any])?["passphrase"] as? String ?? ""
        let sent = try await CLI.run(
            ["--passphrase-env", "P", "deniable", "send", "--to", "alice", "hello", "--dev-service", service],
            store: user, env: ["P": passphrase, "COFFER_LOG_LEVEL": "info"])
        #expect(sent.status == 0 && sent.stderr.isEmpty, "send: \(sent.stderr)")
        _ = try await run(plain, ["start"])
        for store in [user, plain] {
            _ = try await run(store, ["dequeue"])
            _ = try await run(store, ["background"])
            _ = try await run(store, ["status"])
        }
        let after = try snap()
        expectIndistinguishable(before: before, after: after)
    }

    @Test("init succeeds on a store whose vault was truncated, and on one whose secure-element or storage key was deleted")
    func initRepairs() async throws {
        for damage in ["truncate vault", "delete key", "delete storage key", "garbage queue", "garbage dead drops"] {
            let store = TemporaryFolders.path("coffer-deniable-repair")
            let folder = store.appendingPathComponent("deniable")
            #expect(try await CLI.run(["deniable", "init"], store: store).status == 0)
            switch damage {
            case "truncate vault":
                try Data(try Data(contentsOf: folder.appendingPathComponent("vault")).prefix(100)).write(
                    to: folder.appendingPathComponent("vault"))
            case "delete key": try FileManager.default.removeItem(at: folder.appendingPathComponent("secure-element-p256.key"))
            case "delete storage key": try FileManager.default.removeItem(at: folder.appendingPathComponent("storage.key"))
            case "garbage queue": try Data(repeating: 7, count: 500).write(to: folder.appendingPathComponent("sending-queue"))
            default: try Data(repeating: 7, count: 5000).write(to: folder.appendingPathComponent("dead-drops.sqlite"))
            }
            let status = try await CLI.run(["deniable", "status"], store: store)
            #expect(status.status == 0, "\(damage): \(status.stderr)")
            #expect(status.stdout.contains(#""replaced":["#) && !status.stdout.contains(#""replaced":[]"#), "\(damage): \(status.stdout)")
            let r = try await CLI.run(["deniable", "init"], store: store)
            #expect(r.status == 0, "\(damage): \(r.stderr)")
            let passphrase = (try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any])?["passphrase"] as? String ?? ""
            #expect(try await CLI.run(["--passphrase-env", "P", "deniable", "unlock"], store: store, env: ["P": passphrase]).status == 0)
        }
    }

    @Test("every deniable file is 0600 and the folder 0700, also when the folder or a file was wider")
    func modes() async throws {
        let store = TemporaryFolders.path("coffer-deniable-modes")
        let folder = store.appendingPathComponent("deniable")
        #expect(try await CLI.run(["deniable", "start"], store: store).status == 0)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: folder.path)
        try FileManager.default.setAttributes(
            [.posixPermissions: 0o644], ofItemAtPath: folder.appendingPathComponent("dead-drops.sqlite").path)
        #expect(try await CLI.run(["deniable", "start"], store: store).status == 0)
        let snapshot = try DeniableSnapshot(folder)
        #expect(snapshot.folderMode == 0o700)
        // The lock file every read-modify-write holds is made at every start, used or not: the same empty file everywhere.
        #expect(
            Set(snapshot.files.keys) == [
                "vault", "sending-queue", "storage.key", "secure-element-p256.key", "dead-drops.sqlite", "public-keys.json",
                ".coffer-lock", "background-schedule.json",
            ])
        #expect(snapshot.files[".coffer-lock"]?.bytes.isEmpty == true)
        for (name, file) in snapshot.files { #expect(file.mode == 0o600, "\(name): \(String(file.mode, radix: 8))") }
    }
}
