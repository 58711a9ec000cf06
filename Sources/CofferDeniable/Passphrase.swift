// Passphrases of words from the EFF large word list: generated for the user, never chosen,
// normalised and checked word by word when typed back.

import CofferCrypto
import Foundation

/// The EFF large word list (7,776 lines of `<five dice digits>\t<word>`, hyphens removed as in
/// CoverDrop's copy, so "yoyo" appears twice and there are 7,775 distinct words).
public struct WordList: Sendable {
    /// The words in list order (7,776 entries).
    public let words: [String]
    private let known: Set<String>

    /// SHA-256 of the bundled file, as published for CoverDrop's copy.
    public static let sha256 = "471bd1759d68b66e6e2bddf00df419f01e2ee00448bcbd9be9a21a08dfd70892"

    /// The bundled list, read once.
    public static let eff: WordList = {
        guard let url = Bundle.module.url(forResource: "eff_large_wordlist", withExtension: "txt"),
            let text = try? String(contentsOf: url, encoding: .utf8),
            let list = WordList(fileContents: text)
        else { fatalError("the bundled EFF word list is missing or malformed: the package resources are broken") }
        return list
    }()

    /// The raw bytes of the bundled file (to check its digest).
    public static func bundledFileBytes() throws -> Data {
        guard let url = Bundle.module.url(forResource: "eff_large_wordlist", withExtension: "txt") else {
            throw DeniableError.storage("the bundled EFF word list is missing")
        }
        return try Data(contentsOf: url)
    }

    /// Parses `<dice>\t<word>` lines; nil when a line is malformed.
    init?(fileContents: String) {
        var words = [String]()
        words.reserveCapacity(7_776)
        for line in fileContents.split(separator: "\n", omittingEmptySubsequences: true) {
            let parts = line.split(separator: "\t")
            guard parts.count == 2, parts[1].allSatisfy({ $0.isASCII && $0.isLowercase }) else { return nil }
            words.append(String(parts[1]))
        }
        self.words = words
        self.known = Set(words)
    }

    /// Whether `word` (already lower case) is in the list.
    public func contains(_ word: String) -> Bool { known.contains(word) }
}

/// Generating and checking passphrases.
public enum Passphrase {
    /// A new passphrase of `wordCount` distinct words drawn uniformly with the system's secure
    /// random source, joined by single spaces.
    public static func generate(wordCount: Int, from list: WordList = .eff) -> String {
        precondition(wordCount >= 1 && wordCount <= 24, "wordCount must be 1…24")
        var chosen = [String]()
        while chosen.count < wordCount {
            let word = list.words[Int(SecureRandom.uniform(UInt32(list.words.count)))]
            if !chosen.contains(word) { chosen.append(word) }
        }
        return chosen.joined(separator: " ")
    }

    /// The passphrase as the key derivation sees it: trimmed, words separated by single spaces,
    /// lower case, each word checked against the list.
    /// - Throws: ``DeniableError/invalidPassphrase(_:)`` for an empty passphrase, a character
    ///   other than a letter or whitespace, the wrong number of words (when `expectedWordCount` is
    ///   given), or a word not in the list. The error names the word's position (1 for the
    ///   first), never the word: a mistyped word is most of a secret, and errors get logged.
    public static func normalize(_ input: String, expectedWordCount: Int? = nil, list: WordList = .eff) throws(DeniableError) -> String {
        let words = input.lowercased().split(whereSeparator: { $0.isWhitespace }).map(String.init)
        guard !words.isEmpty else { throw .invalidPassphrase("it is empty") }
        for (i, word) in words.enumerated() {
            guard word.unicodeScalars.allSatisfy({ $0.value >= 0x61 && $0.value <= 0x7A }) else {
                throw .invalidPassphrase("word \(i + 1) has characters other than the letters a–z")
            }
        }
        if let expectedWordCount, words.count != expectedWordCount {
            throw .invalidPassphrase("expected \(expectedWordCount) words, got \(words.count)")
        }
        for (i, word) in words.enumerated() where !list.contains(word) {
            throw .invalidPassphrase("word \(i + 1) is not in the word list")
        }
        return words.joined(separator: " ")
    }
}
