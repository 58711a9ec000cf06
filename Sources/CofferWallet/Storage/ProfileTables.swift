// Profiles: several wallets in one file, each in its own set of tables under its own key. The
// default profile keeps the single-wallet layout (`items`, `tags`, `tag_multi`, `coffer_digest`,
// `coffer_meta`); profile number N has the same tables, indexes and triggers named `cpN_…`. A
// cleartext catalogue, `coffer_profiles(name, number)`, maps names to numbers; it exists once a
// second profile was created (a file without it holds only its default profile).

import CofferSync
import Foundation
import GRDB

/// The names of one profile's tables, indexes and triggers.
struct ProfileTables: Sendable, Equatable {
    /// The profile's name (visible in the file's catalogue).
    let name: String
    /// Its number in the catalogue: 0 for the default profile.
    let number: Int64

    /// The default profile: today's single-wallet tables.
    static let `default` = ProfileTables(name: ProfileCatalogue.defaultName, number: 0)

    /// "" for the default profile, `cpN_` for profile number N.
    var prefix: String { number == 0 ? "" : "cp\(number)_" }
    var isDefault: Bool { number == 0 }

    var items: String { prefix + "items" }
    var tags: String { prefix + "tags" }
    var tagMulti: String { prefix + "tag_multi" }
    var digest: String { prefix + "coffer_digest" }
    var meta: String { prefix + "coffer_meta" }
    /// Every table of the profile (dropping them drops its indexes and triggers).
    var allTables: [String] { [items, tags, tagMulti, digest, meta] }

    /// Whether the schema object of table `table` belongs to this profile: for profile N, the
    /// table's name starts with `cpN_`; for the default profile, it is neither another profile's
    /// (`cp<digits>_…`) nor the catalogue's.
    func owns(table: String) -> Bool {
        let t = table.lowercased()
        if !isDefault { return t.hasPrefix(prefix) }
        return ProfileTables.profileNumber(ofTable: t) == nil && t != ProfileCatalogue.table
    }

    /// N when `table` (lower-cased) is named `cpN_…`.
    static func profileNumber(ofTable table: String) -> Int64? {
        guard table.hasPrefix("cp") else { return nil }
        let digits = table.dropFirst(2).prefix { $0.isASCII && $0.isNumber }
        guard !digits.isEmpty, table.dropFirst(2 + digits.count).first == "_" else { return nil }
        return Int64(digits)
    }

    /// The names other objects must not mention (see ``FileIntegrity``): the profile's tables,
    /// and for the default profile the record of applied migrations.
    var guardedNames: [String] { isDefault ? allTables + ["grdb_migrations"] : allTables }

    /// The profile's schema, as a new profile gets it (format 4, digest triggers included).
    var creationSQL: String {
        let p = prefix
        return """
            CREATE TABLE \(meta)(name TEXT PRIMARY KEY NOT NULL, value BLOB NOT NULL);
            CREATE TABLE \(items)(
                id INTEGER PRIMARY KEY,
                type BLOB NOT NULL,
                name BLOB NOT NULL,
                value BLOB NOT NULL,
                expiry INTEGER
            );
            CREATE UNIQUE INDEX \(p)items_type_name ON \(items)(type, name);
            CREATE INDEX \(p)items_type ON \(items)(type);
            CREATE INDEX \(p)items_expiry ON \(items)(expiry) WHERE expiry IS NOT NULL;
            CREATE TABLE \(tags)(
                item INTEGER NOT NULL,
                name BLOB NOT NULL,
                value NOT NULL,
                PRIMARY KEY(item, name, value)
            ) WITHOUT ROWID;
            CREATE INDEX \(p)tags_lookup ON \(tags)(name, value, item);
            CREATE TABLE \(tagMulti)(name BLOB PRIMARY KEY NOT NULL) WITHOUT ROWID;
            \(digestSQL)
            """
    }

