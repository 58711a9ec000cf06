// Bulk import on PostgreSQL (COPY into a staging table, one INSERT … SELECT, one transaction),
// proven from outside: the built `coffer` against the tests' private server, killed with SIGKILL
// while the server shows its COPY under way, many processes writing two profiles at once, and
// bad records that must leave nothing behind. In the serialized PostgreSQL suite.

#if PostgreSQL
import CofferSync
import CofferTestSupport
import Foundation
import PostgresNIO
import Testing

@testable import CofferWallet

enum PostgresImportTesting {
    /// A fresh database's URL and settings.
    static func database(_ label: String) throws -> (url: String, settings: PostgresSettings) {
        let endpoint = try PostgresTestServer.endpoint()
        let url = endpoint.url(database: try PostgresTestServer.makeDatabase(label)) + "?sslmode=disable&max_connections=2"
        return (url, PostgresSettings(url: try PostgresURL(url)))
    }

    /// `n` records as JSON lines: type `cred`, ids `r0…`, two tags each (one encrypted, one `~`).
    static func jsonLines(_ n: Int, replacing line: Int? = nil, with text: String = "") throws -> URL {
        var out = ""
        for i in 0..<n {
            if let line, i + 1 == line {
                out += text + "\n"
                continue
            }
            out +=
                #"{"type": "cred", "id": "r\#(i)", "value": "value \#(i) \#(String(repeating: "x", count: 200))", "tags": {"schema": "s\#(i % 10)", "~n": "\#(i)"}}"#
                + "\n"
        }
        let file = TemporaryFolders.path("coffer-pg-import").appendingPathExtension("jsonl")
        try out.write(to: file, atomically: true, encoding: .utf8)
        return file
    }

    /// Every row of profile `number` in both tables, as text, in a stable order.
    static func rows(_ wallet: PostgresWallet, profile number: Int64) async throws -> [String] {
        try await wallet.store.withConnection { connection in
            var out = [String]()
            for try await (id, type, name, value, expiry, version) in try await connection.query(
                "SELECT id, type, name, value, expiry, version FROM coffer_items WHERE profile = \(number) ORDER BY id",
                logger: PostgresStore.logger
            ).decode((Int64, Int64, Data, Data, Int64?, Int64).self) {
                out.append(
                    "item \(id) \(type) \(name.base64EncodedString()) \(value.base64EncodedString()) \(String(describing: expiry)) \(version)"
                )
            }
            for try await (item, name, value, num) in try await connection.query(
                "SELECT item, name, value, num FROM coffer_tags WHERE profile = \(number) ORDER BY item, name, value",
                logger: PostgresStore.logger
            ).decode((Int64, Int64, Data, Double?).self) {
                out.append("tag \(item) \(name) \(value.base64EncodedString()) \(String(describing: num))")
            }
            return out
        }
    }

    /// Rows of profile `number` in the items table.
    static func itemCount(_ wallet: PostgresWallet, profile number: Int64) async throws -> Int {
        try await wallet.store.withConnection { connection in
            for try await n in try await connection.query(
                "SELECT count(*) FROM coffer_items WHERE profile = \(number)", logger: PostgresStore.logger
            ).decode(Int64.self) {
                return Int(n)
            }
            return -1
        }
    }

    /// Starts `coffer --store STORE ARGS --wallet-url URL` without waiting (the keys in its
    /// environment, its output captured by the suite's process runner).
    static func start(_ args: [String], url: String, store: URL, env: [String: String] = [:]) throws -> ChildProcess {
        try startCoffer(args + ["--wallet-url", url], store: store, environment: PostgresCLI.keyEnv.merging(env) { $1 })
    }
}

