// The typed settings store: reads from memory; `put` writes to SQLite first (durable when it
// returns), then to memory; `set` (Settings+Deferred.swift) writes memory first and SQLite within a
// short window, coalesced; every instance on one file sees the others' writes, in this process at
// once and in other processes at its next read after a short interval.

import CofferSync
import Foundation
import GRDB
import Logging

@_exported import struct CofferSync.StorageCause

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Errors of the settings store; each names the key.
public enum SettingsError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The stored value was written as another type than the key now has.
    case typeMismatch(key: String, stored: String, expected: String)
    /// The stored value has the key's kind but does not decode.
    case undecodable(key: String, kind: String)
    /// The value could not be encoded.
    case unencodable(key: String, reason: String)
    /// SQLite failed.
    /// `cause` keeps the system's error number or SQLite's result code underneath (nil when
    /// there was none), so a caller can tell a full disk from a refused permission.
    case storage(String, cause: StorageCause? = nil)
    /// The settings were closed with their database; reads keep answering from memory.
    case closed

    /// What went wrong.
    public var description: String {
        switch self {
        case .closed: return "the settings store was closed with its database; open the database again to write settings"
        case .typeMismatch(let key, let stored, let expected):
            return "setting \"\(key)\" is stored as \(stored) but the key is \(expected); its default is used"
        case .undecodable(let key, let kind): return "setting \"\(key)\" holds a \(kind) value that does not decode; its default is used"
        case .unencodable(let key, let reason): return "setting \"\(key)\" cannot be encoded: \(reason)"
        case .storage(let m, _): return "settings storage: \(m)"
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

/// The memory copy of the settings and when to look for other processes' writes next.
@usableFromInline
struct SettingsCache: Sendable {
    @usableFromInline var values: [String: StoredSetting]
    /// Monotonic nanoseconds after which the next read checks `PRAGMA data_version`.
    @usableFromInline var nextCheck: UInt64

    @usableFromInline
    init(values: [String: StoredSetting], nextCheck: UInt64) {
        self.values = values
        self.nextCheck = nextCheck
    }
}

/// Typed settings over a table of the app database (`coffer_settings`).
///
/// Coherence: every write to one file from this process (any instance) commits and then updates
/// every instance's memory under one lock, so memory follows commit order and equals the disk
/// after concurrent writes. Another process's writes are noticed by the first read after
/// ``crossProcessCheckInterval`` (a `PRAGMA data_version` query on a connection kept for it;
/// when it moved, the table is read again and ``changes(_:)`` yields what changed), or at once by
/// ``refresh()``.
public final class Settings: Sendable {
    let database: any DatabaseWriter
    /// The values in memory, behind their own lock (reads are the hot path).
    @usableFromInline let cache: Locked<SettingsCache>
    /// The connection that notices other processes' writes. Taken only while holding the hub's
    /// write lock (always in that order), so a check never interleaves with a commit of this process.
    private let watch: Locked<Watch>
    /// How long a read trusts memory before it checks for other processes' writes: 100 ms.
    public static let crossProcessCheckInterval: UInt64 = 100_000_000
    /// The change streams and whether the settings closed.
    private let observation = Locked(Observation())
    let hub: SettingsHub
    /// How long ``set(_:_:)`` waits before committing (``deferredWriteDelay``; tests lengthen it).
    package let deferredDelay = Locked<UInt64>(Settings.deferredWriteDelay)
    /// Whether ``close()`` ran.
    var isClosedNow: Bool { observation.withLock { $0.isClosed } }
    private let logger = Logger(label: "coffer.settings")

    private struct Watch {
        /// A read-only connection of its own (none for an in-memory database, nor after close).
        var connection: DatabaseQueue?
        /// `PRAGMA data_version` when memory was last read from the file.
        var lastDataVersion: Int64 = -1
    }

    private struct Observation {
        var observers: [String: [UUID: @Sendable (StoredSetting?) -> Void]] = [:]
        /// How each change stream is finished, at ``Settings/close()``.
        var finishers: [UUID: @Sendable () -> Void] = [:]
        /// Set by ``Settings/close()``: writes throw ``SettingsError/closed`` after it.
        var isClosed = false
    }

    /// The schema step that creates the settings table; the app database registers it in its
    /// migrator (package-internal: apps get their settings from `AppDatabase` or the container).
    package static func registerMigrations(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("settings-v1") { db in
            try db.execute(
                sql: """
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
    /// Blocks the calling thread while it reads the settings table once.
    package init(database: any DatabaseWriter) throws {
        self.database = database
        let hub = SettingsHub.shared(for: database.path)
        self.hub = hub
        // A read-only connection of its own, whose data_version moves with every other
        // connection's commit (another process's included). None for an in-memory database.
        var watcher: DatabaseQueue?
        if !database.path.isEmpty, database.path != ":memory:", !database.path.hasPrefix("file::memory:") {
            var config = Configuration()
            config.readonly = true
            config.busyMode = .timeout(10)
            config.label = "coffer.settings.watcher"
            watcher = try? DatabaseQueue(path: database.path, configuration: config)
        }
        self.watch = Locked(Watch(connection: watcher))
        cache = Locked(SettingsCache(values: [:], nextCheck: Self.monotonicNow() &+ Self.crossProcessCheckInterval))
        // Read and join the file's instances under the write lock: no write of this process can
        // fall between the read and the registration.
        do {
            try hub.withWriteLock { () throws in
                if let watcher {
                    let version = try watcher.read { try Int64.fetchOne($0, sql: "PRAGMA data_version") ?? -1 }
                    watch.withLock { $0.lastDataVersion = version }
                }
                // Values another instance set and has not committed yet are what memory holds.
                let values = hub.pending.overlay(try Self.readAll(database))
                cache.withLock { $0.values = values }
                hub.register(self)
            }
        } catch {
            throw SettingsError.storage("cannot read the settings: \(error)", cause: StorageCause(error))
        }
    }

    private static func readAll(_ database: any DatabaseWriter) throws -> [String: StoredSetting] {
        try database.read { db in
            var all = [String: StoredSetting]()
            for row in try Row.fetchAll(db, sql: "SELECT name, kind, value FROM coffer_settings") {
                all[row[0]] = StoredSetting(kind: row[1], value: row[2])
            }
            return all
        }
    }

    /// A cheap monotonic clock (a coarse one where there is one: reads are the hot path).
    @usableFromInline
    static func monotonicNow() -> UInt64 {
        #if os(Linux)
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC_COARSE, &ts)
        return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
        #elseif canImport(Darwin)
        return clock_gettime_nsec_np(CLOCK_UPTIME_RAW_APPROX)
        #else
        return DispatchTime.now().uptimeNanoseconds
        #endif
    }

    /// The memory copy of `name`, first checking for other processes' writes when it is time.
    @usableFromInline
    func stored(_ name: String) -> StoredSetting? {
        let (value, due) = cache.withLock { state -> (StoredSetting?, Bool) in
            let now = Self.monotonicNow()
            guard now >= state.nextCheck else { return (state.values[name], false) }
            state.nextCheck = now &+ Self.crossProcessCheckInterval
            return (state.values[name], true)
        }
        guard due else { return value }
        refreshIfChanged(wait: false)
        return cache.withLock { $0.values[name] }
    }

    /// Reads the settings table again when another connection (another process, or another
    /// pool in this one) committed since the last look, updating memory and telling
    /// ``changes(_:)`` subscribers what changed. Reads call this on their own after
    /// ``crossProcessCheckInterval``; call it when the app needs other processes' writes now
    /// (e.g. on returning to the foreground).
    /// Blocks the calling thread for one small read: from async code, `await` ``refresh()``.
    public func refreshBlocking() {
        refreshIfChanged(wait: true)
    }

    /// ``refreshBlocking()`` off the caller's executor.
    public func refresh() async {
        await offCaller { self.refreshBlocking() }
    }

    /// The blocking form's old name, kept for one release: use `refreshBlocking()`.
    @available(*, deprecated, renamed: "refreshBlocking()")
    public func refresh() { refreshBlocking() }

    /// ``putBlocking(_:_:)`` off the caller's executor: the commit runs on a worker thread; memory and
    /// ``changes(_:initial:)`` subscribers are updated before it returns, as with the blocking form.
    /// - Throws: `CancellationError` when the task was cancelled before the call (nothing is
    ///   written), else the ``SettingsError`` of the blocking form.
    public func put<Value>(_ key: StoreKey<Value>, _ value: Value) async throws {
        try await offCallerUnlessCancelled { try self.putBlocking(key, value) }
    }

    /// ``deleteBlocking(_:)`` off the caller's executor.
    /// - Throws: `CancellationError` when the task was cancelled before the call (nothing is
    ///   deleted), else the ``SettingsError`` of the blocking form.
    public func delete<Value>(_ key: StoreKey<Value>) async throws {
        try await offCallerUnlessCancelled { try self.deleteBlocking(key) }
    }

    private func refreshIfChanged(wait: Bool) {
        // A read never waits for a writer of this process: it checks again next time.
        _ = hub.withWriteLock(wait: wait) {
            let database = database
            let changed = watch.withLock { (watch) -> [String: StoredSetting]? in
                guard let watcher = watch.connection else { return nil }
                guard let version = try? watcher.read({ try Int64.fetchOne($0, sql: "PRAGMA data_version") ?? -1 }),
                    version != watch.lastDataVersion
                else { return nil }
                guard let read = try? Self.readAll(database) else { return nil }
                watch.lastDataVersion = version
                // Values set and not committed yet stay as set.
                return hub.pending.overlay(read)
            }
            guard let fresh = changed else { return }
            let old = cache.withLock { state -> [String: StoredSetting] in
                defer { state.values = fresh }
                return state.values
            }
            for name in Set(old.keys).union(fresh.keys) where old[name] != fresh[name] {
                notify(name, fresh[name])
            }
        }
    }

    deinit { hub.unregister(self) }

    /// Closes the connection that watches for other processes' writes (the owner of the
    /// database calls this before closing it) and ends every ``changes(_:initial:)`` stream by
    /// throwing ``SettingsError/closed``. Reads keep serving memory afterwards (they never touch
    /// the disk); writes throw ``SettingsError/closed``.
    public func close() {
        // What ``set(_:_:)`` left pending reaches the disk first.
        do { try hub.flushPending() } catch { logger.error("\(error)") }
        hub.withWriteLock { () -> Void in
            // A closed connection must not be read again (SQLite would be handed a closed handle).
            watch.withLock { watch in
                try? watch.connection?.close()
                watch.connection = nil
            }
        }
        let finish = observation.withLock { (state) -> [@Sendable () -> Void] in
            state.isClosed = true
            state.observers.removeAll()
            defer { state.finishers.removeAll() }
            return Array(state.finishers.values)
        }
        for f in finish { f() }
    }

    // MARK: Reads (memory)

    /// The value, or the key's default when unset or stored as another type (which is logged).
    @inlinable
    public func get<Value>(_ key: StoreKey<Value>) -> Value {
        guard let stored = stored(key.name) else { return key.defaultValue }
        if stored.kind == key.codec.kind, let value = key.codec.decode(stored.value) { return value }
        return (try? decode(stored, key)) ?? key.defaultValue
    }

    /// The value, or `defaultValue` (this call's, not the key's) when unset or stored as another
    /// type (which is logged): the seed's `Store.get(key, default)`.
    public func get<Value>(_ key: StoreKey<Value>, _ defaultValue: Value) -> Value {
        tryGet(key) ?? defaultValue
    }

    /// The value, or nil when unset (or stored as another type, which is logged).
    public func tryGet<Value>(_ key: StoreKey<Value>) -> Value? {
        try? value(key)
    }

    /// The value, nil when unset.
    /// - Throws: ``SettingsError/typeMismatch(key:stored:expected:)`` when it was stored as
    ///   another type, ``SettingsError/undecodable(key:kind:)`` when it does not decode.
    public func value<Value>(_ key: StoreKey<Value>) throws(SettingsError) -> Value? {
        guard let stored = stored(key.name) else { return nil }
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
        refreshIfChanged(wait: true)
        return cache.withLock { $0.values.mapValues(\.kind) }
    }

    /// The raw stored value of `name` as text (for tools), nil when unset.
    package func rawValue(_ name: String) -> (kind: String, value: DatabaseValue)? {
        stored(name).map { ($0.kind, $0.value) }
    }

    // MARK: Writes (database first)

    /// Stores `value`; when this returns the value is committed to disk, then in memory. Blocks
    /// the calling thread for the commit (about a millisecond, more while another process holds
    /// the lock): from async code, `await` ``put(_:_:)``.
    public func putBlocking<Value>(_ key: StoreKey<Value>, _ value: Value) throws(SettingsError) {
        let encoded: DatabaseValue
        do { encoded = try key.codec.encode(value) } catch { throw .unencodable(key: key.name, reason: "\(error)") }
        try write(key.name, StoredSetting(kind: key.codec.kind, value: encoded))
    }

    /// Removes the key's value (reads give the default again). Blocks the calling thread for the
    /// commit: from async code, `await` ``delete(_:)``.
    public func deleteBlocking<Value>(_ key: StoreKey<Value>) throws(SettingsError) {
        try write(key.name, nil)
    }

    /// The blocking form's old name, kept for one release: use `putBlocking(_:_:)`.
    @available(*, deprecated, renamed: "putBlocking(_:_:)")
    public func put<Value>(_ key: StoreKey<Value>, _ value: Value) throws(SettingsError) { try putBlocking(key, value) }

    /// The blocking form's old name, kept for one release: use `deleteBlocking(_:)`.
    @available(*, deprecated, renamed: "deleteBlocking(_:)")
    public func delete<Value>(_ key: StoreKey<Value>) throws(SettingsError) { try deleteBlocking(key) }

    /// Stores a raw value under `name` (for tools that do not know the key's type).
    package func putRaw(_ name: String, kind: String, value: DatabaseValue) throws(SettingsError) {
        try write(name, StoredSetting(kind: kind, value: value))
    }

    /// Removes `name` (for tools).
    package func deleteRaw(_ name: String) throws(SettingsError) {
        try write(name, nil)
    }

    private func write(_ name: String, _ stored: StoredSetting?) throws(SettingsError) {
        if observation.withLock({ $0.isClosed }) { throw .closed }
        // Commit and update every instance's memory under one lock per file: two concurrent
        // writes to one key reach memory in the order they reached the disk.
        try hub.withWriteLock { () throws(SettingsError) in
            // This write replaces a value of `name` set earlier and not committed yet.
            hub.pending.drop(name)
            try commit(name, stored)
            hub.broadcast(name, stored)
        }
    }

    private func commit(_ name: String, _ stored: StoredSetting?) throws(SettingsError) {
        do {
            try database.write { db in try Self.commit(db, name, stored) }
        } catch {
            throw .storage("writing \"\(name)\" failed: \(error)", cause: StorageCause(error))
        }
    }

    /// `name` as it is stored: in Unicode normalization form C. Swift compares strings by canonical
    /// equivalence (memory holds one "café" whichever way it was written) but SQLite compares
    /// bytes, so two spellings made two rows, and a write of one was undone at the next launch
    /// by the other. ASCII (every catalogue name) is already in form C.
    package static func storedName(_ name: String) -> String {
        name.utf8.allSatisfy { $0 < 0x80 } ? name : name.precomposedStringWithCanonicalMapping
    }

    /// Renames settings rows whose name is not in form C (written before names were normalized):
    /// of the rows that spell one name, the most recently updated keeps its value under the
    /// name's form C and the others are deleted. Returns how many rows changed.
    package static func normalizeStoredNames(_ db: Database) throws -> Int {
        // A name that is not text (it cannot be a setting's) is left alone.
        let rows = try Row.fetchAll(db, sql: "SELECT name, updated_at FROM coffer_settings WHERE typeof(name) = 'text'")
        let byName = Dictionary(grouping: rows.map { (name: $0[0] as String, updated: $0[1] as Int64? ?? 0) }) {
            storedName($0.name)
        }
        var changed = 0
        for (normalized, spellings) in byName {
            let isNormalized = { (name: String) in name.utf8.elementsEqual(normalized.utf8) }
            guard spellings.contains(where: { !isNormalized($0.name) }) else { continue }
            // The newest wins; on a tie the one already in form C.
            let ranked = spellings.sorted { ($0.updated, isNormalized($0.name) ? 1 : 0) > ($1.updated, isNormalized($1.name) ? 1 : 0) }
            for loser in ranked.dropFirst() {
                try db.execute(sql: "DELETE FROM coffer_settings WHERE name = ?", arguments: [loser.name])
                changed += 1
            }
            if !isNormalized(ranked[0].name) {
                try db.execute(sql: "UPDATE coffer_settings SET name = ? WHERE name = ?", arguments: [normalized, ranked[0].name])
                changed += 1
            }
        }
        return changed
    }

    /// Writes (or, for nil, deletes) one setting in `db`'s transaction, under its name's form C
    /// (see ``storedName(_:)``).
    static func commit(_ db: Database, _ name: String, _ stored: StoredSetting?) throws {
        let name = storedName(name)
        if let stored {
            try db.cachedStatement(
                sql: """
                    INSERT INTO coffer_settings(name, kind, value, updated_at) VALUES (?, ?, ?, ?)
                    ON CONFLICT(name) DO UPDATE SET kind = excluded.kind, value = excluded.value, updated_at = excluded.updated_at
                    """
            ).execute(arguments: [name, stored.kind, stored.value, Int64(Date().timeIntervalSince1970 * 1000)])
        } else {
            try db.cachedStatement(sql: "DELETE FROM coffer_settings WHERE name = ?").execute(arguments: [name])
        }
    }

    /// Puts the stored values of `names` back in memory (after a deferred commit of them failed),
    /// except those set again since; change streams give what changed.
    func reload(names: Set<String>) {
        guard let read = try? Self.readAll(database) else { return }
        for name in names {
            hub.pending.unlessPending(name) {
                let old = cache.withLock { cache -> StoredSetting? in
                    defer { if let value = read[name] { cache.values[name] = value } else { cache.values.removeValue(forKey: name) } }
                    return cache.values[name]
                }
                if old != read[name] { notify(name, read[name]) }
            }
        }
    }

    /// Called by the hub, under its write lock, for every committed write on this file (own or
    /// another instance's in this process).
    func apply(_ name: String, _ stored: StoredSetting?) {
        cache.withLock { cache in
            if let stored { cache.values[name] = stored } else { cache.values.removeValue(forKey: name) }
        }
        notify(name, stored)
    }

    func notify(_ name: String, _ stored: StoredSetting?) {
        let callbacks: [@Sendable (StoredSetting?) -> Void] = observation.withLock { Array(($0.observers[name] ?? [:]).values) }
        for callback in callbacks { callback(stored) }
    }

    // MARK: Changes

    /// The key's value after every committed write to it, by this or any other `Settings`
    /// instance on the same file in this process (the default after a delete), in commit order;
    /// another process's writes when this instance notices them (see ``refresh()``). The stream
    /// ends by throwing ``SettingsError/closed`` at ``close()`` (at once when the settings are
    /// already closed), so a `for try await` loop can tell "store closed" from a cancelled task
    /// (whose loop ends normally).
    ///
    /// A write of the value the stream last gave is not given again. With `initial: true` the
    /// stream starts with the current value (what a view shows before anything changes).
    public func changes<Value>(_ key: StoreKey<Value>, initial: Bool = false) -> AsyncThrowingStream<Value, any Error> {
        AsyncThrowingStream { continuation in
            let id = UUID()
            // The stored value the stream gave last, so a write of the same value is not given twice.
            let last = Locked<StoredSetting??>(nil)
            let yield: @Sendable (StoredSetting?) -> Void = { [weak self] stored in
                guard let self else { return }
                guard let stored else {
                    continuation.yield(key.defaultValue)
                    return
                }
                continuation.yield((try? self.decode(stored, key)) ?? key.defaultValue)
            }
            let callback: @Sendable (StoredSetting?) -> Void = { stored in
                if Self.replace(last, with: stored) { yield(stored) }
            }
            // The current value is read and the callback registered under one lock, so no
            // write falls between them (a write that raced is seen once, by value).
            let (open, current) = observation.withLock { (state) -> (Bool, StoredSetting?) in
                guard !state.isClosed else { return (false, nil) }
                let current = cache.withLock { $0.values[key.name] }
                _ = Self.replace(last, with: current)
                state.observers[key.name, default: [:]][id] = callback
                state.finishers[id] = { continuation.finish(throwing: SettingsError.closed) }
                return (true, current)
            }
            if open, initial { yield(current) }
            guard open else {
                continuation.finish(throwing: SettingsError.closed)
                return
            }
            continuation.onTermination = { [weak self] _ in
                guard let self else { return }
                self.observation.withLock { state in
                    _ = state.observers[key.name]?.removeValue(forKey: id)
                    _ = state.finishers.removeValue(forKey: id)
                }
            }
        }
    }
}

/// Connects every ``Settings`` instance on one database file in this process.
final class SettingsHub: Sendable {
    /// The hub of every file (by its resolved path) an instance of this process opened.
    private static let hubs = Locked([String: SettingsHub]())

    static func shared(for path: String) -> SettingsHub {
        let key = URL(fileURLWithPath: path).standardizedFileURL.resolvingSymlinksInPath().path
        return hubs.withLock { hubs in
            if let hub = hubs[key] { return hub }
            let hub = SettingsHub()
            hubs[key] = hub
            return hub
        }
    }

    private struct Weak { weak var settings: Settings? }
    /// The instances on this file.
    private let members = Locked([ObjectIdentifier: Weak]())
    /// Held across every settings commit and its broadcast on this file, and across refreshes.
    private let writeLock = Lock()

    func withWriteLock<R, E: Error>(_ body: () throws(E) -> sending R) throws(E) -> sending R {
        try writeLock.withLock(body)
    }

    /// Runs `body` under the write lock; without `wait`, returns nil at once when it is taken.
    func withWriteLock<R>(wait: Bool, _ body: () -> sending R) -> sending R? {
        wait ? writeLock.withLock(body) : writeLock.withLockIfAvailable(body)
    }

    func register(_ settings: Settings) {
        members.withLock { $0[ObjectIdentifier(settings)] = Weak(settings: settings) }
    }

    func unregister(_ settings: Settings) {
        _ = members.withLock { $0.removeValue(forKey: ObjectIdentifier(settings)) }
    }

    /// The file's deferred writes (``Settings/set(_:_:)``).
    let pending = PendingSettings()

    /// Every live instance on the file.
    func instances() -> [Settings] { members.withLock { $0.values.compactMap(\.settings) } }

    /// Gives a committed durable write to every instance, unless a newer value of `name` was set
    /// (``Settings/set(_:_:)``) since the write began: memory already holds that one.
    func broadcast(_ name: String, _ stored: StoredSetting?) {
        let targets = instances()
        pending.unlessPending(name) { for target in targets { target.apply(name, stored) } }
    }
}

extension Settings {
    /// Records `stored` as what a change stream gave last; false when it is what was recorded last.
    fileprivate static func replace(_ last: Locked<StoredSetting??>, with stored: StoredSetting?) -> Bool {
        last.withLock { value in
            if let previous = value, previous == stored { return false }
            value = .some(stored)
            return true
        }
    }
}

extension SettingsError: LocalizedError {
    /// The same text as `description`: what went wrong and what to do (for
    /// `localizedDescription`, alerts and logs).
    public var errorDescription: String? { description }
}
