// The wallet's own keys: derived from one random master key that the store key seals.

import CofferCrypto
import CofferSync
import Foundation

/// Lengths of the keyed blind indexes stored in place of plaintext.
enum BlindLength {
    /// Type: few distinct values per wallet, so 8 bytes keep collisions out of reach.
    static let type = 8
    /// Record id: must be collision-free for the unique (type, id) index.
    static let id = 16
    /// Tag name, scoped by type.
    static let tagName = 8
    /// Encrypted tag value, scoped by type and name.
    static let tagValue = 12
}

/// Keys derived from the wallet master key (HKDF-SHA256, one label each), plus caches of the
/// blind indexes that repeat (types, tag names, short tag values).
final class WalletKeys: Sendable {
    private let typeHash: KeyedHash
    private let idHash: KeyedHash
    private let tagNameHash: KeyedHash
    private let tagValueHash: KeyedHash
    private let recordKeyHash: KeyedBlake2b
    private let rowDigestHash: KeyedBlake2b
    private let rowDigestV4Hash: KeyedBlake2b
    private let integrityHash: KeyedBlake2b

    // Their values are blind bytes. Their keys are types, tag names and short tag values this
    // process has written or searched for: held in memory only, and emptied when the wallet closes.
    private let typeCache = BlindCache<ByteString>(capacity: 1024)
    private let tagNameCache = BlindCache<TagNameKey>(capacity: 4096)
    private let tagValueCache = BlindCache<TagValueKey>(capacity: WalletKeys.tagValueCacheEntries)

    /// Encrypted tag values at most this long have their blind index cached. Wallets repeat a
    /// few values across many records (schema, issuer, definition ids): a hit skips an HMAC.
    static let cachedTagValueBytes = 128
    /// Entries the tag-value cache holds before it is emptied and refilled.
    static let tagValueCacheEntries = 4096

    private struct TagValueKey: Hashable {
        let name: TagNameKey
        let value: ByteString
    }

    private struct TagNameKey: Hashable {
        /// The type's 8-byte blind index as the integer the file stores (hashing `Data` costs
        /// several times more).
        let typeBlind: Int64
        let name: ByteString

        init(typeBlind: Data, name: String) {
            self.typeBlind = BlindColumn.value(typeBlind)
            self.name = ByteString(name)
        }
    }

    /// Kept only so that rekey can seal it under a new store key; never leaves the process.
    let master: SecretKey
    /// Names this master key in the file (`coffer_meta` row `keycheck`): a keyed hash of a
    /// constant, which tells nothing about the key. Every write transaction compares it with
    /// the stored one, so a writer whose keys a rotation (in any process) replaced writes nothing.
    let keyCheck: Data
    /// The profile these keys belong to and the tables that hold its records: SQL goes to the
    /// tables of the keys it runs under, so no statement can reach another profile's rows.
    let tables: ProfileTables

    init(master: SecretKey, tables: ProfileTables = .default) {
        self.master = master
        self.tables = tables
        typeHash = KeyedHash(hkdfFrom: master, info: "coffer.wallet.v1.type")
        idHash = KeyedHash(hkdfFrom: master, info: "coffer.wallet.v1.id")
        tagNameHash = KeyedHash(hkdfFrom: master, info: "coffer.wallet.v1.tag-name")
        tagValueHash = KeyedHash(hkdfFrom: master, info: "coffer.wallet.v1.tag-value")
        recordKeyHash = KeyedBlake2b(key: KeyDerivation.hkdf(from: master, info: "coffer.wallet.v1.record-key"))
        rowDigestHash = KeyedBlake2b(key: KeyDerivation.hkdf(from: master, info: "coffer.wallet.v3.row-digest"))
        keyCheck = KeyedHash(hkdfFrom: master, info: "coffer.wallet.v3.key-check").hash(domain: 4, Data("key-check".utf8), byteCount: 16)
        rowDigestV4Hash = KeyedBlake2b(key: KeyDerivation.hkdf(from: master, info: "coffer.wallet.v4.row-digest"))
        integrityHash = KeyedBlake2b(key: KeyDerivation.hkdf(from: master, info: "coffer.wallet.v4.integrity"))
    }

