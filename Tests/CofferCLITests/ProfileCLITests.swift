// `coffer wallet … --profile NAME`, `wallet profiles`, `wallet remove-profile`: several wallets
// with their own keys in one store, driven from outside by separate processes.

import CofferTestSupport
import Foundation
import GRDB
import Testing

@Suite("Wallet profiles from the command line")
struct ProfileCLITests {
    static let bobKey = Data(repeating: 7, count: 32).base64EncodedString()

    /// A store with the default wallet (CLI.key) and profile `bob` (bobKey).
    static func store() async throws -> URL {
        let store = try await CLI.newStore()
        let r = try await bob(["create"], store: store)
        precondition(r.status == 0, "create --profile bob failed: \(r.stderr)")
        return store
    }

    /// `coffer wallet ARGS --profile bob` with bob's key from the environment.
    static func bob(_ args: [String], store: URL, key: String = bobKey) async throws -> CLIResult {
        try await CLI.run(["wallet"] + args + ["--profile", "bob", "--raw-key-env", "BOB_KEY"], store: store, env: ["BOB_KEY": key])
    }

    /// Whether `child` reports reaching pause point `point` (false when it ended first).
    /// - Throws: ``TimedOut`` when it did neither within the default bound.
    static func reachedPause(_ child: ChildProcess, _ point: String) async throws -> Bool {
        try await [child].waitForStderr(containingOrEnded: "test-pause: \(point)")
        return child.stderrSoFar.contains("test-pause: \(point)")
    }

    static func json(_ text: String) throws -> Any { try JSONSerialization.jsonObject(with: Data(text.utf8)) }

