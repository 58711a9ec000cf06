import CofferTestSupport
import Foundation
import GRDB
import Testing

@testable import CofferDatabase
@testable import CofferSettings

func appFolder(_ name: String = #function) -> URL {
    TemporaryFolders.make("coffer-app-\(name.filter(\.isLetter))")
}

func openApp(_ folder: URL = appFolder()) throws -> AppDatabase {
    try AppDatabase.openBlocking(at: folder.appendingPathComponent("app.sqlite"))
}

@Suite("Settings")
struct SettingsTests {
    @Test("an unset key gives its default; tryGet gives nil")
    func defaults() throws {
        let app = try openApp()
        #expect(app.settings.get(SettingsCatalog.tilesPerRow) == 4)
        #expect(app.settings.tryGet(SettingsCatalog.tilesPerRow) == nil)
        #expect(app.settings.get(SettingsCatalog.themeMode) == .system)
        #expect(app.settings.get(SettingsCatalog.currentUser) == nil)
    }

    @Test("every kind of value round-trips through put and a reopen")
    func roundTrips() throws {
        let folder = appFolder()
        let user = User(id: "u1", email: "a@example.com", name: "Alice")
        let when = Date(timeIntervalSince1970: 1_700_000_000.123)
        do {
            let app = try openApp(folder)
            try app.settings.putBlocking(SettingsCatalog.tilesPerRow, 6)
            try app.settings.putBlocking(SettingsCatalog.loadOriginal, true)
            try app.settings.putBlocking(SettingsCatalog.serverUrl, "https://photos.example")
            try app.settings.putBlocking(StoreKey("ratio", default: 1.0), 1.5)
            try app.settings.putBlocking(StoreKey("since", default: Date(timeIntervalSince1970: 0)), when)
            try app.settings.putBlocking(StoreKey("blob", default: Data()), Data([1, 2, 3]))
            try app.settings.putBlocking(SettingsCatalog.themeMode, .dark)
            try app.settings.putBlocking(SettingsCatalog.currentUser, user)
            try app.close()
        }
        let app = try openApp(folder)
        #expect(app.settings.get(SettingsCatalog.tilesPerRow) == 6)
        #expect(app.settings.get(SettingsCatalog.loadOriginal))
        #expect(app.settings.get(SettingsCatalog.serverUrl) == "https://photos.example")
        #expect(app.settings.get(StoreKey("ratio", default: 1.0)) == 1.5)
        #expect(
            app.settings.get(StoreKey("since", default: Date(timeIntervalSince1970: 0))) == Date(timeIntervalSince1970: 1_700_000_000.123))
        #expect(app.settings.get(StoreKey("blob", default: Data())) == Data([1, 2, 3]))
        #expect(app.settings.get(SettingsCatalog.themeMode) == .dark)
        #expect(app.settings.get(SettingsCatalog.currentUser) == user)
    }

    @Test("a date beyond what milliseconds in an Int64 hold is stored as the farthest one, not a trap")
    func farDates() throws {
        let folder = appFolder()
        let key = StoreKey("when", default: Date(timeIntervalSince1970: 0))
        let past = StoreKey(optionalDate: "past")
        do {
            let app = try openApp(folder)
            try app.settings.putBlocking(key, Date(timeIntervalSince1970: 1e300))
            try app.settings.putBlocking(past, Date(timeIntervalSince1970: -1e300))
            try app.close()
        }
        let app = try openApp(folder)
        #expect(app.settings.get(key) == Date(timeIntervalSince1970: Double(Int64.max) / 1000))
        #expect(app.settings.get(past) == Date(timeIntervalSince1970: Double(Int64.min) / 1000))
    }

    @Test("a value stored under another type is reported and the default returned")
    func typeMismatch() throws {
        let app = try openApp()
        try app.settings.putBlocking(StoreKey("tiles", default: "four"), "seven")
        let asInt = StoreKey("tiles", default: 4)
        #expect(app.settings.get(asInt) == 4)
        #expect(throws: SettingsError.typeMismatch(key: "tiles", stored: "string", expected: "int")) { try app.settings.value(asInt) }
    }

    @Test("delete brings the default back")
    func deleteKey() throws {
        let app = try openApp()
        try app.settings.putBlocking(SettingsCatalog.tilesPerRow, 9)
        try app.settings.deleteBlocking(SettingsCatalog.tilesPerRow)
        #expect(app.settings.get(SettingsCatalog.tilesPerRow) == 4)
    }

    @Test("changes() yields writes made by another Settings instance on the same file")
    func crossInstanceChanges() async throws {
        let folder = appFolder()
        let app = try openApp(folder)
        let other = try Settings(database: app.pool)
        var iterator = app.settings.changes(SettingsCatalog.tilesPerRow).makeAsyncIterator()
        try await other.put(SettingsCatalog.tilesPerRow, 7)
        try await other.delete(SettingsCatalog.tilesPerRow)
        #expect(try await iterator.next() == 7)
        #expect(try await iterator.next() == 4)
        #expect(app.settings.get(SettingsCatalog.tilesPerRow) == 4)
    }

    @Test("a put is on disk when it returns: a second connection reads it")
    func durablePut() throws {
        let folder = appFolder()
        let app = try openApp(folder)
        try app.settings.putBlocking(SettingsCatalog.assetETag, "etag-1")
        let queue = try DatabaseQueue(path: folder.appendingPathComponent("app.sqlite").path)
        let stored = try queue.read { db in try String.fetchOne(db, sql: "SELECT value FROM coffer_settings WHERE name = 'assetETag'") }
        #expect(stored == "etag-1")
    }

    @Test("the catalogue has no secrets")
    func noSecrets() {
        #expect(!SettingsCatalog.all.contains { $0.name.lowercased().contains("token") })
        #expect(SettingsCatalog.all.count == 33)
    }
}

