// The record write path's statements, bound and stepped through SQLite's C API.

import Foundation
import GRDB
import GRDBSQLite

/// One of GRDB's cached statements, bound and stepped with SQLite's C API.
///
/// A record write runs three to ten small statements. Through GRDB's typed arguments and rows,
/// building arguments, binding them and reading rows back cost more than SQLite's own work
/// there (measured with `perf` on `coffer bench wallet`). This type binds blobs, integers and
/// text directly and reads columns directly, and nothing else.
///
/// What it gives up against `Statement.execute(arguments:)`: GRDB's transaction observers and
/// read-region tracking do not see these statements. Nothing observes a wallet's connection, and
/// these statements run only inside the wallet's own transactions. Bindings are copied
/// (`SQLITE_TRANSIENT`); the statement is reset after every use, so GRDB can hand it out again.
struct DirectStatement {
    /// Kept so the SQLite statement outlives every use of `handle` (GRDB finalizes on deinit).
    private let statement: Statement
    private let handle: SQLiteStatement
    private let connection: SQLiteConnection

    init(_ db: Database, sql: String) throws {
        statement = try db.cachedStatement(sql: sql)
        handle = statement.sqliteStatement
        connection = db.sqliteConnection!
    }

    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

    /// Binds a blob to parameter `index` (1-based).
    func bind(_ index: Int32, _ blob: Data) {
        blob.withUnsafeBytes { bytes in
            // A zero-length blob still needs a non-null pointer, or SQLite binds NULL.
            _ = sqlite3_bind_blob(handle, index, bytes.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32(bytes.count), Self.transient)
        }
    }

    /// Binds an integer, or NULL when nil.
    func bind(_ index: Int32, _ int: Int64?) {
        if let int { _ = sqlite3_bind_int64(handle, index, int) } else { _ = sqlite3_bind_null(handle, index) }
    }

    /// Binds UTF-8 text.
    func bind(_ index: Int32, text: String) {
        var text = text
        text.withUTF8 { utf8 in
            _ = sqlite3_bind_text(
                handle, index,
                UnsafeRawPointer(utf8.baseAddress ?? UnsafePointer(bitPattern: 1)!)
                    .assumingMemoryBound(to: CChar.self), Int32(utf8.count), Self.transient)
        }
    }

    /// Binds a tag row's value: a blind index (blob) or a plaintext tag value (text).
    func bind(_ index: Int32, _ value: DatabaseValue) {
        switch value.storage {
        case .blob(let data): bind(index, data)
        case .string(let text): bind(index, text: text)
        case .int64(let int): bind(index, int)
        case .double(let double): _ = sqlite3_bind_double(handle, index, double)
        case .null: _ = sqlite3_bind_null(handle, index)
        }
    }

    /// Runs the statement to completion (its rows, if any, are not read).
    /// - Throws: `DatabaseError` with SQLite's extended result code and message.
    func execute() throws {
        defer { sqlite3_reset(handle) }
        while true {
            switch sqlite3_step(handle) {
            case SQLITE_DONE: return
            case SQLITE_ROW: continue
            case let code: throw failure(code)
            }
        }
    }

    /// Steps to the first row and hands it to `read`; nil when there is none.
    func fetchOne<R>(_ read: (Columns) throws -> R) throws -> R? {
        defer { sqlite3_reset(handle) }
        switch sqlite3_step(handle) {
        case SQLITE_ROW: return try read(Columns(handle: handle))
        case SQLITE_DONE: return nil
        case let code: throw failure(code)
        }
    }

    /// Steps through every row, handing each to `body`.
    func forEach(_ body: (Columns) throws -> Void) throws {
        defer { sqlite3_reset(handle) }
        while true {
            switch sqlite3_step(handle) {
            case SQLITE_ROW: try body(Columns(handle: handle))
            case SQLITE_DONE: return
            case let code: throw failure(code)
            }
        }
    }

    private func failure(_ code: Int32) -> DatabaseError {
        DatabaseError(resultCode: ResultCode(rawValue: code), message: String(cString: sqlite3_errmsg(connection)), sql: statement.sql)
    }

    /// The current row's columns (0-based), valid only inside the closure that receives them.
    struct Columns {
        let handle: SQLiteStatement

        func int64(_ column: Int32) -> Int64 { sqlite3_column_int64(handle, column) }

        func isNull(_ column: Int32) -> Bool { sqlite3_column_type(handle, column) == SQLITE_NULL }

        func optionalInt64(_ column: Int32) -> Int64? { isNull(column) ? nil : int64(column) }

        /// The column's bytes as a blob (text columns give their UTF-8 bytes).
        func data(_ column: Int32) -> Data {
            // sqlite3_column_blob before sqlite3_column_bytes, as SQLite's documentation asks.
            guard let base = sqlite3_column_blob(handle, column) else { return Data() }
            return Data(bytes: base, count: Int(sqlite3_column_bytes(handle, column)))
        }

        /// The column as a database value of its stored type (blob, text, integer, real, NULL).
        func value(_ column: Int32) -> DatabaseValue {
            switch sqlite3_column_type(handle, column) {
            case SQLITE_BLOB: return data(column).databaseValue
            case SQLITE_TEXT:
                guard let text = sqlite3_column_text(handle, column) else { return "".databaseValue }
                let count = Int(sqlite3_column_bytes(handle, column))
                return String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self).databaseValue
            case SQLITE_INTEGER: return sqlite3_column_int64(handle, column).databaseValue
            case SQLITE_FLOAT: return sqlite3_column_double(handle, column).databaseValue
            default: return .null
            }
        }
    }
}

extension Statement {
    /// Sets positional `arguments`, binding every text byte for byte. GRDB binds a `String` as a
    /// C string, so text holding U+0000 would reach SQLite cut at its first NUL (a query for
    /// `"a\u{0}b"` would look for `"a"`); such text is bound again here with its UTF-8 length.
    /// Run the statement afterwards without arguments (`Int.fetchOne(statement)`), which keeps
    /// these bindings.
    func setExactArguments(_ arguments: [DatabaseValue]) {
        setUncheckedArguments(StatementArguments(arguments))
        for (i, value) in arguments.enumerated() {
            guard case .string(var text) = value.storage, text.utf8.contains(0) else { continue }
            text.withUTF8 { utf8 in
                _ = sqlite3_bind_text(
                    sqliteStatement, Int32(i + 1),
                    UnsafeRawPointer(utf8.baseAddress ?? UnsafePointer(bitPattern: 1)!).assumingMemoryBound(to: CChar.self),
                    Int32(utf8.count), unsafeBitCast(-1, to: sqlite3_destructor_type.self))
            }
        }
    }
}
