// Bulk import into a PostgreSQL wallet profile: the records are read, checked, sealed and blinded
// on a thread of their own, streamed to the server with COPY into a temporary staging table, and
// moved into the wallet's tables by one INSERT … SELECT, all in one transaction (all or nothing).
// The staging rows hold what the wallet's rows hold (blind indexes, sealed boxes, `~` tag text):
// nothing secret reaches the server.

#if PostgreSQL
import CofferCrypto
import CofferSync
import Foundation
import GRDB
import PostgresNIO

/// One record on its way into an import.
struct PostgresImportRecord {
    let type: String
    let id: String
    let value: String
    let tags: WalletTags
    /// Unix milliseconds, or nil for a record that does not expire.
    let expiry: Int64?
}

/// Where an import's records come from: calls `add` with each one, in order, on the import's own
/// thread (it may block, read files and derive keys), and returns what the caller reports.
/// An error it throws (or that `add` throws for a record it cannot hold) ends the import with
/// nothing written.
typealias PostgresImportSource<Summary: Sendable> = @Sendable (_ add: (PostgresImportRecord) throws -> Void) throws -> Summary

extension PostgresWallet {
    /// Imports records from a JSON-lines file into this profile, one object per line, as
    /// ``Wallet/importRecords(fromJSONLines:progress:)`` reads them (blank lines skipped). All or
    /// nothing in one transaction; a malformed line, an invalid record or a duplicate is an error
    /// naming it, and nothing is imported. Streamed: the file is read 1 MiB at a time and the
    /// sealed rows sent with COPY as they are made, so memory stays flat at any size.
    /// - Returns: the number of records imported.
    /// - Throws: ``WalletError/invalidInput(_:)`` naming the line, ``WalletError/duplicate(type:id:)``.
    @discardableResult
    public func importRecords(fromJSONLines url: URL, progress: (@Sendable (ImportProgress) -> Void)? = nil) async throws -> Int {
        try checkOpen()
        let handle = try Wallet.openInput(url, naming: "the records file")
        defer { try? handle.close() }
        let totalBytes = (try? FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int) ?? 0
        let lines = Handoff(JSONLinesReader(handle: handle, path: url.path))
        return try await importing(allowReserved: false) { add in
            let reader = lines.value
            var count = 0
            while let (number, text) = try reader.next() {
                let r = try Wallet.importLine(text, number: number)
                do {
                    try add(PostgresImportRecord(type: r.type, id: r.id, value: r.value, tags: r.tags, expiry: r.expiry))
                } catch let error as WalletError {
                    throw Wallet.atLine(number, error)
                }
                count += 1
                if count % 1_000 == 0 {
                    progress?(ImportProgress(records: count, bytesRead: reader.bytesRead, totalBytes: totalBytes))
                }
            }
            progress?(ImportProgress(records: count, bytesRead: reader.bytesRead, totalBytes: totalBytes))
            return count
        }.summary
    }

    /// Imports every record of a libindy wallet into this profile, as
    /// ``Wallet/importIndyWallet(at:key:keyDerivation:progress:)`` does into a wallet file: the
    /// source read-only in one snapshot, all or nothing, streamed.
    /// - Throws: as ``Wallet/importIndyWallet(at:key:keyDerivation:progress:)``.
    @discardableResult
    public func importIndyWallet(
        at url: URL, key: String, keyDerivation: IndyKeyDerivation = .raw,
        progress: (@Sendable (ForeignImportProgress) -> Void)? = nil
    ) async throws -> ForeignImportSummary {
        try checkOpen()
        let source = try await offCaller { try IndyWalletSource.open(at: url, key: key, derivation: keyDerivation) }
        return try await importForeign(source, profile: nil, progress: progress)
    }

    /// Imports the records of one profile of an Aries Askar store into this profile, as
    /// ``Wallet/importAskarStore(at:key:profile:skipKeyEntries:progress:)`` does into a wallet
    /// file (expired records are passed over, the others keep their expiry).
    /// - Throws: as ``Wallet/importAskarStore(at:key:profile:skipKeyEntries:progress:)``.
    @discardableResult
    public func importAskarStore(
        at url: URL, key: String, profile: String? = nil, skipKeyEntries: Bool = false,
        progress: (@Sendable (ForeignImportProgress) -> Void)? = nil
    ) async throws -> ForeignImportSummary {
        try checkOpen()
        let source = try await offCaller {
            try AskarStoreSource.open(at: url, key: key, profile: profile, skipKeyEntries: skipKeyEntries)
        }
        return try await importForeign(source, profile: source.profile, progress: progress)
    }

