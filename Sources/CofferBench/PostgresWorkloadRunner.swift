// `coffer bench wallet --wallet-url postgres://…` (a build with the package trait `PostgreSQL`): the
// Askar workload against PostgresWallet, under the same metric names and JSON shape as on SQLite.
// A metric without a counterpart in Askar's PostgreSQL run (rekey, compaction, passphrase opens)
// is left out, and stderr says which.

#if PostgreSQL
import Coffer
import CofferCLISupport
import CofferSync
import Foundation

extension PostgresWallet: ConcurrentBenchWallet {
    func benchReplace(type: String, id: String, value: String, tags: WalletTags) async throws {
        try await replace(type: type, id: id, value: value, tags: tags)
    }
    func benchFetch(type: String, id: String) async throws -> Bool { try await fetch(type: type, id: id)?.value != nil }
    func benchClose() { close() }
}

struct PostgresWorkloadRunner {
    let workload: BenchWorkload
    let settings: PostgresSettings
    let scanRepeats: Int

    /// The SQLite metrics this runner leaves out, with why.
    static let omitted = [
        "rekey, open (raw key and Argon2id)": "Askar's PostgreSQL run has no rekey; opens are measured on SQLite",
        "remove_all_90pct, compact_s": "Askar's PostgreSQL run measures neither",
        "stream_walk_all, count_*_by_opening, big $in queries, regex": "not ported to the PostgreSQL runner yet",
        "db_bytes_*, disk_bytes_*": "the server's files are not the wallet's alone",
    ]

    /// The profiles the concurrent workload creates in the same database. Before the clock
    /// starts, every task takes a connection of its own and checks its profile on it, as each of
    /// askar_bench.py's tasks enters its session first (which in Askar 0.5.0 takes a pool
    /// connection and runs `SELECT COUNT(*) FROM profiles WHERE id = $1` on it): neither side's
    /// timed operations hold a connection's setup or a new server process's first statement.
    func concurrent(profiles: Int, opsPerTask: Int) -> ConcurrentProfilesRunner {
        let w = workload
        let settings = settings
        return ConcurrentProfilesRunner(
            workload: w, profiles: profiles, opsPerTask: opsPerTask,
            beforeTimer: { wallets in
                let postgres = wallets.compactMap { $0 as? PostgresWallet }
                try await Self.startSessions(postgres, connections: min(postgres.count, settings.maxConnections), within: .seconds(60))
            },
            makeProfile: { name, count in
                let wallet = try await PostgresWallet.create(
                    settings: settings, profile: "concurrent_\(name)", key: .raw(WalletKey.generateRawKey()))
                try await wallet.addAll((0..<count).map { (BenchWorkload.category, w.names[$0], w.values[$0], w.tags[$0]) })
                return wallet
            })
    }

    /// Holds `connections` of the pool's connections at once, each having checked one wallet's
    /// profile on it (``PostgresWallet/checkProfileHoldingConnection(_:)``), then lets them go:
    /// the pool then has that many connections open, each past its first statement.
    /// - Throws: ``WalletError/storage(_:)`` when they are not all held within `bound`, or a
    ///   profile is missing.
    static func startSessions(_ wallets: [PostgresWallet], connections: Int, within bound: Duration) async throws {
        guard connections > 0 else { return }
        let held = Locked(0)
        let deadline = ContinuousClock.now + bound
        try await withThrowingTaskGroup(of: Bool.self) { group in
            for t in 0..<connections {
                let wallet = wallets[t % wallets.count]
                group.addTask {
                    try await wallet.checkProfileHoldingConnection {
                        held.withLock { $0 += 1 }
                        while held.withLock({ $0 }) < connections {
                            guard ContinuousClock.now < deadline else {
                                throw WalletError.storage(
                                    "only \(held.withLock { $0 }) of \(connections) connections were held at once within \(bound): raise max_connections"
                                )
                            }
                            try await Task.sleep(for: .milliseconds(1))
                        }
                    }
                }
            }
            for try await found in group where !found {
                throw WalletError.storage("a concurrent workload profile was not found on the server")
            }
        }
        StandardError.write("coffer: concurrent: \(connections) connections held at once, each after its profile's check\n")
    }

