// P-256 key agreement (ECDH) through swift-crypto: the deniable store's secure element computes
// with it (the file stand-in's key) or hands its points to the Secure Enclave.

import Crypto
import Foundation

/// A P-256 public key (a curve point) to agree a secret with.
public struct P256PublicKey: Sendable {
    /// swift-crypto's key (CryptoKit's own type on Apple platforms, which swift-crypto re-exports).
    package let key: P256.KeyAgreement.PublicKey

    package init(key: P256.KeyAgreement.PublicKey) { self.key = key }

    /// The point in ANSI X9.63 form (65 bytes: 0x04 ‖ x ‖ y).
    public var x963Representation: Data { key.x963Representation }

    /// A point from its X9.63 form.
    /// - Throws: ``CryptoError/invalidParameter(_:)`` when the bytes are not a point on P-256.
    public init(x963Representation bytes: Data) throws(CryptoError) {
        do { key = try P256.KeyAgreement.PublicKey(x963Representation: bytes) } catch {
            throw .invalidParameter("not a P-256 point in X9.63 form")
        }
    }

    /// A point that depends on `seed`, `label` and `index` alone: SHA-256 of them and a counter,
    /// read as an x-coordinate, for the first counter swift-crypto accepts as a compressed point
    /// (about half of all candidates are; hash and try, as CoverDrop's RainbowSloth maps its
    /// inputs to points). Nobody knows the point's discrete logarithm.
    public static func derived(label: String, seed: SecretKey, index: UInt32) -> P256PublicKey {
        var counter: UInt32 = 0
        while true {
            var hasher = SHA256()
            hasher.update(data: Data(label.utf8))
            seed.withUnsafeBytes { hasher.update(bufferPointer: $0) }
            withUnsafeBytes(of: index.bigEndian) { hasher.update(bufferPointer: $0) }
            withUnsafeBytes(of: counter.bigEndian) { hasher.update(bufferPointer: $0) }
            var candidate = Data([0x02])
            candidate.append(contentsOf: hasher.finalize())
            if let key = try? P256.KeyAgreement.PublicKey(compressedRepresentation: candidate) { return P256PublicKey(key: key) }
            counter += 1
        }
    }
}

/// A P-256 private key in memory, for key agreement: the file stand-in of a secure element.
public struct P256PrivateKey: Sendable {
    private let key: P256.KeyAgreement.PrivateKey

    /// A new random key.
    public init() { key = P256.KeyAgreement.PrivateKey() }

    /// The key whose 32-byte scalar is `raw`.
    /// - Throws: ``CryptoError/invalidParameter(_:)`` when `raw` is not a P-256 scalar (zero, at
    ///   least the group order, or not 32 bytes).
    public init(raw: SecretKey) throws(CryptoError) {
        do { key = try raw.withUnsafeBytes { try P256.KeyAgreement.PrivateKey(rawRepresentation: $0) } } catch {
            throw .invalidParameter("not a P-256 private key")
        }
    }

    /// The 32-byte scalar (to keep the key in a file only its owner may read).
    public var raw: SecretKey {
        var bytes = key.rawRepresentation
        defer { bytes.resetBytes(in: 0..<bytes.count) }
        return try! SecretKey(copying: bytes, expectedCount: 32)
    }

    /// The key's public point.
    public var publicKey: P256PublicKey { P256PublicKey(key: key.publicKey) }

    /// ECDH with `point`: the shared secret's 32-byte x-coordinate.
    /// - Throws: ``CryptoError/operationFailed(_:)`` when the agreement fails.
    public func sharedSecret(with point: P256PublicKey) throws(CryptoError) -> SecretKey {
        let shared: SharedSecret
        do { shared = try key.sharedSecretFromKeyAgreement(with: point.key) } catch {
            throw .operationFailed("P-256 key agreement failed: \(error)")
        }
        return try P256Agreement.secret(shared)
    }
}

/// Shared-secret handling common to the in-memory key and the Secure Enclave's.
package enum P256Agreement {
    /// A shared secret's 32 bytes as a ``SecretKey``.
    package static func secret(_ shared: SharedSecret) throws(CryptoError) -> SecretKey {
        do { return try shared.withUnsafeBytes { try SecretKey(copying: $0, expectedCount: 32) } } catch {
            throw .operationFailed("the key agreement gave an unusable result: \(error)")
        }
    }
}
