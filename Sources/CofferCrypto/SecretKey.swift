// Secret key material: zeroised on release, never printed, never reflected.

import CSodium
import Foundation

/// Secret bytes (usually a 32-byte symmetric key).
///
/// The bytes live in memory from libsodium's `sodium_malloc`: their own pages, locked against
/// swapping where the system allows (`mlock`), between guard pages; `sodium_free` wipes them
/// when the last reference goes away. `description`, `debugDescription` and reflection print
/// only the length, so a key that reaches a log or `print` reveals nothing.
public final class SecretKey: @unchecked Sendable {
    // Safe to share: the bytes behind the pointer are written once in init and only read afterwards (the compiler cannot see through the pointer).
    private let storage: UnsafeMutableRawBufferPointer
    /// Whether `storage` came from `sodium_malloc` (else from the heap, when it failed).
    private let guarded: Bool

    /// The number of secret bytes.
    public var byteCount: Int { storage.count }

    /// Whether the bytes live in `sodium_malloc` memory (read by tests).
    package var isGuarded: Bool { guarded }

    /// Copies `bytes` into a new key.
    /// - Throws: ``CryptoError/invalidLength(what:expected:actual:)`` when `expectedCount`
    ///   is given and differs from the input length.
    public init<Bytes: ContiguousBytes>(copying bytes: Bytes, expectedCount: Int? = nil) throws(CryptoError) {
        let count = bytes.withUnsafeBytes { $0.count }
        if let expectedCount, count != expectedCount {
            throw .invalidLength(what: "key", expected: expectedCount, actual: count)
        }
        guard count > 0 else { throw .invalidParameter("a key cannot be empty") }
        (storage, guarded) = Self.allocate(count)
        bytes.withUnsafeBytes { source in
            storage.baseAddress!.copyMemory(from: source.baseAddress!, byteCount: count)
        }
    }

    /// A key of `byteCount` bytes from the operating system's secure random source.
    public static func random(byteCount: Int = 32) -> SecretKey {
        Sodium.ensureReady()
        let key = SecretKey(uninitializedCount: byteCount)
        randombytes_buf(key.storage.baseAddress!, byteCount)
        return key
    }

    init(uninitializedCount count: Int) {
        precondition(count > 0, "a SecretKey needs at least one byte")
        (storage, guarded) = Self.allocate(count)
    }

    /// Memory for `count` secret bytes: `sodium_malloc`'s guarded, locked pages, or (if the
    /// system refuses them) ordinary heap memory, which is still wiped on release.
    private static func allocate(_ count: Int) -> (UnsafeMutableRawBufferPointer, Bool) {
        Sodium.ensureReady()
        if let pointer = sodium_malloc(count) { return (UnsafeMutableRawBufferPointer(start: pointer, count: count), true) }
        return (.allocate(byteCount: count, alignment: 16), false)
    }

    /// Fills a fresh key by calling `body` with its writable bytes (for KDF outputs).
    static func filling(byteCount: Int, _ body: (UnsafeMutableRawBufferPointer) throws(CryptoError) -> Void) throws(CryptoError)
        -> SecretKey
    {
        let key = SecretKey(uninitializedCount: byteCount)
        try body(key.storage)
        return key
    }

    /// Lends the storage for filling at creation (libsodium writes key pairs in place).
    func withUnsafeMutableStorage<R>(_ body: (UnsafeMutableRawBufferPointer) -> R) -> R { body(storage) }

