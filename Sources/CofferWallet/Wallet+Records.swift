// Record and tag operations of a Wallet, each one transaction.

import CofferSQLite
import CofferSync
import Foundation
import GRDB

extension Wallet {
    /// Adds a record.
    /// - Parameters:
    ///   - type: the record's type (not empty).
    ///   - id: its id, unique within the type (not empty).
    ///   - value: its value, sealed.
    ///   - tags: its tags; names starting with `~` are stored in clear.
    ///   - expiresAt: when set, the record reads as absent from that moment on.
    /// - Throws: ``WalletError/duplicate(type:id:)`` when (type, id) exists,
    ///   ``WalletError/invalidInput(_:)`` for bad tags or oversized fields.
    public func add(type: String, id: String, value: String, tags: WalletTags = [:], expiresAt: Date? = nil) async throws {
        // Sealed on the calling task; the writer only inserts (see `SealingPipeline`).
        try await gated { keys in
            let sealed = try RecordStore.prepareAdd(
                keys: keys, type: type, id: id, value: value, tags: tags, expiresAt: expiresAt, allowReserved: false)
            try await pool.write { db in
                try Self.checkKeys(db, keys)
                try RecordStore(db: db, keys: keys).insert(sealed)
            }
        }
    }

    /// Replaces a record's value; its tags are kept.
    /// - Throws: ``WalletError/notFound(type:id:)``.
    public func update(type: String, id: String, value: String) async throws {
        try await write { try $0.store.update(type: type, id: id, value: value) }
    }

    /// Replaces value and tags together (Askar's `replace`: the given tags become the whole set).
    public func replace(type: String, id: String, value: String, tags: WalletTags) async throws {
        try await write { try $0.store.replace(type: type, id: id, value: value, tags: tags) }
    }

    /// Reads a record.
    /// - Throws: ``WalletError/notFound(type:id:)`` when absent; ``WalletError/corrupted(_:)`` when altered.
    public func get(type: String, id: String, options: RecordOptions = RecordOptions()) async throws -> WalletRecord {
        guard let record = try await fetch(type: type, id: id, options: options) else {
            throw WalletError.notFound(type: type, id: id)
        }
        return record
    }

    /// Reads a record, or `nil` when there is none (as Askar's `fetch`).
    public func fetch(type: String, id: String, options: RecordOptions = RecordOptions()) async throws -> WalletRecord? {
        try await pointRead(isMiss: { $0 == nil }, { try $0.store.get(type: type, id: id, options: options) })
    }

    /// Deletes a record and its tags.
    /// - Throws: ``WalletError/notFound(type:id:)``.
    public func delete(type: String, id: String) async throws {
        try await write { try $0.store.delete(type: type, id: id) }
    }

    /// Adds tags to a record; a given name replaces that tag's value, other tags stay.
    public func addTags(type: String, id: String, tags: WalletTags) async throws {
        try await write { try $0.store.addTags(type: type, id: id, tags: tags) }
    }

    /// Replaces the whole tag set of a record.
    public func updateTags(type: String, id: String, tags: WalletTags) async throws {
        try await write { try $0.store.updateTags(type: type, id: id, tags: tags) }
    }

    /// Deletes the named tags from a record (names it does not have are ignored).
    public func deleteTags(type: String, id: String, names: [String]) async throws {
        try await write { try $0.store.deleteTags(type: type, id: id, names: names) }
    }

    /// Counts the records of `type` that match `query`.
    public func count(type: String, matching query: WalletQuery = .all) async throws -> Int {
        try Validate.type(type)
        return try await queryRead(
            isMiss: { $0 == 0 },
            { try QueryCompiler.compile(type: type, query: query, keys: $0.store.keys).count($0.store.db, keys: $0.store.keys) })
    }

    /// Reads every matching record at once, in insertion order (or newest first), skipping
    /// `offset` and returning at most `limit`. For large results prefer
    /// ``records(type:matching:options:pageSize:)``, which streams.
    public func fetchAll(
        type: String, matching query: WalletQuery = .all, options: RecordOptions = RecordOptions(),
        offset: Int = 0, limit: Int? = nil, newestFirst: Bool = false
    ) async throws -> [WalletRecord] {
        try await queryRead(
            isMiss: { $0.isEmpty },
            { try $0.fetchAll(type: type, matching: query, options: options, offset: offset, limit: limit, newestFirst: newestFirst) })
    }

