// Authenticated encryption through libsodium: ChaCha20-Poly1305 (IETF) and XChaCha20-Poly1305.

import CSodium
import Foundation

/// An AEAD construction. A sealed box is `nonce ‖ ciphertext ‖ 16-byte tag`; the nonce is
/// drawn from the operating system's CSPRNG (`randombytes_buf`) for every seal.
public enum AEAD: Sendable {
    /// ChaCha20-Poly1305, IETF variant: 12-byte random nonce. Use under keys that seal few
    /// messages (e.g. per-record keys).
    case chacha20Poly1305
    /// XChaCha20-Poly1305: 24-byte random nonce, safe for any number of messages per key.
    case xchacha20Poly1305

    /// Bytes of nonce at the start of a sealed box.
    public var nonceByteCount: Int {
        switch self {
        case .chacha20Poly1305: return Int(crypto_aead_chacha20poly1305_ietf_NPUBBYTES)
        case .xchacha20Poly1305: return Int(crypto_aead_xchacha20poly1305_ietf_NPUBBYTES)
        }
    }

    /// Bytes of authentication tag at the end of a sealed box.
    public static let tagByteCount = 16

    /// The key length both constructions take.
    public static let keyByteCount = 32

    /// Bytes a sealed box adds to its plaintext.
    public var overhead: Int { nonceByteCount + Self.tagByteCount }

    /// Seals `plaintext` under `key`, binding `associatedData` (authenticated, not stored).
    public func seal<P: ContiguousBytes, A: ContiguousBytes>(_ plaintext: P, key: SecretKey, associatedData: A) throws(CryptoError) -> Data
    {
        guard key.byteCount == Self.keyByteCount else {
            throw .invalidLength(what: "AEAD key", expected: Self.keyByteCount, actual: key.byteCount)
        }
        return plaintext.withUnsafeBytes { message in
            associatedData.withUnsafeBytes { ad in
                key.withUnsafeBytes { k in seal(message, keyBytes: k, associatedData: ad) }
            }
        }
    }

    /// Seals under raw key bytes (32), e.g. from ``KeyedBlake2b/withDerivedKey(domain:_:_:_:)``.
    public func seal(_ message: UnsafeRawBufferPointer, keyBytes k: UnsafeRawBufferPointer, associatedData ad: UnsafeRawBufferPointer)
        -> Data
    {
        Sodium.ensureReady()
        precondition(k.count == Self.keyByteCount, "AEAD key must be 32 bytes")
        let nonceCount = nonceByteCount
        var out = Data(count: nonceCount + message.count + Self.tagByteCount)
        out.withUnsafeMutableBytes { buffer in
            let base = buffer.baseAddress!.assumingMemoryBound(to: UInt8.self)
            // A fresh draw from the operating system for every nonce (about 0.6 µs here): no
            // buffered randomness a process or VM snapshot could hand out twice.
            randombytes_buf(base, nonceCount)
            var written: UInt64 = 0
            let m = message.baseAddress?.assumingMemoryBound(to: UInt8.self)
            let a = ad.baseAddress?.assumingMemoryBound(to: UInt8.self)
            let kp = k.baseAddress!.assumingMemoryBound(to: UInt8.self)
            let rc: Int32
            switch self {
            case .chacha20Poly1305:
                rc = crypto_aead_chacha20poly1305_ietf_encrypt(
                    base + nonceCount, &written, m, UInt64(message.count), a, UInt64(ad.count), nil, base, kp)
            case .xchacha20Poly1305:
                rc = crypto_aead_xchacha20poly1305_ietf_encrypt(
                    base + nonceCount, &written, m, UInt64(message.count), a, UInt64(ad.count), nil, base, kp)
            }
            precondition(rc == 0, "libsodium AEAD encryption cannot fail for valid lengths")
        }
        return out
    }

    /// Seals with no associated data.
    public func seal<P: ContiguousBytes>(_ plaintext: P, key: SecretKey) throws(CryptoError) -> Data {
        try seal(plaintext, key: key, associatedData: Data())
    }

    /// Opens a box made by ``seal(_:key:associatedData:)``.
    /// - Throws: ``CryptoError/authenticationFailed`` for a wrong key, altered bytes or other
    ///   associated data; never returns unauthenticated plaintext.
    public func open<S: ContiguousBytes, A: ContiguousBytes>(_ sealed: S, key: SecretKey, associatedData: A) throws(CryptoError) -> Data {
        guard key.byteCount == Self.keyByteCount else {
            throw .invalidLength(what: "AEAD key", expected: Self.keyByteCount, actual: key.byteCount)
        }
        do {
            return try sealed.withUnsafeBytes { box in
                try associatedData.withUnsafeBytes { ad in
                    try key.withUnsafeBytes { k in try open(box, keyBytes: k, associatedData: ad) }
                }
            }
        } catch let error as CryptoError {
            throw error
        } catch {
            throw .authenticationFailed // unreachable: only `open` throws, and only CryptoError
        }
    }

