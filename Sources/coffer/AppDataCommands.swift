// `coffer settings …` and `coffer db …`: the app database of a store (STORE/app.sqlite).
import ArgumentParser
import Coffer
import Foundation
import GRDB

enum AppDataCLI {
    static func open(_ options: StoreOptions) throws -> AppDatabase {
        try AppDatabase.open(at: StoreLocation.appDatabaseFile(in: options.storeDirectory))
    }

    /// The stored value as JSON for `get`: booleans as true/false, json values embedded.
    static func json(_ value: DatabaseValue, kind: String) -> JSONValue {
        switch (kind, value.storage) {
        case ("bool", .int64(let i)): return .bool(i != 0)
        case ("json", .string(let text)): return (try? JSONValue.parse(text)) ?? .string(text)
        default: return json(value)
        }
    }

    /// Parses a command-line value as `kind`.
    static func parse(_ value: String, kind: String, name: String) throws -> DatabaseValue {
        switch kind {
        case "int":
            guard let i = Int64(value) else { throw WalletError.invalidInput("\(name) is an int; \"\(value)\" is not") }
            return i.databaseValue
        case "bool":
            guard let b = Bool(value.lowercased()) else { throw WalletError.invalidInput("\(name) is a bool: give true or false") }
            return b.databaseValue
        case "double":
            guard let d = Double(value), d.isFinite else { throw WalletError.invalidInput("\(name) is a double; \"\(value)\" is not") }
            return d.databaseValue
        case "date":
            guard let ms = Int64(value) else { throw WalletError.invalidInput("\(name) is a date: give milliseconds since 1970") }
            return ms.databaseValue
        case "string", "enum":
            return value.databaseValue
        case "json":
            guard (try? JSONSerialization.jsonObject(with: Data(value.utf8), options: [.fragmentsAllowed])) != nil else {
                throw WalletError.invalidInput("\(name) holds JSON; the value does not parse")
            }
            return value.databaseValue
        default:
            throw WalletError.invalidInput("--kind must be int, bool, string, double, date, enum or json")
        }
    }

    /// Why `value` is not acceptable for `entry`, naming what is.
    static func rejection(_ entry: CatalogEntry, _ value: String) -> String {
        if let allowed = entry.allowedValues {
            return "\(entry.name) must be one of \(allowed.joined(separator: ", ")); \"\(value)\" is not"
        }
        if let minimum = entry.minimum { return "\(entry.name) must be an integer of at least \(minimum); \"\(value)\" is not" }
        if entry.name == SettingsCatalog.currentUser.name {
            return "currentUser must be JSON {\"id\", \"email\", \"name\", \"isAdmin\"?} (or null); the value does not decode as a user"
        }
        return "\(entry.name) takes a \(entry.kind) value of its declared type; \"\(value)\" does not decode as one"
    }

    /// The stored value as JSON text.
    static func json(_ value: DatabaseValue) -> JSONValue {
        switch value.storage {
        case .null: return .null
        case .int64(let i): return .number(String(i))
        case .double(let d): return .number(String(d))
        case .string(let s): return .string(s)
        case .blob(let b): return .string(b.base64EncodedString())
        }
    }
}

