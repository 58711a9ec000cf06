// Open searches behind integer handles: bounded, reclaimed when idle, never reused. One registry
// type serves both backends; what a search's position is (a SQLite keyset cursor, a PostgreSQL
// sealed position token) is the backend's `Walk`.

import CofferSync
import Foundation

/// Holds the state of searches opened with ``SearchHandleWallet/openSearch(type:query:options:)``.
///
/// Handles count up from 1 and are never reused while the wallet is open. At most `capacity`
/// searches stay open: opening one more reclaims the least recently used, and any search idle
/// longer than `idleTimeout` is reclaimed on the next call. A search holds no statement, no
/// connection and no transaction between pages (keyset paging), so reclaiming frees only memory.
final class SearchRegistry<Walk: Sendable>: Sendable {
    struct Entry: Sendable {
        /// Where the search stands, as its backend walks it.
        var walk: Walk
        let options: SearchOptions
        var totalCount: Int?
        var lastUsed: ContinuousClock.Instant
        var busy = false
    }

    private struct State: Sendable {
        var entries = [Int: Entry]()
        var nextHandle = 1
        /// Set when the wallet closed: no search opens any more.
        var closed = false
    }

    private let state = Locked(State())
    /// Test hook: awaited by ``SearchHandleWallet/openSearch(type:query:options:)`` just before it
    /// registers the search, so a test can close the wallet in that window.
    let beforeOpen = Locked<(@Sendable () async -> Void)?>(nil)
    private let capacity: Int
    private let idleTimeout: Duration
    private let clock = ContinuousClock()

    init(capacity: Int, idleTimeout: Duration) {
        self.capacity = max(1, capacity)
        self.idleTimeout = idleTimeout
    }

    var openCount: Int {
        state.withLock { $0.entries.count }
    }

    /// Registers a search under a new handle.
    /// - Throws: ``WalletError/closed`` once the wallet closed (``close()``): deciding that and
    ///   registering are one locked step, so no handle outlives the wallet.
    func open(_ walk: Walk, options: SearchOptions, totalCount: Int?) throws(WalletError) -> Int {
        let (now, capacity, idleTimeout) = (clock.now, capacity, idleTimeout)
        return try state.withLock { (state) throws(WalletError) -> Int in
            if state.closed { throw .closed }
            Self.sweep(&state, now: now, idleTimeout: idleTimeout)
            while state.entries.count >= capacity {
                // Reclaim the least recently used idle search: the caller has most likely abandoned it.
                guard let oldest = state.entries.filter({ !$0.value.busy }).min(by: { $0.value.lastUsed < $1.value.lastUsed })?.key
                else { break }
                state.entries[oldest] = nil
            }
            let handle = state.nextHandle
            state.nextHandle += 1
            state.entries[handle] = Entry(walk: walk, options: options, totalCount: totalCount, lastUsed: now)
            return handle
        }
    }

    /// The next page of up to `count` records of the search `handle`: `page` reads them from
    /// where the search stands and says where it then stands. The search is checked out for the
    /// call (a second concurrent call on the handle is refused) and put back with its new
    /// position, or unchanged when `page` throws.
    /// - Throws: ``WalletError/invalidHandle(_:)`` for an unknown, closed or reclaimed handle;
    ///   ``WalletError/invalidInput(_:)`` for a count below 1.
    func next(
        _ handle: Int, count: Int, page: (Walk, Int, RecordOptions) async throws -> ([WalletRecord], Walk)
    ) async throws -> SearchPage {
        guard count >= 1 else { throw WalletError.invalidInput("count must be at least 1, got \(count)") }
        let entry = try checkOut(handle)
        var updated = entry
        do {
            var result = SearchPage(totalCount: entry.totalCount)
            if entry.options.retrieveRecords {
                let (records, walk) = try await page(entry.walk, count, entry.options.recordOptions)
                updated.walk = walk
                result.records = records
            }
            checkIn(handle, updated)
            return result
        } catch {
            checkIn(handle, entry)
            throw error
        }
    }

    /// Takes a search out for one page; a second concurrent call on the same handle is refused.
    private func checkOut(_ handle: Int) throws -> Entry {
        let (now, idleTimeout) = (clock.now, idleTimeout)
        return try state.withLock { (state) throws -> Entry in
            Self.sweep(&state, now: now, idleTimeout: idleTimeout)
            guard var entry = state.entries[handle] else { throw WalletError.invalidHandle(handle) }
            if entry.busy { throw WalletError.invalidInput("search handle \(handle) is already fetching a page in another call") }
            entry.busy = true
            state.entries[handle] = entry
            return entry
        }
    }

    /// Puts a search back with its new position (or unchanged, after a failure).
    private func checkIn(_ handle: Int, _ entry: Entry) {
        var e = entry
        e.busy = false
        e.lastUsed = clock.now
        state.withLock { (state) -> Void in
            guard state.entries[handle] != nil else { return } // closed meanwhile
            state.entries[handle] = e
        }
    }

    func close(_ handle: Int) throws {
        try state.withLock { (state) throws -> Void in
            guard state.entries.removeValue(forKey: handle) != nil else { throw WalletError.invalidHandle(handle) }
        }
    }

    /// Ends every open search (a key rotation: searches made under the old keys go).
    func closeAll() {
        state.withLock { $0.entries.removeAll() }
    }

    /// Ends every open search and opens none from now on (the wallet closed).
    func close() {
        state.withLock { state in
            state.closed = true
            state.entries.removeAll()
        }
    }

    private static func sweep(_ state: inout State, now: ContinuousClock.Instant, idleTimeout: Duration) {
        for (handle, entry) in state.entries where !entry.busy && now - entry.lastUsed > idleTimeout {
            state.entries[handle] = nil
        }
    }
}
