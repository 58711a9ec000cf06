// Encryption at rest, keys, tampering and rekey.

import CofferCrypto
import CofferWallet
import Foundation
import GRDB
import Testing

@Suite("Encryption at rest and keys")
struct SecurityTests {
    static let secrets = ["TypeSecretQ7", "IdSecretQ7", "ValueSecretQ7", "TagNameSecretQ7", "TagValueSecretQ7", "ListValueSecretQ7"]

    @Test("the wallet's files hold no plaintext type, id, value, or encrypted tag name or value")
    func noPlaintextOnDisk() async throws {
        let (w, url) = try await TestWallets.make()
        try await w.add(
            type: "TypeSecretQ7", id: "IdSecretQ7", value: "ValueSecretQ7",
            tags: ["TagNameSecretQ7": "TagValueSecretQ7", "multi": ["ListValueSecretQ7", "x"], "~plainName": "PlainValueVisibleQ7"])
        try await w.update(type: "TypeSecretQ7", id: "IdSecretQ7", value: "ValueSecretQ7 updated")
        try await w.addTags(type: "TypeSecretQ7", id: "IdSecretQ7", tags: ["TagNameSecretQ7": "TagValueSecretQ7"])
        try w.close()
        let bytes = TestWallets.fileBytes(url)
        for secret in Self.secrets {
            #expect(bytes.range(of: Data(secret.utf8)) == nil, "\(secret) found on disk")
        }
        // The scan itself works: a plaintext (~) tag value is meant to be readable.
        #expect(bytes.range(of: Data("PlainValueVisibleQ7".utf8)) != nil)
    }

    @Test("another raw key is refused as wrongKey")
    func wrongRawKey() async throws {
        let (w, url) = try await TestWallets.make()
        try await w.add(type: "t", id: "1", value: "v")
        try w.close()
        var other = TestWallets.rawKey
        other[0] ^= 1
        await #expect(throws: WalletError.self) { try await Wallet.open(at: url, key: .raw(other)) }
        do { _ = try await Wallet.open(at: url, key: .raw(other)) } catch let e as WalletError {
            guard case .wrongKey = e else {
                Issue.record("expected wrongKey, got \(e)")
                return
            }
        }
    }

    @Test("a wrong passphrase is refused as wrongKey")
    func wrongPassphrase() async throws {
        let (w, url) = try await TestWallets.make(key: .passphrase("right one"))
        try w.close()
        do {
            _ = try await Wallet.open(at: url, key: .passphrase("wrong one"))
            Issue.record("opened with a wrong passphrase")
        } catch let e as WalletError {
            guard case .wrongKey = e else {
                Issue.record("expected wrongKey, got \(e)")
                return
            }
        }
    }

    @Test("a raw key for a passphrase wallet is refused as wrongKey")
    func methodMismatch() async throws {
        let (w, url) = try await TestWallets.make(key: .passphrase("p"))
        try w.close()
        do {
            _ = try await Wallet.open(at: url, key: .raw(TestWallets.rawKey))
            Issue.record("opened")
        } catch let e as WalletError {
            guard case .wrongKey = e else {
                Issue.record("expected wrongKey, got \(e)")
                return
            }
        }
    }

    @Test("a wallet made with other Argon2id costs opens with the costs stored in it")
    func storedParameters() async throws {
        var config = Wallet.Configuration()
        config.passphraseParameters = Argon2idParameters(opsLimit: 2, memLimit: 16 << 20)
        let (w, url) = try await TestWallets.make(key: .passphrase("p"), configuration: config)
        try await w.add(type: "t", id: "1", value: "v")
        try w.close()
        let reopened = try await Wallet.open(at: url, key: .passphrase("p"), configuration: TestWallets.fastConfiguration)
        #expect(try await reopened.get(type: "t", id: "1").value == "v")
        try reopened.close()
    }