    /// Deletes every record of `type` matching `query` in one transaction; returns how many were
    /// removed. Like an import, it runs with a bounded page cache and no memory map, so removing
    /// most of a large wallet does not hold the file in memory; the space it frees is given back
    /// to the file system after the commit.
    @discardableResult
    public func removeAll(type: String, matching query: WalletQuery = .all) async throws -> Int {
        try await gated { keys in
            try await pool.writeWithoutTransaction { db -> Int in
                try Self.beginBulk(db, cacheKiB: Self.importCacheKiB)
                defer { Self.endBulk(db, cacheKiB: Schema.writerCacheKiB) }
                var removed = 0
                try db.inTransaction {
                    try Self.checkKeys(db, keys)
                    removed = try WalletTransaction(store: RecordStore(db: db, keys: keys)).removeAll(type: type, matching: query)
                    return .commit
                }
                // Give the space back now, while the cache is still small.
                SQLiteFootprint.reclaimFreePages(db)
                SQLiteFootprint.checkpointAndTrim(db)
                return removed
            }
        }
    }

    /// Runs `body` in one write transaction: everything it does commits together, or, when it
    /// throws, nothing does.
    public func transaction<T: Sendable>(_ body: @escaping @Sendable (WalletTransaction) throws -> T) async throws -> T {
        try await write(body)
    }

    /// Runs `body` in one read transaction: it sees one consistent state, and many reads share
    /// the cost of one transaction.
    public func session<T: Sendable>(_ body: @escaping @Sendable (WalletReader) throws -> T) async throws -> T {
        try await read(body)
    }

    /// Runs `body` with the wallet's keys, holding them against a key rotation until it
    /// returns (see ``KeyGate``); errors are translated to ``WalletError``. Never nested.
    /// A task cancelled before the call gets `CancellationError` and nothing runs.
    func gated<T>(_ body: (WalletKeys) async throws -> T) async throws -> T {
        if gate.isWalletClosed { throw WalletError.closed }
        try refuseInsideAsyncTransaction()
        try Task.checkCancellation()
        let keys = await gate.enter()
        defer { gate.leave() }
        do { return try await body(keys) } catch { throw closedOrTranslated(error) }
    }

    /// The error a call reports: ``WalletError/closed`` once the wallet is closed (whatever
    /// SQLite said about its closed connections), else the error translated.
    func closedOrTranslated(_ error: Error) -> Error {
        gate.isWalletClosed ? WalletError.closed : Self.translate(error)
    }

    func write<T: Sendable>(_ body: @escaping @Sendable (WalletTransaction) throws -> T) async throws -> T {
        try await gated { keys in
            try await pool.write { db in
                try Self.checkKeys(db, keys)
                let transaction = WalletTransaction(store: RecordStore(db: db, keys: keys))
                let result: T
                do { result = try body(transaction) } catch {
                    transaction.pipeline?.abandon()
                    throw error
                }
                // What the body added or replaced and is not written yet (see `SealingPipeline`).
                try transaction.pipeline?.finish()
                return result
            }
        }
    }

    /// A read of a few microseconds (one indexed row): run on the calling task rather than
    /// hopping to a reader queue and back, which would cost ten times the read itself. WAL
    /// readers never wait for the writer, so this holds the thread only for the read.
    ///
    /// `body` must run a single SQL statement. It runs outside an explicit transaction: one
    /// statement reads one consistent snapshot on its own, and BEGIN/COMMIT around it would cost
    /// more than the read.
    func pointRead<T>(isMiss: (T) -> Bool = { _ in false }, _ body: (WalletReader) throws -> T) async throws -> T {
        if gate.isWalletClosed { throw WalletError.closed }
        try Task.checkCancellation()
        var entered = gate.tryEnter()
        if entered == nil { entered = await gate.enter() }
        guard let keys = entered else { preconditionFailure("KeyGate.enter returns keys") }
        defer { gate.leave() }
        return try pointRead(keys: keys, isMiss: isMiss, body)
    }

