// The Secure Enclave as the deniable store's secure element, on Apple devices. It cannot be
// compiled on Linux: Scripts/typecheck-apple.sh type-checks it against AppleInterfaces/, and
// docs/apple-platforms.md records its line-by-line review against Apple's documentation.
#if canImport(CryptoKit) && canImport(Security)
import CofferCrypto
import CofferSync
import Foundation

/// The device's Secure Enclave as a ``SecureElement``: a `SecureEnclave.P256.KeyAgreement`
/// private key that never leaves the enclave, made with access control "when unlocked, this
/// device only" and "private key usage". What is kept is the key's `dataRepresentation` — an
/// opaque blob only this device's enclave can use — in a 0600 file beside the vault
/// (`keyFile`), made at the first app start of every install. Each key agreement runs inside
/// the enclave, so the ``DeviceCost`` rounds of every passphrase guess run there, one after the
/// other, on this device only (as CoverDrop's RainbowSloth does on iOS).
///
/// The key can be used only while the device is unlocked: an unlock or a new vault on a
/// locked device fails with ``DeniableError/secureElement(_:)``. The background sender never
/// uses it, nor does the app start unless it must seal a fresh vault (``prepare()`` only checks
/// that the blob file exists), so a background run on a locked phone goes through. Pass it with
/// ``DeniableConfiguration/hardwareSecureElement`` (3 words, as CoverDrop's apps with a
/// hardware element).
public final class SecureEnclaveElement: SecureElement, @unchecked Sendable {
    // Safe to share: `cached` is only touched under `lock`; `keyFile` is immutable.
    /// Where the key's data representation lives (mode 0600).
    public let keyFile: URL
    private let lock = Lock()
    private var cached: SecureEnclaveP256Key?

    /// The Secure Enclave keeping its key's blob at `keyFile` (made by ``prepare()``).
    /// - Throws: ``DeniableError/secureElement(_:)`` on a device without a Secure Enclave (the
    ///   simulator, a Mac without one): use ``FileSecureElement`` there.
    public init(keyFile: URL) throws(DeniableError) {
        guard SecureEnclaveP256Key.isAvailable else {
            throw .secureElement("this device has no Secure Enclave (the simulator, or a Mac without one); use FileSecureElement")
        }
        self.keyFile = keyFile
    }

    /// ECDH inside the Secure Enclave of its key and `publicKey`.
    /// - Throws: ``DeniableError/secureElement(_:)`` when the blob is missing or not this
    ///   device's, or the enclave refuses (the device is locked).
    public func sharedSecret(with publicKey: P256PublicKey) throws(DeniableError) -> SecretKey {
        let key = try loaded()
        do { return try key.sharedSecret(with: publicKey) } catch { throw .secureElement("\(error)") }
    }

    /// Makes a new enclave key and replaces the blob file: what the old key protected can no
    /// longer be opened.
    public func regenerate() throws(DeniableError) {
        try lock.withLock { () throws(DeniableError) -> Void in
            cached = nil
            cached = try makeKey()
        }
    }

    /// Makes the enclave key when its blob file is missing (the first start). An existing blob
    /// is not used here — on a locked device it could not be — so a blob the enclave refuses is
    /// reported by the next unlock, and ``regenerate()`` starts over.
    public func prepare() throws(DeniableError) -> Bool {
        try lock.withLock { () throws(DeniableError) -> Bool in
            if FileManager.default.fileExists(atPath: keyFile.path) { return false }
            cached = try makeKey()
            return true
        }
    }

    private func loaded() throws(DeniableError) -> SecureEnclaveP256Key {
        try lock.withLock { () throws(DeniableError) -> SecureEnclaveP256Key in
            if let cached { return cached }
            guard let blob = try AtomicFile.read(keyFile) else {
                throw .secureElement("the Secure Enclave key's file \(keyFile.path) is missing")
            }
            do {
                let key = try SecureEnclaveP256Key(dataRepresentation: blob)
                cached = key
                return key
            } catch { throw .secureElement("\(keyFile.path): \(error)") }
        }
    }

    /// A new enclave key (usable only while the device is unlocked, on this device only), its
    /// blob written atomically with mode 0600.
    private func makeKey() throws(DeniableError) -> SecureEnclaveP256Key {
        let key: SecureEnclaveP256Key
        do { key = try SecureEnclaveP256Key.make() } catch { throw .secureElement("\(error)") }
        try AtomicFile.write(key.dataRepresentation, to: keyFile, permissions: 0o600)
        return key
    }
}
#endif
