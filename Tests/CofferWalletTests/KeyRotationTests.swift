// rekey(to:rotatingKey: true): a new wallet key, every record re-sealed and re-indexed.

import CofferCrypto
import Foundation
import GRDB
import Testing

@testable import CofferWallet

@Suite("Key rotation")
struct KeyRotationTests {
    static let newKey = WalletKey.raw(Data(repeating: 7, count: 32))

    /// A wallet with 300 records of two types (tags encrypted and plaintext, some expiring), a
    /// key pair and the master secret.
    static func filled() async throws -> (Wallet, URL) {
        let (w, url) = try await TestWallets.make()
        try await w.transaction { tx in
            for i in 0..<300 {
                try tx.add(
                    type: i % 3 == 0 ? "b" : "a", id: "r\(i)", value: "value \(i)",
                    tags: ["color": i % 2 == 0 ? "red" : "blue", "~n": .string(String(i))],
                    expiresAt: i % 10 == 0 ? Date().addingTimeInterval(3_600) : nil)
            }
        }
        _ = try await w.createKey(.ed25519)
        return (w, url)
    }

    static func snapshot(_ w: Wallet) async throws -> [String] {
        var out = [String]()
        for type in ["a", "b"] {
            for r in try await w.fetchAll(type: type) { out.append("\(type)/\(r.id)=\(r.value ?? "")|\(r.tags?.jsonValue.jsonText ?? "")") }
        }
        return out.sorted()
    }

    /// Makes each call and records an issue unless it fails with `wrongKey` saying `phrase`.
    static func expectWrongKey(_ calls: [(String, @Sendable () async throws -> Void)], saying phrase: String) async {
        for (name, call) in calls {
            do {
                try await call()
                Issue.record("\(name) with the keys from before the rotation succeeded")
            } catch let error as WalletError {
                guard case .wrongKey(let message) = error else {
                    Issue.record("\(name): expected wrongKey, got \(error)")
                    continue
                }
                #expect(message.contains(phrase), "\(name): \(message)")
            } catch {
                Issue.record("\(name): expected wrongKey, got \(error)")
            }
        }
    }

    @Test("a second wallet opened on the file before another rotated it writes nothing with its old key: add and rekey are refused")
    func staleOpenRefusesWrites() async throws {
        let (w, url) = try await Self.filled()
        let stale = try await Wallet.open(at: url, key: .raw(TestWallets.rawKey), configuration: TestWallets.fastConfiguration)
        defer { try? stale.close() }
        try await w.rekey(to: Self.newKey, rotatingKey: true)
        try w.close()
        await Self.expectWrongKey(
            [
                ("add", { try await stale.add(type: "a", id: "late", value: "v") }),
                ("rekey", { try await stale.rekey(to: .raw(TestWallets.rawKey)) }),
            ], saying: "rotated")
        let fresh = try await Wallet.open(at: url, key: Self.newKey, configuration: TestWallets.fastConfiguration)
        defer { try? fresh.close() }
        #expect(try await fresh.checkIntegrity().isClean)
        #expect(try await fresh.fetch(type: "a", id: "late") == nil)
        #expect(try await fresh.count(type: "a") + fresh.count(type: "b") == 300)
    }

