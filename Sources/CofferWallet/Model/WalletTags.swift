// Record tags: name → one string or a list of strings, validated as WQL.md says.

import Foundation

/// The value of one tag: a single string, or a list of strings (a multi-valued tag).
public enum TagValue: Sendable, Hashable, ExpressibleByStringLiteral, ExpressibleByArrayLiteral {
    /// One value.
    case string(String)
    /// Several values; each one matches queries on its own.
    case list([String])

    /// A single value.
    public init(stringLiteral value: String) { self = .string(value) }
    /// A multi-valued tag.
    public init(arrayLiteral elements: String...) { self = .list(elements) }

    /// Every value of the tag.
    public var values: [String] {
        switch self {
        case .string(let s): return [s]
        case .list(let l): return l
        }
    }

    var json: JSONValue {
        switch self {
        case .string(let s): return .string(s)
        case .list(let l): return .array(l.map(JSONValue.string))
        }
    }
}

/// A string compared and hashed by its UTF-8 bytes, not by Unicode canonical equivalence:
/// blind indexes hash bytes, so "é" and "e\u{301}" must stay two different names here too.
struct ByteString: Hashable, Sendable, Comparable {
    let string: String

    init(_ string: String) { self.string = string }

    static func == (a: ByteString, b: ByteString) -> Bool {
        // Native strings lend their UTF-8 bytes directly: compare them with memcmp.
        let fast = a.string.utf8.withContiguousStorageIfAvailable { x in
            b.string.utf8.withContiguousStorageIfAvailable { y in
                x.count == y.count && (x.isEmpty || memcmp(x.baseAddress!, y.baseAddress!, x.count) == 0)
            }
        }
        if let fast, let fast { return fast }
        return a.string.utf8.elementsEqual(b.string.utf8)
    }

    func hash(into hasher: inout Hasher) {
        var s = string
        s.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
    }

    static func < (a: ByteString, b: ByteString) -> Bool {
        let fast = a.string.utf8.withContiguousStorageIfAvailable { x in
            b.string.utf8.withContiguousStorageIfAvailable { y in
                let common = min(x.count, y.count)
                let order = common == 0 ? 0 : memcmp(x.baseAddress!, y.baseAddress!, common)
                return order != 0 ? order < 0 : x.count < y.count
            }
        }
        if let fast, let fast { return fast }
        return a.string.utf8.lexicographicallyPrecedes(b.string.utf8)
    }
}

/// A record's tags. Names starting with `~` are plaintext tags (their values are stored
/// readable so range, `$like` and `$regex` run inside SQLite); all others are encrypted.
///
/// Names are told apart by their UTF-8 bytes, as the store does: two spellings of one accented
/// letter are two tags.
public struct WalletTags: Sendable, Hashable, ExpressibleByDictionaryLiteral, Sequence {
    /// The tags by name (byte-exact). An empty list means the tag is absent and is dropped.
    var entries: [ByteString: TagValue]

    /// Tags from a dictionary literal; a later duplicate name replaces an earlier one.
    public init(dictionaryLiteral elements: (String, TagValue)...) {
        var s = [ByteString: TagValue]()
        for (k, v) in elements { s[ByteString(k)] = v }
        entries = s
    }

    /// Tags from a dictionary.
    public init(_ tags: [String: TagValue] = [:]) {
        var s = [ByteString: TagValue]()
        for (k, v) in tags { s[ByteString(k)] = v }
        entries = s
    }

    init(entries: [ByteString: TagValue]) { self.entries = entries }

    /// Parses the JSON form `{"name": "value", "multi": ["a", "b"]}`.
    /// - Throws: ``WalletError/invalidInput(_:)`` naming the tag whose value is not a string
    ///   or list of strings, an empty name, or broken JSON.
    public init(json: String) throws(WalletError) {
        let value: JSONValue
        do { value = try JSONValue.parse(json) } catch { throw .invalidInput("tags: \(error.message)") }
        try self.init(jsonValue: value)
    }