    /// Adds many records with COPY, all or nothing in one transaction (``addAll(_:batchSize:)``
    /// sends one multi-row statement per batch instead); a record whose type and id are live in
    /// the profile, or twice in `records`, is refused by name and nothing is written.
    /// - Returns: the number of records added.
    @discardableResult
    public func importAll(_ records: [(type: String, id: String, value: String, tags: WalletTags)]) async throws -> Int {
        try checkOpen()
        let handed = Handoff(records)
        return try await importing(allowReserved: false) { add in
            for r in handed.value { try add(PostgresImportRecord(type: r.type, id: r.id, value: r.value, tags: r.tags, expiry: nil)) }
            return handed.value.count
        }.summary
    }

    private func importForeign(
        _ source: some ForeignSource, profile: String?, progress: (@Sendable (ForeignImportProgress) -> Void)?
    ) async throws -> ForeignImportSummary {
        let queue = source.queue
        defer {
            try? queue.close()
            source.companions.removeCreated()
        }
        return try await importing(allowReserved: false) { add in
            try withoutActuallyEscaping(add) { add in
                try Wallet.readForeign(source, profile: profile, progress: progress) { walk in
                    try walk { record in
                        try add(
                            PostgresImportRecord(
                                type: record.type, id: record.id, value: record.value, tags: record.tags, expiry: record.expiry))
                    }
                }
            }
        }.summary
    }

    /// Restores the backup at `backupURL` as a new profile `profile` of the PostgreSQL database
    /// `settings` names, protected by its own `key` (the tables are made when the database has
    /// none). The profile's catalogue row and every record are written in one transaction: on
    /// any error (a wrong passphrase is found before anything is written; a damaged or truncated
    /// backup, a kill at any moment) the database is as it was, without the profile, and every
    /// other profile is untouched. The returned wallet is the profile, opened anew.
    /// - Throws: ``WalletError/walletExists(path:)`` when the database has the profile already,
    ///   ``WalletError/wrongKey(_:)`` for a wrong backup passphrase, ``WalletError/corrupted(_:)``
    ///   for a damaged backup, ``WalletError/invalidInput(_:)`` for a malformed profile name or a
    ///   backup that cannot be read.
    public static func importBackup(
        from backupURL: URL, passphrase: String, settings: PostgresSettings, key: WalletKey, profile: String = "default",
        configuration: Wallet.Configuration = .init(), progress: (@Sendable (BackupProgress) -> Void)? = nil
    ) async throws -> PostgresWallet {
        try ProfileCatalogue.validate(profile)
        let backup = try Wallet.openBackup(backupURL, passphrase: passphrase)
        defer { try? backup.handle.close() }
        let (storeKey, kdf) = try Wallet.makeStoreKey(key, parameters: configuration.passphraseParameters)
        let master = SecretKey.random()
        let store = PostgresStore(settings: settings, client: PostgresClients.shared.acquire(settings))
        defer { PostgresClients.shared.release(settings) }
        do {
            try await store.migrate()
            let label = ProfileCatalogue.label(path: settings.label, profile: profile)
            let kdfText = Data(kdf.jsonText.utf8)
            _ = try await store.copyImport(
                allowReserved: true,
                profile: { connection in
                    guard
                        let number = try await store.addProfile(
                            on: connection, name: profile, kdf: kdfText,
                            seal: { try Wallet.sealMaster(master, storeKey: storeKey, tables: ProfileTables(name: profile, number: $0)) })
                    else { throw WalletError.walletExists(path: label) }
                    return (number, WalletKeys(master: master, tables: ProfileTables(name: profile, number: number)))
                },
                source: { add in
                    try Wallet.forEachBackupRecord(of: backup, progress: progress) { r in
                        try add(PostgresImportRecord(type: r.type, id: r.id, value: r.value, tags: r.tags, expiry: r.expiry))
                    }
                    return ()
                })
        } catch {
            throw PostgresStore.map(error, settings: settings)
        }
        return try await open(settings: settings, profile: profile, key: key)
    }

