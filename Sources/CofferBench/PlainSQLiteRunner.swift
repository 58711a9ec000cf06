// The same workload on plain SQLite through GRDB: same schema shape, no encryption, same durability.

import Coffer
import CofferCLISupport
import Foundation
import GRDB

/// The baseline that bounds what the wallet can reach: every metric of the wallet run, with the
/// type, id, value and tags stored in the clear and queried with the same kind of SQL.
struct PlainSQLiteRunner {
    let workload: BenchWorkload
    let folder: URL

    static func configuration() -> Configuration {
        var config = Configuration()
        config.busyMode = .timeout(10)
        // The wallet's connection settings: durability and memory-mapped reads.
        config.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = FULL")
            try db.execute(sql: "PRAGMA mmap_size = \(256 << 20)")
            try db.execute(sql: "PRAGMA cache_size = -\(16 * 1024)")
        }
        return config
    }

    static let schema = """
        CREATE TABLE items(id INTEGER PRIMARY KEY, type TEXT NOT NULL, name TEXT NOT NULL, value TEXT NOT NULL, expiry INTEGER);
        CREATE UNIQUE INDEX items_type_name ON items(type, name);
        CREATE INDEX items_type ON items(type);
        CREATE TABLE tags(item INTEGER NOT NULL, name TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY(item, name, value)) WITHOUT ROWID;
        CREATE INDEX tags_lookup ON tags(name, value, item);
        """

    func open(_ name: String) throws -> DatabasePool {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let pool = try DatabasePool(path: folder.appendingPathComponent(name).path, configuration: Self.configuration())
        // As the wallet: the writer back to FULL after DatabasePool set WAL + NORMAL.
        try pool.writeWithoutTransaction { try $0.execute(sql: "PRAGMA synchronous = FULL") }
        try pool.write { try $0.execute(sql: Self.schema) }
        return pool
    }

    static func insert(_ db: Database, _ w: BenchWorkload, _ i: Int) throws {
        try db.cachedStatement(sql: "INSERT INTO items(type, name, value) VALUES (?, ?, ?)")
            .execute(arguments: [BenchWorkload.category, w.names[i], w.values[i]])
        let item = db.lastInsertedRowID
        let statement = try db.cachedStatement(sql: "INSERT INTO tags(item, name, value) VALUES (?, ?, ?)")
        for (name, value) in w.tags[i] {
            for v in value.values { try statement.execute(arguments: [item, name, v]) }
        }
    }

    static func fetch(_ db: Database, _ name: String) throws -> (String, [(String, String)])? {
        guard
            let row = try Row.fetchOne(
                db.cachedStatement(sql: "SELECT id, value FROM items WHERE type = ? AND name = ?"),
                arguments: [BenchWorkload.category, name])
        else { return nil }
        let tags = try Row.fetchAll(db.cachedStatement(sql: "SELECT name, value FROM tags WHERE item = ?"), arguments: [row[0] as Int64])
        return (row[1], tags.map { ($0[0], $0[1]) })
    }

    /// Rows of a scan, each with its tags, as the wallet returns them.
    static func scan(_ db: Database, where clause: String, _ args: StatementArguments, join: String = "") throws -> Int {
        let sql = "SELECT i.id, i.name, i.value FROM \(join.isEmpty ? "items i" : join) WHERE i.type = ? \(clause) ORDER BY i.id"
        let rows = try Row.fetchCursor(db.cachedStatement(sql: sql), arguments: [BenchWorkload.category] + args)
        let tagStatement = try db.cachedStatement(sql: "SELECT name, value FROM tags WHERE item = ?")
        var count = 0
        while let row = try rows.next() {
            let id: Int64 = row[0]
            let name: String = row[1]
            let value: String = row[2]
            let tags = try Row.fetchAll(tagStatement, arguments: [id])
            if !name.isEmpty || !value.isEmpty || !tags.isEmpty { count += 1 }
        }
        return count
    }

    static func replace(_ db: Database, _ name: String, _ value: String, _ tags: WalletTags) throws {
        guard
            let id = try Int64.fetchOne(
                db.cachedStatement(sql: "SELECT id FROM items WHERE type = ? AND name = ?"),
                arguments: [BenchWorkload.category, name])
        else { return }
        try db.cachedStatement(sql: "UPDATE items SET value = ? WHERE id = ?").execute(arguments: [value, id])
        // As the wallet does: only the tag rows that change are written.
        var wanted = Set<[String]>()
        for (n, v) in tags { for x in v.values { wanted.insert([n, x]) } }
        var present = Set<[String]>()
        for row in try Row.fetchAll(db.cachedStatement(sql: "SELECT name, value FROM tags WHERE item = ?"), arguments: [id]) {
            present.insert([row[0], row[1]])
        }
        let delete = try db.cachedStatement(sql: "DELETE FROM tags WHERE item = ? AND name = ? AND value = ?")
        for row in present.subtracting(wanted) { try delete.execute(arguments: [id, row[0], row[1]]) }
        let insert = try db.cachedStatement(sql: "INSERT INTO tags(item, name, value) VALUES (?, ?, ?)")
        for row in wanted.subtracting(present) { try insert.execute(arguments: [id, row[0], row[1]]) }
    }

    static func remove(_ db: Database, _ name: String) throws {
        guard
            let id = try Int64.fetchOne(
                db.cachedStatement(sql: "SELECT id FROM items WHERE type = ? AND name = ?"),
                arguments: [BenchWorkload.category, name])
        else { return }
        try db.cachedStatement(sql: "DELETE FROM tags WHERE item = ?").execute(arguments: [id])
        try db.cachedStatement(sql: "DELETE FROM items WHERE id = ?").execute(arguments: [id])
    }

    /// The SQL condition of a plaintext range on ~seq, bound to its two ends.
    static let rangeClause =
        "AND EXISTS (SELECT 1 FROM tags t WHERE t.item = i.id AND t.name = '~seq' AND t.value >= ?) AND EXISTS (SELECT 1 FROM tags t WHERE t.item = i.id AND t.name = '~seq' AND t.value < ?)"

    func run() async throws -> [String: BenchValue] {
        var out = [String: BenchValue]()
        StandardError.write("coffer: plain SQLite baseline …\n")
        let (a, b) = try await timeInserts(&out)
        try await timeFetches(b, &out)
        try await timeTagScans(b, &out)
        try await timeRangeScans(b, &out)
        try await timePagedScan(b, &out)
        try await timeCounts(b, &out)
        try await timeUpdatesAndRemoves(a, b, &out)
        try a.close()
        try b.close()
        return out
    }

    /// Inserts one record per transaction (store A) and all N in one transaction (store B);
    /// returns both stores.
    func timeInserts(_ out: inout [String: BenchValue]) async throws -> (a: DatabasePool, b: DatabasePool) {
        let w = workload
        let a = try open("one_per_txn.sqlite")
        let k = w.oneTxnCount
        let (_, tA) = try await Clock.time {
            for i in 0..<k { try await a.write { try Self.insert($0, w, i) } }
        }
        out["insert_one_per_txn"] = .rate(ops: k, seconds: tA)

        let b = try open("batched.sqlite")
        let (_, tB) = try await Clock.time {
            try await b.write { db in for i in 0..<w.n { try Self.insert(db, w, i) } }
        }
        out["insert_batched_one_txn"] = .rate(ops: w.n, seconds: tB)
        _ = try await b.writeWithoutTransaction { try $0.checkpoint(.truncate) }
        let bytes = databaseBytes(folder.appendingPathComponent("batched.sqlite").path)
        out["db_bytes_after_insert"] = .number(Double(bytes))
        out["db_bytes_per_record"] = .number((Double(bytes) / Double(w.n) * 10).rounded() / 10)
        return (a, b)
    }

    /// Fetch by id, random order, one read; misses; one read per fetch.
    func timeFetches(_ b: DatabasePool, _ out: inout [String: BenchValue]) async throws {
        let w = workload
        let order = w.fetchOrder
        let (_, tF) = try await Clock.time {
            try await b.read { db in for i in order { _ = try Self.fetch(db, w.names[i]) } }
        }
        out["fetch_by_id_random"] = .rate(ops: order.count, seconds: tF)
        let (_, tM) = try await Clock.time {
            try await b.read { db in for i in 0..<order.count { _ = try Self.fetch(db, "missing-\(i)") } }
        }
        out["fetch_by_id_miss"] = .rate(ops: order.count, seconds: tM)
        let kk = min(order.count, 2000)
        let (_, tN) = try await Clock.time {
            // One read per call, on the calling task, as the wallet's point reads do.
            for i in order.prefix(kk) { _ = try b.read { try Self.fetch($0, w.names[i]) } }
        }
        out["fetch_by_id_new_session_each"] = .rate(ops: kk, seconds: tN)
    }

    /// Tag-equality scans, one tag and two tags.
    func timeTagScans(_ b: DatabasePool, _ out: inout [String: BenchValue]) async throws {
        let eqJoin = "tags d CROSS JOIN items i ON i.id = d.item"
        var rows = 0
        let (_, tS) = try await Clock.time {
            for v in 0..<BenchWorkload.schemas {
                rows += try await b.read {
                    try Self.scan($0, where: "AND d.name = 'schema_id' AND d.value = ?", ["schema:\(v)"], join: eqJoin)
                }
            }
        }
        out["scan_tag_eq_encrypted_fetch_all"] = .rows(rows: rows, seconds: tS, queries: BenchWorkload.schemas)
        out["scan_tag_eq_encrypted_scan_iter"] = out["scan_tag_eq_encrypted_fetch_all"]
        rows = 0
        let (_, tA2) = try await Clock.time {
            for v in 0..<BenchWorkload.schemas {
                rows += try await b.read {
                    try Self.scan(
                        $0,
                        where:
                            "AND d.name = 'schema_id' AND d.value = ? AND EXISTS (SELECT 1 FROM tags t WHERE t.item = i.id AND t.name = 'issuer_did' AND t.value = ?)",
                        ["schema:\(v)", "did:example:issuer\(v % BenchWorkload.issuers)"], join: eqJoin)
                }
            }
        }
        out["scan_tag_and_2_encrypted_fetch_all"] = .rows(rows: rows, seconds: tA2, queries: BenchWorkload.schemas)
    }

    /// Plaintext range scans on ~seq, and the whole type in one query.
    func timeRangeScans(_ b: DatabasePool, _ out: inout [String: BenchValue]) async throws {
        let w = workload
        let rangeClause = Self.rangeClause
        var rows = 0
        let (_, tR) = try await Clock.time {
            for j in 0..<10 {
                rows += try await b.read {
                    try Self.scan(
                        $0, where: rangeClause, [String(format: "%08d", j * w.rangeWidth), String(format: "%08d", (j + 1) * w.rangeWidth)])
                }
            }
        }
        out["scan_range_plaintext_fetch_all"] = .rows(rows: rows, seconds: tR, queries: 10)
        let (allRows, tAll) = try await Clock.time { try await b.read { try Self.scan($0, where: "", []) } }
        out["fetch_all_category_one_call"] = .rows(rows: allRows, seconds: tAll, queries: 1)
    }

    /// A walk in pages of 100 (keyset paging), each record with its tags.
    func timePagedScan(_ b: DatabasePool, _ out: inout [String: BenchValue]) async throws {
        let w = workload
        let (pagedRows, tP) = try await Clock.time { () -> Int in
            var after: Int64 = 0
            var total = 0
            while true {
                let cursor = after
                // A page of 100 with each record's tags, as a wallet page returns them.
                let (count, last) = try await b.read { db -> (Int, Int64) in
                    let rows = try Row.fetchAll(
                        db.cachedStatement(
                            sql: "SELECT i.id, i.name, i.value FROM items i WHERE i.type = ? AND i.id > ? ORDER BY i.id LIMIT 100"),
                        arguments: [BenchWorkload.category, cursor])
                    let tagStatement = try db.cachedStatement(sql: "SELECT name, value FROM tags WHERE item = ?")
                    for row in rows { _ = try Row.fetchAll(tagStatement, arguments: [row[0] as Int64]) }
                    return (rows.count, rows.last?[0] ?? cursor)
                }
                if count == 0 { break }
                after = last
                total += count
            }
            return total
        }
        out["paged_scan_handle_100"] = .pages(pages: (w.n + 99) / 100, rows: pagedRows, seconds: tP)
    }

    /// Counts: the whole type, one tag, a plaintext range.
    func timeCounts(_ b: DatabasePool, _ out: inout [String: BenchValue]) async throws {
        let w = workload
        let rangeClause = Self.rangeClause
        let reps = 100
        let (_, tC) = try await Clock.time {
            for _ in 0..<reps {
                _ = try await b.read {
                    try Int.fetchOne($0, sql: "SELECT COUNT(*) FROM items WHERE type = ?", arguments: [BenchWorkload.category])
                }
            }
        }
        out["count_all"] = .rate(ops: reps, seconds: tC)
        let (_, tCT) = try await Clock.time {
            for j in 0..<reps {
                _ = try await b.read {
                    try Int.fetchOne(
                        $0,
                        sql:
                            "SELECT COUNT(*) FROM tags d CROSS JOIN items i ON i.id = d.item WHERE d.name = 'schema_id' AND d.value = ? AND i.type = ?",
                        arguments: ["schema:\(j % BenchWorkload.schemas)", BenchWorkload.category])
                }
            }
        }
        out["count_tag_eq"] = .rate(ops: reps, seconds: tCT)
        let (_, tCR) = try await Clock.time {
            for j in 0..<reps {
                _ = try await b.read {
                    try Int.fetchOne(
                        $0, sql: "SELECT COUNT(*) FROM items i WHERE i.type = ? \(rangeClause)",
                        arguments: [
                            BenchWorkload.category, String(format: "%08d", (j % 10) * w.rangeWidth),
                            String(format: "%08d", (j % 10 + 1) * w.rangeWidth),
                        ])
                }
            }
        }
        out["count_range_plaintext"] = .rate(ops: reps, seconds: tCR)
    }

    /// Update (replace value and tags), then remove; one per transaction and batched.
    func timeUpdatesAndRemoves(_ a: DatabasePool, _ b: DatabasePool, _ out: inout [String: BenchValue]) async throws {
        let w = workload
        let k = w.oneTxnCount
        let upd = Array(w.updateOrder.prefix(k))
        let (_, tU) = try await Clock.time {
            for i in upd { try await b.write { try Self.replace($0, w.names[i], w.newValues[i], w.tags[i]) } }
        }
        out["update_one_per_txn"] = .rate(ops: upd.count, seconds: tU)
        let (_, tUB) = try await Clock.time {
            try await b.write { db in for i in w.updateOrder { try Self.replace(db, w.names[i], w.values[i], w.tags[i]) } }
        }
        out["update_batched_one_txn"] = .rate(ops: w.n, seconds: tUB)
        let removeA = w.updateOrder.filter { $0 < k }
        let (_, tRA) = try await Clock.time {
            for i in removeA { try await a.write { try Self.remove($0, w.names[i]) } }
        }
        out["remove_one_per_txn"] = .rate(ops: removeA.count, seconds: tRA)
        let (_, tRB) = try await Clock.time {
            try await b.write { db in for i in w.updateOrder { try Self.remove(db, w.names[i]) } }
        }
        out["remove_batched_one_txn"] = .rate(ops: w.n, seconds: tRB)
    }
}
