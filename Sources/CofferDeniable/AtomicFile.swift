// Whole-file replacement that a crash cannot tear: temporary file, fsync, rename, fsync folder.
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Writes files so that a reader (or a process restarted after a crash) sees either the old
/// content or the new one, never a mix.
enum AtomicFile {
    /// Replaces `url` with `bytes`: writes a temporary file beside it (mode `permissions`),
    /// flushes it to disk, renames it over `url`, then flushes the folder so the rename lasts.
    static func write(_ bytes: UnsafeRawBufferPointer, to url: URL, permissions: mode_t = 0o600) throws(DeniableError) {
        let folder = url.deletingLastPathComponent()
        let temporary = folder.appendingPathComponent(".\(url.lastPathComponent).\(UUID().uuidString).tmp")
        let fd = open(temporary.path, O_WRONLY | O_CREAT | O_EXCL, permissions)
        guard fd >= 0 else { throw .storage("cannot create \(temporary.path): \(errnoText())") }
        var ok = false
        defer {
            if !ok { close(fd); unlink(temporary.path) }
        }
        var offset = 0
        while offset < bytes.count {
            let n = Glibc_write(fd, bytes.baseAddress! + offset, bytes.count - offset)
            if n < 0 {
                if errno == EINTR { continue }
                throw .storage("cannot write \(temporary.path): \(errnoText())")
            }
            offset += n
        }
        guard fsync(fd) == 0 else { throw .storage("cannot flush \(temporary.path): \(errnoText())") }
        ok = true
        close(fd)
        guard rename(temporary.path, url.path) == 0 else {
            let message = errnoText()
            unlink(temporary.path)
            throw .storage("cannot replace \(url.path): \(message)")
        }
        let dirfd = open(folder.path, O_RDONLY)
        if dirfd >= 0 {
            _ = fsync(dirfd)
            close(dirfd)
        }
    }

    /// Replaces `url` with `data` (see ``write(_:to:permissions:)-(UnsafeRawBufferPointer,_,_)``).
    static func write(_ data: Data, to url: URL, permissions: mode_t = 0o600) throws(DeniableError) {
        try withBytes(data) { (bytes) throws(DeniableError) in try write(bytes, to: url, permissions: permissions) }
    }

    /// Reads a whole file; nil when it does not exist.
    static func read(_ url: URL) throws(DeniableError) -> Data? {
        guard FileManager.default.fileExists(atPath: url.path) else { return nil }
        do { return try Data(contentsOf: url) } catch { throw .storage("cannot read \(url.path): \(error.localizedDescription)") }
    }

    /// Creates `folder` (and its parents) with owner-only permissions when it is missing.
    static func ensureFolder(_ folder: URL) throws(DeniableError) {
        do {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
        } catch {
            throw .storage("cannot create \(folder.path): \(error.localizedDescription)")
        }
    }

    private static func errnoText() -> String { String(cString: strerror(errno)) }
}

/// `write(2)`, named apart from the enum's own `write` methods.
@inline(__always)
private func Glibc_write(_ fd: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int {
    #if canImport(Glibc)
    return Glibc.write(fd, buffer, count)
    #else
    return Darwin.write(fd, buffer, count)
    #endif
}

/// `Data.withUnsafeBytes` keeping the body's typed error (the Foundation method is `rethrows`).
func withBytes<R, E: Error>(_ data: Data, _ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
    let result: Result<R, E> = data.withUnsafeBytes { raw in Result { () throws(E) in try body(raw) } }
    return try result.get()
}
