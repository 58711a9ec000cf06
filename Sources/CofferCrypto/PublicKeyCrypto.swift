// Ed25519 signatures and X25519 sealed boxes through libsodium. Private halves stay inside
// `SecretKey` storage; only public keys, signatures and boxes leave these types.

import CSodium
import Foundation

/// An Ed25519 signing key pair (libsodium `crypto_sign`).
public final class Ed25519KeyPair: Sendable {
    /// Length of a public key.
    public static let publicKeyByteCount = Int(crypto_sign_PUBLICKEYBYTES)
    /// Length of a signature.
    public static let signatureByteCount = Int(crypto_sign_BYTES)
    /// Length of the seed a key pair is made from.
    public static let seedByteCount = Int(crypto_sign_SEEDBYTES)

    /// The public key (32 bytes).
    public let publicKey: Data
    /// The 32-byte seed; everything else is recomputed from it.
    private let seed: SecretKey
    private let expanded: SecretKey

    /// A key pair from the operating system's random source.
    public static func generate() -> Ed25519KeyPair {
        try! Ed25519KeyPair(seed: SecretKey.random(byteCount: seedByteCount))
    }

    /// The key pair a 32-byte `seed` determines (to restore one kept in secret storage).
    /// - Throws: ``CryptoError/invalidLength(what:expected:actual:)`` for a seed of another length.
    public init(seed: SecretKey) throws(CryptoError) {
        Sodium.ensureReady()
        guard seed.byteCount == Self.seedByteCount else {
            throw .invalidLength(what: "Ed25519 seed", expected: Self.seedByteCount, actual: seed.byteCount)
        }
        var pk = Data(count: Self.publicKeyByteCount)
        let sk = SecretKey(uninitializedCount: Int(crypto_sign_SECRETKEYBYTES))
        seed.withUnsafeBytes { s in
            sk.withUnsafeMutableStorage { out in
                pk.withUnsafeMutableBytes { p in
                    _ = crypto_sign_seed_keypair(
                        p.baseAddress!.assumingMemoryBound(to: UInt8.self),
                        out.baseAddress!.assumingMemoryBound(to: UInt8.self),
                        s.baseAddress!.assumingMemoryBound(to: UInt8.self))
                }
            }
        }
        self.seed = seed
        self.expanded = sk
        self.publicKey = pk
    }

    /// The seed, for writing the key pair into encrypted storage. This is an export.
    public func exportSeed() -> SecretKey { seed }

    /// A detached signature of `message` (64 bytes).
    public func sign(_ message: Data) -> Data {
        var signature = Data(count: Self.signatureByteCount)
        expanded.withUnsafeBytes { sk in
            message.withUnsafeBytes { m in
                signature.withUnsafeMutableBytes { sig in
                    _ = crypto_sign_detached(
                        sig.baseAddress!.assumingMemoryBound(to: UInt8.self), nil,
                        m.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(m.count),
                        sk.baseAddress!.assumingMemoryBound(to: UInt8.self))
                }
            }
        }
        return signature
    }

    /// Whether `signature` is a valid Ed25519 signature of `message` under `publicKey`.
    /// Wrong lengths are simply invalid.
    public static func verify(signature: Data, message: Data, publicKey: Data) -> Bool {
        Sodium.ensureReady()
        guard signature.count == signatureByteCount, publicKey.count == publicKeyByteCount else { return false }
        return signature.withUnsafeBytes { sig in
            message.withUnsafeBytes { m in
                publicKey.withUnsafeBytes { pk in
                    crypto_sign_verify_detached(
                        sig.baseAddress!.assumingMemoryBound(to: UInt8.self),
                        m.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(m.count),
                        pk.baseAddress!.assumingMemoryBound(to: UInt8.self)) == 0
                }
            }
        }
    }
}

/// An X25519 key pair for libsodium boxes (`crypto_box`), used to open sealed boxes addressed to it.
public final class X25519KeyPair: Sendable {
    /// Length of a public or secret key.
    public static let keyByteCount = Int(crypto_box_PUBLICKEYBYTES)

    /// The public key (32 bytes).
    public let publicKey: Data
    private let secret: SecretKey

    /// A key pair from the operating system's random source.
    public static func generate() -> X25519KeyPair {
        try! X25519KeyPair(secretKey: SecretKey.random(byteCount: keyByteCount))
    }

    /// The key pair of a 32-byte secret key (to restore one kept in secret storage).
    /// - Throws: ``CryptoError/invalidLength(what:expected:actual:)`` for another length.
    public init(secretKey: SecretKey) throws(CryptoError) {
        Sodium.ensureReady()
        guard secretKey.byteCount == Self.keyByteCount else {
            throw .invalidLength(what: "X25519 secret key", expected: Self.keyByteCount, actual: secretKey.byteCount)
        }
        var pk = Data(count: Self.keyByteCount)
        secretKey.withUnsafeBytes { sk in
            pk.withUnsafeMutableBytes { p in
                _ = crypto_scalarmult_base(
                    p.baseAddress!.assumingMemoryBound(to: UInt8.self),
                    sk.baseAddress!.assumingMemoryBound(to: UInt8.self))
            }
        }
        self.secret = secretKey
        self.publicKey = pk
    }

