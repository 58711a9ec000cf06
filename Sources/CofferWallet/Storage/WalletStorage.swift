// The wallet's one storage seam: what a backend (SQLite today, PostgreSQL next) stores and how,
// below everything that knows a key. Above it: validation, sealing and opening records
// (`RecordCodec`), blind indexes and every other key (`WalletKeys`), WQL (`QueryCompiler` turns a
// query into SQL of the backend's dialect over blind values), the in-memory check of what the
// index cannot answer, key rotation, backups. Below it: rows of opaque bytes.

import Foundation

// MARK: - Dialect

/// The SQL a backend runs: the query compiler writes one text per dialect.
///
/// Every fragment the compiler builds uses `?` for its parameters and SQLite's spellings; a
/// finished statement is rendered for its dialect once (``render(_:)``). The SQLite text is the
/// fragments' text unchanged, byte for byte (so its statements and query plans are today's).
enum SQLDialect: String, Sendable, CaseIterable {
    /// SQLite 3 (through GRDB): `?` parameters, blobs, `json_each`, the wallet's own SQL functions
    /// (`coffer_num`, `coffer_like`, `coffer_regexp`) registered on every connection.
    case sqlite
    /// PostgreSQL: numbered parameters (`$1`, `$2`, …), `bytea` for every blob and tag value
    /// (a plaintext `~` tag value is its UTF-8 bytes, so comparisons are bytewise as SQLite's
    /// BINARY collation compares text), `bigint` for blind types and tag names,
    /// `jsonb_array_elements_text` for bound lists; every profile's rows in the shared tables
    /// `coffer_items` and `coffer_tags` (each statement binds its profile's number), a tag
    /// value's equality led by the prefix its index holds, numbers from the `num` column the
    /// writer fills, and no wallet function on the server: `$like` and `$regex` are matched in
    /// memory only (no pattern reaches the server).
    case postgres

    /// The text of a parameter numbered `index` (1-based).
    func placeholder(_ index: Int) -> String {
        switch self {
        case .sqlite: return "?"
        case .postgres: return "$\(index)"
        }
    }

    /// `sql` (written with `?` parameters, as the compiler builds it) in this dialect: unchanged for
    /// SQLite; for PostgreSQL every `?` numbered in order (`$1`, `$2`, …). The compiler's SQL holds
    /// no string literal with a `?`, so every `?` is a parameter.
    func render(_ sql: String) -> String {
        guard self == .postgres else { return sql }
        var out = ""
        out.reserveCapacity(sql.utf8.count + 16)
        var index = 0
        for character in sql {
            if character == "?" {
                index += 1
                out += "$\(index)"
            } else {
                out.append(character)
            }
        }
        return out
    }
}

// MARK: - What a backend stores

/// One row of a profile's `items` table as the backend holds it: nothing in it is readable
/// without the profile's keys except its row id and expiry.
struct StoredItem: Sendable, Equatable {
    /// The backend's row id: unique in the profile, assigned by the backend on insert, increasing
    /// in insertion order (a deleted id may be reused). Keyset pages walk in this order.
    var rowid: Int64
    /// The blind index of the record type (8 bytes, stored as one integer, see ``BlindColumn``).
    var type: Int64
    /// The blind index of (type, id): 16 opaque bytes, unique per `type`.
    var name: Data
    /// The sealed record (id, value, tags), opaque.
    var sealed: Data
    /// Unix milliseconds after which the record counts as absent, or nil (cleartext: the backend
    /// filters on it).
    var expiry: Int64?
}

/// The value column of a tag row.
enum StoredTagValue: Hashable, Sendable {
    /// The blind index of an encrypted tag's value (12 opaque bytes).
    case blind(Data)
    /// A plaintext (`~`) tag's value, in clear: the backend compares, ranges and matches it.
    case plaintext(String)
    /// A value as read back from a backend that keeps both kinds in one column and so cannot say
    /// which kind a row holds (PostgreSQL: `bytea`, a `~` value as its UTF-8 bytes, with the
    /// number the writer parsed from it in a column of its own, nil for a blind value). Compare
    /// rows the wallet computes with rows read back only through
    /// ``WalletStorageTransaction/storedForm(_:)``.
    case stored(Data, number: Double?)
}