extension PostgresWalletTests {
    @Test(
        "coffer wallet import on PostgreSQL killed with SIGKILL while the server shows its COPY of at least 1000 rows: the profile holds none of it, another profile is unchanged row for row, and the rerun imports everything"
    )
    func importKilledMidCopy() async throws {
        let (url, settings) = try PostgresImportTesting.database("importkill")
        let target = try await PostgresWallet.create(settings: settings, key: PostgresTesting.key)
        defer { target.close() }
        let other = try await PostgresWallet.create(settings: settings, profile: "other", key: PostgresTesting.otherKey)
        defer { other.close() }
        try await other.importAll((0..<300).map { (type: "cred", id: "o\($0)", value: "other \($0)", tags: ["schema": "s1"]) })
        try await other.add(type: "note", id: "n", value: "kept", tags: ["~k": "7"], expiresAt: Date(timeIntervalSinceNow: 86_400))
        let otherBefore = try await PostgresImportTesting.rows(other, profile: other.number)
        let n = 5_000
        let file = try PostgresImportTesting.jsonLines(n)
        let store = TemporaryFolders.path("coffer-pg-import-kill")

        let process = try PostgresImportTesting.start(
            ["wallet", "import", file.path, "--raw-key-env", "K"], url: url, store: store,
            env: ["COFFER_TEST_PAUSE_AT": "wallet-import-copying", "COFFER_TEST_PAUSE_MS": "60000"])
        // From outside: the server's own view of the COPY into the importing session's staging
        // table, with at least 1000 rows taken, in a transaction that holds an id and has not
        // committed (the staging table it made is not in the catalogue other sessions see).
        let seen = Locked<(pid: Int32, rows: Int64)?>(nil)
        try await eventually("the import's COPY shows 1000 rows on the server", within: .seconds(90)) {
            let copying = try await other.store.withConnection { connection -> (Int32, Int64)? in
                for try await (pid, rows, query, inTransaction) in try await connection.query(
                    """
                    SELECT p.pid, p.tuples_processed, a.query,
                        a.xact_start IS NOT NULL AND a.backend_xid IS NOT NULL AND a.state = 'active'
                        AND NOT EXISTS (SELECT 1 FROM pg_class c WHERE c.oid = p.relid)
                    FROM pg_stat_progress_copy p JOIN pg_stat_activity a ON a.pid = p.pid
                    WHERE p.datname = current_database() AND p.command = 'COPY FROM'
                    """, logger: PostgresStore.logger
                ).decode((Int32, Int64, String, Bool).self)
                where query.hasPrefix("COPY \"\(PostgresStore.stagingTable)\"") && inTransaction {
                    return (pid, rows)
                }
                return nil
            }
            seen.withLock { $0 = copying }
            return (copying?.1 ?? 0) >= 1_000 || !process.isRunning
        }
        let copying = try #require(seen.withLock { $0 }, "no COPY into the staging table was seen")
        #expect(copying.rows >= 1_000)
        #expect(process.isRunning, "the import ended before it could be killed")
        let killed = try await process.killAndWait()
        #expect(killed.wasSignalled, "the import was not ended by the kill: \(killed.stderr)")

        // The server ends the killed client's session, rolling its transaction back.
        try await eventually("the killed import's session is gone", within: .seconds(60)) {
            try await other.store.withConnection { connection in
                for try await _ in try await connection.query(
                    "SELECT 1 FROM pg_stat_activity WHERE pid = \(copying.pid)", logger: PostgresStore.logger
                ).decode(Int.self) {
                    return false
                }
                return true
            }
        }
        #expect(try await PostgresImportTesting.itemCount(target, profile: target.number) == 0)
        #expect(try await target.count(type: "cred") == 0)
        #expect(try await PostgresImportTesting.rows(other, profile: other.number) == otherBefore)

        let rerun = try await PostgresCLI.run(["wallet", "import", file.path, "--raw-key-env", "K"], url: url, store: store)
        #expect(rerun.status == 0, "\(rerun.stderr)")
        #expect(PostgresCLI.json(rerun.stdout) as? [String: Int] == ["imported": n], "\(rerun.stdout)")
        #expect(try await target.count(type: "cred") == n)
        #expect(try await target.count(type: "cred", matching: WalletQuery(json: #"{"schema": "s3"}"#)) == n / 10)
        #expect(try await target.count(type: "cred", matching: WalletQuery(json: #"{"~n": {"$gte": 4990}}"#)) == 10)
        #expect(try await target.fetch(type: "cred", id: "r4321")?.tags == ["schema": "s1", "~n": "4321"])
        #expect(try await PostgresImportTesting.rows(other, profile: other.number) == otherBefore)
    }