    func run() async throws -> [(String, BenchValue)] {
        for (metrics, why) in Self.omitted.sorted(by: { $0.key < $1.key }) {
            StandardError.write("coffer: on PostgreSQL, not measured: \(metrics) (\(why))\n")
        }
        let w = workload
        let cat = BenchWorkload.category
        var out = [(String, BenchValue)]()
        let key = WalletKey.raw(WalletKey.generateRawKey())

        StandardError.write("coffer: insert one-per-txn …\n")
        let storeA = try await PostgresWallet.create(settings: settings, profile: "one_per_txn", key: key)
        defer { storeA.close() }
        let k = w.oneTxnCount
        // As askar_bench.py's loops run in one session (one connection), Coffer's run on a
        // withConnection view: one held connection, each call committed on its own.
        let (_, tA) = try await Clock.time {
            try await storeA.withConnection { view in
                for i in 0..<k { try await view.add(type: cat, id: w.names[i], value: w.values[i], tags: w.tags[i]) }
            }
        }
        out.append(("insert_one_per_txn", .rate(ops: k, seconds: tA)))

        StandardError.write("coffer: insert batched (addAll: one statement per 500 records) …\n")
        let b = try await PostgresWallet.create(settings: settings, profile: "batched", key: key)
        defer { b.close() }
        let batch = (0..<w.n).map { (type: cat, id: w.names[$0], value: w.values[$0], tags: w.tags[$0]) }
        let (_, tB) = try await Clock.time { try await b.addAll(batch) }
        out.append(("insert_batched_one_txn", .rate(ops: w.n, seconds: tB)))

        // The bulk import's path: the same records streamed with COPY into a staging table, then
        // one INSERT … SELECT, in one transaction.
        StandardError.write("coffer: insert with COPY (importAll) …\n")
        let c = try await PostgresWallet.create(settings: settings, profile: "copied", key: key)
        defer { c.close() }
        let (_, tC) = try await Clock.time { try await c.importAll(batch) }
        out.append(("insert_copy_one_txn", .rate(ops: w.n, seconds: tC)))
        StandardError.write("coffer: import jsonl …\n")
        let jsonl = FileManager.default.temporaryDirectory.appendingPathComponent("coffer-bench-\(UUID().uuidString).jsonl")
        defer { try? FileManager.default.removeItem(at: jsonl) }
        try w.writeJSONLines(to: jsonl)
        let j = try await PostgresWallet.create(settings: settings, profile: "imported", key: key)
        defer { j.close() }
        let (imported, tJ) = try await Clock.time { try await j.importRecords(fromJSONLines: jsonl) }
        out.append(("import_jsonl_one_txn", .rate(ops: imported, seconds: tJ)))

        StandardError.write("coffer: fetch …\n")
        let order = w.fetchOrder
        let (lat, tF) = try await Clock.time { () -> [Double] in
            try await b.withConnection { view in
                var lat = [Double]()
                lat.reserveCapacity(order.count)
                for i in order {
                    let t1 = Clock.now()
                    guard let r = try await view.fetch(type: cat, id: w.names[i]), r.value != nil else {
                        throw WalletError.notFound(type: cat, id: w.names[i])
                    }
                    lat.append(Clock.now() - t1)
                }
                return lat
            }
        }
        out.append(
            (
                "fetch_by_id_random",
                .rate(
                    ops: order.count, seconds: tF,
                    extra: [
                        ("p50_us", (percentile(lat, 50) * 1e7).rounded() / 10), ("p99_us", (percentile(lat, 99) * 1e7).rounded() / 10),
                    ])
            ))
        let (_, tM) = try await Clock.time {
            try await b.withConnection { view in for i in 0..<order.count { _ = try await view.fetch(type: cat, id: "missing-\(i)") } }
        }
        out.append(("fetch_by_id_miss", .rate(ops: order.count, seconds: tM)))
        // Every call on the wallet itself leases its own pooled connection: each fetch is a session of its own.
        let kk = min(order.count, 2000)
        let (_, tN) = try await Clock.time { for i in order.prefix(kk) { _ = try await b.fetch(type: cat, id: w.names[i])?.value } }
        out.append(("fetch_by_id_new_session_each", .rate(ops: kk, seconds: tN)))

        StandardError.write("coffer: scans …\n")
        func fetchAll(_ query: WalletQuery) async throws -> Int {
            var rows = 0
            var position: String?
            repeat {
                let page = try await b.search(type: cat, query: query, limit: 1_000_000, after: position)
                rows += page.records.count
                position = page.next
            } while position != nil
            return rows
        }
        func timedRows(_ name: String, _ queries: [WalletQuery]) async throws {
            var rows = 0
            let (_, t) = try await Clock.time { for _ in 0..<scanRepeats { for q in queries { rows += try await fetchAll(q) } } }
            out.append((name, .rows(rows: rows, seconds: t, queries: queries.count * scanRepeats)))
        }
        let queries = try (0..<BenchWorkload.schemas).map { try WalletQuery(json: #"{"schema_id": "schema:\#($0)"}"#) }
        try await timedRows("scan_tag_eq_encrypted_fetch_all", queries)
        // The iterator's shape on PostgreSQL: pages of 100 records.
        var iterRows = 0
        let (_, tI) = try await Clock.time {
            for _ in 0..<scanRepeats {
                for q in queries {
                    var position: String?
                    repeat {
                        let page = try await b.search(type: cat, query: q, limit: 100, after: position)
                        iterRows += page.records.count
                        position = page.next
                    } while position != nil
                }
            }
        }
        out.append(("scan_tag_eq_encrypted_scan_iter", .rows(rows: iterRows, seconds: tI, queries: queries.count * scanRepeats)))
        let and2 = try (0..<BenchWorkload.schemas).map {
            try WalletQuery(json: #"{"schema_id": "schema:\#($0)", "issuer_did": "did:example:issuer\#($0 % BenchWorkload.issuers)"}"#)
        }
        try await timedRows("scan_tag_and_2_encrypted_fetch_all", and2)
        let ranges = try (0..<10).map { j in
            try WalletQuery(
                json: String(
                    format: #"{"$and": [{"~seq": {"$gte": "%08d"}}, {"~seq": {"$lt": "%08d"}}]}"#, j * w.rangeWidth, (j + 1) * w.rangeWidth)
            )
        }
        try await timedRows("scan_range_plaintext_fetch_all", ranges)
        let (allRows, tAll) = try await Clock.time { () -> Int in
            var total = 0
            for _ in 0..<scanRepeats { total += try await fetchAll(.all) }
            return total
        }
        out.append(("fetch_all_category_one_call", .rows(rows: allRows, seconds: tAll, queries: scanRepeats)))
        let (pagedRows, tP) = try await Clock.time { () -> Int in
            var total = 0
            var position: String?
            repeat {
                let page = try await b.search(type: cat, limit: 100, after: position)
                total += page.records.count
                position = page.next
            } while position != nil
            return total
        }
        out.append(("paged_scan_handle_100", .pages(pages: (w.n + 99) / 100, rows: pagedRows, seconds: tP)))

        StandardError.write("coffer: count …\n")
        let reps = 100
        for (name, query) in [("count_all", { (_: Int) in WalletQuery.all }), ("count_tag_eq", { queries[$0 % queries.count] })]
            + [("count_range_plaintext", { ranges[$0 % 10] })]
        {
            let (c, t) = try await Clock.time { () -> Int in
                var c = 0
                for j in 0..<reps { c = try await b.count(type: cat, matching: query(j)) }
                return c
            }
            out.append((name, .rate(ops: reps, seconds: t, extra: [("result", Double(c))])))
        }

        StandardError.write("coffer: update …\n")
        let upd = Array(w.updateOrder.prefix(k))
        let (_, tU) = try await Clock.time {
            try await b.withConnection { view in
                for i in upd { try await view.replace(type: cat, id: w.names[i], value: w.newValues[i], tags: w.tags[i]) }
            }
        }
        out.append(("update_one_per_txn", .rate(ops: upd.count, seconds: tU)))
        // Askar's batched update: every record replaced (with its old value) in one transaction.
        let all = w.updateOrder
        let (_, tUB) = try await Clock.time {
            try await b.transaction { view in
                for i in all { try await view.replace(type: cat, id: w.names[i], value: w.values[i], tags: w.tags[i]) }
            }
        }
        out.append(("update_batched_one_txn", .rate(ops: all.count, seconds: tUB)))

        StandardError.write("coffer: remove …\n")
        let removeA = w.updateOrder.filter { $0 < k }
        let (_, tRA) = try await Clock.time {
            try await storeA.withConnection { view in for i in removeA { try await view.delete(type: cat, id: w.names[i]) } }
        }
        out.append(("remove_one_per_txn", .rate(ops: removeA.count, seconds: tRA)))
        let (_, tRB) = try await Clock.time {
            try await b.transaction { view in for i in all { try await view.delete(type: cat, id: w.names[i]) } }
        }
        out.append(("remove_batched_one_txn", .rate(ops: all.count, seconds: tRB)))
        return out
    }
}
#endif
