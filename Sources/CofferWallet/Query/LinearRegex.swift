// A linear-time matcher for the regular expressions WQL's `$regex` accepts: the subset of
// ICU's syntax (what NSRegularExpression compiles) that needs no backtracking, run as a
// Thompson NFA simulation. Matching costs O(pattern × text) time and O(pattern + text) memory.
//
// Everything accepted matches exactly as NSRegularExpression with no options would (checked by
// LinearRegexTests against NSRegularExpression); everything else is refused with an error that
// names the construct and where it is. Matching is on Unicode scalars (code points).

/// Why a pattern was refused: the construct, where it is, and why.
struct LinearRegexError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A sentence naming the unsupported or malformed construct and its position
    /// (counted in Unicode scalars from 0).
    let message: String

    /// The message.
    var description: String { message }
}

/// A compiled regular expression that matches in time linear in the text (no backtracking).
///
/// The dialect is ICU's (NSRegularExpression's) without options, restricted to what a finite
/// automaton can match:
/// - literals (any Unicode scalar), `.` (any scalar but the line terminators
///   `\n \u{0B} \u{0C} \r \u{85} \u{2028} \u{2029}`);
/// - escapes `\t \n \r \f \a \e`, `\0ooo` (octal, at most `\0377`), `\xhh`, `\x{h…}`, `\uhhhh`,
///   `\Uhhhhhhhh`, any escaped ASCII punctuation or space, and `\Q…\E` quoting;
/// - classes `\d \D \w \W \s \S \v \V` (ICU's Unicode definitions, Unicode ``unicodeVersion``)
///   and sets `[…]`, `[^…]` with ranges, escapes and those classes inside;
/// - anchors `^ $ \A \z \Z` (no multi-line mode) and word boundaries `\b \B` (ICU's definition);
/// - groups `(…)`, `(?:…)`, `(?<name>…)`, alternation `|`, quantifiers `* + ? {n} {n,} {n,m}`
///   and their lazy forms (for a yes/no answer lazy and greedy are the same).
///
/// Refused: backreferences, lookaround, atomic groups, possessive quantifiers, inline flags,
/// comments, `\p{…}`, POSIX and nested sets, set operations, `\G \X \R \h \N{…} \c`, unknown
/// letter escapes, quantifiers on anchors or right after `\Q…\E`, lazy quantifiers on a part that
/// can match the empty string (ICU answers those unreliably), and repetitions, nesting or
/// programs over ``maxRepetition``, ``maxNesting`` or ``maxInstructions``.
struct LinearRegex: Sendable {
    /// The largest count a `{n}`, `{n,}` or `{n,m}` repetition may name.
    static let maxRepetition = 1000

    /// The largest compiled program, in instructions (bounds memory and time per text scalar).
    static let maxInstructions = 100_000

    /// The deepest nesting of groups a pattern may have.
    static let maxNesting = 200

    /// The longest pattern, in Unicode scalars. With the other limits it bounds compilation:
    /// parsing is linear in the pattern, and emitting the program is linear in its size (at
    /// most ``maxInstructions``) plus the pattern's (see ``LinearRegexBuilder``).
    static let maxPatternLength = 4_096

    /// The Unicode version of the character data ICU uses under NSRegularExpression in this
    /// toolchain (Swift 6.3's Foundation ships ICU with Unicode 16.0). Scalars assigned after it are
    /// treated as unassigned by `\d \w \s \b`, as ICU does, so answers do not depend on the
    /// standard library's newer tables.
    static let unicodeVersion: Unicode.Version = (major: 16, minor: 0)

    /// The compiled automaton.
    private let program: LinearRegexProgram

    /// Compiles `pattern`; throws a description naming what is not supported or malformed (with its position).
    init(_ pattern: String) throws(LinearRegexError) {
        var length = 0
        for _ in pattern.unicodeScalars {
            length += 1
            if length > Self.maxPatternLength {
                throw LinearRegexError(
                    message: "pattern longer than the limit of \(Self.maxPatternLength) characters (a pattern that long is not supported)")
            }
        }
        var parser = LinearRegexParser(pattern)
        let tree = try parser.parse()
        program = try LinearRegexBuilder.build(tree, classes: parser.classes)
    }

    /// Automaton steps between two reads of a search's cancellation flag while matching.
    static let cancellationPollSteps = 4096

    /// Whether `text` contains a match (unanchored search, like NSRegularExpression.firstMatch != nil), case-sensitive.
    func containsMatch(_ text: String) -> Bool {
        var scalars = [Unicode.Scalar]()
        scalars.reserveCapacity(text.utf8.count)
        scalars.append(contentsOf: text.unicodeScalars)
        return program.run(scalars, cancellation: MatchCancellation.current)
    }

    /// Same, over UTF-8 bytes (SQLite hands text as UTF-8); invalid UTF-8 never matches.
    func containsMatch(utf8 bytes: UnsafeRawBufferPointer) -> Bool {
        var scalars = [Unicode.Scalar]()
        scalars.reserveCapacity(bytes.count)
        var iterator = bytes.makeIterator()
        var decoder = Unicode.UTF8()
        while true {
            switch decoder.decode(&iterator) {
            case .scalarValue(let scalar): scalars.append(scalar)
            case .emptyInput: return program.run(scalars, cancellation: MatchCancellation.current)
            case .error: return false
            }
        }
    }
}

// MARK: - Character classification (ICU's definitions)

/// ICU's character classes, computed from the standard library's Unicode properties.
enum ICURegexCharacters {
    /// Whether `c` is one of ICU's line terminators (what `.` skips, `\v` matches, `$` may precede).
    static func isLineTerminator(_ c: Unicode.Scalar) -> Bool {
        switch c.value {
        case 0x0A...0x0D, 0x85, 0x2028, 0x2029: return true
        default: return false
        }
    }

