// WQL as a syntax tree: parsing (design/WQL.md, exactly) and the per-record meaning.

import CofferSync
import Foundation

/// A WQL query over one record type's tags, parsed and validated.
///
/// Build one from JSON text with ``init(json:)``; ``all`` matches every record.
/// The grammar and meaning are those of `design/WQL.md`.
public struct WalletQuery: Sendable, CustomStringConvertible {
    let root: WQLNode

    /// Every record of the type.
    public static let all = WalletQuery(root: .all)

    init(root: WQLNode) { self.root = root.simplified }

    /// Parses a JSON query.
    /// - Throws: ``WalletError/invalidQuery(_:)`` naming the offending part; a query never half-runs.
    public init(json: String) throws(WalletError) {
        let value: JSONValue
        do { value = try JSONValue.parse(json) } catch { throw .invalidQuery(error.message) }
        self.init(root: try WQLParser.parseTop(value))
    }

    /// Parses an already-decoded JSON value.
    public init(jsonValue: JSONValue) throws(WalletError) {
        self.init(root: try WQLParser.parseTop(jsonValue))
    }

    /// Whether a record with these tags matches.
    public func matches(_ tags: WalletTags) -> Bool {
        root.matches(tags.entries)
    }

    /// A canonical text form, for logs of query shape (holds operands: do not log it for secret data).
    public var description: String { "\(root)" }
}

/// A comparison operand: a JSON string or a JSON number.
enum WQLOperand: Sendable, Equatable, CustomStringConvertible {
    case string(String)
    case number(Double, literal: String)

    var description: String {
        switch self {
        case .string(let s): return WalletError.quote(s)
        case .number(_, let literal): return literal
        }
    }
}

/// The operands of a `$in`, with sets for the in-memory check: a list of 100,000 values costs
/// one hash lookup per tag value, not 100,000 comparisons.
struct WQLValueSet: Sendable, RandomAccessCollection {
    let operands: [WQLOperand]
    private let strings: Set<ByteString>
    private let numbers: Set<Double>

    init(_ operands: [WQLOperand]) {
        self.operands = operands
        var strings = Set<ByteString>()
        var numbers = Set<Double>()
        for operand in operands {
            switch operand {
            case .string(let s): strings.insert(ByteString(s))
            case .number(let x, _): numbers.insert(x)
            }
        }
        self.strings = strings
        self.numbers = numbers
    }

    var startIndex: Int { operands.startIndex }
    var endIndex: Int { operands.endIndex }
    subscript(position: Int) -> WQLOperand { operands[position] }

    /// Whether `value` equals one operand (``WQLNode/equals(_:_:)`` for each, by lookup).
    func containsEqual(to value: String) -> Bool {
        if strings.contains(ByteString(value)) { return true }
        guard !numbers.isEmpty, let x = NumericTag.parse(value) else { return false }
        return numbers.contains(x)
    }
}

enum WQLCompare: String, Sendable {
    case eq = "$eq"
    case neq = "$neq"
    case gt = "$gt"
    case gte = "$gte"
    case lt = "$lt"
    case lte = "$lte"
}

