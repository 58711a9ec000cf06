// HMAC-SHA256 (swift-crypto) with the key schedule done once: blind indexes and key derivation.
import Crypto
import Foundation

/// HMAC-SHA256 under one fixed key, for blind indexes (equal inputs give equal outputs,
/// nothing else is revealed) and per-item key derivation.
///
/// The HMAC state after absorbing the key is computed once and copied for each use, so a
/// call costs only the message blocks.
public struct KeyedHash: @unchecked Sendable {
    // HMAC<SHA256> is a value type; `keyed` is never mutated, only copied.
    private let keyed: HMAC<SHA256>

    /// Output length of HMAC-SHA256.
    public static let outputByteCount = 32

    /// A hasher under `key`.
    public init(key: SecretKey) {
        keyed = key.withUnsafeBytes { HMAC<SHA256>(key: SymmetricKey(data: $0)) }
    }

    /// HMAC of the concatenation of `parts`, each prefixed with its length so that
    /// ("ab","c") and ("a","bc") differ; truncated to `byteCount` bytes (at most 32).
    public func hash(_ parts: [Data], byteCount: Int = outputByteCount) -> Data {
        var h = keyed
        for part in parts {
            var length = UInt32(truncatingIfNeeded: part.count).littleEndian
            withUnsafeBytes(of: &length) { h.update(data: $0) }
            h.update(data: part)
        }
        return Self.truncate(h.finalize(), byteCount)
    }

    /// HMAC of a single byte string with a one-byte domain label, truncated.
    public func hash(domain: UInt8, _ message: some ContiguousBytes, byteCount: Int = outputByteCount) -> Data {
        var h = keyed
        var d = domain
        withUnsafeBytes(of: &d) { h.update(data: $0) }
        message.withUnsafeBytes { h.update(data: $0) }
        return Self.truncate(h.finalize(), byteCount)
    }

    /// Plain HMAC-SHA256 of `message` (no framing), for interoperability checks.
    public func raw(_ message: some ContiguousBytes) -> Data {
        var h = keyed
        message.withUnsafeBytes { h.update(data: $0) }
        return Self.truncate(h.finalize(), Self.outputByteCount)
    }

    /// HMAC of `message` as a new 32-byte ``SecretKey`` (key derivation).
    public func deriveKey(domain: UInt8, _ message: some ContiguousBytes) -> SecretKey {
        var h = keyed
        var d = domain
        withUnsafeBytes(of: &d) { h.update(data: $0) }
        message.withUnsafeBytes { h.update(data: $0) }
        let mac = h.finalize()
        // A 32-byte MAC always makes a valid key.
        return mac.withUnsafeBytes { try! SecretKey(copying: $0) }
    }

    private static func truncate(_ mac: HMAC<SHA256>.MAC, _ byteCount: Int) -> Data {
        precondition(byteCount > 0 && byteCount <= outputByteCount, "blind index length must be 1…32 bytes")
        return mac.withUnsafeBytes { Data($0.prefix(byteCount)) }
    }
}

/// HKDF-SHA256 (RFC 5869) through swift-crypto.
public enum KeyDerivation {
    /// Derives an independent subkey from `key` for the purpose named by `info`.
    public static func hkdf(from key: SecretKey, salt: Data = Data(), info: String, byteCount: Int = 32) -> SecretKey {
        let derived = key.withUnsafeBytes { bytes in
            HKDF<SHA256>.deriveKey(
                inputKeyMaterial: SymmetricKey(data: bytes), salt: salt, info: Data(info.utf8), outputByteCount: byteCount)
        }
        return derived.withUnsafeBytes { try! SecretKey(copying: $0) }
    }
}