    /// ``pointRead(_:)`` once the keys are held: GRDB's synchronous read, on this thread.
    private func pointRead<T>(keys: WalletKeys, isMiss: (T) -> Bool, _ body: (WalletReader) throws -> T) throws -> T {
        do {
            return try pool.unsafeRead { db in
                try Self.readWithKeys(db, keys, isMiss: isMiss) { try body(WalletReader(store: RecordStore(db: db, keys: keys))) }
            }
        } catch {
            throw closedOrTranslated(error)
        }
    }

    /// ``read(isMiss:_:)`` of a query: cancelling the calling Task also stops a `$regex` match
    /// under way, and the call then ends in `CancellationError` (see ``MatchCancellation``).
    func queryRead<T: Sendable>(
        isMiss: @escaping @Sendable (T) -> Bool = { _ in false }, _ body: @escaping @Sendable (WalletReader) throws -> T
    ) async throws -> T {
        try await MatchCancellation.run { token in
            try await read(isMiss: isMiss) { reader in try token.during { try body(reader) } }
        }
    }

    func read<T: Sendable>(
        isMiss: @escaping @Sendable (T) -> Bool = { _ in false }, _ body: @escaping @Sendable (WalletReader) throws -> T
    ) async throws -> T {
        try await gated { keys in
            try await pool.read { db in
                try Self.readWithKeys(db, keys, isMiss: isMiss) { try body(WalletReader(store: RecordStore(db: db, keys: keys))) }
            }
        }
    }

    /// Runs a read's `body` with `keys`. When it fails as if the file were damaged or the record
    /// missing, or finds nothing (`isMiss`), the file's key check is read first (in the same
    /// snapshot, only on these paths, so a read that finds something costs nothing more): if
    /// another process (or another open ``Wallet`` on the file) rotated the key since these keys
    /// were read — they find no record then, every blind having changed — the read throws
    /// ``WalletError/wrongKey(_:)`` saying so, instead of an empty answer, `notFound` or
    /// ``WalletError/corrupted(_:)``.
    static func readWithKeys<T>(_ db: Database, _ keys: WalletKeys, isMiss: (T) -> Bool = { _ in false }, _ body: () throws -> T) throws
        -> T
    {
        let result: T
        do { result = try body() } catch {
            switch translate(error) {
            case WalletError.corrupted, WalletError.notFound: try checkKeysAfterRead(db, keys)
            default: break
            }
            throw error
        }
        if isMiss(result) { try checkKeysAfterRead(db, keys) }
        return result
    }

    /// Throws ``WalletError/wrongKey(_:)`` when the file's key check names another wallet key
    /// than `keys` (see `checkKeys(_:_:)`); nothing when it cannot be read.
    static func checkKeysAfterRead(_ db: Database, _ keys: WalletKeys) throws {
        guard let stored = try? Data.fetchOne(db, sql: "SELECT value FROM \(keys.tables.meta) WHERE name = 'keycheck'"),
            stored != keys.keyCheck
        else { return }
        if let removed = removedProfile(db, keys.tables) { throw removed }
        throw WalletError.wrongKey(
            "the wallet key was rotated by another process (or another open Wallet on this file) after this one was opened, so its key no longer opens the records; open the wallet again with its current key"
        )
    }

    /// ``checkKeysAfterRead(_:_:)`` before work that reads every record (check, export): the
    /// file naming another key counts only when the records' version digest does not verify
    /// under `keys` either, as after a rotation elsewhere or in a removed profile's tables given
    /// to a new one (where every record would then read as damaged). A key check row altered
    /// alone is left for the walk to meet.
    static func checkKeysBeforeWalk(_ db: Database, _ keys: WalletKeys) throws {
        guard (try? DigestState.read(db, keys: keys)) == nil else { return }
        try checkKeysAfterRead(db, keys)
    }

    /// When the file names another key than an open wallet's: whether that is because its
    /// profile was removed and its number given to a profile made since (whose tables the
    /// wallet's statements now name). The error to throw then, else nil (a rotation).
    static func removedProfile(_ db: Database, _ tables: ProfileTables) -> WalletError? {
        guard !tables.isDefault else { return nil }
        let owner = try? String.fetchOne(
            db, sql: "SELECT name FROM \(ProfileCatalogue.table) WHERE number = ?", arguments: [tables.number])
        guard owner != tables.name else { return nil }
        return .storage(Wallet.profileRemovedMessage, cause: StorageCause(posix: .ENOENT))
    }
}

