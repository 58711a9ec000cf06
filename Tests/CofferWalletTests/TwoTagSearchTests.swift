// Searches of two or three tag conditions against a brute-force filter over a model of the
// records: whatever plan the engine takes (a driver tag with its further equalities joined on the
// index or checked in memory, a rarer driver, a walk that goes back to joins), the records and
// their order must be exactly those of the filter.

import CofferWallet
import Foundation
import Testing

@Suite("Search: multi-tag queries against a brute-force filter")
struct TwoTagSearchTests {
    /// A small deterministic generator (SplitMix64), so a failure names a reproducible case.
    struct Generator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        mutating func below(_ n: Int) -> Int { Int(next() % UInt64(n)) }
    }

    /// One record of the model: its id, its tags as value lists, and whether it has expired.
    struct Model {
        let id: String
        let tags: [String: [String]]
        let expired: Bool
    }

    /// A condition of a query: a tag equal to a value, or not.
    struct Condition {
        let tag: String
        let value: String
        let negated: Bool

        var json: String { negated ? #""$not": {"\#(tag)": "\#(value)"}"# : #""\#(tag)": "\#(value)""# }

        func holds(_ record: Model) -> Bool {
            let equal = record.tags[tag]?.contains(value) ?? false
            return negated ? !equal : equal
        }
    }

    /// Tag names and the values each takes: encrypted single-valued (`a`, `b`, `c`), encrypted
    /// multi-valued (`m`), plaintext single-valued (`~p`) and multi-valued (`~l`).
    static let values: [String: [String]] = [
        "a": ["a0", "a1", "a2"], "b": ["b0", "b1"], "c": ["c0", "c1", "c2", "c3", "c4", "c5", "c6", "c7"],
        "m": ["m0", "m1", "m2"], "~p": ["p0", "p1", "p2"], "~l": ["l0", "l1", "l2"],
    ]

    /// `count` records in insertion order. `b` follows `a` for the first half (so a sample of
    /// an `a` walk finds `b` holding and leaves it to memory) and is random for the rest (so the
    /// walk must go back to joins); some tags are absent, some records expired or expiring later.
    static func model(count: Int, seed: UInt64) -> [Model] {
        var g = Generator(state: seed)
        return (0..<count).map { i in
            var tags = [String: [String]]()
            let a = g.below(3)
            tags["a"] = ["a\(a)"]
            if g.below(10) > 0 { tags["b"] = [i < count / 2 ? "b\(a == 0 ? 0 : 1)" : "b\(g.below(2))"] }
            tags["c"] = ["c\(g.below(8))"]
            let m = (0..<3).filter { _ in g.below(2) == 0 }.map { "m\($0)" }
            if !m.isEmpty { tags["m"] = m }
            if g.below(4) > 0 { tags["~p"] = ["p\(g.below(3))"] }
            let l = (0..<3).filter { _ in g.below(3) == 0 }.map { "l\($0)" }
            if !l.isEmpty { tags["~l"] = l }
            return Model(id: "r\(i)", tags: tags, expired: g.below(10) == 0)
        }
    }

    static func wallet(_ records: [Model], seed: UInt64) async throws -> Wallet {
        let (wallet, _) = try await TestWallets.make()
        var g = Generator(state: seed ^ 0xFF)
        // A one-value tag is written as a string or a list of one; some records expire later.
        let rows = records.map { r -> (id: String, tags: WalletTags, expiry: Date?) in
            var tags = [String: TagValue]()
            for (name, list) in r.tags.sorted(by: { $0.key < $1.key }) {
                tags[name] = list.count == 1 && g.below(2) == 0 ? .string(list[0]) : .list(list)
            }
            let expiry: Date? = r.expired ? Date(timeIntervalSinceNow: -60) : (g.below(5) == 0 ? Date(timeIntervalSinceNow: 3_600) : nil)
            return (r.id, WalletTags(tags), expiry)
        }
        try await wallet.transaction { txn in
            for r in rows { try txn.add(type: "t", id: r.id, value: "value of \(r.id)", tags: r.tags, expiresAt: r.expiry) }
            // Another type with the same tags: a search never returns it.
            for r in records.prefix(20) {
                try txn.add(type: "other", id: r.id, value: "v", tags: WalletTags(r.tags.mapValues { .list($0) }))
            }
        }
        return wallet
    }

    /// `count` random queries of two or three conditions (some negated, some naming a value no
    /// record holds, some naming one tag twice), each with its JSON and the ids the filter keeps.
    static func queries(_ records: [Model], count: Int, seed: UInt64) -> [(json: String, expected: [String])] {
        var g = Generator(state: seed)
        let names = values.keys.sorted()
        return (0..<count).map { _ in
            let n = g.below(4) == 0 ? 3 : 2
            var conditions = [Condition]()
            for k in 0..<n {
                let tag = names[g.below(names.count)]
                let choices = values[tag]! + ["missing"]
                conditions.append(Condition(tag: tag, value: choices[g.below(choices.count)], negated: k > 0 && g.below(5) == 0))
            }
            // A tag named twice cannot share one JSON object: those go in `$and`.
            let json =
                Set(conditions.map(\.tag)).count == conditions.count && conditions.filter(\.negated).count <= 1
                ? "{" + conditions.map(\.json).joined(separator: ", ") + "}"
                : #"{"$and": ["# + conditions.map { "{" + $0.json + "}" }.joined(separator: ", ") + "]}"
            let expected = records.filter { r in !r.expired && conditions.allSatisfy { $0.holds(r) } }.map(\.id)
            return (json, expected)
        }
    }

    static let seed: UInt64 = 37

    @Test("every record fetchAll returns, in order, is the filter's")
    func fetchAllMatchesFilter() async throws {
        let records = Self.model(count: 400, seed: Self.seed)
        let wallet = try await Self.wallet(records, seed: Self.seed)
        defer { try? wallet.close() }
        for (json, expected) in Self.queries(records, count: 150, seed: Self.seed) {
            let found = try await wallet.fetchAll(type: "t", matching: WalletQuery(json: json))
            #expect(found.map(\.id) == expected, "query \(json)")
            #expect(found.allSatisfy { $0.value == "value of \($0.id)" }, "query \(json)")
        }
    }

    @Test("newest first returns the filter's records in reverse")
    func newestFirstMatchesFilter() async throws {
        let records = Self.model(count: 400, seed: Self.seed + 1)
        let wallet = try await Self.wallet(records, seed: Self.seed + 1)
        defer { try? wallet.close() }
        for (json, expected) in Self.queries(records, count: 100, seed: Self.seed + 1) {
            let found = try await wallet.fetchAll(type: "t", matching: WalletQuery(json: json), newestFirst: true)
            #expect(found.map(\.id) == expected.reversed(), "query \(json)")
        }
    }

    @Test("a paged walk returns the filter's records, each once, in order")
    func pagedWalkMatchesFilter() async throws {
        let records = Self.model(count: 400, seed: Self.seed + 2)
        let wallet = try await Self.wallet(records, seed: Self.seed + 2)
        defer { try? wallet.close() }
        for (json, expected) in Self.queries(records, count: 60, seed: Self.seed + 2) {
            let handle = try await wallet.openSearch(type: "t", query: WalletQuery(json: json))
            var ids = [String]()
            while let page = try await wallet.searchNext(handle, count: 9).records, !page.isEmpty { ids += page.map(\.id) }
            try await wallet.closeSearch(handle)
            #expect(ids == expected, "query \(json)")
        }
    }

    @Test("counts equal the filter's")
    func countMatchesFilter() async throws {
        let records = Self.model(count: 400, seed: Self.seed + 3)
        let wallet = try await Self.wallet(records, seed: Self.seed + 3)
        defer { try? wallet.close() }
        for (json, expected) in Self.queries(records, count: 150, seed: Self.seed + 3) {
            #expect(try await wallet.count(type: "t", matching: WalletQuery(json: json)) == expected.count, "query \(json)")
        }
    }

    @Test("offset and limit cut the filter's list")
    func offsetLimitMatchFilter() async throws {
        let records = Self.model(count: 400, seed: Self.seed + 4)
        let wallet = try await Self.wallet(records, seed: Self.seed + 4)
        defer { try? wallet.close() }
        var g = Generator(state: Self.seed)
        for (json, expected) in Self.queries(records, count: 80, seed: Self.seed + 4) {
            let offset = g.below(20)
            let limit = 1 + g.below(30)
            let found = try await wallet.fetchAll(type: "t", matching: WalletQuery(json: json), offset: offset, limit: limit)
            #expect(found.map(\.id) == Array(expected.dropFirst(offset).prefix(limit)), "query \(json) offset \(offset) limit \(limit)")
        }
    }
}
