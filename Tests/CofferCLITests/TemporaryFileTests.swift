// No temporary file outlives its write: a write killed with SIGKILL between creating its
// temporary file and renaming it leaves the file behind, and the next open of that store removes
// it — `secure delete` and `deniable init` leave nothing that opens.

import CofferTestSupport
import Foundation
import Testing

@Suite("Temporary files of killed writes")
struct TemporaryFileTests {
    /// Names in `folder` ending in `.tmp`.
    static func temporaries(_ folder: URL) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []).filter { $0.hasSuffix(".tmp") }.sorted()
    }

    /// Runs `coffer arguments` with standard input read from `input`, waits until a `.tmp` file
    /// appears in `folder`, and kills it with SIGKILL. Returns whether the kill landed while the
    /// process was running with the temporary file present. The tight polling runs on a thread of
    /// its own, off the cooperative pool.
    static func killWhileTemporary(in folder: URL, input: URL, _ arguments: [String]) async throws -> Bool {
        let child = try startCoffer(arguments, stdin: try Data(contentsOf: input))
        let landed = try await onOwnThread { () -> Bool in
            var seen = false
            for _ in 0..<50_000 where child.isRunning {
                if !temporaries(folder).isEmpty {
                    seen = true
                    break
                }
                usleep(100)
            }
            let landed = seen && child.isRunning && !temporaries(folder).isEmpty
            child.kill()
            return landed
        }
        return try await child.wait().wasSignalled && landed
    }

    /// A store holding the item "warm" and the sealed temporary copy of "big" that a `secure set`
    /// killed while its temporary file existed left behind (the kill proven to land there).
    static func storeWithKilledSecureSet(_ name: String, fill: UInt8) async throws -> (store: URL, items: URL) {
        let store = TemporaryFolders.path("coffer-tmp-\(name)")
        let items = store.appendingPathComponent("secure/items")
        // The key exists first, so the kill lands in the item's write.
        #expect(try await CLI.run(["secure", "set", "warm", "--value-env", "V"], store: store, env: ["V": "w"]).status == 0)
        let big = store.appendingPathComponent("value.bin")
        try Data(repeating: fill, count: 48 << 20).write(to: big)
        var landed = false
        for _ in 0..<20 where !landed {
            landed = try await killWhileTemporary(in: items, input: big, ["--store", store.path, "secure", "set", "big"])
            if !landed { temporaries(items).forEach { try? FileManager.default.removeItem(at: items.appendingPathComponent($0)) } }
        }
        try #require(landed, "no kill landed while the temporary file existed")
        // The killed write left its sealed copy behind.
        #expect(temporaries(items).count == 1)
        return (store, items)
    }

    @Test("secure set killed before its rename: the sealed temporary file is removed at the next open, and secure delete leaves nothing")
    func killedSecureSet() async throws {
        let (store, items) = try await Self.storeWithKilledSecureSet("kill", fill: 0x61)
        // No item file for "big".
        #expect(try await CLI.run(["secure", "get", "big"], store: store).status == 1)

        // The next open removes it (any command that opens the secure store).
        let list = try await CLI.run(["secure", "list"], store: store)
        #expect(list.status == 0 && list.stdout == #"["warm"]"# + "\n", "\(list.stdout) \(list.stderr)")
        #expect(Self.temporaries(items).isEmpty, "left: \(Self.temporaries(items))")
        #expect(try await CLI.run(["secure", "delete", "big"], store: store).status == 0)
        let left = try FileManager.default.contentsOfDirectory(atPath: items.path)
        #expect(left.count == 1, "only warm's item should remain: \(left)")
    }

    @Test("secure delete after a killed set removes the killed write's copy too")
    func deleteSweeps() async throws {
        let (store, items) = try await Self.storeWithKilledSecureSet("delete", fill: 0x62)
        #expect(try await CLI.run(["secure", "delete", "big"], store: store).status == 0)
        #expect(Self.temporaries(items).isEmpty, "left: \(Self.temporaries(items))")
    }

    @Test("deniable init itself removes a temporary vault that appears after the store was opened, so the old passphrase opens nothing")
    func deniableInitSweeps() async throws {
        let store = TemporaryFolders.path("coffer-tmp-deniable")
        let folder = store.appendingPathComponent("deniable")
        let first = try await CLI.run(["deniable", "init"], store: store)
        #expect(first.status == 0)
        let old = (try JSONSerialization.jsonObject(with: Data(first.stdout.utf8)) as? [String: Any])?["passphrase"] as? String ?? ""
        // Held after the store's open (whose sweep has run) and before the vault is replaced; the
        // leftover is planted then, so only the sweep in the vault's replacement can remove it.
        let gate = TemporaryFolders.path("coffer-gate")
        let child = try CLI.start(
            ["deniable", "init"], store: store, env: ["COFFER_TEST_PAUSE_AT": "deniable-ready", "COFFER_TEST_PAUSE_FILE": gate.path])
        try await [child].waitForStderr(containingOrEnded: "test-pause: deniable-ready")
        #expect(child.stderrSoFar.contains("test-pause: deniable-ready"), "deniable init did not reach its pause")
        // What a vault write killed before its rename leaves: the whole sealed vault under its
        // temporary name, its writer gone (renamed into place, it opens under the old passphrase).
        let leftover = folder.appendingPathComponent(".vault.\(UUID().uuidString).tmp")
        try FileManager.default.copyItem(at: folder.appendingPathComponent("vault"), to: leftover)
        _ = FileManager.default.createFile(atPath: gate.path, contents: nil)
        let result = try await child.wait()
        try? FileManager.default.removeItem(at: gate)
        #expect(result.status == 0)
        #expect(Self.temporaries(folder).isEmpty, "left: \(Self.temporaries(folder))")
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { !$0.hasPrefix(".") }
        #expect(
            Set(names) == [
                "vault", "sending-queue", "storage.key", "secure-element-p256.key", "dead-drops.sqlite", "public-keys.json",
                "background-schedule.json",
            ])
        #expect(try await CLI.run(["--passphrase-env", "P", "deniable", "unlock"], store: store, env: ["P": old]).status == 4)
    }

    @Test("an export whose partial file another writer removed before it was locked fails and moves nothing into place")
    func exportPartialTakenOver() async throws {
        let store = try await CLI.newStore()
        #expect(try await CLI.wallet(["add", "t", "1", "v"], store: store).status == 0)
        let target = store.appendingPathComponent("b.cfb")
        let partial = store.appendingPathComponent(".b.cfb.partial")
        let gate = TemporaryFolders.path("coffer-gate")
        let child = try CLI.start(
            ["--raw-key-env", "K", "wallet", "export", target.path, "--backup-passphrase-env", "BP", "--backup-kdf", "interactive"],
            store: store, env: ["K": CLI.key, "BP": "p", "COFFER_TEST_PAUSE_AT": "partial-created", "COFFER_TEST_PAUSE_FILE": gate.path])
        try await [child].waitForStderr(containingOrEnded: "test-pause: partial-created")
        #expect(child.stderrSoFar.contains("test-pause: partial-created"), "the export did not reach its pause")
        // A second writer, as a new export does: the partial is not locked yet, so it is taken for
        // a dead writer's, removed, and replaced by this writer's own unfinished file, locked.
        let stale = open(partial.path, O_RDONLY)
        #expect(stale >= 0 && flock(stale, LOCK_EX | LOCK_NB) == 0, "the export's partial file was already locked")
        #expect(unlink(partial.path) == 0)
        close(stale)
        let mine = open(partial.path, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        #expect(mine >= 0 && flock(mine, LOCK_SH) == 0)
        _ = "unfinished".withCString { write(mine, $0, 10) }
        _ = FileManager.default.createFile(atPath: gate.path, contents: nil)
        let result = try await child.wait()
        try? FileManager.default.removeItem(at: gate)
        let stderr = result.stderr
        #expect(result.status != 0, "the export reported success")
        #expect(stderr.contains("another export"), "\(stderr)")
        #expect(!FileManager.default.fileExists(atPath: target.path), "another writer's unfinished file was moved into place")
        #expect(FileManager.default.fileExists(atPath: partial.path), "the other writer's partial file was removed")
        close(mine)
    }
}