    /// Whether `c` was assigned by ``LinearRegex/unicodeVersion`` (ICU sees later scalars as unassigned).
    static func isKnown(_ c: Unicode.Scalar) -> Bool {
        if c.value < 0x80 { return true }
        guard let age = c.properties.age else { return false }
        let limit = LinearRegex.unicodeVersion
        return age.major < limit.major || (age.major == limit.major && age.minor <= limit.minor)
    }

    /// `\d`: general category Nd.
    static func isDigit(_ c: Unicode.Scalar) -> Bool {
        if c.value < 0x80 { return c.value >= 0x30 && c.value <= 0x39 }
        return isKnown(c) && c.properties.generalCategory == .decimalNumber
    }

    /// `\w`: Alphabetic, marks (Mn Mc Me), Nd, Pc, and U+200C U+200D.
    static func isWord(_ c: Unicode.Scalar) -> Bool {
        let v = c.value
        if v < 0x80 {
            return (v >= 0x30 && v <= 0x39) || (v >= 0x41 && v <= 0x5A) || (v >= 0x61 && v <= 0x7A) || v == 0x5F
        }
        if v == 0x200C || v == 0x200D { return true }
        guard isKnown(c) else { return false }
        switch c.properties.generalCategory {
        case .nonspacingMark, .spacingMark, .enclosingMark, .decimalNumber, .connectorPunctuation: return true
        default: return c.properties.isAlphabetic
        }
    }

    /// `\s`: White_Space.
    static func isSpace(_ c: Unicode.Scalar) -> Bool {
        let v = c.value
        if v < 0x80 { return v == 0x20 || (v >= 0x09 && v <= 0x0D) }
        return isKnown(c) && c.properties.isWhitespace
    }

    /// Whether `\b` looks through `c`: Grapheme_Extend or general category Cf.
    static func isTransparentToBoundary(_ c: Unicode.Scalar) -> Bool {
        if c.value < 0x80 { return false }
        guard isKnown(c) else { return false }
        return c.properties.isGraphemeExtend || c.properties.generalCategory == .format
    }
}

// MARK: - Syntax tree

/// A zero-width test at a position.
enum LinearRegexAssertion: Sendable, Equatable {
    /// `^` or `\A`: the start of the text.
    case textStart
    /// `\z`: the end of the text.
    case textEnd
    /// `$` or `\Z`: the end, or before a line terminator (or CR LF) that ends the text.
    case endOrFinalLineTerminator
    /// `\b`: ICU's word boundary.
    case wordBoundary
    /// `\B`: not `\b`.
    case notWordBoundary
}

/// One of the predefined classes usable alone or inside a set.
enum LinearRegexClassProperty: Sendable, Equatable {
    /// `\d` (or `\D` when negated).
    case digit
    /// `\w` (or `\W`).
    case word
    /// `\s` (or `\S`).
    case space
    /// `\v` (or `\V`): ICU's line terminators.
    case vertical

    /// Whether `c` has the property.
    func contains(_ c: Unicode.Scalar) -> Bool {
        switch self {
        case .digit: return ICURegexCharacters.isDigit(c)
        case .word: return ICURegexCharacters.isWord(c)
        case .space: return ICURegexCharacters.isSpace(c)
        case .vertical: return ICURegexCharacters.isLineTerminator(c)
        }
    }
}

/// A set of scalars: ranges and properties, possibly negated, with an ASCII bitmap fast path.
struct LinearRegexCharClass: Sendable {
    /// Scalar ranges in the set (before negation).
    private var ranges: [ClosedRange<UInt32>] = []
    /// Properties in the set, each possibly negated (before the set's own negation).
    private var properties: [(property: LinearRegexClassProperty, negated: Bool)] = []
    /// Whether the whole set is negated (`[^…]`, `\D`, …).
    private(set) var negated = false
    /// Membership of scalars below 128, negation included (low and high 64 bits).
    private var ascii: (UInt64, UInt64) = (0, 0)

    /// An empty set, negated or not.
    init(negated: Bool) { self.negated = negated }

    /// A single property, as `\d` or `\D` outside a set.
    init(_ property: LinearRegexClassProperty, negated: Bool) {
        self.negated = false
        properties = [(property, negated)]
        finish()
    }

    /// Adds the scalars `lower...upper`.
    mutating func add(_ lower: UInt32, _ upper: UInt32) { ranges.append(lower...upper) }

    /// Adds a predefined class, possibly negated (`\D` inside `[…]`).
    mutating func add(_ property: LinearRegexClassProperty, negated: Bool) { properties.append((property, negated)) }

    /// Sorts and merges the ranges (membership is then a binary search, O(log n) in the ranges)
    /// and precomputes the ASCII bitmap; call after the last `add`.
    mutating func finish() {
        ranges.sort { $0.lowerBound < $1.lowerBound }
        var merged = [ClosedRange<UInt32>]()
        merged.reserveCapacity(ranges.count)
        for r in ranges {
            if let last = merged.last, r.lowerBound <= last.upperBound &+ 1 {
                merged[merged.count - 1] = last.lowerBound...max(last.upperBound, r.upperBound)
            } else {
                merged.append(r)
            }
        }
        ranges = merged
        var distinct = [(property: LinearRegexClassProperty, negated: Bool)]()
        for p in properties where !distinct.contains(where: { $0.property == p.property && $0.negated == p.negated }) {
            distinct.append(p)
        }
        properties = distinct
        ascii = (0, 0)
        for v in UInt32(0)..<128 {
            guard let c = Unicode.Scalar(v), slowContains(c) else { continue }
            if v < 64 { ascii.0 |= 1 << UInt64(v) } else { ascii.1 |= 1 << UInt64(v - 64) }
        }
    }

    /// Whether `c` is in the set (negation included).
    func contains(_ c: Unicode.Scalar) -> Bool {
        let v = c.value
        if v < 64 { return ascii.0 & (1 << UInt64(v)) != 0 }
        if v < 128 { return ascii.1 & (1 << UInt64(v - 64)) != 0 }
        return slowContains(c)
    }

