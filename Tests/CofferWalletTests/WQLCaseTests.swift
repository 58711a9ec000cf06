// WQL exactly as design/WQL.md: every case of askar-cases.json gives its coffer_expect, in each
// profile of a store that holds two (the other profile holding the same records as decoys).

import CofferWallet
import Foundation
import Testing

@Suite("WQL case file")
struct WQLCaseTests {
    static func loadedWallet(_ profile: TestProfile) async throws -> Wallet {
        let (wallet, _) = try await TestWallets.make(profile)
        for r in WQLCase.records {
            try await wallet.add(type: r.type, id: r.id, value: r.value, tags: r.tags)
        }
        return wallet
    }

    @Test("the case file has cases") func caseFileLoads() {
        #expect(WQLCase.all.count >= 50)
        #expect(WQLCase.records.count >= 10)
    }

    @Test("search returns coffer_expect", arguments: TestProfile.allCases, WQLCase.all)
    func searchMatchesExpectation(_ profile: TestProfile, _ c: WQLCase) async throws {
        let wallet = try await Self.loadedWallet(profile)
        defer { try? wallet.close() }
        guard let expected = c.expected else {
            do {
                _ = try WalletQuery(json: c.query)
                Issue.record("expected an invalid-query error")
            } catch {
                guard case .invalidQuery = error else {
                    Issue.record("expected invalidQuery, got \(error)")
                    return
                }
            }
            return
        }
        let query = try WalletQuery(json: c.query)
        let handle = try await wallet.openSearch(type: WQLCase.category, query: query, options: SearchOptions(retrieveTotalCount: true))
        let page = try await wallet.searchNext(handle, count: 100)
        try await wallet.closeSearch(handle)
        #expect((page.records ?? []).map(\.id).sorted() == expected)
        #expect(page.totalCount == expected.count)
    }

    @Test("count agrees with search", arguments: TestProfile.allCases, WQLCase.all.filter { $0.expected != nil })
    func countMatches(_ profile: TestProfile, _ c: WQLCase) async throws {
        let wallet = try await Self.loadedWallet(profile)
        defer { try? wallet.close() }
        #expect(try await wallet.count(type: WQLCase.category, matching: WalletQuery(json: c.query)) == c.expected!.count)
    }

    @Test("the in-memory meaning agrees with the SQL search", arguments: WQLCase.all.filter { $0.expected != nil })
    func inMemoryMeaning(_ c: WQLCase) throws {
        let query = try WalletQuery(json: c.query)
        let ids = WQLCase.records.filter { $0.type == WQLCase.category && query.matches($0.tags) }.map(\.id).sorted()
        #expect(ids == c.expected)
    }
}

@Suite("WQL parsing")
struct WQLParsingTests {
    @Test("an error names the offending operator")
    func unknownOperatorNamed() {
        do {
            _ = try WalletQuery(json: #"{"a": {"$between": ["1", "2"]}}"#)
            Issue.record("no error")
        } catch {
            #expect("\(error)".contains("$between"))
        }
    }

    @Test("a regex that does not compile is an invalid query")
    func badRegex() {
        #expect(throws: WalletError.self) { try WalletQuery(json: #"{"~a": {"$regex": "("}}"#) }
    }

    @Test("$like with a number operand is an invalid query")
    func likeNumber() {
        #expect(throws: WalletError.self) { try WalletQuery(json: #"{"~a": {"$like": 5}}"#) }
    }

    @Test("$not of a non-object is an invalid query")
    func notNonObject() {
        #expect(throws: WalletError.self) { try WalletQuery(json: #"{"$not": [{"a": "b"}]}"#) }
    }

    @Test("$and of a non-list is an invalid query")
    func andNonList() {
        #expect(throws: WalletError.self) { try WalletQuery(json: #"{"$and": {"a": "b"}}"#) }
    }

    @Test("a bool operand is an invalid query")
    func boolOperand() {
        #expect(throws: WalletError.self) { try WalletQuery(json: #"{"a": true}"#) }
    }

    @Test("an empty operator object is an invalid query")
    func emptyOperatorObject() {
        #expect(throws: WalletError.self) { try WalletQuery(json: #"{"a": {}}"#) }
    }

    @Test("a key starting with $ that is not an operator is a tag name")
    func dollarTagName() throws {
        let q = try WalletQuery(json: #"{"$tag": "x"}"#)
        #expect(q.matches(["$tag": "x"]))
        #expect(!q.matches(["tag": "x"]))
    }

    @Test("several operators in one object are ANDed")
    func operatorsAnded() throws {
        let q = try WalletQuery(json: #"{"~seq": {"$gte": "002", "$lt": "010"}}"#)
        #expect(q.matches(["~seq": "005"]))
        #expect(!q.matches(["~seq": "010"]))
        #expect(!q.matches(["~seq": "001"]))
    }

    @Test("a numeric operand compares numbers, leading zeros allowed")
    func numericOperand() throws {
        let q = try WalletQuery(json: #"{"~n": {"$gte": 123}}"#)
        #expect(q.matches(["~n": "123"]))
        #expect(q.matches(["~n": "0200"]))
        #expect(q.matches(["~n": "1.5e3"]))
        #expect(!q.matches(["~n": "99"]))
        #expect(!q.matches(["~n": "abc"]))
    }

    @Test("$neq with a number counts a non-number as not equal")
    func numericNeq() throws {
        let q = try WalletQuery(json: #"{"~n": {"$neq": 1}}"#)
        #expect(q.matches(["~n": "abc"]))
        #expect(!q.matches(["~n": "001"]))
    }

    @Test("$like: underscore is one character, letters ASCII case-insensitive, non-ASCII exact")
    func likeSemantics() throws {
        #expect(try WalletQuery(json: #"{"a": {"$like": "a_c"}}"#).matches(["a": "ABC"]))
        #expect(try !WalletQuery(json: #"{"a": {"$like": "a_c"}}"#).matches(["a": "abbc"]))
        #expect(try WalletQuery(json: #"{"a": {"$like": "z_"}}"#).matches(["a": "zë"]))
        #expect(try !WalletQuery(json: #"{"a": {"$like": "Ë"}}"#).matches(["a": "ë"]))
    }

    @Test("$regex is an unanchored, case-sensitive search")
    func regexSemantics() throws {
        let q = try WalletQuery(json: #"{"a": {"$regex": "b+c"}}"#)
        #expect(q.matches(["a": "abbbcd"]))
        #expect(!q.matches(["a": "ABBC"]))
    }
}
