// Searches: the seed's handle API (open / next / close) and a Swift AsyncSequence over the same paging.

import CofferSync
import Foundation
import GRDB

/// Where a search on a wallet file stands: the compiled search and its keyset cursor.
struct SQLiteSearchWalk: Sendable {
    let search: CompiledSearch
    var cursor = SearchCursor()
}

extension Wallet: SearchHandleWallet, SearchHost {
    /// The wallet file's open searches, for ``SearchHandleWallet``'s handle calls (opaque).
    public var searchHandles: WalletSearchHandles { WalletSearchHandles(host: self) }

    func startWalk(type: String, query: WalletQuery) throws -> SQLiteSearchWalk {
        if gate.isWalletClosed { throw WalletError.closed }
        try Task.checkCancellation()
        try Validate.type(type)
        return SQLiteSearchWalk(search: try QueryCompiler.compile(type: type, query: query, keys: keys))
    }

    func countWalk(_ walk: SQLiteSearchWalk) async throws -> Int {
        try await MatchCancellation.run { token in
            try await read(isMiss: { $0 == 0 }) { reader in
                try token.during { try walk.search.count(reader.store.db, keys: reader.store.keys) }
            }
        }
    }

    func nextPage(of walk: SQLiteSearchWalk, limit: Int, options: RecordOptions) async throws -> ([WalletRecord], SQLiteSearchWalk) {
        let (records, cursor) = try await nextPage(walk.search, after: walk.cursor, limit: limit, options: options)
        return (records, SQLiteSearchWalk(search: walk.search, cursor: cursor))
    }

    /// Test hook: `body` runs in ``SearchHandleWallet/openSearch(type:query:options:)`` after the
    /// search is compiled (and counted) and before it is registered, so a test can close the
    /// wallet in that window.
    package func setBeforeSearchOpensForTesting(_ body: (@Sendable () async -> Void)?) {
        searches.beforeOpen.withLock { $0 = body }
    }

    /// The page after `cursor` in one read transaction, and where the walk then stands: the
    /// step both the handle API and the `AsyncSequence` take.
    func nextPage(
        _ search: CompiledSearch, after cursor: SearchCursor, limit: Int,
        options: RecordOptions
    ) async throws -> ([WalletRecord], SearchCursor) {
        // A cancelled Task stops a `$regex` match under way too (see ``MatchCancellation``).
        try await MatchCancellation.run { token in
            // An empty page (a walk's last) reads the key check: a rotation elsewhere since this
            // wallet opened changed every blind, so the search would find nothing.
            try await read(isMiss: { $0.0.isEmpty }) { reader -> ([WalletRecord], SearchCursor) in
                try token.during {
                    var position = cursor
                    let records = try search.page(
                        reader.store.db, keys: reader.store.keys, cursor: &position, limit: limit, options: options)
                    return (records, position)
                }
            }
        }
    }

    /// Matching records as an `AsyncSequence`, fetched `pageSize` at a time (memory stays flat
    /// however many match), in insertion order: `for try await record in wallet.records(…)`.
    /// A bad type, query or page size is thrown by the first iteration.
    public func records(
        type: String, matching query: WalletQuery = .all, options: RecordOptions = RecordOptions(),
        pageSize: Int = 4096
    ) -> WalletRecordSequence {
        let search = Result { () throws(WalletError) -> CompiledSearch in
            try Validate.type(type)
            guard pageSize >= 1 else { throw WalletError.invalidInput("pageSize must be at least 1, got \(pageSize)") }
            return try QueryCompiler.compile(type: type, query: query, keys: keys)
        }
        return WalletRecordSequence(wallet: self, compiled: search, options: options, pageSize: pageSize)
    }
}

/// Matching records of one search, page by page. Iterating twice runs the search twice.
public struct WalletRecordSequence: AsyncSequence, Sendable {
    /// A record.
    public typealias Element = WalletRecord

    let wallet: Wallet
    /// The compiled search, or why the arguments were refused (thrown by the first `next()`).
    let compiled: Result<CompiledSearch, WalletError>
    let options: RecordOptions
    let pageSize: Int

    /// Starts a walk.
    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(sequence: self)
    }

    /// Walks the records, fetching the next page when the current one is used up.
    public struct AsyncIterator: AsyncIteratorProtocol {
        let sequence: WalletRecordSequence
        var cursor = SearchCursor()
        var buffer: [WalletRecord] = []
        var index = 0

        init(sequence: WalletRecordSequence) { self.sequence = sequence }

        /// The next record, or nil at the end.
        public mutating func next() async throws -> WalletRecord? {
            if index < buffer.count {
                defer { index += 1 }
                return buffer[index]
            }
            if cursor.exhausted { return nil }
            let search = try sequence.compiled.get()
            let (records, newCursor) = try await sequence.wallet.nextPage(
                search, after: cursor, limit: sequence.pageSize,
                options: sequence.options)
            cursor = newCursor
            buffer = records
            index = 0
            guard !buffer.isEmpty else { return nil }
            index = 1
            return buffer[0]
        }
    }
}
