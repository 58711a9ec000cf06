// `checkIntegrity()` as an attacker with write access but no key would test it: each kind of
// tampering it promises to find is found, with the record named where it can be.

import CofferWallet
import Foundation
import GRDB
import Testing

@Suite("Integrity check")
struct IntegrityCheckTests {
    /// A closed wallet with three tagged records, and its path.
    func wallet() async throws -> URL {
        let (w, url) = try await TestWallets.make()
        try await w.add(type: "t", id: "a", value: "va", tags: ["e": "1", "~p": ["x", "y"]])
        try await w.add(type: "t", id: "b", value: "vb", tags: ["e": "2"])
        try await w.add(type: "u", id: "c", value: "vc")
        try w.close()
        return url
    }

    func tamper(_ url: URL, _ sql: String) async throws {
        let db = try TestWallets.attackerQueue(url)
        try await db.write { db in try db.execute(sql: sql) }
        try db.close()
    }

    func check(_ url: URL) async throws -> IntegrityReport {
        let w = try await Wallet.open(at: url, key: .raw(TestWallets.rawKey))
        defer { try? w.close() }
        return try await w.checkIntegrity()
    }

    @Test("an untouched wallet is clean, with its records and tag rows counted")
    func clean() async throws {
        let report = try await check(try await wallet())
        #expect(report.isClean, "\(report.problems)")
        #expect(report.records == 3 && report.tagRows == 4)
        #expect(report.json == #"{"records":3,"tagRows":4,"problems":[],"problemCount":0}"#)
    }

    @Test("a record whose tag rows were deleted is named: searches would skip it")
    func deletedTagRows() async throws {
        let url = try await wallet()
        try await tamper(url, "DELETE FROM tags WHERE item = (SELECT MIN(item) FROM tags)")
        let report = try await check(url)
        #expect(report.problems.map(\.kind) == ["missingTagRow", "missingTagRow", "missingTagRow"])
        #expect(report.problems.allSatisfy { $0.type == "t" && $0.id == "a" })
    }

    @Test("a tag row moved to another record is found on both records")
    func movedTagRow() async throws {
        let url = try await wallet()
        try await tamper(
            url,
            """
            UPDATE tags SET item = (SELECT id FROM items ORDER BY id LIMIT 1 OFFSET 1)
            WHERE item = (SELECT id FROM items ORDER BY id LIMIT 1) AND typeof(value) = 'text' AND value = 'x'
            """)
        let report = try await check(url)
        #expect(Set(report.problems.map { "\($0.kind) \($0.id ?? "-")" }) == ["missingTagRow a", "extraTagRow b"], "\(report.problems)")
    }

    @Test("a tampered record is reported, and the check goes on to the others")
    func tamperedRecord() async throws {
        let url = try await wallet()
        try await tamper(url, "UPDATE items SET value = zeroblob(length(value)) WHERE id = (SELECT MIN(id) FROM items)")
        let report = try await check(url)
        #expect(report.records == 3)
        #expect(report.problems.map(\.kind).first == "record")
        #expect(!report.problems.contains { $0.id == "b" })
    }

    @Test(
        "a wallet meta row whose value was made a number (SQLite keeps any value in any column) is corrupted at open, not a crash",
        arguments: ["format", "keys", "kdf", "integrity"])
    func metaValueOfAnotherKind(name: String) async throws {
        let url = try await wallet()
        try await tamper(url, "UPDATE coffer_meta SET value = 4 WHERE name = '\(name)'")
        do {
            _ = try await Wallet.open(at: url, key: .raw(TestWallets.rawKey))
            Issue.record("a wallet whose meta row \(name) holds a number opened")
        } catch WalletError.corrupted(let message) {
            #expect(message.contains("meta row"), "\(message)")
        }
    }

    @Test("a record whose expiry column was made text is corrupted for a rotation (as for the check), not a crash")
    func expiryOfAnotherKindStopsRotation() async throws {
        let url = try await wallet()
        let trigger = try await TestWallets.attackerQueue(url).read { db in
            try String.fetchOne(db, sql: "SELECT sql FROM sqlite_master WHERE name = 'coffer_digest_update'")!
        }
        try await tamper(url, "DROP TRIGGER coffer_digest_update; UPDATE items SET expiry = 'x'; \(trigger);")
        let w = try await Wallet.open(at: url, key: .raw(TestWallets.rawKey))
        defer { try? w.close() }
        await #expect(throws: WalletError.self) { try await w.rekey(to: .raw(Data(repeating: 7, count: 32)), rotatingKey: true) }
        do { try await w.rekey(to: .raw(Data(repeating: 7, count: 32)), rotatingKey: true) } catch WalletError.corrupted(let message) {
            #expect(message.contains("wrong kind"), "\(message)")
        }
    }

