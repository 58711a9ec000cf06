// Live queries on PostgreSQL: `PostgresWallet.observe(type:matching:)`, with `Wallet.observe`'s
// promises. The wallet's write statements notify every committed change of a record
// (PostgresStore.notifySchema); one listening connection per shared client (PostgresListener) hears them for every
// profile and observation of the process, and wakes the observations of that profile and type.

#if PostgreSQL
import CofferSync
import Foundation
import PostgresNIO

extension PostgresWallet {
    /// The records of `type` matching `query`, now and again after every commit that changes
    /// them — from this process, any other, or another application server on the same database:
    /// every committed write of a record through Coffer notifies (PostgreSQL's `NOTIFY`, sent by
    /// the writing statement in its transaction, so a write that rolls back notifies nothing), and
    /// one connection of this process listens for all its profiles and observations. A row written
    /// with other tools (psql) notifies no one: it shows at the next expiry check.
    ///
    /// - The first element is the current result. Later elements come only when the result
    ///   differs from the one before: a commit to another type or profile, or one that leaves this
    ///   result as it was, yields nothing.
    /// - Each result is read in one read-only snapshot and opened in this process.
    /// - Bursts coalesce: notifications are looked for every `interval`, so any number of commits
    ///   within one interval (and any number of writes in one transaction) give one element, and
    ///   a consumer that falls behind gets only the newest result.
    /// - Expiry needs no commit: the result is also read again every `expiryCheck`, so a record
    ///   that expires leaves it within that time (and a change whose notification was lost is
    ///   seen within it too).
    /// - A lost listening connection (a server restart, a network failure) is opened again with
    ///   a bounded backoff, and every observation reads its result again once it listens, since
    ///   notifications sent meanwhile are lost. While the server is away the observation waits
    ///   (no element, no error) and reads again when it is back.
    /// - The sequence ends by throwing ``WalletError/closed`` when the wallet closes (no
    ///   observation outlives ``close()``), and ends when its consumer's task is cancelled.
    ///
    /// The listening connection is this process's own, outside the pool: it is opened when the
    /// first observation of a client starts and closed when its last ends, and the server sees one
    /// connection more than the pool's `max_connections` meanwhile.
    ///
    /// ```swift
    /// for try await credentials in wallet.observe(type: "credential") { show(credentials) }
    /// ```
    public func observe(
        type: String, matching query: WalletQuery = .all, options: RecordOptions = RecordOptions(),
        interval: Duration = .milliseconds(100), expiryCheck: Duration = .seconds(1)
    ) -> AsyncThrowingStream<[WalletRecord], any Error> {
        let (stream, continuation) = AsyncThrowingStream<[WalletRecord], any Error>.makeStream(bufferingPolicy: .bufferingNewest(1))
        if store.pinned != nil || store.held != nil {
            continuation.finish(
                throwing: WalletError.invalidInput(
                    "observe the wallet, not a transaction's or withConnection's view: the view ends with its body"))
            return stream
        }
        let watch = PostgresObservations.Watch(continuation)
        guard observations.register(watch) else {
            continuation.finish(throwing: WalletError.closed)
            return stream
        }
        let task = Task.detached { [self] in
            await follow(watch, type: type, query: query, options: options, interval: interval, expiryCheck: expiryCheck)
        }
        watch.setTask(task)
        continuation.onTermination = { [observations] _ in
            task.cancel()
            observations.end(watch)
        }
        return stream
    }

    /// Observations running now (tests: none outlives ``close()``).
    package var liveObservations: Int { observations.count }

    /// How many times observations have read their result (tests: a notification was looked at).
    package var observationReads: Int { observations.reads }

    /// How many times observations have looked for a notification (tests: one was looked for).
    package var observationLooks: Int { observations.looks }

    /// How many times this wallet's client has begun to listen (tests: the listener reconnected).
    package var listeningSessions: Int { PostgresClients.shared.listener(store.settings)?.sessions ?? 0 }

    /// Whether this wallet's client holds its listening connection (tests: it closes with the last observation).
    package var isListening: Bool { PostgresClients.shared.listener(store.settings)?.isConnected ?? false }

    /// Runs, on one of the pool's connections, the statement Askar 0.5.0's session start runs on
    /// the connection it takes (whether the session's profile exists: `SELECT COUNT(*) FROM
    /// profiles WHERE id = $1`, here on `coffer_profiles`), then `body` while still holding that
    /// connection; whether the profile exists. The benchmark's concurrent workload calls it
    /// once per task, all at once, so that each task's connection has started as an Askar
    /// session's has before either side's clock starts.
    package func checkProfileHoldingConnection(_ body: @escaping @Sendable () async throws -> Void) async throws -> Bool {
        let number = number
        return try await store.withConnection { connection in
            var found = false
            for try await count in try await connection.send(
                "SELECT count(*) FROM coffer_profiles WHERE number = \(number)", logger: PostgresStore.logger
            ).decode(Int64.self) {
                found = count > 0
            }
            try await body()
            return found
        }
    }

