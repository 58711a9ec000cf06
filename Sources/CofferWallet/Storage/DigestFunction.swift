// The SQL functions the records' version digest triggers call, registered through SQLite's C API
// on the wallet's writer: one call per row change, reading the blobs in place and hashing into
// stack memory (through GRDB's typed functions, two calls per row with their copies cost a third
// of a batched write).

import CofferCrypto
import CofferSync
import Foundation
import GRDB
import GRDBSQLite

/// The records' version digest of format 4, as stored in `coffer_digest`: the XOR of every row's
/// keyed digest (the accumulator), a counter of the changes folded in, and a MAC of both under a
/// key derived from the wallet key. Without the key nobody can produce a state that verifies, so
/// an update's delta read from two snapshots cannot be replayed onto a later state.
enum DigestState {
    /// Accumulator (32) + counter (8, little-endian) + MAC (32).
    static let byteCount = 72
    /// The accumulator's bytes.
    static let accumulatorCount = 32

    /// The stored state for `accumulator` and `counter`: both, then their MAC.
    static func seal(_ accumulator: [UInt8], counter: UInt64, keys: WalletKeys) -> Data {
        precondition(accumulator.count == accumulatorCount, "the accumulator is 32 bytes")
        var out = [UInt8](repeating: 0, count: byteCount)
        out.withUnsafeMutableBytes { o in
            o.copyBytes(from: accumulator)
            var bits = counter.littleEndian
            withUnsafeBytes(of: &bits) { (o.baseAddress! + 32).copyMemory(from: $0.baseAddress!, byteCount: 8) }
            keys.integrityMAC(domain: IntegrityDomain.digestState, UnsafeRawBufferPointer(rebasing: o[0..<40])) { mac in
                (o.baseAddress! + 40).copyMemory(from: mac.baseAddress!, byteCount: 32)
            }
        }
        return Data(out)
    }

    /// The accumulator and counter of a stored state whose MAC verifies under `keys`, or nil.
    static func open(_ state: Data, keys: WalletKeys) -> (accumulator: [UInt8], counter: UInt64)? {
        guard state.count == byteCount else { return nil }
        return withBytes(state) { s in
            guard verifies(s, keys: keys) else { return nil }
            var bits: UInt64 = 0
            withUnsafeMutableBytes(of: &bits) { $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: s[32..<40])) }
            return (Array(s[0..<32]), UInt64(littleEndian: bits))
        }
    }

    /// Whether the 72 bytes of `state` carry a MAC that verifies under `keys`.
    static func verifies(_ state: UnsafeRawBufferPointer, keys: WalletKeys) -> Bool {
        guard state.count == byteCount else { return false }
        return keys.integrityMAC(domain: IntegrityDomain.digestState, UnsafeRawBufferPointer(rebasing: state[0..<40])) { mac in
            constantTimeEqual(mac, UnsafeRawBufferPointer(rebasing: state[40..<72]))
        }
    }

    /// Whether `a` and `b` hold the same bytes, in time that does not depend on where they differ.
    static func constantTimeEqual(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for i in 0..<a.count { difference |= a[i] ^ b[i] }
        return difference == 0
    }

    /// The accumulator of every row in `items`, computed afresh under `keys`.
    static func accumulate(_ db: Database, keys: WalletKeys) throws -> [UInt8] {
        var accumulator = [UInt8](repeating: 0, count: accumulatorCount)
        let rows = try Row.fetchCursor(db, sql: "SELECT id, type, name, value, expiry FROM \(keys.tables.items)")
        while let row = try rows.next() {
            guard let type = Int64.fromDatabaseValue(row[1]), let name = Data.fromDatabaseValue(row[2]),
                let value = Data.fromDatabaseValue(row[3])
            else {
                throw WalletError.corrupted(
                    "row \(row[0] as DatabaseValue) of the wallet has columns of the wrong kind; run the wallet check")
            }
            let digest = keys.rowDigestV4(rowid: row[0], type: type, expiry: row[4], idBlind: name, sealed: value)
            for i in 0..<accumulatorCount { accumulator[i] ^= digest[i] }
        }
        return accumulator
    }

    /// The verified stored state, or `corrupted` naming what is wrong.
    static func read(_ db: Database, keys: WalletKeys) throws -> (accumulator: [UInt8], counter: UInt64) {
        guard let stored = try Data.fetchOne(db, sql: "SELECT value FROM \(keys.tables.digest) WHERE id = 1") else {
            throw WalletError.corrupted(
                "the records' version digest is missing: the file was changed without the wallet key (restore a backup)")
        }
        guard let state = open(stored, keys: keys) else {
            throw WalletError.corrupted(
                "the records' version digest does not verify under the wallet key: the file was changed without the key (restore a backup)"
            )
        }
        return state
    }
}

