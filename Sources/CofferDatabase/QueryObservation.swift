// Observations of the app database as Coffer's own type, so an app iterates them with nothing
// but `import Coffer`, and closing the database ends every one of them.

import CofferSync
import Foundation
import GRDB

/// A query's result now and again after every committed change to what it read (unchanged
/// results are skipped), from any connection of this process. Iterate it with `for try await`;
/// each iteration is its own observation, which stops when the loop ends or its task is
/// cancelled.
///
/// When the database closes (``AppDatabase/close()``, or its container's `close()` or `reset()`),
/// every running loop ends by throwing ``DatabaseStoreError/closed`` (so a `for try await` can
/// tell "store closed" from any other end); iterating an observation after that throws it too.
/// A loop whose task is cancelled ends normally (docs/concurrency.md).
///
/// ```swift
/// for try await mine in app.context.assets.observeOwner(userId) { render(mine) }
/// ```
public struct QueryObservation<Value: Sendable>: AsyncSequence, Sendable {
    /// What each iteration yields.
    public typealias Element = Value

    let registry: ObservationRegistry
    let start: @Sendable () -> AsyncValueObservation<Value>

    /// Starts observing.
    public func makeAsyncIterator() -> Iterator {
        let (stream, continuation) = AsyncThrowingStream<Value, any Error>.makeStream()
        guard let id = registry.register(continuation) else {
            continuation.finish(throwing: DatabaseStoreError.closed)
            return Iterator(base: stream.makeAsyncIterator())
        }
        let start = self.start
        let pump = Task {
            do {
                for try await value in start() { continuation.yield(value) }
                continuation.finish()
            } catch is CancellationError {
                continuation.finish()
            } catch {
                continuation.finish(throwing: DatabaseStoreError.from(error))
            }
        }
        continuation.onTermination = { [registry] _ in
            pump.cancel()
            registry.remove(id)
        }
        // Closed between the registration and the handler: the finish came before the handler
        // existed and did not call it, so the pump is cancelled here.
        if registry.isClosed {
            pump.cancel()
            continuation.finish(throwing: DatabaseStoreError.closed)
        }
        return Iterator(base: stream.makeAsyncIterator())
    }

    /// Yields the query's results in commit order.
    public struct Iterator: AsyncIteratorProtocol {
        var base: AsyncThrowingStream<Value, any Error>.Iterator

        /// The next result; nil once the observation ended (its task was cancelled).
        /// - Throws: ``DatabaseStoreError/closed`` once its database closed.
        public mutating func next() async throws -> Value? { try await base.next() }
    }
}

/// The running observations of one database, ended together when it closes.
final class ObservationRegistry: Sendable {
    private struct State {
        var closed = false
        var nextId = 0
        var finishers: [Int: @Sendable () -> Void] = [:]
    }
    private let state = Locked(State())

    private func withLock<T: Sendable>(_ body: (inout State) -> T) -> T { state.withLock { body(&$0) } }

    /// Registers a running observation; nil when the database is already closed.
    func register<V>(_ continuation: AsyncThrowingStream<V, any Error>.Continuation) -> Int? {
        withLock { s -> Int? in
            guard !s.closed else { return nil }
            s.nextId += 1
            s.finishers[s.nextId] = { continuation.finish(throwing: DatabaseStoreError.closed) }
            return s.nextId
        }
    }

    /// Whether ``closeAll()`` ran.
    var isClosed: Bool { withLock { $0.closed } }

    func remove(_ id: Int) { _ = withLock { $0.finishers.removeValue(forKey: id) } }

    /// Ends every running observation by throwing ``DatabaseStoreError/closed``; later ones throw it too.
    func closeAll() {
        let finishers = withLock { s -> [@Sendable () -> Void] in
            s.closed = true
            defer { s.finishers = [:] }
            return Array(s.finishers.values)
        }
        finishers.forEach { $0() }
    }
}
