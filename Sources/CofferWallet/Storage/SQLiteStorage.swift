// The SQLite backend of the storage seam (see WalletStorage.swift): the rows of one profile in
// one transaction (`SQLiteRows`, the only code that writes items and tags), and the backend of a
// wallet file (`SQLiteWalletStorage`: its pool, its transactions, its profile catalogue).

import CofferSQLite
import CofferSync
import Dispatch
import Foundation
import GRDB
import GRDBSQLite

/// One SQLite transaction's access to one profile's rows, on the connection's own thread.
///
/// Its calls are synchronous (they satisfy the seam's `async` requirements): the wallet's fast
/// paths call them on the concrete type, on the thread GRDB gave the transaction. The write path's
/// statements are prepared once per transaction and stepped through SQLite's C API
/// (``DirectStatement``).
struct SQLiteRows: WalletStorageTransaction {
    let db: Database
    let tables: ProfileTables
    /// Statements prepared in this transaction, and facts the record store learnt in it (a
    /// value lives for one transaction). The only per-transaction allocation of the SQLite path:
    /// a point read makes one (the record store keeps its facts here rather than in a memo of
    /// its own), and its tables are allocated only when a statement is first kept.
    let memo = Memo()

    final class Memo {
        /// The write path's statements, prepared on first use (indexed by `HotSQL`; empty until
        /// the first).
        var statements = [DirectStatement?]()
        /// Multi-row tag inserts, by row count (1…`tagRowsPerInsert`; empty until the first).
        var tagInserts = [DirectStatement?]()
        /// Whether any credential signature exists; nil until the record store asks.
        var hasSignatures: Bool?
    }

    init(db: Database, tables: ProfileTables) {
        self.db = db
        self.tables = tables
    }

    /// Most tag rows one INSERT writes: one statement per record's tags instead of one per tag
    /// saves SQLite's per-statement work, which is most of the cost of a small row.
    static let tagRowsPerInsert = 8

    /// The statements every record call runs, stepped without GRDB's typed arguments (see
    /// ``DirectStatement``).
    enum HotSQL: Int, CaseIterable {
        case locate, insertItem, updateValue, selectLive, deleteItem, deleteTagsOfItem, tagsOfItem, deleteTagRow

        func sql(_ tables: ProfileTables) -> String {
            switch self {
            case .locate: return "SELECT id, value, expiry FROM \(tables.items) WHERE type = ? AND name = ?"
            case .insertItem: return "INSERT INTO \(tables.items)(type, name, value, expiry) VALUES (?, ?, ?, ?)"
            case .updateValue: return "UPDATE \(tables.items) SET value = ? WHERE id = ?"
            case .selectLive:
                return "SELECT id, value, expiry FROM \(tables.items) WHERE type = ? AND name = ? AND (expiry IS NULL OR expiry > ?)"
            case .deleteItem: return "DELETE FROM \(tables.items) WHERE id = ?"
            case .deleteTagsOfItem: return "DELETE FROM \(tables.tags) WHERE item = ?"
            case .tagsOfItem: return "SELECT name, value FROM \(tables.tags) WHERE item = ?"
            case .deleteTagRow: return "DELETE FROM \(tables.tags) WHERE item = ? AND name = ? AND value = ?"
            }
        }
    }

    /// The prepared statement for `sql`, kept for the rest of this transaction.
    private func statement(_ sql: HotSQL) throws -> DirectStatement {
        if memo.statements.isEmpty {
            memo.statements = [DirectStatement?](repeating: nil, count: HotSQL.allCases.count)
        } else if let prepared = memo.statements[sql.rawValue] {
            return prepared
        }
        let prepared = try DirectStatement(db, sql: sql.sql(tables))
        memo.statements[sql.rawValue] = prepared
        return prepared
    }

    // MARK: Items

    func locate(type: Int64, name: Data) throws -> StoredItem? {
        let select = try statement(.locate)
        select.bind(1, type)
        select.bind(2, name)
        return try select.fetchOne { row in
            StoredItem(rowid: row.int64(0), type: type, name: name, sealed: row.data(1), expiry: row.optionalInt64(2))
        }
    }

    func locateLive(type: Int64, name: Data, now: Int64) throws -> StoredItem? {
        let select = try statement(.selectLive)
        select.bind(1, type)
        select.bind(2, name)
        select.bind(3, now)
        return try select.fetchOne { row in
            StoredItem(rowid: row.int64(0), type: type, name: name, sealed: row.data(1), expiry: row.optionalInt64(2))
        }
    }

