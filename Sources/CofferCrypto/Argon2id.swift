// Passphrase-based key derivation: Argon2id through libsodium's crypto_pwhash.

import CSodium
import Foundation

/// Argon2id cost parameters. They are stored beside the salt so that a store made with
/// other parameters still opens.
public struct Argon2idParameters: Sendable, Equatable, Codable, CustomStringConvertible {
    /// Number of passes over memory (libsodium `opslimit`).
    public var opsLimit: UInt64
    /// Memory in bytes (libsodium `memlimit`).
    public var memLimit: Int

    /// Creates parameters; ``validate()`` checks them against libsodium's bounds.
    public init(opsLimit: UInt64, memLimit: Int) {
        self.opsLimit = opsLimit
        self.memLimit = memLimit
    }

    /// libsodium's INTERACTIVE preset: 2 passes, 64 MiB (about 0.1 s here).
    public static let interactive = Argon2idParameters(
        opsLimit: UInt64(crypto_pwhash_argon2id_OPSLIMIT_INTERACTIVE), memLimit: Int(crypto_pwhash_argon2id_MEMLIMIT_INTERACTIVE))
    /// libsodium's MODERATE preset: 3 passes, 256 MiB (about 0.6 s here).
    public static let moderate = Argon2idParameters(
        opsLimit: UInt64(crypto_pwhash_argon2id_OPSLIMIT_MODERATE), memLimit: Int(crypto_pwhash_argon2id_MEMLIMIT_MODERATE))
    /// CoverDrop's cost where no hardware secure element slows guesses: libsodium's SENSITIVE
    /// passes (4) over 256 MiB, as CoverDrop's Android app derives its passphrase key then
    /// (about 0.4 s on the development machine). The deniable vault's default.
    public static let coverDrop = Argon2idParameters(
        opsLimit: UInt64(crypto_pwhash_argon2id_OPSLIMIT_SENSITIVE), memLimit: 256 << 20)
    /// libsodium's minimum cost. Only for tests.
    public static let minimum = Argon2idParameters(
        opsLimit: UInt64(crypto_pwhash_argon2id_OPSLIMIT_MIN), memLimit: Int(crypto_pwhash_argon2id_MEMLIMIT_MIN))

    /// The preset the cap is measured from (MODERATE; the deniable vault's ``coverDrop`` adds one
    /// pass to it and stays well under the cap).
    public static let strongestPreset = moderate
    /// The most Coffer accepts, on writing and on reading alike: 4× MODERATE's passes and memory
    /// (12 passes, 1 GiB). A file whose stored costs are higher is refused before any
    /// key work, so whoever can write a file cannot make opening it take minutes or exhaust
    /// memory; and Coffer never writes a file it would then refuse.
    public static let cap = Argon2idParameters(opsLimit: strongestPreset.opsLimit * 4, memLimit: strongestPreset.memLimit * 4)

    /// ``validate()``, and also within ``cap``.
    /// - Throws: ``CryptoError/invalidParameter(_:)`` naming the costs found and the cap.
    public func validateWithinCap() throws(CryptoError) {
        try validate()
        guard opsLimit <= Self.cap.opsLimit, memLimit <= Self.cap.memLimit else {
            throw .invalidParameter("Argon2id costs \(self) exceed Coffer's cap \(Self.cap) (4× MODERATE)")
        }
    }

    /// Salt length Argon2id takes (16 bytes).
    public static let saltByteCount = Int(crypto_pwhash_argon2id_SALTBYTES)

    /// Throws when a parameter is outside libsodium's accepted range.
    public func validate() throws(CryptoError) {
        if opsLimit < UInt64(crypto_pwhash_argon2id_OPSLIMIT_MIN) || opsLimit > UInt64(crypto_pwhash_argon2id_opslimit_max()) {
            throw .invalidParameter(
                "Argon2id opsLimit \(opsLimit) is outside \(crypto_pwhash_argon2id_OPSLIMIT_MIN)…\(crypto_pwhash_argon2id_opslimit_max())")
        }
        if memLimit < Int(crypto_pwhash_argon2id_MEMLIMIT_MIN) || UInt64(memLimit) > UInt64(crypto_pwhash_argon2id_memlimit_max()) {
            throw .invalidParameter(
                "Argon2id memLimit \(memLimit) bytes is outside \(crypto_pwhash_argon2id_MEMLIMIT_MIN)…\(crypto_pwhash_argon2id_memlimit_max())"
            )
        }
    }

    /// For example `Argon2id(ops: 2, mem: 64 MiB)`.
    public var description: String { "Argon2id(ops: \(opsLimit), mem: \(memLimit / (1 << 20)) MiB)" }
}

/// Argon2id (version 1.3) through libsodium.
public enum Argon2id {
    /// Derives a `byteCount`-byte key from `passphrase` and `salt`.
    /// - Throws: ``CryptoError/invalidLength(what:expected:actual:)`` for a salt that is not
    ///   16 bytes, ``CryptoError/invalidParameter(_:)`` for costs out of range, and
    ///   ``CryptoError/operationFailed(_:)`` when the memory cannot be had.
    public static func deriveKey(passphrase: String, salt: Data, parameters: Argon2idParameters, byteCount: Int = 32) throws(CryptoError)
        -> SecretKey
    {
        Sodium.ensureReady()
        guard salt.count == Argon2idParameters.saltByteCount else {
            throw .invalidLength(what: "Argon2id salt", expected: Argon2idParameters.saltByteCount, actual: salt.count)
        }
        try parameters.validate()
        return try passwordHash(
            passphrase, salt: salt, byteCount: byteCount, opsLimit: parameters.opsLimit, memLimit: Int(parameters.memLimit),
            algorithm: crypto_pwhash_ALG_ARGON2ID13, failure: "Argon2id could not run with \(parameters) (out of memory?)")
    }
}

/// libsodium's `crypto_pwhash` with `algorithm` (Argon2i or Argon2id), the one place both KDFs
/// call it: the passphrase goes through a NUL-terminated copy (valid for an empty passphrase too)
/// that is wiped after use, and the key is written straight into guarded memory.
func passwordHash(
    _ passphrase: String, salt: Data, byteCount: Int, opsLimit: UInt64, memLimit: Int, algorithm: Int32, failure: String
) throws(CryptoError) -> SecretKey {
    var password = passphrase.utf8.map { CChar(bitPattern: $0) } + [0]
    let passwordLength = password.count - 1
    defer { sodium_memzero(&password, password.count) }
    return try SecretKey.filling(byteCount: byteCount) { (out) throws(CryptoError) in
        let rc = salt.withUnsafeBytes { s in
            password.withUnsafeBufferPointer { p in
                crypto_pwhash(
                    out.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt64(byteCount),
                    p.baseAddress!, UInt64(passwordLength),
                    s.baseAddress!.assumingMemoryBound(to: UInt8.self),
                    opsLimit, memLimit, algorithm)
            }
        }
        if rc != 0 { throw .operationFailed(failure) }
    }
}
