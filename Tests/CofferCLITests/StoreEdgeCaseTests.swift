// Hostile store layouts and inputs from outside: an empty --store, folders their owner made
// unreadable, symbolic links at the database and key paths, damaged key files, missing input
// files, and a user setting without its optional field.

import CofferSettings
import CofferTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Runs `coffer` as an unprivileged user: as `nobody` through `setpriv` when the tests run as
/// root (whom file modes do not stop), else as the current user. `cwd`: the working folder.
func runUnprivileged(_ args: [String], cwd: URL? = nil, env: [String: String] = [:]) async throws -> CLIResult {
    if getuid() == 0 {
        return try await runProcess(
            URL(fileURLWithPath: "/usr/bin/setpriv"), ["--reuid=65534", "--regid=65534", "--clear-groups", unprivilegedBinary.path] + args,
            environment: env, currentDirectory: cwd)
    }
    return try await runProcess(CLI.binary, args, environment: env, currentDirectory: cwd)
}

/// The `coffer` binary as the unprivileged user can run it: a copy, with the resource bundles
/// beside it, in a folder every user may enter. The build folder may sit under one only its owner
/// can enter (a fresh clone in `mktemp -d`), where Foundation cannot find the main bundle of a
/// process run as another user and stops it.
let unprivilegedBinary: URL = {
    let fm = FileManager.default
    let folder = TemporaryFolders.path("coffer-unprivileged-bin")
    do {
        try fm.createDirectory(at: folder, withIntermediateDirectories: true)
        _ = chmod(folder.path, 0o755)
        let built = CLI.binary.deletingLastPathComponent()
        for name in try fm.contentsOfDirectory(atPath: built.path) where name == "coffer" || name.hasSuffix(".resources") {
            try fm.copyItem(at: built.appendingPathComponent(name), to: folder.appendingPathComponent(name))
        }
        return folder.appendingPathComponent("coffer")
    } catch {
        return CLI.binary
    }
}()

