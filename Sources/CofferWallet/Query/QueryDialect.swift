// The few spellings in which the query compiler's SQL differs between dialects. Each SQLite
// spelling here is the one the compiler always wrote, so SQLite statements stay byte-identical.

import Foundation
import GRDB

extension SQLDialect {
    /// An inner join whose `ON` follows (SQLite: `CROSS JOIN`, which also keeps the planner from
    /// reordering the tables; PostgreSQL allows no `ON` after `CROSS JOIN`).
    var innerJoin: String {
        switch self {
        case .sqlite: return "CROSS JOIN"
        case .postgres: return "JOIN"
        }
    }

    /// SQLite's `NOT INDEXED` after a table name (a range visits items by row id); nothing elsewhere.
    var notIndexed: String {
        switch self {
        case .sqlite: return " NOT INDEXED"
        case .postgres: return ""
        }
    }

    /// Always true, as a predicate.
    var yes: SQLFragment { self == .sqlite ? .yes : SQLFragment(sql: "TRUE", arguments: []) }
    /// Always false, as a predicate.
    var no: SQLFragment { self == .sqlite ? .no : SQLFragment(sql: "FALSE", arguments: []) }

    /// A plaintext (`~`) tag value as a parameter compared with the tag index: text in SQLite,
    /// its UTF-8 bytes in PostgreSQL (where every tag value is `bytea`).
    func plaintext(_ value: String) -> DatabaseValue {
        switch self {
        case .sqlite: return value.databaseValue
        case .postgres: return Data(value.utf8).databaseValue
        }
    }

    /// What a bound JSON array's elements are compared as.
    enum ListElement {
        /// Integers (blind tag names).
        case integer
        /// Strings compared with a tag value (plaintext tags).
        case tagValue
        /// Upper-case hexadecimal strings (compared with ``hex(_:)`` of a value).
        case hex
        /// Numbers (compared with ``number``).
        case number
    }

    /// `(SELECT … )` of the elements of one JSON array bound at the `?` it holds.
    func boundList(_ element: ListElement) -> String {
        switch self {
        case .sqlite: return "(SELECT value FROM json_each(?))"
        case .postgres:
            let elements = "jsonb_array_elements_text(?::jsonb) AS j(value)"
            switch element {
            case .integer: return "(SELECT value::bigint FROM \(elements))"
            case .tagValue: return "(SELECT convert_to(value, 'UTF8') FROM \(elements))"
            case .hex: return "(SELECT value FROM \(elements))"
            case .number: return "(SELECT value::float8 FROM \(elements))"
            }
        }
    }

    /// A tag value's bytes in upper-case hexadecimal (as SQLite's `hex()` prints a blob).
    func hex(_ column: String) -> String {
        switch self {
        case .sqlite: return "hex(\(column))"
        case .postgres: return "upper(encode(\(column), 'hex'))"
        }
    }

    /// A tag value as a plaintext list compares it: SQLite's `+` keeps the planner off the value
    /// index (see the compiler); PostgreSQL needs no hint.
    func unindexed(_ column: String) -> String {
        switch self {
        case .sqlite: return "+\(column)"
        case .postgres: return column
        }
    }

    /// A tag value's whole bytes, as the wallet's SQL functions take it (SQLite: cast to a blob, or
    /// GRDB would cut text at U+0000; PostgreSQL: the `bytea` column itself).
    func bytes(_ column: String) -> String {
        switch self {
        case .sqlite: return "CAST(\(column) AS BLOB)"
        case .postgres: return column
        }
    }

    /// A plaintext tag value as a number (NULL when it is not written as one): SQLite parses it
    /// (`coffer_num`); PostgreSQL reads the `num` column the writer filled with the same parse.
    var number: String {
        switch self {
        case .sqlite: return "coffer_num(\(bytes("t.value")))"
        case .postgres: return "t.num"
        }
    }

    /// Whether the backend matches `$like` and `$regex` in SQL (SQLite, by the wallet's own
    /// functions on its connections). PostgreSQL does not: no pattern reaches the server, a
    /// `$like` or `$regex` only needs its tag present there, and Coffer's matchers decide in memory.
    var matchesPatterns: Bool { self == .sqlite }

    /// Bytes of a tag value PostgreSQL's tag index holds (its B-tree entries are limited to about
    /// 2.7 kB; `~` tag values may be 64 KiB): the index is on
    /// `substring(value from 1 for postgresIndexedPrefix)`.
    static let postgresIndexedPrefix = 200

    /// A profile's items table: its own in SQLite; in PostgreSQL the one every profile shares
    /// (``scope(_:_:)`` keeps a statement to its profile's rows).
    func items(_ tables: ProfileTables) -> String {
        switch self {
        case .sqlite: return tables.items
        case .postgres: return "coffer_items"
        }
    }