    /// A row's contribution to the records' version digest of format 4: keyed BLAKE2b of its
    /// row id, stored blind type, expiry, blind id and sealed box (32 bytes), lent to `body`.
    /// The box enters through its length, its nonce (first 12 bytes) and its AEAD tag (last
    /// 16), which authenticates the whole ciphertext under the record's key: another version of
    /// the record has another nonce and tag, and a box whose middle was changed does not open.
    /// (A value shorter than a nonce and a tag enters whole.) The fixed-width fields come first
    /// and the lengths are included, so no two rows give the same input. Hashing 28 bytes of the
    /// box instead of all of it keeps the digest at the cost of the format-3 one, MAC included.
    func rowDigestV4<R>(
        rowid: Int64, type: Int64, expiry: Int64?, idBlind: UnsafeRawBufferPointer, sealed: UnsafeRawBufferPointer,
        _ body: (UnsafeRawBufferPointer) -> R
    ) -> R {
        let fixed = 8 + 8 + 1 + 8 + 4 + 4
        let summary = sealed.count >= Self.boxEnds ? Self.boxEnds : sealed.count
        return withUnsafeTemporaryAllocation(byteCount: fixed + idBlind.count + summary, alignment: 8) { a in
            a.storeBytes(of: UInt64(bitPattern: rowid).littleEndian, toByteOffset: 0, as: UInt64.self)
            a.storeBytes(of: UInt64(bitPattern: type).littleEndian, toByteOffset: 8, as: UInt64.self)
            a.storeBytes(of: expiry == nil ? 0 : 1, toByteOffset: 16, as: UInt8.self)
            a.storeBytes(of: UInt64(bitPattern: expiry ?? 0).littleEndian, toByteOffset: 17, as: UInt64.self)
            a.storeBytes(of: UInt32(truncatingIfNeeded: idBlind.count).littleEndian, toByteOffset: 25, as: UInt32.self)
            a.storeBytes(of: UInt32(truncatingIfNeeded: sealed.count).littleEndian, toByteOffset: 29, as: UInt32.self)
            var at = fixed
            if idBlind.count > 0 { (a.baseAddress! + at).copyMemory(from: idBlind.baseAddress!, byteCount: idBlind.count) }
            at += idBlind.count
            if summary == Self.boxEnds {
                (a.baseAddress! + at).copyMemory(from: sealed.baseAddress!, byteCount: Self.nonceBytes)
                (a.baseAddress! + at + Self.nonceBytes).copyMemory(
                    from: sealed.baseAddress! + sealed.count - Self.tagBytes, byteCount: Self.tagBytes)
            } else if summary > 0 {
                (a.baseAddress! + at).copyMemory(from: sealed.baseAddress!, byteCount: summary)
            }
            return rowDigestV4Hash.withDerivedKey(domain: 4, UnsafeRawBufferPointer(a), UnsafeRawBufferPointer(start: nil, count: 0), body)
        }
    }

    /// A record box's nonce (ChaCha20-Poly1305, first) and tag (last) lengths.
    static let nonceBytes = 12
    static let tagBytes = 16
    static let boxEnds = nonceBytes + tagBytes

    /// ``rowDigestV4(rowid:type:expiry:idBlind:sealed:_:)`` as bytes.
    func rowDigestV4(rowid: Int64, type: Int64, expiry: Int64?, idBlind: Data, sealed: Data) -> [UInt8] {
        withBytes(idBlind) { i in
            withBytes(sealed) { v in rowDigestV4(rowid: rowid, type: type, expiry: expiry, idBlind: i, sealed: v) { Array($0) } }
        }
    }

