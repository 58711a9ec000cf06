// The Askar workload against Coffer's wallet, metric by metric.

import Coffer
import CofferCLISupport
import Foundation

/// The results of a wallet run so far, and the phase they belong to. Each phase (announced by
/// ``log(_:store:)``) reports its peak resident memory and the bytes on disk (main file + WAL) of
/// the store it worked on.
struct PhaseLog {
    var out = [(String, BenchValue)]()
    var phase: String?
    var phaseStore: URL

    init(store: URL) { phaseStore = store }

    mutating func endPhase() {
        guard let name = phase else { return }
        out.append(("peak_rss_mib_\(name)", .number(PeakMemory.peakMiB())))
        out.append(("disk_bytes_after_\(name)", .number(Double(databaseBytes(phaseStore.path)))))
        phase = nil
    }

    /// Ends the phase before and starts the next; `store` is the file the new phase works on
    /// (default: the one before).
    mutating func log(_ s: String, store: URL? = nil) {
        endPhase()
        if let store { phaseStore = store }
        StandardError.write("coffer: \(s)\n")
        phase = s.replacingOccurrences(of: " …", with: "").replacingOccurrences(of: "%", with: "pct")
            .replacingOccurrences(of: " ", with: "_").replacingOccurrences(of: "-", with: "_")
        PeakMemory.reset()
    }
}

struct WalletWorkloadRunner {
    let workload: BenchWorkload
    let folder: URL
    let kdfRepeats: Int
    let scanRepeats: Int

    func run() async throws -> [(String, BenchValue)] {
        let key = WalletKey.raw(WalletKey.generateRawKey())
        let pathB = folder.appendingPathComponent("batched.sqlite")
        var phases = PhaseLog(store: pathB)
        let (storeA, b) = try await insert(key: key, pathB: pathB, &phases)
        try await fetch(b, &phases)
        let queries = try await tagScans(b, &phases)
        let ranges = try await rangeScans(b, &phases)
        try await streamWalk(b, &phases)
        let rekeyTimes = try await rekey(b, key: key)
        try await counts(b, queries: queries, ranges: ranges, &phases)
        try await bigQueries(b, &phases)
        try await regex(key: key, &phases)
        try await update(b, &phases)
        try await remove(storeA: storeA, b, pathB: pathB, &phases)
        try await importAndCompact(key: key, &phases)
        phases.phaseStore = pathB
        try await openTimings(key: key, pathB: pathB, rekeyTimes: rekeyTimes, &phases)
        return phases.out
    }

    /// `--only-scans`: the batched insert, then the tag and range scans alone (their metrics, as
    /// in ``run()``).
    func runScans() async throws -> [(String, BenchValue)] {
        let key = WalletKey.raw(WalletKey.generateRawKey())
        let pathB = folder.appendingPathComponent("batched.sqlite")
        var phases = PhaseLog(store: pathB)
        let (storeA, b) = try await insert(key: key, pathB: pathB, &phases)
        try storeA.close()
        _ = try await tagScans(b, &phases)
        _ = try await rangeScans(b, &phases)
        phases.endPhase()
        try b.close()
        return phases.out
    }

    /// Inserts one record per transaction (store A) and all N in one transaction (store B, which
    /// it reopens); returns both stores.
    func insert(key: WalletKey, pathB: URL, _ phases: inout PhaseLog) async throws -> (storeA: Wallet, b: Wallet) {
        let w = workload
        let cat = BenchWorkload.category
        // Insert, one record per transaction.
        phases.log("insert one-per-txn …", store: folder.appendingPathComponent("one_per_txn.sqlite"))
        let storeA = try await Wallet.create(at: folder.appendingPathComponent("one_per_txn.sqlite"), key: key)
        let k = w.oneTxnCount
        let (_, tA) = try await Clock.time {
            for i in 0..<k { try await storeA.add(type: cat, id: w.names[i], value: w.values[i], tags: w.tags[i]) }
        }
        phases.out.append(("insert_one_per_txn", .rate(ops: k, seconds: tA)))

        // Insert, all N in one transaction.
        phases.log("insert batched …", store: pathB)
        var storeB = try await Wallet.create(at: pathB, key: key)
        let (_, tB) = try await Clock.time {
            try await storeB.transaction { txn in
                for i in 0..<w.n { try txn.add(type: cat, id: w.names[i], value: w.values[i], tags: w.tags[i]) }
            }
        }
        phases.out.append(("insert_batched_one_txn", .rate(ops: w.n, seconds: tB)))
        try storeB.close()
        let bytes = databaseBytes(pathB.path)
        phases.out.append(("db_bytes_after_insert", .number(Double(bytes))))
        phases.out.append(("db_bytes_per_record", .number((Double(bytes) / Double(w.n) * 10).rounded() / 10)))
        storeB = try await Wallet.open(at: pathB, key: key)
        let b = storeB
        return (storeA, b)
    }

