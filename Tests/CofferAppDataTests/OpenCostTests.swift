// Opening the app database does the same work at any size when there is nothing to migrate; the
// whole-file checks run after a migration, and on demand.

import CofferDatabase
import CofferSQLite
import Foundation
import GRDB
import Testing

@Suite("App database open cost")
struct AppDatabaseOpenCostTests {
    /// A closed app database holding `assets` assets, and its path.
    static func database(assets: Int) throws -> URL {
        let url = appFolder().appendingPathComponent("app.sqlite")
        let app = try AppDatabase.openBlocking(at: url)
        let t0 = Date(timeIntervalSince1970: 1_600_000_000)
        try app.context.assets.putAllBlocking(
            (0..<assets).map { i in
                Asset(
                    remoteId: "r\(i)", localId: "l\(i)", ownerId: "owner", checksum: "c\(i)", fileName: "f\(i).jpg",
                    fileCreatedAt: t0.addingTimeInterval(Double(i)))
            })
        try app.close()
        return url
    }

    static func openProfile(_ url: URL) throws -> [(sql: String, steps: Int)] {
        let profile = StatementProfile()
        let app = try AppDatabase.open(at: url, profile: profile)
        let statements = profile.statements
        try app.close()
        return statements
    }

    @Test("opening with nothing to migrate runs the same statements with the same VM steps at 10 and at 5,000 assets")
    func sameWorkAtAnySize() throws {
        let small = try Self.openProfile(try Self.database(assets: 10))
        let large = try Self.openProfile(try Self.database(assets: 5_000))
        #expect(!small.isEmpty)
        #expect(small.map(\.sql) == large.map(\.sql))
        #expect(small.map(\.steps) == large.map(\.steps), "\(Array(zip(small.map(\.sql), zip(small.map(\.steps), large.map(\.steps)))))")
        #expect(!large.contains { $0.sql.contains("quick_check") || $0.sql.contains("foreign_key_check") })
    }

    /// An asset row pointing nowhere: an album link to a missing asset, written with foreign
    /// keys off (as a damaged or hand-edited file could hold it).
    static func addDanglingLink(_ url: URL) throws {
        var config = Configuration()
        config.foreignKeysEnabled = false
        let queue = try DatabaseQueue(path: url.path, configuration: config)
        try queue.write { db in
            try db.execute(
                sql:
                    "INSERT INTO albums(remoteId, name, createdAt, modifiedAt, ownerId) VALUES ('dangling', 'D', '2021-01-01', '2021-01-01', 'owner')"
            )
            try db.execute(sql: "INSERT INTO album_assets(albumId, assetId) VALUES (?, 999999)", arguments: [db.lastInsertedRowID])
        }
        try queue.close()
    }

    @Test("checkIntegrity() reports a foreign-key violation that a launch with nothing to migrate does not look for")
    func checkOnDemand() async throws {
        let url = try Self.database(assets: 10)
        try Self.addDanglingLink(url)
        let app = try await AppDatabase.open(at: url)
        defer { try? app.close() }
        await #expect(throws: DatabaseStoreError.self) { try await app.checkIntegrity() }
    }

    @Test("checkIntegrity() passes on a sound file")
    func checkPasses() async throws {
        let app = try await AppDatabase.open(at: try Self.database(assets: 10))
        defer { try? app.close() }
        try await app.checkIntegrity()
    }
}

@Suite("Asset upsert keeps identity")
struct AssetIdentityTests {
    static func app() throws -> AppDatabase { try AppDatabase.openBlocking(at: appFolder().appendingPathComponent("app.sqlite")) }
    static let t0 = Date(timeIntervalSince1970: 1_600_000_000)