/// Reads inside one `Wallet.session(_:)` whose body is synchronous. Valid only inside the closure.
public final class WalletReader {
    let store: RecordStore
    /// The transaction this reader belongs to, if any: its sealed-ahead writes are written
    /// before each read, so the reader sees them.
    private weak var transaction: WalletTransaction?

    init(store: RecordStore, transaction: WalletTransaction? = nil) {
        self.store = store
        self.transaction = transaction
    }

    /// Writes the transaction's pending writes first (see `SealingPipeline`).
    private func settle() throws { try transaction?.settle() }

    /// Reads a record, or `nil`.
    public func fetch(type: String, id: String, options: RecordOptions = RecordOptions()) throws -> WalletRecord? {
        try settle()
        return try store.get(type: type, id: id, options: options)
    }

    /// Reads a record or throws ``WalletError/notFound(type:id:)``.
    public func get(type: String, id: String, options: RecordOptions = RecordOptions()) throws -> WalletRecord {
        try settle()
        guard let r = try store.get(type: type, id: id, options: options) else { throw WalletError.notFound(type: type, id: id) }
        return r
    }

    /// Counts matching records.
    public func count(type: String, matching query: WalletQuery = .all) throws -> Int {
        try settle()
        try Validate.type(type)
        return try QueryCompiler.compile(type: type, query: query, keys: store.keys, allowReserved: store.allowReserved).count(
            store.db, keys: store.keys)
    }

    /// One search page read in this transaction: the total count (when asked for) and up to
    /// `count` records (every match when nil) agree with each other.
    public func search(type: String, matching query: WalletQuery, options: SearchOptions = SearchOptions(), count: Int? = nil) throws
        -> SearchPage
    {
        try settle()
        try Validate.type(type)
        if let count, count < 1 { throw WalletError.invalidInput("count must be at least 1, got \(count)") }
        let search = try QueryCompiler.compile(type: type, query: query, keys: store.keys, allowReserved: store.allowReserved)
        var page = SearchPage()
        if options.retrieveTotalCount { page.totalCount = try search.count(store.db, keys: store.keys) }
        if options.retrieveRecords {
            var cursor = SearchCursor()
            page.records = try search.page(
                store.db, keys: store.keys, cursor: &cursor, limit: count ?? Int.max / 2,
                options: options.recordOptions, allowRange: true)
        }
        return page
    }

    /// Every matching record, in insertion order (or newest first), skipping `offset`, at most `limit`.
    public func fetchAll(
        type: String, matching query: WalletQuery = .all, options: RecordOptions = RecordOptions(),
        offset: Int = 0, limit: Int? = nil, newestFirst: Bool = false
    ) throws -> [WalletRecord] {
        try settle()
        try Validate.type(type)
        if let limit, limit < 0 { throw WalletError.invalidInput("limit must not be negative, got \(limit)") }
        guard offset >= 0 else { throw WalletError.invalidInput("offset must not be negative, got \(offset)") }
        let search = try QueryCompiler.compile(type: type, query: query, keys: store.keys, allowReserved: store.allowReserved)
        var cursor = SearchCursor()
        if offset > 0 {
            // Skipping still walks the skipped rows; paging through a search handle does not.
            let minimal = RecordOptions(retrieveType: false, retrieveValue: false, retrieveTags: false)
            _ = try search.page(store.db, keys: store.keys, cursor: &cursor, limit: offset, options: minimal, descending: newestFirst)
        }
        let want = limit ?? Int.max / 2
        if want == 0 { return [] }
        return try search.page(
            store.db, keys: store.keys, cursor: &cursor, limit: want, options: options, descending: newestFirst,
            allowRange: offset == 0)
    }
}

