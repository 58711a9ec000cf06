// Dead drops: signed batches of messages the service publishes for every user; only trial
// decryption tells a user which ones are theirs.

import CofferCrypto
import CofferSync
import Foundation
import GRDB

/// One journalist-to-user dead drop, as CoverDrop's API serves it.
public struct DeadDrop: Sendable, Hashable {
    /// The service's increasing identifier.
    public let id: Int64
    /// When the service published it, in whole Unix seconds (what is signed; retention counts
    /// from the newest one, not the device clock).
    public let createdAtSeconds: Int64
    /// Concatenated 553-byte TwoPartyBoxes, each from a journalist's messaging key to some
    /// user's key (or a cover between random keys).
    public let data: Data
    /// A CoverNode identity key's Ed25519 signature of ``signedDigest(data:createdAtSeconds:)``.
    public let signature: Data

    /// When the service published it.
    public var createdAt: Date { Date(timeIntervalSince1970: Double(createdAtSeconds)) }

    /// A dead drop as published.
    public init(id: Int64, createdAtSeconds: Int64, data: Data, signature: Data) {
        self.id = id
        self.createdAtSeconds = createdAtSeconds
        self.data = data
        self.signature = signature
    }

    /// What a CoverNode signs (CoverDrop's second dead-drop signature scheme): SHA-256 of the
    /// data followed by the publication time in whole seconds, i64 big-endian.
    public static func signedDigest(data: Data, createdAtSeconds: Int64) -> Data {
        SHA256Digest.hash(data, withUnsafeBytes(of: createdAtSeconds.bigEndian) { Data($0) })
    }

    /// A dead drop signed by a CoverNode identity key.
    public static func signed(id: Int64, createdAtSeconds: Int64, data: Data, by identityKey: Ed25519KeyPair) -> DeadDrop {
        DeadDrop(
            id: id, createdAtSeconds: createdAtSeconds, data: data,
            signature: identityKey.sign(signedDigest(data: data, createdAtSeconds: createdAtSeconds)))
    }

    /// Whether one of `identityKeys` signed it.
    public func isSigned(byAnyOf identityKeys: [Data]) -> Bool {
        let digest = Self.signedDigest(data: data, createdAtSeconds: createdAtSeconds)
        return identityKeys.contains { Ed25519KeyPair.verify(signature: signature, message: digest, publicKey: $0) }
    }
}

/// The dead-drop list of CoverDrop's API (`GET /v1/user/dead-drops?ids_greater_than=N`):
/// `{"dead_drops": [{"id", "created_at" (RFC 3339), "data" (base64), "signature" (hex)}]}`.
/// A legacy `cert` field, and any other, is ignored.
public enum DeadDropList {
    fileprivate struct Item: Codable {
        var id: Int64
        var createdAt: String
        var data: String
        var signature: String
        enum CodingKeys: String, CodingKey {
            case id, data, signature
            case createdAt = "created_at"
        }

        func deadDrop() throws(DeniableError) -> DeadDrop {
            guard let time = RFC3339.parse(createdAt) else {
                throw .invalidInput("dead drop \(id): created_at \(createdAt) is not an RFC 3339 time")
            }
            guard let bytes = Base64.decode(data) else { throw .invalidInput("dead drop \(id): data is not base64") }
            guard let sig = Hex.decode(signature) else { throw .invalidInput("dead drop \(id): signature is not hex") }
            return DeadDrop(id: id, createdAtSeconds: time.seconds, data: bytes, signature: sig)
        }
    }

    private struct List: Codable {
        var deadDrops: [Item]
        enum CodingKeys: String, CodingKey { case deadDrops = "dead_drops" }
    }

    /// The dead drops in a response body.
    /// - Throws: ``DeniableError/invalidInput(_:)`` naming what does not parse.
    public static func parse(_ json: Data) throws(DeniableError) -> [DeadDrop] {
        let list: List
        do { list = try JSONDecoder().decode(List.self, from: json) } catch {
            throw .invalidInput("the dead-drop list is not CoverDrop's shape: \(error)")
        }
        var out = [DeadDrop]()
        for item in list.deadDrops { out.append(try item.deadDrop()) }
        return out
    }

