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

/// A candidate row with its sealed contents opened, and whether its tags satisfy the query.
struct OpenedCandidate {
    let rowid: Int64
    let contents: RecordCodec.Contents
    let matches: Bool
}

/// Rows opened together on one worker. Written by that worker only, read after the dispatch
/// group that ran it has been waited on, which orders the write before the read.
final class OpenedChunk: @unchecked Sendable {
    let candidates: [Candidate]
    private(set) var results = [Result<OpenedCandidate, WalletError>]()

    init(_ candidates: [Candidate]) { self.candidates = candidates }

    /// Opens every row and checks it against `root` (nil: every row matches).
    func open(typeBlind: Data, keys: WalletKeys, root: WQLNode?) {
        results = candidates.map { c in
            Result { () throws(WalletError) in
                let contents = try RecordCodec.open(c.sealed, typeBlind: typeBlind, idBlind: c.idBlind, keys: keys)
                return OpenedCandidate(rowid: c.rowid, contents: contents, matches: root?.matches(contents.tags.entries) ?? true)
            }
        }
    }
}

/// Rows per chunk handed to another core while the walk reads on.
let pipelineChunk = 128

/// Where a walk stands: the row id of the last record returned (records come in row-id order).
struct SearchCursor: Sendable {
    var after: Int64?
    var exhausted = false
}

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

    /// `FROM … WHERE …` of a plan: the driver, the type, expiry and the rest of the predicate.
    /// With `joinItems` false (a tag-index driver only) the items table is left out, so a count
    /// reads the index alone; that is only right when expiry and the predicate are not needed.
    func source(_ plan: Plan, joinItems: Bool, now: Int64, expiry: Bool) -> (sql: String, arguments: [DatabaseValue], itemColumn: String) {
        var sql: String
        var args: [DatabaseValue]
        let itemColumn: String
        let items = joinItems ? " CROSS JOIN items i ON i.id = d.item" : ""
        switch plan.driver {
        case .type:
            sql = "FROM items i WHERE i.type = ?"
            args = [typeBlind.databaseValue]
            itemColumn = "i.id"
        case let .tag(name, value):
            sql = "FROM tags d \(plan.joins.sql)\(items) WHERE d.name = ? AND d.value = ?"
            args = plan.joins.arguments + [name.databaseValue, value]
            itemColumn = "d.item"
        case let .range(name, conditions):
            sql = "FROM tags d\(items) WHERE d.name = ? AND \(conditions.sql)"
            args = [name.databaseValue] + conditions.arguments
            itemColumn = "d.item"
        }
        if joinItems {
            if case .type = plan.driver {} else { sql += " AND i.type = ?"; args.append(typeBlind.databaseValue) }
            if expiry { sql += " AND (i.expiry IS NULL OR i.expiry > ?)"; args.append(now.databaseValue) }
            if plan.predicate.sql != "1" { sql += " AND (\(plan.predicate.sql))"; args += plan.predicate.arguments }
        }
        return (sql, args, itemColumn)
    }

    /// The next `limit` candidates after `after`, opened. SQLite hands rows over on this thread;
    /// every full chunk of them is opened on another core while this thread reads the next, so
    /// decryption overlaps the index walk instead of waiting for it.
    func openedCandidates(_ db: Database, keys: WalletKeys, plan: Plan, after: Int64?, limit: Int, descending: Bool,
                          now: Int64, expiry: Bool) throws -> [OpenedCandidate] {
        let from = source(plan, joinItems: true, now: now, expiry: expiry)
        var sql = "SELECT i.id, i.name, i.value " + from.sql
        var args = from.arguments
        if let after { sql += " AND \(from.itemColumn) \(descending ? "<" : ">") ?"; args.append(after.databaseValue) }
        sql += " ORDER BY \(from.itemColumn) \(descending ? "DESC" : "ASC") LIMIT ?"
        args.append(limit.databaseValue)
        // Prepared per call: query shapes vary (each $in length is one), and a cache per
        // connection would grow with every shape ever seen.
        let statement = try db.makeStatement(sql: sql)
        statement.setUncheckedArguments(StatementArguments(args))
        let typeBlind = self.typeBlind
        let root: WQLNode?
        if case .all = self.root { root = nil } else { root = self.root }
        let pipelined = ProcessInfo.processInfo.activeProcessorCount > 1
        let group = DispatchGroup()
        var chunks = [OpenedChunk]()
        var chunk = [Candidate]()
        chunk.reserveCapacity(min(limit, pipelineChunk))
        let rows = try Row.fetchCursor(statement)
        while let row = try rows.next() {
            chunk.append(Candidate(rowid: row[0], idBlind: row[1], sealed: row[2]))
            if pipelined, chunk.count == pipelineChunk {
                let opened = OpenedChunk(chunk)
                chunks.append(opened)
                DispatchQueue.global().async(group: group) { opened.open(typeBlind: typeBlind, keys: keys, root: root) }
                chunk = []
                chunk.reserveCapacity(pipelineChunk)
            }
        }
        let last = OpenedChunk(chunk)
        last.open(typeBlind: typeBlind, keys: keys, root: root)
        chunks.append(last)
        group.wait()
        var out = [OpenedCandidate]()
        out.reserveCapacity(chunks.reduce(0) { $0 + $1.candidates.count })
        for opened in chunks {
            for result in opened.results { out.append(try result.get()) }
        }
        return out
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
        out.reserveCapacity(min(limit, 4096))
        while true {
            let want = limit - out.count
            let batch = exact ? want : max(want, 64)
            let found = try openedCandidates(db, keys: keys, plan: plan, after: cursor.after, limit: batch,
                                             descending: descending, now: nowMs, expiry: expiry)
            for candidate in found {
                let contents = candidate.contents
                if !candidate.matches {
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
            // Without expiry and with nothing left to check, the index alone answers.
            var indexOnly = !expiry && plan.predicate.sql == "1"
            if case .type = plan.driver { indexOnly = false }
            let from = source(plan, joinItems: !indexOnly, now: nowMs, expiry: expiry)
            let sql = "SELECT COUNT(*) " + from.sql
            let args = from.arguments
            let statement = try db.makeStatement(sql: sql)
            return try Int.fetchOne(statement, arguments: StatementArguments(args)) ?? 0
        }
        var cursor = SearchCursor()
        var total = 0
        while !cursor.exhausted {
            let found = try openedCandidates(db, keys: keys, plan: plan, after: cursor.after, limit: 512,
                                             descending: false, now: nowMs, expiry: expiry)
            for candidate in found {
                if candidate.matches { total += 1 }
                cursor.after = candidate.rowid
            }
            if found.count < 512 { cursor.exhausted = true }
        }
        return total
    }
}
