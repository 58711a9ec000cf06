// The wallet file's schema and integrity state, authenticated under a key derived from the wallet
// key: the `coffer_meta` row `integrity` holds a MAC and, after it, a description of every object
// in `sqlite_master` (tables, indexes, triggers, with their SQL), the file format and whether the
// records' version digest exists. Opening compares the file with it before any record is read.

import CofferCrypto
import Foundation
import GRDB

/// One object of the file's schema, as `sqlite_master` lists it.
struct SchemaObject: Sendable, Equatable {
    /// `table`, `index`, `trigger` or `view`.
    let type: String
    /// The object's name.
    let name: String
    /// The table it belongs to.
    let table: String
    /// Its `CREATE` statement (nil for SQLite's own indexes of PRIMARY KEY and UNIQUE constraints).
    let sql: String?

    /// "the trigger 'x' on 'items'".
    var label: String { "the \(type) \(WalletError.quote(name))\(type == "table" ? "" : " on \(WalletError.quote(table))")" }
}

/// The authenticated record of the file's schema and integrity state (see the file comment).
enum FileIntegrity {
    /// The `coffer_meta` row that holds it.
    static let metaName = "integrity"
    /// The first member of the description (a version of this record's layout).
    static let label = "coffer.wallet.integrity.v4"

    /// The file's schema objects, sorted by type and name. `sqlite_sequence` is left out: SQLite
    /// makes and drops it itself (files of format 1 had it; a VACUUM drops it once no table uses
    /// AUTOINCREMENT), and a table that used it would have another definition, which is compared.
    static func objects(_ db: Database) throws -> [SchemaObject] {
        try Row.fetchAll(
            db, sql: "SELECT type, name, tbl_name, sql FROM sqlite_master WHERE name != 'sqlite_sequence' ORDER BY type, name"
        ).map { row in
            SchemaObject(type: row[0], name: row[1], table: row[2], sql: row[3])
        }
    }

    /// The schema objects of one profile: those on its own tables (see
    /// ``ProfileTables/owns(table:)``). Other profiles' objects and the catalogue are not part of
    /// what its key authenticates, so creating or removing another profile leaves its record valid.
    static func objects(_ db: Database, tables: ProfileTables) throws -> [SchemaObject] {
        try objects(db).filter { tables.owns(table: $0.table) }
    }

    /// What is wrong with the parts of the file outside the profile that could still reach it:
    /// an object of another profile (or any other) whose SQL names one of this profile's tables
    /// (a trigger elsewhere that writes into them), or a catalogue that is not exactly the one
    /// Coffer makes. Nil when there is nothing.
    static func sharedProblem(_ db: Database, tables: ProfileTables) throws -> String? {
        for o in try objects(db) where !tables.owns(table: o.table) {
            if o.table.lowercased() == ProfileCatalogue.table {
                let expected =
                    (o.type == "table" && o.name == ProfileCatalogue.table && o.sql == ProfileCatalogue.creationSQL)
                    || (o.type == "index" && o.sql == nil && o.name.hasPrefix("sqlite_autoindex_\(ProfileCatalogue.table)_"))
                if !expected { return "\(o.label) is not part of the profile catalogue Coffer makes (something changed it)" }
                continue
            }
            if let sql = o.sql, let name = tables.guardedNames.first(where: { mentions(sql, $0) }) {
                return "\(o.label), outside this profile, refers to its table \(WalletError.quote(name)) (something added it)"
            }
        }
        return nil
    }

    /// Whether `sql` names `identifier` as a whole word (any case, quoted or not).
    static func mentions(_ sql: String, _ identifier: String) -> Bool {
        let text = Array(sql.lowercased().utf8)
        let word = Array(identifier.lowercased().utf8)
        guard word.count <= text.count else { return false }
        func isWordByte(_ b: UInt8) -> Bool {
            b == UInt8(ascii: "_") || b >= 0x80 || (b >= 0x30 && b <= 0x39) || ((b | 0x20) >= 0x61 && (b | 0x20) <= 0x7A)
        }
        var i = 0
        while i + word.count <= text.count {
            if text[i..<(i + word.count)].elementsEqual(word), i == 0 || !isWordByte(text[i - 1]),
                i + word.count == text.count || !isWordByte(text[i + word.count])
            {
                return true
            }
            i += 1
        }
        return false
    }

    /// The description: JSON of the label, the format, whether the digest exists and the objects.
    /// A profile other than the default adds its name and number (so one profile's record
    /// cannot stand for another's even under the same key).
    static func describe(format: Int, digest: Bool, objects: [SchemaObject], tables: ProfileTables = .default) -> Data {
        let list = objects.map { o in
            JSONValue.array([.string(o.type), .string(o.name), .string(o.table), o.sql.map { .string($0) } ?? .null])
        }
        var members: [(String, JSONValue)] = [
            ("label", .string(label)), ("format", .number(String(format))), ("digest", .bool(digest)), ("schema", .array(list)),
        ]
        if !tables.isDefault { members.append(("profile", .array([.string(tables.name), .number(String(tables.number))]))) }
        let json = JSONValue.object(members)
        return Data(json.jsonText.utf8)
    }

    /// Writes the record for the file as it is now (`format`, digest present) under `keys`.
    static func write(_ db: Database, keys: WalletKeys, format: Int = Schema.format) throws {
        let tables = keys.tables
        let description = describe(
            format: format, digest: try db.tableExists(tables.digest), objects: try objects(db, tables: tables), tables: tables)
        var value = Data()
        withBytes(description) { d in keys.integrityMAC(domain: IntegrityDomain.schema, d) { value.append(contentsOf: $0) } }
        value.append(description)
        try db.execute(
            sql: "INSERT INTO \(tables.meta)(name, value) VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET value = excluded.value",
            arguments: [metaName, value])
    }

