import CofferCrypto
import Foundation
import Testing

@testable import CofferWallet

@Suite("Backup")
struct BackupTests {
    func filled() async throws -> (Wallet, URL) {
        let (wallet, url) = try await TestWallets.make()
        for i in 0..<1_200 {
            try await wallet.add(
                type: "note", id: "n\(i)", value: "value \(i)",
                tags: ["k": .string("\(i % 3)"), "~seq": .string("\(i)"), "multi": ["a", "b"]])
        }
        try await wallet.add(type: "credential", id: "c1", value: "{}", tags: ["é": "x"])
        try await wallet.storeCredentialSignature("sig-1", credentialID: "c1")
        try await wallet.initializeMasterSecret()
        return (wallet, url)
    }

    @Test("export then import brings back every record, tag and secret")
    func roundTrip() async throws {
        let (wallet, url) = try await filled()
        let verkey = try await wallet.createKey()
        let backup = url.deletingLastPathComponent().appendingPathComponent("wallet.backup")
        let progressSeen = ProgressLog()
        let n = try await wallet.exportBackup(to: backup, passphrase: "backup pass", parameters: BackupKey.floor) { progressSeen.add($0) }
        #expect(n == 1_200 + 1 + 1 + 1 + 1)
        #expect(progressSeen.last == BackupProgress(done: n, total: n))
        let target = TestWallets.folder().appendingPathComponent("restored.sqlite")
        let restored = try await Wallet.importBackup(from: backup, passphrase: "backup pass", into: target, key: .raw(TestWallets.rawKey))
        #expect(try await restored.count(type: "note") == 1_200)
        #expect(try await restored.count(type: "note", matching: WalletQuery(json: #"{"k": "1", "multi": "b"}"#)) == 400)
        #expect(try await restored.get(type: "credential", id: "c1").tags == ["é": "x"])
        #expect(try await restored.hasCredentialSignature(credentialID: "c1"))
        #expect(try await restored.initializeMasterSecret() == false)
        #expect(try await wallet.withMasterSecret { $0.exportBytes() } == restored.withMasterSecret { $0.exportBytes() })
        let signature = try await restored.sign(Data("m".utf8), with: verkey)
        #expect(try Wallet.verify(signature: signature, message: Data("m".utf8), verkey: verkey))
    }

    @Test("a wrong backup passphrase is a clear error and creates nothing")
    func wrongPassphrase() async throws {
        let (wallet, url) = try await filled()
        let backup = url.deletingLastPathComponent().appendingPathComponent("wallet.backup")
        try await wallet.exportBackup(to: backup, passphrase: "right", parameters: BackupKey.floor)
        let target = TestWallets.folder().appendingPathComponent("restored.sqlite")
        await #expect(throws: WalletError.wrongKey("the backup passphrase is wrong (or the backup is damaged)")) {
            _ = try await Wallet.importBackup(from: backup, passphrase: "wrong", into: target, key: .raw(TestWallets.rawKey))
        }
        #expect(!FileManager.default.fileExists(atPath: target.path))
    }

    @Test("a damaged or truncated backup is a clear error and creates nothing")
    func damaged() async throws {
        let (wallet, url) = try await filled()
        let backup = url.deletingLastPathComponent().appendingPathComponent("wallet.backup")
        try await wallet.exportBackup(to: backup, passphrase: "p", parameters: BackupKey.floor)
        let bytes = try Data(contentsOf: backup)
        var flipped = bytes
        flipped[bytes.count / 2] ^= 0x40
        for (name, damaged) in [("flipped", flipped), ("truncated", bytes.prefix(bytes.count - 40))] {
            try Data(damaged).write(to: backup)
            let target = TestWallets.folder().appendingPathComponent("restored.sqlite")
            do {
                _ = try await Wallet.importBackup(from: backup, passphrase: "p", into: target, key: .raw(TestWallets.rawKey))
                Issue.record("\(name) backup imported")
            } catch let error as WalletError {
                guard case .corrupted = error else {
                    Issue.record("\(name): expected corrupted, got \(error)")
                    continue
                }
            }
            #expect(!FileManager.default.fileExists(atPath: target.path), "\(name)")
        }
    }
}

final class ProgressLog: @unchecked Sendable {
    private let lock = NSLock()
    private var items = [BackupProgress]()
    func add(_ p: BackupProgress) { lock.withLock { items.append(p) } }
    var last: BackupProgress? { lock.withLock { items.last } }
}
