// The rest of `coffer wallet …` on `--wallet-url postgres://…`: tags, search, remove-all, export,
// check, compact and rekey, seen from outside (the built binary against the tests' private
// server), each compared with the same command on a SQLite wallet.

#if PostgreSQL
import CofferTestSupport
import Foundation
import PostgresNIO
import Testing

@testable import CofferWallet

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One PostgreSQL database and one SQLite store, driven by the same commands.
struct TwoBackends {
    let url: String
    let store = TemporaryFolders.path("coffer-pg-cli-pg")
    let sqliteStore = TemporaryFolders.path("coffer-pg-cli-sqlite")

    init(_ label: String) throws {
        url = try PostgresTestServer.endpoint().url(database: try PostgresTestServer.makeDatabase(label)) + "?sslmode=disable"
    }

    static let environment = PostgresCLI.keyEnv.merging(["BP": "backup passphrase"]) { $1 }

    /// `coffer ARGS` against the database; the URL after everything, or before the subcommand name.
    func postgres(_ args: [String], urlFirst: Bool = false, extra: [String: String] = [:]) async throws -> ProcessResult {
        let full = urlFirst ? ["--wallet-url", url] + args : args + ["--wallet-url", url]
        return try await runCoffer(full, store: store, environment: Self.environment.merging(extra) { $1 }, within: .seconds(120))
    }

    /// `coffer ARGS` against the SQLite store (no URL anywhere, none in the environment).
    func sqlite(_ args: [String], extra: [String: String] = [:]) async throws -> ProcessResult {
        try await runCoffer(
            args, store: sqliteStore, environment: Self.environment.merging(["COFFER_WALLET_URL": ""].merging(extra) { $1 }) { $1 },
            within: .seconds(120))
    }
}

