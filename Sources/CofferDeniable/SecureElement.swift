// The secure-element key k_se: held by hardware on a phone, by a 0600 file here.

import CofferCrypto
import CofferSync
import Foundation

/// A device-bound key that computes with its secret but never hands it out. The vault key mixes
/// its output into the passphrase-derived key, so a copy of the vault file alone cannot be
/// attacked offline, and the outer layer of the vault is keyed by it alone.
public protocol SecureElement: Sendable {
    /// HMAC-SHA256 of `message` under the element's key (32 bytes), computed inside.
    func authenticate(_ message: Data) throws(DeniableError) -> SecretKey
    /// Replaces the key with a fresh one: what the old key protected can no longer be opened.
    /// Deniable storage never calls it (a new vault keeps the device key; a missing or damaged key
    /// is replaced by ``prepare()``); it is for an app that wants to destroy what the key protected.
    func regenerate() throws(DeniableError)
    /// Makes sure the key exists and can be used, at every app start. Returns true when a new
    /// key had to be made (none existed, or the stored one was damaged): whatever the old key
    /// protected can no longer be opened and is replaced.
    func prepare() throws(DeniableError) -> Bool
}

extension SecureElement {
    /// A hardware element always has its key: compute once to surface a failure, make nothing.
    public func prepare() throws(DeniableError) -> Bool {
        _ = try authenticate(Data("coffer.deniable.prepare".utf8))
        return false
    }
}

/// A real software stand-in for a secure element on platforms without one: a random 32-byte key
/// in a file only its owner may read (mode 0600), created once, at the first app start. It
/// refuses a key file whose permissions are wider, and no API returns the key.
///
/// Unlike hardware, the file sits beside the files it protects: a copy of the folder holds the
/// key (see `docs/deniable-threat-model.md`).
public final class FileSecureElement: SecureElement, @unchecked Sendable {
    // Safe to share: `cached` is only touched under `lock`; `keyFile` is immutable.
    /// Where the key lives.
    public let keyFile: URL
    private let lock = Lock()
    private var cached: KeyedHash?

    /// A secure element keeping its key at `keyFile` (created with mode 0600 when absent).
    public init(keyFile: URL) {
        self.keyFile = keyFile
    }

    /// HMAC-SHA256 of `message` under the key file's key.
    /// - Throws: ``DeniableError/secureElement(_:)`` when the file's permissions are wider than
    ///   0600, or it cannot be read or created.
    public func authenticate(_ message: Data) throws(DeniableError) -> SecretKey {
        let hasher = try keyed()
        var mac = hasher.raw(message)
        // The MAC is key material to its callers: only the SecretKey keeps a copy.
        defer { mac.resetBytes(in: 0..<mac.count) }
        do { return try SecretKey(copying: mac) } catch { throw .secureElement("could not hold the result: \(error)") }
    }

    /// Writes a fresh key (atomically, 0600) and forgets the old one.
    public func regenerate() throws(DeniableError) {
        try lock.withLock { () throws(DeniableError) -> Void in
            cached = nil
            try writeKey(SecretKey.random(byteCount: 32))
        }
    }

    /// Creates the key file when it is missing, and replaces it when it does not hold a 32-byte
    /// key. A key file readable by others is refused (``DeniableError/secureElement(_:)``): it is
    /// not damaged, and replacing it would destroy what it protects; fix its mode to 0600.
    public func prepare() throws(DeniableError) -> Bool {
        return try lock.withLock { () throws(DeniableError) -> Bool in
            let file = OwnerOnlyKeyFile(url: keyFile)
            if FileManager.default.fileExists(atPath: keyFile.path) {
                do throws(FileOperationError) {
                    cached = KeyedHash(key: try file.load())
                    return false
                } catch {
                    let mode =
                        (try? FileManager.default.attributesOfItem(atPath: keyFile.path)[.posixPermissions] as? NSNumber)?.intValue ?? 0
                    if mode & 0o077 != 0 { throw .secureElement(error.message) }
                }
            }
            let key = SecretKey.random(byteCount: 32)
            try writeKey(key)
            cached = KeyedHash(key: key)
            return true
        }
    }

    private func keyed() throws(DeniableError) -> KeyedHash {
        return try lock.withLock { () throws(DeniableError) -> KeyedHash in
            if let cached { return cached }
            let key: SecretKey
            do throws(FileOperationError) { key = try OwnerOnlyKeyFile(url: keyFile).loadOrCreate() } catch {
                throw .secureElement(error.message)
            }
            let hasher = KeyedHash(key: key)
            cached = hasher
            return hasher
        }
    }

    private func writeKey(_ key: SecretKey) throws(DeniableError) {
        do { try OwnerOnlyKeyFile(url: keyFile).write(key) } catch { throw .secureElement(error.message) }
    }
}
