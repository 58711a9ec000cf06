// The typed settings store: reads from memory, writes to SQLite first (durable when `put`
// returns), then to memory; every instance on one file sees the others' writes.
import Foundation
import GRDB
import Logging

/// Errors of the settings store; each names the key.
public enum SettingsError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The stored value was written as another type than the key now has.
    case typeMismatch(key: String, stored: String, expected: String)
    /// The stored value has the key's kind but does not decode.
    case undecodable(key: String, kind: String)
    /// The value could not be encoded.
    case unencodable(key: String, reason: String)
    /// SQLite failed.
    case storage(String)

    /// What went wrong.
    public var description: String {
        switch self {
        case let .typeMismatch(key, stored, expected):
            return "setting \"\(key)\" is stored as \(stored) but the key is \(expected); its default is used"
        case let .undecodable(key, kind): return "setting \"\(key)\" holds a \(kind) value that does not decode; its default is used"
        case let .unencodable(key, reason): return "setting \"\(key)\" cannot be encoded: \(reason)"
        case let .storage(m): return "settings storage: \(m)"
        }
    }
}

/// One stored row as the cache keeps it.
@usableFromInline
struct StoredSetting: Sendable, Equatable {
    @usableFromInline var kind: String
    @usableFromInline var value: DatabaseValue

    @usableFromInline
    init(kind: String, value: DatabaseValue) {
        self.kind = kind
        self.value = value
    }
}

/// Typed settings over a table of the app database (`coffer_settings`).
public final class Settings: @unchecked Sendable {
    // `observers` is guarded by `lock`; the cache by its own mutex (reads are the hot path);
    // `database` is itself thread-safe.
    private let database: any DatabaseWriter
    private let lock = NSLock()
    @usableFromInline let cache: FastLock<[String: StoredSetting]>
    private var observers: [String: [UUID: @Sendable (StoredSetting?) -> Void]] = [:]
    private let hub: SettingsHub
    private let logger = Logger(label: "coffer.settings")

    /// The schema step that creates the settings table; register it in the app's migrator.
    public static func registerMigrations(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("settings-v1") { db in
            try db.execute(sql: """
                CREATE TABLE IF NOT EXISTS coffer_settings(
                    name TEXT PRIMARY KEY NOT NULL,
                    kind TEXT NOT NULL,
                    value,
                    updated_at INTEGER NOT NULL)
                """)
        }
    }

    /// Settings over `database`, whose migrations (``registerMigrations(_:)``) have run. Every
    /// value is read into memory now.
    public init(database: any DatabaseWriter) throws {
        self.database = database
        do {
            cache = FastLock(try database.read { db in
                var all = [String: StoredSetting]()
                for row in try Row.fetchAll(db, sql: "SELECT name, kind, value FROM coffer_settings") {
                    all[row[0]] = StoredSetting(kind: row[1], value: row[2])
                }
                return all
            })
        } catch {
            throw SettingsError.storage("cannot read the settings: \(error)")
        }
        hub = SettingsHub.shared(for: database.path)
        hub.register(self)
    }

    deinit { hub.unregister(self) }

    // MARK: Reads (memory)

    /// The value, or the key's default when unset or stored as another type (which is logged).
    @inlinable
    public func get<Value>(_ key: StoreKey<Value>) -> Value {
        guard let stored = cache.withLock({ $0[key.name] }) else { return key.defaultValue }
        if stored.kind == key.codec.kind, let value = key.codec.decode(stored.value) { return value }
        return (try? decode(stored, key)) ?? key.defaultValue
    }

    /// The value, or nil when unset (or stored as another type, which is logged).
    public func tryGet<Value>(_ key: StoreKey<Value>) -> Value? {
        try? value(key)
    }

    /// The value, nil when unset.
    /// - Throws: ``SettingsError/typeMismatch(key:stored:expected:)`` when it was stored as
    ///   another type, ``SettingsError/undecodable(key:kind:)`` when it does not decode.
    public func value<Value>(_ key: StoreKey<Value>) throws(SettingsError) -> Value? {
        guard let stored = cache.withLock({ $0[key.name] }) else { return nil }
        return try decode(stored, key)
    }

    @usableFromInline
    func decode<Value>(_ stored: StoredSetting, _ key: StoreKey<Value>) throws(SettingsError) -> Value {
        guard stored.kind == key.codec.kind else {
            let error = SettingsError.typeMismatch(key: key.name, stored: stored.kind, expected: key.codec.kind)
            logger.warning("\(error)")
            throw error
        }
        guard let value = key.codec.decode(stored.value) else {
            let error = SettingsError.undecodable(key: key.name, kind: stored.kind)
            logger.warning("\(error)")
            throw error
        }
        return value
    }