    /// Fetch by id, random order, one read session; misses; one session per fetch.
    func fetch(_ b: Wallet, _ phases: inout PhaseLog) async throws {
        let w = workload
        let cat = BenchWorkload.category
        phases.log("fetch …")
        let order = w.fetchOrder
        let (lat, tF) = try await Clock.time {
            try await b.session { s in
                var lat = [Double]()
                lat.reserveCapacity(order.count)
                for i in order {
                    let t1 = Clock.now()
                    guard let r = try s.fetch(type: cat, id: w.names[i]), r.value != nil else {
                        throw WalletError.notFound(type: cat, id: w.names[i])
                    }
                    lat.append(Clock.now() - t1)
                }
                return lat
            }
        }
        phases.out.append(
            (
                "fetch_by_id_random",
                .rate(
                    ops: order.count, seconds: tF,
                    extra: [
                        ("p50_us", (percentile(lat, 50) * 1e7).rounded() / 10), ("p99_us", (percentile(lat, 99) * 1e7).rounded() / 10),
                    ])
            ))
        let (_, tM) = try await Clock.time {
            try await b.session { s in
                for i in 0..<order.count { _ = try s.fetch(type: cat, id: "missing-\(i)") }
            }
        }
        phases.out.append(("fetch_by_id_miss", .rate(ops: order.count, seconds: tM)))
        let kk = min(order.count, 2000)
        let (_, tN) = try await Clock.time {
            for i in order.prefix(kk) { _ = try await b.get(type: cat, id: w.names[i]).value }
        }
        phases.out.append(("fetch_by_id_new_session_each", .rate(ops: kk, seconds: tN)))
    }

