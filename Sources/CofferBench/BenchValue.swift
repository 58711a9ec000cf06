// What the benches measure with and report: values, the clock, file sizes, resident memory.

import Coffer
import Foundation

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
    /// CPU seconds this process has used on all its threads (user and system): divided by the
    /// rows a scan returned, what a row costs whatever else the machine runs.
    static func cpu() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }

    /// The extra field of a scan's result: CPU microseconds per row (see ``cpu()``).
    static func cpuPerRow(since start: Double, rows: Int) -> [(String, Double)] {
        [("cpu_us_per_row", rows > 0 ? ((cpu() - start) / Double(rows) * 1e8).rounded() / 100 : 0)]
    }

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
