// Whole-file replacement that a crash cannot tear (temporary file, fsync, rename, fsync folder),
// and owner-only key files. Shared by the modules that keep files beside their databases.

import CofferFileModes
import CofferSync
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A file operation that failed; `message` names the file and the reason.
package struct FileOperationError: StorageCauseCarrier, CustomStringConvertible {
    /// What went wrong, with the path.
    package let message: String
    /// The file is there and readable but its contents are damaged (a key file of the wrong
    /// size), as opposed to a file that cannot be read or written.
    package let damaged: Bool
    /// The system's error underneath, when a system call failed.
    package let storageCause: StorageCause?
    package init(_ message: String, damaged: Bool = false, cause: StorageCause? = nil) {
        self.message = message
        self.damaged = damaged
        self.storageCause = cause
    }
    package var description: String { message }
}

/// Writes files so that a reader (or a process restarted after a crash) sees either the old
/// content or the new one, never a mix.
package enum DurableFile {
    /// Flushes a file's data to permanent storage; 0 on success, -1 with `errno` set. On Apple
    /// platforms `fsync(2)` only hands the data to the drive, whose cache may lose it at power
    /// loss; `fcntl(F_FULLFSYNC)` asks the drive to write it out (Apple's `fsync(2)` manual page).
    /// A file system that does not support it (some network volumes) gets `fsync`.
    package static func flushToStorage(_ fd: Int32) -> Int32 {
        #if canImport(Darwin)
        if fcntl(fd, F_FULLFSYNC) == 0 { return 0 }
        #endif
        return fsync(fd)
    }

    /// Replaces `url` with `bytes`: writes a temporary file beside it (``createTemporary(beside:permissions:)``:
    /// created exclusively, mode `permissions`, held under a shared lock), flushes it to disk when
    /// `sync` is true, renames it over `url`, then flushes the folder so the rename lasts. On
    /// every error the temporary file is removed; one left by a process killed before its rename
    /// is removed by the next ``sweepTemporaries(in:)`` of the folder. Without `sync` the
    /// replacement is still atomic for readers, but a crash may leave the new name pointing at
    /// incomplete bytes (callers that do so check contents).
    package static func write(
        _ bytes: UnsafeRawBufferPointer, to url: URL, permissions: mode_t = 0o600,
        sync: Bool = true
    ) throws(FileOperationError) {
        let folder = url.deletingLastPathComponent()
        let (fd, temporary) = try createTemporary(beside: url, permissions: permissions)
        var renamed = false
        // The descriptor (and with it the lock) is kept until after the rename, so a sweep
        // never takes the file for a dead write's.
        defer {
            if !renamed { unlink(temporary.path) }
            close(fd)
        }
        try writeAll(fd, bytes, path: temporary.path)
        if sync {
            guard flushToStorage(fd) == 0 else {
                throw FileOperationError("cannot flush \(temporary.path): \(errnoText())", cause: StorageCause(errno: errno))
            }
        }
        guard rename(temporary.path, url.path) == 0 else {
            throw FileOperationError("cannot replace \(url.path): \(errnoText())", cause: StorageCause(errno: errno))
        }
        renamed = true
        if sync { syncFolder(folder) }
    }

    /// Creates a temporary file for a replacement of `url`: `.NAME.UUID.tmp` beside it, created
    /// exclusively (`O_EXCL`, never through a symbolic link), mode exactly `permissions` whatever
    /// the umask, with a shared `flock(2)` held for as long as the returned descriptor is open.
    /// The lock tells ``sweepTemporaries(in:)`` that its writer is alive; the kernel drops it when
    /// the process dies, however it dies. The caller closes the descriptor (after its rename).
    package static func createTemporary(beside url: URL, permissions: mode_t = 0o600) throws(FileOperationError) -> (
        fd: Int32, url: URL
    ) {
        let folder = url.deletingLastPathComponent()
        // A sweep may remove the file between its creation and the lock being taken: then it is
        // no longer at its name, and another name is tried.
        for _ in 0..<8 {
            let temporary = folder.appendingPathComponent(".\(url.lastPathComponent).\(UUID().uuidString)\(temporarySuffix)")
            let fd = open(temporary.path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, permissions)
            guard fd >= 0 else {
                throw FileOperationError("cannot create \(temporary.path): \(errnoText())", cause: StorageCause(errno: errno))
            }
            var result: Int32
            repeat { result = flock(fd, LOCK_SH) } while result != 0 && errno == EINTR
            var opened = stat()
            var named = stat()
            guard result == 0, fstat(fd, &opened) == 0 else {
                let (message, code) = (errnoText(), errno)
                close(fd)
                unlink(temporary.path)
                throw FileOperationError("cannot lock \(temporary.path): \(message)", cause: StorageCause(errno: code))
            }
            guard lstat(temporary.path, &named) == 0, named.st_ino == opened.st_ino, named.st_dev == opened.st_dev else {
                close(fd)
                continue
            }
            // The mode given to open(2) passes through the process umask; set it exactly.
            guard fchmod(fd, permissions) == 0 else {
                let (message, code) = (errnoText(), errno)
                close(fd)
                unlink(temporary.path)
                throw FileOperationError("cannot set the mode of \(temporary.path): \(message)", cause: StorageCause(errno: code))
            }
            return (fd, temporary)
        }
        throw FileOperationError("cannot create a temporary file beside \(url.path): it was removed eight times before it was locked")
    }

    /// How the names of ``createTemporary(beside:permissions:)`` end.
    static let temporarySuffix = ".tmp"

    /// Whether `name` is one ``createTemporary(beside:permissions:)`` makes: `.NAME.UUID.tmp`.
    package static func isTemporaryName(_ name: String) -> Bool {
        guard name.hasPrefix("."), name.hasSuffix(temporarySuffix) else { return false }
        let stem = name.dropLast(temporarySuffix.count)
        guard stem.count > 38, let dot = stem.lastIndex(of: "."), stem.distance(from: dot, to: stem.endIndex) == 37 else { return false }
        return UUID(uuidString: String(stem[stem.index(after: dot)...])) != nil
    }

    /// Removes from `folder` the temporary files of replacements whose writer died before its
    /// rename (killed, or its machine lost power), and returns their names. A temporary file
    /// whose writer is alive holds a lock and is left alone, so a sweep never breaks a write in
    /// progress in this or another process. Only names ``isTemporaryName(_:)`` accepts are
    /// touched; a missing or unreadable folder sweeps nothing.
    @discardableResult
    package static func sweepTemporaries(in folder: URL) -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        var removed: [String] = []
        for name in names where isTemporaryName(name) {
            let path = folder.appendingPathComponent(name).path
            let fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
            if fd < 0 {
                // Not a regular file we can open (a link or a stranger under our naming): nothing
                // of ours holds it.
                if errno == ELOOP, unlink(path) == 0 { removed.append(name) }
                continue
            }
            defer { close(fd) }
            guard flock(fd, LOCK_EX | LOCK_NB) == 0 else { continue }
            if unlink(path) == 0 { removed.append(name) }
        }
        if !removed.isEmpty { syncFolder(folder) }
        return removed
    }

    /// Replaces `url` with `data` (see ``write(_:to:permissions:sync:)-(UnsafeRawBufferPointer,_,_,_)``).
    package static func write(_ data: Data, to url: URL, permissions: mode_t = 0o600, sync: Bool = true) throws(FileOperationError) {
        try withBytes(data) { (bytes) throws(FileOperationError) in try write(bytes, to: url, permissions: permissions, sync: sync) }
    }

    /// Reads a whole file; nil when it does not exist.
    package static func read(_ url: URL) throws(FileOperationError) -> Data? {
        // One stat answers both "is it there" (as FileManager.fileExists would) and "is it a
        // regular file": a FIFO, folder, socket or device where a file of Coffer's belongs is
        // named as such (reading one failed with "permission", or Foundation's bare error number).
        var info = stat()
        guard stat(url.path, &info) == 0 else { return nil }
        if info.st_mode & mode_t(S_IFMT) != mode_t(S_IFREG) {
            throw FileOperationError(
                "cannot read \(url.path): it is not a regular file (it is \(OwnerOnlyFiles.describe(info.st_mode))); move it away"
            )
        }
        do { return try Data(contentsOf: url) } catch {
            throw FileOperationError("cannot read \(url.path): \(error.localizedDescription)", cause: StorageCause(error))
        }
    }

    /// Creates `folder` and any missing parents, each new folder mode 0700 whatever the process
    /// umask. Folders that already exist keep their mode (see ``restrictToOwner(_:)``).
    package static func ensureFolder(_ folder: URL) throws(FileOperationError) {
        do { try OwnerOnlyFiles.ensureFolder(folder) } catch { throw FileOperationError(error.message, cause: StorageCause(error)) }
    }

    /// Takes group and other permissions away from an existing file or folder that Coffer owns
    /// (0644 becomes 0600, 0755 becomes 0700); a missing path is left alone.
    package static func restrictToOwner(_ url: URL) throws(FileOperationError) {
        do { try OwnerOnlyFiles.restrictToOwner(url.path) } catch { throw FileOperationError(error.message, cause: StorageCause(error)) }
    }

    /// Makes an SQLite database file owner-only before SQLite opens it (created 0600 when
    /// missing, so its `-wal` and `-shm` get 0600 too; an existing one and those restricted).
    package static func prepareOwnerOnlyDatabase(_ url: URL) throws(FileOperationError) {
        do { try OwnerOnlyFiles.prepareDatabase(url) } catch { throw FileOperationError(error.message, cause: StorageCause(error)) }
    }

    /// Refuses anything but a regular file (a symbolic link, a FIFO, a folder) at a database's path
    /// or its `-wal`, `-shm` or `-journal` path (see ``OwnerOnlyFiles/refuseNonRegularFiles(_:)``).
    package static func refuseNonRegularFiles(_ url: URL) throws(FileOperationError) {
        do { try OwnerOnlyFiles.refuseNonRegularFiles(url) } catch { throw FileOperationError(error.message, cause: StorageCause(error)) }
    }

    /// Flushes a folder's entries (renames and unlinks in it) to disk.
    package static func syncFolder(_ folder: URL) {
        let dirfd = open(folder.path, O_RDONLY)
        if dirfd >= 0 {
            _ = fsync(dirfd)
            close(dirfd)
        }
    }

    /// Removes `url` if it exists (file or folder); missing is not an error.
    package static func remove(_ url: URL) throws(FileOperationError) {
        do {
            try FileManager.default.removeItem(at: url)
        } catch let error as CocoaError where error.code == .fileNoSuchFile {
            return
        } catch {
            if !FileManager.default.fileExists(atPath: url.path) { return }
            throw FileOperationError("cannot remove \(url.path): \(error.localizedDescription)", cause: StorageCause(error))
        }
    }

    static func errnoText() -> String { String(cString: strerror(errno)) }

    /// Writes all of `bytes` to `fd` (retrying short writes and EINTR); `path` names the file in
    /// the error.
    static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, path: String) throws(FileOperationError) {
        var offset = 0
        while offset < bytes.count {
            let n = posixWrite(fd, bytes.baseAddress! + offset, bytes.count - offset)
            if n < 0 {
                if errno == EINTR { continue }
                throw FileOperationError("cannot write \(path): \(errnoText())", cause: StorageCause(errno: errno))
            }
            offset += n
        }
    }
}

