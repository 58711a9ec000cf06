// HMAC-SHA256 (libsodium) with the key schedule done once for blind indexes; keyed BLAKE2b for key derivation.

import CSodium
import Crypto
import Foundation

/// HMAC-SHA256 under one fixed key, for blind indexes (equal inputs give equal outputs,
/// nothing else is revealed).
///
/// The HMAC state after absorbing the key is computed once, kept in guarded memory this type
/// owns (`sodium_malloc`: its own pages between guard pages, locked against swapping where the
/// system allows; ordinary heap memory if the system refuses them), wiped on release, and copied
/// for each use, so a call costs only the message blocks and allocates nothing but its result.
public final class KeyedHash: @unchecked Sendable {
    // Safe to share: the pointer's HMAC state is written once in init and only copied from afterwards (the compiler cannot see through the pointer).
    private let keyed: UnsafeMutablePointer<crypto_auth_hmacsha256_state>
    /// Whether `keyed` came from `sodium_malloc`.
    private let guarded: Bool

    /// Whether the HMAC state lives in `sodium_malloc` memory (read by tests).
    package var isGuarded: Bool { guarded }

    /// Guarded memory for one HMAC state (see the type's comment).
    private static func allocateState() -> (UnsafeMutablePointer<crypto_auth_hmacsha256_state>, Bool) {
        let size = MemoryLayout<crypto_auth_hmacsha256_state>.size
        if let raw = sodium_malloc(size) {
            let state = raw.bindMemory(to: crypto_auth_hmacsha256_state.self, capacity: 1)
            state.initialize(to: crypto_auth_hmacsha256_state())
            return (state, true)
        }
        let state = UnsafeMutablePointer<crypto_auth_hmacsha256_state>.allocate(capacity: 1)
        state.initialize(to: crypto_auth_hmacsha256_state())
        return (state, false)
    }

    /// Output length of HMAC-SHA256.
    public static let outputByteCount = 32

    /// A hasher under `key`.
    public init(key: SecretKey) {
        Sodium.ensureReady()
        (keyed, guarded) = Self.allocateState()
        key.withUnsafeBytes { k in
            _ = crypto_auth_hmacsha256_init(keyed, k.baseAddress!.assumingMemoryBound(to: UInt8.self), k.count)
        }
    }

    /// A hasher under the subkey HKDF derives from `master` for `info` (the same hasher as
    /// `KeyedHash(key: KeyDerivation.hkdf(from: master, info: info))`). The subkey is never
    /// kept: it goes straight into the HMAC state (in guarded memory) from swift-crypto's wiped
    /// key storage.
    package init(hkdfFrom master: SecretKey, info: String) {
        Sodium.ensureReady()
        (keyed, guarded) = Self.allocateState()
        KeyDerivation.withHKDF(from: master, info: info) { k in
            _ = crypto_auth_hmacsha256_init(keyed, k.baseAddress!.assumingMemoryBound(to: UInt8.self), k.count)
        }
    }

    deinit {
        if guarded {
            sodium_free(keyed) // wipes, unlocks and unmaps
        } else {
            sodium_memzero(keyed, MemoryLayout<crypto_auth_hmacsha256_state>.size)
            keyed.deallocate()
        }
    }

    /// The message being hashed: parts are framed by their length, so ("ab","c") ≠ ("a","bc").
    public struct Input: ~Copyable {
        fileprivate var state: crypto_auth_hmacsha256_state

        /// Adds one length-prefixed part.
        public mutating func add(_ bytes: UnsafeRawBufferPointer) {
            var length = UInt32(truncatingIfNeeded: bytes.count).littleEndian
            withUnsafeBytes(of: &length) { raw($0) }
            raw(bytes)
        }

        /// Adds one length-prefixed part.
        public mutating func add(_ data: Data) {
            data.withUnsafeBytes { add($0) }
        }

        /// Adds one length-prefixed part: the string's UTF-8.
        public mutating func add(_ string: String) {
            var s = string
            s.withUTF8 { add(UnsafeRawBufferPointer($0)) }
        }

        /// Adds bytes without framing.
        public mutating func raw(_ bytes: UnsafeRawBufferPointer) {
            guard bytes.count > 0 else { return }
            _ = crypto_auth_hmacsha256_update(&state, bytes.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt64(bytes.count))
        }

        fileprivate mutating func finish(into out: UnsafeMutableRawBufferPointer) {
            _ = crypto_auth_hmacsha256_final(&state, out.baseAddress!.assumingMemoryBound(to: UInt8.self))
            withUnsafeMutableBytes(of: &state) { sodium_memzero($0.baseAddress!, $0.count) }
        }
    }

