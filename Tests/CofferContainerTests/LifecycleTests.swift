// After close() every store of a container answers with its module's one `closed` error, and
// the streams the container owns finish.

import Coffer
import Foundation
import Testing

@Suite("Container lifecycle")
struct ContainerLifecycleTests {
    static func closedContainer() async throws -> (CofferContainer, Wallet) {
        let app = try await CofferContainer.open(CofferLocations(store: containerFolder()))
        let wallet = try await app.openWallet(.raw(WalletKey.generateRawKey()))
        app.close()
        return (app, wallet)
    }

    @Test("the wallet it opened throws WalletError.closed")
    func wallet() async throws {
        let (_, wallet) = try await Self.closedContainer()
        await #expect(throws: WalletError.closed) { try await wallet.add(type: "t", id: "a", value: "v") }
    }

    @Test("settings writes throw SettingsError.closed; reads keep the last values")
    func settings() async throws {
        let app = try await CofferContainer.open(CofferLocations(store: containerFolder()))
        try await app.settings.put(SettingsCatalog.tilesPerRow, 6)
        app.close()
        #expect(throws: SettingsError.closed) { try app.settings.putBlocking(SettingsCatalog.tilesPerRow, 7) }
        #expect(app.settings.get(SettingsCatalog.tilesPerRow) == 6)
    }

    @Test("a settings change stream ends by throwing SettingsError.closed when the container closes")
    func settingsStreamFinishes() async throws {
        let app = try await CofferContainer.open(CofferLocations(store: containerFolder()))
        let stream = app.settings.changes(SettingsCatalog.themeMode)
        let reader = Task { () async throws -> Int in
            var seen = 0
            for try await _ in stream { seen += 1 }
            return seen
        }
        try await app.settings.put(SettingsCatalog.themeMode, .dark)
        app.close()
        // The loop ends (it would hang here, and the test time out, if the stream did not finish).
        await #expect(throws: SettingsError.closed) { _ = try await reader.value }
        await #expect(throws: SettingsError.closed) {
            for try await _ in app.settings.changes(SettingsCatalog.themeMode) {}
        }
    }

    @Test("collections throw DatabaseStoreError.closed")
    func collections() async throws {
        let (app, _) = try await Self.closedContainer()
        #expect(throws: DatabaseStoreError.closed) {
            try app.context.assets.putBlocking(
                Asset(remoteId: "r", localId: nil, ownerId: "o", checksum: "c", fileName: "f", fileCreatedAt: Date()))
        }
        #expect(throws: DatabaseStoreError.closed) { _ = try app.context.assets.findByRemoteIdBlocking("r") }
    }

    @Test("the media cache throws MediaCacheError.closed on store and load, and serves nothing")
    func cache() async throws {
        let app = try await CofferContainer.open(CofferLocations(store: containerFolder()))
        try await app.cache.store(Data([1, 2, 3]), for: .thumbnail("a"))
        app.close()
        #expect(throws: MediaCacheError.closed) { try app.cache.storeBlocking(Data([4]), for: .thumbnail("b")) }
        await #expect(throws: MediaCacheError.closed) { _ = try await app.cache.data(for: .thumbnail("c")) { Data([5]) } }
        await #expect(app.cache.data(for: .thumbnail("a")) == nil)
        #expect(app.cache.memoryData(for: .thumbnail("a")) == nil)
    }

    @Test("secure storage throws SecureStorageError.closed, and reset still removes the items")
    func secure() async throws {
        let folder = containerFolder()
        let app = try await CofferContainer.open(CofferLocations(store: folder))
        try await app.secure.save(Data("token".utf8), for: "accessToken", accessibility: .afterFirstUnlock)
        app.close()
        #expect(throws: SecureStorageError.closed) { _ = try app.secure.loadBlocking("accessToken") }
        #expect(throws: SecureStorageError.closed) {
            try app.secure.saveBlocking(Data("x".utf8), for: "other", accessibility: .afterFirstUnlock)
        }
        try await CofferContainer.reset(CofferLocations(store: folder))
        let again = try await CofferContainer.open(CofferLocations(store: folder))
        defer { again.close() }
        await #expect(try again.secure.load("accessToken") == nil)
    }
}
