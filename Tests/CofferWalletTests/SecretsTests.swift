import CofferCrypto
import Foundation
import Testing

@testable import CofferWallet

@Suite("Secrets")
struct SecretsTests {
    @Test("every record call refuses a reserved type with a clear error")
    func reservedTypeRefused() async throws {
        let (wallet, _) = try await TestWallets.make()
        let verkey = try await wallet.createKey()
        let reserved = "__coffer_key"
        let calls: [(String, () async throws -> Void)] = [
            ("add", { try await wallet.add(type: reserved, id: "x", value: "v") }),
            ("get", { _ = try await wallet.get(type: reserved, id: verkey) }),
            ("update", { try await wallet.update(type: reserved, id: verkey, value: "v") }),
            ("delete", { try await wallet.delete(type: reserved, id: verkey) }),
            ("addTags", { try await wallet.addTags(type: reserved, id: verkey, tags: ["a": "b"]) }),
            ("count", { _ = try await wallet.count(type: reserved) }),
            ("fetchAll", { _ = try await wallet.fetchAll(type: reserved) }),
            ("openSearch", { _ = try await wallet.openSearch(type: reserved, query: .all) }),
            ("removeAll", { _ = try await wallet.removeAll(type: reserved) }),
        ]
        for (name, call) in calls {
            do {
                try await call()
                Issue.record("\(name) accepted a reserved type")
            } catch let error as WalletError {
                guard case .invalidInput(let message) = error, message.contains("reserved") else {
                    Issue.record("\(name): expected a reserved-type error, got \(error)")
                    continue
                }
            }
        }
        // The key is still there and still signs.
        #expect(try await wallet.sign(Data("m".utf8), with: verkey).count == 64)
    }

    @Test("a wallet key signs, and the signature verifies against its Base58 verkey")
    func signVerify() async throws {
        let (wallet, _) = try await TestWallets.make()
        let verkey = try await wallet.createKey(.ed25519)
        let message = Data("hello".utf8)
        let signature = try await wallet.sign(message, with: verkey)
        #expect(try Wallet.verify(signature: signature, message: message, verkey: verkey))
        #expect(try !Wallet.verify(signature: signature, message: Data("other".utf8), verkey: verkey))
        #expect(Base58.decode(verkey)?.count == 32)
    }

    @Test("a sealed box to a wallet key opens in the wallet, for X25519 and for Ed25519 verkeys")
    func sealedBoxes() async throws {
        let (wallet, _) = try await TestWallets.make()
        for kind in WalletKeyKind.allCases {
            let key = try await wallet.createKey(kind)
            let box = try Wallet.sealedBox(Data("secret".utf8), to: key, recipientKind: kind)
            #expect(try await wallet.openSealedBox(box, with: key) == Data("secret".utf8))
        }
    }