    /// Membership without the bitmap.
    private func slowContains(_ c: Unicode.Scalar) -> Bool {
        var found = inRanges(c.value)
        if !found { found = properties.contains { $0.property.contains(c) != $0.negated } }
        return found != negated
    }
}

extension LinearRegexCharClass {
    /// Whether `v` is in one of the sorted, disjoint ranges: a binary search.
    fileprivate func inRanges(_ v: UInt32) -> Bool {
        var low = 0
        var high = ranges.count
        while low < high {
            let mid = (low + high) / 2
            if ranges[mid].upperBound < v {
                low = mid + 1
            } else {
                high = mid
            }
        }
        return low < ranges.count && ranges[low].contains(v)
    }
}

/// A parsed pattern.
indirect enum LinearRegexNode: Sendable {
    /// Matches the empty string.
    case empty
    /// One scalar.
    case scalar(UInt32)
    /// `.`.
    case anyButLineTerminator
    /// A character class, by index into the parser's classes.
    case charClass(Int)
    /// A zero-width assertion.
    case assertion(LinearRegexAssertion)
    /// The items one after another.
    case concatenation([LinearRegexNode])
    /// Any one of the branches.
    case alternation([LinearRegexNode])
    /// `node` between `min` and `max` times (`nil`: unbounded); `position` is the quantifier's.
    case repetition(LinearRegexNode, min: Int, max: Int?, position: Int)
}

extension LinearRegexNode {
    /// The same language with every part that can only match the empty string and has no
    /// assertion in it (`()`, `(?:){1000}`, `a{0}`) folded into ``empty``, so that no repetition
    /// repeats nothing: emitting a folded tree does work proportional to its instructions.
    var folded: LinearRegexNode {
        switch self {
        case .empty, .scalar, .anyButLineTerminator, .charClass, .assertion:
            return self
        case .concatenation(let items):
            let kept = items.map(\.folded).filter {
                if case .empty = $0 { return false }
                return true
            }
            switch kept.count {
            case 0: return .empty
            case 1: return kept[0]
            default: return .concatenation(kept)
            }
        case .alternation(let branches):
            let folded = branches.map(\.folded)
            let allEmpty = folded.allSatisfy {
                if case .empty = $0 { return true }
                return false
            }
            return allEmpty ? .empty : .alternation(folded)
        case .repetition(let body, let min, let max, let position):
            let inner = body.folded
            if case .empty = inner { return .empty }
            if max == 0 { return .empty }
            return .repetition(inner, min: min, max: max, position: position)
        }
    }

    /// Whether the node matches the empty string (at some position).
    var canMatchEmpty: Bool {
        switch self {
        case .empty, .assertion: return true
        case .scalar, .anyButLineTerminator, .charClass: return false
        case .concatenation(let items): return items.allSatisfy(\.canMatchEmpty)
        case .alternation(let branches): return branches.contains(where: \.canMatchEmpty)
        case .repetition(let body, let min, _, _): return min == 0 || body.canMatchEmpty
        }
    }
}

// MARK: - Parser

/// Recursive-descent parser from pattern text to ``LinearRegexNode``; every refusal names the construct.
struct LinearRegexParser {
    /// The pattern's scalars.
    private let pattern: [Unicode.Scalar]
    /// The next scalar to read.
    private var index = 0
    /// Current group nesting.
    private var depth = 0
    /// Names of `(?<name>…)` groups seen (ICU refuses duplicates).
    private var groupNames = Set<String>()
    /// The character classes the tree refers to by index.
    private(set) var classes: [LinearRegexCharClass] = []

    /// A parser over `pattern`.
    init(_ pattern: String) { self.pattern = Array(pattern.unicodeScalars) }

    /// Parses the whole pattern.
    mutating func parse() throws(LinearRegexError) -> LinearRegexNode {
        let node = try parseAlternation()
        if index < pattern.count {
            // Only an unmatched ')' stops the top-level alternation early.
            throw fail("unmatched ')'", at: index)
        }
        return node
    }

    // MARK: Helpers

    /// The scalar `offset` ahead of the current one, if any.
    private func peek(_ offset: Int = 0) -> Unicode.Scalar? {
        let i = index + offset
        return i < pattern.count ? pattern[i] : nil
    }

    /// An error naming the problem and position.
    private func fail(_ what: String, at position: Int) -> LinearRegexError {
        LinearRegexError(message: "\(what) at position \(position)")
    }

    /// An error for a construct ICU has but this matcher refuses.
    private func unsupported(_ construct: String, at position: Int, because reason: String = "") -> LinearRegexError {
        let why = reason.isEmpty ? "" : " (\(reason))"
        return LinearRegexError(message: "\(construct) at position \(position) is not supported\(why)")
    }

    /// Whether `c` is a quantifier's first scalar.
    private static func isQuantifierStart(_ c: Unicode.Scalar?) -> Bool {
        c == "*" || c == "+" || c == "?" || c == "{"
    }

    // MARK: Structure

    /// alternation := concatenation ('|' concatenation)*
    private mutating func parseAlternation() throws(LinearRegexError) -> LinearRegexNode {
        var branches = [try parseConcatenation()]
        while peek() == "|" {
            index += 1
            branches.append(try parseConcatenation())
        }
        return branches.count == 1 ? branches[0] : .alternation(branches)
    }

