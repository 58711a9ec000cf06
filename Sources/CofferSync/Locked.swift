// The package's one lock type: a mutex around the state it guards, reached only through
// `withLock`, so no code can touch the state without holding the lock or forget to release it.
// Shared mutable state lives inside a `Locked` value (as a struct of fields when there are
// several); `Lock` (a `Locked<Void>`) only serialises a section of code.
// An unfair lock on Apple platforms (`os_unfair_lock`, in its own allocation, as it may not move
// once used), the standard library's `Mutex` elsewhere (not available on Apple platforms before
// macOS 15 / iOS 18, which the package still supports).
#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
import Synchronization
#endif

/// A value guarded by a mutex. Safe to share between threads: the state is only reachable
/// inside ``withLock(_:)``, while the mutex is held. The lock is not reentrant.
@usableFromInline
package final class Locked<State>: @unchecked Sendable {
    // Safe to share: the state is only reached through the mutex.
    #if canImport(Darwin)
    @usableFromInline let mutex: UnsafeMutablePointer<os_unfair_lock>
    @usableFromInline var state: State
    #else
    // The standard library's futex-based mutex, holding the state: taking and releasing it
    // inline to two atomics when uncontended.
    @usableFromInline let mutex: Mutex<State>
    #endif

    /// A lock guarding `state`.
    @usableFromInline
    package init(_ state: sending State) {
        #if canImport(Darwin)
        self.state = state
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: os_unfair_lock())
        #else
        mutex = Mutex(state)
        #endif
    }

    #if canImport(Darwin)
    deinit {
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }
    #endif

    /// Runs `body` with the state while holding the lock.
    @inlinable
    package func withLock<R, E: Error>(_ body: (inout sending State) throws(E) -> sending R) throws(E) -> sending R {
        #if canImport(Darwin)
        os_unfair_lock_lock(mutex)
        defer { os_unfair_lock_unlock(mutex) }
        return try body(&state)
        #else
        return try mutex.withLock(body)
        #endif
    }

    /// Runs `body` with the state if the lock is free now; nil (without running it) when another
    /// thread holds it.
    @inlinable
    package func withLockIfAvailable<R, E: Error>(_ body: (inout sending State) throws(E) -> sending R) throws(E) -> sending R? {
        #if canImport(Darwin)
        guard os_unfair_lock_trylock(mutex) else { return nil }
        defer { os_unfair_lock_unlock(mutex) }
        return try body(&state)
        #else
        return try mutex.withLockIfAvailable(body)
        #endif
    }
}

extension Locked where State == Void {
    /// A lock guarding no value of its own: it serialises a section of code (state that several
    /// threads change goes inside a `Locked` value instead).
    package convenience init() { self.init(()) }

    /// Runs `body` while holding the lock.
    @inlinable
    package func withLock<R, E: Error>(_ body: () throws(E) -> sending R) throws(E) -> sending R {
        try withLock { (_: inout sending Void) throws(E) -> sending R in try body() }
    }

    /// Runs `body` if the lock is free now; nil (without running it) when another thread holds it.
    @inlinable
    package func withLockIfAvailable<R, E: Error>(_ body: () throws(E) -> sending R) throws(E) -> sending R? {
        try withLockIfAvailable { (_: inout sending Void) throws(E) -> sending R in try body() }
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
package final class BoundedCache<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    private let entries = Locked([Key: Value]())
    private let capacity: Int

    /// A cache of at most `capacity` values.
    package init(capacity: Int) { self.capacity = capacity }

    /// The cached value of `key`, or the one `compute` gives (then cached).
    package func value<E: Error>(for key: Key, _ compute: () throws(E) -> Value) throws(E) -> Value {
        if let hit = entries.withLock({ $0[key] }) { return hit }
        let value = try compute()
        let capacity = capacity
        entries.withLock { entries in
            if entries.count >= capacity { entries.removeAll(keepingCapacity: true) }
            entries[key] = value
        }
        return value
    }

    /// Values held.
    package var count: Int { entries.withLock { $0.count } }

    /// Forgets every value.
    package func removeAll() { entries.withLock { $0.removeAll() } }
}
