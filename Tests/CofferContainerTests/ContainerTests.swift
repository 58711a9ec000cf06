import Coffer
import CofferTestSupport
import Foundation
import GRDB
import Testing

func containerFolder() -> URL {
    TemporaryFolders.path("coffer-container")
}

let now = Date(timeIntervalSince1970: 1_700_000_000)

func daysAgo(_ days: Int) -> Date { now.addingTimeInterval(-Double(days) * 86_400) }

/// A backed-up asset (local and server copy) with a real local file in `media`.
@discardableResult
func backedUp(
    _ c: CofferContainer, _ media: URL, _ n: Int, days: Int, type: Asset.MediaType = .image,
    favorite: Bool = false, bytes: Int64 = 1_000, withFile: Bool = true
) throws -> Asset {
    let asset = Asset(
        remoteId: "r\(n)", localId: "l\(n).jpg", ownerId: "u1", checksum: "c\(n)", fileName: "IMG_\(n).jpg",
        type: type, fileCreatedAt: daysAgo(days), isFavorite: favorite, fileSize: bytes)
    if withFile {
        try FileManager.default.createDirectory(at: media, withIntermediateDirectories: true)
        try Data(count: Int(bytes)).write(to: media.appendingPathComponent("l\(n).jpg"))
    }
    return try c.context.assets.putBlocking(asset)
}

@Suite("Container")
struct ContainerTests {
    @Test("open creates every store in one folder, caches beside")
    func layout() throws {
        let folder = containerFolder()
        let c = try CofferContainer.openBlocking(CofferLocations(store: folder))
        defer { c.close() }
        try c.secure.saveBlocking("t", for: .accessToken)
        try c.cache.storeBlocking(Data([1]), for: .thumbnail("a"))
        #expect(FileManager.default.fileExists(atPath: folder.appendingPathComponent("app.sqlite").path))
        #expect(FileManager.default.fileExists(atPath: folder.appendingPathComponent("secure/key").path))
        #expect(FileManager.default.fileExists(atPath: folder.appendingPathComponent("caches/media/thumbnail").path))
    }

    @Test("the platform default on Linux follows XDG data and cache folders")
    func platformDefault() {
        let l = CofferLocations.platformDefault(environment: ["XDG_DATA_HOME": "/d", "XDG_CACHE_HOME": "/c", "HOME": "/h"])
        #if canImport(Darwin)
        #expect(l.caches.path.hasSuffix("Caches/Coffer"))
        #else
        #expect(l.data.path == "/d/coffer")
        #expect(l.caches.path == "/c/coffer")
        #endif
    }

    @Test("cache entry limits come from the settings' cache-size keys")
    func limitsFromSettings() throws {
        let folder = containerFolder()
        do {
            let c = try CofferContainer.openBlocking(CofferLocations(store: folder))
            try c.settings.putBlocking(SettingsCatalog.thumbnailCacheSize, 7)
            c.close()
        }
        let c = try CofferContainer.openBlocking(CofferLocations(store: folder))
        defer { c.close() }
        #expect(c.cache.currentLimits.entries[.thumbnail] == 7)
        #expect(c.cache.currentLimits.entries[.preview] == 350)
        #expect(c.cache.currentLimits.entries[.albumThumbnail] == 200)
    }

    @Test("changing a cache-size setting resizes the open cache")
    func limitsFollowSettings() async throws {
        let c = try await CofferContainer.open(CofferLocations(store: containerFolder()))
        defer { c.close() }
        for i in 0..<10 { try await c.cache.store(Data([UInt8(i)]), for: .preview("a\(i)")) }
        try await c.settings.put(SettingsCatalog.imageCacheSize, 4)
        for _ in 0..<200 where await c.cache.statistics().kinds[.preview]?.diskEntries != 4 {
            try await Task.sleep(nanoseconds: 10_000_000)
        }
        await #expect(c.cache.statistics().kinds[.preview]?.diskEntries == 4)
    }

    @Test("clear cache empties every kind and leaves synced data")
    func clearCache() throws {
        let c = try CofferContainer.openBlocking(CofferLocations(store: containerFolder()))
        defer { c.close() }
        let media = containerFolder()
        try backedUp(c, media, 1, days: 40)
        try c.cache.storeBlocking(Data([1]), for: .thumbnail("r1"))
        try c.cache.storeBlocking(Data([2]), for: .albumThumbnail("al"))
        try c.clearCacheBlocking()
        #expect(c.cache.statisticsBlocking().diskBytes == 0)
        #expect(try c.context.assets.countBlocking() == 1)
    }

