// PostgreSQL as an implementation of the wallet's storage seam (`PostgresRows`,
// `PostgresWalletStorage`): the same calls give the same answers as on SQLite, writes hold the
// profile's key gate, reads are one snapshot; and the integrity check, written once over the seam,
// reports the same tampering the same way on both backends.

#if PostgreSQL
import CofferTestSupport
import Foundation
import GRDB
import Testing

@testable import CofferWallet

extension PostgresWalletTests {
    /// Every kind of seam call on `profile`, in one write transaction, with what each answered
    /// (in words, so the two backends' answers compare).
    static func exercise<S: WalletStorage>(_ storage: S, _ profile: ProfileTables) async throws -> [String] {
        try await storage.write(profile) { tx in
            var log = [String]()
            let name = Data(repeating: 1, count: 16)
            guard case .inserted(let a) = try await tx.insertItem(type: 7, name: name, sealed: Data([1, 2, 3]), expiry: nil) else {
                return ["insert failed"]
            }
            log.append("duplicate \(try await tx.insertItem(type: 7, name: name, sealed: Data([9]), expiry: nil) == .duplicate)")
            let tags = [StoredTag(name: 5, value: .plaintext("12")), StoredTag(name: 6, value: .blind(Data(repeating: 2, count: 12)))]
            try await tx.insertTags(item: a, tags + [tags[0]])
            try await tx.insertTags(item: a, [tags[1]])
            log.append("tags \(Set(try await tx.tags(item: a)) == Set(tags.map(tx.storedForm))) \(try await tx.tagRowCount())")
            try await tx.updateSealed(rowid: a, sealed: Data([4]))
            log.append("locate \(try await tx.locate(type: 7, name: name)?.sealed == Data([4]))")
            let expiring = Data(repeating: 3, count: 16)
            let lasting = Data(repeating: 4, count: 16)
            let ids = try await tx.bulkInsert([
                NewStoredItem(type: 8, name: expiring, sealed: Data([5]), expiry: 1, tags: [tags[1]]),
                NewStoredItem(type: 8, name: lasting, sealed: Data([6]), expiry: nil, tags: []),
            ])
            log.append("bulk \(ids.count) \(ids[0] > a && ids[1] > ids[0])")
            log.append(
                "live \(try await tx.locateLive(type: 8, name: expiring, now: 2) == nil) \(try await tx.locateLive(type: 8, name: lasting, now: 2) != nil)"
            )
            log.append("expiry \(try await tx.anyExpiry()) types \(try await tx.containsType(8)) \(!(try await tx.containsType(9)))")
            log.append("counts \(try await tx.itemCount()) \(try await tx.tagRowCount())")
            log.append("walk \(try await tx.items(after: 0, limit: 2).map(\.rowid) == [a, ids[0]])")
            log.append("walk on \(try await tx.items(after: ids[0], limit: 10).map(\.rowid) == [ids[1]])")
            log.append(
                "tags of items \(try await tx.tags(items: [a, ids[0], ids[1]]).mapValues(\.count).sorted { $0.key < $1.key }.map(\.value))")
            try await tx.deleteTag(item: a, tags[0])
            log.append("deleteTag \(try await tx.tags(item: a).count)")
            try await tx.deleteTags(item: ids[0])
            let taken = try await tx.takeItem(type: 7, name: name)
            log.append("take \(taken?.rowid == a) orphans \(try await tx.orphanTagRowCount())")
            if let taken { try await tx.restoreItem(taken) }
            log.append("restored \(try await tx.item(rowid: a)?.sealed == Data([4])) orphans \(try await tx.orphanTagRowCount())")
            log.append("duplicates \(try await tx.duplicateItems(limit: 10).count)")
            try await tx.deleteItem(rowid: ids[1])
            log.append("count \(try await tx.itemCount()) kdf \(try await tx.meta("kdf") != nil)")
            return log
        }
    }

    @Test("every storage-seam call gives on PostgreSQL the answer it gives on SQLite")
    func seamCallsAnswerAsOnSQLite() async throws {
        let (lite, url) = try await TestWallets.make()
        let liteLog = try await Self.exercise(SQLiteWalletStorage(pool: lite.pool, path: url.path), .default)
        try lite.close()
        let wallet = try await PostgresWallet.create(settings: try PostgresTesting.settings("seamcalls"), key: PostgresTesting.key)
        defer { wallet.close() }
        let postgresLog = try await Self.exercise(wallet.storage, wallet.keys.tables)
        #expect(liteLog.count == 15 && !liteLog.contains { $0.contains("false") }, "\(liteLog)")
        #expect(postgresLog == liteLog)
    }

