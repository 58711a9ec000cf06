// `Wallet.checkIntegrity()`: the check both backends share (IntegrityCheck.swift, over the
// storage seam: every record opened, every tag-index row checked against its record's sealed
// tags and back, the records' version digest), with the wallet file's own steps around it (the
// schema the key authenticated, SQLite's integrity check) — in one read transaction, streaming,
// so memory stays flat however large the wallet is.

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
        let meta = try metaValues(
            db, sql: "SELECT name, value FROM \(keys.tables.meta) WHERE name IN ('format', ?)", arguments: [FileIntegrity.metaName],
            path: "the wallet file")
        let format = meta["format"].flatMap { Int(String(decoding: $0, as: UTF8.self)) }
        return try FileIntegrity.problem(db, keys: keys, stored: meta[FileIntegrity.metaName], format: format)
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
    /// - Throws: ``WalletError`` only when the file cannot be read at all, or cannot be read with
    ///   this wallet's key: ``WalletError/wrongKey(_:)`` when another process rotated the key since
    ///   this wallet opened, a storage error when its profile was removed.
    public func checkIntegrity(progress: (@Sendable (BackupProgress) -> Void)? = nil) async throws -> IntegrityReport {
        try await gated { keys in
            try await SQLiteWalletStorage(pool: pool, path: path).read(keys.tables) { tx -> IntegrityReport in
                // Under another process's rotation (or in a removed profile's tables given to a
                // new one) every record would read as damaged: say which it is instead.
                try await tx.withDatabase { db in try Self.checkKeysBeforeWalk(db, keys) }
                var report = IntegrityReport()
                // The SQLite backend's own steps around the check both backends share: the
                // schema the key authenticated first, SQLite's integrity check of the file last.
                if let problem = try await tx.withDatabase({ db in try Self.schemaProblem(db, keys: keys) }) {
                    report.add("schema", type: nil, id: nil, problem)
                }
                try await IntegrityCheck.run(tx, keys: keys, digest: .backend, into: &report, progress: progress)
                for line in try await tx.withDatabase({ db in try String.fetchAll(db, sql: "PRAGMA integrity_check") }) where line != "ok" {
                    report.add("sqlite", type: nil, id: nil, line)
                }
                return report
            }
        }
    }
}