/// A row of a whole-profile walk (``WalletStorageTransaction/items(after:limit:)``).
enum WalkedItem: Sendable, Equatable {
    /// An item row.
    case item(StoredItem)
    /// A row whose columns are not of the kinds the backend writes (changed from outside): the
    /// check reports it; nothing else can use it.
    case malformed(rowid: Int64)

    /// The row's id.
    var rowid: Int64 {
        switch self {
        case .item(let item): return item.rowid
        case .malformed(let rowid): return rowid
        }
    }
}

/// Rows of one type and name that a unique index should have kept apart (found by the check).
struct DuplicateItems: Sendable, Equatable {
    /// The lowest row id among them.
    var rowid: Int64
    /// How many rows hold that type and name.
    var count: Int
}

/// Who keeps a profile's records version digest (see `DigestState`).
enum DigestKeeping: Sendable, Equatable {
    /// The backend, in every transaction that changes an item (SQLite: triggers calling a keyed
    /// function the wallet registers on its own connections, so the key stays in the process).
    case backend
    /// Nobody: the backend cannot run keyed code (a server must never hold the key), and the
    /// wallet does not keep one from the client, which would serialise every writer of a
    /// profile on one row. PostgreSQL, by decision (docs/wallet-threat-model.md): the check
    /// compares no digest there.
    case none
}

/// One row of a profile's tag index: (item, name, value) is unique.
struct StoredTag: Hashable, Sendable {
    /// The blind index of the tag name (8 bytes as one integer, see ``BlindColumn``).
    var name: Int64
    var value: StoredTagValue
}

/// An item to insert with its tag rows (bulk import, restore).
struct NewStoredItem: Sendable, Equatable {
    /// See ``StoredItem/type``.
    var type: Int64
    /// See ``StoredItem/name``.
    var name: Data
    /// See ``StoredItem/sealed``.
    var sealed: Data
    /// See ``StoredItem/expiry``.
    var expiry: Int64?
    /// Its tag index rows.
    var tags: [StoredTag]
}

/// What inserting an item did.
enum ItemInsertOutcome: Sendable, Equatable {
    /// Inserted under this row id.
    case inserted(rowid: Int64)
    /// An item of the same `type` and `name` exists (nothing was written).
    case duplicate
}

/// A parameter of a compiled statement, as a backend binds it.
enum StorageValue: Sendable, Hashable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob(Data)
}

/// A statement the query compiler wrote for a backend's dialect: its text (already rendered,
/// see ``SQLDialect/render(_:)``) and its parameters in order.
struct CompiledStatement: Sendable, Equatable {
    var sql: String
    var arguments: [StorageValue]
}

// MARK: - The seam

/// One transaction's access to one profile's rows. Every call runs inside the transaction that
/// handed this value out, and is valid only until that transaction's body returns.
///
/// The requirements are `async` so that a backend whose driver is asynchronous (PostgreSQL
/// through postgres-nio) implements them directly; a synchronous backend implements them with
/// plain functions (SQLite does, and the wallet's fast paths call those synchronously on the
/// concrete type).
///
/// **What a backend sees.** Blind indexes (type, type+id, tag names, encrypted tag values), sealed
/// records, cleartext `~` tag values, expiries and row ids: never a key, a record id, a type name,
/// a value or an encrypted tag in clear. Metadata values are opaque to it too (the profile's KDF
/// parameters and salt, its sealed wallet key, its key check, MACs).
///
/// **Errors.** A call throws ``WalletError`` for what it can name (``WalletError/storage(_:cause:)``
/// for the backend's own failures, keeping their cause); the wallet reports anything else as
/// `storage`. A failed call may leave the transaction unusable; the wallet then rolls it back.
protocol WalletStorageTransaction {
    /// The profile whose tables this transaction reads and writes.
    var tables: ProfileTables { get }

    // Items

