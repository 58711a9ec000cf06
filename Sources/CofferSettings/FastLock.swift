// The lock on the settings cache, the hot path of every read: an unfair lock on Apple
// platforms (iOS 16+), the standard library's futex-based Mutex elsewhere.
#if canImport(Darwin)
import os

/// A small lock around `State`.
@usableFromInline
final class FastLock<State>: @unchecked Sendable {
    @usableFromInline let lock: OSAllocatedUnfairLock<State>
    init(_ state: State) { lock = OSAllocatedUnfairLock(uncheckedState: state) }
    @inlinable
    func withLock<R>(_ body: (inout State) throws -> R) rethrows -> R { try lock.withLockUnchecked(body) }
}
#else
import Synchronization

/// A small lock around `State`.
@usableFromInline
final class FastLock<State>: @unchecked Sendable {
    @usableFromInline let mutex: Mutex<State>
    init(_ state: sending State) { mutex = Mutex(state) }
    @inlinable
    func withLock<R>(_ body: (inout sending State) throws -> sending R) rethrows -> sending R { try mutex.withLock(body) }
}
#endif
