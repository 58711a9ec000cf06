// Writes split in two: "prepare" seals the box and blinds the type, id and tags (keys only, no
// database), "apply" writes the rows on the writer. Inside a transaction the records a body adds
// or replaces are sealed on the other cores while the writer inserts the ones sealed before them.

import CofferCrypto
import CofferSync
import Foundation
import GRDB

// MARK: - Prepared rows (no database types)

/// One tag-index row of a record, ready to insert: the seam's ``StoredTag`` (the name's blind
/// index as stored, see ``BlindColumn``, and the value: a `~` tag's text, else its blind index).
typealias SealedTagRow = StoredTag

/// A record ready to insert: its blind type and id, its sealed box, its tag-index rows. Holds no
/// plaintext but the type and id (kept for the error a duplicate reports).
struct SealedRecord: Sendable {
    let type: String
    let id: String
    let typeBlind: Data
    let idBlind: Data
    let sealed: Data
    let expiry: Int64?
    let tagRows: [SealedTagRow]
    /// Plaintext tag names holding several values (see `tag_multi`).
    let multiValued: [Int64]
}

/// A located record's new box and tag rows, ready to write over the old ones.
struct SealedRewrite: Sendable {
    let found: RecordStore.Located
    let sealed: Data
    let tagRows: [SealedTagRow]
    let multiValued: [Int64]
}

extension RecordStore {
    /// Checks a new record's fields and seals it: the "prepare" half of an add, which needs the
    /// keys and no database. The checks and their errors are the add's.
    static func prepareAdd(
        keys: WalletKeys, type: String, id: String, value: String, tags: WalletTags, expiresAt: Date?, allowReserved: Bool,
        secret: SecretKey? = nil, valueBytes: SecretKey? = nil
    ) throws -> SealedRecord {
        try Validate.type(type, allowReserved: allowReserved)
        try Validate.id(id)
        try Validate.value(value)
        try tags.validate()
        let tb = keys.typeBlind(type)
        let ib = keys.idBlind(typeBlind: tb, id: id)
        return seal(
            keys: keys, type: type, id: id, value: value, tags: tags, expiry: expiresAt.map(unixMillis), typeBlind: tb, idBlind: ib,
            secret: secret, valueBytes: valueBytes)
    }

    /// Seals a checked record whose blind type and id are known (with `secret` or `valueBytes`,
    /// its value is sealed from those bytes: see ``RecordCodec/Contents``).
    static func seal(
        keys: WalletKeys, type: String, id: String, value: String, tags: WalletTags, expiry: Int64?, typeBlind: Data, idBlind: Data,
        secret: SecretKey? = nil, valueBytes: SecretKey? = nil
    ) -> SealedRecord {
        let sealed = RecordCodec.seal(
            .init(type: type, id: id, value: value, tags: tags, secretValue: secret, valueBytes: valueBytes),
            typeBlind: typeBlind, idBlind: idBlind, expiry: expiry, keys: keys)
        let (rows, multi) = sealedTagRows(keys: keys, typeBlind: typeBlind, tags: tags)
        return SealedRecord(
            type: type, id: id, typeBlind: typeBlind, idBlind: idBlind, sealed: sealed, expiry: expiry, tagRows: rows,
            multiValued: multi)
    }

    /// A replace's "prepare" half: opens the located record's box (which must authenticate),
    /// puts `value` and `tags` in it and seals it again.
    /// - Throws: ``WalletError/corrupted(_:)`` when the stored box does not open.
    static func prepareReplace(keys: WalletKeys, _ found: Located, value: String, tags: WalletTags) throws -> SealedRewrite {
        var contents = try RecordCodec.open(
            found.sealed, typeBlind: found.typeBlind, idBlind: found.idBlind, expiry: found.expiry, keys: keys,
            expectedType: found.type, value: .skipped)
        contents.value = value
        contents.tags = tags
        return prepareRewrite(keys: keys, found, contents)
    }

    /// The box and tag rows of `contents`, to rewrite the located record with.
    static func prepareRewrite(keys: WalletKeys, _ found: Located, _ contents: RecordCodec.Contents) -> SealedRewrite {
        let (rows, multi) = sealedTagRows(keys: keys, typeBlind: found.typeBlind, tags: contents.tags)
        return SealedRewrite(found: found, sealed: sealBox(keys: keys, found, contents), tagRows: rows, multiValued: multi)
    }

