// The wallet's files stay small: the WAL is removed on close and trimmed after large writes, and
// the space of deleted records comes back.

import CofferSQLite
import Foundation
import GRDB
import Testing

@testable import CofferWallet

@Suite("Footprint")
struct FootprintTests {
    static func size(_ path: String) -> Int? {
        (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? nil
    }

    static func fill(_ w: Wallet, _ n: Int, from start: Int = 0) async throws {
        try await w.transaction { tx in
            for i in start..<(start + n) {
                try tx.add(
                    type: "t", id: "r\(i)", value: String(repeating: "v", count: 300),
                    tags: ["k": .string("\(i % 10)"), "~n": .string("\(i)")])
            }
        }
    }

    @Test("closing the wallet checkpoints and removes the WAL, also after reads")
    func walGoneAfterClose() async throws {
        let (w, url) = try await TestWallets.make()
        try await w.add(type: "t", id: "a", value: "v")
        _ = try await w.get(type: "t", id: "a")
        _ = try await w.fetchAll(type: "t")
        #expect(Self.size(url.path + "-wal") != nil)
        try w.close()
        #expect(Self.size(url.path + "-wal") == nil)
        #expect(Self.size(url.path + "-shm") == nil)
    }

    @Test("while another connection has the file open, closing leaves the WAL to it")
    func walKeptForOtherConnection() async throws {
        let (w, url) = try await TestWallets.make()
        try await w.add(type: "t", id: "a", value: "v")
        let other = try DatabaseQueue(path: url.path)
        _ = try await other.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM items") }
        try w.close()
        #expect(Self.size(url.path + "-wal") != nil)
        try other.close()
    }

    @Test("after a large write the WAL is trimmed to the limit")
    func walTrimmedAfterLargeWrite() async throws {
        let (w, url) = try await TestWallets.make()
        defer { try? w.close() }
        try await Self.fill(w, 20_000)
        // The next write runs after the checkpoint the large one queued.
        try await w.add(type: "t", id: "after", value: "v")
        let wal = Self.size(url.path + "-wal") ?? 0
        #expect(wal <= SQLiteFootprint.walLimitBytes, "WAL is \(wal) bytes")
        #expect(Self.size(url.path)! > 4 * SQLiteFootprint.walLimitBytes / 2)
    }

    /// A wallet holding one record ("t"/"a" = "v") in a file made before free pages could be
    /// given back (`auto_vacuum = NONE`), as an older version left it; closed.
    static func olderFile(_ w: Wallet, _ url: URL) async throws {
        try await w.add(type: "t", id: "a", value: "v")
        try w.close()
        let queue = try TestWallets.attackerQueue(url)
        try await queue.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA auto_vacuum = NONE")
            try db.execute(sql: "VACUUM")
            #expect(try !SQLiteFootprint.isIncremental(db))
        }
        try queue.close()
    }

    @Test("a new wallet gives free pages back incrementally; an older file is converted once on open")
    func incrementalVacuum() async throws {
        let (w, url) = try await TestWallets.make()
        #expect(try await w.pool.read { try SQLiteFootprint.isIncremental($0) })
        try await Self.olderFile(w, url)
        let reopened = try await Wallet.open(at: url, key: .raw(TestWallets.rawKey))
        defer { try? reopened.close() }
        #expect(try await reopened.pool.read { try SQLiteFootprint.isIncremental($0) })
        #expect(try await reopened.get(type: "t", id: "a").value == "v")
        #expect(try await reopened.checkIntegrity().isClean)
    }

    static func tempStore(_ w: Wallet) async throws -> Int? {
        try await w.pool.writeWithoutTransaction { try Int.fetchOne($0, sql: "PRAGMA temp_store") }
    }

    @Test("the writer keeps its statement journals in memory, not in a temporary file outside the store")
    func statementJournalsInMemory() async throws {
        let (w, _) = try await TestWallets.make()
        defer { try? w.close() }
        // 2 is MEMORY; SQLite's default (0) put them in the system's temporary folder.
        #expect(try await Self.tempStore(w) == 2)
    }

    @Test("converting an older file runs its VACUUM with the temporary store on disk and puts the writer's setting back")
    func vacuumPutsTempStoreBack() async throws {
        let (w, url) = try await TestWallets.make()
        try await Self.olderFile(w, url)
        let reopened = try await Wallet.open(at: url, key: .raw(TestWallets.rawKey))
        defer { try? reopened.close() }
        #expect(try await reopened.pool.read { try SQLiteFootprint.isIncremental($0) })
        #expect(try await Self.tempStore(reopened) == 2)
        try await reopened.pool.writeWithoutTransaction { db in
            let inside = try SQLiteFootprint.withTempStoreOnDisk(db) { try Int.fetchOne(db, sql: "PRAGMA temp_store") }
            #expect(inside == 1)
        }
        #expect(try await Self.tempStore(reopened) == 2)
    }

    @Test("removeAll leaves the writer's statement journals in memory and removes every match")
    func removeAllPutsTempStoreBack() async throws {
        let (w, _) = try await TestWallets.make()
        defer { try? w.close() }
        try await Self.fill(w, 300)
        #expect(try await w.removeAll(type: "t") == 300)
        #expect(try await Self.tempStore(w) == 2)
        #expect(try await w.fetchAll(type: "t").isEmpty)
    }

    @Test("after removing 90% of the records, large deletes give space back and compact returns the rest")
    func spaceComesBack() async throws {
        let (w, url) = try await TestWallets.make()
        defer { try? w.close() }
        try await Self.fill(w, 10_000)
        let full = SQLiteFootprint.bytesOnDisk(url.path)
        let removed = try await w.removeAll(type: "t", matching: WalletQuery(json: #"{"k": {"$neq": "0"}}"#))
        #expect(removed == 9_000)
        let (before, after) = try await w.compact()
        #expect(before >= after)
        #expect(after <= full * 20 / 100, "\(after) bytes after compacting, \(full) full")
        #expect(Self.size(url.path + "-wal") ?? 0 == 0)
        #expect(try await w.count(type: "t") == 1_000)
        #expect(try await w.checkIntegrity().isClean)
    }
}