    /// Names of every stored setting with their kinds.
    public func storedNames() -> [String: String] {
        cache.withLock { $0.mapValues(\.kind) }
    }

    /// The raw stored value of `name` as text (for tools), nil when unset.
    public func rawValue(_ name: String) -> (kind: String, value: DatabaseValue)? {
        cache.withLock { $0[name].map { ($0.kind, $0.value) } }
    }

    // MARK: Writes (database first)

    /// Stores `value`; when this returns the value is committed to disk, then in memory.
    public func put<Value>(_ key: StoreKey<Value>, _ value: Value) throws(SettingsError) {
        let encoded: DatabaseValue
        do { encoded = try key.codec.encode(value) } catch { throw .unencodable(key: key.name, reason: "\(error)") }
        try write(key.name, StoredSetting(kind: key.codec.kind, value: encoded))
    }

    /// Removes the key's value (reads give the default again).
    public func delete<Value>(_ key: StoreKey<Value>) throws(SettingsError) {
        try write(key.name, nil)
    }

    /// Stores a raw value under `name` (for tools that do not know the key's type).
    public func putRaw(_ name: String, kind: String, value: DatabaseValue) throws(SettingsError) {
        try write(name, StoredSetting(kind: kind, value: value))
    }

    /// Removes `name` (for tools).
    public func deleteRaw(_ name: String) throws(SettingsError) {
        try write(name, nil)
    }

    private func write(_ name: String, _ stored: StoredSetting?) throws(SettingsError) {
        do {
            try database.write { db in
                if let stored {
                    try db.cachedStatement(sql: """
                        INSERT INTO coffer_settings(name, kind, value, updated_at) VALUES (?, ?, ?, ?)
                        ON CONFLICT(name) DO UPDATE SET kind = excluded.kind, value = excluded.value, updated_at = excluded.updated_at
                        """).execute(arguments: [name, stored.kind, stored.value, Int64(Date().timeIntervalSince1970 * 1000)])
                } else {
                    try db.cachedStatement(sql: "DELETE FROM coffer_settings WHERE name = ?").execute(arguments: [name])
                }
            }
        } catch {
            throw .storage("writing \"\(name)\" failed: \(error)")
        }
        hub.broadcast(name, stored)
    }

    /// Called by the hub for every committed write on this file (own or another instance's).
    func apply(_ name: String, _ stored: StoredSetting?) {
        cache.withLock { cache in
            if let stored { cache[name] = stored } else { cache.removeValue(forKey: name) }
        }
        let callbacks: [@Sendable (StoredSetting?) -> Void] = lock.withLock { Array((observers[name] ?? [:]).values) }
        for callback in callbacks { callback(stored) }
    }

    // MARK: Changes

    /// The key's value after every committed write to it, by this or any other `Settings`
    /// instance on the same file (the default after a delete).
    public func changes<Value>(_ key: StoreKey<Value>) -> AsyncStream<Value> {
        AsyncStream { continuation in
            let id = UUID()
            let callback: @Sendable (StoredSetting?) -> Void = { [weak self] stored in
                guard let self else { return }
                guard let stored else { continuation.yield(key.defaultValue); return }
                continuation.yield((try? self.decode(stored, key)) ?? key.defaultValue)
            }
            lock.withLock { observers[key.name, default: [:]][id] = callback }
            continuation.onTermination = { [weak self] _ in
                guard let self else { return }
                _ = self.lock.withLock { self.observers[key.name]?.removeValue(forKey: id) }
            }
        }
    }
}

/// Connects every ``Settings`` instance on one database file in this process.
final class SettingsHub: @unchecked Sendable {
    private static let registryLock = NSLock()
    nonisolated(unsafe) private static var hubs = [String: SettingsHub]()

    static func shared(for path: String) -> SettingsHub {
        let key = URL(fileURLWithPath: path).standardizedFileURL.resolvingSymlinksInPath().path
        return registryLock.withLock {
            if let hub = hubs[key] { return hub }
            let hub = SettingsHub()
            hubs[key] = hub
            return hub
        }
    }

    private struct Weak { weak var settings: Settings? }
    private let lock = NSLock()
    private var members = [ObjectIdentifier: Weak]()

    func register(_ settings: Settings) {
        lock.withLock { members[ObjectIdentifier(settings)] = Weak(settings: settings) }
    }

    func unregister(_ settings: Settings) {
        _ = lock.withLock { members.removeValue(forKey: ObjectIdentifier(settings)) }
    }

    func broadcast(_ name: String, _ stored: StoredSetting?) {
        let targets = lock.withLock { members.values.compactMap(\.settings) }
        for target in targets { target.apply(name, stored) }
    }
}
