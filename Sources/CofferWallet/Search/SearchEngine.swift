// Keyset paging over a compiled search: each page starts after the last record returned, so a
// page costs the same at page 1 and page 1,000, and a walk never repeats or skips a record.

import CofferCrypto
import CofferSync
import Dispatch
import Foundation
import GRDB

/// A row of a search, opened: its record (built with the search's options, or nil when the
/// caller only counts), and whether its decrypted tags satisfy the query.
struct OpenedCandidate {
    let rowid: Int64
    let record: WalletRecord?
    let matches: Bool
}

/// What a search builds of each opened row: the records it returns carry `type` and follow
/// `options`. Nil where only matches are counted.
struct RecordShape {
    let type: String
    let options: RecordOptions
}

/// A batch of rows read from SQLite: row ids, and every row's blind id and sealed box copied
/// back to back into one buffer (one allocation per batch, not two per row).
///
/// Not `Sendable`: one thread at a time owns a chunk. It is filled by the walking thread, then
/// opened by whichever thread takes it from its ``ChunkQueue`` (which moves it as a `Handoff`,
/// its lock ordering the writes before the reads); the results are read after every thread that
/// could take it is done (the dispatch group has been waited on and the walking thread has
/// drained the queue).
///
/// Its buffers are stored properties of a class, which Swift would check for overlapping access
/// at run time on every use (four checks per appended row, each a thread-local lookup: 2 % of a
/// scan's time). One thread at a time owns a chunk (see above), so they are left unchecked.
final class OpenedChunk {
    @exclusivity(unchecked) private(set) var rowids = [Int64]()
    /// Per row: where its blind id starts in `bytes`, then where its box starts; the box ends
    /// where the next row's id starts (or at the end).
    @exclusivity(unchecked) private var starts = [Int]()
    @exclusivity(unchecked) private var bytes = [UInt8]()
    /// Per row: its expiry column (bound into the box's associated data).
    @exclusivity(unchecked) private var expiries = [Int64?]()
    @exclusivity(unchecked) private(set) var results = [Result<OpenedCandidate, WalletError>]()

    /// What ``takeResult(_:)`` leaves behind: holds no record, so nothing to retain or release.
    private static let taken = Result<OpenedCandidate, WalletError>.success(OpenedCandidate(rowid: 0, record: nil, matches: false))

    /// Moves row `i`'s result out of the chunk, leaving an empty one in its place: the record
    /// changes hands without a retain of each of its strings and tags here and a release of
    /// them when the chunk is reset (two atomic operations per reference, per row). `i` must be
    /// one of the chunk's rows: the move goes through a pointer, which checks no bounds, so the
    /// index is checked here (it costs nothing measurable: see docs/benchmarks.md).
    func takeResult(_ i: Int) -> Result<OpenedCandidate, WalletError> {
        precondition(i >= 0 && i < results.count, "row \(i) is outside the chunk's \(results.count) results")
        return results.withUnsafeMutableBufferPointer { buffer in
            let slot = buffer.baseAddress! + i
            let result = slot.move()
            slot.initialize(to: Self.taken)
            return result
        }
    }

    init(capacity: Int) {
        rowids.reserveCapacity(capacity)
        starts.reserveCapacity(capacity * 2)
        expiries.reserveCapacity(capacity)
        bytes.reserveCapacity(capacity * 400)
    }

    var count: Int { rowids.count }

    /// Bytes of row data a pooled chunk may keep; one that grew past this (very large values)
    /// is dropped instead of pooled.
    static let pooledBytesLimit = 1 << 20

    /// Empties the chunk for reuse, keeping its buffers' capacity. Drops its results (records
    /// are the caller's by now; nothing readable stays behind). False when it is too large to
    /// keep.
    func reset() -> Bool {
        guard bytes.capacity <= Self.pooledBytesLimit else { return false }
        rowids.removeAll(keepingCapacity: true)
        starts.removeAll(keepingCapacity: true)
        expiries.removeAll(keepingCapacity: true)
        bytes.removeAll(keepingCapacity: true)
        results.removeAll(keepingCapacity: true)
        return true
    }

