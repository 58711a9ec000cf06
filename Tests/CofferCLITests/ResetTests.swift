// `coffer reset --yes` works on a store in any state, without opening it, removes every file
// Coffer wrote and nothing else, and the next run is a fresh install.

import CofferTestSupport
import Foundation
import GRDB
import Testing

@Suite("Reset on a broken store")
struct ResetTests {
    /// A store with every part in use, and a file of the user's own that reset must keep.
    func fullStore() async throws -> URL {
        let store = try await CLI.newStore()
        #expect(try await CLI.wallet(["add", "t", "1", "v"], store: store).status == 0)
        #expect(try await CLI.run(["settings", "set", "tilesPerRow", "5"], store: store).status == 0)
        let secure = try await CLI.run(["secure", "set", "accessToken", "--value-env", "V"], store: store, env: ["V": "secret"])
        #expect(secure.status == 0, "\(secure.stderr)")
        #expect(try await CLI.run(["deniable", "start"], store: store).status == 0)
        let picture = TemporaryFolders.path("coffer-reset").appendingPathExtension("jpg")
        try Data(repeating: 7, count: 1_000).write(to: picture)
        let put = try await CLI.run(["cache", "put", "thumbnail", "k", picture.path], store: store)
        #expect(put.status == 0, "\(put.stderr)")
        try FileManager.default.createDirectory(at: store.appendingPathComponent("demo"), withIntermediateDirectories: true)
        try Data("demo".utf8).write(to: store.appendingPathComponent("demo/wallet.sqlite"))
        try Data("mine".utf8).write(to: store.appendingPathComponent("user-notes.txt"))
        return store
    }

    func expectFreshAfterReset(_ store: URL, _ label: String) async throws {
        let reset = try await CLI.run(["reset", "--yes"], store: store)
        #expect(reset.status == 0, "\(label): \(reset.stderr)")
        let left = try FileManager.default.contentsOfDirectory(atPath: store.path).sorted()
        #expect(left == ["user-notes.txt"], "\(label): left \(left)")
        let settings = try await CLI.run(["settings", "get", "tilesPerRow"], store: store)
        #expect(settings.status == 0 && settings.stdout.contains(#""set":false"#), "\(label): \(settings.stdout) \(settings.stderr)")
        #expect(try await CLI.run(["secure", "get", "accessToken"], store: store).status == 1, "\(label)")
        #expect(try await CLI.wallet(["create"], store: store).status == 0, "\(label)")
    }

    @Test(
        "a reset killed after the secure items went and before the databases did is finished by the next open: a fresh install, not half a store"
    )
    func killedResetFinishedAtNextOpen() async throws {
        let store = TemporaryFolders.path("coffer-reset-kill")
        #expect(try await CLI.run(["sdk", "init"], store: store).status == 0)
        #expect(try await CLI.run(["settings", "set", "tilesPerRow", "5"], store: store).status == 0)
        let child = try CLI.start(
            ["reset", "--yes"], store: store, env: ["COFFER_TEST_PAUSE_AT": "reset-secure-removed", "COFFER_TEST_PAUSE_MS": "600000"])
        defer { child.kill() }
        let items = store.appendingPathComponent("secure/items").path
        let secureGone = { @Sendable in (try? FileManager.default.contentsOfDirectory(atPath: items))?.isEmpty ?? true }
        try await eventually("the reset paused with the secure items removed") { secureGone() || !child.isRunning }
        // Killed mid-reset: the secure items are gone, the app database and the wallet are not.
        #expect(child.isRunning, "the reset ended before it was killed")
        #expect(FileManager.default.fileExists(atPath: store.appendingPathComponent("app.sqlite").path))
        #expect(FileManager.default.fileExists(atPath: store.appendingPathComponent("wallet.sqlite").path))
        #expect(try await child.killAndWait().wasSignalled)
        let sdk = try await CLI.run(["sdk", "init"], store: store)
        #expect(sdk.status == 0, "\(sdk.stderr)")
        let settings = try await CLI.run(["settings", "get", "tilesPerRow"], store: store)
        #expect(settings.status == 0 && settings.stdout.contains(#""set":false"#), "\(settings.stdout) \(settings.stderr)")
        #expect(!FileManager.default.fileExists(atPath: store.appendingPathComponent(".coffer-reset-pending").path))
    }