    /// Every record of `type` matching `query`, read in one read-only snapshot.
    private func snapshot(type: String, query: WalletQuery, options: RecordOptions) async throws -> [WalletRecord] {
        try await transaction(readOnly: true) { view in
            var records = [WalletRecord]()
            var position: String?
            repeat {
                let page = try await view.search(type: type, query: query, options: options, limit: 1000, after: position)
                records += page.records
                position = page.next
            } while position != nil
            return records
        }
    }

    /// Whether `error` says the server is away or the pool busy for now (the observation reads
    /// again later), not that something is wrong with the wallet.
    private static func isTransient(_ error: any Error) -> Bool {
        guard case .storage(_, let cause)? = error as? WalletError, let posix = cause?.posix else { return false }
        return posix == .ECONNREFUSED || posix == .ETIMEDOUT
    }

    private func follow(
        _ watch: PostgresObservations.Watch, type: String, query: WalletQuery, options: RecordOptions, interval: Duration,
        expiryCheck: Duration
    ) async {
        do {
            try Validate.type(type)
            guard let listener = PostgresClients.shared.listener(store.settings) else { throw WalletError.closed }
            // Subscribed before the first read: a commit after that read is notified to it. One
            // that lands before the listener listens is seen when it begins (every observation
            // reads again then).
            let subscription = listener.subscribe(profile: number, type: BlindColumn.value(keys.typeBlind(type))) {
                [weak watch] in watch?.markChanged()
            }
            guard watch.setSubscription(subscription) else { throw CancellationError() }
            var last = try await snapshot(type: type, query: query, options: options)
            observations.noteRead()
            watch.continuation.yield(last)
            var sinceRead: Duration = .zero
            var backoff: Duration = .zero
            while true {
                try await Task.sleep(for: interval)
                if isClosed { throw WalletError.closed }
                sinceRead += interval
                observations.noteLook()
                guard watch.takeChanged() || sinceRead >= expiryCheck else { continue }
                sinceRead = .zero
                let fresh: [WalletRecord]
                do {
                    fresh = try await snapshot(type: type, query: query, options: options)
                } catch  where Self.isTransient(error) && !isClosed && !Task.isCancelled {
                    // The server is away or the pool is busy: read again after a bounded backoff
                    // (the listener's return wakes the observation too).
                    watch.markChanged()
                    backoff = min(max(backoff * 2, interval), .seconds(5))
                    try await Task.sleep(for: backoff)
                    continue
                }
                backoff = .zero
                observations.noteRead()
                if fresh != last {
                    last = fresh
                    watch.continuation.yield(fresh)
                }
            }
        } catch {
            observations.end(watch)
            if isClosed {
                watch.continuation.finish(throwing: WalletError.closed)
            } else if error is CancellationError || Task.isCancelled {
                watch.continuation.finish()
            } else {
                watch.continuation.finish(throwing: error)
            }
        }
    }
}

/// A wallet's live observations, so ``PostgresWallet/close()`` ends every one of them (and their
/// subscriptions to the listener) before the wallet gives back its client.
final class PostgresObservations: Sendable {
    /// One observation: its stream, its task, its subscription, and whether a notification came
    /// since it last looked.
    final class Watch: Sendable {
        let continuation: AsyncThrowingStream<[WalletRecord], any Error>.Continuation
        let id = UUID()
        private let parts = Locked<(task: Task<Void, Never>?, subscription: PostgresListener.Subscription?, changed: Bool, ended: Bool)>(
            (nil, nil, false, false))

        init(_ continuation: AsyncThrowingStream<[WalletRecord], any Error>.Continuation) { self.continuation = continuation }

        func setTask(_ task: Task<Void, Never>) { parts.withLock { $0.task = task } }

        /// Keeps the subscription; false (and cancels it) when the observation already ended.
        func setSubscription(_ subscription: PostgresListener.Subscription) -> Bool {
            let ended = parts.withLock { parts -> Bool in
                if !parts.ended { parts.subscription = subscription }
                return parts.ended
            }
            if ended { subscription.cancel() }
            return !ended
        }

        /// A notification for this observation came (or the listener began listening again).
        func markChanged() { parts.withLock { $0.changed = true } }

        /// Whether a notification came since the last call.
        func takeChanged() -> Bool {
            parts.withLock { parts in
                defer { parts.changed = false }
                return parts.changed
            }
        }

