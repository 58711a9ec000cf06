// The wallet file's side of its secrets (keys, the credential master secret, credential
// signatures: reserved record types the record API refuses): transactions that may touch the
// reserved types, and what stays `Wallet`'s own. The secrets' API is `KeyWallet`'s, written once
// for both backends (KeyHolder.swift, KeyHolder+Secrets.swift).

import CofferCrypto
import Foundation
import GRDB

/// The kinds of key pair a wallet can hold.
public enum WalletKeyKind: String, Sendable, Hashable, CaseIterable {
    /// Ed25519, for signatures (and, converted, for boxes addressed to a verkey).
    case ed25519
    /// X25519, for key agreement (boxes and sealed boxes).
    case x25519
}

/// A key the wallet holds, by its public half.
public struct WalletPublicKey: Sendable, Hashable {
    /// The public key in Base58, as Indy writes verkeys.
    public let verkey: String
    /// Its algorithm.
    public let kind: WalletKeyKind

    /// A public key and its algorithm.
    public init(verkey: String, kind: WalletKeyKind) {
        self.verkey = verkey
        self.kind = kind
    }
}

/// A message encrypted with ``KeyWallet/box(_:from:to:recipientKind:)``.
public struct BoxedMessage: Sendable, Hashable {
    /// The random nonce.
    public let nonce: Data
    /// The ciphertext with its MAC.
    public let ciphertext: Data

    /// A nonce and ciphertext (e.g. received from the other side).
    public init(nonce: Data, ciphertext: Data) {
        self.nonce = nonce
        self.ciphertext = ciphertext
    }
}

/// Reserved record types (see `Validate.reservedTypePrefix`).
enum SecretTypes {
    static let key = "__coffer_key"
    static let masterSecret = "__coffer_master_secret"
    static let credentialSignature = "__coffer_credential_signature"
    /// Records of this type are credentials: deleting one deletes its signature too.
    static let credential = "credential"
    static let masterSecretID = "default"
    /// Every reserved type (a backend that cannot read a row's type name tells them by their blind type).
    static let reserved = [key, masterSecret, credentialSignature, agentKey]
}

extension Wallet {
    // MARK: Access to the reserved types

    func secretWrite<T: Sendable>(_ body: @escaping @Sendable (RecordStore) throws -> T) async throws -> T {
        try await gated { keys in
            try await pool.write { db in
                try Self.checkKeys(db, keys)
                return try body(RecordStore(db: db, keys: keys, allowReserved: true))
            }
        }
    }

    func secretRead<T: Sendable>(_ body: @escaping @Sendable (RecordStore) throws -> T) async throws -> T {
        try await gated { keys in
            try await pool.read { db in try Self.readWithKeys(db, keys) { try body(RecordStore(db: db, keys: keys, allowReserved: true)) } }
        }
    }

    // MARK: Keys (created and used through ``KeyWallet``, shared with the PostgreSQL backend)

    static func checkVerkey(_ verkey: String) throws {
        guard let bytes = Base58.decode(verkey), bytes.count == 32 else {
            throw WalletError.invalidInput("\(WalletError.quote(verkey)) is not a Base58 32-byte public key")
        }
    }

    /// Whether `signature` is `verkey`'s Ed25519 signature of `message`.
    /// - Throws: ``WalletError/invalidInput(_:)`` for a verkey that is not Base58 of 32 bytes.
    public static func verify(signature: Data, message: Data, verkey: String) throws -> Bool {
        try checkVerkey(verkey)
        return Ed25519KeyPair.verify(signature: signature, message: message, publicKey: Base58.decode(verkey)!)
    }

    /// The X25519 public key of a recipient given as a Base58 key of `kind`.
    static func agreementKey(_ key: String, kind: WalletKeyKind) throws -> Data {
        try checkVerkey(key)
        let bytes = Base58.decode(key)!
        switch kind {
        case .x25519: return bytes
        case .ed25519:
            do { return try Ed25519KeyPair.keyAgreementPublicKey(of: bytes) } catch {
                throw WalletError.invalidInput("\(WalletError.quote(key)) is not a valid Ed25519 public key")
            }
        }
    }

    /// Seals `message` to a recipient's public key (libsodium sealed box); only its holder opens it.
    public static func sealedBox(_ message: Data, to recipient: String, recipientKind: WalletKeyKind = .x25519) throws -> Data {
        try SealedBox.seal(message, to: agreementKey(recipient, kind: recipientKind))
    }

    // MARK: Credential master secret and signatures (created and used through ``KeyWallet``)

    static let notProvisioned = WalletError.invalidInput(
        "this wallet has no credential master secret: provision it for the SDK first with initializeMasterSecret() (once, when the wallet is set up)"
    )

    /// Lends a credential's signature to code inside this module; tests reach it with `@testable`.
    func withCredentialSignature<T>(credentialID: String, _ body: (String) throws -> T) async throws -> T {
        let record = try await secretRead { store in
            try store.get(
                type: SecretTypes.credentialSignature, id: credentialID, options: RecordOptions(retrieveValue: true, retrieveTags: false))
        }
        guard let value = record?.value else { throw WalletError.notFound(type: "credential signature", id: credentialID) }
        return try body(value)
    }
}