    /// concatenation := (atom quantifier?)*, up to '|', ')' or the end.
    private mutating func parseConcatenation() throws(LinearRegexError) -> LinearRegexNode {
        var items = [LinearRegexNode]()
        while let c = peek(), c != "|", c != ")" {
            if c == "\\", peek(1) == "Q" {
                items.append(contentsOf: parseQuote())
                if Self.isQuantifierStart(peek()) {
                    throw unsupported("a quantifier right after \\Q…\\E", at: index, because: "write the quoted text as a group")
                }
                continue
            }
            let atom = try parseAtom()
            if Self.isQuantifierStart(peek()) {
                if c != "(", case .assertion = atom {
                    throw unsupported(
                        "quantifier on an anchor or word boundary", at: index,
                        because: "it repeats nothing; drop the quantifier")
                }
                items.append(try parseQuantifier(on: atom))
            } else {
                items.append(atom)
            }
        }
        switch items.count {
        case 0: return .empty
        case 1: return items[0]
        default: return .concatenation(items)
        }
    }

    /// `\Q…\E` (or to the end): the quoted scalars as literals.
    private mutating func parseQuote() -> [LinearRegexNode] {
        index += 2
        var items = [LinearRegexNode]()
        while let c = peek() {
            if c == "\\", peek(1) == "E" {
                index += 2
                return items
            }
            items.append(.scalar(c.value))
            index += 1
        }
        return items
    }

    /// A quantifier after `atom`: `* + ? {n} {n,} {n,m}`, optionally lazy (`?`).
    private mutating func parseQuantifier(on atom: LinearRegexNode) throws(LinearRegexError) -> LinearRegexNode {
        let start = index
        let min: Int
        let max: Int?
        switch peek() {
        case "*":
            index += 1
            (min, max) = (0, nil)
        case "+":
            index += 1
            (min, max) = (1, nil)
        case "?":
            index += 1
            (min, max) = (0, 1)
        default: (min, max) = try parseInterval()
        }
        if peek() == "?" {
            // Lazy: the same yes/no answer as greedy, except that ICU loses matches when the
            // repeated part can match the empty string (it finds no match for `(?:|b)*?$` in "b").
            if atom.canMatchEmpty {
                throw unsupported(
                    "lazy quantifier on a part that can match the empty string", at: start,
                    because: "NSRegularExpression answers it unreliably; use the greedy form")
            }
            index += 1
        } else if peek() == "+" {
            throw unsupported(
                "possessive quantifier (a quantifier followed by '+')", at: start,
                because: "it changes which texts match; use a plain quantifier")
        }
        if Self.isQuantifierStart(peek()) {
            throw fail("quantifier directly after another quantifier (put the first in a group to repeat it)", at: index)
        }
        return .repetition(atom, min: min, max: max, position: start)
    }

    /// `{n}`, `{n,}` or `{n,m}`, digits only, as ICU requires.
    private mutating func parseInterval() throws(LinearRegexError) -> (Int, Int?) {
        let start = index
        index += 1 // '{'
        guard let min = try parseCount(intervalStart: start) else {
            throw fail("malformed repetition '{' (expected {n}, {n,} or {n,m}; write \\{ for a literal brace)", at: start)
        }
        var max: Int? = min
        if peek() == "," {
            index += 1
            max = try parseCount(intervalStart: start)
        }
        guard peek() == "}" else {
            throw fail("malformed repetition '{' (expected {n}, {n,} or {n,m}; write \\{ for a literal brace)", at: start)
        }
        index += 1
        if let max, max < min {
            throw fail("repetition {\(min),\(max)} has its maximum below its minimum", at: start)
        }
        return (min, max)
    }

    /// Decimal digits as a count, or nil when there are none.
    private mutating func parseCount(intervalStart: Int) throws(LinearRegexError) -> Int? {
        var value = 0
        var digits = 0
        while let c = peek(), c.value >= 0x30, c.value <= 0x39 {
            value = value * 10 + Int(c.value - 0x30)
            digits += 1
            index += 1
            if value > LinearRegex.maxRepetition {
                throw unsupported(
                    "repetition count over \(LinearRegex.maxRepetition)", at: intervalStart,
                    because: "the limit is \(LinearRegex.maxRepetition)")
            }
        }
        return digits == 0 ? nil : value
    }

    /// One atom: a literal, `.`, a set, a group, an anchor or an escape.
    private mutating func parseAtom() throws(LinearRegexError) -> LinearRegexNode {
        let start = index
        guard let c = peek() else { return .empty }
        switch c {
        case "(":
            return try parseGroup()
        case "[":
            return try parseSet()
        case ".":
            index += 1
            return .anyButLineTerminator
        case "^":
            index += 1
            return .assertion(.textStart)
        case "$":
            index += 1
            return .assertion(.endOrFinalLineTerminator)
        case "*", "+", "?":
            throw fail("quantifier '\(c)' has nothing to repeat", at: start)
        case "{":
            throw fail("'{' has nothing to repeat (write \\{ for a literal brace)", at: start)
        case "}":
            throw fail("unescaped '}' (write \\} for a literal brace)", at: start)
        case "\\":
            return try parseEscape(inSet: false).node(in: &classes)
        default:
            index += 1
            return .scalar(c.value)
        }
    }

    /// A group: `(…)`, `(?:…)` or `(?<name>…)`; other `(?` forms are refused.
    private mutating func parseGroup() throws(LinearRegexError) -> LinearRegexNode {
        let start = index
        index += 1 // '('
        if peek() == "?" {
            switch peek(1) {
            case ":":
                index += 2
            case "<":
                if peek(2) == "=" {
                    throw unsupported("lookbehind (?<=…)", at: start, because: "lookaround cannot be matched in linear time here")
                }
                if peek(2) == "!" {
                    throw unsupported("negative lookbehind (?<!…)", at: start, because: "lookaround cannot be matched in linear time here")
                }
                index += 2
                try parseGroupName(groupStart: start)
            case "=":
                throw unsupported("lookahead (?=…)", at: start, because: "lookaround cannot be matched in linear time here")
            case "!":
                throw unsupported("negative lookahead (?!…)", at: start, because: "lookaround cannot be matched in linear time here")
            case ">":
                throw unsupported("atomic group (?>…)", at: start, because: "it changes which texts match")
            case "#":
                throw unsupported("comment (?#…)", at: start)
            case nil:
                throw fail("incomplete group '(?'", at: start)
            default:
                throw unsupported(
                    "inline flags or group syntax '(?\(peek(1).map { String($0) } ?? "")'", at: start,
                    because: "only (…), (?:…) and (?<name>…) are")
            }
        }
        depth += 1
        if depth > LinearRegex.maxNesting {
            throw unsupported(
                "group nesting deeper than \(LinearRegex.maxNesting)", at: start,
                because: "the limit is \(LinearRegex.maxNesting)")
        }
        let body = try parseAlternation()
        depth -= 1
        guard peek() == ")" else { throw fail("missing ')' for the group opened", at: start) }
        index += 1
        return body
    }

