// The secure element: a device-held P-256 key that does key agreement and never hands its
// secret out (the Secure Enclave on Apple devices; a 0600 key file as the stand-in here), and
// the device-bound cost built on it.

import CofferCrypto
import CofferSync
import Foundation

/// A device-held P-256 key that computes key agreement (ECDH) inside and never hands out its
/// private key: Apple's Secure Enclave implements it (`SecureEnclaveElement` on Apple
/// platforms), and ``FileSecureElement`` stands in for it where there is no such hardware.
///
/// The vault key depends on `rounds` sequential key agreements (``DeviceCost``) with this key (as
/// CoverDrop's RainbowSloth does on iOS), so every passphrase guess costs that many secure-element
/// operations and cannot be made off the device.
public protocol SecureElement: Sendable {
    /// The ECDH shared secret (the 32-byte x-coordinate) of the device key and `publicKey`,
    /// computed inside the element.
    /// - Throws: ``DeniableError/secureElement(_:)`` when the key is missing or cannot be used
    ///   (on a phone: the device is locked, or the key was made on another device).
    func sharedSecret(with publicKey: P256PublicKey) throws(DeniableError) -> SecretKey
    /// Replaces the key with a fresh one: what the old key protected can no longer be opened.
    /// Deniable storage never calls it (a new vault keeps the device key; a missing or damaged key
    /// is replaced by ``prepare()``); it is for an app that wants to destroy what the key protected.
    func regenerate() throws(DeniableError)
    /// Makes sure the key exists, at every app start, without using it (an app launched in the
    /// background on a locked phone must get through its start). Returns true when a new key had
    /// to be made (none existed, or the stored one was damaged): whatever the old key protected
    /// can no longer be opened and is replaced.
    func prepare() throws(DeniableError) -> Bool
}

/// The device-bound cost: a key that needs `rounds` sequential key agreements with the secure
/// element's key. Each round maps the running state to a P-256 point (hash and try, as
/// CoverDrop's RainbowSloth maps its inputs; swift-crypto checks every candidate), agrees a
/// secret with it inside the element, and folds that secret into the state with HKDF-SHA256;
/// the next round's point depends on it, so the rounds cannot run in parallel.
public enum DeviceCost {
    /// CoverDrop's iOS choice (RainbowSloth with n = 200, about one second in the Secure Enclave).
    public static let defaultRounds = 200
    /// The rounds Coffer accepts, on writing and on reading alike.
    public static let allowedRounds = 1...10_000

    /// The key for `input` (the Argon2id output) after `rounds` key agreements.
    /// - Throws: what the secure element throws.
    public static func derive(
        _ input: SecretKey, salt: Data, rounds: Int, secureElement: SecureElement
    ) throws(DeniableError) -> SecretKey {
        var state = KeyDerivation.hkdf(from: input, salt: salt, info: "coffer.deniable.device-cost.v1.start")
        for round in 0..<rounds {
            let point = Self.point(from: state, round: round)
            let shared = try secureElement.sharedSecret(with: point)
            state = fold(state, shared, salt: salt)
        }
        return KeyDerivation.hkdf(from: state, salt: salt, info: "coffer.deniable.device-cost.v1.key")
    }

    /// A P-256 point from the state and the round (`P256PublicKey.derived(label:seed:index:)`).
    static func point(from state: SecretKey, round: Int) -> P256PublicKey {
        P256PublicKey.derived(label: "coffer.deniable.device-cost.v1.point", seed: state, index: UInt32(round))
    }

    /// HKDF-SHA256 of the state followed by the round's shared secret.
    private static func fold(_ state: SecretKey, _ shared: SecretKey, salt: Data) -> SecretKey {
        let joined: SecretKey = state.withUnsafeBytes { a in
            shared.withUnsafeBytes { b in
                withUnsafeTemporaryAllocation(byteCount: a.count + b.count, alignment: 16) { buffer in
                    defer { SecureMemory.wipe(buffer) }
                    buffer.baseAddress!.copyMemory(from: a.baseAddress!, byteCount: a.count)
                    (buffer.baseAddress! + a.count).copyMemory(from: b.baseAddress!, byteCount: b.count)
                    return try! SecretKey(copying: UnsafeRawBufferPointer(buffer))
                }
            }
        }
        return KeyDerivation.hkdf(from: joined, salt: salt, info: "coffer.deniable.device-cost.v1.round")
    }
}

/// A real software stand-in for a secure element on platforms without one: a P-256 private key
/// (its 32-byte scalar) in a file only its owner may read (mode 0600), created once, at the first
/// app start, and used through CofferCrypto's `P256PrivateKey` (swift-crypto's `P256.KeyAgreement`). It refuses a key file whose
/// permissions are wider, and no API returns the key.
///
/// Unlike hardware, the file sits beside the files it protects: a copy of the folder holds the
/// key, and the rounds of ``DeviceCost`` cost a copier only CPU time (see
/// `docs/deniable-threat-model.md`).
public final class FileSecureElement: SecureElement, @unchecked Sendable {
    // Safe to share: `cached` is only touched under `lock`; `keyFile` is immutable.
    /// Where the key lives.
    public let keyFile: URL
    private let lock = Lock()
    private var cached: P256PrivateKey?

    /// A secure element keeping its key at `keyFile` (created with mode 0600 when absent).
    public init(keyFile: URL) {
        self.keyFile = keyFile
    }

    /// ECDH of the key file's key and `publicKey`.
    /// - Throws: ``DeniableError/secureElement(_:)`` when the file's permissions are wider than
    ///   0600, or it cannot be read or created.
    public func sharedSecret(with publicKey: P256PublicKey) throws(DeniableError) -> SecretKey {
        let key = try loaded()
        do { return try key.sharedSecret(with: publicKey) } catch { throw .secureElement("\(error)") }
    }

