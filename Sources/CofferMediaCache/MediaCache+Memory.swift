// The memory layer: decoded bytes kept in memory, each entry pointing at the disk entry it
// mirrors; reads from memory alone, and emptying it on a memory warning.

import CofferSync
import Foundation

/// A memory entry: the bytes and the disk entry they mirror (so a memory hit refreshes the disk
/// entry's recency without hashing the id).
struct MemoryEntry {
    let data: Data
    let disk: DiskKey
    /// When the entry expires, in milliseconds since 1970 (0: never).
    let deadline: UInt64
}

extension MediaCache {
    /// The cached bytes from memory only (no disk access), marking them recently used in both
    /// layers (an image shown from memory is not the disk layer's next victim).
    public func memoryData(for key: MediaKey) -> Data? {
        state.withLock { state -> Data? in
            if state.isClosed { return nil }
            guard let hit = state.memory.touch(key) else { return nil }
            if hit.payload.deadline != 0, hit.payload.deadline <= nowMillis() {
                state.memory.remove(key) // expired: a disk read counts and removes it
                return nil
            }
            _ = state.disk.touch(hit.payload.disk)
            state.counters.hits[key.kind.index] += 1
            return hit.payload.data
        }
    }

    /// Empties the memory layer (a memory warning); the disk layer keeps everything.
    public func clearMemory() {
        state.withLock { $0.memory.removeAll() }
    }
}

extension MediaCache.State {
    /// Keeps `data` in memory as `key`'s entry, unless the limits allow it no room (then any
    /// older entry of `key` goes).
    mutating func insertMemory(_ key: MediaKey, _ diskKey: DiskKey, _ data: Data, deadline: UInt64) {
        guard data.count <= limits.memoryBytes, limits.entries(key.kind) > 0 else {
            memory.remove(key)
            return
        }
        memory.insert(key, MemoryEntry(data: data, disk: diskKey, deadline: deadline), bytes: data.count)
    }
}
