// Settings.set: memory at once, the disk later in one coalesced commit, flush() and close() make
// it durable, and nothing of it is lost to a re-read or a durable put. The disk is read through a
// connection of its own (what another process sees).

import CofferTestSupport
import Foundation
import GRDB
import Testing

@testable import CofferDatabase
@testable import CofferSettings

/// The value of setting `name` on disk, read through a new read-only connection.
func storedOnDisk(_ folder: URL, _ name: String) throws -> Int? {
    var config = Configuration()
    config.readonly = true
    let queue = try DatabaseQueue(path: folder.appendingPathComponent("app.sqlite").path, configuration: config)
    defer { try? queue.close() }
    return try queue.read { db in try Int.fetchOne(db, sql: "SELECT value FROM coffer_settings WHERE name = ?", arguments: [name]) }
}

/// A window so long that only `flush()` or `close()` commits.
let noTimer: UInt64 = 3_600_000_000_000

@Suite("Settings.set: memory now, the disk coalesced")
struct DeferredSettingsTests {
    static let key = SettingsCatalog.tilesPerRow

    @Test("set updates memory and every instance at once; the disk only at flush, in one commit")
    func memoryNowDiskAtFlush() throws {
        let folder = appFolder()
        let app = try openApp(folder)
        defer { try? app.close() }
        app.settings.setDeferredWriteDelay(noTimer)
        let other = try Settings(database: app.pool)
        let commits = app.settings.deferredCommits
        for value in 1...200 { try app.settings.set(Self.key, value) }
        #expect(app.settings.get(Self.key) == 200)
        #expect(other.get(Self.key) == 200)
        #expect(app.settings.deferredCommits == commits)
        #expect(try storedOnDisk(folder, Self.key.name) == nil)
        try app.settings.flushBlocking()
        #expect(app.settings.deferredCommits == commits + 1)
        #expect(try storedOnDisk(folder, Self.key.name) == 200)
    }

    @Test("without flush, the window commits on its own: many sets, few commits")
    func windowCoalesces() async throws {
        let folder = appFolder()
        let app = try openApp(folder)
        defer { try? app.close() }
        let commits = app.settings.deferredCommits
        for value in 1...500 { try app.settings.set(Self.key, value) }
        try await eventually("the deferred commit") { try storedOnDisk(folder, Self.key.name) == 500 }
        // One window's worth (a stalled machine may split the loop over two or three windows).
        #expect(app.settings.deferredCommits - commits <= 3)
    }

    @Test("close commits what set left pending; the value is there after a reopen")
    func closeFlushes() throws {
        let folder = appFolder()
        let app = try openApp(folder)
        app.settings.setDeferredWriteDelay(noTimer)
        try app.settings.set(Self.key, 7)
        try app.close()
        #expect(try storedOnDisk(folder, Self.key.name) == 7)
        let again = try openApp(folder)
        defer { try? again.close() }
        #expect(again.settings.get(Self.key) == 7)
    }

    @Test("a durable put after a pending set wins, in memory and on disk")
    func putAfterSet() throws {
        let folder = appFolder()
        let app = try openApp(folder)
        defer { try? app.close() }
        app.settings.setDeferredWriteDelay(noTimer)
        try app.settings.set(Self.key, 3)
        try app.settings.putBlocking(Self.key, 5)
        try app.settings.flushBlocking()
        #expect(app.settings.get(Self.key) == 5)
        #expect(try storedOnDisk(folder, Self.key.name) == 5)
    }

    @Test("a re-read for another connection's write keeps the values set and not committed")
    func refreshKeepsPending() throws {
        let folder = appFolder()
        let app = try openApp(folder)
        defer { try? app.close() }
        app.settings.setDeferredWriteDelay(noTimer)
        try app.settings.set(Self.key, 6)
        let outside = try DatabaseQueue(path: folder.appendingPathComponent("app.sqlite").path)
        try outside.write { db in
            try db.execute(sql: "INSERT INTO coffer_settings(name, kind, value, updated_at) VALUES ('loopVideo', 'bool', 0, 0)")
        }
        try outside.close()
        app.settings.refreshBlocking()
        #expect(app.settings.get(SettingsCatalog.loopVideo) == false)
        #expect(app.settings.get(Self.key) == 6)
    }

    @Test("a deferred commit that fails puts the stored value back in memory, and flush reports it")
    func failedCommitReverts() throws {
        let folder = appFolder()
        let app = try openApp(folder)
        defer { try? app.close() }
        app.settings.setDeferredWriteDelay(noTimer)
        try app.settings.putBlocking(Self.key, 2)
        try app.pool.write { db in
            try db.execute(
                sql: """
                    CREATE TRIGGER refuse BEFORE UPDATE ON coffer_settings WHEN NEW.name = 'tilesPerRow'
                    BEGIN SELECT RAISE(ABORT, 'refused'); END
                    """)
        }
        try app.settings.set(Self.key, 9)
        #expect(app.settings.get(Self.key) == 9)
        #expect(throws: SettingsError.self) { try app.settings.flushBlocking() }
        #expect(app.settings.get(Self.key) == 2)
        #expect(try storedOnDisk(folder, Self.key.name) == 2)
    }

    @Test("set after close throws closed and changes nothing")
    func setAfterClose() throws {
        let app = try openApp()
        try app.close()
        #expect(throws: SettingsError.closed) { try app.settings.set(Self.key, 4) }
        #expect(app.settings.get(Self.key) == Self.key.defaultValue)
    }
}

@Suite("Observation models waiting for their store (the SwiftUI wrappers' models)")
@MainActor
struct DetachedModelTests {
    @Test("ObservedSetting without settings shows the default, refuses writes, and follows once attached")
    func settingAttach() async throws {
        guard #available(macOS 14.0, iOS 17.0, *) else { return }
        let app = try openApp()
        defer { try? app.close() }
        try await app.settings.put(SettingsCatalog.tilesPerRow, 6)
        let model = ObservedSetting(SettingsCatalog.tilesPerRow)
        #expect(model.value == SettingsCatalog.tilesPerRow.defaultValue)
        model.value = 2
        #expect(model.lastError == .closed)
        model.attach(app.settings)
        #expect(model.value == 6)
        model.value = 3
        #expect(model.lastError == nil)
        #expect(app.settings.get(SettingsCatalog.tilesPerRow) == 3)
        try await app.settings.put(SettingsCatalog.tilesPerRow, 8)
        try await eventually("the model follows a put") { await model.value == 8 }
        model.attach(nil)
        #expect(model.value == SettingsCatalog.tilesPerRow.defaultValue)
    }

    @Test("ObservedQuery without a database is nil, and follows the query once attached")
    func queryAttach() async throws {
        guard #available(macOS 14.0, iOS 17.0, *) else { return }
        let app = try openApp()
        defer { try? app.close() }
        let model = ObservedQuery { context in try context.assets.countBlocking() }
        #expect(model.value == nil)
        model.attach(app.context)
        try await eventually("the first result") { await model.value == 0 }
        try await app.context.assets.put(
            Asset(remoteId: "r1", localId: nil, ownerId: "o", checksum: "c1", fileName: "f", fileCreatedAt: Date()))
        try await eventually("the result after a put") { await model.value == 1 }
        model.attach(app.context) // the same context: nothing restarts
        #expect(model.value == 1)
    }
}
