// What a PostgreSQL profile offers beyond single records, as the command line uses it on SQLite:
// one-snapshot search pages, removing every match, checking, compacting, re-protecting under a
// new key (and rotating the profile's own key), and exporting a backup in the SQLite wallet's
// backup format.

#if PostgreSQL
import CofferCrypto
import CofferSync
import Foundation
import PostgresNIO

extension PostgresWallet {
    /// Rows read at a time by a whole-profile walk (check, rotation, export).
    static let walkBatch = 500

    // MARK: Search pages and removal

    /// One search page in the SQLite wallet's shape (``SearchPage``): the total count (when
    /// asked for) and up to `count` records (every match when nil), read in one read-only
    /// transaction so they agree.
    /// - Throws: ``WalletError/invalidInput(_:)`` for a `count` below 1.
    public func search(type: String, matching query: WalletQuery, options: SearchOptions = SearchOptions(), count: Int? = nil)
        async throws -> SearchPage
    {
        try Validate.type(type)
        if let count, count < 1 { throw WalletError.invalidInput("count must be at least 1, got \(count)") }
        return try await transaction(readOnly: true) { tx in
            var page = SearchPage()
            if options.retrieveTotalCount { page.totalCount = try await tx.count(type: type, matching: query) }
            if options.retrieveRecords {
                let want = count ?? Int.max
                var records = [WalletRecord]()
                var next: String?
                repeat {
                    let part = try await tx.search(
                        type: type, query: query, options: options.recordOptions, limit: min(1000, want - records.count), after: next)
                    records += part.records
                    next = part.next
                } while next != nil && records.count < want
                page.records = records
            }
            return page
        }
    }

    /// Removes every live record of `type` matching `query`, in one transaction; returns how
    /// many went.
    @discardableResult
    public func removeAll(type: String, matching query: WalletQuery = .all) async throws -> Int {
        try Validate.type(type)
        return try await transaction { tx in try await tx.removeMatching(type: type, query: query) }
    }

    private func removeMatching(type: String, query: WalletQuery) async throws -> Int {
        try await call {
            var ids = [Int64]()
            // A credential's signature (a secret) goes with it, in the same transaction, as on SQLite.
            let signatureType = keys.typeBlind(SecretTypes.credentialSignature)
            var signatures = [Data]()
            try await forEachCandidate(type: type, query: query, value: .skipped) { row, contents in
                guard query.matches(contents.tags) else { return }
                ids.append(row.rowid)
                if type == SecretTypes.credential { signatures.append(keys.idBlind(typeBlind: signatureType, id: contents.id)) }
            }
            guard !ids.isEmpty else { return 0 }
            let profile = number
            let gone = ids
            let signatureColumn = BlindColumn.value(signatureType)
            let signatureNames = signatures.map { ByteBuffer(bytes: $0) }
            return try await store.withConnection { connection in
                if !signatureNames.isEmpty {
                    // Signatures have no tag rows: their item rows are all there is. Their type is
                    // reserved, which no observation can name: their removal notifies no one.
                    try await connection.send(
                        "DELETE FROM coffer_items WHERE profile = \(profile) AND type = \(signatureColumn) AND name = ANY(\(signatureNames)::bytea[])",
                        logger: PostgresStore.logger)
                }
                try await connection.send(
                    "DELETE FROM coffer_tags WHERE profile = \(profile) AND item = ANY(\(gone)::bigint[])", logger: PostgresStore.logger)
                var removed = 0
                for try await (n, _) in try await connection.send(
                    """
                    WITH item AS (DELETE FROM coffer_items WHERE profile = \(profile) AND id = ANY(\(gone)::bigint[]) RETURNING type),
                    \(unescaped: PostgresStore.notifySQL(profile: String(profile), types: "item"))
                    SELECT (SELECT count(*) FROM item), (SELECT count(*) FROM notified)
                    """, logger: PostgresStore.logger
                ).decode((Int64, Int64).self) {
                    removed = Int(n)
                }
                return removed
            }
        }
    }

    /// Rows read at a time by ``forEachCandidate(type:query:value:_:)``.
    static let candidateBatch = 1000

