// CoverDrop's box constructions and key certificate data on libsodium, byte for byte as its
// clients lay them out (checked against CoverDrop's published test vectors):
//
//   AnonymousBox       libsodium sealed box: ephemeral public key ‖ tag ‖ ciphertext (+48 bytes)
//   TwoPartyBox        crypto_box_easy (tag ‖ ciphertext) with its 24-byte nonce appended (+40)
//   MultiAnonymousBox  a fresh XSalsa20-Poly1305 key sealed to each recipient (80 bytes each,
//                      in order), then the payload under that key and an all-zero nonce,
//                      tag first (+80·R + 16)
//   key certificate    public key (32) ‖ not-valid-after in Unix seconds, i64 big-endian (8)

import CSodium
import Foundation

/// CoverDrop's AnonymousBox: a libsodium sealed box to an X25519 public key.
public enum AnonymousBox {
    /// Bytes a box adds to its message (32-byte ephemeral public key and 16-byte tag).
    public static let overhead = SealedBox.overhead

    /// Seals `message` to `publicKey`.
    /// - Throws: ``CryptoError/invalidLength(what:expected:actual:)`` for a key that is not 32 bytes.
    public static func seal(_ message: Data, to publicKey: Data) throws(CryptoError) -> Data {
        try SealedBox.seal(message, to: publicKey)
    }

    /// Opens a box sealed to `recipient`.
    /// - Throws: ``CryptoError/authenticationFailed`` when it was not sealed to this key or was altered.
    public static func open(_ box: Data, with recipient: X25519KeyPair) throws(CryptoError) -> Data {
        try recipient.openSealed(box)
    }
}

/// CoverDrop's TwoPartyBox: `crypto_box_easy` from a sender's X25519 key to a recipient's, laid
/// out as tag ‖ ciphertext ‖ nonce (the 24-byte nonce appended, not prepended).
public enum TwoPartyBox {
    /// Bytes a box adds to its message (16-byte tag and 24-byte nonce).
    public static let overhead = Int(crypto_box_MACBYTES) + Int(crypto_box_NONCEBYTES)
    static let nonceBytes = Int(crypto_box_NONCEBYTES)

    /// Seals `message` from `sender` to `recipientPublicKey` under a fresh random nonce.
    /// - Throws: ``CryptoError/invalidLength(what:expected:actual:)`` for a key that is not 32 bytes.
    public static func seal(_ message: Data, from sender: X25519KeyPair, to recipientPublicKey: Data) throws(CryptoError) -> Data {
        Sodium.ensureReady()
        guard recipientPublicKey.count == X25519KeyPair.keyByteCount else {
            throw .invalidLength(what: "X25519 public key", expected: X25519KeyPair.keyByteCount, actual: recipientPublicKey.count)
        }
        let nonce = SecureRandom.bytes(nonceBytes)
        var out = Data(count: message.count + Int(crypto_box_MACBYTES))
        let rc = sender.exportSecretKey().withUnsafeBytes { sk in
            message.withUnsafeBytes { m in
                nonce.withUnsafeBytes { n in
                    recipientPublicKey.withUnsafeBytes { pk in
                        out.withUnsafeMutableBytes { c in
                            crypto_box_easy(
                                c.baseAddress!.assumingMemoryBound(to: UInt8.self), m.bindMemory(to: UInt8.self).baseAddress,
                                UInt64(message.count), n.bindMemory(to: UInt8.self).baseAddress!,
                                pk.bindMemory(to: UInt8.self).baseAddress!, sk.bindMemory(to: UInt8.self).baseAddress!)
                        }
                    }
                }
            }
        }
        guard rc == 0 else { throw .operationFailed("crypto_box_easy") }
        out.append(nonce)
        return out
    }

    /// Opens a box from `senderPublicKey` to `recipient`.
    /// - Throws: ``CryptoError/authenticationFailed`` when it is not from that sender to this
    ///   recipient or was altered; ``CryptoError/invalidLength(what:expected:actual:)`` when it is
    ///   shorter than ``overhead``.
    public static func open(_ box: Data, from senderPublicKey: Data, to recipient: X25519KeyPair) throws(CryptoError) -> Data {
        try Opener(senderPublicKey: senderPublicKey, recipient: recipient).open(box)
    }

    /// Opens many boxes between one pair of keys: the X25519 agreement is computed once
    /// (`crypto_box_beforenm`), which makes trial-decrypting a dead drop's slots cheap.
    public final class Opener: Sendable {
        private let shared: SecretKey

