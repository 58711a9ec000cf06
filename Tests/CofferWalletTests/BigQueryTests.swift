// Queries of any size: long $in lists, wide $or / $and and many $exist names give the same
// results as the small queries they expand to, never a storage error.

import CofferWallet
import Foundation
import Testing

@Suite("Queries of any size")
struct BigQueryTests {
    static let n = 120

    /// Records r0…r119 with an encrypted tag e = "v<i>", a plaintext ~s = "s<i>" and ~n = i.
    static func filled() async throws -> Wallet {
        let (w, _) = try await TestWallets.make()
        try await w.transaction { txn in
            for i in 0..<n {
                try txn.add(
                    type: "t", id: "r\(i)", value: "x", tags: ["e": .string("v\(i)"), "~s": .string("s\(i)"), "~n": .string(String(i))])
            }
        }
        return w
    }

    func ids(_ w: Wallet, _ json: String) async throws -> Set<String> {
        let query = try WalletQuery(json: json)
        let found = Set(try await w.fetchAll(type: "t", matching: query).map(\.id))
        let counted = try await w.count(type: "t", matching: query)
        #expect(counted == found.count, "count \(counted) vs \(found.count) records")
        return found
    }

    func json(_ value: Any) -> String { String(decoding: try! JSONSerialization.data(withJSONObject: value), as: UTF8.self) }

    static func expected(_ keep: (Int) -> Bool) -> Set<String> { Set((0..<n).filter(keep).map { "r\($0)" }) }

    @Test("$in with 100,000 values on an encrypted tag finds exactly the listed records")
    func inEncrypted() async throws {
        let w = try await Self.filled()
        defer { try? w.close() }
        let values = (0..<100_000).map { "v\($0 * 7)" }
        #expect(try await ids(w, json(["e": ["$in": values]])) == Self.expected { $0 % 7 == 0 })
    }

    @Test("$in with 100,000 strings and numbers on plaintext tags finds exactly the listed records")
    func inPlaintext() async throws {
        let w = try await Self.filled()
        defer { try? w.close() }
        let strings = (0..<100_000).map { "s\($0 * 3)" }
        #expect(try await ids(w, json(["~s": ["$in": strings]])) == Self.expected { $0 % 3 == 0 })
        let numbers: [Any] = (0..<100_000).map { $0 * 5 } + ["s1"]
        #expect(try await ids(w, json(["~n": ["$in": numbers]])) == Self.expected { $0 % 5 == 0 })
    }

    @Test("$or of 100,000 equalities on one tag, and of 990 and 100,000 mixed branches, match their small meaning")
    func wideOr() async throws {
        let w = try await Self.filled()
        defer { try? w.close() }
        let sameTag = (0..<100_000).map { ["e": "v\($0 * 11)"] }
        #expect(try await ids(w, json(["$or": sameTag])) == Self.expected { $0 % 11 == 0 })
        for count in [990, 100_000] {
            let mixed: [[String: Any]] = (0..<count).map { $0 % 2 == 0 ? ["e": "v\($0)"] : ["~s": ["$like": "s\($0)"]] }
            #expect(try await ids(w, json(["$or": mixed])) == Self.expected { $0 < count }, "\(count) branches")
        }
    }

    @Test("$and of 990 and 100,000 clauses matches its small meaning")
    func wideAnd() async throws {
        let w = try await Self.filled()
        defer { try? w.close() }
        for count in [990, 100_000] {
            let clauses: [[String: Any]] = (0..<count).map { ["$not": ["e": "v\($0 * 2)"]] }
            #expect(try await ids(w, json(["$and": clauses])) == Self.expected { $0 % 2 == 1 || $0 >= 2 * count }, "\(count) clauses")
        }
    }

    @Test("$exist with 100,000 names needs every one; repeated present names need only those")
    func manyExist() async throws {
        let w = try await Self.filled()
        defer { try? w.close() }
        let absent = ["e", "~s"] + (0..<100_000).map { "missing\($0)" }
        #expect(try await ids(w, json(["$exist": absent])).isEmpty)
        let present = (0..<100_000).map { ["e", "~s", "~n"][$0 % 3] }
        #expect(try await ids(w, json(["$exist": present])) == Self.expected { _ in true })
        let negated = try await ids(w, json(["$not": ["$exist": absent]]))
        #expect(negated == Self.expected { _ in true })
    }

