// Async forms of the cache calls that may touch the disk. Each runs the synchronous call on a
// worker thread (`offCaller`), so awaiting it from the main actor never blocks the actor while a
// file is read, written or removed. In async code Swift picks these forms.

import CofferSync
import Foundation

extension MediaCache {
    /// ``dataBlocking(for:)`` off the caller's executor: from memory, else the file is read on a worker
    /// thread. For a view that must draw at once, ``memoryData(for:)`` never touches the disk.
    public func data(for key: MediaKey) async -> Data? { await offCaller { self.dataBlocking(for: key) } }

    /// ``storeBlocking(_:for:ttl:)`` off the caller's executor: the file is written on a worker thread.
    /// - Throws: `CancellationError` when the task was cancelled before the call (nothing is
    ///   stored), else the ``MediaCacheError`` of the blocking form.
    public func store(_ data: Data, for key: MediaKey, ttl: TimeInterval? = nil) async throws {
        try await offCallerUnlessCancelled { try self.storeBlocking(data, for: key, ttl: ttl) }
    }

    /// ``removeBlocking(_:)`` off the caller's executor.
    public func remove(_ key: MediaKey) async { await offCaller { self.removeBlocking(key) } }

    /// ``invalidateBlocking(assetId:)`` off the caller's executor.
    public func invalidate(assetId: String) async { await offCaller { self.invalidateBlocking(assetId: assetId) } }

    /// ``invalidateBlocking(albumId:)`` off the caller's executor.
    public func invalidate(albumId: String) async { await offCaller { self.invalidateBlocking(albumId: albumId) } }

    /// ``clearBlocking(_:)`` off the caller's executor.
    public func clear(_ kind: MediaKind? = nil) async { await offCaller { self.clearBlocking(kind) } }

    /// ``setLimitsBlocking(_:)`` off the caller's executor (evicting may remove many files).
    /// - Throws: `CancellationError` when the task was cancelled before the call (the limits
    ///   stay), else the ``MediaCacheError`` of the blocking form.
    public func setLimits(_ newLimits: MediaCacheLimits) async throws {
        try await offCallerUnlessCancelled { try self.setLimitsBlocking(newLimits) }
    }

    /// ``statisticsBlocking()`` off the caller's executor (it may build the disk index first).
    public func statistics() async -> MediaCacheStatistics { await offCaller { self.statisticsBlocking() } }

    /// ``checkForPurgeBlocking()`` off the caller's executor.
    @discardableResult public func checkForPurge() async -> Bool { await offCaller { self.checkForPurgeBlocking() } }
}