    /// Why the file differs from its authenticated record, or nil when it matches: the record
    /// verifies under `keys`, the format it names is `format` (the `coffer_meta` row), the
    /// digest it promises exists, and the schema is exactly the one it lists.
    static func problem(_ db: Database, keys: WalletKeys, stored: Data?, format: Int?) throws -> String? {
        guard let stored else {
            return "its authenticated integrity record is missing (a file of format 4 always has one)"
        }
        guard stored.count > 32 else { return "its integrity record is truncated" }
        let description = stored.dropFirst(32)
        let verified = withBytes(Data(description)) { d in
            keys.integrityMAC(domain: IntegrityDomain.schema, d) { mac in
                withBytes(Data(stored.prefix(32))) { DigestState.constantTimeEqual(mac, $0) }
            }
        }
        guard verified else { return "its integrity record does not verify under the wallet key" }
        guard case .object(let members)? = try? JSONValue.parse(String(decoding: description, as: UTF8.self)),
            let fields = Optional(Dictionary(members, uniquingKeysWith: { a, _ in a })),
            case .string(label)? = fields["label"], case .number(let formatText)? = fields["format"],
            let authenticatedFormat = Int(formatText), case .bool(let digest)? = fields["digest"],
            case .array(let list)? = fields["schema"]
        else { return "its integrity record does not decode" }
        let tables = keys.tables
        let profile: JSONValue? =
            tables.isDefault ? nil : .array([.string(tables.name), .number(String(tables.number))])
        if fields["profile"] != profile { return "its integrity record names another profile" }
        if format != authenticatedFormat {
            return "its format reads \(format.map(String.init) ?? "nothing") where the wallet key authenticated \(authenticatedFormat)"
        }
        var expected = [SchemaObject]()
        for item in list {
            guard case .array(let f) = item, f.count == 4, case .string(let type) = f[0], case .string(let name) = f[1],
                case .string(let table) = f[2]
            else { return "its integrity record does not decode" }
            var sql: String?
            if case .string(let s) = f[3] { sql = s }
            expected.append(SchemaObject(type: type, name: name, table: table, sql: sql))
        }
        let found = try objects(db, tables: tables)
        if digest, !found.contains(where: { $0.type == "table" && $0.name == tables.digest }) {
            return "the records' version digest it authenticated is gone"
        }
        return try difference(expected: expected, found: found) ?? sharedProblem(db, tables: tables)
    }

    /// The first difference between two schemas, in words.
    static func difference(expected: [SchemaObject], found: [SchemaObject]) -> String? {
        let wanted = Dictionary(expected.map { ("\($0.type) \($0.name)", $0) }, uniquingKeysWith: { a, _ in a })
        let have = Dictionary(found.map { ("\($0.type) \($0.name)", $0) }, uniquingKeysWith: { a, _ in a })
        for o in found where wanted["\(o.type) \(o.name)"] == nil {
            return "\(o.label) is not part of the schema the wallet key authenticated (something added it)"
        }
        for o in expected {
            guard let now = have["\(o.type) \(o.name)"] else { return "\(o.label) the wallet key authenticated is missing" }
            if now != o { return "\(o.label) differs from the definition the wallet key authenticated" }
        }
        return nil
    }

    /// Refuses, as `corrupted`, a file whose schema or integrity state is not the one its key
    /// authenticated (see ``problem(_:keys:stored:format:)``).
    static func verify(_ db: Database, keys: WalletKeys, stored: Data?, format: Int?, path: String) throws {
        if let problem = try problem(db, keys: keys, stored: stored, format: format) {
            throw WalletError.corrupted(
                "the wallet at \(path) was changed without its key: \(problem); it was left as it was (restore a backup)")
        }
    }

    /// The objects a file of a format before 4 may hold (it has no authenticated record): any
    /// other object — a planted trigger, a view, an index under another name — is refused, and
    /// the unique index on (type, id) must be unique.
    static func verifyLegacy(_ db: Database, format: Int, path: String) throws {
        var allowed: Set<String> = [
            "table coffer_meta", "table items", "table tags", "table tag_multi", "table grdb_migrations", "table sqlite_sequence",
            "index items_type_name", "index items_type", "index items_expiry", "index tags_lookup",
        ]
        if format >= 3 {
            allowed.formUnion([
                "table coffer_digest", "trigger coffer_digest_insert", "trigger coffer_digest_delete", "trigger coffer_digest_update",
            ])
        }
        if let problem = try sharedProblem(db, tables: .default) {
            throw WalletError.corrupted("the wallet at \(path) was changed: \(problem); it was left as it was")
        }
        for o in try objects(db, tables: .default) {
            if o.type == "index", o.sql == nil, o.name.hasPrefix("sqlite_autoindex_") { continue }
            guard allowed.contains("\(o.type) \(o.name)") else {
                throw WalletError.corrupted(
                    "the wallet at \(path) holds \(o.label), which no Coffer wallet of format \(format) has; it was left as it was")
            }
            if o.name == "items_type_name", o.sql?.uppercased().hasPrefix("CREATE UNIQUE INDEX") != true {
                throw WalletError.corrupted(
                    "the wallet at \(path) has lost the unique index on (type, id); it was left as it was (restore a backup)")
            }
        }
    }
}