indirect enum WQLNode: Sendable, CustomStringConvertible {
    case all
    case none
    case and([WQLNode])
    case or([WQLNode])
    case not(WQLNode)
    case exist([String])
    case compare(tag: String, WQLCompare, WQLOperand)
    case isIn(tag: String, WQLValueSet)
    case like(tag: String, String)
    case regex(tag: String, String)

    var description: String {
        switch self {
        case .all: return "true"
        case .none: return "false"
        case .and(let c): return "and(" + c.map(\.description).joined(separator: ", ") + ")"
        case .or(let c): return "or(" + c.map(\.description).joined(separator: ", ") + ")"
        case .not(let c): return "not(\(c))"
        case .exist(let n): return "exist(" + n.map(WalletError.quote).joined(separator: ", ") + ")"
        case .compare(let tag, let op, let v): return "\(WalletError.quote(tag)) \(op.rawValue) \(v)"
        case .isIn(let tag, let vs): return "\(WalletError.quote(tag)) $in [" + vs.map(\.description).joined(separator: ", ") + "]"
        case .like(let tag, let p): return "\(WalletError.quote(tag)) $like \(WalletError.quote(p))"
        case .regex(let tag, let p): return "\(WalletError.quote(tag)) $regex \(WalletError.quote(p))"
        }
    }

    /// Folds constants and flattens nested and/or, keeping the meaning.
    var simplified: WQLNode {
        switch self {
        case .and(let children):
            var out = [WQLNode]()
            for c in children.map(\.simplified) {
                switch c {
                case .all: continue
                case .none: return .none
                case .and(let inner): out.append(contentsOf: inner)
                default: out.append(c)
                }
            }
            if out.isEmpty { return .all }
            return out.count == 1 ? out[0] : .and(out)
        case .or(let children):
            var out = [WQLNode]()
            for c in children.map(\.simplified) {
                switch c {
                case .none: continue
                case .all: return .all
                case .or(let inner): out.append(contentsOf: inner)
                default: out.append(c)
                }
            }
            if out.isEmpty { return .none }
            if out.count == 1 { return out[0] }
            // Equalities on one tag, or'ed: one $in (one index probe with a bound list, and a
            // set lookup in memory, however many there are). Same meaning: any value equals one.
            if case .compare(let tag, .eq, _) = out[0],
                let operands = Optional(
                    out.compactMap({ c -> WQLOperand? in
                        if case .compare(let t, .eq, let v) = c, t == tag { return v } else { return nil }
                    })), operands.count == out.count
            {
                return .isIn(tag: tag, WQLValueSet(operands))
            }
            return .or(out)
        case .not(let child):
            switch child.simplified {
            case .all: return .none
            case .none: return .all
            case .not(let inner): return inner
            case let c: return .not(c)
            }
        case .exist(let names):
            return names.isEmpty ? .all : self
        case .isIn(_, let values):
            return values.isEmpty ? .none : self
        default:
            return self
        }
    }

    // MARK: Meaning per record (WQL.md, "Meaning, per record")

    /// Whether a record with these tags matches. Works on the stored form without copying it.
    func matches(_ tags: [ByteString: TagValue]) -> Bool {
        switch self {
        case .all: return true
        case .none: return false
        case .and(let c): return c.allSatisfy { $0.matches(tags) }
        case .or(let c): return c.contains { $0.matches(tags) }
        case .not(let c): return !c.matches(tags)
        case .exist(let names): return names.allSatisfy { WQLNode.present(tags[ByteString($0)]) }
        case .compare(let tag, let op, let operand):
            let values = tags[ByteString(tag)]
            if op == .neq {
                return WQLNode.present(values) && WQLNode.any(values) { !WQLNode.equals($0, operand) }
            }
            return WQLNode.any(values) { WQLNode.compare($0, op, operand) }
        case .isIn(let tag, let operands):
            return WQLNode.any(tags[ByteString(tag)]) { operands.containsEqual(to: $0) }
        case .like(let tag, let pattern):
            let p = Array(pattern.unicodeScalars)
            return WQLNode.any(tags[ByteString(tag)]) { LikePattern.matches(Array($0.unicodeScalars), p) }
        case .regex(let tag, let pattern):
            guard let re = RegexCache.shared.regex(pattern) else { return false }
            return WQLNode.any(tags[ByteString(tag)]) { re.containsMatch($0) }
        }
    }

    @inline(__always)
    static func present(_ value: TagValue?) -> Bool {
        switch value {
        case nil: return false
        case .string?: return true
        case .list(let l)?: return !l.isEmpty
        }
    }

    @inline(__always)
    static func any(_ value: TagValue?, _ predicate: (String) -> Bool) -> Bool {
        switch value {
        case nil: return false
        case .string(let s)?: return predicate(s)
        case .list(let l)?: return l.contains(where: predicate)
        }
    }

    static func equals(_ value: String, _ operand: WQLOperand) -> Bool {
        switch operand {
        case .string(let s): return ByteString(value) == ByteString(s)
        case .number(let x, _): return NumericTag.parse(value).map { $0 == x } ?? false
        }
    }

    static func compare(_ value: String, _ op: WQLCompare, _ operand: WQLOperand) -> Bool {
        switch operand {
        case .string(let s):
            // Byte-wise comparison of UTF-8, as SQLite's BINARY collation does (memcmp for
            // native strings).
            let a = ByteString(value)
            let b = ByteString(s)
            switch op {
            case .eq: return a == b
            case .neq: return a != b
            case .gt: return b < a
            case .gte: return !(a < b)
            case .lt: return a < b
            case .lte: return !(b < a)
            }
        case .number(let x, _):
            guard let v = NumericTag.parse(value) else { return op == .neq }
            switch op {
            case .eq: return v == x
            case .neq: return v != x
            case .gt: return v > x
            case .gte: return v >= x
            case .lt: return v < x
            case .lte: return v <= x
            }
        }
    }
}

