// Settings across writers: memory follows commit order, and another connection's (another
// process's) writes are noticed.

import Foundation
import GRDB
import Testing

@testable import CofferDatabase
@testable import CofferSettings

@Suite("Settings: coherence across writers")
struct SettingsCoherenceTests {
    static func diskValue(_ app: AppDatabase, _ name: String) throws -> Int? {
        try app.pool.read { try Int.fetchOne($0, sql: "SELECT value FROM coffer_settings WHERE name = ?", arguments: [name]) }
    }

    @Test("after many concurrent puts to one key from two instances, memory equals disk in both")
    func concurrentPutsOneKey() async throws {
        let folder = appFolder()
        let a = try openApp(folder)
        let b = try openApp(folder)
        defer {
            try? a.close()
            try? b.close()
        }
        await withTaskGroup(of: Void.self) { group in
            for i in 0..<200 {
                group.addTask {
                    let target = i.isMultiple(of: 2) ? a : b
                    try? target.settings.putBlocking(SettingsCatalog.tilesPerRow, i)
                }
            }
        }
        let disk = try Self.diskValue(a, "tilesPerRow")
        #expect(disk != nil)
        #expect(a.settings.get(SettingsCatalog.tilesPerRow) == disk)
        #expect(b.settings.get(SettingsCatalog.tilesPerRow) == disk)
    }

    @Test("changes(key) yields the writes in commit order, ending with the value on disk")
    func changesInCommitOrder() async throws {
        let app = try openApp()
        defer { try? app.close() }
        let stream = app.settings.changes(SettingsCatalog.groupAssetsBy)
        await withTaskGroup(of: Void.self) { group in
            for i in 1...50 { group.addTask { try? app.settings.putBlocking(SettingsCatalog.groupAssetsBy, i) } }
        }
        let disk = try Self.diskValue(app, "groupAssetsBy")
        var seen: [Int] = []
        for try await value in stream {
            seen.append(value)
            if seen.count == 50 { break }
        }
        #expect(seen.last == disk)
        #expect(Set(seen).count == 50)
    }

    @Test("a write by another connection (another process) is seen after refresh(), and changes(key) yields it")
    func otherConnectionRefresh() async throws {
        let folder = appFolder()
        let app = try openApp(folder)
        defer { try? app.close() }
        let stream = app.settings.changes(SettingsCatalog.themeMode)
        let other = try DatabaseQueue(path: folder.appendingPathComponent("app.sqlite").path)
        try await other.write { db in
            try db.execute(sql: "INSERT INTO coffer_settings(name, kind, value, updated_at) VALUES ('themeMode', 'enum', 'dark', 0)")
        }
        try other.close()
        await app.settings.refresh()
        #expect(app.settings.get(SettingsCatalog.themeMode) == .dark)
        var iterator = stream.makeAsyncIterator()
        #expect(try await iterator.next() == .dark)
    }

    @Test("a write by another connection is noticed by a later get without any call to refresh()")
    func otherConnectionNoticedByGet() async throws {
        let folder = appFolder()
        let app = try openApp(folder)
        defer { try? app.close() }
        #expect(app.settings.get(SettingsCatalog.tilesPerRow) == 4)
        let other = try DatabaseQueue(path: folder.appendingPathComponent("app.sqlite").path)
        try await other.write { db in
            try db.execute(sql: "INSERT INTO coffer_settings(name, kind, value, updated_at) VALUES ('tilesPerRow', 'int', 7, 0)")
        }
        try other.close()
        // Polled, not timed: the check runs at the first read after its interval.
        var seen = 4
        for _ in 0..<200 where seen != 7 {
            try await Task.sleep(nanoseconds: 25_000_000)
            seen = app.settings.get(SettingsCatalog.tilesPerRow)
        }
        #expect(seen == 7)
    }
}