extension PostgresWalletTests {
    @Test("add-tags, update-tags, delete-tags, search, get, count and remove-all print on PostgreSQL what they print on SQLite")
    func sameOutputAsSQLite() async throws {
        let both = try TwoBackends("clisame")
        let k = ["--raw-key-env", "K"]
        #expect(try await both.postgres(["wallet", "create"] + k).status == 0)
        #expect(try await both.sqlite(["wallet", "create"] + k).status == 0)
        let steps: [[String]] = [
            ["wallet", "add", "cred", "a", "one", "--tags", #"{"schema":"s1","~n":"5"}"#],
            ["wallet", "add", "cred", "b", "two", "--tags", #"{"schema":"s2","~n":"7"}"#],
            ["wallet", "add", "cred", "c", "three"],
            ["wallet", "add-tags", "cred", "a", #"{"extra":"x","~m":"1"}"#],
            ["wallet", "update-tags", "cred", "b", #"{"schema":"s3"}"#],
            ["wallet", "delete-tags", "cred", "a", #"["~n"]"#],
            ["wallet", "get", "cred", "a"],
            ["wallet", "search", "cred", "{}"],
            ["wallet", "search", "cred", #"{"schema":"s1"}"#, "--options", #"{"retrieveTotalCount":true,"retrieveType":true}"#],
            ["wallet", "search", "cred", "{}", "--count", "2", "--options", #"{"retrieveTotalCount":true}"#],
            [
                "wallet", "search", "cred", #"{"$or":[{"schema":"s3"},{"extra":"x"}]}"#, "--options",
                #"{"retrieveRecords":false,"retrieveTotalCount":true}"#,
            ],
            ["wallet", "search", "cred", #"{"~m":{"$gte":"1"}}"#, "--options", #"{"retrieveValue":false}"#],
            ["wallet", "add-tags", "cred", "missing", #"{"a":"b"}"#],
            ["wallet", "delete-tags", "cred", "a", #"{"not":"an array"}"#],
            ["wallet", "search", "cred", #"{"schema":"#],
            ["wallet", "remove-all", "cred", #"{"schema":"s3"}"#],
            ["wallet", "remove-all", "other"],
            ["wallet", "count", "cred"],
            ["wallet", "search", "cred", "{}", "--options", #"{"retrieveTags":false}"#],
        ]
        for step in steps {
            let pg = try await both.postgres(step + k)
            let lite = try await both.sqlite(step + k)
            #expect(pg.status == lite.status, "\(step): PostgreSQL \(pg.status) \(pg.stderr), SQLite \(lite.status) \(lite.stderr)")
            #expect(pg.stdout == lite.stdout, "\(step): PostgreSQL \(pg.stdout) SQLite \(lite.stdout)")
        }
    }

    @Test("--wallet-url before the subcommand name, and --profile, reach the same profile; other profiles are not touched")
    func urlFirstAndProfiles() async throws {
        let both = try TwoBackends("cliprofiles")
        let k = ["--raw-key-env", "K"]
        #expect(try await both.postgres(["wallet", "create"] + k, urlFirst: true).status == 0)
        #expect(try await both.postgres(["wallet", "create", "--profile", "bob"] + k).status == 0)
        #expect(
            try await both.postgres(
                ["--profile", "bob", "wallet", "add", "cred", "x", "bob's", "--tags", #"{"t":"1"}"#] + k, urlFirst: true
            )
            .status == 0)
        #expect(
            try await both.postgres(["wallet", "add", "cred", "y", "default's", "--tags", #"{"t":"1"}"#] + k, urlFirst: true).status == 0)
        let tagged = try await both.postgres(["wallet", "add-tags", "--profile", "bob", "cred", "x", #"{"u":"2"}"#] + k, urlFirst: true)
        #expect(tagged.stdout.contains("tagsAdded"), "\(tagged.stderr)")
        let bobs = try await both.postgres(["wallet", "search", "cred", #"{"u":"2"}"#, "--profile", "bob"] + k)
        #expect((PostgresCLI.json(bobs.stdout) as? [String: Any])?["records"] as? [[String: Any]] != nil)
        #expect(((PostgresCLI.json(bobs.stdout) as? [String: Any])?["records"] as? [Any])?.count == 1, "\(bobs.stdout) \(bobs.stderr)")
        let defaults = try await both.postgres(["wallet", "search", "cred", "{}"] + k, urlFirst: true)
        #expect(((PostgresCLI.json(defaults.stdout) as? [String: Any])?["records"] as? [Any])?.count == 1, "\(defaults.stdout)")
        let removed = try await both.postgres(["wallet", "remove-all", "cred"] + k, urlFirst: true)
        #expect(PostgresCLI.json(removed.stdout) as? [String: Int] == ["removed": 1], "\(removed.stdout) \(removed.stderr)")
        #expect(
            PostgresCLI.json(try await both.postgres(["wallet", "count", "cred", "--profile", "bob"] + k).stdout) as? [String: Int] == [
                "count": 1
            ])
        // A rekey of the default profile leaves bob's key as it was.
        let rekeyed = try await both.postgres(["wallet", "rekey", "--rotate", "--new-raw-key-env", "O"] + k, urlFirst: true)
        #expect(rekeyed.status == 0, "\(rekeyed.stderr)")
        #expect(try await both.postgres(["wallet", "get", "cred", "x", "--profile", "bob"] + k).status == 0)
        #expect(try await both.postgres(["wallet", "count", "cred"] + k).status == 4)
    }

    @Test("rekey and rekey --rotate on PostgreSQL: the old key is then a wrong key (exit 4), the new one opens every record")
    func rekeyCommand() async throws {
        let both = try TwoBackends("clirekey")
        #expect(try await both.postgres(["wallet", "create", "--raw-key-env", "K"]).status == 0)
        for i in 0..<20 {
            #expect(
                try await both.postgres([
                    "wallet", "add", "cred", "r\(i)", "v\(i)", "--tags", #"{"n":"\#(i % 3)","~k":"\#(i)"}"#, "--raw-key-env", "K",
                ]).status == 0)
        }
        let plain = try await both.postgres(["wallet", "rekey", "--raw-key-env", "K", "--new-raw-key-env", "O"])
        #expect(
            PostgresCLI.json(plain.stdout) as? [String: String] == ["rekeyed": try PostgresURL(both.url).description],
            "\(plain.stdout) \(plain.stderr)")
        #expect(try await both.postgres(["wallet", "count", "cred", "--raw-key-env", "K"]).status == 4)
        let before = try await both.postgres(["wallet", "search", "cred", #"{"n":"1"}"#, "--raw-key-env", "O"])
        #expect(before.status == 0)

        let rotated = try await both.postgres(["wallet", "rekey", "--rotate", "--raw-key-env", "O", "--new-raw-key-env", "K"])
        let printed = PostgresCLI.json(rotated.stdout) as? [String: Any]
        #expect(printed?["rotated"] as? Bool == true, "\(rotated.stdout) \(rotated.stderr)")
        #expect(try await both.postgres(["wallet", "count", "cred", "--raw-key-env", "O"]).status == 4)
        // Every record opens under the new key and the tag index was recomputed with it.
        #expect(try await both.postgres(["wallet", "search", "cred", #"{"n":"1"}"#, "--raw-key-env", "K"]).stdout == before.stdout)
        let check = try await both.postgres(["wallet", "check", "--raw-key-env", "K"])
        #expect(check.status == 0, "\(check.stdout) \(check.stderr)")
        let report = PostgresCLI.json(check.stdout) as? [String: Any]
        #expect(report?["records"] as? Int == 20)
        #expect(report?["problemCount"] as? Int == 0)
    }

    @Test("check on PostgreSQL reports a tag row removed behind the wallet's back, and exits 5")
    func checkFindsTampering() async throws {
        let both = try TwoBackends("clicheck")
        let k = ["--raw-key-env", "K"]
        #expect(try await both.postgres(["wallet", "create"] + k).status == 0)
        #expect(try await both.postgres(["wallet", "add", "cred", "a", "one", "--tags", #"{"schema":"s1"}"#] + k).status == 0)
        let clean = try await both.postgres(["wallet", "check"] + k)
        #expect(clean.status == 0, "\(clean.stderr)")
        #expect(clean.stderr.contains("no version digest"), "\(clean.stderr)")
        let lite = try await both.sqlite(["wallet", "create"] + k)
        #expect(lite.status == 0)
        let liteCheck = try await both.sqlite(["wallet", "check"] + k)
        let keys = { (text: String) in Set(((PostgresCLI.json(text) as? [String: Any]) ?? [:]).keys) }
        #expect(keys(clean.stdout) == keys(liteCheck.stdout), "\(clean.stdout) vs \(liteCheck.stdout)")

        let wallet = try await PostgresWallet.open(settings: PostgresSettings(url: try PostgresURL(both.url)), key: PostgresTesting.key)
        _ = try await wallet.store.withConnection { connection in
            try await connection.query("DELETE FROM coffer_tags", logger: PostgresStore.logger)
        }
        wallet.close()
        let damaged = try await both.postgres(["wallet", "check"] + k)
        #expect(damaged.status == 5, "\(damaged.stdout) \(damaged.stderr)")
        #expect(damaged.stdout.contains("missingTagRow"), "\(damaged.stdout)")
    }

    @Test("compact on PostgreSQL runs VACUUM (ANALYZE) and prints the tables' sizes in the SQLite command's shape")
    func compactCommand() async throws {
        let both = try TwoBackends("clicompact")
        let k = ["--raw-key-env", "K"]
        #expect(try await both.postgres(["wallet", "create"] + k).status == 0)
        #expect(try await both.postgres(["wallet", "add", "cred", "a", "one"] + k).status == 0)
        let r = try await both.postgres(["wallet", "compact"] + k)
        #expect(r.status == 0, "\(r.stderr)")
        let sizes = PostgresCLI.json(r.stdout) as? [String: Int]
        #expect(Set(sizes?.keys ?? [:].keys) == ["bytesBefore", "bytesAfter"], "\(r.stdout)")
        #expect((sizes?["bytesAfter"] ?? 0) > 0)
    }

    @Test("export on PostgreSQL writes a backup that import-backup restores into a SQLite wallet, record for record")
    func exportRoundTrip() async throws {
        let both = try TwoBackends("cliexport")
        let k = ["--raw-key-env", "K"]
        #expect(try await both.postgres(["wallet", "create", "--profile", "bob"] + k).status == 0)
        for i in 0..<30 {
            #expect(
                try await both.postgres(
                    ["wallet", "add", "cred", "r\(i)", "v\(i)", "--tags", #"{"n":"\#(i % 4)","~k":"\#(i)"}"#, "--profile", "bob"] + k
                ).status == 0)
        }
        let backup = both.store.appendingPathComponent("pg.cfb")
        try FileManager.default.createDirectory(at: both.store, withIntermediateDirectories: true)
        let exported = try await both.postgres(
            ["wallet", "export", backup.path, "--backup-passphrase-env", "BP", "--backup-kdf", "interactive", "--profile", "bob"] + k)
        let printed = PostgresCLI.json(exported.stdout) as? [String: Any]
        #expect(printed?["exported"] as? Int == 30, "\(exported.stdout) \(exported.stderr)")
        #expect(printed?["file"] as? String == backup.path)
        let restored = try await both.sqlite([
            "wallet", "import-backup", backup.path, "--backup-passphrase-env", "BP", "--raw-key-env", "O",
        ])
        #expect(restored.status == 0, "\(restored.stderr)")
        for query in ["{}", #"{"n":"2"}"#, #"{"~k":{"$gt":"20"}}"#] {
            let pg = try await both.postgres(["wallet", "search", "cred", query, "--profile", "bob"] + k)
            let lite = try await both.sqlite(["wallet", "search", "cred", query, "--raw-key-env", "O"])
            #expect(pg.status == 0 && lite.status == 0, "\(pg.stderr) \(lite.stderr)")
            #expect(pg.stdout == lite.stdout, "\(query)")
        }
    }

    @Test("rekey --rotate killed (kill -9) after re-sealing its first batch leaves every record under the old key")
    func rotationKilledMidway() async throws {
        let both = try TwoBackends("clirotatekill")
        let settings = PostgresSettings(url: try PostgresURL(both.url))
        let wallet = try await PostgresWallet.create(settings: settings, key: PostgresTesting.key)
        let records = (0..<1_200).map { i in
            (type: "cred", id: "r\(i)", value: "v\(i)", tags: ["n": .string("\(i % 5)"), "~k": .string("\(i)")] as WalletTags)
        }
        try await wallet.addAll(records)
        let expected = try await wallet.count(type: "cred", matching: try WalletQuery(json: #"{"n":"3"}"#))
        wallet.close()

        try FileManager.default.createDirectory(at: both.store, withIntermediateDirectories: true)
        let process = try startCoffer(
            ["wallet", "rekey", "--rotate", "--raw-key-env", "K", "--new-raw-key-env", "O", "--wallet-url", both.url], store: both.store,
            environment: TwoBackends.environment.merging([
                "COFFER_TEST_PAUSE_AT": "postgres-rotate-batch", "COFFER_TEST_PAUSE_MS": "60000",
            ]) { $1 })
        try await process.waitForStderr(containing: "test-pause: postgres-rotate-batch", within: .seconds(60))
        let landed = process.isRunning
        let killed = try await process.killAndWait()
        #expect(landed, "the kill did not land while the rotation was paused after its first batch: \(killed.stderr)")
        #expect(killed.wasSignalled)
        #expect(killed.stderr.contains("rotate: 500/1200"), "the first batch was not re-sealed before the kill: \(killed.stderr)")

        // The server rolled the rotation back: the old key opens every record, the new one none.
        let old = try await PostgresWallet.open(settings: settings, key: PostgresTesting.key)
        #expect(try await old.count(type: "cred") == 1_200)
        #expect(try await old.count(type: "cred", matching: try WalletQuery(json: #"{"n":"3"}"#)) == expected)
        #expect(try await old.fetch(type: "cred", id: "r7")?.value == "v7")
        #expect(try await old.checkIntegrity().isClean)
        old.close()
        await #expect(throws: WalletError.self) { _ = try await PostgresWallet.open(settings: settings, key: PostgresTesting.otherKey) }
        let check = try await both.postgres(["wallet", "check", "--raw-key-env", "K"])
        #expect(check.status == 0, "\(check.stdout) \(check.stderr)")
    }
}
#endif
