// Dead drops: signed batches of messages the service publishes for every user; only trial
// decryption tells a user which ones are theirs.
import CofferCrypto
import Foundation
import GRDB

/// One published dead drop.
public struct DeadDrop: Sendable, Hashable {
    /// The service's increasing identifier.
    public let id: Int64
    /// When the service published it (retention counts from the newest one, not the device clock).
    public let createdAt: Date
    /// Concatenated fixed-size messages, each a sealed box to some user's key.
    public let data: Data
    /// Ed25519 signature of ``signedBytes(id:createdAt:data:)`` by a CoverNode signing key.
    public let signature: Data

    /// A dead drop as published.
    public init(id: Int64, createdAt: Date, data: Data, signature: Data) {
        self.id = id
        self.createdAt = createdAt
        self.data = data
        self.signature = signature
    }

    /// What a CoverNode signs: a label, the id, the publication time (ms, big-endian) and the data.
    public static func signedBytes(id: Int64, createdAt: Date, data: Data) -> Data {
        var w = Writer(buffer: [])
        w.bytes(Array("coffer.deniable.deaddrop.v1".utf8))
        w.u64(UInt64(bitPattern: id))
        w.u64(UInt64(bitPattern: unixMillis(createdAt)))
        var out = Data(w.buffer)
        out.append(data)
        return out
    }
}

/// Milliseconds since 1970, rounded.
func unixMillis(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 * 1000).rounded()) }

/// The dead-drop database (`dead-drops.sqlite`): verified dead drops, merged by id, trimmed to
/// the retention window counted back from the newest one. It uses a rollback journal, so between
/// writes it is one file (mode 0600, made before SQLite opens it; SQLite gives its journal the
/// same mode), and every install that fetches the same dead drops writes it the same way.
final class DeadDropStore: Sendable {
    let queue: DatabaseQueue

    init(url: URL) throws(DeniableError) {
        do {
            let fd = open(url.path, O_RDWR | O_CREAT, 0o600)
            if fd >= 0 { close(fd) }
            var config = Configuration()
            config.label = "coffer.deniable.deaddrops"
            config.busyMode = .timeout(5)
            config.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = FULL") }
            queue = try DatabaseQueue(path: url.path, configuration: config)
            try queue.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA journal_mode = DELETE") }
            try queue.write { db in
                try db.execute(
                    sql: """
                        CREATE TABLE IF NOT EXISTS dead_drops(
                            id INTEGER PRIMARY KEY NOT NULL,
                            created_at INTEGER NOT NULL,
                            data BLOB NOT NULL,
                            signature BLOB NOT NULL);
                        CREATE INDEX IF NOT EXISTS dead_drops_created ON dead_drops(created_at);
                        """)
            }
        } catch {
            throw .storage("cannot open the dead-drop database at \(url.path): \(error)")
        }
    }

    /// Outcome of a merge.
    struct MergeResult: Sendable, Equatable {
        var kept = 0
        var duplicates = 0
        var rejected = 0
        var trimmed = 0
    }

    /// Verifies each drop against `signingKeys`, adds the new ones, and trims those older than
    /// `retention` before the newest, all in one transaction.
    func merge(
        _ drops: [DeadDrop], signingKeys: [PublishedKey], now: Date, retention: TimeInterval,
        maxFutureSkew: TimeInterval, messageBytes: Int
    ) throws(DeniableError) -> MergeResult {
        var result = MergeResult()
        do {
            try queue.write { db in
                for drop in drops {
                    let signed = DeadDrop.signedBytes(id: drop.id, createdAt: drop.createdAt, data: drop.data)
                    let verified = signingKeys.contains {
                        Ed25519KeyPair.verify(signature: drop.signature, message: signed, publicKey: $0.key)
                    }
                    guard verified, drop.createdAt.timeIntervalSince(now) <= maxFutureSkew,
                        !drop.data.isEmpty, drop.data.count % messageBytes == 0
                    else {
                        result.rejected += 1
                        continue
                    }
                    try db.execute(
                        sql: "INSERT OR IGNORE INTO dead_drops(id, created_at, data, signature) VALUES (?, ?, ?, ?)",
                        arguments: [drop.id, unixMillis(drop.createdAt), drop.data, drop.signature])
                    if db.changesCount == 1 { result.kept += 1 } else { result.duplicates += 1 }
                }
                if let newest = try Int64.fetchOne(db, sql: "SELECT MAX(created_at) FROM dead_drops") {
                    let cutoff = newest - Int64((retention * 1000).rounded())
                    try db.execute(sql: "DELETE FROM dead_drops WHERE created_at < ?", arguments: [cutoff])
                    result.trimmed = db.changesCount
                }
            }
        } catch let error as DeniableError { throw error } catch {
            throw .storage("merging dead drops failed: \(error)")
        }
        return result
    }

    /// Every stored dead drop, oldest first.
    func all() throws(DeniableError) -> [DeadDrop] {
        do {
            return try queue.read { db in
                try Row.fetchAll(db, sql: "SELECT id, created_at, data, signature FROM dead_drops ORDER BY id").map { row in
                    DeadDrop(
                        id: row[0], createdAt: Date(timeIntervalSince1970: Double(row[1] as Int64) / 1000),
                        data: row[2], signature: row[3])
                }
            }
        } catch { throw .storage("reading dead drops failed: \(error)") }
    }

    /// The highest stored id (fetch only newer ones).
    func newestID() throws(DeniableError) -> Int64? {
        do { return try queue.read { db in try Int64.fetchOne(db, sql: "SELECT MAX(id) FROM dead_drops") } } catch {
            throw .storage("reading dead drops failed: \(error)")
        }
    }

    /// Removes every dead drop (full reset).
    func removeAll() throws(DeniableError) {
        do { try queue.write { db in try db.execute(sql: "DELETE FROM dead_drops") } } catch {
            throw .storage("clearing dead drops failed: \(error)")
        }
    }
}

/// The fixed-size plaintext of a message before it is sealed: peer name length (1 byte), peer
/// name, text length (2 bytes, big-endian), text, random fill.
enum MessagePadding {
    static func encode(peer: String, text: String, size: Int) throws(DeniableError) -> Data {
        let p = Array(peer.utf8)
        let t = Array(text.utf8)
        guard !p.isEmpty, p.count <= 255 else { throw .invalidInput("a recipient name must be 1…255 bytes of UTF-8") }
        let capacity = size - 3 - p.count
        guard t.count <= capacity, t.count <= Int(UInt16.max) else {
            throw .invalidInput("the message is \(t.count) bytes of UTF-8; at most \(max(capacity, 0)) fit")
        }
        var w = Writer(buffer: [])
        w.u8(UInt8(p.count))
        w.bytes(p)
        w.u16(UInt16(t.count))
        w.bytes(t)
        var out = Data(w.buffer)
        out.append(SecureRandom.bytes(size - out.count))
        return out
    }

    static func decode(_ data: Data) -> (peer: String, text: String)? {
        data.withUnsafeBytes { raw in
            var r = Reader(bytes: raw)
            guard let pn = r.u8(), pn > 0, let p = r.take(Int(pn)), let tn = r.u16(), let t = r.take(Int(tn)),
                let peer = String(validating: p, as: UTF8.self), let text = String(validating: t, as: UTF8.self)
            else { return nil }
            return (peer, text)
        }
    }
}
