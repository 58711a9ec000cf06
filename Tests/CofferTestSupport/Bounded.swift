// Bounded waits for tests: an event a test awaits that never comes fails that test with a message
// after a bound, instead of stopping the whole suite.

import CofferSync
import Foundation

/// How long a bounded wait waits by default: a bound against a hang, not a speed limit. It is
/// generous because the full suite runs hundreds of tests at once on two cores: synchronous tests
/// that run `coffer` children block threads of the cooperative pool while each child runs, and
/// an event another test awaits can queue behind them for tens of seconds (30 s was seen to run
/// out). A wait that ends early never waits the bound.
package let defaultWaitBound: Duration = .seconds(120)

/// What a bounded wait throws when its event did not come in time.
package struct TimedOut: Error, CustomStringConvertible {
    /// What was awaited, and for how long.
    package let description: String
}

/// The elements of an async sequence, taken by a task of its own as they come, so a test awaits
/// each one with a bound. Every element the sequence yields is kept, in order (none is
/// coalesced here), so a test also sees an element it did not expect.
package final class Updates<Element: Sendable>: Sendable {
    private struct State {
        var received: [Element] = []
        /// How the sequence ended (nil while it runs): `.success` when it finished.
        var end: Result<Void, any Error>?
        var waiter: (id: UInt64, continuation: CheckedContinuation<Element?, any Error>)?
        var lastWaiter: UInt64 = 0
        /// The latest wait whose bound passed before it was registered.
        var timedOut: UInt64 = 0
    }

    private let state = Locked(State())
    private let consumer = Locked<Task<Void, Never>?>(nil)

    /// Starts taking the elements of `sequence`.
    package init<S: AsyncSequence & Sendable>(_ sequence: S) where S.Element == Element {
        let state = self.state
        let task = Task {
            do {
                for try await element in sequence {
                    let waiter = state.withLock { state -> CheckedContinuation<Element?, any Error>? in
                        guard let waiter = state.waiter else {
                            state.received.append(element)
                            return nil
                        }
                        state.waiter = nil
                        return waiter.continuation
                    }
                    waiter?.resume(returning: element)
                }
                Self.finish(state, .success(()))
            } catch {
                Self.finish(state, .failure(error))
            }
        }
        consumer.withLock { $0 = task }
    }

    deinit { consumer.withLock { $0 }?.cancel() }

    private static func finish(_ state: Locked<State>, _ end: Result<Void, any Error>) {
        let waiter = state.withLock { state -> CheckedContinuation<Element?, any Error>? in
            state.end = end
            defer { state.waiter = nil }
            return state.waiter?.continuation
        }
        switch end {
        case .success: waiter?.resume(returning: nil)
        case .failure(let error): waiter?.resume(throwing: error)
        }
    }

    /// The next element, nil when the sequence finished; rethrows the error it ended with.
    /// - Throws: ``TimedOut`` when nothing came within `bound`.
    package func next(within bound: Duration = defaultWaitBound) async throws -> Element? {
        let id = state.withLock { state -> UInt64 in
            state.lastWaiter += 1
            return state.lastWaiter
        }
        let state = self.state
        let timer = Task {
            try? await Task.sleep(for: bound)
            let waiter = state.withLock { state -> CheckedContinuation<Element?, any Error>? in
                guard let waiter = state.waiter, waiter.id == id else {
                    state.timedOut = max(state.timedOut, id)
                    return nil
                }
                state.waiter = nil
                return waiter.continuation
            }
            waiter?.resume(throwing: TimedOut(description: "no element within \(bound)"))
        }
        defer { timer.cancel() }
        return try await withCheckedThrowingContinuation { continuation in
            let answer = state.withLock { state -> Result<Element?, any Error>? in
                if !state.received.isEmpty { return .success(state.received.removeFirst()) }
                switch state.end {
                case .success?: return .success(nil)
                case .failure(let error)?: return .failure(error)
                case nil:
                    if state.timedOut >= id { return .failure(TimedOut(description: "no element within \(bound)")) }
                    state.waiter = (id, continuation)
                    return nil
                }
            }
            if let answer { continuation.resume(with: answer) }
        }
    }

    /// How the sequence ended ("finished", or the error it threw); nil while it runs.
    package var ending: String? {
        state.withLock { state in
            switch state.end {
            case nil: nil
            case .success?: "finished"
            case .failure(let error)?: "threw \(error)"
            }
        }
    }

    /// Stops taking elements (the sequence sees its consumer cancelled).
    package func cancel() { consumer.withLock { $0 }?.cancel() }
}

/// Waits until `condition` holds, checking it every few milliseconds.
/// - Throws: ``TimedOut`` (naming `what`) when it still does not hold after `bound`.
package func eventually(
    _ what: String, within bound: Duration = defaultWaitBound, _ condition: @escaping @Sendable () async throws -> Bool
) async throws {
    let deadline = ContinuousClock.now + bound
    while try await !condition() {
        guard ContinuousClock.now < deadline else { throw TimedOut(description: "\(what): not within \(bound)") }
        try await Task.sleep(for: .milliseconds(5))
    }
}

/// Waits until `task` has ended.
/// - Throws: ``TimedOut`` (naming `what`) when it is still running after `bound`.
package func finished(_ task: Task<Void, Never>, _ what: String, within bound: Duration = defaultWaitBound) async throws {
    let ended = Locked(false)
    let watcher = Task {
        await task.value
        ended.withLock { $0 = true }
    }
    defer { watcher.cancel() }
    try await eventually("\(what) ended", within: bound) { ended.withLock { $0 } }
}