    /// The located record's box sealed anew with `contents` (its type is the record's).
    static func sealBox(keys: WalletKeys, _ found: Located, _ contents: RecordCodec.Contents) -> Data {
        var contents = contents
        contents.type = found.type
        return RecordCodec.seal(contents, typeBlind: found.typeBlind, idBlind: found.idBlind, expiry: found.expiry, keys: keys)
    }

    /// The index rows of `tags`, and the names of plaintext tags that hold more than one value
    /// (a range over those is not exact; see `tag_multi`).
    static func sealedTagRows(keys: WalletKeys, typeBlind: Data, tags: WalletTags) -> (rows: [SealedTagRow], multiValued: [Int64]) {
        var rows = [SealedTagRow]()
        var multi = [Int64]()
        for (key, value) in tags.entries {
            let name = key.string
            let nb = BlindColumn.value(keys.tagNameBlind(typeBlind: typeBlind, name: name))
            let plaintext = WalletTags.isPlaintext(name)
            func row(_ v: String) -> SealedTagRow {
                SealedTagRow(
                    name: nb, value: plaintext ? .plaintext(v) : .blind(keys.tagValueBlind(typeBlind: typeBlind, name: name, value: v)))
            }
            switch value {
            case .string(let v):
                rows.append(row(v))
            case .list(let list):
                if plaintext, list.count > 1, Set(list).count > 1 { multi.append(nb) }
                for v in list { rows.append(row(v)) }
            }
        }
        return (rows, multi)
    }
}

// MARK: - The pipeline

/// Writes a transaction's body asked for, sealed ahead of the writer: `add` and `replace` calls
/// are checked on the writer (their arguments, and whether the record exists, so each call
/// throws what it always threw), then sealed in batches on the other cores, and written in the
/// order they were made. The writer writes one batch while the next is being sealed.
///
/// Every other call of the transaction — and its end — first writes everything sealed so far,
/// so it sees the body's writes in order. A write that fails after its call returned (a
/// replaced record whose stored box no longer opens, a storage error) fails every later call and
/// the transaction: nothing of it is committed.
///
/// The workers run only while the transaction's body does (``finish()`` and ``abandon()`` wait
/// for them), so they use the keys the transaction entered the key gate with and no rotation can
/// come between a record's sealing and its write.
final class SealingPipeline {
    /// One write the body asked for, as the worker gets it.
    enum Job {
        /// The blind id is nil when the writer did not need it (a record of a fresh type): the
        /// worker computes it.
        case add(type: String, id: String, value: String, tags: WalletTags, expiry: Int64?, typeBlind: Data, idBlind: Data?)
        case replace(RecordStore.Located, value: String, tags: WalletTags)
    }

    /// What a job became.
    enum Sealed {
        case add(SealedRecord)
        case rewrite(SealedRewrite)
    }

    /// Records per batch handed to another core.
    static let batchSize = 32
    /// Batches sealed or being sealed that the writer has not written yet, at most (the rest of
    /// the body waits: memory stays bounded whatever the transaction's size).
    static let batchesAhead = 4
    /// Writes in a transaction before the pipeline starts: a transaction of a few writes is not
    /// worth handing to another core.
    static let startAfter = 16

    private let store: RecordStore
    private let queue: SealingQueue
    /// The batch being filled.
    private var filling = SealingBatch()
    /// Batches pushed and not yet written, oldest first.
    private var pushed = [SealingBatch]()
    /// The (type, id) of every job not yet written: a later call on the same record first
    /// writes them.
    private var pending = Set<PendingKey>()
    /// Per blind type: whether it had no record when this transaction first added one of it.
    /// Then a record of that type exists only if this transaction added it, and ``added``
    /// answers "might it be a duplicate" without asking the database.
    private var freshTypes = [Int64: Bool]()
    /// Every record this transaction added of a fresh type (a record deleted since stays: a
    /// false "might exist" only sends the call the synchronous way).
    private var added = Set<PendingKey>()
    /// Adds and replaces so far: the first ``startAfter`` are written at once.
    private var writes = 0
    /// The first failure of a write made after its call returned: the transaction cannot commit.
    private var failure: Error?
    /// `SELECT 1 FROM items WHERE type = ? AND name = ?`, prepared on first use.
    private var exists: DirectStatement?
    /// `SELECT 1 FROM items WHERE type = ? LIMIT 1`, prepared on first use.
    private var anyOfType: DirectStatement?

