// A restore killed with SIGKILL in the middle leaves no wallet behind, and the next restore
// succeeds: the kill is proven to land mid-restore by the temporary wallet being there.

import CofferCrypto
import CofferTestSupport
import CofferWallet
import Foundation
import Testing

@Suite("Restore under kill -9")
struct RestoreKillTests {
    /// Runs `coffer arguments`, waits until `marker` (a temporary file the command writes) exists,
    /// sleeps a random moment up to `maxDelay` µs, and kills it with SIGKILL. `landed` tells
    /// whether the kill hit the process while it was still running with the marker present. The
    /// tight polling runs on a thread of its own, off the cooperative pool.
    static func killWhile(_ marker: URL, maxDelay: useconds_t, env: [String: String], _ arguments: [String]) async throws -> (
        landed: Bool, result: ProcessResult
    ) {
        let child = try startCoffer(arguments, environment: env)
        let stillRunning = try await onOwnThread { () -> Bool in
            var sawMarker = false
            for _ in 0..<20_000 where child.isRunning {
                if FileManager.default.fileExists(atPath: marker.path) {
                    sawMarker = true
                    break
                }
                usleep(200)
            }
            if sawMarker { usleep(useconds_t.random(in: 0...maxDelay)) }
            let stillRunning = child.isRunning && FileManager.default.fileExists(atPath: marker.path)
            child.kill()
            return stillRunning
        }
        let result = try await child.wait()
        return (stillRunning && result.wasSignalled, result)
    }