/// Reads a tag value as a number when it is written as one (`^-?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?$`).
enum NumericTag {
    static func parse(_ s: String) -> Double? {
        let b = Array(s.utf8)
        var i = 0
        func digits() -> Bool {
            let start = i
            while i < b.count, b[i] >= 0x30, b[i] <= 0x39 { i += 1 }
            return i > start
        }
        if i < b.count, b[i] == UInt8(ascii: "-") { i += 1 }
        guard digits() else { return nil }
        if i < b.count, b[i] == UInt8(ascii: ".") {
            i += 1
            guard digits() else { return nil }
        }
        if i < b.count, b[i] == UInt8(ascii: "e") || b[i] == UInt8(ascii: "E") {
            i += 1
            if i < b.count, b[i] == UInt8(ascii: "+") || b[i] == UInt8(ascii: "-") { i += 1 }
            guard digits() else { return nil }
        }
        guard i == b.count else { return nil }
        return Double(s)
    }
}

/// SQLite's LIKE, reproduced for encrypted tags: `%` any run, `_` one character, ASCII letters
/// case-insensitive, no escape character.
enum LikePattern {
    static func matches(_ text: [Unicode.Scalar], _ pattern: [Unicode.Scalar]) -> Bool {
        var t = 0
        var p = 0
        var starP = -1
        var starT = 0
        while t < text.count {
            if p < pattern.count, pattern[p] == "%" {
                starP = p
                starT = t
                p += 1
            } else if p < pattern.count, pattern[p] == "_" || fold(pattern[p]) == fold(text[t]) {
                p += 1
                t += 1
            } else if starP >= 0 {
                p = starP + 1
                starT += 1
                t = starT
            } else {
                return false
            }
        }
        while p < pattern.count, pattern[p] == "%" { p += 1 }
        return p == pattern.count
    }

    static func fold(_ c: Unicode.Scalar) -> UInt32 {
        let v = c.value
        return (v >= 0x41 && v <= 0x5A) ? v + 0x20 : v
    }
}

/// Compiled regular expressions, shared by the in-memory evaluator and the SQL function. They
/// are ``LinearRegex``: matching takes time linear in the text, so no pattern can make a search
/// run for minutes (ICU's backtracking engine takes seconds on `^(a+)+$` over 27 characters).
final class RegexCache: Sendable {
    static let shared = RegexCache()

    /// One compiled pattern.
    final class Compiled: Sendable {
        let regex: LinearRegex
        init(_ regex: LinearRegex) { self.regex = regex }
        func containsMatch(_ s: String) -> Bool { regex.containsMatch(s) }
        func containsMatch(utf8 bytes: UnsafeRawBufferPointer) -> Bool { regex.containsMatch(utf8: bytes) }
    }

    private let cache = BoundedCache<String, Compiled>(capacity: 256)

    /// The compiled pattern.
    /// - Throws: ``LinearRegexError`` naming what is not supported or malformed.
    func compile(_ pattern: String) throws(LinearRegexError) -> Compiled {
        try cache.value(for: pattern) { () throws(LinearRegexError) -> Compiled in Compiled(try LinearRegex(pattern)) }
    }

    /// The compiled pattern, or nil when it does not compile.
    func regex(_ pattern: String) -> Compiled? { try? compile(pattern) }
}

/// Turns JSON into ``WQLNode`` per the grammar of WQL.md.
enum WQLParser {
    static func parseTop(_ value: JSONValue) throws(WalletError) -> WQLNode {
        switch value {
        case .object(let members):
            return try parseObject(members, path: "query")
        case .array(let items):
            // The old "restrictions" form: OR of objects, null fields dropped; [] = all.
            if items.isEmpty { return .all }
            var branches = [WQLNode]()
            for (i, item) in items.enumerated() {
                guard case .object(let members) = item else {
                    throw .invalidQuery("restriction [\(i)] must be an object, got \(item.kindName)")
                }
                let kept = members.filter { if case .null = $0.1 { return false } else { return true } }
                branches.append(try parseObject(kept, path: "restriction [\(i)]"))
            }
            return .or(branches)
        default:
            throw .invalidQuery("a query must be a JSON object or an array of objects, got \(value.kindName)")
        }
    }

    static func parseObject(_ members: [(String, JSONValue)], path: String) throws(WalletError) -> WQLNode {
        var clauses = [WQLNode]()
        for (key, value) in members {
            clauses.append(try parseClause(key, value, path: path))
        }
        return .and(clauses)
    }

