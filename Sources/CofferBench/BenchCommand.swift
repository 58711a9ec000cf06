// `coffer bench …`: measurements, never assertions. `bench wallet` runs the Askar workload.

import ArgumentParser
import Coffer
import Foundation

/// `coffer bench`: the benchmarks' group of subcommands, registered by the `coffer` executable.
package struct BenchCommand: AsyncParsableCommand {
    /// The `bench` name, its help and its subcommands.
    package static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Measure Coffer's speed (build with -c release for real numbers).",
        subcommands: [
            WalletBench.self, DeniableBench.self, SDKBench.self, AppBench.self, CacheBench.self, LaunchBench.self, ImportBench.self,
        ])

    /// An empty command; the argument parser fills in the subcommand.
    package init() {}
}

struct WalletBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "wallet",
        abstract: "The workload of Benchmarks/askar_bench.py against the wallet and against plain SQLite.",
        discussion: """
            N records of one type, ~200-byte values, 4 tags (schema_id and issuer_did encrypted, ~seq and ~ts \
            plaintext). Metric names and the JSON shape follow askar_bench.py; the same operations on plain \
            SQLite (same schema, no encryption, WAL + synchronous=FULL) appear as baseline_plain_sqlite.
            """)

    @Option(help: "Number of records.") var n: Int = 10_000
    @Option(name: .customLong("fetch-cap"), help: "At most this many random fetches.") var fetchCap: Int = 10_000
    @Option(name: .customLong("txn-cap"), help: "At most this many one-per-transaction writes (each waits for fsync).")
    var txnCap: Int = 10_000
    @Option(name: .customLong("value-size"), help: "Bytes per value.") var valueSize: Int = 200
    @Option(help: "Working folder (default: a new temporary folder, removed afterwards).") var dir: String?
    @Option(name: .customLong("kdf-repeats"), help: "Repeats of each passphrase open.") var kdfRepeats: Int = 3
    @Option(name: .customLong("scan-repeats"), help: "Run each scan and count batch this many times (steadier numbers).")
    var scanRepeats: Int = 1
    @Flag(help: "Print one JSON object instead of a table.") var json = false
    @Flag(name: .customLong("skip-baseline"), help: "Do not run the plain-SQLite baseline.") var skipBaseline = false
    /// `--wallet-url postgres://…`: run on a PostgreSQL database (a build with the PostgreSQL trait;
    /// default: SQLite files in --dir). `$COFFER_WALLET_URL` is not read here.
    @OptionGroup var urlOptions: WalletURLOptions
    @Option(
        name: .customLong("concurrent-profiles"),
        help: ArgumentHelp(
            "Also run the concurrent workload: this many tasks at once, each on its own profile of one store, 4 fetches to 1 update; reports throughput and p99 latency.",
            valueName: "p"))
    var concurrentProfiles: Int?
    @Option(name: .customLong("concurrent-ops"), help: ArgumentHelp("Operations per task in the concurrent workload.", valueName: "n"))
    var concurrentOps: Int = 500
    @Flag(name: .customLong("only-concurrent"), help: "Run only the concurrent workload (needs --concurrent-profiles).")
    var onlyConcurrent = false
    @Flag(
        name: .customLong("only-scans"),
        help:
            "Run only the batched insert and the scans (tag, two-tag, range, whole type, paged): for profiling a search; no baseline.")
    var onlyScans = false
    /// `--paired-writes R`: see ``PairedWritesRunner``.
    static let pairedWritesHelp = ArgumentHelp(
        "Run only the six write metrics, wallet and plain SQLite alternately on fresh stores, this many rounds (1 to 100); reports each round's wallet/plain ratio and the medians. --txn-cap sets the one-per-transaction writes of a round.",
        valueName: "rounds")
    @Option(name: .customLong("paired-writes"), help: pairedWritesHelp) var pairedWrites: Int?

    func validate() throws {
        guard n >= 10 else { throw ValidationError("--n must be at least 10") }
        guard fetchCap >= 1, txnCap >= 1, valueSize >= 64, kdfRepeats >= 1, scanRepeats >= 1 else {
            throw ValidationError("--fetch-cap, --txn-cap and --kdf-repeats must be at least 1, --value-size at least 64")
        }
        if let concurrentProfiles, !(1...256).contains(concurrentProfiles) {
            throw ValidationError("--concurrent-profiles must be 1 to 256, got \(concurrentProfiles)")
        }
        guard concurrentOps >= 5 else { throw ValidationError("--concurrent-ops must be at least 5, got \(concurrentOps)") }
        if onlyConcurrent, concurrentProfiles == nil { throw ValidationError("--only-concurrent needs --concurrent-profiles P") }
        if onlyScans, onlyConcurrent || pairedWrites != nil || urlOptions.walletURL != nil {
            throw ValidationError(
                "--only-scans runs the SQLite wallet's scans alone: drop --only-concurrent, --paired-writes and --wallet-url")
        }
        if let pairedWrites {
            guard (1...100).contains(pairedWrites) else { throw ValidationError("--paired-writes must be 1 to 100, got \(pairedWrites)") }
            guard concurrentProfiles == nil, !skipBaseline, urlOptions.walletURL == nil else {
                throw ValidationError(
                    "--paired-writes compares the wallet with plain SQLite on SQLite files: drop --concurrent-profiles, --skip-baseline and --wallet-url"
                )
            }
        }
    }

    func run() async throws {
        let folder =
            dir.map { URL(fileURLWithPath: $0, isDirectory: true) }
            ?? FileManager.default.temporaryDirectory.appendingPathComponent("coffer-bench-\(UUID().uuidString)", isDirectory: true)
        // Where the stores go, checked before anything is made: a PostgreSQL URL needs the backend.
        var postgres: PostgresURL?
        if let walletURL = urlOptions.walletURL {
            switch try WalletLocation.parse(walletURL, source: "--wallet-url") {
            case .postgres(let url):
                guard WalletLocation.postgresBuiltIn else { throw WalletLocation.backendNotBuilt(url) }
                postgres = url
            case .file: throw WalletError.invalidInput("bench wallet --wallet-url takes a postgres:// URL; SQLite stores go in --dir")
            }
        }
        #if PostgreSQL
        if let postgres {
            try await runOnPostgres(PostgresSettings(url: postgres))
            return
        }
        #endif
        try? FileManager.default.removeItem(at: folder)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { if dir == nil { try? FileManager.default.removeItem(at: folder) } }

        let workload = BenchWorkload(n: n, valueSize: valueSize, fetchCap: fetchCap, txnCap: txnCap)
        if let pairedWrites {
            let runner = PairedWritesRunner(workload: workload, folder: folder, rounds: pairedWrites)
            let report = PairedWritesReport(workload: workload, rounds: pairedWrites, timings: try await runner.run(), ops: runner.ops)
            print(json ? report.json : report.table)
            return
        }
        if onlyScans {
            let runner = WalletWorkloadRunner(workload: workload, folder: folder, kdfRepeats: kdfRepeats, scanRepeats: scanRepeats)
            let report = BenchReport(workload: workload, results: try await runner.runScans(), baseline: nil)
            print(json ? report.json : report.table)
            return
        }
        var wallet = [(String, BenchValue)]()
        if !onlyConcurrent {
            wallet = try await WalletWorkloadRunner(workload: workload, folder: folder, kdfRepeats: kdfRepeats, scanRepeats: scanRepeats)
                .run()
        }
        if let concurrentProfiles {
            wallet += try await ConcurrentProfilesRunner(
                workload: workload, profiles: concurrentProfiles, opsPerTask: concurrentOps,
                location: .file(folder.appendingPathComponent("concurrent.sqlite"))
            ).run()
        }
        var baseline: [String: BenchValue]?
        if !skipBaseline, !onlyConcurrent {
            baseline = try await PlainSQLiteRunner(workload: workload, folder: folder.appendingPathComponent("plain")).run()
        }
        let report = BenchReport(workload: workload, results: wallet, baseline: baseline)
        print(json ? report.json : report.table)
    }

    #if PostgreSQL
    /// The wallet workload and the concurrent one on PostgreSQL (no plain-SQLite baseline there).
    private func runOnPostgres(_ settings: PostgresSettings) async throws {
        let workload = BenchWorkload(n: n, valueSize: valueSize, fetchCap: fetchCap, txnCap: txnCap)
        let runner = PostgresWorkloadRunner(workload: workload, settings: settings, scanRepeats: scanRepeats)
        var wallet = [(String, BenchValue)]()
        if !onlyConcurrent { wallet = try await runner.run() }
        if let concurrentProfiles {
            wallet += try await runner.concurrent(profiles: concurrentProfiles, opsPerTask: concurrentOps).run()
        }
        let report = BenchReport(workload: workload, results: wallet, baseline: nil)
        print(json ? report.json : report.table)
    }
    #endif
}
