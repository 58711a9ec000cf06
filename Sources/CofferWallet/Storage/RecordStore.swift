// Record operations on one open SQLite connection: the single place that writes items and tags.

import CofferCrypto
import Foundation
import GRDB

/// Checks every argument before anything is written.
enum Validate {
    /// Record types starting with this belong to the wallet's secrets: the record API refuses them.
    static let reservedTypePrefix = "__coffer"

    static func type(_ type: String, allowReserved: Bool = false) throws(WalletError) {
        if type.isEmpty { throw .invalidInput("record type must not be empty") }
        if type.utf8.count > WalletLimits.maxTypeBytes {
            throw .invalidInput("record type is longer than \(WalletLimits.maxTypeBytes) bytes")
        }
        if !allowReserved, type.hasPrefix(reservedTypePrefix) {
            throw .invalidInput(
                "record type \(WalletError.quote(type)) is reserved for the wallet's secrets (types starting with \"\(reservedTypePrefix)\" cannot be used by the record API)"
            )
        }
    }

    static func id(_ id: String) throws(WalletError) {
        if id.isEmpty { throw .invalidInput("record id must not be empty") }
        if id.utf8.count > WalletLimits.maxIdBytes {
            throw .invalidInput("record id is longer than \(WalletLimits.maxIdBytes) bytes")
        }
    }

    static func value(_ value: String) throws(WalletError) {
        if value.utf8.count > WalletLimits.maxValueBytes {
            throw .invalidInput("record value is longer than \(WalletLimits.maxValueBytes) bytes")
        }
    }

    static func tagNames(_ names: [String]) throws(WalletError) {
        for name in names where name.isEmpty { throw .invalidInput("tag name must not be empty") }
    }
}

/// Milliseconds since 1970 for the expiry column.
func unixMillis(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 * 1000).rounded(.down)) }

/// Record reads and writes against one connection, inside the caller's transaction.
struct RecordStore {
    let db: Database
    let keys: WalletKeys
    let now: Int64
    /// Whether reserved (secret) types may be touched: only the wallet's own secrets code says yes.
    let allowReserved: Bool
    /// Facts learnt once per transaction (a store lives for one transaction).
    let memo = Memo()

    final class Memo {
        /// Whether any credential signature exists; nil until asked.
        var hasSignatures: Bool?
        /// The write path's statements, prepared on first use (indexed by `HotSQL`).
        var statements = [DirectStatement?](repeating: nil, count: HotSQL.allCases.count)
        /// Multi-row tag inserts, by row count (1…`tagRowsPerInsert`).
        var tagInserts = [DirectStatement?](repeating: nil, count: RecordStore.tagRowsPerInsert + 1)
    }

    /// Most tag rows one INSERT writes: one statement per record's tags instead of one per tag
    /// saves SQLite's per-statement work, which is most of the cost of a small row.
    static let tagRowsPerInsert = 8

    /// The statements every record call runs, stepped without GRDB's typed arguments (see
    /// ``DirectStatement``).
    enum HotSQL: Int, CaseIterable {
        case locate, insertItem, updateValue, selectLive, deleteItem, deleteTagsOfItem, tagsOfItem, deleteTagRow

        func sql(_ tables: ProfileTables) -> String {
            switch self {
            case .locate: return "SELECT id, value, expiry FROM \(tables.items) WHERE type = ? AND name = ?"
            case .insertItem: return "INSERT INTO \(tables.items)(type, name, value, expiry) VALUES (?, ?, ?, ?)"
            case .updateValue: return "UPDATE \(tables.items) SET value = ? WHERE id = ?"
            case .selectLive:
                return "SELECT id, value, expiry FROM \(tables.items) WHERE type = ? AND name = ? AND (expiry IS NULL OR expiry > ?)"
            case .deleteItem: return "DELETE FROM \(tables.items) WHERE id = ?"
            case .deleteTagsOfItem: return "DELETE FROM \(tables.tags) WHERE item = ?"
            case .tagsOfItem: return "SELECT name, value FROM \(tables.tags) WHERE item = ?"
            case .deleteTagRow: return "DELETE FROM \(tables.tags) WHERE item = ? AND name = ? AND value = ?"
            }
        }
    }

    /// The prepared statement for `sql`, kept for the rest of this store's transaction.
    private func statement(_ sql: HotSQL) throws -> DirectStatement {
        if let prepared = memo.statements[sql.rawValue] { return prepared }
        let prepared = try DirectStatement(db, sql: sql.sql(keys.tables))
        memo.statements[sql.rawValue] = prepared
        return prepared
    }

