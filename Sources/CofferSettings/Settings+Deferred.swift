// Settings writes that do not wait for the disk: `set` updates memory (every instance on the file,
// every change stream) at once and leaves the commit to a worker thread, which writes every value
// set during a short window in one transaction. A slider's many ticks become a few commits, and
// the caller (the main actor) never waits for an fsync. `flush()` commits what is pending now;
// `close()` flushes. What a crash can lose: the values set in the last window, never more.

import CofferSync
import Dispatch
import Foundation
import GRDB
import Logging

/// A value set with ``Settings/set(_:_:)`` and not yet committed.
struct PendingSetting {
    /// The value (nil: a deferred delete).
    var stored: StoredSetting?
    /// The connection of the instance that set it, which commits it.
    var database: any DatabaseWriter
    /// Which set this is (a later set of the same name has a larger one).
    var generation: UInt64
}

/// The deferred writes of one file, shared by its instances in this process (in ``SettingsHub``).
final class PendingSettings: @unchecked Sendable {
    // Safe to share: every field is read and written only inside `lock.withLock`, which is never
    // held across disk work. (Not yet moved into a `Locked` state as the rest of the package is.)
    private let lock = Lock()
    private var values: [String: PendingSetting] = [:]
    private var generation: UInt64 = 0
    private var flushScheduled = false
    /// The error of the last deferred commit that failed, until a flush reports it.
    private var failure: SettingsError?
    /// How many deferred commits reached the disk (tests count them).
    private(set) var commits = 0

    /// Records `stored` for `name` and runs `apply` (the memory update) under the same lock, so
    /// memory follows the order of the sets; returns whether a flush must be scheduled.
    func set(_ name: String, _ stored: StoredSetting?, database: any DatabaseWriter, apply: () -> Void) -> Bool {
        lock.withLock {
            generation &+= 1
            values[name] = PendingSetting(stored: stored, database: database, generation: generation)
            apply()
            defer { flushScheduled = true }
            return !flushScheduled
        }
    }

    /// Forgets a pending value of `name` (a durable write of it is about to commit).
    func drop(_ name: String) { _ = lock.withLock { values.removeValue(forKey: name) } }

    /// Runs `apply` unless a value of `name` is pending (set after the durable write began: it is
    /// newer, and memory already has it).
    func unlessPending(_ name: String, _ apply: () -> Void) {
        lock.withLock { if values[name] == nil { apply() } }
    }

    /// `values` with the pending writes laid over them (what memory must hold after a re-read).
    func overlay(_ values: [String: StoredSetting]) -> [String: StoredSetting] {
        lock.withLock {
            var merged = values
            for (name, pending) in self.values {
                if let stored = pending.stored { merged[name] = stored } else { merged.removeValue(forKey: name) }
            }
            return merged
        }
    }

    /// The pending writes now (they stay pending until ``committed(_:)``).
    func snapshot() -> [String: PendingSetting] {
        lock.withLock {
            flushScheduled = false
            return values
        }
    }

    /// Forgets the writes of `batch` that no later set replaced.
    func committed(_ batch: [String: PendingSetting]) {
        lock.withLock {
            for (name, written) in batch where values[name]?.generation == written.generation { values.removeValue(forKey: name) }
            commits += 1
        }
    }

    /// Forgets the writes of `batch` that no later set replaced, keeping `error` for the next flush.
    func failed(_ batch: [String: PendingSetting], _ error: SettingsError) {
        lock.withLock {
            for (name, written) in batch where values[name]?.generation == written.generation { values.removeValue(forKey: name) }
            failure = error
        }
    }

    /// The error of a failed deferred commit since the last call, cleared.
    func takeFailure() -> SettingsError? {
        lock.withLock {
            defer { failure = nil }
            return failure
        }
    }

    var isEmpty: Bool { lock.withLock { values.isEmpty } }
}

extension Settings {
    /// How long ``set(_:_:)`` waits before it commits: 250 ms. Every value set in that window
    /// goes to disk in one transaction; a crash (or a kill) loses at most the values set in the
    /// last window and not yet committed. ``flush()`` commits them at once.
    public static let deferredWriteDelay: UInt64 = 250_000_000

