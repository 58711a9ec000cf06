// Backups stream (bounded messages, progress while inserting), fail without leaving a file at the
// target, refuse hostile lengths, and carry records of the first box format.

import CofferCrypto
import Foundation
import GRDB
import Testing

@testable import CofferWallet

@Suite("Streaming backup")
struct StreamingBackupTests {
    static func filled(_ n: Int) async throws -> (Wallet, URL) {
        let (w, url) = try await TestWallets.make()
        try await w.transaction { tx in
            for i in 0..<n {
                try tx.add(
                    type: "t", id: "r\(i)", value: "value \(i) \u{1}\"\\ é", tags: ["k": .string("\(i % 7)"), "~n": .list(["\(i)", "x"])])
            }
        }
        return (w, url)
    }

    final class Reports: @unchecked Sendable {
        private let lock = NSLock()
        private var list = [BackupProgress]()
        func add(_ p: BackupProgress) { lock.withLock { list.append(p) } }
        var all: [BackupProgress] { lock.withLock { list } }
    }

    @Test("a restore reports progress as it inserts, batch by batch, up to the total")
    func restoreProgress() async throws {
        let (w, url) = try await Self.filled(2_000)
        let backup = url.deletingLastPathComponent().appendingPathComponent("b.cfb")
        let exportReports = Reports()
        #expect(try await w.exportBackup(to: backup, passphrase: "p", parameters: BackupKey.floor) { exportReports.add($0) } == 2_000)
        try w.close()
        #expect(exportReports.all.count >= 4)
        let reports = Reports()
        let restored = try await Wallet.importBackup(
            from: backup, passphrase: "p", into: TestWallets.folder().appendingPathComponent("w.sqlite"),
            key: .raw(TestWallets.rawKey)
        ) { reports.add($0) }
        defer { try? restored.close() }
        let done = reports.all.map(\.done)
        #expect(done.first == 0)
        #expect(done.last == 2_000)
        #expect(done == done.sorted())
        #expect(Set(done).count >= 5, "progress should move batch by batch: \(done)")
        #expect(try await restored.get(type: "t", id: "r5").value == "value 5 \u{1}\"\\ é")
        #expect(try await restored.get(type: "t", id: "r5").tags == ["k": "5", "~n": .list(["5", "x"])])
        #expect(try await restored.count(type: "t") == 2_000)
    }

    @Test("a failed export leaves an older file at the target as it was, and no partial file")
    func failedExportKeepsOldFile() async throws {
        let (w, url) = try await Self.filled(10)
        defer { try? w.close() }
        let backup = url.deletingLastPathComponent().appendingPathComponent("b.cfb")
        try await w.exportBackup(to: backup, passphrase: "p", parameters: BackupKey.floor)
        let before = try Data(contentsOf: backup)
        // A first-format record whose type nothing tells stops the export part-way.
        try await w.add(type: "lonely", id: "x", value: "v")
        try await LegacyBoxes.replace(in: w, type: "lonely", id: "x", format: 1, sealedType: nil, value: "v", tags: [:])
        await #expect(throws: WalletError.self) { try await w.exportBackup(to: backup, passphrase: "p", parameters: BackupKey.floor) }
        #expect(try Data(contentsOf: backup) == before)
        #expect(!FileManager.default.fileExists(atPath: url.deletingLastPathComponent().appendingPathComponent(".b.cfb.partial").path))
    }

    @Test("a partial file a killed export left is removed by the next export")
    func stalePartialRemoved() async throws {
        let (w, url) = try await Self.filled(10)
        defer { try? w.close() }
        let folder = url.deletingLastPathComponent()
        let partial = folder.appendingPathComponent(".b.cfb.partial")
        try Data("half a backup".utf8).write(to: partial)
        try await w.exportBackup(to: folder.appendingPathComponent("b.cfb"), passphrase: "p", parameters: BackupKey.floor)
        #expect(!FileManager.default.fileExists(atPath: partial.path))
        #expect(FileManager.default.fileExists(atPath: folder.appendingPathComponent("b.cfb").path))
    }