/// The labels that tell the MACs of the file's integrity state apart.
enum IntegrityDomain {
    /// The records' version digest's state.
    static let digestState: UInt8 = 1
    /// The schema and format record (`coffer_meta` row `integrity`).
    static let schema: UInt8 = 2
}

enum DigestFunction {
    /// The SQL name: `coffer_digest_v4(state, rowid, type, name, value, expiry)` is `state` with
    /// that row's keyed digest (``WalletKeys/rowDigestV4(rowid:type:expiry:idBlind:sealed:_:)``)
    /// folded in, its counter advanced and its MAC renewed (72 bytes); with eleven arguments (an
    /// update's old row, then its new one) both rows are folded in. A state whose MAC does not
    /// verify is refused with `SQLITE_CORRUPT`: a write never builds on a tampered digest.
    static let name = "coffer_digest_v4"
    /// The format-3 function (`coffer_digest_step(digest, type, name, value)`: `digest` XOR the
    /// row's keyed digest), kept for the migration that creates format 3 on the way to 4.
    static let legacyName = "coffer_digest_step"

    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

    /// The keys and the last state this connection's function produced (a state equal to it was
    /// made here under the key, so its MAC need not be checked again).
    final class Context: Sendable {
        let keys: WalletKeys
        let last = Locked(LastState())
        init(keys: WalletKeys) { self.keys = keys }
    }

    /// The 72 bytes of a state, held inline (no allocation per call).
    struct LastState {
        var bytes: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0, 0, 0, 0)
        var isSet = false

        func equals(_ state: UnsafeRawBufferPointer) -> Bool {
            guard isSet else { return false }
            var copy = bytes
            return withUnsafeBytes(of: &copy) { memcmp($0.baseAddress!, state.baseAddress!, DigestState.byteCount) == 0 }
        }

