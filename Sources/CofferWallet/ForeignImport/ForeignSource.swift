// What the libindy and Askar readers share: a read-only SQLite connection to the source file,
// the mapping of its errors, and the record each reader hands to the import.

import CofferCrypto
import CofferSQLite
import CofferSync
import Foundation
import GRDB

/// One record read and opened from a foreign store, ready for ``RecordStore/add``.
struct ForeignRecord {
    /// Where it came from, for messages: e.g. `items row 17`.
    let row: Int64
    let type: String
    let id: String
    let value: String
    let tags: WalletTags
    /// Unix milliseconds, or nil for a record that does not expire.
    let expiry: Int64?
}

/// A foreign store opened and unlocked: its connection and how to read its records.
protocol ForeignSource: Sendable {
    /// Its read-only connection.
    var queue: DatabaseQueue { get }
    /// The SQLite companion files beside it before it was opened.
    var companions: ForeignCompanions { get }
    /// "the libindy wallet at PATH", "profile P of the Askar store at PATH".
    var label: String { get }
    /// Inside the import's read transaction: fails when the keys read at open changed since.
    func checkUnchanged(_ db: Database) throws
    /// Rows the import will visit (for progress).
    func rowCount(_ db: Database) throws -> Int
    /// Calls `body` with every record to import, in row order; `visited` after each source row,
    /// with why it was passed over when it was.
    func forEachRecord(_ db: Database, now: Int64, visited: (ForeignSkip?) throws -> Void, _ body: (ForeignRecord) throws -> Void) throws
}

/// Why a source row is not imported.
enum ForeignSkip {
    /// It had expired when the import began.
    case expired
    /// An Askar key-manager entry, passed over on request.
    case keyEntry
}

/// One source row read: a record to import, or one passed over.
enum ForeignRow {
    case record(ForeignRecord)
    case skipped(ForeignSkip)
}

/// The `-wal` and `-shm` files SQLite keeps beside a WAL-mode database. A read-only connection
/// to such a source creates them when they are missing (it needs the shared-memory index to
/// read), and cannot remove them when it closes, as only a connection that may checkpoint does.
struct ForeignCompanions: Sendable {
    let path: String
    let hadWAL: Bool
    let hadSHM: Bool

    /// Notes which companions of the database at `path` exist now, before the import opens it.
    init(path: String) {
        self.path = path
        hadWAL = FileManager.default.fileExists(atPath: path + "-wal")
        hadSHM = FileManager.default.fileExists(atPath: path + "-shm")
    }

    /// After the source's connection is closed: removes the companions the import created, when
    /// none existed before and the WAL is empty (nothing was ever written through it). SQLite
    /// removes them itself, and only when no other connection has the file open: a connection
    /// that may checkpoint is opened and closed (with an empty WAL, closing writes nothing to the
    /// database file). Companions that were there before are never touched.
    func removeCreated() {
        guard !hadWAL, !hadSHM else { return }
        let size = (try? FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int) ?? nil
        guard size == 0 else { return }
        SQLiteFootprint.removeWAL(atPath: path)
    }
}

enum ForeignDatabase {
    /// Most tag rows one record may carry in a source (a damaged or hostile file cannot make the
    /// import hold more than this for one record).
    static let maxTagsPerRecord = 4096
    /// Bytes a sealed field may have beyond its plaintext (nonce and tag).
    static let sealOverhead = 28

    /// The first bytes of a rollback journal that SQLite must play back (a hot journal).
    static let journalMagic = Data([0xd9, 0xd5, 0x05, 0xf9, 0x20, 0xa1, 0x63, 0xd7])

    /// Whether the file at `path` is a regular file (after symbolic links).
    static func isRegularFile(_ path: String) -> Bool {
        (try? URL(fileURLWithPath: path).resolvingSymlinksInPath().resourceValues(forKeys: [.isRegularFileKey]))?.isRegularFile == true
    }

    /// Whether `path` is a rollback journal SQLite would play back: a regular file that starts
    /// with ``journalMagic``.
    static func isHotJournal(_ path: String) -> Bool {
        guard isRegularFile(path), let handle = FileHandle(forReadingAtPath: path) else { return false }
        defer { try? handle.close() }
        return (try? handle.read(upToCount: journalMagic.count)) == journalMagic
    }

