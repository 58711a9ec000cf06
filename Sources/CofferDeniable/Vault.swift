// The vault file: one binary file of constant length, two layers of XChaCha20-Poly1305.

import CofferCrypto
import CofferSync
import Foundation

/// The vault's file format (version 3). All integers are big-endian.
///
///     offset  bytes  field (cleartext)
///          0      8  magic "CFVAULT3"
///          8      4  P, bytes of the padded plaintext (from the configuration: every install alike)
///         12     16  outer salt, fresh at every write
///         28     24  outer nonce, fresh at every write
///         52      …  outer box (XChaCha20-Poly1305; key: HKDF-SHA256 of the storage key and the
///                    outer salt; associated data = bytes 0..<28) of:
///                        inner header (40): magic ‖ P ‖ Argon2id opslimit ‖ memlimit (KiB) ‖
///                                           secure-element rounds ‖ salt (16)
///                        carried key (32): random, or in a converted vault the format-2 key its
///                                          inner box still needs until its first unlock
///                        inner nonce (24) ‖ inner box (P + 16) — XChaCha20-Poly1305 under the
///                        vault key, associated data = inner header
///
/// The vault key is Argon2id of the normalised passphrase followed by ``DeviceCost`` rounds of
/// key agreement with the secure element. The file is `P + 180` bytes whatever it holds; its
/// cleartext holds only constants and the outer layer's fresh salt and nonce. The outer layer
/// needs neither passphrase nor secure element, so the app re-encrypts it at every start, unlock
/// and lock — every byte after the first twelve changes each time, used or not.
///
/// Versions 1 (`CFVAULT1`) and 2 (`CFVAULT2`) were keyed by the former HMAC stand-in
/// (`secure-element.key`). They are rewritten in version 3 at the next start of every install,
/// their inner box unchanged, the former key carried inside the outer layer. Every unlock tries
/// the version-3 key and then the former one (both derived every time, so a wrong passphrase,
/// an unused vault and a converted one cost the same); a converted vault that opens with the
/// former key is re-keyed then (new salt and carried bytes, the same costs), which leaves it
/// looking as any other vault does.
public enum Vault {
    /// The file's first eight bytes, and the inner header's.
    static let magic = Array("CFVAULT3".utf8)
    /// The first eight bytes of a version-2 file.
    static let formerMagic = Array("CFVAULT2".utf8)
    /// The first eight bytes of a version-1 file.
    static let legacyMagic = Array("CFVAULT1".utf8)
    /// Bytes of the cleartext header the outer box authenticates (magic, P, outer salt).
    static let clearHeaderBytes = 28
    /// Bytes before the outer box (the cleartext header and the outer nonce).
    static let outerPrefixBytes = 52
    /// Bytes of the inner header, inside the outer box.
    static let innerHeaderBytes = 40
    /// Bytes of the carried key, inside the outer box.
    static let carriedKeyBytes = 32
    /// Bytes of the outer layer's salt.
    static let outerSaltBytes = 16
    /// Bytes the file adds to the padded plaintext: cleartext header, outer nonce, inner header,
    /// carried key, inner nonce, two tags.
    public static let overhead = outerPrefixBytes + innerHeaderBytes + carriedKeyBytes + 24 + 16 + 16
    static let aead = AEAD.xchacha20Poly1305
    static let outerLabel = "coffer.deniable.vault.outer.v3"

    /// The file length for a plaintext of `contentBytes`.
    public static func fileLength(contentBytes: Int) -> Int { contentBytes + overhead }

    /// The inner header: what one vault's key derivation needs.
    struct Header: Equatable {
        var contentBytes: Int
        var kdf: Argon2idParameters
        /// Sequential key agreements with the secure element (``DeviceCost``).
        var rounds: Int
        var salt: Data

        /// The 40 bytes the inner box authenticates.
        var bytes: [UInt8] {
            var w = Writer(buffer: [])
            w.bytes(Vault.magic)
            w.u32(UInt32(contentBytes))
            w.u32(UInt32(kdf.opsLimit))
            w.u32(UInt32(kdf.memLimit / 1024))
            w.u32(UInt32(rounds))
            w.bytes(Array(salt))
            return w.buffer
        }

        /// The 36 bytes a format-1 or format-2 inner box authenticates (with that format's magic).
        func formerBytes(magic: [UInt8]) -> [UInt8] {
            var w = Writer(buffer: [])
            w.bytes(magic)
            w.u32(UInt32(contentBytes))
            w.u32(UInt32(kdf.opsLimit))
            w.u32(UInt32(kdf.memLimit / 1024))
            w.bytes(Array(salt))
            return w.buffer
        }

