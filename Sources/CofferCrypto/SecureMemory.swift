// Wiping memory that held secrets, in a way the compiler does not optimise away.
import CSodium

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
}