    /// The item of `type` and `name`, expired or not; nil when there is none.
    func locate(type: Int64, name: Data) async throws -> StoredItem?
    /// The item of `type` and `name` unless it expired at or before `now` (Unix ms).
    func locateLive(type: Int64, name: Data, now: Int64) async throws -> StoredItem?
    /// Inserts an item (its `rowid` is ignored: the backend assigns one), or reports a duplicate
    /// (type, name) without writing.
    func insertItem(type: Int64, name: Data, sealed: Data, expiry: Int64?) async throws -> ItemInsertOutcome
    /// Puts a deleted item back under its old row id (undo of a failed call inside a caller's
    /// transaction).
    func restoreItem(_ item: StoredItem) async throws
    /// Replaces an item's sealed value (type, name and expiry stay).
    func updateSealed(rowid: Int64, sealed: Data) async throws
    /// Deletes an item (its tag rows are the caller's to delete).
    func deleteItem(rowid: Int64) async throws
    /// Deletes the item of `type` and `name` and returns it; nil when there was none.
    func takeItem(type: Int64, name: Data) async throws -> StoredItem?
    /// Whether any item of `type` exists.
    func containsType(_ type: Int64) async throws -> Bool
    /// Whether any item carries an expiry (decides whether searches filter on it).
    func anyExpiry() async throws -> Bool

    // Tags

    /// The tag rows of an item.
    func tags(item: Int64) async throws -> [StoredTag]
    /// Adds tag rows to an item; a row already there is skipped.
    func insertTags(item: Int64, _ rows: [StoredTag]) async throws
    /// Deletes every tag row of an item.
    func deleteTags(item: Int64) async throws
    /// Deletes one tag row of an item.
    func deleteTag(item: Int64, _ row: StoredTag) async throws
    /// Records that these plaintext tag names hold several values in some record (never undone:
    /// a range over such a name is not answered from one index range).
    func markMultiValued(names: [Int64]) async throws
    /// Whether `name` was marked multi-valued.
    func isMultiValued(name: Int64) async throws -> Bool

    // Pages and counts (SQL written by the query compiler for ``WalletStorage/dialect``)

    /// The rows a compiled page statement selects, in its order: each selects `rowid, name,
    /// sealed, expiry` of items, ordered by row id and limited (keyset paging: the statement
    /// carries the last row id returned, so a page costs the same wherever it starts).
    func page(_ statement: CompiledStatement, type: Int64) async throws -> [StoredItem]
    /// The integers one row of a compiled statement selects (counts, samples); empty when no row.
    func integers(_ statement: CompiledStatement) async throws -> [Int64]

    // Metadata (the profile's `coffer_meta`: format, KDF, sealed keys, key check, integrity)

    /// A metadata value, or nil.
    func meta(_ name: String) async throws -> Data?
    /// Sets a metadata value (insert or replace).
    func setMeta(_ name: String, _ value: Data) async throws

    // Digest (the records' version digest, see `DigestState`)

    /// The profile's stored digest state, or nil when it has none.
    func digest() async throws -> Data?
    /// Stores the digest state. A backend whose ``WalletStorage/digestKeeping`` is `.none` keeps
    /// no digest and throws ``WalletError/storage(_:cause:)``.
    func setDigest(_ state: Data) async throws

    // Bulk

    /// Inserts many new items with their tag rows (an import or a restore: the wallet has
    /// checked there are no duplicates among them); returns their row ids in order. A duplicate
    /// (type, name) already stored throws ``WalletError/storage(_:cause:)``; the caller's
    /// transaction then rolls back whole.
    func bulkInsert(_ items: [NewStoredItem]) async throws -> [Int64]
    /// How many items the profile holds (all types, expired included).
    func itemCount() async throws -> Int

    // Maintenance (the integrity check and the backup export walk a whole profile with these)