        /// A header with a fresh salt and the same costs.
        func resalted() -> Header {
            var h = self
            h.salt = SecureRandom.bytes(Argon2idParameters.saltByteCount)
            return h
        }

        /// Parses a 40-byte inner header, or (with `rounds`) a 36-byte format-1/2 one.
        static func parse(_ raw: UnsafeRawBufferPointer, expectedContentBytes: Int, formerRounds rounds: Int? = nil) throws(DeniableError)
            -> Header
        {
            var r = Reader(bytes: raw)
            let magics = rounds == nil ? [Vault.magic] : [Vault.formerMagic, Vault.legacyMagic]
            guard let m = r.take(8), magics.contains(Array(m)), let p = r.u32(), let ops = r.u32(), let memKiB = r.u32(),
                let n = rounds.map({ UInt32($0) }) ?? r.u32(), let salt = r.take(16)
            else { throw .corrupted("the vault does not hold a vault header") }
            let header = Header(
                contentBytes: Int(p), kdf: Argon2idParameters(opsLimit: UInt64(ops), memLimit: Int(memKiB) * 1024), rounds: Int(n),
                salt: Data(salt))
            if expectedContentBytes != header.contentBytes {
                throw .corrupted("the vault holds \(header.contentBytes) content bytes; the configuration says \(expectedContentBytes)")
            }
            do { try header.kdf.validateWithinCap() } catch { throw .corrupted("the vault's key costs are refused: \(error)") }
            guard DeviceCost.allowedRounds.contains(header.rounds) else {
                throw .corrupted("the vault asks for \(header.rounds) secure-element rounds; \(DeviceCost.allowedRounds) are accepted")
            }
            return header
        }
    }

    /// A vault file with its outer layer removed.
    struct Opened {
        /// The inner header (key derivation).
        var header: Header
        /// The carried key (random, or a converted vault's former key).
        var carried: SecretKey
        /// Inner nonce ‖ inner box.
        var inner: Data
        /// Whether the file was in a format-1 or format-2 layout (it should be rewritten).
        var converted: Bool
    }

    /// Checks a vault file's length and header and removes its outer layer.
    /// - Parameters:
    ///   - storageKey: the outer layer's key.
    ///   - former: the format-2 stand-in's key, to read a format-1 or format-2 file.
    ///   - rounds: the rounds a converted file's header gets (the configuration's).
    /// - Throws: ``DeniableError/corrupted(_:)`` when the file is not a vault of this size, or the
    ///   outer layer fails (the file was altered, or written under another storage key).
    static func open(
        _ file: Data, expectedContentBytes: Int, storageKey: SecretKey, former: LegacyElementKey? = nil,
        rounds: Int = DeviceCost.defaultRounds
    ) throws(DeniableError) -> Opened {
        guard file.count >= 8 else { throw .corrupted("the vault file is too short (\(file.count) bytes)") }
        let magic = Array(file.prefix(8))
        if magic == legacyMagic || magic == formerMagic {
            guard let former else {
                throw .corrupted("the vault is in an earlier format whose device key (secure-element.key) is gone")
            }
            return try magic == legacyMagic
                ? openFormat1(file, expectedContentBytes: expectedContentBytes, former: former, rounds: rounds)
                : openFormat2(file, expectedContentBytes: expectedContentBytes, former: former, rounds: rounds)
        }
        guard magic == Self.magic else { throw .corrupted("the vault file does not start with a vault header") }
        let expected = fileLength(contentBytes: expectedContentBytes)
        guard file.count == expected else { throw .corrupted("the vault file is \(file.count) bytes; \(expected) were expected") }
        let clear = Data(file.prefix(clearHeaderBytes))
        let p = clear.subdata(in: 8..<12).reduce(0) { $0 << 8 | Int($1) }
        guard p == expectedContentBytes else {
            throw .corrupted("the vault holds \(p) content bytes; the configuration says \(expectedContentBytes)")
        }
        let outerKey = StorageKey.outerKey(storageKey, salt: clear.subdata(in: 12..<clearHeaderBytes), label: outerLabel)
        var body: Data
        do { body = try aead.open(file.subdata(in: clearHeaderBytes..<file.count), key: outerKey, associatedData: clear) } catch {
            throw .corrupted("the vault file failed its integrity check (altered, or written under another storage key)")
        }
        defer { body.resetBytes(in: 0..<body.count) }
        let header = try withBytes(body.prefix(innerHeaderBytes)) { (raw) throws(DeniableError) in
            try Header.parse(raw, expectedContentBytes: expectedContentBytes)
        }
        let carried: SecretKey
        do { carried = try SecretKey(copying: body.subdata(in: innerHeaderBytes..<(innerHeaderBytes + carriedKeyBytes))) } catch {
            throw .storage("could not hold the vault's carried key: \(error)", cause: StorageCause(error))
        }
        return Opened(header: header, carried: carried, inner: Data(body.dropFirst(innerHeaderBytes + carriedKeyBytes)), converted: false)
    }

