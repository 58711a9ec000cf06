// Calling the API the way the close and cancellation tests need: from a task cancelled before the
// call, and the blocking form from async code.

/// Runs `body` in a task cancelled before `body` starts; the error it threw, nil when none.
public func inCancelledTask(_ body: @escaping @Sendable () async throws -> Void) async -> (any Error)? {
    await Task { () async -> (any Error)? in
        withUnsafeCurrentTask { $0?.cancel() }
        do {
            try await body()
            return nil
        } catch {
            return error
        }
    }.value
}

/// Calls the blocking form of a call from async code (where Swift picks the async form).
@discardableResult
public func blocking<T>(_ body: () throws -> T) rethrows -> T { try body() }