    /// Appends a row from the bytes SQLite lends (valid only during this call).
    func append(rowid: Int64, idBlind: UnsafeRawBufferPointer, sealed: UnsafeRawBufferPointer, expiry: Int64?) {
        rowids.append(rowid)
        expiries.append(expiry)
        starts.append(bytes.count)
        bytes.append(contentsOf: idBlind)
        starts.append(bytes.count)
        bytes.append(contentsOf: sealed)
    }

    /// Opens every row and checks it against `root` (nil: every row matches); builds the
    /// record of each matching row in `shape` when given. Every box's sealed type must be
    /// `type` (a blind-type collision reads as `corrupted`, not as a record of another type). A row whose decrypted tags fail
    /// `mustHold` (what the SQL that selected it already checked on the index) is `corrupted`.
    func open(type expectedType: String, typeBlind: Data, keys: WalletKeys, root: WQLNode?, mustHold: WQLNode?, shape: RecordShape?) {
        let rowids = self.rowids
        let starts = self.starts
        let expiries = self.expiries
        // A search that returns no values (a count, a key listing) does not decode them: no
        // `String` of a value it will not return, a reserved secret's above all, is made.
        let skipValue: ((UnsafeRawBufferPointer) -> Void)? = shape?.options.retrieveValue == true ? nil : { _ in }
        results = withBytes(typeBlind) { type in
            bytes.withUnsafeBytes { all in
                (0..<rowids.count).map { i in
                    let idStart = starts[2 * i]
                    let boxStart = starts[2 * i + 1]
                    let boxEnd = i + 1 < rowids.count ? starts[2 * i + 2] : all.count
                    return Result { () throws(WalletError) in
                        let contents = try RecordCodec.open(
                            UnsafeRawBufferPointer(rebasing: all[boxStart..<boxEnd]), typeBlind: type,
                            idBlind: UnsafeRawBufferPointer(rebasing: all[idStart..<boxStart]),
                            expiry: expiries[i], keys: keys, expectedType: expectedType, secretValue: skipValue)
                        let matches = root?.matches(contents.tags.entries) ?? true
                        // `mustHold` is part of `root`, so only a rejected row can fail it.
                        if !matches, let mustHold, !mustHold.matches(contents.tags.entries) { throw WalletError.indexDisagrees }
                        // Records the query rejects are not built: no plaintext of them is kept.
                        let record = matches ? shape.map { RecordStore.record(contents, type: $0.type, options: $0.options) } : nil
                        return OpenedCandidate(rowid: rowids[i], record: record, matches: matches)
                    }
                }
            }
        }
    }
}

/// Chunks of rows waiting to be opened, shared by the walking thread and at most `maxWorkers`
/// workers. The walk reads on one core while the workers open chunks on the others; once the
/// walk is over, the walking thread opens what is left alongside them instead of waiting.
///
/// The walking thread then waits only for chunks a worker has taken and is still opening
/// (``inFlight``), never for a worker that has not been scheduled yet: on a loaded machine a
/// started worker may wait milliseconds for a core, longer than a whole search of a thousand
/// rows. Such a late worker finds nothing left to take and ends without touching a chunk.
final class ChunkQueue: Sendable {
    private struct State {
        /// Every chunk pushed, each handed from the walking thread to the one that takes it.
        var chunks = [Handoff<OpenedChunk>]()
        var taken = 0
        var workers = 0
        var cancelled = false
    }

    private let state = Locked(State())
    private let maxWorkers: Int
    /// Entered when a worker takes a chunk (under the state's lock), left when it has opened
    /// it: waiting on it waits for the chunks being opened, not for workers yet to start.
    let inFlight = DispatchGroup()

    init(maxWorkers: Int) { self.maxWorkers = maxWorkers }

    /// Queues a chunk; true when a new worker should be started for it (fewer than
    /// `maxWorkers` are running).
    func push(_ chunk: OpenedChunk) -> Bool {
        let handed = Handoff(chunk)
        let maxWorkers = maxWorkers
        return state.withLock { state in
            state.chunks.append(handed)
            guard state.workers < maxWorkers else { return false }
            state.workers += 1
            return true
        }
    }