    @Test("tag rows of no record are found")
    func orphanRows() async throws {
        let url = try await wallet()
        try await tamper(url, "INSERT INTO tags(item, name, value) VALUES (999999, 1, 'x')")
        #expect(try await check(url).problems.map(\.kind) == ["orphanTagRow"])
    }

    @Test("a record rolled back to an older sealed version reads fine but fails the check")
    func rolledBackRecord() async throws {
        let (w, url) = try await TestWallets.make()
        try await w.add(type: "t", id: "a", value: "old")
        try w.close()
        let db = try TestWallets.attackerQueue(url)
        let old = try await db.read { db in try Data.fetchOne(db, sql: "SELECT value FROM items")! }
        try db.close()
        let w2 = try await Wallet.open(at: url, key: .raw(TestWallets.rawKey))
        try await w2.update(type: "t", id: "a", value: "new")
        #expect(try await w2.checkIntegrity().isClean)
        try w2.close()
        try await tamper(url, "UPDATE items SET value = X'\(old.map { String(format: "%02X", $0) }.joined())'")
        let w3 = try await Wallet.open(at: url, key: .raw(TestWallets.rawKey))
        defer { try? w3.close() }
        #expect(try await w3.get(type: "t", id: "a").value == "old", "the box itself is authentic")
        #expect(try await w3.checkIntegrity().problems.map(\.kind) == ["digest"])
    }

    @Test("a deleted record re-inserted from saved rows fails the check")
    func reinsertedRecord() async throws {
        let (w, url) = try await TestWallets.make()
        try await w.add(type: "t", id: "a", value: "v", tags: ["e": "1"])
        try await w.add(type: "t", id: "b", value: "v")
        try w.close()
        let db = try TestWallets.attackerQueue(url)
        let (item, tags) = try await db.read { db -> ([DatabaseValue], [[DatabaseValue]]) in
            let row = try Row.fetchOne(db, sql: "SELECT id, type, name, value FROM items ORDER BY id LIMIT 1")!
            return (
                Array(row.databaseValues), try Row.fetchAll(db, sql: "SELECT item, name, value FROM tags").map { Array($0.databaseValues) }
            )
        }
        try db.close()
        let w2 = try await Wallet.open(at: url, key: .raw(TestWallets.rawKey))
        try await w2.delete(type: "t", id: "a")
        try w2.close()
        let attacker = try TestWallets.attackerQueue(url)
        try await attacker.write { db in
            try db.execute(
                sql: "INSERT INTO items(id, type, name, value) VALUES (?, ?, ?, ?)", arguments: [item[0], item[1], item[2], item[3]])
            for t in tags { try db.execute(sql: "INSERT INTO tags(item, name, value) VALUES (?, ?, ?)", arguments: [t[0], t[1], t[2]]) }
        }
        try attacker.close()
        let w3 = try await Wallet.open(at: url, key: .raw(TestWallets.rawKey))
        defer { try? w3.close() }
        #expect(try await w3.get(type: "t", id: "a").value == "v")
        #expect(try await w3.checkIntegrity().problems.map(\.kind) == ["digest"])
    }

    @Test("the digest follows every kind of write: after adds, updates, tag changes, deletes and a failed transaction the check is clean")
    func digestFollowsWrites() async throws {
        let (w, _) = try await TestWallets.make()
        defer { try? w.close() }
        try await w.transaction { txn in
            for i in 0..<50 { try txn.add(type: "t", id: "r\(i)", value: "v", tags: ["e": .string("\(i % 3)")]) }
        }
        try await w.update(type: "t", id: "r1", value: "changed")
        try await w.addTags(type: "t", id: "r2", tags: ["x": "y"])
        try await w.delete(type: "t", id: "r3")
        _ = try await w.removeAll(type: "t", matching: WalletQuery(json: #"{"e": "0"}"#))
        await #expect(throws: WalletError.self) {
            try await w.transaction { txn in
                try txn.add(type: "t", id: "new", value: "v")
                try txn.add(type: "t", id: "r1", value: "dup")
            }
        }
        let report = try await w.checkIntegrity()
        #expect(report.isClean, "\(report.problems)")
        #expect(report.records == 50 - 1 - 16, "r3 (e = 0) was deleted before the 16 other e = 0 records")
    }
}
