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
