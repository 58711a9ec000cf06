// Cancellation a long `$regex` match polls. The matcher runs inside SQLite (the `coffer_regexp`
// function) or on a search's worker threads, with no Task of its own: a search sets the flag
// when its Task is cancelled, and the matcher, finding it set, stops within the value it is on.
import CofferSync
import Foundation

/// A flag one search sets when its Task is cancelled; the regex matcher reads it every
/// ``LinearRegex/cancellationPollSteps`` steps on the threads the search runs on.
final class MatchCancellation: Sendable {
    private let flag = Locked(false)

    /// A flag not set.
    init() {}

    /// Sets the flag: matches running for this search stop at their next poll.
    func cancel() { flag.withLock { $0 = true } }

    /// Whether the flag is set.
    var isCancelled: Bool { flag.withLock { $0 } }

    /// Matches the matcher gave up because the flag was set (read by tests: proves the flag,
    /// not the end of the text, stopped them).
    static let observed = Locked(0)

    /// Reads of a flag by the matcher, in every search (read by tests: a match is under way).
    static let polls = Locked(0)

    /// The matcher's read of the flag: true when it must stop (counted in ``observed``).
    func poll() -> Bool {
        Self.polls.withLock { $0 += 1 }
        guard isCancelled else { return false }
        Self.observed.withLock { $0 += 1 }
        return true
    }

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