    func insertItem(type: Int64, name: Data, sealed: Data, expiry: Int64?) throws -> ItemInsertOutcome {
        let insert = try statement(.insertItem)
        insert.bind(1, type)
        insert.bind(2, name)
        insert.bind(3, sealed)
        insert.bind(4, expiry)
        do {
            try insert.execute()
        } catch let error as DatabaseError where error.extendedResultCode == .SQLITE_CONSTRAINT_UNIQUE {
            // The unique (type, name) index answers "does it exist" without a lookup first.
            return .duplicate
        }
        return .inserted(rowid: db.lastInsertedRowID)
    }

    func restoreItem(_ item: StoredItem) throws {
        try db.execute(
            sql: "INSERT INTO \(tables.items)(id, type, name, value, expiry) VALUES (?, ?, ?, ?, ?)",
            arguments: [item.rowid, item.type, item.name, item.sealed, item.expiry])
    }

    func updateSealed(rowid: Int64, sealed: Data) throws {
        let update = try statement(.updateValue)
        update.bind(1, sealed)
        update.bind(2, rowid)
        try update.execute()
    }

    func deleteItem(rowid: Int64) throws {
        let deleteItem = try statement(.deleteItem)
        deleteItem.bind(1, rowid)
        try deleteItem.execute()
    }

    func takeItem(type: Int64, name: Data) throws -> StoredItem? {
        let statement = try db.cachedStatement(sql: "DELETE FROM \(tables.items) WHERE type = ? AND name = ? RETURNING id, value, expiry")
        guard let row = try Row.fetchOne(statement, arguments: [type, name]) else { return nil }
        return StoredItem(rowid: row[0], type: type, name: name, sealed: row[1], expiry: row[2])
    }

