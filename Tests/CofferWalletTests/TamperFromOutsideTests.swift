// The attacks on the records' version digest and the schema, performed as someone with the
// files but not the key would: through SQLite on the closed file. Each must end in `corrupted`
// or a check finding, never in the old value read back with a clean check.

import Foundation
import GRDB
import Testing

@testable import CofferWallet

@Suite("Tampering from outside")
struct TamperFromOutsideTests {
    static let key = WalletKey.raw(TestWallets.rawKey)

    static func open(_ url: URL) async throws -> Wallet {
        try await Wallet.open(at: url, key: key, configuration: TestWallets.fastConfiguration)
    }

    /// Runs `body` on an attacker's connection to the closed file.
    static func attack(_ url: URL, _ body: @escaping @Sendable (Database) throws -> Void) async throws {
        let db = try TestWallets.attackerQueue(url)
        try await db.write { try body($0) }
        try db.close()
    }

    static func read<T: Sendable>(_ url: URL, _ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        let db = try TestWallets.attackerQueue(url)
        defer { try? db.close() }
        return try await db.read { try body($0) }
    }

    /// A closed wallet where record t/a held "old", then "new" (with b beside it), and the row
    /// of a as it was when it held "old".
    static func updatedWallet() async throws -> (URL, oldBox: Data, rowid: Int64) {
        let (w, url) = try await TestWallets.make()
        try await w.add(type: "t", id: "a", value: "old")
        try await w.add(type: "t", id: "b", value: "b")
        try w.close()
        let (box, rowid) = try await read(url) { db in
            let row = try Row.fetchOne(db, sql: "SELECT value, id FROM items ORDER BY id LIMIT 1")!
            return (row[0] as Data, row[1] as Int64)
        }
        let w2 = try await open(url)
        try await w2.update(type: "t", id: "a", value: "new")
        try w2.close()
        return (url, box, rowid)
    }

    /// Opening refuses the file as `corrupted`, with a message containing `words`.
    static func expectCorrupted(_ url: URL, mentioning words: String, sourceLocation: SourceLocation = #_sourceLocation) async {
        do {
            let w = try await open(url)
            let value = try? await w.get(type: "t", id: "a").value
            try? w.close()
            Issue.record("the tampered wallet opened (a reads \(value ?? "nothing"))", sourceLocation: sourceLocation)
        } catch let WalletError.corrupted(message) {
            #expect(message.contains(words), "\(message)", sourceLocation: sourceLocation)
        } catch {
            Issue.record("expected corrupted, got \(error)", sourceLocation: sourceLocation)
        }
    }

    @Test("upgrade re-run: digest, triggers and migration rows dropped, format set back to 2, an old box put back — refused as corrupted")
    func upgradeRerun() async throws {
        let (url, oldBox, rowid) = try await Self.updatedWallet()
        try await Self.attack(url) { db in
            try db.execute(
                sql: """
                    DROP TRIGGER coffer_digest_insert; DROP TRIGGER coffer_digest_delete; DROP TRIGGER coffer_digest_update;
                    DROP TABLE coffer_digest;
                    DELETE FROM grdb_migrations WHERE identifier IN ('wallet-v3-row-digest', 'wallet-v4-sealed-digest');
                    DELETE FROM coffer_meta WHERE name = 'integrity';
                    UPDATE coffer_meta SET value = CAST('2' AS BLOB) WHERE name = 'format';
                    """)
            try db.execute(sql: "UPDATE items SET value = ? WHERE id = ?", arguments: [oldBox, rowid])
        }
        await Self.expectCorrupted(url, mentioning: "integrity record is missing")
    }

    @Test("upgrade re-run keeping the schema: only the applied-migration row of format 4 deleted — refused, nothing rebuilt")
    func migrationRowDeleted() async throws {
        let (url, oldBox, rowid) = try await Self.updatedWallet()
        try await Self.attack(url) { db in
            try db.execute(sql: "DELETE FROM grdb_migrations WHERE identifier = 'wallet-v4-sealed-digest'")
            try db.execute(sql: "UPDATE items SET value = ? WHERE id = ?", arguments: [oldBox, rowid])
        }
        await Self.expectCorrupted(url, mentioning: "applied migrations")
    }

