// Change streams for views: the current value first on request, no repeats of an unchanged
// value, and enums of any integer raw type.

import CofferDatabase
import CofferSettings
import CofferTestSupport
import Foundation
import GRDB
import Observation
import Testing

enum GridDensity: Int, Sendable {
    case compact = 1
    case regular = 2
    case spacious = 3
}

@Suite("Settings streams and keys")
struct SettingsStreamTests {
    static let density = StoreKey(enum: "gridDensity", default: GridDensity.regular)

    /// The first `count` values of `stream`.
    static func first<Value: Sendable>(_ count: Int, of stream: AsyncThrowingStream<Value, any Error>) async throws -> [Value] {
        var out: [Value] = []
        for try await value in stream {
            out.append(value)
            if out.count == count { break }
        }
        return out
    }

    @Test("changes(initial: true) gives the current value first, then each change")
    func initialValueFirst() async throws {
        let app = try openApp()
        defer { try? app.close() }
        try await app.settings.put(SettingsCatalog.tilesPerRow, 5)
        let updates = Updates(app.settings.changes(SettingsCatalog.tilesPerRow, initial: true))
        defer { updates.cancel() }
        #expect(try await updates.next() == 5)
        try await app.settings.put(SettingsCatalog.tilesPerRow, 6)
        #expect(try await updates.next() == 6)
    }

    @Test("writing the value a stream gave last is not given again")
    func duplicatesNotRepeated() async throws {
        let app = try openApp()
        defer { try? app.close() }
        let stream = app.settings.changes(SettingsCatalog.tilesPerRow)
        let reader = Task { try await Self.first(2, of: stream) }
        try await app.settings.put(SettingsCatalog.tilesPerRow, 3)
        try await app.settings.put(SettingsCatalog.tilesPerRow, 3)
        try await app.settings.put(SettingsCatalog.tilesPerRow, 3)
        try await app.settings.put(SettingsCatalog.tilesPerRow, 7)
        #expect(try await reader.value == [3, 7])
    }

    @Test("an enum with Int raw values is a setting, stored by its raw value")
    func intEnum() throws {
        let folder = appFolder()
        let app = try openApp(folder)
        #expect(app.settings.get(Self.density) == .regular)
        try app.settings.putBlocking(Self.density, .spacious)
        try app.close()
        let again = try openApp(folder)
        defer { try? again.close() }
        #expect(again.settings.get(Self.density) == .spacious)
        #expect(again.settings.rawValue("gridDensity")?.value == 3.databaseValue)
    }
}

@Suite("ObservedSetting")
@MainActor
struct ObservedSettingTests {
    @Test("an ObservedSetting starts at the stored value and follows another instance's writes")
    func follows() async throws {
        // Observation's models need macOS 14 / iOS 17; the package supports older systems.
        guard #available(macOS 14.0, iOS 17.0, *) else { return }
        let folder = appFolder()
        let app = try openApp(folder)
        defer { try? app.close() }
        try await app.settings.put(SettingsCatalog.tilesPerRow, 5)
        let model = ObservedSetting(SettingsCatalog.tilesPerRow, in: app.settings)
        #expect(model.value == 5)
        try await app.settings.put(SettingsCatalog.tilesPerRow, 8)
        for _ in 0..<500 where model.value != 8 { try await Task.sleep(for: .milliseconds(5)) }
        #expect(model.value == 8)
    }

    @Test("assigning value writes the setting, and Observation reports the change")
    func assignmentWrites() async throws {
        // Observation's models need macOS 14 / iOS 17; the package supports older systems.
        guard #available(macOS 14.0, iOS 17.0, *) else { return }
        let app = try openApp()
        defer { try? app.close() }
        let model = ObservedSetting(SettingsCatalog.tilesPerRow, in: app.settings)
        let changed = Flag()
        withObservationTracking {
            _ = model.value
        } onChange: {
            changed.set()
        }
        model.value = 3
        #expect(app.settings.get(SettingsCatalog.tilesPerRow) == 3)
        #expect(changed.isSet)
        #expect(model.lastError == nil)
    }

    @Test("a write that fails is kept in lastError and the value stays as stored")
    func failedWrite() async throws {
        // Observation's models need macOS 14 / iOS 17; the package supports older systems.
        guard #available(macOS 14.0, iOS 17.0, *) else { return }
        let app = try openApp()
        let model = ObservedSetting(SettingsCatalog.tilesPerRow, in: app.settings)
        try app.close()
        model.value = 9
        #expect(model.lastError == .closed)
        #expect(model.value == SettingsCatalog.tilesPerRow.defaultValue)
    }
}

/// A flag an Observation callback sets.
final class Flag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    var isSet: Bool { lock.withLock { value } }
    func set() { lock.withLock { value = true } }
}