    /// Runs an import into this profile (see ``PostgresStore/copyImport(allowReserved:profile:source:)``).
    private func importing<Summary: Sendable>(allowReserved: Bool, _ source: @escaping PostgresImportSource<Summary>) async throws -> (
        count: Int, summary: Summary
    ) {
        let number = self.number
        let held = sealing
        do {
            let result = try await store.copyImport(
                allowReserved: allowReserved,
                profile: { connection in
                    // Held until the import commits: a rotation waits for it, or it for the rotation (and is refused).
                    try await PostgresStore.holdGate(held.gate, on: connection)
                    return (number, held.keys)
                }, source: source)
            if result.count >= Self.analyzeAfter { await store.analyze() }
            return result
        } catch {
            throw PostgresStore.map(error, settings: store.settings)
        }
    }
}

extension PostgresStore {
    /// The staging table's name (a temporary table, private to the importing session and dropped
    /// at the end of its transaction).
    static let stagingTable = "coffer_import"

    /// One row per record (`ord`, type blind `a`, id blind `b`, sealed box `c`, expiry `d`) and one
    /// per tag row (`ord` of its record, name blind `a`, value `b`, `c` NULL, number `x`).
    static let stagingSQL = """
        CREATE TEMPORARY TABLE \(stagingTable)(
            ord bigint NOT NULL, a bigint NOT NULL, b bytea NOT NULL, c bytea, d bigint, x double precision
        ) ON COMMIT DROP
        """

    /// Adds profile `name` inside the caller's transaction on `connection` (a backup's import:
    /// the profile and its records commit together); nil when it exists. It takes no lock (the
    /// profiles' lock is transaction-scoped and every open takes it: held for a whole import, it
    /// would stall them): the unique name and number decide. Another session making a profile
    /// of the same name or number meanwhile waits for this transaction, then fails on the
    /// duplicate; one that made it first is seen, and the next number is tried.
    func addProfile(on connection: PostgresConnection, name: String, kdf: Data, seal: (Int64) throws -> Data) async throws -> Int64? {
        for _ in 0..<Self.retries {
            for try await _ in try await connection.send("SELECT 1 FROM coffer_profiles WHERE name = \(name)", logger: Self.logger)
                .decode(Int.self)
            {
                return nil
            }
            var number: Int64 = 0
            if name != ProfileCatalogue.defaultName {
                for try await next in try await connection.send(
                    "SELECT COALESCE(MAX(number), 0) + 1 FROM coffer_profiles", logger: Self.logger
                ).decode(Int64.self) {
                    number = next
                }
            }
            let keys = try seal(number)
            for try await made in try await connection.send(
                """
                INSERT INTO coffer_profiles(number, name, kdf, keys) VALUES (\(number), \(name), \(kdf), \(keys))
                ON CONFLICT DO NOTHING RETURNING number
                """, logger: Self.logger
            ).decode(Int64.self) {
                return made
            }
        }
        throw WalletError.storage(
            "other sessions kept making profiles in \(settings.label) while profile \(WalletError.quote(name)) was being made; nothing was written: retry",
            cause: StorageCause(posix: .EAGAIN))
    }

    /// Rows the import has sent when the debug pause point `wallet-import-copying` is reached.
    static let importPauseAfter = 1_000

    /// One import, on one leased connection and in one transaction: `profile` (inside the
    /// transaction) names the profile and its keys; `source` runs on a thread of its own, whose
    /// records are checked, sealed and blinded there and streamed with COPY into the staging
    /// table; then the first duplicate (within the import, or a live record of the profile) is
    /// named, expired records the import replaces are removed, and one statement moves every
    /// staged record and tag row into the wallet's tables. Never retried (the source is read
    /// once): a serialization failure or deadlock is an error, and nothing is written.
    func copyImport<Summary: Sendable>(
        allowReserved: Bool, profile: @escaping @Sendable (PostgresConnection) async throws -> (number: Int64, keys: WalletKeys),
        source: @escaping PostgresImportSource<Summary>
    ) async throws -> (count: Int, summary: Summary) {
        let settings = self.settings
        return try await withConnection { connection in
            // Errors leave as WalletError: withConnection retries only the driver's own.
            do {
                return try await Self.runImport(connection, allowReserved: allowReserved, profile: profile, source: source)
            } catch {
                throw Self.mapInLease(error, settings: settings)
            }
        }
    }