    /// A job's record: a 64-bit hash of its type and id (this process's seeded `Hasher`), so
    /// the writer needs no blind index to tell whether a call touches a record of the body's.
    /// Two records sharing a hash (unlikely) only make a call write what is pending first, or
    /// take the synchronous way: a false "may exist" is never a wrong answer.
    struct PendingKey: Hashable {
        let hash: Int

        init(type: String, id: String) {
            var hasher = Hasher()
            hasher.combine(type)
            hasher.combine(id)
            hash = hasher.finalize()
        }
    }

    init(store: RecordStore, workers: Int = ProcessInfo.processInfo.activeProcessorCount - 1, addedLimit: Int = 1 << 16) {
        self.store = store
        self.addedLimit = addedLimit
        self.queue = SealingQueue(keys: store.keys, maxWorkers: workers)
    }

    /// Whether this machine has another core to seal on.
    static var isUseful: Bool { ProcessInfo.processInfo.activeProcessorCount > 1 }

    // MARK: Calls

    /// ``WalletTransaction/add(type:id:value:tags:expiresAt:)``: checked now, sealed ahead,
    /// written in order. A record that may exist (live or expired) or that an unwritten job of
    /// this transaction touches goes the synchronous way, after everything before it is written,
    /// so its duplicate error or its replacement of an expired record is exactly the add's.
    func add(type: String, id: String, value: String, tags: WalletTags, expiresAt: Date?) throws {
        try checkFailure()
        try Validate.type(type, allowReserved: store.allowReserved)
        try Validate.id(id)
        try Validate.value(value)
        try tags.validate()
        let keys = store.keys
        let tb = typeBlind(type)
        let key = PendingKey(type: type, id: id)
        let fresh = try isFresh(typeBlind: BlindColumn.value(tb))
        // A record of a fresh type exists only if this body added it: the writer computes no
        // blind id for it (the worker does). Otherwise the blind id is looked up in the file.
        var ib: Data?
        let mayExist: Bool
        if fresh {
            mayExist = added.contains(key)
        } else {
            let blind = keys.idBlind(typeBlind: tb, id: id)
            ib = blind
            mayExist = try pending.contains(key) || isStored(typeBlind: tb, idBlind: blind)
        }
        writes += 1
        if mayExist || writes <= Self.startAfter {
            try drain()
            try store.add(type: type, id: id, value: value, tags: tags, expiresAt: expiresAt)
        } else {
            pending.insert(key)
            try enqueue(
                .add(type: type, id: id, value: value, tags: tags, expiry: expiresAt.map(unixMillis), typeBlind: tb, idBlind: ib),
                key: key)
        }
        if fresh {
            added.insert(key)
            // Memory stays bounded in a transaction of any size: past this many, the types are
            // checked against the file instead (what is not written yet is in `pending`).
            if added.count >= addedLimit {
                for type in freshTypes.keys { freshTypes[type] = false }
                added.removeAll()
            }
        }
    }

    /// The blind of the type the last call named (a body usually writes one type: its blind
    /// is then not looked up in the keys' shared cache, under its lock, for every call).
    private var lastType: (type: String, blind: Data)?

    private func typeBlind(_ type: String) -> Data {
        if let lastType, lastType.type == type { return lastType.blind }
        let blind = store.keys.typeBlind(type)
        lastType = (type, blind)
        return blind
    }

    /// Records of fresh types remembered at most (see ``added``).
    private let addedLimit: Int

