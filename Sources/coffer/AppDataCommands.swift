// `coffer settings …` and `coffer db …`: the app database of a store (STORE/app.sqlite).
import ArgumentParser
import Coffer
import Foundation
import GRDB

enum AppDataCLI {
    static func open(_ options: StoreOptions) throws -> AppDatabase {
        try AppDatabase.open(at: StoreLocation.appDatabaseFile(in: options.storeDirectory))
    }

    /// The stored value as JSON text.
    static func json(_ value: DatabaseValue) -> JSONValue {
        switch value.storage {
        case .null: return .null
        case let .int64(i): return .number(String(i))
        case let .double(d): return .number(String(d))
        case let .string(s): return .string(s)
        case let .blob(b): return .string(b.base64EncodedString())
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
        static let configuration = CommandConfiguration(abstract: "Print {\"name\", \"kind\", \"value\", \"default\"?} of a setting.")
        @OptionGroup var storeOptions: StoreOptions
        @Argument var name: String

        func run() async throws {
            let app = try AppDataCLI.open(storeOptions)
            defer { try? app.close() }
            var fields: [(String, JSONValue)] = [("name", .string(name))]
            if let (kind, value) = app.settings.rawValue(name) {
                fields += [("kind", .string(kind)), ("value", AppDataCLI.json(value)), ("set", .bool(true))]
            } else if let known = SettingsCatalog.all.first(where: { $0.name == name }) {
                fields += [("kind", .string(known.kind)), ("set", .bool(false))]
            } else {
                throw WalletError.notFound(type: "setting", id: name)
            }
            print(JSONValue.object(fields).jsonText)
        }
    }

    struct Set: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Set a setting; catalogue keys take their declared kind, others need --kind (int, bool, string, double, enum, json).")
        @OptionGroup var storeOptions: StoreOptions
        @Argument var name: String
        @Argument var value: String
        @Option(help: "The value's kind for a name outside the catalogue.") var kind: String?

        func run() async throws {
            guard let kind = kind ?? SettingsCatalog.all.first(where: { $0.name == name })?.kind else {
                throw WalletError.invalidInput("\(name) is not in the catalogue: give --kind")
            }
            let stored: DatabaseValue
            switch kind {
            case "int":
                guard let i = Int64(value) else { throw WalletError.invalidInput("\(name) is an int; \"\(value)\" is not") }
                stored = i.databaseValue
            case "bool":
                guard let b = Bool(value.lowercased()) else { throw WalletError.invalidInput("\(name) is a bool: give true or false") }
                stored = b.databaseValue
            case "double":
                guard let d = Double(value) else { throw WalletError.invalidInput("\(name) is a double; \"\(value)\" is not") }
                stored = d.databaseValue
            case "string", "enum":
                stored = value.databaseValue
            case "json":
                guard (try? JSONSerialization.jsonObject(with: Data(value.utf8), options: [.fragmentsAllowed])) != nil else {
                    throw WalletError.invalidInput("\(name) holds JSON; the value does not parse")
                }
                stored = value.databaseValue
            default:
                throw WalletError.invalidInput("--kind must be int, bool, string, double, enum or json")
            }
            let app = try AppDataCLI.open(storeOptions)
            defer { try? app.close() }
            try app.settings.putRaw(name, kind: kind, value: stored)
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Remove a setting (its default applies again).")
        @OptionGroup var storeOptions: StoreOptions
        @Argument var name: String

        func run() async throws {
            let app = try AppDataCLI.open(storeOptions)
            defer { try? app.close() }
            try app.settings.deleteRaw(name)
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print every stored setting as one JSON object name → value.")
        @OptionGroup var storeOptions: StoreOptions

        func run() async throws {
            let app = try AppDataCLI.open(storeOptions)
            defer { try? app.close() }
            let names = app.settings.storedNames().keys.sorted()
            print(JSONValue.object(names.compactMap { n in app.settings.rawValue(n).map { (n, AppDataCLI.json($0.value)) } }).jsonText)
        }
    }
}

struct DBCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "db",
        abstract: "The app database's collections.",
        subcommands: [Stats.self, Compact.self])

    @OptionGroup var storeOptions: StoreOptions

    struct Compact: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Give the app database's free pages back and truncate its WAL; prints {\"bytesBefore\": N, \"bytesAfter\": N}.")
        @OptionGroup var storeOptions: StoreOptions

        func run() async throws {
            let app = try AppDataCLI.open(storeOptions)
            defer { try? app.close() }
            let (before, after) = try app.compact()
            print(JSONValue.object([("bytesBefore", .number(String(before))), ("bytesAfter", .number(String(after)))]).jsonText)
        }
    }

    struct Stats: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Rows per collection as JSON (opening migrates the file first).")
        @OptionGroup var storeOptions: StoreOptions

        func run() async throws {
            let app = try AppDataCLI.open(storeOptions)
            defer { try? app.close() }
            print(JSONValue.object(try app.stats().map { ($0.table, .number(String($0.rows))) }).jsonText)
        }
    }
}
