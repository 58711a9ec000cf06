// `coffer bench wallet --paired-writes R`: the six write metrics, wallet and plain SQLite in
// alternation on fresh stores, so that load from other jobs falls on both sides alike.

import Coffer
import CofferCLISupport
import Foundation
import GRDB

/// One side of the paired comparison: two fresh stores (A for one-per-transaction writes, B for
/// batched ones) and the writes of each metric. Each write method runs only what its metric times.
protocol PairedWriteSide: AnyObject {
    /// Adds records 0..<K to store A, one transaction each.
    func insertOnePerTransaction() async throws
    /// Adds all N records to store B in one transaction.
    func insertBatched() async throws
    /// Untimed work between the batched insert and the updates (as the full workload does).
    func afterBatchedInsert() async throws
    /// Replaces K records of store B (value and tags), one transaction each.
    func updateOnePerTransaction() async throws
    /// Replaces all N records of store B in one transaction.
    func updateBatched() async throws
    /// Removes store A's K records, one transaction each.
    func removeOnePerTransaction() async throws
    /// Removes all N records of store B in one transaction.
    func removeBatched() async throws
    /// Closes the stores.
    func close() throws
}

extension PairedWriteSide {
    /// Runs `metric`'s writes and returns the seconds they took.
    func run(_ metric: String) async throws -> Double {
        switch metric {
        case "insert_one_per_txn": return try await Clock.time { try await insertOnePerTransaction() }.1
        case "insert_batched_one_txn":
            let seconds = try await Clock.time { try await insertBatched() }.1
            try await afterBatchedInsert()
            return seconds
        case "update_one_per_txn": return try await Clock.time { try await updateOnePerTransaction() }.1
        case "update_batched_one_txn": return try await Clock.time { try await updateBatched() }.1
        case "remove_one_per_txn": return try await Clock.time { try await removeOnePerTransaction() }.1
        default: return try await Clock.time { try await removeBatched() }.1
        }
    }
}

/// The write metrics, in the order they run: each leaves the stores as the next needs them.
enum PairedWrites {
    static let metrics = [
        "insert_one_per_txn", "insert_batched_one_txn", "update_one_per_txn", "update_batched_one_txn", "remove_one_per_txn",
        "remove_batched_one_txn",
    ]
}

/// Rounds of the write metrics: in each round both sides get fresh stores of the same N and run
/// each metric one after the other (wallet first in even rounds, plain SQLite first in odd ones),
/// so a pair's two timings are seconds apart.
struct PairedWritesRunner {
    let workload: BenchWorkload
    let folder: URL
    let rounds: Int

    /// Per metric, per round: the wallet's and plain SQLite's seconds.
    struct Timings {
        var wallet = [String: [Double]]()
        var plain = [String: [Double]]()
        var walletFirst = [Bool]()
        var loadBefore = ""
        var loadAfter = ""
    }

    func run() async throws -> Timings {
        var timings = Timings()
        timings.loadBefore = Self.loadAverage()
        let key = WalletKey.raw(WalletKey.generateRawKey())
        for round in 0..<rounds {
            let walletFirst = round % 2 == 0
            timings.walletFirst.append(walletFirst)
            StandardError.write(
                "coffer: paired writes, round \(round + 1) of \(rounds) (\(walletFirst ? "wallet" : "plain SQLite") first) …\n")
            let roundFolder = folder.appendingPathComponent("paired-\(round)", isDirectory: true)
            try? FileManager.default.removeItem(at: roundFolder)
            try FileManager.default.createDirectory(at: roundFolder, withIntermediateDirectories: true)
            let wallet = try await WalletWriteSide(workload: workload, folder: roundFolder.appendingPathComponent("wallet"), key: key)
            let plain = try PlainWriteSide(workload: workload, folder: roundFolder.appendingPathComponent("plain"))
            let sides: [(Bool, any PairedWriteSide)] = walletFirst ? [(true, wallet), (false, plain)] : [(false, plain), (true, wallet)]
            for metric in PairedWrites.metrics {
                for (isWallet, side) in sides {
                    let seconds = try await side.run(metric)
                    if isWallet {
                        timings.wallet[metric, default: []].append(seconds)
                    } else {
                        timings.plain[metric, default: []].append(seconds)
                    }
                }
            }
            try wallet.close()
            try plain.close()
            try? FileManager.default.removeItem(at: roundFolder)
        }
        timings.loadAfter = Self.loadAverage()
        return timings
    }

    /// The operations each metric times: K for the one-per-transaction metrics, N for the batched.
    func ops(_ metric: String) -> Int {
        switch metric {
        case "insert_one_per_txn", "update_one_per_txn": return workload.oneTxnCount
        case "remove_one_per_txn": return workload.updateOrder.lazy.filter { $0 < workload.oneTxnCount }.count
        default: return workload.n
        }
    }

    /// The first three fields of /proc/loadavg ("" where there is none).
    static func loadAverage() -> String {
        guard let text = try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8) else { return "" }
        return text.split(separator: " ").prefix(3).joined(separator: " ")
    }
}

