// Bringing a wallet from elsewhere: every record of a libindy wallet or an Aries Askar store
// profile, streamed into this wallet in one transaction, the source read-only and untouched.

import CofferCrypto
import CofferSync
import Foundation
import GRDB

/// How far an import from a libindy wallet or an Askar store has come.
public struct ForeignImportProgress: Sendable, Equatable {
    /// Source rows read so far (each imported, or passed over as expired or a skipped key).
    public let rowsRead: Int
    /// Rows the source holds (in the profile, for Askar), counted in the import's snapshot.
    public let totalRows: Int
    /// Records imported so far (not yet committed: the import is all or nothing).
    public let imported: Int
}

/// What an import from a libindy wallet or an Askar store brought in.
public struct ForeignImportSummary: Sendable, Equatable {
    /// How many records of one type were imported.
    public struct TypeCount: Sendable, Equatable {
        /// The record type (libindy's type, Askar's category).
        public let type: String
        /// Records of that type imported.
        public let count: Int
    }

    /// Records imported.
    public let imported: Int
    /// The Askar profile read; nil for a libindy wallet.
    public let profile: String?
    /// Records imported by type, types in byte order.
    public let types: [TypeCount]
    /// Expired records passed over (Askar).
    public let expiredSkipped: Int
    /// Askar key-manager entries passed over (only with `skipKeyEntries`).
    public let keysSkipped: Int
}

extension Wallet {
    /// Most distinct record types one import reports (the summary is kept in memory).
    static let maxForeignImportTypes = 10_000

    /// Imports every record of the libindy (Indy SDK, Evernym Mobile SDK) SQLite wallet at
    /// `url`: types, ids, values and tags byte for byte; its plaintext tags become `~` tags.
    ///
    /// The source is opened read-only and read in one read transaction (a consistent snapshot
    /// even if another process writes it); its file is left byte-identical. The records go in
    /// one transaction of this wallet: all or nothing. A wrong key, a damaged row, a record
    /// Coffer cannot hold, or a (type, id) this wallet already has is an error naming it, and
    /// nothing is imported. It streams, one source row at a time, so memory stays flat at any
    /// size. Cancelling the task stops it, and nothing is imported. Other calls on this wallet
    /// wait while it runs. libindy keeps its wallets locked while open: close the app or SDK
    /// first.
    /// - Parameters:
    ///   - url: the wallet's SQLite file (libindy's `sqlite.db`).
    ///   - key: the wallet's key as given to libindy: the base58 raw key, or the passphrase.
    ///   - keyDerivation: how libindy made the master key from it (its `key_derivation_method`).
    ///   - progress: called every 1,000 source rows and at the end.
    /// - Throws: ``WalletError/wrongKey(_:)``, ``WalletError/duplicate(type:id:)``,
    ///   ``WalletError/corrupted(_:)`` naming the row, ``WalletError/invalidInput(_:)`` when the
    ///   file is not a libindy wallet or a record is one Coffer cannot hold, `CancellationError`.
    @discardableResult
    public func importIndyWallet(
        at url: URL, key: String, keyDerivation: IndyKeyDerivation = .raw,
        progress: (@Sendable (ForeignImportProgress) -> Void)? = nil
    ) async throws -> ForeignImportSummary {
        let source = try await offCaller { try IndyWalletSource.open(at: url, key: key, derivation: keyDerivation) }
        return try await importForeign(source, profile: nil, progress: progress)
    }

    /// Imports the records of one profile of the Aries Askar SQLite store at `url` (credo-ts,
    /// Bifold, ACA-Py): categories become types, names ids, values and tags are kept byte for
    /// byte, plaintext tags stay `~` tags. Records already expired are not imported; the others
    /// keep their expiry.
    ///
    /// Read-only, one consistent snapshot, all or nothing, streamed and cancellable, as
    /// ``importIndyWallet(at:key:keyDerivation:progress:)``. The key method (raw, Argon2i
    /// `int`/`mod`, none) is the one the store records.
    /// - Parameters:
    ///   - url: the store's SQLite file.
    ///   - key: the store's key: the base58 raw key or the passphrase (ignored for `none`).
    ///   - profile: the profile to import; nil for the store's default profile.
    ///   - skipKeyEntries: pass over the keys Askar's key manager holds (kind 1 rows, whose
    ///     CBOR values a Coffer record cannot hold) instead of refusing the import.
    ///   - progress: called every 1,000 source rows and at the end.
    /// - Throws: as ``importIndyWallet(at:key:keyDerivation:progress:)``; also
    ///   ``WalletError/invalidInput(_:)`` for a profile the store lacks, a value that is not
    ///   UTF-8 text, or a key entry without `skipKeyEntries`.
    @discardableResult
    public func importAskarStore(
        at url: URL, key: String, profile: String? = nil, skipKeyEntries: Bool = false,
        progress: (@Sendable (ForeignImportProgress) -> Void)? = nil
    ) async throws -> ForeignImportSummary {
        let source = try await offCaller {
            try AskarStoreSource.open(at: url, key: key, profile: profile, skipKeyEntries: skipKeyEntries)
        }
        return try await importForeign(source, profile: source.profile, progress: progress)
    }