    /// Up to `limit` items of every type after row `after` (expired included), in row-id order:
    /// a whole profile read a page at a time (keyset, so every page costs the same).
    func items(after: Int64, limit: Int) async throws -> [WalkedItem]
    /// The item of row `rowid`, or nil (nil too when its columns are malformed).
    func item(rowid: Int64) async throws -> StoredItem?
    /// The tag rows of each of `items` (an item with none is absent). A nil entry is a row
    /// whose name is not a blind integer (changed from outside).
    func tags(items: [Int64]) async throws -> [Int64: [StoredTag?]]
    /// How many tag rows the profile holds.
    func tagRowCount() async throws -> Int
    /// How many of the profile's tag rows belong to none of its items.
    func orphanTagRowCount() async throws -> Int
    /// Up to `limit` sets of items that share a type and name (the unique index should make
    /// this empty).
    func duplicateItems(limit: Int) async throws -> [DuplicateItems]
    /// `row` (as the wallet computes tag rows from sealed tags) in the form ``tags(item:)`` and
    /// ``tags(items:)`` read it back, so the two compare: unchanged on SQLite, which keeps the
    /// kind of each value; the bytes and the parsed number on PostgreSQL (``StoredTagValue/stored(_:number:)``).
    func storedForm(_ row: StoredTag) -> StoredTag
}

/// A store of wallet profiles: the backend of one wallet file (SQLite) or one database
/// (PostgreSQL).
///
/// **What a backend must guarantee.**
/// - *All or nothing:* everything a `write` body does commits together when it returns, and
///   nothing of it remains when it throws (or the process dies before the commit returns). A
///   committed write is durable (SQLite: WAL with `synchronous=FULL`; PostgreSQL: a committed
///   transaction).
/// - *Isolation:* a `read` body sees one consistent state (a snapshot) from its first call to its
///   last, whatever commits meanwhile; a `write` body sees its own writes, and writes of one
///   profile do not lose each other's changes (SQLite: one writer at a time, so serialisable;
///   PostgreSQL: REPEATABLE READ holding the profile's key gate, where two transactions
///   changing the same row conflict and the later one is rolled back and its body run again,
///   whole, by the backend; transactions that change different rows run together).
/// - *Profiles apart:* a transaction reads and writes only the tables of its profile
///   (``ProfileTables``); removing a profile removes its tables and its catalogue row in one
///   transaction and touches nothing else.
/// - *Row ids* increase in insertion order within a profile (keyset pages rely on it).
///
/// **What it sees:** see ``WalletStorageTransaction``. Nothing secret reaches the backend; the
/// profile catalogue (names) is cleartext, as it is in the SQLite file.
protocol WalletStorage: Sendable {
    /// A transaction's access to one profile.
    associatedtype Transaction: WalletStorageTransaction

    /// The SQL dialect the query compiler writes for this backend.
    var dialect: SQLDialect { get }
    /// Who keeps each profile's records digest: the backend itself (SQLite), or nobody
    /// (PostgreSQL, by decision: see ``DigestKeeping``).
    var digestKeeping: DigestKeeping { get }

    /// Runs `body` in one read transaction of `profile` (a consistent snapshot).
    func read<T: Sendable>(_ profile: ProfileTables, _ body: @escaping @Sendable (Transaction) async throws -> T) async throws -> T
    /// Runs `body` in one write transaction of `profile`: it commits when `body` returns and
    /// rolls back when it throws.
    func write<T: Sendable>(_ profile: ProfileTables, _ body: @escaping @Sendable (Transaction) async throws -> T) async throws -> T

    // Profile catalogue (cleartext names)

    /// Every profile's name: `default` first (when it exists), then the others by name.
    func profileNames() async throws -> [String]
    /// The tables of profile `name`, or nil when there is no such profile.
    func resolveProfile(_ name: String) async throws -> ProfileTables?
    /// Adds profile `name` to the catalogue, creates its empty tables (schema of the current
    /// format) and writes its first metadata (KDF, sealed keys, key check, integrity: what makes
    /// it openable), all in one transaction; throws ``WalletError/walletExists(path:)`` when it
    /// exists. `meta` gives that metadata for the tables the profile gets (its sealed key is
    /// bound to them, so it is sealed once they are known).
    func createProfile(_ name: String, meta: @escaping @Sendable (ProfileTables) throws -> [(name: String, value: Data)]) async throws
        -> ProfileTables
    /// Drops profile `name`'s tables and catalogue row in one transaction; false when there was
    /// no such profile.
    func removeProfile(_ name: String) async throws -> Bool

    /// Ends every connection; later calls throw ``WalletError/closed``.
    func close() throws
}
