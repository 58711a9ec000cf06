// What a module's `storage` error keeps of the failure underneath it: the system's errno or
// SQLite's result code, so a caller can tell a full disk from a refused permission without
// reading the message (whose text stays what it was).

import Foundation

/// The underlying cause of a storage failure: the operating system's error number (`errno`)
/// and/or SQLite's extended result code. Every Coffer module's `storage` error carries one when
/// the failure came from the file system or SQLite (`case storage(String, cause: StorageCause?)`);
/// switch on ``posix`` / ``sqliteCode``, or ask ``isNoSpace``, ``isPermissionDenied`` and
/// ``isNotFound``.
public struct StorageCause: Sendable, Hashable, CustomStringConvertible {
    /// The operating system's error (`ENOSPC`, `EACCES`, …), when the failure came from a system call.
    public let posix: POSIXErrorCode?
    /// SQLite's extended result code (`SQLITE_FULL` = 13, `SQLITE_READONLY` = 8, …), when the
    /// failure came from SQLite.
    public let sqliteCode: Int32?

    /// A cause with the given codes.
    public init(posix: POSIXErrorCode? = nil, sqliteCode: Int32? = nil) {
        self.posix = posix
        self.sqliteCode = sqliteCode
    }

    /// The cause of an `errno` value; nil for 0 or a number the platform does not name.
    package init?(errno code: Int32) {
        guard code != 0, let posix = POSIXErrorCode(rawValue: code) else { return nil }
        self.init(posix: posix)
    }

    /// The cause behind `error`, when it names one: a Coffer error that kept it, a `POSIXError`,
    /// an `NSError` of the POSIX domain (or one wrapping it, as `FileManager`'s do), or a GRDB
    /// database error (by its domain and extended code); nil otherwise.
    package init?(_ error: any Error) {
        if let carrier = error as? any StorageCauseCarrier {
            guard let cause = carrier.storageCause else { return nil }
            self = cause
            return
        }
        if let posix = error as? POSIXError {
            self.init(posix: posix.code)
            return
        }
        var nsError = error as NSError
        for _ in 0..<4 {
            if nsError.domain == NSPOSIXErrorDomain, let posix = POSIXErrorCode(rawValue: Int32(nsError.code)) {
                self.init(posix: posix)
                return
            }
            if nsError.domain == "GRDB.DatabaseError" {
                self.init(sqliteCode: Int32(truncatingIfNeeded: nsError.code))
                return
            }
            guard let underlying = nsError.userInfo[NSUnderlyingErrorKey] as? NSError else { return nil }
            nsError = underlying
        }
        return nil
    }

    /// SQLite's primary result code (the low byte of the extended one).
    public var sqlitePrimaryCode: Int32? { sqliteCode.map { $0 & 0xFF } }

    /// The disk (or the user's quota) is full: `ENOSPC`, `EDQUOT`, `SQLITE_FULL`. Free space, then retry.
    public var isNoSpace: Bool {
        posix == .ENOSPC || posix == .EDQUOT || sqlitePrimaryCode == 13
    }

    /// The system refused access: `EACCES`, `EPERM`, `EROFS`, `SQLITE_PERM`, `SQLITE_READONLY`,
    /// `SQLITE_AUTH`. Give the owner its permissions back (or move the store off a read-only volume).
    public var isPermissionDenied: Bool {
        posix == .EACCES || posix == .EPERM || posix == .EROFS || [3, 8, 23].contains(sqlitePrimaryCode ?? 0)
    }

    /// The file is damaged or is not a database: `SQLITE_CORRUPT`, `SQLITE_NOTADB`. Nothing to
    /// retry: restore a backup, or remove the file to start over.
    public var isDamaged: Bool { [11, 26].contains(sqlitePrimaryCode ?? 0) }

    /// Something on the path is missing: `ENOENT`, `ENOTDIR`.
    public var isNotFound: Bool { posix == .ENOENT || posix == .ENOTDIR }

    /// The codes, e.g. `errno 28 (No space left on device)` or `SQLite 13`.
    public var description: String {
        var parts: [String] = []
        if let posix { parts.append("errno \(posix.rawValue) (\(String(cString: strerror(posix.rawValue))))") }
        if let sqliteCode { parts.append("SQLite \(sqliteCode)") }
        return parts.joined(separator: ", ")
    }
}

/// An error of the package's lower layers that keeps the cause of a file or lock failure, so the
/// module error made from it keeps it too (``StorageCause/init(_:)``).
package protocol StorageCauseCarrier: Error {
    /// The cause, when the failure came from a system call.
    var storageCause: StorageCause? { get }
}