    @Test("a malformed record in the middle of an import on PostgreSQL writes nothing and names its line")
    func importBadLine() async throws {
        let (url, settings) = try PostgresImportTesting.database("importbad")
        let wallet = try await PostgresWallet.create(settings: settings, key: PostgresTesting.key)
        defer { wallet.close() }
        let store = TemporaryFolders.path("coffer-pg-import-bad")
        let malformed = try PostgresImportTesting.jsonLines(3_000, replacing: 2_001, with: #"{"type": "cred", "id": "#)
        let r = try await PostgresCLI.run(["wallet", "import", malformed.path, "--raw-key-env", "K"], url: url, store: store)
        #expect(r.status == 2, "\(r.stderr)")
        #expect(r.stderr.contains("line 2001"), "\(r.stderr)")
        let invalid = try PostgresImportTesting.jsonLines(3_000, replacing: 2_500, with: #"{"type": "", "id": "x", "value": "v"}"#)
        let r2 = try await PostgresCLI.run(["wallet", "import", invalid.path, "--raw-key-env", "K"], url: url, store: store)
        #expect(r2.status == 2, "\(r2.stderr)")
        #expect(r2.stderr.contains("line 2500") && r2.stderr.contains("record type must not be empty"), "\(r2.stderr)")
        #expect(try await PostgresImportTesting.itemCount(wallet, profile: wallet.number) == 0)
    }

    @Test("a duplicate in an import on PostgreSQL (twice in the file, or live in the profile) is named and nothing is written")
    func importDuplicateNamed() async throws {
        let (url, settings) = try PostgresImportTesting.database("importdup")
        let wallet = try await PostgresWallet.create(settings: settings, key: PostgresTesting.key)
        defer { wallet.close() }
        let store = TemporaryFolders.path("coffer-pg-import-dup")
        let twice = try PostgresImportTesting.jsonLines(
            2_000, replacing: 1_500, with: #"{"type": "cred", "id": "r7", "value": "again"}"#)
        let r = try await PostgresCLI.run(["wallet", "import", twice.path, "--raw-key-env", "K"], url: url, store: store)
        #expect(r.status == 3, "\(r.stderr)")
        #expect(r.stderr.contains(#""cred""#) && r.stderr.contains(#""r7""#), "\(r.stderr)")
        #expect(try await PostgresImportTesting.itemCount(wallet, profile: wallet.number) == 0)

        try await wallet.add(type: "cred", id: "r1234", value: "live")
        // An expired record of an imported type and id gives way, as on SQLite.
        try await wallet.add(type: "cred", id: "r5", value: "expired", expiresAt: Date(timeIntervalSinceNow: -1))
        let clash = try PostgresImportTesting.jsonLines(2_000)
        let r2 = try await PostgresCLI.run(["wallet", "import", clash.path, "--raw-key-env", "K"], url: url, store: store)
        #expect(r2.status == 3, "\(r2.stderr)")
        #expect(r2.stderr.contains(#""r1234""#), "\(r2.stderr)")
        #expect(try await PostgresImportTesting.itemCount(wallet, profile: wallet.number) == 2)
        try await wallet.delete(type: "cred", id: "r1234")
        let r3 = try await PostgresCLI.run(["wallet", "import", clash.path, "--raw-key-env", "K"], url: url, store: store)
        #expect(r3.status == 0, "\(r3.stderr)")
        #expect(try await wallet.fetch(type: "cred", id: "r5")?.value?.hasPrefix("value 5 ") == true)
        #expect(try await PostgresImportTesting.itemCount(wallet, profile: wallet.number) == 2_000)
    }

    @Test("records imported with COPY carry the same blind tag rows as add writes, and read back and search alike")
    func importMatchesAdd() async throws {
        let (_, settings) = try PostgresImportTesting.database("importsame")
        let wallet = try await PostgresWallet.create(settings: settings, key: PostgresTesting.key)
        defer { wallet.close() }
        let tags: WalletTags = ["schema": "s1", "~year": "2019", "multi": .list(["a", "b"])]
        try await wallet.importAll([(type: "cred", id: "imported", value: "v", tags: tags)])
        try await wallet.add(type: "cred", id: "added", value: "v", tags: tags)
        let tagRows = try await wallet.store.withConnection { connection in
            var byItem = [Int64: [String]]()
            for try await (item, name, value, num) in try await connection.query(
                "SELECT item, name, value, num FROM coffer_tags ORDER BY name, value", logger: PostgresStore.logger
            ).decode((Int64, Int64, Data, Double?).self) {
                byItem[item, default: []].append("\(name) \(value.base64EncodedString()) \(String(describing: num))")
            }
            return Array(byItem.values)
        }
        #expect(tagRows.count == 2 && tagRows[0] == tagRows[1] && tagRows[0].count == 4, "\(tagRows)")
        #expect(try await wallet.fetch(type: "cred", id: "imported")?.tags == tags)
        #expect(try await wallet.count(type: "cred", matching: WalletQuery(json: #"{"multi": "b", "~year": {"$gt": 2018}}"#)) == 2)
    }

    @Test(
        "16 coffer processes at once adding, updating and deleting in two profiles of one PostgreSQL database: every acknowledged write is there and the counts are exact"
    )
    func manyProcessesTwoProfiles() async throws {
        let (url, settings) = try PostgresImportTesting.database("manyproc")
        let a = try await PostgresWallet.create(settings: settings, key: PostgresTesting.key)
        defer { a.close() }
        let b = try await PostgresWallet.create(settings: settings, profile: "b", key: PostgresTesting.otherKey)
        defer { b.close() }
        let seeds = (0..<16).flatMap { i in
            [(type: "rec", id: "s\(i)", value: "seed", tags: WalletTags()), (type: "rec", id: "t\(i)", value: "seed", tags: WalletTags())]
        }
        try await a.importAll(seeds)
        try await b.importAll(seeds)
        let store = TemporaryFolders.path("coffer-pg-many")
        // Worker i writes profile a (even i, key K) or b (odd i, key O); in wave w it runs its
        // operation (i + w) % 4, so every wave mixes adds, updates and deletes across 16 processes.
        func command(_ worker: Int, _ operation: Int) -> [String] {
            let profile = worker % 2 == 0 ? ["--raw-key-env", "K"] : ["--profile", "b", "--raw-key-env", "O"]
            switch operation {
            case 0: return ["wallet", "add", "rec", "a\(worker)", "added a \(worker)", "--tags", #"{"w": "\#(worker)"}"#] + profile
            case 1: return ["wallet", "update", "rec", "s\(worker)", "updated \(worker)"] + profile
            case 2: return ["wallet", "delete", "rec", "t\(worker)"] + profile
            default: return ["wallet", "add", "rec", "b\(worker)", "added b \(worker)"] + profile
            }
        }
        var acknowledged = 0
        for wave in 0..<4 {
            var children = [(ChildProcess, [String])]()
            for worker in 0..<16 {
                let args = command(worker, (worker + wave) % 4)
                children.append((try PostgresImportTesting.start(args, url: url, store: store), args))
            }
            for (process, args) in children {
                let result = try await process.wait(within: .seconds(120))
                #expect(result.status == 0, "\(args): \(result.stdout) \(result.stderr)")
                if result.status == 0, PostgresCLI.json(result.stdout) != nil { acknowledged += 1 }
            }
        }
        #expect(acknowledged == 64)
        for (wallet, parity) in [(a, 0), (b, 1)] {
            // 32 seeds, 8 deleted, 16 added.
            #expect(try await wallet.count(type: "rec") == 40)
            for worker in stride(from: parity, to: 16, by: 2) {
                #expect(try await wallet.fetch(type: "rec", id: "a\(worker)")?.value == "added a \(worker)")
                #expect(try await wallet.fetch(type: "rec", id: "b\(worker)")?.value == "added b \(worker)")
                #expect(try await wallet.fetch(type: "rec", id: "s\(worker)")?.value == "updated \(worker)")
                #expect(try await wallet.fetch(type: "rec", id: "t\(worker)") == nil)
                #expect(try await wallet.count(type: "rec", matching: WalletQuery(json: #"{"w": "\#(worker)"}"#)) == 1)
            }
            for untouched in stride(from: 1 - parity, to: 16, by: 2) {
                #expect(try await wallet.fetch(type: "rec", id: "s\(untouched)")?.value == "seed")
                #expect(try await wallet.fetch(type: "rec", id: "t\(untouched)")?.value == "seed")
            }
        }
    }

    @Test("coffer wallet import, import-indy and import-backup on PostgreSQL print what they print on SQLite, and the records read back")
    func importCommandsLikeSQLite() async throws {
        let (url, settings) = try PostgresImportTesting.database("importcli")
        let store = TemporaryFolders.path("coffer-pg-import-cli")
        let sqliteStore = TemporaryFolders.path("coffer-pg-import-cli-sqlite")
        let k = ["--raw-key-env", "K"]
        func both(_ args: [String]) async throws -> (postgres: ProcessResult, sqlite: ProcessResult) {
            let pg = try await PostgresCLI.run(args, url: url, store: store)
            let sqlite = try await runCoffer(args, store: sqliteStore, environment: PostgresCLI.keyEnv, within: .seconds(120))
            return (pg, sqlite)
        }
        for args in [["wallet", "create"] + k, ["wallet", "create", "--profile", "indy"] + k] {
            let made = try await both(args)
            #expect(made.postgres.status == 0 && made.sqlite.status == 0, "\(made.postgres.stderr) \(made.sqlite.stderr)")
        }

        let lines = try PostgresImportTesting.jsonLines(1_200)
        let imported = try await both(["wallet", "import", lines.path] + k)
        #expect(imported.postgres.status == 0, "\(imported.postgres.stderr)")
        #expect(
            imported.postgres.stdout == imported.sqlite.stdout && imported.postgres.stdout.contains("1200"), "\(imported.postgres.stdout)")

        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let fixture = TemporaryFolders.path("coffer-pg-indy").appendingPathExtension("db")
        try FileManager.default.copyItem(at: root.appendingPathComponent("Tests/Interop/Fixtures/indy_wallet_sqlite.db"), to: fixture)
        let before = try Data(contentsOf: fixture)
        let indyArgs =
            [
                "wallet", "import-indy", fixture.path, "--source-key-env", "IK", "--source-kdf", "raw", "--profile", "indy",
            ] + k
        let env = ["IK": "GfwU1DC7gEZNs3w41tjBiZYj7BNToDoFEqKY6wZXqs1A"]
        let indyPG = try await runCoffer(
            indyArgs + ["--wallet-url", url], store: store, environment: PostgresCLI.keyEnv.merging(env) { $1 }, within: .seconds(120))
        let indySQLite = try await runCoffer(
            indyArgs, store: sqliteStore, environment: PostgresCLI.keyEnv.merging(env) { $1 }, within: .seconds(120))
        #expect(indyPG.status == 0, "\(indyPG.stderr)")
        #expect(indyPG.stdout == indySQLite.stdout, "\(indyPG.stdout) vs \(indySQLite.stdout)")
        #expect(try Data(contentsOf: fixture) == before, "the source changed")
        let indy = try await PostgresWallet.open(settings: settings, profile: "indy", key: PostgresTesting.key)
        defer { indy.close() }
        let summary = try #require(PostgresCLI.json(indyPG.stdout) as? [String: Any])
        for (type, n) in try #require(summary["types"] as? [String: Int]) { #expect(try await indy.count(type: type) == n, "\(type)") }

        // A backup of the SQLite wallet restored as a new profile of the database.
        let backup = sqliteStore.appendingPathComponent("b.cfb")
        let exported = try await runCoffer(
            ["wallet", "export", backup.path, "--backup-passphrase-env", "BP", "--backup-kdf", "interactive"] + k, store: sqliteStore,
            environment: PostgresCLI.keyEnv.merging(["BP": "backup pass"]) { $1 }, within: .seconds(120))
        #expect(exported.status == 0, "\(exported.stderr)")
        let restoreArgs = [
            "wallet", "import-backup", backup.path, "--backup-passphrase-env", "BP", "--profile", "restored", "--raw-key-env", "O",
        ]
        let restored = try await runCoffer(
            restoreArgs + ["--wallet-url", url], store: store,
            environment: PostgresCLI.keyEnv.merging(["BP": "backup pass"]) { $1 }, within: .seconds(120))
        #expect(restored.status == 0, "\(restored.stderr)")
        let printed = PostgresCLI.json(restored.stdout) as? [String: String]
        #expect(printed == ["imported": try PostgresURL(url).description, "profile": "restored"], "\(restored.stdout)")
        let again = try await runCoffer(
            restoreArgs + ["--wallet-url", url], store: store,
            environment: PostgresCLI.keyEnv.merging(["BP": "backup pass"]) { $1 }, within: .seconds(120))
        #expect(again.status == 3, "\(again.stderr)")
        let wrong = try await runCoffer(
            [
                "wallet", "import-backup", backup.path, "--backup-passphrase-env", "BP", "--profile", "other",
                "--raw-key-env", "O", "--wallet-url", url,
            ], store: store,
            environment: PostgresCLI.keyEnv.merging(["BP": "wrong pass"]) { $1 }, within: .seconds(120))
        #expect(wrong.status == 4, "\(wrong.stderr)")
        #expect(try await PostgresWallet.profiles(settings: settings) == ["default", "indy", "restored"])
        let copy = try await PostgresWallet.open(settings: settings, profile: "restored", key: PostgresTesting.otherKey)
        defer { copy.close() }
        #expect(try await copy.count(type: "cred") == 1_200)
        #expect(try await copy.fetch(type: "cred", id: "r17")?.tags == ["schema": "s7", "~n": "17"])
    }
}

extension PostgresWalletTests {
    @Test(
        "an import whose connection is ended while the server shows its COPY says the server is unavailable and nothing was written, not the driver's bare connection closed"
    )
    func importEndedMidCopy() async throws {
        let wallet = try await PostgresWallet.create(settings: try PostgresTesting.settings("import-ended"), key: PostgresTesting.key)
        defer { wallet.close() }
        let file = try PostgresImportTesting.jsonLines(5_000)
        // The import's reader stops at its first progress report (1,000 records read, the first
        // chunk sent) until the test has ended the importing session.
        let reached = Locked(false)
        let release = DispatchSemaphore(value: 0)
        let released = Locked(false)
        defer { if !released.withLock({ $0 }) { release.signal() } }
        let outcome = Locked<(any Error)?>(nil)
        let running = Task {
            do {
                try await wallet.importRecords(fromJSONLines: file) { _ in
                    guard !reached.withLock({ $0 }) else { return }
                    reached.withLock { $0 = true }
                    release.wait()
                }
            } catch { outcome.withLock { $0 = error } }
        }
        try await eventually("the import's reader paused") { reached.withLock { $0 } }
        try await Self.endBackend(
            wallet, "the server shows the import's COPY",
            from: """
                FROM pg_stat_activity WHERE datname = current_database() AND state = 'active'
                AND query LIKE 'COPY "\(PostgresStore.stagingTable)"%' AND pid <> pg_backend_pid()
                """)
        released.withLock { $0 = true }
        release.signal()
        try await finished(running, "the ended import", within: .seconds(60))
        guard let (message, cause) = Self.storageFailure(outcome.withLock { $0 }) else { return }
        #expect(cause?.posix == .ECONNREFUSED)
        #expect(message.contains("is unavailable (the server closed the connection)"), "\(message)")
        #expect(message.contains("nothing was written"), "\(message)")
        #expect(try await wallet.count(type: "cred") == 0)
    }
}
#endif