/// A random 32-byte key in a file only its owner may read (mode 0600), created on first use.
/// A file whose permissions are wider is refused, never silently used or repaired.
package struct OwnerOnlyKeyFile: Sendable {
    /// Where the key lives.
    package let url: URL

    package init(url: URL) { self.url = url }

    /// The key, made (and written atomically, 0600) when the file does not exist.
    package func loadOrCreate() throws(FileOperationError) -> SecretKey {
        if FileManager.default.fileExists(atPath: url.path) { return try load() }
        let key = SecretKey.random(byteCount: 32)
        try write(key)
        return key
    }

    /// Reads the key, checking the file first: a symbolic link (followed, it could lead to a file
    /// anyone may write) and anything but a regular file are refused, as is a mode that lets
    /// group or others read it. A file of the wrong size is reported as damaged
    /// (``FileOperationError/damaged``).
    package func load() throws(FileOperationError) -> SecretKey {
        var info = stat()
        guard lstat(url.path, &info) == 0 else {
            throw FileOperationError("cannot read \(url.path): \(DurableFile.errnoText())", cause: StorageCause(errno: errno))
        }
        switch info.st_mode & mode_t(S_IFMT) {
        case mode_t(S_IFREG): break
        case mode_t(S_IFLNK):
            throw FileOperationError(
                "\(url.path) is a symbolic link; the key file must be a regular file at that path (mode 0600): put the file itself there in place of the link"
            )
        default:
            throw FileOperationError("\(url.path) is not a regular file; the key file must be a regular file at that path (mode 0600)")
        }
        let mode = Int(info.st_mode & 0o777)
        guard mode & 0o077 == 0 else {
            throw FileOperationError("\(url.path) is readable by others (mode \(String(mode, radix: 8))); it must be 0600")
        }
        let fd = open(url.path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else {
            throw FileOperationError("cannot read \(url.path): \(DurableFile.errnoText())", cause: StorageCause(errno: errno))
        }
        defer { close(fd) }
        // One byte more than a key, to tell a longer file from a key.
        var bytes = [UInt8](repeating: 0, count: 33)
        defer { SecureMemory.wipe(&bytes) }
        var count = 0
        while count < bytes.count {
            let n = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress! + count, $0.count - count) }
            if n < 0, errno == EINTR { continue }
            guard n >= 0 else {
                throw FileOperationError("cannot read \(url.path): \(DurableFile.errnoText())", cause: StorageCause(errno: errno))
            }
            if n == 0 { break }
            count += n
        }
        guard count == 32 else {
            throw FileOperationError(
                "\(url.path) holds \(count == 33 ? "more than 32" : String(count)) bytes, not a 32-byte key: the key file is damaged. Put back an intact copy of it, or start over with a reset (what it protects cannot be opened without it)",
                damaged: true)
        }
        do { return try SecretKey(copying: Data(bytes.prefix(32)), expectedCount: 32) } catch {
            throw FileOperationError("\(error)", cause: StorageCause(error))
        }
    }

    /// Replaces the key file with `key` (atomic, durable, 0600).
    package func write(_ key: SecretKey) throws(FileOperationError) {
        try DurableFile.ensureFolder(url.deletingLastPathComponent())
        try key.withUnsafeBytes { (bytes) throws(FileOperationError) in
            try DurableFile.write(bytes, to: url, permissions: 0o600)
        }
    }
}

