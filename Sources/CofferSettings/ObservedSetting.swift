// One setting as an `@Observable` model for SwiftUI (and anything else using Observation): its
// value follows every write, this process's or another's, and assigning writes it through.

import CofferSync
import Foundation
import Observation

/// A setting's current value, observable: SwiftUI views that read ``value`` update when the
/// setting changes (a write by this or another `Settings` instance, or another process's once
/// noticed). Assigning ``value`` writes the setting (durable when it returns; a failed write is
/// kept in ``lastError`` and the value stays as stored).
///
/// ```swift
/// @State private var columns = ObservedSetting(SettingsCatalog.tilesPerRow, in: app.settings)
/// Stepper("Columns: \(columns.value)", value: $columns.value, in: 1...8)
/// ```
@available(macOS 14.0, iOS 17.0, tvOS 17.0, watchOS 10.0, visionOS 1.0, *)
@MainActor
@Observable
public final class ObservedSetting<Value: Sendable> {
    /// The setting's value; assigning it writes the setting.
    public var value: Value {
        get { current }
        set { write(newValue) }
    }
    /// The error of the last assignment that could not be written, nil after one that was.
    public private(set) var lastError: SettingsError?

    private var current: Value
    @ObservationIgnored private let key: StoreKey<Value>
    @ObservationIgnored private let settings: Settings
    /// The task that follows the setting, cancelled from deinit (set once the model is initialised).
    @ObservationIgnored private let follower = Locked<Task<Void, Never>?>(nil)

    /// Follows `key` in `settings` from now on (until the settings close or this model goes).
    public init(_ key: StoreKey<Value>, in settings: Settings) {
        self.key = key
        self.settings = settings
        self.current = settings.get(key)
        let stream = settings.changes(key, initial: true)
        let task =
            Task { [weak self] in
                // The stream ends by throwing `SettingsError.closed` when the settings close:
                // the model keeps its last value.
                do {
                    for try await value in stream {
                        guard let self else { return }
                        self.current = value
                    }
                } catch {}
            }
        follower.withLock { $0 = task }
    }

    deinit { follower.withLock { $0 }?.cancel() }

    private func write(_ newValue: Value) {
        do {
            try settings.putBlocking(key, newValue)
            current = newValue
            lastError = nil
        } catch {
            lastError = error
        }
    }
}
