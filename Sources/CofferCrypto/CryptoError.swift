// The one error type of CofferCrypto.

import Foundation

/// Errors raised by Coffer's cryptographic wrappers. Messages never include key material.
public enum CryptoError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Authenticated decryption failed: wrong key, or the ciphertext or its associated data was altered.
    case authenticationFailed
    /// A key or nonce had the wrong length.
    case invalidLength(what: String, expected: Int, actual: Int)
    /// A parameter (KDF cost, salt, …) is outside what the primitive accepts.
    case invalidParameter(String)
    /// The primitive itself failed (e.g. Argon2id could not allocate its memory).
    case operationFailed(String)

    /// What failed, without key material.
    public var description: String {
        switch self {
        case .authenticationFailed:
            return "authentication failed: wrong key or altered data"
        case .invalidLength(let what, let expected, let actual):
            return "\(what) must be \(expected) bytes, got \(actual)"
        case .invalidParameter(let message):
            return "invalid parameter: \(message)"
        case .operationFailed(let message):
            return "cryptographic operation failed: \(message)"
        }
    }
}

extension CryptoError: LocalizedError {
    /// The same text as `description`: what went wrong and what to do (for
    /// `localizedDescription`, alerts and logs).
    public var errorDescription: String? { description }
}
