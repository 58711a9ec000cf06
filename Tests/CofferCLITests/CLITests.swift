// The command line as other tools drive it: output formats and exit codes.

import CofferDatabase
import CofferSettings
import CofferTestSupport
import CofferWallet
import Foundation
import GRDB
import Testing

/// What a `coffer` run printed and how it ended.
typealias CLIResult = ProcessResult

/// Runs the built `coffer` binary (it sits beside the test bundle) through the shared runner
/// (CofferTestSupport's `runCoffer`, `startCoffer`): awaited without holding a thread of the
/// cooperative pool while the child runs.
enum CLI {
    static var binary: URL { cofferBinary }

    static let key = Data(repeating: 9, count: 32).base64EncodedString()

    /// `coffer --store STORE ARGS` with `env` added to the environment, run to its end.
    static func run(_ args: [String], store: URL, env: [String: String] = [:], stdin: Data? = nil) async throws -> CLIResult {
        try await runCoffer(args, store: store, environment: env, stdin: stdin)
    }

    /// `coffer --store STORE ARGS` started and left running (for kill tests and races).
    static func start(_ args: [String], store: URL, env: [String: String] = [:], stdin: Data? = nil) throws -> ChildProcess {
        try startCoffer(args, store: store, environment: env, stdin: stdin)
    }

    /// A wallet command with the test key from the environment (not visible to `ps`).
    static func wallet(_ args: [String], store: URL, stdin: Data? = nil) async throws -> CLIResult {
        try await run(["--raw-key-env", "COFFER_TEST_KEY", "wallet"] + args, store: store, env: ["COFFER_TEST_KEY": key], stdin: stdin)
    }

    static func newStore() async throws -> URL {
        let store = TemporaryFolders.path("coffer-cli")
        let r = try await wallet(["create"], store: store)
        precondition(r.status == 0, "create failed: \(r.stderr)")
        return store
    }
}

@Suite("coffer command line")
struct CLITests {
    @Test("the binary is built beside the tests")
    func binaryExists() {
        #expect(FileManager.default.isExecutableFile(atPath: CLI.binary.path), "no coffer binary at \(CLI.binary.path)")
    }

