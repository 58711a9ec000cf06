// `coffer reset --yes` works on a store in any state, without opening it, removes every file
// Coffer wrote and nothing else, and the next run is a fresh install.

import CofferTestSupport
import Foundation
import GRDB
import Testing

@Suite("Reset on a broken store")
struct ResetTests {
    /// A store with every part in use, and a file of the user's own that reset must keep.
    func fullStore() throws -> URL {
        let store = try CLI.newStore()
        #expect(try CLI.wallet(["add", "t", "1", "v"], store: store).status == 0)
        #expect(try CLI.run(["settings", "set", "tilesPerRow", "5"], store: store).status == 0)
        let secure = try CLI.run(["secure", "set", "accessToken", "--value-env", "V"], store: store, env: ["V": "secret"])
        #expect(secure.status == 0, "\(secure.stderr)")
        #expect(try CLI.run(["deniable", "start"], store: store).status == 0)
        let picture = TemporaryFolders.path("coffer-reset").appendingPathExtension("jpg")
        try Data(repeating: 7, count: 1_000).write(to: picture)
        let put = try CLI.run(["cache", "put", "thumbnail", "k", picture.path], store: store)
        #expect(put.status == 0, "\(put.stderr)")
        try FileManager.default.createDirectory(at: store.appendingPathComponent("demo"), withIntermediateDirectories: true)
        try Data("demo".utf8).write(to: store.appendingPathComponent("demo/wallet.sqlite"))
        try Data("mine".utf8).write(to: store.appendingPathComponent("user-notes.txt"))
        return store
    }

    func expectFreshAfterReset(_ store: URL, _ label: String) throws {
        let reset = try CLI.run(["reset", "--yes"], store: store)
        #expect(reset.status == 0, "\(label): \(reset.stderr)")
        let left = try FileManager.default.contentsOfDirectory(atPath: store.path).sorted()
        #expect(left == ["user-notes.txt"], "\(label): left \(left)")
        let settings = try CLI.run(["settings", "get", "tilesPerRow"], store: store)
        #expect(settings.status == 0 && settings.stdout.contains(#""set":false"#), "\(label): \(settings.stdout) \(settings.stderr)")
        #expect(try CLI.run(["secure", "get", "accessToken"], store: store).status == 1, "\(label)")
        #expect(try CLI.wallet(["create"], store: store).status == 0, "\(label)")
    }

    @Test("a store written by a newer app version is reset")
    func newerVersion() throws {
        let store = try fullStore()
        // A newer app wrote the store (the CLI refuses to set the reserved version key).
        let app = try DatabaseQueue(path: store.appendingPathComponent("app.sqlite").path)
        try app.write { try $0.execute(sql: "UPDATE coffer_settings SET value = 99 WHERE name = 'version'") }
        try app.close()
        #expect(try CLI.run(["settings", "list"], store: store).status == 5, "the store should now refuse to open")
        try expectFreshAfterReset(store, "newer version")
    }

    @Test("a store with a damaged app database, wallet, vault and secure key, and a killed restore's leftovers, is reset")
    func damaged() throws {
        let store = try fullStore()
        for name in ["app.sqlite", "wallet.sqlite", "deniable/vault", "secure/key"] {
            let url = store.appendingPathComponent(name)
            if FileManager.default.fileExists(atPath: url.path) { try Data(repeating: 0x41, count: 100).write(to: url) }
        }
        try Data(repeating: 0x42, count: 100).write(to: store.appendingPathComponent(".wallet.sqlite.restoring"))
        try expectFreshAfterReset(store, "damaged")
    }

    @Test("a store whose app database is gone but whose WAL, secure items and cache remain is reset")
    func missingFiles() throws {
        let store = try fullStore()
        try FileManager.default.removeItem(at: store.appendingPathComponent("app.sqlite"))
        try Data(repeating: 1, count: 64).write(to: store.appendingPathComponent("app.sqlite-wal"))
        try FileManager.default.removeItem(at: store.appendingPathComponent("wallet.sqlite"))
        try expectFreshAfterReset(store, "missing files")
    }

    @Test("a store whose secure key will not open (mode too wide) is reset, and its items are gone")
    func secureKeyWillNotOpen() throws {
        let store = try fullStore()
        let key = store.appendingPathComponent("secure/key")
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: key.path)
        #expect(try CLI.run(["secure", "get", "accessToken"], store: store).status != 0, "the key should be refused")
        try expectFreshAfterReset(store, "secure key refused")
    }

    @Test("a store whose secure key file is missing while items exist is reset")
    func secureKeyMissing() throws {
        let store = try fullStore()
        try FileManager.default.removeItem(at: store.appendingPathComponent("secure/key"))
        try expectFreshAfterReset(store, "secure key missing")
    }

    @Test("resetting a store folder that does not exist succeeds and creates nothing")
    func storeMissing() throws {
        let store = TemporaryFolders.path("coffer-reset-none")
        let reset = try CLI.run(["reset", "--yes"], store: store)
        #expect(reset.status == 0, "\(reset.stderr)")
        #expect(!FileManager.default.fileExists(atPath: store.path))
    }

    @Test("reset without --yes removes nothing")
    func needsConfirmation() throws {
        let store = try fullStore()
        let before = try FileManager.default.contentsOfDirectory(atPath: store.path).sorted()
        #expect(try CLI.run(["reset"], store: store).status == 2)
        #expect(try FileManager.default.contentsOfDirectory(atPath: store.path).sorted() == before)
    }
}
