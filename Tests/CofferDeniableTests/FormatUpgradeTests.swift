// A queue written in the first layout (`CFQUEUE1`) is converted when opened, its slots kept;
// the conversions of format-2 stores (vault, queue, device key) are tested through the CLI in
// CofferCLITests/DeniableConversionTests.swift.

import CofferCrypto
import Foundation
import Testing

@testable import CofferDeniable

@Suite("Deniable format 1 queues")
struct FormatUpgradeTests {
    @Test("a format-1 sending queue keeps its slots in order under the new outer layer")
    func queueConverted() throws {
        let folder = temporaryFolder()
        let url = folder.appendingPathComponent("queue")
        let items = (0..<4).map { _ in SecureRandom.bytes(128) }
        let hints = (0..<4).map { _ in SecureRandom.bytes(32) }
        var w = Writer(buffer: [])
        w.bytes(SendingQueue.legacyMagic)
        w.u32(4)
        w.u32(128)
        w.u32(32)
        var file = Data(w.buffer)
        for item in items { file.append(item) }
        for hint in hints { file.append(hint) }
        try file.write(to: url)
        let key = try storageKey(folder)
        let queue = try SendingQueue(url: url, slots: 4, itemBytes: 128, storageKey: key) { SecureRandom.bytes(128) }
        let converted = try Data(contentsOf: url)
        #expect(Array(converted.prefix(8)) == Array("CFQUEUE3".utf8))
        #expect(converted.count == SendingQueue.fileLength(slots: 4, itemBytes: 128))
        #expect(queue.peek() == items[0])
        let reopened = try SendingQueue(url: url, slots: 4, itemBytes: 128, storageKey: key) { SecureRandom.bytes(128) }
        for item in items { #expect(try reopened.dequeue() == item) }
    }

    @Test("a queue whose outer layer was altered is refused as corrupted")
    func queueTampered() throws {
        let folder = temporaryFolder()
        let url = folder.appendingPathComponent("queue")
        let key = try storageKey(folder)
        _ = try SendingQueue(url: url, slots: 4, itemBytes: 128, storageKey: key) { SecureRandom.bytes(128) }
        var bytes = try Data(contentsOf: url)
        bytes[bytes.count / 2] ^= 1
        try bytes.write(to: url)
        #expect(throws: DeniableError.self) {
            _ = try SendingQueue(url: url, slots: 4, itemBytes: 128, storageKey: key) { SecureRandom.bytes(128) }
        }
    }
}

@Suite("Deniable key costs")
struct DeniableKeyCostTests {
    @Test("a configuration over Coffer's Argon2id cap is refused before anything is written")
    func configurationOverCap() async throws {
        var c = testConfiguration()
        c.passphraseKDF = Argon2idParameters(opsLimit: Argon2idParameters.cap.opsLimit + 1, memLimit: Argon2idParameters.minimum.memLimit)
        let folder = temporaryFolder()
        await #expect(throws: DeniableError.self) { _ = try await makeStore(folder, configuration: c) }
        #expect(!FileManager.default.fileExists(atPath: folder.appendingPathComponent("deniable/vault").path))
    }
}
