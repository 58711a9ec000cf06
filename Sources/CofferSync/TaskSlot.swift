// One task a model runs on behalf of its owner (an observation it follows), replaced or cancelled
// from any thread, including the owner's deinit.

/// Holds at most one running task; ``start(_:)`` keeps a new one, ``cancel()`` cancels and forgets it.
package final class TaskSlot: Sendable {
    private let task = Locked<Task<Void, Never>?>(nil)

    /// An empty slot.
    package init() {}

    /// Keeps `task` as the slot's task (the caller cancelled any earlier one).
    package func start(_ task: Task<Void, Never>) { self.task.withLock { $0 = task } }

    /// Cancels the slot's task, if any, and empties the slot.
    package func cancel() {
        task.withLock { (task) -> Task<Void, Never>? in
            defer { task = nil }
            return task
        }?.cancel()
    }
}