    /// Opens every live record of `type` the server's part of `query` lets through (a superset
    /// of its matches: see ``compiled(type:query:keys:)``), a page at a time in row order, and
    /// hands each row and its contents (the value read as `value` says) to `body`, which applies
    /// the rest of the query. When the server's part is the whole query (`exact`), a row whose
    /// sealed tags do not match is ``WalletError/corrupted(_:)`` (an altered tag index).
    func forEachCandidate(
        type: String, query: WalletQuery, value: RecordCodec.ValueMode,
        _ body: (StoredItem, RecordCodec.Contents) throws -> Void
    ) async throws {
        let held = sealing
        let keys = held.keys
        let tb = keys.typeBlind(type)
        let t = BlindColumn.value(tb)
        let (search, first) = try compiled(type: type, query: query, keys: keys, allowRange: Self.candidateBatch >= Self.rangePageMinimum)
        var plan = first
        let now = unixMillis(Date())
        var after: Int64 = 0
        while true {
            // The page reads the profile's generation too: a reader whose key was rotated away
            // (it would find nothing) gets wrongKey.
            let rows = try await pageRows(
                search, plan, after: after, limit: Self.candidateBatch, now: now, type: t, keys: keys, gate: held.gate)
            plan = Self.fallbackPlan(search)
            for row in rows {
                let contents = try RecordCodec.open(
                    row.sealed, typeBlind: tb, idBlind: row.name, expiry: row.expiry, keys: keys, expectedType: type, value: value)
                // Where the server's part is the whole query, every row it selects matches: one
                // whose sealed tags do not was let through by an altered tag index, as on SQLite.
                if search.exact, !query.matches(contents.tags) { throw WalletError.indexDisagrees }
                try body(row, contents)
            }
            guard let last = rows.last, rows.count == Self.candidateBatch else { return }
            after = last.rowid
        }
    }

    /// The type columns of the reserved types (the wallet's secrets) in this profile.
    func reservedTypeColumns() -> Set<Int64> { Set(SecretTypes.reserved.map { BlindColumn.value(keys.typeBlind($0)) }) }

    // MARK: Walking every row of the profile

    /// A row of the profile as a whole-profile walk reads it.
    struct WalkRow: Sendable {
        let rowid: Int64
        let type: Int64
        let idBlind: Data
        let sealed: Data
        let expiry: Int64?
    }

    /// A walked row opened under the profile's key, with its type: a reserved type's value (a
    /// key's secret) is read as bytes, never into a `String`. The rotation and the export both
    /// read every row this way. `failing` ends the message of a row that holds no type.
    func openWalked(_ row: WalkRow, reserved: Set<Int64>, failing suffix: String = "") throws -> (
        type: String, contents: RecordCodec.Contents
    ) {
        let contents = try RecordCodec.open(
            row.sealed, typeBlind: BlindColumn.blind(row.type), idBlind: row.idBlind, expiry: row.expiry, keys: keys,
            value: reserved.contains(row.type) ? .bytes : .text)
        guard let type = contents.type else {
            throw WalletError.corrupted("the record in row \(row.rowid) of \(label) does not hold its type\(suffix)")
        }
        return (type, contents)
    }

    /// Up to ``walkBatch`` rows of the profile after row `after` (live or expired), in row order.
    func walk(after: Int64) async throws -> [WalkRow] {
        let profile = number
        let limit = Self.walkBatch
        return try await store.withConnection { connection in
            var out = [WalkRow]()
            for try await (id, type, name, value, expiry) in try await connection.send(
                "SELECT id, type, name, value, expiry FROM coffer_items WHERE profile = \(profile) AND id > \(after) ORDER BY id LIMIT \(limit)",
                logger: PostgresStore.logger
            ).decode((Int64, Int64, Data, Data, Int64?).self) {
                out.append(WalkRow(rowid: id, type: type, idBlind: name, sealed: value, expiry: expiry))
            }
            return out
        }
    }

    /// One number a statement returns (a count or a size).
    func scalar(_ query: PostgresQuery) async throws -> Int {
        try await store.withConnection { connection in
            for try await n in try await connection.send(query, logger: PostgresStore.logger).decode(Int64.self) { return Int(n) }
            return 0
        }
    }

    // MARK: Check

    /// The storage seam's backend for this wallet's profile (``PostgresWalletStorage``): its
    /// writes hold the gate of the key this wallet holds now.
    var storage: PostgresWalletStorage { PostgresWalletStorage(store: store, gates: [number: sealing.gate]) }

