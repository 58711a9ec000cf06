// SwiftUI's way to follow a collection query: `@CofferQuery({ try $0.albums.allForOwner(id) }) var
// albums`, reading the context from the environment (`EnvironmentValues.cofferContext`, which
// `.cofferContainer(_:)` sets), as GRDBQuery's `@Query` reads `.databaseContext`. SwiftUI exists only
// on Apple platforms, so this file compiles there alone; it was reviewed line by line against
// Apple's documentation of `DynamicProperty`, `State`, `Environment` and `EnvironmentKey` (see
// docs/apple-platforms.md). Its model, ``ObservedQuery``, is tested on every platform.
#if canImport(SwiftUI)
import SwiftUI

/// The collections SwiftUI views below follow with `@CofferQuery`; nil (the default) until a view
/// above sets them, usually with the container's `.cofferContainer(_:)` modifier.
private struct CofferContextKey: EnvironmentKey {
    static let defaultValue: StorageContext? = nil
}

extension EnvironmentValues {
    /// The collections `@CofferQuery` reads (set by `.cofferContainer(_:)`, or directly with
    /// `.environment(\.cofferContext, app.context)`).
    public var cofferContext: StorageContext? {
        get { self[CofferContextKey.self] }
        set { self[CofferContextKey.self] = newValue }
    }
}

/// A collection query as a SwiftUI property: its value is the query's latest result (nil before
/// the first), and the view updates after every committed change to what the query read.
///
/// ```swift
/// struct AlbumList: View {
///     @CofferQuery({ try $0.albums.allForOwner("u1") }) var albums
///     var body: some View { List(albums ?? [], id: \.id) { Text($0.name) } }
/// }
/// // once, at the root: ContentView().cofferContainer(app)
/// ```
///
/// The query runs against the environment's context (``StorageContext``); until there is one, the
/// value is nil. A failed read ends the observation and is kept in ``error``.
@available(macOS 14.0, iOS 17.0, tvOS 17.0, watchOS 10.0, visionOS 1.0, *)
@MainActor
@propertyWrapper
public struct CofferQuery<Value: Equatable & Sendable>: DynamicProperty {
    // SwiftUI keeps one model per view identity; a re-created view struct's model is dropped.
    @State private var model: ObservedQuery<Value>
    @Environment(\.cofferContext) private var context

    /// Follows `query` in the environment's context.
    public init(_ query: @escaping @Sendable (StorageContext) throws -> Value) {
        _model = State(wrappedValue: ObservedQuery(query: query))
    }

    /// Gives the model the environment's context before SwiftUI computes `body` (a no-op while it
    /// stays the same). SwiftUI calls it on the main thread; the requirement is nonisolated.
    nonisolated public mutating func update() {
        MainActor.assumeIsolated { model.attach(context) }
    }

    /// The latest result, nil before the first.
    public var wrappedValue: Value? { model.value }

    /// Why the observation ended early, nil while it runs.
    public var error: (any Error)? { model.error }
}
#endif
