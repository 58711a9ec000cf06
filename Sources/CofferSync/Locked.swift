// The package's one lock type: a mutex around the state it guards, reached only through
// `withLock`, so no code can touch the state without holding the lock or forget to release it.
// An unfair lock on Apple platforms (`os_unfair_lock`), a `pthread_mutex_t` elsewhere; both live
// in their own allocation, as neither may be moved once used.
#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#endif

/// A value guarded by a mutex. Safe to share between threads: the state is only reachable
/// inside ``withLock(_:)``, while the mutex is held. The lock is not reentrant.
@usableFromInline
package final class Locked<State>: @unchecked Sendable {
    #if canImport(Darwin)
    @usableFromInline let mutex: UnsafeMutablePointer<os_unfair_lock>
    #else
    @usableFromInline let mutex: UnsafeMutablePointer<pthread_mutex_t>
    #endif
    @usableFromInline var state: State

    /// A lock guarding `state`.
    @usableFromInline
    package init(_ state: State) {
        self.state = state
        mutex = .allocate(capacity: 1)
        #if canImport(Darwin)
        mutex.initialize(to: os_unfair_lock())
        #else
        mutex.initialize(to: pthread_mutex_t())
        precondition(pthread_mutex_init(mutex, nil) == 0, "pthread_mutex_init failed")
        #endif
    }

    deinit {
        #if !canImport(Darwin)
        pthread_mutex_destroy(mutex)
        #endif
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    /// Runs `body` with the state while holding the lock.
    @inlinable
    package func withLock<R, E: Error>(_ body: (inout State) throws(E) -> R) throws(E) -> R {
        #if canImport(Darwin)
        os_unfair_lock_lock(mutex)
        defer { os_unfair_lock_unlock(mutex) }
        #else
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        #endif
        return try body(&state)
    }

    /// Runs `body` with the state if the lock is free now; nil (without running it) when another
    /// thread holds it.
    @inlinable
    package func withLockIfAvailable<R, E: Error>(_ body: (inout State) throws(E) -> R) throws(E) -> R? {
        #if canImport(Darwin)
        guard os_unfair_lock_trylock(mutex) else { return nil }
        defer { os_unfair_lock_unlock(mutex) }
        #else
        guard pthread_mutex_trylock(mutex) == 0 else { return nil }
        defer { pthread_mutex_unlock(mutex) }
        #endif
        return try body(&state)
    }
}

extension Locked where State == Void {
    /// A lock guarding no value of its own (it serialises a section of code, or state kept
    /// elsewhere whose declaration says this lock guards it).
    package convenience init() { self.init(()) }

    /// Runs `body` while holding the lock.
    @inlinable
    package func withLock<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R {
        try withLock { (_: inout Void) throws(E) -> R in try body() }
    }

    /// Runs `body` if the lock is free now; nil (without running it) when another thread holds it.
    @inlinable
    package func withLockIfAvailable<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R? {
        try withLockIfAvailable { (_: inout Void) throws(E) -> R in try body() }
    }
}

/// The package's lock when it guards no value of its own.
package typealias Lock = Locked<Void>

/// Hands a value that is not `Sendable` to code on another thread that then uses it alone (the
/// sender no longer touches it), e.g. a stream cipher's state moved into a database closure.
/// The one place such a transfer is written down; it does not make the value safe to share.
package struct Handoff<Value>: @unchecked Sendable {
    // Safe to send: ownership moves with it; the sender keeps no other use of `value`.
    package let value: Value
    /// Wraps `value` for the transfer.
    package init(_ value: Value) { self.value = value }
}

/// A small cache that computes each missing value once and forgets everything when it reaches
/// its capacity (the values it holds are cheap to recompute; a full clear keeps the bookkeeping
/// to one dictionary). `compute` runs outside the lock, so two callers may compute one key at
/// once; the result is the same either way.
package final class BoundedCache<Key: Hashable, Value>: @unchecked Sendable {
    // Safe to share: `entries` is only touched inside `lock`'s withLock.
    private let lock = Lock()
    private var entries = [Key: Value]()
    private let capacity: Int

    /// A cache of at most `capacity` values.
    package init(capacity: Int) { self.capacity = capacity }

    /// The cached value of `key`, or the one `compute` gives (then cached).
    package func value<E: Error>(for key: Key, _ compute: () throws(E) -> Value) throws(E) -> Value {
        if let hit = lock.withLock({ entries[key] }) { return hit }
        let value = try compute()
        lock.withLock {
            if entries.count >= capacity { entries.removeAll(keepingCapacity: true) }
            entries[key] = value
        }
        return value
    }

    /// Values held.
    package var count: Int { lock.withLock { entries.count } }

    /// Forgets every value.
    package func removeAll() { lock.withLock { entries.removeAll() } }
}
