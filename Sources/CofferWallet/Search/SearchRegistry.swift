// Open searches behind integer handles: bounded, reclaimed when idle, never reused.

import CofferSync
import Foundation

/// Holds the state of searches opened with ``Wallet/openSearch(type:query:options:)``.
///
/// Handles count up from 1 and are never reused while the wallet is open. At most `capacity`
/// searches stay open: opening one more reclaims the least recently used, and any search idle
/// longer than `idleTimeout` is reclaimed on the next call. A search holds no SQLite statement
/// or transaction between pages (keyset paging), so reclaiming frees only memory.
final class SearchRegistry: Sendable {
    struct Entry {
        let search: CompiledSearch
        let options: SearchOptions
        var cursor: SearchCursor
        var totalCount: Int?
        var countDelivered = false
        var lastUsed: ContinuousClock.Instant
        var busy = false
    }

    private struct State {
        var entries = [Int: Entry]()
        var nextHandle = 1
        /// Set when the wallet closed: no search opens any more.
        var closed = false
    }

    private let state = Locked(State())
    /// Test hook: awaited by ``Wallet/openSearch(type:query:options:)`` just before it registers
    /// the search, so a test can close the wallet in that window.
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
    func open(_ search: CompiledSearch, options: SearchOptions, totalCount: Int?) throws(WalletError) -> Int {
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
            state.entries[handle] = Entry(search: search, options: options, cursor: SearchCursor(), totalCount: totalCount, lastUsed: now)
            return handle
        }
    }

    /// Takes a search out for one page; a second concurrent call on the same handle is refused.
    func checkOut(_ handle: Int) throws -> Entry {
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
    func checkIn(_ handle: Int, _ entry: Entry) {
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

    /// Ends every open search (a key rotation: searches compiled under the old keys go).
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
