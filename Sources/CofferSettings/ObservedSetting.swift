// One setting as an `@Observable` model for SwiftUI (and anything else using Observation): its
// value follows every write, this process's or another's, and assigning writes it through.

import CofferSync
import Foundation
import Observation

/// A setting's current value, observable: SwiftUI views that read ``value`` update when the
/// setting changes (a write by this or another `Settings` instance, or another process's once
/// noticed). Assigning ``value`` sets the setting with ``Settings/set(_:_:)``: memory (and every
/// view) at once, the disk within ``Settings/deferredWriteDelay`` in one commit with the other
/// values set meanwhile, so a slider's ticks never wait for an fsync on the main actor. A value
/// that cannot be set (``SettingsError/closed``, ``SettingsError/unencodable(key:reason:)``) is
/// kept in ``lastError`` and the value stays as stored. ``Settings/flush()`` makes the values
/// durable at once.
///
/// A model made without settings (``init(_:)``, what the `@Setting` property wrapper makes before
/// SwiftUI gives it the environment's) shows the key's default until ``attach(_:)`` gives it a
/// store.
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
    @ObservationIgnored private var settings: Settings?
    @ObservationIgnored private let follower = TaskSlot()

    /// Follows `key` in `settings` from now on (until the settings close or this model goes).
    public init(_ key: StoreKey<Value>, in settings: Settings) {
        self.key = key
        self.current = key.defaultValue
        attach(settings)
    }

    /// A model of `key` with no store yet: ``value`` is the key's default, and assigning it
    /// fails with ``SettingsError/closed`` until ``attach(_:)``.
    public init(_ key: StoreKey<Value>) {
        self.key = key
        self.current = key.defaultValue
    }

    /// Follows `key` in `settings` from now on, instead of the store it followed (nil: none; the
    /// value goes back to the key's default). Attaching the store it already follows does
    /// nothing, so a view may call it at every update.
    public func attach(_ settings: Settings?) {
        guard settings !== self.settings else { return }
        follower.cancel()
        self.settings = settings
        guard let settings else {
            current = key.defaultValue
            return
        }
        current = settings.get(key)
        let stream = settings.changes(key, initial: true)
        follower.start(
            Task { [weak self] in
                // The stream ends by throwing `SettingsError.closed` when the settings close:
                // the model keeps its last value.
                do {
                    for try await value in stream {
                        guard let self, !Task.isCancelled else { return }
                        self.current = value
                    }
                } catch {}
            })
    }

    deinit { follower.cancel() }

    private func write(_ newValue: Value) {
        guard let settings else {
            lastError = .closed
            return
        }
        do {
            try settings.set(key, newValue)
            current = newValue
            lastError = nil
        } catch {
            lastError = error
        }
    }
}
