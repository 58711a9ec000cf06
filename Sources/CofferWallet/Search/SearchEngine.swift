// Keyset paging over a compiled search: each page starts after the last record returned, so a
// page costs the same at page 1 and page 1,000, and a walk never repeats or skips a record.
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

extension CompiledSearch {
    /// Whether any record carries an expiry (a partial index makes this a single probe).
    static func expiryActive(_ db: Database) throws -> Bool {
        try Bool.fetchOne(db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM items WHERE expiry IS NOT NULL)")) ?? false
    }

    func candidates(_ db: Database, after: Int64?, limit: Int, descending: Bool, now: Int64, expiry: Bool) throws -> [Candidate] {
        var sql: String
        var args: [DatabaseValue]
        let cmp = descending ? "<" : ">"
        let order = descending ? "DESC" : "ASC"
        switch driver {
        case .type:
            sql = "SELECT i.id, i.name, i.value FROM items i WHERE i.type = ?"
            args = [typeBlind.databaseValue]
            if let after { sql += " AND i.id \(cmp) ?"; args.append(after.databaseValue) }
        case let .tag(name, value):
            sql = "SELECT i.id, i.name, i.value FROM tags d CROSS JOIN items i ON i.id = d.item WHERE d.name = ? AND d.value = ?"
            args = [name.databaseValue, value]
            if let after { sql += " AND d.item \(cmp) ?"; args.append(after.databaseValue) }
            sql += " AND i.type = ?"
            args.append(typeBlind.databaseValue)
        }
        if expiry { sql += " AND (i.expiry IS NULL OR i.expiry > ?)"; args.append(now.databaseValue) }
        if predicate.sql != "1" { sql += " AND (\(predicate.sql))"; args += predicate.arguments }
        switch driver {
        case .type: sql += " ORDER BY i.id \(order) LIMIT ?"
        case .tag: sql += " ORDER BY d.item \(order) LIMIT ?"
        }
        args.append(limit.databaseValue)
        let statement = try db.cachedStatement(sql: sql)
        statement.setUncheckedArguments(StatementArguments(args))
        var out = [Candidate]()
        out.reserveCapacity(min(limit, 4096))
        let rows = try Row.fetchCursor(statement)
        while let row = try rows.next() {
            out.append(Candidate(rowid: row[0], idBlind: row[1], sealed: row[2]))
        }
        return out
    }

    /// The next `limit` matching records after `cursor`.
    func page(_ db: Database, keys: WalletKeys, cursor: inout SearchCursor, limit: Int, options: RecordOptions,
              descending: Bool = false, now: Date = Date()) throws -> [WalletRecord] {
        var out = [WalletRecord]()
        guard !cursor.exhausted, limit > 0 else { return out }
        if case .none = root { cursor.exhausted = true; return out }
        let nowMs = unixMillis(now)
        let expiry = try Self.expiryActive(db)
        out.reserveCapacity(min(limit, 4096))
        while true {
            let want = limit - out.count
            let batch = exact ? want : max(want, 64)
            let found = try candidates(db, after: cursor.after, limit: batch, descending: descending, now: nowMs, expiry: expiry)
            for candidate in found {
                let contents = try RecordCodec.open(candidate.sealed, typeBlind: typeBlind, idBlind: candidate.idBlind, keys: keys)
                if !root.matches(contents.tags.valuesByName) {
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
        if exact {
            var sql: String
            var args: [DatabaseValue]
            switch driver {
            case .type:
                sql = "SELECT COUNT(*) FROM items i WHERE i.type = ?"
                args = [typeBlind.databaseValue]
            case let .tag(name, value):
                sql = "SELECT COUNT(*) FROM tags d CROSS JOIN items i ON i.id = d.item WHERE d.name = ? AND d.value = ? AND i.type = ?"
                args = [name.databaseValue, value, typeBlind.databaseValue]
            }
            if expiry { sql += " AND (i.expiry IS NULL OR i.expiry > ?)"; args.append(nowMs.databaseValue) }
            if predicate.sql != "1" { sql += " AND (\(predicate.sql))"; args += predicate.arguments }
            return try Int.fetchOne(db, sql: sql, arguments: StatementArguments(args)) ?? 0
        }
        var cursor = SearchCursor()
        var total = 0
        while !cursor.exhausted {
            let found = try candidates(db, after: cursor.after, limit: 512, descending: false, now: nowMs, expiry: expiry)
            for candidate in found {
                let contents = try RecordCodec.open(candidate.sealed, typeBlind: typeBlind, idBlind: candidate.idBlind, keys: keys)
                if root.matches(contents.tags.valuesByName) { total += 1 }
                cursor.after = candidate.rowid
            }
            if found.count < 512 { cursor.exhausted = true }
        }
        return total
    }
}
