// A page's statement and the join sample stay prepared on the connection only for plans of a few
// shapes, so the cache cannot grow with the queries a caller invents; reused, such a statement
// must run with each search's own values.

import Foundation
import GRDB
import Testing

@testable import CofferWallet

@Suite("Search: statements kept prepared for plans of a few shapes")
struct SearchStatementCacheTests {
    /// The first plan the compiler prefers for `query` on type `t`.
    static func firstPlan(_ wallet: Wallet, _ query: String) throws -> CompiledSearch.Plan {
        try QueryCompiler.compile(type: "t", query: WalletQuery(json: query), keys: wallet.keys).plans[0]
    }

    @Test("a type walk and tag equalities with up to three joins are of the few shapes kept prepared")
    func fewShapes() async throws {
        let (wallet, _) = try await TestWallets.make()
        #expect(try Self.firstPlan(wallet, "{}").hasFewShapes)
        #expect(try Self.firstPlan(wallet, #"{"a": "1"}"#).hasFewShapes)
        #expect(try Self.firstPlan(wallet, #"{"a": "1", "b": "2", "c": "3", "d": "4"}"#).hasFewShapes)
    }

    @Test("ranges, further conditions and a fourth join are prepared per call")
    func unboundedShapes() async throws {
        let (wallet, _) = try await TestWallets.make()
        // A range's conditions, an `$in` list and a fifth equality each make a new statement text.
        #expect(try !Self.firstPlan(wallet, #"{"~p": {"$gt": "1"}}"#).hasFewShapes)
        #expect(try !Self.firstPlan(wallet, #"{"a": "1", "b": {"$in": ["1", "2", "3"]}}"#).hasFewShapes)
        #expect(try !Self.firstPlan(wallet, #"{"a": "1", "b": "2", "c": "3", "d": "4", "e": "5"}"#).hasFewShapes)
    }

    @Test("searches that reuse one kept statement on one connection each get their own records")
    func reusedStatementRebinds() async throws {
        let (wallet, _) = try await TestWallets.make()
        try await wallet.transaction { txn in
            for i in 0..<300 {
                try txn.add(type: "t", id: "r\(i)", value: "v\(i)", tags: ["a": .string("\(i % 3)"), "b": .string("\(i % 2)")])
            }
        }
        let keys = wallet.keys
        // One read transaction: every search runs on the same connection, alternating values, so
        // a statement left with the previous search's values or position would show.
        let found = try await wallet.pool.read { db -> [[String]] in
            try (0..<6).map { round in
                let query = try WalletQuery(json: #"{"a": "\#(round % 3)", "b": "\#(round % 2)"}"#)
                let search = try QueryCompiler.compile(type: "t", query: query, keys: keys)
                var cursor = SearchCursor()
                return try search.page(db, keys: keys, cursor: &cursor, limit: 1000, options: RecordOptions()).map(\.id)
            }
        }
        for round in 0..<6 {
            let expected = (0..<300).filter { $0 % 3 == round % 3 && $0 % 2 == round % 2 }.map { "r\($0)" }
            #expect(found[round] == expected, "round \(round)")
        }
    }
}