        mutating func set(_ state: UnsafeRawBufferPointer) {
            withUnsafeMutableBytes(of: &bytes) { $0.copyMemory(from: state) }
            isSet = true
        }
    }

    /// Registers both functions on `db`'s connection, keyed by `keys` (retained until SQLite
    /// drops the functions, when the connection closes or they are registered again).
    /// - Throws: ``WalletError/storage(_:cause:)`` when SQLite refuses one.
    static func register(on db: Database, keys: WalletKeys) throws {
        guard let connection = db.sqliteConnection else { throw WalletError.storage("the wallet's connection is closed") }
        let box = Unmanaged.passRetained(Context(keys: keys)).toOpaque()
        let rc = sqlite3_create_function_v2(connection, name, -1, SQLITE_UTF8 | SQLITE_DETERMINISTIC, box, step, nil, nil) { pointer in
            if let pointer { Unmanaged<Context>.fromOpaque(pointer).release() }
        }
        guard rc == SQLITE_OK else {
            throw WalletError.storage("SQLite refused the records' version digest function (error \(rc))")
        }
        let legacyBox = Unmanaged.passRetained(keys).toOpaque()
        let legacyRC = sqlite3_create_function_v2(
            connection, legacyName, 4, SQLITE_UTF8 | SQLITE_DETERMINISTIC, legacyBox, legacyStep, nil, nil
        ) { pointer in
            if let pointer { Unmanaged<WalletKeys>.fromOpaque(pointer).release() }
        }
        guard legacyRC == SQLITE_OK else {
            throw WalletError.storage("SQLite refused the format-3 digest function (error \(legacyRC))")
        }
    }

    private static let step: @convention(c) (OpaquePointer?, Int32, UnsafeMutablePointer<OpaquePointer?>?) -> Void = {
        context, count, values in
        guard let context, let values, count == 6 || count == 11, let user = sqlite3_user_data(context) else {
            if let context { sqlite3_result_error(context, "coffer_digest_v4 takes a state and one or two rows", -1) }
            return
        }
        let ctx = Unmanaged<Context>.fromOpaque(user).takeUnretainedValue()
        let keys = ctx.keys
        let stateValue = values[0]
        guard sqlite3_value_type(stateValue) == SQLITE_BLOB, sqlite3_value_bytes(stateValue) == Int32(DigestState.byteCount) else {
            corrupt(context)
            return
        }
        let state = UnsafeRawBufferPointer(start: sqlite3_value_blob(stateValue), count: DigestState.byteCount)
        let known = ctx.last.withLock { $0.equals(state) }
        guard known || DigestState.verifies(state, keys: keys) else {
            corrupt(context)
            return
        }
        withUnsafeTemporaryAllocation(byteCount: DigestState.byteCount, alignment: 8) { out in
            out.copyMemory(from: UnsafeRawBufferPointer(rebasing: state[0..<40]))
            var row = 1
            while row < Int(count) {
                let rowid = values[row]
                let type = values[row + 1]
                let name = values[row + 2]
                let value = values[row + 3]
                let expiry = values[row + 4]
                guard sqlite3_value_type(rowid) == SQLITE_INTEGER, sqlite3_value_type(type) == SQLITE_INTEGER,
                    sqlite3_value_type(name) == SQLITE_BLOB, sqlite3_value_type(value) == SQLITE_BLOB,
                    sqlite3_value_type(expiry) == SQLITE_INTEGER || sqlite3_value_type(expiry) == SQLITE_NULL
                else {
                    sqlite3_result_error(context, "a record row is malformed (the records' version digest cannot take it)", -1)
                    return
                }
                let nameBytes = UnsafeRawBufferPointer(start: sqlite3_value_blob(name), count: Int(sqlite3_value_bytes(name)))
                let valueBytes = UnsafeRawBufferPointer(start: sqlite3_value_blob(value), count: Int(sqlite3_value_bytes(value)))
                let expiryValue: Int64? = sqlite3_value_type(expiry) == SQLITE_NULL ? nil : sqlite3_value_int64(expiry)
                keys.rowDigestV4(
                    rowid: sqlite3_value_int64(rowid), type: sqlite3_value_int64(type), expiry: expiryValue,
                    idBlind: nameBytes, sealed: valueBytes
                ) { digest in
                    for i in 0..<DigestState.accumulatorCount { out[i] ^= digest[i] }
                }
                row += 5
            }
            var counter: UInt64 = 0
            withUnsafeMutableBytes(of: &counter) { $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: out[32..<40])) }
            var next = (UInt64(littleEndian: counter) &+ 1).littleEndian
            withUnsafeBytes(of: &next) { (out.baseAddress! + 32).copyMemory(from: $0.baseAddress!, byteCount: 8) }
            keys.integrityMAC(domain: IntegrityDomain.digestState, UnsafeRawBufferPointer(rebasing: out[0..<40])) { mac in
                (out.baseAddress! + 40).copyMemory(from: mac.baseAddress!, byteCount: 32)
            }
            let produced = UnsafeRawBufferPointer(out)
            ctx.last.withLock { $0.set(produced) }
            sqlite3_result_blob(context, out.baseAddress, Int32(DigestState.byteCount), transient)
        }
    }

    /// Fails the call as `SQLITE_CORRUPT`: the stored digest is not one this wallet wrote.
    private static func corrupt(_ context: OpaquePointer) {
        sqlite3_result_error(context, corruptMessage, -1)
        sqlite3_result_error_code(context, SQLITE_CORRUPT)
    }

    /// What a write that met a tampered digest says.
    static let corruptMessage =
        "the records' version digest does not verify under the wallet key: the file was changed without the key; nothing was written (restore a backup)"

    private static let legacyStep: @convention(c) (OpaquePointer?, Int32, UnsafeMutablePointer<OpaquePointer?>?) -> Void = {
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
