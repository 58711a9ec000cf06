// The one way Coffer's async forms of blocking calls leave the caller's executor: the blocking
// body runs on a Dispatch worker thread, so an `await` from the main actor (or any actor) never
// holds that actor while SQLite or the file system works. Explicit, rather than relying on how a
// `nonisolated async` function is scheduled (which an upcoming language mode changes).

import Dispatch

/// Runs `body` on a Dispatch worker thread and resumes the caller with its result. The body is
/// not interrupted by cancellation: a disk write that began finishes (all or nothing).
package func offCaller<T: Sendable, E: Error>(_ body: @escaping @Sendable () throws(E) -> T) async throws(E) -> T {
    let result: Result<T, E> = await withCheckedContinuation { continuation in
        DispatchQueue.global(qos: .userInitiated).async {
            continuation.resume(returning: Result { () throws(E) -> T in try body() })
        }
    }
    return try result.get()
}

/// ``offCaller(_:)`` for a body that cannot throw.
package func offCaller<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        DispatchQueue.global(qos: .userInitiated).async { continuation.resume(returning: body()) }
    }
}

/// ``offCaller(_:)`` for the async form of a public call: a task cancelled before the call
/// starts gets `CancellationError` and the body never runs (nothing read, nothing written);
/// once started, the body finishes (docs/concurrency.md, "Cancellation").
package func offCallerUnlessCancelled<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try Task.checkCancellation()
    return try await offCaller { () throws -> T in try body() }
}
