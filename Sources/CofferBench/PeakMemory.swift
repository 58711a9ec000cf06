// Peak resident memory of this process, per phase of a benchmark.

import Coffer
import Foundation

/// The high-water mark of resident memory (`VmHWM`), which Linux lets a process reset
/// (`/proc/self/clear_refs`, "5"), so that each phase of a bench reports its own peak.
enum PeakMemory {
    /// Starts a new phase: the peak is set back to what is resident now. Where the reset is not
    /// available the peak covers the process so far (still an upper bound).
    static func reset() {
        if let handle = FileHandle(forWritingAtPath: "/proc/self/clear_refs") {
            try? handle.write(contentsOf: Data("5".utf8))
            try? handle.close()
        }
    }

    /// The peak resident bytes since the last ``reset()``.
    static func peakBytes() -> Int {
        if let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) {
            for line in status.split(separator: "\n") where line.hasPrefix("VmHWM:") {
                return (line.split(separator: " ").compactMap { Int($0) }.first ?? 0) * 1024
            }
        }
        var usage = rusage()
        #if canImport(Darwin)
        getrusage(RUSAGE_SELF, &usage)
        return Int(usage.ru_maxrss)
        #else
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Int(usage.ru_maxrss) * 1024
        #endif
    }

    /// The peak in MiB, one decimal.
    static func peakMiB() -> Double { (Double(peakBytes()) / 1_048_576 * 10).rounded() / 10 }
}

/// Runs this same `coffer` binary as a child process and reports its exit status and peak
/// resident memory, so a command's memory is measured alone, without the bench's own data. The
/// peak is the child's `VmHWM` (its own address space's high-water mark), sampled every 5 ms
/// until it exits (`wait4`'s `ru_maxrss` would include this process's memory, which a spawned
/// child inherits in its count on Linux).
enum ChildRun {
    static func run(_ arguments: [String], environment: [String: String]) throws -> (status: Int32, peakMiB: Double) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Bundle.main.executablePath ?? CommandLine.arguments[0])
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let status = "/proc/\(process.processIdentifier)/status"
        var peak = 0
        while process.isRunning {
            if let text = try? String(contentsOfFile: status, encoding: .utf8) {
                for line in text.split(separator: "\n") where line.hasPrefix("VmHWM:") {
                    peak = max(peak, (line.split(separator: " ").compactMap { Int($0) }.first ?? 0) * 1024)
                }
            }
            usleep(5_000)
        }
        process.waitUntilExit()
        return (process.terminationStatus, (Double(peak) / 1_048_576 * 10).rounded() / 10)
    }
}

/// Peak resident memory of `coffer` commands over a wallet of `records` records (the bench
/// workload's shape), each in its own process: a one-page search for scale, JSON-lines import,
/// backup export and restore, removing 90% of the records and compacting; and the store's bytes
/// on disk (main file + WAL) after each step that changes them.
enum BackupMemoryBench {
    static func run(records: Int, folder: URL) async throws -> [(String, Double)] {
        let rawKey = WalletKey.generateRawKey()
        let source = folder.appendingPathComponent("source", isDirectory: true)
        let jsonl = try writeRecords(records, folder: folder)
        let env = ["COFFER_BENCH_KEY": rawKey.base64EncodedString(), "COFFER_BENCH_BACKUP": "bench backup passphrase"]
        func coffer(_ store: URL, _ args: [String]) throws -> Double {
            let (status, peak) = try ChildRun.run(["--store", store.path, "--raw-key-env", "COFFER_BENCH_KEY"] + args, environment: env)
            guard status == 0 else { throw WalletError.storage("coffer \(args.joined(separator: " ")) exited with \(status)") }
            return peak
        }
        var out = [(String, Double)]()
        _ = try coffer(source, ["wallet", "create"])
        let (importPeak, tImport) = try Clock.timeSync { try coffer(source, ["wallet", "import", jsonl.path]) }
        out += [("import_jsonl_records_per_sec", Double(records) / tImport), ("import_jsonl_peak_rss_mib", importPeak)]
        out.append(
            (
                "store_mib_after_import",
                (Double(databaseBytes(source.appendingPathComponent("wallet.sqlite").path)) / 1_048_576 * 10).rounded() / 10
            ))
        out.append(
            ("search_one_page_peak_rss_mib", try coffer(source, ["wallet", "search", BenchWorkload.category, "{}", "--count", "100"])))
        let backup = folder.appendingPathComponent("bench.cfb")
        let (exportPeak, tExport) = try Clock.timeSync {
            try coffer(source, ["wallet", "export", backup.path, "--backup-passphrase-env", "COFFER_BENCH_BACKUP"])
        }
        out += [("backup_export_records_per_sec", Double(records) / tExport), ("backup_export_peak_rss_mib", exportPeak)]
        let size = (try? FileManager.default.attributesOfItem(atPath: backup.path)[.size] as? Int) ?? 0
        out.append(("backup_file_mib", (Double(size) / 1_048_576 * 10).rounded() / 10))
        let target = folder.appendingPathComponent("restored", isDirectory: true)
        let (restorePeak, tRestore) = try Clock.timeSync {
            try coffer(target, ["wallet", "import-backup", backup.path, "--backup-passphrase-env", "COFFER_BENCH_BACKUP"])
        }
        out += [("backup_restore_records_per_sec", Double(records) / tRestore), ("backup_restore_peak_rss_mib", restorePeak)]
        // Space coming back: remove 90% of the records, then compact.
        func storeMiB() -> Double {
            (Double(databaseBytes(source.appendingPathComponent("wallet.sqlite").path)) / 1_048_576 * 10).rounded() / 10
        }
        out.append(
            (
                "remove_90pct_peak_rss_mib",
                try coffer(source, ["wallet", "remove-all", BenchWorkload.category, #"{"schema_id": {"$neq": "schema:0"}}"#])
            ))
        out.append(("store_mib_after_remove_90pct", storeMiB()))
        out.append(("compact_peak_rss_mib", try coffer(source, ["wallet", "compact"])))
        out.append(("store_mib_after_compact", storeMiB()))
        return out
    }

    /// Writes `records` records of the bench workload as JSON lines, in chunks of about 1 MiB;
    /// returns the file.
    static func writeRecords(_ records: Int, folder: URL) throws -> URL {
        let jsonl = folder.appendingPathComponent("records.jsonl")
        try BenchWorkload(n: records, valueSize: 200, fetchCap: 1, txnCap: 1).writeJSONLines(to: jsonl)
        return jsonl
    }
}