    /// The MAC (keyed BLAKE2b, 32 bytes) of a piece of the file's integrity state under the
    /// key derived for it: `domain` tells the pieces apart (``IntegrityDomain``).
    func integrityMAC<R>(domain: UInt8, _ bytes: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) -> R) -> R {
        integrityHash.withDerivedKey(domain: domain, bytes, UnsafeRawBufferPointer(start: nil, count: 0), body)
    }

    /// A row's contribution to the records' version digest: keyed BLAKE2b of its stored blind
    /// type, blind id and sealed box (32 bytes).
    func rowDigest(type: Int64, idBlind: Data, sealed: Data) -> Data {
        withBytes(idBlind) { i in withBytes(sealed) { v in rowDigest(type: type, idBlind: i, sealed: v) { Data($0) } } }
    }

    /// ``rowDigest(type:idBlind:sealed:)`` over bytes the caller holds, lent to `body`.
    func rowDigest<R>(
        type: Int64, idBlind: UnsafeRawBufferPointer, sealed: UnsafeRawBufferPointer,
        _ body: (UnsafeRawBufferPointer) -> R
    ) -> R {
        withUnsafeTemporaryAllocation(byteCount: 8 + idBlind.count, alignment: 8) { a in
            var typeBits = UInt64(bitPattern: type).littleEndian
            withUnsafeBytes(of: &typeBits) { a.baseAddress!.copyMemory(from: $0.baseAddress!, byteCount: 8) }
            if idBlind.count > 0 { (a.baseAddress! + 8).copyMemory(from: idBlind.baseAddress!, byteCount: idBlind.count) }
            return rowDigestHash.withDerivedKey(domain: 3, UnsafeRawBufferPointer(a), sealed, body)
        }
    }

    /// Empties the blind-index caches (the wallet is closing: the strings they are keyed by need
    /// not outlive it).
    func clearCaches() {
        typeCache.removeAll()
        tagNameCache.removeAll()
        tagValueCache.removeAll()
    }

    /// Entries in the blind-index caches (for tests).
    var cachedEntryCount: Int { typeCache.count + tagNameCache.count + tagValueCache.count }

    func typeBlind(_ type: String) -> Data {
        typeCache.blind(for: ByteString(type)) {
            typeHash.hash(domain: 1, Data(type.utf8), byteCount: BlindLength.type)
        }
    }

    func idBlind(typeBlind: Data, id: String) -> Data {
        idHash.hash(byteCount: BlindLength.id) { input in
            input.add(typeBlind)
            input.add(id)
        }
    }

    func tagNameBlind(typeBlind: Data, name: String) -> Data {
        tagNameCache.blind(for: TagNameKey(typeBlind: typeBlind, name: name)) {
            tagNameHash.hash(byteCount: BlindLength.tagName) { input in
                input.add(typeBlind)
                input.add(name)
            }
        }
    }

    func tagValueBlind(typeBlind: Data, name: String, value: String) -> Data {
        func compute() -> Data {
            tagValueHash.hash(byteCount: BlindLength.tagValue) { input in
                input.add(typeBlind)
                input.add(name)
                input.add(value)
            }
        }
        guard value.utf8.count <= Self.cachedTagValueBytes else { return compute() }
        return tagValueCache.blind(for: TagValueKey(name: TagNameKey(typeBlind: typeBlind, name: name), value: ByteString(value)), compute)
    }

    /// Lends the key that seals one record's contents (bound to the row's blind type and id) to
    /// `body`; the bytes live on no heap and are wiped afterwards.
    func withRecordKey<R, E: Error>(typeBlind: Data, idBlind: Data, _ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        try recordKeyHash.withDerivedKey(domain: 2, typeBlind, idBlind, body)
    }

    /// ``withRecordKey(typeBlind:idBlind:_:)`` over blind bytes the caller already holds.
    func withRecordKey<R, E: Error>(
        typeBlind: UnsafeRawBufferPointer, idBlind: UnsafeRawBufferPointer,
        _ body: (UnsafeRawBufferPointer) throws(E) -> R
    ) throws(E) -> R {
        try recordKeyHash.withDerivedKey(domain: 2, typeBlind, idBlind, body)
    }
}

/// Blind indexes by what they were computed from, behind one lock. When full it is emptied and
/// refills: the entries that repeat come back at once.
/// A cache of blind indexes (one shared cache type for the package).
private typealias BlindCache<Key: Hashable & Sendable> = BoundedCache<Key, Data>

extension BoundedCache where Value == Data {
    /// The cached blind index of `key`, or the one `compute` gives (then cached).
    fileprivate func blind(for key: Key, _ compute: () -> Data) -> Data { value(for: key, compute) }
}