    private func importForeign(
        _ source: some ForeignSource, profile: String?, progress: (@Sendable (ForeignImportProgress) -> Void)?
    ) async throws -> ForeignImportSummary {
        let cancelled = Locked(false)
        let queue = source.queue
        defer {
            try? queue.close()
            source.companions.removeCreated()
        }
        return try await withTaskCancellationHandler {
            try await gated { keys in
                try await pool.writeWithoutTransaction { db -> ForeignImportSummary in
                    try Self.beginBulk(db, cacheKiB: Self.importCacheKiB)
                    defer { Self.endBulk(db, cacheKiB: Schema.writerCacheKiB) }
                    return try Self.readForeign(source, profile: profile, progress: progress, cancelled: cancelled) { walk in
                        try db.inTransaction {
                            try Self.checkKeys(db, keys)
                            let store = RecordStore(db: db, keys: keys)
                            try walk { record in
                                try store.add(
                                    type: record.type, id: record.id, value: record.value, tags: record.tags,
                                    expiresAt: record.expiry.map { Date(timeIntervalSince1970: Double($0) / 1000) })
                            }
                            if cancelled.withLock({ $0 }) { throw CancellationError() }
                            return .commit
                        }
                    }
                }
            }
        } onCancel: {
            cancelled.withLock { $0 = true }
        }
    }

    /// Reads every record of `source` in one read transaction on it (its snapshot, checked
    /// unchanged first), for the import into a wallet file and into a PostgreSQL profile alike.
    /// `write` runs the walk inside the destination's transaction and gives it the function
    /// that adds one record there; the walk counts what it reads, reports progress every 1,000
    /// source rows and at the end, names the source row of a record error, stops at
    /// ``maxForeignImportTypes`` types and, every 256 rows, when `cancelled` is set.
    static func readForeign(
        _ source: some ForeignSource, profile: String?, progress: (@Sendable (ForeignImportProgress) -> Void)?,
        cancelled: Locked<Bool>? = nil,
        _ write: (_ walk: (_ add: (ForeignRecord) throws -> Void) throws -> Void) throws -> Void
    ) throws -> ForeignImportSummary {
        try ForeignDatabase.reading(source.label) {
            try source.queue.read { sdb in
                try source.checkUnchanged(sdb)
                let total = try source.rowCount(sdb)
                let now = unixMillis(Date())
                var read = 0
                var imported = 0
                var types = [ByteString: Int]()
                var expired = 0
                var keyEntries = 0
                try write { add in
                    try source.forEachRecord(
                        sdb, now: now,
                        visited: { skipped in
                            read += 1
                            switch skipped {
                            case .expired?: expired += 1
                            case .keyEntry?: keyEntries += 1
                            case nil: break
                            }
                            if read % 256 == 0, cancelled?.withLock({ $0 }) == true { throw CancellationError() }
                            if read % 1_000 == 0 {
                                progress?(ForeignImportProgress(rowsRead: read, totalRows: total, imported: imported))
                            }
                        }
                    ) { record in
                        do {
                            try add(record)
                        } catch let error as WalletError {
                            throw Self.naming(error, source: source, record: record)
                        }
                        imported += 1
                        let key = ByteString(record.type)
                        if types[key] == nil, types.count >= Self.maxForeignImportTypes {
                            throw WalletError.invalidInput(
                                "\(source.label) holds more than \(Self.maxForeignImportTypes) record types; nothing was imported")
                        }
                        types[key, default: 0] += 1
                    }
                }
                progress?(ForeignImportProgress(rowsRead: read, totalRows: total, imported: imported))
                let counts = types.sorted { $0.key < $1.key }.map { ForeignImportSummary.TypeCount(type: $0.key.string, count: $0.value) }
                return ForeignImportSummary(
                    imported: imported, profile: profile, types: counts, expiredSkipped: expired, keysSkipped: keyEntries)
            }
        }
    }

    /// A record error with the source row it came from (a duplicate names type and id already).
    static func naming(_ error: WalletError, source: some ForeignSource, record: ForeignRecord) -> WalletError {
        switch error {
        case .invalidInput(let m):
            return .invalidInput(
                "\(source.label), items row \(record.row) (type \(WalletError.quote(record.type)), id \(WalletError.quote(record.id))): \(m); nothing was imported"
            )
        default: return error
        }
    }
}