    /// A format-1 file: cleartext inner header, outer key the former element's MAC of a label and the salt.
    private static func openFormat1(
        _ file: Data, expectedContentBytes: Int, former: LegacyElementKey, rounds: Int
    ) throws(DeniableError) -> Opened {
        let authenticated = 36
        guard file.count == expectedContentBytes + authenticated + 24 + 24 + 32 else {
            throw .corrupted("the version-1 vault file is \(file.count) bytes; \(expectedContentBytes + 116) were expected")
        }
        let header = try withBytes(file.prefix(authenticated)) { (raw) throws(DeniableError) in
            try Header.parse(raw, expectedContentBytes: expectedContentBytes, formerRounds: rounds)
        }
        let outer = former.authenticate(Data("coffer.deniable.vault.outer".utf8) + header.salt)
        let inner: Data
        do {
            inner = try aead.open(
                file.subdata(in: authenticated..<file.count), key: outer, associatedData: header.formerBytes(magic: legacyMagic))
        } catch { throw .corrupted("the version-1 vault file failed its integrity check") }
        return Opened(header: header, carried: former.key, inner: inner, converted: true)
    }

    /// A format-2 file: the layout of version 3 with a 36-byte inner header, no carried key, and
    /// the outer key the former element's MAC of a label and the outer salt.
    private static func openFormat2(
        _ file: Data, expectedContentBytes: Int, former: LegacyElementKey, rounds: Int
    ) throws(DeniableError) -> Opened {
        let expected = expectedContentBytes + 144
        guard file.count == expected else { throw .corrupted("the version-2 vault file is \(file.count) bytes; \(expected) were expected") }
        let clear = Data(file.prefix(clearHeaderBytes))
        let outerKey = former.authenticate(Data("coffer.deniable.vault.outer.v2".utf8) + clear.subdata(in: 12..<clearHeaderBytes))
        var body: Data
        do { body = try aead.open(file.subdata(in: clearHeaderBytes..<file.count), key: outerKey, associatedData: clear) } catch {
            throw .corrupted("the version-2 vault file failed its integrity check")
        }
        defer { body.resetBytes(in: 0..<body.count) }
        let header = try withBytes(body.prefix(36)) { (raw) throws(DeniableError) in
            try Header.parse(raw, expectedContentBytes: expectedContentBytes, formerRounds: rounds)
        }
        return Opened(header: header, carried: former.key, inner: Data(body.dropFirst(36)), converted: true)
    }

    /// The two keys a passphrase gives: the version-3 key (Argon2id, then the secure element's
    /// rounds) and the former one (Argon2id mixed with the carried key's HMAC, as format 2 mixed
    /// the stand-in's). Both are always derived: every unlock costs the same.
    struct Keys {
        var current: SecretKey
        var former: SecretKey
    }

    /// The keys for `passphrase` (already normalised) under `header` and the carried key.
    static func keys(passphrase: String, header: Header, carried: SecretKey, secureElement: SecureElement) throws(DeniableError) -> Keys {
        let stretched = try stretch(passphrase, header)
        let current = try DeviceCost.derive(stretched, salt: header.salt, rounds: header.rounds, secureElement: secureElement)
        return Keys(current: current, former: formerKey(stretched: stretched, salt: header.salt, carried: carried))
    }

    /// Only the version-3 key (a new vault, or a re-key).
    static func currentKey(passphrase: String, header: Header, secureElement: SecureElement) throws(DeniableError) -> SecretKey {
        try DeviceCost.derive(stretch(passphrase, header), salt: header.salt, rounds: header.rounds, secureElement: secureElement)
    }

    private static func stretch(_ passphrase: String, _ header: Header) throws(DeniableError) -> SecretKey {
        do { return try Argon2id.deriveKey(passphrase: passphrase, salt: header.salt, parameters: header.kdf) } catch {
            throw .storage("Argon2id failed: \(error)", cause: StorageCause(error))
        }
    }

