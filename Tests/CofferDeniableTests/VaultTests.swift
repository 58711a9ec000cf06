import CofferCrypto
import Crypto
import Foundation
import Testing

@testable import CofferDeniable

@Suite("Vault")
struct VaultTests {
    func vaultBytes(_ folder: URL) throws -> Data {
        try Data(contentsOf: folder.appendingPathComponent("deniable/vault"))
    }

    @Test("an unused, an empty and a full vault have the same length")
    func constantLength() async throws {
        let folder = temporaryFolder()
        let (store, _) = try await makeStore(folder)
        let expected = Vault.fileLength(contentBytes: testConfiguration().vaultContentBytes)
        let unused = try vaultBytes(folder).count
        let passphrase = try await store.createVault()
        let empty = try vaultBytes(folder).count
        try await store.unlock(passphrase: passphrase)
        for _ in 0..<60 {
            try await store.send(String(repeating: "x", count: 600), to: "journalist")
            _ = try await store.dequeue()
        }
        #expect(try await store.mailbox().count < 60, "the vault should be full and trimming")
        try await store.lock()
        let full = try vaultBytes(folder).count
        #expect(unused == expected && empty == expected && full == expected, "\(unused) \(empty) \(full) vs \(expected)")
    }

    @Test("the vault is rewritten with fresh bytes at every open, unlock and lock")
    func rewrittenEveryTime() async throws {
        let folder = temporaryFolder()
        let (store, _) = try await makeStore(folder)
        let passphrase = try await store.createVault()
        let afterCreate = try vaultBytes(folder)
        _ = try await makeStore(folder)
        let afterOpen = try vaultBytes(folder)
        try await store.unlock(passphrase: passphrase)
        let afterUnlock = try vaultBytes(folder)
        try await store.lock()
        let afterLock = try vaultBytes(folder)
        let all = [afterCreate, afterOpen, afterUnlock, afterLock]
        #expect(Set(all).count == 4)
        // Every byte after the header is new each time (apart from chance equalities).
        let header = 36
        let same = zip(afterOpen.dropFirst(header), afterUnlock.dropFirst(header)).filter { $0 == $1 }.count
        #expect(same < afterOpen.count / 100)
    }

    @Test("a wrong passphrase and a never-used vault give the same error after the same work")
    func wrongAndUnusedLookAlike() async throws {
        let unusedFolder = temporaryFolder("unused")
        let unusedSE = CountingSecureElement(folder: unusedFolder)
        let (unused, _) = try await makeStore(unusedFolder, secureElement: unusedSE)
        let usedFolder = temporaryFolder("used")
        let usedSE = CountingSecureElement(folder: usedFolder)
        let (used, _) = try await makeStore(usedFolder, secureElement: usedSE)
        _ = try await used.createVault()
        let guess = Passphrase.generate(wordCount: 3)
        let before = (unusedSE.calls, usedSE.calls)
        var errors = [DeniableError]()
        for store in [unused, used] {
            do {
                try await store.unlock(passphrase: guess)
                Issue.record("unlocked with a guess")
            } catch { errors.append(error) }
        }
        #expect(errors == [DeniableError.unlockFailed, DeniableError.unlockFailed])
        #expect(unusedSE.calls - before.0 == usedSE.calls - before.1)
    }

    @Test("the right passphrase unlocks, and the mailbox survives lock and restart")
    func roundTrip() async throws {
        let folder = temporaryFolder()
        let (store, _) = try await makeStore(folder)
        let passphrase = try await store.createVault()
        try await store.unlock(passphrase: "  " + passphrase.uppercased().replacingOccurrences(of: " ", with: "   ") + " ")
        try await store.send("hello", to: "alice")
        try await store.close()
        let (again, _) = try await makeStore(folder)
        try await again.unlock(passphrase: passphrase)
        let texts = try await again.mailbox().map(\.text)
        #expect(texts == ["hello"])
    }

    @Test("when the mailbox no longer fits, the oldest messages go first")
    func oldestGoFirst() async throws {
        var c = testConfiguration()
        c.vaultContentBytes = 4096
        c.queueSlots = 1024
        let folder = temporaryFolder()
        let clock = TestClock()
        let (store, _) = try await makeStore(folder, configuration: c, clock: clock)
        let passphrase = try await store.createVault()
        try await store.unlock(passphrase: passphrase)
        for i in 0..<40 {
            try await store.send("message \(i) " + String(repeating: ".", count: 150), to: "journalist")
            clock.advance(1)
        }
        let kept = try await store.mailbox().map { Int($0.text.split(separator: " ")[1])! }
        #expect(kept.count < 40)
        #expect(kept == Array((40 - kept.count)..<40))
    }

