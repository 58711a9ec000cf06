// Async forms of the cache calls that may touch the disk. Each runs the synchronous call on a
// worker thread (`offCaller`), so awaiting it from the main actor never blocks the actor while a
// file is read, written or removed. In async code Swift picks these forms.

import CofferSync
import Foundation

extension MediaCache {
    /// ``data(for:)`` off the caller's executor: from memory, else the file is read on a worker
    /// thread. For a view that must draw at once, ``memoryData(for:)`` never touches the disk.
    public func data(for key: MediaKey) async -> Data? { await offCaller { self.data(for: key) } }

    /// ``store(_:for:ttl:)`` off the caller's executor: the file is written on a worker thread.
    /// - Throws: `CancellationError` when the task was cancelled before the call (nothing is
    ///   stored), else the ``MediaCacheError`` of the blocking form.
    public func store(_ data: Data, for key: MediaKey, ttl: TimeInterval? = nil) async throws {
        try await offCallerUnlessCancelled { try self.store(data, for: key, ttl: ttl) }
    }

    /// ``remove(_:)`` off the caller's executor.
    public func remove(_ key: MediaKey) async { await offCaller { self.remove(key) } }

    /// ``invalidate(assetId:)`` off the caller's executor.
    public func invalidate(assetId: String) async { await offCaller { self.invalidate(assetId: assetId) } }

    /// ``invalidate(albumId:)`` off the caller's executor.
    public func invalidate(albumId: String) async { await offCaller { self.invalidate(albumId: albumId) } }

    /// ``clear(_:)`` off the caller's executor.
    public func clear(_ kind: MediaKind? = nil) async { await offCaller { self.clear(kind) } }

    /// ``setLimits(_:)`` off the caller's executor (evicting may remove many files).
    /// - Throws: `CancellationError` when the task was cancelled before the call (the limits
    ///   stay), else the ``MediaCacheError`` of the blocking form.
    public func setLimits(_ newLimits: MediaCacheLimits) async throws {
        try await offCallerUnlessCancelled { try self.setLimits(newLimits) }
    }

    /// ``statistics()`` off the caller's executor (it may build the disk index first).
    public func statistics() async -> MediaCacheStatistics { await offCaller { self.statistics() } }

    /// ``checkForPurge()`` off the caller's executor.
    @discardableResult public func checkForPurge() async -> Bool { await offCaller { self.checkForPurge() } }
}
