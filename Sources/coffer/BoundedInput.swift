// Reading what the command line was pointed at (a file, a pipe, standard input) with a bound, so that
// `/dev/zero` or a huge file is refused by name rather than read until memory runs out.

import Coffer
import CofferFileModes
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A bounded reader for a command's input: at a path, a regular file or a pipe (a shell's process
/// substitution, `/dev/stdin` fed by a pipe); on standard input, whatever the shell connected.
/// A folder, a device or a socket at a path is refused by name; a regular file over the limit is
/// refused before it is read, a pipe or standard input once it has delivered more.
struct BoundedInput {
    /// The most bytes accepted.
    let limit: Int
    /// The limit in messages ("the cache's limit", "the limit for a value").
    let limitName: String
    /// What a path may hold besides a pipe, in messages ("an image file", "a text file").
    let fileKind: String

    /// The bytes at `path`. Errors say "cannot read PATH: …" after `prefix`.
    func bytes(atPath path: String, prefix: String = "") throws -> Data {
        func failure(_ what: String) -> WalletError { .invalidInput("\(prefix)cannot read \(path): \(what)") }
        let check = { (info: stat) throws in
            switch info.st_mode & mode_t(S_IFMT) {
            case mode_t(S_IFREG): try self.checkSize(info, failure)
            case mode_t(S_IFIFO): break
            default: throw failure("it is \(OwnerOnlyFiles.describe(info.st_mode)), not \(fileKind) or a pipe")
            }
        }
        // Checked before opening (opening a device or socket could wait or fail unclearly), and
        // again on what was opened, in case the path was replaced in between.
        var info = stat()
        guard stat(path, &info) == 0 else { throw failure(String(cString: strerror(errno))) }
        try check(info)
        var fd: Int32
        repeat { fd = open(path, O_RDONLY | O_CLOEXEC) } while fd < 0 && errno == EINTR
        guard fd >= 0 else { throw failure(String(cString: strerror(errno))) }
        defer { close(fd) }
        guard fstat(fd, &info) == 0 else { throw failure(String(cString: strerror(errno))) }
        try check(info)
        return try drain(fd, failure)
    }

    /// The bytes of standard input, whatever it is (a terminal, a pipe, a file, `/dev/null`).
    /// Errors say "cannot read standard input: …" after `prefix`.
    func bytesOfStandardInput(prefix: String = "") throws -> Data {
        func failure(_ what: String) -> WalletError { .invalidInput("\(prefix)cannot read standard input: \(what)") }
        var info = stat()
        if fstat(STDIN_FILENO, &info) == 0, info.st_mode & mode_t(S_IFMT) == mode_t(S_IFREG) {
            try checkSize(info, failure)
        }
        return try drain(STDIN_FILENO, failure)
    }

    private func checkSize(_ info: stat, _ failure: (String) -> WalletError) throws {
        guard info.st_size <= off_t(limit) else {
            throw failure("it is \(info.st_size) bytes, more than \(limitName) of \(limit) bytes")
        }
    }

    /// Reads `fd` to its end, refusing more than `limit` bytes.
    private func drain(_ fd: Int32, _ failure: (String) -> WalletError) throws -> Data {
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw failure(String(cString: strerror(errno)))
            }
            if count == 0 { return data }
            data.append(contentsOf: buffer[0..<count])
            guard data.count <= limit else { throw failure("it gave more than \(limitName) of \(limit) bytes") }
        }
    }
}