    init(jsonValue: JSONValue) throws(WalletError) {
        guard case .object(let members) = jsonValue else {
            throw .invalidInput("tags must be a JSON object of tag name → string or list of strings, got \(jsonValue.kindName)")
        }
        var s = [ByteString: TagValue]()
        for (name, v) in members {
            switch v {
            case .string(let x): s[ByteString(name)] = .string(x)
            case .array(let items):
                var list = [String]()
                for item in items {
                    guard case .string(let x) = item else {
                        throw .invalidInput("tag \(WalletError.quote(name)): a list may hold only strings, found \(item.kindName)")
                    }
                    list.append(x)
                }
                s[ByteString(name)] = .list(list)
            default:
                throw .invalidInput("tag \(WalletError.quote(name)): value must be a string or a list of strings, got \(v.kindName)")
            }
        }
        entries = s
        try validate()
    }

    /// Checks the tag rules: no empty names, names and values within size limits.
    public func validate() throws(WalletError) {
        for (key, value) in entries {
            let name = key.string
            if name.isEmpty { throw .invalidInput("tag name must not be empty") }
            if name.utf8.count > WalletLimits.maxTagNameBytes {
                throw .invalidInput(
                    "tag name \(WalletError.quote(String(name.prefix(32))))… is longer than \(WalletLimits.maxTagNameBytes) bytes")
            }
            // Matched on the case: `values` would allocate an array for every single value, and
            // every add and replace checks its tags on the writer.
            switch value {
            case .string(let v):
                if v.utf8.count > WalletLimits.maxTagValueBytes { throw Self.valueTooLong(name) }
            case .list(let list):
                for v in list where v.utf8.count > WalletLimits.maxTagValueBytes { throw Self.valueTooLong(name) }
            }
        }
    }

    private static func valueTooLong(_ name: String) -> WalletError {
        .invalidInput("tag \(WalletError.quote(name)) has a value longer than \(WalletLimits.maxTagValueBytes) bytes")
    }

    /// The value of tag `name` (matched byte for byte), if present.
    public subscript(name: String) -> TagValue? {
        get { entries[ByteString(name)] }
        set { entries[ByteString(name)] = newValue }
    }

    /// Tag names, in byte order.
    public var names: [String] { entries.keys.sorted().map(\.string) }

    /// The tags as a dictionary. Names that differ only in Unicode normalisation collapse here
    /// (Swift compares strings by canonical equivalence); iterate the tags to see every one.
    public var dictionary: [String: TagValue] {
        var out = [String: TagValue]()
        for (k, v) in entries { out[k.string] = v }
        return out
    }

    /// Whether there are no tags.
    public var isEmpty: Bool { entries.isEmpty }

    /// Number of tags.
    public var count: Int { entries.count }

    /// Iterates `(name, value)` pairs in byte order of the names.
    public func makeIterator() -> IndexingIterator<[(key: String, value: TagValue)]> {
        entries.sorted { $0.key < $1.key }.map { (key: $0.key.string, value: $0.value) }.makeIterator()
    }

    /// Tags whose value holds at least one string (empty lists dropped), in byte order.
    var effective: [(String, TagValue)] {
        var out = [(ByteString, TagValue)]()
        out.reserveCapacity(entries.count)
        for (name, value) in entries {
            if case .list(let list) = value, list.isEmpty { continue }
            out.append((name, value))
        }
        out.sort { $0.0 < $1.0 }
        return out.map { ($0.0.string, $0.1) }
    }

    /// The JSON object form, names in byte order.
    public var jsonValue: JSONValue { .object(effective.map { ($0.0, $0.1.json) }) }

    /// The JSON text form, names in byte order.
    public var json: String { jsonValue.jsonText }

    /// Whether a name marks a plaintext tag.
    public static func isPlaintext(_ name: String) -> Bool { name.utf8.first == UInt8(ascii: "~") }
}

/// Size limits every entry point checks, so one bad call cannot bloat the store.
public enum WalletLimits {
    /// Longest record type, in UTF-8 bytes.
    public static let maxTypeBytes = 1024
    /// Longest record id, in UTF-8 bytes.
    public static let maxIdBytes = 4096
    /// Largest record value, in UTF-8 bytes (16 MiB).
    public static let maxValueBytes = 16 << 20
    /// Longest tag name, in UTF-8 bytes.
    public static let maxTagNameBytes = 1024
    /// Longest tag value, in UTF-8 bytes.
    public static let maxTagValueBytes = 64 * 1024
}
