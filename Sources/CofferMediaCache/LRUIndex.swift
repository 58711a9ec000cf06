// Least-recently-used bookkeeping for one cache layer: O(1) lookup, touch, insert and eviction,
// one recency list per kind so a kind's entry limit never evicts another kind.

/// A key that belongs to one ``MediaKind``.
protocol CacheIndexKey: Hashable {
    var kind: MediaKind { get }
}

extension MediaKey: CacheIndexKey {}

/// Entries of one layer with per-kind recency lists threaded through one slot array (no
/// per-entry allocation).
struct LRUIndex<Key: CacheIndexKey, Payload> {
    struct Slot {
        var key: Key
        var payload: Payload?
        var bytes: Int
        var stamp: UInt64
        var generation: UInt64
        var prev: Int32
        var next: Int32
    }

    private(set) var slots: [Slot] = []
    private var free: [Int32] = []
    private var map: [Key: Int32] = [:]
    private var heads = [Int32](repeating: -1, count: MediaKind.allCases.count)
    private var tails = [Int32](repeating: -1, count: MediaKind.allCases.count)
    private(set) var counts = [Int](repeating: 0, count: MediaKind.allCases.count)
    private(set) var kindBytes = [Int](repeating: 0, count: MediaKind.allCases.count)
    private(set) var totalBytes = 0
    private var clock: UInt64 = 0
    private var generations: UInt64 = 0

    var count: Int { map.count }

    /// The entry's payload and generation, marking it most recently used.
    mutating func touch(_ key: Key) -> (payload: Payload, generation: UInt64)? {
        guard let index = map[key] else { return nil }
        moveToFront(index)
        clock &+= 1
        slots[Int(index)].stamp = clock
        assertInvariants()
        return (slots[Int(index)].payload!, slots[Int(index)].generation)
    }

    /// The entry's payload without changing its recency.
    func peek(_ key: Key) -> Payload? {
        guard let index = map[key] else { return nil }
        return slots[Int(index)].payload
    }

    /// The entry's generation: it changes each time the entry is inserted (replaced), not when read.
    func generation(_ key: Key) -> UInt64? {
        map[key].map { slots[Int($0)].generation }
    }

    /// Adds or replaces an entry as the most recently used.
    mutating func insert(_ key: Key, _ payload: Payload, bytes: Int) {
        _ = remove(key)
        clock &+= 1
        generations &+= 1
        let slot = Slot(key: key, payload: payload, bytes: bytes, stamp: clock, generation: generations, prev: -1, next: -1)
        let index: Int32
        if let reused = free.popLast() {
            index = reused
            slots[Int(index)] = slot
        } else {
            index = Int32(slots.count)
            slots.append(slot)
        }
        map[key] = index
        let k = key.kind.index
        slots[Int(index)].next = heads[k]
        if heads[k] >= 0 { slots[Int(heads[k])].prev = index }
        heads[k] = index
        if tails[k] < 0 { tails[k] = index }
        counts[k] += 1
        kindBytes[k] += bytes
        totalBytes += bytes
        assertInvariants()
    }

    /// Removes an entry; returns its payload and size.
    @discardableResult
    mutating func remove(_ key: Key) -> (payload: Payload, bytes: Int)? {
        guard let index = map.removeValue(forKey: key) else { return nil }
        unlink(index)
        let slot = slots[Int(index)]
        let k = key.kind.index
        counts[k] -= 1
        kindBytes[k] -= slot.bytes
        totalBytes -= slot.bytes
        slots[Int(index)].payload = nil
        free.append(index)
        assertInvariants()
        return (slot.payload!, slot.bytes)
    }

    /// The least recently used key of a kind.
    func leastRecent(_ kind: MediaKind) -> Key? {
        let tail = tails[kind.index]
        return tail >= 0 ? slots[Int(tail)].key : nil
    }

    /// The least recently used key of the whole layer (the oldest of the kinds' tails).
    func leastRecentOverall() -> Key? {
        var best: Slot?
        for tail in tails where tail >= 0 {
            let slot = slots[Int(tail)]
            if best == nil || slot.stamp < best!.stamp { best = slot }
        }
        return best?.key
    }

    /// Keys of one kind (or every kind), in no particular order.
    func keys(_ kind: MediaKind? = nil) -> [Key] {
        map.keys.filter { kind == nil || $0.kind == kind }
    }

    /// Forgets everything. Generations keep counting, so an entry inserted afterwards never gets a
    /// generation an earlier entry had (a reader comparing generations sees the replacement).
    mutating func removeAll() {
        let generations = self.generations
        self = LRUIndex()
        self.generations = generations
    }