/// Writes inside one `Wallet.transaction(_:)` whose body is synchronous: all commit together or not at all. Each call
/// is atomic on its own too, so one the closure catches leaves nothing half done.
/// Valid only inside the closure.
///
/// In a large transaction, adds and replaces are sealed on other cores ahead of the writer and
/// written in the order made. Each call still throws its own argument, `duplicate` and
/// `notFound` errors; a failure found only once the call has returned (a replaced record whose
/// stored box no longer opens, a storage error) is thrown from the next call or the closure's
/// end, and then nothing of the transaction commits.
public final class WalletTransaction {
    let store: RecordStore
    /// Seals the body's adds and replaces on the other cores once the body has made enough of
    /// them to be worth it (see `SealingPipeline`); nil until the first.
    private(set) var pipeline: SealingPipeline?

    init(store: RecordStore) { self.store = store }

    /// A reader over this transaction's state (sees its own uncommitted writes).
    public var reader: WalletReader { WalletReader(store: store, transaction: self) }

    /// Writes every add and replace sealed ahead, in order, before a call that reads or writes
    /// otherwise (see `SealingPipeline`).
    func settle() throws { try pipeline?.drain() }

    /// The pipeline (made at the first add or replace), when there is another core to seal on.
    private func sealingAhead() -> SealingPipeline? {
        if let pipeline { return pipeline }
        guard SealingPipeline.isUseful else { return nil }
        let started = SealingPipeline(store: store)
        pipeline = started
        return started
    }

    /// Adds a record; see ``Wallet/add(type:id:value:tags:expiresAt:)``.
    public func add(type: String, id: String, value: String, tags: WalletTags = [:], expiresAt: Date? = nil) throws {
        if let pipeline = sealingAhead() {
            try pipeline.add(type: type, id: id, value: value, tags: tags, expiresAt: expiresAt)
        } else {
            try store.add(type: type, id: id, value: value, tags: tags, expiresAt: expiresAt)
        }
    }

    /// Replaces a record's value, keeping its tags.
    public func update(type: String, id: String, value: String) throws {
        try settle()
        try store.update(type: type, id: id, value: value)
    }

    /// Replaces value and the whole tag set.
    public func replace(type: String, id: String, value: String, tags: WalletTags) throws {
        if let pipeline = sealingAhead() {
            try pipeline.replace(type: type, id: id, value: value, tags: tags)
        } else {
            try store.replace(type: type, id: id, value: value, tags: tags)
        }
    }

    /// Deletes a record.
    public func delete(type: String, id: String) throws {
        try settle()
        try store.delete(type: type, id: id)
    }

    /// Merges tags into a record.
    public func addTags(type: String, id: String, tags: WalletTags) throws {
        try settle()
        try store.addTags(type: type, id: id, tags: tags)
    }

    /// Replaces a record's tag set.
    public func updateTags(type: String, id: String, tags: WalletTags) throws {
        try settle()
        try store.updateTags(type: type, id: id, tags: tags)
    }

    /// Deletes named tags from a record.
    public func deleteTags(type: String, id: String, names: [String]) throws {
        try settle()
        try store.deleteTags(type: type, id: id, names: names)
    }

    /// Deletes every matching record; returns the count. One record at a time, each deletion
    /// whole: when it fails part way, the records it removed before stay removed in this
    /// transaction (throw from the transaction's body to roll them back with the rest). It uses
    /// no savepoint: SQLite would keep the old content of every page it changes until the
    /// savepoint ends, in memory on the wallet's writer (`temp_store = MEMORY`), which measured
    /// 340 MB and 262 s for 100,000 records against 75 MB and 2.6 s without it.
    @discardableResult
    public func removeAll(type: String, matching query: WalletQuery = .all) throws -> Int {
        try settle()
        return try removeAllMatching(type: type, query: query)
    }

    private func removeAllMatching(type: String, query: WalletQuery) throws -> Int {
        try Validate.type(type)
        let search = try QueryCompiler.compile(type: type, query: query, keys: store.keys, allowReserved: store.allowReserved)
        var cursor = SearchCursor()
        var removed = 0
        let minimal = RecordOptions(retrieveType: false, retrieveValue: false, retrieveTags: false)
        while !cursor.exhausted {
            var next = cursor
            let page = try search.page(store.db, keys: store.keys, cursor: &next, limit: 256, options: minimal)
            // Delete after reading the page; the cursor is a row id, so deletions do not shift it.
            for record in page {
                try store.delete(type: search.type, id: record.id)
                removed += 1
            }
            cursor = next
        }
        return removed
    }
}
