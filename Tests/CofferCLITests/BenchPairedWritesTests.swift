// `coffer bench wallet --paired-writes R`: the shape of its report and the options it refuses.
// Speeds are never asserted; only what the report holds.

import CofferTestSupport
import Foundation
import Testing

@Suite("coffer bench wallet --paired-writes")
struct BenchPairedWritesTests {
    let store = TemporaryFolders.path("coffer-bench-paired")

    @Test("each write metric reports one ratio per round, their median, and both sides' median rates")
    func reportShape() async throws {
        let folder = TemporaryFolders.path("coffer-bench-paired-dir")
        let r = try await CLI.run(
            ["bench", "wallet", "--n", "20", "--txn-cap", "5", "--paired-writes", "3", "--dir", folder.path, "--json"], store: store)
        #expect(r.status == 0, "\(r.stderr)")
        let top = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any])
        let params = try #require(top["params"] as? [String: Any])
        #expect(params["paired_rounds"] as? Int == 3)
        #expect(params["wallet_first"] as? [Bool] == [true, false, true])
        let paired = try #require(top["paired_writes"] as? [String: [String: Any]])
        let metrics = [
            "insert_one_per_txn", "insert_batched_one_txn", "update_one_per_txn", "update_batched_one_txn", "remove_one_per_txn",
            "remove_batched_one_txn",
        ]
        #expect(Set(paired.keys) == Set(metrics))
        let results = try #require(top["results"] as? [String: Any])
        let baseline = try #require((top["baseline_plain_sqlite"] as? [String: Any])?["results"] as? [String: Any])
        for metric in metrics {
            let entry = try #require(paired[metric])
            let ratios = try #require(entry["ratios"] as? [Double], "\(metric)")
            #expect(ratios.count == 3, "\(metric)")
            #expect(entry["median_ratio"] as? Double == ratios.sorted()[1], "\(metric)")
            #expect((entry["wallet_ops_per_sec"] as? [Double])?.count == 3, "\(metric)")
            #expect(entry["plain_ops_per_sec_median"] as? Double != nil, "\(metric)")
            #expect(entry["ops_per_round"] as? Int == (metric.hasSuffix("batched_one_txn") ? 20 : 5), "\(metric)")
            #expect(results[metric] != nil && baseline[metric] != nil, "\(metric)")
        }
        // Each round's stores are removed when the round ends.
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).isEmpty)
    }

    @Test("--paired-writes out of range, or with an option it cannot honour, is a usage error, exit 2")
    func refusedOptions() async throws {
        for extra in [
            ["--paired-writes", "0"], ["--paired-writes", "2", "--skip-baseline"], ["--paired-writes", "2", "--concurrent-profiles", "2"],
        ] {
            let r = try await CLI.run(["bench", "wallet", "--n", "20"] + extra, store: store)
            #expect(r.status == 2, "\(extra): \(r.stderr)")
            #expect(r.stderr.contains("--paired-writes"), "\(extra): \(r.stderr)")
        }
    }
}
