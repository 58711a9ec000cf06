// The package's durable file writes, with failures reported as this module's storage errors.

import CofferCrypto
import CofferSync
import Foundation

/// ``DurableFile`` with ``DeniableError/storage(_:cause:)`` errors.
package enum AtomicFile {
    /// Replaces `url` with `bytes` atomically and durably (temporary file, fsync, rename, fsync folder).
    package static func write(_ bytes: UnsafeRawBufferPointer, to url: URL, permissions: mode_t = 0o600) throws(DeniableError) {
        do { try DurableFile.write(bytes, to: url, permissions: permissions) } catch {
            throw .storage(error.message, cause: StorageCause(error))
        }
    }

    /// Replaces `url` with `data` atomically and durably.
    package static func write(_ data: Data, to url: URL, permissions: mode_t = 0o600) throws(DeniableError) {
        do { try DurableFile.write(data, to: url, permissions: permissions) } catch {
            throw .storage(error.message, cause: StorageCause(error))
        }
    }

    /// Reads a whole file; nil when it does not exist.
    package static func read(_ url: URL) throws(DeniableError) -> Data? {
        do { return try DurableFile.read(url) } catch { throw .storage(error.message, cause: StorageCause(error)) }
    }

    /// Creates `folder` (and its parents) with owner-only permissions when it is missing.
    package static func ensureFolder(_ folder: URL) throws(DeniableError) {
        do { try DurableFile.ensureFolder(folder) } catch { throw .storage(error.message, cause: StorageCause(error)) }
    }
}
