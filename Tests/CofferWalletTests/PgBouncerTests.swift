// The wallet behind a real PgBouncer in transaction pooling (PgBouncer 1.18, Debian 12's, which
// does not carry prepared statements): each transaction may run on any of PgBouncer's server
// connections, so nothing may be left on a connection between transactions. With the URL's
// defaults (prepared statements on), the first statement the server refuses by name switches the
// process to unnamed statements. In the serialized PostgreSQL suite, as it uses that server.

#if PostgreSQL
import CofferTestSupport
import Foundation
import Testing

@testable import CofferWallet

enum PgBouncerTesting {
    /// Whether the PgBouncer tests run: PgBouncer started, or `COFFER_REQUIRE_POSTGRES=1` (as CI
    /// sets it, and installs PgBouncer) demands them, so one that cannot start fails every test
    /// with its reason.
    static var available: Bool {
        PostgresTesting.available
            && (PgBouncerTestServer.unavailableReason == nil || ProcessInfo.processInfo.environment["COFFER_REQUIRE_POSTGRES"] == "1")
    }

    /// A new database on the test server, reached through PgBouncer (its URL's defaults:
    /// prepared statements on).
    static func settings(_ label: String, maxConnections: Int = 8) throws -> PostgresSettings {
        let bouncer = try PgBouncerTestServer.endpoint()
        return try settings(database: try PostgresTestServer.makeDatabase(label), maxConnections: maxConnections, bouncer: bouncer)
    }

    /// `database` through PgBouncer.
    static func settings(database: String, maxConnections: Int, bouncer: PgBouncerTestServer.Endpoint) throws -> PostgresSettings {
        PostgresSettings(
            host: bouncer.host, port: bouncer.port, user: bouncer.user, database: database, tls: .disable,
            maxConnections: maxConnections, connectTimeout: .seconds(30), leaseTimeout: .seconds(120))
    }
}

