// `Wallet.checkIntegrity()`: every record opened, every tag-index row checked against its
// record's sealed tags and back, and SQLite's own integrity check — in one read transaction,
// streaming, so memory stays flat however large the wallet is.

import Foundation
import GRDB

/// What ``Wallet/checkIntegrity(progress:)`` found.
public struct IntegrityReport: Sendable, Equatable {
    /// One thing that is wrong.
    public struct Problem: Sendable, Equatable {
        /// What kind of problem: `record` (does not open), `missingTagRow`, `extraTagRow`,
        /// `orphanTagRow`, `multiValuedUnmarked`, `digest` (records differ from the versions
        /// last written, or the stored digest does not verify under the key), `duplicate` (two
        /// rows of one type and id), `schema` (the file's tables, indexes, triggers or format
        /// differ from the ones the wallet key authenticated), `sqlite`.
        public let kind: String
        /// The record's type, when it could be read.
        public let type: String?
        /// The record's id, when it could be read.
        public let id: String?
        /// What was found, in words.
        public let detail: String
    }

    /// Records in the wallet (including the wallet's own secrets and expired records).
    public var records = 0
    /// Rows of the tag index.
    public var tagRows = 0
    /// Problems found (at most ``maxListedProblems``; ``problemCount`` counts them all).
    public var problems: [Problem] = []
    /// Every problem found, listed or not.
    public var problemCount = 0
    /// Problems listed in ``problems`` at most: a wallet that is damaged throughout is reported
    /// in bounded memory.
    public static let maxListedProblems = 1_000

    /// Whether nothing is wrong.
    public var isClean: Bool { problemCount == 0 }

    mutating func add(_ kind: String, type: String?, id: String?, _ detail: String) {
        problemCount += 1
        if problems.count < Self.maxListedProblems { problems.append(Problem(kind: kind, type: type, id: id, detail: detail)) }
    }

    /// `{"records": N, "tagRows": N, "problems": [{"kind","type","id","detail"}, …], "problemCount": N}`.
    public var json: String {
        JSONValue.object([
            ("records", .number(String(records))),
            ("tagRows", .number(String(tagRows))),
            (
                "problems",
                .array(
                    problems.map { p in
                        var fields: [(String, JSONValue)] = [("kind", .string(p.kind))]
                        if let type = p.type { fields.append(("type", .string(type))) }
                        if let id = p.id { fields.append(("id", .string(id))) }
                        fields.append(("detail", .string(p.detail)))
                        return .object(fields)
                    })
            ),
            ("problemCount", .number(String(problemCount))),
        ]).jsonText
    }
}

extension Wallet {
    /// Why the file's schema or integrity state is not the one the wallet key authenticated, or nil.
    static func schemaProblem(_ db: Database, keys: WalletKeys) throws -> String? {
        var meta = [String: Data]()
        for row in try Row.fetchAll(
            db, sql: "SELECT name, value FROM \(keys.tables.meta) WHERE name IN ('format', ?)", arguments: [FileIntegrity.metaName])
        {
            meta[row[0]] = row[1]
        }
        let format = meta["format"].flatMap { Int(String(decoding: $0, as: UTF8.self)) }
        return try FileIntegrity.problem(db, keys: keys, stored: meta[FileIntegrity.metaName], format: format)
    }

    /// The type and id sealed in the record at `rowid`, when it opens.
    static func recordName(_ db: Database, rowid: Int64, keys: WalletKeys) throws -> (type: String?, id: String)? {
        guard
            let row = try Row.fetchOne(
                db, sql: "SELECT type, name, value, expiry FROM \(keys.tables.items) WHERE id = ?", arguments: [rowid]),
            let type = Int64.fromDatabaseValue(row[0]), let idBlind = Data.fromDatabaseValue(row[1]),
            let sealed = Data.fromDatabaseValue(row[2]),
            let contents = try? RecordCodec.open(
                sealed, typeBlind: BlindColumn.blind(type), idBlind: idBlind, expiry: row[3], keys: keys, value: .skipped)
        else { return nil }
        return (contents.type, contents.id)
    }

