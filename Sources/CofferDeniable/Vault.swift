// The vault file: one binary file of constant length, two layers of XChaCha20-Poly1305.

import CofferCrypto
import Foundation

/// The vault's file format (version 2). All integers are big-endian.
///
///     offset  bytes  field (cleartext)
///          0      8  magic "CFVAULT2"
///          8      4  P, bytes of the padded plaintext (from the configuration: every install alike)
///         12     16  outer salt, fresh at every write
///         28     24  outer nonce, fresh at every write
///         52      …  outer box (XChaCha20-Poly1305; key: the secure element's MAC of a label and
///                    the outer salt; associated data = bytes 0..<28) of:
///                        inner header (36): magic ‖ P ‖ Argon2id opslimit ‖ memlimit (KiB) ‖ salt (16)
///                        inner nonce (24) ‖ inner box (P + 16) — XChaCha20-Poly1305 under the
///                        vault key (passphrase and secure element), associated data = inner header
///
/// The file is `P + 144` bytes whatever it holds. Nothing that belongs to one vault (its
/// Argon2id salt and costs) is in cleartext: the cleartext header holds only constants and the
/// outer layer's fresh salt and nonce. The outer layer needs no passphrase, so the app
/// re-encrypts it at every start, unlock and lock — every byte after the first twelve changes
/// each time, in a vault that is used and in one that never was.
///
/// Version 1 (`CFVAULT1`) kept the inner header in cleartext; such a file is read and rewritten
/// in version 2 at the next start, its inner box unchanged (the inner header keeps magic
/// `CFVAULT1`, which is what that box authenticates).
public enum Vault {
    /// The file's first eight bytes.
    static let magic = Array("CFVAULT2".utf8)
    /// The first eight bytes of a version-1 file, and of the inner header of a converted one.
    static let legacyMagic = Array("CFVAULT1".utf8)
    /// Bytes of the cleartext header the outer box authenticates (magic, P, outer salt).
    static let clearHeaderBytes = 28
    /// Bytes before the outer box (the cleartext header and the outer nonce).
    static let outerPrefixBytes = 52
    /// Bytes of the inner header, inside the outer box.
    static let innerHeaderBytes = 36
    /// Bytes of the outer layer's salt.
    static let outerSaltBytes = 16
    /// Bytes the file adds to the padded plaintext: cleartext header, outer nonce, inner header,
    /// inner nonce, two tags.
    public static let overhead = outerPrefixBytes + innerHeaderBytes + 24 + 16 + 16
    static let aead = AEAD.xchacha20Poly1305

    /// The file length for a plaintext of `contentBytes`.
    public static func fileLength(contentBytes: Int) -> Int { contentBytes + overhead }

    /// The inner header: what one vault's key derivation needs.
    struct Header: Equatable {
        var contentBytes: Int
        var kdf: Argon2idParameters
        var salt: Data
        /// `CFVAULT2` for vaults made in version 2, `CFVAULT1` for converted ones.
        var magic: [UInt8] = Vault.magic

        /// The 36 bytes the inner box authenticates.
        var bytes: [UInt8] {
            var w = Writer(buffer: [])
            w.bytes(magic)
            w.u32(UInt32(contentBytes))
            w.u32(UInt32(kdf.opsLimit))
            w.u32(UInt32(kdf.memLimit / 1024))
            w.bytes(Array(salt))
            return w.buffer
        }

        /// Parses 36 header bytes (a version-1 file's first bytes, or the inner header).
        static func parse(_ raw: UnsafeRawBufferPointer, expectedContentBytes: Int?) throws(DeniableError) -> Header {
            var r = Reader(bytes: raw)
            guard let m = r.take(8), Array(m) == Vault.magic || Array(m) == Vault.legacyMagic,
                let p = r.u32(), let ops = r.u32(), let memKiB = r.u32(), let salt = r.take(16)
            else { throw .corrupted("the vault does not hold a vault header") }
            let header = Header(
                contentBytes: Int(p),
                kdf: Argon2idParameters(opsLimit: UInt64(ops), memLimit: Int(memKiB) * 1024),
                salt: Data(salt), magic: Array(m))
            if let expectedContentBytes, expectedContentBytes != header.contentBytes {
                throw .corrupted("the vault holds \(header.contentBytes) content bytes; the configuration says \(expectedContentBytes)")
            }
            do { try header.kdf.validateWithinCap() } catch { throw .corrupted("the vault's key costs are refused: \(error)") }
            return header
        }
    }

    /// A vault file with its outer layer removed.
    struct Opened {
        /// The inner header (key derivation).
        var header: Header
        /// Inner nonce ‖ inner box.
        var inner: Data
        /// Whether the file was in the version-1 layout (it should be rewritten).
        var legacy: Bool
    }

