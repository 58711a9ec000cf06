// The wallet's key operations, written once for both backends: a key is a record of the reserved
// type `SecretTypes.key` (id: its Base58 public key, tag `kind`, value: the secret's base64,
// sealed like every record). A backend only stores, reads and lists those records; making,
// opening, caching and using the keys is here, and so is their public API (`KeyWallet`). No
// operation returns a secret.

import CofferCrypto
import Foundation

/// A wallet that holds key pairs and uses them inside itself — signs, opens sealed boxes, boxes
/// and opens boxes — printing and returning only public keys, and that keeps the SDK's other
/// secrets (the credential master secret, credential signatures) without ever returning them: ``Wallet`` (a file on SQLite) and,
/// in a build with the package trait `PostgreSQL`, `PostgresWallet` (a profile in a PostgreSQL
/// database), with the same arguments, errors and results. The keys are records of a reserved
/// type, sealed under the wallet's (the profile's) key like every record and out of the record
/// API's reach. Only Coffer's wallets conform (see ``keyAccess``).
public protocol KeyWallet: AnyObject, Sendable {
    /// How the key operations reach this wallet's key records: opaque, nothing of it is public,
    /// and only Coffer's wallets can make one.
    var keyAccess: WalletKeyAccess { get }
}

/// How a ``KeyWallet``'s operations reach its key records (opaque).
public struct WalletKeyAccess: Sendable {
    let holder: any KeyHolder
}

extension KeyWallet {
    /// Creates a key pair inside the wallet and returns only its public key (Base58).
    public func createKey(_ kind: WalletKeyKind = .ed25519) async throws -> String { try await keyAccess.holder.createHeldKey(kind) }

    /// The public halves of every key the wallet holds, in the order they were created.
    public func listKeys() async throws -> [WalletPublicKey] { try await keyAccess.holder.heldPublicKeys() }

    /// Signs `message` with the Ed25519 key `verkey` the wallet holds (check it with
    /// ``Wallet/verify(signature:message:verkey:)``).
    /// - Throws: ``WalletError/notFound(type:id:)`` for a key the wallet does not hold,
    ///   ``WalletError/invalidInput(_:)`` when it is not an Ed25519 key.
    public func sign(_ message: Data, with verkey: String) async throws -> Data {
        try await keyAccess.holder.signWithHeldKey(message, verkey)
    }

    /// Opens a sealed box (``Wallet/sealedBox(_:to:recipientKind:)``) addressed to a key the wallet holds.
    /// - Throws: ``WalletError/invalidInput(_:)`` when the box is not for this key or was altered.
    public func openSealedBox(_ box: Data, with verkey: String) async throws -> Data {
        try await keyAccess.holder.openSealedBoxWithHeldKey(box, verkey)
    }

    /// Encrypts `message` from a key the wallet holds to a recipient's public key (libsodium box):
    /// the recipient can tell it came from the sender.
    public func box(_ message: Data, from sender: String, to recipient: String, recipientKind: WalletKeyKind = .x25519) async throws
        -> BoxedMessage
    {
        try await keyAccess.holder.boxFromHeldKey(message, sender, to: recipient, recipientKind: recipientKind)
    }

    /// Decrypts a box from `sender` to a key the wallet holds.
    /// - Throws: ``WalletError/invalidInput(_:)`` when it does not authenticate.
    public func openBox(_ boxed: BoxedMessage, from sender: String, senderKind: WalletKeyKind = .x25519, to recipient: String) async throws
        -> Data
    {
        try await keyAccess.holder.openBoxWithHeldKey(boxed, from: sender, senderKind: senderKind, to: recipient)
    }
}

/// A wallet profile that holds the wallet's secrets as reserved records (``Wallet`` on SQLite,
/// `PostgresWallet`): keys, the credential master secret, credential signatures. A backend only
/// stores, reads, lists and removes those records, always with their values as bytes (never a
/// `String`); what they mean and how they are used is written once, here and in
/// KeyHolder+Secrets.swift.
protocol KeyHolder: Sendable {
    /// The opened pairs of this profile's keys, emptied when it closes.
    var heldKeys: HeldKeyCache { get }
    /// Writes `record` in one transaction. When a live record of its type and id is there,
    /// `existing` decides: refuse (``WalletError/duplicate(type:id:)``), keep it (nothing is
    /// written), or replace it. Returns whether `record` was written.
    func writeReserved(_ record: ReservedRecord, existing: ReservedConflict) async throws -> Bool
    /// The live reserved record of `type` and `id` whose value is a secret's base64 text: the
    /// secret decoded straight into `SecretKey` storage (nil when it does not decode to
    /// `byteCount` bytes) and its tags; nil when there is none.
    func readReservedSecret(type: String, id: String, byteCount: Int) async throws -> (secret: SecretKey?, tags: WalletTags)?
    /// The value of the live reserved record of `type` and `id` as bytes in guarded memory, never
    /// a `String` (nil inside: an empty value); nil when there is none.
    func readReservedBytes(type: String, id: String) async throws -> SecretKey??
    /// Whether a live reserved record of `type` and `id` exists (its box is opened and its id
    /// checked, its value not decoded).
    func containsReserved(type: String, id: String) async throws -> Bool
    /// Removes the reserved record of `type` and `id`; whether there was one.
    func removeReserved(type: String, id: String) async throws -> Bool
    /// The id and tags of every live reserved record of `type`, in the order they were written.
    func reservedRecordTags(type: String) async throws -> [(id: String, tags: WalletTags)]
    /// Adds the credential record `id` (type ``SecretTypes/credential``, a record of the record
    /// API) in one transaction that first finds the credential's signature kept; throws
    /// ``WalletError/notFound(type:id:)`` (type `credential signature`) when it is not.
    func addSignedCredential(id: String, value: String, tags: WalletTags) async throws
}

