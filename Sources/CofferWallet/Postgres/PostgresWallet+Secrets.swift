// The profile's secrets on PostgreSQL — keys, the credential master secret, credential
// signatures: records of reserved types, sealed and blinded like every record of the profile (the
// server holds a box and blind indexes, never a secret), out of reach of the record API, which
// refuses reserved types. The operations and their public API are `KeyWallet`'s, shared with the
// SQLite wallet; this file only stores, reads, lists and removes the records.

#if PostgreSQL
import CofferCrypto
import Foundation

extension PostgresWallet: KeyWallet, KeyHolder {
    /// The profile's key records, for ``KeyWallet``'s operations (opaque): `createKey`, `sign`
    /// and the rest work on a PostgreSQL profile as on a wallet file.
    public var keyAccess: WalletKeyAccess { WalletKeyAccess(holder: self) }

    // MARK: The reserved records

    func writeReserved(_ record: ReservedRecord, existing: ReservedConflict) async throws -> Bool {
        try await call {
            try await writing { w in
                let keys = w.keys
                let tb = keys.typeBlind(record.type)
                let ib = keys.idBlind(typeBlind: tb, id: record.id)
                let t = BlindColumn.value(tb)
                // The value is sealed from its bytes: a secret's base64 is written from the key's
                // storage into the wiped plaintext buffer, a text's bytes from guarded memory (no
                // String copy). Reserved records never expire.
                let sealed = RecordCodec.seal(
                    .init(
                        type: record.type, id: record.id, value: "", tags: record.tags, secretValue: record.secret, valueBytes: record.bytes
                    ),
                    typeBlind: tb, idBlind: ib, expiry: nil, keys: keys)
                let tags = Self.tagRows(keys: keys, typeBlind: tb, tags: record.tags)
                for _ in 0..<Self.rewriteAttempts {
                    if try await store.insert(gate: w.gate, type: t, idBlind: ib, sealed: sealed, expiry: nil, tags: tags) != nil {
                        return true
                    }
                    switch existing {
                    case .refuse: throw WalletError.duplicate(type: record.type, id: record.id)
                    case .keep: return false
                    case .replace:
                        // One statement replaces the box and tag rows; false when the row went
                        // meanwhile (the insert is then tried again).
                        if try await store.replaceUnexpiring(gate: w.gate, type: t, idBlind: ib, sealed: sealed, tags: tags) { return true }
                    }
                }
                throw WalletError.storage(
                    "the wallet's secret record kept changing under \(Self.rewriteAttempts) attempts to write it; nothing was written: retry"
                )
            }
        }
    }

    func readReservedSecret(type: String, id: String, byteCount: Int) async throws -> (secret: SecretKey?, tags: WalletTags)? {
        try await call {
            let held = sealing
            let keys = held.keys
            guard let live = try await liveRow(type: type, id: id, held) else { return nil }
            let (secret, contents) = try RecordCodec.openSecret(
                live.row.sealed, typeBlind: live.typeBlind, idBlind: live.idBlind, expiry: live.row.expiry, keys: keys,
                expectedType: type, byteCount: byteCount)
            try RecordCodec.checkSealedID(contents.id, id)
            return (secret, contents.tags)
        }
    }

    func readReservedBytes(type: String, id: String) async throws -> SecretKey?? {
        try await call {
            guard let contents = try await openLive(type: type, id: id, value: .bytes) else { return nil }
            return .some(contents.valueBytes)
        }
    }

    func containsReserved(type: String, id: String) async throws -> Bool {
        try await call {
            // Opened (authenticated, its id checked), its value not decoded.
            try await openLive(type: type, id: id, value: .skipped) != nil
        }
    }

    func removeReserved(type: String, id: String) async throws -> Bool {
        try await call {
            try await writing { w in
                let tb = w.keys.typeBlind(type)
                return try await store.delete(
                    gate: w.gate, type: BlindColumn.value(tb), idBlind: w.keys.idBlind(typeBlind: tb, id: id), liveAt: unixMillis(Date()))
            }
        }
    }

    func addSignedCredential(id: String, value: String, tags: WalletTags) async throws {
        // One write transaction (it holds the profile's key gate): the signature is looked up in
        // its snapshot, and the credential is added only if it was there.
        try await transaction { view in
            guard try await view.containsReserved(type: SecretTypes.credentialSignature, id: id) else {
                throw WalletError.notFound(type: "credential signature", id: id)
            }
            try await view.add(type: SecretTypes.credential, id: id, value: value, tags: tags, expiresAt: nil)
        }
    }

    func reservedRecordTags(type: String) async throws -> [(id: String, tags: WalletTags)] {
        try await call {
            var records = [(id: String, tags: WalletTags)]()
            try await forEachCandidate(type: type, query: .all, value: .skipped) { records.append((id: $1.id, tags: $1.tags)) }
            return records
        }
    }
}
#endif
