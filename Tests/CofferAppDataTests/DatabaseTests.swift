import CofferSettings
import CofferTestSupport
import Foundation
import GRDB
import Synchronization
import Testing

@testable import CofferDatabase

func asset(_ i: Int, owner: String = "owner-1", day: Int? = nil) -> Asset {
    Asset(
        remoteId: "r\(i)", localId: "l\(i)", ownerId: owner, checksum: "sum\(i)", fileName: "IMG_\(i).jpg",
        fileCreatedAt: Date(timeIntervalSince1970: Double(1_600_000_000 + (day ?? i) * 86_400)))
}

@Suite("Collections")
struct CollectionTests {
    @Test("the brand client works as seed 003 shows")
    func brands() throws {
        let app = try openApp()
        let brand = app.context.brand
        try brand.saveBlocking(Brand(brandId: "b1", image: "i", keywords: "k", name: "Acme"), for: "en")
        try brand.saveBlocking(Brand(brandId: "b2", image: "i", keywords: "k", name: "Acme FR"), for: "fr")
        #expect(try brand.getBrandByLanguageBlocking("en")?.map(\.brandId) == ["b1"])
        try brand.clearBrandByBlocking("en")
        #expect(try brand.getBrandByLanguageBlocking("en") == nil)
        #expect(try brand.deleteBlocking("b2") == 1)
        #expect(try brand.deleteBlocking("b2") == 0)
    }

    @Test("find by remote id, all for an owner, created between")
    func assetQueries() throws {
        let app = try openApp()
        try app.context.assets.putAllBlocking((0..<50).map { asset($0, owner: $0 % 2 == 0 ? "even" : "odd") })
        #expect(try app.context.assets.findByRemoteIdBlocking("r7")?.fileName == "IMG_7.jpg")
        #expect(try app.context.assets.allForOwnerBlocking("even").count == 25)
        let start = Date(timeIntervalSince1970: Double(1_600_000_000 + 10 * 86_400))
        let end = Date(timeIntervalSince1970: Double(1_600_000_000 + 19 * 86_400))
        #expect(try app.context.assets.createdBetweenBlocking(start, end).map(\.remoteId) == (10...19).map { "r\($0)" })
    }

    @Test("put upserts on the unique keys instead of adding a second row")
    func upsert() throws {
        let app = try openApp()
        let first = try app.context.assets.putBlocking(asset(1))
        var changed = asset(1)
        changed.isFavorite = true
        changed.localId = nil
        let second = try app.context.assets.putBlocking(changed)
        #expect(second.id == first.id)
        #expect(try app.context.assets.countBlocking() == 1)
        #expect(try app.context.assets.findByRemoteIdBlocking("r1")?.isFavorite == true)
    }