    @Test("after a killed reset, the next settings or wallet command finishes it first: what it and later commands write stays")
    func killedResetFinishedBeforeSettings() async throws {
        let store = TemporaryFolders.path("coffer-reset-kill-settings")
        #expect(try await CLI.run(["secure", "set", "accessToken", "--value-env", "V"], store: store, env: ["V": "t0"]).status == 0)
        #expect(try await CLI.run(["settings", "set", "tilesPerRow", "5"], store: store).status == 0)
        let child = try CLI.start(
            ["reset", "--yes"], store: store, env: ["COFFER_TEST_PAUSE_AT": "reset-secure-removed", "COFFER_TEST_PAUSE_MS": "600000"])
        defer { child.kill() }
        try await child.waitForStderr(containing: "test-pause: reset-secure-removed")
        // Killed mid-reset: the marker is there and the app database not yet removed.
        #expect(FileManager.default.fileExists(atPath: store.appendingPathComponent(".coffer-reset-pending").path))
        #expect(FileManager.default.fileExists(atPath: store.appendingPathComponent("app.sqlite").path))
        #expect(try await child.killAndWait().wasSignalled)
        // A settings command (it opens no container) sees the fresh install, not the half-reset store.
        let old = try await CLI.run(["settings", "get", "tilesPerRow"], store: store)
        #expect(old.status == 0 && old.stdout.contains(#""set":false"#), "\(old.stdout) \(old.stderr)")
        #expect(!FileManager.default.fileExists(atPath: store.appendingPathComponent(".coffer-reset-pending").path))
        #expect(try await CLI.run(["settings", "set", "tilesPerRow", "6"], store: store).status == 0)
        #expect(try await CLI.wallet(["create"], store: store).status == 0)
        #expect(try await CLI.wallet(["add", "t", "r1", "v"], store: store).status == 0)
        // A command that opens the container keeps them: the reset is not finished a second time.
        #expect(try await CLI.run(["secure", "list"], store: store).status == 0)
        let kept = try await CLI.run(["settings", "get", "tilesPerRow"], store: store)
        #expect(kept.status == 0 && kept.stdout.contains(#""value":6"#), "\(kept.stdout) \(kept.stderr)")
        #expect(try await CLI.wallet(["get", "t", "r1"], store: store).status == 0)
    }

    @Test("a reset that removes the store while another command opens it: that command fails as storage (exit 6), never as input (2)")
    func resetDuringOpen() async throws {
        let store = TemporaryFolders.path("coffer-reset-race")
        let gate = TemporaryFolders.path("coffer-reset-race-go")
        let child = try CLI.start(
            ["db", "put-asset", "r1", "o", "c1"], store: store,
            env: ["COFFER_TEST_PAUSE_AT": "app-database-migrating", "COFFER_TEST_PAUSE_FILE": gate.path])
        defer { child.kill() }
        try await child.waitForStderr(containing: "test-pause: app-database-migrating")
        // The command has made app.sqlite and waits (until the gate file exists) before migrating
        // it; the reset removes it.
        #expect(child.isRunning)
        #expect(try await CLI.run(["reset", "--yes"], store: store).status == 0)
        _ = FileManager.default.createFile(atPath: gate.path, contents: nil)
        let result = try await child.wait()
        #expect(result.status == 6, "\(result.status) \(result.stderr)")
        #expect(result.stderr.contains("app.sqlite"), "\(result.stderr)")
    }

    /// A folder outside the store holding `name`/`file` (a stranger's file), mode 0755.
    func outsideFolder(_ label: String, holding name: String) throws -> URL {
        let outside = TemporaryFolders.path("coffer-outside-\(label)")
        try FileManager.default.createDirectory(at: outside.appendingPathComponent(name), withIntermediateDirectories: true)
        try Data("keep".utf8).write(to: outside.appendingPathComponent(name).appendingPathComponent("user-file"))
        #expect(chmod(outside.path, 0o755) == 0)
        return outside
    }

    @Test(
        "a symbolic link at the store's caches, secure or media-cache-key folder is removed by a reset, never followed",
        arguments: [("caches", "media"), ("secure", "items"), ("media-cache-key", "items")])
    func resetLeavesLinkedFoldersAlone(link: String, inside: String) async throws {
        let store = TemporaryFolders.path("coffer-reset-links")
        try FileManager.default.createDirectory(at: store, withIntermediateDirectories: true)
        let outside = try outsideFolder(link, holding: inside)
        try FileManager.default.createSymbolicLink(at: store.appendingPathComponent(link), withDestinationURL: outside)
        let reset = try await CLI.run(["reset", "--yes"], store: store)
        #expect(reset.status == 0, "\(reset.stderr)")
        #expect(FileManager.default.fileExists(atPath: outside.appendingPathComponent(inside).appendingPathComponent("user-file").path))
        #expect((try FileManager.default.attributesOfItem(atPath: outside.path)[.posixPermissions] as? Int) == 0o755)
        #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: store.appendingPathComponent(link).path)) == nil)
    }