    @Test("a put whose new remote id matches a row on owner+checksum is refused, and the row keeps its remote id")
    func refusesRemoteIdChange() throws {
        let app = try Self.app()
        defer { try? app.close() }
        try app.context.assets.putBlocking(
            Asset(remoteId: "old", localId: nil, ownerId: "o", checksum: "c", fileName: "f", fileCreatedAt: Self.t0))
        #expect(throws: DatabaseStoreError.uniqueViolation(key: "ownerId+checksum", table: "assets")) {
            try app.context.assets.putBlocking(
                Asset(remoteId: "new", localId: nil, ownerId: "o", checksum: "c", fileName: "f", fileCreatedAt: Self.t0))
        }
        #expect(try app.context.assets.findByRemoteIdBlocking("old") != nil)
        #expect(try app.context.assets.findByRemoteIdBlocking("new") == nil)
    }

    @Test("a put matched by local id that names another remote id is refused")
    func refusesRemoteIdChangeByLocalId() throws {
        let app = try Self.app()
        defer { try? app.close() }
        try app.context.assets.putBlocking(
            Asset(remoteId: "r1", localId: "l1", ownerId: "o", checksum: "c1", fileName: "f", fileCreatedAt: Self.t0))
        #expect(throws: DatabaseStoreError.uniqueViolation(key: "localId", table: "assets")) {
            try app.context.assets.putBlocking(
                Asset(remoteId: "r2", localId: "l1", ownerId: "o", checksum: "c2", fileName: "f", fileCreatedAt: Self.t0))
        }
        #expect(try app.context.assets.findByLocalIdBlocking("l1")?.remoteId == "r1")
    }

    @Test("a local asset that gets backed up has its missing remote id filled in")
    func fillsMissingRemoteId() throws {
        let app = try Self.app()
        defer { try? app.close() }
        let local = try app.context.assets.putBlocking(
            Asset(remoteId: nil, localId: "l1", ownerId: "o", checksum: "c", fileName: "f", fileCreatedAt: Self.t0))
        let backed = try app.context.assets.putBlocking(
            Asset(remoteId: "r1", localId: "l1", ownerId: "o", checksum: "c", fileName: "f", fileCreatedAt: Self.t0))
        #expect(backed.id == local.id)
        #expect(try app.context.assets.findByRemoteIdBlocking("r1")?.id == local.id)
        #expect(try app.context.assets.countBlocking() == 1)
    }

    @Test("onConflict: .replaceIdentity gives the matched row the new remote id")
    func replaceWhenAsked() throws {
        let app = try Self.app()
        defer { try? app.close() }
        let old = try app.context.assets.putBlocking(
            Asset(remoteId: "old", localId: nil, ownerId: "o", checksum: "c", fileName: "f", fileCreatedAt: Self.t0))
        let new = try app.context.assets.putBlocking(
            Asset(remoteId: "new", localId: nil, ownerId: "o", checksum: "c", fileName: "f", fileCreatedAt: Self.t0),
            onConflict: .replaceIdentity)
        #expect(new.id == old.id)
        #expect(try app.context.assets.findByRemoteIdBlocking("old") == nil)
        #expect(try app.context.assets.findByRemoteIdBlocking("new")?.id == old.id)
    }

    @Test("putAll with one identity conflict writes nothing")
    func putAllAllOrNothing() throws {
        let app = try Self.app()
        defer { try? app.close() }
        try app.context.assets.putBlocking(
            Asset(remoteId: "old", localId: nil, ownerId: "o", checksum: "c", fileName: "f", fileCreatedAt: Self.t0))
        #expect(throws: DatabaseStoreError.self) {
            try app.context.assets.putAllBlocking([
                Asset(remoteId: "fresh", localId: nil, ownerId: "o", checksum: "c2", fileName: "f", fileCreatedAt: Self.t0),
                Asset(remoteId: "new", localId: nil, ownerId: "o", checksum: "c", fileName: "f", fileCreatedAt: Self.t0),
            ])
        }
        #expect(try app.context.assets.countBlocking() == 1)
        #expect(try app.context.assets.findByRemoteIdBlocking("fresh") == nil)
    }
}