    /// Calls `body` with the secret bytes. Do not let the pointer escape.
    public func withUnsafeBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        try body(UnsafeRawBufferPointer(storage))
    }

    /// Constant-time comparison of two keys' bytes.
    public func constantTimeEquals(_ other: SecretKey) -> Bool {
        guard byteCount == other.byteCount else { return false }
        return withUnsafeBytes { a in
            other.withUnsafeBytes { b in sodium_memcmp(a.baseAddress!, b.baseAddress!, byteCount) == 0 }
        }
    }

    /// Returns a copy of the bytes as `Data`. Only explicit export paths call this.
    public func exportBytes() -> Data {
        withUnsafeBytes { Data($0) }
    }

    /// Decodes standard base64 `text` straight into a new key's wiped-on-release storage (libsodium
    /// `sodium_base642bin`), with no intermediate `Data` copy of the bytes.
    /// - Throws: ``CryptoError/invalidParameter(_:)`` when `text` is not base64, and
    ///   ``CryptoError/invalidLength(what:expected:actual:)`` when it does not decode to
    ///   `expectedCount` bytes. The messages never contain the text.
    public convenience init(base64 text: String, expectedCount: Int) throws(CryptoError) {
        Sodium.ensureReady()
        guard expectedCount > 0 else { throw .invalidParameter("a key cannot be empty") }
        self.init(uninitializedCount: expectedCount)
        // Room for a longer text, so a wrong length is reported as such rather than as bad base64.
        let room = max(expectedCount, text.utf8.count / 4 * 3 + 3)
        let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: room, alignment: 16)
        defer {
            sodium_memzero(scratch.baseAddress!, room)
            scratch.deallocate()
        }
        var decoded = 0
        var utf8 = text.utf8CString
        let rc = utf8.withUnsafeMutableBufferPointer { chars -> Int32 in
            defer { sodium_memzero(chars.baseAddress!, chars.count) }
            return sodium_base642bin(
                scratch.baseAddress!.assumingMemoryBound(to: UInt8.self), room,
                chars.baseAddress!, chars.count - 1, nil, &decoded, nil,
                sodium_base64_VARIANT_ORIGINAL)
        }
        guard rc == 0 else { throw .invalidParameter("the stored key is not valid base64") }
        guard decoded == expectedCount else { throw .invalidLength(what: "key", expected: expectedCount, actual: decoded) }
        storage.baseAddress!.copyMemory(from: scratch.baseAddress!, byteCount: expectedCount)
    }

    /// Decodes standard base64 held in `text` (bytes the caller lends, e.g. from a wiped plaintext
    /// buffer) straight into a new key, with no `String` or `Data` copy.
    /// - Throws: as ``init(base64:expectedCount:)``.
    public convenience init(base64Bytes text: UnsafeRawBufferPointer, expectedCount: Int) throws(CryptoError) {
        Sodium.ensureReady()
        guard expectedCount > 0 else { throw .invalidParameter("a key cannot be empty") }
        self.init(uninitializedCount: expectedCount)
        let room = max(expectedCount, text.count / 4 * 3 + 3)
        let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: room, alignment: 16)
        defer {
            sodium_memzero(scratch.baseAddress!, room)
            scratch.deallocate()
        }
        var decoded = 0
        let rc = text.withMemoryRebound(to: CChar.self) { chars -> Int32 in
            guard let base = chars.baseAddress else { return -1 }
            return sodium_base642bin(
                scratch.baseAddress!.assumingMemoryBound(to: UInt8.self), room, base, chars.count,
                nil, &decoded, nil, sodium_base64_VARIANT_ORIGINAL)
        }
        guard rc == 0 else { throw .invalidParameter("the stored key is not valid base64") }
        guard decoded == expectedCount else { throw .invalidLength(what: "key", expected: expectedCount, actual: decoded) }
        storage.baseAddress!.copyMemory(from: scratch.baseAddress!, byteCount: expectedCount)
    }

    /// Length of the bytes' standard base64 text (without a terminator).
    public var base64ByteCount: Int {
        Sodium.ensureReady()
        return sodium_base64_encoded_len(byteCount, sodium_base64_VARIANT_ORIGINAL) - 1
    }

    /// Appends the bytes' standard base64 text to `out` (encoded in a wiped buffer). The caller
    /// owns `out` and wipes it.
    public func appendBase64(to out: inout [UInt8]) {
        let length = base64ByteCount + 1
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: length, alignment: 1)
        defer {
            sodium_memzero(buffer.baseAddress!, length)
            buffer.deallocate()
        }
        withUnsafeBytes { bytes in
            _ = sodium_bin2base64(
                buffer.baseAddress!.assumingMemoryBound(to: CChar.self), length,
                bytes.baseAddress!.assumingMemoryBound(to: UInt8.self), byteCount, sodium_base64_VARIANT_ORIGINAL)
        }
        out.append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[0..<(length - 1)]))
    }

    /// The bytes as standard base64, for the one storage format that keeps secrets as text. The
    /// encoding buffer is wiped; the returned `String` is a copy Swift cannot wipe, so hand it
    /// straight to the encrypting writer and do not keep it.
    public func base64EncodedString() -> String {
        Sodium.ensureReady()
        let length = sodium_base64_encoded_len(byteCount, sodium_base64_VARIANT_ORIGINAL)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: length, alignment: 1)
        defer {
            sodium_memzero(buffer.baseAddress!, length)
            buffer.deallocate()
        }
        let chars = buffer.baseAddress!.assumingMemoryBound(to: CChar.self)
        withUnsafeBytes { bytes in
            _ = sodium_bin2base64(
                chars, length, bytes.baseAddress!.assumingMemoryBound(to: UInt8.self), byteCount,
                sodium_base64_VARIANT_ORIGINAL)
        }
        return String(cString: chars)
    }

    deinit {
        if guarded {
            sodium_free(storage.baseAddress!) // wipes, unlocks and unmaps
        } else {
            sodium_memzero(storage.baseAddress!, storage.count)
            storage.deallocate()
        }
    }
}

extension SecretKey: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// Only the length: key bytes are never printed.
    public var description: String { "SecretKey(\(byteCount) bytes, redacted)" }
    /// Only the length: key bytes are never printed.
    public var debugDescription: String { description }
    /// An empty mirror, so `dump` and debuggers show no bytes.
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .class) }
}