struct SettingsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "settings",
        abstract: "Read and write the typed settings store (STORE/app.sqlite).",
        subcommands: [Get.self, Set.self, Delete.self, List.self])

    @OptionGroup var storeOptions: StoreOptions

    struct Get: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print {\"name\", \"kind\", \"value\", \"default\", \"set\"} of a setting.",
            discussion: """
                An unset catalogue key prints its declared default as "value" ("set": false). A stored value \
                that is not of the key's declared kind (or not an allowed value) is not printed: "value" is \
                the default the app reads instead, and "mismatch" says what is stored. Booleans print as \
                true/false, json values as JSON. A name outside the catalogue prints its stored value \
                ("default": null), or exits 1 when unset.
                """)
        @OptionGroup var storeOptions: StoreOptions
        @Argument var name: String

        func run() async throws {
            let app = try AppDataCLI.open(storeOptions)
            defer { try? app.close() }
            let stored = app.settings.rawValue(name)
            guard let entry = SettingsCatalog.entry(named: name) else {
                guard let (kind, value) = stored else { throw WalletError.notFound(type: "setting", id: name) }
                print(
                    JSONValue.object([
                        ("name", .string(name)), ("kind", .string(kind)), ("value", AppDataCLI.json(value, kind: kind)),
                        ("default", .null), ("set", .bool(true)),
                    ]).jsonText)
                return
            }
            let defaultJSON = AppDataCLI.json(entry.defaultValue, kind: entry.kind)
            var fields: [(String, JSONValue)] = [("name", .string(name)), ("kind", .string(entry.kind))]
            if let (kind, value) = stored {
                if entry.accepts(kind: kind, value) {
                    fields += [("value", AppDataCLI.json(value, kind: kind)), ("default", defaultJSON), ("set", .bool(true))]
                } else {
                    let what = kind == entry.kind ? "a \(kind) value the key does not accept" : "a \(kind) value, the key is \(entry.kind)"
                    fields += [
                        ("value", defaultJSON), ("default", defaultJSON), ("set", .bool(true)),
                        ("mismatch", .string("stored as \(what); the app reads the default — set it again or delete it")),
                    ]
                    StandardError.write("warning: setting \(name) is stored as \(what); its default is used\n")
                }
            } else {
                fields += [("value", defaultJSON), ("default", defaultJSON), ("set", .bool(false))]
            }
            print(JSONValue.object(fields).jsonText)
        }
    }

    struct Set: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Set a setting; catalogue keys take only their declared kind and values, others need --kind (int, bool, string, double, enum, json).",
            discussion: """
                Enum keys take one of their allowed values, json keys a value that decodes as the key's type \
                (currentUser: {"id","email","name","isAdmin"?}), counts their minimum or more (cache sizes \
                at least 1). Reserved keys (version, written by the data-migration ladder) cannot be set. \
                A rejected value exits 2 naming what the key accepts.
                """)
        @OptionGroup var storeOptions: StoreOptions
        @Argument var name: String
        @Argument var value: String
        @Option(help: "The value's kind for a name outside the catalogue (a catalogue key's kind cannot be changed).") var kind: String?

        func run() async throws {
            let entry = SettingsCatalog.entry(named: name)
            if let entry {
                if let reason = entry.reservedReason { throw WalletError.invalidInput("\(name) is reserved and cannot be set: \(reason)") }
                if let kind, kind != entry.kind {
                    throw WalletError.invalidInput("\(name) is declared as \(entry.kind); --kind \(kind) is not allowed (leave --kind out)")
                }
            }
            guard let kind = kind ?? entry?.kind else {
                throw WalletError.invalidInput("\(name) is not in the catalogue: give --kind")
            }
            let stored = try AppDataCLI.parse(value, kind: kind, name: name)
            if let entry, !entry.accepts(kind: kind, stored) { throw WalletError.invalidInput(AppDataCLI.rejection(entry, value)) }
            let app = try AppDataCLI.open(storeOptions)
            defer { try? app.close() }
            try app.settings.putRaw(name, kind: kind, value: stored)
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Remove a setting (its default applies again); reserved keys (version) cannot be removed.")
        @OptionGroup var storeOptions: StoreOptions
        @Argument var name: String

        func run() async throws {
            if let reason = SettingsCatalog.entry(named: name)?.reservedReason {
                throw WalletError.invalidInput("\(name) is reserved and cannot be removed: \(reason)")
            }
            let app = try AppDataCLI.open(storeOptions)
            defer { try? app.close() }
            try app.settings.deleteRaw(name)
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print every stored setting as one JSON object name → value (booleans as true/false, json values as JSON).")
        @OptionGroup var storeOptions: StoreOptions

        func run() async throws {
            let app = try AppDataCLI.open(storeOptions)
            defer { try? app.close() }
            let names = app.settings.storedNames().keys.sorted()
            // Values as `get` prints them: booleans as true/false, json values as JSON.
            print(
                JSONValue.object(names.compactMap { n in app.settings.rawValue(n).map { (n, AppDataCLI.json($0.value, kind: $0.kind)) } })
                    .jsonText)
        }
    }
}

struct DBCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "db",
        abstract: "The app database's collections.",
        subcommands: [Stats.self, Compact.self, PutAsset.self])

    @OptionGroup var storeOptions: StoreOptions

    struct Compact: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Give the app database's free pages back and truncate its WAL; prints {\"bytesBefore\": N, \"bytesAfter\": N}.")
        @OptionGroup var storeOptions: StoreOptions

        func run() async throws {
            let app = try AppDataCLI.open(storeOptions)
            defer { try? app.close() }
            let (before, after) = try await app.compact()
            print(JSONValue.object([("bytesBefore", .number(String(before))), ("bytesAfter", .number(String(after)))]).jsonText)
        }
    }

    struct Stats: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Rows per collection as JSON (opening migrates the file first).")
        @OptionGroup var storeOptions: StoreOptions

        func run() async throws {
            let app = try AppDataCLI.open(storeOptions)
            defer { try? app.close() }
            print(JSONValue.object(try await app.stats().map { ($0.table, .number(String($0.rows))) }).jsonText)
        }
    }
}
