// The vault file: one binary file of constant length, two layers of XChaCha20-Poly1305.
import CofferCrypto
import Foundation

/// The vault's file format. All integers are big-endian.
///
///     offset  bytes  field
///          0      8  magic "CFVAULT1"
///          8      4  P, bytes of the padded plaintext
///         12      4  Argon2id opslimit
///         16      4  Argon2id memlimit, KiB
///         20     16  Argon2id salt
///         36     24  outer nonce, fresh at every write
///         60      …  outer box (XChaCha20-Poly1305, key from the secure element alone,
///                    associated data = bytes 0..<36) of:
///                        inner nonce (24) ‖ inner box (P + 16) — XChaCha20-Poly1305 under the
///                        vault key (passphrase and secure element), associated data = bytes 0..<36
///
/// The file is `P + 116` bytes whatever it holds. The outer layer needs no passphrase, so the
/// app re-encrypts it with a fresh nonce at every open, unlock and lock — every byte after the
/// header changes each time, in a vault that is used and in one that never was.
public enum Vault {
    /// The file's first eight bytes.
    static let magic = Array("CFVAULT1".utf8)
    /// Bytes before the outer box.
    static let headerBytes = 60
    /// Bytes of the header the boxes authenticate (everything but the outer nonce).
    static let authenticatedHeaderBytes = 36
    /// Bytes the file adds to the padded plaintext: header, inner nonce, two tags.
    public static let overhead = headerBytes + 24 + 16 + 16
    static let aead = AEAD.xchacha20Poly1305

    /// The file length for a plaintext of `contentBytes`.
    public static func fileLength(contentBytes: Int) -> Int { contentBytes + overhead }

    /// The parsed header.
    struct Header: Equatable {
        var contentBytes: Int
        var kdf: Argon2idParameters
        var salt: Data

        /// The authenticated part (bytes 0..<36).
        var bytes: [UInt8] {
            var w = Writer(buffer: [])
            w.bytes(Vault.magic)
            w.u32(UInt32(contentBytes))
            w.u32(UInt32(kdf.opsLimit))
            w.u32(UInt32(kdf.memLimit / 1024))
            w.bytes(Array(salt))
            return w.buffer
        }

        static func parse(_ file: Data, expectedContentBytes: Int?) throws(DeniableError) -> Header {
            guard file.count >= Vault.overhead else { throw .corrupted("the vault file is too short (\(file.count) bytes)") }
            return try withBytes(file) { (raw) throws(DeniableError) -> Header in
                var r = Reader(bytes: raw)
                guard let m = r.take(8), Array(m) == Vault.magic,
                      let p = r.u32(), let ops = r.u32(), let memKiB = r.u32(), let salt = r.take(16)
                else { throw .corrupted("the vault file does not start with a vault header") }
                let header = Header(contentBytes: Int(p),
                                    kdf: Argon2idParameters(opsLimit: UInt64(ops), memLimit: Int(memKiB) * 1024),
                                    salt: Data(salt))
                guard file.count == Vault.fileLength(contentBytes: header.contentBytes) else {
                    throw .corrupted("the vault file is \(file.count) bytes; its header says \(Vault.fileLength(contentBytes: header.contentBytes))")
                }
                if let expectedContentBytes, expectedContentBytes != header.contentBytes {
                    throw .corrupted("the vault holds \(header.contentBytes) content bytes; the configuration says \(expectedContentBytes)")
                }
                do { try header.kdf.validate() } catch { throw .corrupted("the vault's Argon2id costs are out of range") }
                return header
            }
        }
    }

    /// The outer key: the secure element's MAC of a label and the salt.
    static func outerKey(salt: Data, secureElement: SecureElement) throws(DeniableError) -> SecretKey {
        try secureElement.authenticate(Data("coffer.deniable.vault.outer".utf8) + salt)
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
    static func seal(_ plain: [UInt8], header: Header, vaultKey: SecretKey, outerKey: SecretKey) throws(DeniableError) -> Data {
        precondition(plain.count == header.contentBytes, "padded plaintext must fill the vault")
        let ad = header.bytes
        do {
            var inner = try aead.seal(plain, key: vaultKey, associatedData: ad)
            defer { inner.resetBytes(in: 0..<inner.count) }
            return try wrap(inner: inner, header: header, outerKey: outerKey)
        } catch let error as DeniableError { throw error } catch { throw .storage("sealing the vault failed: \(error)") }
    }

    /// The file for an inner box (inner nonce ‖ ciphertext ‖ tag) under a fresh outer nonce.
    static func wrap(inner: Data, header: Header, outerKey: SecretKey) throws(DeniableError) -> Data {
        let ad = header.bytes
        let outer: Data
        do { outer = try aead.seal(inner, key: outerKey, associatedData: ad) } catch { throw .storage("sealing the vault failed: \(error)") }
        // `seal` puts its nonce first: header ‖ nonce ‖ box is the layout above.
        var file = Data(ad)
        file.append(outer)
        precondition(file.count == fileLength(contentBytes: header.contentBytes), "vault length must be constant")
        return file
    }

    /// The inner box of a vault file, after checking the outer layer.
    /// - Throws: ``DeniableError/corrupted(_:)`` when the outer layer fails (the file was altered,
    ///   or the secure element's key is not the one that wrote it).
    static func unwrap(_ file: Data, header: Header, outerKey: SecretKey) throws(DeniableError) -> Data {
        let ad = header.bytes
        do {
            return try aead.open(file.subdata(in: authenticatedHeaderBytes..<file.count), key: outerKey, associatedData: ad)
        } catch {
            throw .corrupted("the vault file failed its integrity check (altered, or written with another secure-element key)")
        }
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