/// A reserved record as it is written: its value comes from bytes, never from a `String`.
struct ReservedRecord: Sendable {
    let type: String
    let id: String
    var tags: WalletTags = [:]
    /// A secret stored as its base64 text (a key's, the master secret).
    var secret: SecretKey? = nil
    /// A value's own UTF-8 bytes in guarded memory (a credential signature); nil with `secret`
    /// nil: an empty value.
    var bytes: SecretKey? = nil
}

/// What ``KeyHolder/writeReserved(_:existing:)`` does when the record is there.
enum ReservedConflict: Sendable {
    /// Refuse with ``WalletError/duplicate(type:id:)``.
    case refuse
    /// Keep the one there and write nothing.
    case keep
    /// Replace it.
    case replace
}

extension KeyHolder {
    /// Writes a new key record: type `SecretTypes.key`, id `verkey`, ``KeyRecord/tags(_:)``,
    /// the secret as its value.
    func writeKeyRecord(verkey: String, kind: WalletKeyKind, secret: SecretKey) async throws {
        _ = try await writeReserved(
            ReservedRecord(type: SecretTypes.key, id: verkey, tags: KeyRecord.tags(kind), secret: secret), existing: .refuse)
    }

    /// The live key record of `verkey`: its secret decoded straight into `SecretKey` storage
    /// (nil when it does not decode to 32 bytes) and its tags; nil when there is none.
    func readKeyRecord(_ verkey: String) async throws -> (secret: SecretKey?, tags: WalletTags)? {
        try await readReservedSecret(type: SecretTypes.key, id: verkey, byteCount: KeyRecord.secretByteCount)
    }

    /// The id and tags of every live key record, in the order they were written.
    func keyRecordTags() async throws -> [(id: String, tags: WalletTags)] {
        try await reservedRecordTags(type: SecretTypes.key)
    }
}

/// What a key record holds besides its secret.
enum KeyRecord {
    /// The bytes of every held key's secret.
    static let secretByteCount = 32

    /// A key record's tags: its kind.
    static func tags(_ kind: WalletKeyKind) -> WalletTags { ["kind": .string(kind.rawValue)] }

    /// The kind a key record's tags name, or nil.
    static func kind(_ tags: WalletTags) -> WalletKeyKind? {
        guard case .string(let k)? = tags.entries[ByteString("kind")] else { return nil }
        return WalletKeyKind(rawValue: k)
    }
}

extension OpenedKey {
    /// The pair's public key.
    var publicKey: Data {
        switch self {
        case .ed25519(let pair, _): return pair.publicKey
        case .x25519(let pair): return pair.publicKey
        }
    }
}

extension KeyHolder {
    /// Makes a key pair of `kind` and keeps it; returns its public key (Base58).
    func createHeldKey(_ kind: WalletKeyKind) async throws -> String {
        try await addHeldKey(secret: SecretKey.random(byteCount: KeyRecord.secretByteCount), kind: kind)
    }

    /// Keeps the key pair `secret` determines (tests give a known secret; ``createHeldKey(_:)`` a random one).
    func addHeldKey(secret: SecretKey, kind: WalletKeyKind) async throws -> String {
        let opened = try OpenedKey(kind: kind, secret: secret)
        let verkey = Base58.encode(opened.publicKey)
        try await writeKeyRecord(verkey: verkey, kind: kind, secret: secret)
        heldKeys.put(verkey, opened)
        return verkey
    }

    /// The public halves of every held key.
    func heldPublicKeys() async throws -> [WalletPublicKey] {
        try await keyRecordTags().compactMap { record in
            KeyRecord.kind(record.tags).map { WalletPublicKey(verkey: record.id, kind: $0) }
        }
    }

    /// The opened pair of a held key: from the cache, or read, decrypted, decoded straight into
    /// `SecretKey` storage and opened once, then cached. Internal, never returned.
    func heldKey(_ verkey: String) async throws -> OpenedKey {
        if let cached = heldKeys.get(verkey) { return cached }
        try Wallet.checkVerkey(verkey)
        guard let record = try await readKeyRecord(verkey) else { throw WalletError.notFound(type: "key", id: verkey) }
        guard let kind = KeyRecord.kind(record.tags), let secret = record.secret, let opened = try? OpenedKey(kind: kind, secret: secret)
        else { throw WalletError.corrupted("the stored key \(verkey) does not parse") }
        heldKeys.put(verkey, opened)
        return opened
    }

