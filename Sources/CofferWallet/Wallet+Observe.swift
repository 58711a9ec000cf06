// Live wallet queries: `observe(type:matching:)` yields a type's matching records now and after
// every commit that changes them (this process's or another's), and ends when the wallet closes.

import CofferSync
import Foundation
import GRDB

extension Wallet {
    /// The records of `type` matching `query`, now and again after every commit that changes
    /// them — from this process or any other (a dedicated read-only connection watches SQLite's
    /// `PRAGMA data_version`, which moves with every other connection's commit).
    ///
    /// - The first element is the current result. Later elements come only when the result
    ///   differs from the one before: a commit to another type, or one that leaves this result
    ///   as it was, yields nothing.
    /// - Records are read and decrypted on the wallet's reader queue, never on the caller's actor.
    /// - Bursts coalesce: commits are looked for every `interval`, so any number of commits
    ///   within one interval (and any number of writes in one transaction) give one element, and
    ///   a consumer that falls behind gets only the newest result.
    /// - Expiry needs no commit: the result is also read again every `expiryCheck`, so a record
    ///   that expires leaves it within that time.
    /// - The sequence ends by throwing ``WalletError/closed`` when the wallet closes (no
    ///   observation outlives ``close()``), and ends when its consumer's task is cancelled.
    ///
    /// ```swift
    /// for try await credentials in wallet.observe(type: "credential") { show(credentials) }
    /// ```
    public func observe(
        type: String, matching query: WalletQuery = .all, options: RecordOptions = RecordOptions(),
        interval: Duration = .milliseconds(100), expiryCheck: Duration = .seconds(1)
    ) -> AsyncThrowingStream<[WalletRecord], any Error> {
        let (stream, continuation) = AsyncThrowingStream<[WalletRecord], any Error>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let watch = WalletObservations.Watch(continuation)
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

    /// How many times observations have read their result (tests: a commit was looked at).
    package var observationReads: Int { observations.reads }

    private func follow(
        _ watch: WalletObservations.Watch, type: String, query: WalletQuery, options: RecordOptions, interval: Duration,
        expiryCheck: Duration
    ) async {
        do {
            try Validate.type(type)
            var config = GRDB.Configuration()
            config.readonly = true
            config.busyMode = .timeout(10)
            config.label = "coffer.wallet.observe"
            let watcher = try DatabaseQueue(path: path, configuration: config)
            guard watch.setWatcher(watcher) else { throw WalletError.closed }
            // The version before the first read: a commit between the two is seen at the first check.
            var version = try await watcher.read { try Int64.fetchOne($0, sql: "PRAGMA data_version") ?? 0 }
            var last = try await fetchAll(type: type, matching: query, options: options)
            observations.noteRead()
            watch.continuation.yield(last)
            var sinceRead: Duration = .zero
            while true {
                try await Task.sleep(for: interval)
                if gate.isWalletClosed { throw WalletError.closed }
                let now = try await watcher.read { try Int64.fetchOne($0, sql: "PRAGMA data_version") ?? 0 }
                sinceRead += interval
                guard now != version || sinceRead >= expiryCheck else { continue }
                version = now
                sinceRead = .zero
                let fresh = try await fetchAll(type: type, matching: query, options: options)
                observations.noteRead()
                if fresh != last {
                    last = fresh
                    watch.continuation.yield(fresh)
                }
            }
        } catch is CancellationError {
            observations.end(watch)
            watch.continuation.finish(throwing: gate.isWalletClosed ? WalletError.closed : nil)
        } catch {
            observations.end(watch)
            let closed = gate.isWalletClosed || (error as? DatabaseError)?.resultCode == .SQLITE_MISUSE
            watch.continuation.finish(throwing: closed ? WalletError.closed : error)
        }
    }
}

/// The wallet's live observations, so ``Wallet/close()`` ends every one of them (and closes their
/// watching connections) before the file closes.
final class WalletObservations: Sendable {
    /// One observation: its stream, its task and its watching connection.
    final class Watch: Sendable {
        let continuation: AsyncThrowingStream<[WalletRecord], any Error>.Continuation
        let id = UUID()
        private let parts = Locked<(task: Task<Void, Never>?, watcher: DatabaseQueue?, ended: Bool)>((nil, nil, false))

        init(_ continuation: AsyncThrowingStream<[WalletRecord], any Error>.Continuation) { self.continuation = continuation }

        func setTask(_ task: Task<Void, Never>) { parts.withLock { $0.task = task } }

        /// Keeps the watching connection; false (and closes it) when the observation already ended.
        func setWatcher(_ watcher: DatabaseQueue) -> Bool {
            let ended = parts.withLock { parts -> Bool in
                if !parts.ended { parts.watcher = watcher }
                return parts.ended
            }
            if ended { try? watcher.close() }
            return !ended
        }

        /// Cancels the task and closes the connection (once).
        func end() {
            let (task, watcher) = parts.withLock { parts -> (Task<Void, Never>?, DatabaseQueue?) in
                defer {
                    parts.ended = true
                    parts.watcher = nil
                }
                return (parts.task, parts.watcher)
            }
            task?.cancel()
            try? watcher?.close()
        }
    }

    private let state = Locked<(closed: Bool, watches: [UUID: Watch])>((false, [:]))

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

    private let readCount = Locked(0)

    /// An observation read its result.
    func noteRead() { readCount.withLock { $0 += 1 } }

    /// How many times observations read their result (tests).
    var reads: Int { readCount.withLock { $0 } }
}
