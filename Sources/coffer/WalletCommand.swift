// `coffer wallet …`: record operations on the store's wallet.

import ArgumentParser
import Coffer
import CofferBench
import CofferCLISupport
import CofferSync
import Foundation

struct WalletCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "wallet",
        abstract: "Create and use the encrypted record wallet.",
        subcommands: [
            Create.self, Add.self, Get.self, Update.self, Delete.self, AddTags.self, UpdateTags.self,
            DeleteTags.self, Search.self, Count.self, RemoveAll.self, Import.self, Rekey.self, Check.self, Compact.self,
            WalletKeyCommand.self, Export.self, ImportBackup.self, ImportIndy.self, ImportAskar.self, Profiles.self,
            RemoveProfile.self,
        ])

    @OptionGroup var walletOptions: WalletOptions

    /// The record a command names, as mutating commands print it: {"type": T, "id": I}.
    static func record(_ type: String, _ id: String) -> JSONValue {
        .object([("type", .string(type)), ("id", .string(id))])
    }

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Create the wallet in the store (with --profile NAME, that profile, and the store when there is none); prints {\"created\": PATH} (and \"profile\": NAME with --profile)."
        )
        @OptionGroup var walletOptions: WalletOptions

        func run() async throws {
            let created = try await walletOptions.location().createProfile(key: walletOptions.walletKey(), profile: walletOptions.profile)
            var members: [(String, JSONValue)] = [("created", .string(created))]
            if let profile = walletOptions.profileOptions.profile { members.append(("profile", .string(profile))) }
            print(JSONValue.object(members).jsonText)
        }
    }

    struct Profiles: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the store's wallet profiles (no key needed); prints [\"default\", …].")
        @OptionGroup var storeOptions: StoreOptions
        @OptionGroup var urlOptions: WalletURLOptions
        @OptionGroup var profileOptions: ProfileOptions

        func run() async throws {
            let names = try await urlOptions.location(defaultFile: storeOptions.walletURL).profiles()
            print(JSONValue.array(names.map { .string($0) }).jsonText)
        }
    }

    struct RemoveProfile: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "remove-profile",
            abstract:
                "Remove a wallet profile and every record in it, in one transaction (no key needed; the default profile stays); prints {\"removed\": NAME}."
        )
        @Argument(help: "The profile to remove.") var name: String
        @Flag(help: "Confirm: nothing is removed without it.") var yes = false
        @OptionGroup var storeOptions: StoreOptions
        @OptionGroup var urlOptions: WalletURLOptions
        @OptionGroup var profileOptions: ProfileOptions

        func run() async throws {
            let location = try urlOptions.location(defaultFile: storeOptions.walletURL)
            guard yes else { throw WalletError.invalidInput("remove-profile removes every record of \(name): confirm with --yes") }
            try await location.removeProfile(name)
            print(JSONValue.object([("removed", .string(name))]).jsonText)
        }
    }

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Add a record; prints {\"added\": {\"type\", \"id\"}}.",
            usage: """
                coffer wallet add <type> <id> <value> [--tags <json> | --tags-file <file>] [--store <dir>] <wallet key>
                coffer wallet add <type> <id> --value-file <file> [--tags <json> | --tags-file <file>] [--store <dir>] <wallet key>
                """)
        @Argument(help: "Record type.") var type: String
        @Argument(help: "Record id.") var id: String
        @Argument(help: "Record value (or --value-file).") var value: String?
        @Option(
            name: .customLong("value-file"), help: ArgumentHelp("Read the value from a file (- for standard input).", valueName: "file"))
        var valueFile: String?
        @Option(help: ArgumentHelp("Tags as a JSON object.", valueName: "json")) var tags: String?
        @Option(
            name: .customLong("tags-file"),
            help: ArgumentHelp("Read the tags' JSON object from a file (- for standard input).", valueName: "file"))
        var tagsFile: String?
        @OptionGroup var walletOptions: WalletOptions

        func validate() throws {
            try CLIInput.checkOne(argument: value, file: valueFile, argumentName: "<value>", fileOption: "--value-file")
            try CLIInput.checkOne(argument: tags, file: tagsFile, argumentName: "--tags", fileOption: "--tags-file", required: false)
        }

        func run() async throws {
            let value = try CLIInput.value(argument: value, file: valueFile)
            let tagsText: String? =
                tags != nil || tagsFile != nil
                ? try CLIInput.one(argument: tags, file: tagsFile, argumentName: "--tags", fileOption: "--tags-file") : nil
            let parsed = try tagsText.map { try WalletTags(json: $0) } ?? WalletTags()
            try await walletOptions.withRecords { try await $0.add(type: type, id: id, value: value, tags: parsed, expiresAt: nil) }
            print(JSONValue.object([("added", WalletCommand.record(type, id))]).jsonText)
        }
    }

    struct Get: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print a record as JSON.")
        @Argument(help: "Record type.") var type: String
        @Argument(help: "Record id.") var id: String
        @Option(help: ArgumentHelp("Record options as JSON: retrieveType, retrieveValue, retrieveTags.", valueName: "json"))
        var options: String?
        @OptionGroup var walletOptions: WalletOptions

        func run() async throws {
            let opts = try options.map { try RecordOptions(json: $0) } ?? RecordOptions()
            print(try await walletOptions.withRecords { try await $0.get(type: type, id: id, options: opts) }.json)
        }
    }

    struct Update: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Replace a record's value (tags kept); prints {\"updated\": {\"type\", \"id\"}}.",
            usage: """
                coffer wallet update <type> <id> <value> [--store <dir>] <wallet key>
                coffer wallet update <type> <id> --value-file <file> [--store <dir>] <wallet key>
                """)
        @Argument(help: "Record type.") var type: String
        @Argument(help: "Record id.") var id: String
        @Argument(help: "New value (or --value-file).") var value: String?
        @Option(
            name: .customLong("value-file"), help: ArgumentHelp("Read the value from a file (- for standard input).", valueName: "file"))
        var valueFile: String?
        @OptionGroup var walletOptions: WalletOptions

        func validate() throws {
            try CLIInput.checkOne(argument: value, file: valueFile, argumentName: "<value>", fileOption: "--value-file")
        }

        func run() async throws {
            let value = try CLIInput.value(argument: value, file: valueFile)
            try await walletOptions.withRecords { try await $0.update(type: type, id: id, value: value) }
            print(JSONValue.object([("updated", WalletCommand.record(type, id))]).jsonText)
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Delete a record; prints {\"deleted\": {\"type\", \"id\"}}.")
        @Argument(help: "Record type.") var type: String
        @Argument(help: "Record id.") var id: String
        @OptionGroup var walletOptions: WalletOptions

        func run() async throws {
            try await walletOptions.withRecords { try await $0.delete(type: type, id: id) }
            print(JSONValue.object([("deleted", WalletCommand.record(type, id))]).jsonText)
        }
    }

    typealias AddTags = TagsCommand<MergeTags>
    typealias UpdateTags = TagsCommand<ReplaceTags>

    /// What `add-tags` and `update-tags` do with the tags they are given.
    protocol TagsOperation {
        static var commandName: String { get }
        static var abstract: String { get }
        /// The key of the printed object, e.g. "tagsAdded".
        static var printedKey: String { get }
        static func apply(_ tags: WalletTags, to wallet: any RecordWallet, type: String, id: String) async throws
    }

    enum MergeTags: TagsOperation {
        static let commandName = "add-tags"
        static let abstract = "Merge tags into a record; prints {\"tagsAdded\": {\"type\", \"id\"}}."
        static let printedKey = "tagsAdded"
        static func apply(_ tags: WalletTags, to wallet: any RecordWallet, type: String, id: String) async throws {
            try await wallet.addTags(type: type, id: id, tags: tags)
        }
    }

    enum ReplaceTags: TagsOperation {
        static let commandName = "update-tags"
        static let abstract = "Replace a record's tags; prints {\"tagsUpdated\": {\"type\", \"id\"}}."
        static let printedKey = "tagsUpdated"
        static func apply(_ tags: WalletTags, to wallet: any RecordWallet, type: String, id: String) async throws {
            try await wallet.updateTags(type: type, id: id, tags: tags)
        }
    }

    /// `add-tags` and `update-tags`: the same arguments and steps, one operation apart.
    struct TagsCommand<Operation: TagsOperation>: AsyncParsableCommand {
        static var configuration: CommandConfiguration {
            CommandConfiguration(commandName: Operation.commandName, abstract: Operation.abstract)
        }
        @Argument(help: "Record type.") var type: String
        @Argument(help: "Record id.") var id: String
        @Argument(help: ArgumentHelp("Tags as a JSON object.", valueName: "json")) var json: String
        @OptionGroup var walletOptions: WalletOptions

        func run() async throws {
            let tags = try WalletTags(json: json)
            try await walletOptions.withRecords { try await Operation.apply(tags, to: $0, type: type, id: id) }
            print(JSONValue.object([(Operation.printedKey, WalletCommand.record(type, id))]).jsonText)
        }
    }

    struct DeleteTags: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "delete-tags", abstract: "Delete tags by name; prints {\"tagsDeleted\": {\"type\", \"id\"}}.")
        @Argument(help: "Record type.") var type: String
        @Argument(help: "Record id.") var id: String
        @Argument(help: ArgumentHelp("Tag names as a JSON array.", valueName: "json")) var json: String
        @OptionGroup var walletOptions: WalletOptions

        func run() async throws {
            let names = try parseNames(json)
            try await walletOptions.withRecords { try await $0.deleteTags(type: type, id: id, names: names) }
            print(JSONValue.object([("tagsDeleted", WalletCommand.record(type, id))]).jsonText)
        }

        func parseNames(_ json: String) throws -> [String] {
            let value: JSONValue
            do { value = try JSONValue.parse(json) } catch { throw WalletError.invalidInput("tag names: \(error)") }
            guard case .array(let items) = value else {
                throw WalletError.invalidInput("tag names must be a JSON array of strings, got \(value.kindName)")
            }
            return try items.map { item in
                guard case .string(let s) = item else {
                    throw WalletError.invalidInput("tag names must be strings, found \(item.kindName)")
                }
                return s
            }
        }
    }

    struct Search: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Search records of a type with a WQL query; prints one JSON page object.")
        @Argument(help: "Record type.") var type: String
        @OptionGroup var query: QueryInput
        @Option(help: ArgumentHelp("Search options as JSON.", valueName: "json")) var options: String?
        // `.unconditional`: `--count -1` reaches validate() (and its message) instead of reading as an option.
        @Option(parsing: .unconditional, help: ArgumentHelp("Records in the page, 1 or more (default: every match).", valueName: "n"))
        var count: Int?
        @OptionGroup var walletOptions: WalletOptions

        func validate() throws {
            try CLIInput.checkOne(argument: query.query, file: query.file, argumentName: "a query", fileOption: "--query-file")
            if let count, count < 1 { throw ValidationError("--count must be at least 1, got \(count)") }
        }

        func run() async throws {
            let q = try query.parsed(default: nil)
            let opts = try options.map { try SearchOptions(json: $0) } ?? SearchOptions()
            // Count and records come from one read transaction, so they agree, and nothing is
            // printed unless the whole search succeeded.
            let page = try await walletOptions.withRecords { try await $0.search(type: type, matching: q, options: opts, count: count) }
            print(page.json)
        }
    }

    struct Import: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Import records from JSON lines {\"type\",\"id\",\"value\",\"tags\"?,\"expiresAt\"?}: all or nothing, in one transaction, streamed (progress on stderr); prints {\"imported\": N}."
        )
        @Argument(help: ArgumentHelp("A .jsonl file, one record per line.", valueName: "file")) var file: String
        @OptionGroup var walletOptions: WalletOptions

        func run() async throws {
            let total = try await walletOptions.withRecords { wallet in
                let progress = Progress(label: "import", total: 0)
                defer { progress.finish() }
                // Streamed: the record total is estimated from the bytes read until the end.
                let total = try await wallet.importRecords(fromJSONLines: URL(fileURLWithPath: file)) { p in
                    let estimate =
                        p.bytesRead >= p.totalBytes || p.bytesRead == 0
                        ? p.records : Int(Double(p.records) * Double(p.totalBytes) / Double(p.bytesRead))
                    progress.update(p.records, of: max(estimate, p.records))
                }
                progress.update(total, of: total)
                return total
            }
            print(JSONValue.object([("imported", .number(String(total)))]).jsonText)
        }
    }

    struct Export: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Write every record and secret to FILE, encrypted under the backup passphrase (progress on stderr); prints {\"exported\": N, \"file\": FILE}."
        )
        @Argument(help: ArgumentHelp("The backup file to write.", valueName: "file")) var file: String
        @Option(
            name: .customLong("backup-passphrase-env"),
            help: ArgumentHelp("Environment variable holding the backup passphrase.", valueName: "var"))
        var backupPassphraseEnv: String
        @Option(
            name: .customLong("first-format-type"),
            help: ArgumentHelp(
                "A type that records of the first box format (which did not keep their type) may have; repeatable. Only needed when no newer record of that type is in the wallet.",
                valueName: "type")
        )
        var firstFormatTypes: [String] = []
        @Option(
            name: .customLong("backup-kdf"),
            help: ArgumentHelp(
                "The backup key's Argon2id cost: moderate (3 passes, 256 MiB; the default) or interactive (2 passes, 64 MiB; the floor).",
                valueName: "cost"))
        var backupKDF = "moderate"
        @OptionGroup var walletOptions: WalletOptions

        func validate() throws {
            guard ["moderate", "interactive"].contains(backupKDF) else {
                throw ValidationError("--backup-kdf must be moderate or interactive, not \(backupKDF)")
            }
        }

        func run() async throws {
            let passphrase = try CLIKeys.passphrase(fromEnvironment: backupPassphraseEnv, option: "--backup-passphrase-env")
            // The key first: its derivation's memory is given back before the wallet opens.
            let key = try BackupKey.derive(passphrase: passphrase, parameters: backupKDF == "interactive" ? BackupKey.floor : .moderate)
            let n = try await walletOptions.withRecords { wallet in
                let bar = Progress(label: "export", total: 0)
                defer { bar.finish() }
                return try await wallet.exportBackup(to: URL(fileURLWithPath: file), key: key, firstFormatTypes: firstFormatTypes) {
                    bar.update($0.done, of: $0.total)
                }
            }
            print(JSONValue.object([("exported", .number(String(n))), ("file", .string(file))]).jsonText)
        }
    }

    struct ImportBackup: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "import-backup",
            abstract:
                "Create the store's wallet from a backup FILE (with --profile NAME, that new profile, and the store when there is none; all or nothing; progress on stderr); prints {\"imported\": PATH} (and \"profile\": NAME with --profile)."
        )
        @Argument(help: ArgumentHelp("The backup file to read.", valueName: "file")) var file: String
        @Option(
            name: .customLong("backup-passphrase-env"),
            help: ArgumentHelp("Environment variable holding the backup passphrase.", valueName: "var"))
        var backupPassphraseEnv: String
        @OptionGroup var walletOptions: WalletOptions

        func run() async throws {
            #if PostgreSQL
            if try await importIntoPostgres() { return }
            #endif
            let target = try walletOptions.location().file(for: "import-backup")
            let passphrase = try CLIKeys.passphrase(fromEnvironment: backupPassphraseEnv, option: "--backup-passphrase-env")
            let bar = Progress(label: "import", total: 0)
            let wallet = try await Wallet.importBackup(
                from: URL(fileURLWithPath: file), passphrase: passphrase,
                into: target, key: walletOptions.walletKey(), profile: walletOptions.profile
            ) { bar.update($0.done, of: $0.total) }
            bar.finish()
            try wallet.close()
            var members: [(String, JSONValue)] = [("imported", .string(target.path))]
            if let profile = walletOptions.profileOptions.profile { members.append(("profile", .string(profile))) }
            print(JSONValue.object(members).jsonText)
        }
    }

    struct Count: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Count the records of a type matching a WQL query (default: all); prints {\"count\": N}.")
        @Argument(help: "Record type.") var type: String
        @OptionGroup var query: QueryInput
        @OptionGroup var walletOptions: WalletOptions

        func validate() throws {
            try CLIInput.checkOne(
                argument: query.query, file: query.file, argumentName: "a query", fileOption: "--query-file", required: false)
        }

        func run() async throws {
            let q = try query.parsed(default: "{}")
            let n = try await walletOptions.withRecords { try await $0.count(type: type, matching: q) }
            print(JSONValue.object([("count", .number(String(n)))]).jsonText)
        }
    }

    struct RemoveAll: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "remove-all",
            abstract: "Remove every record of a type matching a WQL query (default: all), in one transaction; prints {\"removed\": N}.")
        @Argument(help: "Record type.") var type: String
        @OptionGroup var query: QueryInput
        @OptionGroup var walletOptions: WalletOptions

        func validate() throws {
            try CLIInput.checkOne(
                argument: query.query, file: query.file, argumentName: "a query", fileOption: "--query-file", required: false)
        }

        func run() async throws {
            let q = try query.parsed(default: "{}")
            let n = try await walletOptions.withRecords { try await $0.removeAll(type: type, matching: q) }
            print(JSONValue.object([("removed", .number(String(n)))]).jsonText)
        }
    }

    struct Check: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Check every record and tag-index row (both ways) and SQLite's integrity; print one JSON report, exit 5 on any problem.")
        @OptionGroup var walletOptions: WalletOptions

        func run() async throws {
            let location = try walletOptions.location()
            let report = try await walletOptions.withRecords { wallet in
                if case .postgres = location {
                    StandardError.write(
                        "note: on PostgreSQL the check opens every record of profile \(walletOptions.profile), compares its blind type and id with the sealed ones and its tag rows with its sealed tags (both ways), and counts tag rows of no record; there is no version digest to compare (docs/wallet-threat-model.md)\n"
                    )
                }
                let bar = Progress(label: "check", total: 0)
                defer { bar.finish() }
                return try await wallet.checkIntegrity { bar.update($0.done, of: $0.total) }
            }
            print(report.json)
            if !report.isClean {
                StandardError.write(
                    "error: corrupted: the check found \(report.problemCount) problem\(report.problemCount == 1 ? "" : "s")\n")
                throw ExitCode(5)
            }
        }
    }

    struct Compact: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Give the wallet's free pages back and truncate its WAL; prints {\"bytesBefore\": N, \"bytesAfter\": N}.")
        @OptionGroup var walletOptions: WalletOptions

        func run() async throws {
            let (before, after) = try await walletOptions.withRecords { try await $0.compact() }
            print(JSONValue.object([("bytesBefore", .number(String(before))), ("bytesAfter", .number(String(after)))]).jsonText)
        }
    }

    struct Rekey: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Protect the wallet with a new raw key or passphrase; prints {\"rekeyed\": PATH} (and \"rotated\": true with --rotate).")
        @Option(
            name: .customLong("new-raw-key"),
            help: ArgumentHelp("New raw 32-byte key, base64 (visible to other processes; prefer -env or -file).", valueName: "base64"))
        var newRawKey: String?
        @Option(
            name: .customLong("new-raw-key-env"),
            help: ArgumentHelp("Environment variable holding the new raw key, base64.", valueName: "var"))
        var newRawKeyEnv: String?
        @Option(
            name: .customLong("new-raw-key-file"),
            help: ArgumentHelp("File holding the new raw key, base64 (mode 0600).", valueName: "file"))
        var newRawKeyFile: String?
        @Option(
            name: .customLong("new-passphrase-env"),
            help: ArgumentHelp("Environment variable holding the new passphrase.", valueName: "var"))
        var newPassphraseEnv: String?
        @Flag(
            help:
                "Also replace the wallet's own key: every record is re-sealed and re-indexed in one transaction (progress on stderr). For recovery after a suspected compromise; without it only the sealed key is rewritten."
        )
        var rotate = false
        @OptionGroup var walletOptions: WalletOptions

        func run() async throws {
            let newKey = try CLIKeys.key(
                raw: newRawKey, rawOption: "--new-raw-key", rawEnv: newRawKeyEnv, rawFile: newRawKeyFile,
                passphraseEnv: newPassphraseEnv, passphraseOption: "--new-passphrase-env",
                missing:
                    "give the new key: --new-raw-key-env VAR, --new-raw-key-file FILE, --new-raw-key BASE64 or --new-passphrase-env VAR")
            // The wallet file's path, or on PostgreSQL the URL without its password, as `create` prints it.
            let location = try walletOptions.location()
            let printed = try await walletOptions.withRecords { wallet in
                let place = location.description
                if rotate {
                    let bar = Progress(label: "rotate", total: 0)
                    defer { bar.finish() }
                    try await wallet.rekey(to: newKey, rotatingKey: true) { bar.update($0.done, of: $0.total) }
                    return JSONValue.object([("rekeyed", .string(place)), ("rotated", .bool(true))])
                }
                try await wallet.rekey(to: newKey, rotatingKey: false, progress: nil)
                return JSONValue.object([("rekeyed", .string(place))])
            }
            print(printed.jsonText)
        }
    }
}