    /// Checks the profile: every record (live or expired) opens under the profile's key, is
    /// stored under the blind type and id of the type and id sealed in it, and its tag rows
    /// are exactly the ones its sealed tags give (missing and extra rows, both ways); tag rows
    /// of the profile that belong to none of its records, and rows sharing a type and id, are
    /// found too. It reads one state of the database (a read-only REPEATABLE READ transaction)
    /// and changes nothing. It is the wallet file's check (``Wallet/checkIntegrity(progress:)``),
    /// the same code over the storage seam, without the file's own steps.
    ///
    /// There is no record-version digest on PostgreSQL (the key never reaches the server, so
    /// no trigger can keep one): a record rolled back to an older sealed version of itself, or
    /// deleted with its tag rows, is not found. See docs/wallet-threat-model.md.
    /// - Parameter progress: called with records checked so far and the total.
    /// - Returns: the report in the SQLite check's shape.
    public func checkIntegrity(progress: (@Sendable (BackupProgress) -> Void)? = nil) async throws -> IntegrityReport {
        try checkOpen()
        let keys = self.keys
        let storage = self.storage
        return try await storage.read(keys.tables) { tx in
            var report = IntegrityReport()
            try await IntegrityCheck.run(tx, keys: keys, digest: storage.digestKeeping, into: &report, progress: progress)
            return report
        }
    }

    // MARK: Compact

    /// Runs `VACUUM (ANALYZE)` on the wallet's tables: the space of deleted and updated rows
    /// becomes reusable and the planner's statistics are refreshed. The tables hold every
    /// profile of the database, so this is for the whole database's wallet, not one profile.
    /// PostgreSQL gives space back to the file system only from the tables' ends (VACUUM FULL,
    /// which locks the tables, is left to the operator).
    /// - Returns: the tables' bytes (with their indexes) before and after.
    @discardableResult
    public func compact() async throws -> (bytesBefore: Int, bytesAfter: Int) {
        try await call {
            let size: PostgresQuery =
                "SELECT (pg_total_relation_size('coffer_items') + pg_total_relation_size('coffer_tags'))::bigint"
            let before = try await scalar(size)
            _ = try await store.withConnection { connection in
                try await connection.send("VACUUM (ANALYZE) coffer_items, coffer_tags", logger: PostgresStore.logger)
            }
            return (bytesBefore: before, bytesAfter: try await scalar(size))
        }
    }

    // MARK: Rekey and rotation

    /// Protects the profile with `newKey` from now on: a new salt and store key seal the
    /// profile's own key (its records stay as they are, so the cost does not depend on their
    /// number). With `rotatingKey`, the profile's own key is replaced too, and every record of
    /// it (live or expired) is re-sealed and its blind indexes recomputed — in ONE transaction:
    /// a failure, a lost connection or a killed process leaves the profile as it was, under
    /// the old key. Other profiles are not touched.
    ///
    /// A rotation waits for the profile's writes under way (and re-seals what they wrote); this
    /// wallet then goes on under the new key. A `PostgresWallet` opened before it, in this process
    /// or another, still holds the old key: its writes are refused with
    /// ``WalletError/wrongKey(_:)`` and keep nothing (open the profile again with its current
    /// key), and its reads find nothing.
    /// - Parameters:
    ///   - newKey: the raw key or passphrase that opens the profile from now on.
    ///   - rotatingKey: whether to replace the profile's own key and re-seal every record.
    ///   - progress: called with records re-sealed so far and the total (rotation only).
    public func rekey(
        to newKey: WalletKey, rotatingKey: Bool = false, progress: (@Sendable (BackupProgress) -> Void)? = nil
    ) async throws {
        try await rekey(to: newKey, rotatingKey: rotatingKey, configuration: .init(), progress: progress)
    }