    @Test("a unique-key clash is a clear error naming the key, and putAll changes nothing")
    func uniqueClash() throws {
        let app = try openApp()
        try app.context.assets.putBlocking(asset(1))
        try app.context.assets.putBlocking(asset(2))
        // Matches asset 2 by remote id but takes asset 1's owner + checksum.
        var clash = asset(2)
        clash.checksum = "sum1"
        #expect(throws: DatabaseStoreError.uniqueViolation(key: "ownerId+checksum", table: "assets")) {
            try app.context.assets.putAllBlocking([asset(3), clash])
        }
        #expect(try app.context.assets.countBlocking() == 2)
    }

    @Test("deleteAllByRemoteId removes exactly those")
    func deleteByRemote() throws {
        let app = try openApp()
        try app.context.assets.putAllBlocking((0..<10).map { asset($0) })
        #expect(try app.context.assets.deleteAllByRemoteIdBlocking(["r1", "r2", "nope"]) == 2)
        #expect(try app.context.assets.countBlocking() == 8)
    }

    @Test("albums link assets and users; sync bookkeeping round-trips")
    func albumsAndSync() throws {
        let app = try openApp()
        let assets = try app.context.assets.putAllBlocking((0..<3).map { asset($0) })
        let album = try app.context.albums.putBlocking(Album(remoteId: "al1", name: "Trip", createdAt: Date(), ownerId: "owner-1"))
        try app.context.albums.linkBlocking(albumId: album.id!, assetIds: assets.compactMap(\.id))
        try app.context.albums.shareBlocking(albumId: album.id!, userIds: ["u2"])
        #expect(try app.context.albums.assetsBlocking(albumId: album.id!).count == 3)
        try app.context.sync.putBackupAlbumBlocking(BackupAlbum(id: "dev1", name: "Camera", selection: .include, lastBackup: Date()))
        #expect(try app.context.sync.backupAlbumsBlocking(.include).map(\.id) == ["dev1"])
        try app.context.sync.putDuplicatedBlocking(["x"])
        #expect(try app.context.sync.isDuplicatedBlocking("x"))
        try app.context.sync.putETagBlocking(ETag(id: "u1", assetCount: 5, time: Date()))
        #expect(try app.context.sync.etagBlocking("u1")?.assetCount == 5)
        try app.context.sync.putIOSAssetsBlocking([IOSDeviceAsset(id: "i1", hash: Data([1]), modifiedTime: Date())])
        #expect(try app.context.sync.iosAssetBlocking("i1")?.hash == Data([1]))
    }

    @Test("an observation yields on every committed change that affects it")
    func observation() async throws {
        let app = try openApp()
        var iterator = app.context.assets.observeOwner("owner-1").makeAsyncIterator()
        #expect(try await iterator.next()?.count == 0)
        try await app.context.assets.put(asset(1))
        #expect(try await iterator.next()?.count == 1)
        try await app.context.assets.put(asset(2, owner: "someone-else"))
        try await app.context.assets.put(asset(3))
        #expect(try await iterator.next()?.count == 2)
    }
}

@Suite("Migrations")
struct MigrationTests {
    /// A file as schema v1 of an earlier app left it, with data, and no data version yet.
    func v1File() throws -> URL {
        let folder = appFolder()
        let url = folder.appendingPathComponent("app.sqlite")
        let old = try AppDatabase.openBlocking(at: url, schemaUpTo: "app-v1")
        try old.pool.write { db in
            try db.execute(sql: "INSERT INTO coffer_settings(name, kind, value, updated_at) VALUES ('accessToken', 'string', 'secret', 0)")
            for i in 0..<200 {
                try db.execute(
                    sql: """
                        INSERT INTO assets(remoteId, localId, ownerId, checksum, fileName, type, fileCreatedAt, fileModifiedAt, updatedAt)
                        VALUES (?, ?, ?, ?, 'f.jpg', 'image', ?, ?, ?)
                        """,
                    arguments: [
                        "r\(i)", "l\(i)", i % 2 == 0 ? "OWNER-A" : "owner-b", "c\(i)", "2020-01-0\(i % 9 + 1) 00:00:00.000",
                        "2020-01-01 00:00:00.000", "2020-01-01 00:00:00.000",
                    ])
            }
            try db.execute(
                sql:
                    "INSERT INTO albums(remoteId, name, createdAt, modifiedAt, ownerId) VALUES ('al', 'A', '2020-01-01', '2020-01-01', 'OWNER-A')"
            )
            try db.execute(sql: "INSERT INTO album_assets(albumId, assetId) SELECT 1, id FROM assets WHERE id <= 10")
        }
        try old.close()
        return url
    }

    @Test("a file made by schema v1 migrates: schema, data ladder, version in the settings store")
    func migratesV1() throws {
        let url = try v1File()
        let app = try AppDatabase.openBlocking(at: url)
        #expect(app.settings.get(SettingsCatalog.version) == 5)
        #expect(app.settings.rawValue("accessToken") == nil)
        #expect(try app.context.assets.allForOwnerBlocking("owner-a").count == 100)
        let album = try app.context.albums.findByRemoteIdBlocking("al")
        #expect(album?.startDate != nil)
        #expect(try app.pool.read { db in try db.columns(in: "assets").contains { $0.name == "fileSize" } })
    }