    @Test("a fresh install clears secure items an earlier install left (Keychain survives uninstall)")
    func freshInstallClearsSecureItems() throws {
        let keychainLike = EncryptedFileSecureStorage(folder: containerFolder())
        try keychainLike.saveBlocking("stale", for: .accessToken)
        let c = try CofferContainer.openBlocking(CofferLocations(store: containerFolder()), secureStorage: keychainLike)
        defer { c.close() }
        #expect(try c.secure.loadBlocking(.accessToken) == nil)
    }

    @Test("reopening an existing container keeps secure items")
    func reopenKeepsSecureItems() throws {
        let folder = containerFolder()
        do {
            let c = try CofferContainer.openBlocking(CofferLocations(store: folder))
            try c.secure.saveBlocking("tok", for: .accessToken)
            c.close()
        }
        let c = try CofferContainer.openBlocking(CofferLocations(store: folder))
        defer { c.close() }
        #expect(try c.secure.loadBlocking(.accessToken) == "tok")
    }
}

@Suite("Container: full reset")
struct ResetTests {
    @Test("after a reset the next open behaves exactly as a fresh install")
    func resetIsFreshInstall() async throws {
        let folder = containerFolder()
        let c = try await CofferContainer.open(CofferLocations(store: folder))
        try await c.settings.put(SettingsCatalog.themeMode, .dark)
        try backedUp(c, containerFolder(), 1, days: 3)
        try await c.secure.save("tok", for: .accessToken)
        try await c.cache.store(Data([1, 2]), for: .preview("r1"))
        let wallet = try await c.openWallet(.raw(Data(repeating: 7, count: 32)))
        try await wallet.add(type: "note", id: "n1", value: "v")
        try await c.reset()

        let fresh = try await CofferContainer.open(CofferLocations(store: folder))
        defer { fresh.close() }
        #expect(fresh.database.isFreshInstall)
        #expect(fresh.settings.get(SettingsCatalog.themeMode) == .system)
        #expect(fresh.settings.get(SettingsCatalog.version) == AppDatabase.dataMigrations.map(\.version).max())
        await #expect(try fresh.context.assets.count() == 0)
        await #expect(try fresh.secure.names().isEmpty)
        await #expect(fresh.cache.data(for: .preview("r1")) == nil)
        #expect(!FileManager.default.fileExists(atPath: folder.appendingPathComponent("wallet.sqlite").path))
    }

    @Test("a reset removes only Coffer's files from shared folders")
    func resetLeavesOthers() throws {
        let data = containerFolder()
        let caches = containerFolder()
        let c = try CofferContainer.openBlocking(CofferLocations(data: data, caches: caches))
        try Data([1]).write(to: data.appendingPathComponent("someone-else.txt"))
        try Data([2]).write(to: caches.appendingPathComponent("other-cache.bin"))
        try c.resetBlocking()
        #expect(FileManager.default.fileExists(atPath: data.appendingPathComponent("someone-else.txt").path))
        #expect(FileManager.default.fileExists(atPath: caches.appendingPathComponent("other-cache.bin").path))
        #expect(!FileManager.default.fileExists(atPath: caches.appendingPathComponent("media").path))
    }

    /// A store with every part in use, closed, with separate data and caches folders.
    func usedStore() throws -> CofferLocations {
        let locations = CofferLocations(data: containerFolder(), caches: containerFolder())
        let c = try CofferContainer.openBlocking(locations)
        try c.settings.putBlocking(SettingsCatalog.tilesPerRow, 6)
        try c.secure.saveBlocking("tok", for: .accessToken)
        try c.cache.storeBlocking(Data([1, 2]), for: .thumbnail("a"))
        try FileManager.default.createDirectory(at: locations.data.appendingPathComponent("demo"), withIntermediateDirectories: true)
        try Data([3]).write(to: locations.data.appendingPathComponent("demo/wallet.sqlite"))
        c.close()
        return locations
    }

    func expectFresh(_ locations: CofferLocations) throws {
        let leftData = try FileManager.default.contentsOfDirectory(atPath: locations.data.path)
        #expect(leftData.isEmpty, "left in data: \(leftData)")
        #expect(!FileManager.default.fileExists(atPath: locations.caches.path), "caches/ should be gone")
        let fresh = try CofferContainer.openBlocking(locations)
        defer { fresh.close() }
        #expect(fresh.database.isFreshInstall)
        #expect(fresh.settings.get(SettingsCatalog.tilesPerRow) == 4)
        #expect(try fresh.secure.namesBlocking().isEmpty)
    }