    /// The oldest chunk no thread has taken yet; nil when there is none, and then a worker
    /// asking (`worker` true) stops counting as running. A worker must call ``opened()`` once
    /// it has opened the chunk it was given.
    func take(worker: Bool) -> OpenedChunk? {
        let inFlight = inFlight
        return state.withLock { (state) -> Handoff<OpenedChunk>? in
            guard state.taken < state.chunks.count, !state.cancelled else {
                if worker { state.workers -= 1 }
                return nil
            }
            // Entered before the lock is released: once the walking thread finds nothing
            // left to take, every chunk a worker holds is counted.
            if worker { inFlight.enter() }
            defer { state.taken += 1 }
            return state.chunks[state.taken]
        }?.value
    }

    /// A worker has opened the chunk it took.
    func opened() { inFlight.leave() }

    /// Waits until every chunk taken by a worker has been opened.
    func waitForTaken() { inFlight.wait() }

    /// Stops handing out chunks (the walk failed; its remaining rows are not wanted).
    func cancel() { state.withLock { $0.cancelled = true } }

    /// Every chunk in the order pushed (read after all takers are done).
    var all: [OpenedChunk] { state.withLock { $0.chunks }.map(\.value) }
}

/// Chunks kept between searches. A search reads its rows into a few chunk buffers and frees
/// them when it returns; allocated afresh each time, those buffers come back as new pages from
/// the system (glibc trims freed heap tops), and touching them costs a page fault per 4 KiB —
/// more than the rows themselves. Reused, they stay mapped.
final class ChunkPool: Sendable {
    static let shared = ChunkPool()
    /// Chunks kept at most: usually about 50 KiB each (128 rows of a few hundred bytes), never
    /// more than ``OpenedChunk/pooledBytesLimit``.
    static let limit = 32

    /// The pooled chunks, each handed to the next search that takes it.
    private let free = Locked([Handoff<OpenedChunk>]())

    /// An empty chunk, reused when one is free.
    func get() -> OpenedChunk {
        free.withLock { $0.popLast() }?.value ?? OpenedChunk(capacity: pipelineChunk)
    }

    /// Takes back chunks whose results have been read.
    func recycle(_ chunks: [OpenedChunk]) {
        let reusable = chunks.filter { $0.reset() }.map(Handoff.init)
        free.withLock { free in
            for chunk in reusable where free.count < Self.limit { free.append(chunk) }
        }
    }
}

extension WalletError {
    /// A row the index selected whose sealed tags say it should not have been.
    static let indexDisagrees = WalletError.corrupted("the tag index disagrees with a record's sealed tags (the wallet file was altered)")
}

/// Rows per chunk handed to another core while the walk reads on.
let pipelineChunk = 128

/// Where a walk stands: the row id of the last record returned (records come in row-id order).
struct SearchCursor: Sendable {
    var after: Int64?
    var exhausted = false
    /// Whether this walk checks the driver's further equalities in memory rather than by
    /// index joins; decided on its first page (nil until then), and set back to false for
    /// the rest of the walk when the rows read stop bearing the decision out.
    var joinsDropped: Bool?
    /// Which of the search's tag-driven plans this walk takes (see
    /// ``CompiledSearch/rarestDriver(_:after:descending:)``); decided on its first page, kept
    /// for the rest of the walk so the join decision above stays about one driver.
    var driver: Int?
}

/// Rows of the driver sampled to decide whether its further equalities are worth index joins.
let joinSample = 64

extension CompiledSearch.Plan {
    /// Whether this plan's statements (a page, the join sample) take one of a few shapes:
    /// driven by the type or by one tag equality, with at most
    /// ``QueryCompiler/maxDriverChoices`` − 1 joined equalities and nothing else left for SQL
    /// to check. Their text then depends only on the join count, the cursor, the direction,
    /// expiry and the profile's tables, so keeping them prepared on a connection holds a bounded
    /// number of statements (their bound values are blind indexes, as stored in the file).
    var hasFewShapes: Bool {
        guard predicate.isTrue, joins.arguments.count <= 2 * (QueryCompiler.maxDriverChoices - 1) else { return false }
        switch driver {
        case .type, .tag: return true
        case .range: return false
        }
    }
}

extension CompiledSearch {
    /// Whether any record carries an expiry (a partial index makes this a single probe).
    static func expiryActive(_ db: Database, tables: ProfileTables) throws -> Bool {
        try Bool.fetchOne(db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM \(tables.items) WHERE expiry IS NOT NULL)")) ?? false
    }

