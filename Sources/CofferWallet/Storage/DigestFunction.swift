// `coffer_digest_step`, the SQL function the records' version digest triggers call, registered
// through SQLite's C API on the wallet's writer: one call per row change, reading the blobs in
// place and hashing into stack memory (through GRDB's typed functions, two calls per row with
// their copies cost a third of a batched write).
import CofferCrypto
import Foundation
import GRDB
import GRDBSQLite

enum DigestFunction {
    /// The SQL name: `coffer_digest_step(digest, type, name, value)` is `digest` XOR the row's
    /// keyed digest (``WalletKeys/rowDigest(type:idBlind:sealed:)``), a 32-byte blob.
    static let name = "coffer_digest_step"

    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

    /// Registers the function on `db`'s connection, keyed by `keys` (retained until SQLite drops
    /// the function, when the connection closes or it is registered again).
    static func register(on db: Database, keys: WalletKeys) {
        guard let connection = db.sqliteConnection else { return }
        let box = Unmanaged.passRetained(keys).toOpaque()
        sqlite3_create_function_v2(connection, name, 4, SQLITE_UTF8 | SQLITE_DETERMINISTIC, box, step, nil, nil) { pointer in
            if let pointer { Unmanaged<WalletKeys>.fromOpaque(pointer).release() }
        }
    }

    private static let step: @convention(c) (OpaquePointer?, Int32, UnsafeMutablePointer<OpaquePointer?>?) -> Void = {
        context, count, values in
        guard let context, let values, count == 4, let user = sqlite3_user_data(context) else { return }
        let keys = Unmanaged<WalletKeys>.fromOpaque(user).takeUnretainedValue()
        let digest = values[0]
        let type = values[1]
        let name = values[2]
        let value = values[3]
        guard sqlite3_value_type(digest) == SQLITE_BLOB, sqlite3_value_bytes(digest) == Int32(RowDigest.byteCount),
            sqlite3_value_type(type) == SQLITE_INTEGER, sqlite3_value_type(name) == SQLITE_BLOB,
            sqlite3_value_type(value) == SQLITE_BLOB
        else {
            sqlite3_result_error(context, "the records' version digest or a record row is malformed", -1)
            return
        }
        let nameBytes = UnsafeRawBufferPointer(start: sqlite3_value_blob(name), count: Int(sqlite3_value_bytes(name)))
        let valueBytes = UnsafeRawBufferPointer(start: sqlite3_value_blob(value), count: Int(sqlite3_value_bytes(value)))
        let old = UnsafeRawBufferPointer(start: sqlite3_value_blob(digest), count: RowDigest.byteCount)
        withUnsafeTemporaryAllocation(byteCount: RowDigest.byteCount, alignment: 8) { out in
            keys.rowDigest(type: sqlite3_value_int64(type), idBlind: nameBytes, sealed: valueBytes) { row in
                for i in 0..<RowDigest.byteCount { out[i] = old[i] ^ row[i] }
            }
            sqlite3_result_blob(context, out.baseAddress, Int32(RowDigest.byteCount), transient)
        }
    }
}