extension PostgresWalletTests {
    @Test(
        "behind PgBouncer in transaction pooling, with the URL's defaults, 16 tasks' adds, reads, replaces, removes and searches all succeed",
        .enabled(if: PgBouncerTesting.available, "PgBouncer is not installed (Debian package `pgbouncer`): skipped"))
    func pgBouncerDefaultURL() async throws {
        let wallet = try await PostgresWallet.create(settings: try PgBouncerTesting.settings("pgb"), key: PostgresTesting.key)
        defer { wallet.close() }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for task in 0..<16 {
                group.addTask {
                    for i in 0..<10 {
                        let id = "t\(task)-\(i)"
                        try await wallet.add(type: "b", id: id, value: "v1", tags: ["task": .string("\(task)")])
                        #expect(try await wallet.fetch(type: "b", id: id)?.value == "v1")
                        try await wallet.replace(type: "b", id: id, value: "v2", tags: ["task": .string("\(task)"), "i": .string("\(i)")])
                        if i % 2 == 0 { try await wallet.delete(type: "b", id: id) }
                    }
                    let page = try await wallet.search(type: "b", query: WalletQuery(json: #"{"task": "\#(task)"}"#), limit: 100)
                    #expect(Set(page.records.map(\.id)) == Set((0..<10).filter { $0 % 2 == 1 }.map { "t\(task)-\($0)" }))
                    #expect(page.records.allSatisfy { $0.value == "v2" })
                }
            }
            try await group.waitForAll()
        }
        #expect(try await wallet.count(type: "b") == 80)
        // 16 tasks' first reads on up to 8 client connections over 2 server connections: some
        // statement met another's preparation, and the client sends them unnamed now.
        #expect(!wallet.store.gauge.preparesStatements)
    }

    @Test(
        "behind PgBouncer, a transaction whose statement meets another client's prepared one fails, keeps nothing, says why, and runs when retried",
        .enabled(if: PgBouncerTesting.available, "PgBouncer is not installed (Debian package `pgbouncer`): skipped"))
    func pgBouncerRefusalInTransaction() async throws {
        let bouncer = try PgBouncerTestServer.endpoint()
        // Two clients (two pools) of one database served by one server connection: what one
        // prepares there, the other meets.
        let first = try await PostgresWallet.create(
            settings: try PgBouncerTesting.settings(database: bouncer.singleConnectionDatabase, maxConnections: 1, bouncer: bouncer),
            profile: "refusal", key: PostgresTesting.key)
        defer { first.close() }
        try await first.add(type: "r", id: "a", value: "one")
        #expect(try await first.fetch(type: "r", id: "a")?.value == "one") // prepares the read on the one server connection
        let second = try await PostgresWallet.open(
            settings: try PgBouncerTesting.settings(database: bouncer.singleConnectionDatabase, maxConnections: 2, bouncer: bouncer),
            profile: "refusal", key: PostgresTesting.key)
        defer { second.close() }
        #expect(second.store.gauge.preparesStatements)
        do {
            try await second.transaction { view in
                try await view.add(type: "r", id: "lost", value: "x")
                _ = try await view.fetch(type: "r", id: "a")
            }
            Issue.record("the transaction ran although its read was refused by name")
        } catch let WalletError.storage(message, cause) {
            #expect(message.contains("pooler") && message.contains("run it again"), "\(message)")
            #expect(cause?.posix == .EAGAIN)
        }
        #expect(!second.store.gauge.preparesStatements)
        #expect(try await second.fetch(type: "r", id: "lost") == nil)
        let value = try await second.transaction { view in
            try await view.add(type: "r", id: "kept", value: "y")
            return try await view.fetch(type: "r", id: "a")?.value
        }
        #expect(value == "one")
        #expect(try await first.fetch(type: "r", id: "kept")?.value == "y")
    }

    @Test(
        "behind PgBouncer, a search pages through every record once while other tasks write, each page on any server connection",
        .enabled(if: PgBouncerTesting.available, "PgBouncer is not installed (Debian package `pgbouncer`): skipped"))
    func pgBouncerPaging() async throws {
        let wallet = try await PostgresWallet.create(settings: try PgBouncerTesting.settings("pgbpage"), key: PostgresTesting.key)
        defer { wallet.close() }
        try await wallet.addAll((0..<300).map { (type: "p", id: String(format: "p%03d", $0), value: "v", tags: ["k": .string("x")]) })
        let ids = try await withThrowingTaskGroup(of: [String]?.self) { group in
            for writer in 0..<3 {
                group.addTask {
                    for i in 0..<40 { try await wallet.add(type: "other", id: "w\(writer)-\(i)", value: "v", tags: ["k": .string("x")]) }
                    return nil
                }
            }
            group.addTask { try await PostgresTesting.all(wallet, type: "p", query: WalletQuery(json: #"{"k": "x"}"#), pageSize: 7) }
            var ids = [String]()
            for try await result in group { if let result { ids = result } }
            return ids
        }
        #expect(ids.count == 300)
        #expect(Set(ids) == Set((0..<300).map { String(format: "p%03d", $0) }))
    }

    @Test(
        "behind PgBouncer, two imports of 1,500 records through its one server connection both commit (the staging table does not outlive its transaction)",
        .enabled(if: PgBouncerTesting.available, "PgBouncer is not installed (Debian package `pgbouncer`): skipped"))
    func pgBouncerImports() async throws {
        let bouncer = try PgBouncerTestServer.endpoint()
        let settings = try PgBouncerTesting.settings(database: bouncer.singleConnectionDatabase, maxConnections: 3, bouncer: bouncer)
        let wallet = try await PostgresWallet.create(settings: settings, profile: "imports", key: PostgresTesting.key)
        defer { wallet.close() }
        for round in 0..<2 {
            let records = (0..<1_500).map { (type: "i", id: "r\(round)-\($0)", value: "v", tags: WalletTags(["n": .string("\($0 % 3)")])) }
            #expect(try await wallet.importAll(records) == 1_500)
        }
        #expect(try await wallet.count(type: "i") == 3_000)
        #expect(try await wallet.count(type: "i", matching: WalletQuery(json: #"{"n": "1"}"#)) == 1_000)
    }

    @Test(
        "behind PgBouncer, four coffer processes importing into one wallet at once, then reading from it, all succeed with the URL's defaults",
        .enabled(if: PgBouncerTesting.available, "PgBouncer is not installed (Debian package `pgbouncer`): skipped"))
    func pgBouncerProcesses() async throws {
        let bouncer = try PgBouncerTestServer.endpoint()
        let url = bouncer.url(database: try PostgresTestServer.makeDatabase("pgbcli")) + "?sslmode=disable"
        let store = TemporaryFolders.path("coffer-pgb-cli")
        try FileManager.default.createDirectory(at: store, withIntermediateDirectories: true)
        let created = try await PostgresCLI.run(["wallet", "create", "--raw-key-env", "K"], url: url, store: store)
        #expect(created.status == 0, "\(created.stderr)")
        let files = try (0..<4).map { process in
            let file = store.appendingPathComponent("records-\(process).jsonl")
            let lines = (0..<250).map { #"{"type":"c","id":"p\#(process)-\#($0)","value":"v","tags":{"p":"\#(process)"}}"# }
            try Data((lines.joined(separator: "\n") + "\n").utf8).write(to: file)
            return file
        }
        let results = try await withThrowingTaskGroup(of: ProcessResult.self) { group in
            for file in files {
                group.addTask { try await PostgresCLI.run(["wallet", "import", file.path, "--raw-key-env", "K"], url: url, store: store) }
            }
            var results = [ProcessResult]()
            for try await result in group { results.append(result) }
            return results
        }
        for result in results {
            #expect(result.status == 0 && result.stdout.contains(#""imported":250"#), "\(result.stdout) \(result.stderr)")
        }
        let count = try await PostgresCLI.run(["wallet", "count", "c", "--raw-key-env", "K"], url: url, store: store)
        #expect(PostgresCLI.json(count.stdout) as? [String: Int] == ["count": 1_000], "\(count.stdout) \(count.stderr)")
        // Point reads (prepared statements, by default) from new processes, twice over: each
        // process's statements land on server connections earlier processes prepared them on.
        for round in 0..<2 {
            let reads = try await withThrowingTaskGroup(of: ProcessResult.self) { group in
                for process in 0..<4 {
                    group.addTask {
                        try await PostgresCLI.run(
                            ["wallet", "get", "c", "p\(process)-\(round)", "--raw-key-env", "K"], url: url, store: store)
                    }
                }
                var results = [ProcessResult]()
                for try await result in group { results.append(result) }
                return results
            }
            for read in reads { #expect(read.status == 0 && read.stdout.contains(#""value":"v""#), "\(read.stdout) \(read.stderr)") }
        }
    }

    @Test(
        "behind PgBouncer, an observation sees another wallet's add by its expiry check read (LISTEN hears nothing through transaction pooling)",
        .enabled(if: PgBouncerTesting.available, "PgBouncer is not installed (Debian package `pgbouncer`): skipped"))
    func pgBouncerObserve() async throws {
        let settings = try PgBouncerTesting.settings("pgbobs")
        let wallet = try await PostgresWallet.create(settings: settings, key: PostgresTesting.key)
        defer { wallet.close() }
        let writer = try await PostgresWallet.open(settings: settings, key: PostgresTesting.key)
        defer { writer.close() }
        let updates = Updates(wallet.observe(type: "o", interval: .milliseconds(20), expiryCheck: .milliseconds(500)))
        #expect(try await updates.next().map { $0.map(\.id) } == [])
        try await writer.add(type: "o", id: "a", value: "v")
        #expect(try await updates.next().map { $0.map(\.id) } == ["a"])
    }
}
#endif