        /// Cancels the task and the subscription (once).
        func end() {
            let (task, subscription) = parts.withLock { parts -> (Task<Void, Never>?, PostgresListener.Subscription?) in
                defer {
                    parts.ended = true
                    parts.subscription = nil
                }
                return (parts.task, parts.subscription)
            }
            task?.cancel()
            subscription?.cancel()
        }
    }

    private let state = Locked<(closed: Bool, watches: [UUID: Watch])>((false, [:]))
    private let readCount = Locked(0)
    private let lookCount = Locked(0)

    /// Adds an observation; false once the wallet closed.
    func register(_ watch: Watch) -> Bool {
        state.withLock { state in
            guard !state.closed else { return false }
            state.watches[watch.id] = watch
            return true
        }
    }

    /// Ends one observation (its consumer left, or it failed).
    func end(_ watch: Watch) {
        _ = state.withLock { $0.watches.removeValue(forKey: watch.id) }
        watch.end()
    }

    /// Ends every observation with ``WalletError/closed`` (the wallet is closing).
    func closeAll() {
        let watches = state.withLock { state -> [Watch] in
            state.closed = true
            defer { state.watches = [:] }
            return Array(state.watches.values)
        }
        for watch in watches {
            watch.end()
            watch.continuation.finish(throwing: WalletError.closed)
        }
    }

    /// Observations running now (tests).
    var count: Int { state.withLock { $0.watches.count } }

    /// An observation read its result.
    func noteRead() { readCount.withLock { $0 += 1 } }

    /// How many times observations read their result (tests).
    var reads: Int { readCount.withLock { $0 } }

    /// An observation looked whether a notification came.
    func noteLook() { lookCount.withLock { $0 += 1 } }

    /// How many times observations looked for a notification (tests).
    var looks: Int { lookCount.withLock { $0 } }
}

/// The one connection of a shared client that listens for the wallet's write notifications
/// (`LISTEN coffer_wallet`), for every profile and observation of this process on that client.
/// It is this listener's own connection, outside the client's pool, so observing never takes a
/// connection from the calls nor makes them wait: it opens when the first subscription comes and
/// closes when the last goes. A notification (`"PROFILE TYPE"`, two integers) wakes the
/// subscribers of that profile and blind type. When the connection is lost it is opened again
/// after a backoff that doubles from 100 ms up to 5 s, and every subscriber is woken once it
/// listens again (notifications sent while it was away are lost).
final class PostgresListener: Sendable {
    /// A subscriber's place: ``cancel()`` ends it.
    struct Subscription: Sendable {
        let listener: PostgresListener
        let id: UInt64

        /// Stops waking this subscriber (the last one's cancel closes the connection).
        func cancel() { listener.unsubscribe(id) }
    }

    private struct Key: Hashable {
        let profile: Int64
        let type: Int64
    }

    private struct State {
        var wakes: [UInt64: (key: Key, wake: @Sendable () -> Void)] = [:]
        var byKey: [Key: Set<UInt64>] = [:]
        var lastID: UInt64 = 0
        /// The running connection loop, and which one it is (a stop and a new start may overlap).
        var task: Task<Void, Never>?
        var generation: UInt64 = 0
        var connection: PostgresConnection?
        var sessions = 0
    }

    let settings: PostgresSettings
    private let state = Locked(State())

    init(settings: PostgresSettings) { self.settings = settings }

    /// Wakes `wake` at every notification for `profile` and `type`, and whenever the listener
    /// begins listening (again); starts the connection for the first subscriber.
    func subscribe(profile: Int64, type: Int64, wake: @escaping @Sendable () -> Void) -> Subscription {
        let (id, newProfileOn) = state.withLock { state -> (UInt64, PostgresConnection?) in
            state.lastID += 1
            let key = Key(profile: profile, type: type)
            let known = state.byKey.keys.contains { $0.profile == profile }
            state.wakes[state.lastID] = (key, wake)
            state.byKey[key, default: []].insert(state.lastID)
            if state.task == nil {
                state.generation += 1
                let generation = state.generation
                state.task = Task { [self] in await run(generation) }
            }
            return (state.lastID, known ? nil : state.connection)
        }
        // A profile the listening connection does not observe yet: its writes notify once it is
        // registered; its observations read again then (a write between their first read and
        // the registration notified no one). Without a connection, the connection's start does both.
        if let connection = newProfileOn {
            Task { [self] in
                do {
                    try await register([profile], on: connection)
                    wakeObservers(of: profile)
                } catch {
                    try? await connection.close()
                }
            }
        }
        return Subscription(listener: self, id: id)
    }