    private static func runImport<Summary: Sendable>(
        _ connection: PostgresConnection, allowReserved: Bool,
        profile: @Sendable (PostgresConnection) async throws -> (number: Int64, keys: WalletKeys),
        source: @escaping PostgresImportSource<Summary>
    ) async throws -> (count: Int, summary: Summary) {
        try await connection.send("BEGIN", logger: logger)
        var feed: CopyFeed<Summary>?
        do {
            let (number, keys) = try await profile(connection)
            try await connection.send(PostgresQuery(unsafeSQL: stagingSQL), logger: logger)
            let started = CopyFeed<Summary>.start(keys: keys, allowReserved: allowReserved, source: source)
            feed = started
            var paused = false
            try await connection.copyFrom(table: stagingTable, columns: ["ord", "a", "b", "c", "d", "x"], logger: logger) { writer in
                while let (chunk, records) = try await started.next() {
                    try await writer.write(chunk)
                    if !paused, records >= importPauseAfter {
                        paused = true
                        // Debug builds only: lets a test kill the process with rows sent, uncommitted.
                        TestPause.at("wallet-import-copying")
                    }
                }
            }
            let (count, summary) = try started.result()
            if count > 0 {
                if let duplicate = try await firstDuplicate(connection, profile: number, now: unixMillis(Date())) {
                    let contents = try RecordCodec.open(
                        duplicate.sealed, typeBlind: BlindColumn.blind(duplicate.type), idBlind: duplicate.idBlind,
                        expiry: duplicate.expiry, keys: keys, value: .skipped)
                    throw WalletError.duplicate(type: contents.type ?? "", id: contents.id)
                }
                try await moveStaged(connection, profile: number, now: unixMillis(Date()))
                try await PostgresStore.notifyStaged(connection, profile: number)
            }
            try await connection.send("COMMIT", logger: logger)
            return (count, summary)
        } catch {
            if let feed {
                feed.stop()
                await feed.ended()
            }
            _ = try? await connection.send("ROLLBACK", logger: logger)
            throw error
        }
    }

    /// A staged record whose type and id are staged twice, or live in the profile; nil when
    /// there is none. Its sealed box names it (the staging rows hold no plaintext).
    private static func firstDuplicate(_ connection: PostgresConnection, profile: Int64, now: Int64) async throws -> (
        type: Int64, idBlind: Data, sealed: Data, expiry: Int64?
    )? {
        var ord: Int64?
        for try await found in try await connection.send(
            """
            SELECT min(ord) FROM (
                (SELECT min(ord) AS ord FROM coffer_import WHERE c IS NOT NULL GROUP BY a, b HAVING count(*) > 1 LIMIT 1)
                UNION ALL
                (SELECT r.ord FROM coffer_import r
                JOIN coffer_items i ON i.profile = \(profile) AND i.type = r.a AND i.name = r.b
                WHERE r.c IS NOT NULL AND (i.expiry IS NULL OR i.expiry > \(now)) LIMIT 1)
            ) d
            """, logger: logger
        ).decode(Int64?.self) {
            ord = found
        }
        guard let ord else { return nil }
        let rows = try await connection.send(
            "SELECT a, b, c, d FROM coffer_import WHERE c IS NOT NULL AND ord = \(ord)", logger: logger)
        for try await (type, idBlind, sealed, expiry) in rows.decode((Int64, Data, Data, Int64?).self) {
            return (type, idBlind, sealed, expiry)
        }
        return nil
    }