    /// `name>` of a named group: an ASCII letter then ASCII letters or digits, unique, as ICU requires.
    private mutating func parseGroupName(groupStart: Int) throws(LinearRegexError) {
        var name = ""
        while let c = peek(), c.isASCII, c.properties.isAlphabetic || (c.value >= 0x30 && c.value <= 0x39) {
            if name.isEmpty, !c.properties.isAlphabetic { break }
            name.unicodeScalars.append(c)
            index += 1
        }
        guard !name.isEmpty, peek() == ">" else {
            throw fail("malformed group name (expected (?<name>…) with an ASCII letter then letters or digits)", at: groupStart)
        }
        index += 1
        guard groupNames.insert(name).inserted else {
            throw fail("duplicate group name '\(name)'", at: groupStart)
        }
    }

    // MARK: Sets

    /// `[…]` or `[^…]`.
    private mutating func parseSet() throws(LinearRegexError) -> LinearRegexNode {
        let start = index
        index += 1 // '['
        var set = LinearRegexCharClass(negated: peek() == "^")
        if set.negated { index += 1 }
        if peek() == ":" {
            throw unsupported("POSIX-style class '[:'", at: start, because: "write the characters or \\d \\w \\s instead")
        }
        var first = true
        /// The last item when it was a single scalar that may start a range.
        var rangeStart: UInt32?
        while true {
            guard let c = peek() else { throw fail("unterminated character class '['", at: start) }
            let position = index
            if c == "]", !first {
                index += 1
                break
            }
            if c == "[" {
                throw unsupported("nested set or POSIX class '[' inside a character class", at: position, because: "escape it as \\[")
            }
            if c == "&", peek(1) == "&" { throw unsupported("set intersection '&&'", at: position) }
            if c == "-", peek(1) == "-" { throw unsupported("set difference '--'", at: position) }
            if c == "-", !first {
                if peek(1) == "]" {
                    set.add(0x2D, 0x2D)
                    index += 1
                    rangeStart = nil
                    continue
                }
                guard let lower = rangeStart else {
                    throw unsupported(
                        "'-' that does not follow a single character in a character class", at: position,
                        because: "escape it as \\- or put it first or last")
                }
                index += 1
                let endPosition = index
                if peek() == "[" {
                    throw unsupported(
                        "nested set or POSIX class '[' inside a character class", at: endPosition, because: "escape it as \\[")
                }
                guard case .scalar(let upper) = try parseSetItem() else {
                    throw fail("a range in a character class must end with a single character", at: endPosition)
                }
                if upper < lower { throw fail("range out of order in a character class", at: position) }
                set.add(lower, upper)
                rangeStart = nil
                first = false
                continue
            }
            switch try parseSetItem() {
            case .scalar(let v):
                set.add(v, v)
                rangeStart = v
            case .property(let p, let negated):
                set.add(p, negated: negated)
                rangeStart = nil
            }
            first = false
        }
        set.finish()
        classes.append(set)
        return .charClass(classes.count - 1)
    }

    /// One item inside a set: a literal (`]` and `-` included where they are literal) or an escape.
    private mutating func parseSetItem() throws(LinearRegexError) -> SetItem {
        guard let c = peek() else { throw fail("unterminated character class '['", at: index) }
        if c == "\\" {
            switch try parseEscape(inSet: true) {
            case .scalar(let v): return .scalar(v)
            case .property(let p, let negated): return .property(p, negated: negated)
            case .assertion: throw fail("an assertion inside a character class", at: index) // not produced inSet
            }
        }
        index += 1
        return .scalar(c.value)
    }

    /// An item of a set.
    private enum SetItem {
        /// One scalar.
        case scalar(UInt32)
        /// A predefined class, possibly negated.
        case property(LinearRegexClassProperty, negated: Bool)
    }

    // MARK: Escapes

    /// What an escape denotes.
    private enum Escape {
        /// One scalar.
        case scalar(UInt32)
        /// A predefined class, possibly negated.
        case property(LinearRegexClassProperty, negated: Bool)
        /// An assertion (never inside a set).
        case assertion(LinearRegexAssertion)

        /// As a tree node, registering a class when needed.
        func node(in classes: inout [LinearRegexCharClass]) -> LinearRegexNode {
            switch self {
            case .scalar(let v): return .scalar(v)
            case .assertion(let a): return .assertion(a)
            case .property(let p, let negated):
                classes.append(LinearRegexCharClass(p, negated: negated))
                return .charClass(classes.count - 1)
            }
        }
    }