    /// Sets `value` in memory now — ``get(_:)``, every other `Settings` instance on the file in
    /// this process, ``changes(_:initial:)`` streams and `ObservedSetting`s see it at once — and
    /// commits it to disk on a worker thread within ``deferredWriteDelay``, with every other value
    /// set meanwhile in one transaction. It never waits for the disk, so it is what the main actor
    /// calls for a slider or a toggle (`ObservedSetting` and the `@Setting` property wrapper use
    /// it). What a crash can lose: the values set in the last ``deferredWriteDelay`` (not yet
    /// committed); call ``flush()`` where that matters, and ``close()`` flushes. A commit that fails
    /// puts the stored values back in memory (change streams give them) and ``flush()`` reports it.
    /// ``put(_:_:)`` is the durable write: it returns once its value is committed.
    /// - Throws: ``SettingsError/unencodable(key:reason:)`` (nothing changes) and
    ///   ``SettingsError/closed`` after ``close()``; never a disk error (those come later, from
    ///   ``flush()``).
    public func set<Value>(_ key: StoreKey<Value>, _ value: Value) throws(SettingsError) {
        let encoded: DatabaseValue
        do { encoded = try key.codec.encode(value) } catch { throw .unencodable(key: key.name, reason: "\(error)") }
        try deferredWrite(key.name, StoredSetting(kind: key.codec.kind, value: encoded))
    }

    /// Commits every value ``set(_:_:)`` left pending (on this file, by any instance in this
    /// process) in one transaction; when it returns they are on disk. Blocks the calling thread
    /// for the commit: from the main actor, `await` ``flush()``.
    /// - Throws: ``SettingsError/storage(_:cause:)`` when this or an earlier deferred commit failed
    ///   (the values it held are back to the stored ones in memory).
    public func flushBlocking() throws(SettingsError) {
        try hub.flushPending()
    }

    /// ``flushBlocking()`` off the caller's executor: when it returns, every value set before the
    /// call is on disk.
    /// - Throws: `CancellationError` when the task was cancelled before the call (the values stay
    ///   pending and commit within ``deferredWriteDelay``), else as ``flushBlocking()``.
    public func flush() async throws {
        try await offCallerUnlessCancelled { try self.flushBlocking() }
    }

    /// ``set(_:_:)`` of a raw value under `name` (for tools that do not know the key's type).
    package func setRaw(_ name: String, kind: String, value: DatabaseValue) throws(SettingsError) {
        try deferredWrite(name, StoredSetting(kind: kind, value: value))
    }

    /// Sets the window of ``set(_:_:)`` for this instance, in nanoseconds (tests use a long one).
    package func setDeferredWriteDelay(_ nanoseconds: UInt64) { deferredDelay.withLock { $0 = nanoseconds } }

    /// How many deferred commits reached this file's disk in this process (for tests).
    package var deferredCommits: Int { hub.pending.commits }

    func deferredWrite(_ name: String, _ stored: StoredSetting?) throws(SettingsError) {
        if isClosedNow { throw .closed }
        let targets = hub.instances()
        let schedule = hub.pending.set(name, stored, database: database) {
            for target in targets { target.apply(name, stored) }
        }
        guard schedule else { return }
        let hub = self.hub
        let delay = deferredDelay.withLock { $0 }
        DispatchQueue.global(qos: .utility).asyncAfter(deadline: .now() + .nanoseconds(Int(delay))) {
            // A failure is logged and kept for the next flush() or close(), which throw it.
            do { try hub.flushPending(reporting: false) } catch {
                Logger(label: "coffer.settings").error("a deferred settings commit failed: \(error)")
            }
        }
    }
}

extension SettingsHub {
    /// Commits the pending writes (one transaction per connection, usually one), under the write
    /// lock so they order with durable writes and re-reads. `reporting`: throw the failure of this
    /// or an earlier deferred commit (and forget it); the worker thread passes false, so the
    /// failure it logs stays for the next ``Settings/flush()`` or close to throw.
    func flushPending(reporting: Bool = true) throws(SettingsError) {
        try withWriteLock { () throws(SettingsError) in
            let batch = pending.snapshot()
            if !batch.isEmpty {
                let byDatabase = Dictionary(grouping: batch, by: { ObjectIdentifier($0.value.database as AnyObject) })
                do {
                    for (_, writes) in byDatabase {
                        try writes[0].value.database.write { db in
                            for (name, write) in writes { try Settings.commit(db, name, write.stored) }
                        }
                    }
                    pending.committed(batch)
                } catch {
                    let names = batch.keys.sorted().map { "\"\($0)\"" }.joined(separator: ", ")
                    let failure = SettingsError.storage(
                        "a deferred commit of the settings \(names) failed, so they were not saved (memory holds the stored values again; set them again once the disk has room): \(error)",
                        cause: StorageCause(error))
                    pending.failed(batch, failure)
                    if !reporting { Logger(label: "coffer.settings").error("\(failure)") }
                    // Memory goes back to what the disk holds for those names.
                    for target in instances() { target.reload(names: Set(batch.keys)) }
                }
            }
            if reporting, let failure = pending.takeFailure() { throw failure }
        }
    }
}