    @Test("the static reset works on a store written by a newer app version, without opening it")
    func staticResetNewerVersion() throws {
        let locations = try usedStore()
        let queue = try DatabaseQueue(path: locations.appDatabase.path)
        try queue.write { try $0.execute(sql: "UPDATE coffer_settings SET value = 1000 WHERE name = 'version'") }
        try queue.close()
        #expect(throws: DatabaseStoreError.self) { try CofferContainer.openBlocking(locations) }
        try CofferContainer.resetBlocking(locations)
        try expectFresh(locations)
    }

    @Test("the static reset works on a damaged app database")
    func staticResetDamaged() throws {
        let locations = try usedStore()
        try Data(repeating: 0x41, count: 4096).write(to: locations.appDatabase)
        try CofferContainer.resetBlocking(locations)
        try expectFresh(locations)
    }

    @Test("the static reset works when the secure key will not open")
    func staticResetSecureKey() throws {
        let locations = try usedStore()
        try Data(repeating: 1, count: 3).write(to: locations.secureFolder.appendingPathComponent("key"))
        try CofferContainer.resetBlocking(locations)
        try expectFresh(locations)
    }

    @Test("a reset container refuses further work")
    func closedAfterReset() throws {
        let c = try CofferContainer.openBlocking(CofferLocations(store: containerFolder()))
        try c.resetBlocking()
        #expect(throws: ContainerError.closed) { try c.clearCacheBlocking() }
        #expect(throws: ContainerError.closed) { try c.resetBlocking() }
    }
}