    /// ``rekey(to:rotatingKey:progress:)`` with a passphrase's Argon2id costs other than the
    /// defaults. A rotation refuses the later writes of wallets opened before it, as
    /// ``rekey(to:rotatingKey:progress:)`` says.
    /// - Parameters:
    ///   - newKey: the raw key or passphrase that opens the profile from now on.
    ///   - rotatingKey: whether to replace the profile's own key and re-seal every record.
    ///   - configuration: the passphrase's Argon2id costs.
    ///   - progress: called with records re-sealed so far and the total (rotation only).
    public func rekey(
        to newKey: WalletKey, rotatingKey: Bool = false, configuration: Wallet.Configuration,
        progress: (@Sendable (BackupProgress) -> Void)? = nil
    ) async throws {
        // Inside a transaction it would re-seal that transaction's snapshot without first waiting
        // for the profile's other writers.
        guard store.pinned == nil, store.held == nil else {
            throw WalletError.invalidInput(
                "rekey cannot run inside a PostgresWallet transaction or withConnection view; call it on the wallet itself")
        }
        let (storeKey, kdf) = try Wallet.makeStoreKey(newKey, parameters: configuration.passphraseParameters)
        let kdfData = Data(kdf.jsonText.utf8)
        let held = sealing
        let tables = held.keys.tables
        let newKeys = rotatingKey ? WalletKeys(master: SecretKey.random(), tables: tables) : nil
        let sealed = try Wallet.sealMaster(newKeys?.master ?? held.keys.master, storeKey: storeKey, tables: tables)
        // The transaction takes the profile's gate exclusively in its first statement: writes
        // under way finish first (and are re-sealed), writes after it wait and are then refused,
        // so nothing acknowledged is left sealed under the old key. A rekey without rotation
        // keeps the generation: writers holding the profile's key go on.
        let seen = sealedKeysSeen.withLock { $0 }
        let generation = try await transaction(readOnly: false, exclusive: true) { tx in
            try await tx.call {
                // The gate's row lock keeps another rekey out until this one ends; one that
                // committed before it replaced the sealed key this wallet saw.
                if let seen { try await tx.checkSealedKeysUnchanged(seen) }
                if let newKeys { try await tx.reseal(to: newKeys, progress: progress) }
                let profile = tx.number
                let step: Int64 = newKeys == nil ? 0 : 1
                let label = tx.label
                return try await tx.store.withConnection { connection in
                    for try await generation in try await connection.send(
                        """
                        UPDATE coffer_profiles SET kdf = \(kdfData), keys = \(sealed), generation = generation + \(step)
                        WHERE number = \(profile) RETURNING generation
                        """, logger: PostgresStore.logger
                    ).decode(Int64.self) {
                        return generation
                    }
                    throw WalletError.walletMissing(path: label)
                }
            }
        }
        sealedKeysSeen.withLock { $0 = sealed }
        // This wallet goes on under the new key (as a wallet file's rotating `Wallet` does).
        if let newKeys { rotated(to: newKeys, generation: generation) }
        // Searches opened under the old keys go, as on SQLite.
        if rotatingKey { searches.closeAll() }
    }

    /// Inside a rekey's transaction: refuses to replace the profile's sealed key when it is no
    /// longer `seen`, the one this wallet last saw, that is, when a rekey by another process (or
    /// another open ``PostgresWallet`` of the profile) set another key since. The later of two
    /// rekeys would otherwise win silently, and the key the first one reported as set would
    /// open nothing.
    private func checkSealedKeysUnchanged(_ seen: Data) async throws {
        let profile = number
        let stored: Data? = try await store.withConnection { connection in
            for try await keys in try await connection.send(
                "SELECT keys FROM coffer_profiles WHERE number = \(profile)", logger: PostgresStore.logger
            ).decode(Data.self) {
                return keys
            }
            return nil
        }
        guard let stored else { throw WalletError.walletMissing(path: label) }
        guard stored != seen else { return }
        throw WalletError.wrongKey(
            "the profile's key was changed (by a rekey in another process, or another open PostgresWallet of this profile) after this one was opened; nothing was changed. Open the profile again with its current key and retry"
        )
    }

