// Typed settings keys: declared once with a stable name, a type and a default.

import CofferSync
import Foundation
import GRDB

/// How a setting's value is stored: a kind tag and one SQLite value. Apps use the codecs this
/// type offers (``int``, ``string``, …) or the `StoreKey` initializers that choose one.
public struct SettingCodec<Value: Sendable>: Sendable {
    /// The kind written beside the value (`int`, `bool`, `string`, `double`, `date`, `data`,
    /// `enum`, `json`); a stored kind that differs from the key's is a type mismatch.
    public let kind: String
    let encode: @Sendable (Value) throws -> DatabaseValue
    @usableFromInline let decode: @Sendable (DatabaseValue) -> Value?

    /// A codec from its kind and two conversions of SQLite values (package-internal: apps pick
    /// one of the codecs below, or a `codable:` key, and never see GRDB's `DatabaseValue`).
    package init(
        kind: String, encode: @escaping @Sendable (Value) throws -> DatabaseValue,
        decode: @escaping @Sendable (DatabaseValue) -> Value?
    ) {
        self.kind = kind
        self.encode = encode
        self.decode = decode
    }
}

/// A setting: stable name (the persisted identity), value type and default.
///
///     static let themeMode = StoreKey(enum: "themeMode", default: ThemeMode.system)
///     static let tilesPerRow = StoreKey("tilesPerRow", default: 4)
///     static let currentUser = StoreKey<User?>(codable: "currentUser", default: nil)
public struct StoreKey<Value: Sendable>: Sendable {
    /// The persisted name. Renaming a key in code is fine as long as this stays.
    public let name: String
    /// What `get` returns while the key is unset.
    public let defaultValue: Value
    /// How the value is stored.
    public let codec: SettingCodec<Value>

    /// A key with an explicit codec.
    public init(_ name: String, default defaultValue: Value, codec: SettingCodec<Value>) {
        precondition(!name.isEmpty, "a setting needs a name")
        self.name = name
        self.defaultValue = defaultValue
        self.codec = codec
    }
}

extension StoreKey where Value == Int {
    /// An integer setting.
    public init(_ name: String, default defaultValue: Int) {
        self.init(
            name, default: defaultValue,
            codec: SettingCodec(kind: "int", encode: { $0.databaseValue }, decode: { Int.fromDatabaseValue($0) }))
    }
}

extension StoreKey where Value == Bool {
    /// A Boolean setting.
    public init(_ name: String, default defaultValue: Bool) {
        self.init(
            name, default: defaultValue,
            codec: SettingCodec(kind: "bool", encode: { $0.databaseValue }, decode: { Bool.fromDatabaseValue($0) }))
    }
}

extension StoreKey where Value == String {
    /// A string setting.
    public init(_ name: String, default defaultValue: String) {
        self.init(
            name, default: defaultValue,
            codec: SettingCodec(kind: "string", encode: { $0.databaseValue }, decode: { String.fromDatabaseValue($0) }))
    }
}

extension StoreKey where Value == Double {
    /// A floating-point setting.
    public init(_ name: String, default defaultValue: Double) {
        self.init(
            name, default: defaultValue,
            codec: SettingCodec(kind: "double", encode: { $0.databaseValue }, decode: { Double.fromDatabaseValue($0) }))
    }
}

extension StoreKey where Value == Date {
    /// A date setting (stored as milliseconds since 1970).
    public init(_ name: String, default defaultValue: Date) {
        self.init(
            name, default: defaultValue,
            codec: SettingCodec(
                kind: "date",
                encode: { Int64(saturating: $0.timeIntervalSince1970 * 1000, rounding: .toNearestOrAwayFromZero).databaseValue },
                decode: { Int64.fromDatabaseValue($0).map { Date(timeIntervalSince1970: Double($0) / 1000) } }))
    }
}

extension StoreKey where Value == Date? {
    /// An optional date setting, nil by default (kind `date`: milliseconds since 1970, NULL for nil).
    public init(optionalDate name: String) {
        self.init(
            name, default: nil,
            codec: SettingCodec(
                kind: "date",
                encode: {
                    $0.map { Int64(saturating: $0.timeIntervalSince1970 * 1000, rounding: .toNearestOrAwayFromZero).databaseValue } ?? .null
                },
                decode: { stored in
                    if stored.isNull { return .some(nil) }
                    return Int64.fromDatabaseValue(stored).map { Date(timeIntervalSince1970: Double($0) / 1000) }
                }))
    }
}

extension StoreKey where Value == Data {
    /// A bytes setting.
    public init(_ name: String, default defaultValue: Data) {
        self.init(
            name, default: defaultValue,
            codec: SettingCodec(kind: "data", encode: { $0.databaseValue }, decode: { Data.fromDatabaseValue($0) }))
    }
}