/// `Data.withUnsafeBytes` keeping the body's typed error (the Foundation method is `rethrows`).
/// Inlinable so callers in other modules get it specialized (no generic metadata per call).
@inlinable
package func withBytes<R, E: Error>(_ data: Data, _ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
    let result: Result<R, E> = data.withUnsafeBytes { raw in Result { () throws(E) in try body(raw) } }
    return try result.get()
}

/// `write(2)`, named apart from the enum's own `write` methods.
@inline(__always)
private func posixWrite(_ fd: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int {
    #if canImport(Glibc)
    return Glibc.write(fd, buffer, count)
    #else
    return Darwin.write(fd, buffer, count)
    #endif
}

/// Writes a file in pieces under a fixed hidden name beside its target (`.NAME.partial`), then
/// moves it into place whole: flush, rename, flush of the folder. A writer that fails, or a
/// process killed at any moment, leaves nothing at the target name; the next writer to the
/// same target removes what a killed one left. The writer holds a lock on its partial file, so
/// a second writer to the same target while the first is alive is refused instead of removing
/// the first one's file.
/// Not `Sendable`: one thread at a time owns it (a backup export hands it to its read closure
/// as a `Handoff`, and commits it once that closure is done).
package final class DurableFileWriter {
    /// Where the pieces go until ``commit()``.
    package let temporary: URL
    private let target: URL
    private var fd: Int32

    /// Starts writing `target` (mode `permissions`, exactly, whatever the umask). A partial file
    /// that a killed writer left is removed first; one whose writer is alive (it holds a lock on
    /// it, in this or another process) is refused.
    package init(target: URL, permissions: mode_t = 0o600) throws(FileOperationError) {
        self.target = target
        temporary = Self.partialURL(for: target)
        let stale = open(temporary.path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        if stale >= 0 {
            let free = flock(stale, LOCK_EX | LOCK_NB) == 0
            if free { unlink(temporary.path) }
            close(stale)
            guard free else { throw FileOperationError("\(target.path) is being written by another export; wait for it to finish") }
        } else {
            unlink(temporary.path) // a link or a stranger at the partial name
        }
        fd = open(temporary.path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, permissions)
        guard fd >= 0 else {
            throw FileOperationError("cannot create \(temporary.path): \(DurableFile.errnoText())", cause: StorageCause(errno: errno))
        }
        TestPause.at("partial-created") // debug builds only: lets tests act between the create and the lock
        // Held until the rename or abandon: the next writer to this target can tell a live
        // write from one whose process died.
        var locked: Int32
        repeat { locked = flock(fd, LOCK_SH) } while locked != 0 && errno == EINTR
        // Another writer may have taken the file for a dead one's and removed it between the
        // create and the lock (and made its own under the name): then this write would rename the
        // other one's unfinished file into place. Once locked, the name stays ours.
        guard isStillAtName() else {
            close(fd)
            fd = -1
            throw FileOperationError("\(target.path) is being written by another export; wait for it to finish")
        }
        guard fchmod(fd, permissions) == 0 else {
            let (message, code) = (DurableFile.errnoText(), errno)
            abandon()
            throw FileOperationError("cannot set the mode of \(temporary.path): \(message)", cause: StorageCause(errno: code))
        }
    }

    /// The hidden name a write of `target` uses until it is complete.
    package static func partialURL(for target: URL) -> URL {
        target.deletingLastPathComponent().appendingPathComponent(".\(target.lastPathComponent).partial")
    }

    /// Appends bytes.
    package func write(_ bytes: UnsafeRawBufferPointer) throws(FileOperationError) {
        guard fd >= 0 else { throw FileOperationError("\(temporary.path) is already closed") }
        try DurableFile.writeAll(fd, bytes, path: temporary.path)
    }

    /// Appends `data`.
    package func write(_ data: Data) throws(FileOperationError) {
        try withBytes(data) { (bytes) throws(FileOperationError) in try write(bytes) }
    }

    /// Flushes the file to disk, renames it over the target, and flushes the folder.
    package func commit() throws(FileOperationError) {
        guard fd >= 0 else { throw FileOperationError("\(temporary.path) is already closed") }
        guard DurableFile.flushToStorage(fd) == 0 else {
            let (message, code) = (DurableFile.errnoText(), errno)
            abandon()
            throw FileOperationError("cannot flush \(temporary.path): \(message)", cause: StorageCause(errno: code))
        }
        // Renamed before the descriptor (and its lock) is let go, and only the file this writer
        // wrote: never another's under the same name.
        guard isStillAtName() else {
            close(fd)
            fd = -1
            throw FileOperationError("\(temporary.path) was replaced by another writer; \(target.path) was not written")
        }
        guard rename(temporary.path, target.path) == 0 else {
            let (message, code) = (DurableFile.errnoText(), errno)
            abandon()
            throw FileOperationError("cannot move \(temporary.path) to \(target.path): \(message)", cause: StorageCause(errno: code))
        }
        close(fd)
        fd = -1
        DurableFile.syncFolder(target.deletingLastPathComponent())
    }

    /// Closes and removes the partial file (the target is untouched).
    package func abandon() {
        // Removed while still locked: a writer starting meanwhile cannot take the name first.
        // Only when the name is still this writer's file (never another writer's).
        if fd >= 0, isStillAtName() { unlink(temporary.path) }
        if fd >= 0 { close(fd) }
        fd = -1
    }

    /// Whether the partial name still leads to the file this writer has open (same inode and
    /// device, not a link).
    private func isStillAtName() -> Bool {
        var held = stat()
        var named = stat()
        return fstat(fd, &held) == 0 && lstat(temporary.path, &named) == 0 && held.st_ino == named.st_ino
            && held.st_dev == named.st_dev
    }

    deinit { if fd >= 0 { abandon() } }
}