@Suite("Settings names in Unicode form C")
struct SettingsNameNormalizationTests {
    static let composed = "caf\u{E9}" // é as one scalar (form C)
    static let decomposed = "cafe\u{301}" // e and a combining acute accent (form D)

    func storedRows(_ app: AppDatabase) throws -> [[UInt8]] {
        try app.pool.read { db in
            try String.fetchAll(db, sql: "SELECT name FROM coffer_settings WHERE name <> 'version'").map { Array($0.utf8) }
        }
    }

    @Test("two spellings of one name are one row, stored in form C; the last write wins after a reopen")
    func oneRowPerName() throws {
        let folder = appFolder()
        do {
            let app = try openApp(folder)
            defer { try? app.close() }
            try app.settings.putBlocking(StoreKey(Self.composed, default: 0), 1)
            try app.settings.putBlocking(StoreKey(Self.decomposed, default: 0), 2)
            try app.settings.putBlocking(StoreKey(Self.composed, default: 0), 3)
            #expect(try storedRows(app) == [Array(Self.composed.utf8)])
        }
        let reopened = try openApp(folder)
        defer { try? reopened.close() }
        #expect(reopened.settings.get(StoreKey(Self.decomposed, default: 0)) == 3)
    }

    @Test("deleting by either spelling removes the value")
    func deleteEitherSpelling() throws {
        let folder = appFolder()
        let app = try openApp(folder)
        try app.settings.putBlocking(StoreKey(Self.composed, default: 0), 1)
        try app.settings.deleteRaw(Self.decomposed)
        #expect(try storedRows(app).isEmpty)
        try app.close()
        let reopened = try openApp(folder)
        defer { try? reopened.close() }
        #expect(reopened.settings.tryGet(StoreKey(Self.composed, default: 0)) == nil)
    }

    @Test("data migration 5 keeps the newest of a name's legacy spellings, under form C")
    func migrationKeepsNewest() throws {
        let folder = appFolder()
        let url = folder.appendingPathComponent("app.sqlite")
        do {
            let app = try openApp(folder)
            // As an older release wrote them: each spelling its own row; the decomposed one newer.
            try app.pool.write { db in
                try db.execute(
                    sql: """
                        INSERT INTO coffer_settings(name, kind, value, updated_at) VALUES (?, 'int', 1, 1000), (?, 'int', 2, 2000);
                        UPDATE coffer_settings SET value = 4 WHERE name = 'version'
                        """, arguments: [Self.composed, Self.decomposed])
            }
            try app.close()
        }
        let app = try AppDatabase.openBlocking(at: url)
        defer { try? app.close() }
        #expect(try storedRows(app) == [Array(Self.composed.utf8)])
        #expect(app.settings.get(StoreKey(Self.composed, default: 0)) == 2)
        #expect(try app.pool.read { db in try Int.fetchOne(db, sql: "SELECT value FROM coffer_settings WHERE name = 'version'") } == 5)
    }
}
