// The package's lock between processes: an exclusive `flock(2)` on a lock file that stays in
// place. What one process reads, changes and writes back under it, no other process (nor another
// instance in this process, whose descriptor is its own) changes meanwhile.

import Foundation

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#endif

/// A lock file could not be opened or locked; `message` names the path, the reason and what to do.
package struct ProcessLockError: StorageCauseCarrier, CustomStringConvertible {
    /// What went wrong, with the path.
    package let message: String
    /// The system's error underneath.
    package let storageCause: StorageCause?
    /// The error with its message.
    package init(_ message: String, cause: StorageCause? = nil) {
        self.message = message
        self.storageCause = cause
    }
    /// The message.
    package var description: String { message }
}

/// An exclusive lock shared by every process that opens the same lock file. The file is created
/// (mode 0600) when missing. A lock counts only while its file is still the one at the path: a
/// waiter whose file was removed or replaced meanwhile opens the path again. So a holder may
/// remove the file as the very last step of its work (`removeWhenDone`), leaving nothing behind:
/// whoever locks the old file afterwards sees it gone and starts over on a new one.
///
/// Hold it only over synchronous work (never across an `await`): a blocked `flock` holds its
/// thread, and the holder must not need another thread of the same pool to finish.
package enum ProcessLock {
    /// Runs `body` holding an exclusive lock on the file at `path` (waiting for other holders).
    /// A lock file that cannot be opened or locked is reported through `failure`.
    package static func withLock<R, E: Error>(
        at path: String, removeWhenDone: Bool = false, failure: (ProcessLockError) -> E, _ body: () throws(E) -> R
    ) throws(E) -> R {
        let fd: Int32
        do throws(ProcessLockError) { fd = try acquire(path, wait: true)! } catch { throw failure(error) }
        defer { release(fd, removing: removeWhenDone ? path : nil) }
        return try body()
    }

    /// Runs `body` holding the lock when no other holder has it now; nil (without running
    /// `body`) when another holds it.
    package static func withLockIfAvailable<R, E: Error>(
        at path: String, removeWhenDone: Bool = false, failure: (ProcessLockError) -> E, _ body: () throws(E) -> R
    ) throws(E) -> R? {
        let fd: Int32?
        do throws(ProcessLockError) { fd = try acquire(path, wait: false) } catch { throw failure(error) }
        guard let fd else { return nil }
        defer { release(fd, removing: removeWhenDone ? path : nil) }
        return try body()
    }

    /// Takes the lock for work that awaits (waiting for other holders on a worker thread, so no
    /// thread of Swift's pool is held); the caller must ``Held/release()`` it. `removeWhenDone`
    /// as for ``withLock(at:removeWhenDone:failure:_:)``.
    package static func acquire(at path: String, removeWhenDone: Bool = false) async throws(ProcessLockError) -> Held {
        let fd = try await offCaller { () throws(ProcessLockError) -> Int32 in try acquire(path, wait: true)! }
        return Held(fd: fd, path: removeWhenDone ? path : nil)
    }

    /// A lock taken with ``acquire(at:removeWhenDone:)``; released once.
    package final class Held: Sendable {
        private let state: Locked<Int32?>
        private let path: String?

        init(fd: Int32, path: String?) {
            state = Locked(fd)
            self.path = path
        }

        /// Releases the lock (removing its file when asked to); later calls do nothing.
        package func release() {
            let fd = state.withLock { (fd: inout Int32?) -> Int32? in
                defer { fd = nil }
                return fd
            }
            if let fd { ProcessLock.release(fd, removing: path) }
        }

        deinit { release() }
    }

    /// Opens the lock file and locks it; nil when `wait` is false and another holds it.
    static func acquire(_ path: String, wait: Bool) throws(ProcessLockError) -> Int32? {
        var file = KeptOpen(path: path)
        guard try file.lock(wait: wait) != nil else { return nil }
        return file.fd
    }

    /// A lock file kept open between locks, for a holder that locks it often and keeps data in
    /// it (the media cache's change counter). The same rules as the other forms: the file is
    /// created 0600 when missing, and a lock counts only while its file is still the one at the
    /// path (the file is opened again when it was removed or replaced).
    package struct KeptOpen {
        /// The lock file's path.
        package let path: String
        /// The open lock file; -1 before the first lock and after a replaced file was let go.
        package private(set) var fd: Int32 = -1

        /// A lock file at `path`, not open yet.
        package init(path: String) { self.path = path }

        /// Locks the file (waiting for other holders unless `wait` is false): true when the file
        /// was (re)opened for this lock, false when the open one was locked again; nil when
        /// `wait` is false and another holds it.
        /// - Throws: ``ProcessLockError`` naming the file, the reason and what to do.
        package mutating func lock(wait: Bool = true) throws(ProcessLockError) -> Bool? {
            // Each new round follows a holder that removed the file, so rounds make progress; the
            // bound only stops a loop against a file something else keeps replacing.
            for _ in 0..<10_000 {
                var reopened = false
                if fd < 0 {
                    // Never through a link: it would create or re-permission a file elsewhere.
                    let opened = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
                    guard opened >= 0 else {
                        let code = errno
                        if code == ELOOP {
                            throw ProcessLockError(
                                "the lock file \(path) is a symbolic link, which Coffer does not follow; remove the link (Coffer makes its own lock file there)",
                                cause: StorageCause(errno: code))
                        }
                        throw ProcessLockError(
                            "cannot open the lock file \(path): \(String(cString: strerror(code))); give the owner write and search permission on its folder (chmod u+rwx), or free disk space",
                            cause: StorageCause(errno: code))
                    }
                    fd = opened
                    reopened = true
                }
                var result: Int32
                repeat { result = flock(fd, wait ? LOCK_EX : LOCK_EX | LOCK_NB) } while result != 0 && errno == EINTR
                if result != 0 {
                    let code = errno
                    if !wait, code == EWOULDBLOCK { return nil }
                    close()
                    throw ProcessLockError(
                        "cannot lock \(path): \(String(cString: strerror(code))); the file system may not support locks (keep the store on a local volume)",
                        cause: StorageCause(errno: code))
                }
                // The lock counts only if the file is still the one at the path (not removed or
                // replaced while this process waited, or since it last held it).
                var held = stat()
                var named = stat()
                if fstat(fd, &held) == 0, stat(path, &named) == 0, held.st_ino == named.st_ino, held.st_dev == named.st_dev {
                    // open(2)'s mode passes through the umask; a lock file this process made is
                    // owner-only. (Another owner's file is left alone.)
                    if held.st_uid == getuid(), held.st_mode & 0o077 != 0 { _ = fchmod(fd, 0o600) }
                    return reopened
                }
                unlock()
                close()
            }
            throw ProcessLockError("cannot lock \(path): it was replaced again and again while waiting; stop whatever keeps replacing it")
        }

        /// Lets the lock go; the file stays open for the next ``lock(wait:)``.
        package func unlock() {
            if fd >= 0 { _ = flock(fd, LOCK_UN) }
        }

        /// Closes the file (letting any lock go).
        package mutating func close() {
            guard fd >= 0 else { return }
            #if canImport(Glibc)
            _ = Glibc.close(fd)
            #else
            _ = Darwin.close(fd)
            #endif
            fd = -1
        }
    }

    /// Unlocks and closes; with `removing`, first removes the lock file (still held, so no one
    /// else holds a lock that counts).
    static func release(_ fd: Int32, removing path: String? = nil) {
        if let path { _ = unlink(path) }
        _ = flock(fd, LOCK_UN)
        _ = close(fd)
    }

    static func errnoText() -> String { String(cString: strerror(errno)) }
}

