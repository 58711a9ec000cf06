// `coffer settings …` and `coffer db …`: the app database of a store (STORE/app.sqlite).

import ArgumentParser
import Coffer
import CofferCLISupport
import CofferSync
import Foundation
import GRDB

/// The settings commands' own failures, on the contract's exit codes: a name that is neither set
/// nor in the catalogue is not found (1); a value, kind or key the catalogue refuses is invalid input (2).
enum SettingsCLIError: Error, CustomStringConvertible {
    case notFound(name: String)
    case refused(String)

    var description: String {
        switch self {
        case .notFound(let name):
            return "not found: setting \"\(name)\" is not set and is not in the catalogue (`coffer settings list` prints the stored ones)"
        case .refused(let message): return "invalid input: \(message)"
        }
    }

    var exitCode: Int32 {
        switch self {
        case .notFound: return 1
        case .refused: return 2
        }
    }
}

enum AppDataCLI {
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
            guard let i = Int64(value) else { throw SettingsCLIError.refused("\(name) is an int; \"\(value)\" is not") }
            return i.databaseValue
        case "bool":
            guard let b = Bool(value.lowercased()) else { throw SettingsCLIError.refused("\(name) is a bool: give true or false") }
            return b.databaseValue
        case "double":
            guard let d = Double(value), d.isFinite else { throw SettingsCLIError.refused("\(name) is a double; \"\(value)\" is not") }
            return d.databaseValue
        case "date":
            guard let ms = Int64(value) else { throw SettingsCLIError.refused("\(name) is a date: give milliseconds since 1970") }
            return ms.databaseValue
        case "string", "enum":
            return value.databaseValue
        case "json":
            // The parser `get` prints with, so that what `set` accepts prints back as JSON (not as
            // a string: it refuses nesting deeper than 256, where Foundation's went to 512).
            do throws(JSONParseError) { _ = try JSONValue.parse(value) } catch {
                throw SettingsCLIError.refused("\(name) holds JSON; the value does not parse (\(error.message))")
            }
            return value.databaseValue
        default:
            throw SettingsCLIError.refused("--kind must be int, bool, string, double, date, enum or json")
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
        @Argument(help: "The setting's name (a catalogue key, or any name set with --kind).") var name: String
        @OptionGroup var storeOptions: StoreOptions

        func run() async throws {
            let fields = try await storeOptions.withAppDatabase { app in try Self.fields(name, stored: app.settings.rawValue(name)) }
            print(JSONValue.object(fields).jsonText)
        }

        static func fields(_ name: String, stored: (kind: String, value: DatabaseValue)?) throws -> [(String, JSONValue)] {
            guard let entry = SettingsCatalog.entry(named: name) else {
                guard let (kind, value) = stored else { throw SettingsCLIError.notFound(name: name) }
                return [
                    ("name", .string(name)), ("kind", .string(kind)), ("value", AppDataCLI.json(value, kind: kind)),
                    ("default", .null), ("set", .bool(true)),
                ]
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
            return fields
        }
    }

    struct Set: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Set a setting; prints {\"set\": {\"name\", \"kind\", \"value\"}}. Catalogue keys take only their declared kind and values, others need --kind.",
            discussion: """
                Enum keys take one of their allowed values, json keys a value that decodes as the key's type \
                (currentUser: {"id","email","name","isAdmin"?}), counts their minimum or more (cache sizes \
                at least 1). Reserved keys (version, written by the data-migration ladder) cannot be set. \
                A rejected value exits 2 naming what the key accepts. A value that starts with - follows \
                -- (coffer settings set imageCacheSize -- -5).
                """)
        @Argument(help: "The setting's name.") var name: String
        @Argument(help: "The value, as text: a number, true/false, an enum case or JSON, as the key's kind says.") var value: String
        @Option(
            help: ArgumentHelp(
                "The value's kind for a name outside the catalogue: int, bool, string, double, date, enum or json (a catalogue key's kind cannot be changed).",
                valueName: "kind"))
        var kind: String?
        @Flag(
            help:
                "Set it as an app's view does (Settings.set): in memory at once, committed by a worker thread within 250 ms (the command's own close commits it at the latest)."
        )
        var deferred = false
        @OptionGroup var storeOptions: StoreOptions

        func run() async throws {
            let entry = SettingsCatalog.entry(named: name)
            if let entry {
                if let reason = entry.reservedReason { throw SettingsCLIError.refused("\(name) is reserved and cannot be set: \(reason)") }
                if let kind, kind != entry.kind {
                    throw SettingsCLIError.refused("\(name) is declared as \(entry.kind); --kind \(kind) is not allowed (leave --kind out)")
                }
            }
            guard let kind = kind ?? entry?.kind else {
                throw SettingsCLIError.refused("\(name) is not in the catalogue: give --kind")
            }
            let stored = try AppDataCLI.parse(value, kind: kind, name: name)
            if let entry, !entry.accepts(kind: kind, stored) { throw SettingsCLIError.refused(AppDataCLI.rejection(entry, value)) }
            let deferred = self.deferred
            try await storeOptions.withAppDatabase { app in
                if deferred {
                    try app.settings.setRaw(name, kind: kind, value: stored)
                    TestPause.at("settings-set-pending") // debug builds only: lets tests kill before the close flushes
                } else {
                    try app.settings.putRaw(name, kind: kind, value: stored)
                }
            }
            print(
                JSONValue.object([
                    ("set", .object([("name", .string(name)), ("kind", .string(kind)), ("value", AppDataCLI.json(stored, kind: kind))]))
                ]).jsonText)
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Remove a setting (its default applies again; removing an unset one is not an error); prints {\"deleted\": {\"name\"}}. Reserved keys (version) cannot be removed."
        )
        @Argument(help: "The setting's name.") var name: String
        @OptionGroup var storeOptions: StoreOptions

        func run() async throws {
            if let reason = SettingsCatalog.entry(named: name)?.reservedReason {
                throw SettingsCLIError.refused("\(name) is reserved and cannot be removed: \(reason)")
            }
            try await storeOptions.withAppDatabase { try $0.settings.deleteRaw(name) }
            print(JSONValue.object([("deleted", .object([("name", .string(name))]))]).jsonText)
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print every stored setting as one JSON object name → value (booleans as true/false, json values as JSON).")
        @OptionGroup var storeOptions: StoreOptions

        func run() async throws {
            let listed = try await storeOptions.withAppDatabase { app in
                let names = app.settings.storedNames().keys.sorted()
                // Values as `get` prints them: booleans as true/false, json values as JSON.
                return JSONValue.object(
                    names.compactMap { n in app.settings.rawValue(n).map { (n, AppDataCLI.json($0.value, kind: $0.kind)) } })
            }
            print(listed.jsonText)
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
            let (before, after) = try await storeOptions.withAppDatabase { try await $0.compact() }
            print(JSONValue.object([("bytesBefore", .number(String(before))), ("bytesAfter", .number(String(after)))]).jsonText)
        }
    }

    struct Stats: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Rows per collection as JSON (opening migrates the file first).")
        @OptionGroup var storeOptions: StoreOptions

        func run() async throws {
            let stats = try await storeOptions.withAppDatabase { try await $0.stats() }
            print(JSONValue.object(stats.map { ($0.table, .number(String($0.rows))) }).jsonText)
        }
    }
}
