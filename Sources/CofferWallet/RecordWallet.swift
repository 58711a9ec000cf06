// One record API over both backends: a wallet file on SQLite (`Wallet`) and, in a build with the
// package trait `PostgreSQL`, a profile in a PostgreSQL database (`PostgresWallet`). Code written
// against `RecordWallet` runs on either; each backend keeps its own extras beside it.

import Foundation

/// The record calls every Coffer wallet serves, and every transaction of one: adding, reading,
/// changing, tagging, searching, counting and removing records, with the same arguments, results
/// and errors on each backend. ``RecordWallet`` adds what a whole wallet does (imports, export,
/// checks, compaction, rekeying, transactions); inside ``RecordWallet/inTransaction(_:)`` these
/// same calls all commit together.
public protocol RecordAccess: Sendable {
    /// Adds a record.
    /// - Throws: ``WalletError/duplicate(type:id:)`` when a live record of this type and id exists.
    func add(type: String, id: String, value: String, tags: WalletTags, expiresAt: Date?) async throws
    /// Replaces the value of a live record; its tags stay.
    /// - Throws: ``WalletError/notFound(type:id:)`` when there is none.
    func update(type: String, id: String, value: String) async throws
    /// Replaces the value and the tags of a live record.
    /// - Throws: ``WalletError/notFound(type:id:)`` when there is none.
    func replace(type: String, id: String, value: String, tags: WalletTags) async throws
    /// Deletes a live record and its tags.
    /// - Throws: ``WalletError/notFound(type:id:)`` when there is none.
    func delete(type: String, id: String) async throws
    /// Adds these tags to a live record; a name it has already takes the new value.
    func addTags(type: String, id: String, tags: WalletTags) async throws
    /// Makes these the tags of a live record.
    func updateTags(type: String, id: String, tags: WalletTags) async throws
    /// Removes the tags of these names from a live record.
    func deleteTags(type: String, id: String, names: [String]) async throws
    /// The live record of `type` and `id`, or nil.
    func fetch(type: String, id: String, options: RecordOptions) async throws -> WalletRecord?
    /// The live record of `type` and `id`.
    /// - Throws: ``WalletError/notFound(type:id:)`` when there is none.
    func get(type: String, id: String, options: RecordOptions) async throws -> WalletRecord
    /// How many live records of `type` match `query`.
    func count(type: String, matching query: WalletQuery) async throws -> Int
    /// One page of a search: the total count (when `options` asks for it) and up to `count`
    /// records (every match when nil), read from one state of the wallet so they agree.
    func search(type: String, matching query: WalletQuery, options: SearchOptions, count: Int?) async throws -> SearchPage
    /// Removes every live record of `type` matching `query` in one transaction; how many went.
    @discardableResult
    func removeAll(type: String, matching query: WalletQuery) async throws -> Int
}

