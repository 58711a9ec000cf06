// Any collection query as an `@Observable` model for SwiftUI (and anything else using
// Observation): its value follows every committed change to what the query read.

import CofferSync
import Foundation
import Observation

/// A query's latest result, observable: SwiftUI views that read ``value`` update after every
/// committed change to the tables the query read. The query is written against the clients, as
/// ``StorageContext/observe(client:)`` takes it, so it needs nothing but `import Coffer`.
///
/// ```swift
/// @State private var albums = ObservedQuery(app.context) { try app.context.albums.allForOwner(userId) }
/// List(albums.value ?? []) { … }
/// ```
///
/// ``value`` is nil until the first result; a failed read ends the observation and is kept in
/// ``error``; closing the database ends it (``value`` keeps the last result).
@available(macOS 14.0, iOS 17.0, tvOS 17.0, watchOS 10.0, visionOS 1.0, *)
@MainActor
@Observable
public final class ObservedQuery<Value: Equatable & Sendable> {
    /// The latest result, nil before the first.
    public private(set) var value: Value?
    /// Why the observation ended early, nil while it runs or after the database closed.
    public private(set) var error: (any Error)?

    /// The task that follows the query, cancelled from deinit (set once the model is initialised).
    @ObservationIgnored private let follower = Locked<Task<Void, Never>?>(nil)

    /// Observes `query` in `context` from now on (until the database closes or this model goes).
    public init(_ context: StorageContext, query: @escaping @Sendable () throws -> Value) {
        let observation = context.observe(client: query)
        let task =
            Task { [weak self] in
                do {
                    for try await value in observation {
                        guard let self else { return }
                        self.value = value
                    }
                } catch {
                    self?.error = error
                }
            }
        follower.withLock { $0 = task }
    }

    deinit { follower.withLock { $0 }?.cancel() }
}