        /// The opener for boxes from `senderPublicKey` to `recipient`.
        /// - Throws: ``CryptoError/invalidLength(what:expected:actual:)`` for a key that is not
        ///   32 bytes; ``CryptoError/operationFailed(_:)`` for a degenerate public key.
        public init(senderPublicKey: Data, recipient: X25519KeyPair) throws(CryptoError) {
            Sodium.ensureReady()
            guard senderPublicKey.count == X25519KeyPair.keyByteCount else {
                throw .invalidLength(what: "X25519 public key", expected: X25519KeyPair.keyByteCount, actual: senderPublicKey.count)
            }
            let key = SecretKey(uninitializedCount: Int(crypto_box_BEFORENMBYTES))
            let rc = recipient.exportSecretKey().withUnsafeBytes { sk in
                senderPublicKey.withUnsafeBytes { pk in
                    key.withUnsafeMutableStorage { k in
                        crypto_box_beforenm(
                            k.baseAddress!.assumingMemoryBound(to: UInt8.self), pk.bindMemory(to: UInt8.self).baseAddress!,
                            sk.bindMemory(to: UInt8.self).baseAddress!)
                    }
                }
            }
            guard rc == 0 else { throw .operationFailed("crypto_box_beforenm (a degenerate public key)") }
            shared = key
        }

        /// Opens one box.
        /// - Throws: ``CryptoError/authenticationFailed`` when it is not between these keys or
        ///   was altered; ``CryptoError/invalidLength(what:expected:actual:)`` when too short.
        public func open(_ box: Data) throws(CryptoError) -> Data {
            guard box.count >= TwoPartyBox.overhead else {
                throw .invalidLength(what: "TwoPartyBox", expected: TwoPartyBox.overhead, actual: box.count)
            }
            let cipherCount = box.count - TwoPartyBox.nonceBytes
            var out = Data(count: cipherCount - Int(crypto_box_MACBYTES))
            let rc = shared.withUnsafeBytes { k in
                box.withUnsafeBytes { b in
                    out.withUnsafeMutableBytes { m in
                        let base = b.bindMemory(to: UInt8.self).baseAddress!
                        return crypto_box_open_easy_afternm(
                            m.bindMemory(to: UInt8.self).baseAddress ?? UnsafeMutablePointer<UInt8>(mutating: base), base,
                            UInt64(cipherCount), base + cipherCount, k.bindMemory(to: UInt8.self).baseAddress!)
                    }
                }
            }
            guard rc == 0 else { throw .authenticationFailed }
            return out
        }
    }
}

/// CoverDrop's MultiAnonymousBox: one payload for several recipients. A fresh 32-byte
/// XSalsa20-Poly1305 key is sealed (AnonymousBox) to each recipient in order, 80 bytes each;
/// the payload follows, encrypted under that key and an all-zero nonce (safe because the key is
/// never reused), tag first.
public enum MultiAnonymousBox {
    /// Bytes one wrapped key takes: a sealed box of a 32-byte key.
    public static let wrappedKeyBytes = SealedBox.overhead + Int(crypto_secretbox_KEYBYTES)

    /// Bytes a box for `recipients` recipients adds to its message.
    public static func overhead(recipients: Int) -> Int { recipients * wrappedKeyBytes + Int(crypto_secretbox_MACBYTES) }

