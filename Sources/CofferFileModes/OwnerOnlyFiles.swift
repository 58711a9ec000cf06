// Owner-only file modes, set explicitly so the process umask does not matter: folders 0700,
// files 0600. One copy for every module that writes a store's files (the wallet and deniable
// storage through CofferCrypto's DurableFile, the app database, the media cache).

import CofferSync
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A mode change or folder creation that failed; `message` names the path and the reason.
package struct FileModeError: StorageCauseCarrier, CustomStringConvertible {
    /// What went wrong, with the path.
    package let message: String
    /// The system's error underneath, when a system call failed.
    package let storageCause: StorageCause?
    package init(_ message: String, cause: StorageCause? = nil) {
        self.message = message
        self.storageCause = cause
    }
    package var description: String { message }
}

/// Owner-only folders and files.
package enum OwnerOnlyFiles {
    /// Creates `folder` and any missing parents, each new folder mode 0700 whatever the process
    /// umask. Folders that already exist keep their mode: they may be shared with other files
    /// (see ``restrictToOwner(_:)`` for Coffer's own).
    package static func ensureFolder(_ folder: URL) throws(FileModeError) {
        var missing: [String] = []
        var path = folder.standardizedFileURL.path
        while !path.isEmpty, path != "/" {
            var info = stat()
            if stat(path, &info) == 0 {
                guard info.st_mode & mode_t(S_IFMT) == mode_t(S_IFDIR) else {
                    throw FileModeError("cannot create \(folder.path): \(path) is not a folder")
                }
                break
            }
            guard errno == ENOENT else {
                throw FileModeError("cannot create \(folder.path): \(path): \(errnoText())", cause: StorageCause(errno: errno))
            }
            missing.append(path)
            path = (path as NSString).deletingLastPathComponent
        }
        for created in missing.reversed() {
            if mkdir(created, 0o700) != 0 {
                if errno == EEXIST { continue } // made by someone else meanwhile: not ours to chmod
                throw FileModeError("cannot create \(created): \(errnoText())", cause: StorageCause(errno: errno))
            }
            // mkdir(2)'s mode passes through the umask; set it exactly.
            guard chmod(created, 0o700) == 0 else {
                throw FileModeError("cannot set the mode of \(created): \(errnoText())", cause: StorageCause(errno: errno))
            }
        }
    }

    /// Takes group and other permissions away from an existing file or folder that Coffer owns
    /// (0644 becomes 0600, 0755 becomes 0700; the owner's bits stay). A missing path, or one
    /// already owner-only, is left alone (nothing is written then).
    package static func restrictToOwner(_ path: String) throws(FileModeError) {
        var info = stat()
        guard stat(path, &info) == 0 else {
            if errno == ENOENT { return }
            throw FileModeError("cannot read the mode of \(path): \(errnoText())", cause: StorageCause(errno: errno))
        }
        try restrictToOwner(path, mode: info.st_mode)
    }

    /// ``restrictToOwner(_:)`` for a path whose mode was just read.
    package static func restrictToOwner(_ path: String, mode: mode_t) throws(FileModeError) {
        let permissions = mode & 0o777
        guard permissions & 0o077 != 0 else { return }
        guard chmod(path, permissions & 0o700) == 0 else {
            throw FileModeError(
                "cannot make \(path) owner-only (mode \(String(permissions, radix: 8))): \(errnoText())", cause: StorageCause(errno: errno))
        }
    }

    /// Makes an SQLite database file owner-only before SQLite opens it: creates `url` empty with
    /// mode 0600 when it is missing (SQLite then gives its `-wal`, `-shm` and `-journal` files
    /// the same mode), restricts an existing file and those companions to their owner, and gives
    /// the owner write permission back on a `-wal` or `-shm` left read-only
    /// (``restoreCompanionWrite(_:)``).
    package static func prepareDatabase(_ url: URL) throws(FileModeError) {
        try refuseNonRegularFiles(url)
        let fd = open(url.path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW, 0o600)
        if fd >= 0 {
            defer { close(fd) }
            guard fchmod(fd, 0o600) == 0 else {
                throw FileModeError("cannot set the mode of \(url.path): \(errnoText())", cause: StorageCause(errno: errno))
            }
        } else if errno != EEXIST {
            throw FileModeError("cannot create \(url.path): \(errnoText())", cause: StorageCause(errno: errno))
        }
        for suffix in ["", "-wal", "-shm", "-journal"] {
            try restrictToOwner(url.path + suffix)
        }
        try restoreCompanionWrite(url)
    }

    /// Gives the owner write permission back on the `-wal` and `-shm` of a database file the owner
    /// can write. SQLite makes those files with the database's mode: a read of a database its
    /// owner had set to 0400 left a 0400 `-shm`, and once the owner made the database writable
    /// again every open still failed ("attempt to write a readonly database") until the `-shm` was
    /// removed by hand. Files of another user, and companions of a read-only database, are left
    /// as they are.
    static func restoreCompanionWrite(_ url: URL) throws(FileModeError) {
        var database = stat()
        guard stat(url.path, &database) == 0, database.st_mode & S_IWUSR != 0 else { return }
        for suffix in ["-wal", "-shm"] {
            let path = url.path + suffix
            var info = stat()
            guard lstat(path, &info) == 0, info.st_mode & mode_t(S_IFMT) == mode_t(S_IFREG), info.st_uid == geteuid(),
                info.st_mode & S_IWUSR == 0
            else { continue }
            // Changed by path without following a link, and never opened: closing a descriptor of
            // this process on the file would drop the POSIX locks SQLite's connections in this
            // process hold on it.
            guard fchmodat(AT_FDCWD, path, (info.st_mode & 0o700) | 0o600, AT_SYMLINK_NOFOLLOW) == 0 else {
                throw FileModeError(
                    "\(path) is read-only (mode \(String(info.st_mode & 0o777, radix: 8))) and cannot be made writable: \(errnoText())",
                    cause: StorageCause(errno: errno))
            }
        }
    }

    /// Refuses anything but a regular file at an SQLite database's path or at the path of its
    /// `-wal`, `-shm` or `-journal` file. A symbolic link (dangling or not): SQLite would follow it
    /// and write the database, or its companions (with the umask's mode), wherever it points. A
    /// FIFO: opening it waits for a writer, so the open never returned. A folder, a socket or a
    /// device: SQLite fails on it with a message that does not name it.
    package static func refuseNonRegularFiles(_ url: URL) throws(FileModeError) {
        for suffix in ["", "-wal", "-shm", "-journal"] {
            let path = url.path + suffix
            var info = stat()
            guard lstat(path, &info) == 0 else { continue }
            let type = info.st_mode & mode_t(S_IFMT)
            if type == mode_t(S_IFLNK) {
                throw FileModeError(
                    "\(path) is a symbolic link; Coffer opens a database only at its own path, never through a link. Move the file itself there, or remove the link"
                )
            }
            guard type == mode_t(S_IFREG) else {
                throw FileModeError(
                    "\(path) is not a regular file (it is \(describe(type))); Coffer keeps a database only in a regular file. Move it away, or give another store folder"
                )
            }
        }
    }

    /// Names a file type (the `S_IFMT` bits of a `st_mode`) for an error message: "a folder",
    /// "a FIFO", "a socket", "a symbolic link", "a regular file", or "a device" for the rest.
    package static func describe(_ mode: mode_t) -> String {
        switch mode & mode_t(S_IFMT) {
        case mode_t(S_IFREG): "a regular file"
        case mode_t(S_IFDIR): "a folder"
        case mode_t(S_IFIFO): "a FIFO"
        case mode_t(S_IFSOCK): "a socket"
        case mode_t(S_IFLNK): "a symbolic link"
        default: "a device"
        }
    }

    /// Gives the owner back read, write and search permission on the folder at `path` and on
    /// every folder inside it (group and other bits are left as they are), so that a folder of
    /// Coffer's that its owner set to mode 000 can be listed and removed again. Symbolic links
    /// are not followed, folders of other users are left alone, and a missing path is nothing to
    /// do; a failure shows later, when the removal names the path.
    package static func restoreOwnerAccess(_ path: String) {
        var info = stat()
        guard lstat(path, &info) == 0, info.st_mode & mode_t(S_IFMT) == mode_t(S_IFDIR) else { return }
        if info.st_mode & 0o700 != 0o700, info.st_uid == geteuid() {
            _ = chmod(path, (info.st_mode & 0o7777) | 0o700)
        }
        for name in (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? [] {
            restoreOwnerAccess((path as NSString).appendingPathComponent(name))
        }
    }

    static func errnoText() -> String { String(cString: strerror(errno)) }
}
