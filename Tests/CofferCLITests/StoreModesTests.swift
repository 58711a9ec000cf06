// File modes of a store: every file 0600, every folder 0700, whatever the umask of the process
// that wrote them. The permissive umask is set in child processes only (tests run in parallel
// in this one, and the umask is per process).

import CofferCrypto
import CofferDatabase
import CofferTestSupport
import CofferWallet
import Foundation
import GRDB
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Runs the `coffer` binary in a child shell whose umask is 000 (files 0666, folders 0777 unless
/// the code sets their modes itself).
func runUnderUmask000(_ args: [String], store: URL, env: [String: String] = [:]) async throws -> CLIResult {
    try await runProcess(
        URL(fileURLWithPath: "/bin/bash"), ["-c", #"umask 000; exec "$COFFER" "$@""#, "bash", "--store", store.path] + args,
        environment: env.merging(["COFFER": CLI.binary.path]) { old, _ in old })
}

/// The permission bits (`st_mode & 0777`) of `path`, not following a final symbolic link.
func permissions(_ path: String) -> mode_t? {
    var info = stat()
    guard lstat(path, &info) == 0 else { return nil }
    return info.st_mode & 0o777
}

/// Every entry under `root` (and `root` itself), relative path → (is a folder, permission bits).
func modes(under root: URL) -> [String: (folder: Bool, mode: mode_t)] {
    var out: [String: (folder: Bool, mode: mode_t)] = [:]
    var info = stat()
    if lstat(root.path, &info) == 0 { out["."] = (info.st_mode & mode_t(S_IFMT) == mode_t(S_IFDIR), info.st_mode & 0o777) }
    for relative in FileManager.default.enumerator(atPath: root.path).map({ $0.compactMap { $0 as? String } }) ?? [] {
        guard lstat(root.appendingPathComponent(relative).path, &info) == 0 else { continue }
        out[relative] = (info.st_mode & mode_t(S_IFMT) == mode_t(S_IFDIR), info.st_mode & 0o777)
    }
    return out
}

/// `path mode` for each entry that is not a 0600 file or a 0700 folder.
func wrongModes(under root: URL) -> [String] {
    modes(under: root).filter { $0.value.mode != ($0.value.folder ? 0o700 : 0o600) }
        .map { "\($0.key) \(String($0.value.mode, radix: 8))" }.sorted()
}

func octal(_ mode: mode_t?) -> String { mode.map { String($0, radix: 8) } ?? "missing" }

@Suite("StoreModes: owner-only files and folders")
struct StoreModesTests {
    @Test("a store written under umask 000 (wallet, app database, cache, secure items, deniable) has only 0600 files and 0700 folders")
    func wholeStoreUnderPermissiveUmask() async throws {
        let store = emptyStore()
        let image = TemporaryFolders.path("img")
        try Data(repeating: 0x41, count: 2_000).write(to: image)
        defer { try? FileManager.default.removeItem(at: image) }
        let keyEnv = ["COFFER_TEST_KEY": CLI.key]
        let steps: [([String], [String: String])] = [
            (["--raw-key-env", "COFFER_TEST_KEY", "wallet", "create"], keyEnv),
            (["--raw-key-env", "COFFER_TEST_KEY", "wallet", "add", "cred", "c1", "hello"], keyEnv),
            (["settings", "set", "tilesPerRow", "6"], [:]),
            (["cache", "put", "thumbnail", "a1", image.path], [:]),
            (["secure", "set", "accessToken", "--value-env", "TOKEN"], ["TOKEN": "tok-42"]),
            (["db", "stats"], [:]),
            (["deniable", "init"], [:]),
        ]
        for (args, env) in steps {
            let r = try await runUnderUmask000(args, store: store, env: env)
            #expect(r.status == 0, "\(args.joined(separator: " ")): \(r.stderr)")
        }
        let found = modes(under: store)
        // The walk covers every store: a missing one would make this test vacuous.
        for expected in [
            "wallet.sqlite", "app.sqlite", "secure/key", "secure/items", "caches/media/.coffer-cache-anchor",
            "caches/media/thumbnail", "deniable",
        ] {
            #expect(found[expected] != nil, "\(expected) was not written")
        }
        #expect(found.keys.contains { $0.hasPrefix("caches/media/thumbnail/") }, "no cache file was written")
        #expect(wrongModes(under: store) == [])
    }

    @Test("Wallet.create makes wallet.sqlite and its open -wal and -shm 0600")
    func walletFilesWhileOpen() async throws {
        let url = emptyStore().appendingPathComponent("w/wallet.sqlite")
        let wallet = try await Wallet.create(at: url, key: .raw(Data(repeating: 7, count: 32)))
        try await wallet.add(type: "t", id: "1", value: "v")
        let found = ["", "-wal", "-shm"].map { octal(permissions(url.path + $0)) }
        try wallet.close()
        #expect(found == ["600", "600", "600"])
        #expect(octal(permissions(url.deletingLastPathComponent().path)) == "700")
    }

    @Test("AppDatabase.open makes app.sqlite and its open -wal and -shm 0600")
    func appDatabaseFilesWhileOpen() throws {
        let url = emptyStore().appendingPathComponent("app.sqlite")
        let database = try AppDatabase.openBlocking(at: url)
        try database.pool.write { db in try db.execute(sql: "INSERT INTO etags(id, assetCount, time) VALUES ('e', 1, 0)") }
        let found = ["", "-wal", "-shm"].map { octal(permissions(url.path + $0)) }
        try database.close()
        #expect(found == ["600", "600", "600"])
        #expect(octal(permissions(url.deletingLastPathComponent().path)) == "700")
    }

    @Test("an existing wallet.sqlite with mode 0644 is 0600 after the next open")
    func existingWalletRestricted() async throws {
        let url = emptyStore().appendingPathComponent("wallet.sqlite")
        let key = WalletKey.raw(Data(repeating: 7, count: 32))
        try await Wallet.create(at: url, key: key).close()
        #expect(chmod(url.path, 0o644) == 0)
        let wallet = try await Wallet.open(at: url, key: key)
        defer { try? wallet.close() }
        #expect(octal(permissions(url.path)) == "600")
    }

    @Test("an existing wallet's leftover -wal and -shm with mode 0644 are 0600 after the next open")
    func existingWalletCompanionsRestricted() async throws {
        let url = emptyStore().appendingPathComponent("wallet.sqlite")
        let key = WalletKey.raw(Data(repeating: 7, count: 32))
        try await Wallet.create(at: url, key: key).close()
        // What a crash leaves: companions an older release made with the umask's mode.
        for suffix in ["-wal", "-shm"] {
            #expect(FileManager.default.createFile(atPath: url.path + suffix, contents: nil))
            #expect(chmod(url.path + suffix, 0o644) == 0)
        }
        let wallet = try await Wallet.open(at: url, key: key)
        let found = ["-wal", "-shm"].map { octal(permissions(url.path + $0)) }
        try wallet.close()
        #expect(found == ["600", "600"])
    }

    @Test(
        "after a read of a read-only database left its -shm 0400, writes work once the owner makes the database writable",
        .enabled(
            if: geteuid() != 0 || FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv"), "as root it needs setpriv (util-linux)")
    )
    func readOnlyCompanionsRecover() async throws {
        // Permissions bind any user but root: as root, the commands run as nobody (65534).
        let asRoot = geteuid() == 0
        let setpriv = "/usr/bin/setpriv"
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("coffer-readonly-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: base, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: base) }
        #expect(chmod(base.path, 0o755) == 0)
        let binary = base.appendingPathComponent("coffer")
        try FileManager.default.copyItem(at: CLI.binary, to: binary)
        if asRoot { #expect(chown(base.path, 65534, 65534) == 0) }
        let store = base.appendingPathComponent("store")
        let key = Data(repeating: 9, count: 32).base64EncodedString()
        func run(_ arguments: [String]) async throws -> ProcessResult {
            let command = [binary.path, "--store", store.path] + arguments
            return asRoot
                ? try await runProcess(
                    URL(fileURLWithPath: setpriv), ["--reuid=65534", "--regid=65534", "--clear-groups"] + command, environment: ["K": key])
                : try await runProcess(binary, Array(command.dropFirst()), environment: ["K": key])
        }
        #expect(try await run(["settings", "set", "a", "b", "--kind", "string"]).status == 0)
        #expect(try await run(["wallet", "create", "--raw-key-env", "K"]).status == 0)
        for name in ["app.sqlite", "wallet.sqlite"] { #expect(chmod(store.appendingPathComponent(name).path, 0o400) == 0) }
        // Reads of the read-only databases: each leaves a -shm with the database's mode 0400.
        _ = try await run(["settings", "get", "a"])
        #expect(try await run(["wallet", "get", "t", "x", "--raw-key-env", "K"]).status == 1)
        for name in ["app.sqlite", "wallet.sqlite"] {
            #expect(octal(permissions(store.appendingPathComponent(name + "-shm").path)) == "400", "\(name)-shm")
            #expect(chmod(store.appendingPathComponent(name).path, 0o600) == 0)
        }
        let set = try await run(["settings", "set", "a", "c", "--kind", "string"])
        #expect(set.status == 0, "\(set.stderr)")
        let added = try await run(["wallet", "add", "t", "x", "v", "--raw-key-env", "K"])
        #expect(added.status == 0, "\(added.stderr)")
        #expect(try await run(["settings", "get", "a"]).stdout.contains(#""value":"c""#))
    }

    @Test("an existing app.sqlite with mode 0644 is 0600 after the next open")
    func existingAppDatabaseRestricted() throws {
        let url = emptyStore().appendingPathComponent("app.sqlite")
        try AppDatabase.openBlocking(at: url).close()
        #expect(chmod(url.path, 0o644) == 0)
        let database = try AppDatabase.openBlocking(at: url)
        defer { try? database.close() }
        #expect(octal(permissions(url.path)) == "600")
    }

    @Test("a wallet backup file is 0600")
    func backupFile() async throws {
        let folder = emptyStore()
        let wallet = try await Wallet.create(at: folder.appendingPathComponent("wallet.sqlite"), key: .raw(Data(repeating: 7, count: 32)))
        defer { try? wallet.close() }
        let backup = folder.appendingPathComponent("wallet.backup")
        try await wallet.exportBackup(to: backup, passphrase: "backup passphrase", parameters: BackupKey.floor)
        #expect(octal(permissions(backup.path)) == "600")
    }

    @Test("an existing store folder keeps its mode (it may be shared); Coffer's own folders in it are 0700")
    func existingStoreFolderKept() async throws {
        let store = emptyStore()
        try FileManager.default.createDirectory(at: store, withIntermediateDirectories: true)
        #expect(chmod(store.path, 0o755) == 0)
        let r = try await runUnderUmask000(["secure", "set", "accessToken", "--value-env", "TOKEN"], store: store, env: ["TOKEN": "t"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(octal(permissions(store.path)) == "755")
        #expect(wrongModes(under: store) == [". 755"])
    }
}