    /// A profile's tag table (see ``items(_:)``).
    func tags(_ tables: ProfileTables) -> String {
        switch self {
        case .sqlite: return tables.tags
        case .postgres: return "coffer_tags"
        }
    }

    /// The start of a `WHERE` or `ON` list that keeps the rows of table alias `alias` to profile
    /// `tables`: nothing in SQLite (a profile has tables of its own); `alias.profile = ? AND `
    /// with the profile's number in PostgreSQL, whose tables hold every profile's rows.
    func scope(_ alias: String, _ tables: ProfileTables) -> SQLFragment {
        switch self {
        case .sqlite: return SQLFragment(sql: "", arguments: [])
        case .postgres: return SQLFragment(sql: "\(alias).profile = ? AND ", arguments: [tables.number.databaseValue])
        }
    }

    /// `column = ?` for a tag value `value`. PostgreSQL first compares the value's first
    /// ``postgresIndexedPrefix`` bytes with the expression its tag index holds, so the index
    /// answers the equality; the whole value is compared after it.
    func valueEquals(_ column: String, _ value: DatabaseValue) -> SQLFragment {
        guard self == .postgres else { return SQLFragment(sql: "\(column) = ?", arguments: [value]) }
        let prefix: DatabaseValue
        if let bytes = Data.fromDatabaseValue(value) {
            prefix = Data(bytes.prefix(Self.postgresIndexedPrefix)).databaseValue
        } else {
            prefix = value
        }
        return SQLFragment(
            sql: "substring(\(column) from 1 for \(Self.postgresIndexedPrefix)) = ? AND \(column) = ?", arguments: [prefix, value])
    }

    /// `column symbol value`, a string range on a plaintext tag value (`symbol`: `>`, `>=`, `<`,
    /// `<=`). In PostgreSQL the tag index holds a value's first ``postgresIndexedPrefix`` bytes
    /// (bytes compare as unsigned, a prefix below every longer value it begins), so the range is
    /// put to that prefix, which the index answers. For a `value` shorter than the prefix the
    /// comparison of the prefix alone is the whole comparison (a value whose prefix is above, or
    /// below, `value` is itself above, or below, and the other way round; a prefix equal to a
    /// shorter `value` is the whole value). A longer `value` gets a bound on the prefix that the
    /// comparison implies (the prefix of a value above `value` is at least `value`'s own prefix;
    /// the prefix of a value below `value` is below it too), then the whole comparison.
    func valueCompare(_ column: String, _ symbol: String, _ value: DatabaseValue) -> SQLFragment {
        guard self == .postgres, let bytes = Data.fromDatabaseValue(value) else {
            return SQLFragment(sql: "\(column) \(symbol) ?", arguments: [value])
        }
        let indexed = "substring(\(column) from 1 for \(Self.postgresIndexedPrefix))"
        if bytes.count < Self.postgresIndexedPrefix { return SQLFragment(sql: "\(indexed) \(symbol) ?", arguments: [value]) }
        if symbol.hasPrefix(">") {
            let bound = Data(bytes.prefix(Self.postgresIndexedPrefix)).databaseValue
            return SQLFragment(sql: "\(indexed) >= ? AND \(column) \(symbol) ?", arguments: [bound, value])
        }
        return SQLFragment(sql: "\(indexed) \(symbol) ? AND \(column) \(symbol) ?", arguments: [value, value])
    }
}

extension SQLFragment {
    /// Whether this is the always-true predicate of any dialect (nothing left to check).
    var isTrue: Bool { sql == "1" || sql == "TRUE" }
}

extension CompiledSearch {
    /// ``pageSQL(_:after:limit:descending:now:expiry:)`` rendered for the backend
    /// (``WalletStorageTransaction/page(_:type:)``).
    func pageStatement(_ plan: Plan, after: Int64?, limit: Int, descending: Bool, now: Int64, expiry: Bool) -> CompiledStatement {
        statement(pageSQL(plan, after: after, limit: limit, descending: descending, now: now, expiry: expiry))
    }

    /// ``countSQL(_:now:expiry:)`` rendered for the backend (``WalletStorageTransaction/integers(_:)``).
    func countStatement(_ plan: Plan, now: Int64, expiry: Bool) -> CompiledStatement {
        statement(countSQL(plan, now: now, expiry: expiry))
    }

    /// ``sampleSQL(_:after:descending:)`` rendered for the backend; nil for drivers other than a tag.
    func sampleStatement(_ plan: Plan, after: Int64?, descending: Bool) -> CompiledStatement? {
        sampleSQL(plan, after: after, descending: descending).map(statement)
    }

    private func statement(_ built: (sql: String, arguments: [DatabaseValue])) -> CompiledStatement {
        CompiledStatement(sql: dialect.render(built.sql), arguments: built.arguments.map(StorageValue.init))
    }
}