    /// Removes the profile's expired records the import replaces, then moves every staged record
    /// and tag row into the wallet's tables in one statement: row ids are drawn from the items'
    /// sequence in import order, so the tag rows join their record by its ordinal.
    private static func moveStaged(_ connection: PostgresConnection, profile: Int64, now: Int64) async throws {
        try await connection.send(
            """
            WITH gone AS (
                DELETE FROM coffer_items i USING coffer_import r
                WHERE r.c IS NOT NULL AND i.profile = \(profile) AND i.type = r.a AND i.name = r.b AND i.expiry <= \(now)
                RETURNING i.id
            )
            DELETE FROM coffer_tags WHERE item = ANY(ARRAY(SELECT id FROM gone))
            """, logger: logger)
        // The tag names a record holds several values of are marked in the same statement.
        try await PostgresStore.drain(
            """
            WITH r AS MATERIALIZED (
                SELECT ord, nextval('coffer_items_id_seq'::regclass) AS id
                FROM (SELECT ord FROM coffer_import WHERE c IS NOT NULL ORDER BY ord) staged
            ), item AS (
                INSERT INTO coffer_items(id, profile, type, name, value, expiry)
                SELECT r.id, \(profile), s.a, s.b, s.c, s.d FROM coffer_import s JOIN r ON r.ord = s.ord
                WHERE s.c IS NOT NULL ORDER BY r.id
            ), tagged AS (
                INSERT INTO coffer_tags(item, profile, name, value, num)
                SELECT r.id, \(profile), t.a, t.b, t.x FROM coffer_import t JOIN r ON r.ord = t.ord
                WHERE t.c IS NULL
                RETURNING item, name
            ), \(unescaped: PostgresStore.markTaggedSQL(profile: String(profile)))
            SELECT count(*) FROM tagged
            """, on: connection)
    }
}

// MARK: - Rows in COPY's text format

/// Staging rows in COPY's text format: tab-separated, `\N` for NULL, bytea as `\\x` and hex
/// (the backslash doubled, as COPY's text format escapes it).
struct CopyRows {
    private(set) var buffer = ByteBuffer()
    private static let hex: [UInt8] = Array("0123456789abcdef".utf8)

    var byteCount: Int { buffer.readableBytes }

    mutating func take() -> ByteBuffer {
        defer { buffer = ByteBuffer() }
        return buffer
    }

    /// A record's row.
    mutating func record(ord: Int64, type: Int64, idBlind: Data, sealed: Data, expiry: Int64?) {
        integer(ord)
        tab()
        integer(type)
        tab()
        bytes(idBlind)
        tab()
        bytes(sealed)
        tab()
        if let expiry { integer(expiry) } else { null() }
        tab()
        null()
        buffer.writeInteger(UInt8(ascii: "\n"))
    }

    /// A tag row of record `ord`.
    mutating func tag(ord: Int64, _ row: PostgresTagRow) {
        integer(ord)
        tab()
        integer(row.name)
        tab()
        bytes(row.value)
        tab()
        null()
        tab()
        null()
        tab()
        // Swift's shortest round-trip spelling, which PostgreSQL's float8 input reads back exactly.
        if let number = row.number { buffer.writeString(String(describing: number)) } else { null() }
        buffer.writeInteger(UInt8(ascii: "\n"))
    }

    private mutating func tab() { buffer.writeInteger(UInt8(ascii: "\t")) }
    private mutating func null() { buffer.writeStaticString("\\N") }
    private mutating func integer(_ value: Int64) { buffer.writeString(String(value)) }

    private mutating func bytes(_ data: Data) {
        buffer.writeStaticString("\\\\x")
        let count = data.count
        buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: count * 2) { out in
            data.withUnsafeBytes { input in
                for i in 0..<count {
                    let byte = input[i]
                    out[2 * i] = Self.hex[Int(byte >> 4)]
                    out[2 * i + 1] = Self.hex[Int(byte & 0x0F)]
                }
            }
            return count * 2
        }
    }
}

// MARK: - The producer thread and its hand-off to the COPY

/// Hands COPY chunks from the producing thread (which reads the source, checks, seals and
/// blinds) to the task writing them to the server: at most ``depth`` chunks wait, so the
/// producer blocks while the server is behind, and memory stays flat.
final class CopyFeed<Summary: Sendable>: Sendable {
    /// Chunks waiting at most.
    static var depth: Int { 4 }
    /// Bytes a chunk holds before it is handed on.
    static var chunkBytes: Int { 256 << 10 }

    private struct State {
        /// Chunks made and not yet taken, each with the number of records sent through it.
        var chunks: [(ByteBuffer, Int)] = []
        /// How the producer ended: its record count and summary, or its error.
        var end: Result<(Int, Summary), any Error>?
        var waiter: CheckedContinuation<(ByteBuffer, Int)?, any Error>?
        var endWaiter: CheckedContinuation<Void, Never>?
        /// The consumer gave up: the producer stops at its next chunk.
        var stopped = false
    }