    static func parseClause(_ key: String, _ value: JSONValue, path: String) throws(WalletError) -> WQLNode {
        switch key {
        case "$and":
            guard case .array(let items) = value else {
                throw .invalidQuery("\(path): $and must be an array of objects, got \(value.kindName)")
            }
            var out = [WQLNode]()
            for (i, item) in items.enumerated() {
                guard case .object(let m) = item else {
                    throw .invalidQuery("\(path): $and[\(i)] must be an object, got \(item.kindName)")
                }
                out.append(try parseObject(m, path: "\(path).$and[\(i)]"))
            }
            return .and(out)
        case "$or":
            switch value {
            case .array(let items):
                var out = [WQLNode]()
                for (i, item) in items.enumerated() {
                    guard case .object(let m) = item else {
                        throw .invalidQuery("\(path): $or[\(i)] must be an object, got \(item.kindName)")
                    }
                    out.append(try parseObject(m, path: "\(path).$or[\(i)]"))
                }
                return .or(out)
            case .object(let pairs):
                // The Mobile SDK form: the object's key/clause pairs are ORed.
                var out = [WQLNode]()
                for (k, v) in pairs { out.append(try parseClause(k, v, path: "\(path).$or")) }
                return .or(out)
            default:
                throw .invalidQuery("\(path): $or must be an array of objects or an object, got \(value.kindName)")
            }
        case "$not":
            guard case .object(let m) = value else {
                throw .invalidQuery("\(path): $not must be an object, got \(value.kindName)")
            }
            return .not(try parseObject(m, path: "\(path).$not"))
        case "$exist":
            switch value {
            case .string(let name):
                return .exist([name])
            case .array(let items):
                var names = [String]()
                for item in items {
                    guard case .string(let name) = item else {
                        throw .invalidQuery(
                            "\(path): $exist must be a tag name or an array of tag names, found \(item.kindName) in the array")
                    }
                    names.append(name)
                }
                return .exist(names)
            default:
                throw .invalidQuery("\(path): $exist must be a tag name or an array of tag names, got \(value.kindName)")
            }
        default:
            return try parseTagClause(tag: key, value, path: path)
        }
    }

    static func parseTagClause(tag: String, _ value: JSONValue, path: String) throws(WalletError) -> WQLNode {
        let at = "\(path): tag \(WalletError.quote(tag))"
        switch value {
        case .string, .number:
            return .compare(tag: tag, .eq, try scalar(value, at: at))
        case .object(let ops):
            if ops.isEmpty { throw .invalidQuery("\(at): an operator object needs at least one operator") }
            var out = [WQLNode]()
            for (op, operand) in ops {
                out.append(try parseOperator(tag: tag, op, operand, at: at))
            }
            return .and(out)
        default:
            throw .invalidQuery("\(at): value must be a string, a number or an operator object, got \(value.kindName)")
        }
    }

    /// The longest `$like` pattern, in bytes of UTF-8: SQLite refuses longer ones
    /// (`SQLITE_MAX_LIKE_PATTERN_LENGTH`), so a longer pattern is refused here as an invalid
    /// query, on every tag, instead of failing inside SQLite.
    static let maxLikePatternBytes = 50_000

    static func parseOperator(tag: String, _ op: String, _ operand: JSONValue, at: String) throws(WalletError) -> WQLNode {
        if let cmp = WQLCompare(rawValue: op) {
            return .compare(tag: tag, cmp, try scalar(operand, at: "\(at) \(op)"))
        }
        switch op {
        case "$in":
            guard case .array(let items) = operand else {
                throw .invalidQuery("\(at) $in must be an array of strings or numbers, got \(operand.kindName)")
            }
            var values = [WQLOperand]()
            values.reserveCapacity(items.count)
            for item in items { values.append(try scalar(item, at: "\(at) $in")) }
            return .isIn(tag: tag, WQLValueSet(values))
        case "$like":
            guard case .string(let p) = operand else {
                throw .invalidQuery("\(at) $like must be a string pattern, got \(operand.kindName)")
            }
            guard p.utf8.count <= maxLikePatternBytes else {
                throw .invalidQuery(
                    "\(at) $like pattern is \(p.utf8.count) bytes of UTF-8; at most \(maxLikePatternBytes) are allowed (SQLite's limit for LIKE patterns)"
                )
            }
            return .like(tag: tag, p)
        case "$regex":
            guard case .string(let p) = operand else {
                throw .invalidQuery("\(at) $regex must be a string pattern, got \(operand.kindName)")
            }
            do { _ = try RegexCache.shared.compile(p) } catch {
                throw .invalidQuery("\(at) $regex pattern \(WalletError.quote(p)) is not supported: \(error.message)")
            }
            return .regex(tag: tag, p)
        default:
            if op.hasPrefix("$") {
                throw .invalidQuery("\(at): unknown operator \(op) (known: $eq $neq $gt $gte $lt $lte $in $like $regex)")
            }
            throw .invalidQuery("\(at): \(WalletError.quote(op)) is not an operator; an operator object holds only $-operators")
        }
    }

    static func scalar(_ v: JSONValue, at: String) throws(WalletError) -> WQLOperand {
        switch v {
        case .string(let s): return .string(s)
        case .number(let literal):
            guard let d = Double(literal) else { throw .invalidQuery("\(at): number \(literal) is out of range") }
            return .number(d, literal: literal)
        default:
            throw .invalidQuery("\(at): operand must be a string or a number, got \(v.kindName)")
        }
    }
}