    @Test(
        "the media cache never writes through a symbolic link at the store's caches or caches/media folder",
        arguments: ["caches", "caches/media"])
    func cacheLeavesLinkedFoldersAlone(link: String) async throws {
        let store = TemporaryFolders.path("coffer-cache-links")
        try FileManager.default.createDirectory(
            at: store.appendingPathComponent(link).deletingLastPathComponent(), withIntermediateDirectories: true)
        let outside = try outsideFolder("cache", holding: "thumbnail")
        try FileManager.default.createSymbolicLink(at: store.appendingPathComponent(link), withDestinationURL: outside)
        let stats = try await CLI.run(["cache", "stats"], store: store)
        #expect(stats.status == 0, "\(stats.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: outside.path) == ["thumbnail"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: outside.appendingPathComponent("thumbnail").path) == ["user-file"])
        #expect((try FileManager.default.attributesOfItem(atPath: outside.path)[.posixPermissions] as? Int) == 0o755)
    }

    @Test("a store written by a newer app version is reset")
    func newerVersion() async throws {
        let store = try await fullStore()
        // A newer app wrote the store (the CLI refuses to set the reserved version key).
        let app = try DatabaseQueue(path: store.appendingPathComponent("app.sqlite").path)
        try await app.write { try $0.execute(sql: "UPDATE coffer_settings SET value = 99 WHERE name = 'version'") }
        try app.close()
        #expect(try await CLI.run(["settings", "list"], store: store).status == 5, "the store should now refuse to open")
        try await expectFreshAfterReset(store, "newer version")
    }

    @Test("a store with a damaged app database, wallet, vault and secure key, and a killed restore's leftovers, is reset")
    func damaged() async throws {
        let store = try await fullStore()
        for name in ["app.sqlite", "wallet.sqlite", "deniable/vault", "secure/key"] {
            let url = store.appendingPathComponent(name)
            if FileManager.default.fileExists(atPath: url.path) { try Data(repeating: 0x41, count: 100).write(to: url) }
        }
        try Data(repeating: 0x42, count: 100).write(to: store.appendingPathComponent(".wallet.sqlite.restoring"))
        try await expectFreshAfterReset(store, "damaged")
    }

    @Test("a store whose app database is gone but whose WAL, secure items and cache remain is reset")
    func missingFiles() async throws {
        let store = try await fullStore()
        try FileManager.default.removeItem(at: store.appendingPathComponent("app.sqlite"))
        try Data(repeating: 1, count: 64).write(to: store.appendingPathComponent("app.sqlite-wal"))
        try FileManager.default.removeItem(at: store.appendingPathComponent("wallet.sqlite"))
        try await expectFreshAfterReset(store, "missing files")
    }

    @Test("a store whose secure key will not open (mode too wide) is reset, and its items are gone")
    func secureKeyWillNotOpen() async throws {
        let store = try await fullStore()
        let key = store.appendingPathComponent("secure/key")
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: key.path)
        #expect(try await CLI.run(["secure", "get", "accessToken"], store: store).status != 0, "the key should be refused")
        try await expectFreshAfterReset(store, "secure key refused")
    }

    @Test("a store whose secure key file is missing while items exist is reset")
    func secureKeyMissing() async throws {
        let store = try await fullStore()
        try FileManager.default.removeItem(at: store.appendingPathComponent("secure/key"))
        try await expectFreshAfterReset(store, "secure key missing")
    }

    @Test("resetting a store folder that does not exist succeeds and creates nothing")
    func storeMissing() async throws {
        let store = TemporaryFolders.path("coffer-reset-none")
        let reset = try await CLI.run(["reset", "--yes"], store: store)
        #expect(reset.status == 0, "\(reset.stderr)")
        #expect(!FileManager.default.fileExists(atPath: store.path))
    }

    @Test("reset without --yes removes nothing")
    func needsConfirmation() async throws {
        let store = try await fullStore()
        let before = try FileManager.default.contentsOfDirectory(atPath: store.path).sorted()
        #expect(try await CLI.run(["reset"], store: store).status == 2)
        #expect(try FileManager.default.contentsOfDirectory(atPath: store.path).sorted() == before)
    }
}