    /// HMAC of the message `build` writes, truncated to `byteCount` bytes (1…32).
    public func hash(byteCount: Int = outputByteCount, _ build: (inout Input) -> Void) -> Data {
        precondition(byteCount > 0 && byteCount <= Self.outputByteCount, "blind index length must be 1…32 bytes")
        var input = Input(state: keyed.pointee)
        build(&input)
        return withUnsafeTemporaryAllocation(byteCount: Self.outputByteCount, alignment: 8) { out in
            input.finish(into: out)
            defer { sodium_memzero(out.baseAddress!, out.count) }
            return Data(UnsafeRawBufferPointer(rebasing: out[0..<byteCount]))
        }
    }

    /// HMAC of the length-framed concatenation of `parts`, truncated to `byteCount` bytes.
    public func hash(_ parts: [Data], byteCount: Int = outputByteCount) -> Data {
        hash(byteCount: byteCount) { input in
            for part in parts { input.add(part) }
        }
    }

    /// HMAC of a one-byte domain label then `message` (unframed), truncated.
    public func hash(domain: UInt8, _ message: Data, byteCount: Int = outputByteCount) -> Data {
        hash(byteCount: byteCount) { input in
            var d = domain
            withUnsafeBytes(of: &d) { input.raw($0) }
            message.withUnsafeBytes { input.raw($0) }
        }
    }

    /// Plain HMAC-SHA256 of `message` (no framing), for interoperability checks.
    public func raw(_ message: Data) -> Data {
        hash { input in message.withUnsafeBytes { input.raw($0) } }
    }
}

/// Keyed BLAKE2b (libsodium `crypto_generichash` with a key) for deriving many short-lived
/// keys fast: one compression for a short input, against HMAC-SHA256's two.
public final class KeyedBlake2b: Sendable {
    @usableFromInline let key: SecretKey

    /// A derivation function under `key` (32 bytes).
    public init(key: SecretKey) {
        Sodium.ensureReady()
        precondition(key.byteCount == 32, "KeyedBlake2b takes a 32-byte key")
        self.key = key
    }

    /// Derives a 32-byte key from a one-byte domain label and the concatenation of `a` and `b`,
    /// and lends its bytes to `body` from temporary memory; they are wiped when `body` returns.
    @inlinable
    public func withDerivedKey<R, E: Error>(domain: UInt8, _ a: Data, _ b: Data, _ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E)
        -> R
    {
        try withBytes(a) { (a) throws(E) -> R in
            try withBytes(b) { (b) throws(E) -> R in try withDerivedKey(domain: domain, a, b, body) }
        }
    }

    /// ``withDerivedKey(domain:_:_:_:)`` over bytes the caller already holds (no `Data` needed).
    /// Inlinable (as is the `Data` form) so callers in other modules get it specialized.
    @inlinable
    public func withDerivedKey<R, E: Error>(
        domain: UInt8, _ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer,
        _ body: (UnsafeRawBufferPointer) throws(E) -> R
    ) throws(E) -> R {
        let inputCount = 1 + a.count + b.count
        return try withUnsafeTemporaryAllocation(byteCount: inputCount + 32, alignment: 16) { (buffer) throws(E) -> R in
            let input = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<inputCount])
            let out = UnsafeMutableRawBufferPointer(rebasing: buffer[inputCount...])
            defer { sodium_memzero(buffer.baseAddress!, buffer.count) }
            input[0] = domain
            if a.count > 0 { input.baseAddress!.advanced(by: 1).copyMemory(from: a.baseAddress!, byteCount: a.count) }
            if b.count > 0 { input.baseAddress!.advanced(by: 1 + a.count).copyMemory(from: b.baseAddress!, byteCount: b.count) }
            key.withUnsafeBytes { k in
                _ = crypto_generichash(
                    out.baseAddress!.assumingMemoryBound(to: UInt8.self), 32,
                    input.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt64(inputCount),
                    k.baseAddress!.assumingMemoryBound(to: UInt8.self), k.count)
            }
            return try body(UnsafeRawBufferPointer(out))
        }
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

    /// ``hkdf(from:salt:info:byteCount:)``'s output lent to `body`, in swift-crypto's key
    /// storage (wiped when it is released), for a key used once.
    package static func withHKDF<R>(from key: SecretKey, info: String, byteCount: Int = 32, _ body: (UnsafeRawBufferPointer) -> R) -> R {
        let derived = key.withUnsafeBytes { bytes in
            HKDF<SHA256>.deriveKey(
                inputKeyMaterial: SymmetricKey(data: bytes), salt: Data(), info: Data(info.utf8), outputByteCount: byteCount)
        }
        return derived.withUnsafeBytes(body)
    }
}