    @Test("vault and queue bytes after their headers pass a chi-square test for uniform bytes")
    func uniformBytes() async throws {
        let folder = temporaryFolder()
        let (store, _) = try await makeStore(folder)
        let passphrase = try await store.createVault()
        try await store.unlock(passphrase: passphrase)
        try await store.send("a secret message", to: "journalist")
        try await store.lock()
        let vault = try vaultBytes(folder).dropFirst(36)
        let queue = try Data(contentsOf: folder.appendingPathComponent("deniable/sending-queue")).dropFirst(SendingQueue.headerBytes)
        // 255 degrees of freedom: 330.5 is the 0.1% critical value.
        #expect(chiSquare(Data(vault)) < 330.5)
        #expect(chiSquare(Data(queue)) < 330.5)
    }

    @Test("an altered vault file reads as corrupted")
    func tampered() async throws {
        let folder = temporaryFolder()
        let (store, _) = try await makeStore(folder)
        let passphrase = try await store.createVault()
        let url = folder.appendingPathComponent("deniable/vault")
        var bytes = try Data(contentsOf: url)
        bytes[bytes.count / 2] ^= 0x01
        try bytes.write(to: url)
        await #expect(throws: DeniableError.self) { try await store.unlock(passphrase: passphrase) }
        do { try await store.unlock(passphrase: passphrase) } catch {
            guard case .corrupted = error else {
                Issue.record("expected corrupted, got \(error)")
                return
            }
        }
    }

    @Test("a secure-element key file readable by others is refused")
    func widePermissionsRefused() throws {
        let folder = temporaryFolder()
        let se = FileSecureElement(keyFile: folder.appendingPathComponent("se.key"))
        _ = try se.sharedSecret(with: somePublicKey())
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: folder.appendingPathComponent("se.key").path)
        let fresh = FileSecureElement(keyFile: folder.appendingPathComponent("se.key"))
        #expect(throws: DeniableError.self) { _ = try fresh.sharedSecret(with: somePublicKey()) }
    }

    @Test("the secure-element key file is created with mode 0600")
    func keyFileMode() throws {
        let folder = temporaryFolder()
        let se = FileSecureElement(keyFile: folder.appendingPathComponent("se.key"))
        _ = try se.sharedSecret(with: somePublicKey())
        let mode =
            try FileManager.default.attributesOfItem(atPath: folder.appendingPathComponent("se.key").path)[.posixPermissions] as? NSNumber
        #expect(mode?.intValue == 0o600)
    }
}

@Suite("Passphrase")
struct PassphraseTests {
    @Test("the bundled word list is the EFF large list with CoverDrop's digest")
    func wordListDigest() throws {
        let bytes = try WordList.bundledFileBytes()
        let digest = SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined()
        #expect(digest == WordList.sha256)
        #expect(WordList.eff.words.count == 7_776)
    }

    @Test("input is trimmed, single-spaced and lower-cased")
    func normalizes() throws {
        #expect(try Passphrase.normalize("  External   JERSEY squeeze\t") == "external jersey squeeze")
    }

    @Test("a word not in the list is named by its position, never by itself")
    func namesUnknownWord() {
        #expect(throws: DeniableError.invalidPassphrase("word 3 is not in the word list")) {
            try Passphrase.normalize("external jersey luckyness")
        }
    }

    @Test("digits and accented letters are refused")
    func refusesOtherCharacters() {
        #expect(throws: DeniableError.self) { try Passphrase.normalize("abc 123") }
        #expect(throws: DeniableError.self) { try Passphrase.normalize("wérd with accent") }
        #expect(throws: DeniableError.self) { try Passphrase.normalize("   ") }
    }

    @Test("a generated passphrase has the configured number of distinct list words")
    func generates() throws {
        let p = Passphrase.generate(wordCount: 5)
        let words = p.split(separator: " ").map(String.init)
        #expect(words.count == 5 && Set(words).count == 5)
        #expect(try Passphrase.normalize(p) == p)
    }
}
