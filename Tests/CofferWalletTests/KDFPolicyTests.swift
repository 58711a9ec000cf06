// One Argon2id cost policy: Coffer writes nothing over its cap (4× MODERATE) and refuses, before
// any key work, a file whose stored costs are over it.

import CofferCrypto
import CofferWallet
import Foundation
import GRDB
import Testing

@Suite("Argon2id cost policy")
struct KDFPolicyTests {
    static let overPasses = Argon2idParameters(opsLimit: Argon2idParameters.cap.opsLimit + 1, memLimit: Argon2idParameters.minimum.memLimit)
    static let overMemory = Argon2idParameters(opsLimit: 1, memLimit: Argon2idParameters.cap.memLimit + 1024)

    @Test("the cap is 4× the strongest preset Coffer writes (12 passes, 1 GiB)")
    func capValue() {
        #expect(Argon2idParameters.cap.opsLimit == 12 && Argon2idParameters.cap.memLimit == 1 << 30)
    }

    @Test("create and rekey refuse costs over the cap, naming them, and write nothing", arguments: [overPasses, overMemory])
    func createAndRekeyRefuse(_ costs: Argon2idParameters) async throws {
        var config = Wallet.Configuration()
        config.passphraseParameters = costs
        let url = TestWallets.folder().appendingPathComponent("w.sqlite")
        let created = await #expect(throws: WalletError.self) {
            _ = try await Wallet.create(at: url, key: .passphrase("p"), configuration: config)
        }
        #expect("\(created.map { "\($0)" } ?? "")".contains("cap"))
        #expect(!FileManager.default.fileExists(atPath: url.path))
        let (w, walletURL) = try await TestWallets.make()
        try w.close()
        let strict = try await Wallet.open(at: walletURL, key: .raw(TestWallets.rawKey), configuration: config)
        await #expect(throws: WalletError.self) { try await strict.rekey(to: .passphrase("new")) }
        try strict.close()
        _ = try await Wallet.open(at: walletURL, key: .raw(TestWallets.rawKey)).close()
    }

    @Test("a wallet whose stored costs were raised over the cap is refused as corrupted, naming the costs")
    func storedCostsRefused() async throws {
        let (w, url) = try await TestWallets.make(key: .passphrase("pw"))
        try w.close()
        let db = try TestWallets.attackerQueue(url)
        try await db.write { db in
            let text = String(decoding: try Data.fetchOne(db, sql: "SELECT value FROM coffer_meta WHERE name = 'kdf'")!, as: UTF8.self)
            let raised = text.replacingOccurrences(of: #""opsLimit":1"#, with: #""opsLimit":64"#)
            #expect(raised != text, "the record should name its opsLimit: \(text)")
            try db.execute(sql: "UPDATE coffer_meta SET value = ? WHERE name = 'kdf'", arguments: [Data(raised.utf8)])
        }
        try db.close()
        do {
            _ = try await Wallet.open(at: url, key: .passphrase("pw"), configuration: TestWallets.fastConfiguration)
            Issue.record("opened with raised costs")
        } catch let WalletError.corrupted(message) {
            #expect(message.contains("ops: 64") && message.contains("cap"), "\(message)")
        }
    }

    @Test("export refuses costs over the cap; a backup whose header was raised over it is refused as corrupted")
    func backupCosts() async throws {
        let (w, url) = try await TestWallets.make()
        defer { try? w.close() }
        try await w.add(type: "t", id: "1", value: "v")
        let backup = url.deletingLastPathComponent().appendingPathComponent("b.cfb")
        await #expect(throws: WalletError.self) { _ = try await w.exportBackup(to: backup, passphrase: "bp", parameters: Self.overPasses) }
        #expect(!FileManager.default.fileExists(atPath: backup.path))
        _ = try await w.exportBackup(to: backup, passphrase: "bp", parameters: BackupKey.floor)
        var bytes = try Data(contentsOf: backup)
        bytes.replaceSubrange(9..<13, with: [0, 0, 0, 64])
        try bytes.write(to: backup)
        do {
            _ = try await Wallet.importBackup(
                from: backup, passphrase: "bp", into: url.deletingLastPathComponent().appendingPathComponent("r.sqlite"),
                key: .raw(TestWallets.rawKey))
            Issue.record("imported a backup with raised costs")
        } catch let WalletError.corrupted(message) {
            #expect(message.contains("ops: 64"), "\(message)")
        }
    }

    @Test("a backup is written with MODERATE costs unless told otherwise")
    func backupDefaultsToModerate() async throws {
        let (w, url) = try await TestWallets.make()
        defer { try? w.close() }
        try await w.add(type: "t", id: "1", value: "v")
        let backup = url.deletingLastPathComponent().appendingPathComponent("b.cfb")
        try await w.exportBackup(to: backup, passphrase: "bp")
        let header = Array(try Data(contentsOf: backup).prefix(17))
        let ops = header[9..<13].reduce(0) { $0 << 8 | UInt64($1) }
        let memKiB = header[13..<17].reduce(0) { $0 << 8 | Int($1) }
        #expect(ops == Argon2idParameters.moderate.opsLimit)
        #expect(memKiB * 1024 == Argon2idParameters.moderate.memLimit)
    }

    @Test("export refuses backup costs below the INTERACTIVE floor, naming the floor, and writes nothing", arguments: [0, 1])
    func backupFloor(_ which: Int) async throws {
        let (w, url) = try await TestWallets.make()
        defer { try? w.close() }
        try await w.add(type: "t", id: "1", value: "v")
        let backup = url.deletingLastPathComponent().appendingPathComponent("b.cfb")
        let floor = BackupKey.floor
        let cheap =
            which == 0
            ? Argon2idParameters(opsLimit: floor.opsLimit - 1, memLimit: floor.memLimit)
            : Argon2idParameters(opsLimit: floor.opsLimit, memLimit: floor.memLimit - 1024)
        do {
            try await w.exportBackup(to: backup, passphrase: "bp", parameters: cheap)
            Issue.record("exported a backup below the floor")
        } catch let WalletError.invalidInput(message) {
            #expect(message.contains("below the floor \(floor)"), "\(message)")
        }
        #expect(!FileManager.default.fileExists(atPath: backup.path))
    }
}
