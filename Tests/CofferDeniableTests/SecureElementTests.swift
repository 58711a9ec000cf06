// The secure element as phones have it: P-256 key agreement with a device-held key, repeated to
// set the device-bound cost; the queue's outer layer off the element, so a locked phone sends.

import CofferCrypto
import CofferDevelopment
import Foundation
import Testing

@testable import CofferDeniable

@Suite("Secure element (P-256 key agreement)")
struct SecureElementTests {
    @Test("an unlock asks the secure element for exactly the configured number of key agreements")
    func roundsPerUnlock() async throws {
        var c = testConfiguration()
        c.secureElementRounds = 13
        let folder = temporaryFolder()
        let se = CountingSecureElement(folder: folder)
        let (store, _) = try await makeStore(folder, configuration: c, secureElement: se)
        let passphrase = try await store.createVault()
        let before = se.calls
        try await store.unlock(passphrase: passphrase)
        #expect(se.calls - before == 13)
    }

    @Test("the vault key depends on every round: one round more or fewer gives another key")
    func everyRoundCounts() throws {
        let se = FileSecureElement(keyFile: temporaryFolder().appendingPathComponent("se.key"))
        let input = SecretKey.random()
        let salt = SecureRandom.bytes(16)
        let keys = try [7, 8, 9].map { try DeviceCost.derive(input, salt: salt, rounds: $0, secureElement: se).exportBytes() }
        #expect(Set(keys).count == 3)
        #expect(try DeviceCost.derive(input, salt: salt, rounds: 8, secureElement: se).exportBytes() == keys[1])
    }

    @Test("a vault copied to a device with another secure-element key does not open with the right passphrase")
    func copiedVaultNeedsTheDevice() async throws {
        let original = temporaryFolder("original")
        let (store, _) = try await makeStore(original)
        let passphrase = try await store.createVault()
        try await store.lock()
        // The copy keeps vault and storage key (what the outer layer needs), not the device key.
        let copy = temporaryFolder("copy")
        let other = CountingSecureElement(folder: copy)
        _ = try other.prepare()
        _ = try await makeStore(copy, secureElement: other)
        for name in ["vault", "storage.key"] {
            let target = copy.appendingPathComponent("deniable/\(name)")
            try FileManager.default.removeItem(at: target)
            try FileManager.default.copyItem(at: original.appendingPathComponent("deniable/\(name)"), to: target)
        }
        let (copied, _) = try await makeStore(copy, secureElement: other)
        await #expect(throws: DeniableError.unlockFailed) { try await copied.unlock(passphrase: passphrase) }
        #expect(other.calls > 0, "the guess went through the other device's element")
    }

    @Test("the file stand-in computes real P-256 ECDH with the key in its file")
    func standInIsP256() throws {
        let url = temporaryFolder().appendingPathComponent("se.key")
        let se = FileSecureElement(keyFile: url)
        #expect(try se.prepare())
        let deviceKey = try P256PrivateKey(raw: OwnerOnlyKeyFile(url: url).load())
        let peer = P256PrivateKey()
        let expected = try peer.sharedSecret(with: deviceKey.publicKey).exportBytes()
        #expect(expected.count == 32)
        #expect(try se.sharedSecret(with: peer.publicKey).exportBytes() == expected)
    }

    @Test("a stand-in key file that holds no P-256 key is replaced at start, and prepare says so")
    func damagedKeyReplaced() throws {
        let url = temporaryFolder().appendingPathComponent("se.key")
        // 32 bytes of 0xFF: above the group order, not a private key.
        try OwnerOnlyKeyFile(url: url).write(try SecretKey(copying: Data(repeating: 0xFF, count: 32)))
        let se = FileSecureElement(keyFile: url)
        #expect(try se.prepare())
        #expect(try !FileSecureElement(keyFile: url).prepare())
        _ = try se.sharedSecret(with: somePublicKey())
    }