    init(db: Database, keys: WalletKeys, now: Date = Date(), allowReserved: Bool = false) {
        self.db = db
        self.keys = keys
        self.now = unixMillis(now)
        self.allowReserved = allowReserved
    }

    struct Located {
        let type: String
        let rowid: Int64
        let typeBlind: Data
        let idBlind: Data
        let sealed: Data
        let expiry: Int64?
        let expired: Bool
    }

    func locate(type: String, id: String) throws -> Located? {
        let tb = keys.typeBlind(type)
        return try locate(type: type, id: id, typeBlind: tb, idBlind: keys.idBlind(typeBlind: tb, id: id))
    }

    /// ``locate(type:id:)`` with the blind type and id already computed.
    func locate(type: String, id: String, typeBlind tb: Data, idBlind ib: Data) throws -> Located? {
        let select = try statement(.locate)
        select.bind(1, BlindColumn.value(tb))
        select.bind(2, ib)
        let now = self.now
        return try select.fetchOne { row in
            let expiry = row.optionalInt64(2)
            return Located(
                type: type, rowid: row.int64(0), typeBlind: tb, idBlind: ib, sealed: row.data(1), expiry: expiry,
                expired: expiry.map { $0 <= now } ?? false)
        }
    }

    func live(type: String, id: String) throws -> Located {
        guard let found = try locate(type: type, id: id), !found.expired else {
            throw WalletError.notFound(type: type, id: id)
        }
        return found
    }

    /// Opens a located record to rewrite it: a reserved secret's value is kept as bytes (never a
    /// `String`), and a caller that replaces the value skips reading it.
    func open(_ located: Located, value: RecordCodec.ValueMode? = nil) throws -> RecordCodec.Contents {
        try RecordCodec.open(
            located.sealed, typeBlind: located.typeBlind, idBlind: located.idBlind, expiry: located.expiry, keys: keys,
            expectedType: located.type, value: value ?? .keepingSecrets(of: located.type))
    }

    // MARK: Writes

    /// Adds a record; with `secret`, its value is that secret's base64 text, written from the
    /// key's storage into the wiped plaintext buffer (`value` is then ignored).
    func add(type: String, id: String, value: String, tags: WalletTags, expiresAt: Date?, secret: SecretKey? = nil) throws {
        try insert(
            Self.prepareAdd(
                keys: keys, type: type, id: id, value: value, tags: tags, expiresAt: expiresAt, allowReserved: allowReserved,
                secret: secret))
    }

    /// Writes a record ``prepareAdd(keys:type:id:value:tags:expiresAt:allowReserved:secret:)``
    /// sealed: its item row, then its tag rows.
    /// - Throws: ``WalletError/duplicate(type:id:)`` when a live record has its type and id (an
    ///   expired one gives way).
    func insert(_ record: SealedRecord) throws {
        let insert = try statement(.insertItem)
        func bindRow() {
            insert.bind(1, BlindColumn.value(record.typeBlind))
            insert.bind(2, record.idBlind)
            insert.bind(3, record.sealed)
            insert.bind(4, record.expiry)
        }
        bindRow()
        do {
            try insert.execute()
        } catch let error as DatabaseError where error.extendedResultCode == .SQLITE_CONSTRAINT_UNIQUE {
            // The unique (type, id) index answers "does it exist" without a lookup first; an
            // expired record gives way, a live one is a duplicate.
            guard let existing = try locate(type: record.type, id: record.id), existing.expired else {
                throw WalletError.duplicate(type: record.type, id: record.id)
            }
            try removeRow(existing.rowid)
            bindRow()
            try insert.execute()
        }
        let rowid = db.lastInsertedRowID
        try undoingOnFailure(
            {
                guard !record.tagRows.isEmpty else { return }
                try insertTagRows(item: rowid, record.tagRows[...])
                try markMultiValued(record.multiValued)
            }, undo: { try removeRow(rowid) })
    }

    func update(type: String, id: String, value: String) throws {
        try Validate.type(type, allowReserved: allowReserved)
        try Validate.id(id)
        try Validate.value(value)
        let found = try live(type: type, id: id)
        var contents = try open(found, value: .skipped)
        contents.value = value
        try rewrite(found, contents)
    }

    func replace(type: String, id: String, value: String, tags: WalletTags) throws {
        try Validate.type(type, allowReserved: allowReserved)
        try Validate.id(id)
        try Validate.value(value)
        try tags.validate()
        let found = try live(type: type, id: id)
        try rewrite(Self.prepareReplace(keys: keys, found, value: value, tags: tags))
    }

