// A walk driven by one tag equality either probes the index for the query's other equalities or,
// when a sample shows they nearly always hold, leaves them to the decrypted tags. Either way the
// result is exact.

import Foundation
import GRDB
import Testing

@testable import CofferWallet

@Suite("Search: further equalities, joined or checked in memory")
struct JoinPlanTests {
    /// `first` records tagged a=1,b=1, then `second` records tagged a=1,b=2 (in that order).
    static func wallet(first: Int, second: Int) async throws -> Wallet {
        let (wallet, _) = try await TestWallets.make()
        try await wallet.transaction { txn in
            for i in 0..<first { try txn.add(type: "t", id: "one-\(i)", value: "v", tags: ["a": "1", "b": "1"]) }
            for i in 0..<second { try txn.add(type: "t", id: "two-\(i)", value: "v", tags: ["a": "1", "b": "2"]) }
        }
        return wallet
    }

    /// Whether the first page of a walk for `query` dropped its joins.
    static func joinsDropped(_ wallet: Wallet, _ query: String) async throws -> Bool? {
        let search = try QueryCompiler.compile(type: "t", query: WalletQuery(json: query), keys: wallet.keys)
        let keys = wallet.keys
        return try await wallet.pool.read { db in
            var cursor = SearchCursor()
            _ = try search.page(db, keys: keys, cursor: &cursor, limit: 10, options: RecordOptions())
            return cursor.joinsDropped
        }
    }

    @Test("equalities that hold for the sampled rows are checked in memory")
    func correlatedDropsJoins() async throws {
        let wallet = try await Self.wallet(first: 200, second: 0)
        #expect(try await Self.joinsDropped(wallet, #"{"a": "1", "b": "1"}"#) == true)
    }

    @Test("equalities that fail for many sampled rows keep their index joins")
    func uncorrelatedKeepsJoins() async throws {
        // a=1 on 200 records, b=1 on 100 others: b=1 (the rarer) drives, and a=1 never holds there.
        let wallet = try await Self.wallet(first: 0, second: 200)
        try await wallet.transaction { txn in
            for i in 0..<100 { try txn.add(type: "t", id: "three-\(i)", value: "v", tags: ["a": "2", "b": "1"]) }
        }
        #expect(try await Self.driver(wallet, #"{"a": "1", "b": "1"}"#) == 1)
        #expect(try await Self.joinsDropped(wallet, #"{"a": "1", "b": "1"}"#) == false)
        #expect(try await wallet.fetchAll(type: "t", matching: WalletQuery(json: #"{"a": "1", "b": "1"}"#)).isEmpty)
    }