    /// ``WalletTransaction/replace(type:id:value:tags:)``: the record is located now (so a
    /// missing one throws `notFound` from this call), opened and sealed ahead, written in order.
    func replace(type: String, id: String, value: String, tags: WalletTags) throws {
        try checkFailure()
        try Validate.type(type, allowReserved: store.allowReserved)
        try Validate.id(id)
        try Validate.value(value)
        try tags.validate()
        writes += 1
        if writes <= Self.startAfter {
            try store.replace(type: type, id: id, value: value, tags: tags)
            return
        }
        let key = PendingKey(type: type, id: id)
        if pending.contains(key) { try drain() }
        let tb = typeBlind(type)
        let ib = store.keys.idBlind(typeBlind: tb, id: id)
        guard let found = try store.locate(type: type, id: id, typeBlind: tb, idBlind: ib), !found.expired else {
            throw WalletError.notFound(type: type, id: id)
        }
        pending.insert(key)
        try enqueue(.replace(found, value: value, tags: tags), key: key)
    }

    /// Writes everything sealed or still to seal, in order (the writer seals what no worker has
    /// taken). Throws the failure of any write made after its call returned.
    func drain() throws {
        try checkFailure()
        if !filling.jobs.isEmpty { push() }
        while !pushed.isEmpty { try writeOldest() }
        pending.removeAll(keepingCapacity: true)
    }

    /// The body returned: writes what is left; throws when any write failed (the transaction
    /// then rolls back).
    func finish() throws {
        defer { abandon() }
        try drain()
    }

    /// The body threw, or the pipeline is done: unsealed jobs are dropped, and the workers are
    /// waited for, so none holds the keys after the transaction.
    func abandon() {
        queue.cancel()
        queue.waitForWorkers()
    }

    // MARK: Work

    /// Whether a write failed after its call returned (every later call throws that failure).
    var hasFailed: Bool { failure != nil }

    private func checkFailure() throws {
        if let failure { throw failure }
    }

    /// Whether the type had no record when this transaction first added one of it (asked once
    /// per type and transaction).
    private func isFresh(typeBlind: Int64) throws -> Bool {
        if let known = freshTypes[typeBlind] { return known }
        let statement: DirectStatement
        if let anyOfType {
            statement = anyOfType
        } else {
            statement = try DirectStatement(store.rows.db, sql: "SELECT 1 FROM \(store.keys.tables.items) WHERE type = ? LIMIT 1")
            anyOfType = statement
        }
        statement.bind(1, typeBlind)
        let fresh = try statement.fetchOne { _ in true } == nil
        freshTypes[typeBlind] = fresh
        return fresh
    }

    /// Whether an item row (live or expired) has this blind type and id.
    private func isStored(typeBlind: Data, idBlind: Data) throws -> Bool {
        let statement: DirectStatement
        if let exists {
            statement = exists
        } else {
            statement = try DirectStatement(store.rows.db, sql: "SELECT 1 FROM \(store.keys.tables.items) WHERE type = ? AND name = ?")
            exists = statement
        }
        statement.bind(1, BlindColumn.value(typeBlind))
        statement.bind(2, idBlind)
        return try statement.fetchOne { _ in true } ?? false
    }

    /// Jobs handed to the batches so far (read by tests).
    private(set) var sealedAhead = 0

    private func enqueue(_ job: Job, key: PendingKey) throws {
        sealedAhead += 1
        filling.jobs.append(job)
        filling.keys.append(key)
        guard filling.jobs.count >= Self.batchSize else { return }
        push()
        // Write what is ready; past the bound, wait for (or seal) the oldest.
        while let oldest = pushed.first, queue.isDone(oldest) || pushed.count > Self.batchesAhead {
            try writeOldest()
        }
    }

    private func push() {
        let batch = filling
        filling = SealingBatch()
        pushed.append(batch)
        queue.push(batch)
    }

    /// Writes the oldest pushed batch: sealed by a worker (waited for; meanwhile this thread
    /// seals batches no worker has taken) or by this thread.
    private func writeOldest() throws {
        let batch = pushed.removeFirst()
        while !queue.isDone(batch) {
            if !queue.sealNextHere() { queue.waitForAWorker() }
        }
        defer { batch.clear() }
        for (index, result) in batch.results.enumerated() {
            do {
                switch try result.get() {
                case .add(let record): try store.insert(record)
                case .rewrite(let rewrite): try store.rewrite(rewrite)
                }
                pending.remove(batch.keys[index])
            } catch {
                failure = error
                throw error
            }
        }
    }
}

