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
///
/// A model made with ``init(query:)`` has no database yet (what the `@CofferQuery` property
/// wrapper makes before SwiftUI gives it the environment's): its query takes the context, and
/// ``attach(_:)`` starts it.
@available(macOS 14.0, iOS 17.0, tvOS 17.0, watchOS 10.0, visionOS 1.0, *)
@MainActor
@Observable
public final class ObservedQuery<Value: Equatable & Sendable> {
    /// The latest result, nil before the first.
    public private(set) var value: Value?
    /// Why the observation ended early, nil while it runs or after the database closed.
    public private(set) var error: (any Error)?

    @ObservationIgnored private let follower = TaskSlot()
    @ObservationIgnored private let query: @Sendable (StorageContext) throws -> Value
    @ObservationIgnored private var context: StorageContext?

    /// Observes `query` in `context` from now on (until the database closes or this model goes).
    public init(_ context: StorageContext, query: @escaping @Sendable () throws -> Value) {
        self.query = { _ in try query() }
        attach(context)
    }

    /// A model of `query` with no database yet: ``value`` stays nil until ``attach(_:)``.
    /// `query` reads through the context it is given:
    /// `ObservedQuery { context in try context.albums.allForOwner(userId) }`.
    public init(query: @escaping @Sendable (StorageContext) throws -> Value) {
        self.query = query
    }

    /// Observes the query in `context` from now on, instead of the context it observed (nil:
    /// none; ``value`` becomes nil). Attaching the context it already observes does nothing, so
    /// a view may call it at every update.
    public func attach(_ context: StorageContext?) {
        guard context !== self.context else { return }
        follower.cancel()
        self.context = context
        value = nil
        error = nil
        guard let context else { return }
        let query = self.query
        let observation = context.observe(client: { try query(context) })
        follower.start(
            Task { [weak self] in
                do {
                    for try await value in observation {
                        guard let self, !Task.isCancelled else { return }
                        self.value = value
                    }
                } catch {
                    guard !Task.isCancelled else { return }
                    self?.error = error
                }
            })
    }

    deinit { follower.cancel() }
}