    func containsType(_ type: Int64) throws -> Bool {
        let statement = try db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM \(tables.items) WHERE type = ?)")
        return try Bool.fetchOne(statement, arguments: [type]) ?? false
    }

    func anyExpiry() throws -> Bool {
        try Bool.fetchOne(db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM \(tables.items) WHERE expiry IS NOT NULL)")) ?? false
    }

    // MARK: Tags

    func tags(item: Int64) throws -> [StoredTag] {
        var present = [StoredTag]()
        let existing = try statement(.tagsOfItem)
        existing.bind(1, item)
        try existing.forEach { row in present.append(StoredTag(name: row.int64(0), value: StoredTagValue(row.value(1)))) }
        return present
    }

    func insertTags(item: Int64, _ rows: [StoredTag]) throws {
        try insertTags(item: item, rows[...])
    }

    /// Inserts tag rows of one item, up to ``tagRowsPerInsert`` per statement (a row already
    /// there, as a list's repeated value, is skipped).
    func insertTags(item: Int64, _ rows: ArraySlice<StoredTag>) throws {
        var rest = rows
        while !rest.isEmpty {
            let chunk = rest.prefix(Self.tagRowsPerInsert)
            rest = rest.dropFirst(chunk.count)
            let insert: DirectStatement
            if memo.tagInserts.isEmpty { memo.tagInserts = [DirectStatement?](repeating: nil, count: Self.tagRowsPerInsert + 1) }
            if let prepared = memo.tagInserts[chunk.count] {
                insert = prepared
            } else {
                let values = Array(repeating: "(?, ?, ?)", count: chunk.count).joined(separator: ", ")
                insert = try DirectStatement(db, sql: "INSERT OR IGNORE INTO \(tables.tags)(item, name, value) VALUES \(values)")
                memo.tagInserts[chunk.count] = insert
            }
            var parameter: Int32 = 1
            for row in chunk {
                insert.bind(parameter, item)
                insert.bind(parameter + 1, row.name)
                insert.bind(parameter + 2, row.value)
                parameter += 3
            }
            try insert.execute()
        }
    }

    func deleteTags(item: Int64) throws {
        let deleteTags = try statement(.deleteTagsOfItem)
        deleteTags.bind(1, item)
        try deleteTags.execute()
    }

    func deleteTag(item: Int64, _ row: StoredTag) throws {
        let delete = try statement(.deleteTagRow)
        delete.bind(1, item)
        delete.bind(2, row.name)
        delete.bind(3, row.value)
        try delete.execute()
    }

    func markMultiValued(names: [Int64]) throws {
        guard !names.isEmpty else { return }
        let statement = try db.cachedStatement(sql: "INSERT OR IGNORE INTO \(tables.tagMulti)(name) VALUES (?)")
        for name in names { try statement.execute(arguments: [name]) }
    }

    func isMultiValued(name: Int64) throws -> Bool {
        try Bool.fetchOne(
            db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM \(tables.tagMulti) WHERE name = ?)"), arguments: [name]) ?? true
    }

    // MARK: Pages and counts

    func page(_ statement: CompiledStatement, type: Int64) throws -> [StoredItem] {
        let prepared = try db.makeStatement(sql: statement.sql)
        prepared.setExactArguments(statement.arguments.map(\.databaseValue))
        return try Row.fetchAll(prepared).map { row in
            StoredItem(rowid: row[0], type: type, name: row[1], sealed: row[2], expiry: row[3])
        }
    }

    func integers(_ statement: CompiledStatement) throws -> [Int64] {
        let prepared = try db.makeStatement(sql: statement.sql)
        prepared.setExactArguments(statement.arguments.map(\.databaseValue))
        guard let row = try Row.fetchOne(prepared) else { return [] }
        return (0..<row.count).map { row[$0] ?? 0 }
    }

    /// Steps a page statement (`rowid, name, sealed, expiry`, as ``CompiledSearch/pageSQL`` writes
    /// it) and hands each row to `row` with its blobs lent in place, valid only during that call:
    /// the search engine copies them once, straight into the chunk another core opens, instead of
    /// into a `Data` each through GRDB's `Row`. With `cached` the statement is kept on the
    /// connection (GRDB's statement cache), which the caller may ask only for the few shapes a
    /// plan can take (see ``CompiledSearch/Plan/hasFewShapes``): preparing the join of a page
    /// costs about 20 µs, as much as opening ten records. Other shapes are prepared per call:
    /// they vary without bound (each `$in` length is one), and a cache per connection would grow
    /// with every shape ever seen.
    static func walk(
        _ db: Database, sql: String, arguments: [DatabaseValue], cached: Bool = false,
        _ row: (_ rowid: Int64, _ name: UnsafeRawBufferPointer, _ sealed: UnsafeRawBufferPointer, _ expiry: Int64?) throws -> Void
    ) throws {
        let statement = try cached ? db.cachedStatement(sql: sql) : db.makeStatement(sql: sql)
        statement.setExactArguments(arguments)
        let stmt = statement.sqliteStatement
        defer { sqlite3_reset(stmt) }
        while true {
            let code = sqlite3_step(stmt)
            if code == SQLITE_DONE { break }
            guard code == SQLITE_ROW else {
                throw DatabaseError(
                    resultCode: ResultCode(rawValue: code),
                    message: String(cString: sqlite3_errmsg(db.sqliteConnection)), sql: sql)
            }
            try row(
                sqlite3_column_int64(stmt, 0), blob(stmt, 1), blob(stmt, 2),
                sqlite3_column_type(stmt, 3) == SQLITE_NULL ? nil : sqlite3_column_int64(stmt, 3))
        }
    }

    /// The bytes of a blob column of the current row, lent until the statement moves on.
    private static func blob(_ stmt: SQLiteStatement, _ column: Int32) -> UnsafeRawBufferPointer {
        // The pointer first, then the size of what it points to (SQLite's documented order).
        let base = sqlite3_column_blob(stmt, column)
        let count = Int(sqlite3_column_bytes(stmt, column))
        guard count > 0, let base else { return UnsafeRawBufferPointer(start: nil, count: 0) }
        return UnsafeRawBufferPointer(start: base, count: count)
    }

    // MARK: Metadata and digest

    func meta(_ name: String) throws -> Data? {
        try Data.fetchOne(db.cachedStatement(sql: "SELECT value FROM \(tables.meta) WHERE name = ?"), arguments: [name])
    }

    func setMeta(_ name: String, _ value: Data) throws {
        try db.execute(
            sql: "INSERT INTO \(tables.meta)(name, value) VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET value = excluded.value",
            arguments: [name, value])
    }

    func digest() throws -> Data? {
        guard try db.tableExists(tables.digest) else { return nil }
        return try Data.fetchOne(db, sql: "SELECT value FROM \(tables.digest) WHERE id = 1")
    }

    func setDigest(_ state: Data) throws {
        try db.execute(
            sql: "INSERT INTO \(tables.digest)(id, value) VALUES (1, ?) ON CONFLICT(id) DO UPDATE SET value = excluded.value",
            arguments: [state])
    }

    // MARK: Bulk

    func bulkInsert(_ items: [NewStoredItem]) throws -> [Int64] {
        var rowids = [Int64]()
        rowids.reserveCapacity(items.count)
        for item in items {
            guard case .inserted(let rowid) = try insertItem(type: item.type, name: item.name, sealed: item.sealed, expiry: item.expiry)
            else {
                throw WalletError.storage("an imported record is already stored in \(tables.items) (same type and id)")
            }
            try insertTags(item: rowid, item.tags[...])
            rowids.append(rowid)
        }
        return rowids
    }

    func itemCount() throws -> Int {
        try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM \(tables.items)") ?? 0
    }

    // MARK: Maintenance

    /// The item of a row read by ``items(after:limit:)`` or ``item(rowid:)``, or nil when a
    /// column is not of the kind the wallet writes (a row changed from outside). Columns: id,
    /// type, name, value, expiry (also the key rotation's walk).
    static func walked(_ row: Row) -> StoredItem? {
        guard let rowid = Int64.fromDatabaseValue(row[0]), let type = Int64.fromDatabaseValue(row[1]),
            let name = Data.fromDatabaseValue(row[2]), let sealed = Data.fromDatabaseValue(row[3])
        else { return nil }
        let expiry: Int64?
        if row.hasNull(atIndex: 4) {
            expiry = nil
        } else if let value = Int64.fromDatabaseValue(row[4]) {
            expiry = value
        } else {
            return nil
        }
        return StoredItem(rowid: rowid, type: type, name: name, sealed: sealed, expiry: expiry)
    }

    func items(after: Int64, limit: Int) throws -> [WalkedItem] {
        let statement = try db.cachedStatement(
            sql: "SELECT id, type, name, value, expiry FROM \(tables.items) WHERE id > ? ORDER BY id LIMIT ?")
        return try Row.fetchAll(statement, arguments: [after, limit]).map { row in
            if let item = Self.walked(row) { return .item(item) }
            return .malformed(rowid: row[0])
        }
    }

    func item(rowid: Int64) throws -> StoredItem? {
        let statement = try db.cachedStatement(sql: "SELECT id, type, name, value, expiry FROM \(tables.items) WHERE id = ?")
        return try Row.fetchOne(statement, arguments: [rowid]).flatMap(Self.walked)
    }

    func tags(items: [Int64]) throws -> [Int64: [StoredTag?]] {
        // The write path's own statement per item (read with SQLite's C API: GRDB reads text only
        // up to its first U+0000), through the tag table's primary key.
        let select = try statement(.tagsOfItem)
        var out = [Int64: [StoredTag?]]()
        for item in items {
            var rows = [StoredTag?]()
            select.bind(1, item)
            try select.forEach { row in
                let name = row.value(0)
                rows.append(Int64.fromDatabaseValue(name).map { StoredTag(name: $0, value: StoredTagValue(row.value(1))) })
            }
            if !rows.isEmpty { out[item] = rows }
        }
        return out
    }

    func tagRowCount() throws -> Int {
        try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM \(tables.tags)") ?? 0
    }

    func orphanTagRowCount() throws -> Int {
        try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM \(tables.tags) WHERE item NOT IN (SELECT id FROM \(tables.items))") ?? 0
    }

    func duplicateItems(limit: Int) throws -> [DuplicateItems] {
        try Row.fetchAll(
            db, sql: "SELECT MIN(id), COUNT(*) FROM \(tables.items) GROUP BY type, name HAVING COUNT(*) > 1 LIMIT ?",
            arguments: [limit]
        ).map { DuplicateItems(rowid: $0[0], count: $0[1]) }
    }

    /// SQLite keeps each value's kind (text or blob): a row reads back as it was written.
    func storedForm(_ row: StoredTag) -> StoredTag { row }
}

