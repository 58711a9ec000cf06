// A reserved secret's value (a key, the master secret, a credential signature) is read as bytes
// in guarded memory, or not at all, by every path that does not hand it to its caller: no
// `String` of it is made (Swift cannot wipe a `String`).

import CofferCrypto
import CofferSync
import Foundation
import Testing

@testable import CofferWallet

@Suite("Reserved secrets stay in bytes")
struct SecretBytesTests {
    /// The debug builds' count of reserved values decoded into a `String` under `keys`' blinds.
    static func texts(_ keys: WalletKeys) -> Int {
        let blinds = [SecretTypes.key, SecretTypes.masterSecret, SecretTypes.credentialSignature].map { keys.typeBlind($0) }
        return RecordCodec.reservedValueTexts.withLock { counts in blinds.reduce(0) { $0 + (counts[$1] ?? 0) } }
    }

    @Test("presence checks, key listing, signing, check, backup export and rotation decode no reserved value into a String")
    func noStringOfASecret() async throws {
        let (wallet, url) = try await TestWallets.make()
        let verkey = try await wallet.createKey()
        let x25519 = try await wallet.createKey(.x25519)
        try await wallet.initializeMasterSecret()
        try await wallet.storeCredentialSignature(#"{"sig":"s\"1"}"#, credentialID: "c1")
        let binding = try await wallet.masterSecretBinding(credentialDefinitionID: "d")
        let before = wallet.gate.current

        #expect(try await !wallet.initializeMasterSecret())
        #expect(try await wallet.hasMasterSecret())
        #expect(Set(try await wallet.listKeys().map(\.verkey)) == [verkey, x25519])
        #expect(try await wallet.hasCredentialSignature(credentialID: "c1"))
        // Quotes and a control character: the export escapes them from the bytes.
        let signature = #"{"sig":"s\"2"}"# + "\n\u{1}"
        try await wallet.storeCredentialSignature(signature, credentialID: "c1")
        let message = Data("m".utf8)
        #expect(try Wallet.verify(signature: try await wallet.sign(message, with: verkey), message: message, verkey: verkey))
        #expect(try await wallet.checkIntegrity().isClean)
        let backup = url.deletingLastPathComponent().appendingPathComponent("wallet.backup")
        try await wallet.exportBackup(to: backup, passphrase: "p", parameters: BackupKey.floor)
        try await wallet.rekey(to: .raw(Data(repeating: 9, count: 32)), rotatingKey: true)
        let after = wallet.gate.current
        // After rotation, read back from the file (the opened key cache is dropped with the keys).
        #expect(try Wallet.verify(signature: try await wallet.sign(message, with: verkey), message: message, verkey: verkey))
        #expect(try await wallet.masterSecretBinding(credentialDefinitionID: "d") == binding)
        #expect(try await wallet.checkIntegrity().isClean)
        #expect(Self.texts(before) == 0)
        #expect(Self.texts(after) == 0)
        // The one read that hands a secret out as a `String` (its API's type) is counted: the
        // count does see decodes.
        #expect(try await wallet.withCredentialSignature(credentialID: "c1") { $0 } == signature)
        #expect(Self.texts(after) == 1)
        try wallet.close()

        // The export wrote the secrets' bytes as JSON text that restores to the same secrets.
        let restored = try await Wallet.importBackup(
            from: backup, passphrase: "p", into: TestWallets.folder().appendingPathComponent("r.sqlite"), key: .raw(TestWallets.rawKey))
        defer { try? restored.close() }
        #expect(try Wallet.verify(signature: try await restored.sign(message, with: verkey), message: message, verkey: verkey))
        #expect(try await restored.masterSecretBinding(credentialDefinitionID: "d") == binding)
        #expect(try await restored.withCredentialSignature(credentialID: "c1") { $0 } == signature)
    }

    @Test("the bytes mode reads a value into guarded memory and no String; the skipped mode reads none")
    func decodeModes() throws {
        let keys = WalletKeys(master: SecretKey.random())
        let type = SecretTypes.key
        let tb = keys.typeBlind(type)
        let ib = keys.idBlind(typeBlind: tb, id: "k")
        let value = "c2VjcmV0\"\u{1}é"
        let sealed = RecordCodec.seal(
            .init(type: type, id: "k", value: value, tags: ["kind": "ed25519"]), typeBlind: tb, idBlind: ib, expiry: nil, keys: keys)

        let bytes = try RecordCodec.open(sealed, typeBlind: tb, idBlind: ib, expiry: nil, keys: keys, value: .keepingSecrets(of: type))
        #expect(bytes.value.isEmpty)
        #expect(bytes.valueBytes?.exportBytes() == Data(value.utf8))
        #expect(bytes.tags.entries[ByteString("kind")] == .string("ed25519"))
        #expect(bytes.id == "k")

        let skipped = try RecordCodec.open(sealed, typeBlind: tb, idBlind: ib, expiry: nil, keys: keys, value: .skipped)
        #expect(skipped.value.isEmpty)
        #expect(skipped.valueBytes == nil)

        // Re-sealed from its bytes, the record reads back the same; a backup batch writes the
        // same JSON from the bytes as from the text.
        let resealed = RecordCodec.seal(bytes, typeBlind: tb, idBlind: ib, expiry: nil, keys: keys)
        #expect(try RecordCodec.open(resealed, typeBlind: tb, idBlind: ib, expiry: nil, keys: keys).value == value)
        var fromBytes = BackupBatch()
        fromBytes.append(type: type, contents: bytes, expiry: nil)
        var fromText = BackupBatch()
        fromText.append(
            type: type, contents: try RecordCodec.open(sealed, typeBlind: tb, idBlind: ib, expiry: nil, keys: keys), expiry: nil)
        #expect(fromBytes.bytes == fromText.bytes)
        #expect(RecordCodec.ValueMode.keepingSecrets(of: "credential") == .text)
    }

    @Test("a backup batch reserves a whole batch up front: appending a full batch never moves its buffer")
    func batchReservedUpFront() throws {
        var batch = BackupBatch()
        let start = batch.bytes.withUnsafeBufferPointer { $0.baseAddress }
        let contents = RecordCodec.Contents(type: "t", id: "id", value: String(repeating: "v", count: 1_000), tags: ["a": "b"])
        while batch.byteCount < BackupFormat.batchBytes { batch.append(type: "t", contents: contents, expiry: 1) }
        #expect(batch.bytes.withUnsafeBufferPointer { $0.baseAddress } == start)
    }
}
