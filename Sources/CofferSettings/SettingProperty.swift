// SwiftUI's way to use a setting: `@Setting(key, in: settings) var value`. SwiftUI exists only on
// Apple platforms, so this file compiles there alone; it is small on purpose and was reviewed
// line by line against Apple's documentation of `DynamicProperty`, `State` and `Binding` (see
// docs/apple-platforms.md). Its model, ``ObservedSetting``, is tested on every platform.
#if canImport(SwiftUI)
import SwiftUI

/// A setting as a SwiftUI property: reading it in `body` makes the view update when the setting
/// changes (a write by this or another `Settings` instance, or another process's once noticed),
/// assigning writes it, and `$name` is a `Binding` for controls.
///
/// ```swift
/// struct GridOptions: View {
///     @Setting(SettingsCatalog.tilesPerRow, in: app.settings) var columns
///     var body: some View { Stepper("Columns: \(columns)", value: $columns, in: 1...8) }
/// }
/// ```
///
/// Assigning blocks the main actor for the commit (about a millisecond), as any ``Settings/put(_:_:)``;
/// a write that fails keeps the stored value and is reported by ``lastError``.
@available(macOS 14.0, iOS 17.0, tvOS 17.0, watchOS 10.0, visionOS 1.0, *)
@MainActor
@propertyWrapper
public struct Setting<Value: Sendable>: DynamicProperty {
    // SwiftUI keeps one model per view identity; a re-created view struct's model is dropped.
    @State private var model: ObservedSetting<Value>

    /// Follows `key` in `settings`.
    public init(_ key: StoreKey<Value>, in settings: Settings) {
        _model = State(wrappedValue: ObservedSetting(key, in: settings))
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