    /// The dead drops of a response body item by item: an item that does not parse is left out
    /// and described in `skipped` (by its id and field, never its data), so one bad item never
    /// loses the rest of the list.
    /// - Throws: ``DeniableError/invalidInput(_:)`` only when the body is not a dead-drop list at all.
    public static func parseItems(_ json: Data) throws(DeniableError) -> (drops: [DeadDrop], skipped: [String]) {
        struct Loose: Decodable {
            var deadDrops: [Item?]
            enum CodingKeys: String, CodingKey { case deadDrops = "dead_drops" }
            struct Item: Decodable {
                var value: DeadDropList.Item?
                var id: Int64?
                init(from decoder: Decoder) throws {
                    value = try? DeadDropList.Item(from: decoder)
                    id = try? decoder.container(keyedBy: DeadDropList.Item.CodingKeys.self).decode(Int64.self, forKey: .id)
                }
            }
        }
        let list: Loose
        do { list = try JSONDecoder().decode(Loose.self, from: json) } catch {
            throw .invalidInput("the dead-drop list is not CoverDrop's shape: \(error)")
        }
        var drops = [DeadDrop]()
        var skipped = [String]()
        for (index, entry) in list.deadDrops.enumerated() {
            guard let item = entry?.value else {
                skipped.append("item \(index) (id \(entry?.id.map(String.init) ?? "?")): not a dead drop")
                continue
            }
            do throws(DeniableError) { drops.append(try item.deadDrop()) } catch { skipped.append(error.description) }
        }
        return (drops, skipped)
    }