    @Test("killed mid-restore: no wallet at the target, and running the restore again succeeds with every record")
    func killedRestore() async throws {
        let root = TemporaryFolders.path("coffer-restore-kill")
        var config = Wallet.Configuration()
        config.passphraseParameters = .minimum
        let source = try await Wallet.create(
            at: root.appendingPathComponent("source/wallet.sqlite"), key: .raw(Data(repeating: 1, count: 32)),
            configuration: config)
        let n = 30_000
        try await source.transaction { txn in
            for i in 0..<n {
                try txn.add(type: "t", id: "r\(i)", value: String(repeating: "v", count: 100), tags: ["e": .string("\(i % 50)")])
            }
        }
        let backup = root.appendingPathComponent("backup.cfb")
        _ = try await source.exportBackup(to: backup, passphrase: "backup pass", parameters: BackupKey.floor)
        try source.close()

        let store = root.appendingPathComponent("target")
        let target = store.appendingPathComponent("wallet.sqlite")
        let temporary = store.appendingPathComponent(".wallet.sqlite.restoring")
        let env = ["BP": "backup pass", "COFFER_TEST_KEY": CLI.key]
        var killedMidRestore = 0
        for attempt in 0..<5 {
            // Kill at a random moment while the new wallet is being written under its temporary name.
            let (landed, result) = try await Self.killWhile(
                temporary, maxDelay: attempt == 0 ? 1_000 : 200_000, env: env,
                [
                    "--store", store.path, "--raw-key-env", "COFFER_TEST_KEY", "wallet", "import-backup",
                    backup.path, "--backup-passphrase-env", "BP",
                ])
            if landed { killedMidRestore += 1 }
            #expect(
                !FileManager.default.fileExists(atPath: target.path) || !result.wasSignalled,
                "attempt \(attempt): a killed restore left a wallet at the target")
            if FileManager.default.fileExists(atPath: target.path) { try FileManager.default.removeItem(at: target) }
        }
        #expect(killedMidRestore > 0, "no kill landed while the temporary wallet was being written")
        let restored = try await CLI.run(
            ["--raw-key-env", "COFFER_TEST_KEY", "wallet", "import-backup", backup.path, "--backup-passphrase-env", "BP"],
            store: store, env: env)
        #expect(restored.status == 0, "\(restored.stderr)")
        #expect(!FileManager.default.fileExists(atPath: temporary.path))
        let check = try await CLI.wallet(["check"], store: store)
        #expect(check.status == 0 && check.stdout.hasPrefix(#"{"records":\#(n),"#), "\(check.stdout)")
    }

    @Test("a restore killed with its temporary wallet made: the next open of the store removes the leftover, and the rerun succeeds")
    func killedRestoreSweptAtOpen() async throws {
        let store = try await CLI.newStore()
        #expect(try await CLI.wallet(["add", "t", "1", "v"], store: store).status == 0)
        let env = ["K": CLI.key, "BP": "backup pass"]
        let backup = store.appendingPathComponent("b.cfb")
        let exported = try await CLI.run(
            ["--raw-key-env", "K", "wallet", "export", backup.path, "--backup-passphrase-env", "BP", "--backup-kdf", "interactive"],
            store: store, env: env)
        #expect(exported.status == 0, "\(exported.stderr)")
        try FileManager.default.removeItem(at: store.appendingPathComponent("wallet.sqlite"))
        let temporary = store.appendingPathComponent(".wallet.sqlite.restoring")
        // Held just after it made its temporary wallet (and holding the creation lock), then killed.
        let (landed, _) = try await Self.killWhile(
            temporary, maxDelay: 0, env: env.merging(["COFFER_TEST_PAUSE_AT": "restore-building", "COFFER_TEST_PAUSE_MS": "60000"]) { $1 },
            [
                "--store", store.path, "--raw-key-env", "K", "wallet", "import-backup", backup.path,
                "--backup-passphrase-env", "BP",
            ])
        #expect(landed, "the kill did not land while the restore's temporary wallet existed")
        #expect(FileManager.default.fileExists(atPath: temporary.path))
        // Any open of the wallet (here one that finds no wallet) removes what the killed restore left.
        let opened = try await CLI.wallet(["get", "t", "1"], store: store)
        #expect(opened.status != 0)
        let left = try FileManager.default.contentsOfDirectory(atPath: store.path).filter { $0.hasPrefix(".wallet.sqlite") }
        #expect(left.isEmpty, "left: \(left)")
        let restored = try await CLI.run(
            ["--raw-key-env", "K", "wallet", "import-backup", backup.path, "--backup-passphrase-env", "BP"], store: store, env: env)
        #expect(restored.status == 0, "\(restored.stderr)")
        #expect(try await CLI.wallet(["get", "t", "1"], store: store).status == 0)
    }

    @Test("an open while a restore is running leaves the restore's temporary wallet alone, and the restore succeeds")
    func openLeavesLiveRestore() async throws {
        let store = try await CLI.newStore()
        #expect(try await CLI.wallet(["add", "t", "1", "v"], store: store).status == 0)
        let env = ["K": CLI.key, "BP": "backup pass"]
        let backup = store.appendingPathComponent("b.cfb")
        #expect(
            try await CLI.run(
                ["--raw-key-env", "K", "wallet", "export", backup.path, "--backup-passphrase-env", "BP", "--backup-kdf", "interactive"],
                store: store, env: env
            ).status == 0)
        try FileManager.default.removeItem(at: store.appendingPathComponent("wallet.sqlite"))
        let temporary = store.appendingPathComponent(".wallet.sqlite.restoring")
        // The restore stays paused until the gate file exists, so the open below runs while the
        // restore is live however slow the machine is (a fixed pause of 3 s ran out on a loaded CI
        // machine, and the finished restore's rename looked like the open's removal).
        let gate = TemporaryFolders.path("coffer-gate")
        let child = try CLI.start(
            ["--raw-key-env", "K", "wallet", "import-backup", backup.path, "--backup-passphrase-env", "BP"], store: store,
            env: env.merging(["COFFER_TEST_PAUSE_AT": "restore-building", "COFFER_TEST_PAUSE_FILE": gate.path]) { $1 })
        let (heldWithTemporary, keptByOpen) = try await onOwnThread { () throws -> (Bool, Bool) in
            try [child].waitForStderrBlocking(containingOrEnded: "test-pause: restore-building")
            let held = child.isRunning && FileManager.default.fileExists(atPath: temporary.path)
            _ = try runProcessBlocking(
                cofferBinary, ["--store", store.path, "--raw-key-env", "K", "wallet", "get", "t", "1"], environment: ["K": CLI.key])
            return (held && child.isRunning, FileManager.default.fileExists(atPath: temporary.path))
        }
        _ = FileManager.default.createFile(atPath: gate.path, contents: nil)
        #expect(heldWithTemporary, "the restore was not paused with its temporary wallet while the open ran")
        #expect(keptByOpen, "an open removed a live restore's temporary wallet")
        #expect(try await child.wait().status == 0)
        try? FileManager.default.removeItem(at: gate)
        #expect(try await CLI.wallet(["get", "t", "1"], store: store).status == 0)
    }

    @Test("a restore onto an existing wallet is refused and touches neither file")
    func existingTargetRefused() async throws {
        let store = try await CLI.newStore()
        #expect(try await CLI.wallet(["add", "t", "1", "v"], store: store).status == 0)
        let backup = store.appendingPathComponent("b.cfb")
        #expect(
            try await CLI.run(
                ["--raw-key-env", "K", "wallet", "export", backup.path, "--backup-passphrase-env", "BP", "--backup-kdf", "interactive"],
                store: store,
                env: ["K": CLI.key, "BP": "p"]
            ).status == 0)
        let before = try Data(contentsOf: store.appendingPathComponent("wallet.sqlite"))
        let r = try await CLI.run(
            ["--raw-key-env", "K", "wallet", "import-backup", backup.path, "--backup-passphrase-env", "BP"], store: store,
            env: ["K": CLI.key, "BP": "p"])
        #expect(r.status == 3)
        #expect(try Data(contentsOf: store.appendingPathComponent("wallet.sqlite")) == before)
        #expect(!FileManager.default.fileExists(atPath: store.appendingPathComponent(".wallet.sqlite.restoring").path))
    }

    @Test("killed mid-export: the older backup at the target stays as it was, and the next export succeeds and leaves no partial file")
    func killedExport() async throws {
        let store = TemporaryFolders.path("coffer-export-kill")
        var config = Wallet.Configuration()
        config.passphraseParameters = .minimum
        let key = Data(base64Encoded: CLI.key)!
        let wallet = try await Wallet.create(at: store.appendingPathComponent("wallet.sqlite"), key: .raw(key), configuration: config)
        try await wallet.transaction { txn in
            for i in 0..<60_000 {
                try txn.add(type: "t", id: "r\(i)", value: String(repeating: "v", count: 200), tags: ["e": .string("\(i % 50)")])
            }
        }
        try wallet.close()
        let backup = store.appendingPathComponent("backup.cfb")
        let partial = store.appendingPathComponent(".backup.cfb.partial")
        let older = Data("an older backup".utf8)
        try older.write(to: backup)
        let env = ["BP": "backup pass", "COFFER_TEST_KEY": CLI.key]
        var killedMidExport = 0
        for attempt in 0..<5 {
            let (landed, result) = try await Self.killWhile(
                partial, maxDelay: attempt == 0 ? 1_000 : 100_000, env: env,
                [
                    "--store", store.path, "--raw-key-env", "COFFER_TEST_KEY", "wallet", "export",
                    backup.path, "--backup-passphrase-env", "BP", "--backup-kdf", "interactive",
                ])
            if landed {
                killedMidExport += 1
                #expect(try Data(contentsOf: backup) == older, "attempt \(attempt): a killed export changed the file at the target")
            }
            if !result.wasSignalled { try older.write(to: backup) }
        }
        #expect(killedMidExport > 0, "no kill landed while the partial file was being written")
        let exported = try await CLI.run(
            [
                "--raw-key-env", "COFFER_TEST_KEY", "wallet", "export", backup.path, "--backup-passphrase-env", "BP", "--backup-kdf",
                "interactive",
            ],
            store: store, env: env)
        #expect(exported.status == 0, "\(exported.stderr)")
        #expect(!FileManager.default.fileExists(atPath: partial.path))
        let restoredStore = TemporaryFolders.path("coffer-export-kill")
        let restored = try await CLI.run(
            ["--raw-key-env", "COFFER_TEST_KEY", "wallet", "import-backup", backup.path, "--backup-passphrase-env", "BP"],
            store: restoredStore, env: env)
        #expect(restored.status == 0, "\(restored.stderr)")
        #expect(try await CLI.wallet(["count", "t"], store: restoredStore).stdout.contains(#"{"count":60000}"#))
    }
}
