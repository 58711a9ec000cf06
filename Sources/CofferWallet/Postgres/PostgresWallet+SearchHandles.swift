// The seed's search handles on a PostgreSQL profile: the handle calls are `SearchHandleWallet`'s,
// written once; a handle here holds the search's type and query and the sealed position token of
// the profile's keyset paging (`PostgresWallet.search(type:query:options:limit:after:)`), so
// between pages it holds no connection and no transaction.

#if PostgreSQL
import Foundation

/// Where a search on a PostgreSQL profile stands: its type and query, and the position token
/// its last page gave (nil before the first page); `done` once a page said nothing follows.
struct PostgresSearchWalk: Sendable {
    let type: String
    let query: WalletQuery
    var position: String?
    var done = false
}

extension PostgresWallet: SearchHandleWallet, SearchHost {
    /// The profile's open searches, for ``SearchHandleWallet``'s handle calls (opaque):
    /// `openSearch`, `searchNext` and `closeSearch` work on a PostgreSQL profile as on a
    /// wallet file.
    public var searchHandles: WalletSearchHandles { WalletSearchHandles(host: self) }

    func startWalk(type: String, query: WalletQuery) throws -> PostgresSearchWalk {
        try checkOpen()
        try Task.checkCancellation()
        try Validate.type(type)
        return PostgresSearchWalk(type: type, query: query)
    }

    func countWalk(_ walk: PostgresSearchWalk) async throws -> Int {
        try await count(type: walk.type, matching: walk.query)
    }

    func nextPage(of walk: PostgresSearchWalk, limit: Int, options: RecordOptions) async throws -> ([WalletRecord], PostgresSearchWalk) {
        if walk.done { return ([], walk) }
        let page = try await search(type: walk.type, query: walk.query, options: options, limit: limit, after: walk.position)
        var next = walk
        next.position = page.next
        next.done = page.next == nil
        return (page.records, next)
    }
}
#endif