    @Test("a raw key that is not 32 bytes is invalid input")
    func shortRawKey() async {
        let url = TestWallets.folder().appendingPathComponent("w.sqlite")
        await #expect(throws: WalletError.invalidInput("a raw key must be 32 bytes, got 31")) {
            try await Wallet.create(at: url, key: .raw(Data(count: 31)))
        }
    }

    @Test("creating over an existing wallet is refused")
    func createTwice() async throws {
        let (w, url) = try await TestWallets.make()
        try w.close()
        await #expect(throws: WalletError.walletExists(path: url.path)) { try await Wallet.create(at: url, key: .raw(TestWallets.rawKey)) }
    }

    @Test("opening where there is no wallet is walletMissing")
    func openMissing() async {
        let url = TestWallets.folder().appendingPathComponent("none.sqlite")
        await #expect(throws: WalletError.walletMissing(path: url.path)) { try await Wallet.open(at: url, key: .raw(TestWallets.rawKey)) }
    }

    @Test("a file that is not a database reads as corrupted")
    func garbageFile() async throws {
        let url = TestWallets.folder().appendingPathComponent("garbage.sqlite")
        try Data(repeating: 0x42, count: 8192).write(to: url)
        do {
            _ = try await Wallet.open(at: url, key: .raw(TestWallets.rawKey))
            Issue.record("opened garbage")
        } catch let e as WalletError {
            guard case .corrupted = e else {
                Issue.record("expected corrupted, got \(e)")
                return
            }
        }
    }

    @Test("a tampered record reads as corrupted")
    func tamperedValue() async throws {
        let (w, url) = try await TestWallets.make()
        try await w.add(type: "t", id: "1", value: "v")
        try w.close()
        let db = try TestWallets.attackerQueue(url)
        try await db.write { db in
            var blob = try Data.fetchOne(db, sql: "SELECT value FROM items")!
            blob[blob.count / 2] ^= 0x01
            try db.execute(sql: "UPDATE items SET value = ?", arguments: [blob])
        }
        try db.close()
        let reopened = try await Wallet.open(at: url, key: .raw(TestWallets.rawKey))
        defer { try? reopened.close() }
        do {
            _ = try await reopened.get(type: "t", id: "1")
            Issue.record("read a tampered record")
        } catch let e as WalletError {
            guard case .corrupted = e else {
                Issue.record("expected corrupted, got \(e)")
                return
            }
        }
    }

    @Test("a record box moved to another row reads as corrupted")
    func swappedRows() async throws {
        let (w, url) = try await TestWallets.make()
        try await w.add(type: "t", id: "a", value: "va")
        try await w.add(type: "t", id: "b", value: "vb")
        try w.close()
        let db = try TestWallets.attackerQueue(url)
        try await db.write { db in
            let a = try Data.fetchOne(db, sql: "SELECT value FROM items ORDER BY id LIMIT 1")!
            try db.execute(sql: "UPDATE items SET value = ? WHERE id = (SELECT MAX(id) FROM items)", arguments: [a])
        }
        try db.close()
        let reopened = try await Wallet.open(at: url, key: .raw(TestWallets.rawKey))
        defer { try? reopened.close() }
        do {
            _ = try await reopened.get(type: "t", id: "b")
            Issue.record("read a record moved from another row")
        } catch let e as WalletError {
            guard case .corrupted = e else {
                Issue.record("expected corrupted, got \(e)")
                return
            }
        }
    }

    @Test("a tampered tag index row is caught by the search as corrupted")
    func tamperedTagRow() async throws {
        let (w, url) = try await TestWallets.make()
        try await w.add(type: "t", id: "red", value: "v", tags: ["color": "red"])
        try await w.add(type: "t", id: "blue", value: "v", tags: ["color": "blue"])
        try w.close()
        let db = try TestWallets.attackerQueue(url)
        try await db.write { db in
            // Point blue's tag row at red's blind value: the index now claims blue is red.
            let red = try Data.fetchOne(db, sql: "SELECT value FROM tags WHERE item = (SELECT MIN(id) FROM items)")!
            try db.execute(sql: "UPDATE tags SET value = ? WHERE item = (SELECT MAX(id) FROM items)", arguments: [red])
        }
        try db.close()
        let reopened = try await Wallet.open(at: url, key: .raw(TestWallets.rawKey))
        defer { try? reopened.close() }
        do {
            _ = try await reopened.fetchAll(type: "t", matching: WalletQuery(json: #"{"color": "red"}"#))
            Issue.record("search trusted a tampered index")
        } catch let e as WalletError {
            guard case .corrupted = e else {
                Issue.record("expected corrupted, got \(e)")
                return
            }
        }
    }

    @Test("rekey to a passphrase keeps every record; the old key no longer opens")
    func rekey() async throws {
        let (w, url) = try await TestWallets.make()
        try await w.transaction { txn in
            for i in 0..<200 { try txn.add(type: "t", id: "\(i)", value: "v\(i)", tags: ["n": .string(String(i % 7))]) }
        }
        try await w.rekey(to: .passphrase("new passphrase"))
        try w.close()
        await #expect(throws: WalletError.self) { try await Wallet.open(at: url, key: .raw(TestWallets.rawKey)) }
        let reopened = try await Wallet.open(at: url, key: .passphrase("new passphrase"))
        defer { try? reopened.close() }
        #expect(try await reopened.count(type: "t") == 200)
        #expect(try await reopened.get(type: "t", id: "123").value == "v123")
        #expect(try await reopened.count(type: "t", matching: WalletQuery(json: #"{"n": "3"}"#)) == 200 / 7 + (3 < 200 % 7 ? 1 : 0))
    }

    @Test("rekey back to a raw key works")
    func rekeyToRaw() async throws {
        let (w, url) = try await TestWallets.make(key: .passphrase("p"))
        try await w.add(type: "t", id: "1", value: "v")
        let newKey = WalletKey.generateRawKey()
        try await w.rekey(to: .raw(newKey))
        try w.close()
        let reopened = try await Wallet.open(at: url, key: .raw(newKey))
        defer { try? reopened.close() }
        #expect(try await reopened.get(type: "t", id: "1").value == "v")
    }

    @Test("a wallet key never shows its secret in description, debugDescription or dump")
    func keyDescription() {
        let key = WalletKey.passphrase("hunter2")
        #expect("\(key)" == "WalletKey.passphrase(redacted)")
        #expect(!String(reflecting: key).contains("hunter2"))
        var dumped = ""
        dump(key, to: &dumped)
        #expect(!dumped.contains("hunter2"))
        var dumpedRaw = ""
        dump(WalletKey.raw(Data(repeating: 0xAB, count: 32)), to: &dumpedRaw)
        #expect(!dumpedRaw.contains("171") && !dumpedRaw.lowercased().contains("ab"))
    }

    @Test("the file is in WAL mode")
    func durability() async throws {
        let (w, url) = try await TestWallets.make()
        try await w.add(type: "t", id: "1", value: "v")
        try w.close()
        let db = try TestWallets.attackerQueue(url)
        defer { try? db.close() }
        #expect(try await db.read { try String.fetchOne($0, sql: "PRAGMA journal_mode") } == "wal")
    }
}
