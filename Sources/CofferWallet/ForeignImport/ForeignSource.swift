// What the libindy and Askar readers share: a read-only SQLite connection to the source file,
// the mapping of its errors, and the record each reader hands to the import.
import CofferCrypto
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

enum ForeignDatabase {
    /// Most tag rows one record may carry in a source (a damaged or hostile file cannot make the
    /// import hold more than this for one record).
    static let maxTagsPerRecord = 4096
    /// Bytes a sealed field may have beyond its plaintext (nonce and tag).
    static let sealOverhead = 28

    /// Opens `url` read-only (SQLite `SQLITE_OPEN_READONLY`, never `immutable`: another process
    /// may be writing it, and the import reads it in one read transaction, a consistent
    /// snapshot). Nothing is written to the file.
    /// - Throws: ``WalletError/invalidInput(_:)`` when there is no file or it is not SQLite.
    static func open(_ url: URL, format: String) throws -> DatabaseQueue {
        let path = url.path
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue else {
            throw WalletError.invalidInput("no file at \(path) (give the path of the \(format)'s SQLite file)")
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
        do {
            return try DatabaseQueue(path: path, configuration: config)
        } catch {
            throw map(error, label: "the \(format) at \(path)")
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
        case .SQLITE_CANTOPEN, .SQLITE_PERM, .SQLITE_AUTH:
            return WalletError.storage("cannot open \(label) for reading (\(e.resultCode))")
        case .SQLITE_INTERRUPT:
            return CancellationError()
        default:
            return WalletError.storage("reading \(label): SQLite error \(e.resultCode) (\(e.message ?? ""))")
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

    /// Text of a column read as bytes (a TEXT column gives its UTF-8), nil for NULL.
    static func bytes(_ value: DatabaseValue) -> Data? {
        switch value.storage {
        case .blob(let d): return d
        case .string(let s): return Data(s.utf8)
        case .null: return nil
        case .int64, .double: return nil
        }
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

    /// UTF-8 text of `data`, or nil.
    static func text(_ data: Data) -> String? { String(validUTF8: data) }
}
