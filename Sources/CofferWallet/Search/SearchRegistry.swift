// Open searches behind integer handles: bounded, reclaimed when idle, never reused.

import CofferSync
import Foundation

/// Holds the state of searches opened with ``Wallet/openSearch(type:query:options:)``.
///
/// Handles count up from 1 and are never reused while the wallet is open. At most `capacity`
/// searches stay open: opening one more reclaims the least recently used, and any search idle
/// longer than `idleTimeout` is reclaimed on the next call. A search holds no SQLite statement
/// or transaction between pages (keyset paging), so reclaiming frees only memory.
final class SearchRegistry: @unchecked Sendable {
    // Safe to share: `entries` and the handle counter are only touched under `lock`.
    struct Entry {
        let search: CompiledSearch
        let options: SearchOptions
        var cursor: SearchCursor
        var totalCount: Int?
        var countDelivered = false
        var lastUsed: ContinuousClock.Instant
        var busy = false
    }

    private let lock = Lock()
    private var entries = [Int: Entry]()
    private var nextHandle = 1
    private let capacity: Int
    private let idleTimeout: Duration
    private let clock = ContinuousClock()

    init(capacity: Int, idleTimeout: Duration) {
        self.capacity = max(1, capacity)
        self.idleTimeout = idleTimeout
    }

    var openCount: Int {
        return lock.withLock { () -> Int in
            return entries.count
        }
    }

    func open(_ search: CompiledSearch, options: SearchOptions, totalCount: Int?) -> Int {
        return lock.withLock { () -> Int in
            let now = clock.now
            sweep(now: now)
            while entries.count >= capacity {
                // Reclaim the least recently used idle search: the caller has most likely abandoned it.
                guard let oldest = entries.filter({ !$0.value.busy }).min(by: { $0.value.lastUsed < $1.value.lastUsed })?.key else { break }
                entries[oldest] = nil
            }
            let handle = nextHandle
            nextHandle += 1
            entries[handle] = Entry(search: search, options: options, cursor: SearchCursor(), totalCount: totalCount, lastUsed: now)
            return handle
        }
    }

    /// Takes a search out for one page; a second concurrent call on the same handle is refused.
    func checkOut(_ handle: Int) throws -> Entry {
        return try lock.withLock { () throws -> Entry in
            sweep(now: clock.now)
            guard var entry = entries[handle] else { throw WalletError.invalidHandle(handle) }
            if entry.busy { throw WalletError.invalidInput("search handle \(handle) is already fetching a page in another call") }
            entry.busy = true
            entries[handle] = entry
            return entry
        }
    }

    /// Puts a search back with its new position (or unchanged, after a failure).
    func checkIn(_ handle: Int, _ entry: Entry) {
        lock.withLock { () -> Void in
            guard entries[handle] != nil else { return } // closed meanwhile
            var e = entry
            e.busy = false
            e.lastUsed = clock.now
            entries[handle] = e
        }
    }

    func close(_ handle: Int) throws {
        try lock.withLock { () throws -> Void in
            guard entries.removeValue(forKey: handle) != nil else { throw WalletError.invalidHandle(handle) }
        }
    }

    func closeAll() {
        lock.withLock { entries.removeAll() }
    }

    private func sweep(now: ContinuousClock.Instant) {
        for (handle, entry) in entries where !entry.busy && now - entry.lastUsed > idleTimeout {
            entries[handle] = nil
        }
    }
}
