// `coffer bench …`: measurements, never assertions. `bench wallet` runs the Askar workload.
import ArgumentParser
import Coffer
import Foundation

struct BenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Measure Coffer's speed (build with -c release for real numbers).",
        subcommands: [WalletBench.self, DeniableBench.self, SDKBench.self, AppBench.self, CacheBench.self, LaunchBench.self])
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

    func validate() throws {
        guard n >= 10 else { throw ValidationError("--n must be at least 10") }
        guard fetchCap >= 1, txnCap >= 1, valueSize >= 64, kdfRepeats >= 1, scanRepeats >= 1 else {
            throw ValidationError("--fetch-cap, --txn-cap and --kdf-repeats must be at least 1, --value-size at least 64")
        }
    }

    func run() async throws {
        let folder =
            dir.map { URL(fileURLWithPath: $0, isDirectory: true) }
            ?? FileManager.default.temporaryDirectory.appendingPathComponent("coffer-bench-\(UUID().uuidString)", isDirectory: true)
        try? FileManager.default.removeItem(at: folder)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { if dir == nil { try? FileManager.default.removeItem(at: folder) } }

        let workload = BenchWorkload(n: n, valueSize: valueSize, fetchCap: fetchCap, txnCap: txnCap)
        let wallet = try await WalletWorkloadRunner(workload: workload, folder: folder, kdfRepeats: kdfRepeats, scanRepeats: scanRepeats)
            .run()
        var baseline: [String: BenchValue]?
        if !skipBaseline {
            baseline = try await PlainSQLiteRunner(workload: workload, folder: folder.appendingPathComponent("plain")).run()
        }
        let report = BenchReport(workload: workload, results: wallet, baseline: baseline)
        print(json ? report.json : report.table)
    }
}

/// The records of the workload, as askar_bench.py makes them.
struct BenchWorkload: Sendable {
    static let category = "credential"
    static let schemas = 10
    static let issuers = 5

    let n: Int
    let valueSize: Int
    let fetchCap: Int
    let txnCap: Int
    let names: [String]
    let values: [String]
    let newValues: [String]
    let tags: [WalletTags]
    let fetchOrder: [Int]
    let updateOrder: [Int]

    init(n: Int, valueSize: Int, fetchCap: Int, txnCap: Int) {
        self.n = n
        self.valueSize = valueSize
        self.fetchCap = fetchCap
        self.txnCap = txnCap
        var rng = SplitMix64(seed: 1)
        let ts0: Int64 = 1_700_000_000_000
        names = (0..<n).map { String(format: "rec-%08d", $0) }
        tags = (0..<n).map { i in
            [
                "schema_id": .string("schema:\(i % Self.schemas)"),
                "issuer_did": .string("did:example:issuer\(i % Self.issuers)"),
                "~seq": .string(String(format: "%08d", i)),
                "~ts": .string(String(format: "%013lld", ts0 + Int64(i) * 1000)),
            ]
        }
        let alphabet = Array("abcdefghijklmnopqrstuvwxyz0123456789")
        values = (0..<n).map { i in
            let head = "{\"i\": \(i), \"attr\": {\"name\": \"holder\(i)\", \"score\": \(i % 97)}"
            let pad = max(valueSize - head.count - 10, 0)
            let body = String((0..<pad).map { _ in alphabet[Int(rng.next() % UInt64(alphabet.count))] })
            return String((head + ", \"p\": \"\(body)\"}").prefix(valueSize))
        }
        newValues = values.map { String($0.reversed()) }
        fetchOrder = (0..<min(n, fetchCap)).map { _ in Int(rng.next() % UInt64(n)) }
        var order = Array(0..<n)
        for i in stride(from: n - 1, to: 0, by: -1) {
            order.swapAt(i, Int(rng.next() % UInt64(i + 1)))
        }
        updateOrder = order
    }

    var oneTxnCount: Int { min(n, txnCap) }
    var rangeWidth: Int { max(1, n / 10) }
}

/// A small deterministic generator so every run makes the same workload.
struct SplitMix64 {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// One measured value: a rate, a size, or a nested group.
enum BenchValue: Sendable {
    case rate(ops: Int, seconds: Double, extra: [(String, Double)] = [])
    case rows(rows: Int, seconds: Double, queries: Int, extra: [(String, Double)] = [])
    case pages(pages: Int, rows: Int, seconds: Double)
    case number(Double)
    case group([(String, Double)])

