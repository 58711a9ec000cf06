// An app's own table through the container: `CofferContainer.open(…, appMigrations:)` creates it
// in the app database, beside Coffer's collections (the docs/container.md example).

import Coffer
import Foundation
import GRDB
import Testing

@Suite("App tables through the container")
struct ContainerAppTablesTests {
    static let notesV1 = AppMigration("notes-v1") { db in
        try db.execute(sql: "CREATE TABLE notes(id INTEGER PRIMARY KEY, text TEXT NOT NULL)")
    }
    static let notesV2 = AppMigration("notes-v2") { db in
        try db.execute(sql: "ALTER TABLE notes ADD COLUMN pinned BOOLEAN NOT NULL DEFAULT 0")
    }

    @Test("a table of the app's own is created, written, read and survives a reopen, its steps after Coffer's")
    func tableThroughContainer() async throws {
        let locations = CofferLocations(store: containerFolder())
        let app = try await CofferContainer.open(locations, appMigrations: [Self.notesV1])
        try await app.database.write { db in try db.execute(sql: "INSERT INTO notes(text) VALUES ('milk')") }
        #expect(try await app.database.read { db in try String.fetchAll(db, sql: "SELECT text FROM notes") } == ["milk"])
        app.close()

        let again = try await CofferContainer.open(locations, appMigrations: [Self.notesV1, Self.notesV2])
        defer { again.close() }
        let rows = try await again.database.read { db in
            try Row.fetchAll(db, sql: "SELECT text, pinned FROM notes").map { "\($0["text"] as String) \($0["pinned"] as Bool)" }
        }
        #expect(rows == ["milk false"])
        let applied = try await again.database.read { db in
            try String.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations ORDER BY rowid")
        }
        // Coffer's steps first, then the app's, in the order given.
        #expect(applied.first == "settings-v1")
        #expect(Array(applied.suffix(2)) == ["app:notes-v1", "app:notes-v2"])
    }

    @Test("a container that knows fewer of the app's steps than the file has refuses it, untouched")
    func newerSchemaRefused() async throws {
        let locations = CofferLocations(store: containerFolder())
        try await CofferContainer.open(locations, appMigrations: [Self.notesV1, Self.notesV2]).close()
        await #expect(throws: DatabaseStoreError.self) {
            try await CofferContainer.open(locations, appMigrations: [Self.notesV1]).close()
        }
        // The file still opens for the version that wrote it.
        try await CofferContainer.open(locations, appMigrations: [Self.notesV1, Self.notesV2]).close()
    }
}