    /// Signs `message` with the held Ed25519 key `verkey`.
    func signWithHeldKey(_ message: Data, _ verkey: String) async throws -> Data {
        guard case .ed25519(let pair, _) = try await heldKey(verkey) else {
            throw WalletError.invalidInput("key \(verkey) is x25519, not ed25519: it cannot sign (create an ed25519 key to sign)")
        }
        return pair.sign(message)
    }

    /// Opens a sealed box addressed to the held key `verkey`.
    func openSealedBoxWithHeldKey(_ box: Data, _ verkey: String) async throws -> Data {
        let pair = try await heldKey(verkey).agreementPair
        do { return try pair.openSealed(box) } catch {
            throw WalletError.invalidInput("the sealed box does not open with key \(verkey) (not addressed to it, or altered)")
        }
    }

    /// A box from the held key `sender` to `recipient`.
    func boxFromHeldKey(_ message: Data, _ sender: String, to recipient: String, recipientKind: WalletKeyKind) async throws
        -> BoxedMessage
    {
        let pair = try await heldKey(sender).agreementPair
        let (nonce, ciphertext) = try Box.seal(message, from: pair, to: Wallet.agreementKey(recipient, kind: recipientKind))
        return BoxedMessage(nonce: nonce, ciphertext: ciphertext)
    }

    /// Opens a box from `sender` to the held key `recipient`.
    func openBoxWithHeldKey(_ boxed: BoxedMessage, from sender: String, senderKind: WalletKeyKind, to recipient: String) async throws
        -> Data
    {
        let pair = try await heldKey(recipient).agreementPair
        do {
            return try Box.open(boxed.ciphertext, nonce: boxed.nonce, from: Wallet.agreementKey(sender, kind: senderKind), to: pair)
        } catch let e as WalletError {
            throw e
        } catch {
            throw WalletError.invalidInput("the box does not open between \(sender) and \(recipient) (altered, or other keys)")
        }
    }
}

extension Wallet: KeyWallet, KeyHolder {
    /// The wallet file's key records, for ``KeyWallet``'s operations (opaque).
    public var keyAccess: WalletKeyAccess { WalletKeyAccess(holder: self) }

    func writeReserved(_ record: ReservedRecord, existing: ReservedConflict) async throws -> Bool {
        // The value is sealed from its bytes: a secret's base64 is written from the key's storage
        // into the wiped plaintext buffer, a text's bytes from guarded memory (no String copy).
        try await secretWrite { store in
            if existing != .refuse, try store.contains(type: record.type, id: record.id) {
                if existing == .keep { return false }
                try store.delete(type: record.type, id: record.id)
            }
            try store.add(
                type: record.type, id: record.id, value: "", tags: record.tags, expiresAt: nil, secret: record.secret,
                valueBytes: record.bytes)
            return true
        }
    }

    func readReservedSecret(type: String, id: String, byteCount: Int) async throws -> (secret: SecretKey?, tags: WalletTags)? {
        try await secretRead { store in try store.secret(type: type, id: id, byteCount: byteCount) }
    }

    func readReservedBytes(type: String, id: String) async throws -> SecretKey?? {
        try await secretRead { store -> SecretKey?? in
            guard let found = try store.locate(type: type, id: id), !found.expired else { return nil }
            let contents = try store.open(found, value: .bytes)
            try RecordCodec.checkSealedID(contents.id, id)
            return .some(contents.valueBytes)
        }
    }

    func containsReserved(type: String, id: String) async throws -> Bool {
        try await secretRead { store in try store.contains(type: type, id: id) }
    }

    func removeReserved(type: String, id: String) async throws -> Bool {
        try await secretWrite { store in
            guard try store.contains(type: type, id: id) else { return false }
            try store.delete(type: type, id: id)
            return true
        }
    }

    func addSignedCredential(id: String, value: String, tags: WalletTags) async throws {
        try await secretWrite { store in
            guard try store.contains(type: SecretTypes.credentialSignature, id: id) else {
                throw WalletError.notFound(type: "credential signature", id: id)
            }
            try store.add(type: SecretTypes.credential, id: id, value: value, tags: tags, expiresAt: nil)
        }
    }

    func reservedRecordTags(type: String) async throws -> [(id: String, tags: WalletTags)] {
        try await secretRead { store in
            let search = try QueryCompiler.compile(type: type, query: .all, keys: store.keys, allowReserved: true)
            var cursor = SearchCursor()
            return try search.page(
                store.db, keys: store.keys, cursor: &cursor, limit: Int.max,
                options: RecordOptions(retrieveValue: false, retrieveTags: true)
            ).map { (id: $0.id, tags: $0.tags ?? [:]) }
        }
    }
}
