// Owner-only modes for the app database: the file 0600 (SQLite gives its -wal and -shm the same
// mode), new folders 0700, set explicitly so the process umask does not matter.
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// File modes of the app database and the folders made for it.
enum OwnerOnlyFiles {
    /// Creates `folder` and any missing parents, each new folder 0700 whatever the umask.
    /// Folders that already exist keep their mode: they may be shared with other files.
    static func ensureFolder(_ folder: URL) throws(DatabaseStoreError) {
        var missing: [String] = []
        var path = folder.standardizedFileURL.path
        while !path.isEmpty, path != "/" {
            var info = stat()
            if stat(path, &info) == 0 {
                guard info.st_mode & mode_t(S_IFMT) == mode_t(S_IFDIR) else {
                    throw .storage("cannot create \(folder.path): \(path) is not a folder")
                }
                break
            }
            guard errno == ENOENT else { throw .storage("cannot create \(folder.path): \(path): \(errnoText())") }
            missing.append(path)
            path = (path as NSString).deletingLastPathComponent
        }
        for created in missing.reversed() {
            if mkdir(created, 0o700) != 0 {
                if errno == EEXIST { continue } // made by someone else meanwhile: not ours to chmod
                throw .storage("cannot create \(created): \(errnoText())")
            }
            guard chmod(created, 0o700) == 0 else { throw .storage("cannot set the mode of \(created): \(errnoText())") }
        }
    }

    /// Makes the database file owner-only before SQLite opens it: creates it empty with mode
    /// 0600 when missing, and takes group and other permissions away from an existing file and
    /// its `-wal`, `-shm` and `-journal` (0644 becomes 0600; the owner's bits stay).
    static func prepareDatabaseFile(_ url: URL) throws(DatabaseStoreError) {
        let fd = open(url.path, O_RDWR | O_CREAT | O_EXCL, 0o600)
        if fd >= 0 {
            defer { close(fd) }
            guard fchmod(fd, 0o600) == 0 else { throw .storage("cannot set the mode of \(url.path): \(errnoText())") }
        } else if errno != EEXIST {
            throw .storage("cannot create \(url.path): \(errnoText())")
        }
        for suffix in ["", "-wal", "-shm", "-journal"] {
            let path = url.path + suffix
            var info = stat()
            guard stat(path, &info) == 0 else {
                if errno == ENOENT { continue }
                throw .storage("cannot read the mode of \(path): \(errnoText())")
            }
            let mode = info.st_mode & 0o777
            guard mode & 0o077 != 0 else { continue }
            guard chmod(path, mode & 0o700) == 0 else {
                throw .storage("cannot make \(path) owner-only (mode \(String(mode, radix: 8))): \(errnoText())")
            }
        }
    }

    private static func errnoText() -> String { String(cString: strerror(errno)) }
}
