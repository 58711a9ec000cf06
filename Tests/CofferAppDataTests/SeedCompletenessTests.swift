// Seed 004's operations that were missing: Android reads, deletes of albums, backup albums,
// ETags and device records, and a generic observation of any client query.

import Foundation
import GRDB
import Testing

@testable import CofferDatabase
@testable import CofferSettings

@Suite("Seed 004: reads, deletes, observation")
struct SeedCompletenessTests {
    @Test("an Android device asset reads back, and deletes")
    func androidAssets() throws {
        let app = try openApp()
        try app.context.sync.putAndroidAssetsBlocking([
            AndroidDeviceAsset(id: "a1", hash: Data([1, 2])), AndroidDeviceAsset(id: "a2", hash: Data([3])),
        ])
        #expect(try app.context.sync.androidAssetBlocking("a1")?.hash == Data([1, 2]))
        #expect(try app.context.sync.deleteAndroidAssetsBlocking(["a1", "missing"]) == 1)
        #expect(try app.context.sync.androidAssetBlocking("a1") == nil)
        #expect(try app.context.sync.androidAssetBlocking("a2") != nil)
    }

    @Test("albums delete by remote id; their assets stay")
    func deleteAlbums() throws {
        let app = try openApp()
        let asset = try app.context.assets.putBlocking(
            Asset(remoteId: "r1", localId: nil, ownerId: "u", checksum: "c", fileName: "f", fileCreatedAt: Date()))
        let album = try app.context.albums.putBlocking(Album(remoteId: "al", name: "A", createdAt: Date(), ownerId: "u"))
        try app.context.albums.linkBlocking(albumId: try #require(album.id), assetIds: [try #require(asset.id)])
        #expect(try app.context.albums.deleteAllByRemoteIdBlocking(["al"]) == 1)
        #expect(try app.context.albums.findByRemoteIdBlocking("al") == nil)
        #expect(try app.context.assets.findByRemoteIdBlocking("r1") != nil)
    }

    @Test("backup albums, ETags, duplicated marks and iOS records delete by id")
    func deleteSyncRecords() throws {
        let sync = try openApp().context.sync
        try sync.putBackupAlbumBlocking(BackupAlbum(id: "b1", name: "B", selection: .include, lastBackup: Date()))
        try sync.putBackupAlbumBlocking(BackupAlbum(id: "b2", name: "C", selection: .exclude, lastBackup: Date()))
        #expect(try sync.allBackupAlbumsBlocking().count == 2)
        #expect(try sync.deleteBackupAlbumsBlocking(["b1"]) == 1)
        #expect(try sync.allBackupAlbumsBlocking().map(\.id) == ["b2"])
        try sync.putETagBlocking(ETag(id: "u", assetCount: 3, time: Date()))
        #expect(try sync.deleteETagsBlocking(["u"]) == 1)
        #expect(try sync.etagBlocking("u") == nil)
        try sync.putDuplicatedBlocking(["d1"])
        #expect(try sync.deleteDuplicatedBlocking(["d1"]) == 1)
        #expect(try !sync.isDuplicatedBlocking("d1"))
        try sync.putIOSAssetsBlocking([IOSDeviceAsset(id: "i1", hash: Data([1]), modifiedTime: Date())])
        #expect(try sync.deleteIOSAssetsBlocking(["i1"]) == 1)
        #expect(try sync.iosAssetBlocking("i1") == nil)
    }

    @Test("any client query can be observed: a change to its table yields the new result")
    func observeClientQuery() async throws {
        let app = try openApp()
        let context = app.context
        var updates = context.observe(client: { try context.albums.allForOwnerBlocking("U").map(\.name) }).makeAsyncIterator()
        #expect(try await updates.next() == [])
        try await context.albums.put(Album(remoteId: "al", name: "Holiday", createdAt: Date(), ownerId: "u"))
        #expect(try await updates.next() == ["Holiday"])
    }

    @Test("any read of the database can be observed")
    func observeRead() async throws {
        let app = try openApp()
        var updates = app.context.observe { db in try ETagRow.fetchCount(db) }.makeAsyncIterator()
        #expect(try await updates.next() == 0)
        try await app.context.sync.putETag(ETag(id: "u", assetCount: 1, time: Date()))
        #expect(try await updates.next() == 1)
    }

    @Test("the seed's setting values: primaryColor defaults to Default, backupFailedSince is a date, cleanup can keep both types")
    func seedValues() throws {
        let app = try openApp()
        #expect(app.settings.get(SettingsCatalog.primaryColor) == "Default")
        #expect(SettingsCatalog.backupFailedSince.codec.kind == "date")
        #expect(app.settings.get(SettingsCatalog.backupFailedSince) == nil)
        let when = Date(timeIntervalSince1970: 1_700_000_000)
        try app.settings.putBlocking(SettingsCatalog.backupFailedSince, when)
        #expect(app.settings.get(SettingsCatalog.backupFailedSince) == when)
        try app.settings.putBlocking(SettingsCatalog.cleanupKeepMediaType, .both)
        #expect(app.settings.get(SettingsCatalog.cleanupKeepMediaType) == .both)
    }

    @Test("data migration 4 converts stored values of earlier releases to the seed's")
    func migratesStoredValues() throws {
        let url = appFolder().appendingPathComponent("app.sqlite")
        let old = try AppDatabase.openBlocking(at: url, schemaUpTo: "app-v2")
        try old.pool.write { db in
            try db.execute(
                sql: """
                    INSERT INTO coffer_settings(name, kind, value, updated_at) VALUES
                        ('version', 'int', 3, 0), ('backupFailedSince', 'json', '1700000000000', 0), ('primaryColor', 'string', 'default', 0)
                    """)
        }
        try old.close()
        let app = try AppDatabase.openBlocking(at: url)
        #expect(app.settings.get(SettingsCatalog.version) == 5)
        #expect(app.settings.get(SettingsCatalog.backupFailedSince) == Date(timeIntervalSince1970: 1_700_000_000))
        #expect(app.settings.rawValue("primaryColor")?.value == "Default".databaseValue)
    }

    @Test("data migration 4 removes a stored JSON null of backupFailedSince (unset again)")
    func migratesNull() throws {
        let url = appFolder().appendingPathComponent("app.sqlite")
        let old = try AppDatabase.openBlocking(at: url, schemaUpTo: "app-v2")
        try old.pool.write { db in
            try db.execute(
                sql:
                    "INSERT INTO coffer_settings(name, kind, value, updated_at) VALUES ('version', 'int', 3, 0), ('backupFailedSince', 'json', 'null', 0)"
            )
        }
        try old.close()
        let app = try AppDatabase.openBlocking(at: url)
        #expect(app.settings.rawValue("backupFailedSince") == nil)
    }

    @Test("cleanup keeping both types removes only other media")
    func cleanupKeepsBoth() throws {
        let app = try openApp()
        for (n, type) in [(1, Asset.MediaType.image), (2, .video), (3, .other)] {
            try app.context.assets.putBlocking(
                Asset(
                    remoteId: "r\(n)", localId: "l\(n)", ownerId: "u", checksum: "c\(n)", fileName: "f\(n)", type: type,
                    fileCreatedAt: Date(timeIntervalSince1970: 1_000), fileSize: 1))
        }
        let chosen = try AssetCleanup(database: app).candidatesBlocking(CleanupOptions(keepMediaType: .both, cutoffDaysAgo: 0), now: Date())
        #expect(chosen.map(\.remoteId) == ["r3"])
    }
}
