// Hostile `$regex` patterns: each compiles within the limits and answers as ICU does, or is
// refused naming the limit — compilation included (a repetition of an empty body used to emit
// nothing a trillion times).

import Foundation
import Testing

@testable import CofferWallet

@Suite("Hostile regular expressions")
struct HostileRegexTests {
    static func nested(_ body: String, _ count: Int, depth: Int) -> String {
        var p = body
        for _ in 0..<depth { p = "(?:\(p)){\(count)}" }
        return p
    }

    /// Hostile patterns that compile (their empty parts fold away) and what they answer on "ab".
    static let answered: [(String, Bool)] = [
        (nested("", 1000, depth: 4), true),
        (nested("()", 1000, depth: 4), true),
        (nested("(?:){1000}|", 1000, depth: 3), true),
        (nested("a{0}", 1000, depth: 4) + "b", true),
        (nested("", 1000, depth: 4) + "c", false),
        ("(?:(?:(?:){1000}|a){1000})b", true),
        ("(?:" + String(repeating: "(?:)", count: 1000) + "){1000}", true),
    ]

    @Test("nested repetitions of empty groups compile at once and answer as ICU does", arguments: 0..<answered.count)
    func emptyRepetitionsFold(_ i: Int) throws {
        let (pattern, expected) = Self.answered[i]
        let regex = try LinearRegex(pattern)
        #expect(regex.containsMatch("ab") == expected)
    }

    /// Hostile patterns refused, and the words their refusal must contain.
    static let refused: [(String, String)] = [
        (nested("a", 1000, depth: 4), "limit of 100000 instructions"),
        (nested("a?", 1000, depth: 2), "limit of 100000 instructions"),
        (nested("(?:a|)", 1000, depth: 3), "limit of 100000 instructions"),
        (nested("\\b", 1000, depth: 2), "limit of 100000 instructions"),
        (nested("(?:^|$)", 500, depth: 2), "limit of 100000 instructions"),
        (String(repeating: "a", count: LinearRegex.maxPatternLength + 1), "longer than the limit of 4096 characters"),
    ]

    @Test("nested counted repetitions of tiny groups and over-long patterns are refused naming the limit", arguments: 0..<refused.count)
    func hostileRefused(_ i: Int) {
        let (pattern, words) = Self.refused[i]
        guard let error = LinearRegexTests.refusal(pattern) else {
            Issue.record("\(pattern.prefix(60)) compiled")
            return
        }
        #expect(error.message.contains(words), "\(error.message)")
    }

    @Test("a class of three thousand non-ASCII scalars answers as ICU does (looked up by binary search)")
    func hugeClass() throws {
        var pattern = "["
        for i in 0..<3_000 { pattern.unicodeScalars.append(Unicode.Scalar(0x1000 + 3 * i)!) }
        pattern += "]+$"
        let regex = try LinearRegex(pattern)
        let member = String(Unicode.Scalar(0x1000 + 3 * 500)!)
        let outsider = String(Unicode.Scalar(0x1000 + 3 * 500 + 1)!)
        let text = String(repeating: member, count: 2_000)
        for t in [text, text + outsider, outsider + text, outsider] {
            #expect(regex.containsMatch(t) == LinearRegexTests.icuMatches(pattern, t))
        }
    }

    @Test("a long alternation of literals answers as ICU does")
    func longAlternation() throws {
        let pattern = (0..<600).map { "w\($0)x" }.joined(separator: "|")
        #expect(pattern.unicodeScalars.count <= LinearRegex.maxPatternLength)
        let regex = try LinearRegex(pattern)
        for t in ["w599x", "w600x", "zzw42xzz", String(repeating: "w1", count: 5_000)] {
            #expect(regex.containsMatch(t) == LinearRegexTests.icuMatches(pattern, t))
        }
    }

    @Test("a hostile $regex in a wallet query is refused as invalidQuery naming the limit")
    func walletRefuses() {
        let json = #"{"~t": {"$regex": "\#(Self.nested("a", 1000, depth: 4))"}}"#
        var refusal: Error?
        do { _ = try WalletQuery(json: json) } catch { refusal = error }
        let message = refusal.map { String(describing: $0) } ?? "accepted"
        #expect(refusal is WalletError)
        #expect(message.contains("limit of 100000 instructions"), "\(message)")
    }

    @Test("the 41-character pattern of the report answers in a wallet query")
    func reportedPatternAnswers() async throws {
        let (w, _) = try await TestWallets.make()
        defer { try? w.close() }
        try await w.add(type: "t", id: "a", value: "v", tags: ["~t": "x", "e": "y"])
        let pattern = Self.nested("", 1000, depth: 4)
        #expect(pattern == "(?:(?:(?:(?:){1000}){1000}){1000}){1000}")
        #expect(try await w.count(type: "t", matching: WalletQuery(json: #"{"~t": {"$regex": "\#(pattern)"}}"#)) == 1)
        #expect(try await w.fetchAll(type: "t", matching: WalletQuery(json: #"{"e": {"$regex": "\#(pattern)"}}"#)).count == 1)
    }
}