    /// Seals `message` to every key of `publicKeys`, in that order.
    /// - Throws: ``CryptoError/invalidLength(what:expected:actual:)`` for a key that is not 32
    ///   bytes or an empty recipient list.
    public static func seal(_ message: Data, to publicKeys: [Data]) throws(CryptoError) -> Data {
        Sodium.ensureReady()
        guard !publicKeys.isEmpty else { throw .invalidLength(what: "MultiAnonymousBox recipients", expected: 1, actual: 0) }
        let key = SecretKey.random(byteCount: Int(crypto_secretbox_KEYBYTES))
        var out = Data(capacity: overhead(recipients: publicKeys.count) + message.count)
        for publicKey in publicKeys {
            guard publicKey.count == X25519KeyPair.keyByteCount else {
                throw .invalidLength(what: "X25519 public key", expected: X25519KeyPair.keyByteCount, actual: publicKey.count)
            }
            var wrapped = Data(count: wrappedKeyBytes)
            let rc = key.withUnsafeBytes { k in
                publicKey.withUnsafeBytes { pk in
                    wrapped.withUnsafeMutableBytes { c in
                        crypto_box_seal(
                            c.baseAddress!.assumingMemoryBound(to: UInt8.self), k.bindMemory(to: UInt8.self).baseAddress!,
                            UInt64(key.byteCount), pk.bindMemory(to: UInt8.self).baseAddress!)
                    }
                }
            }
            guard rc == 0 else { throw .operationFailed("crypto_box_seal") }
            out.append(wrapped)
        }
        var body = Data(count: Int(crypto_secretbox_MACBYTES) + message.count)
        let zeroNonce = [UInt8](repeating: 0, count: Int(crypto_secretbox_NONCEBYTES))
        let rc = key.withUnsafeBytes { k in
            message.withUnsafeBytes { m in
                body.withUnsafeMutableBytes { c in
                    crypto_secretbox_easy(
                        c.baseAddress!.assumingMemoryBound(to: UInt8.self), m.bindMemory(to: UInt8.self).baseAddress,
                        UInt64(message.count), zeroNonce, k.bindMemory(to: UInt8.self).baseAddress!)
                }
            }
        }
        guard rc == 0 else { throw .operationFailed("crypto_secretbox_easy") }
        out.append(body)
        return out
    }

    /// Opens a box made for `recipients` recipients with one recipient's key pair (whichever
    /// slot holds its wrapped key).
    /// - Throws: ``CryptoError/authenticationFailed`` when no slot opens with this key or the
    ///   payload was altered; ``CryptoError/invalidLength(what:expected:actual:)`` when too short.
    public static func open(_ box: Data, recipients: Int, with keyPair: X25519KeyPair) throws(CryptoError) -> Data {
        Sodium.ensureReady()
        let header = recipients * wrappedKeyBytes
        guard recipients >= 1, box.count >= overhead(recipients: recipients) else {
            throw .invalidLength(what: "MultiAnonymousBox", expected: overhead(recipients: recipients), actual: box.count)
        }
        let key = SecretKey(uninitializedCount: Int(crypto_secretbox_KEYBYTES))
        var found = false
        let secret = keyPair.exportSecretKey()
        for slot in 0..<recipients where !found {
            let rc = secret.withUnsafeBytes { sk in
                keyPair.publicKey.withUnsafeBytes { pk in
                    box.withUnsafeBytes { b in
                        key.withUnsafeMutableStorage { k in
                            crypto_box_seal_open(
                                k.baseAddress!.assumingMemoryBound(to: UInt8.self),
                                b.bindMemory(to: UInt8.self).baseAddress! + slot * wrappedKeyBytes, UInt64(wrappedKeyBytes),
                                pk.bindMemory(to: UInt8.self).baseAddress!, sk.bindMemory(to: UInt8.self).baseAddress!)
                        }
                    }
                }
            }
            found = rc == 0
        }
        guard found else { throw .authenticationFailed }
        let bodyCount = box.count - header
        var out = Data(count: bodyCount - Int(crypto_secretbox_MACBYTES))
        let zeroNonce = [UInt8](repeating: 0, count: Int(crypto_secretbox_NONCEBYTES))
        let rc = key.withUnsafeBytes { k in
            box.withUnsafeBytes { b in
                out.withUnsafeMutableBytes { m in
                    let base = b.bindMemory(to: UInt8.self).baseAddress! + header
                    return crypto_secretbox_open_easy(
                        m.bindMemory(to: UInt8.self).baseAddress ?? UnsafeMutablePointer<UInt8>(mutating: base), base,
                        UInt64(bodyCount), zeroNonce, k.bindMemory(to: UInt8.self).baseAddress!)
                }
            }
        }
        guard rc == 0 else { throw .authenticationFailed }
        return out
    }
}

/// CoverDrop's key certificate data: what a parent key signs to certify a child key.
public enum KeyCertificateData {
    /// Its length: a 32-byte public key and an 8-byte time.
    public static let byteCount = 40

    /// `publicKey` (32 bytes) followed by `notValidAfter` in whole Unix seconds, big-endian.
    public static func bytes(publicKey: Data, notValidAfter seconds: Int64) -> Data {
        var out = publicKey
        withUnsafeBytes(of: seconds.bigEndian) { out.append(contentsOf: $0) }
        return out
    }
}