    @Test("a flat AND of 65 to 200 tag equalities finds the record that has them all, and only it")
    func manyEqualities() async throws {
        let (w, _) = try await TestWallets.make()
        defer { try? w.close() }
        var tags = WalletTags()
        for i in 0..<200 { tags["k\(i)"] = .string("v\(i)") }
        try await w.add(type: "t", id: "all", value: "x", tags: tags)
        tags["k150"] = .string("other")
        try await w.add(type: "t", id: "one-differs", value: "x", tags: tags)
        for count in [65, 100, 200] {
            let query = json(Dictionary(uniqueKeysWithValues: (0..<count).map { ("k\($0)", "v\($0)") }))
            #expect(try await ids(w, query) == (count > 150 ? ["all"] : ["all", "one-differs"]), "\(count) equalities")
        }
    }

    @Test("$like and 20-name $exist leaves under $and and $or alternating 2 to 30 levels deep: never a storage error, the tree's meaning")
    func deepMixedLeaves() async throws {
        let w = try await Self.filled()
        defer { try? w.close() }
        // Both leaf kinds were the first that SQLite's parser refused (from 26 parentheses).
        let names = (0..<20).map { "n\($0)" }
        for depth in 2...30 {
            var query: Any = ["~s": ["$like": "s1%"]]
            for i in 1..<depth {
                let leaf: Any = i % 3 == 0 ? ["$not": ["$exist": names]] : ["~s": ["$like": "s1%"]]
                query = [i % 2 == 1 ? "$and" : "$or": [leaf, query]]
            }
            let expected = Self.expected { record in
                let like = String(record).hasPrefix("1")
                var holds = like
                for i in 1..<depth {
                    let leaf = i % 3 == 0 ? true : like // no record has the n… tags
                    holds = i % 2 == 1 ? leaf && holds : leaf || holds
                }
                return holds
            }
            #expect(try await ids(w, json(query)) == expected, "depth \(depth)")
        }
    }

    @Test("$or and $not alternating 13 to 83 levels deep match what the tree means, never a storage error")
    func deepAlternation() async throws {
        let w = try await Self.filled()
        defer { try? w.close() }
        for depth in [13, 17, 30, 83] {
            // e = v0, then at each level "e = v<i> or not (the level below)".
            var query: Any = ["e": "v0"]
            for i in 1..<depth { query = ["$or": [["e": "v\(i)"], ["$not": query]]] }
            let expected = Self.expected { record in
                var holds = record == 0
                for i in 1..<depth { holds = record == i || !holds }
                return holds
            }
            #expect(try await ids(w, json(query)) == expected, "depth \(depth)")
        }
    }
}

@Suite("Regular expressions in queries")
struct RegexQueryTests {
    @Test("a catastrophic-backtracking pattern over 1,000 records answers correctly, on plaintext and encrypted tags")
    func pathological() async throws {
        let (w, _) = try await TestWallets.make()
        defer { try? w.close() }
        try await w.transaction { txn in
            for i in 0..<1_000 {
                let tag = String(repeating: "a", count: 26) + (i % 10 == 0 ? "" : "!")
                try txn.add(type: "t", id: "r\(i)", value: "v", tags: ["~p": .string(tag), "e": .string(tag)])
            }
        }
        for name in ["~p", "e"] {
            let query = try WalletQuery(json: #"{"\#(name)": {"$regex": "^(a+)+$"}}"#)
            #expect(try await w.count(type: "t", matching: query) == 100, "\(name)")
        }
    }

    /// The error a `$regex` query with `pattern` is refused with ("" when it is accepted).
    static func refusal(_ pattern: String) -> String {
        let json = #"{"~p": {"$regex": "PATTERN"}}"#.replacingOccurrences(of: "PATTERN", with: pattern)
        do {
            _ = try WalletQuery(json: json)
            return ""
        } catch {
            return "\(error)"
        }
    }

    @Test(
        "constructs that cannot match in linear time are refused as invalid queries naming them",
        arguments: ["(a)\\\\1 backreference", "a(?=b) look", "(?i)a flag"])
    func refused(_ testCase: String) {
        let parts = testCase.split(separator: " ").map(String.init)
        let message = Self.refusal(parts[0])
        #expect(message.hasPrefix("invalid query") && message.lowercased().contains(parts[1]), "\(parts[0]): \(message)")
    }

}
