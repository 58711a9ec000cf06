// Importing records from JSON lines: streamed in chunks, all or nothing in one transaction.

import CofferSQLite
import CofferSync
import Foundation
import GRDB

/// How far an import from JSON lines has come.
public struct ImportProgress: Sendable, Equatable {
    /// Records inserted so far.
    public let records: Int
    /// Bytes of the file read so far.
    public let bytesRead: Int
    /// Bytes in the file.
    public let totalBytes: Int
}

extension Wallet {
    /// Longest line ``importRecords(fromJSONLines:progress:)`` accepts: a record as large as the
    /// wallet allows (16 MiB value), JSON-escaped, with room for its tags.
    public static let maxImportLineBytes = 128 << 20

    /// Imports records from a JSON-lines file, one object per line:
    /// `{"type": …, "id": …, "value": …, "tags": {…}?, "expiresAt": <Unix ms>?}`; blank lines are
    /// skipped. All or nothing: every record is inserted in one transaction, and an error (a
    /// malformed line, a duplicate, an invalid type, id or tag) names its line and imports
    /// nothing. It streams: the file is read 1 MiB at a time and each line inserted as it is
    /// parsed, with a smaller page cache for the transaction (32 MiB), so memory stays flat at any
    /// size. Other calls wait while it runs.
    /// - Returns: the number of records imported.
    /// - Throws: ``WalletError/invalidInput(_:)`` naming the line, ``WalletError/duplicate(type:id:)``.
    @discardableResult
    public func importRecords(fromJSONLines url: URL, progress: (@Sendable (ImportProgress) -> Void)? = nil) async throws -> Int {
        let handle = try Self.openInput(url, naming: "the records file")
        defer { try? handle.close() }
        let totalBytes = (try? FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int) ?? 0
        let handedLines = Handoff(JSONLinesReader(handle: handle, path: url.path))
        return try await gated { keys in
            try await pool.writeWithoutTransaction { db -> Int in
                let lines = handedLines.value
                try Self.beginBulk(db, cacheKiB: Self.importCacheKiB)
                defer { Self.endBulk(db, cacheKiB: Schema.writerCacheKiB) }
                var count = 0
                try db.inTransaction {
                    try Self.checkKeys(db, keys)
                    let store = RecordStore(db: db, keys: keys)
                    // Records are sealed on the other cores while the writer inserts (see
                    // `SealingPipeline`); each line's own errors still come from its own add.
                    let pipeline = SealingPipeline(store: store)
                    defer { pipeline.abandon() }
                    while let (number, text) = try lines.next() {
                        let record = try Self.importLine(text, number: number)
                        do {
                            try pipeline.add(
                                type: record.type, id: record.id, value: record.value, tags: record.tags,
                                expiresAt: record.expiry.map { Date(timeIntervalSince1970: Double($0) / 1000) })
                        } catch let error as WalletError {
                            // A write of an earlier line that failed after its add returned is
                            // not this line's.
                            throw pipeline.hasFailed ? error : Self.atLine(number, error)
                        }
                        count += 1
                        if count % 1_000 == 0 {
                            progress?(ImportProgress(records: count, bytesRead: lines.bytesRead, totalBytes: totalBytes))
                            // Debug builds only: lets a test kill the process inside the transaction.
                            if count == 1_000 { TestPause.at("wallet-import-writing") }
                        }
                    }
                    try pipeline.finish()
                    return .commit
                }
                progress?(ImportProgress(records: count, bytesRead: lines.bytesRead, totalBytes: totalBytes))
                return count
            }
        }
    }

    /// The writer's page cache during an import or a restore (KiB).
    static let importCacheKiB = 32 * 1024
    /// A reader's page cache during a backup export (KiB).
    static let exportCacheKiB = 4 * 1024

    /// Settings for work that touches the whole file once (import, restore, export): a bounded
    /// page cache and no memory map, whose pages would count as the process's resident memory
    /// for the whole file. ``endBulk(_:cacheKiB:)`` puts the connection's usual ones back.
    static func beginBulk(_ db: Database, cacheKiB: Int) throws {
        try db.execute(sql: "PRAGMA cache_size = -\(cacheKiB); PRAGMA mmap_size = 0")
    }