extension DirectStatement {
    /// Binds a tag row's value: a blind index (blob) or a plaintext tag value (text).
    func bind(_ index: Int32, _ value: StoredTagValue) {
        switch value {
        case .blind(let data): bind(index, data)
        case .plaintext(let text): bind(index, text: text)
        case .stored(let data, _): bind(index, data)
        }
    }
}

// MARK: - The backend of a wallet file

/// The SQLite backend of one wallet file: its connection pool (one writer, readers beside it in
/// WAL mode), transactions over one profile's tables, and the file's profile catalogue.
struct SQLiteWalletStorage: WalletStorage {
    let pool: DatabasePool
    /// The file's path (errors name it).
    let path: String

    var dialect: SQLDialect { .sqlite }
    /// Triggers on each profile's items keep its digest, calling `coffer_digest_v4`, which the
    /// wallet registers on its writer with the key (``DigestFunction``).
    var digestKeeping: DigestKeeping { .backend }

    func read<T: Sendable>(_ profile: ProfileTables, _ body: @escaping @Sendable (SQLiteTransaction) async throws -> T) async throws
        -> T
    {
        // Escaping: the body's task may still hold it for a moment after its result is in.
        try await pool.read { db in
            try ConnectionMailbox.serve(SQLiteRows(db: db, tables: profile)) { mailbox in
                try await body(SQLiteTransaction(mailbox: mailbox, tables: profile))
            }
        }
    }

