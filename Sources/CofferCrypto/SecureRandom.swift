// Randomness from the operating system's CSPRNG through libsodium.
import CSodium
import Foundation

/// Cryptographically secure random bytes.
public enum SecureRandom {
    /// `count` random bytes.
    public static func bytes(_ count: Int) -> Data {
        Sodium.ensureReady()
        var out = Data(count: count)
        if count > 0 {
            out.withUnsafeMutableBytes { randombytes_buf($0.baseAddress!, count) }
        }
        return out
    }

    /// A uniform random integer in `0..<upperBound` (no modulo bias).
    public static func uniform(_ upperBound: UInt32) -> UInt32 {
        Sodium.ensureReady()
        return randombytes_uniform(upperBound)
    }
}

/// Random nonces for AEAD seals, served from a buffer the operating system's CSPRNG fills 4 KiB
/// at a time: one `getrandom` call per few hundred seals instead of one per seal, which showed
/// in profiles of bulk writes. Each byte is handed out once. Nonces are public (every sealed box
/// starts with its own), so holding future ones in memory reveals nothing. A forked child
/// process refills before its first nonce, so parent and child never share one.
final class NonceSource: @unchecked Sendable {
    static let shared = NonceSource()

    /// Requests larger than this bypass the buffer.
    private static let largest = 64
    // Guarded by `lock`.
    private let lock = NSLock()
    private let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 16)
    private var used = 4096
    private var owner: pid_t = 0

    /// Writes `count` random bytes to `out`.
    func fill(_ out: UnsafeMutableRawPointer, count: Int) {
        Sodium.ensureReady()
        guard count <= Self.largest else {
            randombytes_buf(out, count)
            return
        }
        lock.lock()
        defer { lock.unlock() }
        let pid = getpid()
        if used + count > buffer.count || pid != owner {
            randombytes_buf(buffer.baseAddress!, buffer.count)
            used = 0
            owner = pid
        }
        out.copyMemory(from: buffer.baseAddress! + used, byteCount: count)
        used += count
    }
}