    /// Writes a fresh key (atomically, 0600) and forgets the old one.
    public func regenerate() throws(DeniableError) {
        try lock.withLock { () throws(DeniableError) -> Void in
            cached = nil
            cached = try writeFreshKey()
        }
    }

    /// Creates the key file when it is missing, and replaces it when it does not hold a P-256
    /// private key. A key file that cannot be read (readable by others, unreadable to this
    /// process, a link, not a regular file) is refused (``DeniableError/secureElement(_:)``): it is
    /// not damaged, and replacing it would destroy what it protects; fix it and start again.
    public func prepare() throws(DeniableError) -> Bool {
        return try lock.withLock { () throws(DeniableError) -> Bool in
            if FileManager.default.fileExists(atPath: keyFile.path), let key = try Self.readUnlessDamaged(keyFile) {
                cached = key
                return false
            }
            cached = try writeFreshKey()
            return true
        }
    }

    private func loaded() throws(DeniableError) -> P256PrivateKey {
        return try lock.withLock { () throws(DeniableError) -> P256PrivateKey in
            if let cached { return cached }
            let key: P256PrivateKey
            if FileManager.default.fileExists(atPath: keyFile.path) { key = try Self.read(keyFile) } else { key = try writeFreshKey() }
            cached = key
            return key
        }
    }

    /// The key in `url`: 32 bytes that are a P-256 scalar.
    private static func read(_ url: URL) throws(DeniableError) -> P256PrivateKey {
        let raw: SecretKey
        do throws(FileOperationError) { raw = try OwnerOnlyKeyFile(url: url).load() } catch { throw .secureElement(error.message) }
        do { return try P256PrivateKey(raw: raw) } catch {
            throw .secureElement("\(url.path) does not hold a P-256 private key: the key file is damaged")
        }
    }

    /// The key in `url`, or nil when the file is there and readable but holds no key (not 32
    /// bytes, or no P-256 scalar): damage, which ``prepare()`` replaces. A file that cannot be
    /// read (its mode, a link, not a regular file, a read error) throws and is left as it is:
    /// replacing it would lose for good the vault its key protects.
    private static func readUnlessDamaged(_ url: URL) throws(DeniableError) -> P256PrivateKey? {
        let raw: SecretKey
        do throws(FileOperationError) { raw = try OwnerOnlyKeyFile(url: url).load() } catch {
            if error.damaged { return nil }
            throw .secureElement(error.message)
        }
        return try? P256PrivateKey(raw: raw)
    }

    private func writeFreshKey() throws(DeniableError) -> P256PrivateKey {
        let key = P256PrivateKey()
        do { try OwnerOnlyKeyFile(url: keyFile).write(key.raw) } catch { throw .secureElement(error.message) }
        return key
    }
}

/// The key of the vault's and the sending queue's outer layers: 32 random bytes in a 0600 file
/// beside them, made at the first start of every install. It needs neither the passphrase nor
/// the secure element, so an app launched in the background on a locked phone can open, send
/// from and rewrite the queue (on iOS the file has the default data protection, readable after
/// the first unlock since boot, as CoverDrop's queue is).
struct StorageKey: Sendable {
    /// The key file.
    let url: URL

    /// The key, made (and written atomically, 0600) when the file is missing; replaced when it
    /// does not hold 32 bytes (what it keyed is then replaced too, as for any unreadable file).
    /// - Returns: the key, and whether it was created (missing) or replaced (damaged).
    func prepare() throws(DeniableError) -> (SecretKey, created: Bool, replaced: Bool) {
        let file = OwnerOnlyKeyFile(url: url)
        if FileManager.default.fileExists(atPath: url.path) {
            do throws(FileOperationError) { return (try file.load(), false, false) } catch {
                guard error.damaged else { throw .storage(error.message) }
            }
            let key = SecretKey.random(byteCount: 32)
            do { try file.write(key) } catch { throw .storage(error.message) }
            return (key, false, true)
        }
        let key = SecretKey.random(byteCount: 32)
        do { try file.write(key) } catch { throw .storage(error.message) }
        return (key, true, false)
    }

    /// An outer layer's key: HKDF-SHA256 of the storage key, salted with the write's fresh salt.
    static func outerKey(_ key: SecretKey, salt: Data, label: String) -> SecretKey {
        KeyDerivation.hkdf(from: key, salt: salt, info: label)
    }
}

/// The format-2 stand-in's HMAC key (`secure-element.key`), read only to convert files written
/// under it; removed once nothing needs it.
struct LegacyElementKey: Sendable {
    /// The file's name in the folder.
    static let fileName = "secure-element.key"
    let key: SecretKey

    /// The key in `folder`; nil when there is none, or the file is damaged (what it keyed cannot
    /// be read and is replaced, as format 2 replaced a damaged key).
    /// - Throws: ``DeniableError/secureElement(_:)`` when the file is readable by others or cannot
    ///   be read: it is not damaged, and going on would replace what it protects; fix its mode to 0600.
    static func load(folder: URL) throws(DeniableError) -> LegacyElementKey? {
        let url = folder.appendingPathComponent(fileName)
        guard FileManager.default.fileExists(atPath: url.path) else { return nil }
        do throws(FileOperationError) { return LegacyElementKey(key: try OwnerOnlyKeyFile(url: url).load()) } catch {
            if error.damaged { return nil }
            throw .secureElement(error.message)
        }
    }

    /// HMAC-SHA256 of `message` under the key, as format 2's `authenticate` computed it.
    func authenticate(_ message: Data) -> SecretKey {
        var mac = KeyedHash(key: key).raw(message)
        defer { mac.resetBytes(in: 0..<mac.count) }
        return try! SecretKey(copying: mac, expectedCount: 32)
    }
}
