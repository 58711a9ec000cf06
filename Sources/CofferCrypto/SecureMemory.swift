// Wiping memory that held secrets, in a way the compiler does not optimise away.

import CSodium
import Foundation

/// Wipes buffers that held keys or plaintext (libsodium `sodium_memzero`).
public enum SecureMemory {
    /// Overwrites `buffer` with zeros.
    public static func wipe(_ buffer: UnsafeMutableRawBufferPointer) {
        guard let base = buffer.baseAddress, buffer.count > 0 else { return }
        sodium_memzero(base, buffer.count)
    }

    /// Overwrites every byte of `bytes` with zeros (its count is kept).
    public static func wipe(_ bytes: inout [UInt8]) {
        bytes.withUnsafeMutableBytes { wipe($0) }
    }

    /// Copies all of `data` to the start of `destination` (which must be at least as large) with
    /// one `memcpy`: `Data.copyBytes(to:)` walks a generic path that costs more than the copy.
    public static func copy(_ data: Data, to destination: UnsafeMutableRawBufferPointer) {
        precondition(destination.count >= data.count, "destination too small")
        data.withUnsafeBytes { source in
            guard let from = source.baseAddress, let to = destination.baseAddress, source.count > 0 else { return }
            to.copyMemory(from: from, byteCount: source.count)
        }
    }
}
