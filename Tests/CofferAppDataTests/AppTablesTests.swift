// An app's own tables in the app database: its schema steps run after Coffer's, once, and its
// reads, writes and observations go through the app database (the documented GRDB escape hatch).

import CofferDatabase
import Foundation
import GRDB
import Testing

@Suite("App tables in the app database")
struct AppTablesTests {
    static let notesV1 = AppMigration("notes-v1") { db in
        try db.execute(sql: "CREATE TABLE notes(id INTEGER PRIMARY KEY, text TEXT NOT NULL UNIQUE)")
    }
    static let notesV2 = AppMigration("notes-v2") { db in
        try db.execute(sql: "ALTER TABLE notes ADD COLUMN pinned BOOLEAN NOT NULL DEFAULT 0")
    }

    @Test("an app's schema steps run after Coffer's, once, and its rows survive a reopen")
    func schemaAndRows() async throws {
        let url = appFolder().appendingPathComponent("app.sqlite")
        let app = try await AppDatabase.open(at: url, appMigrations: [Self.notesV1])
        try await app.write { db in try db.execute(sql: "INSERT INTO notes(text) VALUES ('milk')") }
        try app.close()
        // A later app version appends a step; the first does not run again.
        let again = try await AppDatabase.open(at: url, appMigrations: [Self.notesV1, Self.notesV2])
        defer { try? again.close() }
        let rows = try await again.read { db in
            try Row.fetchAll(db, sql: "SELECT text, pinned FROM notes").map { "\($0["text"] as String) \($0["pinned"] as Bool)" }
        }
        #expect(rows == ["milk false"])
        let applied = try await again.read { db in try String.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations") }
        #expect(Array(applied.suffix(2)) == ["app:notes-v1", "app:notes-v2"])
        // Coffer's own collections are there as ever.
        try await again.context.assets.put(
            Asset(remoteId: "r", localId: nil, ownerId: "o", checksum: "c", fileName: "f", fileCreatedAt: Date()))
        #expect(try await again.context.assets.count() == 1)
    }

    @Test("an opener that knows only some of the app's steps is refused; one without app steps (the coffer tool) opens")
    func newerAppSteps() async throws {
        let url = appFolder().appendingPathComponent("app.sqlite")
        try await AppDatabase.open(at: url, appMigrations: [Self.notesV1, Self.notesV2]).close()
        await #expect(throws: DatabaseStoreError.self) {
            try await AppDatabase.open(at: url, appMigrations: [Self.notesV1]).close()
        }
        let plain = try await AppDatabase.open(at: url)
        try plain.close()
    }

    @Test("writes are all or nothing, map unique clashes, and observations of app tables follow them")
    func writesAndObservation() async throws {
        let app = try await AppDatabase.open(at: appFolder().appendingPathComponent("app.sqlite"), appMigrations: [Self.notesV1])
        defer { try? app.close() }
        var counts = app.context.observe { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM notes") ?? 0 }.makeAsyncIterator()
        #expect(try await counts.next() == 0)
        await #expect(throws: DatabaseStoreError.uniqueViolation(key: "text", table: "notes")) {
            try await app.write { db in
                try db.execute(sql: "INSERT INTO notes(text) VALUES ('a')")
                try db.execute(sql: "INSERT INTO notes(text) VALUES ('a')")
            }
        }
        try await app.write { db in try db.execute(sql: "INSERT INTO notes(text) VALUES ('b')") }
        #expect(try await counts.next() == 1, "the failed write left nothing; the next one is seen")
    }
}