    /// A backslash escape (the current scalar is the backslash).
    private mutating func parseEscape(inSet: Bool) throws(LinearRegexError) -> Escape {
        let start = index
        guard let c = peek(1) else { throw fail("trailing backslash", at: start) }
        index += 2
        switch c {
        case "d": return .property(.digit, negated: false)
        case "D": return .property(.digit, negated: true)
        case "w": return .property(.word, negated: false)
        case "W": return .property(.word, negated: true)
        case "s": return .property(.space, negated: false)
        case "S": return .property(.space, negated: true)
        case "v": return .property(.vertical, negated: false)
        case "V": return .property(.vertical, negated: true)
        case "t": return .scalar(0x09)
        case "n": return .scalar(0x0A)
        case "r": return .scalar(0x0D)
        case "f": return .scalar(0x0C)
        case "a": return .scalar(0x07)
        case "e": return .scalar(0x1B)
        case "0": return .scalar(try parseOctal(escapeStart: start))
        case "x": return .scalar(try parseHexEscape(escapeStart: start))
        case "u": return .scalar(try parseFixedHex(digits: 4, escapeStart: start, name: "\\u"))
        case "U": return .scalar(try parseFixedHex(digits: 8, escapeStart: start, name: "\\U"))
        case "b", "B", "A", "z", "Z":
            if inSet {
                throw unsupported("'\\\(c)' inside a character class", at: start)
            }
            switch c {
            case "b": return .assertion(.wordBoundary)
            case "B": return .assertion(.notWordBoundary)
            case "A": return .assertion(.textStart)
            case "z": return .assertion(.textEnd)
            default: return .assertion(.endOrFinalLineTerminator)
            }
        case "1"..."9":
            throw unsupported("backreference '\\\(c)'", at: start, because: "backreferences cannot be matched in linear time")
        case "k":
            throw unsupported("named backreference '\\k<…>'", at: start, because: "backreferences cannot be matched in linear time")
        case "p", "P":
            throw unsupported("Unicode property '\\\(c){…}'", at: start)
        case "Q":
            throw unsupported("'\\Q…\\E' inside a character class", at: start)
        case "E":
            throw unsupported("'\\E' without '\\Q'", at: start)
        case "G":
            throw unsupported("'\\G' (end of previous match)", at: start)
        case "X":
            throw unsupported("'\\X' (grapheme cluster)", at: start)
        case "R":
            throw unsupported("'\\R' (line break sequence)", at: start)
        case "h", "H":
            throw unsupported("horizontal space '\\\(c)'", at: start)
        case "N":
            throw unsupported("named character '\\N{…}'", at: start)
        case "c":
            throw unsupported("control character '\\c'", at: start)
        default:
            if c.isASCII, c.value >= 0x20, c.value < 0x7F, !c.properties.isAlphabetic, !(c.value >= 0x30 && c.value <= 0x39) {
                return .scalar(c.value) // escaped ASCII punctuation or space
            }
            if c.isASCII, c.properties.isAlphabetic {
                throw unsupported("unknown escape '\\\(c)'", at: start)
            }
            throw unsupported(
                "escape of '\(c.escaped(asASCII: true))'", at: start,
                because: "only ASCII punctuation and space may be escaped")
        }
    }

    /// `\0` then one to three octal digits, at most `\0377`, as ICU reads them.
    private mutating func parseOctal(escapeStart: Int) throws(LinearRegexError) -> UInt32 {
        var value: UInt32 = 0
        var digits = 0
        while digits < 3, let c = peek(), c.value >= 0x30, c.value <= 0x37 {
            let next = value * 8 + (c.value - 0x30)
            if next > 0o377 { break }
            value = next
            digits += 1
            index += 1
        }
        guard digits > 0 else { throw fail("'\\0' needs octal digits", at: escapeStart) }
        return value
    }

    /// `\xhh` (one or two hex digits) or `\x{h…}` (one to six).
    private mutating func parseHexEscape(escapeStart: Int) throws(LinearRegexError) -> UInt32 {
        if peek() == "{" {
            index += 1
            var value: UInt32 = 0
            var digits = 0
            while let c = peek(), let d = Self.hexValue(c) {
                digits += 1
                guard digits <= 6 else { throw fail("'\\x{…}' with more than six hex digits", at: escapeStart) }
                value = value * 16 + d
                index += 1
            }
            guard digits > 0, peek() == "}" else { throw fail("malformed '\\x{…}' escape", at: escapeStart) }
            index += 1
            return try checkedCodePoint(value, escapeStart: escapeStart)
        }
        var value: UInt32 = 0
        var digits = 0
        while digits < 2, let c = peek(), let d = Self.hexValue(c) {
            value = value * 16 + d
            digits += 1
            index += 1
        }
        guard digits > 0 else { throw fail("'\\x' needs hex digits", at: escapeStart) }
        return value
    }

    /// Exactly `digits` hex digits (for `\u` and `\U`).
    private mutating func parseFixedHex(digits: Int, escapeStart: Int, name: String) throws(LinearRegexError) -> UInt32 {
        var value: UInt32 = 0
        for _ in 0..<digits {
            guard let c = peek(), let d = Self.hexValue(c) else {
                throw fail("'\(name)' needs exactly \(digits) hex digits", at: escapeStart)
            }
            value = value &* 16 &+ d
            index += 1
        }
        return try checkedCodePoint(value, escapeStart: escapeStart)
    }

    /// `value` when it is a Unicode scalar; surrogates are refused (ICU would pair them up).
    private func checkedCodePoint(_ value: UInt32, escapeStart: Int) throws(LinearRegexError) -> UInt32 {
        if value >= 0xD800, value <= 0xDFFF {
            throw unsupported("surrogate code point escape", at: escapeStart, because: "write the character itself")
        }
        guard value <= 0x10FFFF else { throw fail("code point escape above U+10FFFF", at: escapeStart) }
        return value
    }

    /// The value of a hex digit.
    private static func hexValue(_ c: Unicode.Scalar) -> UInt32? {
        switch c.value {
        case 0x30...0x39: return c.value - 0x30
        case 0x41...0x46: return c.value - 0x41 + 10
        case 0x61...0x66: return c.value - 0x61 + 10
        default: return nil
        }
    }
}

// MARK: - Program

