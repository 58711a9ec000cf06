// One owner-id normalisation: put, queries, observation, cleanup and migration 2 agree.

import Foundation
import GRDB
import Testing

@testable import CofferDatabase
@testable import CofferSettings

@Suite("Owner ids: one normalisation everywhere")
struct OwnerIdTests {
    func asset(_ n: Int, owner: String, localId: String? = nil) -> Asset {
        Asset(
            remoteId: "r\(n)", localId: localId, ownerId: owner, checksum: "c\(n)", fileName: "f\(n).jpg",
            fileCreatedAt: Date(timeIntervalSince1970: 1_000_000 + Double(n)))
    }

    @Test("the normalisation lower-cases ASCII letters only, like SQLite's lower()")
    func rule() throws {
        #expect(OwnerId.normalized("User-A") == "user-a")
        #expect(OwnerId.normalized("ÄBC") == "Äbc")
        let sqlite = try DatabaseQueue().read { try String.fetchOne($0, sql: "SELECT lower('ÄBC-User')") }
        #expect(sqlite == OwnerId.normalized("ÄBC-User"))
    }

    @Test("put stores a mixed-case owner id lower-cased")
    func putNormalises() throws {
        let app = try openApp()
        let stored = try app.context.assets.putBlocking(asset(1, owner: "User-A"))
        #expect(stored.ownerId == "user-a")
        #expect(try app.context.assets.findByRemoteIdBlocking("r1")?.ownerId == "user-a")
    }

    @Test("allForOwner finds an owner's assets and albums whatever the case of either side")
    func queriesNormalise() throws {
        let app = try openApp()
        try app.context.assets.putAllBlocking([asset(1, owner: "User-A"), asset(2, owner: "user-a"), asset(3, owner: "USER-B")])
        try app.context.albums.putBlocking(Album(remoteId: "al", name: "A", createdAt: Date(), modifiedAt: Date(), ownerId: "User-A"))
        #expect(try app.context.assets.allForOwnerBlocking("USER-a").count == 2)
        #expect(try app.context.albums.allForOwnerBlocking("user-A").count == 1)
    }

    @Test("owner+checksum matches across case: a put in another case updates the row")
    func uniqueKeyAcrossCase() throws {
        let app = try openApp()
        let first = try app.context.assets.putBlocking(
            Asset(
                remoteId: nil, localId: "l1", ownerId: "User-A", checksum: "same",
                fileName: "a.jpg", fileCreatedAt: Date()))
        let second = try app.context.assets.putBlocking(
            Asset(
                remoteId: nil, localId: nil, ownerId: "USER-A", checksum: "same",
                fileName: "b.jpg", fileCreatedAt: Date()))
        #expect(second.id == first.id)
        #expect(try app.context.assets.countBlocking() == 1)
    }

    @Test("observeOwner with a mixed-case id sees the owner's assets")
    func observationNormalises() async throws {
        let app = try openApp()
        try await app.context.assets.put(asset(1, owner: "user-a"))
        var iterator = app.context.assets.observeOwner("User-A").makeAsyncIterator()
        let first = try await iterator.next()
        #expect(first?.count == 1)
    }

    @Test("the cleanup dry run selects a mixed-case owner's assets for the logged-in user in another case")
    func cleanupNormalises() throws {
        let app = try openApp()
        var owned = asset(1, owner: "User-A", localId: "l1.jpg")
        owned.fileSize = 10
        try app.context.assets.putBlocking(owned)
        let chosen = try AssetCleanup(database: app).candidatesBlocking(CleanupOptions(cutoffDaysAgo: 0), now: Date(), ownerId: "USER-a")
        #expect(chosen.map(\.remoteId) == ["r1"])
    }

    @Test("migration 2 and put agree: a v1 row and a new row of one owner are found together")
    func migrationAgrees() throws {
        let url = appFolder().appendingPathComponent("app.sqlite")
        let old = try AppDatabase.openBlocking(at: url, schemaUpTo: "app-v2")
        try old.pool.write { db in
            try db.execute(
                sql: """
                    INSERT INTO assets(remoteId, localId, ownerId, checksum, fileName, type, fileCreatedAt, fileModifiedAt, updatedAt)
                    VALUES ('old', NULL, 'Owner-X', 'c-old', 'f.jpg', 'image', '2020-01-01 00:00:00.000', '2020-01-01 00:00:00.000', '2020-01-01 00:00:00.000')
                    """)
        }
        try old.close()
        let app = try AppDatabase.openBlocking(at: url)
        try app.context.assets.putBlocking(asset(2, owner: "OWNER-x"))
        #expect(Set(try app.context.assets.allForOwnerBlocking("owner-X").compactMap(\.remoteId)) == ["old", "r2"])
    }

    @Test("migration 2 completes when owner ids that differ only in case share a checksum: one row per group takes the lower-cased id")
    func migrationCaseCollision() throws {
        let url = appFolder().appendingPathComponent("app.sqlite")
        let old = try AppDatabase.openBlocking(at: url, schemaUpTo: "app-v2")
        let rows: [(remote: String, owner: String, checksum: String, updated: String)] = [
            ("a", "Owner-X", "c1", "2020-01-01 00:00:00.000"), // older: keeps its id
            ("b", "OWNER-X", "c1", "2021-01-01 00:00:00.000"), // most recently updated: lower-cased
            ("c", "owner-z", "c3", "2020-01-01 00:00:00.000"), // already lower-cased: stays
            ("d", "Owner-Z", "c3", "2022-01-01 00:00:00.000"), // keeps its id (c has the lower one)
            ("e", "Owner-Y", "c2", "2020-01-01 00:00:00.000"), // no collision: lower-cased
        ]
        try old.pool.write { db in
            for row in rows {
                try db.execute(
                    sql: """
                        INSERT INTO assets(remoteId, localId, ownerId, checksum, fileName, type, fileCreatedAt, fileModifiedAt, updatedAt)
                        VALUES (?, NULL, ?, ?, 'f.jpg', 'image', '2020-01-01 00:00:00.000', '2020-01-01 00:00:00.000', ?)
                        """, arguments: [row.remote, row.owner, row.checksum, row.updated])
            }
        }
        try old.close()
        let app = try AppDatabase.openBlocking(at: url)
        defer { try? app.close() }
        let owners = try app.pool.read { db in
            try Dictionary(
                uniqueKeysWithValues: Row.fetchAll(db, sql: "SELECT remoteId, ownerId FROM assets").map {
                    ($0[0] as String, $0[1] as String)
                })
        }
        #expect(owners == ["a": "Owner-X", "b": "owner-x", "c": "owner-z", "d": "Owner-Z", "e": "owner-y"])
        let version = try app.pool.read { db in try Int.fetchOne(db, sql: "SELECT value FROM coffer_settings WHERE name = 'version'") }
        #expect(version == AppDatabase.dataMigrations.map(\.version).max())
    }
}
