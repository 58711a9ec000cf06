// A P-256 key-agreement key in the Secure Enclave, through CryptoKit (Apple devices only). It
// cannot be compiled on Linux: Scripts/typecheck-apple.sh type-checks it against AppleInterfaces/,
// and docs/apple-platforms.md records its line-by-line review against Apple's documentation.

#if canImport(CryptoKit) && canImport(Security)
import CryptoKit
import Foundation
import Security

/// A `SecureEnclave.P256.KeyAgreement` private key: made inside the enclave with access control
/// "when unlocked, this device only" and "private key usage", kept by the caller as its opaque
/// `dataRepresentation` (only this device's enclave can use it). Not `Sendable`: CryptoKit's
/// page lists no such conformance for the key, so callers keep it behind a lock.
public struct SecureEnclaveP256Key {
    private let key: SecureEnclave.P256.KeyAgreement.PrivateKey

    /// Whether this device has a Secure Enclave (false in the simulator and on Macs without one).
    public static var isAvailable: Bool { SecureEnclave.isAvailable }

    /// A new key in the enclave, usable only while the device is unlocked, on this device only.
    /// - Throws: ``CryptoError/operationFailed(_:)`` when the access control cannot be made or
    ///   the enclave refuses (the device is locked).
    public static func make() throws(CryptoError) -> SecureEnclaveP256Key {
        var failure: Unmanaged<CFError>?
        guard
            let access = SecAccessControlCreateWithFlags(nil, kSecAttrAccessibleWhenUnlockedThisDeviceOnly, .privateKeyUsage, &failure)
        else {
            let reason = failure.map { String(describing: $0.takeRetainedValue()) } ?? "no reason given"
            throw .operationFailed("could not describe the Secure Enclave key's access: \(reason)")
        }
        do { return SecureEnclaveP256Key(key: try SecureEnclave.P256.KeyAgreement.PrivateKey(accessControl: access)) } catch {
            throw .operationFailed("the Secure Enclave could not make a key (is the device locked?): \(error)")
        }
    }

    private init(key: SecureEnclave.P256.KeyAgreement.PrivateKey) { self.key = key }

    /// The key from its data representation.
    /// - Throws: ``CryptoError/invalidParameter(_:)`` when this device's enclave does not accept it.
    public init(dataRepresentation: Data) throws(CryptoError) {
        do { key = try SecureEnclave.P256.KeyAgreement.PrivateKey(dataRepresentation: dataRepresentation) } catch {
            throw .invalidParameter("the Secure Enclave did not accept the key (made on another device?): \(error)")
        }
    }

    /// The opaque blob to keep (not the key: only this device's enclave can use it).
    public var dataRepresentation: Data { key.dataRepresentation }

    /// ECDH inside the enclave with `point`: the shared secret's 32 bytes.
    /// - Throws: ``CryptoError/operationFailed(_:)`` when the enclave refuses (the device is locked).
    public func sharedSecret(with point: P256PublicKey) throws(CryptoError) -> SecretKey {
        let shared: SharedSecret
        do { shared = try key.sharedSecretFromKeyAgreement(with: point.key) } catch {
            throw .operationFailed("the Secure Enclave refused the key agreement (is the device locked?): \(error)")
        }
        return try P256Agreement.secret(shared)
    }
}
#endif
