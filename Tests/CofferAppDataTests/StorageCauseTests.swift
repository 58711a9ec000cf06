// A full database file (SQLite's page limit stands in for a full disk: the same SQLITE_FULL a
// full disk gives) reaches the caller as a settings storage error whose cause says "no space",
// while the message reads as before.

import Foundation
import GRDB
import Testing

@testable import CofferSettings

@Suite("Settings storage errors keep their cause")
struct SettingsStorageCauseTests {
    @Test("a write into a full database: the cause is SQLITE_FULL (no space), not permission denied")
    func noSpace() throws {
        var configuration = Configuration()
        configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA max_page_count = 12") }
        let queue = try DatabaseQueue(path: appFolder().appendingPathComponent("full.sqlite").path, configuration: configuration)
        var migrator = DatabaseMigrator()
        Settings.registerMigrations(&migrator)
        try migrator.migrate(queue)
        let settings = try Settings(database: queue)
        defer { settings.close() }
        let big = String(repeating: "x", count: 4_000).databaseValue
        var failure: SettingsError?
        for index in 0..<100 {
            do throws(SettingsError) { try settings.putRaw("filler-\(index)", kind: "string", value: big) } catch {
                failure = error
                break
            }
        }
        let error = try #require(failure, "100 writes of 4 KB fitted into 12 pages")
        guard case .storage(let message, let cause) = error else {
            Issue.record("not a storage error: \(error)")
            return
        }
        let found = try #require(cause, "the storage error lost its cause: \(message)")
        #expect(found.isNoSpace)
        #expect(!found.isPermissionDenied)
        #expect(found.sqlitePrimaryCode == 13)
        #expect(error.description == "settings storage: \(message)")
    }
}
