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
        case let .string(s): return [s]
        case let .list(l): return l
        }
    }

    var json: JSONValue {
        switch self {
        case let .string(s): return .string(s)
        case let .list(l): return .array(l.map(JSONValue.string))
        }
    }
}

/// A record's tags. Names starting with `~` are plaintext tags (their values are stored
/// readable so range, `$like` and `$regex` run inside SQLite); all others are encrypted.
public struct WalletTags: Sendable, Hashable, ExpressibleByDictionaryLiteral, Sequence {
    /// The tags by name. An empty list means the tag is absent and is dropped.
    public private(set) var storage: [String: TagValue]

    /// Tags from a dictionary literal.
    public init(dictionaryLiteral elements: (String, TagValue)...) {
        var s = [String: TagValue]()
        for (k, v) in elements { s[k] = v }
        storage = s
    }

    /// Tags from a dictionary.
    public init(_ tags: [String: TagValue] = [:]) { storage = tags }

    /// Parses the JSON form `{"name": "value", "multi": ["a", "b"]}`.
    /// - Throws: ``WalletError/invalidInput(_:)`` naming the tag whose value is not a string
    ///   or list of strings, an empty name, or broken JSON.
    public init(json: String) throws(WalletError) {
        let value: JSONValue
        do { value = try JSONValue.parse(json) } catch { throw .invalidInput("tags: \(error.message)") }
        try self.init(jsonValue: value)
    }

    init(jsonValue: JSONValue) throws(WalletError) {
        guard case let .object(members) = jsonValue else {
            throw .invalidInput("tags must be a JSON object of tag name → string or list of strings, got \(jsonValue.kindName)")
        }
        var s = [String: TagValue]()
        for (name, v) in members {
            switch v {
            case let .string(x): s[name] = .string(x)
            case let .array(items):
                var list = [String]()
                for item in items {
                    guard case let .string(x) = item else {
                        throw .invalidInput("tag \(WalletError.quote(name)): a list may hold only strings, found \(item.kindName)")
                    }
                    list.append(x)
                }
                s[name] = .list(list)
            default:
                throw .invalidInput("tag \(WalletError.quote(name)): value must be a string or a list of strings, got \(v.kindName)")
            }
        }
        storage = s
        try validate()
    }

    /// Checks the tag rules: no empty names, names and values within size limits.
    public func validate() throws(WalletError) {
        for (name, value) in storage {
            if name.isEmpty { throw .invalidInput("tag name must not be empty") }
            if name.utf8.count > WalletLimits.maxTagNameBytes {
                throw .invalidInput("tag name \(WalletError.quote(String(name.prefix(32))))… is longer than \(WalletLimits.maxTagNameBytes) bytes")
            }
            for v in value.values where v.utf8.count > WalletLimits.maxTagValueBytes {
                throw .invalidInput("tag \(WalletError.quote(name)) has a value longer than \(WalletLimits.maxTagValueBytes) bytes")
            }
        }
    }

    /// The value of tag `name`, if present.
    public subscript(name: String) -> TagValue? {
        get { storage[name] }
        set { storage[name] = newValue }
    }

    /// Tag names, sorted.
    public var names: [String] { storage.keys.sorted() }

    /// Whether there are no tags.
    public var isEmpty: Bool { storage.isEmpty }

    /// Number of tags.
    public var count: Int { storage.count }

    /// Iterates `(name, value)` pairs in name order.
    public func makeIterator() -> IndexingIterator<[(key: String, value: TagValue)]> {
        storage.sorted { $0.key < $1.key }.makeIterator()
    }

    /// Tags whose value holds at least one string (empty lists dropped).
    var effective: [(String, TagValue)] {
        storage.filter { !$0.value.values.isEmpty }.sorted { $0.key < $1.key }
    }

    /// The JSON object form, names sorted.
    public var jsonValue: JSONValue { .object(effective.map { ($0.0, $0.1.json) }) }

    /// The JSON text form, names sorted.
    public var json: String { jsonValue.jsonText }

    /// Whether a name marks a plaintext tag.
    public static func isPlaintext(_ name: String) -> Bool { name.hasPrefix("~") }
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
