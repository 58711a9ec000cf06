// The seed's search handles (open / next / close), written once for both backends: a handle names
// a search registered in the wallet's `SearchRegistry`; each backend only says how its search
// starts, how it counts, and how it reads the page after where it stands.

import Foundation

/// A wallet whose searches are paged through integer handles, the seed's `openSearch` /
/// `searchNextRecords` / `closeSearch`: ``Wallet`` (a file on SQLite) and, in a build with the
/// package trait `PostgreSQL`, `PostgresWallet` (a profile in a PostgreSQL database), with the
/// same arguments, pages, errors and handle lifecycle. ``RecordWalletApi`` serves the seed's JSON
/// API over either. Only Coffer's wallets conform (see ``searchHandles``).
///
/// A handle holds no statement, connection or transaction between pages: its position is a
/// keyset cursor (on PostgreSQL, a position token sealed under the profile's key), so records
/// written while a search is open never make it repeat or skip one that stayed. Handles count up
/// from 1 and are never reused while the wallet is open; at most
/// ``Wallet/Configuration/maxOpenSearches`` stay open (opening one more reclaims the least
/// recently used), one idle longer than ``Wallet/Configuration/searchIdleTimeout`` is reclaimed,
/// and closing the wallet (or rotating its key) ends them all.
public protocol SearchHandleWallet: RecordWallet {
    /// How the handle calls reach this wallet's open searches: opaque, nothing of it is public,
    /// and only Coffer's wallets can make one.
    var searchHandles: WalletSearchHandles { get }
}

/// How a ``SearchHandleWallet``'s handle calls reach its open searches (opaque).
public struct WalletSearchHandles: Sendable {
    let host: any SearchHost
}

extension SearchHandleWallet {
    /// Opens a search over records of `type` matching `query`, and returns its handle. The total
    /// count, when `options` asks for it, is computed once here and repeated on every page.
    /// - Throws: ``WalletError/invalidInput(_:)`` for a bad or reserved type,
    ///   ``WalletError/closed`` once the wallet closed.
    public func openSearch(type: String, query: WalletQuery, options: SearchOptions = SearchOptions()) async throws -> Int {
        try await searchHandles.host.openHandle(type: type, query: query, options: options)
    }

    /// Opens a search from JSON text (WQL `queryJSON`, the seed's search options), as the Mobile
    /// SDK passes them; returns its handle.
    /// - Throws: ``WalletError/invalidInput(_:)`` for text that does not parse.
    public func openSearch(type: String, queryJSON: String, optionsJSON: String = "{}") async throws -> Int {
        let query = try WalletQuery(json: queryJSON)
        let options = try SearchOptions(json: optionsJSON)
        return try await openSearch(type: type, query: query, options: options)
    }

    /// The next page of up to `count` records of the search `handle`. An exhausted search
    /// returns an empty page.
    /// - Throws: ``WalletError/invalidHandle(_:)`` for an unknown, closed or reclaimed handle
    ///   (every handle, once the wallet closed); ``WalletError/invalidInput(_:)`` for a count
    ///   below 1, or while another call is fetching a page of the same handle.
    public func searchNext(_ handle: Int, count: Int) async throws -> SearchPage {
        try await searchHandles.host.nextHandlePage(handle, count: count)
    }

    /// Closes a search and frees its state.
    /// - Throws: ``WalletError/invalidHandle(_:)`` when it is not open.
    public func closeSearch(_ handle: Int) async throws {
        try searchHandles.host.closeHandle(handle)
    }

    /// How many searches are open now.
    public var openSearchCount: Int { searchHandles.host.openHandleCount }
}

/// A backend's side of the handle calls: how a search starts, counts and pages (internal).
protocol SearchHost: Sendable {
    /// Where one search stands between pages.
    associatedtype Walk: Sendable
    /// The wallet's open searches.
    var searches: SearchRegistry<Walk> { get }
    /// A search of `type` matching `query` at its start, after checking the wallet is open, the
    /// task is not cancelled and the type is one the record API may search.
    func startWalk(type: String, query: WalletQuery) throws -> Walk
    /// How many live records the search matches.
    func countWalk(_ walk: Walk) async throws -> Int
    /// Up to `limit` records after where `walk` stands, and where it then stands.
    func nextPage(of walk: Walk, limit: Int, options: RecordOptions) async throws -> ([WalletRecord], Walk)
}

extension SearchHost {
    func openHandle(type: String, query: WalletQuery, options: SearchOptions) async throws -> Int {
        let walk = try startWalk(type: type, query: query)
        var total: Int?
        if options.retrieveTotalCount { total = try await countWalk(walk) }
        if let hook = searches.beforeOpen.withLock({ $0 }) { await hook() }
        // Counting awaited: the wallet may have closed meanwhile, which `open` decides again.
        return try searches.open(walk, options: options, totalCount: total)
    }

    func nextHandlePage(_ handle: Int, count: Int) async throws -> SearchPage {
        try await searches.next(handle, count: count) { walk, limit, options in
            try await nextPage(of: walk, limit: limit, options: options)
        }
    }

    func closeHandle(_ handle: Int) throws { try searches.close(handle) }

    var openHandleCount: Int { searches.openCount }
}