    @Test("every step is safe to run again")
    func rerunIsSafe() throws {
        let url = try v1File()
        _ = try AppDatabase.openBlocking(at: url)
        // Force the ladder to run again from the start.
        let queue = try DatabaseQueue(path: url.path)
        try queue.write { db in try db.execute(sql: "UPDATE coffer_settings SET value = 0 WHERE name = 'version'") }
        try queue.close()
        let app = try AppDatabase.openBlocking(at: url)
        #expect(app.settings.get(SettingsCatalog.version) == 5)
        #expect(try app.context.assets.countBlocking() == 200)
    }

    @Test("a database written by a newer app version is refused and left untouched")
    func newerRefused() throws {
        let url = try v1File()
        _ = try AppDatabase.openBlocking(at: url)
        let queue = try DatabaseQueue(path: url.path)
        try queue.write { db in try db.execute(sql: "INSERT INTO grdb_migrations(identifier) VALUES ('app-v99')") }
        try queue.close()
        let before = try Data(contentsOf: url)
        #expect(throws: DatabaseStoreError.self) { _ = try AppDatabase.openBlocking(at: url) }
        #expect(try Data(contentsOf: url) == before)
    }

    @Test("a newer data version is refused too")
    func newerDataRefused() throws {
        let url = try v1File()
        _ = try AppDatabase.openBlocking(at: url)
        let queue = try DatabaseQueue(path: url.path)
        try queue.write { db in try db.execute(sql: "UPDATE coffer_settings SET value = 42 WHERE name = 'version'") }
        try queue.close()
        #expect(throws: DatabaseStoreError.newerVersion("data version 42, this app knows up to 5")) {
            _ = try AppDatabase.openBlocking(at: url)
        }
    }

    @Test("a failed foreign-key check after migrating is reported, not ignored")
    func foreignKeyFailure() throws {
        let url = try v1File()
        var config = Configuration()
        config.foreignKeysEnabled = false // a connection that does not enforce them, as a buggy writer would
        let queue = try DatabaseQueue(path: url.path, configuration: config)
        try queue.write { db in try db.execute(sql: "INSERT INTO album_assets(albumId, assetId) VALUES (99, 1)") }
        try queue.close()
        #expect(throws: DatabaseStoreError.self) { _ = try AppDatabase.openBlocking(at: url) }
    }

    @Test("a v1 file with settings but no assets still runs every step")
    func settingsOnlyFileMigrates() throws {
        let url = appFolder().appendingPathComponent("app.sqlite")
        let old = try AppDatabase.openBlocking(at: url, schemaUpTo: "app-v1")
        try old.pool.write { db in
            try db.execute(sql: "INSERT INTO coffer_settings(name, kind, value, updated_at) VALUES ('accessToken', 'string', 'secret', 0)")
        }
        try old.close()
        let app = try AppDatabase.openBlocking(at: url)
        #expect(app.settings.rawValue("accessToken") == nil)
    }

    @Test("a fresh install records the newest data version without running the steps")
    func freshInstall() throws {
        let app = try openApp()
        #expect(app.settings.get(SettingsCatalog.version) == 5)
    }
}

/// Builds the committed fixture `Fixtures/app-v1.sqlite`: a database as schema v1 left it.
/// Run with COFFER_WRITE_FIXTURES=1 to write it again; otherwise this checks it still opens as v1.
@Suite("Fixtures")
struct FixtureTests {
    static let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/app-v1.sqlite")