    @Test("add then get prints the record as JSON")
    func addGet() async throws {
        let store = try await CLI.newStore()
        #expect(try await CLI.wallet(["add", "cred", "c1", "hello", "--tags", #"{"a":"1","~b":["x","y"]}"#], store: store).status == 0)
        let r = try await CLI.wallet(["get", "cred", "c1", "--options", #"{"retrieveType":true}"#], store: store)
        #expect(r.status == 0)
        #expect(r.stdout == #"{"id":"c1","type":"cred","value":"hello","tags":{"a":"1","~b":["x","y"]}}"# + "\n")
    }

    @Test("a missing record exits 1 with error: on stderr")
    func notFound() async throws {
        let store = try await CLI.newStore()
        let r = try await CLI.wallet(["get", "cred", "nope"], store: store)
        #expect(r.status == 1)
        #expect(r.stderr.hasPrefix("error: "))
        #expect(r.stdout.isEmpty)
    }

    @Test("an invalid query exits 2")
    func invalidQuery() async throws {
        let store = try await CLI.newStore()
        #expect(try await CLI.wallet(["search", "cred", #"{"a": {"$nope": "x"}}"#], store: store).status == 2)
    }

    @Test("invalid tags exit 2")
    func invalidTags() async throws {
        let store = try await CLI.newStore()
        #expect(try await CLI.wallet(["add", "cred", "c1", "v", "--tags", #"{"a": 1}"#], store: store).status == 2)
    }

    @Test("no key option exits 2")
    func noKey() async throws {
        let store = TemporaryFolders.path("coffer-cli")
        let r = try await CLI.run(["wallet", "create"], store: store)
        #expect(r.status == 2)
        #expect(r.stderr.contains("--raw-key"))
    }

    @Test("an unknown subcommand exits 2")
    func unknownCommand() async throws {
        let store = try await CLI.newStore()
        #expect(try await CLI.wallet(["frobnicate"], store: store).status == 2)
    }

    @Test("a duplicate exits 3")
    func duplicate() async throws {
        let store = try await CLI.newStore()
        #expect(try await CLI.wallet(["add", "cred", "c1", "v"], store: store).status == 0)
        #expect(try await CLI.wallet(["add", "cred", "c1", "v"], store: store).status == 3)
    }

    @Test("a wrong key exits 4")
    func wrongKey() async throws {
        let store = try await CLI.newStore()
        let other = Data(repeating: 8, count: 32).base64EncodedString()
        #expect(try await CLI.run(["--raw-key", other, "wallet", "get", "cred", "x"], store: store).status == 4)
    }

    @Test("a tampered record exits 5")
    func corrupted() async throws {
        let store = try await CLI.newStore()
        #expect(try await CLI.wallet(["add", "cred", "c1", "v"], store: store).status == 0)
        // As an attacker without the key: the digest triggers' keyed functions do nothing.
        var config = Configuration()
        config.prepareDatabase { db in
            db.add(function: DatabaseFunction("coffer_digest_step", argumentCount: 4) { values in values[0] })
            db.add(function: DatabaseFunction("coffer_digest_v4", argumentCount: -1) { values in values[0] })
        }
        let db = try DatabaseQueue(path: store.appendingPathComponent("wallet.sqlite").path, configuration: config)
        try await db.write { db in
            var blob = try Data.fetchOne(db, sql: "SELECT value FROM items")!
            blob[blob.count - 1] ^= 1
            try db.execute(sql: "UPDATE items SET value = ?", arguments: [blob])
        }
        try db.close()
        #expect(try await CLI.wallet(["get", "cred", "c1"], store: store).status == 5)
    }

    @Test("a trigger planted in the closed file: get and check exit 5 before any record is read, naming the trigger")
    func plantedTrigger() async throws {
        let store = try await CLI.newStore()
        #expect(try await CLI.wallet(["add", "cred", "c1", "v"], store: store).status == 0)
        let db = try DatabaseQueue(path: store.appendingPathComponent("wallet.sqlite").path)
        try await db.write { db in try db.execute(sql: "CREATE TRIGGER planted AFTER INSERT ON items BEGIN DELETE FROM tags; END") }
        try db.close()
        for args in [["get", "cred", "c1"], ["check"]] {
            let r = try await CLI.wallet(args, store: store)
            #expect(r.status == 5, "\(args): \(r.stderr)")
            #expect(r.stderr.contains("\"planted\""), "\(args): \(r.stderr)")
            #expect(!r.stdout.contains("\"v\""))
        }
    }

    @Test("a $regex whose compiled program would be too large exits 2 naming the limit")
    func hostileRegex() async throws {
        let store = try await CLI.newStore()
        let r = try await CLI.wallet(["search", "cred", #"{"~n": {"$regex": "(?:(?:(?:a{1000}){1000}){1000}){1000}"}}"#], store: store)
        #expect(r.status == 2)
        #expect(r.stderr.contains("limit of 100000 instructions"), "\(r.stderr)")
    }

    @Test("search without --count prints every match in one object; with --count one page")
    func search() async throws {
        let store = try await CLI.newStore()
        for i in 0..<5 {
            #expect(try await CLI.wallet(["add", "cred", "c\(i)", "v\(i)", "--tags", #"{"~n":"\#(i)"}"#], store: store).status == 0)
        }
        let all = try await CLI.wallet(
            ["search", "cred", #"{"~n": {"$gte": 1}}"#, "--options", #"{"retrieveTags":false,"retrieveTotalCount":true}"#], store: store)
        #expect(all.status == 0)
        #expect(
            all.stdout
                == #"{"totalCount":4,"records":[{"id":"c1","value":"v1"},{"id":"c2","value":"v2"},{"id":"c3","value":"v3"},{"id":"c4","value":"v4"}]}"#
                + "\n")
        let page = try await CLI.wallet(["search", "cred", "{}", "--options", #"{"retrieveTags":false}"#, "--count", "2"], store: store)
        #expect(page.stdout == #"{"records":[{"id":"c0","value":"v0"},{"id":"c1","value":"v1"}]}"# + "\n")
    }

    @Test("update, tag commands and delete work from the command line")
    func tagCommands() async throws {
        let store = try await CLI.newStore()
        #expect(try await CLI.wallet(["add", "cred", "c1", "v", "--tags", #"{"a":"1","b":"2"}"#], store: store).status == 0)
        #expect(try await CLI.wallet(["update", "cred", "c1", "v2"], store: store).status == 0)
        #expect(try await CLI.wallet(["add-tags", "cred", "c1", #"{"c":"3"}"#], store: store).status == 0)
        #expect(try await CLI.wallet(["delete-tags", "cred", "c1", #"["a"]"#], store: store).status == 0)
        #expect(
            try await CLI.wallet(["get", "cred", "c1"], store: store).stdout == #"{"id":"c1","value":"v2","tags":{"b":"2","c":"3"}}"# + "\n"
        )
        #expect(try await CLI.wallet(["update-tags", "cred", "c1", #"{"z":"9"}"#], store: store).status == 0)
        #expect(try await CLI.wallet(["get", "cred", "c1"], store: store).stdout == #"{"id":"c1","value":"v2","tags":{"z":"9"}}"# + "\n")
        #expect(try await CLI.wallet(["delete", "cred", "c1"], store: store).status == 0)
        #expect(try await CLI.wallet(["get", "cred", "c1"], store: store).status == 1)
    }

    @Test("import is all or nothing: a duplicate on a later line imports nothing")
    func importAllOrNothing() async throws {
        let store = try await CLI.newStore()
        let file = store.appendingPathComponent("in.jsonl")
        try """
        {"type":"cred","id":"a","value":"1","tags":{"x":"1"}}
        {"type":"cred","id":"b","value":"2"}
        {"type":"cred","id":"a","value":"3"}
        """.write(to: file, atomically: true, encoding: .utf8)
        let r = try await CLI.wallet(["import", file.path], store: store)
        #expect(r.status == 3)
        #expect(try await CLI.wallet(["search", "cred", "{}"], store: store).stdout == #"{"records":[]}"# + "\n")
    }

    @Test("import adds every line and reports progress on stderr")
    func importOK() async throws {
        let store = try await CLI.newStore()
        let file = store.appendingPathComponent("in.jsonl")
        try (0..<50).map { #"{"type":"cred","id":"r\#($0)","value":"v","tags":{"n":"\#($0 % 2)"}}"# }.joined(separator: "\n")
            .write(to: file, atomically: true, encoding: .utf8)
        let r = try await CLI.wallet(["import", file.path], store: store)
        #expect(r.status == 0)
        #expect(r.stderr.contains("50/50"))
        let s = try await CLI.wallet(
            ["search", "cred", #"{"n":"1"}"#, "--options", #"{"retrieveRecords":false,"retrieveTotalCount":true}"#], store: store)
        #expect(s.stdout == #"{"totalCount":25}"# + "\n")
    }

    @Test("a malformed import line exits 2 and names the line")
    func importBadLine() async throws {
        let store = try await CLI.newStore()
        let file = store.appendingPathComponent("in.jsonl")
        try "{\"type\":\"cred\",\"id\":\"a\",\"value\":\"1\"}\n{\"type\":\"cred\",\"id\":5,\"value\":\"1\"}\n".write(
            to: file, atomically: true, encoding: .utf8)
        let r = try await CLI.wallet(["import", file.path], store: store)
        #expect(r.status == 2)
        #expect(r.stderr.contains("line 2"))
    }

    @Test("rekey to a passphrase: the passphrase opens it, the old key does not")
    func rekey() async throws {
        let store = try await CLI.newStore()
        #expect(try await CLI.wallet(["add", "cred", "c1", "v"], store: store).status == 0)
        let env = ["NEWPASS": "a new passphrase"]
        #expect(
            try await CLI.run(["--raw-key", CLI.key, "wallet", "rekey", "--new-passphrase-env", "NEWPASS"], store: store, env: env).status
                == 0)
        #expect(try await CLI.wallet(["get", "cred", "c1"], store: store).status == 4)
        #expect(try await CLI.run(["--passphrase-env", "NEWPASS", "wallet", "get", "cred", "c1"], store: store, env: env).status == 0)
    }

    @Test("COFFER_HOME picks the default store")
    func cofferHome() async throws {
        let home = TemporaryFolders.path("coffer-home")
        let r = try await runCoffer(["--raw-key", CLI.key, "wallet", "create"], environment: ["COFFER_HOME": home.path])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(FileManager.default.fileExists(atPath: home.appendingPathComponent("wallet.sqlite").path))
    }

    @Test("the demo runs end to end on a store")
    func demo() async throws {
        let store = TemporaryFolders.path("coffer-demo")
        let r = try await CLI.run(["demo"], store: store)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.contains("count = 3"))
    }
}

@Suite("Crash safety")
struct CrashTests {
    @Test("a process killed in the middle of an import leaves the last committed state readable")
    func killedImport() async throws {
        let store = try await CLI.newStore()
        #expect(try await CLI.wallet(["add", "cred", "before", "committed"], store: store).status == 0)
        let file = store.appendingPathComponent("big.jsonl")
        let lines = (0..<40_000).map {
            #"{"type":"cred","id":"r\#($0)","value":"\#(String(repeating: "v", count: 200))","tags":{"a":"\#($0 % 7)","~n":"\#($0)"}}"#
        }
        try lines.joined(separator: "\n").write(to: file, atomically: true, encoding: .utf8)

        let child = try CLI.start(["--raw-key", CLI.key, "wallet", "import", file.path], store: store)
        // Wait until the import is writing (its progress bar moved), then kill it outright.
        try await child.waitUntil("progress on stderr") { $0.termination != nil || $0.stderr.count >= 200 }
        _ = try await child.killAndWait()

        let wallet = try await Wallet.open(at: store.appendingPathComponent("wallet.sqlite"), key: .raw(Data(repeating: 9, count: 32)))
        defer { try? wallet.close() }
        #expect(try await wallet.get(type: "cred", id: "before").value == "committed")
        let count = try await wallet.count(type: "cred")
        #expect(count == 1 || count == 40_001, "an import is all or nothing, found \(count) records")
    }
}

@Suite("coffer deniable")
struct DeniableCLITests {
    func initStore() async throws -> (URL, String) {
        let store = TemporaryFolders.path("coffer-deniable-cli")
        let r = try await CLI.run(["deniable", "init"], store: store)
        precondition(r.status == 0, "init failed: \(r.stderr)")
        let object = try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any]
        return (store, object?["passphrase"] as? String ?? "")
    }

    @Test("send, dequeue and unlock by hand: the CoverNode reads the message, the mailbox keeps it")
    func flow() async throws {
        let (store, passphrase) = try await initStore()
        let env = ["DENIABLE_PASS": passphrase]
        let sent = try await CLI.run(
            ["--passphrase-env", "DENIABLE_PASS", "deniable", "send", "--to", "alice", "hello there"], store: store, env: env)
        #expect(sent.status == 0, "\(sent.stderr)")
        let head = try await CLI.run(["deniable", "dequeue"], store: store)
        #expect(head.stdout.contains(#""text":"hello there""#), "\(head.stdout)")
        let unlocked = try await CLI.run(["--passphrase-env", "DENIABLE_PASS", "deniable", "unlock"], store: store, env: env)
        #expect(unlocked.stdout.contains(#""queued":0"#) && unlocked.stdout.contains("hello there"), "\(unlocked.stdout)")
    }

    @Test("a wrong passphrase exits 4 with the one unlock error")
    func wrongPassphrase() async throws {
        let (store, _) = try await initStore()
        let r = try await CLI.run(["--passphrase-env", "P", "deniable", "unlock"], store: store, env: ["P": "abacus abdomen abide"])
        #expect(r.status == 4)
        #expect(r.stderr == "error: the passphrase did not unlock the vault\n")
    }

    @Test("a process killed while saving leaves the old or the new vault, never a broken one")
    func killedDuringSave() async throws {
        let (store, passphrase) = try await initStore()
        let vault = store.appendingPathComponent("deniable/vault")
        let length = try Data(contentsOf: vault).count
        for _ in 0..<16 {
            let child = try CLI.start(["deniable", "lock"], store: store)
            // A `deniable lock` run takes about 30 ms: kill it somewhere in there (timed on a
            // thread of its own, which a busy cooperative pool does not delay).
            try await onOwnThread {
                usleep(useconds_t.random(in: 1_000...40_000))
                child.kill()
            }
            _ = try await child.wait()
            #expect(try Data(contentsOf: vault).count == length)
        }
        let r = try await CLI.run(["--passphrase-env", "P", "deniable", "unlock"], store: store, env: ["P": passphrase])
        #expect(r.status == 0, "\(r.stderr)")
    }
}

/// Cancels the running test when an interop script printed `SKIP: …` (PyPI cannot be reached,
/// see Tests/Interop/venv.sh): Swift Testing then reports the test as skipped, with the script's
/// reason, instead of as passed.
func skipWhenOffline(_ r: CLIResult) throws {
    guard r.stdout.hasPrefix("SKIP:") else { return }
    try Test.cancel(Comment(rawValue: r.stdout.trimmingCharacters(in: .whitespacesAndNewlines)))
}

@Suite("Interop with real clients")
struct InteropTests {
    @Test("Askar verifies Coffer's Ed25519 signatures and Coffer Askar's; PyNaCl and Coffer open each other's sealed boxes")
    func askarAndPyNaCl() async throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let r = try await runProcess(
            URL(fileURLWithPath: "/usr/bin/env"), ["bash", root.appendingPathComponent("Tests/Interop/run.sh").path, CLI.binary.path],
            within: .seconds(900)) // a first run installs from PyPI (venv.sh gives pip up to 600 s)
        try skipWhenOffline(r)
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        #expect(r.stdout.contains("interop ok"), "\(r.stdout)\(r.stderr)")
    }
}

@Suite("App database from the command line")
struct AppDataCLITests {
    @Test("settings set, get, list and delete keep their formats and exit codes")
    func settings() async throws {
        let store = TemporaryFolders.path("coffer-settings")
        #expect(try await CLI.run(["settings", "set", "tilesPerRow", "6"], store: store).status == 0)
        #expect(
            try await CLI.run(["settings", "get", "tilesPerRow"], store: store).stdout
                == #"{"name":"tilesPerRow","kind":"int","value":6,"default":4,"set":true}"# + "\n")
        #expect(try await CLI.run(["settings", "set", "tilesPerRow", "six"], store: store).status == 2)
        #expect(try await CLI.run(["settings", "list"], store: store).stdout.contains(#""tilesPerRow":6"#))
        #expect(try await CLI.run(["settings", "delete", "tilesPerRow"], store: store).status == 0)
        #expect(try await CLI.run(["settings", "get", "tilesPerRow"], store: store).stdout.contains(#""set":false"#))
    }

    @Test("a process killed in the middle of migrating leaves a file the next open migrates completely")
    func killedMidMigration() async throws {
        let store = TemporaryFolders.path("coffer-migrate")
        let url = store.appendingPathComponent("app.sqlite")
        let old = try AppDatabase.openBlocking(at: url, schemaUpTo: "app-v1")
        let rows = 150_000
        try await old.pool.write { db in
            let statement = try db.makeStatement(
                sql: """
                    INSERT INTO assets(remoteId, localId, ownerId, checksum, fileName, type, fileCreatedAt, fileModifiedAt, updatedAt)
                    VALUES (?, ?, ?, ?, 'f.jpg', 'image', '2021-01-01 00:00:00.000', '2021-01-01 00:00:00.000', '2021-01-01 00:00:00.000')
                    """)
            for i in 0..<rows { try statement.execute(arguments: ["r\(i)", "l\(i)", "OWNER-\(i % 100)", "c\(i)"]) }
        }
        try old.close()
        var killedWhileRunning = 0
        for delay in [30_000, 120_000, 250_000, 500_000] as [useconds_t] {
            let child = try CLI.start(["db", "stats"], store: store)
            // The delay is timed on a thread of its own (a busy cooperative pool would stretch it).
            if try await onOwnThread({ () -> Bool in
                usleep(delay)
                return child.kill()
            }) {
                killedWhileRunning += 1
            }
            _ = try await child.wait()
        }
        #expect(killedWhileRunning > 0, "no run was still migrating when killed")
        let app = try AppDatabase.openBlocking(at: url)
        #expect(app.settings.get(SettingsCatalog.version) == 5)
        #expect(try app.context.assets.countBlocking() == rows)
        #expect(try app.context.assets.allForOwnerBlocking("owner-7").count == rows / 100)
        // Every stored owner id is lower-cased (queries normalise their argument, so read the rows).
        #expect(try await app.pool.read { try Int.fetchOne($0, sql: "SELECT COUNT(*) FROM assets WHERE ownerId <> lower(ownerId)") } == 0)
    }
}