    /// Notes the listening connection as observing `profiles` (their writes notify from the
    /// commit of this row on), forgets rows of listening connections that are gone (a process
    /// that died), then waits until every transaction that may have checked before the commit
    /// has ended (at most 5 s), so a read after this sees every write no notification announces.
    private func register(_ profiles: [Int64], on connection: PostgresConnection) async throws {
        let logger = PostgresStore.logger
        try await connection.send(
            """
            DELETE FROM coffer_observed o WHERE NOT EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.pid = o.listener)
            """, logger: logger)
        try await connection.send(
            """
            INSERT INTO coffer_observed(listener, profile) SELECT pg_backend_pid(), p FROM unnest(\(profiles)::bigint[]) AS p
            ON CONFLICT DO NOTHING
            """, logger: logger)
        var horizon: Int64 = 0
        for try await xmax in try await connection.send("SELECT txid_snapshot_xmax(txid_current_snapshot())", logger: logger)
            .decode(Int64.self)
        {
            horizon = xmax
        }
        for _ in 0..<500 {
            var done = false
            for try await ended in try await connection.send(
                "SELECT txid_snapshot_xmin(txid_current_snapshot()) >= \(horizon)", logger: logger
            ).decode(Bool.self) {
                done = ended
            }
            if done { return }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    private func wakeObservers(of profile: Int64) {
        let wakes = state.withLock { state in state.wakes.values.filter { $0.key.profile == profile }.map(\.wake) }
        for wake in wakes { wake() }
    }

    private func unsubscribe(_ id: UInt64) {
        let empty = state.withLock { state -> Bool in
            if let gone = state.wakes.removeValue(forKey: id) {
                state.byKey[gone.key]?.remove(id)
                if state.byKey[gone.key]?.isEmpty == true { state.byKey[gone.key] = nil }
            }
            return state.wakes.isEmpty
        }
        if empty { stop(onlyIfIdle: true) }
    }

    /// Closes the connection and ends its loop (the client is ending, or no one subscribes).
    func stop(onlyIfIdle: Bool = false) {
        let (task, connection) = state.withLock { state -> (Task<Void, Never>?, PostgresConnection?) in
            guard !onlyIfIdle || state.wakes.isEmpty else { return (nil, nil) }
            defer {
                state.task = nil
                state.connection = nil
                state.generation += 1
            }
            return (state.task, state.connection)
        }
        task?.cancel()
        if let connection {
            Task {
                // Its profiles' writes stop notifying (a process that dies leaves its rows to the
                // next listener's registration, which forgets them).
                _ = try? await connection.send(
                    "DELETE FROM coffer_observed WHERE listener = pg_backend_pid()", logger: PostgresStore.logger)
                try? await connection.close()
            }
        }
    }

    /// How many times the listener began listening (tests).
    var sessions: Int { state.withLock { $0.sessions } }

    /// Whether the listening connection is open (tests).
    var isConnected: Bool { state.withLock { $0.connection != nil } }

    private func wakeAll() {
        for wake in state.withLock({ $0.wakes.values.map(\.wake) }) { wake() }
    }

    private func deliver(_ payload: String) {
        let parts = payload.split(separator: " ")
        guard parts.count == 2, let profile = Int64(parts[0]), let type = Int64(parts[1]) else { return }
        let key = Key(profile: profile, type: type)
        let wakes = state.withLock { state in (state.byKey[key] ?? []).compactMap { state.wakes[$0]?.wake } }
        for wake in wakes { wake() }
    }

    /// Keeps `connection` as the current one of loop `generation`; false when that loop was stopped.
    private func adopt(_ connection: PostgresConnection?, _ generation: UInt64) -> Bool {
        state.withLock { state in
            guard state.generation == generation else { return false }
            state.connection = connection
            return true
        }
    }

    private func run(_ generation: UInt64) async {
        var delay: Duration = .milliseconds(100)
        while !Task.isCancelled {
            if let connection = try? await PostgresConnection.connect(
                configuration: try settings.connectionConfiguration(), id: 0, logger: PostgresStore.logger)
            {
                guard adopt(connection, generation) else {
                    try? await connection.close()
                    return
                }
                _ = try? await connection.listen(on: PostgresStore.notifyChannel) { notifications in
                    // Listening now, and observing every subscriber's profile once registered:
                    // what was committed before is read again by everyone.
                    let profiles = state.withLock { Array(Set($0.byKey.keys.map(\.profile))) }
                    try await register(profiles, on: connection)
                    delay = .milliseconds(100)
                    state.withLock { $0.sessions += 1 }
                    wakeAll()
                    for try await notification in notifications { deliver(notification.payload) }
                }
                _ = adopt(nil, generation)
                try? await connection.close()
            }
            if Task.isCancelled { return }
            try? await Task.sleep(for: delay)
            delay = min(delay * 2, .seconds(5))
        }
    }
}
#endif