    @Test("a box between two wallet keys opens for the recipient and fails when altered")
    func boxes() async throws {
        let (wallet, _) = try await TestWallets.make()
        let alice = try await wallet.createKey(.x25519)
        let bob = try await wallet.createKey(.x25519)
        let boxed = try await wallet.box(Data("hi bob".utf8), from: alice, to: bob)
        #expect(try await wallet.openBox(boxed, from: alice, to: bob) == Data("hi bob".utf8))
        var bad = boxed.ciphertext
        bad[0] ^= 1
        await #expect(throws: WalletError.self) {
            _ = try await wallet.openBox(BoxedMessage(nonce: boxed.nonce, ciphertext: bad), from: alice, to: bob)
        }
    }

    @Test("listing keys gives public keys only")
    func listKeys() async throws {
        let (wallet, _) = try await TestWallets.make()
        let a = try await wallet.createKey(.ed25519)
        let b = try await wallet.createKey(.x25519)
        let listed = try await wallet.listKeys()
        #expect(Set(listed) == [WalletPublicKey(verkey: a, kind: .ed25519), WalletPublicKey(verkey: b, kind: .x25519)])
    }

    @Test("the master secret is created once and never again")
    func masterSecretOnce() async throws {
        let (wallet, _) = try await TestWallets.make()
        #expect(try await wallet.initializeMasterSecret())
        let first = try await wallet.withMasterSecret { $0.exportBytes() }
        #expect(try await wallet.initializeMasterSecret() == false)
        #expect(try await wallet.withMasterSecret { $0.exportBytes() } == first)
    }

    @Test("a key the wallet holds is opened once and then served from the cache")
    func keyCached() async throws {
        let (wallet, _) = try await TestWallets.make()
        let verkey = try await wallet.createKey(.ed25519)
        wallet.heldKeys.remove(verkey)
        _ = try await wallet.sign(Data("m".utf8), with: verkey)
        #expect(wallet.heldKeys.get(verkey) != nil)
    }

    @Test("a cached key still signs and opens exactly as the stored key does")
    func cachedKeyWorks() async throws {
        let (wallet, _) = try await TestWallets.make()
        let verkey = try await wallet.createKey(.ed25519)
        let message = Data("cached".utf8)
        let first = try await wallet.sign(message, with: verkey)
        wallet.heldKeys.remove(verkey)
        #expect(try await wallet.sign(message, with: verkey) == first)
        let box = try Wallet.sealedBox(message, to: verkey, recipientKind: .ed25519)
        #expect(try await wallet.openSealedBox(box, with: verkey) == message)
    }

    @Test("removing a key drops its opened pair, so it signs no more")
    func removeKeyEvicts() async throws {
        let (wallet, _) = try await TestWallets.make()
        let verkey = try await wallet.createKey(.ed25519)
        _ = try await wallet.sign(Data("m".utf8), with: verkey)
        try await wallet.removeKey(verkey)
        #expect(wallet.heldKeys.get(verkey) == nil)
        await #expect(throws: WalletError.notFound(type: "key", id: verkey)) { _ = try await wallet.sign(Data("m".utf8), with: verkey) }
    }

    @Test("closing the wallet empties the key cache and keeps it empty")
    func closeEmptiesCache() async throws {
        let (wallet, _) = try await TestWallets.make()
        let verkey = try await wallet.createKey(.ed25519)
        try wallet.close()
        #expect(wallet.heldKeys.count == 0)
        await #expect(throws: WalletError.self) { _ = try await wallet.sign(Data("m".utf8), with: verkey) }
        #expect(wallet.heldKeys.count == 0)
    }

    @Test("the master secret binding needs a provisioned wallet, with an error saying so")
    func bindingNeedsProvisioning() async throws {
        let (wallet, _) = try await TestWallets.make()
        await #expect(throws: Wallet.notProvisioned) { _ = try await wallet.masterSecretBinding(credentialDefinitionID: "d") }
        #expect(Wallet.notProvisioned.description.contains("initializeMasterSecret"))
    }

    @Test("accepting a credential needs the signature kept when it arrived")
    func storeCredentialNeedsSignature() async throws {
        let (wallet, _) = try await TestWallets.make()
        await #expect(throws: WalletError.notFound(type: "credential signature", id: "c9")) {
            try await wallet.storeCredential(id: "c9", value: "{}", tags: [:])
        }
        #expect(try await wallet.count(type: "credential") == 0)
    }

    @Test("a credential's signature is deleted with the credential")
    func signatureGoesWithCredential() async throws {
        let (wallet, _) = try await TestWallets.make()
        try await wallet.add(type: "credential", id: "c1", value: "{}")
        try await wallet.storeCredentialSignature(#"{"sig":1}"#, credentialID: "c1")
        #expect(try await wallet.hasCredentialSignature(credentialID: "c1"))
        try await wallet.delete(type: "credential", id: "c1")
        #expect(try await wallet.hasCredentialSignature(credentialID: "c1") == false)
    }

    @Test("deleting a credential that is not there keeps a signature stored under its id")
    func failedDeleteKeepsSignature() async throws {
        let (wallet, _) = try await TestWallets.make()
        try await wallet.storeCredentialSignature("sig", credentialID: "missing")
        await #expect(throws: WalletError.notFound(type: "credential", id: "missing")) {
            try await wallet.delete(type: "credential", id: "missing")
        }
        #expect(try await wallet.hasCredentialSignature(credentialID: "missing"))
    }

    @Test("Base58 round-trips and keeps leading zero bytes")
    func base58() {
        let data = Data([0, 0, 1, 2, 255, 128])
        #expect(Base58.decode(Base58.encode(data)) == data)
        #expect(Base58.encode(Data("hello world".utf8)) == "StV1DL6CwTryKyV")
        #expect(Base58.decode("0OIl") == nil)
    }
}