/// A fresh folder the unprivileged user of ``runUnprivileged(_:cwd:env:)`` owns.
func unprivilegedFolder() throws -> URL {
    let root = TemporaryFolders.path("coffer-unprivileged")
    try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
    if getuid() == 0 { #expect(chown(root.path, 65534, 65534) == 0) }
    return root
}

@Suite("coffer: store edge cases")
struct StoreEdgeCaseTests {
    @Test("--store \"\" is refused (exit 2) wherever it stands, and the current folder's Coffer files stay")
    func emptyStore() async throws {
        let cwd = try unprivilegedFolder()
        let app = cwd.appendingPathComponent("app.sqlite")
        try Data("mine".utf8).write(to: app)
        if getuid() == 0 { #expect(chown(app.path, 65534, 65534) == 0) }
        for args in [["--store", "", "reset", "--yes"], ["reset", "--yes", "--store", ""], ["--store", "", "secure", "list"]] {
            let r = try await runUnprivileged(args, cwd: cwd)
            #expect(r.status == 2 && r.stderr.contains("--store"), "\(args): \(r.status) \(r.stderr)")
        }
        #expect(try Data(contentsOf: app) == Data("mine".utf8))
    }

    @Test("reset --yes gives the owner back the permissions of folders set to mode 000 and removes them")
    func resetUnreadableFolders() async throws {
        let store = try unprivilegedFolder().appendingPathComponent("store")
        #expect(try await runUnprivileged(["--store", store.path, "secure", "set", "x", "--value-env", "V"], env: ["V": "v"]).status == 0)
        #expect(try await runUnprivileged(["--store", store.path, "deniable", "start"]).status == 0)
        let mine = store.appendingPathComponent("notes.txt")
        #expect(try await runUnprivileged(["--store", store.path, "settings", "list"]).status == 0)
        try Data("kept".utf8).write(to: mine)
        for folder in ["secure/items", "secure", "deniable", "caches/media", "."] {
            #expect(chmod(store.appendingPathComponent(folder).path, 0) == 0)
        }
        let r = try await runUnprivileged(["--store", store.path, "reset", "--yes"])
        #expect(r.status == 0, "\(r.stderr)")
        let left = try FileManager.default.contentsOfDirectory(atPath: store.path).sorted()
        #expect(left == ["notes.txt"], "\(left)")
        #expect(permissions(store.path).map { $0 & 0o700 } == 0o700)
    }

    @Test("an unreadable secure folder is a storage error naming it (exit 6), not an empty list or a missing item")
    func unreadableSecureFolder() async throws {
        let store = try unprivilegedFolder().appendingPathComponent("store")
        #expect(try await runUnprivileged(["--store", store.path, "secure", "set", "x", "--value-env", "V"], env: ["V": "v"]).status == 0)
        for folder in ["secure", "secure/items"] {
            let path = store.appendingPathComponent(folder).path
            #expect(chmod(path, 0) == 0)
            for args in [["secure", "list"], ["secure", "get", "x"], ["secure", "delete", "x"]] {
                let r = try await runUnprivileged(["--store", store.path] + args)
                #expect(r.status == 6 && r.stderr.contains(path), "\(folder) \(args): \(r.status) \(r.stdout) \(r.stderr)")
            }
            #expect(chmod(path, 0o700) == 0)
        }
        let get = try await runUnprivileged(["--store", store.path, "secure", "get", "x"])
        #expect(get.status == 0 && get.stdout == "v", "the item survived: \(get.stderr)")
    }

    @Test("an unreadable deniable folder is a storage error naming it (exit 6), not a store to start afresh")
    func unreadableDeniableFolder() async throws {
        let store = try unprivilegedFolder().appendingPathComponent("store")
        #expect(try await runUnprivileged(["--store", store.path, "deniable", "start"]).status == 0)
        let folder = store.appendingPathComponent("deniable").path
        #expect(chmod(folder, 0) == 0)
        let r = try await runUnprivileged(["--store", store.path, "deniable", "status"])
        #expect(r.status == 6 && r.stderr.contains(folder), "\(r.status) \(r.stderr)")
    }

    @Test("a FIFO or folder in place of a secure item is a storage error naming it (exit 6), not a key that does not match (5)")
    func secureItemNotAFile() async throws {
        for kind in ["FIFO", "folder"] {
            let store = TemporaryFolders.path("coffer-secure-fifo")
            #expect(try await CLI.run(["secure", "set", "accessToken", "--value-env", "V"], store: store, env: ["V": "t0"]).status == 0)
            let items = store.appendingPathComponent("secure/items")
            let file = try #require(try FileManager.default.contentsOfDirectory(atPath: items.path).first { !$0.hasPrefix(".") })
            let item = items.appendingPathComponent(file)
            try FileManager.default.removeItem(at: item)
            if kind == "FIFO" {
                #expect(mkfifo(item.path, 0o600) == 0)
            } else {
                try FileManager.default.createDirectory(at: item, withIntermediateDirectories: false)
            }
            let list = try await CLI.run(["secure", "list"], store: store)
            #expect(list.status == 6 && list.stderr.contains("is not a regular file"), "\(kind): \(list.status) \(list.stderr)")
            #expect(!list.stderr.contains("reset"), "\(kind): \(list.stderr)")
        }
    }

    @Test("an app.sqlite that is not a database, or whose pages are damaged, is exit 5 (corrupted), not 6")
    func damagedAppDatabase() async throws {
        let noise = try await CLI.newStore()
        try Data((0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 7919 &+ 13) }).write(to: noise.appendingPathComponent("app.sqlite"))
        let notADatabase = try await CLI.run(["settings", "list"], store: noise)
        #expect(notADatabase.status == 5 && notADatabase.stderr.contains("not a database"), "\(notADatabase.status) \(notADatabase.stderr)")
        let damaged = try await CLI.newStore()
        #expect(try await CLI.run(["settings", "set", "tilesPerRow", "3"], store: damaged).status == 0)
        let file = try FileHandle(forWritingTo: damaged.appendingPathComponent("app.sqlite"))
        try file.seek(toOffset: 4096 * 2)
        try file.write(contentsOf: Data(repeating: 0xFF, count: 4096 * 3))
        try file.close()
        let malformed = try await CLI.run(["settings", "list"], store: damaged)
        #expect(malformed.status == 5 && malformed.stderr.contains("malformed"), "\(malformed.status) \(malformed.stderr)")
    }

    @Test("a FIFO or a folder at a database's path is refused at once (exit 6, naming it); a FIFO made the open wait forever")
    func databaseSpecialFiles() async throws {
        let store = try await CLI.newStore()
        #expect(try await CLI.run(["settings", "set", "tilesPerRow", "3"], store: store).status == 0)
        let app = store.appendingPathComponent("app.sqlite")
        let wallet = store.appendingPathComponent("wallet.sqlite")
        try FileManager.default.moveItem(at: app, to: store.appendingPathComponent("app.saved"))
        try FileManager.default.moveItem(at: wallet, to: store.appendingPathComponent("wallet.saved"))
        #expect(mkfifo(app.path, 0o600) == 0 && mkfifo(wallet.path, 0o600) == 0)
        // Bounded: without the check these runs never end.
        let settings = try await runCoffer(["--store", store.path, "settings", "get", "tilesPerRow"], within: .seconds(60))
        #expect(settings.status == 6 && settings.stderr.contains("app.sqlite is not a regular file (it is a FIFO)"), "\(settings.stderr)")
        let count = try await runCoffer(
            ["--store", store.path, "--raw-key-env", "COFFER_TEST_KEY", "wallet", "count", "t"], environment: ["COFFER_TEST_KEY": CLI.key],
            within: .seconds(60))
        #expect(count.status == 6 && count.stderr.contains("wallet.sqlite is not a regular file (it is a FIFO)"), "\(count.stderr)")
        // A folder where the WAL goes.
        try FileManager.default.removeItem(at: app)
        try FileManager.default.moveItem(at: store.appendingPathComponent("app.saved"), to: app)
        try FileManager.default.createDirectory(at: store.appendingPathComponent("app.sqlite-wal"), withIntermediateDirectories: false)
        let folder = try await CLI.run(["settings", "get", "tilesPerRow"], store: store)
        #expect(folder.status == 6 && folder.stderr.contains("app.sqlite-wal is not a regular file (it is a folder)"), "\(folder.stderr)")
    }

    @Test("symbolic links at app.sqlite and wallet.sqlite, dangling or not, are refused and nothing is written through them")
    func databaseSymlinks() async throws {
        for dangling in [true, false] {
            let store = try await CLI.newStore()
            let elsewhere = TemporaryFolders.path("coffer-link-target")
            try FileManager.default.createDirectory(at: elsewhere, withIntermediateDirectories: true)
            let walletTarget = elsewhere.appendingPathComponent("wallet.sqlite")
            let appTarget = elsewhere.appendingPathComponent("app.sqlite")
            if !dangling {
                try FileManager.default.moveItem(at: store.appendingPathComponent("wallet.sqlite"), to: walletTarget)
                #expect(try await CLI.run(["settings", "list"], store: elsewhere).status == 0)
            } else {
                try FileManager.default.removeItem(at: store.appendingPathComponent("wallet.sqlite"))
            }
            try FileManager.default.createSymbolicLink(at: store.appendingPathComponent("wallet.sqlite"), withDestinationURL: walletTarget)
            try FileManager.default.createSymbolicLink(at: store.appendingPathComponent("app.sqlite"), withDestinationURL: appTarget)
            let before = try FileManager.default.contentsOfDirectory(atPath: elsewhere.path).sorted()
            for args in [["count", "t"], ["create"]] {
                let r = try await CLI.wallet(args, store: store)
                #expect(r.status == 6 && r.stderr.contains("wallet.sqlite is a symbolic link"), "dangling \(dangling) \(args): \(r.stderr)")
            }
            let settings = try await CLI.run(["settings", "list"], store: store)
            #expect(
                settings.status == 6 && settings.stderr.contains("app.sqlite is a symbolic link"),
                "dangling \(dangling): \(settings.stderr)")
            #expect(try FileManager.default.contentsOfDirectory(atPath: elsewhere.path).sorted() == before, "dangling \(dangling)")
        }
    }

    @Test("a missing input file is exit 2 for every command that reads one")
    func missingInputFiles() async throws {
        let store = try await CLI.newStore()
        let missing = store.appendingPathComponent("no-such-file").path
        let commands: [[String]] = [
            ["--raw-key-env", "K", "wallet", "import-backup", missing, "--backup-passphrase-env", "K"],
            ["--raw-key-env", "K", "wallet", "import", missing],
            ["--raw-key-env", "K", "wallet", "add", "t", "i", "--value-file", missing],
            ["--raw-key-env", "K", "wallet", "add", "t", "i", "v", "--tags-file", missing],
            ["--raw-key-env", "K", "wallet", "search", "t", "--query-file", missing],
            ["--raw-key-file", missing, "wallet", "count", "t"],
            ["cache", "put", "thumbnail", "a", missing],
        ]
        for args in commands {
            let target =
                args.contains("import-backup") ? TemporaryFolders.path("backup") : store
            let r = try await CLI.run(args, store: target, env: ["K": CLI.key])
            #expect(r.status == 2 && r.stderr.contains("no-such-file"), "\(args): \(r.status) \(r.stderr)")
        }
    }

    @Test("a 5-byte secure key file is a damaged key (exit 5) saying what to do; a linked key file is refused as a link")
    func damagedAndLinkedKeyFile() async throws {
        let store = try await CLI.newStore()
        #expect(try await CLI.run(["secure", "set", "x", "--value-env", "V"], store: store, env: ["V": "v"]).status == 0)
        let key = store.appendingPathComponent("secure/key")
        let saved = store.appendingPathComponent("saved-key")
        try FileManager.default.moveItem(at: key, to: saved)
        try Data("abcde".utf8).write(to: key)
        #expect(chmod(key.path, 0o600) == 0)
        let damaged = try await CLI.run(["secure", "get", "x"], store: store)
        #expect(damaged.status == 5, "\(damaged.stderr)")
        #expect(
            damaged.stderr.contains("5 bytes") && damaged.stderr.contains("damaged") && damaged.stderr.contains("reset"),
            "\(damaged.stderr)")
        try FileManager.default.removeItem(at: key)
        try FileManager.default.createSymbolicLink(at: key, withDestinationURL: saved)
        let linked = try await CLI.run(["secure", "get", "x"], store: store)
        #expect(linked.status == 6 && linked.stderr.contains("symbolic link") && !linked.stderr.contains("777"), "\(linked.stderr)")
    }

    @Test("settings set currentUser takes a user without the optional isAdmin, read back as not an admin")
    func currentUserWithoutIsAdmin() async throws {
        let store = try await CLI.newStore()
        let r = try await CLI.run(["settings", "set", "currentUser", #"{"id":"u1","email":"a@b.c","name":"A"}"#], store: store)
        #expect(r.status == 0, "\(r.stderr)")
        let user = try JSONDecoder().decode(User.self, from: Data(#"{"id":"u1","email":"a@b.c","name":"A"}"#.utf8))
        #expect(user == User(id: "u1", email: "a@b.c", name: "A", isAdmin: false))
        let missingName = try await CLI.run(["settings", "set", "currentUser", #"{"id":"u1","email":"a@b.c"}"#], store: store)
        #expect(missingName.status == 2)
    }
}