    /// Re-seals every row of the profile under `new` (inside the caller's transaction).
    private func reseal(to new: WalletKeys, progress: (@Sendable (BackupProgress) -> Void)?) async throws {
        let profile = number
        let total = try await scalar("SELECT count(*) FROM coffer_items WHERE profile = \(profile)")
        let reserved = reservedTypeColumns()
        var after: Int64 = 0
        var done = 0
        while true {
            let rows = try await walk(after: after)
            guard let last = rows.last else { break }
            var ids = [Int64]()
            var types = [Int64]()
            var names = [ByteBuffer]()
            var boxes = [ByteBuffer]()
            var tagItems = [Int64]()
            var tags = [PostgresTagRow]()
            for row in rows {
                let (type, contents) = try openWalked(row, reserved: reserved, failing: "; nothing was changed")
                let tb = new.typeBlind(type)
                let ib = new.idBlind(typeBlind: tb, id: contents.id)
                ids.append(row.rowid)
                types.append(BlindColumn.value(tb))
                names.append(ByteBuffer(bytes: ib))
                boxes.append(ByteBuffer(bytes: RecordCodec.seal(contents, typeBlind: tb, idBlind: ib, expiry: row.expiry, keys: new)))
                for tag in Self.tagRows(keys: new, typeBlind: tb, tags: contents.tags) {
                    tagItems.append(row.rowid)
                    tags.append(tag)
                }
            }
            let (tagNames, tagValues, numbered, numbers) = PostgresStore.tagArrays(tags)
            let batch = (ids, types, names, boxes, tagItems)
            _ = try await store.withConnection { connection in
                let (ids, types, names, boxes, tagItems) = batch
                // Observers hear of the old types (the statement's snapshot reads the rows as they
                // were) and of the new ones.
                try await PostgresStore.drain(
                    """
                    WITH moved AS (
                        UPDATE coffer_items i SET type = r.type, name = r.name, value = r.value, version = i.version + 1
                        FROM unnest(\(ids)::bigint[], \(types)::bigint[], \(names)::bytea[], \(boxes)::bytea[]) AS r(id, type, name, value)
                        WHERE i.id = r.id AND i.profile = \(profile)
                        RETURNING i.type
                    ), item AS (
                        SELECT type FROM moved
                        UNION SELECT type FROM coffer_items WHERE profile = \(profile) AND id = ANY(\(ids)::bigint[])
                    ), \(unescaped: PostgresStore.notifySQL(profile: String(profile), types: "item"))
                    SELECT count(*) FROM notified
                    """, on: connection)
                try await connection.send(
                    "DELETE FROM coffer_tags WHERE profile = \(profile) AND item = ANY(\(ids)::bigint[])", logger: PostgresStore.logger)
                // The new names of tags a record holds several values of are marked too.
                try await PostgresStore.drain(
                    """
                    WITH tagged AS (
                        INSERT INTO coffer_tags(item, profile, name, value, num)
                        SELECT t.i, \(profile), t.n, t.v, CASE WHEN t.h THEN t.x END
                        FROM unnest(\(tagItems)::bigint[], \(tagNames)::bigint[], \(tagValues)::bytea[], \(numbered)::boolean[], \(numbers)::double precision[]) AS t(i, n, v, h, x)
                        RETURNING item, name
                    ), \(unescaped: PostgresStore.markTaggedSQL(profile: String(profile)))
                    SELECT count(*) FROM tagged
                    """, on: connection)
            }
            done += rows.count
            after = last.rowid
            progress?(BackupProgress(done: done, total: total))
            TestPause.at("postgres-rotate-batch") // debug builds only: lets tests kill a rotation midway
        }
        // Tag rows of the profile that belonged to no record would stay blinded under the old key.
        _ = try await store.withConnection { connection in
            try await connection.send(
                "DELETE FROM coffer_tags t WHERE t.profile = \(profile) AND NOT EXISTS (SELECT 1 FROM coffer_items i WHERE i.id = t.item AND i.profile = \(profile))",
                logger: PostgresStore.logger)
        }
    }

    // MARK: Export

    /// Writes every record of the profile (live or expired) into `url` as a backup in the SQLite
    /// wallet's format (``Wallet/exportBackup(to:key:firstFormatTypes:progress:)``: `coffer
    /// wallet import-backup` restores it into a wallet file), encrypted under `backupKey`;
    /// returns the number of records written. It reads one state of the database (a read-only
    /// transaction) a batch at a time, and builds the file under a hidden name beside `url`
    /// that is renamed into place once complete: a failed or killed export leaves nothing at `url`.
    ///
    /// `firstFormatTypes` is accepted for the signature ``RecordWallet`` shares with the SQLite
    /// wallet and has nothing to name here: every record in PostgreSQL was sealed with its type.
    @discardableResult
    public func exportBackup(
        to url: URL, key backupKey: BackupKey, firstFormatTypes: [String] = [], progress: (@Sendable (BackupProgress) -> Void)? = nil
    ) async throws -> Int {
        try checkOpen()
        let writer = Handoff(try SecretStreamWriter(key: backupKey.key))
        var head = Data(BackupFormat.magic)
        head.append(BackupFormat.version)
        Wallet.appendU32(UInt32(backupKey.parameters.opsLimit), to: &head)
        Wallet.appendU32(UInt32(backupKey.parameters.memLimit / 1024), to: &head)
        head.append(backupKey.salt)
        head.append(writer.value.header)
        let file: DurableFileWriter
        do { file = try DurableFileWriter(target: url) } catch {
            throw WalletError.storage("cannot write the backup to \(url.path): \(error.message)", cause: StorageCause(error))
        }
        let handedFile = Handoff(file)
        let start = head
        let keys = self.keys
        // Every record on PostgreSQL was sealed with its type: the names say only which types
        // hold the wallet's secrets (their values are read as bytes, never into a `String`).
        let names = Dictionary(SecretTypes.reserved.map { (BlindColumn.value(keys.typeBlind($0)), $0) }) { first, _ in first }
        do {
            let total = try await storage.read(keys.tables) { tx in
                try await BackupExport.write(
                    tx, keys: keys, names: names, start: start, writer: writer.value, file: handedFile.value, progress: progress)
            }
            try file.commit()
            return total
        } catch {
            file.abandon()
            if let e = error as? FileOperationError {
                throw WalletError.storage("cannot write the backup to \(url.path): \(e.message)", cause: StorageCause(e))
            }
            throw error
        }
    }
}
#endif