    @Test("a stand-in key file that cannot be read (here a 0600 FIFO) is refused at start and left in place, never replaced")
    func unreadableKeyRefused() throws {
        let url = temporaryFolder().appendingPathComponent("se.key")
        #expect(mkfifo(url.path, 0o600) == 0)
        #expect(throws: DeniableError.self) { _ = try FileSecureElement(keyFile: url).prepare() }
        let type = try FileManager.default.attributesOfItem(atPath: url.path)[.type] as? FileAttributeType
        #expect(type != .typeRegular, "the FIFO was replaced by a fresh key")
    }

    @Test("a phone's locked secure element does not stop an app start nor a background send")
    func lockedPhoneSends() async throws {
        let folder = temporaryFolder()
        let clock = TestClock()
        let se = CountingSecureElement(folder: folder)
        let (first, node) = try await makeStore(folder, clock: clock, secureElement: se)
        let passphrase = try await first.createVault()
        try await first.unlock(passphrase: passphrase)
        try await first.send("sent while locked", to: "journalist")
        try await first.lock()
        se.locked = true
        let before = se.calls
        // The app launched in the background on a locked phone: start, then the scheduled run.
        let (store, _) = try await makeStore(folder, clock: clock, secureElement: se, transport: node)
        clock.advance(3 * 3_600)
        let run = try await store.runBackgroundSend()
        #expect(run.sent == 2)
        #expect(se.calls == before, "the start or the send used the secure element")
        #expect(try node.delivered().map(\.text) == ["sent while locked"])
        await #expect(throws: DeniableError.self) { try await store.unlock(passphrase: passphrase) }
    }

    @Test("a new vault keeps the install's costs from its first start, whatever the configuration says now")
    func installCostsKept() async throws {
        let folder = temporaryFolder()
        _ = try await makeStore(folder)
        var later = testConfiguration()
        later.secureElementRounds = 9
        later.passphraseKDF.opsLimit += 1
        let (store, _) = try await makeStore(folder, configuration: later)
        _ = try await store.createVault()
        let file = try Data(contentsOf: folder.appendingPathComponent("deniable/vault"))
        let key = try storageKey(folder.appendingPathComponent("deniable"))
        let header = try Vault.open(file, expectedContentBytes: later.vaultContentBytes, storageKey: key).header
        #expect(header.rounds == testConfiguration().secureElementRounds)
        #expect(header.kdf == testConfiguration().passphraseKDF)
    }
}

@Suite("Deniable defaults without a hardware secure element")
struct DeniableCostDefaultsTests {
    @Test("the default configuration asks for CoverDrop's cost: 5 words, Argon2id 4 passes × 256 MiB, 200 secure-element rounds")
    func coverDropCost() throws {
        let c = DeniableConfiguration()
        #expect(c.passphraseWordCount == 5)
        #expect(c.passphraseKDF.opsLimit == 4)
        #expect(c.passphraseKDF.memLimit == 256 * 1024 * 1024)
        #expect(c.secureElementRounds == 200)
        try c.validate()
        let hardware = DeniableConfiguration.hardwareSecureElement
        #expect(hardware.passphraseWordCount == 3 && hardware.secureElementRounds == 200 && hardware.passphraseKDF.opsLimit == 2)
    }

    @Test("secure-element rounds outside 1…10000 are refused")
    func roundsValidated() {
        for bad in [0, 10_001] {
            var c = testConfiguration()
            c.secureElementRounds = bad
            #expect(throws: DeniableError.self) { try c.validate() }
        }
    }
}

@Suite("Secure element locked at a start that must make the vault")
struct LockedFreshVaultTests {
    @Test("a start on a locked phone that must make a fresh vault goes on without it, and the next unlocked start makes it")
    func freshVaultWaits() async throws {
        let folder = temporaryFolder()
        let se = CountingSecureElement(folder: folder)
        _ = try await makeStore(folder, secureElement: se)
        let vault = folder.appendingPathComponent("deniable/vault")
        try FileManager.default.removeItem(at: vault)
        se.locked = true
        let (locked, _) = try await makeStore(folder, secureElement: se)
        #expect(!FileManager.default.fileExists(atPath: vault.path))
        #expect(try await locked.dequeue().count == testConfiguration().queueItemBytes)
        se.locked = false
        let (again, _) = try await makeStore(folder, secureElement: se)
        #expect(try await again.status().lastStart?.created == ["vault"])
    }
}