    /// Checks a vault file's length and header and removes its outer layer.
    /// - Throws: ``DeniableError/corrupted(_:)`` when the file is not a vault of this size, or the
    ///   outer layer fails (the file was altered, or written with another secure-element key).
    static func open(_ file: Data, expectedContentBytes: Int, secureElement: SecureElement) throws(DeniableError) -> Opened {
        guard file.count >= 8 else { throw .corrupted("the vault file is too short (\(file.count) bytes)") }
        if Array(file.prefix(8)) == legacyMagic {
            return try openLegacy(file, expectedContentBytes: expectedContentBytes, secureElement: secureElement)
        }
        guard Array(file.prefix(8)) == magic else { throw .corrupted("the vault file does not start with a vault header") }
        let expected = fileLength(contentBytes: expectedContentBytes)
        guard file.count == expected else { throw .corrupted("the vault file is \(file.count) bytes; \(expected) were expected") }
        let clear = Data(file.prefix(clearHeaderBytes))
        let p = clear.subdata(in: 8..<12).reduce(0) { $0 << 8 | Int($1) }
        guard p == expectedContentBytes else {
            throw .corrupted("the vault holds \(p) content bytes; the configuration says \(expectedContentBytes)")
        }
        let outerKey = try outerKey(salt: clear.subdata(in: 12..<clearHeaderBytes), secureElement: secureElement)
        var body: Data
        do { body = try aead.open(file.subdata(in: clearHeaderBytes..<file.count), key: outerKey, associatedData: clear) } catch {
            throw .corrupted("the vault file failed its integrity check (altered, or written with another secure-element key)")
        }
        defer { body.resetBytes(in: 0..<body.count) }
        let header = try withBytes(body.prefix(innerHeaderBytes)) { (raw) throws(DeniableError) in
            try Header.parse(raw, expectedContentBytes: expectedContentBytes)
        }
        return Opened(header: header, inner: Data(body.dropFirst(innerHeaderBytes)), legacy: false)
    }

    /// A version-1 file: cleartext inner header, outer key from the secure element and that salt.
    private static func openLegacy(_ file: Data, expectedContentBytes: Int, secureElement: SecureElement) throws(DeniableError) -> Opened {
        let legacyPrefix = 60
        let legacyAuthenticated = 36
        guard file.count == expectedContentBytes + legacyPrefix + 24 + 32 else {
            throw .corrupted("the version-1 vault file is \(file.count) bytes; \(expectedContentBytes + legacyPrefix + 56) were expected")
        }
        let header = try withBytes(file.prefix(legacyAuthenticated)) { (raw) throws(DeniableError) in
            try Header.parse(raw, expectedContentBytes: expectedContentBytes)
        }
        let outer = try secureElement.authenticate(Data("coffer.deniable.vault.outer".utf8) + header.salt)
        let inner: Data
        do { inner = try aead.open(file.subdata(in: legacyAuthenticated..<file.count), key: outer, associatedData: header.bytes) } catch {
            throw .corrupted("the version-1 vault file failed its integrity check")
        }
        return Opened(header: header, inner: inner, legacy: true)
    }

    /// The outer key: the secure element's MAC of a label and the write's outer salt.
    static func outerKey(salt: Data, secureElement: SecureElement) throws(DeniableError) -> SecretKey {
        try secureElement.authenticate(Data("coffer.deniable.vault.outer.v2".utf8) + salt)
    }

    /// The vault key: Argon2id of the normalised passphrase, mixed with the secure element's MAC
    /// of it through HKDF-SHA256 (salted with the vault salt).
    static func vaultKey(passphrase: String, header: Header, secureElement: SecureElement) throws(DeniableError) -> SecretKey {
        let stretched: SecretKey
        do { stretched = try Argon2id.deriveKey(passphrase: passphrase, salt: header.salt, parameters: header.kdf) } catch {
            throw .storage("Argon2id failed: \(error)")
        }
        var message = Data("coffer.deniable.vault.inner".utf8)
        stretched.withUnsafeBytes { message.append(contentsOf: $0) }
        defer { message.resetBytes(in: 0..<message.count) }
        let mixed = try secureElement.authenticate(message)
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
        return KeyDerivation.hkdf(from: ikm, salt: header.salt, info: "coffer.deniable.vault.v1")
    }

    /// A whole vault file sealing `plain` (exactly `header.contentBytes` bytes).
    static func seal(_ plain: [UInt8], header: Header, vaultKey: SecretKey, secureElement: SecureElement) throws(DeniableError) -> Data {
        precondition(plain.count == header.contentBytes, "padded plaintext must fill the vault")
        do {
            var inner = try aead.seal(plain, key: vaultKey, associatedData: header.bytes)
            defer { inner.resetBytes(in: 0..<inner.count) }
            return try wrap(inner: inner, header: header, secureElement: secureElement)
        } catch let error as DeniableError { throw error } catch { throw .storage("sealing the vault failed: \(error)") }
    }

    /// The file for an inner box (inner nonce ‖ ciphertext ‖ tag) under a fresh outer salt and nonce.
    static func wrap(inner: Data, header: Header, secureElement: SecureElement) throws(DeniableError) -> Data {
        var w = Writer(buffer: [])
        w.bytes(magic)
        w.u32(UInt32(header.contentBytes))
        let salt = SecureRandom.bytes(outerSaltBytes)
        w.bytes(Array(salt))
        let clear = w.buffer
        let key = try outerKey(salt: salt, secureElement: secureElement)
        var body = Data(header.bytes)
        body.append(inner)
        defer { body.resetBytes(in: 0..<body.count) }
        let outer: Data
        do { outer = try aead.seal(body, key: key, associatedData: clear) } catch { throw .storage("sealing the vault failed: \(error)") }
        // `seal` puts its nonce first: clear header ‖ nonce ‖ box is the layout above.
        var file = Data(clear)
        file.append(outer)
        precondition(file.count == fileLength(contentBytes: header.contentBytes), "vault length must be constant")
        return file
    }

    /// Opens the inner box with the vault key.
    /// - Throws: ``DeniableError/unlockFailed`` when the key is wrong.
    static func openInner(_ inner: Data, header: Header, vaultKey: SecretKey) throws(DeniableError) -> VaultContents {
        var plain: Data
        do { plain = try aead.open(inner, key: vaultKey, associatedData: header.bytes) } catch { throw .unlockFailed }
        defer { plain.resetBytes(in: 0..<plain.count) }
        guard plain.count == header.contentBytes else { throw .corrupted("the vault's plaintext has the wrong size") }
        return try withBytes(plain) { (raw) throws(DeniableError) in try VaultContents.decode(raw) }
    }
}