/// Jobs of one batch and, once sealed, their results. Not `Sendable`: one thread at a time owns
/// it — the writer fills it, whichever thread takes it from the ``SealingQueue`` seals it (the
/// queue's lock orders the writes before the reads), and the writer reads the results after the
/// queue says it is done.
final class SealingBatch {
    var jobs = [SealingPipeline.Job]()
    /// Each job's record, in the jobs' order (the writer's own; workers do not read it).
    var keys = [SealingPipeline.PendingKey]()
    private(set) var results = [Result<SealingPipeline.Sealed, Error>]()
    /// Its place in the queue (set when pushed).
    var index = 0

    init() {
        jobs.reserveCapacity(SealingPipeline.batchSize)
        keys.reserveCapacity(SealingPipeline.batchSize)
    }

    /// Drops the results once written (a large transaction does not keep every sealed box).
    func clear() { results = [] }

    func seal(keys: WalletKeys) {
        results = jobs.map { job in
            Result {
                switch job {
                case .add(let type, let id, let value, let tags, let expiry, let tb, let ib):
                    return .add(
                        RecordStore.seal(
                            keys: keys, type: type, id: id, value: value, tags: tags, expiry: expiry, typeBlind: tb,
                            idBlind: ib ?? keys.idBlind(typeBlind: tb, id: id)))
                case .replace(let found, let value, let tags):
                    return .rewrite(try RecordStore.prepareReplace(keys: keys, found, value: value, tags: tags))
                }
            }
        }
        jobs = []
    }
}

/// Batches waiting to be sealed, shared by the writer and at most `maxWorkers` workers.
final class SealingQueue: Sendable {
    private struct State {
        /// Every batch pushed, by index; nil once a thread has taken it.
        var batches = [Handoff<SealingBatch>?]()
        /// Index of the next batch to hand out.
        var taken = 0
        /// Whether each batch is sealed, by index.
        var done = [Bool]()
        var workers = 0
        var cancelled = false
    }

    private let state = Locked(State())
    private let keys: WalletKeys
    private let maxWorkers: Int
    private let workers = DispatchGroup()
    /// Signalled each time a worker has sealed a batch.
    private let finished = DispatchSemaphore(value: 0)

    init(keys: WalletKeys, maxWorkers: Int) {
        self.keys = keys
        self.maxWorkers = maxWorkers
    }

    /// Queues a batch and starts a worker for it when fewer than `maxWorkers` run.
    func push(_ batch: SealingBatch) {
        let maxWorkers = maxWorkers
        let start = state.withLock { state in
            batch.index = state.batches.count
            state.batches.append(Handoff(batch))
            state.done.append(false)
            guard state.workers < maxWorkers, !state.cancelled else { return false }
            state.workers += 1
            return true
        }
        guard start else { return }
        DispatchQueue.global().async(group: workers) { [self] in
            while let next = take(worker: true) {
                seal(next)
                finished.signal()
            }
        }
    }

    /// The oldest batch no thread has taken; nil when there is none (a worker asking then stops
    /// counting as running).
    private func take(worker: Bool) -> SealingBatch? {
        state.withLock { (state) -> Handoff<SealingBatch>? in
            guard state.taken < state.batches.count, !state.cancelled else {
                if worker { state.workers -= 1 }
                return nil
            }
            defer {
                state.batches[state.taken] = nil
                state.taken += 1
            }
            return state.batches[state.taken]
        }?.value
    }

    private func seal(_ batch: SealingBatch) {
        batch.seal(keys: keys)
        let index = batch.index
        state.withLock { $0.done[index] = true }
    }

    /// Seals on this thread the oldest batch no worker has taken; false when there is none.
    func sealNextHere() -> Bool {
        guard let batch = take(worker: false) else { return false }
        seal(batch)
        return true
    }

    /// Whether `batch` (pushed) is sealed.
    func isDone(_ batch: SealingBatch) -> Bool {
        let index = batch.index
        return state.withLock { $0.done[index] }
    }

    /// Blocks until a worker has sealed a batch (the caller checks again which).
    func waitForAWorker() { finished.wait() }

    /// Stops handing out batches.
    func cancel() { state.withLock { $0.cancelled = true } }

    /// Blocks until every worker has stopped.
    func waitForWorkers() { workers.wait() }
}