    @Test("a message length larger than any backup writes is refused as corrupted, and nothing is created")
    func hostileLength() async throws {
        let (w, url) = try await Self.filled(10)
        let backup = url.deletingLastPathComponent().appendingPathComponent("b.cfb")
        try await w.exportBackup(to: backup, passphrase: "p", parameters: BackupKey.floor)
        try w.close()
        var bytes = try Data(contentsOf: backup)
        // The first message starts after the 57-byte header; the second message's length follows it.
        let firstLength = Int(BackupReader.u32(bytes, at: 57))
        let second = 57 + 4 + firstLength
        bytes.replaceSubrange(second..<(second + 4), with: [0xFF, 0xFF, 0xFF, 0xF0])
        try bytes.write(to: backup)
        let target = TestWallets.folder().appendingPathComponent("w.sqlite")
        do {
            _ = try await Wallet.importBackup(from: backup, passphrase: "p", into: target, key: .raw(TestWallets.rawKey))
            Issue.record("a hostile length was accepted")
        } catch let error as WalletError {
            guard case .corrupted = error else {
                Issue.record("expected corrupted, got \(error)")
                return
            }
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: target.deletingLastPathComponent().path).isEmpty)
    }

    @Test("a committed wallet whose records are in the first box format exports, and restores in today's format")
    func firstFormatFixture() async throws {
        let fixture = Bundle.module.url(forResource: "first-box-format", withExtension: "sqlite", subdirectory: "Fixtures")!
        let copy = TestWallets.folder().appendingPathComponent("wallet.sqlite")
        try FileManager.default.copyItem(at: fixture, to: copy)
        let w = try await Wallet.open(at: copy, key: .raw(TestWallets.rawKey))
        // Every box in the fixture but c1 is of the first format.
        #expect(try await LegacyBoxes.format(in: w, type: "credential", id: "c2") == 1)
        #expect(try await LegacyBoxes.format(in: w, type: "note", id: "n1") == 1)
        let backup = copy.deletingLastPathComponent().appendingPathComponent("b.cfb")
        // "note" has no newer record to tell its type: the export says so and names the way out.
        do {
            try await w.exportBackup(to: backup, passphrase: "p", parameters: BackupKey.floor)
            Issue.record("exported a record whose type nothing tells")
        } catch let error as WalletError {
            #expect(error.description.contains("firstFormatTypes"))
        }
        #expect(try await w.exportBackup(to: backup, passphrase: "p", parameters: BackupKey.floor, firstFormatTypes: ["note"]) == 4)
        try w.close()
        let restored = try await Wallet.importBackup(
            from: backup, passphrase: "p", into: TestWallets.folder().appendingPathComponent("r.sqlite"),
            key: .raw(TestWallets.rawKey))
        defer { try? restored.close() }
        #expect(try await restored.get(type: "credential", id: "c2").value == "second")
        #expect(try await restored.get(type: "credential", id: "c2").tags == ["schema": "s1", "~year": "2019"])
        #expect(try await restored.get(type: "note", id: "n1").value == "a note")
        #expect(try await restored.listKeys().count == 1)
        #expect(try await LegacyBoxes.format(in: restored, type: "note", id: "n1") == RecordCodec.version)
        #expect(try await restored.checkIntegrity().isClean)
    }

    /// Writes the fixture above into `COFFER_WRITE_FIXTURES` (run once, by hand, to make it):
    /// credential c1 in box format 2; credential c2, note n1 and an Ed25519 key in format 1.
    @Test("write the first-box-format fixture", .enabled(if: ProcessInfo.processInfo.environment["COFFER_WRITE_FIXTURES"] != nil))
    func writeFixture() async throws {
        let folder = URL(fileURLWithPath: ProcessInfo.processInfo.environment["COFFER_WRITE_FIXTURES"]!)
        let url = folder.appendingPathComponent("first-box-format.sqlite")
        try? FileManager.default.removeItem(at: url)
        let w = try await Wallet.create(at: url, key: .raw(TestWallets.rawKey), configuration: TestWallets.fastConfiguration)
        try await w.add(type: "credential", id: "c1", value: "first", tags: ["schema": "s1"])
        try await LegacyBoxes.replace(
            in: w, type: "credential", id: "c1", format: 2, sealedType: "credential", value: "first", tags: ["schema": "s1"])
        try await w.add(type: "credential", id: "c2", value: "second", tags: ["schema": "s1", "~year": "2019"])
        try await LegacyBoxes.replace(
            in: w, type: "credential", id: "c2", format: 1, sealedType: nil, value: "second",
            tags: ["schema": "s1", "~year": "2019"])
        try await w.add(type: "note", id: "n1", value: "a note")
        try await LegacyBoxes.replace(in: w, type: "note", id: "n1", format: 1, sealedType: nil, value: "a note", tags: [:])
        let verkey = try await w.createKey(.ed25519)
        let keyRecord = try await w.secretRead {
            try $0.get(type: SecretTypes.key, id: verkey, options: RecordOptions(retrieveValue: true, retrieveTags: true))
        }
        try await LegacyBoxes.replace(
            in: w, type: SecretTypes.key, id: verkey, format: 1, sealedType: nil, value: keyRecord!.value!,
            tags: ["kind": "ed25519"])
        try w.close()
    }
}