/// The wallet's side: `Wallet.add`/`replace`/`delete` one per transaction, and the same calls in
/// one `transaction` body, as the full workload makes them.
final class WalletWriteSide: PairedWriteSide {
    let workload: BenchWorkload
    let key: WalletKey
    let pathB: URL
    let storeA: Wallet
    var storeB: Wallet
    static let type = BenchWorkload.category

    init(workload: BenchWorkload, folder: URL, key: WalletKey) async throws {
        self.workload = workload
        self.key = key
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        pathB = folder.appendingPathComponent("batched.sqlite")
        storeA = try await Wallet.create(at: folder.appendingPathComponent("one_per_txn.sqlite"), key: key)
        storeB = try await Wallet.create(at: pathB, key: key)
    }

    func insertOnePerTransaction() async throws {
        let w = workload
        for i in 0..<w.oneTxnCount { try await storeA.add(type: Self.type, id: w.names[i], value: w.values[i], tags: w.tags[i]) }
    }

    func insertBatched() async throws {
        let w = workload
        try await storeB.transaction { txn in
            for i in 0..<w.n { try txn.add(type: Self.type, id: w.names[i], value: w.values[i], tags: w.tags[i]) }
        }
    }

    /// Closed (its WAL checkpointed) and opened again, as in the full workload.
    func afterBatchedInsert() async throws {
        try storeB.close()
        storeB = try await Wallet.open(at: pathB, key: key)
    }

    func updateOnePerTransaction() async throws {
        let w = workload
        for i in w.updateOrder.prefix(w.oneTxnCount) {
            try await storeB.replace(type: Self.type, id: w.names[i], value: w.newValues[i], tags: w.tags[i])
        }
    }

    func updateBatched() async throws {
        let w = workload
        try await storeB.transaction { txn in
            for i in w.updateOrder { try txn.replace(type: Self.type, id: w.names[i], value: w.values[i], tags: w.tags[i]) }
        }
    }

    func removeOnePerTransaction() async throws {
        let w = workload
        for i in w.updateOrder where i < w.oneTxnCount { try await storeA.delete(type: Self.type, id: w.names[i]) }
    }

    func removeBatched() async throws {
        let w = workload
        try await storeB.transaction { txn in
            for i in w.updateOrder { try txn.delete(type: Self.type, id: w.names[i]) }
        }
    }

    func close() throws {
        try storeA.close()
        try storeB.close()
    }
}

/// Plain SQLite's side: the statements of ``PlainSQLiteRunner``, one write per transaction and
/// all in one.
final class PlainWriteSide: PairedWriteSide {
    let workload: BenchWorkload
    let a: DatabasePool
    let b: DatabasePool

    init(workload: BenchWorkload, folder: URL) throws {
        self.workload = workload
        let runner = PlainSQLiteRunner(workload: workload, folder: folder)
        a = try runner.open("one_per_txn.sqlite")
        b = try runner.open("batched.sqlite")
    }

    func insertOnePerTransaction() async throws {
        let w = workload
        for i in 0..<w.oneTxnCount { try await a.write { try PlainSQLiteRunner.insert($0, w, i) } }
    }

    func insertBatched() async throws {
        let w = workload
        try await b.write { db in for i in 0..<w.n { try PlainSQLiteRunner.insert(db, w, i) } }
    }

    /// The WAL checkpointed, as in the full workload.
    func afterBatchedInsert() async throws {
        _ = try await b.writeWithoutTransaction { try $0.checkpoint(.truncate) }
    }

    func updateOnePerTransaction() async throws {
        let w = workload
        for i in w.updateOrder.prefix(w.oneTxnCount) {
            try await b.write { try PlainSQLiteRunner.replace($0, w.names[i], w.newValues[i], w.tags[i]) }
        }
    }

    func updateBatched() async throws {
        let w = workload
        try await b.write { db in for i in w.updateOrder { try PlainSQLiteRunner.replace(db, w.names[i], w.values[i], w.tags[i]) } }
    }

    func removeOnePerTransaction() async throws {
        let w = workload
        for i in w.updateOrder where i < w.oneTxnCount { try await a.write { try PlainSQLiteRunner.remove($0, w.names[i]) } }
    }

    func removeBatched() async throws {
        let w = workload
        try await b.write { db in for i in w.updateOrder { try PlainSQLiteRunner.remove(db, w.names[i]) } }
    }

    func close() throws {
        try a.close()
        try b.close()
    }
}

/// The paired comparison as JSON and as a table: per metric the rounds' ratios (wallet rate over
/// plain SQLite's rate in the same round), their median and range, and both sides' median rates.
struct PairedWritesReport {
    let workload: BenchWorkload
    let rounds: Int
    let timings: PairedWritesRunner.Timings
    let ops: (String) -> Int