/// A WQL query given as an argument or read with `--query-file FILE|-` (search, count, remove-all).
struct QueryInput: ParsableArguments {
    @Argument(help: "WQL query (JSON), or --query-file.") var query: String?
    @Option(
        name: .customLong("query-file"), help: ArgumentHelp("Read the WQL query from a file (- for standard input).", valueName: "file"))
    var file: String?

    /// The parsed query; `defaultJSON` when neither form is given (nil: one is required).
    func parsed(default defaultJSON: String?) throws -> WalletQuery {
        if query == nil, file == nil, let defaultJSON { return try WalletQuery(json: defaultJSON) }
        return try WalletQuery(json: CLIInput.one(argument: query, file: file, argumentName: "a query", fileOption: "--query-file"))
    }
}

/// A progress bar on stderr, redrawn at most ~20 times a second.
final class Progress: Sendable {
    private struct State {
        var total: Int
        var lastDraw = Date.distantPast
        var lastTenth = -1
    }

    private let label: String
    /// Held while the bar is redrawn, so two updates never interleave their output.
    private let state: Locked<State>

    init(label: String, total: Int) {
        self.label = label
        state = Locked(State(total: total))
    }

    /// Moves the bar; `total` replaces the expected total when given.
    func update(_ done: Int, of total: Int? = nil) {
        let label = label
        state.withLock { (state) -> Void in
            if let total { state.total = total }
            let total = state.total
            let now = Date()
            guard done == total || now.timeIntervalSince(state.lastDraw) > 0.05 else { return }
            state.lastDraw = now
            let width = 30
            let fraction = total == 0 ? 1 : Double(done) / Double(total)
            guard StandardError.isTerminal else {
                // A log, not a screen: one line per tenth, no carriage returns.
                let tenth = Int(fraction * 10)
                guard tenth > state.lastTenth else { return }
                state.lastTenth = tenth
                StandardError.write("\(label): \(done)/\(total)\n")
                return
            }
            let filled = Int(fraction * Double(width))
            let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled)
            StandardError.writeOpenLine("\r\(label) [\(bar)] \(done)/\(total)")
        }
    }

    /// Ends the bar's line (nothing to end when stderr is not a terminal).
    func finish() {
        StandardError.endProgressLine()
    }
}