    @Test(
        "a seam write holds the profile's key gate: after another wallet rotated the key it is refused as wrongKey and keeps nothing; a seam read fails so too"
    )
    func seamWriteHoldsTheGate() async throws {
        let (settings, stale, rotator) = try await Self.twoWriters("seamgate", count: 3)
        defer { stale.close() }
        try await rotator.rekey(to: PostgresTesting.otherKey, rotatingKey: true)
        rotator.close()
        do {
            _ = try await stale.storage.write(stale.keys.tables) { tx in
                try await tx.insertItem(type: 1, name: Data(repeating: 9, count: 16), sealed: Data([1]), expiry: nil)
            }
            Issue.record("the stale write was not refused")
        } catch WalletError.wrongKey {
        } catch {
            Issue.record("refused with \(error), not wrongKey")
        }
        let current = try await PostgresWallet.open(settings: settings, key: PostgresTesting.otherKey)
        defer { current.close() }
        let count = try await current.storage.read(current.keys.tables) { tx in try await tx.itemCount() }
        #expect(count == 3)
        // Its maintenance reads (check, export) are refused the same way, not run under a lost key.
        await #expect(throws: WalletError.self) { _ = try await stale.checkIntegrity() }
        do {
            _ = try await stale.checkIntegrity()
        } catch WalletError.wrongKey(let message) {
            #expect(message.contains("rotated"), "\(message)")
        }
    }

    @Test("a seam read is one snapshot: a record committed meanwhile is not seen by it")
    func seamReadIsOneSnapshot() async throws {
        let (_, reader, writer) = try await Self.twoWriters("seamsnapshot", count: 3)
        defer {
            reader.close()
            writer.close()
        }
        let counts = try await reader.storage.read(reader.keys.tables) { tx in
            let before = try await tx.itemCount()
            try await writer.add(type: "cred", id: "new", value: "v")
            return [before, try await tx.itemCount()]
        }
        #expect(counts == [3, 3])
        #expect(try await reader.count(type: "cred") == 4)
    }

    /// The records both backends hold before the tampering.
    static func addCheckRecords(_ add: (String, String, WalletTags) async throws -> Void) async throws {
        try await add("t", "a", ["e": "1", "~p": ["x", "y"]])
        try await add("t", "b", ["e": "2"])
        try await add("u", "c", [:])
    }

    @Test("the same tampering from outside (sqlite3, psql) gives the same check report on SQLite and PostgreSQL, the digest aside")
    func sameTamperingSameReport() async throws {
        // SQLite: changed with the sqlite3 tool, which lacks the wallet's keyed digest function,
        // so the digest trigger is dropped for the update and put back as it was.
        let (lite, url) = try await TestWallets.make()
        try await Self.addCheckRecords { type, id, tags in try await lite.add(type: type, id: id, value: "v", tags: tags) }
        try lite.close()
        let sqlite3 = URL(fileURLWithPath: "/usr/bin/sqlite3")
        let trigger = try runProcessBlocking(sqlite3, [url.path, "SELECT sql FROM sqlite_master WHERE name = 'coffer_digest_update'"])
        #expect(trigger.status == 0, "\(trigger.stderr)")
        let liteTamper = try runProcessBlocking(
            sqlite3,
            [
                url.path,
                """
                BEGIN;
                DROP TRIGGER coffer_digest_update;
                UPDATE items SET value = zeroblob(length(value)) WHERE id = (SELECT MIN(id) FROM items);
                \(trigger.stdout.trimmingCharacters(in: .whitespacesAndNewlines));
                DELETE FROM tags WHERE item = (SELECT id FROM items ORDER BY id LIMIT 1 OFFSET 1);
                INSERT INTO tags(item, name, value) VALUES (999999, 1, x'00');
                COMMIT;
                """,
            ])
        #expect(liteTamper.status == 0, "\(liteTamper.stderr)")
        let reopened = try await Wallet.open(at: url, key: .raw(TestWallets.rawKey))
        let liteReport = try await reopened.checkIntegrity()
        try reopened.close()

        let settings = try PostgresTesting.settings("seamcheck")
        let wallet = try await PostgresWallet.create(settings: settings, key: PostgresTesting.key)
        try await Self.addCheckRecords { type, id, tags in try await wallet.add(type: type, id: id, value: "v", tags: tags) }
        wallet.close()
        let endpoint = try PostgresTestServer.endpoint()
        let psql = try runProcessBlocking(
            URL(fileURLWithPath: endpoint.binFolder + "/psql"),
            [
                "-h", endpoint.socketFolder, "-p", "\(endpoint.port)", "-U", endpoint.user, "-d", settings.database, "-v",
                "ON_ERROR_STOP=1",
                "-c",
                """
                BEGIN;
                UPDATE coffer_items SET value = decode(repeat('00', length(value)), 'hex') WHERE id = (SELECT min(id) FROM coffer_items);
                DELETE FROM coffer_tags WHERE item = (SELECT id FROM coffer_items ORDER BY id LIMIT 1 OFFSET 1);
                INSERT INTO coffer_tags(item, profile, name, value) VALUES (999999, 0, 1, '\\x00');
                COMMIT;
                """,
            ])
        #expect(psql.status == 0, "\(psql.stderr)")
        let checked = try await PostgresWallet.open(settings: settings, key: PostgresTesting.key)
        let postgresReport = try await checked.checkIntegrity()
        checked.close()

        #expect(postgresReport.problems.map(\.kind) == ["record", "missingTagRow", "orphanTagRow"], "\(postgresReport.problems)")
        #expect(liteReport.problems.map(\.kind) == ["record", "missingTagRow", "digest", "orphanTagRow"], "\(liteReport.problems)")
        // Problem for problem (kind, record, words), but for the digest only a wallet file keeps.
        #expect(postgresReport.problems == liteReport.problems.filter { $0.kind != "digest" })
        #expect(postgresReport.records == liteReport.records && postgresReport.tagRows == liteReport.tagRows)
    }
}
#endif
