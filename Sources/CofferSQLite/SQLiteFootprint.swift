// Keeping an SQLite store small on disk: a bounded WAL, free pages given back, the WAL removed
// when the last connection closes.

import Foundation
import GRDB
import GRDBSQLite

/// The footprint rules every SQLite file Coffer writes in WAL mode follows (wallet, app
/// database).
///
/// - `journal_size_limit` on every writable connection: when SQLite starts the WAL over, it
///   truncates a larger file to this size.
/// - After a checkpoint that copied the whole WAL, a WAL larger than the limit is truncated at
///   once (without waiting for readers; see ``Checkpointer``).
/// - `auto_vacuum = INCREMENTAL`, set when a file is created (older files are converted once,
///   with one `VACUUM`): free pages can be given back with `incremental_vacuum`, which runs after
///   large deletes and in ``compact(_:)``.
/// - Closing a store removes its WAL and shared-memory files when no other connection has the
///   file open (``removeWAL(atPath:)``): GRDB closes a pool's writer before its read-only readers,
///   and a read-only connection cannot checkpoint, so the last one leaves the WAL behind.
package enum SQLiteFootprint {
    /// Bytes the WAL may keep between writes.
    package static let walLimitBytes = 4 << 20
    /// Free pages above which a write is followed by an incremental vacuum (16 MiB of 4 KiB pages).
    package static let freePagesToReclaim = 4_096

    /// Sets the WAL size limit on a writable connection.
    package static func limitWAL(_ db: Database) throws {
        try db.execute(sql: "PRAGMA journal_size_limit = \(walLimitBytes)")
    }

    /// Whether the file gives free pages back incrementally (`auto_vacuum = INCREMENTAL`).
    package static func isIncremental(_ db: Database) throws -> Bool {
        try Int.fetchOne(db, sql: "PRAGMA auto_vacuum") == 2
    }

    /// Makes a new, empty file incremental: must run before its first table is created.
    /// Nothing for a file that already is: setting the pragma writes page 1 in a transaction of
    /// its own even when the value does not change, which would cost every open a commit (and
    /// its fsyncs).
    package static func makeIncremental(_ db: Database) throws {
        guard try !isIncremental(db) else { return }
        try db.execute(sql: "PRAGMA auto_vacuum = INCREMENTAL")
    }

    /// Converts an existing file to incremental vacuum with one `VACUUM` (rewrites the whole
    /// file once; outside any transaction). Nothing when it already is.
    package static func convertToIncremental(_ db: Database) throws {
        guard try !isIncremental(db) else { return }
        try db.execute(sql: "PRAGMA auto_vacuum = INCREMENTAL")
        try withTempStoreOnDisk(db) { try db.execute(sql: "VACUUM") }
    }

    /// Runs `body` with the connection's temporary store on disk (`temp_store = FILE`), then
    /// puts back the setting it had. For statements that change most of a file: `VACUUM` builds
    /// its copy in a temporary database, and a statement that rewrites a whole table keeps the
    /// old content of every page it changes in its statement journal; with `temp_store =
    /// MEMORY` (the wallet's writer) SQLite would hold either in memory. Outside any transaction.
    package static func withTempStoreOnDisk<T>(_ db: Database, _ body: () throws -> T) throws -> T {
        let setting = try Int.fetchOne(db, sql: "PRAGMA temp_store") ?? 0
        guard setting == 2 else { return try body() }
        try db.execute(sql: "PRAGMA temp_store = FILE")
        defer { try? db.execute(sql: "PRAGMA temp_store = MEMORY") }
        return try body()
    }

    /// Gives free pages back when there are more than ``freePagesToReclaim`` (best effort;
    /// outside any transaction).
    package static func reclaimFreePages(_ db: Database) {
        guard let free = try? Int.fetchOne(db, sql: "PRAGMA freelist_count"), free > freePagesToReclaim,
            (try? isIncremental(db)) == true
        else { return }
        try? db.execute(sql: "PRAGMA incremental_vacuum")
    }

    /// A passive checkpoint; when it copied the whole WAL and the WAL file is larger than the
    /// limit, a truncating one that does not wait for readers (outside any transaction).
    package static func checkpointAndTrim(_ db: Database) {
        guard let connection = db.sqliteConnection else { return }
        var logFrames: Int32 = 0
        var copied: Int32 = 0
        guard sqlite3_wal_checkpoint_v2(connection, nil, SQLITE_CHECKPOINT_PASSIVE, &logFrames, &copied) == SQLITE_OK,
            logFrames == copied, logFrames > 0
        else { return }
        let pageSize = (try? Int.fetchOne(db, sql: "PRAGMA page_size")) ?? 4096
        guard Int(logFrames) * (pageSize + 24) > walLimitBytes else { return }
        // No busy wait: a reader that still uses the WAL makes this return SQLITE_BUSY at once.
        // Only for connections that wait with a plain timeout, which is put back afterwards (a
        // custom busy handler could not be).
        guard case .timeout(let seconds) = db.configuration.busyMode else { return }
        sqlite3_busy_timeout(connection, 0)
        _ = sqlite3_wal_checkpoint_v2(connection, nil, SQLITE_CHECKPOINT_TRUNCATE, nil, nil)
        sqlite3_busy_timeout(connection, Int32(seconds * 1000))
    }

    /// Gives every free page back to the file system, then checkpoints and truncates the WAL.
    /// Returns the file's bytes (main file plus WAL) before and after. Outside any transaction.
    package static func compact(_ db: Database, path: String) throws -> (before: Int, after: Int) {
        let before = bytesOnDisk(path)
        if try !isIncremental(db) {
            try convertToIncremental(db)
        } else {
            try db.execute(sql: "PRAGMA incremental_vacuum")
        }
        _ = try db.checkpoint(.truncate)
        return (before, bytesOnDisk(path))
    }

    /// Before a pool opens a file whose WAL is gone (``removeWAL(atPath:)`` removes it at
    /// every close), puts an owner-only, 32-byte, all-zero `-wal` in its place, so that opening
    /// costs no write. Why: GRDB's `DatabasePool` makes sure a non-empty WAL exists by creating
    /// and dropping a table when it finds none, a transaction of its own with two `fdatasync`s
    /// (the new WAL, its folder) that measured 1.6 ms of a 3.5 ms wallet open here, more on a
    /// phone's flash. SQLite reads frames only from a WAL longer than its 32-byte header
    /// (`walIndexRecover`), so a file of exactly 32 bytes holds no frames, whatever they are:
    /// readers see the database file alone, and the first commit writes a real header over it.
    /// Never replaces an existing WAL (`O_EXCL`); best effort: on any failure GRDB's own write
    /// runs as before. Not for pools whose users take WAL snapshots (GRDB's concurrent
    /// `ValueObservation`), which need a WAL that was written once.
    package static func placeWALPlaceholder(forDatabaseAt path: String) {
        let fd = open(path + "-wal", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { return }
        defer { close(fd) }
        let header = [UInt8](repeating: 0, count: 32)
        _ = fchmod(fd, 0o600)
        if header.withUnsafeBytes({ write(fd, $0.baseAddress!, $0.count) }) != 32 { _ = ftruncate(fd, 0) }
    }

    /// Whether the database file at `path` says it is in WAL mode (header bytes 18 and 19 are 2).
    /// False for a missing, empty or short file (one another process has only begun to make) and
    /// for anything but a regular file (read without following a link and without blocking).
    package static func isInWALMode(atPath path: String) -> Bool {
        let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & mode_t(S_IFMT) == mode_t(S_IFREG) else { return false }
        var header = [UInt8](repeating: 0, count: 20)
        let read = header.withUnsafeMutableBytes { pread(fd, $0.baseAddress!, 20, 0) }
        return read == 20 && header[18] == 2 && header[19] == 2
    }

    /// Bytes of the database file and its WAL.
    package static func bytesOnDisk(_ path: String) -> Int {
        [path, path + "-wal"].reduce(0) { total, p in
            total + ((try? FileManager.default.attributesOfItem(atPath: p)[.size] as? Int) ?? 0)
        }
    }

    /// After a pool has closed: opens the file once more, read-write, and closes it, so that
    /// SQLite, finding this the last connection, checkpoints the WAL and removes it and the
    /// shared-memory file. When another connection (another process) still has the file open,
    /// the files stay, as they must. Best effort: errors are ignored.
    package static func removeWAL(atPath path: String) {
        guard FileManager.default.fileExists(atPath: path + "-wal") else { return }
        var connection: OpaquePointer?
        if sqlite3_open_v2(path, &connection, SQLITE_OPEN_READWRITE, nil) == SQLITE_OK, let connection {
            sqlite3_busy_timeout(connection, 1_000)
            // Reading the schema makes SQLite open the WAL, so that closing can clean it up.
            sqlite3_exec(connection, "SELECT count(*) FROM sqlite_master", nil, nil, nil)
        }
        sqlite3_close(connection)
    }
}
