// The profile's keys on PostgreSQL: records of the reserved type `SecretTypes.key`, sealed and
// blinded like every record of the profile (the server holds a box and blind indexes, never a
// secret), out of reach of the record API, which refuses reserved types. The operations and
// their public API are `KeyWallet`'s, shared with the SQLite wallet.

#if PostgreSQL
import CofferCrypto
import Foundation

extension PostgresWallet: KeyWallet, KeyHolder {
    /// The profile's key records, for ``KeyWallet``'s operations (opaque): `createKey`, `sign`
    /// and the rest work on a PostgreSQL profile as on a wallet file.
    public var keyAccess: WalletKeyAccess { WalletKeyAccess(holder: self) }

    // MARK: The key records

    func writeKeyRecord(verkey: String, kind: WalletKeyKind, secret: SecretKey) async throws {
        try await call {
            let tags = KeyRecord.tags(kind)
            let inserted = try await writing { s in
                let keys = s.keys
                let tb = keys.typeBlind(SecretTypes.key)
                let ib = keys.idBlind(typeBlind: tb, id: verkey)
                // The value is the secret's base64, written from its storage into the wiped plaintext
                // buffer that is sealed (no String copy).
                let sealed = RecordCodec.seal(
                    .init(type: SecretTypes.key, id: verkey, value: "", tags: tags, secretValue: secret), typeBlind: tb, idBlind: ib,
                    expiry: nil, keys: keys)
                return try await store.insert(
                    gate: s.gate, type: BlindColumn.value(tb), idBlind: ib, sealed: sealed, expiry: nil,
                    tags: Self.tagRows(keys: keys, typeBlind: tb, tags: tags)) != nil
            }
            guard inserted else { throw WalletError.duplicate(type: "key", id: verkey) }
        }
    }

    func readKeyRecord(_ verkey: String) async throws -> (secret: SecretKey?, tags: WalletTags)? {
        try await call {
            let tb = keys.typeBlind(SecretTypes.key)
            let ib = keys.idBlind(typeBlind: tb, id: verkey)
            guard let row = try await store.locate(profile: number, type: BlindColumn.value(tb), idBlind: ib),
                row.expiry.map({ $0 > unixMillis(Date()) }) ?? true
            else { return nil }
            let (secret, contents) = try RecordCodec.openSecret(
                row.sealed, typeBlind: tb, idBlind: ib, expiry: row.expiry, keys: keys, expectedType: SecretTypes.key,
                byteCount: KeyRecord.secretByteCount)
            guard contents.id == verkey else { throw WalletError.corrupted("a record's sealed id does not match its index") }
            return (secret, contents.tags)
        }
    }

    func keyRecordTags() async throws -> [(id: String, tags: WalletTags)] {
        try await call {
            var records = [(id: String, tags: WalletTags)]()
            try await forEachCandidate(type: SecretTypes.key, query: .all, value: .skipped) { records.append((id: $1.id, tags: $1.tags)) }
            return records
        }
    }
}
#endif
