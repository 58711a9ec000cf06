// Stores an earlier Coffer left (format 2: vault `CFVAULT2`, queue `CFQUEUE2`, both keyed by the
// HMAC stand-in `secure-element.key`) convert at their next start, used and unused alike, and a
// kill -9 in the middle of the conversion leaves a store the next start finishes.

import CofferCrypto
import CofferDevelopment
import CofferTestSupport
import Foundation
import Testing

@testable import CofferDeniable

/// Writes the files a format-2 store holds, as an earlier version wrote them.
enum FormatTwoStore {
    /// `secure-element.key` (the HMAC stand-in's key), `vault` (CFVAULT2) under `passphrase`
    /// holding `messages`, and `sending-queue` (CFQUEUE2) with `queued` real items at the head.
    static func write(
        _ folder: URL, configuration: DeniableConfiguration, passphrase: String, messages: [String], queued: Int
    ) throws {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let elementKey = SecretKey.random()
        try OwnerOnlyKeyFile(url: folder.appendingPathComponent("secure-element.key")).write(elementKey)
        let former = LegacyElementKey(key: elementKey)

        let header = Vault.Header(
            contentBytes: configuration.vaultContentBytes, kdf: configuration.passphraseKDF, rounds: 1, salt: SecureRandom.bytes(16))
        var contents = VaultContents.fresh()
        for text in messages { contents.messages.append(MailboxMessage(direction: .sent, peer: "journalist", text: text, date: Date())) }
        let stretched = try Argon2id.deriveKey(passphrase: passphrase, salt: header.salt, parameters: header.kdf)
        let vaultKey = Vault.formerKey(stretched: stretched, salt: header.salt, carried: elementKey)
        let innerHeader = header.formerBytes(magic: Vault.formerMagic)
        var body = Data(innerHeader)
        body.append(
            try AEAD.xchacha20Poly1305.seal(try contents.padded(size: header.contentBytes), key: vaultKey, associatedData: innerHeader))
        var w = Writer(buffer: [])
        w.bytes(Vault.formerMagic)
        w.u32(UInt32(header.contentBytes))
        let outerSalt = SecureRandom.bytes(16)
        w.bytes(Array(outerSalt))
        let clear = Data(w.buffer)
        var vault = clear
        vault.append(
            try AEAD.xchacha20Poly1305.seal(
                body, key: former.authenticate(Data("coffer.deniable.vault.outer.v2".utf8) + outerSalt), associatedData: clear))
        try vault.write(to: folder.appendingPathComponent("vault"))

        let slots = configuration.queueSlots
        let itemBytes = configuration.queueItemBytes
        var items = [Data]()
        var hints = [Data]()
        for i in 0..<slots {
            let item = SecureRandom.bytes(itemBytes)
            items.append(item)
            hints.append(i < queued ? KeyedHash(key: contents.queueSecret).raw(item) : SecureRandom.bytes(32))
        }
        var q = Writer(buffer: [])
        q.bytes(SendingQueue.formerMagic)
        q.u32(UInt32(slots))
        q.u32(UInt32(itemBytes))
        q.u32(32)
        let queueSalt = SecureRandom.bytes(16)
        q.bytes(Array(queueSalt))
        let queueClear = Data(q.buffer)
        var plain = Data()
        for item in items { plain.append(item) }
        for hint in hints { plain.append(hint) }
        var queue = queueClear
        queue.append(
            try AEAD.xchacha20Poly1305.seal(
                plain, key: former.authenticate(Data("coffer.deniable.queue.outer.v2".utf8) + queueSalt), associatedData: queueClear))
        try queue.write(to: folder.appendingPathComponent("sending-queue"))
    }

    /// Every file 0600 with one modification time, the folder 0700, as a format-2 start left them.
    static func settle(_ folder: URL, at date: Date) throws {
        let fm = FileManager.default
        for name in try fm.contentsOfDirectory(atPath: folder.path) {
            try fm.setAttributes(
                [.posixPermissions: 0o600, .modificationDate: date], ofItemAtPath: folder.appendingPathComponent(name).path)
        }
        try fm.setAttributes([.posixPermissions: 0o700, .modificationDate: date], ofItemAtPath: folder.path)
    }

