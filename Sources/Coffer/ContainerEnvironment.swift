// The container in SwiftUI's environment: `.cofferContainer(app)` at the root of a view tree gives
// every view below it the container (`@Environment(\.coffer)`), its settings (`@Setting(key)`) and
// its collections (`@CofferQuery`), with no global. SwiftUI exists only on Apple platforms, so this
// file compiles there alone; it was reviewed against Apple's documentation of `EnvironmentKey`,
// `EnvironmentValues` and `View.environment(_:_:)` (see docs/apple-platforms.md).
#if canImport(SwiftUI)
import SwiftUI

/// The container views below read; nil (the default) until `.cofferContainer(_:)` sets it.
private struct CofferContainerKey: EnvironmentKey {
    static let defaultValue: CofferContainer? = nil
}

extension EnvironmentValues {
    /// The app's container (set by `.cofferContainer(_:)`): `@Environment(\.coffer) var app`.
    public var coffer: CofferContainer? {
        get { self[CofferContainerKey.self] }
        set { self[CofferContainerKey.self] = newValue }
    }
}

extension View {
    /// Puts `container` in this view's environment, with its settings (what `@Setting(key)` reads)
    /// and its collections (what `@CofferQuery` reads).
    ///
    /// ```swift
    /// WindowGroup { ContentView().cofferContainer(app) }
    /// ```
    public func cofferContainer(_ container: CofferContainer) -> some View {
        environment(\.coffer, container)
            .environment(\.cofferSettings, container.settings)
            .environment(\.cofferContext, container.context)
    }
}
#endif
