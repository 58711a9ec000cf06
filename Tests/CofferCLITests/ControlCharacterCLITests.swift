// Hostile characters and lengths in tags and queries, from the command line: U+0000 is stored
// and matched byte-exactly (count and search agree, `wallet check` stays clean), and a `$like`
// pattern longer than SQLite takes is an invalid query (exit 2), not a storage error.

import CofferTestSupport
import Foundation
import Testing

@Suite("coffer wallet: control characters and long patterns")
struct ControlCharacterCLITests {
    /// `{"count": N}` of a query, and the number of records `search` returns for it.
    static func countAndSearch(_ query: String, store: URL) async throws -> (count: CLIResult, search: CLIResult) {
        (try await CLI.wallet(["count", "t", query], store: store), try await CLI.wallet(["search", "t", query], store: store))
    }

    static func records(_ search: CLIResult) -> Int {
        search.stdout.components(separatedBy: #""id":"#).count - 1
    }

    @Test("a ~ tag value holding U+0000 is kept whole: check is clean, the exact value finds it and its prefix does not")
    func nulInPlaintextTag() async throws {
        let store = try await CLI.newStore()
        let add = try await CLI.wallet(["add", "t", "nul", "v", "--tags", #"{"~x":"a\u0000b","e":"a\u0000b"}"#], store: store)
        #expect(add.status == 0, "\(add.stderr)")
        let check = try await CLI.wallet(["check"], store: store)
        #expect(check.status == 0, "\(check.stdout) \(check.stderr)")
        for tag in ["~x", "e"] {
            let (count, search) = try await Self.countAndSearch(#"{"\#(tag)":"a\u0000b"}"#, store: store)
            #expect(count.status == 0 && count.stdout == #"{"count":1}"# + "\n", "\(tag): \(count.stdout) \(count.stderr)")
            #expect(search.status == 0 && Self.records(search) == 1, "\(tag): \(search.stdout) \(search.stderr)")
            let (prefixCount, prefixSearch) = try await Self.countAndSearch(#"{"\#(tag)":"a"}"#, store: store)
            #expect(prefixCount.stdout == #"{"count":0}"# + "\n", "\(tag): \(prefixCount.stdout) \(prefixCount.stderr)")
            #expect(prefixSearch.status == 0 && Self.records(prefixSearch) == 0, "\(tag): \(prefixSearch.stderr)")
        }
        let get = try await CLI.wallet(["get", "t", "nul"], store: store)
        #expect(get.stdout.contains(#""~x":"a\u0000b""#), "\(get.stdout)")
    }

    @Test("a $regex holding U+0000 on a clean wallet: search and count both answer 0, exit 0")
    func nulInRegex() async throws {
        let store = try await CLI.newStore()
        for i in 1...3 {
            #expect(try await CLI.wallet(["add", "t", "r\(i)", "v", "--tags", #"{"~seq":"1\#(i)"}"#], store: store).status == 0)
        }
        let (count, search) = try await Self.countAndSearch(#"{"~seq":{"$regex":"^1\u0000"}}"#, store: store)
        #expect(count.status == 0 && count.stdout == #"{"count":0}"# + "\n", "\(count.stdout) \(count.stderr)")
        #expect(search.status == 0 && Self.records(search) == 0, "\(search.stdout) \(search.stderr)")
    }

    @Test("a $like pattern over 50,000 bytes is exit 2 naming $like; 50,000 bytes still run")
    func longLike() async throws {
        let store = try await CLI.newStore()
        #expect(try await CLI.wallet(["add", "t", "a", "v", "--tags", #"{"~x":"a","e":"a"}"#], store: store).status == 0)
        for tag in ["~x", "e"] {
            let tooLong = #"{"\#(tag)":{"$like":"\#(String(repeating: "%", count: 50_001))"}}"#
            let (count, search) = try await Self.countAndSearch(tooLong, store: store)
            #expect(count.status == 2 && count.stderr.contains("$like"), "\(tag): \(count.status) \(count.stderr)")
            #expect(search.status == 2 && search.stderr.contains("$like"), "\(tag): \(search.status) \(search.stderr)")
            let longest = #"{"\#(tag)":{"$like":"\#(String(repeating: "%", count: 50_000))"}}"#
            let ok = try await CLI.wallet(["count", "t", longest], store: store)
            #expect(ok.status == 0 && ok.stdout == #"{"count":1}"# + "\n", "\(tag): \(ok.stdout) \(ok.stderr)")
        }
    }
}
