// Cancellation a long `$regex` match polls. The matcher runs inside SQLite (the `coffer_regexp`
// function) or on a search's worker threads, with no Task of its own: a search sets the flag
// when its Task is cancelled, and the matcher, finding it set, stops within the value it is on.

import CofferSync
import Foundation

/// A flag one search sets when its Task is cancelled; the regex matcher reads it every
/// ``LinearRegex/cancellationPollSteps`` steps on the threads the search runs on.
final class MatchCancellation: Sendable {
    private let flag = Locked(false)

    #if DEBUG
    /// Debug builds only: the observer of the task that started this search, if a test set one.
    let observer: Observer?

    /// A flag not set, reporting to the observer of the calling task.
    init() { observer = Self.observing }
    #else
    /// A flag not set.
    init() {}
    #endif

    /// Sets the flag: matches running for this search stop at their next poll.
    func cancel() { flag.withLock { $0 = true } }

    /// Whether the flag is set.
    var isCancelled: Bool { flag.withLock { $0 } }

    /// The matcher's read of the flag: true when it must stop.
    func poll() -> Bool {
        let cancelled = isCancelled
        #if DEBUG
        observer?.polled(found: cancelled)
        #endif
        return cancelled
    }

    #if DEBUG
    /// Debug builds only: the observer that searches started in this task report to (tests
    /// set it around a search).
    @TaskLocal static var observing: Observer?

    /// Debug builds only: what a test sees of the matcher's reads of one search's flag.
    final class Observer: Sendable {
        private struct State {
            var polls = 0
            var stops = 0
            var timedOut = false
            var waiter: CheckedContinuation<Bool, Never>?
        }
        private let state = Locked(State())

        /// A new observer, seeing nothing yet.
        init() {}

        /// Reads of the flag so far.
        var polls: Int { state.withLock { $0.polls } }
        /// Reads that found the flag set (each one stopped a match).
        var stops: Int { state.withLock { $0.stops } }

        func polled(found cancelled: Bool) {
            let waiter = state.withLock { s -> CheckedContinuation<Bool, Never>? in
                s.polls += 1
                if cancelled { s.stops += 1 }
                defer { s.waiter = nil }
                return s.waiter
            }
            waiter?.resume(returning: true)
        }

        /// Waits until the matcher has read the flag once (a match is under way), at most
        /// `seconds`: true when it has, false when the time ran out first.
        func firstPoll(within seconds: Double) async -> Bool {
            await withTaskGroup(of: Bool.self) { group in
                group.addTask {
                    await withCheckedContinuation { continuation in
                        let now = self.state.withLock { s -> Bool? in
                            if s.polls > 0 { return true }
                            if s.timedOut { return false }
                            s.waiter = continuation
                            return nil
                        }
                        if let now { continuation.resume(returning: now) }
                    }
                }
                group.addTask {
                    try? await Task.sleep(nanoseconds: UInt64(seconds * 1e9))
                    let waiter = self.state.withLock { s -> CheckedContinuation<Bool, Never>? in
                        s.timedOut = true
                        defer { s.waiter = nil }
                        return s.waiter
                    }
                    waiter?.resume(returning: false)
                    return false
                }
                let first = await group.next() ?? false
                group.cancelAll()
                return first
            }
        }
    }
    #endif

    /// The flag of the search running on this thread, if any.
    static var current: MatchCancellation? {
        guard let pointer = pthread_getspecific(key) else { return nil }
        return Unmanaged<MatchCancellation>.fromOpaque(pointer).takeUnretainedValue()
    }

    /// Runs `body` with `self` as this thread's ``current`` flag, then puts the previous one back.
    func during<T>(_ body: () throws -> T) rethrows -> T {
        let previous = pthread_getspecific(Self.key)
        pthread_setspecific(Self.key, Unmanaged.passUnretained(self).toOpaque())
        defer { pthread_setspecific(Self.key, previous) }
        return try withExtendedLifetime(self) { try body() }
    }

    /// Runs `body` (a database read of a search) so that cancelling the calling Task also stops a
    /// regex match under way, and ends in `CancellationError` whenever the flag was set (a match
    /// stopped early answers "no match", so nothing read after it is returned).
    static func run<T: Sendable>(_ body: @Sendable (MatchCancellation) async throws -> T) async throws -> T {
        let token = MatchCancellation()
        return try await withTaskCancellationHandler {
            let result: T
            do { result = try await body(token) } catch { throw token.isCancelled ? CancellationError() : error }
            if token.isCancelled { throw CancellationError() }
            return result
        } onCancel: {
            token.cancel()
        }
    }

    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()
}