    func write<T: Sendable>(_ profile: ProfileTables, _ body: @escaping @Sendable (SQLiteTransaction) async throws -> T) async throws
        -> T
    {
        // Escaping: the body's task may still hold it for a moment after its result is in.
        try await pool.write { db in
            try ConnectionMailbox.serve(SQLiteRows(db: db, tables: profile)) { mailbox in
                try await body(SQLiteTransaction(mailbox: mailbox, tables: profile))
            }
        }
    }

    func profileNames() async throws -> [String] {
        try await pool.read { db in try ProfileCatalogue.names(db) }
    }

    func resolveProfile(_ name: String) async throws -> ProfileTables? {
        try await pool.read { db in try ProfileCatalogue.resolve(db, name: name) }
    }

    func createProfile(_ name: String, meta: @escaping @Sendable (ProfileTables) throws -> [(name: String, value: Data)])
        async throws -> ProfileTables
    {
        let path = self.path
        return try await pool.write { db in
            if try ProfileCatalogue.resolve(db, name: name) != nil {
                throw WalletError.walletExists(path: ProfileCatalogue.label(path: path, profile: name))
            }
            let tables = try ProfileCatalogue.add(db, name: name)
            try db.execute(sql: tables.creationSQL)
            let store = SQLiteRows(db: db, tables: tables)
            for (name, value) in try meta(tables) { try store.setMeta(name, value) }
            return tables
        }
    }

    func removeProfile(_ name: String) async throws -> Bool {
        let removed = try await pool.write { db in try ProfileCatalogue.remove(db, name: name) }
        // The dropped tables' pages, given back as after any large delete (beyond the threshold).
        if removed { try await pool.writeWithoutTransaction { db in SQLiteFootprint.reclaimFreePages(db) } }
        return removed
    }

    func close() throws {
        try pool.close()
    }
}

/// The seam's transaction over SQLite for an `async` body: each call runs on the connection's
/// thread, which waits for the body's calls until the body returns (see ``ConnectionMailbox``).
struct SQLiteTransaction: WalletStorageTransaction {
    let mailbox: ConnectionMailbox<SQLiteRows>
    let tables: ProfileTables