    /// Checks the whole wallet: opens every record (a tampered or damaged box is a problem),
    /// compares every record's sealed tags with its rows in the tag index in both directions
    /// (a missing, added or moved row is a problem), finds tag rows of no record, checks that
    /// plaintext tags holding several values are marked as such (range plans rely on it), and
    /// runs SQLite's `PRAGMA integrity_check`. It reads one consistent state of the file and
    /// holds one record at a time. It changes nothing.
    ///
    /// It also recomputes the records' version digest (a keyed digest of every record's current
    /// version, kept by the wallet at every write) and compares it with the stored one: a single
    /// record rolled back to an older sealed version, re-inserted after it was deleted, or
    /// deleted together with its tag rows makes them differ. What it cannot find: the whole
    /// file rolled back to an older copy (the digest rolls back with it). See the README's
    /// threat model.
    /// - Parameter progress: called with records checked so far and the total.
    /// - Returns: the report; ``IntegrityReport/isClean`` tells whether anything is wrong.
    /// - Throws: ``WalletError`` only when the file cannot be read at all.
    public func checkIntegrity(progress: (@Sendable (BackupProgress) -> Void)? = nil) async throws -> IntegrityReport {
        try await gated { keys in
            try await pool.read { db -> IntegrityReport in
                var report = IntegrityReport()
                report.tagRows = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM \(keys.tables.tags)") ?? 0
                let total = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM \(keys.tables.items)") ?? 0
                let multiValued = Set(try Int64.fetchAll(db, sql: "SELECT name FROM \(keys.tables.tagMulti)"))
                let store = RecordStore(db: db, keys: keys, allowReserved: true)
                // Read with SQLite's C API: GRDB reads text only up to its first U+0000.
                let tagsOfItem = try DirectStatement(db, sql: "SELECT name, value FROM \(keys.tables.tags) WHERE item = ?")
                let rows = try Row.fetchCursor(db, sql: "SELECT id, type, name, value, expiry FROM \(keys.tables.items) ORDER BY id")
                var done = 0
                var digest = [UInt8](repeating: 0, count: DigestState.accumulatorCount)
                if let problem = try Self.schemaProblem(db, keys: keys) { report.add("schema", type: nil, id: nil, problem) }
                while let row = try rows.next() {
                    done += 1
                    report.records += 1
                    if done % 1_000 == 0 { progress?(BackupProgress(done: done, total: total)) }
                    let rowid: Int64 = row[0]
                    guard let typeColumn = Int64.fromDatabaseValue(row[1]), let idBlind = Data.fromDatabaseValue(row[2]),
                        let sealed = Data.fromDatabaseValue(row[3])
                    else {
                        report.add("record", type: nil, id: nil, "row \(rowid) has columns of the wrong kind")
                        continue
                    }
                    let rowDigest = keys.rowDigestV4(rowid: rowid, type: typeColumn, expiry: row[4], idBlind: idBlind, sealed: sealed)
                    for i in 0..<DigestState.accumulatorCount { digest[i] ^= rowDigest[i] }
                    let typeBlind = BlindColumn.blind(typeColumn)
                    let contents: RecordCodec.Contents
                    // The check reads no value: none, a secret's above all, is made into a `String`.
                    do {
                        contents = try RecordCodec.open(
                            sealed, typeBlind: typeBlind, idBlind: idBlind, expiry: row[4], keys: keys, value: .skipped)
                    } catch {
                        report.add("record", type: nil, id: nil, "row \(rowid) does not open: \(error)")
                        continue
                    }
                    let type = contents.type
                    if let type, keys.typeBlind(type) != typeBlind || keys.idBlind(typeBlind: typeBlind, id: contents.id) != idBlind {
                        report.add(
                            "record", type: type, id: contents.id, "row \(rowid)'s blind type or id does not match its sealed type and id")
                    }
                    // The index rows the sealed tags call for, against the rows that are there.
                    var expected = [RecordStore.TagRow: Int]()
                    let (wanted, multi) = store.tagRows(typeBlind: typeBlind, tags: contents.tags)
                    for r in wanted { expected[r, default: 0] = 1 }
                    var found = [RecordStore.TagRow: Int]()
                    tagsOfItem.bind(1, rowid)
                    try tagsOfItem.forEach { tag in
                        guard let name = Int64.fromDatabaseValue(tag.value(0)) else {
                            report.add("extraTagRow", type: type, id: contents.id, "a tag row's name is not a blind index")
                            return
                        }
                        found[RecordStore.TagRow(name: name, value: StoredTagValue(tag.value(1))), default: 0] += 1
                    }
                    for r in expected.keys where found[r] == nil {
                        report.add(
                            "missingTagRow", type: type, id: contents.id,
                            "a sealed tag has no row in the tag index (searches skip this record)")
                    }
                    for r in found.keys where expected[r] == nil {
                        report.add(
                            "extraTagRow", type: type, id: contents.id,
                            "the tag index holds a row that is not among the record's sealed tags")
                    }
                    for name in multi where !multiValued.contains(name) {
                        report.add(
                            "multiValuedUnmarked", type: type, id: contents.id,
                            "a plaintext tag holds several values but is not marked multi-valued")
                    }
                }
                let stored =
                    try db.tableExists(keys.tables.digest)
                    ? try Data.fetchOne(db, sql: "SELECT value FROM \(keys.tables.digest) WHERE id = 1") : nil
                let state = stored.flatMap { DigestState.open($0, keys: keys) }
                if stored == nil {
                    report.add("digest", type: nil, id: nil, "the records' version digest is missing")
                } else if state == nil {
                    report.add(
                        "digest", type: nil, id: nil,
                        "the stored records' version digest does not verify under the wallet key: it was written without the key")
                } else if state?.accumulator != digest {
                    report.add(
                        "digest", type: nil, id: nil,
                        "the records differ from the versions this wallet last wrote: a record was rolled back to an older version, re-inserted after its deletion, or removed with its tag rows"
                    )
                }
                let duplicates = try Row.fetchAll(
                    db,
                    sql:
                        "SELECT MIN(id), COUNT(*) FROM \(keys.tables.items) GROUP BY type, name HAVING COUNT(*) > 1 LIMIT \(IntegrityReport.maxListedProblems)"
                )
                for duplicate in duplicates {
                    let first: Int64 = duplicate[0]
                    let count: Int = duplicate[1]
                    let named = try Self.recordName(db, rowid: first, keys: keys)
                    report.add(
                        "duplicate", type: named?.type, id: named?.id,
                        "\(count) rows hold the same type and id (the unique index was removed or replaced)")
                }
                let orphans =
                    try Int.fetchOne(
                        db, sql: "SELECT COUNT(*) FROM \(keys.tables.tags) WHERE item NOT IN (SELECT id FROM \(keys.tables.items))") ?? 0
                if orphans > 0 { report.add("orphanTagRow", type: nil, id: nil, "\(orphans) tag rows belong to no record") }
                for line in try String.fetchAll(db, sql: "PRAGMA integrity_check") where line != "ok" {
                    report.add("sqlite", type: nil, id: nil, line)
                }
                progress?(BackupProgress(done: done, total: total))
                return report
            }
        }
    }
}
