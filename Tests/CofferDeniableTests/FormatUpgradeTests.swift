// Files written in the first layouts (vault `CFVAULT1`, queue `CFQUEUE1`) are converted at the
// next start, their contents kept.

import CofferCrypto
import Foundation
import Testing

@testable import CofferDeniable

@Suite("Deniable format 1 files")
struct FormatUpgradeTests {
    /// Writes a format-1 vault (cleartext inner header, outer key from the salt) holding one message.
    func writeLegacyVault(folder: URL, passphrase: String, configuration: DeniableConfiguration) throws {
        let se = FileSecureElement(keyFile: folder.appendingPathComponent("secure-element.key"))
        let header = Vault.Header(
            contentBytes: configuration.vaultContentBytes, kdf: configuration.passphraseKDF,
            salt: SecureRandom.bytes(16), magic: Vault.legacyMagic)
        var contents = VaultContents.fresh()
        contents.messages.append(MailboxMessage(direction: .sent, peer: "alice", text: "from format 1", date: Date()))
        let plain = try contents.padded(size: header.contentBytes)
        let vaultKey = try Vault.vaultKey(passphrase: passphrase, header: header, secureElement: se)
        let inner = try AEAD.xchacha20Poly1305.seal(plain, key: vaultKey, associatedData: header.bytes)
        let outerKey = try se.authenticate(Data("coffer.deniable.vault.outer".utf8) + header.salt)
        var file = Data(header.bytes)
        file.append(try AEAD.xchacha20Poly1305.seal(inner, key: outerKey, associatedData: header.bytes))
        try file.write(to: folder.appendingPathComponent("vault"))
    }

    @Test("a format-1 vault is converted at the next start and still opens with its passphrase")
    func vaultConverted() async throws {
        let root = temporaryFolder()
        let folder = root.appendingPathComponent("deniable")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let passphrase = Passphrase.generate(wordCount: 3)
        try writeLegacyVault(folder: folder, passphrase: passphrase, configuration: testConfiguration())
        let (store, _) = try await makeStore(root)
        #expect(try await store.status().lastStart?.converted == ["vault"])
        let bytes = try Data(contentsOf: folder.appendingPathComponent("vault"))
        #expect(Array(bytes.prefix(8)) == Array("CFVAULT2".utf8))
        #expect(bytes.count == Vault.fileLength(contentBytes: testConfiguration().vaultContentBytes))
        try await store.unlock(passphrase: passphrase)
        #expect(try await store.mailbox().map(\.text) == ["from format 1"])
        try await store.lock()
        let (again, _) = try await makeStore(root)
        #expect(try await again.status().lastStart?.converted == [])
        try await again.unlock(passphrase: passphrase)
        #expect(try await again.mailbox().map(\.text) == ["from format 1"])
    }

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
        let se = FileSecureElement(keyFile: folder.appendingPathComponent("se.key"))
        let queue = try SendingQueue(url: url, slots: 4, itemBytes: 128, secureElement: se) { SecureRandom.bytes(128) }
        let converted = try Data(contentsOf: url)
        #expect(Array(converted.prefix(8)) == Array("CFQUEUE2".utf8))
        #expect(converted.count == SendingQueue.fileLength(slots: 4, itemBytes: 128))
        #expect(queue.peek() == items[0])
        let reopened = try SendingQueue(url: url, slots: 4, itemBytes: 128, secureElement: se) { SecureRandom.bytes(128) }
        for item in items { #expect(try reopened.dequeue() == item) }
    }

    @Test("a queue whose outer layer was altered is refused as corrupted")
    func queueTampered() throws {
        let folder = temporaryFolder()
        let url = folder.appendingPathComponent("queue")
        let se = FileSecureElement(keyFile: folder.appendingPathComponent("se.key"))
        _ = try SendingQueue(url: url, slots: 4, itemBytes: 128, secureElement: se) { SecureRandom.bytes(128) }
        var bytes = try Data(contentsOf: url)
        bytes[bytes.count / 2] ^= 1
        try bytes.write(to: url)
        #expect(throws: DeniableError.self) {
            _ = try SendingQueue(url: url, slots: 4, itemBytes: 128, secureElement: se) { SecureRandom.bytes(128) }
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
