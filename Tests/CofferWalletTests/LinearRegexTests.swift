// LinearRegex against NSRegularExpression: hand-written cases per construct, whole-plane
// character classes, seeded random patterns, pathological inputs, refusals, limits and hostile input.

import CofferDevelopment
import Foundation
import Testing

@testable import CofferWallet

/// The linear-time `$regex` matcher must answer as NSRegularExpression does, refuse what it cannot, and never hang or trap.
@Suite("LinearRegex")
struct LinearRegexTests {
    // MARK: Helpers

    /// NSRegularExpression's answer (no options, whole text), or nil when it does not compile `pattern`.
    static func icuMatches(_ pattern: String, _ text: String) -> Bool? {
        guard let re = try? NSRegularExpression(pattern: pattern) else { return nil }
        return re.firstMatch(in: text, range: NSRange(location: 0, length: (text as NSString).length)) != nil
    }

    /// LinearRegex's answer through the UTF-8 entry point.
    static func utf8Matches(_ regex: LinearRegex, _ text: String) -> Bool {
        var copy = text
        return copy.withUTF8 { regex.containsMatch(utf8: UnsafeRawBufferPointer($0)) }
    }

    /// Expects `pattern` to compile in both engines and every text to get the same answer from
    /// NSRegularExpression and from both LinearRegex entry points.
    static func expectSameAsICU(_ pattern: String, _ texts: [String], sourceLocation: SourceLocation = #_sourceLocation) {
        let regex: LinearRegex
        do { regex = try LinearRegex(pattern) } catch {
            Issue.record("LinearRegex refused \(pattern.debugDescription): \(error)", sourceLocation: sourceLocation)
            return
        }
        for text in texts {
            guard let expected = icuMatches(pattern, text) else {
                Issue.record("NSRegularExpression refused \(pattern.debugDescription)", sourceLocation: sourceLocation)
                return
            }
            #expect(
                regex.containsMatch(text) == expected,
                "pattern \(pattern.debugDescription) text \(text.debugDescription): NSRegularExpression says \(expected)",
                sourceLocation: sourceLocation)
            #expect(
                utf8Matches(regex, text) == expected,
                "UTF-8 entry, pattern \(pattern.debugDescription) text \(text.debugDescription): NSRegularExpression says \(expected)",
                sourceLocation: sourceLocation)
        }
    }

    /// The error LinearRegex throws for `pattern`, or nil when it compiles.
    static func refusal(_ pattern: String) -> LinearRegexError? {
        do {
            _ = try LinearRegex(pattern)
            return nil
        } catch {
            return error
        }
    }

    /// The package's seeded generator, so failures can be replayed from the seed.
    typealias SplitMix = SplitMix64

    /// Random patterns from the supported grammar, and texts over the same alphabet.
    struct PatternGenerator {
        /// The randomness.
        var random: SplitMix
        /// Named groups made so far in the current pattern (names must be unique).
        var names = 0

        /// Single-scalar atoms: literals, escapes, sets and classes.
        static let atoms = [
            "a", "b", "é", "😀", "\n", " ", "1", "\u{301}", ".", "\\n", "\\r", "\\.", "\\u00e9", "\\x{1F600}", "\\x61",
            "\\0141", "\\t", "[ab]", "[^a]", "[a-b]", "[^\\n]", "[é😀]", "[\\d\\s]", "[^\\w]", "[-a]", "[a-]", "[]a]",
            "[\\r\\n]", "[^\\v]", "[\\W]", "[à-ê]", "\\d", "\\D", "\\w", "\\W", "\\s", "\\S", "\\v", "\\V",
        ]
        /// Zero-width atoms.
        static let anchors = ["^", "$", "\\A", "\\z", "\\Z", "\\b", "\\B"]
        /// Quantifiers (a lazy `?` may follow).
        static let quantifiers = ["*", "+", "?", "{0}", "{1}", "{2}", "{0,}", "{1,}", "{2,}", "{0,1}", "{1,2}", "{0,3}", "{2,3}"]
        /// What texts are made of: letters, line terminators, a combining mark, ZWJ, non-BMP.
        static let textAlphabet = ["a", "b", "\n", "\r", "é", "😀", " ", "1", "\u{301}", "\u{200D}", "e", "\u{85}"]

        /// alternation of concatenations, groups nested at most `depth` deep.
        mutating func pattern(depth: Int = 3) -> String {
            names = 0
            return alternation(depth)
        }

        /// concatenation ('|' concatenation)*
        mutating func alternation(_ depth: Int) -> String {
            var s = concatenation(depth)
            while random.oneIn(4) { s += "|" + concatenation(depth) }
            return s
        }

        /// Zero to three items.
        mutating func concatenation(_ depth: Int) -> String {
            var s = ""
            for _ in 0..<Int(random.next() % 4) { s += item(depth) }
            return s
        }

        /// An anchor, or an atom or group with an optional quantifier.
        mutating func item(_ depth: Int) -> String {
            if random.oneIn(6) { return random.pick(Self.anchors) }
            var s: String
            if depth > 0, random.oneIn(3) {
                switch random.next() % 3 {
                case 0: s = "(" + alternation(depth - 1) + ")"
                case 1: s = "(?:" + alternation(depth - 1) + ")"
                default:
                    names += 1
                    s = "(?<g\(names)>" + alternation(depth - 1) + ")"
                }
            } else {
                s = random.pick(Self.atoms)
            }
            if random.oneIn(3) {
                s += random.pick(Self.quantifiers)
                if random.oneIn(4) { s += "?" }
            }
            return s
        }

        /// Zero to eight scalars of the text alphabet.
        mutating func text() -> String {
            var s = ""
            for _ in 0..<Int(random.next() % 9) { s += random.pick(Self.textAlphabet) }
            return s
        }
    }

    // MARK: Hand-written cases, one construct each

    @Test("literals match scalar by scalar, case-sensitively")
    func literals() {
        Self.expectSameAsICU("abc", ["abc", "xabcx", "ab", "ABC", "aBc", ""])
        Self.expectSameAsICU("é", ["é", "e\u{301}", "É", "xéy"])
        Self.expectSameAsICU("e\u{301}", ["é", "e\u{301}", "e"])
        Self.expectSameAsICU("😀b", ["😀b", "a😀b", "😀", "b"])
        Self.expectSameAsICU("a b#", ["a b#", "ab#", "a  b#"])
        Self.expectSameAsICU("]", ["]", "["])
    }

    @Test("dot matches any scalar but ICU's line terminators")
    func dot() {
        let texts = ["a", "\n", "\r", "\u{0B}", "\u{0C}", "\u{85}", "\u{2028}", "\u{2029}", "\u{1C}", "\t", "😀", "\r\n", ""]
        Self.expectSameAsICU(".", texts)
        Self.expectSameAsICU("^.$", texts + ["e\u{301}", "ab"])
        Self.expectSameAsICU("a.b", ["a\r\nb", "a\nb", "a😀b", "a\u{0}b"])
    }

    @Test("character escapes")
    func characterEscapes() {
        Self.expectSameAsICU("\\t\\n\\r\\f\\a\\e", ["\t\n\r\u{0C}\u{07}\u{1B}", "\t\n\r"])
        Self.expectSameAsICU("\\0101\\01\\0777\\0400", ["A\u{01}?7 0", "A\u{01}\u{1FF} 0"])
        Self.expectSameAsICU("\\x41\\x4g\\xABC", ["A\u{04}g\u{AB}C", "A\u{4A}C"])
        Self.expectSameAsICU("\\x{1F600}\\x{e9}\\x{10FFFF}", ["😀é\u{10FFFF}", "😀é"])
        Self.expectSameAsICU("\\u00e9\\U0001F600", ["é😀", "e😀"])
        Self.expectSameAsICU(
            #"\\\.\*\+\?\(\)\[\]\{\}\|\^\$\/\-\#\~\@\<\>\=\!\"\'\,\:\;\%\&\`\_\ "#,
            [#"\.*+?()[]{}|^$/-#~@<>=!"',:;%&`_ "#, "x"])
    }

    @Test("\\Q…\\E quotes metacharacters")
    func quoting() {
        Self.expectSameAsICU("\\Qa.b*\\E", ["a.b*", "axbb"])
        Self.expectSameAsICU("x\\Q(*\\E", ["x(*", "x("])
        Self.expectSameAsICU("\\Qa\\\\E", ["a\\", "a"])
        Self.expectSameAsICU("\\Q.^", [".^", "a^"])
    }

    @Test("\\d \\D \\w \\W \\s \\S \\v \\V on samples")
    func predefinedClassSamples() {
        let texts = [
            "5", "٣", "x", "é", "_", "‿", "\u{301}", "\u{200C}", " ", "\u{A0}", "\u{2003}", "\u{85}", "\n", "\u{0B}", "!", "😀", "𝟘", "‍",
        ]
        for p in ["\\d", "\\D", "\\w", "\\W", "\\s", "\\S", "\\v", "\\V", "^\\w+$", "^\\D*$"] {
            Self.expectSameAsICU(p, texts)
        }
    }

    @Test("\\d \\w \\s . \\v and their negations equal ICU over planes 0 and 1")
    func predefinedClassesOverPlanes() {
        let scalars = (UInt32(0)...0x1FFFF).compactMap(Unicode.Scalar.init)
        let text = String(String.UnicodeScalarView(scalars))
        // UTF-16 offset → scalar index, to read ICU's match locations.
        var indexAtOffset = [Int: Int]()
        var offset = 0
        for (i, s) in scalars.enumerated() {
            indexAtOffset[offset] = i
            offset += s.value > 0xFFFF ? 2 : 1
        }
        for pattern in ["\\d", "\\D", "\\w", "\\W", "\\s", "\\S", ".", "\\v", "\\V", "[\\w\\s]", "[^\\d\\v]"] {
            guard let icu = try? NSRegularExpression(pattern: pattern), let ours = try? LinearRegex("^" + pattern + "$") else {
                Issue.record("\(pattern) does not compile")
                continue
            }
            let icuSet = Set(
                icu.matches(in: text, range: NSRange(location: 0, length: offset)).compactMap { indexAtOffset[$0.range.location] })
            var differences = [String]()
            for (i, s) in scalars.enumerated() where ours.containsMatch(String(Character(s))) != icuSet.contains(i) {
                differences.append(String(s.value, radix: 16, uppercase: true))
            }
            #expect(
                differences.isEmpty,
                "\(pattern) differs from ICU at U+\(differences.prefix(20).joined(separator: " U+")) (\(differences.count) in all)")
        }
    }

    @Test("\\b and \\B equal ICU after every BMP scalar (word, space, marks, format characters)")
    func wordBoundaryOverBMP() {
        let scalars = (UInt32(0)...0xFFFF).compactMap(Unicode.Scalar.init)
        for (lead, pattern) in [("a", "a\\b"), (" ", " \\b"), ("a", "a\\B")] {
            // Text lead c0 lead c1 …: the position after each lead tests one scalar.
            var text = String.UnicodeScalarView()
            for s in scalars {
                text.append(contentsOf: lead.unicodeScalars)
                text.append(s)
            }
            guard let icu = try? NSRegularExpression(pattern: pattern), let ours = try? LinearRegex("^" + pattern) else {
                Issue.record("\(pattern) does not compile")
                continue
            }
            let textString = String(text)
            let hits = Set(
                icu.matches(in: textString, range: NSRange(location: 0, length: (textString as NSString).length)).map(\.range.location))
            var differences = [String]()
            for (i, s) in scalars.enumerated() {
                let expected = hits.contains(2 * i)
                if ours.containsMatch(lead + String(Character(s))) != expected {
                    differences.append(String(s.value, radix: 16, uppercase: true))
                }
            }
            #expect(
                differences.isEmpty,
                "\(pattern) differs from ICU before U+\(differences.prefix(20).joined(separator: " U+")) (\(differences.count) in all)")
        }
    }

    @Test("word boundaries look through combining marks and format characters as ICU does")
    func wordBoundaryCases() {
        let texts = [
            "a", "", " ", "a b", "é", "e\u{301}", "\u{301}", "\u{301}a", "a\u{301}", "\u{200D}a", "a\u{200D}", "a\u{200D}b", "1_x", "😀a",
            "a😀", "a\u{AD}b",
        ]
        for p in [
            "\\b", "\\B", "^\\b", "\\b$", "a\\b", "\\ba", "\\Ba", "a\\B", "\\b\\u0301", "\\u0301\\b", "\\B\\u0301", "\\b\\B", "^\\B$",
        ] {
            Self.expectSameAsICU(p, texts)
        }
    }

    @Test("sets: ranges, negation, literal ] and -, escapes and classes inside")
    func sets() {
        let texts = ["a", "b", "c", "-", "]", "^", "\\", "[", "\n", "\u{0B}", "5", " ", "é", "ê", "😐", "😀", "x", "A", "{", "$", ".", "&"]
        for p in [
            "[abc]", "[^abc]", "[a-c]", "[^a-c]", "[]a]", "[^]a]", "[]-a]", "[a-]", "[-a]", "[^-a]", "[a-c-]", "[\\-x]",
            "[\\]\\[\\\\]", "[a^]", "[\\^]", "[\\d\\s]", "[^\\d\\s]", "[\\W]", "[^\\W\\w]", "[\\D5]", "[\\n-\\r]",
            "[é-ë]", "[\\x{1F600}-\\x{1F64F}]", "[\\u00e9]", "[\\0101-\\0103]", "[.$^|(){}*+?]", "[ ]", "[&]", "[a&]",
            "[\\v]", "[\\V]", "[\\e\\a\\t]", "[\\-]", "[\\--\\-]",
        ] {
            Self.expectSameAsICU(p, texts)
        }
    }

    @Test("^ \\A \\z and $ \\Z before a final line terminator or CR LF")
    func anchors() {
        let texts = [
            "a", "a\n", "a\r\n", "a\r", "a\n\n", "a\r\r", "a\n\r", "a\u{85}", "a\u{2028}", "a\u{2029}", "a\u{0B}", "a\u{0C}",
            "\n", "\r\n", "", "ba", "ab", "a\nb", "\na",
        ]
        for p in [
            "^a", "a$", "^a$", "\\Aa", "a\\z", "a\\Z", "^$", "^\\z", "$", "\\Z", "\\z", "a$\\n", "a$\\r\\n", "a\\r$", "\\n$",
            "\\r\\Z", "\\n\\Z", "^\\n$", "a$|b", "(^|b)a", "a($|b)", "(?:^)*a", "(\\b)+a",
        ] {
            Self.expectSameAsICU(p, texts)
        }
    }

    @Test("groups, named groups and alternation")
    func groupsAndAlternation() {
        let texts = ["", "a", "b", "c", "ac", "bc", "abab", "xy", "abc", "cab"]
        for p in ["(a|b)c", "(?:ab)+", "(?<name>x)y", "(?<n1>a)(?<N2>b)", "a||b", "()", "(|a)b", "a|b|c", "(a|)(b|)c", "((a)(b))+c", "|"] {
            Self.expectSameAsICU(p, texts)
        }
    }

    @Test("quantifiers, greedy and lazy")
    func quantifiers() {
        let texts = ["", "a", "aa", "aaa", "b", "ab", "aab", "ba", "abab"]
        for p in ["a*", "^a*$", "a+b", "^a?b", "a*?b", "^a+?$", "^a??b", "(ab)*$", "^(ab)+$", "(a|b)*b", "^(?:a|ab)+?$", "^a*b*$"] {
            Self.expectSameAsICU(p, texts)
        }
    }

    @Test("counted repetition")
    func countedRepetition() {
        let texts = ["", "a", "aa", "aaa", "aaaa", "aaaaa", "bc", "abc", "abcbc", "abcbcbc"]
        for p in ["^a{3}$", "^a{2,}$", "^a{2,4}$", "^a{0}$", "^a{0,1}$", "^(bc){0}$", "a(bc){2,3}$", "^a{2,3}?$", "^a{1,}?$", "^a{01}$"] {
            Self.expectSameAsICU(p, texts)
        }
        let thousand = String(repeating: "a", count: 1000)
        Self.expectSameAsICU("^a{1000}$", [thousand, String(thousand.dropLast())])
    }

    @Test("the empty pattern matches every text")
    func emptyPattern() throws {
        // NSRegularExpression on Linux refuses "", so this is LinearRegex's own rule.
        let regex = try LinearRegex("")
        #expect(regex.containsMatch(""))
        #expect(regex.containsMatch("anything\n"))
        #expect(Self.utf8Matches(regex, ""))
    }

    @Test("scalars assigned after the ICU data's Unicode version are unassigned to \\w \\d \\b, as in ICU")
    func newerUnicodeScalars() {
        // U+088F, U+11DE0 (a digit) and U+A7CE were assigned in Unicode 17.0.
        Self.expectSameAsICU("\\w", ["\u{088F}", "\u{A7CE}"])
        Self.expectSameAsICU("\\d", ["\u{11DE0}"])
        Self.expectSameAsICU("a\\b", ["a\u{088F}", "a\u{1ACF}"])
    }

    // MARK: Random differential test

    @Test("random patterns and texts get NSRegularExpression's answers", arguments: [UInt64(1), 2, 3, 20_260_704])
    func randomPatterns(seed: UInt64) {
        var generator = PatternGenerator(random: SplitMix(seed: seed))
        var pairs = 0
        var refusedLazy = 0
        for _ in 0..<1500 {
            let pattern = generator.pattern()
            if pattern.isEmpty { continue } // NSRegularExpression on Linux refuses the empty pattern
            let regex: LinearRegex
            do { regex = try LinearRegex(pattern) } catch {
                // The one refusal the grammar can produce: lazy over a part that can match empty.
                if error.message.contains("lazy quantifier") {
                    refusedLazy += 1
                    continue
                }
                Issue.record("seed \(seed): LinearRegex refused \(pattern.debugDescription): \(error)")
                continue
            }
            guard let icu = try? NSRegularExpression(pattern: pattern) else {
                Issue.record("seed \(seed): NSRegularExpression refused \(pattern.debugDescription)")
                continue
            }
            for _ in 0..<6 {
                let text = generator.text()
                let expected = icu.firstMatch(in: text, range: NSRange(location: 0, length: (text as NSString).length)) != nil
                pairs += 1
                #expect(
                    regex.containsMatch(text) == expected,
                    "seed \(seed): pattern \(pattern.debugDescription) text \(text.debugDescription): NSRegularExpression says \(expected)")
                #expect(
                    Self.utf8Matches(regex, text) == expected,
                    "seed \(seed): UTF-8 entry, pattern \(pattern.debugDescription) text \(text.debugDescription): NSRegularExpression says \(expected)"
                )
            }
        }
        print("LinearRegex random seed \(seed): \(pairs) pairs compared, \(refusedLazy) lazy-over-empty patterns refused")
        #expect(pairs > 5000)
    }

    // MARK: Pathological patterns

    /// A pattern that backtracking engines take exponential time on, a long text, and the answer.
    struct Pathological: Sendable, CustomTestStringConvertible {
        /// The pattern.
        let pattern: String
        /// The text.
        let text: String
        /// Whether it matches.
        let expected: Bool
        /// For test output.
        var testDescription: String { "\(pattern) over \(text.unicodeScalars.count) scalars" }
    }

    /// The pathological cases.
    static let pathological: [Pathological] = {
        let a = String(repeating: "a", count: 10_000)
        let x = String(repeating: "x", count: 10_000)
        return [
            Pathological(pattern: "^(a+)+$", text: a + "!", expected: false),
            Pathological(pattern: "^(a+)+$", text: a, expected: true),
            Pathological(pattern: "(a|a)*b", text: a, expected: false),
            Pathological(pattern: "(a|a)*b", text: a + "b", expected: true),
            Pathological(pattern: "(a*)*c", text: a, expected: false),
            Pathological(pattern: "(x+x+)+y", text: x, expected: false),
            Pathological(pattern: "(x+x+)+y", text: x + "y", expected: true),
            Pathological(pattern: "^(a|aa)+$", text: a + "b", expected: false),
            Pathological(pattern: "(\\w+\\s?)+$", text: a + "!", expected: false),
            Pathological(pattern: "^(\\w+\\s?)+$", text: a + " ", expected: true),
        ]
    }()

    @Test("pathological patterns finish with the right answer on 10,000-scalar texts", arguments: pathological)
    func pathologicalPatterns(_ c: Pathological) throws {
        let regex = try LinearRegex(c.pattern)
        #expect(regex.containsMatch(c.text) == c.expected)
        #expect(Self.utf8Matches(regex, c.text) == c.expected)
    }

    // MARK: Refusals

    /// A pattern LinearRegex refuses and a fragment its message must contain.
    struct Refusal: Sendable, CustomTestStringConvertible {
        /// The pattern.
        let pattern: String
        /// A fragment of the expected message (the construct's name).
        let names: String
        /// For test output.
        var testDescription: String { pattern.debugDescription }
    }

    /// Every refused construct.
    static let refusals: [Refusal] = [
        Refusal(pattern: "(a)\\1", names: "backreference '\\1'"),
        Refusal(pattern: "(?<n>a)\\k<n>", names: "named backreference"),
        Refusal(pattern: "a(?=b)", names: "lookahead (?="),
        Refusal(pattern: "a(?!b)", names: "negative lookahead (?!"),
        Refusal(pattern: "(?<=a)b", names: "lookbehind (?<="),
        Refusal(pattern: "(?<!a)b", names: "negative lookbehind (?<!"),
        Refusal(pattern: "(?>a+)b", names: "atomic group (?>"),
        Refusal(pattern: "(?i)a", names: "inline flags"),
        Refusal(pattern: "(?x) a", names: "inline flags"),
        Refusal(pattern: "(?i:a)", names: "inline flags"),
        Refusal(pattern: "(?#note)a", names: "comment (?#"),
        Refusal(pattern: "a*+", names: "possessive quantifier"),
        Refusal(pattern: "a++", names: "possessive quantifier"),
        Refusal(pattern: "a?+", names: "possessive quantifier"),
        Refusal(pattern: "a{2,3}+", names: "possessive quantifier"),
        Refusal(pattern: "(?:|b)*?$", names: "lazy quantifier on a part that can match the empty string"),
        Refusal(pattern: "\\p{L}", names: "Unicode property '\\p{…}'"),
        Refusal(pattern: "\\P{L}", names: "Unicode property '\\P{…}'"),
        Refusal(pattern: "[\\p{L}]", names: "Unicode property"),
        Refusal(pattern: "[[:alpha:]]", names: "nested set or POSIX class"),
        Refusal(pattern: "[:alpha:]", names: "POSIX-style class"),
        Refusal(pattern: "[a[b]]", names: "nested set"),
        Refusal(pattern: "[a-z&&[^x]]", names: "set intersection '&&'"),
        Refusal(pattern: "[a-z--x]", names: "set difference '--'"),
        Refusal(pattern: "[a-c-e]", names: "'-' that does not follow a single character"),
        Refusal(pattern: "[\\d-z]", names: "'-' that does not follow a single character"),
        Refusal(pattern: "[\\Qa\\E]", names: "'\\Q…\\E' inside a character class"),
        Refusal(pattern: "\\Qab\\E*", names: "quantifier right after \\Q…\\E"),
        Refusal(pattern: "a\\E", names: "'\\E' without '\\Q'"),
        Refusal(pattern: "\\Ga", names: "'\\G'"),
        Refusal(pattern: "\\X", names: "'\\X'"),
        Refusal(pattern: "\\R", names: "'\\R'"),
        Refusal(pattern: "\\h", names: "horizontal space '\\h'"),
        Refusal(pattern: "\\H", names: "horizontal space '\\H'"),
        Refusal(pattern: "\\N{LATIN SMALL LETTER A}", names: "named character '\\N{…}'"),
        Refusal(pattern: "\\cA", names: "control character '\\c'"),
        Refusal(pattern: "\\y", names: "unknown escape '\\y'"),
        Refusal(pattern: "\\é", names: "escape of"),
        Refusal(pattern: "[\\b]", names: "'\\b' inside a character class"),
        Refusal(pattern: "\\ud83d\\ude00", names: "surrogate code point escape"),
        Refusal(pattern: "\\x{D800}", names: "surrogate code point escape"),
        Refusal(pattern: "^*a", names: "quantifier on an anchor or word boundary"),
        Refusal(pattern: "\\b+", names: "quantifier on an anchor or word boundary"),
        Refusal(pattern: "a{1001}", names: "repetition count over 1000"),
        Refusal(pattern: "a{2,5000}", names: "repetition count over 1000"),
        Refusal(pattern: "(a{1000}){1000}", names: "limit of 100000 instructions"),
        Refusal(pattern: "(?:[ab]{100}){600}(?:[ab]{100}){600}", names: "limit of 100000 instructions"),
    ]

    @Test("refused constructs throw an error naming them", arguments: refusals)
    func refusedConstruct(_ r: Refusal) {
        guard let error = Self.refusal(r.pattern) else {
            Issue.record("\(r.pattern.debugDescription) compiled")
            return
        }
        #expect(error.message.contains(r.names), "message: \(error.message)")
        #expect(error.description == error.message)
    }

    @Test("error messages give the construct's position")
    func errorPosition() {
        #expect(Self.refusal("ab(?=c)")?.message.contains("at position 2") == true)
        #expect(Self.refusal("éé\\1")?.message.contains("at position 2") == true)
        #expect(Self.refusal("[abc")?.message.contains("at position 0") == true)
    }

    /// Patterns NSRegularExpression refuses as malformed, and a fragment of LinearRegex's message.
    static let malformed: [Refusal] = [
        Refusal(pattern: "(", names: "missing ')'"),
        Refusal(pattern: "a)", names: "unmatched ')'"),
        Refusal(pattern: "[a", names: "unterminated character class"),
        Refusal(pattern: "[]", names: "unterminated character class"),
        Refusal(pattern: "[^]", names: "unterminated character class"),
        Refusal(pattern: "[c-a]", names: "range out of order"),
        Refusal(pattern: "[a-\\d]", names: "must end with a single character"),
        Refusal(pattern: "*a", names: "nothing to repeat"),
        Refusal(pattern: "a|*b", names: "nothing to repeat"),
        Refusal(pattern: "a**", names: "quantifier directly after another quantifier"),
        Refusal(pattern: "a{2}{3}", names: "quantifier directly after another quantifier"),
        Refusal(pattern: "a???", names: "quantifier directly after another quantifier"),
        Refusal(pattern: "{", names: "'{' has nothing to repeat"),
        Refusal(pattern: "}", names: "unescaped '}'"),
        Refusal(pattern: "a{", names: "malformed repetition"),
        Refusal(pattern: "a{,3}", names: "malformed repetition"),
        Refusal(pattern: "a{ 1}", names: "malformed repetition"),
        Refusal(pattern: "a{3,1}", names: "maximum below its minimum"),
        Refusal(pattern: "a\\", names: "trailing backslash"),
        Refusal(pattern: "\\0", names: "needs octal digits"),
        Refusal(pattern: "\\xg", names: "'\\x' needs hex digits"),
        Refusal(pattern: "\\x{}", names: "malformed '\\x{…}'"),
        Refusal(pattern: "\\x{110000}", names: "above U+10FFFF"),
        Refusal(pattern: "\\u004", names: "exactly 4 hex digits"),
        Refusal(pattern: "\\U00110000", names: "above U+10FFFF"),
        Refusal(pattern: "(?", names: "incomplete group"),
        Refusal(pattern: "(?<1n>a)", names: "malformed group name"),
        Refusal(pattern: "(?<n_1>a)", names: "malformed group name"),
        Refusal(pattern: "(?<n>a)(?<n>b)", names: "duplicate group name"),
        Refusal(pattern: "\\8", names: "backreference"),
    ]

    @Test("malformed patterns that NSRegularExpression also refuses throw", arguments: malformed)
    func malformedPattern(_ r: Refusal) {
        #expect(Self.icuMatches(r.pattern, "") == nil, "NSRegularExpression accepts \(r.pattern.debugDescription)")
        guard let error = Self.refusal(r.pattern) else {
            Issue.record("\(r.pattern.debugDescription) compiled")
            return
        }
        #expect(error.message.contains(r.names), "message: \(error.message)")
    }

    // MARK: Limits and hostile input

    @Test("nesting is bounded: 200 groups compile, deeper nesting throws instead of exhausting the stack")
    func nestingLimit() throws {
        let ok = String(repeating: "(", count: 200) + "a" + String(repeating: ")", count: 200)
        #expect(try LinearRegex(ok).containsMatch("a"))
        let deep = String(repeating: "(", count: 201) + "a" + String(repeating: ")", count: 201)
        #expect(Self.refusal(deep)?.message.contains("nesting deeper than 200") == true)
        let hostile = String(repeating: "(?:", count: 100_000)
        #expect(Self.refusal(hostile) != nil)
    }

    @Test("a program at the instruction limit compiles and runs")
    func largeProgram() throws {
        let regex = try LinearRegex("(?:[ab]{100}){900}|c")
        #expect(regex.containsMatch("abc"))
        #expect(!regex.containsMatch(String(repeating: "ab", count: 60)))
    }

    @Test("thousands of random garbage patterns compile or throw, and those that compile agree with ICU")
    func garbagePatterns() {
        var random = SplitMix(seed: 7)
        let alphabet = Array("()[]{}|*+?.^$\\-:&<>=!#,0123456789abdswDWSBAzZQEkpPxuUnrtfv é😀\u{301}\u{0}").map(String.init)
        var generator = PatternGenerator(random: SplitMix(seed: 8))
        var compiled = 0
        for _ in 0..<5000 {
            var pattern = ""
            for _ in 0..<Int(random.next() % 14) { pattern += random.pick(alphabet) }
            guard let regex = try? LinearRegex(pattern) else { continue }
            compiled += 1
            if pattern.isEmpty { continue }
            guard let icu = try? NSRegularExpression(pattern: pattern) else {
                Issue.record("LinearRegex accepts \(pattern.debugDescription), NSRegularExpression refuses it")
                continue
            }
            for _ in 0..<3 {
                let text = generator.text() + (random.oneIn(2) ? pattern : "")
                let expected = icu.firstMatch(in: text, range: NSRange(location: 0, length: (text as NSString).length)) != nil
                #expect(
                    regex.containsMatch(text) == expected,
                    "garbage pattern \(pattern.debugDescription) text \(text.debugDescription): NSRegularExpression says \(expected)")
            }
        }
        #expect(compiled > 1000)
    }

    @Test("arbitrary scalar strings never trap the compiler")
    func arbitraryScalarPatterns() {
        var random = SplitMix(seed: 99)
        for _ in 0..<3000 {
            var pattern = String.UnicodeScalarView()
            for _ in 0..<Int(random.next() % 20) {
                let v = UInt32(random.oneIn(2) ? random.next() % 0x80 : random.next() % 0x110000)
                if let s = Unicode.Scalar(v) { pattern.append(s) }
            }
            if let regex = try? LinearRegex(String(pattern)) {
                _ = regex.containsMatch(String(pattern))
            }
        }
    }

    /// Byte sequences that are not UTF-8.
    static let invalidUTF8: [[UInt8]] = [
        [0xFF], [0xC0, 0x80], [0xC1, 0xBF], [0xE0, 0x80, 0x80], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80], [0xF5, 0x80, 0x80, 0x80],
        [0x61, 0xC3], [0x61, 0x80, 0x62], [0xE2, 0x82], [0xF0, 0x9F, 0x98],
    ]

    @Test("invalid UTF-8 never matches, even the empty pattern", arguments: invalidUTF8)
    func invalidUTF8NeverMatches(_ bytes: [UInt8]) throws {
        for pattern in ["", "a", ".", "\\x{FFFD}", "[^b]"] {
            let regex = try LinearRegex(pattern)
            let matched = bytes.withUnsafeBytes { regex.containsMatch(utf8: $0) }
            #expect(!matched, "pattern \(pattern.debugDescription) matched \(bytes)")
        }
    }

    @Test("compiled patterns are Sendable and usable from several tasks")
    func sendable() async throws {
        let regex = try LinearRegex("^schema:(degree|license)")
        let results = await withTaskGroup(of: Bool.self) { group in
            for i in 0..<8 {
                group.addTask { regex.containsMatch(i.isMultiple(of: 2) ? "schema:degree/1" : "schema:other") }
            }
            var all = [Bool]()
            for await r in group { all.append(r) }
            return all
        }
        #expect(results.filter { $0 }.count == 4)
    }

    // MARK: Measurements (printed, not asserted)

    @Test("timings: catastrophic pattern, long text, many short texts")
    func timings() throws {
        let clock = ContinuousClock()
        let catastrophic = try LinearRegex("^(a+)+$")
        let short = String(repeating: "a", count: 26) + "!"
        let long = String(repeating: "a", count: 100_000)
        var answer = true
        let tShort = clock.measure { answer = catastrophic.containsMatch(short) }
        #expect(!answer)
        let tLong = clock.measure { answer = catastrophic.containsMatch(long) }
        #expect(answer)
        let literal = try LinearRegex("schema")
        let texts = (0..<10_000).map { "credential-\($0)-name" }
        var hits = 0
        let tMany = clock.measure { hits = texts.filter { literal.containsMatch($0) }.count }
        #expect(hits == 0)
        print(
            "LinearRegex timings: ^(a+)+$ over a*26+\"!\": \(tShort); over 100,000 \"a\": \(tLong); \"schema\" over 10,000 short strings: \(tMany)"
        )
    }
}

extension SplitMix64 {
    /// A uniformly chosen element of `items`.
    mutating func pick<T>(_ items: [T]) -> T { items[Int(next() % UInt64(items.count))] }
    /// True with probability 1/`n`.
    mutating func oneIn(_ n: UInt64) -> Bool { next() % n == 0 }
}
