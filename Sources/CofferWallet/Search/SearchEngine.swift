// Keyset paging over a compiled search: each page starts after the last record returned, so a
// page costs the same at page 1 and page 1,000, and a walk never repeats or skips a record.
import Dispatch
import Foundation
import GRDB

struct Candidate {
    let rowid: Int64
    let idBlind: Data
    let sealed: Data
}

/// Where a walk stands: the row id of the last record returned (records come in row-id order).
struct SearchCursor: Sendable {
    var after: Int64?
    var exhausted = false
}

/// A buffer handed to worker threads that each touch disjoint elements.
struct SharedBuffer<Element>: @unchecked Sendable {
    let buffer: UnsafeMutableBufferPointer<Element>
    init(_ buffer: UnsafeMutableBufferPointer<Element>) { self.buffer = buffer }
}

/// Batches at least this large are opened on several threads.
let parallelOpenThreshold = 256

extension CompiledSearch {
    /// Whether any record carries an expiry (a partial index makes this a single probe).
    static func expiryActive(_ db: Database) throws -> Bool {
        try Bool.fetchOne(db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM items WHERE expiry IS NOT NULL)")) ?? false
    }

    /// The preferred plan that is valid now, in this transaction.
    func plan(_ db: Database, allowRange: Bool) throws -> Plan {
        for plan in plans {
            if case .range = plan.driver, !allowRange { continue }
            if let name = plan.requiresSingleValued {
                let multi = try Bool.fetchOne(db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM tag_multi WHERE name = ?)"),
                                              arguments: [name]) ?? true
                if multi { continue }
            }
            return plan
        }
        return plans[plans.count - 1]
    }

    func candidates(_ db: Database, plan: Plan, after: Int64?, limit: Int, descending: Bool, now: Int64, expiry: Bool) throws -> [Candidate] {
        var sql: String
        var args: [DatabaseValue]
        let cmp = descending ? "<" : ">"
        let order = descending ? "DESC" : "ASC"
        let itemColumn: String
        switch plan.driver {
        case .type:
            sql = "SELECT i.id, i.name, i.value FROM items i WHERE i.type = ?"
            args = [typeBlind.databaseValue]
            itemColumn = "i.id"
        case let .tag(name, value):
            sql = "SELECT i.id, i.name, i.value FROM tags d \(plan.joins.sql) CROSS JOIN items i ON i.id = d.item WHERE d.name = ? AND d.value = ? AND i.type = ?"
            args = plan.joins.arguments + [name.databaseValue, value, typeBlind.databaseValue]
            itemColumn = "d.item"
        case let .range(name, conditions):
            sql = "SELECT i.id, i.name, i.value FROM tags d CROSS JOIN items i ON i.id = d.item WHERE d.name = ? AND \(conditions.sql) AND i.type = ?"
            args = [name.databaseValue] + conditions.arguments + [typeBlind.databaseValue]
            itemColumn = "d.item"
        }
        if let after { sql += " AND \(itemColumn) \(cmp) ?"; args.append(after.databaseValue) }
        if expiry { sql += " AND (i.expiry IS NULL OR i.expiry > ?)"; args.append(now.databaseValue) }
        if plan.predicate.sql != "1" { sql += " AND (\(plan.predicate.sql))"; args += plan.predicate.arguments }
        sql += " ORDER BY \(itemColumn) \(order) LIMIT ?"
        args.append(limit.databaseValue)
        // Prepared per call: query shapes vary (each $in length is one), and a cache per
        // connection would grow with every shape ever seen.
        let statement = try db.makeStatement(sql: sql)
        statement.setUncheckedArguments(StatementArguments(args))
        var out = [Candidate]()
        out.reserveCapacity(min(limit, 4096))
        let rows = try Row.fetchCursor(statement)
        while let row = try rows.next() {
            out.append(Candidate(rowid: row[0], idBlind: row[1], sealed: row[2]))
        }
        return out
    }

    /// Opens a batch of sealed records, on every core when the batch is large: SQLite hands the
    /// rows over on one thread, decryption and decoding need not wait for each other.
    func open(_ found: [Candidate], keys: WalletKeys) throws -> [RecordCodec.Contents] {
        let typeBlind = self.typeBlind
        guard found.count >= parallelOpenThreshold, ProcessInfo.processInfo.activeProcessorCount > 1 else {
            return try found.map { try RecordCodec.open($0.sealed, typeBlind: typeBlind, idBlind: $0.idBlind, keys: keys) }
        }
        var results = [Result<RecordCodec.Contents, WalletError>?](repeating: nil, count: found.count)
        let workers = min(ProcessInfo.processInfo.activeProcessorCount, 8)
        results.withUnsafeMutableBufferPointer { buffer in
            found.withUnsafeBufferPointer { input in
                let slots = SharedBuffer(buffer), candidates = SharedBuffer(UnsafeMutableBufferPointer(mutating: input))
                DispatchQueue.concurrentPerform(iterations: workers) { worker in
                    // Each worker fills its own stride of slots: no two threads touch one slot.
                    var i = worker
                    while i < candidates.buffer.count {
                        let c = candidates.buffer[i]
                        slots.buffer[i] = Result { () throws(WalletError) in
                            try RecordCodec.open(c.sealed, typeBlind: typeBlind, idBlind: c.idBlind, keys: keys)
                        }
                        i += workers
                    }
                }
            }
        }
        return try results.map { try $0!.get() }
    }

    /// The next `limit` matching records after `cursor`.
    /// A range plan reads its whole range and sorts it, so only one-shot reads (`allowRange`)
    /// may use it; pages of a walk keep a driver whose cost does not grow with the position.
    func page(_ db: Database, keys: WalletKeys, cursor: inout SearchCursor, limit: Int, options: RecordOptions,
              descending: Bool = false, allowRange: Bool = false, now: Date = Date()) throws -> [WalletRecord] {
        var out = [WalletRecord]()
        guard !cursor.exhausted, limit > 0 else { return out }
        if case .none = root { cursor.exhausted = true; return out }
        let nowMs = unixMillis(now)
        let expiry = try Self.expiryActive(db)
        let plan = try plan(db, allowRange: allowRange)
        let checkAll: Bool
        if case .all = root { checkAll = false } else { checkAll = true }
        out.reserveCapacity(min(limit, 4096))
        while true {
            let want = limit - out.count
            let batch = exact ? want : max(want, 64)
            let found = try candidates(db, plan: plan, after: cursor.after, limit: batch, descending: descending, now: nowMs, expiry: expiry)
            let opened = try open(found, keys: keys)
            for (candidate, contents) in zip(found, opened) {
                if checkAll, !root.matches(contents.tags.entries) {
                    if exact {
                        throw WalletError.corrupted("the tag index disagrees with a record's sealed tags (the wallet file was altered)")
                    }
                    cursor.after = candidate.rowid
                    continue
                }
                out.append(RecordStore.record(contents, type: type, options: options))
                cursor.after = candidate.rowid
                if out.count == limit { return out }
            }
            if found.count < batch {
                cursor.exhausted = true
                return out
            }
        }
    }

    /// How many records match.
    func count(_ db: Database, keys: WalletKeys, now: Date = Date()) throws -> Int {
        if case .none = root { return 0 }
        let nowMs = unixMillis(now)
        let expiry = try Self.expiryActive(db)
        let plan = try plan(db, allowRange: true)
        if exact {
            var sql: String
            var args: [DatabaseValue]
            // Without expiry and with nothing left to check, the index alone answers.
            let indexOnly = !expiry && plan.predicate.sql == "1"
            switch plan.driver {
            case .type:
                sql = "SELECT COUNT(*) FROM items i WHERE i.type = ?"
                args = [typeBlind.databaseValue]
            case let .tag(name, value):
                sql = indexOnly
                    ? "SELECT COUNT(*) FROM tags d \(plan.joins.sql) WHERE d.name = ? AND d.value = ?"
                    : "SELECT COUNT(*) FROM tags d \(plan.joins.sql) CROSS JOIN items i ON i.id = d.item WHERE d.name = ? AND d.value = ? AND i.type = ?"
                args = plan.joins.arguments + [name.databaseValue, value] + (indexOnly ? [] : [typeBlind.databaseValue])
            case let .range(name, conditions):
                sql = indexOnly
                    ? "SELECT COUNT(*) FROM tags d WHERE d.name = ? AND \(conditions.sql)"
                    : "SELECT COUNT(*) FROM tags d CROSS JOIN items i ON i.id = d.item WHERE d.name = ? AND \(conditions.sql) AND i.type = ?"
                args = [name.databaseValue] + conditions.arguments + (indexOnly ? [] : [typeBlind.databaseValue])
            }
            if expiry { sql += " AND (i.expiry IS NULL OR i.expiry > ?)"; args.append(nowMs.databaseValue) }
            if plan.predicate.sql != "1" { sql += " AND (\(plan.predicate.sql))"; args += plan.predicate.arguments }
            let statement = try db.makeStatement(sql: sql)
            return try Int.fetchOne(statement, arguments: StatementArguments(args)) ?? 0
        }
        var cursor = SearchCursor()
        var total = 0
        while !cursor.exhausted {
            let found = try candidates(db, plan: plan, after: cursor.after, limit: 512, descending: false, now: nowMs, expiry: expiry)
            let opened = try open(found, keys: keys)
            for (candidate, contents) in zip(found, opened) {
                if root.matches(contents.tags.entries) { total += 1 }
                cursor.after = candidate.rowid
            }
            if found.count < 512 { cursor.exhausted = true }
        }
        return total
    }
}
