// The result of `coffer bench wallet`, as JSON or as a table.

import Coffer
import Foundation

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
