// Loader coalescing: `data(for:orLoad:)` runs one loader for all the concurrent requests of a
// missing key, stores what it loads, and answers every waiter; a waiter's cancellation answers it
// at once, and a run every waiter has left is cancelled and caches nothing.

import CofferSync
import Foundation
import Logging

extension MediaCache {
    /// The cached bytes, or the loader's (then stored in both layers). Concurrent calls for one
    /// missing key share one run of the loader; a failed load stores nothing and is rethrown to
    /// every waiter. Loaded bytes that cannot be cached (empty, larger than the disk limit, disk
    /// full) are still returned, and the reason is logged.
    ///
    /// Cancellation: a caller whose task is cancelled gets `CancellationError` at once, whatever
    /// the loader is doing; when every caller waiting for a run has cancelled, the loader's task
    /// is cancelled and nothing it returns is cached (a later call loads afresh).
    public func data(for key: MediaKey, orLoad loader: @escaping @Sendable () async throws -> Data) async throws -> Data {
        try Self.validate(key)
        if closed { throw MediaCacheError.closed }
        try Task.checkCancellation()
        for attempt in 0... {
            // A memory hit answers at once. A caller that finds a run in flight joins it at once
            // (the run stores what it loads); otherwise the disk is read off the caller's executor.
            if let hit = memoryData(for: key) { return hit }
            if !state.withLock({ $0.inFlight[key] != nil }), let hit = await data(for: key) { return hit }
            let diskKey = self.diskKey(key)
            let joined: (Flight, UInt64)? = state.withLock { state in
                let flight: Flight
                if let running = state.inFlight[key] {
                    flight = running
                } else {
                    // A run that finished between the miss above and this lock has stored its
                    // result: read it rather than load again.
                    // (Bounded: an entry that keeps vanishing between index and file is loaded.)
                    if attempt < 3, state.memory.peek(key) != nil || state.disk.peek(diskKey) != nil { return nil }
                    flight = Flight()
                    state.inFlight[key] = flight
                    let task = Task { [self] in await run(flight, key, loader) }
                    flight.fields.withLock { $0.task = task }
                }
                state.nextWaiter &+= 1
                flight.fields.withLock { $0.active += 1 }
                return (flight, state.nextWaiter)
            }
            if let (flight, id) = joined { return try await wait(for: flight, key, id) }
        }
        fatalError("unreachable")
    }

    /// One run of a loader for one key and the callers waiting for it. Its fields sit behind
    /// its own lock; a step that also reads or changes the cache's `state` (which flight is in
    /// flight for a key) takes that lock first and the flight's inside it, always in that order.
    final class Flight: Sendable {
        struct Fields {
            var task: Task<Void, Never>?
            /// Callers waiting, by id.
            var waiters: [UInt64: CheckedContinuation<Data, any Error>] = [:]
            /// Callers cancelled before they started waiting.
            var cancelledEarly: Set<UInt64> = []
            /// Callers that joined and have neither been answered nor cancelled.
            var active = 0
            /// The loader's outcome, once it is known.
            var result: Result<Data, any Error>?
            /// Every caller cancelled: nothing this run loads is cached.
            var abandoned = false
        }

        let fields = Locked(Fields())
    }

    private func run(_ flight: Flight, _ key: MediaKey, _ loader: @Sendable () async throws -> Data) async {
        let result: Result<Data, any Error>
        do { result = .success(try await loader()) } catch { result = .failure(error) }
        let keep = state.withLock { state in
            !flight.fields.withLock { $0.abandoned } && !state.invalidatedInFlight.contains(key)
        }
        if case .success(let data) = result, keep {
            // Stored while still in flight, so a request arriving meanwhile waits for this run
            // instead of starting another. The caller gets its image even when it cannot be
            // cached (disk full, too large).
            do { try await store(data, for: key) } catch {
                Self.logger.warning("a loaded image was not cached", metadata: ["key": "\(key)", "reason": "\(error)"])
            }
        }
        let (waiting, invalidatedDuringStore) = state.withLock { state -> ([CheckedContinuation<Data, any Error>], Bool) in
            let (waiting, abandoned) = flight.fields.withLock { (fields) -> ([CheckedContinuation<Data, any Error>], Bool) in
                fields.result = result
                defer {
                    fields.waiters.removeAll()
                    fields.active = 0
                }
                return (Array(fields.waiters.values), fields.abandoned)
            }
            guard !abandoned else { return (waiting, false) }
            if state.inFlight[key] === flight { state.inFlight[key] = nil }
            return (waiting, state.invalidatedInFlight.remove(key) != nil)
        }
        // Invalidated while it was being stored: what was stored is stale.
        if invalidatedDuringStore, keep, case .success = result { removeUnderFolderLock([key], markInFlight: false) }
        for waiter in waiting { waiter.resume(with: result) }
    }

    /// Waits for `flight` as caller `id`, returning at once with `CancellationError` when the
    /// caller's task is cancelled.
    private func wait(for flight: Flight, _ key: MediaKey, _ id: UInt64) async throws -> Data {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Data, any Error>) in
                // The answer when there is one already (the run finished, or this caller was
                // cancelled before it got here); otherwise the continuation is left to the run.
                let answer = flight.fields.withLock { (fields) -> Result<Data, any Error>? in
                    if let result = fields.result { return result }
                    if fields.cancelledEarly.remove(id) != nil { return .failure(CancellationError()) }
                    fields.waiters[id] = continuation
                    return nil
                }
                if let answer { continuation.resume(with: answer) }
            }
        } onCancel: {
            let (waiter, abandonedTask) = state.withLock { state -> (CheckedContinuation<Data, any Error>?, Task<Void, Never>?) in
                let (waiter, abandoned, abandonedTask) = flight.fields.withLock {
                    (fields) -> (CheckedContinuation<Data, any Error>?, Bool, Task<Void, Never>?) in
                    guard fields.result == nil else { return (nil, false, nil) }
                    let waiter = fields.waiters.removeValue(forKey: id)
                    if waiter == nil { fields.cancelledEarly.insert(id) }
                    fields.active -= 1
                    guard fields.active == 0 else { return (waiter, false, nil) }
                    // Nobody wants this run any more: stop it, cache nothing, and let a later
                    // call start a new one.
                    fields.abandoned = true
                    return (waiter, true, fields.task)
                }
                if abandoned, state.inFlight[key] === flight { state.inFlight[key] = nil }
                return (waiter, abandonedTask)
            }
            waiter?.resume(throwing: CancellationError())
            abandonedTask?.cancel()
        }
    }
}