@Suite("Container: free up space")
struct CleanupTests {
    @Test("without a chosen cutoff nothing runs and the error says why")
    func noCutoff() async throws {
        let c = try await CofferContainer.open(CofferLocations(store: containerFolder()))
        defer { c.close() }
        await #expect(throws: DatabaseStoreError.self) {
            try await c.freeUpSpace(library: DirectoryMediaLibrary(root: containerFolder()), dryRun: true, now: now)
        }
    }

    @Test("only backed-up local assets older than the cutoff are chosen")
    func cutoffAndServerCopy() async throws {
        let c = try await CofferContainer.open(CofferLocations(store: containerFolder()))
        defer { c.close() }
        let media = containerFolder()
        try backedUp(c, media, 1, days: 40)
        try backedUp(c, media, 2, days: 5)
        try await c.context.assets.put(
            Asset(
                remoteId: nil, localId: "only-local.jpg", ownerId: "u1", checksum: "c9", fileName: "x",
                fileCreatedAt: daysAgo(90), fileSize: 10))
        let result = try await c.freeUpSpace(
            CleanupOptions(cutoffDaysAgo: 30), library: DirectoryMediaLibrary(root: media),
            dryRun: true, now: now)
        #expect(result.removed.map(\.remoteId) == ["r1"])
    }

    @Test("favourites, the kept media type and kept albums stay")
    func keeps() async throws {
        let c = try await CofferContainer.open(CofferLocations(store: containerFolder()))
        defer { c.close() }
        let media = containerFolder()
        try backedUp(c, media, 1, days: 40, favorite: true)
        try backedUp(c, media, 2, days: 40, type: .video)
        let inAlbum = try backedUp(c, media, 3, days: 40)
        try backedUp(c, media, 4, days: 40)
        let album = try await c.context.albums.put(Album(remoteId: "keep-me", name: "Trip", createdAt: now, modifiedAt: now, ownerId: "u1"))
        try await c.context.albums.link(albumId: album.id!, assetIds: [inAlbum.id!])
        let options = CleanupOptions(keepFavorites: true, keepMediaType: .videos, keepAlbumIds: ["keep-me"], cutoffDaysAgo: 30)
        let result = try await c.freeUpSpace(options, library: DirectoryMediaLibrary(root: media), dryRun: true, now: now)
        #expect(result.removed.map(\.remoteId) == ["r4"])
    }

    @Test("the options default to the settings' cleanup keys")
    func optionsFromSettings() async throws {
        let c = try await CofferContainer.open(CofferLocations(store: containerFolder()))
        defer { c.close() }
        let media = containerFolder()
        try backedUp(c, media, 1, days: 40, favorite: true)
        try backedUp(c, media, 2, days: 40)
        try await c.settings.put(SettingsCatalog.cleanupCutoffDaysAgo, 30)
        try await c.settings.put(SettingsCatalog.cleanupKeepFavorites, false)
        let result = try await c.freeUpSpace(library: DirectoryMediaLibrary(root: media), dryRun: true, now: now)
        #expect(result.removed.count == 2)
    }

    @Test("a dry run lists the bytes and deletes nothing")
    func dryRun() async throws {
        let c = try await CofferContainer.open(CofferLocations(store: containerFolder()))
        defer { c.close() }
        let media = containerFolder()
        try backedUp(c, media, 1, days: 40, bytes: 1_500)
        try backedUp(c, media, 2, days: 50, bytes: 2_500)
        let result = try await c.freeUpSpace(
            CleanupOptions(cutoffDaysAgo: 30), library: DirectoryMediaLibrary(root: media),
            dryRun: true, now: now)
        #expect(result.bytes == 4_000)
        #expect(FileManager.default.fileExists(atPath: media.appendingPathComponent("l1.jpg").path))
        await #expect(try c.context.assets.findByRemoteId("r1")?.localId == "l1.jpg")
    }

    @Test("the real run forgets only the local copies the library actually deleted")
    func realRun() async throws {
        let c = try await CofferContainer.open(CofferLocations(store: containerFolder()))
        defer { c.close() }
        let media = containerFolder()
        try backedUp(c, media, 1, days: 40)
        try backedUp(c, media, 2, days: 40, withFile: false)
        // A folder where the file should be: the library refuses to delete it.
        try FileManager.default.createDirectory(at: media.appendingPathComponent("l2.jpg"), withIntermediateDirectories: true)
        let result = try await c.freeUpSpace(CleanupOptions(cutoffDaysAgo: 30), library: DirectoryMediaLibrary(root: media), now: now)
        #expect(result.removed.map(\.remoteId) == ["r1"])
        #expect(result.notDeleted.map(\.remoteId) == ["r2"])
        #expect(result.alreadyGone.isEmpty)
        #expect(!FileManager.default.fileExists(atPath: media.appendingPathComponent("l1.jpg").path))
        await #expect(try c.context.assets.findByRemoteId("r1")?.localId == nil)
        await #expect(try c.context.assets.findByRemoteId("r2")?.localId == "l2.jpg")
        await #expect(try c.context.assets.count() == 2)
    }

    @Test("a candidate whose file is already gone from the media folder is forgotten, as alreadyGone")
    func alreadyGone() async throws {
        let c = try await CofferContainer.open(CofferLocations(store: containerFolder()))
        defer { c.close() }
        let media = containerFolder()
        try backedUp(c, media, 1, days: 40)
        try backedUp(c, media, 2, days: 40, withFile: false) // deleted by a cleanup that was stopped before the records
        let result = try await c.freeUpSpace(CleanupOptions(cutoffDaysAgo: 30), library: DirectoryMediaLibrary(root: media), now: now)
        #expect(result.removed.map(\.remoteId) == ["r1"])
        #expect(result.alreadyGone.map(\.remoteId) == ["r2"])
        #expect(result.notDeleted.isEmpty)
        #expect(result.bytes == 1_000)
        await #expect(try c.context.assets.findByRemoteId("r2")?.localId == nil)
    }

    @Test("a media folder that does not exist forgets no local copy")
    func missingMediaFolder() async throws {
        let c = try await CofferContainer.open(CofferLocations(store: containerFolder()))
        defer { c.close() }
        let media = containerFolder() // never created
        try backedUp(c, media, 1, days: 40, withFile: false)
        let result = try await c.freeUpSpace(CleanupOptions(cutoffDaysAgo: 30), library: DirectoryMediaLibrary(root: media), now: now)
        #expect(result.notDeleted.map(\.remoteId) == ["r1"])
        #expect(result.alreadyGone.isEmpty)
        await #expect(try c.context.assets.findByRemoteId("r1")?.localId == "l1.jpg")
    }

    @Test("only the logged-in user's assets are chosen when a user is set")
    func ownerOnly() async throws {
        let c = try await CofferContainer.open(CofferLocations(store: containerFolder()))
        defer { c.close() }
        let media = containerFolder()
        try backedUp(c, media, 1, days: 40)
        try await c.context.assets.put(
            Asset(
                remoteId: "other", localId: "o.jpg", ownerId: "u2", checksum: "c8", fileName: "o",
                fileCreatedAt: daysAgo(40), fileSize: 5))
        try await c.settings.put(SettingsCatalog.currentUser, User(id: "u1", email: "a@b", name: "A"))
        let result = try await c.freeUpSpace(
            CleanupOptions(cutoffDaysAgo: 30), library: DirectoryMediaLibrary(root: media),
            dryRun: true, now: now)
        #expect(result.removed.map(\.remoteId) == ["r1"])
    }

    @Test("the directory library refuses ids that leave its folder")
    func directoryLibraryStaysInside() async throws {
        let root = containerFolder()
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        let outside = root.deletingLastPathComponent().appendingPathComponent("outside-\(UUID().uuidString)")
        try Data([1]).write(to: outside)
        let deleted = try await DirectoryMediaLibrary(root: root).delete(localIds: ["../\(outside.lastPathComponent)", "/etc/hostname"])
        #expect(deleted.isEmpty)
        #expect(FileManager.default.fileExists(atPath: outside.path))
    }

    @Test("the directory library deletes nothing through a symbolic link to a folder outside it")
    func directoryLibraryRefusesLinkedFolders() async throws {
        let root = containerFolder()
        let outside = containerFolder()
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: outside.appendingPathComponent("photos"), withIntermediateDirectories: true)
        try Data([1]).write(to: outside.appendingPathComponent("precious.txt"))
        try Data([2]).write(to: outside.appendingPathComponent("photos/a.jpg"))
        try FileManager.default.createSymbolicLink(at: root.appendingPathComponent("ext"), withDestinationURL: outside)
        let deleted = try await DirectoryMediaLibrary(root: root).delete(localIds: ["ext/precious.txt", "ext/photos", "ext/photos/a.jpg"])
        #expect(deleted.isEmpty)
        #expect(FileManager.default.fileExists(atPath: outside.appendingPathComponent("precious.txt").path))
        #expect(FileManager.default.fileExists(atPath: outside.appendingPathComponent("photos/a.jpg").path))
    }

    @Test("the directory library deletes a file in a subfolder but never a folder")
    func directoryLibraryRefusesFolders() async throws {
        let root = containerFolder()
        let album = root.appendingPathComponent("album")
        try FileManager.default.createDirectory(at: album, withIntermediateDirectories: true)
        try Data([1]).write(to: album.appendingPathComponent("a.jpg"))
        try Data([2]).write(to: album.appendingPathComponent("b.jpg"))
        let deleted = try await DirectoryMediaLibrary(root: root).delete(localIds: ["album", "album/b.jpg"])
        #expect(deleted == ["album/b.jpg"])
        #expect(FileManager.default.fileExists(atPath: album.appendingPathComponent("a.jpg").path))
        #expect(!FileManager.default.fileExists(atPath: album.appendingPathComponent("b.jpg").path))
    }
}