    /// The keys of one kind from most to least recently used.
    func keysByRecency(_ kind: MediaKind) -> [Key] {
        var keys: [Key] = []
        var index = heads[kind.index]
        while index >= 0 {
            keys.append(slots[Int(index)].key)
            index = slots[Int(index)].next
        }
        return keys
    }

    /// Checks the index's internal consistency, for tests and debug builds.
    ///
    /// The invariants: each kind's list, walked from its head, links both ways (every slot's
    /// `prev` is the slot before it), ends at the kind's tail, holds only live entries of that
    /// kind whose key the dictionary maps to that slot, and has strictly decreasing recency
    /// stamps (so a tail is its kind's least recent entry); each kind's count and bytes equal the
    /// sums over its list; `totalBytes` is the sum of the kinds' bytes; every dictionary entry is
    /// on a list; and every slot is either live or on the free list, never both.
    ///
    /// Each mutation calls it in debug builds (`#if DEBUG`) while the index has at most
    /// `debugCheckSlotLimit` slots, so a large debug cache keeps O(1) operations. It walks every
    /// slot: O(n).
    /// - Returns: a description of the first inconsistency found, or nil when there is none.
    func checkInvariants() -> String? {
        var linked = 0
        for kind in MediaKind.allCases {
            let k = kind.index
            var index = heads[k]
            var previous: Int32 = -1
            var count = 0
            var bytes = 0
            var stamp = UInt64.max
            while index >= 0 {
                guard Int(index) < slots.count else { return "\(kind) list reaches slot \(index), past the end" }
                guard count < slots.count else { return "\(kind) list has a cycle" }
                let slot = slots[Int(index)]
                guard slot.prev == previous else { return "\(kind) slot \(index) has prev \(slot.prev), not \(previous)" }
                guard slot.payload != nil else { return "\(kind) list links free slot \(index)" }
                guard slot.key.kind == kind else { return "\(kind) list links slot \(index) of kind \(slot.key.kind)" }
                guard map[slot.key] == index else { return "\(kind) slot \(index) is not where the dictionary maps its key" }
                guard slot.stamp < stamp else { return "\(kind) slot \(index) is more recent than the slot before it" }
                stamp = slot.stamp
                count += 1
                bytes += slot.bytes
                previous = index
                index = slot.next
            }
            guard tails[k] == previous else { return "\(kind) tail is \(tails[k]), the list ends at \(previous)" }
            guard counts[k] == count else { return "\(kind) count is \(counts[k]), the list holds \(count)" }
            guard kindBytes[k] == bytes else { return "\(kind) bytes are \(kindBytes[k]), the list sums to \(bytes)" }
            linked += count
        }
        guard totalBytes == kindBytes.reduce(0, +) else { return "total bytes \(totalBytes) differ from the kinds' sum" }
        guard linked == map.count else { return "the dictionary holds \(map.count) entries, the lists \(linked)" }
        guard free.count + map.count == slots.count, Set(free).count == free.count else {
            return "\(slots.count) slots are not \(map.count) live plus \(free.count) distinct free ones"
        }
        for index in free where Int(index) >= slots.count || slots[Int(index)].payload != nil {
            return "free slot \(index) is live or past the end"
        }
        return nil
    }

    /// The most slots a debug build checks after every mutation.
    static var debugCheckSlotLimit: Int { 2_048 }

    /// In debug builds, stops at a broken invariant (see ``checkInvariants()``) after a mutation.
    private func assertInvariants() {
        #if DEBUG
        if slots.count <= Self.debugCheckSlotLimit, let problem = checkInvariants() {
            assertionFailure("LRUIndex: \(problem)")
        }
        #endif
    }

    private mutating func unlink(_ index: Int32) {
        let slot = slots[Int(index)]
        let k = slot.key.kind.index
        if slot.prev >= 0 { slots[Int(slot.prev)].next = slot.next } else { heads[k] = slot.next }
        if slot.next >= 0 { slots[Int(slot.next)].prev = slot.prev } else { tails[k] = slot.prev }
        slots[Int(index)].prev = -1
        slots[Int(index)].next = -1
    }

    private mutating func moveToFront(_ index: Int32) {
        let k = slots[Int(index)].key.kind.index
        guard heads[k] != index else { return }
        unlink(index)
        slots[Int(index)].next = heads[k]
        if heads[k] >= 0 { slots[Int(heads[k])].prev = index }
        heads[k] = index
        if tails[k] < 0 { tails[k] = index }
    }
}
