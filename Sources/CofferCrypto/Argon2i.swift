// Argon2i (version 1.3) through libsodium, for reading stores other software made with it
// (libindy wallets and Aries Askar stores). Coffer itself derives keys with Argon2id only.

import CSodium
import Foundation

/// The Argon2i cost presets libindy and Aries Askar name `int` and `mod`.
public enum Argon2iLevel: String, Sendable, CaseIterable {
    /// libsodium's Argon2i INTERACTIVE: 4 passes over 32 MiB.
    case interactive
    /// libsodium's Argon2i MODERATE: 6 passes over 128 MiB.
    case moderate

    /// Passes over memory (libsodium `opslimit`).
    public var opsLimit: UInt64 {
        switch self {
        case .interactive: return UInt64(crypto_pwhash_argon2i_OPSLIMIT_INTERACTIVE)
        case .moderate: return UInt64(crypto_pwhash_argon2i_OPSLIMIT_MODERATE)
        }
    }

    /// Memory in bytes (libsodium `memlimit`).
    public var memLimit: Int {
        switch self {
        case .interactive: return Int(crypto_pwhash_argon2i_MEMLIMIT_INTERACTIVE)
        case .moderate: return Int(crypto_pwhash_argon2i_MEMLIMIT_MODERATE)
        }
    }
}

/// Argon2i, version 1.3, one lane, through libsodium's `crypto_pwhash` (`ALG_ARGON2I13`).
public enum Argon2i {
    /// Salt length Argon2i takes (16 bytes).
    public static let saltByteCount = Int(crypto_pwhash_argon2i_SALTBYTES)

    /// Derives a `byteCount`-byte key from the bytes of `passphrase` and `salt` at `level`.
    /// - Throws: ``CryptoError/invalidLength(what:expected:actual:)`` for a salt that is not 16
    ///   bytes, ``CryptoError/operationFailed(_:)`` when the memory cannot be had.
    public static func deriveKey(passphrase: String, salt: Data, level: Argon2iLevel, byteCount: Int = 32) throws(CryptoError)
        -> SecretKey
    {
        Sodium.ensureReady()
        guard salt.count == saltByteCount else {
            throw .invalidLength(what: "Argon2i salt", expected: saltByteCount, actual: salt.count)
        }
        return try passwordHash(
            passphrase, salt: salt, byteCount: byteCount, opsLimit: level.opsLimit, memLimit: level.memLimit,
            algorithm: crypto_pwhash_ALG_ARGON2I13, failure: "Argon2i could not run at the \(level.rawValue) level (out of memory?)")
    }
}