    @Test("a planted trigger (it would roll a record back on the app's next write) is refused before any record is read, and named")
    func plantedTrigger() async throws {
        let (url, oldBox, rowid) = try await Self.updatedWallet()
        let hex = oldBox.map { String(format: "%02X", $0) }.joined()
        try await Self.attack(url) { db in
            try db.execute(
                sql: """
                    CREATE TRIGGER evil AFTER INSERT ON items BEGIN
                        UPDATE items SET value = X'\(hex)' WHERE id = \(rowid);
                    END
                    """)
        }
        await Self.expectCorrupted(url, mentioning: "\"evil\"")
        // Nothing ran: the record still holds its last version in the file.
        #expect(
            try await Self.read(url) { db in try Data.fetchOne(db, sql: "SELECT value FROM items WHERE id = ?", arguments: [rowid]) }
                != oldBox)
    }

    @Test("XOR delta replay: an update's delta taken from two snapshots and applied to a later digest — refused as corrupted")
    func deltaReplay() async throws {
        let (w, url) = try await TestWallets.make()
        try await w.add(type: "t", id: "a", value: "old")
        try w.close()
        let digest = { @Sendable (db: Database) throws -> Data in try Data.fetchOne(db, sql: "SELECT value FROM coffer_digest")! }
        let oldBox = try await Self.read(url) { db in try Data.fetchOne(db, sql: "SELECT value FROM items")! }
        let before = try await Self.read(url, digest)
        let w2 = try await Self.open(url)
        try await w2.update(type: "t", id: "a", value: "new")
        try w2.close()
        let after = try await Self.read(url, digest)
        let w3 = try await Self.open(url)
        try await w3.add(type: "t", id: "later", value: "x")
        try w3.close()
        try await Self.attack(url) { db in
            var state = try digest(db)
            // The accumulator is the first 32 bytes; the update's delta is before XOR after.
            for i in 0..<32 { state[i] ^= before[i] ^ after[i] }
            try db.execute(sql: "UPDATE coffer_digest SET value = ?", arguments: [state])
            try db.execute(sql: "UPDATE items SET value = ? WHERE id = (SELECT MIN(id) FROM items)", arguments: [oldBox])
        }
        await Self.expectCorrupted(url, mentioning: "digest does not verify")
    }

    @Test("the digest row rolled back with the record, while a later record stays: the old value reads, the check fails")
    func digestRowRolledBack() async throws {
        let (w, url) = try await TestWallets.make()
        try await w.add(type: "t", id: "a", value: "old")
        try w.close()
        let (oldBox, oldDigest) = try await Self.read(url) { db in
            (try Data.fetchOne(db, sql: "SELECT value FROM items")!, try Data.fetchOne(db, sql: "SELECT value FROM coffer_digest")!)
        }
        let w2 = try await Self.open(url)
        try await w2.update(type: "t", id: "a", value: "new")
        try await w2.add(type: "t", id: "later", value: "x")
        try w2.close()
        try await Self.attack(url) { db in
            try db.execute(sql: "UPDATE coffer_digest SET value = ?", arguments: [oldDigest])
            try db.execute(sql: "UPDATE items SET value = ? WHERE id = (SELECT MIN(id) FROM items)", arguments: [oldBox])
        }
        let w3 = try await Self.open(url)
        defer { try? w3.close() }
        #expect(try await w3.get(type: "t", id: "a").value == "old", "the box and the digest state are both authentic")
        #expect(try await w3.checkIntegrity().problems.map(\.kind) == ["digest"])
    }

    @Test("a rolled-back row moved to another row id is caught: the row id is part of its digest")
    func rowidInDigest() async throws {
        let (w, url) = try await TestWallets.make()
        try await w.add(type: "t", id: "a", value: "v")
        try w.close()
        try await Self.attack(url) { db in try db.execute(sql: "UPDATE items SET id = id + 1000") }
        let w2 = try await Self.open(url)
        defer { try? w2.close() }
        #expect(try await w2.checkIntegrity().problems.map(\.kind) == ["digest"])
    }

    @Test("the unique index replaced by a plain one under the same name, and a duplicate (type, id) row inserted — refused as corrupted")
    func replacedUniqueIndex() async throws {
        let (url, oldBox, rowid) = try await Self.updatedWallet()
        try await Self.attack(url) { db in
            try db.execute(sql: "DROP INDEX items_type_name; CREATE INDEX items_type_name ON items(type, name)")
            try db.execute(
                sql: "INSERT INTO items(type, name, value, expiry) SELECT type, name, ?, expiry FROM items WHERE id = ?",
                arguments: [oldBox, rowid])
        }
        await Self.expectCorrupted(url, mentioning: "\"items_type_name\" on \"items\" differs")
    }

    @Test("duplicate (type, id) rows added while the wallet is open are named by the check, with the changed schema")
    func duplicateWhileOpen() async throws {
        let (url, oldBox, rowid) = try await Self.updatedWallet()
        let w = try await Self.open(url)
        defer { try? w.close() }
        try await Self.attack(url) { db in
            try db.execute(sql: "DROP INDEX items_type_name; CREATE INDEX items_type_name ON items(type, name)")
            try db.execute(
                sql: "INSERT INTO items(type, name, value, expiry) SELECT type, name, ?, expiry FROM items WHERE id = ?",
                arguments: [oldBox, rowid])
        }
        let report = try await w.checkIntegrity()
        #expect(Set(report.problems.map(\.kind)) == ["schema", "duplicate", "digest"], "\(report.problems)")
        #expect(report.problems.contains { $0.kind == "duplicate" && $0.type == "t" && $0.id == "a" })
    }

    @Test("a write on a file whose digest was changed while it was open fails as corrupted and writes nothing")
    func writeOnTamperedDigest() async throws {
        let (w, url) = try await TestWallets.make()
        defer { try? w.close() }
        try await w.add(type: "t", id: "a", value: "v")
        try await Self.attack(url) { db in
            try db.execute(sql: "UPDATE coffer_digest SET value = zeroblob(72)")
        }
        await #expect(throws: WalletError.corrupted(DigestFunction.corruptMessage)) {
            try await w.add(type: "t", id: "b", value: "v")
        }
        #expect(try await w.fetch(type: "t", id: "b") == nil)
    }

    // MARK: Files of an older format (no authenticated state yet)

    /// A closed wallet of format 3 (the XOR digest) holding t/a = "old", then "new".
    static func formatThreeWallet() async throws -> (URL, oldBox: Data, rowid: Int64) {
        let url = TestWallets.folder().appendingPathComponent("wallet.sqlite")
        let w = try await Wallet.create(
            at: url, key: key, configuration: TestWallets.fastConfiguration, schemaUpTo: Schema.rowDigestMigration)
        try await w.add(type: "t", id: "a", value: "old")
        let (box, rowid) = try await w.pool.read { db in
            let row = try Row.fetchOne(db, sql: "SELECT value, id FROM items")!
            return (row[0] as Data, row[1] as Int64)
        }
        try await w.update(type: "t", id: "a", value: "new")
        try await w.add(type: "t", id: "b", value: "b")
        try w.close()
        return (url, box, rowid)
    }

    @Test("a genuine file of format 3 is upgraded to 4 and checks clean")
    func formatThreeUpgrades() async throws {
        let (url, _, _) = try await Self.formatThreeWallet()
        let w = try await Self.open(url)
        defer { try? w.close() }
        #expect(try await w.get(type: "t", id: "a").value == "new")
        #expect(try await w.checkIntegrity().isClean)
        let format = try await w.pool.read { db in try Data.fetchOne(db, sql: "SELECT value FROM coffer_meta WHERE name = 'format'") }
        #expect(format == Data("4".utf8))
    }

    @Test("a file of format 3 with a record rolled back is not upgraded: its old digest is checked, never recomputed")
    func formatThreeRolledBackRefused() async throws {
        let (url, oldBox, rowid) = try await Self.formatThreeWallet()
        try await Self.attack(url) { db in try db.execute(sql: "UPDATE items SET value = ? WHERE id = ?", arguments: [oldBox, rowid]) }
        await Self.expectCorrupted(url, mentioning: "not upgraded")
    }

    @Test("a file of format 3 with a planted trigger is refused before it is upgraded")
    func formatThreePlantedTrigger() async throws {
        let (url, _, _) = try await Self.formatThreeWallet()
        try await Self.attack(url) { db in
            try db.execute(sql: "CREATE TRIGGER evil AFTER UPDATE ON items BEGIN DELETE FROM tags; END")
        }
        await Self.expectCorrupted(url, mentioning: "\"evil\"")
    }

    @Test("a format-4 file whose format row says 3 is refused: its key is sealed for format 4")
    func formatDowngradeRefused() async throws {
        let (url, _, _) = try await Self.updatedWallet()
        try await Self.attack(url) { db in
            try db.execute(sql: "UPDATE coffer_meta SET value = CAST('3' AS BLOB) WHERE name = 'format'")
        }
        await Self.expectCorrupted(url, mentioning: "format reads 3")
    }
}
