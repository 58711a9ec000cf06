// Open searches behind integer handles: bounded, reclaimed when idle, never reused.
import Foundation

/// Holds the state of searches opened with ``Wallet/openSearch(type:query:options:)``.
///
/// Handles count up from 1 and are never reused while the wallet is open. At most `capacity`
/// searches stay open: opening one more reclaims the least recently used, and any search idle
/// longer than `idleTimeout` is reclaimed on the next call. A search holds no SQLite statement
/// or transaction between pages (keyset paging), so reclaiming frees only memory.
final class SearchRegistry: @unchecked Sendable {
    struct Entry {
        let search: CompiledSearch
        let options: SearchOptions
        var cursor: SearchCursor
        var totalCount: Int?
        var countDelivered = false
        var lastUsed: ContinuousClock.Instant
        var busy = false
    }

    private let lock = NSLock()
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
        lock.lock()
        defer { lock.unlock() }
        return entries.count
    }

    func open(_ search: CompiledSearch, options: SearchOptions, totalCount: Int?) -> Int {
        lock.lock()
        defer { lock.unlock() }
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

    /// Takes a search out for one page; a second concurrent call on the same handle is refused.
    func checkOut(_ handle: Int) throws -> Entry {
        lock.lock()
        defer { lock.unlock() }
        sweep(now: clock.now)
        guard var entry = entries[handle] else { throw WalletError.invalidHandle(handle) }
        if entry.busy { throw WalletError.invalidInput("search handle \(handle) is already fetching a page in another call") }
        entry.busy = true
        entries[handle] = entry
        return entry
    }

    /// Puts a search back with its new position (or unchanged, after a failure).
    func checkIn(_ handle: Int, _ entry: Entry) {
        lock.lock()
        defer { lock.unlock() }
        guard entries[handle] != nil else { return } // closed meanwhile
        var e = entry
        e.busy = false
        e.lastUsed = clock.now
        entries[handle] = e
    }

    func close(_ handle: Int) throws {
        lock.lock()
        defer { lock.unlock() }
        guard entries.removeValue(forKey: handle) != nil else { throw WalletError.invalidHandle(handle) }
    }

    func closeAll() {
        lock.lock()
        entries.removeAll()
        lock.unlock()
    }

    private func sweep(now: ContinuousClock.Instant) {
        for (handle, entry) in entries where !entry.busy && now - entry.lastUsed > idleTimeout {
            entries[handle] = nil
        }
    }
}
