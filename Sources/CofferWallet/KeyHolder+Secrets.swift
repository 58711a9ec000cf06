// The SDK's secrets beside the keys, written once for both backends: the credential master secret
// (32 random bytes, stored as their base64 text like a key's secret) and credential signatures
// (text, stored from its UTF-8 bytes in guarded memory). Records of reserved types, sealed and
// blinded like every record, out of the record API's reach; no operation here returns a secret.

import CofferCrypto
import Foundation

extension KeyWallet {
    /// Provisions the wallet for the SDK: creates the credential master secret if the wallet has
    /// none. Call it once when the wallet is provisioned (the demo's provisioning step does);
    /// the secret is never replaced, and a credential request on an unprovisioned wallet is
    /// refused rather than making one then. Returns whether it was created now.
    @discardableResult
    public func initializeMasterSecret() async throws -> Bool { try await keyAccess.holder.initializeHeldMasterSecret() }

    /// Whether the credential master secret exists.
    public func hasMasterSecret() async throws -> Bool {
        try await keyAccess.holder.containsReserved(type: SecretTypes.masterSecret, id: SecretTypes.masterSecretID)
    }

    /// Stores a credential's signature as a secret (replacing one under the same id); deleting
    /// the credential record (type `credential`, same id) deletes it too. The SDK calls this as
    /// soon as a credential arrives.
    /// - Throws: ``WalletError/invalidInput(_:)`` for an empty id or a signature longer than a
    ///   record value may be.
    public func storeCredentialSignature(_ signature: String, credentialID: String) async throws {
        try await keyAccess.holder.storeHeldCredentialSignature(signature, credentialID: credentialID)
    }

    /// Whether a signature is stored for the credential.
    public func hasCredentialSignature(credentialID: String) async throws -> Bool {
        try Validate.id(credentialID)
        return try await keyAccess.holder.containsReserved(type: SecretTypes.credentialSignature, id: credentialID)
    }

    /// The binding of the master secret to a credential definition that a credential request
    /// carries: HMAC-SHA-256 under the master secret, domain 1, of the definition's id. The
    /// secret is used here and never leaves the module. Not visible to clients of the library.
    /// - Throws: ``WalletError/invalidInput(_:)`` when the wallet was not provisioned.
    package func masterSecretBinding(credentialDefinitionID: String) async throws -> Data {
        try await keyAccess.holder.withMasterSecret { secret in KeyedHash(key: secret).hash(domain: 1, Data(credentialDefinitionID.utf8)) }
    }

    /// Removes the signature kept for a credential that was then rejected (no error when there is
    /// none). Not visible to clients of the library.
    package func removeCredentialSignature(credentialID: String) async throws {
        try Validate.id(credentialID)
        _ = try await keyAccess.holder.removeReserved(type: SecretTypes.credentialSignature, id: credentialID)
    }

    /// Stores an accepted credential (the SDK's acceptance step): the record under type
    /// `credential`, added in one transaction that first finds the signature stored when the
    /// credential arrived. Not visible to clients of the library.
    /// - Throws: ``WalletError/notFound(type:id:)`` (type `credential signature`) when no
    ///   signature is kept for it; ``WalletError/duplicate(type:id:)`` when the credential is stored.
    package func storeCredential(id: String, value: String, tags: WalletTags) async throws {
        try Validate.id(id)
        try Validate.value(value)
        try await keyAccess.holder.addSignedCredential(id: id, value: value, tags: tags)
    }

    /// Removes a held key (the SDK's undo of a step that made one and then failed; no error when
    /// there is none). Its opened pair is dropped from the cache, so its secret is wiped. Not
    /// visible to clients of the library.
    package func removeKey(_ verkey: String) async throws {
        let holder = keyAccess.holder
        _ = try await holder.removeReserved(type: SecretTypes.key, id: verkey)
        holder.heldKeys.remove(verkey, retire: true)
    }
}

extension KeyHolder {
    /// Creates the master secret unless there is one (one transaction decides); whether it did.
    func initializeHeldMasterSecret() async throws -> Bool {
        try await writeReserved(
            ReservedRecord(type: SecretTypes.masterSecret, id: SecretTypes.masterSecretID, secret: SecretKey.random(byteCount: 32)),
            existing: .keep)
    }

    /// Lends the master secret to code inside this module (tests reach it with `@testable`).
    /// - Throws: ``WalletError/invalidInput(_:)`` when the wallet was not provisioned.
    func withMasterSecret<T>(_ body: (SecretKey) throws -> T) async throws -> T {
        guard let record = try await readReservedSecret(type: SecretTypes.masterSecret, id: SecretTypes.masterSecretID, byteCount: 32)
        else { throw Wallet.notProvisioned }
        guard let secret = record.secret else {
            throw WalletError.corrupted("the stored credential master secret does not decode to 32 bytes")
        }
        return try body(secret)
    }

    /// Stores `signature` for the credential, replacing one there: sealed from its UTF-8 bytes
    /// copied into guarded memory (wiped on release), never from a `String` the wallet keeps.
    func storeHeldCredentialSignature(_ signature: String, credentialID: String) async throws {
        try Validate.id(credentialID)
        try Validate.value(signature)
        var text = signature
        // An empty value needs no bytes (and a `SecretKey` cannot be empty).
        let bytes = try text.isEmpty ? nil : text.withUTF8 { try SecretKey(copying: UnsafeRawBufferPointer($0)) }
        _ = try await writeReserved(
            ReservedRecord(type: SecretTypes.credentialSignature, id: credentialID, bytes: bytes), existing: .replace)
    }

    /// The signature kept for a credential, as bytes in guarded memory (nil inside: an empty
    /// one); nil when none is kept. For code inside this module; tests reach it with `@testable`.
    func credentialSignatureBytes(credentialID: String) async throws -> SecretKey?? {
        try Validate.id(credentialID)
        return try await readReservedBytes(type: SecretTypes.credentialSignature, id: credentialID)
    }
}
