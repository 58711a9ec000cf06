// SwiftUI's way to use a setting: `@Setting(.tilesPerRow) var columns` (the settings come from the
// environment, `EnvironmentValues.cofferSettings`, which `.cofferContainer(_:)` sets) or
// `@Setting(key, in: settings)`. SwiftUI exists only on Apple platforms, so this file compiles
// there alone; it is small on purpose and was reviewed line by line against Apple's documentation
// of `DynamicProperty`, `State`, `Binding`, `Environment` and `EnvironmentKey` (see
// docs/apple-platforms.md). Its model, ``ObservedSetting``, is tested on every platform.
#if canImport(SwiftUI)
import SwiftUI

/// The settings SwiftUI views below read with `@Setting(key)`; nil (the default) until a view above
/// sets them, usually with the container's `.cofferContainer(_:)` modifier.
private struct CofferSettingsKey: EnvironmentKey {
    static let defaultValue: Settings? = nil
}

extension EnvironmentValues {
    /// The settings `@Setting(key)` reads and writes (set by `.cofferContainer(_:)`, or directly
    /// with `.environment(\.cofferSettings, settings)`).
    public var cofferSettings: Settings? {
        get { self[CofferSettingsKey.self] }
        set { self[CofferSettingsKey.self] = newValue }
    }
}

/// A setting as a SwiftUI property: reading it in `body` makes the view update when the setting
/// changes (a write by this or another `Settings` instance, or another process's once noticed),
/// assigning sets it, and `$name` is a `Binding` for controls.
///
/// ```swift
/// struct GridOptions: View {
///     @Setting(.tilesPerRow) var columns          // the environment's settings
///     var body: some View { Stepper("Columns: \(columns)", value: $columns, in: 1...8) }
/// }
/// // once, at the root: ContentView().cofferContainer(app)
/// ```
///
/// Assigning sets the value with ``Settings/set(_:_:)``: memory and every view at once, the disk
/// within ``Settings/deferredWriteDelay`` in one commit with the other values set meanwhile (the
/// main actor never waits for the disk; ``Settings/flush()`` makes them durable now). A value that
/// cannot be set is reported by ``lastError`` and the stored value stays. Until the environment
/// has settings (a view outside `.cofferContainer(_:)`), the key's default is shown.
@available(macOS 14.0, iOS 17.0, tvOS 17.0, watchOS 10.0, visionOS 1.0, *)
@MainActor
@propertyWrapper
public struct Setting<Value: Sendable>: DynamicProperty {
    // SwiftUI keeps one model per view identity; a re-created view struct's model is dropped.
    @State private var model: ObservedSetting<Value>
    @Environment(\.cofferSettings) private var environmentSettings
    /// The settings given to the initializer, which the environment's do not replace.
    private let givenSettings: Settings?

    /// Follows `key` in `settings`.
    public init(_ key: StoreKey<Value>, in settings: Settings) {
        _model = State(wrappedValue: ObservedSetting(key, in: settings))
        givenSettings = settings
    }

    /// Follows `key` in the environment's settings (`EnvironmentValues.cofferSettings`):
    /// `@Setting(.tilesPerRow) var columns`.
    public init(_ key: StoreKey<Value>) {
        _model = State(wrappedValue: ObservedSetting(key))
        givenSettings = nil
    }

    /// Gives the model the environment's settings before SwiftUI computes `body` (a no-op while
    /// they stay the same). SwiftUI calls it on the main thread; the requirement is nonisolated.
    nonisolated public mutating func update() {
        MainActor.assumeIsolated { model.attach(givenSettings ?? environmentSettings) }
    }

    /// The setting's value; assigning it writes the setting.
    public var wrappedValue: Value {
        get { model.value }
        nonmutating set { model.value = newValue }
    }

    /// A binding to the setting's value, for controls.
    public var projectedValue: Binding<Value> { $model.value }

    /// The error of the last assignment that could not be written, nil after one that was.
    public var lastError: SettingsError? { model.lastError }
}
#endif
