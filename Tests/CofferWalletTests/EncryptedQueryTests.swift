// Range, $like, $regex and numbers on encrypted tags give the same results as on plaintext tags.

import CofferWallet
import Foundation
import Testing

@Suite("Queries that need decryption")
struct EncryptedQueryTests {
    static let values = ["001", "002", "010", "9", "10", "abc", "Alice", "alice", "ALICE", "b%c", "b_c", "zoë"]

    static func wallet() async throws -> Wallet {
        let (wallet, _) = try await TestWallets.make()
        for (i, v) in values.enumerated() {
            try await wallet.add(type: "t", id: "r\(i)", value: "v", tags: ["enc": .string(v), "~plain": .string(v)])
        }
        return wallet
    }

    static let operators = [
        #"{"$gt": "002"}"#, #"{"$gte": "010"}"#, #"{"$lt": "9"}"#, #"{"$lte": "abc"}"#, #"{"$gt": 5}"#, #"{"$lte": 10}"#,
        #"{"$eq": 10}"#, #"{"$neq": 2}"#, #"{"$in": [1, "abc"]}"#, #"{"$like": "al%"}"#, #"{"$like": "b_c"}"#,
        #"{"$regex": "^[Aa]l"}"#, #"{"$regex": "ë$"}"#, #"{"$gte": "002", "$lt": "9"}"#,
    ]

    @Test("an operator on an encrypted tag selects what it selects on the plaintext tag", arguments: operators)
    func sameAsPlaintext(_ op: String) async throws {
        let wallet = try await Self.wallet()
        defer { try? wallet.close() }
        let encrypted = try await wallet.fetchAll(type: "t", matching: WalletQuery(json: #"{"enc": \#(op)}"#)).map(\.id)
        let plain = try await wallet.fetchAll(type: "t", matching: WalletQuery(json: #"{"~plain": \#(op)}"#)).map(\.id)
        #expect(encrypted == plain)
        let expected = Self.values.enumerated().filter { try! WalletQuery(json: #"{"x": \#(op)}"#).matches(["x": .string($0.element)]) }.map
        { "r\($0.offset)" }
        #expect(plain == expected)
    }

    @Test("negated decryption-only operators are answered exactly", arguments: operators)
    func negated(_ op: String) async throws {
        let wallet = try await Self.wallet()
        defer { try? wallet.close() }
        let encrypted = try await wallet.fetchAll(type: "t", matching: WalletQuery(json: #"{"$not": {"enc": \#(op)}}"#)).map(\.id)
        let plain = try await wallet.fetchAll(type: "t", matching: WalletQuery(json: #"{"$not": {"~plain": \#(op)}}"#)).map(\.id)
        #expect(encrypted == plain)
    }

    @Test("paging a decryption-filtered search returns each match once")
    func pagedFilter() async throws {
        let (wallet, _) = try await TestWallets.make()
        defer { try? wallet.close() }
        try await wallet.transaction { txn in
            for i in 0..<500 { try txn.add(type: "t", id: "r\(i)", value: "v", tags: ["n": .string(String(i))]) }
        }
        let handle = try await wallet.openSearch(
            type: "t", query: WalletQuery(json: #"{"n": {"$gte": 250}}"#),
            options: SearchOptions(retrieveTotalCount: true))
        var seen = [String]()
        while true {
            let page = try await wallet.searchNext(handle, count: 7)
            #expect(page.totalCount == 250)
            guard let records = page.records, !records.isEmpty else { break }
            seen += records.map(\.id)
        }
        #expect(seen == (250..<500).map { "r\($0)" })
    }
}

@Suite("Range plans")
struct RangePlanTests {
    @Test("two bounds on a multi-valued plaintext tag may be met by different values")
    func multiValuedRange() async throws {
        let (w, _) = try await TestWallets.make()
        defer { try? w.close() }
        try await w.add(type: "t", id: "both-sides", value: "v", tags: ["~v": ["1", "9"]])
        try await w.add(type: "t", id: "inside", value: "v", tags: ["~v": "4"])
        try await w.add(type: "t", id: "outside", value: "v", tags: ["~v": "8"])
        let q = try WalletQuery(json: #"{"~v": {"$gt": "3", "$lt": "5"}}"#)
        #expect(try await w.fetchAll(type: "t", matching: q).map(\.id) == ["both-sides", "inside"])
        #expect(try await w.count(type: "t", matching: q) == 2)
    }

    @Test("a range on a single-valued plaintext tag counts and fetches exactly")
    func singleValuedRange() async throws {
        let (w, _) = try await TestWallets.make()
        defer { try? w.close() }
        try await w.transaction { txn in
            for i in 0..<2000 {
                try txn.add(
                    type: "t", id: "r\(i)", value: "v", tags: ["~seq": .string(String(format: "%05d", i)), "k": .string(String(i % 3))])
            }
        }
        let q = try WalletQuery(json: #"{"$and": [{"~seq": {"$gte": "00500"}}, {"~seq": {"$lt": "01500"}}], "k": {"$neq": "0"}}"#)
        let expected = (500..<1500).filter { $0 % 3 != 0 }.map { "r\($0)" }
        #expect(try await w.fetchAll(type: "t", matching: q).map(\.id) == expected)
        #expect(try await w.count(type: "t", matching: q) == expected.count)
        var walked = [String]()
        for try await r in w.records(type: "t", matching: q, pageSize: 33) { walked.append(r.id) }
        #expect(walked == expected)
    }
}