/// What every Coffer wallet does with its records, whichever storage holds them: ``Wallet`` (a
/// file on SQLite) and, in a build with the package trait `PostgreSQL`, `PostgresWallet` (a
/// profile in a PostgreSQL database) both conform, with the same arguments, errors and results.
///
/// Write an app's or a service's record code once against it:
///
/// ```swift
/// func rememberConnection(_ id: String, label: String, in wallet: some RecordWallet) async throws {
///     try await wallet.inTransaction { records in
///         if try await records.fetch(type: "connection", id: id) == nil {
///             try await records.add(type: "connection", id: id, value: label, tags: ["state": "new"], expiresAt: nil)
///         }
///     }
/// }
/// ```
///
/// What stays backend-specific: opening and creating (a file's URL or a database's settings),
/// each backend's own transaction forms (a synchronous body on SQLite's writer, read-only
/// snapshots). Keys and the SDK's other secrets are ``KeyWallet``'s, search handles
/// ``SearchHandleWallet``'s, and live queries
/// (``RecordWallet/observe(type:matching:options:interval:expiryCheck:)``) this protocol's, on
/// both backends.
public protocol RecordWallet: AnyObject, RecordAccess {
    /// Imports records from a JSON Lines file, all or nothing; how many.
    @discardableResult
    func importRecords(fromJSONLines url: URL, progress: (@Sendable (ImportProgress) -> Void)?) async throws -> Int
    /// Imports a libindy wallet file, all or nothing.
    @discardableResult
    func importIndyWallet(
        at url: URL, key: String, keyDerivation: IndyKeyDerivation, progress: (@Sendable (ForeignImportProgress) -> Void)?
    ) async throws -> ForeignImportSummary
    /// Imports one profile of an Aries Askar SQLite store, all or nothing.
    @discardableResult
    func importAskarStore(
        at url: URL, key: String, profile: String?, skipKeyEntries: Bool, progress: (@Sendable (ForeignImportProgress) -> Void)?
    ) async throws -> ForeignImportSummary
    /// Writes every record to an encrypted backup file in the wallet file's backup format (which
    /// `Wallet.importBackup` restores on either backend); how many records.
    @discardableResult
    func exportBackup(
        to url: URL, key: BackupKey, firstFormatTypes: [String], progress: (@Sendable (BackupProgress) -> Void)?
    ) async throws -> Int
    /// Opens every record and compares what is stored beside it; a report of what does not match.
    func checkIntegrity(progress: (@Sendable (BackupProgress) -> Void)?) async throws -> IntegrityReport
    /// Gives space that deleted records left back to the storage; its bytes before and after.
    func compact() async throws -> (bytesBefore: Int, bytesAfter: Int)
    /// Protects the wallet with `newKey` from now on and, when `rotatingKey`, replaces its own key
    /// and re-seals every record, all in one transaction.
    func rekey(to newKey: WalletKey, rotatingKey: Bool, progress: (@Sendable (BackupProgress) -> Void)?) async throws
    /// Runs `body` in one write transaction: everything it does through the ``RecordAccess`` it
    /// is given commits together when it returns, or, when it throws, nothing does; its reads
    /// see its own writes. On SQLite it is `Wallet.transaction(_:)` with an asynchronous body
    /// (every other write waits meanwhile); on PostgreSQL `PostgresWallet.transaction(readOnly:_:)`
    /// (REPEATABLE READ on one pooled connection: a conflicting write fails the call and nothing
    /// of `body` is kept). Inside `body`, call only the access it is given.
    func inTransaction<T: Sendable>(_ body: @escaping @Sendable (any RecordAccess) async throws -> T) async throws -> T
    /// The records of `type` matching `query`, now and again after every commit that changes
    /// them, from this process or any other, with the same promises on both backends: later
    /// elements only when the result differs, bursts coalesced every `interval`, the result read
    /// again every `expiryCheck` (so expired records leave it), the end at ``close()`` with
    /// ``WalletError/closed``. On SQLite `Wallet.observe` watches the file's data version; on
    /// PostgreSQL `PostgresWallet.observe` listens for the notifications every committed write
    /// sends.
    func observe(type: String, matching query: WalletQuery, options: RecordOptions, interval: Duration, expiryCheck: Duration)
        -> AsyncThrowingStream<[WalletRecord], any Error>
    /// Closes the wallet: later calls fail with a clear error.
    func close() throws
}

extension RecordWallet {
    /// The records of `type` matching `query`, now and after every commit that changes them,
    /// with the default options, a 100 ms interval and a 1 s expiry check (see
    /// ``observe(type:matching:options:interval:expiryCheck:)``).
    public func observe(type: String, matching query: WalletQuery = .all) -> AsyncThrowingStream<[WalletRecord], any Error> {
        observe(type: type, matching: query, options: RecordOptions(), interval: .milliseconds(100), expiryCheck: .seconds(1))
    }
}

extension RecordAccess {
    /// The live record of `type` and `id` with its value and tags, or nil.
    public func fetch(type: String, id: String) async throws -> WalletRecord? {
        try await fetch(type: type, id: id, options: RecordOptions())
    }

    /// The live record of `type` and `id` with its value and tags.
    /// - Throws: ``WalletError/notFound(type:id:)`` when there is none.
    public func get(type: String, id: String) async throws -> WalletRecord {
        try await get(type: type, id: id, options: RecordOptions())
    }
}

extension Wallet: RecordWallet {
    /// One page of a search, read in one read transaction so its count
    /// and its records agree: the total count when `options` asks for it, and up to `count`
    /// records (every match when nil).
    /// - Throws: ``WalletError/invalidInput(_:)`` for a `count` below 1;
    ///   ``WalletError/wrongKey(_:)`` when it finds nothing because another process rotated the
    ///   key since this wallet opened.
    public func search(type: String, matching query: WalletQuery, options: SearchOptions = SearchOptions(), count: Int? = nil)
        async throws -> SearchPage
    {
        try await queryRead(
            isMiss: { ($0.records ?? []).isEmpty && ($0.totalCount ?? 0) == 0 },
            { try $0.search(type: type, matching: query, options: options, count: count) })
    }

    /// The asynchronous `transaction(_:)` for code written against ``RecordWallet``.
    public func inTransaction<T: Sendable>(_ body: @escaping @Sendable (any RecordAccess) async throws -> T) async throws -> T {
        try await transaction { (tx: AsyncWalletTransaction) in try await body(tx) }
    }
}

extension AsyncWalletTransaction: RecordAccess {
    /// One search page as this transaction sees the wallet (its own writes included); see
    /// ``WalletReader/search(type:matching:options:count:)``.
    public func search(type: String, matching query: WalletQuery, options: SearchOptions = SearchOptions(), count: Int? = nil)
        async throws -> SearchPage
    {
        try await mailbox.perform { try $0.reader.search(type: type, matching: query, options: options, count: count) }
    }
}