/// Test-only pauses that widen a race window so tests with real processes can prove they hit it.
/// In a debug build, when `COFFER_TEST_PAUSE_AT` lists `point` (comma-separated), the process
/// writes `test-pause: POINT` to standard error and sleeps `COFFER_TEST_PAUSE_MS` milliseconds
/// (default 1000), or until the Unix time in milliseconds `COFFER_TEST_PAUSE_UNTIL`, or until
/// the file `COFFER_TEST_PAUSE_FILE` exists (at most 10 minutes; so that many processes go on at one moment). A release build compiles this to nothing, so it is no part of Coffer's
/// behaviour.
package enum TestPause {
    /// Pauses at `point` when a debug build's environment asks for it (see the type).
    @inline(__always)
    package static func at(_ point: String) {
        #if DEBUG
        let environment = ProcessInfo.processInfo.environment
        guard let points = environment["COFFER_TEST_PAUSE_AT"], points.split(separator: ",").contains(Substring(point)) else {
            return
        }
        var milliseconds = environment["COFFER_TEST_PAUSE_MS"].flatMap { Int($0) } ?? 1000
        if let until = environment["COFFER_TEST_PAUSE_UNTIL"].flatMap({ Int64($0) }) {
            milliseconds = Int(max(0, until - Int64(Date().timeIntervalSince1970 * 1000)))
        }
        FileHandle.standardError.write(Data("test-pause: \(point)\n".utf8))
        if let file = environment["COFFER_TEST_PAUSE_FILE"] {
            // Until the test makes the file (at most 10 minutes, so a failed test leaves no
            // process behind for long): every paused process goes on at once. A cap of 60 s ran
            // out on a loaded machine before the last of three children had even started.
            let deadline = Date().addingTimeInterval(600)
            while !FileManager.default.fileExists(atPath: file), Date() < deadline { usleep(5_000) }
            return
        }
        usleep(useconds_t(max(0, milliseconds)) * 1000)
        #endif
    }
}