    /// Opens `url` read-only (SQLite `SQLITE_OPEN_READONLY`, never `immutable`: another process
    /// may be writing it, and the import reads it in one read transaction, a consistent
    /// snapshot). Nothing is written to the file.
    /// - Throws: ``WalletError/invalidInput(_:)`` when there is no file, it is not a regular file
    ///   or not SQLite; ``WalletError/storage(_:cause:)`` (`EBUSY`) when a rollback journal beside
    ///   it must be played back first.
    static func open(_ url: URL, format: String) throws -> (DatabaseQueue, ForeignCompanions) {
        let path = url.path
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue else {
            throw WalletError.invalidInput("no file at \(path) (give the path of the \(format)'s SQLite file)")
        }
        // A FIFO or device would block the header's read below forever.
        guard isRegularFile(path) else {
            throw WalletError.invalidInput("\(path) is not a regular file (give the path of the \(format)'s SQLite file)")
        }
        // A rollback journal beside the file: the program that wrote it stopped part-way through a
        // write (or is writing now). The file alone is torn; a read-only open cannot roll the
        // journal back, and a copy without it would be imported torn.
        // (A journal kept between transactions, `journal_mode = PERSIST`, has its header zeroed.)
        let journal = path + "-journal"
        if isHotJournal(journal) {
            throw WalletError.storage(
                "\(path) has a rollback journal beside it (\(journal)): the program that wrote it stopped in the middle of a write, or is writing now, and the file without it is incomplete. Close that program, or let SQLite finish the roll-back by opening the file once where it is (for example `sqlite3 \(path) 'PRAGMA integrity_check'`), then import; never copy the file without its journal",
                cause: StorageCause(posix: .EBUSY))
        }
        // The header, read with plain file reads: a file that is not SQLite is refused before
        // SQLite sees it.
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw WalletError.storage("cannot read \(path)")
        }
        let header = (try? handle.read(upToCount: 16)) ?? nil
        try? handle.close()
        guard header == Data("SQLite format 3\0".utf8) else {
            throw WalletError.invalidInput("\(path) is not a \(format): it is not an SQLite database")
        }
        do { return try readOnly(path: path) } catch { throw map(error, label: "the \(format) at \(path)") }
    }

    /// A read-only connection to the SQLite file at `path` (checked by the caller), and the
    /// companion files it may have made; when the open fails, those are removed again and
    /// SQLite's error is thrown.
    static func readOnly(path: String) throws -> (DatabaseQueue, ForeignCompanions) {
        var config = Configuration()
        config.readonly = true
        config.foreignKeysEnabled = false
        config.label = "coffer.import-source"
        config.busyMode = .timeout(5)
        config.prepareDatabase { db in
            // A small page cache, no memory map (its pages would count as resident memory),
            // and nothing from the file's schema may call functions.
            try db.execute(sql: "PRAGMA cache_size = -2048; PRAGMA mmap_size = 0; PRAGMA trusted_schema = OFF; PRAGMA query_only = ON")
        }
        let companions = ForeignCompanions(path: path)
        do {
            return (try DatabaseQueue(path: path, configuration: config), companions)
        } catch {
            companions.removeCreated()
            throw error
        }
    }

    /// Runs `body` with the source just opened; when it fails, closes the connection and removes
    /// the companion files the open created before rethrowing.
    static func closing<T>(_ queue: DatabaseQueue, _ companions: ForeignCompanions, _ body: () throws -> T) throws -> T {
        do { return try body() } catch {
            try? queue.close()
            companions.removeCreated()
            throw error
        }
    }

    /// The tables of `db` (names of real tables only).
    static func tables(_ db: Database) throws -> Set<String> {
        Set(try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table'"))
    }

    /// A source-side SQLite error as a ``WalletError`` naming the source.
    static func map(_ error: Error, label: String) -> Error {
        guard let e = error as? DatabaseError else { return error }
        switch e.resultCode {
        case .SQLITE_NOTADB:
            return WalletError.invalidInput("\(label) is not an SQLite database")
        case .SQLITE_CORRUPT:
            return WalletError.corrupted("\(label): SQLite reports the file damaged (\(e.message ?? "corrupt"))")
        case .SQLITE_BUSY, .SQLITE_LOCKED:
            return WalletError.storage(
                "\(label) stayed locked by another process (libindy holds its wallets exclusively while open): close the app or SDK using it, then retry"
            )
        case .SQLITE_CANTOPEN, .SQLITE_PERM, .SQLITE_AUTH, .SQLITE_READONLY:
            return WalletError.storage(
                "cannot open \(label) for reading (\(e.resultCode)). A WAL-mode database needs its -wal and -shm files beside it, which SQLite creates when they are missing: copy the file to a folder you can write to (the source itself is never written) and import the copy"
            )
        case .SQLITE_INTERRUPT:
            return CancellationError()
        default:
            return WalletError.storage("reading \(label): SQLite error \(e.resultCode) (\(e.message ?? ""))", cause: StorageCause(e))
        }
    }

    /// Runs `body` (which reads the source), mapping SQLite's errors to ones naming the source.
    static func reading<T>(_ label: String, _ body: () throws -> T) throws -> T {
        do { return try body() } catch { throw map(error, label: label) }
    }

    /// Opens a nonce-first ChaCha20-Poly1305 (IETF) box, as both formats seal every field.
    static func open(_ box: Data, key: SecretKey) -> Data? {
        try? AEAD.chacha20Poly1305.open(box, key: key)
    }

    /// SQL selecting column `column` as two result columns: its length, then its bytes only when
    /// that length is at most `limit` (NULL otherwise). SQLite takes `length()` of a stored blob
    /// from the record header without reading the blob, so an over-long field is never loaded
    /// into memory; the bytes come as a BLOB (`CAST`), so a TEXT column keeps every byte,
    /// U+0000 included. `limit` is one of the reader's constants, never input.
    static func capped(_ column: String, _ limit: Int) -> String {
        "length(\(column)), CASE WHEN length(\(column)) <= \(limit) THEN CAST(\(column) AS BLOB) END"
    }

    /// A field selected with ``capped(_:_:)``, read from `row` at `index` (its length) and
    /// `index + 1` (its bytes).
    static func field(_ row: Row, _ index: Int, limit: Int) -> Field {
        guard let length: Int = row[index] else { return .null }
        // A TEXT column's length() counts characters: its bytes are checked again once read
        // (at most four times the limit were read).
        guard length <= limit, let data = bytes(row[index + 1]), data.count <= limit else { return .tooLong }
        return .bytes(data)
    }

    /// A source field as read by ``field(_:_:limit:)``.
    enum Field {
        /// The column is NULL.
        case null
        /// The field is longer than the limit (it was not read).
        case tooLong
        /// The field's bytes.
        case bytes(Data)

        /// The bytes, or nil when NULL or too long.
        var data: Data? {
            if case .bytes(let d) = self { return d }
            return nil
        }
    }

    /// The bytes of a column selected as a BLOB (``capped(_:_:)``), nil otherwise. Text is never
    /// taken here: GRDB reads TEXT as a C string, which ends at the first U+0000.
    static func bytes(_ value: DatabaseValue) -> Data? {
        if case .blob(let d) = value.storage { return d }
        return nil
    }

    /// Groups tag (name, value) pairs: one value stays a string, several become a list.
    static func tags(_ pairs: [(String, String)]) -> WalletTags {
        var order = [ByteString]()
        var values = [ByteString: [String]]()
        for (name, value) in pairs {
            let key = ByteString(name)
            if values[key] == nil { order.append(key) }
            values[key, default: []].append(value)
        }
        var entries = [ByteString: TagValue]()
        for key in order {
            let list = values[key]!
            entries[key] = list.count == 1 ? .string(list[0]) : .list(list)
        }
        return WalletTags(entries: entries)
    }

    /// Overwrites `data` (which held key material) with zeros.
    static func wipe(_ data: inout Data) {
        data.withUnsafeMutableBytes { SecureMemory.wipe($0) }
    }

    /// UTF-8 text of `data`, or nil.
    static func text(_ data: Data) -> String? { String(validUTF8: data) }
}