    /// The digest table and the three triggers that keep it (format 4).
    var digestSQL: String {
        let p = prefix
        return """
            CREATE TABLE \(digest)(id INTEGER PRIMARY KEY CHECK (id = 1), value BLOB NOT NULL);
            CREATE TRIGGER \(p)coffer_digest_insert AFTER INSERT ON \(items) BEGIN
                UPDATE \(digest) SET value = coffer_digest_v4(value, NEW.id, NEW.type, NEW.name, NEW.value, NEW.expiry)
                WHERE id = 1;
            END;
            CREATE TRIGGER \(p)coffer_digest_delete AFTER DELETE ON \(items) BEGIN
                UPDATE \(digest) SET value = coffer_digest_v4(value, OLD.id, OLD.type, OLD.name, OLD.value, OLD.expiry)
                WHERE id = 1;
            END;
            CREATE TRIGGER \(p)coffer_digest_update AFTER UPDATE ON \(items) BEGIN
                UPDATE \(digest) SET value = coffer_digest_v4(value, OLD.id, OLD.type, OLD.name, OLD.value, OLD.expiry,
                                                                  NEW.id, NEW.type, NEW.name, NEW.value, NEW.expiry)
                WHERE id = 1;
            END;
            """
    }
}

/// The file's cleartext list of profiles (names are visible to whoever reads the file).
enum ProfileCatalogue {
    /// The profile an existing single-wallet file is, and the one calls without a profile use.
    static let defaultName = "default"
    /// The catalogue's table.
    static let table = "coffer_profiles"
    /// Its definition, exactly (every profile's open checks it).
    static let creationSQL = "CREATE TABLE coffer_profiles(name TEXT PRIMARY KEY NOT NULL, number INTEGER NOT NULL UNIQUE)"
    /// Longest profile name, in bytes.
    static let maxNameBytes = 64

    /// Refuses a name that is empty, too long, or not made of letters, digits, `.`, `_` and `-`.
    static func validate(_ name: String) throws(WalletError) {
        guard !name.isEmpty, name.utf8.count <= maxNameBytes,
            name.unicodeScalars.allSatisfy({
                $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || "._-".unicodeScalars.contains($0))
            })
        else {
            throw .invalidInput(
                "profile name \(WalletError.quote(name)) must be 1 to \(maxNameBytes) letters, digits, '.', '_' or '-'")
        }
    }

    /// The path as errors about a profile name it: the file, and the profile unless it is the default.
    static func label(path: String, profile: String) -> String {
        profile == defaultName ? path : "\(path) (profile \(WalletError.quote(profile)))"
    }

    /// The tables of profile `name`, or nil when the file has no such profile.
    static func resolve(_ db: Database, name: String) throws -> ProfileTables? {
        if try db.tableExists(table) {
            guard let number = try Int64.fetchOne(db, sql: "SELECT number FROM coffer_profiles WHERE name = ?", arguments: [name])
            else { return nil }
            return ProfileTables(name: name, number: number)
        }
        guard name == defaultName, try db.tableExists("coffer_meta") else { return nil }
        return .default
    }

    /// Every profile's name: `default` first (when the file has it), then the others by name.
    static func names(_ db: Database) throws -> [String] {
        if try db.tableExists(table) {
            return try String.fetchAll(db, sql: "SELECT name FROM coffer_profiles ORDER BY name != 'default', name")
        }
        return try db.tableExists("coffer_meta") ? [defaultName] : []
    }

    /// Makes the catalogue when the file has none (listing the default profile when the file
    /// has one) and adds profile `name` to it under the next free number.
    static func add(_ db: Database, name: String) throws -> ProfileTables {
        if try !db.tableExists(table) {
            try db.execute(sql: creationSQL)
            if try db.tableExists("coffer_meta") {
                try db.execute(sql: "INSERT INTO coffer_profiles(name, number) VALUES (?, 0)", arguments: [defaultName])
            }
        }
        let number = (try Int64.fetchOne(db, sql: "SELECT MAX(number) FROM coffer_profiles") ?? 0) + 1
        try db.execute(sql: "INSERT INTO coffer_profiles(name, number) VALUES (?, ?)", arguments: [name, number])
        return ProfileTables(name: name, number: number)
    }

    /// Drops profile `name`'s tables and its catalogue row (inside the caller's transaction);
    /// false when the file has no such profile.
    static func remove(_ db: Database, name: String) throws -> Bool {
        guard let tables = try resolve(db, name: name) else { return false }
        for table in tables.allTables where try db.tableExists(table) { try db.execute(sql: "DROP TABLE \(table)") }
        // Debug builds only: lets a test kill the process with the tables dropped, uncommitted.
        TestPause.at("wallet-remove-profile-dropped")
        try db.execute(sql: "DELETE FROM coffer_profiles WHERE name = ?", arguments: [name])
        return true
    }
}