    /// The secret key, for writing the key pair into encrypted storage. This is an export.
    public func exportSecretKey() -> SecretKey { secret }

    /// Opens a sealed box addressed to this key pair.
    /// - Throws: ``CryptoError/authenticationFailed`` when the box is not for this key or was altered.
    public func openSealed(_ box: Data) throws(CryptoError) -> Data {
        guard box.count >= SealedBox.overhead else { throw .authenticationFailed }
        var out = Data(count: box.count - SealedBox.overhead + 1)
        let rc = secret.withUnsafeBytes { sk in
            publicKey.withUnsafeBytes { pk in
                box.withUnsafeBytes { b in
                    out.withUnsafeMutableBytes { o in
                        crypto_box_seal_open(
                            o.baseAddress!.assumingMemoryBound(to: UInt8.self),
                            b.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt64(b.count),
                            pk.baseAddress!.assumingMemoryBound(to: UInt8.self),
                            sk.baseAddress!.assumingMemoryBound(to: UInt8.self))
                    }
                }
            }
        }
        guard rc == 0 else { throw .authenticationFailed }
        out.count -= 1
        return out
    }
}

/// Anonymous public-key encryption to an X25519 public key (libsodium `crypto_box_seal`):
/// only the holder of the matching secret key can open the box, and it does not say who sealed it.
public enum SealedBox {
    /// Bytes a sealed box adds to its message (an ephemeral public key and a MAC).
    public static let overhead = Int(crypto_box_sealbytes())

    /// Seals `message` to `publicKey`.
    /// - Throws: ``CryptoError/invalidLength(what:expected:actual:)`` for a public key that is not 32 bytes.
    public static func seal(_ message: Data, to publicKey: Data) throws(CryptoError) -> Data {
        Sodium.ensureReady()
        guard publicKey.count == X25519KeyPair.keyByteCount else {
            throw .invalidLength(what: "X25519 public key", expected: X25519KeyPair.keyByteCount, actual: publicKey.count)
        }
        var out = Data(count: message.count + overhead)
        let rc = message.withUnsafeBytes { m in
            publicKey.withUnsafeBytes { pk in
                out.withUnsafeMutableBytes { o in
                    crypto_box_seal(
                        o.baseAddress!.assumingMemoryBound(to: UInt8.self),
                        m.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(m.count),
                        pk.baseAddress!.assumingMemoryBound(to: UInt8.self))
                }
            }
        }
        guard rc == 0 else { throw .operationFailed("crypto_box_seal") }
        return out
    }
}

extension Ed25519KeyPair {
    /// The X25519 key pair this signing key converts to (libsodium
    /// `crypto_sign_ed25519_sk_to_curve25519`), for boxes addressed to an Ed25519 verkey.
    public func keyAgreementKeyPair() -> X25519KeyPair {
        let secret = SecretKey(uninitializedCount: X25519KeyPair.keyByteCount)
        expanded.withUnsafeBytes { sk in
            secret.withUnsafeMutableStorage { out in
                _ = crypto_sign_ed25519_sk_to_curve25519(
                    out.baseAddress!.assumingMemoryBound(to: UInt8.self),
                    sk.baseAddress!.assumingMemoryBound(to: UInt8.self))
            }
        }
        return try! X25519KeyPair(secretKey: secret)
    }

    /// The X25519 public key of an Ed25519 public key (`crypto_sign_ed25519_pk_to_curve25519`).
    /// - Throws: ``CryptoError/invalidParameter(_:)`` when the bytes are not a valid Ed25519 point.
    public static func keyAgreementPublicKey(of publicKey: Data) throws(CryptoError) -> Data {
        Sodium.ensureReady()
        guard publicKey.count == publicKeyByteCount else {
            throw .invalidLength(what: "Ed25519 public key", expected: publicKeyByteCount, actual: publicKey.count)
        }
        var out = Data(count: X25519KeyPair.keyByteCount)
        let rc = publicKey.withUnsafeBytes { pk in
            out.withUnsafeMutableBytes { o in
                crypto_sign_ed25519_pk_to_curve25519(
                    o.baseAddress!.assumingMemoryBound(to: UInt8.self),
                    pk.baseAddress!.assumingMemoryBound(to: UInt8.self))
            }
        }
        guard rc == 0 else { throw .invalidParameter("not a valid Ed25519 public key") }
        return out
    }
}

/// Authenticated public-key encryption between two X25519 key pairs (libsodium `crypto_box_easy`):
/// the recipient learns that the holder of the sender's key wrote the message.
public enum Box {
    /// Bytes of a box nonce.
    public static let nonceByteCount = Int(crypto_box_NONCEBYTES)
    /// Bytes a box adds to its message (the MAC).
    public static let overhead = Int(crypto_box_MACBYTES)