    /// Format 2's vault key: HKDF-SHA256 of the Argon2id output followed by the HMAC of a label
    /// and that output under the (now carried) former key.
    static func formerKey(stretched: SecretKey, salt: Data, carried: SecretKey) -> SecretKey {
        var message = Data("coffer.deniable.vault.inner".utf8)
        stretched.withUnsafeBytes { message.append(contentsOf: $0) }
        defer { message.resetBytes(in: 0..<message.count) }
        let mixed = LegacyElementKey(key: carried).authenticate(message)
        let ikm: SecretKey = stretched.withUnsafeBytes { a in
            mixed.withUnsafeBytes { b in
                withUnsafeTemporaryAllocation(byteCount: a.count + b.count, alignment: 16) { buffer in
                    defer { SecureMemory.wipe(buffer) }
                    buffer.baseAddress!.copyMemory(from: a.baseAddress!, byteCount: a.count)
                    (buffer.baseAddress! + a.count).copyMemory(from: b.baseAddress!, byteCount: b.count)
                    return try! SecretKey(copying: UnsafeRawBufferPointer(buffer))
                }
            }
        }
        return KeyDerivation.hkdf(from: ikm, salt: salt, info: "coffer.deniable.vault.v1")
    }

    /// A whole vault file sealing `plain` (exactly `header.contentBytes` bytes), with fresh
    /// carried bytes.
    static func seal(_ plain: [UInt8], header: Header, vaultKey: SecretKey, storageKey: SecretKey) throws(DeniableError) -> Data {
        precondition(plain.count == header.contentBytes, "padded plaintext must fill the vault")
        do {
            var inner = try aead.seal(plain, key: vaultKey, associatedData: header.bytes)
            defer { inner.resetBytes(in: 0..<inner.count) }
            return try wrap(inner: inner, header: header, carried: SecretKey.random(byteCount: carriedKeyBytes), storageKey: storageKey)
        } catch let error as DeniableError { throw error } catch {
            throw .storage("sealing the vault failed: \(error)", cause: StorageCause(error))
        }
    }

    /// The file for an inner box (inner nonce ‖ ciphertext ‖ tag) under a fresh outer salt and nonce.
    static func wrap(inner: Data, header: Header, carried: SecretKey, storageKey: SecretKey) throws(DeniableError) -> Data {
        var w = Writer(buffer: [])
        w.bytes(magic)
        w.u32(UInt32(header.contentBytes))
        let salt = SecureRandom.bytes(outerSaltBytes)
        w.bytes(Array(salt))
        let clear = w.buffer
        let key = StorageKey.outerKey(storageKey, salt: salt, label: outerLabel)
        var body = Data(header.bytes)
        carried.withUnsafeBytes { body.append(contentsOf: $0) }
        body.append(inner)
        defer { body.resetBytes(in: 0..<body.count) }
        let outer: Data
        do { outer = try aead.seal(body, key: key, associatedData: clear) } catch {
            throw .storage("sealing the vault failed: \(error)", cause: StorageCause(error))
        }
        // `seal` puts its nonce first: clear header ‖ nonce ‖ box is the layout above.
        var file = Data(clear)
        file.append(outer)
        precondition(file.count == fileLength(contentBytes: header.contentBytes), "vault length must be constant")
        return file
    }

    /// Opens the inner box with the version-3 key alone (a session's saved key).
    /// - Throws: ``DeniableError/unlockFailed`` when the key is wrong.
    static func openInner(_ inner: Data, header: Header, vaultKey: SecretKey) throws(DeniableError) -> VaultContents {
        var plain: Data
        do { plain = try aead.open(inner, key: vaultKey, associatedData: header.bytes) } catch { throw .unlockFailed }
        return try decode(&plain, header: header)
    }

    /// Opens the inner box with the passphrase's keys: the version-3 key, then the former key
    /// with format 2's and format 1's associated data. Returns whether the former key opened it
    /// (the vault should be re-keyed).
    /// - Throws: ``DeniableError/unlockFailed`` when no key opens it (every attempt made).
    static func openInner(_ inner: Data, header: Header, keys: Keys) throws(DeniableError) -> (VaultContents, former: Bool) {
        let attempts: [(SecretKey, [UInt8], Bool)] = [
            (keys.current, header.bytes, false), (keys.former, header.formerBytes(magic: formerMagic), true),
            (keys.former, header.formerBytes(magic: legacyMagic), true),
        ]
        for (key, associated, former) in attempts {
            guard var plain = try? aead.open(inner, key: key, associatedData: associated) else { continue }
            return (try decode(&plain, header: header), former)
        }
        throw .unlockFailed
    }

    private static func decode(_ plain: inout Data, header: Header) throws(DeniableError) -> VaultContents {
        defer { plain.resetBytes(in: 0..<plain.count) }
        guard plain.count == header.contentBytes else { throw .corrupted("the vault's plaintext has the wrong size") }
        return try withBytes(plain) { (raw) throws(DeniableError) in try VaultContents.decode(raw) }
    }
}