    @Test(
        "a wallet that has written since it opened is still refused on every kind of write once another wallet rotated the key (its writer's key check is not skipped)"
    )
    func staleWriterRefusedAfterWriting() async throws {
        let (w, url) = try await Self.filled()
        let stale = try await Wallet.open(at: url, key: .raw(TestWallets.rawKey), configuration: TestWallets.fastConfiguration)
        defer { try? stale.close() }
        // Each kind of write passes once, so the stale wallet's writer has checked the key.
        try await stale.add(type: "a", id: "early", value: "v")
        try await stale.replace(type: "a", id: "r1", value: "replaced", tags: [:])
        try await stale.transaction { try $0.delete(type: "a", id: "r2") }
        try await stale.transaction { (tx: AsyncWalletTransaction) in try await tx.add(type: "a", id: "early-async", value: "v") }
        try await w.rekey(to: Self.newKey, rotatingKey: true)
        try w.close()
        let writes: [(String, @Sendable () async throws -> Void)] = [
            ("add", { try await stale.add(type: "a", id: "late", value: "v") }),
            ("replace", { try await stale.replace(type: "a", id: "r4", value: "late", tags: [:]) }),
            ("delete", { try await stale.delete(type: "a", id: "r5") }),
            ("transaction", { try await stale.transaction { try $0.add(type: "a", id: "late-txn", value: "v") } }),
            (
                "async transaction",
                {
                    try await stale.transaction { (tx: AsyncWalletTransaction) in
                        try await tx.add(type: "a", id: "late-async", value: "v")
                    }
                }
            ),
        ]
        await Self.expectWrongKey(writes, saying: "rotated")
        let fresh = try await Wallet.open(at: url, key: Self.newKey, configuration: TestWallets.fastConfiguration)
        defer { try? fresh.close() }
        #expect(try await fresh.checkIntegrity().isClean)
        for id in ["late", "late-txn", "late-async"] { #expect(try await fresh.fetch(type: "a", id: id) == nil) }
        #expect(try await fresh.fetch(type: "a", id: "r4")?.value == "value 4")
        #expect(try await fresh.fetch(type: "a", id: "r5") != nil)
        #expect(try await fresh.fetch(type: "a", id: "early")?.value == "v")
    }

    @Test("a second wallet opened on the file before another rotated it reads with a clear wrongKey, not corrupted")
    func staleOpenReadsSayRotated() async throws {
        let (w, url) = try await Self.filled()
        let stale = try await Wallet.open(at: url, key: .raw(TestWallets.rawKey), configuration: TestWallets.fastConfiguration)
        defer { try? stale.close() }
        #expect(try await stale.fetch(type: "a", id: "r1")?.value == "value 1")
        try await w.rekey(to: Self.newKey, rotatingKey: true)
        try w.close()
        let reads: [(String, @Sendable () async throws -> Void)] = [
            ("fetch", { _ = try await stale.fetch(type: "a", id: "r1") }),
            ("fetchAll", { _ = try await stale.fetchAll(type: "a") }),
            ("count", { _ = try await stale.count(type: "a") }),
            ("session", { _ = try await stale.session { try $0.get(type: "a", id: "r1") } }),
        ]
        await Self.expectWrongKey(reads, saying: "rotated by another process")
    }

    @Test(
        "a second wallet opened on the file before another rotated it gets wrongKey from a search that finds nothing, not an empty page"
    )
    func staleOpenSearchesSayRotated() async throws {
        let (w, url) = try await Self.filled()
        let stale = try await Wallet.open(at: url, key: .raw(TestWallets.rawKey), configuration: TestWallets.fastConfiguration)
        defer { try? stale.close() }
        #expect(try await stale.search(type: "a", matching: .all, count: 1).records?.count == 1)
        try await w.rekey(to: Self.newKey, rotatingKey: true)
        try w.close()
        let searches: [(String, @Sendable () async throws -> Void)] = [
            ("search", { _ = try await stale.search(type: "a", matching: .all) }),
            (
                "search, count only",
                {
                    _ = try await stale.search(
                        type: "a", matching: .all, options: SearchOptions(retrieveRecords: false, retrieveTotalCount: true))
                }
            ),
            (
                "search handle",
                {
                    let handle = try await stale.openSearch(type: "a", queryJSON: "{}", optionsJSON: #"{"retrieveTotalCount": false}"#)
                    _ = try await stale.searchNext(handle, count: 10)
                }
            ),
            (
                "search handle with its count",
                { _ = try await stale.openSearch(type: "a", queryJSON: "{}", optionsJSON: #"{"retrieveTotalCount": true}"#) }
            ),
            ("record sequence", { for try await _ in stale.records(type: "a", matching: .all) {} }),
        ]
        await Self.expectWrongKey(searches, saying: "rotated by another process")
    }

    @Test(
        "a rekey or rotation by a wallet opened before another wallet rekeyed the file is refused with wrongKey, so the key the first set still opens it",
        arguments: [false, true])
    func staleRekeyRefused(rotating: Bool) async throws {
        let (w, url) = try await Self.filled()
        defer { try? w.close() }
        let stale = try await Wallet.open(at: url, key: .raw(TestWallets.rawKey), configuration: TestWallets.fastConfiguration)
        defer { try? stale.close() }
        let other = WalletKey.raw(Data(repeating: 9, count: 32))
        try await w.rekey(to: Self.newKey)
        await Self.expectWrongKey(
            [("rekey", { try await stale.rekey(to: other, rotatingKey: rotating) })], saying: "changed (by a rekey in another process")
        // The stale wallet still writes (a plain rekey keeps the wallet key), and its writes stay readable.
        try await stale.add(type: "a", id: "after", value: "v")
        try w.close()
        try stale.close()
        await #expect(throws: WalletError.self) { try await Wallet.open(at: url, key: other, configuration: TestWallets.fastConfiguration) }
        let fresh = try await Wallet.open(at: url, key: Self.newKey, configuration: TestWallets.fastConfiguration)
        defer { try? fresh.close() }
        #expect(try await fresh.fetch(type: "a", id: "after")?.value == "v")
        #expect(try await fresh.checkIntegrity().isClean)
    }

    @Test("one wallet rekeyed twice in a row ends under the second key")
    func rekeyTwiceInARow() async throws {
        let (w, url) = try await Self.filled()
        let second = WalletKey.raw(Data(repeating: 9, count: 32))
        try await w.rekey(to: Self.newKey)
        try await w.rekey(to: second, rotatingKey: true)
        try await w.rekey(to: Self.newKey)
        try w.close()
        let fresh = try await Wallet.open(at: url, key: Self.newKey, configuration: TestWallets.fastConfiguration)
        defer { try? fresh.close() }
        #expect(try await fresh.count(type: "a") + fresh.count(type: "b") == 300)
    }

    @Test("a second wallet opened on the file before another rotated it gets wrongKey from check and export, not a report of damage")
    func staleOpenCheckAndExportSayRotated() async throws {
        let (w, url) = try await Self.filled()
        let stale = try await Wallet.open(at: url, key: .raw(TestWallets.rawKey), configuration: TestWallets.fastConfiguration)
        defer { try? stale.close() }
        try await w.rekey(to: Self.newKey, rotatingKey: true)
        try w.close()
        let backup = TestWallets.folder().appendingPathComponent("stale.backup")
        await Self.expectWrongKey(
            [
                ("check", { _ = try await stale.checkIntegrity() }),
                ("export", { try await stale.exportBackup(to: backup, passphrase: "p", parameters: BackupKey.floor) }),
            ], saying: "rotated by another process")
        #expect(!FileManager.default.fileExists(atPath: backup.path))
    }

    @Test("after rotation every record, tag search, count and key reads as before, and the wallet check is clean")
    func keepsEverything() async throws {
        let (w, _) = try await Self.filled()
        defer { try? w.close() }
        let before = try await Self.snapshot(w)
        let keysBefore = try await w.listKeys()
        let range = try WalletQuery(json: #"{"~n": {"$lt": "2"}}"#)
        let rangeBefore = try await w.fetchAll(type: "a", matching: range).map(\.id)
        #expect(!rangeBefore.isEmpty)
        try await w.rekey(to: Self.newKey, rotatingKey: true)
        #expect(try await Self.snapshot(w) == before)
        #expect(try await w.listKeys() == keysBefore)
        #expect(try await w.count(type: "a", matching: WalletQuery(json: #"{"color": "red"}"#)) == 100)
        #expect(try await w.fetchAll(type: "a", matching: range).map(\.id) == rangeBefore)
        #expect(try await w.checkIntegrity().isClean)
    }

    @Test("after rotation no row opens with the old wallet key, and the file's blinds all changed")
    func oldKeyOpensNothing() async throws {
        let (w, _) = try await Self.filled()
        defer { try? w.close() }
        let old = w.keys
        let oldNames = Set(try await w.pool.read { db in try Data.fetchAll(db, sql: "SELECT name FROM items") })
        try await w.rekey(to: Self.newKey, rotatingKey: true)
        #expect(w.keys !== old)
        let rows = try w.pool.read { db in try Row.fetchAll(db, sql: "SELECT type, name, value, expiry FROM items") }
        #expect(rows.count == 301) // 300 records and one key
        var opened = 0
        for row in rows {
            if (try? RecordCodec.open(row[2], typeBlind: BlindColumn.blind(row[0]), idBlind: row[1], expiry: row[3], keys: old)) != nil {
                opened += 1
            }
        }
        #expect(opened == 0)
        #expect(oldNames.isDisjoint(with: rows.map { $0[1] as Data }))
    }

    @Test("the old key with an old copy of the sealed key and integrity record opens nothing: the file is refused as corrupted")
    func oldWrappedKeyIsUseless() async throws {
        let (w, url) = try await Self.filled()
        let oldMeta = try await w.pool.read { db in
            try Row.fetchAll(db, sql: "SELECT name, value FROM coffer_meta WHERE name IN ('kdf', 'keys', 'integrity')").map {
                ($0[0] as String, $0[1] as Data)
            }
        }
        try await w.rekey(to: Self.newKey, rotatingKey: true)
        try await w.add(type: "a", id: "later", value: "written after rotation")
        try w.close()
        // Whoever kept the old sealed key puts it back and opens with the old key.
        let db = try TestWallets.attackerQueue(url)
        try await db.write { db in
            for (name, value) in oldMeta {
                try db.execute(sql: "UPDATE coffer_meta SET value = ? WHERE name = ?", arguments: [value, name])
            }
        }
        try db.close()
        // The old key opens the old sealed key and verifies the old integrity record, but the
        // digest was sealed under the new key.
        do {
            let reopened = try await Wallet.open(at: url, key: .raw(TestWallets.rawKey))
            try reopened.close()
            Issue.record("the old key opened the rotated file")
        } catch let WalletError.corrupted(message) {
            #expect(message.contains("digest does not verify"), "\(message)")
        }
    }

    @Test("the new key opens the rotated file after a reopen; the old key is refused")
    func reopen() async throws {
        let (w, url) = try await Self.filled()
        try await w.rekey(to: Self.newKey, rotatingKey: true)
        try w.close()
        await #expect(throws: WalletError.self) { try await Wallet.open(at: url, key: .raw(TestWallets.rawKey)).close() }
        let reopened = try await Wallet.open(at: url, key: Self.newKey)
        defer { try? reopened.close() }
        #expect(try await reopened.get(type: "b", id: "r0").value == "value 0")
        #expect(try await reopened.checkIntegrity().isClean)
    }

    @Test("open searches end with rotation: their handles are invalid afterwards")
    func searchesEnd() async throws {
        let (w, _) = try await Self.filled()
        defer { try? w.close() }
        let handle = try await w.openSearch(type: "a", query: .all)
        try await w.rekey(to: Self.newKey, rotatingKey: true)
        await #expect(throws: WalletError.invalidHandle(handle)) { _ = try await w.searchNext(handle, count: 10) }
    }

    @Test("a record sequence made before rotation fails with a clear error instead of reading with stale blinds")
    func sequenceIsStale() async throws {
        let (w, _) = try await Self.filled()
        defer { try? w.close() }
        let sequence = w.records(type: "a", pageSize: 10)
        try await w.rekey(to: Self.newKey, rotatingKey: true)
        do {
            for try await _ in sequence {}
            Issue.record("a stale sequence ran")
        } catch let error as WalletError {
            #expect(error.description.contains("rotated"))
        }
    }

    @Test("reads and writes running during rotation see either the old or the new state, never a mix")
    func concurrentCalls() async throws {
        let (w, _) = try await Self.filled()
        defer { try? w.close() }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for t in 0..<4 {
                group.addTask {
                    for i in 0..<50 {
                        #expect(try await w.get(type: "a", id: "r1").value == "value 1")
                        #expect(try await w.count(type: "b") == 100)
                        try await w.add(type: "c", id: "t\(t)-\(i)", value: "x", tags: ["k": "v"])
                    }
                }
            }
            group.addTask { try await w.rekey(to: Self.newKey, rotatingKey: true) }
            try await group.waitForAll()
        }
        #expect(try await w.count(type: "c", matching: WalletQuery(json: #"{"k": "v"}"#)) == 200)
        #expect(try await w.checkIntegrity().isClean)
    }

    @Test("a rotation that fails changes nothing: the old key still opens every record")
    func failureChangesNothing() async throws {
        let (w, url) = try await Self.filled()
        // A first-format box whose type no other record names makes rotation refuse.
        try await w.add(type: "lonely", id: "x", value: "v")
        try await LegacyBoxes.replace(in: w, type: "lonely", id: "x", format: 1, sealedType: nil, value: "v", tags: [:])
        let before = try await Self.snapshot(w)
        await #expect(throws: WalletError.self) { try await w.rekey(to: Self.newKey, rotatingKey: true) }
        #expect(try await Self.snapshot(w) == before)
        #expect(try await w.get(type: "lonely", id: "x").value == "v")
        #expect(try await w.checkIntegrity().isClean)
        try w.close()
        let reopened = try await Wallet.open(at: url, key: .raw(TestWallets.rawKey))
        defer { try? reopened.close() }
        #expect(try await Self.snapshot(reopened) == before)
    }

    @Test("a first-format box is rotated when another record tells its type")
    func firstFormatWithKnownType() async throws {
        let (w, _) = try await Self.filled()
        defer { try? w.close() }
        try await LegacyBoxes.replace(in: w, type: "a", id: "r1", format: 1, sealedType: nil, value: "old", tags: ["color": "blue"])
        try await w.rekey(to: Self.newKey, rotatingKey: true)
        #expect(try await w.get(type: "a", id: "r1").value == "old")
        #expect(try await w.checkIntegrity().isClean)
    }

    @Test("plain rekey rewrites no record box")
    func plainRekeyIsConstant() async throws {
        let (w, _) = try await Self.filled()
        defer { try? w.close() }
        let boxes = try await w.pool.read { db in try Data.fetchAll(db, sql: "SELECT value FROM items ORDER BY id") }
        try await w.rekey(to: Self.newKey)
        #expect(try await w.pool.read { db in try Data.fetchAll(db, sql: "SELECT value FROM items ORDER BY id") } == boxes)
    }

    /// A copy of the main file alone, as taken right after a key change (no WAL).
    static func copyMainFile(_ url: URL) throws -> URL {
        let copy = TestWallets.folder().appendingPathComponent("wallet.sqlite")
        try FileManager.default.copyItem(at: url, to: copy)
        return copy
    }

    @Test("right after rekey the main file alone (copied without its WAL) no longer opens with the old key", arguments: [false, true])
    func mainFileForgetsOldKey(rotating: Bool) async throws {
        let (w, url) = try await TestWallets.make()
        defer { try? w.close() }
        try await w.add(type: "t", id: "a", value: "v")
        try await w.rekey(to: Self.newKey, rotatingKey: rotating)
        let copy = try Self.copyMainFile(url)
        do {
            try await Wallet.open(at: copy, key: .raw(TestWallets.rawKey)).close()
            Issue.record("the old key opened the main file copied after the key change")
        } catch let error as WalletError {
            guard case .wrongKey = error else {
                Issue.record("expected wrongKey, got \(error)")
                return
            }
        }
        let reopened = try await Wallet.open(at: copy, key: Self.newKey)
        defer { try? reopened.close() }
        #expect(try await reopened.get(type: "t", id: "a").value == "v")
    }
}