    /// Opens under raw key bytes (32), e.g. from ``KeyedBlake2b/withDerivedKey(domain:_:_:_:)``.
    public func open(_ box: UnsafeRawBufferPointer, keyBytes k: UnsafeRawBufferPointer, associatedData ad: UnsafeRawBufferPointer)
        throws(CryptoError) -> Data
    {
        let plainCount = max(box.count - overhead, 0)
        // One spare byte so the output pointer is valid even for an empty plaintext.
        var out = Data(count: plainCount + 1)
        var failure: CryptoError?
        let written = out.withUnsafeMutableBytes { buffer -> Int in
            do throws(CryptoError) { return try open(box, keyBytes: k, associatedData: ad, into: buffer) } catch {
                failure = error
                return 0
            }
        }
        if let failure { throw failure }
        out.count = written
        return out
    }

    /// Opens into `out` (at least `box.count - overhead` bytes, and at least 1) and returns
    /// the plaintext length. On failure `out` holds no plaintext.
    public func open(
        _ box: UnsafeRawBufferPointer, keyBytes k: UnsafeRawBufferPointer, associatedData ad: UnsafeRawBufferPointer,
        into out: UnsafeMutableRawBufferPointer
    ) throws(CryptoError) -> Int {
        Sodium.ensureReady()
        guard k.count == Self.keyByteCount else {
            throw .invalidLength(what: "AEAD key", expected: Self.keyByteCount, actual: k.count)
        }
        let nonceCount = nonceByteCount
        guard box.count >= nonceCount + Self.tagByteCount else { throw .authenticationFailed }
        let plainCount = box.count - nonceCount - Self.tagByteCount
        precondition(out.count >= max(plainCount, 1), "AEAD.open output buffer too small")
        let base = box.baseAddress!.assumingMemoryBound(to: UInt8.self)
        let o = out.baseAddress!.assumingMemoryBound(to: UInt8.self)
        var written: UInt64 = 0
        let a = ad.baseAddress?.assumingMemoryBound(to: UInt8.self)
        let kp = k.baseAddress!.assumingMemoryBound(to: UInt8.self)
        let rc: Int32
        switch self {
        case .chacha20Poly1305:
            rc = crypto_aead_chacha20poly1305_ietf_decrypt(
                o, &written, nil, base + nonceCount, UInt64(box.count - nonceCount), a, UInt64(ad.count), base, kp)
        case .xchacha20Poly1305:
            rc = crypto_aead_xchacha20poly1305_ietf_decrypt(
                o, &written, nil, base + nonceCount, UInt64(box.count - nonceCount), a, UInt64(ad.count), base, kp)
        }
        guard rc == 0 else { throw .authenticationFailed }
        return Int(written)
    }

    /// Opens in place: `buffer` holds `ciphertext ‖ 16-byte tag` and `nonce` the box's nonce
    /// (kept apart, e.g. read from a file header); on success the first bytes of `buffer` hold the
    /// plaintext and its length is returned. Spares a reader that owns the bytes one copy.
    /// - Throws: ``CryptoError/authenticationFailed`` for a wrong key, altered bytes, a wrong
    ///   nonce length or other associated data; then `buffer` holds no plaintext.
    public func openInPlace(
        nonce: UnsafeRawBufferPointer, _ buffer: UnsafeMutableRawBufferPointer, keyBytes k: UnsafeRawBufferPointer,
        associatedData ad: UnsafeRawBufferPointer
    ) throws(CryptoError) -> Int {
        Sodium.ensureReady()
        guard k.count == Self.keyByteCount else {
            throw .invalidLength(what: "AEAD key", expected: Self.keyByteCount, actual: k.count)
        }
        guard nonce.count == nonceByteCount, buffer.count >= Self.tagByteCount else { throw .authenticationFailed }
        let plainCount = buffer.count - Self.tagByteCount
        let c = buffer.baseAddress!.assumingMemoryBound(to: UInt8.self)
        let n = nonce.baseAddress!.assumingMemoryBound(to: UInt8.self)
        let a = ad.baseAddress?.assumingMemoryBound(to: UInt8.self)
        let kp = k.baseAddress!.assumingMemoryBound(to: UInt8.self)
        // libsodium's detached decryption checks the tag first, then decrypts; `m == c` is allowed.
        let rc: Int32
        switch self {
        case .chacha20Poly1305:
            rc = crypto_aead_chacha20poly1305_ietf_decrypt_detached(
                c, nil, c, UInt64(plainCount), c + plainCount, a, UInt64(ad.count), n, kp)
        case .xchacha20Poly1305:
            rc = crypto_aead_xchacha20poly1305_ietf_decrypt_detached(
                c, nil, c, UInt64(plainCount), c + plainCount, a, UInt64(ad.count), n, kp)
        }
        guard rc == 0 else { throw .authenticationFailed }
        return plainCount
    }

    /// Opens a box sealed with no associated data.
    public func open<S: ContiguousBytes>(_ sealed: S, key: SecretKey) throws(CryptoError) -> Data {
        try open(sealed, key: key, associatedData: Data())
    }
}