    static func magic(_ url: URL) -> String {
        String(decoding: ((try? Data(contentsOf: url)) ?? Data()).prefix(8), as: UTF8.self)
    }
}

@Suite("Deniable format-2 stores convert at the next start")
struct DeniableConversionTests {
    /// Both stores of `stores` turned into format-2 stores (the user's holds a message and a
    /// queued item under `passphrase`), with their other files as a start of the new version left them.
    static func makeFormatTwo(_ stores: TwoStores, passphrase: String) async throws {
        for name in ["user", "plain"] { _ = try await stores.start(name) }
        let date = stores.clock.now.addingTimeInterval(-60)
        for name in ["user", "plain"] {
            let folder = stores.folder(name)
            for file in ["storage.key", "secure-element-p256.key"] {
                try FileManager.default.removeItem(at: folder.appendingPathComponent(file))
            }
            let used = name == "user"
            try FormatTwoStore.write(
                folder, configuration: stores.configuration, passphrase: used ? passphrase : Passphrase.generate(wordCount: 5),
                messages: used ? ["before the upgrade"] : [], queued: used ? 1 : 0)
            try FormatTwoStore.settle(folder, at: date)
        }
    }

    @Test(
        "a used and an unused format-2 store change the same way when they convert, and after it through unlock, sends, fetches and key refresh"
    )
    func conversionLooksAlike() async throws {
        let stores = try TwoStores()
        let passphrase = Passphrase.generate(wordCount: 5)
        try await Self.makeFormatTwo(stores, passphrase: passphrase)
        let before = try stores.snapshot()
        #expect(before.user.shape == before.plain.shape)
        #expect(before.user.files["secure-element.key"] != nil && before.user.files["storage.key"] == nil)

        // The conversion: both apps start.
        stores.clock.advance(3_600)
        let user = try await stores.start("user")
        let plain = try await stores.start("plain")
        let converted = try stores.snapshot()
        #expect(try await user.status().lastStart?.converted == ["sending-queue", "vault", "secure-element.key"])
        #expect(try await plain.status().lastStart?.converted == ["sending-queue", "vault", "secure-element.key"])
        #expect(converted.user.shape == converted.plain.shape)
        let userChanges = before.user.changes(to: converted.user)
        #expect(userChanges == before.plain.changes(to: converted.plain))
        #expect(
            userChanges["secure-element.key"] == "removed" && userChanges["storage.key"]?.hasPrefix("created") == true, "\(userChanges)")
        #expect(FormatTwoStore.magic(stores.folder("user").appendingPathComponent("vault")) == "CFVAULT3")

