// Change streams for views: the current value first on request, no repeats of an unchanged
// value, and enums of any integer raw type.
import CofferDatabase
import CofferSettings
import Foundation
import Testing

enum GridDensity: Int, Sendable { case compact = 1, regular = 2, spacious = 3 }

@Suite("Settings streams and keys")
struct SettingsStreamTests {
    static let density = StoreKey(enum: "gridDensity", default: GridDensity.regular)

    /// The first `count` values of `stream`.
    static func first<Value: Sendable>(_ count: Int, of stream: AsyncStream<Value>) async -> [Value] {
        var out: [Value] = []
        for await value in stream {
            out.append(value)
            if out.count == count { break }
        }
        return out
    }

    @Test("changes(initial: true) gives the current value first, then each change")
    func initialValueFirst() async throws {
        let app = try openApp()
        defer { try? app.close() }
        try app.settings.put(SettingsCatalog.tilesPerRow, 5)
        let stream = app.settings.changes(SettingsCatalog.tilesPerRow, initial: true)
        let reader = Task { await Self.first(2, of: stream) }
        try await Task.sleep(for: .milliseconds(20))
        try app.settings.put(SettingsCatalog.tilesPerRow, 6)
        #expect(await reader.value == [5, 6])
    }

    @Test("writing the value a stream gave last is not given again")
    func duplicatesNotRepeated() async throws {
        let app = try openApp()
        defer { try? app.close() }
        let stream = app.settings.changes(SettingsCatalog.tilesPerRow)
        let reader = Task { await Self.first(2, of: stream) }
        try app.settings.put(SettingsCatalog.tilesPerRow, 3)
        try app.settings.put(SettingsCatalog.tilesPerRow, 3)
        try app.settings.put(SettingsCatalog.tilesPerRow, 3)
        try app.settings.put(SettingsCatalog.tilesPerRow, 7)
        #expect(await reader.value == [3, 7])
    }

    @Test("an enum with Int raw values is a setting, stored by its raw value")
    func intEnum() throws {
        let folder = appFolder()
        let app = try openApp(folder)
        #expect(app.settings.get(Self.density) == .regular)
        try app.settings.put(Self.density, .spacious)
        try app.close()
        let again = try openApp(folder)
        defer { try? again.close() }
        #expect(again.settings.get(Self.density) == .spacious)
        #expect(again.settings.rawValue("gridDensity")?.value == 3.databaseValue)
    }
}
