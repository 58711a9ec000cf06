// Record operations inside one transaction: validation, blinding and sealing above the storage
// seam; every row it reads or writes goes through the backend's transaction (`SQLiteRows`).

import CofferCrypto
import CofferSync
import Foundation

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

/// Milliseconds since 1970 for the expiry column (held at `Int64.max` for a date past it: an
/// import's `expiresAt` of 2^63 − 1 ms round-trips through `Date` to there).
func unixMillis(_ date: Date) -> Int64 { Int64(saturating: date.timeIntervalSince1970 * 1000, rounding: .down) }

/// Record reads and writes inside the caller's transaction.
struct RecordStore {
    /// The profile's rows in this transaction (the storage seam; see ``WalletStorageTransaction``).
    let rows: SQLiteRows
    let keys: WalletKeys
    let now: Int64
    /// Whether reserved (secret) types may be touched: only the wallet's own secrets code says yes.
    let allowReserved: Bool

    init(rows: SQLiteRows, keys: WalletKeys, now: Date = Date(), allowReserved: Bool = false) {
        self.rows = rows
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
        guard let item = try rows.locate(type: BlindColumn.value(tb), name: ib) else { return nil }
        return Located(
            type: type, rowid: item.rowid, typeBlind: tb, idBlind: ib, sealed: item.sealed, expiry: item.expiry,
            expired: item.expiry.map { $0 <= now } ?? false)
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
    /// key's storage into the wiped plaintext buffer (`value` is then ignored); with
    /// `valueBytes`, its value is those bytes (a reserved secret's text, never a `String`).
    func add(
        type: String, id: String, value: String, tags: WalletTags, expiresAt: Date?, secret: SecretKey? = nil,
        valueBytes: SecretKey? = nil
    ) throws {
        try insert(
            Self.prepareAdd(
                keys: keys, type: type, id: id, value: value, tags: tags, expiresAt: expiresAt, allowReserved: allowReserved,
                secret: secret, valueBytes: valueBytes))
    }

    /// Writes a record ``prepareAdd(keys:type:id:value:tags:expiresAt:allowReserved:secret:)``
    /// sealed: its item row, then its tag rows.
    /// - Throws: ``WalletError/duplicate(type:id:)`` when a live record has its type and id (an
    ///   expired one gives way).
    func insert(_ record: SealedRecord) throws {
        let type = BlindColumn.value(record.typeBlind)
        let rowid: Int64
        switch try rows.insertItem(type: type, name: record.idBlind, sealed: record.sealed, expiry: record.expiry) {
        case .inserted(let inserted): rowid = inserted
        case .duplicate:
            // The unique (type, id) index answers "does it exist" without a lookup first; an
            // expired record gives way, a live one is a duplicate.
            guard let existing = try locate(type: record.type, id: record.id), existing.expired else {
                throw WalletError.duplicate(type: record.type, id: record.id)
            }
            try removeRow(existing.rowid)
            guard
                case .inserted(let inserted) = try rows.insertItem(
                    type: type, name: record.idBlind, sealed: record.sealed, expiry: record.expiry)
            else { throw WalletError.duplicate(type: record.type, id: record.id) }
            rowid = inserted
        }
        try undoingOnFailure(
            {
                guard !record.tagRows.isEmpty else { return }
                try rows.insertTags(item: rowid, record.tagRows[...])
                try rows.markMultiValued(names: record.multiValued)
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
            let signature = try rows.takeItem(type: BlindColumn.value(tb), name: keys.idBlind(typeBlind: tb, id: id))
            do { try deleteRecord(type: type, id: id) } catch {
                if let signature { try? rows.restoreItem(signature) }
                throw error
            }
            return
        }
        try deleteRecord(type: type, id: id)
    }

    /// Whether the wallet holds any credential signature (asked once per transaction: within one,
    /// only the secrets code, in transactions of its own, adds them).
    private func hasSignatures() throws -> Bool {
        // Learnt once per transaction, kept in the backend's memo (one allocation per store).
        if let known = rows.memo.hasSignatures { return known }
        let found = try rows.containsType(BlindColumn.value(keys.typeBlind(SecretTypes.credentialSignature)))
        rows.memo.hasSignatures = found
        return found
    }

    private func deleteRecord(type: String, id: String) throws {
        let tb = keys.typeBlind(type)
        let ib = keys.idBlind(typeBlind: tb, id: id)
        // Read what an undo would need, then delete by row id. (`DELETE … RETURNING` does it in
        // one statement, but SQLite buffers returned rows in a temporary table: slower.)
        guard let found = try rows.locateLive(type: BlindColumn.value(tb), name: ib, now: now) else {
            throw WalletError.notFound(type: type, id: id)
        }
        try rows.deleteItem(rowid: found.rowid)
        // Index rows of a missing item never match (every walk joins items), but put the item
        // back if they cannot be removed, so the call changes nothing.
        try undoingOnFailure({ try rows.deleteTags(item: found.rowid) }, undo: { try rows.restoreItem(found) })
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
        try RecordCodec.checkSealedID(contents.id, id)
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
        try RecordCodec.checkSealedID(contents.id, id)
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
        try RecordCodec.checkSealedID(contents.id, id)
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
                try rows.updateSealed(rowid: found.rowid, sealed: found.sealed)
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
        try rows.updateSealed(rowid: found.rowid, sealed: sealed)
    }

    /// Makes the record's tag rows those of `tags`, touching only the rows that differ: a
    /// replace that keeps a tag (the common case) writes no index entry for it.
    private func replaceTags(_ found: Located, _ wanted: [TagRow], multi: [Int64]) throws {
        let present = try rows.tags(item: found.rowid)
        // A record holds a handful of tags: comparing arrays beats hashing them. Sets take over
        // for large tag sets.
        let stale: [TagRow]
        let missing: [TagRow]
        if wanted.count + present.count <= 32 {
            stale = present.filter { !wanted.contains($0) }
            missing = wanted.filter { !present.contains($0) }
        } else {
            let wantedSet = Set(wanted)
            let had = Set(present)
            stale = present.filter { !wantedSet.contains($0) }
            missing = wanted.filter { !had.contains($0) }
        }
        for row in stale { try rows.deleteTag(item: found.rowid, row) }
        try rows.insertTags(item: found.rowid, missing[...])
        try rows.markMultiValued(names: multi)
    }

    func removeRow(_ rowid: Int64) throws {
        try rows.deleteTags(item: rowid)
        try rows.deleteItem(rowid: rowid)
    }

    func insertTags(item: Int64, typeBlind: Data, tags: WalletTags) throws {
        guard !tags.isEmpty else { return }
        let (wanted, multi) = Self.sealedTagRows(keys: keys, typeBlind: typeBlind, tags: tags)
        try rows.insertTags(item: item, wanted[...])
        try rows.markMultiValued(names: multi)
    }

    /// One row of the tag index: the name's blind index (as stored, see ``BlindColumn``) and the
    /// value (plaintext for `~` tags, else its blind index).
    typealias TagRow = StoredTag

    /// The index rows of `tags` as the check compares them with the file's (see
    /// ``sealedTagRows(keys:typeBlind:tags:)``).
    func tagRows(typeBlind: Data, tags: WalletTags) -> (rows: [TagRow], multiValued: [Int64]) {
        Self.sealedTagRows(keys: keys, typeBlind: typeBlind, tags: tags)
    }
}
