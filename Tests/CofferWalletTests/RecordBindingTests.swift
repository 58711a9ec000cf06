// What a record's box is bound to: its expiry (format 3), and its sealed type, which reads and
// searches compare with the type they asked for. Old boxes (expiry not bound) still read.

import CofferCrypto
import Foundation
import GRDB
import Testing

@testable import CofferWallet

@Suite("Record binding: expiry and type")
struct RecordBindingTests {
    static let later = Date().addingTimeInterval(3_600)

    /// A wallet holding t/a with an expiry an hour away and t/b with none, closed.
    static func wallet() async throws -> URL {
        let (w, url) = try await TestWallets.make()
        try await w.add(type: "t", id: "a", value: "va", tags: ["k": "x"], expiresAt: later)
        try await w.add(type: "t", id: "b", value: "vb", tags: ["k": "x"])
        try w.close()
        return url
    }

    /// Sets a row's expiry column as someone who can write the file but has no key.
    static func setExpiry(_ url: URL, id: String, to expiry: Int64?) async throws {
        let w = try await Wallet.open(at: url, key: .raw(TestWallets.rawKey))
        let name = w.keys.idBlind(typeBlind: w.keys.typeBlind("t"), id: id)
        try w.close()
        let db = try TestWallets.attackerQueue(url)
        try await db.write { db in
            try db.execute(sql: "UPDATE items SET expiry = ? WHERE name = ?", arguments: [expiry, name])
            #expect(db.changesCount == 1)
        }
        try db.close()
    }

    static func expectCorrupted(_ body: () async throws -> Void) async {
        do {
            try await body()
            Issue.record("expected corrupted, but the call succeeded")
        } catch let error as WalletError {
            guard case .corrupted = error else {
                Issue.record("expected corrupted, got \(error)")
                return
            }
        } catch { Issue.record("expected a WalletError, got \(error)") }
    }