/// One instruction of the automaton.
enum LinearRegexInstruction: Sendable {
    /// Consume this scalar.
    case scalar(UInt32)
    /// Consume any scalar but a line terminator.
    case anyButLineTerminator
    /// Consume a scalar of the class at this index.
    case charClass(Int32)
    /// Continue at both targets.
    case split(Int32, Int32)
    /// Continue at the target.
    case jump(Int32)
    /// Continue with the next instruction when the assertion holds here.
    case assertion(LinearRegexAssertion)
    /// A match.
    case match
}

/// Compiles a tree into a ``LinearRegexProgram``, within ``LinearRegex/maxInstructions``.
struct LinearRegexBuilder {
    /// The instructions emitted so far.
    private var code: [LinearRegexInstruction] = []

    /// The program for `tree`.
    static func build(_ parsed: LinearRegexNode, classes: [LinearRegexCharClass]) throws(LinearRegexError) -> LinearRegexProgram {
        let tree = parsed.folded
        let size = try instructionCount(tree) + 1
        var builder = LinearRegexBuilder()
        builder.code.reserveCapacity(size)
        builder.emit(tree)
        builder.code.append(.match)
        return LinearRegexProgram(code: builder.code, classes: classes)
    }

    /// The error for a program over the limit, naming the repetition that made it so.
    private static func tooLarge(_ position: Int?) -> LinearRegexError {
        let whereText = position.map { " (at the repetition at position \($0))" } ?? ""
        return LinearRegexError(
            message: "pattern compiles to more than the limit of \(LinearRegex.maxInstructions) instructions\(whereText)")
    }

    /// How many instructions `node` emits; throws past the limit.
    private static func instructionCount(_ node: LinearRegexNode) throws(LinearRegexError) -> Int {
        let limit = LinearRegex.maxInstructions
        switch node {
        case .empty: return 0
        case .scalar, .anyButLineTerminator, .charClass, .assertion: return 1
        case .concatenation(let items):
            var total = 0
            for item in items {
                total += try instructionCount(item)
                if total > limit { throw tooLarge(nil) }
            }
            return total
        case .alternation(let branches):
            var total = 0
            for branch in branches {
                total += try instructionCount(branch) + 2
                if total > limit { throw tooLarge(nil) }
            }
            return total - 2
        case .repetition(let body, let min, let max, let position):
            // A folded body emits at least one instruction; counting it as one at least keeps
            // the work of emitting any tree within the limit even if one did not.
            let s = Swift.max(try instructionCount(body), 1)
            let total: Int
            if let max {
                total = min * s + (max - min) * (s + 1)
            } else {
                total = min == 0 ? s + 2 : min * s + 1
            }
            if total > limit { throw tooLarge(position) }
            return total
        }
    }

    /// Appends `instruction`, returning its index.
    @discardableResult
    private mutating func append(_ instruction: LinearRegexInstruction) -> Int32 {
        code.append(instruction)
        return Int32(code.count - 1)
    }

    /// The index the next instruction will have.
    private var here: Int32 { Int32(code.count) }

    /// Emits `node`.
    private mutating func emit(_ node: LinearRegexNode) {
        switch node {
        case .empty:
            break
        case .scalar(let v):
            append(.scalar(v))
        case .anyButLineTerminator:
            append(.anyButLineTerminator)
        case .charClass(let i):
            append(.charClass(Int32(i)))
        case .assertion(let a):
            append(.assertion(a))
        case .concatenation(let items):
            for item in items { emit(item) }
        case .alternation(let branches):
            // split L1, next; L1: branch; jump end; next: split L2, next'; … last branch; end:
            var jumps = [Int32]()
            for (i, branch) in branches.enumerated() {
                if i < branches.count - 1 {
                    let split = append(.split(0, 0))
                    emit(branch)
                    jumps.append(append(.jump(0)))
                    code[Int(split)] = .split(split + 1, here)
                } else {
                    emit(branch)
                }
            }
            for j in jumps { code[Int(j)] = .jump(here) }
        case .repetition(let body, let min, let max, _):
            emitRepetition(body, min: min, max: max)
        }
    }

    /// Emits `body{min,max}`: `min` copies, then either a loop or `max - min` optional copies.
    private mutating func emitRepetition(_ body: LinearRegexNode, min: Int, max: Int?) {
        guard let max else {
            if min == 0 {
                // loop: split body, end; body; jump loop; end:
                let loop = append(.split(0, 0))
                emit(body)
                append(.jump(loop))
                code[Int(loop)] = .split(loop + 1, here)
            } else {
                for _ in 0..<(min - 1) { emit(body) }
                // last: body; split last, end
                let last = here
                emit(body)
                let split = append(.split(0, 0))
                code[Int(split)] = .split(last, split + 1)
            }
            return
        }
        for _ in 0..<min { emit(body) }
        guard max > min else { return }
        var splits = [Int32]()
        for _ in 0..<(max - min) {
            splits.append(append(.split(0, 0)))
            emit(body)
        }
        for s in splits { code[Int(s)] = .split(s + 1, here) }
    }
}

/// A compiled automaton and its simulation.
struct LinearRegexProgram: Sendable {
    /// The instructions; index 0 is the start, and the last is `match`.
    let code: [LinearRegexInstruction]
    /// The classes `charClass` instructions refer to.
    let classes: [LinearRegexCharClass]
    /// Whether every match must start at the text's start (the program begins with `^` or `\A`).
    let anchoredAtStart: Bool
    /// Whether any instruction tests a word boundary (so the simulation tracks word characters).
    let usesWordBoundaries: Bool
    /// The scalar every match starts with, when the program starts by consuming one literal
    /// scalar and tests no word boundary (lets the simulation skip to candidate starts).
    let firstScalar: UInt32?