extension StoreKey where Value: RawRepresentable, Value.RawValue == String {
    /// An enum setting, stored by its raw value (not its position, so cases can be reordered).
    public init(enum name: String, default defaultValue: Value) {
        self.init(
            name, default: defaultValue,
            codec: SettingCodec(
                kind: "enum", encode: { $0.rawValue.databaseValue },
                decode: { String.fromDatabaseValue($0).flatMap(Value.init(rawValue:)) }))
    }
}

extension StoreKey where Value: RawRepresentable, Value.RawValue: BinaryInteger {
    /// An enum setting with integer raw values, stored by its raw value.
    public init(enum name: String, default defaultValue: Value) {
        self.init(
            name, default: defaultValue,
            codec: SettingCodec(
                kind: "enum", encode: { Int64($0.rawValue).databaseValue },
                decode: { Int64.fromDatabaseValue($0).flatMap { Value.RawValue(exactly: $0) }.flatMap(Value.init(rawValue:)) }))
    }
}

extension StoreKey where Value: Codable {
    /// Any Codable value (stored as JSON), e.g. the current user.
    public init(codable name: String, default defaultValue: Value) {
        self.init(
            name, default: defaultValue,
            codec: SettingCodec(
                kind: "json",
                encode: { value in
                    let encoder = JSONEncoder()
                    encoder.outputFormatting = [.sortedKeys]
                    encoder.dateEncodingStrategy = .millisecondsSince1970
                    return String(decoding: try encoder.encode(value), as: UTF8.self).databaseValue
                },
                decode: { stored in
                    guard let text = String.fromDatabaseValue(stored) else { return nil }
                    let decoder = JSONDecoder()
                    decoder.dateDecodingStrategy = .millisecondsSince1970
                    return try? decoder.decode(Value.self, from: Data(text.utf8))
                }))
    }
}

extension StoreKey where Value == Int64 {
    /// A 64-bit integer setting (kind `int`, as ``init(_:default:)-(_,Int)``: the two read each
    /// other's values).
    public init(_ name: String, default defaultValue: Int64) {
        self.init(name, default: defaultValue, codec: .int64)
    }
}

extension StoreKey where Value == Float {
    /// A single-precision setting (kind `double`: stored as a double, read back as the nearest
    /// `Float`).
    public init(_ name: String, default defaultValue: Float) {
        self.init(name, default: defaultValue, codec: .float)
    }
}

extension StoreKey {
    /// An optional setting, `defaultValue` (nil unless given) while unset: `nil` is stored as
    /// NULL under `codec`'s kind, any other value as `codec` stores it.
    ///
    ///     static let lastTab = StoreKey<Int?>(optional: "lastTab", .int)
    ///     static let nickname = StoreKey<String?>(optional: "nickname", .string)
    public init<Wrapped: Sendable>(optional name: String, _ codec: SettingCodec<Wrapped>, default defaultValue: Wrapped? = nil)
    where Value == Wrapped? {
        self.init(
            name, default: defaultValue,
            codec: SettingCodec<Wrapped?>(
                kind: codec.kind, encode: { value in try value.map { try codec.encode($0) } ?? .null },
                decode: { stored in stored.isNull ? .some(nil) : codec.decode(stored).map { .some($0) } }))
    }
}

extension SettingCodec where Value == Int {
    /// Integers (kind `int`).
    public static var int: SettingCodec<Int> {
        SettingCodec(kind: "int", encode: { $0.databaseValue }, decode: { Int.fromDatabaseValue($0) })
    }
}

extension SettingCodec where Value == Int64 {
    /// 64-bit integers (kind `int`).
    public static var int64: SettingCodec<Int64> {
        SettingCodec(kind: "int", encode: { $0.databaseValue }, decode: { Int64.fromDatabaseValue($0) })
    }
}

extension SettingCodec where Value == Bool {
    /// Booleans (kind `bool`).
    public static var bool: SettingCodec<Bool> {
        SettingCodec(kind: "bool", encode: { $0.databaseValue }, decode: { Bool.fromDatabaseValue($0) })
    }
}

extension SettingCodec where Value == String {
    /// Text (kind `string`).
    public static var string: SettingCodec<String> {
        SettingCodec(kind: "string", encode: { $0.databaseValue }, decode: { String.fromDatabaseValue($0) })
    }
}

extension SettingCodec where Value == Double {
    /// Doubles (kind `double`).
    public static var double: SettingCodec<Double> {
        SettingCodec(kind: "double", encode: { $0.databaseValue }, decode: { Double.fromDatabaseValue($0) })
    }
}

extension SettingCodec where Value == Float {
    /// Floats (kind `double`: stored as a double).
    public static var float: SettingCodec<Float> {
        SettingCodec(kind: "double", encode: { Double($0).databaseValue }, decode: { Double.fromDatabaseValue($0).map(Float.init) })
    }
}

extension SettingCodec where Value == Data {
    /// Bytes (kind `data`).
    public static var data: SettingCodec<Data> {
        SettingCodec(kind: "data", encode: { $0.databaseValue }, decode: { Data.fromDatabaseValue($0) })
    }
}