    /// The preferred plan that is valid now, in this transaction.
    func plan(_ db: Database, allowRange: Bool) throws -> Plan {
        for plan in plans {
            if case .range = plan.driver, !allowRange { continue }
            if let name = plan.requiresSingleValued {
                let multi =
                    try Bool.fetchOne(
                        db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM \(keys.tables.tagMulti) WHERE name = ?)"),
                        arguments: [BlindColumn.value(name)]) ?? true
                if multi { continue }
            }
            return plan
        }
        return plans[plans.count - 1]
    }

    /// `FROM … WHERE …` of a plan: the driver, the type, expiry and the rest of the predicate.
    /// With `joinItems` false (a tag-index driver only) the items table is left out, so a count
    /// reads the index alone; that is only right when expiry and the predicate are not needed.
    func source(_ plan: Plan, joinItems: Bool, now: Int64, expiry: Bool) -> (sql: String, arguments: [DatabaseValue], itemColumn: String) {
        var sql: String
        var args: [DatabaseValue]
        let itemColumn: String
        // The profile's tables; in PostgreSQL every profile's rows share them, and the driver's
        // rows are kept to the profile's (the joined rows belong to the driver's item).
        let tables = keys.tables
        let items = joinItems ? " \(dialect.innerJoin) \(dialect.items(tables)) i ON i.id = d.item" : ""
        switch plan.driver {
        case .type:
            let scope = dialect.scope("i", tables)
            sql = "FROM \(dialect.items(tables)) i WHERE \(scope.sql)i.type = ?"
            args = scope.arguments + [BlindColumn.value(typeBlind).databaseValue]
            itemColumn = "i.id"
        case .tag(let name, let value):
            let scope = dialect.scope("d", tables)
            let equal = dialect.valueEquals("d.value", value)
            sql = "FROM \(dialect.tags(tables)) d \(plan.joins.sql)\(items) WHERE \(scope.sql)d.name = ? AND \(equal.sql)"
            args = plan.joins.arguments + scope.arguments + [BlindColumn.value(name).databaseValue] + equal.arguments
            itemColumn = "d.item"
        case .range(let name, let conditions) where joinItems:
            // The range comes in value order: SQLite collects its record ids (index only) and
            // visits them in id order, instead of sorting whole joined rows.
            let scope = dialect.scope("d", tables)
            sql =
                "FROM \(dialect.items(tables)) i\(dialect.notIndexed) WHERE i.id IN (SELECT d.item FROM \(dialect.tags(tables)) d WHERE \(scope.sql)d.name = ? AND \(conditions.sql))"
            args = scope.arguments + [BlindColumn.value(name).databaseValue] + conditions.arguments
            itemColumn = "i.id"
        case .range(let name, let conditions):
            let scope = dialect.scope("d", tables)
            sql = "FROM \(dialect.tags(tables)) d WHERE \(scope.sql)d.name = ? AND \(conditions.sql)"
            args = scope.arguments + [BlindColumn.value(name).databaseValue] + conditions.arguments
            itemColumn = "d.item"
        }
        if joinItems {
            if case .type = plan.driver {
            } else {
                sql += " AND i.type = ?"
                args.append(BlindColumn.value(typeBlind).databaseValue)
            }
            if expiry {
                sql += " AND (i.expiry IS NULL OR i.expiry > ?)"
                args.append(now.databaseValue)
            }
            if !plan.predicate.isTrue {
                sql += " AND (\(plan.predicate.sql))"
                args += plan.predicate.arguments
            }
        }
        return (sql, args, itemColumn)
    }

    /// The statement of one keyset page: `rowid, name, sealed, expiry` of the plan's candidates
    /// after `after` (a row id), in row-id order, at most `limit`.
    func pageSQL(_ plan: Plan, after: Int64?, limit: Int, descending: Bool, now: Int64, expiry: Bool) -> (
        sql: String, arguments: [DatabaseValue]
    ) {
        let from = source(plan, joinItems: true, now: now, expiry: expiry)
        var sql = "SELECT i.id, i.name, i.value, i.expiry " + from.sql
        var args = from.arguments
        if let after {
            sql += " AND \(from.itemColumn) \(descending ? "<" : ">") ?"
            args.append(after.databaseValue)
        }
        sql += " ORDER BY \(from.itemColumn) \(descending ? "DESC" : "ASC") LIMIT ?"
        args.append(limit.databaseValue)
        return (sql, args)
    }

    /// The next `limit` candidates after `after`, opened, as the chunks they were read in (walk
    /// order); the caller reads their results and hands them back with ``ChunkPool/recycle(_:)``.
    /// Handing over the chunks, instead of copying every candidate into one array, keeps that
    /// copy off the part of a search no other core can share. SQLite hands rows over on this thread;
    /// with more than one core, every full chunk of them is opened on another core while this
    /// thread reads the next, so decryption overlaps the index walk instead of waiting for it,
    /// and what is left when the walk ends is opened on this thread too. `mustHold`: see
    /// ``OpenedChunk/open(type:typeBlind:keys:root:mustHold:shape:)``.
    func openedCandidates(
        _ db: Database, keys: WalletKeys, plan: Plan, after: Int64?, limit: Int, descending: Bool,
        now: Int64, expiry: Bool, mustHold: WQLNode? = nil, shape: RecordShape?
    ) throws -> [OpenedChunk] {
        let (sql, args) = pageSQL(plan, after: after, limit: limit, descending: descending, now: now, expiry: expiry)
        let typeBlind = self.typeBlind
        let type = self.type
        let root: WQLNode?
        if case .all = self.root { root = nil } else { root = self.root }
        // The walking thread keeps one core; the others open chunks.
        let queue = ChunkQueue(maxWorkers: ProcessInfo.processInfo.activeProcessorCount - 1)
        // Workers match `$regex` in memory too: they poll the same cancellation flag.
        let cancellation = MatchCancellation.current
        // On a failed step, workers stop taking chunks, and the chunks they hold are waited
        // for before this returns; so are they once the walk is done (see ``ChunkQueue``).
        defer {
            queue.cancel()
            queue.waitForTaken()
        }
        var chunk = ChunkPool.shared.get()
        // The row's blobs are copied once, straight into the chunk (see ``SQLiteRows/walk``).
        try SQLiteRows.walk(db, sql: sql, arguments: args, cached: plan.hasFewShapes) { rowid, idBlind, sealed, expiry in
            chunk.append(rowid: rowid, idBlind: idBlind, sealed: sealed, expiry: expiry)
            if chunk.count == pipelineChunk {
                if queue.push(chunk) {
                    DispatchQueue.global().async {
                        let work = {
                            while let next = queue.take(worker: true) {
                                next.open(type: type, typeBlind: typeBlind, keys: keys, root: root, mustHold: mustHold, shape: shape)
                                queue.opened()
                            }
                        }
                        if let cancellation { cancellation.during(work) } else { work() }
                    }
                }
                chunk = ChunkPool.shared.get()
            }
        }
        if chunk.count > 0 { _ = queue.push(chunk) } else { ChunkPool.shared.recycle([chunk]) }
        // The walk is over: open what no worker has started yet here instead of waiting.
        while let pending = queue.take(worker: false) {
            pending.open(type: type, typeBlind: typeBlind, keys: keys, root: root, mustHold: mustHold, shape: shape)
        }
        queue.waitForTaken()
        return queue.all
    }

    /// The next `limit` matching records after `cursor`.
    /// A range plan reads its whole range before the first row, so only one-shot reads (`allowRange`)
    /// may use it; pages of a walk keep a driver whose cost does not grow with the position.
    func page(
        _ db: Database, keys: WalletKeys, cursor: inout SearchCursor, limit: Int, options: RecordOptions,
        descending: Bool = false, allowRange: Bool = false, now: Date = Date()
    ) throws -> [WalletRecord] {
        try checkKeys(keys)
        var out = [WalletRecord]()
        guard !cursor.exhausted, limit > 0 else { return out }
        if case .none = root {
            cursor.exhausted = true
            return out
        }
        let nowMs = unixMillis(now)
        let expiry = try Self.expiryActive(db, tables: keys.tables)
        var joined = try plan(db, allowRange: allowRange)
        if driverChoices > 1 {
            if cursor.driver == nil { cursor.driver = try rarestDriver(db, after: cursor.after, descending: descending) }
            joined = plans[cursor.driver ?? 0]
        }
        var plan = joined
        if !joined.joins.sql.isEmpty {
            if cursor.joinsDropped == nil {
                cursor.joinsDropped = try joinsMostlyHold(db, joined, after: cursor.after, descending: descending)
            }
            if cursor.joinsDropped == true { plan = joined.withoutJoins }
        }
        let shape = RecordShape(type: type, options: options)
        // Rows this page has read and kept: whether leaving the joins to memory still pays.
        var read = 0
        var kept = 0
        out.reserveCapacity(min(limit, 4096))
        while true {
            // Without joins, rows the decrypted tags reject are expected; what the SQL still
            // checked (driver and predicate) must hold, or the index was altered.
            let exact = self.exact && !plan.joinsDropped
            let mustHold = self.exact && plan.joinsDropped ? plan.residual : nil
            let want = limit - out.count
            let batch = exact ? want : max(want, 64)
            let found = try openedCandidates(
                db, keys: keys, plan: plan, after: cursor.after, limit: batch,
                descending: descending, now: nowMs, expiry: expiry, mustHold: mustHold, shape: shape)
            defer { ChunkPool.shared.recycle(found) }
            for chunk in found {
                for i in 0..<chunk.count {
                    let candidate = try chunk.takeResult(i).get()
                    read += 1
                    if !candidate.matches {
                        if exact { throw WalletError.indexDisagrees }
                        cursor.after = candidate.rowid
                        continue
                    }
                    kept += 1
                    if let record = candidate.record { out.append(record) }
                    cursor.after = candidate.rowid
                    if out.count == limit { return out }
                }
            }
            if found.reduce(0, { $0 + $1.count }) < batch {
                cursor.exhausted = true
                return out
            }
            // The sample misled (the equalities stopped holding further on): back to the
            // index joins for the rest of the walk, so a page never reads far more rows than
            // it returns. Both plans walk the driver in item order, so the cursor carries over.
            if plan.joinsDropped, read >= 4 * joinSample, kept * 2 < read {
                plan = joined
                cursor.joinsDropped = false
            }
        }
    }

    /// Whether nearly every one of the next `joinSample` index entries of the plan's driver also
    /// satisfies its joined equalities (seven in eight or more). Then the walk drops the joins
    /// and leaves them to the in-memory check, which costs less than a probe per row; tags that
    /// are set together (schema and issuer of a credential) are the common case. An empty
    /// sample (nothing left to walk) answers true; the walk ends on its first read either way.
    func joinsMostlyHold(_ db: Database, _ plan: Plan, after: Int64?, descending: Bool) throws -> Bool {
        guard let (sql, arguments) = sampleSQL(plan, after: after, descending: descending) else { return false }
        let statement = try plan.hasFewShapes ? db.cachedStatement(sql: sql) : db.makeStatement(sql: sql)
        statement.setExactArguments(arguments)
        let row = try Row.fetchOne(statement)
        let total: Int = row?[0] ?? 0
        let kept: Int = row?[1] ?? 0
        return kept * 8 >= total * 7
    }

    /// The statement of ``joinsMostlyHold(_:_:after:descending:)``: how many of the next
    /// `joinSample` entries of a tag driver there are, and how many of them satisfy the joins.
    func sampleSQL(_ plan: Plan, after: Int64?, descending: Bool) -> (sql: String, arguments: [DatabaseValue])? {
        guard case .tag(let name, let value) = plan.driver else { return nil }
        let scope = dialect.scope("d", keys.tables)
        let equal = dialect.valueEquals("d.value", value)
        var sample = "SELECT d.item FROM \(dialect.tags(keys.tables)) d WHERE \(scope.sql)d.name = ? AND \(equal.sql)"
        var sampleArgs: [DatabaseValue] = scope.arguments + [BlindColumn.value(name).databaseValue] + equal.arguments
        if let after {
            sample += " AND d.item \(descending ? "<" : ">") ?"
            sampleArgs.append(after.databaseValue)
        }
        sample += " ORDER BY d.item \(descending ? "DESC" : "ASC") LIMIT \(joinSample)"
        let sql = "SELECT (SELECT COUNT(*) FROM (\(sample)) d), (SELECT COUNT(*) FROM (\(sample)) d \(plan.joins.sql))"
        return (sql, sampleArgs + sampleArgs + plan.joins.arguments)
    }

    /// Which of the first ``driverChoices`` plans (the query driven by each of its tag
    /// equalities) has the fewest index entries ahead of the walk: the one whose next
    /// `joinSample` entries run out first, or else reach furthest in record order (entries are
    /// in record order, so a rarer value's sample spans more records). Reads at most
    /// `joinSample` index entries per candidate, however large the wallet; ties keep the query's
    /// order. Every candidate returns the same records in the same order, so the choice only
    /// decides how many rows the walk reads and opens.
    func rarestDriver(_ db: Database, after: Int64?, descending: Bool) throws -> Int {
        var parts = [String]()
        var arguments = [DatabaseValue]()
        for (i, plan) in plans.prefix(driverChoices).enumerated() {
            guard case .tag(let name, let value) = plan.driver else { continue }
            var sample = "SELECT d.item FROM \(keys.tables.tags) d WHERE d.name = ? AND d.value = ?"
            arguments += [BlindColumn.value(name).databaseValue, value]
            if let after {
                sample += " AND d.item \(descending ? "<" : ">") ?"
                arguments.append(after.databaseValue)
            }
            sample += " ORDER BY d.item \(descending ? "DESC" : "ASC") LIMIT \(joinSample)"
            parts.append("SELECT \(i), COUNT(*), \(descending ? "MIN" : "MAX")(item) FROM (\(sample))")
        }
        guard parts.count > 1 else { return 0 }
        // Few shapes (2 to `maxDriverChoices` candidates, with or without a cursor, either
        // direction): cached on the connection, not prepared per walk.
        let statement = try db.cachedStatement(sql: parts.joined(separator: " UNION ALL "))
        statement.setExactArguments(arguments)
        var best = 0
        var bestKey: (full: Bool, size: Int64)?
        for row in try Row.fetchAll(statement) {
            let i: Int = row[0]
            let count: Int = row[1]
            let last: Int64 = row[2] ?? 0
            // Fewer than a sample left: the count itself (smaller is rarer). A full sample: how
            // far it reached (further is rarer), as a negative size so smaller is rarer again.
            let reach = descending ? (after ?? Int64.max) - last : last - (after ?? 0)
            let key = count < joinSample ? (full: false, size: Int64(count)) : (full: true, size: -reach)
            if let b = bestKey, !(key.full == b.full ? key.size < b.size : !key.full) { continue }
            best = i
            bestKey = key
        }
        return best
    }

    /// Refuses to run with keys other than those it was compiled with.
    func checkKeys(_ keys: WalletKeys) throws(WalletError) {
        guard keys === self.keys else {
            throw .invalidInput("the wallet's key was rotated after this search was opened; open the search again")
        }
    }

    /// The statement that counts an exact plan's matches: without expiry and with nothing left
    /// to check, the index alone answers.
    func countSQL(_ plan: Plan, now: Int64, expiry: Bool) -> (sql: String, arguments: [DatabaseValue]) {
        var indexOnly = !expiry && plan.predicate.isTrue
        if case .type = plan.driver { indexOnly = false }
        let from = source(plan, joinItems: !indexOnly, now: now, expiry: expiry)
        return ("SELECT COUNT(*) " + from.sql, from.arguments)
    }

    /// How many records match.
    func count(_ db: Database, keys: WalletKeys, now: Date = Date()) throws -> Int {
        try checkKeys(keys)
        if case .none = root { return 0 }
        let nowMs = unixMillis(now)
        let expiry = try Self.expiryActive(db, tables: keys.tables)
        var plan = try plan(db, allowRange: true)
        if driverChoices > 1 { plan = plans[try rarestDriver(db, after: nil, descending: false)] }
        if exact {
            // Without expiry and with nothing left to check, the index alone answers.
            let (sql, args) = countSQL(plan, now: nowMs, expiry: expiry)
            let statement = try db.makeStatement(sql: sql)
            statement.setExactArguments(args)
            return try Int.fetchOne(statement) ?? 0
        }
        var cursor = SearchCursor()
        var total = 0
        while !cursor.exhausted {
            let found = try openedCandidates(
                db, keys: keys, plan: plan, after: cursor.after, limit: 512,
                descending: false, now: nowMs, expiry: expiry, shape: nil)
            defer { ChunkPool.shared.recycle(found) }
            for chunk in found {
                for result in chunk.results {
                    let candidate = try result.get()
                    if candidate.matches { total += 1 }
                    cursor.after = candidate.rowid
                }
            }
            if found.reduce(0, { $0 + $1.count }) < 512 { cursor.exhausted = true }
        }
        return total
    }
}
