// A record as returned to callers, and the options that choose its fields.

import Foundation

/// A record as read from the wallet. Fields not asked for are `nil`.
public struct WalletRecord: Sendable, Hashable {
    /// The record id (always present).
    public var id: String
    /// The record type, when `retrieveType` was set.
    public var type: String?
    /// The value, when `retrieveValue` was set.
    public var value: String?
    /// The tags, when `retrieveTags` was set.
    public var tags: WalletTags?

    /// A record with the given fields.
    public init(id: String, type: String? = nil, value: String? = nil, tags: WalletTags? = nil) {
        self.id = id
        self.type = type
        self.value = value
        self.tags = tags
    }

    /// The seed's JSON shape `{"id", "type"?, "value"?, "tags"?}`.
    public var jsonValue: JSONValue {
        var members: [(String, JSONValue)] = [("id", .string(id))]
        if let type { members.append(("type", .string(type))) }
        if let value { members.append(("value", .string(value))) }
        if let tags { members.append(("tags", tags.jsonValue)) }
        return .object(members)
    }

    /// ``jsonValue`` as text.
    public var json: String { jsonValue.jsonText }
}

/// Which fields a `get` returns. Defaults follow the Mobile SDK document.
public struct RecordOptions: Sendable, Hashable {
    /// Return the record type (default false).
    public var retrieveType: Bool
    /// Return the value (default true).
    public var retrieveValue: Bool
    /// Return the tags (default true).
    public var retrieveTags: Bool

    /// Options with the seed's defaults unless given.
    public init(retrieveType: Bool = false, retrieveValue: Bool = true, retrieveTags: Bool = true) {
        self.retrieveType = retrieveType
        self.retrieveValue = retrieveValue
        self.retrieveTags = retrieveTags
    }

    /// Parses `{"retrieveType": true, …}`; unknown keys or non-boolean values are an error.
    public init(json: String) throws(WalletError) {
        self.init()
        let fields = try OptionsParser.parse(json, allowed: ["retrieveType", "retrieveValue", "retrieveTags"], what: "record options")
        if let v = fields["retrieveType"] { retrieveType = v }
        if let v = fields["retrieveValue"] { retrieveValue = v }
        if let v = fields["retrieveTags"] { retrieveTags = v }
    }
}

/// Options of a search. Defaults follow the Mobile SDK document.
public struct SearchOptions: Sendable, Hashable {
    /// Return records (default true); when false only the count is computed.
    public var retrieveRecords: Bool
    /// Compute the total number of matches (default false).
    public var retrieveTotalCount: Bool
    /// Return each record's type (default false).
    public var retrieveType: Bool
    /// Return each record's value (default true).
    public var retrieveValue: Bool
    /// Return each record's tags (default true).
    public var retrieveTags: Bool

    /// Options with the seed's defaults unless given.
    public init(
        retrieveRecords: Bool = true, retrieveTotalCount: Bool = false, retrieveType: Bool = false,
        retrieveValue: Bool = true, retrieveTags: Bool = true
    ) {
        self.retrieveRecords = retrieveRecords
        self.retrieveTotalCount = retrieveTotalCount
        self.retrieveType = retrieveType
        self.retrieveValue = retrieveValue
        self.retrieveTags = retrieveTags
    }

    /// Parses `{"retrieveRecords": true, "retrieveTotalCount": false, …}`.
    public init(json: String) throws(WalletError) {
        self.init()
        let fields = try OptionsParser.parse(
            json, allowed: ["retrieveRecords", "retrieveTotalCount", "retrieveType", "retrieveValue", "retrieveTags"],
            what: "search options")
        if let v = fields["retrieveRecords"] { retrieveRecords = v }
        if let v = fields["retrieveTotalCount"] { retrieveTotalCount = v }
        if let v = fields["retrieveType"] { retrieveType = v }
        if let v = fields["retrieveValue"] { retrieveValue = v }
        if let v = fields["retrieveTags"] { retrieveTags = v }
    }

    var recordOptions: RecordOptions {
        RecordOptions(retrieveType: retrieveType, retrieveValue: retrieveValue, retrieveTags: retrieveTags)
    }
}

/// One page of a search, in the seed's shape `{totalCount?, records?: [...]}`.
public struct SearchPage: Sendable, Hashable {
    /// Total matches when `retrieveTotalCount` was set.
    public var totalCount: Int?
    /// The records of this page when `retrieveRecords` was set; empty once the search is exhausted.
    public var records: [WalletRecord]?

    /// A page.
    public init(totalCount: Int? = nil, records: [WalletRecord]? = nil) {
        self.totalCount = totalCount
        self.records = records
    }

    /// The seed's JSON object.
    public var jsonValue: JSONValue {
        var members: [(String, JSONValue)] = []
        if let totalCount { members.append(("totalCount", .number(String(totalCount)))) }
        if let records { members.append(("records", .array(records.map(\.jsonValue)))) }
        return .object(members)
    }

    /// ``jsonValue`` as text.
    public var json: String { jsonValue.jsonText }
}

enum OptionsParser {
    static func parse(_ json: String, allowed: Set<String>, what: String) throws(WalletError) -> [String: Bool] {
        let trimmed = json.trimmingCharacters(in: .whitespacesAndNewlines)
        if trimmed.isEmpty { return [:] }
        let value: JSONValue
        do { value = try JSONValue.parse(trimmed) } catch { throw .invalidInput("\(what): \(error.message)") }
        guard case .object(let members) = value else {
            throw .invalidInput("\(what) must be a JSON object, got \(value.kindName)")
        }
        var out = [String: Bool]()
        for (k, v) in members {
            guard allowed.contains(k) else {
                throw .invalidInput("\(what): unknown option \(WalletError.quote(k)); known: \(allowed.sorted().joined(separator: ", "))")
            }
            guard case .bool(let b) = v else {
                throw .invalidInput("\(what): \(k) must be true or false, got \(v.kindName)")
            }
            out[k] = b
        }
        return out
    }
}
