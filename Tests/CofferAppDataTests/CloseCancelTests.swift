// docs/concurrency.md's two rules for the app database, its collections and its settings: after
// close() every call throws the module's `closed` (never a GRDB error) and every stream ends by
// throwing it; a cancelled task's call throws CancellationError before it reads or writes.

import CofferDatabase
import CofferSettings
import CofferTestSupport
import Foundation
import Testing

/// One public call of a module, run against an open store.
struct StoreCall<Store: Sendable>: Sendable, CustomTestStringConvertible {
    let name: String
    let run: @Sendable (Store) async throws -> Void
    init(_ name: String, _ run: @escaping @Sendable (Store) async throws -> Void) {
        self.name = name
        self.run = run
    }
    var testDescription: String { name }
}

private let t0 = Date(timeIntervalSince1970: 1_600_000_000)
private func newAsset(_ id: String) -> Asset {
    Asset(remoteId: "r-\(id)", localId: "l-\(id)", ownerId: "o", checksum: "c-\(id)", fileName: "f", fileCreatedAt: t0)
}

@Suite("App database: one rule for close, one for cancellation")
struct AppDatabaseCloseCancelTests {
    /// Every call of the app database and its collections: after close each throws
    /// `DatabaseStoreError.closed`.
    static let databaseCalls: [StoreCall<AppDatabase>] = [
        StoreCall("stats()") { app in _ = try blocking { try app.statsBlocking() } },
        StoreCall("await stats()") { app in _ = try await app.stats() },
        StoreCall("compact()") { app in _ = try blocking { try app.compactBlocking() } },
        StoreCall("await compact()") { app in _ = try await app.compact() },
        StoreCall("await checkIntegrity()") { app in try await app.checkIntegrity() },
        StoreCall("assets.put") { app in _ = try blocking { try app.context.assets.putBlocking(newAsset("x")) } },
        StoreCall("await assets.put") { app in _ = try await app.context.assets.put(newAsset("x")) },
        StoreCall("await assets.putAll") { app in _ = try await app.context.assets.putAll([newAsset("x")]) },
        StoreCall("assets.findByRemoteId") { app in _ = try blocking { try app.context.assets.findByRemoteIdBlocking("r-a") } },
        StoreCall("await assets.count") { app in _ = try await app.context.assets.count() },
        StoreCall("await assets.clearLocalId") { app in _ = try await app.context.assets.clearLocalId("l-a") },
        StoreCall("await assets.deleteAllByRemoteId") { app in _ = try await app.context.assets.deleteAllByRemoteId(["r-a"]) },
        StoreCall("await albums.put") { app in
            _ = try await app.context.albums.put(Album(remoteId: "al", name: "n", createdAt: t0, ownerId: "o"))
        },
        StoreCall("await sync.putETag") { app in try await app.context.sync.putETag(ETag(id: "u", assetCount: 1, time: t0)) },
        StoreCall("await brand.save(for:)") { app in
            try await app.context.brand.save(Brand(brandId: "b", image: "i", keywords: "k", name: "n"), for: "en")
        },
        StoreCall("assets.observeOwner, iterated") { app in
            for try await _ in app.context.assets.observeOwner("o") {}
        },
        StoreCall("context.observe(client:), iterated") { app in
            for try await _ in app.context.observe(client: { try app.context.assets.countBlocking() }) {}
        },
    ]

    /// Every settings call that writes: after close each throws `SettingsError.closed`. (Reads
    /// answer from memory and never touch the disk: docs/concurrency.md.)
    static let settingsCalls: [StoreCall<AppDatabase>] = [
        StoreCall("settings.put") { app in try blocking { try app.settings.putBlocking(SettingsCatalog.tilesPerRow, 7) } },
        StoreCall("await settings.put") { app in try await app.settings.put(SettingsCatalog.tilesPerRow, 7) },
        StoreCall("settings.delete") { app in try blocking { try app.settings.deleteBlocking(SettingsCatalog.tilesPerRow) } },
        StoreCall("await settings.delete") { app in try await app.settings.delete(SettingsCatalog.tilesPerRow) },
        StoreCall("settings.changes, iterated") { app in for try await _ in app.settings.changes(SettingsCatalog.tilesPerRow) {} },
    ]

    static func closedApp() throws -> AppDatabase {
        let app = try openApp()
        try app.context.assets.putBlocking(newAsset("a"))
        try app.close()
        return app
    }

    @Test("after close() every app database and collection call throws DatabaseStoreError.closed", arguments: databaseCalls)
    func databaseClosed(_ call: StoreCall<AppDatabase>) async throws {
        let app = try Self.closedApp()
        await #expect(throws: DatabaseStoreError.closed) { try await call.run(app) }
    }

    @Test("after close() every settings write and stream throws SettingsError.closed", arguments: settingsCalls)
    func settingsClosed(_ call: StoreCall<AppDatabase>) async throws {
        let app = try Self.closedApp()
        await #expect(throws: SettingsError.closed) { try await call.run(app) }
    }

    @Test("a running observation and a running settings stream end by throwing their closed error at close()")
    func runningStreamsThrowClosed() async throws {
        let app = try openApp()
        let observed = AsyncStream<Void>.makeStream()
        let observation = Task { () async -> (any Error)? in
            do {
                for try await _ in app.context.assets.observeOwner("o") { observed.continuation.yield() }
                return nil
            } catch { return error }
        }
        let stream = app.settings.changes(SettingsCatalog.tilesPerRow, initial: true)
        let settings = Task { () async -> (any Error)? in
            do {
                for try await _ in stream { observed.continuation.yield() }
                return nil
            } catch { return error }
        }
        // Both loops have had their first value before the close.
        var started = 0
        for await _ in observed.stream {
            started += 1
            if started == 2 { break }
        }
        try app.close()
        #expect(await observation.value as? DatabaseStoreError == .closed)
        #expect(await settings.value as? SettingsError == .closed)
    }

    /// Every async call that writes, with a check that nothing was written.
    static let writes: [StoreCall<AppDatabase>] =
        databaseCalls.filter { $0.name.hasPrefix("await") }
        + settingsCalls.filter { $0.name.hasPrefix("await") }

    @Test("a cancelled task's call throws CancellationError and reads or writes nothing", arguments: writes)
    func cancelled(_ call: StoreCall<AppDatabase>) async throws {
        let app = try openApp()
        defer { try? app.close() }
        try blocking { try app.context.assets.putBlocking(newAsset("a")) }
        let before = try blocking { try app.statsBlocking().map { "\($0.table)=\($0.rows)" } }
        let assetBefore = try blocking { try app.context.assets.findByRemoteIdBlocking("r-a") }
        let error = await inCancelledTask { try await call.run(app) }
        #expect(error is CancellationError, "\(String(describing: error))")
        #expect(try blocking { try app.statsBlocking().map { "\($0.table)=\($0.rows)" } } == before)
        #expect(try blocking { try app.context.assets.findByRemoteIdBlocking("r-a") } == assetBefore)
        #expect(app.settings.tryGet(SettingsCatalog.tilesPerRow) == nil)
    }
}