    func locate(type: Int64, name: Data) async throws -> StoredItem? {
        try await mailbox.perform { try $0.locate(type: type, name: name) }
    }
    func locateLive(type: Int64, name: Data, now: Int64) async throws -> StoredItem? {
        try await mailbox.perform { try $0.locateLive(type: type, name: name, now: now) }
    }
    func insertItem(type: Int64, name: Data, sealed: Data, expiry: Int64?) async throws -> ItemInsertOutcome {
        try await mailbox.perform { try $0.insertItem(type: type, name: name, sealed: sealed, expiry: expiry) }
    }
    func restoreItem(_ item: StoredItem) async throws { try await mailbox.perform { try $0.restoreItem(item) } }
    func updateSealed(rowid: Int64, sealed: Data) async throws {
        try await mailbox.perform { try $0.updateSealed(rowid: rowid, sealed: sealed) }
    }
    func deleteItem(rowid: Int64) async throws { try await mailbox.perform { try $0.deleteItem(rowid: rowid) } }
    func takeItem(type: Int64, name: Data) async throws -> StoredItem? {
        try await mailbox.perform { try $0.takeItem(type: type, name: name) }
    }
    func containsType(_ type: Int64) async throws -> Bool { try await mailbox.perform { try $0.containsType(type) } }
    func anyExpiry() async throws -> Bool { try await mailbox.perform { try $0.anyExpiry() } }
    func tags(item: Int64) async throws -> [StoredTag] { try await mailbox.perform { try $0.tags(item: item) } }
    func insertTags(item: Int64, _ rows: [StoredTag]) async throws {
        try await mailbox.perform { try $0.insertTags(item: item, rows) }
    }
    func deleteTags(item: Int64) async throws { try await mailbox.perform { try $0.deleteTags(item: item) } }
    func deleteTag(item: Int64, _ row: StoredTag) async throws { try await mailbox.perform { try $0.deleteTag(item: item, row) } }
    func markMultiValued(names: [Int64]) async throws { try await mailbox.perform { try $0.markMultiValued(names: names) } }
    func isMultiValued(name: Int64) async throws -> Bool { try await mailbox.perform { try $0.isMultiValued(name: name) } }
    func page(_ statement: CompiledStatement, type: Int64) async throws -> [StoredItem] {
        try await mailbox.perform { try $0.page(statement, type: type) }
    }
    func integers(_ statement: CompiledStatement) async throws -> [Int64] {
        try await mailbox.perform { try $0.integers(statement) }
    }
    func meta(_ name: String) async throws -> Data? { try await mailbox.perform { try $0.meta(name) } }
    func setMeta(_ name: String, _ value: Data) async throws { try await mailbox.perform { try $0.setMeta(name, value) } }
    func digest() async throws -> Data? { try await mailbox.perform { try $0.digest() } }
    func setDigest(_ state: Data) async throws { try await mailbox.perform { try $0.setDigest(state) } }
    func bulkInsert(_ items: [NewStoredItem]) async throws -> [Int64] { try await mailbox.perform { try $0.bulkInsert(items) } }
    func itemCount() async throws -> Int { try await mailbox.perform { try $0.itemCount() } }
    func items(after: Int64, limit: Int) async throws -> [WalkedItem] {
        try await mailbox.perform { try $0.items(after: after, limit: limit) }
    }
    func item(rowid: Int64) async throws -> StoredItem? { try await mailbox.perform { try $0.item(rowid: rowid) } }
    func tags(items: [Int64]) async throws -> [Int64: [StoredTag?]] { try await mailbox.perform { try $0.tags(items: items) } }
    func tagRowCount() async throws -> Int { try await mailbox.perform { try $0.tagRowCount() } }
    func orphanTagRowCount() async throws -> Int { try await mailbox.perform { try $0.orphanTagRowCount() } }
    func duplicateItems(limit: Int) async throws -> [DuplicateItems] {
        try await mailbox.perform { try $0.duplicateItems(limit: limit) }
    }
    func storedForm(_ row: StoredTag) -> StoredTag { row }

    /// Runs `work` with the transaction's GRDB connection, on its thread: the SQLite backend's
    /// own steps beside the seam's (the check's schema and `PRAGMA integrity_check`).
    func withDatabase<T: Sendable>(_ work: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await mailbox.perform { try work($0.db) }
    }
}

/// Lets an `async` body use a GRDB connection that must only be used on the thread GRDB gave
/// it: the body runs in a task of its own, and each of its calls is posted here and run on the
/// connection's thread, which waits for them (blocking only GRDB's own queue, which holds the
/// transaction anyway) until the body is done. Its result decides the transaction: a value
/// commits, a thrown error rolls back.
///
/// A call posted after the body ended (a transaction value kept past its closure) throws
/// ``WalletError/invalidInput(_:)`` instead of waiting for a thread that is gone.
final class ConnectionMailbox<Context>: Sendable {
    private enum Item {
        case job(@Sendable (Context) -> Void)
        case finish
    }

    private struct State {
        var items = [Item]()
        var finished = false
    }

    private let state = Locked(State())
    private let signal = DispatchSemaphore(value: 0)

    private init() {}

