// U+0000 and the other control characters are data like any other: stored byte-exactly in tag
// values, values, ids and types, and matched byte-exactly by every WQL operator, with `count`
// and a search giving the same answer (docs/wql.md, "Control characters").

import CofferWallet
import Foundation
import Testing

@Suite("Control characters are stored and matched byte-exactly")
struct ControlCharacterTests {
    /// Tag values around U+0000 and other control characters: every prefix and neighbour a
    /// C string would confuse with them.
    static let values = [
        "a", "a\u{0}", "a\u{0}b", "a\u{0}c", "a\u{1}b", "ab", "\u{0}", "\u{0}a", "", "1", "1\u{0}", "12", "5\u{0}9",
        "x\u{1F}y", "x\u{7F}y", "tab\tnew\nline", "é\u{0}é",
    ]

    static func wallet() async throws -> Wallet {
        let (wallet, _) = try await TestWallets.make()
        try await wallet.transaction { txn in
            for (i, v) in values.enumerated() {
                try txn.add(type: "t", id: "r\(i)", value: "value \(v)", tags: ["~p": .string(v), "e": .string(v)])
            }
            // One record holding several values, so range plans on `~m` cannot use the index range.
            try txn.add(type: "t", id: "multi", value: "m", tags: ["~p": ["q", "a\u{0}z"], "e": ["q", "a\u{0}z"]])
        }
        return wallet
    }

    /// Queries on the plaintext tag `~p`; each is also run on the encrypted tag `e`.
    static let queries: [String] = {
        var q = [String]()
        for v in [#"a\u0000b"#, #"a"#, #"\u0000"#, #"1\u0000"#, #"a\u0001b"#, #"x\u001fy"#, #"é\u0000é"#] {
            q.append(#"{"T": "\#(v)"}"#)
            q.append(#"{"T": {"$neq": "\#(v)"}}"#)
            q.append(#"{"T": {"$gt": "\#(v)"}}"#)
            q.append(#"{"T": {"$lte": "\#(v)"}}"#)
            q.append(#"{"T": {"$gte": "\#(v)", "$lt": "b"}}"#)
            q.append(#"{"T": {"$like": "\#(v)"}}"#)
            q.append(#"{"T": {"$like": "\#(v)%"}}"#)
            q.append(#"{"T": {"$regex": "^\#(v)"}}"#)
            q.append(#"{"T": {"$regex": "\#(v)$"}}"#)
            q.append(#"{"T": {"$in": ["\#(v)", "zz"]}}"#)
            // A long list, bound as one array.
            let filler = (0..<20).map { #""f\#($0)""# }.joined(separator: ",")
            q.append(#"{"T": {"$in": [\#(filler), "\#(v)"]}}"#)
            q.append(#"{"$not": {"T": "\#(v)"}}"#)
        }
        q += [
            #"{"T": {"$like": "a_b"}}"#, #"{"T": {"$like": "%b"}}"#, #"{"T": {"$like": "a%"}}"#, #"{"T": {"$like": "_"}}"#,
            #"{"T": {"$regex": "^1\u0000"}}"#, #"{"T": {"$regex": "\\x00"}}"#, #"{"T": {"$regex": "^a.b$"}}"#,
            #"{"T": 1}"#, #"{"T": {"$gte": 5}}"#, #"{"T": {"$neq": 1}}"#, #"{"T": {"$in": [1, 5, 12]}}"#,
            #"{"T": {"$lt": "a\u0000c"}}"#, #"{"T": {"$gt": "a\u0000"}}"#,
        ]
        return q
    }()

    @Test("a wallet holding control characters in plaintext and encrypted tags checks clean")
    func checksClean() async throws {
        let wallet = try await Self.wallet()
        let report = try await wallet.checkIntegrity()
        #expect(report.isClean, "\(report.problems)")
    }

    @Test("every query gives count = search = the in-memory answer, on plaintext and encrypted tags", arguments: ["~p", "e"])
    func countsAgree(tag: String) async throws {
        let wallet = try await Self.wallet()
        let all = try await wallet.fetchAll(type: "t", options: RecordOptions(retrieveTags: true))
        for text in Self.queries {
            let json = text.replacingOccurrences(of: #""T""#, with: "\"\(tag)\"")
            let query = try WalletQuery(json: json)
            let expected = Set(all.filter { query.matches($0.tags ?? [:]) }.map(\.id))
            do {
                let found = try await wallet.fetchAll(type: "t", matching: query)
                #expect(Set(found.map(\.id)) == expected, "search \(json)")
            } catch { Issue.record("search \(json): \(error)") }
            let counted = try await wallet.count(type: "t", matching: query)
            #expect(counted == expected.count, "count \(json): \(counted), expected \(expected.count)")
        }
    }

    @Test("the stored values are the ones given, byte for byte")
    func roundTrip() async throws {
        let wallet = try await Self.wallet()
        for (i, v) in Self.values.enumerated() {
            let record = try #require(try await wallet.fetch(type: "t", id: "r\(i)", options: RecordOptions(retrieveTags: true)))
            #expect(record.value.map { Array($0.utf8) } == Array("value \(v)".utf8))
            #expect(record.tags == ["~p": .string(v), "e": .string(v)])
        }
    }

    @Test("ids and types holding U+0000 are distinct from their prefixes")
    func idsAndTypes() async throws {
        let (wallet, _) = try await TestWallets.make()
        try await wallet.add(type: "t\u{0}x", id: "i\u{0}1", value: "full")
        try await wallet.add(type: "t", id: "i", value: "prefix")
        #expect(try await wallet.fetch(type: "t\u{0}x", id: "i\u{0}1")?.value == "full")
        #expect(try await wallet.fetch(type: "t", id: "i")?.value == "prefix")
        #expect(try await wallet.fetch(type: "t\u{0}x", id: "i") == nil)
        #expect(try await wallet.count(type: "t\u{0}x") == 1)
        #expect(try await wallet.checkIntegrity().isClean)
    }
}