    /// Tag-equality scans on encrypted tags, each ~N/10 rows; returns the one-tag queries.
    func tagScans(_ b: Wallet, _ phases: inout PhaseLog) async throws -> [WalletQuery] {
        let cat = BenchWorkload.category
        phases.log("scans …")
        var rows = 0
        let queries = try (0..<BenchWorkload.schemas).map { try WalletQuery(json: #"{"schema_id": "schema:\#($0)"}"#) }
        var cpu = Clock.cpu()
        let (_, tS) = try await Clock.time {
            for _ in 0..<scanRepeats { for q in queries { rows += try await b.fetchAll(type: cat, matching: q).count } }
        }
        phases.out.append(
            (
                "scan_tag_eq_encrypted_fetch_all",
                .rows(rows: rows, seconds: tS, queries: queries.count * scanRepeats, extra: Clock.cpuPerRow(since: cpu, rows: rows))
            ))
        rows = 0
        cpu = Clock.cpu()
        let (_, tI) = try await Clock.time {
            for _ in 0..<scanRepeats {
                for q in queries {
                    for try await r in b.records(type: cat, matching: q) where r.value != nil { rows += 1 }
                }
            }
        }
        phases.out.append(
            (
                "scan_tag_eq_encrypted_scan_iter",
                .rows(rows: rows, seconds: tI, queries: queries.count * scanRepeats, extra: Clock.cpuPerRow(since: cpu, rows: rows))
            ))
        rows = 0
        let and2 = try (0..<BenchWorkload.schemas).map {
            try WalletQuery(json: #"{"schema_id": "schema:\#($0)", "issuer_did": "did:example:issuer\#($0 % BenchWorkload.issuers)"}"#)
        }
        cpu = Clock.cpu()
        let (_, tA2) = try await Clock.time {
            for _ in 0..<scanRepeats { for q in and2 { rows += try await b.fetchAll(type: cat, matching: q).count } }
        }
        phases.out.append(
            (
                "scan_tag_and_2_encrypted_fetch_all",
                .rows(rows: rows, seconds: tA2, queries: and2.count * scanRepeats, extra: Clock.cpuPerRow(since: cpu, rows: rows))
            ))
        return queries
    }

    /// Plaintext range scans on ~seq (each N/10 rows), the whole type in one call and a paged
    /// walk; returns the range queries.
    func rangeScans(_ b: Wallet, _ phases: inout PhaseLog) async throws -> [WalletQuery] {
        let w = workload
        let cat = BenchWorkload.category
        // Plaintext range scans on ~seq, each N/10 rows.
        var rows = 0
        let ranges = try (0..<10).map { j in
            try WalletQuery(
                json: String(
                    format: #"{"$and": [{"~seq": {"$gte": "%08d"}}, {"~seq": {"$lt": "%08d"}}]}"#, j * w.rangeWidth, (j + 1) * w.rangeWidth)
            )
        }
        var cpu = Clock.cpu()
        let (_, tR) = try await Clock.time {
            for _ in 0..<scanRepeats { for q in ranges { rows += try await b.fetchAll(type: cat, matching: q).count } }
        }
        phases.out.append(
            (
                "scan_range_plaintext_fetch_all",
                .rows(rows: rows, seconds: tR, queries: ranges.count * scanRepeats, extra: Clock.cpuPerRow(since: cpu, rows: rows))
            ))

        // Whole type in one call.
        cpu = Clock.cpu()
        let (allRows, tAll) = try await Clock.time { () -> Int in
            var total = 0
            for _ in 0..<scanRepeats { total += try await b.fetchAll(type: cat).count }
            return total
        }
        phases.out.append(
            (
                "fetch_all_category_one_call",
                .rows(rows: allRows, seconds: tAll, queries: scanRepeats, extra: Clock.cpuPerRow(since: cpu, rows: allRows))
            )
        )

        // Paged walk through a search handle, 100 rows a page (keyset paging, no OFFSET).
        let (pagedRows, tP) = try await Clock.time { () -> Int in
            let h = try await b.openSearch(type: cat, query: .all)
            var total = 0
            while let page = try await b.searchNext(h, count: 100).records, !page.isEmpty { total += page.count }
            try await b.closeSearch(h)
            return total
        }
        phases.out.append(("paged_scan_handle_100", .pages(pages: (w.n + 99) / 100, rows: pagedRows, seconds: tP)))
        return ranges
    }

    /// Streaming walk of every record: resident memory must not grow with the result.
    func streamWalk(_ b: Wallet, _ phases: inout PhaseLog) async throws {
        let cat = BenchWorkload.category
        let rssBefore = residentBytes()
        var peak = rssBefore
        var rows = 0
        let (_, tW) = try await Clock.time {
            for try await _ in b.records(type: cat) {
                rows += 1
                if rows % 1000 == 0 { peak = max(peak, residentBytes()) }
            }
        }
        phases.out.append(
            ("stream_walk_all", .rows(rows: rows, seconds: tW, queries: 1, extra: [("rss_growth_bytes", Double(max(0, peak - rssBefore)))]))
        )
    }

    /// Rekey rewrites only the sealed keys: the same time for N records as for 10. Returns both
    /// times, for the open group; `b` ends with `key` again.
    func rekey(_ b: Wallet, key: WalletKey) async throws -> [(String, Double)] {
        let w = workload
        let cat = BenchWorkload.category
        let small = try await Wallet.create(at: folder.appendingPathComponent("small.sqlite"), key: key)
        for i in 0..<10 { try await small.add(type: cat, id: w.names[i], value: w.values[i], tags: w.tags[i]) }
        let (_, tRekeySmall) = try await Clock.time { try await small.rekey(to: .raw(WalletKey.generateRawKey())) }
        try small.close()
        let (_, tRekeyN) = try await Clock.time { try await b.rekey(to: .raw(WalletKey.generateRawKey())) }
        try await b.rekey(to: key)
        return [("rekey_10_records_s", tRekeySmall), ("rekey_n_records_s", tRekeyN)]
    }

    /// Counts from the tag index, and the same counts done by opening every matching record.
    func counts(_ b: Wallet, queries: [WalletQuery], ranges: [WalletQuery], _ phases: inout PhaseLog) async throws {
        let cat = BenchWorkload.category
        phases.log("count …")
        let reps = 100
        let (cAll, tC) = try await Clock.time { () -> Int in
            var c = 0
            for _ in 0..<reps { c = try await b.count(type: cat) }
            return c
        }
        phases.out.append(("count_all", .rate(ops: reps, seconds: tC, extra: [("result", Double(cAll))])))
        let (cTag, tCT) = try await Clock.time { () -> Int in
            var c = 0
            for j in 0..<reps { c = try await b.count(type: cat, matching: queries[j % queries.count]) }
            return c
        }
        phases.out.append(("count_tag_eq", .rate(ops: reps, seconds: tCT, extra: [("result", Double(cTag))])))
        // The same counts done by opening every matching record (what a count that cannot be
        // misled by an altered tag index would cost; Coffer's counts read the index, and
        // `wallet check` verifies it).
        let opened = RecordOptions(retrieveValue: false, retrieveTags: false)
        let openReps = 20
        let (cAllOpened, tCO) = try await Clock.time { () -> Int in
            var c = 0
            for _ in 0..<openReps { c = try await b.fetchAll(type: cat, options: opened).count }
            return c
        }
        phases.out.append(("count_all_by_opening", .rate(ops: openReps, seconds: tCO, extra: [("result", Double(cAllOpened))])))
        let (cTagOpened, tCTO) = try await Clock.time { () -> Int in
            var c = 0
            for j in 0..<openReps { c = try await b.fetchAll(type: cat, matching: queries[j % queries.count], options: opened).count }
            return c
        }
        phases.out.append(("count_tag_eq_by_opening", .rate(ops: openReps, seconds: tCTO, extra: [("result", Double(cTagOpened))])))
        let (cRange, tCR) = try await Clock.time { () -> Int in
            var c = 0
            for j in 0..<reps { c = try await b.count(type: cat, matching: ranges[j % 10]) }
            return c
        }
        phases.out.append(("count_range_plaintext", .rate(ops: reps, seconds: tCR, extra: [("result", Double(cRange))])))
    }

    /// Long $in lists (bound as one JSON array each): 5,000 values on a plaintext and on an
    /// encrypted tag, counted and fully fetched.
    func bigQueries(_ b: Wallet, _ phases: inout PhaseLog) async throws {
        let cat = BenchWorkload.category
        phases.log("big queries …")
        func inQuery(_ tag: String, _ values: [String]) throws -> WalletQuery {
            try WalletQuery(jsonValue: .object([(tag, .object([("$in", .array(values.map { .string($0) }))]))]))
        }
        let bigQueries = [
            ("in_5000_plaintext", try inQuery("~seq", (0..<5_000).map { String(format: "%08d", $0 * 2) })),
            ("in_5000_encrypted", try inQuery("issuer_did", (0..<5_000).map { "did:example:issuer\($0 * 7)" })),
        ]
        for (name, query) in bigQueries {
            let (c, tCount) = try await Clock.time { () -> Int in
                var c = 0
                for _ in 0..<5 { c = try await b.count(type: cat, matching: query) }
                return c
            }
            phases.out.append(("count_\(name)", .rate(ops: 5, seconds: tCount, extra: [("result", Double(c))])))
            let (rows, tFetch) = try await Clock.time { try await b.fetchAll(type: cat, matching: query).count }
            phases.out.append(("fetch_all_\(name)", .rate(ops: rows, seconds: tFetch, extra: [("seconds", tFetch)])))
        }
    }

    /// $regex: a pattern that makes a backtracking engine take exponential time (`^(a+)+$`
    /// over 26 a's and a '!') against a trivial one, over N records on a plaintext and an
    /// encrypted tag. Linear-time matching keeps the two within a small factor.
    func regex(key: WalletKey, _ phases: inout PhaseLog) async throws {
        let w = workload
        let cat = BenchWorkload.category
        phases.log("regex …")
        let regexPath = folder.appendingPathComponent("regex.sqlite")
        let regexStore = try await Wallet.create(at: regexPath, key: key)
        let hostile = String(repeating: "a", count: 26) + "!"
        try await regexStore.transaction { txn in
            for i in 0..<w.n { try txn.add(type: cat, id: w.names[i], value: "v", tags: ["~p": .string(hostile), "e": .string(hostile)]) }
        }
        for tag in ["~p", "e"] {
            var seconds = [(String, Double)]()
            for (label, pattern) in [("trivial", "^a"), ("pathological", "^(a+)+$")] {
                let query = try WalletQuery(jsonValue: .object([(tag, .object([("$regex", .string(pattern))]))]))
                let (_, t) = try await Clock.time { _ = try await regexStore.count(type: cat, matching: query) }
                seconds.append(("\(label)_s", t))
            }
            seconds.append(("pathological_over_trivial", seconds[1].1 / seconds[0].1))
            phases.out.append(("regex_count_\(tag == "e" ? "encrypted" : "plaintext")", .group(seconds)))
        }
        try regexStore.close()
    }

    /// Update (replace value and tags, as Askar's replace), one per transaction and batched.
    func update(_ b: Wallet, _ phases: inout PhaseLog) async throws {
        let w = workload
        let cat = BenchWorkload.category
        let k = w.oneTxnCount
        phases.log("update …")
        let upd = Array(w.updateOrder.prefix(k))
        let (_, tU) = try await Clock.time {
            for i in upd { try await b.replace(type: cat, id: w.names[i], value: w.newValues[i], tags: w.tags[i]) }
        }
        phases.out.append(("update_one_per_txn", .rate(ops: upd.count, seconds: tU)))
        let (_, tUB) = try await Clock.time {
            try await b.transaction { txn in
                for i in w.updateOrder { try txn.replace(type: cat, id: w.names[i], value: w.values[i], tags: w.tags[i]) }
            }
        }
        phases.out.append(("update_batched_one_txn", .rate(ops: w.n, seconds: tUB)))
    }

    /// Remove, one per transaction (store A) and batched (store B); closes both.
    func remove(storeA: Wallet, _ b: Wallet, pathB: URL, _ phases: inout PhaseLog) async throws {
        let w = workload
        let cat = BenchWorkload.category
        let k = w.oneTxnCount
        phases.log("remove …")
        let removeA = w.updateOrder.filter { $0 < k }
        let (_, tRA) = try await Clock.time {
            for i in removeA { try await storeA.delete(type: cat, id: w.names[i]) }
        }
        phases.out.append(("remove_one_per_txn", .rate(ops: removeA.count, seconds: tRA)))
        let (_, tRB) = try await Clock.time {
            try await b.transaction { txn in
                for i in w.updateOrder { try txn.delete(type: cat, id: w.names[i]) }
            }
        }
        phases.out.append(("remove_batched_one_txn", .rate(ops: w.n, seconds: tRB)))
        try storeA.close()
        try b.close()
        phases.out.append(("db_bytes_after_remove_all", .number(Double(databaseBytes(pathB.path)))))
    }

    /// Writes the workload's records as JSON lines, in chunks of about 1 MiB; returns the file.
    func writeImportLines() throws -> URL {
        let jsonl = folder.appendingPathComponent("import.jsonl")
        try workload.writeJSONLines(to: jsonl)
        return jsonl
    }

    /// Import from JSON lines (streamed, one transaction), then remove 90% and compact.
    func importAndCompact(key: WalletKey, _ phases: inout PhaseLog) async throws {
        let cat = BenchWorkload.category
        let jsonl = try writeImportLines()
        let pathC = folder.appendingPathComponent("imported.sqlite")
        let storeC = try await Wallet.create(at: pathC, key: key)
        phases.log("import jsonl …", store: pathC)
        let (imported, tImport) = try await Clock.time { try await storeC.importRecords(fromJSONLines: jsonl) }
        phases.out.append(("import_jsonl_one_txn", .rate(ops: imported, seconds: tImport)))
        phases.log("remove 90% …")
        let keep = "schema:0"
        let (removed90, tRemove90) = try await Clock.time {
            try await storeC.removeAll(
                type: cat, matching: WalletQuery(jsonValue: .object([("schema_id", .object([("$neq", .string(keep))]))])))
        }
        phases.out.append(("remove_all_90pct", .rate(ops: removed90, seconds: tRemove90)))
        phases.log("compact …")
        let (_, tCompact) = try await Clock.time { try await storeC.compact() }
        phases.out.append(("compact_s", .number(tCompact)))
        try storeC.close()
        phases.endPhase()
        phases.out.append(("disk_bytes_after_close", .number(Double(databaseBytes(pathC.path)))))
    }

    /// Open cost: raw key and Argon2id passphrases, with the rekey times, as one group.
    func openTimings(key: WalletKey, pathB: URL, rekeyTimes: [(String, Double)], _ phases: inout PhaseLog) async throws {
        phases.log("open timings …")
        var opens = [(String, Double)]()
        var rawTimes = [Double]()
        for _ in 0..<kdfRepeats {
            let (wallet, t) = try await Clock.time { try await Wallet.open(at: pathB, key: key) }
            rawTimes.append(t)
            try wallet.close()
        }
        opens.append(("raw_open_s_median", percentile(rawTimes, 50)))
        for (label, parameters) in [("interactive", Argon2idParameters.interactive), ("moderate", Argon2idParameters.moderate)] {
            var config = Wallet.Configuration()
            config.passphraseParameters = parameters
            let p = folder.appendingPathComponent("kdf_\(label).sqlite")
            let (created, tProv) = try await Clock.time {
                try await Wallet.create(at: p, key: .passphrase("correct horse battery staple"), configuration: config)
            }
            try created.close()
            var times = [Double]()
            for _ in 0..<kdfRepeats {
                let (wallet, t) = try await Clock.time { try await Wallet.open(at: p, key: .passphrase("correct horse battery staple")) }
                times.append(t)
                try wallet.close()
            }
            opens.append(("argon2id_\(label)_provision_s", tProv))
            opens.append(("argon2id_\(label)_open_s_median", percentile(times, 50)))
        }
        opens += rekeyTimes
        phases.out.append(("open", .group(opens)))
        phases.endPhase()
    }
}
