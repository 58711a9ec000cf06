// The file layout (format 3: items without AUTOINCREMENT, blind types and tag names as integers, the records' version digest)
// and the upgrade of files in the first layout.

import Foundation
import GRDB
import Testing

@testable import CofferWallet

@Suite("File layout and upgrades")
struct SchemaTests {
    static func itemsSQL(_ wallet: Wallet) async throws -> String {
        try await wallet.pool.read { db in
            try String.fetchOne(db, sql: "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'items'") ?? ""
        }
    }

    static func sequenceRows(_ wallet: Wallet) async throws -> Int {
        try await wallet.pool.read { db in
            guard try db.tableExists("sqlite_sequence") else { return 0 }
            return try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM sqlite_sequence") ?? 0
        }
    }

    /// A closed wallet in the first layout (items with AUTOINCREMENT, blob blinds, format 1) holding
    /// r0…r4 minus r2 of type t and one record of type m with a two-valued plaintext tag.
    static func firstLayoutWallet() async throws -> URL {
        let url = TestWallets.folder().appendingPathComponent("wallet.sqlite")
        let old = try await Wallet.create(
            at: url, key: .raw(TestWallets.rawKey), configuration: TestWallets.fastConfiguration,
            schemaUpTo: Schema.firstMigration)
        for i in 0..<5 {
            try await old.add(type: "t", id: "r\(i)", value: "v\(i)", tags: ["parity": i % 2 == 0 ? "even" : "odd", "~i": .string("\(i)")])
        }
        try await old.delete(type: "t", id: "r2")
        // A plaintext tag with two values in one record (recorded in tag_multi).
        try await old.add(type: "m", id: "multi", value: "x", tags: ["~n": .list(["1", "5"])])
        #expect(try await itemsSQL(old).contains("AUTOINCREMENT"))
        try old.close()
        // Today's code binds blind types and tag names as integers; the first layout's code
        // wrote the same 8 bytes as blobs. Put them back that way.
        let queue = try DatabaseQueue(path: url.path)
        try await queue.write { db in
            for row in try Row.fetchAll(db, sql: "SELECT id, type FROM items") {
                try db.execute(sql: "UPDATE items SET type = ? WHERE id = ?", arguments: [BlindColumn.blind(row[1]), row[0] as Int64])
            }
            for row in try Row.fetchAll(db, sql: "SELECT item, name, value FROM tags") {
                try db.execute(
                    sql: "UPDATE tags SET name = ? WHERE item = ? AND name = ? AND value = ?",
                    arguments: [BlindColumn.blind(row[1]), row[0] as Int64, row[1] as Int64, row[2] as DatabaseValue])
            }
            for name in try Int64.fetchAll(db, sql: "SELECT name FROM tag_multi") {
                try db.execute(sql: "UPDATE tag_multi SET name = ? WHERE name = ?", arguments: [BlindColumn.blind(name), name])
            }
            // And the format number of those files (create writes today's).
            try db.execute(sql: "UPDATE coffer_meta SET value = CAST('1' AS BLOB) WHERE name = 'format'")
            #expect(
                try String.fetchAll(db, sql: "SELECT DISTINCT typeof(type) FROM items UNION SELECT DISTINCT typeof(name) FROM tags") == [
                    "blob"
                ])
        }
        try queue.close()
        return url
    }

    @Test("a new wallet's items table has no AUTOINCREMENT, so inserts write no counter row")
    func newWalletHasNoAutoincrement() async throws {
        let (wallet, _) = try await TestWallets.make()
        defer { try? wallet.close() }
        try await wallet.add(type: "t", id: "a", value: "1")
        #expect(!(try await Self.itemsSQL(wallet).contains("AUTOINCREMENT")))
        #expect(try await Self.sequenceRows(wallet) == 0)
    }

    @Test("a wallet in the first layout is upgraded on open")
    func firstLayoutIsUpgraded() async throws {
        let url = try await Self.firstLayoutWallet()
        let wallet = try await Wallet.open(at: url, key: .raw(TestWallets.rawKey), configuration: TestWallets.fastConfiguration)
        defer { try? wallet.close() }
        #expect(!(try await Self.itemsSQL(wallet).contains("AUTOINCREMENT")))
    }

    @Test("the upgrade keeps every record, its tags and the walk order")
    func upgradeKeepsRecords() async throws {
        let url = try await Self.firstLayoutWallet()
        let wallet = try await Wallet.open(at: url, key: .raw(TestWallets.rawKey), configuration: TestWallets.fastConfiguration)
        defer { try? wallet.close() }
        let all = try await wallet.fetchAll(type: "t", matching: .all)
        #expect(all.map(\.id) == ["r0", "r1", "r3", "r4"])
        #expect(all.map(\.value) == ["v0", "v1", "v3", "v4"])
        let even = try await wallet.fetchAll(type: "t", matching: WalletQuery(json: #"{"parity": "even"}"#))
        #expect(even.map(\.id) == ["r0", "r4"])
        let range = try await wallet.fetchAll(type: "t", matching: WalletQuery(json: #"{"~i": {"$gte": "3"}}"#))
        #expect(range.map(\.id) == ["r3", "r4"])
        #expect(try await wallet.get(type: "t", id: "r3").tags == ["parity": "odd", "~i": "3"])
    }

    @Test("an upgraded wallet takes new records after the old ones and keeps (type, id) unique")
    func upgradedWalletWrites() async throws {
        let url = try await Self.firstLayoutWallet()
        let wallet = try await Wallet.open(at: url, key: .raw(TestWallets.rawKey), configuration: TestWallets.fastConfiguration)
        defer { try? wallet.close() }
        try await wallet.add(type: "t", id: "r5", value: "v5")
        await #expect(throws: WalletError.duplicate(type: "t", id: "r1")) {
            try await wallet.add(type: "t", id: "r1", value: "again")
        }
        #expect(try await wallet.fetchAll(type: "t", matching: .all).map(\.id) == ["r0", "r1", "r3", "r4", "r5"])
    }

    static func storageClasses(_ wallet: Wallet) async throws -> [String] {
        try await wallet.pool.read { db in
            try String.fetchAll(
                db,
                sql: """
                    SELECT DISTINCT typeof(type) FROM items UNION SELECT DISTINCT typeof(name) FROM tags
                    UNION SELECT DISTINCT typeof(name) FROM tag_multi
                    """)
        }
    }

    @Test("blind types and tag names are stored as integers")
    func blindsAreIntegers() async throws {
        let (wallet, _) = try await TestWallets.make()
        defer { try? wallet.close() }
        try await wallet.add(type: "t", id: "a", value: "1", tags: ["color": "red", "~n": .list(["1", "2"])])
        #expect(try await Self.storageClasses(wallet) == ["integer"])
    }

    @Test("an upgraded wallet stores its blinds as integers and keeps ranges over multi-valued tags exact")
    func upgradedBlindsAreIntegers() async throws {
        let url = try await Self.firstLayoutWallet()
        let wallet = try await Wallet.open(at: url, key: .raw(TestWallets.rawKey), configuration: TestWallets.fastConfiguration)
        defer { try? wallet.close() }
        #expect(try await Self.storageClasses(wallet) == ["integer"])
        let high = try await wallet.fetchAll(type: "m", matching: WalletQuery(json: #"{"~n": {"$gt": "4"}}"#))
        let low = try await wallet.fetchAll(type: "m", matching: WalletQuery(json: #"{"~n": {"$lt": "2"}}"#))
        #expect(high.map(\.id) == ["multi"])
        #expect(low.map(\.id) == ["multi"])
        #expect(try await wallet.count(type: "m", matching: WalletQuery(json: #"{"~n": "5"}"#)) == 1)
    }

    static func format(_ wallet: Wallet) async throws -> String? {
        try await wallet.pool.read { db in
            try Data.fetchOne(db, sql: "SELECT value FROM coffer_meta WHERE name = 'format'").map { String(decoding: $0, as: UTF8.self) }
        }
    }

    @Test("a new wallet records file format 4")
    func newWalletFormat() async throws {
        let (wallet, _) = try await TestWallets.make()
        defer { try? wallet.close() }
        #expect(try await Self.format(wallet) == "4")
    }

    @Test("an upgraded wallet records format 4 (with the version digest of the records it holds), which an older Coffer refuses")
    func upgradedWalletFormat() async throws {
        let url = try await Self.firstLayoutWallet()
        let wallet = try await Wallet.open(at: url, key: .raw(TestWallets.rawKey), configuration: TestWallets.fastConfiguration)
        defer { try? wallet.close() }
        #expect(try await Self.format(wallet) == "4")
        #expect(try await wallet.checkIntegrity().isClean)
    }

    @Test("a wallet of a newer format is refused with an error naming both formats, and left as it was")
    func newerFormatRefused() async throws {
        let (wallet, url) = try await TestWallets.make()
        try await wallet.add(type: "t", id: "a", value: "1")
        try await wallet.pool.write { db in
            try db.execute(sql: "UPDATE coffer_meta SET value = CAST('5' AS BLOB) WHERE name = 'format'")
        }
        try wallet.close()
        // What the file holds, row by row (opening a pool writes GRDB's WAL set-up, so the bytes
        // of the file are not the measure; its contents are).
        func contents() throws -> [String] {
            let queue = try DatabaseQueue(path: url.path)
            defer { try? queue.close() }
            return try queue.read { db in
                try ["coffer_meta", "items", "tags", "tag_multi", "coffer_digest"].flatMap { table in
                    try Row.fetchAll(db, sql: "SELECT * FROM \(table) ORDER BY 1").map { "\(table): \($0)" }
                }
            }
        }
        let before = try contents()
        do {
            _ = try await Wallet.open(at: url, key: .raw(TestWallets.rawKey), configuration: TestWallets.fastConfiguration)
            Issue.record("a wallet of format 5 opened")
        } catch let WalletError.invalidInput(message) {
            #expect(message.contains("format 5") && message.contains("up to 4"))
        }
        #expect(try contents() == before)
    }

    @Test("a record given a deleted record's row id behind the cursor is not returned, and nothing repeats")
    func reusedRowidDoesNotRepeat() async throws {
        let (wallet, _) = try await TestWallets.make()
        defer { try? wallet.close() }
        for id in ["a", "b", "c"] { try await wallet.add(type: "t", id: id, value: id) }
        let handle = try await wallet.openSearch(type: "t", query: .all)
        let first = try await wallet.searchNext(handle, count: 3)
        #expect(first.records?.map(\.id) == ["a", "b", "c"])
        // c held the highest row id; without AUTOINCREMENT the next insert takes it again.
        try await wallet.delete(type: "t", id: "c")
        try await wallet.add(type: "t", id: "d", value: "d")
        try await wallet.add(type: "t", id: "e", value: "e")
        let rest = try await wallet.searchNext(handle, count: 10)
        #expect(rest.records?.map(\.id) == ["e"])
    }
}
