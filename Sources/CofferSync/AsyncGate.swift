// The package's one async gate: tasks wait for it by suspending (no thread is held), unlike
// `Locked`, which a thread holds for a short synchronous step and never across an `await`.

/// A gate that many tasks may pass at once (shared) or one task alone (exclusive), for work that
/// awaits while it holds the gate. An exclusive request keeps new shared holders out at once and
/// then waits for the ones inside to leave, so a steady stream of shared holders never starves
/// it; exclusive requests are served in arrival order. Waiting ignores cancellation (what holds
/// the gate always leaves it), and every enter is paired with one leave of the same kind.
package final class AsyncGate: Sendable {
    private struct State {
        /// Shared holders inside.
        var shared = 0
        /// Whether an exclusive holder has the gate (or is waiting for the shared ones to leave).
        var exclusive = false
        /// The exclusive holder waiting for the shared ones to leave.
        var drained: CheckedContinuation<Void, Never>?
        /// Shared requests waiting for the exclusive holders to be done.
        var sharedWaiters: [CheckedContinuation<Void, Never>] = []
        /// Exclusive requests waiting for the current exclusive holder, in arrival order.
        var exclusiveWaiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Locked(State())

    /// An open gate.
    package init() {}

    /// Enters shared when no exclusive holder has the gate; false (without entering) otherwise.
    package func tryEnterShared() -> Bool {
        state.withLock { state in
            guard !state.exclusive else { return false }
            state.shared += 1
            return true
        }
    }

    /// Enters shared, waiting while an exclusive holder has the gate.
    package func enterShared() async {
        if tryEnterShared() { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLock { state in
                guard state.exclusive else {
                    state.shared += 1
                    return true
                }
                // Counted as inside by the exclusive holder's leave, before it resumes this one.
                state.sharedWaiters.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }

    /// Leaves a shared entry.
    package func leaveShared() {
        let resume = state.withLock { (state) -> CheckedContinuation<Void, Never>? in
            precondition(state.shared > 0, "AsyncGate: leaveShared without enterShared")
            state.shared -= 1
            guard state.shared == 0, let drained = state.drained else { return nil }
            state.drained = nil
            return drained
        }
        resume?.resume()
    }

    /// Enters alone: keeps new shared holders out, waits for an exclusive holder before it to
    /// leave, then for the shared holders inside to leave.
    package func enterExclusive() async {
        // The common case, a free gate, enters without suspending.
        let entered = state.withLock { state in
            guard !state.exclusive && state.shared == 0 else { return false }
            state.exclusive = true
            return true
        }
        if entered { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLock { state in
                if state.exclusive {
                    state.exclusiveWaiters.append(continuation)
                    return false
                }
                state.exclusive = true
                if state.shared == 0 { return true }
                state.drained = continuation
                return false
            }
            if now { continuation.resume() }
        }
    }

    /// Leaves an exclusive entry: the next exclusive request gets the gate (no shared holder got
    /// in meanwhile), or else every waiting shared request enters.
    package func leaveExclusive() {
        let resume = state.withLock { (state) -> [CheckedContinuation<Void, Never>] in
            precondition(state.exclusive, "AsyncGate: leaveExclusive without enterExclusive")
            if !state.exclusiveWaiters.isEmpty { return [state.exclusiveWaiters.removeFirst()] }
            state.exclusive = false
            state.shared += state.sharedWaiters.count
            defer { state.sharedWaiters.removeAll() }
            return state.sharedWaiters
        }
        for continuation in resume { continuation.resume() }
    }

}