    func delete(type: String, id: String) throws {
        try Validate.type(type, allowReserved: allowReserved)
        try Validate.id(id)
        // A credential's signature (a secret, stored without tags) goes with it: one statement
        // takes it out first, and it is put back if the credential's own delete fails.
        if type == SecretTypes.credential, try hasSignatures() {
            let tb = keys.typeBlind(SecretTypes.credentialSignature)
            let statement = try db.cachedStatement(
                sql: "DELETE FROM \(keys.tables.items) WHERE type = ? AND name = ? RETURNING id, value, expiry")
            let signature = try Row.fetchOne(statement, arguments: [BlindColumn.value(tb), keys.idBlind(typeBlind: tb, id: id)])
            do { try deleteRecord(type: type, id: id) } catch {
                if let signature {
                    try? db.execute(
                        sql: "INSERT INTO \(keys.tables.items)(id, type, name, value, expiry) VALUES (?, ?, ?, ?, ?)",
                        arguments: [signature[0], BlindColumn.value(tb), keys.idBlind(typeBlind: tb, id: id), signature[1], signature[2]])
                }
                throw error
            }
            return
        }
        try deleteRecord(type: type, id: id)
    }

    /// Whether the wallet holds any credential signature (asked once per transaction: within one,
    /// only the secrets code, in transactions of its own, adds them).
    private func hasSignatures() throws -> Bool {
        if let known = memo.hasSignatures { return known }
        let statement = try db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM \(keys.tables.items) WHERE type = ?)")
        let found = try Bool.fetchOne(statement, arguments: [BlindColumn.value(keys.typeBlind(SecretTypes.credentialSignature))]) ?? false
        memo.hasSignatures = found
        return found
    }

    private func deleteRecord(type: String, id: String) throws {
        let tb = keys.typeBlind(type)
        let ib = keys.idBlind(typeBlind: tb, id: id)
        // Read what an undo would need, then delete by row id. (`DELETE … RETURNING` does it in
        // one statement, but SQLite buffers returned rows in a temporary table: slower.)
        let select = try statement(.selectLive)
        select.bind(1, BlindColumn.value(tb))
        select.bind(2, ib)
        select.bind(3, now)
        guard
            let found = try select.fetchOne({ row in
                Located(
                    type: type, rowid: row.int64(0), typeBlind: tb, idBlind: ib, sealed: row.data(1), expiry: row.optionalInt64(2),
                    expired: false)
            })
        else {
            throw WalletError.notFound(type: type, id: id)
        }
        let deleteItem = try statement(.deleteItem)
        deleteItem.bind(1, found.rowid)
        try deleteItem.execute()
        // Index rows of a missing item never match (every walk joins items), but put the item
        // back if they cannot be removed, so the call changes nothing.
        try undoingOnFailure(
            {
                let deleteTags = try statement(.deleteTagsOfItem)
                deleteTags.bind(1, found.rowid)
                try deleteTags.execute()
            },
            undo: {
                try db.execute(
                    sql: "INSERT INTO \(keys.tables.items)(id, type, name, value, expiry) VALUES (?, ?, ?, ?, ?)",
                    arguments: [found.rowid, BlindColumn.value(found.typeBlind), found.idBlind, found.sealed, found.expiry])
            })
    }

    func addTags(type: String, id: String, tags: WalletTags) throws {
        try Validate.type(type, allowReserved: allowReserved)
        try Validate.id(id)
        try tags.validate()
        let found = try live(type: type, id: id)
        var contents = try open(found)
        var merged = contents.tags
        for (name, value) in tags.entries { merged.entries[name] = value }
        contents.tags = merged
        try rewriteWithTags(found, contents)
    }

    func updateTags(type: String, id: String, tags: WalletTags) throws {
        try Validate.type(type, allowReserved: allowReserved)
        try Validate.id(id)
        try tags.validate()
        let found = try live(type: type, id: id)
        var contents = try open(found)
        contents.tags = tags
        try rewriteWithTags(found, contents)
    }

    func deleteTags(type: String, id: String, names: [String]) throws {
        try Validate.type(type, allowReserved: allowReserved)
        try Validate.id(id)
        try Validate.tagNames(names)
        let found = try live(type: type, id: id)
        var contents = try open(found)
        var kept = contents.tags
        for name in names { kept.entries[ByteString(name)] = nil }
        contents.tags = kept
        try rewriteWithTags(found, contents)
    }

    func get(type: String, id: String, options: RecordOptions) throws -> WalletRecord? {
        try Validate.type(type, allowReserved: allowReserved)
        try Validate.id(id)
        guard let found = try locate(type: type, id: id), !found.expired else { return nil }
        // The value is decoded only when asked for (it is then the caller's, as text).
        let contents = try open(found, value: options.retrieveValue ? .text : .skipped)
        guard contents.id == id else { throw WalletError.corrupted("a record's sealed id does not match its index") }
        return Self.record(contents, type: type, options: options)
    }

    /// Whether a live record of `type` and `id` exists. Its box is opened (authenticated, its id
    /// checked) but its value is not decoded: no `String` of a reserved secret's value is made
    /// where only its presence is asked.
    func contains(type: String, id: String) throws -> Bool {
        try Validate.type(type, allowReserved: allowReserved)
        try Validate.id(id)
        guard let found = try locate(type: type, id: id), !found.expired else { return false }
        let contents = try withBytes(found.sealed) { (box) throws(WalletError) -> RecordCodec.Contents in
            try withBytes(found.typeBlind) { (t) throws(WalletError) -> RecordCodec.Contents in
                try withBytes(found.idBlind) { (i) throws(WalletError) -> RecordCodec.Contents in
                    try RecordCodec.open(box, typeBlind: t, idBlind: i, expiry: found.expiry, keys: keys, expectedType: type) { _ in }
                }
            }
        }
        guard contents.id == id else { throw WalletError.corrupted("a record's sealed id does not match its index") }
        return true
    }

    /// A record whose value is a secret's base64 text: the secret decoded straight from the
    /// wiped plaintext (nil when it does not decode to `byteCount` bytes) and the record's tags;
    /// nil when there is no such live record.
    func secret(type: String, id: String, byteCount: Int) throws -> (secret: SecretKey?, tags: WalletTags)? {
        try Validate.type(type, allowReserved: allowReserved)
        try Validate.id(id)
        guard let found = try locate(type: type, id: id), !found.expired else { return nil }
        let (secret, contents) = try RecordCodec.openSecret(
            found.sealed, typeBlind: found.typeBlind, idBlind: found.idBlind,
            expiry: found.expiry, keys: keys, expectedType: type, byteCount: byteCount)
        guard contents.id == id else { throw WalletError.corrupted("a record's sealed id does not match its index") }
        return (secret, contents.tags)
    }

    static func record(_ contents: RecordCodec.Contents, type: String, options: RecordOptions) -> WalletRecord {
        WalletRecord(
            id: contents.id,
            type: options.retrieveType ? type : nil,
            value: options.retrieveValue ? contents.value : nil,
            tags: options.retrieveTags ? contents.tags : nil)
    }

    // MARK: Rows

    /// Runs `work`; if it fails, runs `undo` (best effort) and rethrows, so a call inside a
    /// caller's transaction that fails part-way leaves nothing of itself behind. (A SQL
    /// savepoint per call would do the same at ten times the cost inside large transactions.)
    private func undoingOnFailure(_ work: () throws -> Void, undo: () throws -> Void) throws {
        do { try work() } catch {
            try? undo()
            throw error
        }
    }

    /// Rewrites a record's box and tag rows together; on failure the old box and rows return.
    private func rewriteWithTags(_ found: Located, _ contents: RecordCodec.Contents) throws {
        try rewrite(Self.prepareRewrite(keys: keys, found, contents))
    }

    /// Writes a record's new box and makes its tag rows those the rewrite was sealed with; on
    /// failure the old box and rows return.
    func rewrite(_ sealed: SealedRewrite) throws {
        let found = sealed.found
        try writeBox(found, sealed.sealed)
        try undoingOnFailure(
            { try replaceTags(found, sealed.tagRows, multi: sealed.multiValued) },
            undo: {
                try db.cachedStatement(sql: "UPDATE \(keys.tables.items) SET value = ? WHERE id = ?").execute(arguments: [
                    found.sealed, found.rowid,
                ])
                let old = try open(found, value: .skipped)
                let (rows, multi) = Self.sealedTagRows(keys: keys, typeBlind: found.typeBlind, tags: old.tags)
                try replaceTags(found, rows, multi: multi)
            })
    }

    private func rewrite(_ found: Located, _ contents: RecordCodec.Contents) throws {
        try writeBox(found, Self.sealBox(keys: keys, found, contents))
    }

    /// Replaces a record's box by `sealed` (its tag rows stay).
    private func writeBox(_ found: Located, _ sealed: Data) throws {
        let update = try statement(.updateValue)
        update.bind(1, sealed)
        update.bind(2, found.rowid)
        try update.execute()
    }

    /// Makes the record's tag rows those of `tags`, touching only the rows that differ: a
    /// replace that keeps a tag (the common case) writes no index entry for it.
    private func replaceTags(_ found: Located, _ sealedRows: [SealedTagRow], multi: [Int64]) throws {
        let rows = sealedRows.map(TagRow.init)
        var present = [TagRow]()
        let existing = try statement(.tagsOfItem)
        existing.bind(1, found.rowid)
        try existing.forEach { row in present.append(TagRow(name: row.int64(0), value: row.value(1))) }
        // A record holds a handful of tags: comparing arrays beats hashing them. Sets take over
        // for large tag sets.
        let stale: [TagRow]
        let missing: [SealedTagRow]
        if rows.count + present.count <= 32 {
            stale = present.filter { !rows.contains($0) }
            missing = rows.indices.filter { !present.contains(rows[$0]) }.map { sealedRows[$0] }
        } else {
            let wanted = Set(rows)
            let had = Set(present)
            stale = present.filter { !wanted.contains($0) }
            missing = rows.indices.filter { !had.contains(rows[$0]) }.map { sealedRows[$0] }
        }
        if !stale.isEmpty {
            let delete = try statement(.deleteTagRow)
            for row in stale {
                delete.bind(1, found.rowid)
                delete.bind(2, row.name)
                delete.bind(3, row.value)
                try delete.execute()
            }
        }
        try insertTagRows(item: found.rowid, missing[...])
        try markMultiValued(multi)
    }

    func removeRow(_ rowid: Int64) throws {
        let deleteTags = try statement(.deleteTagsOfItem)
        deleteTags.bind(1, rowid)
        try deleteTags.execute()
        let deleteItem = try statement(.deleteItem)
        deleteItem.bind(1, rowid)
        try deleteItem.execute()
    }

    func insertTags(item: Int64, typeBlind: Data, tags: WalletTags) throws {
        guard !tags.isEmpty else { return }
        let (rows, multi) = Self.sealedTagRows(keys: keys, typeBlind: typeBlind, tags: tags)
        try insertTagRows(item: item, rows[...])
        try markMultiValued(multi)
    }

    /// Inserts tag rows of one item, up to ``tagRowsPerInsert`` per statement (a row already
    /// there, as a list's repeated value, is skipped).
    private func insertTagRows(item: Int64, _ rows: ArraySlice<SealedTagRow>) throws {
        var rest = rows
        while !rest.isEmpty {
            let chunk = rest.prefix(Self.tagRowsPerInsert)
            rest = rest.dropFirst(chunk.count)
            let insert: DirectStatement
            if let prepared = memo.tagInserts[chunk.count] {
                insert = prepared
            } else {
                let values = Array(repeating: "(?, ?, ?)", count: chunk.count).joined(separator: ", ")
                insert = try DirectStatement(db, sql: "INSERT OR IGNORE INTO \(keys.tables.tags)(item, name, value) VALUES \(values)")
                memo.tagInserts[chunk.count] = insert
            }
            var parameter: Int32 = 1
            for row in chunk {
                insert.bind(parameter, item)
                insert.bind(parameter + 1, row.name)
                insert.bind(parameter + 2, row.value)
                parameter += 3
            }
            try insert.execute()
        }
    }

    /// One row of the tag index: the name's blind index (as stored, see ``BlindColumn``) and the
    /// value (plaintext for `~` tags, else its blind index).
    struct TagRow: Hashable {
        let name: Int64
        let value: DatabaseValue
    }

    /// The index rows of `tags` as the check compares them with the file's (see
    /// ``sealedTagRows(keys:typeBlind:tags:)``).
    func tagRows(typeBlind: Data, tags: WalletTags) -> (rows: [TagRow], multiValued: [Int64]) {
        let (rows, multi) = Self.sealedTagRows(keys: keys, typeBlind: typeBlind, tags: tags)
        return (rows.map(TagRow.init), multi)
    }

    /// Records that these plaintext tag names hold several values in some record (never undone).
    private func markMultiValued(_ names: [Int64]) throws {
        guard !names.isEmpty else { return }
        let statement = try db.cachedStatement(sql: "INSERT OR IGNORE INTO \(keys.tables.tagMulti)(name) VALUES (?)")
        for name in names { try statement.execute(arguments: [name]) }
    }
}