    /// A response body holding `drops` (base64 without padding, as CoverDrop's server writes it).
    public static func json(_ drops: [DeadDrop]) -> Data {
        let list = List(
            deadDrops: drops.map {
                Item(
                    id: $0.id, createdAt: RFC3339.format(seconds: $0.createdAtSeconds),
                    data: $0.data.base64EncodedString().replacingOccurrences(of: "=", with: ""), signature: Hex.encode($0.signature))
            })
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return (try? encoder.encode(list)) ?? Data(#"{"dead_drops":[]}"#.utf8)
    }
}

/// Standard base64, with or without padding.
enum Base64 {
    static func decode(_ text: String) -> Data? {
        var padded = text
        while padded.utf8.count % 4 != 0 { padded += "=" }
        return Data(base64Encoded: padded)
    }
}

/// The dead-drop database (`dead-drops.sqlite`): dead drops as received, merged by id, trimmed to
/// the retention window counted back from the newest one and to a maximum count. Signatures are
/// checked again at every read, under the keys verified then: a drop signed by a CoverNode key
/// the cache does not hold yet is kept, and used once a key refresh brings that key. Its `user_version` is 2 for CoverDrop's
/// formats; dead drops stored in Coffer's earlier format are dropped when it opens (they are
/// fetched again). It uses a rollback journal, so between
/// writes it is one file (mode 0600, made before SQLite opens it; SQLite gives its journal the
/// same mode), and every install that fetches the same dead drops writes it the same way.
final class DeadDropStore: Sendable {
    let queue: DatabaseQueue
    /// CoverDrop's dead drops (created_at in whole seconds, CoverDrop's signature).
    static let formatVersion = 2

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
                if try Int.fetchOne(db, sql: "PRAGMA user_version") ?? 0 < Self.formatVersion {
                    try db.execute(sql: "DROP TABLE IF EXISTS dead_drops")
                    try db.execute(sql: "PRAGMA user_version = \(Self.formatVersion)")
                }
                try db.execute(
                    sql: """
                        CREATE TABLE IF NOT EXISTS dead_drops(
                            id INTEGER PRIMARY KEY NOT NULL,
                            created_at INTEGER NOT NULL,
                            data BLOB NOT NULL,
                            signature BLOB NOT NULL);
                        CREATE INDEX IF NOT EXISTS dead_drops_created ON dead_drops(created_at);
                        CREATE UNIQUE INDEX IF NOT EXISTS dead_drops_signature ON dead_drops(signature);
                        """)
            }
        } catch {
            throw .storage("cannot open the dead-drop database at \(url.path): \(error)", cause: StorageCause(error))
        }
    }

    /// Outcome of a merge.
    struct MergeResult: Sendable, Equatable {
        var kept = 0
        var unverified = 0
        var duplicates = 0
        var rejected = 0
        var trimmed = 0
    }

    /// Adds the new drops of the right shape (whether `signingKeys` verify them now or not), and
    /// trims those older than `retention` before the newest and the oldest beyond `maxStored`,
    /// all in one transaction.
    func merge(
        _ drops: [DeadDrop], signingKeys: [Data], now: Date, retention: TimeInterval,
        maxFutureSkew: TimeInterval, messageBytes: Int, maxStored: Int
    ) throws(DeniableError) -> MergeResult {
        var result = MergeResult()
        do {
            try queue.write { db in
                for drop in drops {
                    guard drop.createdAt.timeIntervalSince(now) <= maxFutureSkew, !drop.data.isEmpty,
                        drop.data.count % messageBytes == 0, drop.signature.count == 64
                    else {
                        result.rejected += 1
                        continue
                    }
                    try db.execute(
                        sql: "INSERT OR IGNORE INTO dead_drops(id, created_at, data, signature) VALUES (?, ?, ?, ?)",
                        arguments: [drop.id, drop.createdAtSeconds, drop.data, drop.signature])
                    if db.changesCount != 1 {
                        result.duplicates += 1
                    } else if drop.isSigned(byAnyOf: signingKeys) {
                        result.kept += 1
                    } else {
                        result.unverified += 1
                    }
                }
                if let newest = try Int64.fetchOne(db, sql: "SELECT MAX(created_at) FROM dead_drops") {
                    let cutoff = newest - Int64(retention.rounded())
                    try db.execute(sql: "DELETE FROM dead_drops WHERE created_at < ?", arguments: [cutoff])
                    result.trimmed = db.changesCount
                }
                try db.execute(
                    sql: "DELETE FROM dead_drops WHERE id NOT IN (SELECT id FROM dead_drops ORDER BY created_at DESC, id DESC LIMIT ?)",
                    arguments: [maxStored])
                result.trimmed += db.changesCount
            }
        } catch let error as DeniableError { throw error } catch {
            throw .storage("merging dead drops failed: \(error)", cause: StorageCause(error))
        }
        return result
    }

    /// Every stored dead drop, oldest first.
    func all() throws(DeniableError) -> [DeadDrop] {
        do {
            return try queue.read { db in
                try Row.fetchAll(db, sql: "SELECT id, created_at, data, signature FROM dead_drops ORDER BY id").map { row in
                    DeadDrop(id: row[0], createdAtSeconds: row[1], data: row[2], signature: row[3])
                }
            }
        } catch { throw .storage("reading dead drops failed: \(error)", cause: StorageCause(error)) }
    }

    /// The highest stored id (fetch only newer ones).
    func newestID() throws(DeniableError) -> Int64? {
        do { return try queue.read { db in try Int64.fetchOne(db, sql: "SELECT MAX(id) FROM dead_drops") } } catch {
            throw .storage("reading dead drops failed: \(error)", cause: StorageCause(error))
        }
    }

    /// Removes every dead drop (full reset).
    func removeAll() throws(DeniableError) {
        do { try queue.write { db in try db.execute(sql: "DELETE FROM dead_drops") } } catch {
            throw .storage("clearing dead drops failed: \(error)", cause: StorageCause(error))
        }
    }
}