    struct Row {
        let metric: String
        let ops: Int
        let walletRates: [Double]
        let plainRates: [Double]
        var ratios: [Double] { zip(walletRates, plainRates).map { $0 / $1 } }
    }

    var rows: [Row] {
        PairedWrites.metrics.map { metric in
            let n = ops(metric)
            return Row(
                metric: metric, ops: n, walletRates: (timings.wallet[metric] ?? []).map { Double(n) / $0 },
                plainRates: (timings.plain[metric] ?? []).map { Double(n) / $0 })
        }
    }

    static func median(_ xs: [Double]) -> Double {
        let s = xs.sorted()
        guard !s.isEmpty else { return .nan }
        return s.count % 2 == 1 ? s[s.count / 2] : (s[s.count / 2 - 1] + s[s.count / 2]) / 2
    }

    /// The rounds of `values` in which the wallet ran first (or, with `walletFirst` false, second).
    func byOrder(_ values: [Double], walletFirst: Bool) -> [Double] {
        zip(values, timings.walletFirst).filter { $0.1 == walletFirst }.map(\.0)
    }

    /// `results` and `baseline_plain_sqlite` hold each side's median rate in the shape of a full
    /// run (so readers of that JSON read these too); `paired_writes` holds the rounds.
    var json: String {
        func num(_ d: Double, _ digits: Int) -> JSONValue {
            d.isFinite ? .number(String(format: "%.\(digits)f", d)) : .null
        }
        func medianRate(_ rates: [Double], ops: Int) -> BenchValue { .rate(ops: ops, seconds: Double(ops) / Self.median(rates)) }
        let rows = rows
        let paired: [(String, JSONValue)] = rows.map { row in
            let ratios = row.ratios
            return (
                row.metric,
                .object([
                    ("ops_per_round", .number(String(row.ops))),
                    ("ratios", .array(ratios.map { num($0, 3) })),
                    ("median_ratio", num(Self.median(ratios), 3)),
                    ("min_ratio", num(ratios.min() ?? .nan, 3)), ("max_ratio", num(ratios.max() ?? .nan, 3)),
                    ("median_ratio_wallet_first", num(Self.median(byOrder(ratios, walletFirst: true)), 3)),
                    ("median_ratio_plain_first", num(Self.median(byOrder(ratios, walletFirst: false)), 3)),
                    ("wallet_ops_per_sec", .array(row.walletRates.map { num($0, 1) })),
                    ("plain_ops_per_sec", .array(row.plainRates.map { num($0, 1) })),
                    ("wallet_ops_per_sec_median", num(Self.median(row.walletRates), 1)),
                    ("plain_ops_per_sec_median", num(Self.median(row.plainRates), 1)),
                ])
            )
        }
        return JSONValue.object([
            ("tool", .string("coffer-bench")),
            (
                "params",
                .object([
                    ("n", .number(String(workload.n))), ("value_bytes", .number(String(workload.valueSize))),
                    ("tags_per_record", .number("4")), ("one_per_txn_ops", .number(String(workload.oneTxnCount))),
                    ("sqlite", .string("WAL, synchronous=FULL")), ("paired_rounds", .number(String(rounds))),
                    ("wallet_first", .array(timings.walletFirst.map { .bool($0) })),
                    ("load_average_before", .string(timings.loadBefore)), ("load_average_after", .string(timings.loadAfter)),
                ])
            ),
            ("results", .object(rows.map { ($0.metric, medianRate($0.walletRates, ops: $0.ops).jsonValue) })),
            (
                "baseline_plain_sqlite",
                .object([("results", .object(rows.map { ($0.metric, medianRate($0.plainRates, ops: $0.ops).jsonValue) }))])
            ),
            ("paired_writes", .object(paired)),
        ]).jsonText
    }

    var table: String {
        var lines = [
            "coffer bench wallet --paired-writes \(rounds): N=\(workload.n), value \(workload.valueSize) B, 4 tags, "
                + "\(workload.oneTxnCount) one-per-txn writes a round; load average \(timings.loadBefore) before, \(timings.loadAfter) after",
            "",
            pad("metric", 26) + pad("coffer median", 16) + pad("plain median", 16) + pad("median ratio", 14) + pad("range", 13)
                + "ratio per round",
        ]
        for row in rows {
            let ratios = row.ratios
            lines.append(
                pad(row.metric, 26) + pad(String(format: "%.0f ops/s", Self.median(row.walletRates)), 16)
                    + pad(String(format: "%.0f ops/s", Self.median(row.plainRates)), 16)
                    + pad(String(format: "%.2f", Self.median(ratios)), 14)
                    + pad(String(format: "%.2f–%.2f", ratios.min() ?? .nan, ratios.max() ?? .nan), 13)
                    + ratios.map { String(format: "%.2f", $0) }.joined(separator: " "))
        }
        return lines.joined(separator: "\n")
    }

    func pad(_ s: String, _ width: Int) -> String { s.count >= width ? s + " " : s + String(repeating: " ", count: width - s.count) }
}
