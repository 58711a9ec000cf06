// The async shape of the public API (docs/concurrency.md, "Async shape"): in async code the plain
// name is the async form, the blocking twin is named `…Blocking` and can be called from sync code,
// and the old same-named blocking forms still work for one release.
//
// Which form a call resolved to is told apart from outside by cancellation: an async form checks
// the task first and throws `CancellationError` before it writes, a blocking form runs on the
// caller's thread and writes whatever the task.

import Coffer
import CofferTestSupport
import Foundation
import Testing

private let tiles = SettingsCatalog.tilesPerRow

/// Sync code (a command-line tool, a `DispatchQueue` block): every `…Blocking` form can be named
/// here without a closure or a helper, and none needs `await`.
private func writeFromSyncCode(_ app: CofferContainer) throws {
    try app.settings.putBlocking(tiles, 6)
    try app.context.assets.putBlocking(asset(1))
    try app.cache.storeBlocking(Data("thumb".utf8), for: .thumbnail("r1"))
    try app.secure.saveBlocking(Data("token".utf8), for: "token", accessibility: .afterFirstUnlock)
    try SSLClientCertificate(data: Data("cert".utf8), password: "pw").saveBlocking(to: app.secure)
}

/// The old blocking names, called the way pre-rename code does. The probe's method is itself
/// deprecated, so calling the deprecated names inside it adds no warning to the build; it is
/// called through a protocol whose requirement is not deprecated.
private protocol OldNamesProbe {
    func write(_ app: CofferContainer) throws
}

private struct OldNames: OldNamesProbe {
    @available(*, deprecated, message: "calls the deprecated blocking names on purpose")
    func write(_ app: CofferContainer) throws {
        try app.settings.put(tiles, 9)
        try app.context.assets.put(asset(2))
        try app.cache.store(Data("old".utf8), for: .thumbnail("r2"))
        try app.secure.save(Data("old".utf8), for: "old", accessibility: .afterFirstUnlock)
        _ = try app.database.stats()
    }
}

@Suite("The async shape: plain name async, …Blocking blocks, old names deprecated")
struct AsyncShapeTests {
    @Test("in async code the plain name is the async form: a cancelled task's call throws CancellationError and writes nothing")
    func plainNameIsAsync() async throws {
        let app = try await CofferContainer.open(scratchLocations())
        defer { app.close() }
        let errors = [
            await inCancelledTask { try await app.settings.put(tiles, 7) },
            await inCancelledTask { try await app.context.assets.put(asset(3)) },
            await inCancelledTask { try await app.cache.store(Data("x".utf8), for: .thumbnail("r3")) },
            await inCancelledTask { try await app.secure.save(Data("x".utf8), for: "x", accessibility: .afterFirstUnlock) },
            await inCancelledTask { try await SSLClientCertificate(data: Data("c".utf8), password: "p").save(to: app.secure) },
        ]
        for error in errors { #expect(error is CancellationError) }
        #expect(app.settings.get(tiles) != 7)
        #expect(try await app.context.assets.findByRemoteId("r3") == nil)
        #expect(app.cache.memoryData(for: .thumbnail("r3")) == nil)
        #expect(try await app.secure.load("x") == nil)
        #expect(try await SSLClientCertificate.load(from: app.secure) == nil)
    }

    @Test("the …Blocking forms can be named from sync code, and they write")
    func blockingFromSyncCode() async throws {
        let app = try await CofferContainer.open(scratchLocations())
        defer { app.close() }
        try writeFromSyncCode(app)
        #expect(app.settings.get(tiles) == 6)
        #expect(try await app.context.assets.findByRemoteId("r1")?.localId == "l1")
        #expect(await app.cache.data(for: .thumbnail("r1")) == Data("thumb".utf8))
        #expect(try await app.secure.load("token") == Data("token".utf8))
        #expect(try await SSLClientCertificate.load(from: app.secure)?.password == "pw")
    }

    @Test("a …Blocking form called from async code is the blocking one: it ignores the task's cancellation and commits")
    func blockingNameIsBlocking() async throws {
        let app = try await CofferContainer.open(scratchLocations())
        defer { app.close() }
        let error = await inCancelledTask {
            try app.settings.putBlocking(tiles, 8)
            try app.context.assets.putBlocking(asset(4))
        }
        #expect(error == nil)
        #expect(app.settings.get(tiles) == 8)
        #expect(try await app.context.assets.findByRemoteId("r4") != nil)
    }

    @Test("the deprecated same-named blocking forms still work for one release")
    func deprecatedNamesStillWork() async throws {
        let app = try await CofferContainer.open(scratchLocations())
        defer { app.close() }
        let probe: any OldNamesProbe = OldNames()
        try probe.write(app)
        #expect(app.settings.get(tiles) == 9)
        #expect(try await app.context.assets.findByRemoteId("r2") != nil)
        #expect(app.cache.memoryData(for: .thumbnail("r2")) == Data("old".utf8))
        #expect(try await app.secure.load("old") == Data("old".utf8))
    }

    @Test("every disk call named in the decision has an async form: certificate delete, damaged items, cleanup candidates")
    func newAsyncForms() async throws {
        let app = try await CofferContainer.open(scratchLocations())
        defer { app.close() }
        try await SSLClientCertificate(data: Data("c".utf8), password: "p").save(to: app.secure)
        try await SSLClientCertificate.delete(from: app.secure)
        #expect(try await SSLClientCertificate.load(from: app.secure) == nil)
        #expect(try await app.secure.damagedItems().isEmpty)
        #expect(try await AssetCleanup(database: app.database).candidates(CleanupOptions(cutoffDaysAgo: 30)).isEmpty)
        #expect(await inCancelledTask { try await SSLClientCertificate.delete(from: app.secure) } is CancellationError)
    }
}