    /// Encrypts `message` from `sender` to `recipientPublicKey` under a fresh random nonce.
    /// - Returns: the nonce and the ciphertext.
    public static func seal(_ message: Data, from sender: X25519KeyPair, to recipientPublicKey: Data) throws(CryptoError) -> (
        nonce: Data, ciphertext: Data
    ) {
        guard recipientPublicKey.count == X25519KeyPair.keyByteCount else {
            throw .invalidLength(what: "X25519 public key", expected: X25519KeyPair.keyByteCount, actual: recipientPublicKey.count)
        }
        let nonce = SecureRandom.bytes(nonceByteCount)
        var out = Data(count: message.count + overhead)
        let rc = sender.withSecretBytes { sk in
            message.withUnsafeBytes { m in
                recipientPublicKey.withUnsafeBytes { pk in
                    nonce.withUnsafeBytes { n in
                        out.withUnsafeMutableBytes { o in
                            crypto_box_easy(
                                o.baseAddress!.assumingMemoryBound(to: UInt8.self),
                                m.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(m.count),
                                n.baseAddress!.assumingMemoryBound(to: UInt8.self),
                                pk.baseAddress!.assumingMemoryBound(to: UInt8.self),
                                sk.baseAddress!.assumingMemoryBound(to: UInt8.self))
                        }
                    }
                }
            }
        }
        guard rc == 0 else { throw .operationFailed("crypto_box_easy") }
        return (nonce, out)
    }

    /// Decrypts a box from `senderPublicKey` to `recipient`.
    /// - Throws: ``CryptoError/authenticationFailed`` when the box was altered or is not between these keys.
    public static func open(_ ciphertext: Data, nonce: Data, from senderPublicKey: Data, to recipient: X25519KeyPair) throws(CryptoError)
        -> Data
    {
        guard nonce.count == nonceByteCount else {
            throw .invalidLength(what: "box nonce", expected: nonceByteCount, actual: nonce.count)
        }
        guard senderPublicKey.count == X25519KeyPair.keyByteCount else {
            throw .invalidLength(what: "X25519 public key", expected: X25519KeyPair.keyByteCount, actual: senderPublicKey.count)
        }
        guard ciphertext.count >= overhead else { throw .authenticationFailed }
        var out = Data(count: ciphertext.count - overhead + 1)
        let rc = recipient.withSecretBytes { sk in
            ciphertext.withUnsafeBytes { c in
                senderPublicKey.withUnsafeBytes { pk in
                    nonce.withUnsafeBytes { n in
                        out.withUnsafeMutableBytes { o in
                            crypto_box_open_easy(
                                o.baseAddress!.assumingMemoryBound(to: UInt8.self),
                                c.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt64(c.count),
                                n.baseAddress!.assumingMemoryBound(to: UInt8.self),
                                pk.baseAddress!.assumingMemoryBound(to: UInt8.self),
                                sk.baseAddress!.assumingMemoryBound(to: UInt8.self))
                        }
                    }
                }
            }
        }
        guard rc == 0 else { throw .authenticationFailed }
        out.count -= 1
        return out
    }
}

extension X25519KeyPair {
    func withSecretBytes<R>(_ body: (UnsafeRawBufferPointer) -> R) -> R { exportSecretKey().withUnsafeBytes(body) }
}

/// Base58 with the Bitcoin alphabet, as Indy and Aries write verkeys.
public enum Base58 {
    static let alphabet = Array("123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz".utf8)
    static let values: [Int8] = {
        var table = [Int8](repeating: -1, count: 128)
        for (i, c) in alphabet.enumerated() { table[Int(c)] = Int8(i) }
        return table
    }()

    /// The Base58 text of `data` (leading zero bytes become leading "1"s).
    public static func encode(_ data: Data) -> String {
        let bytes = [UInt8](data)
        let zeros = bytes.prefix { $0 == 0 }.count
        var digits = [UInt8]() // base-58 digits, least significant first
        for byte in bytes.dropFirst(zeros) {
            var carry = Int(byte)
            for i in digits.indices {
                carry += Int(digits[i]) << 8
                digits[i] = UInt8(carry % 58)
                carry /= 58
            }
            while carry > 0 {
                digits.append(UInt8(carry % 58))
                carry /= 58
            }
        }
        return String(decoding: [UInt8](repeating: alphabet[0], count: zeros) + digits.reversed().map { alphabet[Int($0)] }, as: UTF8.self)
    }

    /// The bytes of Base58 `text`; nil when it holds a character outside the alphabet.
    public static func decode(_ text: String) -> Data? {
        let chars = Array(text.utf8)
        let zeros = chars.prefix { $0 == alphabet[0] }.count
        var bytes = [UInt8]() // least significant first
        for c in chars.dropFirst(zeros) {
            guard c < 128, values[Int(c)] >= 0 else { return nil }
            var carry = Int(values[Int(c)])
            for i in bytes.indices {
                carry += Int(bytes[i]) * 58
                bytes[i] = UInt8(carry & 0xFF)
                carry >>= 8
            }
            while carry > 0 {
                bytes.append(UInt8(carry & 0xFF))
                carry >>= 8
            }
        }
        return Data([UInt8](repeating: 0, count: zeros) + bytes.reversed())
    }
}
