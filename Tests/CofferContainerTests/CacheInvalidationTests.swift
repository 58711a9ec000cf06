import Coffer
import Foundation
import Testing

/// Seed 004: "Cache Invalidation — by asset ID when asset is deleted, by album ID when album changes".
@Suite("Container: cached images follow the collections")
struct CacheInvalidationTests {
    func cached(_ c: CofferContainer, _ keys: [MediaKey]) throws {
        for key in keys { try c.cache.storeBlocking(Data([7, 7]), for: key) }
    }

    @Test("deleting an asset through the collections drops its thumbnail and preview, and only its")
    func assetDeleted() throws {
        let c = try CofferContainer.openBlocking(CofferLocations(store: containerFolder()))
        defer { c.close() }
        try backedUp(c, containerFolder(), 1, days: 1, withFile: false)
        try backedUp(c, containerFolder(), 2, days: 1, withFile: false)
        try cached(c, [.thumbnail("r1"), .preview("r1"), .thumbnail("r2")])
        #expect(try c.context.assets.deleteAllByRemoteIdBlocking(["r1"]) == 1)
        #expect(c.cache.dataBlocking(for: .thumbnail("r1")) == nil)
        #expect(c.cache.dataBlocking(for: .preview("r1")) == nil)
        #expect(c.cache.dataBlocking(for: .thumbnail("r2")) != nil)
    }

    @Test("replacing an asset (a put over an existing one) drops its cached images")
    func assetReplaced() throws {
        let c = try CofferContainer.openBlocking(CofferLocations(store: containerFolder()))
        defer { c.close() }
        var asset = try backedUp(c, containerFolder(), 1, days: 1, withFile: false)
        try cached(c, [.thumbnail("r1"), .preview("r1")])
        asset.isFavorite.toggle()
        try c.context.assets.putBlocking(asset)
        #expect(c.cache.dataBlocking(for: .thumbnail("r1")) == nil)
        #expect(c.cache.dataBlocking(for: .preview("r1")) == nil)
    }

    @Test("inserting a new asset leaves every cached image alone")
    func newAssetKeepsCache() throws {
        let c = try CofferContainer.openBlocking(CofferLocations(store: containerFolder()))
        defer { c.close() }
        try cached(c, [.thumbnail("r1")])
        try backedUp(c, containerFolder(), 1, days: 1, withFile: false)
        #expect(c.cache.dataBlocking(for: .thumbnail("r1")) != nil)
    }

    @Test("changing, linking or deleting an album drops its cover")
    func albumChanged() throws {
        let c = try CofferContainer.openBlocking(CofferLocations(store: containerFolder()))
        defer { c.close() }
        let album = try c.context.albums.putBlocking(Album(remoteId: "a1", name: "Trip", createdAt: now, ownerId: "u1"))
        try cached(c, [.albumThumbnail("a1"), .albumThumbnail("a2")])
        var renamed = album
        renamed.name = "Trip 2"
        try c.context.albums.putBlocking(renamed)
        #expect(c.cache.dataBlocking(for: .albumThumbnail("a1")) == nil)
        #expect(c.cache.dataBlocking(for: .albumThumbnail("a2")) != nil)

        try cached(c, [.albumThumbnail("a1")])
        let asset = try backedUp(c, containerFolder(), 1, days: 1, withFile: false)
        try c.context.albums.linkBlocking(albumId: try #require(album.id), assetIds: [try #require(asset.id)])
        #expect(c.cache.dataBlocking(for: .albumThumbnail("a1")) == nil)

        try cached(c, [.albumThumbnail("a1")])
        #expect(try c.context.albums.deleteAllByRemoteIdBlocking(["a1"]) == 1)
        #expect(c.cache.dataBlocking(for: .albumThumbnail("a1")) == nil)
        #expect(c.cache.dataBlocking(for: .albumThumbnail("a2")) != nil)
    }

    @Test("a refused write (identity clash) leaves the cache as it was")
    func refusedWriteKeepsCache() throws {
        let c = try CofferContainer.openBlocking(CofferLocations(store: containerFolder()))
        defer { c.close() }
        try backedUp(c, containerFolder(), 1, days: 1, withFile: false)
        try cached(c, [.thumbnail("r1")])
        let clash = Asset(
            remoteId: "other", localId: "l1.jpg", ownerId: "u1", checksum: "c1", fileName: "x.jpg", type: .image,
            fileCreatedAt: now, isFavorite: false, fileSize: 1)
        #expect(throws: (any Error).self) { try c.context.assets.putBlocking(clash) }
        #expect(c.cache.dataBlocking(for: .thumbnail("r1")) != nil)
    }
}

@Suite("Settings: seed 004")
struct SeedFourSettingsTests {
    @Test("get(key, default) answers this call's default when unset, the value once set")
    func perCallDefault() throws {
        let c = try CofferContainer.openBlocking(CofferLocations(store: containerFolder()))
        defer { c.close() }
        #expect(c.settings.get(SettingsCatalog.themeMode, .dark) == .dark)
        try c.settings.putBlocking(SettingsCatalog.themeMode, .light)
        #expect(c.settings.get(SettingsCatalog.themeMode, .dark) == .light)
    }

    @Test("every user-setting and cache-size default is the seed's table")
    func seedDefaults() throws {
        let c = try CofferContainer.openBlocking(CofferLocations(store: containerFolder()))
        defer { c.close() }
        let s = c.settings
        #expect(s.get(SettingsCatalog.loadPreview) == true)
        #expect(s.get(SettingsCatalog.loadOriginal) == false)
        #expect(s.get(SettingsCatalog.themeMode).rawValue == "system")
        #expect(s.get(SettingsCatalog.primaryColor) == "Default")
        #expect(s.get(SettingsCatalog.dynamicTheme) == false)
        #expect(s.get(SettingsCatalog.colorfulInterface) == true)
        #expect(s.get(SettingsCatalog.tilesPerRow) == 4)
        #expect(s.get(SettingsCatalog.dynamicLayout) == false)
        #expect(s.get(SettingsCatalog.groupAssetsBy) == 0)
        #expect(s.get(SettingsCatalog.storageIndicator) == true)
        #expect(s.get(SettingsCatalog.loopVideo) == true)
        #expect(s.get(SettingsCatalog.autoPlayVideo) == true)
        #expect(s.get(SettingsCatalog.enableHapticFeedback) == true)
        #expect(s.get(SettingsCatalog.thumbnailCacheSize) == 10_000)
        #expect(s.get(SettingsCatalog.imageCacheSize) == 350)
        #expect(s.get(SettingsCatalog.albumThumbnailCacheSize) == 200)
    }
}