    /// Runs `body` in a task of its own and serves its calls on this thread with `context` until it
    /// returns; returns what it returned or throws what it threw.
    static func serve<T: Sendable>(
        _ context: Context, _ body: @escaping @Sendable (ConnectionMailbox<Context>) async throws -> T
    ) throws -> T {
        let mailbox = ConnectionMailbox()
        let outcome = Locked<Result<T, Error>?>(nil)
        Task {
            let result: Result<T, Error>
            do { result = .success(try await body(mailbox)) } catch { result = .failure(error) }
            outcome.withLock { $0 = result }
            mailbox.post(.finish)
        }
        mailbox.run(context)
        guard let result = outcome.withLock({ $0 }) else { preconditionFailure("the body's task ended without a result") }
        return try result.get()
    }

    /// Runs `work` on the connection's thread with its context, and returns its result.
    func perform<T: Sendable>(_ work: @escaping @Sendable (Context) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, Error>) in
            let accepted = post(.job({ context in continuation.resume(with: Result { try work(context) }) }))
            if !accepted {
                continuation.resume(
                    throwing: WalletError.invalidInput(
                        "a wallet transaction was used after its closure returned; use it only inside the closure"))
            }
        }
    }

    /// Queues an item; false when the body already finished (the item is dropped).
    @discardableResult
    private func post(_ item: Item) -> Bool {
        let accepted = state.withLock { state -> Bool in
            guard !state.finished else { return false }
            if case .finish = item { state.finished = true }
            state.items.append(item)
            return true
        }
        if accepted { signal.signal() }
        return accepted
    }

    /// On the connection's thread: runs jobs in order until the body is done.
    private func run(_ context: Context) {
        while true {
            signal.wait()
            let item = state.withLock { $0.items.removeFirst() }
            switch item {
            case .job(let job): job(context)
            case .finish: return
            }
        }
    }
}

// MARK: - Values between the seam and GRDB

extension StorageValue {
    /// The value as GRDB binds it.
    var databaseValue: DatabaseValue {
        switch self {
        case .null: return .null
        case .integer(let v): return v.databaseValue
        case .real(let v): return v.databaseValue
        case .text(let v): return v.databaseValue
        case .blob(let v): return v.databaseValue
        }
    }

    /// A GRDB value as a backend-neutral one.
    init(_ value: DatabaseValue) {
        switch value.storage {
        case .null: self = .null
        case .int64(let v): self = .integer(v)
        case .double(let v): self = .real(v)
        case .string(let v): self = .text(v)
        case .blob(let v): self = .blob(v)
        }
    }
}

extension StoredTagValue {
    /// The value as the SQLite tag index stores it: a blob, or text for a plaintext tag.
    var databaseValue: DatabaseValue {
        switch self {
        case .blind(let data): return data.databaseValue
        case .plaintext(let text): return text.databaseValue
        case .stored(let data, _): return data.databaseValue
        }
    }

    /// A value read back from the SQLite tag index (text: plaintext; anything else: a blind).
    init(_ value: DatabaseValue) {
        switch value.storage {
        case .string(let text): self = .plaintext(text)
        case .blob(let data): self = .blind(data)
        default: self = .blind(Data())
        }
    }
}

extension RecordStore {
    /// A store over `db`'s transaction, on the tables of the profile `keys` belong to.
    init(db: Database, keys: WalletKeys, now: Date = Date(), allowReserved: Bool = false) {
        self.init(rows: SQLiteRows(db: db, tables: keys.tables), keys: keys, now: now, allowReserved: allowReserved)
    }

    /// The transaction's connection (the search engine walks it; see ``SQLiteRows/walk``).
    var db: Database { rows.db }
}

extension Wallet {
    /// One write transaction on the wallet's writer whose `async` body is served a
    /// ``WalletTransaction`` on the writer's thread (see ``ConnectionMailbox``).
    func servedWrite<T: Sendable>(
        keys: WalletKeys, _ body: @escaping @Sendable (ConnectionMailbox<WalletTransaction>) async throws -> T
    ) async throws -> T {
        try await pool.write { db in
            try Self.checkKeys(db, keys)
            return try ConnectionMailbox.serve(WalletTransaction(store: RecordStore(db: db, keys: keys)), body)
        }
    }

    /// One read transaction on a reader connection whose `async` body is served a
    /// ``WalletReader`` on that connection's thread.
    func servedRead<T: Sendable>(
        keys: WalletKeys, _ body: @escaping @Sendable (ConnectionMailbox<WalletReader>) async throws -> T
    ) async throws -> T {
        try await pool.read { db in
            try Self.readWithKeys(db, keys) { try ConnectionMailbox.serve(WalletReader(store: RecordStore(db: db, keys: keys)), body) }
        }
    }
}
