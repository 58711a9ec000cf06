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
    // Immutable after init, so sharing across tasks is safe.
    private let storage: UnsafeMutableRawBufferPointer
    /// Whether `storage` came from `sodium_malloc` (else from the heap, when it failed).
    private let guarded: Bool

    /// The number of secret bytes.
    public var byteCount: Int { storage.count }

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
    static func filling(byteCount: Int, _ body: (UnsafeMutableRawBufferPointer) throws(CryptoError) -> Void) throws(CryptoError) -> SecretKey {
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