    @Test("with joins dropped, rows past the sample that fail the equality are left out")
    func droppedJoinsStayExact() async throws {
        let wallet = try await Self.wallet(first: 100, second: 100)
        #expect(try await Self.joinsDropped(wallet, #"{"a": "1", "b": "1"}"#) == true)
        let ids = try await wallet.fetchAll(type: "t", matching: WalletQuery(json: #"{"a": "1", "b": "1"}"#)).map(\.id)
        #expect(ids == (0..<100).map { "one-\($0)" })
    }

    @Test("a paged walk with joins dropped returns the same records as one read")
    func pagedWalkMatchesFetchAll() async throws {
        let wallet = try await Self.wallet(first: 100, second: 100)
        let query = try WalletQuery(json: #"{"a": "1", "b": "1"}"#)
        let handle = try await wallet.openSearch(type: "t", query: query)
        var paged = [String]()
        while let page = try await wallet.searchNext(handle, count: 7).records, !page.isEmpty { paged += page.map(\.id) }
        try await wallet.closeSearch(handle)
        #expect(paged == (0..<100).map { "one-\($0)" })
    }

    /// Walks `query` in pages of `count` through the engine; the ids returned and whether the
    /// walk ended with its joins dropped.
    static func walk(_ wallet: Wallet, _ query: String, count: Int) async throws -> (ids: [String], joinsDropped: Bool?) {
        let search = try QueryCompiler.compile(type: "t", query: WalletQuery(json: query), keys: wallet.keys)
        let keys = wallet.keys
        return try await wallet.pool.read { db in
            var cursor = SearchCursor()
            var ids = [String]()
            while !cursor.exhausted {
                ids += try search.page(db, keys: keys, cursor: &cursor, limit: count, options: RecordOptions()).map(\.id)
            }
            return (ids, cursor.joinsDropped)
        }
    }

    @Test("a walk whose equalities stop holding past the sample goes back to index joins")
    func fadingCorrelationRejoins() async throws {
        let wallet = try await Self.wallet(first: 100, second: 400)
        let walked = try await Self.walk(wallet, #"{"a": "1", "b": "1"}"#, count: 7)
        #expect(walked.ids == (0..<100).map { "one-\($0)" })
        #expect(walked.joinsDropped == false)
    }

    @Test("with joins dropped, counting and searching agree")
    func countAgreesWithDroppedJoins() async throws {
        let wallet = try await Self.wallet(first: 100, second: 100)
        let query = try WalletQuery(json: #"{"a": "1", "b": "1"}"#)
        #expect(try await Self.joinsDropped(wallet, #"{"a": "1", "b": "1"}"#) == true)
        let found = try await wallet.fetchAll(type: "t", matching: query).count
        #expect(try await wallet.count(type: "t", matching: query) == found)
        #expect(found == 100)
    }

    /// Which tag-driven plan the first page of a walk for `query` took.
    static func driver(_ wallet: Wallet, _ query: String, descending: Bool = false) async throws -> Int? {
        let search = try QueryCompiler.compile(type: "t", query: WalletQuery(json: query), keys: wallet.keys)
        let keys = wallet.keys
        return try await wallet.pool.read { db in
            var cursor = SearchCursor()
            _ = try search.page(db, keys: keys, cursor: &cursor, limit: 10, options: RecordOptions(), descending: descending)
            return cursor.driver
        }
    }

    /// 300 records tagged common=1, every 20th also rare=1 (15 of them).
    static func rareWallet() async throws -> Wallet {
        let (wallet, _) = try await TestWallets.make()
        try await wallet.transaction { txn in
            for i in 0..<300 {
                let tags: WalletTags = i % 20 == 0 ? ["common": "1", "rare": "1"] : ["common": "1"]
                try txn.add(type: "t", id: "r\(i)", value: "v", tags: tags)
            }
        }
        return wallet
    }

    @Test("the rarer of two equalities drives the walk, whichever the query names first")
    func rarerEqualityDrives() async throws {
        let wallet = try await Self.rareWallet()
        #expect(try await Self.driver(wallet, #"{"common": "1", "rare": "1"}"#) == 1)
        #expect(try await Self.driver(wallet, #"{"rare": "1", "common": "1"}"#) == 0)
        #expect(try await Self.driver(wallet, #"{"common": "1", "rare": "1"}"#, descending: true) == 1)
    }

    @Test("a value no record holds drives the walk, which then reads nothing")
    func emptyEqualityDrives() async throws {
        let wallet = try await Self.rareWallet()
        #expect(try await Self.driver(wallet, #"{"common": "1", "rare": "none"}"#) == 1)
        #expect(try await wallet.fetchAll(type: "t", matching: WalletQuery(json: #"{"common": "1", "rare": "none"}"#)).isEmpty)
    }

    @Test("driven by the rarer equality, the walk returns the records in insertion order")
    func rarerDriverKeepsOrder() async throws {
        let wallet = try await Self.rareWallet()
        let expected = stride(from: 0, to: 300, by: 20).map { "r\($0)" }
        let query = try WalletQuery(json: #"{"common": "1", "rare": "1"}"#)
        #expect(try await wallet.fetchAll(type: "t", matching: query).map(\.id) == expected)
        #expect(try await wallet.fetchAll(type: "t", matching: query, newestFirst: true).map(\.id) == expected.reversed())
        #expect(try await wallet.count(type: "t", matching: query) == expected.count)
    }

    @Test("with joins dropped, a row the driver's index entry misattributes reads as corrupted")
    func droppedJoinsCatchTamperedDriver() async throws {
        let (wallet, url) = try await TestWallets.make()
        try await wallet.transaction { txn in
            for i in 0..<100 { try txn.add(type: "t", id: "one-\(i)", value: "v", tags: ["a": "1", "b": "1"]) }
            try txn.add(type: "t", id: "odd", value: "v", tags: ["a": "2", "b": "1"])
        }
        try wallet.close()
        let db = try DatabaseQueue(path: url.path)
        try await db.write { db in
            // Give the last record the first record's index entries: the index now claims a=1.
            try db.execute(
                sql: """
                    UPDATE tags SET value = (SELECT f.value FROM tags f WHERE f.name = tags.name AND f.item = (SELECT MIN(id) FROM items))
                    WHERE item = (SELECT MAX(id) FROM items)
                    """)
        }
        try db.close()
        let reopened = try await Wallet.open(at: url, key: .raw(TestWallets.rawKey))
        defer { try? reopened.close() }
        #expect(try await Self.joinsDropped(reopened, #"{"a": "1", "b": "1"}"#) == true)
        do {
            _ = try await reopened.fetchAll(type: "t", matching: WalletQuery(json: #"{"a": "1", "b": "1"}"#))
            Issue.record("search trusted a tampered index")
        } catch let e as WalletError {
            guard case .corrupted = e else {
                Issue.record("expected corrupted, got \(e)")
                return
            }
        }
    }
}