    var jsonValue: JSONValue {
        func num(_ d: Double) -> JSONValue {
            if d.isNaN || d.isInfinite { return .null }
            if d == d.rounded(), abs(d) < 1e15 { return .number(String(Int64(d))) }
            return .number(String(format: "%.4f", d))
        }
        switch self {
        case .rate(let ops, let seconds, let extra):
            var m: [(String, JSONValue)] = [
                ("ops", num(Double(ops))), ("seconds", num(seconds)),
                ("ops_per_sec", num((Double(ops) / seconds * 10).rounded() / 10)),
                ("us_per_op", num((seconds / Double(ops) * 1e6 * 10).rounded() / 10)),
            ]
            m += extra.map { ($0.0, num($0.1)) }
            return .object(m)
        case .rows(let rows, let seconds, let queries, let extra):
            var m: [(String, JSONValue)] = [
                ("ops", num(Double(queries))), ("seconds", num(seconds)),
                ("ops_per_sec", num((Double(queries) / seconds * 10).rounded() / 10)),
                ("rows_total", num(Double(rows))), ("rows_per_query", num(Double(rows / max(queries, 1)))),
                ("rows_per_sec", num((Double(rows) / seconds * 10).rounded() / 10)),
            ]
            m += extra.map { ($0.0, num($0.1)) }
            return .object(m)
        case .pages(let pages, let rows, let seconds):
            return .object([
                ("pages", num(Double(pages))), ("rows", num(Double(rows))), ("seconds", num(seconds)),
                ("pages_per_sec", num((Double(pages) / seconds * 10).rounded() / 10)),
                ("rows_per_sec", num((Double(rows) / seconds * 10).rounded() / 10)),
            ])
        case .number(let d):
            return num(d)
        case .group(let items):
            return .object(items.map { ($0.0, num($0.1)) })
        }
    }

    /// The headline number for tables and ratios.
    var headline: (String, Double)? {
        switch self {
        case .rate(let ops, let seconds, _): return ("ops/s", Double(ops) / seconds)
        case .rows(let rows, let seconds, _, _): return ("rows/s", Double(rows) / seconds)
        case .pages(let pages, _, let seconds): return ("pages/s", Double(pages) / seconds)
        case .number(let d): return ("", d)
        case .group: return nil
        }
    }
}

/// Wall-clock timing.
enum Clock {
    static func now() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }

    static func time<T>(_ body: () async throws -> T) async rethrows -> (T, Double) {
        let start = now()
        let result = try await body()
        return (result, now() - start)
    }

    /// ``time(_:)`` for synchronous work.
    static func timeSync<T>(_ body: () throws -> T) rethrows -> (T, Double) {
        let start = now()
        let result = try body()
        return (result, now() - start)
    }
}

/// Bytes of a SQLite database and its WAL and shared-memory files.
func databaseBytes(_ path: String) -> Int {
    ["", "-wal", "-shm"].reduce(0) { total, suffix in
        let size = ((try? FileManager.default.attributesOfItem(atPath: path + suffix))?[.size] as? Int) ?? 0
        return total + size
    }
}

/// Resident memory of this process now, from /proc (0 where unavailable).
func residentBytes() -> Int {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
    for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
        let kb = line.split(separator: " ").compactMap { Int($0) }.first ?? 0
        return kb * 1024
    }
    return 0
}

func percentile(_ samples: [Double], _ p: Double) -> Double {
    guard !samples.isEmpty else { return 0 }
    let s = samples.sorted()
    return s[min(s.count - 1, Int((p / 100 * Double(s.count - 1)).rounded()))]
}

struct BenchReport {
    let workload: BenchWorkload
    let results: [(String, BenchValue)]
    let baseline: [String: BenchValue]?

    var json: String {
        var top: [(String, JSONValue)] = [
            ("tool", .string("coffer-bench")),
            (
                "params",
                .object([
                    ("n", .number(String(workload.n))), ("value_bytes", .number(String(workload.valueSize))),
                    ("tags_per_record", .number("4")), ("schema_values", .number(String(BenchWorkload.schemas))),
                    ("issuer_values", .number(String(BenchWorkload.issuers))), ("fetch_cap", .number(String(workload.fetchCap))),
                    ("one_per_txn_ops", .number(String(workload.oneTxnCount))),
                    ("sqlite", .string("WAL, synchronous=FULL")),
                ])
            ),
            ("results", .object(results.map { ($0.0, $0.1.jsonValue) })),
        ]
        if let baseline {
            let ordered = results.compactMap { name, _ in baseline[name].map { (name, $0.jsonValue) } }
            top.append(("baseline_plain_sqlite", .object([("results", .object(ordered))])))
        }
        return JSONValue.object(top).jsonText
    }

    var table: String {
        var lines = ["coffer bench wallet: N=\(workload.n), value \(workload.valueSize) B, 4 tags", ""]
        lines.append(pad("metric", 40) + pad("coffer", 16) + pad("plain SQLite", 16) + "coffer/plain")
        for (name, value) in results {
            guard let (unit, v) = value.headline else { continue }
            var line = pad(name, 40) + pad(format(v) + " " + unit, 16)
            if let b = baseline?[name]?.headline {
                line += pad(format(b.1) + " " + b.0, 16)
                if b.1 > 0, !unit.isEmpty { line += String(format: "%.2f", v / b.1) }
            }
            lines.append(line)
        }
        return lines.joined(separator: "\n")
    }

    func pad(_ s: String, _ width: Int) -> String { s.count >= width ? s + " " : s + String(repeating: " ", count: width - s.count) }
    func format(_ v: Double) -> String { v >= 100 ? String(format: "%.0f", v) : String(format: "%.3f", v) }
}