        // After it: the user unlocks (the vault is re-keyed) and locks; both send in the
        // background, fetch dead drops and refresh keys an hour later.
        try await user.unlock(passphrase: passphrase)
        #expect(try await user.mailbox().map(\.text) == ["before the upgrade"])
        // Both apps lock on leaving (a locked vault's outer layer is rewritten all the same).
        for store in [user, plain] { try await store.lock() }
        stores.clock.advance(3_600)
        for store in [user, plain] {
            #expect(try await store.runBackgroundSend().sent == 2)
            _ = await store.refreshDeadDrops()
            _ = try await store.refreshPublicKeys()
        }
        let after = try stores.snapshot()
        expectIndistinguishable(before: converted, after: after)
        // The re-keyed vault opens with the version-3 key alone at the next start.
        let again = try await stores.start("user")
        try await again.unlock(passphrase: passphrase)
        #expect(try await again.mailbox().map(\.text) == ["before the upgrade"])
    }

    @Test("a wrong passphrase on a converted vault is refused after the same secure-element work as on a new one")
    func convertedWrongPassphrase() async throws {
        let stores = try TwoStores()
        try await Self.makeFormatTwo(stores, passphrase: Passphrase.generate(wordCount: 5))
        let user = try await stores.start("user")
        await #expect(throws: DeniableError.unlockFailed) { try await user.unlock(passphrase: Passphrase.generate(wordCount: 5)) }
        #expect(FileManager.default.fileExists(atPath: stores.folder("user").appendingPathComponent("vault").path))
    }

    /// A format-2 store the CLI uses (default configuration, cheapest Argon2id in the vault).
    static func cliStore(passphrase: String) throws -> URL {
        let store = TemporaryFolders.path("coffer-deniable-convert")
        var c = DeniableConfiguration()
        c.passphraseKDF = .minimum
        try FormatTwoStore.write(
            store.appendingPathComponent("deniable"), configuration: c, passphrase: passphrase, messages: ["before the upgrade"], queued: 1)
        return store
    }

    @Test("killed after the queue converted and before the vault did: the next start finishes and the passphrase still opens the mailbox")
    func killedBetweenQueueAndVault() async throws {
        try await Self.killedConversion(at: "deniable-queue-converted") { folder in
            FormatTwoStore.magic(folder.appendingPathComponent("sending-queue")) == "CFQUEUE3"
                && FormatTwoStore.magic(folder.appendingPathComponent("vault")) == "CFVAULT2"
        }
    }

    @Test("killed after the vault converted and before the former key was removed: the next start finishes it")
    func killedBeforeKeyRemoved() async throws {
        try await Self.killedConversion(at: "deniable-vault-converted") { folder in
            FormatTwoStore.magic(folder.appendingPathComponent("vault")) == "CFVAULT3"
                && FileManager.default.fileExists(atPath: folder.appendingPathComponent("secure-element.key").path)
        }
    }

    static func killedConversion(at point: String, midway: (URL) -> Bool) async throws {
        let passphrase = Passphrase.generate(wordCount: 5)
        let store = try cliStore(passphrase: passphrase)
        let folder = store.appendingPathComponent("deniable")
        let child = try CLI.start(
            ["deniable", "start"], store: store, env: ["COFFER_TEST_PAUSE_AT": point, "COFFER_TEST_PAUSE_MS": "600000"])
        try await [child].waitForStderr(containingOrEnded: "test-pause: \(point)")
        // The kill lands mid-conversion: the child is paused there, and the files show it.
        #expect(child.stderrSoFar.contains("test-pause: \(point)"), "the pause was not reached")
        #expect(child.isRunning)
        #expect(midway(folder), "the files are not half converted")
        #expect(try await child.killAndWait().wasSignalled)

        let start = try await CLI.run(["deniable", "start"], store: store)
        #expect(start.status == 0, "\(start.stderr)")
        #expect(FormatTwoStore.magic(folder.appendingPathComponent("vault")) == "CFVAULT3")
        #expect(FormatTwoStore.magic(folder.appendingPathComponent("sending-queue")) == "CFQUEUE3")
        #expect(!FileManager.default.fileExists(atPath: folder.appendingPathComponent("secure-element.key").path))
        let unlock = try await CLI.run(["--passphrase-env", "P", "deniable", "unlock"], store: store, env: ["P": passphrase])
        #expect(unlock.status == 0, "\(unlock.stderr)")
        #expect(unlock.stdout.contains("before the upgrade"))
    }
}

@Suite("Deniable format-2 stores with a key file others can read")
struct DeniableConversionRefusalTests {
    @Test("a format-2 store whose former key file others can read is refused, not replaced, until its mode is fixed")
    func wideFormerKeyRefused() async throws {
        let passphrase = Passphrase.generate(wordCount: 5)
        let store = try DeniableConversionTests.cliStore(passphrase: passphrase)
        let folder = store.appendingPathComponent("deniable")
        let keyFile = folder.appendingPathComponent("secure-element.key")
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: keyFile.path)
        let vaultBefore = try Data(contentsOf: folder.appendingPathComponent("vault"))
        let refused = try await CLI.run(["deniable", "start"], store: store)
        #expect(refused.status == 6, "\(refused.stderr)")
        #expect(refused.stderr.contains("0600"), "\(refused.stderr)")
        #expect(try Data(contentsOf: folder.appendingPathComponent("vault")) == vaultBefore)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: keyFile.path)
        #expect(try await CLI.run(["deniable", "start"], store: store).status == 0)
        let unlock = try await CLI.run(["--passphrase-env", "P", "deniable", "unlock"], store: store, env: ["P": passphrase])
        #expect(unlock.stdout.contains("before the upgrade"), "\(unlock.stderr)")
    }
}