    /// A program over `code` and `classes`.
    init(code: [LinearRegexInstruction], classes: [LinearRegexCharClass]) {
        self.code = code
        self.classes = classes
        if case .assertion(.textStart)? = code.first { anchoredAtStart = true } else { anchoredAtStart = false }
        usesWordBoundaries = code.contains {
            if case .assertion(.wordBoundary) = $0 { return true }
            if case .assertion(.notWordBoundary) = $0 { return true }
            return false
        }
        if case .scalar(let v)? = code.first, !usesWordBoundaries { firstScalar = v } else { firstScalar = nil }
    }

    /// Whether some substring of `text` matches: a Thompson simulation, one state set per position.
    /// When `cancellation` is set during the run, it stops within
    /// ``LinearRegex/cancellationPollSteps`` steps and answers false.
    func run(_ text: [Unicode.Scalar], cancellation: MatchCancellation? = nil) -> Bool {
        var simulation = Simulation(program: self, text: text, cancellation: cancellation)
        return simulation.run()
    }
}

/// The mutable state of one run of a ``LinearRegexProgram`` over a text.
private struct Simulation {
    /// The program.
    let program: LinearRegexProgram
    /// The text.
    let text: [Unicode.Scalar]
    /// For each instruction, the generation (position + 1) at which it was last added to a set.
    var marks: [Int]
    /// The work stack of the closure.
    var stack: [Int32] = []
    /// Whether the last scalar before the current position that `\b` does not look through is a word character.
    var previousIsWord = false
    /// The search's cancellation flag, polled every ``LinearRegex/cancellationPollSteps`` steps.
    let cancellation: MatchCancellation?

    /// A fresh run.
    init(program: LinearRegexProgram, text: [Unicode.Scalar], cancellation: MatchCancellation?) {
        self.program = program
        self.text = text
        self.cancellation = cancellation
        marks = Array(repeating: 0, count: program.code.count)
    }

    /// Runs over the whole text; true as soon as the match instruction is reached.
    mutating func run() -> Bool {
        let n = text.count
        // The consuming instructions alive at the current position, and at the next.
        var current = [Int32]()
        var next = [Int32]()
        current.reserveCapacity(program.code.count)
        next.reserveCapacity(program.code.count)
        var position = 0
        // Steps (live states examined) since the cancellation flag was last read.
        var steps = 0
        while true {
            if let cancellation {
                steps += current.count + 1
                if steps >= LinearRegex.cancellationPollSteps {
                    steps = 0
                    if cancellation.poll() { return false }
                }
            }
            if current.isEmpty, let first = program.firstScalar {
                // Nothing alive and every match starts with `first`: skip to its next occurrence.
                while position < n, text[position].value != first { position += 1 }
            }
            // A match may start here: add the start state to this position's set.
            if addClosure(of: 0, at: position, into: &current) { return true }
            if position == n { return false }
            if current.isEmpty, program.anchoredAtStart { return false }
            let c = text[position]
            if program.usesWordBoundaries, !ICURegexCharacters.isTransparentToBoundary(c) {
                previousIsWord = ICURegexCharacters.isWord(c) // as seen from position + 1
            }
            next.removeAll(keepingCapacity: true)
            for pc in current where consumes(pc, c) {
                if addClosure(of: pc + 1, at: position + 1, into: &next) { return true }
            }
            swap(&current, &next)
            position += 1
        }
    }

    /// Whether the consuming instruction `pc` accepts `c`.
    func consumes(_ pc: Int32, _ c: Unicode.Scalar) -> Bool {
        switch program.code[Int(pc)] {
        case .scalar(let v): return c.value == v
        case .anyButLineTerminator: return !ICURegexCharacters.isLineTerminator(c)
        case .charClass(let i): return program.classes[Int(i)].contains(c)
        case .split, .jump, .assertion, .match: return false
        }
    }

    /// Adds every consuming instruction reachable from `start` at `position` without consuming
    /// to `list`, each once per position; true when `match` is reachable.
    mutating func addClosure(of start: Int32, at position: Int, into list: inout [Int32]) -> Bool {
        let generation = position + 1
        stack.append(start)
        while let pc = stack.popLast() {
            let i = Int(pc)
            if marks[i] == generation { continue }
            marks[i] = generation
            switch program.code[i] {
            case .scalar, .anyButLineTerminator, .charClass:
                list.append(pc)
            case .split(let a, let b):
                stack.append(b)
                stack.append(a)
            case .jump(let target):
                stack.append(target)
            case .assertion(let a):
                if holds(a, at: position) { stack.append(pc + 1) }
            case .match:
                stack.removeAll(keepingCapacity: true)
                return true
            }
        }
        return false
    }

    /// Whether assertion `a` holds at `position` (between `text[position - 1]` and `text[position]`).
    func holds(_ a: LinearRegexAssertion, at position: Int) -> Bool {
        let n = text.count
        switch a {
        case .textStart:
            return position == 0
        case .textEnd:
            return position == n
        case .endOrFinalLineTerminator:
            // ICU's `$` without multi-line mode: at the end, before a final line terminator that
            // is not the LF of a CR LF, or before a final CR LF.
            if position == n { return true }
            let c = text[position]
            if position == n - 1 {
                guard ICURegexCharacters.isLineTerminator(c) else { return false }
                return !(c == "\n" && position > 0 && text[position - 1] == "\r")
            }
            return position == n - 2 && c == "\r" && text[position + 1] == "\n"
        case .wordBoundary:
            return isWordBoundary(at: position)
        case .notWordBoundary:
            return !isWordBoundary(at: position)
        }
    }

    /// ICU's `\b`: never before a Grapheme_Extend or Cf scalar; otherwise whether the scalar here and
    /// the last one before that `\b` does not look through differ in being word characters.
    func isWordBoundary(at position: Int) -> Bool {
        var hereIsWord = false
        if position < text.count {
            let c = text[position]
            if ICURegexCharacters.isTransparentToBoundary(c) { return false }
            hereIsWord = ICURegexCharacters.isWord(c)
        }
        return hereIsWord != previousIsWord
    }
}