    private let state = Locked(State())
    private let room = DispatchSemaphore(value: depth)

    /// Starts `source` on a thread of its own, sealing what it gives under `keys`.
    static func start(keys: WalletKeys, allowReserved: Bool, source: @escaping PostgresImportSource<Summary>) -> CopyFeed {
        let feed = CopyFeed()
        let thread = Thread {
            var rows = CopyRows()
            var count: Int64 = 0
            do {
                let summary = try source { record in
                    let row = try PostgresWallet.insertRow(
                        type: record.type, id: record.id, value: record.value, tags: record.tags, expiry: record.expiry, keys: keys,
                        allowReserved: allowReserved)
                    count += 1
                    rows.record(ord: count, type: row.type, idBlind: row.idBlind, sealed: row.sealed, expiry: row.expiry)
                    for tag in row.tags { rows.tag(ord: count, tag) }
                    if rows.byteCount >= chunkBytes { try feed.put(rows.take(), records: Int(count)) }
                }
                if rows.byteCount > 0 { try feed.put(rows.take(), records: Int(count)) }
                feed.finish(.success((Int(count), summary)))
            } catch {
                feed.finish(.failure(error))
            }
        }
        // The sources parse JSON and read SQLite: a main-thread-sized stack.
        thread.stackSize = 8 << 20
        thread.start()
        return feed
    }

    /// Producer: hands on a chunk, waiting while ``depth`` chunks wait.
    private func put(_ chunk: ByteBuffer, records: Int) throws {
        room.wait()
        let waiter = try state.withLock { state throws -> CheckedContinuation<(ByteBuffer, Int)?, any Error>? in
            if state.stopped { throw CancellationError() }
            guard let waiter = state.waiter else {
                state.chunks.append((chunk, records))
                return nil
            }
            state.waiter = nil
            return waiter
        }
        guard let waiter else { return }
        // Taken at once: it never waited, so its room is free again.
        room.signal()
        waiter.resume(returning: (chunk, records))
    }

    /// Producer: its end.
    private func finish(_ end: Result<(Int, Summary), any Error>) {
        let (waiter, endWaiter) = state.withLock { state in
            state.end = end
            defer {
                state.waiter = nil
                state.endWaiter = nil
            }
            return (state.waiter, state.endWaiter)
        }
        endWaiter?.resume()
        guard let waiter else { return }
        switch end {
        case .success: waiter.resume(returning: nil)
        case .failure(let error): waiter.resume(throwing: error)
        }
    }

    /// Consumer: the next chunk and the records sent through it; nil when the producer ended
    /// well; its error when it failed.
    func next() async throws -> (ByteBuffer, Int)? {
        try await withCheckedThrowingContinuation { continuation in
            let answer = state.withLock { state -> Result<(ByteBuffer, Int)?, any Error>? in
                if !state.chunks.isEmpty { return .success(state.chunks.removeFirst()) }
                switch state.end {
                case .success?: return .success(nil)
                case .failure(let error)?: return .failure(error)
                case nil:
                    state.waiter = continuation
                    return nil
                }
            }
            if case .success(.some) = answer { room.signal() }
            if let answer { continuation.resume(with: answer) }
        }
    }

    /// Consumer, after ``next()`` gave nil: the producer's record count and summary.
    func result() throws -> (Int, Summary) {
        guard case .success(let value)? = state.withLock({ $0.end }) else {
            throw WalletError.storage("the import's reader had not finished when its rows were all sent")
        }
        return value
    }

    /// Consumer: tells the producer to stop (it throws at its next chunk).
    func stop() {
        state.withLock { $0.stopped = true }
        for _ in 0..<Self.depth + 1 { room.signal() }
    }

    /// Waits until the producer's thread has ended (it owns the source until then).
    func ended() async {
        await withCheckedContinuation { continuation in
            let done = state.withLock { state -> Bool in
                if state.end != nil { return true }
                state.endWaiter = continuation
                return false
            }
            if done { continuation.resume() }
        }
    }
}
#endif