@Suite("Container: one Keychain space per store")
struct KeychainServiceTests {
    @Test("two stores get two Keychain services")
    func distinctStores() {
        let a = CofferLocations(store: URL(fileURLWithPath: "/home/u/a"))
        let b = CofferLocations(store: URL(fileURLWithPath: "/home/u/b"))
        #expect(a.keychainService != b.keychainService)
        #expect(a.keychainService.hasPrefix("coffer."))
        #expect(a.keychainService.count == "coffer.".count + 16)
    }

    @Test("one store keeps its service however its path is spelled")
    func stableSpelling() {
        let plain = CofferLocations.keychainService(data: URL(fileURLWithPath: "/home/u/store"), home: "/home/u")
        let slash = CofferLocations.keychainService(data: URL(fileURLWithPath: "/home/u/store/", isDirectory: true), home: "/home/u/")
        let dots = CofferLocations.keychainService(data: URL(fileURLWithPath: "/home/u/x/../store"), home: "/home/u")
        #expect(plain == slash)
        #expect(plain == dots)
    }

    @Test("a store keeps its service when the app's home moves (an iOS container after an update)")
    func stableAcrossHomeMoves() {
        let before = CofferLocations.keychainService(
            data: URL(fileURLWithPath: "/var/mobile/Containers/Data/Application/A1/Library/Application Support/Coffer"),
            home: "/var/mobile/Containers/Data/Application/A1")
        let after = CofferLocations.keychainService(
            data: URL(fileURLWithPath: "/var/mobile/Containers/Data/Application/B2/Library/Application Support/Coffer"),
            home: "/var/mobile/Containers/Data/Application/B2")
        #expect(before == after)
    }
}