    static func endBulk(_ db: Database, cacheKiB: Int) {
        try? db.execute(sql: "PRAGMA cache_size = -\(cacheKiB); PRAGMA mmap_size = \(Schema.mmapBytes)")
    }

    static func importLine(_ text: String, number: Int) throws -> (
        type: String, id: String, value: String, tags: WalletTags, expiry: Int64?
    ) {
        let value: JSONValue
        do { value = try JSONValue.parse(text) } catch { throw WalletError.invalidInput("line \(number): \(error)") }
        guard case .object(let members) = value else {
            throw WalletError.invalidInput("line \(number): expected a JSON object, got \(value.kindName)")
        }
        func field(_ key: String) -> JSONValue? { members.last(where: { $0.0 == key })?.1 }
        func string(_ key: String) throws -> String {
            guard case .string(let s)? = field(key) else { throw WalletError.invalidInput("line \(number): \"\(key)\" must be a string") }
            return s
        }
        var tags = WalletTags()
        if let t = field("tags"), t != .null {
            do { tags = try WalletTags(jsonValue: t) } catch { throw atLine(number, error) }
        }
        var expiry: Int64?
        if let e = field("expiresAt"), e != .null {
            guard case .number(let n) = e, let ms = Int64(n) else {
                throw WalletError.invalidInput("line \(number): \"expiresAt\" must be Unix milliseconds (an integer)")
            }
            expiry = ms
        }
        return (try string("type"), try string("id"), try string("value"), tags, expiry)
    }

    /// `error` with the line it came from, where its message does not already say.
    static func atLine(_ line: Int, _ error: WalletError) -> WalletError {
        switch error {
        case .invalidInput(let m): return .invalidInput("line \(line): \(m)")
        case .invalidQuery(let m): return .invalidInput("line \(line): \(m)")
        default: return error // duplicate names type and id already
        }
    }
}

/// Reads a file line by line, 1 MiB at a time (lines are numbered from 1; blank ones skipped).
/// Not `Sendable`: one task at a time owns it (the import hands it to its write closure as a
/// `Handoff` and reads it sequentially there).
final class JSONLinesReader {
    private let handle: FileHandle
    private let path: String
    private var buffer = [UInt8]()
    private var start = 0
    private var atEOF = false
    private var number = 0
    private(set) var bytesRead = 0

    init(handle: FileHandle, path: String) {
        self.handle = handle
        self.path = path
    }

    /// The next non-blank line and its number; nil at the end of the file.
    func next() throws -> (Int, String)? {
        while true {
            if let newline = buffer[start...].firstIndex(of: UInt8(ascii: "\n")) {
                let line = buffer[start..<newline]
                start = newline + 1
                number += 1
                if let text = try decode(line) { return (number, text) }
                continue
            }
            if atEOF {
                guard start < buffer.count else { return nil }
                let line = buffer[start...]
                start = buffer.count
                number += 1
                if let text = try decode(line) { return (number, text) }
                return nil
            }
            guard buffer.count - start <= Wallet.maxImportLineBytes else {
                throw WalletError.invalidInput("line \(number + 1) of \(path) is longer than \(Wallet.maxImportLineBytes) bytes")
            }
            // Keep only the unfinished line, then read on.
            buffer.removeSubrange(0..<start)
            start = 0
            let chunk: Data?
            do { chunk = try handle.read(upToCount: 1 << 20) } catch {
                throw WalletError.invalidInput("cannot read \(path): \(error.localizedDescription)")
            }
            if let chunk, !chunk.isEmpty {
                buffer.append(contentsOf: chunk)
                bytesRead += chunk.count
            } else {
                atEOF = true
            }
        }
    }

    /// The line as text; nil when blank.
    private func decode(_ bytes: ArraySlice<UInt8>) throws -> String? {
        guard let raw = String(validUTF8: bytes) else {
            throw WalletError.invalidInput("line \(number) of \(path) is not valid UTF-8")
        }
        let line = raw.trimmingCharacters(in: .whitespacesAndNewlines)
        return line.isEmpty ? nil : line
    }
}