    static func build(at url: URL) throws {
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: url.path + suffix) }
        let old = try AppDatabase.openBlocking(at: url, schemaUpTo: "app-v1")
        try old.pool.write { db in
            try db.execute(
                sql: "INSERT INTO coffer_settings(name, kind, value, updated_at) VALUES ('accessToken', 'string', 'legacy-token', 0)")
            try db.execute(sql: "INSERT INTO coffer_settings(name, kind, value, updated_at) VALUES ('tilesPerRow', 'int', 5, 0)")
            for i in 0..<20 {
                try db.execute(
                    sql: """
                        INSERT INTO assets(remoteId, localId, ownerId, checksum, fileName, type, fileCreatedAt, fileModifiedAt, updatedAt)
                        VALUES (?, ?, 'OWNER-A', ?, 'f.jpg', 'image', ?, '2021-01-01 00:00:00.000', '2021-01-01 00:00:00.000')
                        """, arguments: ["r\(i)", "l\(i)", "c\(i)", String(format: "2021-02-%02d 00:00:00.000", i + 1)])
            }
            try db.execute(
                sql:
                    "INSERT INTO albums(remoteId, name, createdAt, modifiedAt, ownerId) VALUES ('al', 'A', '2021-01-01', '2021-01-01', 'OWNER-A')"
            )
            try db.execute(sql: "INSERT INTO album_assets(albumId, assetId) SELECT 1, id FROM assets WHERE id <= 5")
        }
        try old.pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)") }
        try old.close()
        try? FileManager.default.removeItem(atPath: url.path + "-wal")
        try? FileManager.default.removeItem(atPath: url.path + "-shm")
    }

    @Test("the committed v1 fixture migrates to the newest schema and data version")
    func committedFixtureMigrates() throws {
        if ProcessInfo.processInfo.environment["COFFER_WRITE_FIXTURES"] == "1" { try Self.build(at: Self.fixture) }
        let copy = appFolder().appendingPathComponent("app.sqlite")
        try FileManager.default.copyItem(at: Self.fixture, to: copy)
        let app = try AppDatabase.openBlocking(at: copy)
        #expect(app.settings.get(SettingsCatalog.version) == 5)
        #expect(app.settings.get(SettingsCatalog.tilesPerRow) == 5)
        #expect(app.settings.rawValue("accessToken") == nil)
        #expect(try app.context.assets.allForOwnerBlocking("owner-a").count == 20)
        #expect(try app.context.albums.findByRemoteIdBlocking("al")?.startDate != nil)
    }
}

@Suite("App database durability")
struct AppDurabilityTests {
    @Test("the app database's writer commits with synchronous = FULL")
    func writerIsFull() throws {
        let app = try openApp()
        let level = try app.pool.write { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") }
        #expect(level == 2)
    }
}

@Suite("Fresh install across processes")
struct FreshInstallRaceTests {
    @Test("of two opens that both found no file, only the one that records the first data version is a fresh install")
    func onlyOneFresh() throws {
        let url = TemporaryFolders.path("coffer-fresh").appendingPathComponent("app.sqlite")
        let first = try AppDatabase.openBlocking(at: url)
        defer { try? first.close() }
        #expect(first.isFreshInstall)
        // What a second process that also found no file then runs: the ladder, under the write
        // lock, finds the version recorded and records nothing.
        #expect(try AppDatabase.runLadder(first.pool, AppDatabase.dataMigrations, freshInstall: true).recordedFirst == false)
        let version = try first.pool.read { db in try Int.fetchOne(db, sql: "SELECT value FROM coffer_settings WHERE name = 'version'") }
        #expect(version == AppDatabase.dataMigrations.map(\.version).max())
    }

    @Test("opens of one new store from four threads at once all succeed, round after round")
    func concurrentFirstOpens() throws {
        // Each round: four openers (separate pools, as separate processes have) find no file and
        // race to make the schema. One that read `grdb_migrations` just before another committed
        // it failed with "no such table: grdb_migrations" (seen in CI as `sdk init` exit 6).
        for round in 0..<150 {
            let url = TemporaryFolders.path("coffer-race").appendingPathComponent("app.sqlite")
            let failures = Mutex<[String]>([])
            DispatchQueue.concurrentPerform(iterations: 4) { _ in
                do { try AppDatabase.openBlocking(at: url).close() } catch {
                    failures.withLock { $0.append("round \(round): \(error)") }
                }
            }
            #expect(failures.withLock { $0 }.isEmpty)
            if !failures.withLock({ $0 }).isEmpty { break }
        }
    }

    @Test("a store opened again is not a fresh install")
    func reopenNotFresh() throws {
        let url = TemporaryFolders.path("coffer-fresh").appendingPathComponent("app.sqlite")
        try AppDatabase.openBlocking(at: url).close()
        let again = try AppDatabase.openBlocking(at: url)
        defer { try? again.close() }
        #expect(!again.isFreshInstall)
    }
}
