// String ranges on plaintext tags on PostgreSQL: the tag index holds a value's first 200 bytes,
// so a range is first bounded on that prefix and then compared whole; values that differ only
// after the prefix are still told apart, at every bound.

#if PostgreSQL
import CofferTestSupport
import Foundation
import Testing

@testable import CofferWallet

extension PostgresWalletTests {
    @Test(
        "string ranges on PostgreSQL are exact for values longer than the indexed prefix",
        arguments: [
            (#"{"~k": {"$gt": "P-a"}}"#, ["b", "c"]), (#"{"~k": {"$gte": "P-b"}}"#, ["b", "c"]),
            (#"{"~k": {"$lt": "P-c"}}"#, ["a", "b"]), (#"{"~k": {"$lte": "P-b"}}"#, ["a", "b"]),
            (#"{"~k": {"$gte": "SHORT"}}"#, ["a", "b", "c"]), (#"{"~k": {"$lt": "SHORT"}}"#, []),
            (#"{"$and": [{"~k": {"$gt": "P-a"}}, {"~k": {"$lt": "P-c"}}]}"#, ["b"]),
            // Bounds shorter than the prefix, against values longer than it.
            (#"{"~k": {"$gt": "X199"}}"#, ["a", "b", "c"]), (#"{"~k": {"$lte": "X199"}}"#, []),
            (#"{"~k": {"$lt": "X150y"}}"#, ["a", "b", "c"]), (#"{"~k": {"$gte": "X150y"}}"#, []),
        ])
    func longValueRanges(_ query: String, _ expected: [String]) async throws {
        // 250 shared bytes, then the letter: the records differ only after the indexed prefix.
        let shared = String(repeating: "x", count: 250)
        let wallet = try await PostgresWallet.create(settings: try PostgresTesting.settings("range"), key: PostgresTesting.key)
        defer { wallet.close() }
        for letter in ["a", "b", "c"] { try await wallet.add(type: "r", id: letter, value: "v", tags: ["~k": .string(shared + letter)]) }
        let text = query.replacingOccurrences(of: "P-", with: shared).replacingOccurrences(of: "SHORT", with: "x")
            .replacingOccurrences(of: "X199", with: String(repeating: "x", count: 199))
            .replacingOccurrences(of: "X150y", with: String(repeating: "x", count: 150) + "y")
        let parsed = try WalletQuery(json: text)
        #expect(try await PostgresTesting.all(wallet, type: "r", query: parsed).sorted() == expected)
        #expect(try await wallet.count(type: "r", matching: parsed) == expected.count)
    }
}
#endif