    @Test("an extended expiry reads as corrupted, by get and by search")
    func extendedExpiry() async throws {
        let url = try await Self.wallet()
        try await Self.setExpiry(url, id: "a", to: unixMillis(Date().addingTimeInterval(86_400 * 365)))
        let w = try await Wallet.open(at: url, key: .raw(TestWallets.rawKey))
        defer { try? w.close() }
        await Self.expectCorrupted { _ = try await w.get(type: "t", id: "a") }
        await Self.expectCorrupted { _ = try await w.fetchAll(type: "t", matching: WalletQuery(json: #"{"k": "x"}"#)) }
    }

    @Test("a removed expiry reads as corrupted")
    func removedExpiry() async throws {
        let url = try await Self.wallet()
        try await Self.setExpiry(url, id: "a", to: nil)
        let w = try await Wallet.open(at: url, key: .raw(TestWallets.rawKey))
        defer { try? w.close() }
        await Self.expectCorrupted { _ = try await w.get(type: "t", id: "a") }
    }

    @Test("an expiry given to a record that had none reads as corrupted")
    func addedExpiry() async throws {
        let url = try await Self.wallet()
        try await Self.setExpiry(url, id: "b", to: unixMillis(Self.later))
        let w = try await Wallet.open(at: url, key: .raw(TestWallets.rawKey))
        defer { try? w.close() }
        await Self.expectCorrupted { _ = try await w.get(type: "t", id: "b") }
    }

    @Test("an expiry moved into the past hides the record, and the wallet check reports it")
    func expiryMovedToPast() async throws {
        let url = try await Self.wallet()
        try await Self.setExpiry(url, id: "a", to: 1)
        let w = try await Wallet.open(at: url, key: .raw(TestWallets.rawKey))
        defer { try? w.close() }
        #expect(try await w.fetch(type: "t", id: "a") == nil)
        let report = try await w.checkIntegrity()
        #expect(!report.isClean)
    }

    @Test("an untouched record with an expiry reads, and the wallet check is clean")
    func untouchedExpiry() async throws {
        let url = try await Self.wallet()
        let w = try await Wallet.open(at: url, key: .raw(TestWallets.rawKey))
        defer { try? w.close() }
        #expect(try await w.get(type: "t", id: "a").value == "va")
        #expect(try await w.checkIntegrity().isClean)
    }

    @Test("a format-2 box (expiry not bound) still reads, and its next write seals it as format 3")
    func legacyBoxUpgrades() async throws {
        let (w, _) = try await TestWallets.make()
        defer { try? w.close() }
        try await w.add(type: "t", id: "old", value: "v1", tags: ["k": "x"], expiresAt: Self.later)
        try await LegacyBoxes.replace(in: w, type: "t", id: "old", format: 2, sealedType: "t", value: "v1", tags: ["k": "x"])
        #expect(try await LegacyBoxes.format(in: w, type: "t", id: "old") == 2)
        #expect(try await w.get(type: "t", id: "old").value == "v1")
        #expect(try await w.fetchAll(type: "t", matching: WalletQuery(json: #"{"k": "x"}"#)).map(\.id) == ["old"])
        try await w.update(type: "t", id: "old", value: "v2")
        #expect(try await LegacyBoxes.format(in: w, type: "t", id: "old") == 3)
        #expect(try await w.get(type: "t", id: "old").value == "v2")
        #expect(try await w.checkIntegrity().isClean)
    }

    @Test("a format-3 box cannot be passed off as an old one: its version must match the associated data that opened it")
    func versionMustMatchAD() async throws {
        let (w, _) = try await TestWallets.make()
        defer { try? w.close() }
        try await w.add(type: "t", id: "x", value: "v")
        // Format 3 plaintext sealed with the old associated data (no expiry).
        try await LegacyBoxes.replace(in: w, type: "t", id: "x", format: 3, sealedType: "t", value: "v", tags: [:])
        await Self.expectCorrupted { _ = try await w.get(type: "t", id: "x") }
    }

    @Test("a box whose sealed type differs from its row's type reads as corrupted, by get and by search")
    func sealedTypeCompared() async throws {
        let (w, _) = try await TestWallets.make()
        defer { try? w.close() }
        try await w.add(type: "t", id: "x", value: "v", tags: ["k": "x"])
        // What a blind-type collision would produce: a box of type u under t's blind.
        try await LegacyBoxes.replace(in: w, type: "t", id: "x", format: 2, sealedType: "u", value: "v", tags: ["k": "x"])
        await Self.expectCorrupted { _ = try await w.get(type: "t", id: "x") }
        await Self.expectCorrupted { _ = try await w.fetchAll(type: "t", matching: WalletQuery(json: #"{"k": "x"}"#)) }
        await Self.expectCorrupted { _ = try await w.fetchAll(type: "t") }
    }
}

/// Boxes in the layouts of earlier releases, sealed the way those releases sealed them
/// (associated data: blind type then blind id, no expiry), written through the wallet's own
/// writer so the records' version digest stays in line.
enum LegacyBoxes {
    static func seal(
        keys: WalletKeys, typeBlind: Data, idBlind: Data, format: UInt8, sealedType: String?, id: String,
        value: String, tags: [String: String]
    ) -> Data {
        var plain: [UInt8] = [format]
        if format >= 2 { RecordCodec.appendString(sealedType ?? "", to: &plain) }
        RecordCodec.appendString(id, to: &plain)
        RecordCodec.appendString(value, to: &plain)
        RecordCodec.appendVarint(UInt64(tags.count), to: &plain)
        for (name, v) in tags.sorted(by: { $0.key < $1.key }) {
            plain.append(0)
            RecordCodec.appendString(name, to: &plain)
            RecordCodec.appendString(v, to: &plain)
        }
        return keys.withRecordKey(typeBlind: typeBlind, idBlind: idBlind) { key in
            plain.withUnsafeBytes { message in
                (typeBlind + idBlind).withUnsafeBytes { ad in AEAD.chacha20Poly1305.seal(message, keyBytes: key, associatedData: ad) }
            }
        }
    }

    /// Replaces the box of type/id with one of `format` (1 or 2) holding these contents.
    static func replace(
        in wallet: Wallet, type: String, id: String, format: UInt8, sealedType: String?, value: String,
        tags: [String: String]
    ) async throws {
        let keys = wallet.keys
        let tb = keys.typeBlind(type)
        let ib = keys.idBlind(typeBlind: tb, id: id)
        let box = seal(keys: keys, typeBlind: tb, idBlind: ib, format: format, sealedType: sealedType, id: id, value: value, tags: tags)
        try await wallet.pool.write { db in
            try db.execute(sql: "UPDATE items SET value = ? WHERE type = ? AND name = ?", arguments: [box, BlindColumn.value(tb), ib])
            #expect(db.changesCount == 1)
        }
    }

    /// The plaintext layout version of a record's box.
    static func format(in wallet: Wallet, type: String, id: String) async throws -> UInt8? {
        let keys = wallet.keys
        let tb = keys.typeBlind(type)
        let ib = keys.idBlind(typeBlind: tb, id: id)
        let row = try wallet.pool.read { db in
            try Row.fetchOne(
                db, sql: "SELECT value, expiry FROM items WHERE type = ? AND name = ?", arguments: [BlindColumn.value(tb), ib])
        }
        guard let row else { return nil }
        return try RecordCodec.open(row[0], typeBlind: tb, idBlind: ib, expiry: row[1], keys: keys).format
    }
}