    @Test("another profile's key is refused with exit 4, for the profile and for the default wallet")
    func wrongProfileKey() async throws {
        let store = try await Self.store()
        let wrong = try await Self.bob(["count", "t", "{}"], store: store, key: CLI.key)
        #expect(wrong.status == 4, "\(wrong.stderr)")
        let defaultWithBobs = try await CLI.run(
            ["wallet", "count", "t", "{}", "--raw-key-env", "K"], store: store, env: ["K": Self.bobKey])
        #expect(defaultWithBobs.status == 4, "\(defaultWithBobs.stderr)")
        // A third profile: neither bob's key nor the default's opens it; its own does.
        let carolKey = Data(repeating: 8, count: 32).base64EncodedString()
        #expect(
            try await CLI.run(["wallet", "create", "--profile", "carol", "--raw-key-env", "K"], store: store, env: ["K": carolKey]).status
                == 0)
        for key in [Self.bobKey, CLI.key] {
            let r = try await CLI.run(["wallet", "count", "t", "--profile", "carol", "--raw-key-env", "K"], store: store, env: ["K": key])
            #expect(r.status == 4, "\(r.stderr)")
        }
        #expect(
            try await CLI.run(["wallet", "count", "t", "--profile", "carol", "--raw-key-env", "K"], store: store, env: ["K": carolKey])
                .status
                == 0)
    }

    @Test("--profile works before and after the subcommand name, and records stay in their profile")
    func profileOptionPlacement() async throws {
        let store = try await Self.store()
        let before = try await CLI.run(
            ["--profile", "bob", "wallet", "add", "t", "a", "bob", "--raw-key-env", "K"], store: store, env: ["K": Self.bobKey])
        #expect(before.status == 0, "\(before.stderr)")
        let middle = try await CLI.run(
            ["wallet", "--profile", "bob", "add", "t", "b", "bob", "--raw-key-env", "K"], store: store, env: ["K": Self.bobKey])
        #expect(middle.status == 0, "\(middle.stderr)")
        #expect(try await CLI.wallet(["add", "t", "a", "main"], store: store).status == 0)
        let count = try await Self.bob(["count", "t", "{}"], store: store)
        #expect(try Self.json(count.stdout) as? [String: Int] == ["count": 2], "\(count.stdout) \(count.stderr)")
        let main = try await CLI.wallet(["get", "t", "a"], store: store)
        #expect(main.stdout.contains("\"main\""), "\(main.stdout)")
    }

    @Test("profiles lists [\"default\", …] as JSON; remove-profile needs --yes (exit 2), then prints {\"removed\": NAME}")
    func listAndRemove() async throws {
        let store = try await Self.store()
        let list = try await CLI.run(["wallet", "profiles"], store: store)
        #expect(try Self.json(list.stdout) as? [String] == ["default", "bob"], "\(list.stdout) \(list.stderr)")
        let unconfirmed = try await CLI.run(["wallet", "remove-profile", "bob"], store: store)
        #expect(unconfirmed.status == 2)
        #expect(try Self.json(try await CLI.run(["wallet", "profiles"], store: store).stdout) as? [String] == ["default", "bob"])
        let removed = try await CLI.run(["wallet", "remove-profile", "bob", "--yes"], store: store)
        #expect(try Self.json(removed.stdout) as? [String: String] == ["removed": "bob"], "\(removed.stdout) \(removed.stderr)")
        #expect(try Self.json(try await CLI.run(["wallet", "profiles"], store: store).stdout) as? [String] == ["default"])
        #expect(try await Self.bob(["count", "t", "{}"], store: store).status == 1)
        #expect(try await CLI.wallet(["check"], store: store).status == 0)
    }

    @Test("processes writing two profiles at once: none fails, every record lands in its own profile")
    func concurrentProcesses() async throws {
        let store = try await Self.store()
        var children: [ChildProcess] = []
        for i in 0..<16 {
            let onBob = i % 2 == 1
            children.append(
                try CLI.start(
                    [
                        "wallet", "add", "t", "r\(i)", onBob ? "bob" : "main", "--tags", onBob ? #"{"p": "bob"}"# : #"{"p": "main"}"#,
                        "--raw-key-env", "K",
                    ] + (onBob ? ["--profile", "bob"] : []),
                    store: store, env: ["K": onBob ? Self.bobKey : CLI.key]))
        }
        for (child, result) in zip(children, try await children.wait()) {
            #expect(result.status == 0, "\(child.commandLine) failed: \(result.stderr)")
        }
        let bob = try await Self.bob(["count", "t", #"{"p": "bob"}"#], store: store)
        #expect(try Self.json(bob.stdout) as? [String: Int] == ["count": 8], "\(bob.stdout) \(bob.stderr)")
        let main = try await CLI.wallet(["count", "t", "{}"], store: store)
        #expect(try Self.json(main.stdout) as? [String: Int] == ["count": 8], "\(main.stdout) \(main.stderr)")
        // None crossed: each profile holds exactly its own writers' records.
        let bobIds = try Self.json(try await Self.bob(["search", "t", "{}"], store: store).stdout) as? [String: Any]
        let mainIds = try Self.json(try await CLI.wallet(["search", "t", "{}"], store: store).stdout) as? [String: Any]
        func ids(_ page: [String: Any]?) -> [String] {
            ((page?["records"] as? [[String: Any]]) ?? []).compactMap { $0["id"] as? String }.sorted()
        }
        #expect(ids(bobIds) == stride(from: 1, to: 16, by: 2).map { "r\($0)" }.sorted())
        #expect(ids(mainIds) == stride(from: 0, to: 16, by: 2).map { "r\($0)" }.sorted())
        #expect(
            try Self.json(try await CLI.wallet(["count", "t", #"{"p": "bob"}"#], store: store).stdout) as? [String: Int] == ["count": 0])
        #expect(try await Self.bob(["check"], store: store).status == 0)
        #expect(try await CLI.wallet(["check"], store: store).status == 0)
    }

    /// Every row of the default profile's tables (records, tags, digest, keys), as stored.
    static func defaultRows(_ store: URL) throws -> [[DatabaseValue]] {
        let queue = try DatabaseQueue(path: store.appendingPathComponent("wallet.sqlite").path)
        defer { try? queue.close() }
        return try queue.read { db in
            var out = [[DatabaseValue]]()
            for table in ["items", "tags", "tag_multi", "coffer_digest", "coffer_meta"] {
                // Sorted by their text, so the order does not depend on how SQLite walks the table.
                out += try Row.fetchAll(db, sql: "SELECT * FROM \(table)").map { row in
                    [table.databaseValue] + (0..<row.count).map { row[$0] as DatabaseValue }
                }.sorted { "\($0)" < "\($1)" }
            }
            return out
        }
    }

    @Test(
        "kill -9 inside an import into one profile: that profile keeps its last commit, the other is unchanged row for row, the rerun imports all"
    )
    func killMidImport() async throws {
        let store = try await Self.store()
        let keep = (0..<20).map { #"{"type": "t", "id": "keep\#($0)", "value": "main", "tags": {"k": "1"}}"# }.joined(separator: "\n")
        let keepFile = TemporaryFolders.make("coffer-profile-keep").appendingPathComponent("keep.jsonl")
        try Data(keep.utf8).write(to: keepFile)
        #expect(try await CLI.wallet(["import", keepFile.path], store: store).status == 0)
        #expect(try await Self.bob(["add", "t", "before", "bob"], store: store).status == 0)
        let mainBefore = try await CLI.wallet(["search", "t", "{}"], store: store).stdout
        let rowsBefore = try Self.defaultRows(store)
        let lines = (0..<3_000).map { #"{"type": "t", "id": "i\#($0)", "value": "v"}"# }.joined(separator: "\n")
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("coffer-profile-import-\(UUID().uuidString).jsonl")
        try Data(lines.utf8).write(to: file)
        let child = try CLI.start(
            ["wallet", "import", file.path, "--profile", "bob", "--raw-key-env", "K"], store: store,
            env: ["K": Self.bobKey, "COFFER_TEST_PAUSE_AT": "wallet-import-writing", "COFFER_TEST_PAUSE_MS": "600000"])
        // The pause point is inside the import's transaction, after 1,000 records were inserted.
        #expect(try await Self.reachedPause(child, "wallet-import-writing"), "the import never reached its transaction")
        #expect(child.isRunning, "the import ended before the kill")
        #expect(try await child.killAndWait().wasSignalled)
        let bob = try await Self.bob(["count", "t", "{}"], store: store)
        #expect(try Self.json(bob.stdout) as? [String: Int] == ["count": 1], "\(bob.stdout) \(bob.stderr)")
        #expect(try await CLI.wallet(["search", "t", "{}"], store: store).stdout == mainBefore)
        #expect(try Self.defaultRows(store) == rowsBefore, "the default profile's rows changed")
        #expect(try await Self.bob(["check"], store: store).status == 0)
        #expect(try await CLI.wallet(["check"], store: store).status == 0)
        let rerun = try await Self.bob(["import", file.path], store: store)
        #expect(try Self.json(rerun.stdout) as? [String: Int] == ["imported": 3_000], "\(rerun.stdout) \(rerun.stderr)")
        #expect(try Self.json(try await Self.bob(["count", "t", "{}"], store: store).stdout) as? [String: Int] == ["count": 3_001])
        #expect(try Self.defaultRows(store) == rowsBefore)
    }

    @Test("kill -9 inside remove-profile, its tables dropped but not committed: the profile and its records are all still there")
    func killMidRemoval() async throws {
        let store = try await Self.store()
        for id in ["a", "b", "c"] { #expect(try await Self.bob(["add", "t", id, "bob"], store: store).status == 0) }
        let child = try CLI.start(
            ["wallet", "remove-profile", "bob", "--yes"], store: store,
            env: ["COFFER_TEST_PAUSE_AT": "wallet-remove-profile-dropped", "COFFER_TEST_PAUSE_MS": "600000"])
        #expect(try await Self.reachedPause(child, "wallet-remove-profile-dropped"), "the removal never dropped the tables")
        #expect(child.isRunning, "the removal ended before the kill")
        #expect(try await child.killAndWait().wasSignalled)
        #expect(try Self.json(try await CLI.run(["wallet", "profiles"], store: store).stdout) as? [String] == ["default", "bob"])
        let count = try await Self.bob(["count", "t", "{}"], store: store)
        #expect(try Self.json(count.stdout) as? [String: Int] == ["count": 3], "\(count.stdout) \(count.stderr)")
        #expect(try await Self.bob(["check"], store: store).status == 0)
    }
}
