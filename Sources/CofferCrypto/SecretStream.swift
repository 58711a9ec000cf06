// libsodium's secretstream (XChaCha20-Poly1305): a sequence of messages that detects
// reordering, dropping and truncation (the last message carries a final tag).

import CSodium
import Foundation

/// Encrypts a stream of messages under one key.
public final class SecretStreamWriter {
    // Used from one task at a time, as a stream is written in order.
    private let state: UnsafeMutablePointer<crypto_secretstream_xchacha20poly1305_state>
    /// The stream header: store it before the first message; the reader needs it.
    public let header: Data

    /// Bytes each message grows by.
    public static let overhead = Int(crypto_secretstream_xchacha20poly1305_abytes())

    /// A writer under `key` (32 bytes).
    public init(key: SecretKey) throws(CryptoError) {
        Sodium.ensureReady()
        guard key.byteCount == Int(crypto_secretstream_xchacha20poly1305_keybytes()) else {
            throw .invalidLength(what: "secretstream key", expected: 32, actual: key.byteCount)
        }
        let state = UnsafeMutablePointer<crypto_secretstream_xchacha20poly1305_state>.allocate(capacity: 1)
        var h = Data(count: Int(crypto_secretstream_xchacha20poly1305_headerbytes()))
        h.withUnsafeMutableBytes { hb in
            key.withUnsafeBytes { k in
                _ = crypto_secretstream_xchacha20poly1305_init_push(
                    state, hb.baseAddress!.assumingMemoryBound(to: UInt8.self),
                    k.baseAddress!.assumingMemoryBound(to: UInt8.self))
            }
        }
        self.state = state
        header = h
    }

    deinit {
        sodium_memzero(state, MemoryLayout<crypto_secretstream_xchacha20poly1305_state>.size)
        state.deallocate()
    }

    /// Encrypts the next message; mark the last one `final`.
    public func push(_ message: Data, final: Bool = false) -> Data {
        var out = Data(count: message.count + Self.overhead)
        let tag = final ? crypto_secretstream_xchacha20poly1305_tag_final() : crypto_secretstream_xchacha20poly1305_tag_message()
        out.withUnsafeMutableBytes { o in
            message.withUnsafeBytes { m in
                _ = crypto_secretstream_xchacha20poly1305_push(
                    state, o.baseAddress!.assumingMemoryBound(to: UInt8.self), nil,
                    m.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(m.count),
                    nil, 0, tag)
            }
        }
        return out
    }
}

/// Decrypts a stream written by ``SecretStreamWriter``.
public final class SecretStreamReader {
    // Used from one task at a time, as a stream is read in order.
    private let state: UnsafeMutablePointer<crypto_secretstream_xchacha20poly1305_state>

    /// Length of the stream header.
    public static let headerByteCount = Int(crypto_secretstream_xchacha20poly1305_headerbytes())

    /// A reader under `key` for the stream that starts with `header`.
    /// - Throws: ``CryptoError/invalidLength(what:expected:actual:)`` or
    ///   ``CryptoError/authenticationFailed`` for a bad header.
    public init(key: SecretKey, header: Data) throws(CryptoError) {
        Sodium.ensureReady()
        guard header.count == Self.headerByteCount else {
            throw .invalidLength(what: "secretstream header", expected: Self.headerByteCount, actual: header.count)
        }
        guard key.byteCount == 32 else { throw .invalidLength(what: "secretstream key", expected: 32, actual: key.byteCount) }
        let state = UnsafeMutablePointer<crypto_secretstream_xchacha20poly1305_state>.allocate(capacity: 1)
        let rc = header.withUnsafeBytes { h in
            key.withUnsafeBytes { k in
                crypto_secretstream_xchacha20poly1305_init_pull(
                    state, h.baseAddress!.assumingMemoryBound(to: UInt8.self),
                    k.baseAddress!.assumingMemoryBound(to: UInt8.self))
            }
        }
        guard rc == 0 else {
            state.deallocate()
            throw .authenticationFailed
        }
        self.state = state
    }

    deinit {
        sodium_memzero(state, MemoryLayout<crypto_secretstream_xchacha20poly1305_state>.size)
        state.deallocate()
    }

    /// Decrypts the next message and tells whether it was the final one.
    /// - Throws: ``CryptoError/authenticationFailed`` for an altered, reordered or foreign message.
    public func pull(_ ciphertext: Data) throws(CryptoError) -> (message: Data, final: Bool) {
        guard ciphertext.count >= SecretStreamWriter.overhead else { throw .authenticationFailed }
        var out = Data(count: ciphertext.count - SecretStreamWriter.overhead + 1)
        var tag: UInt8 = 0
        let rc = out.withUnsafeMutableBytes { o in
            ciphertext.withUnsafeBytes { c in
                crypto_secretstream_xchacha20poly1305_pull(
                    state, o.baseAddress!.assumingMemoryBound(to: UInt8.self), nil, &tag,
                    c.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt64(c.count), nil, 0)
            }
        }
        guard rc == 0 else { throw .authenticationFailed }
        out.count -= 1
        return (out, tag == crypto_secretstream_xchacha20poly1305_tag_final())
    }
}
