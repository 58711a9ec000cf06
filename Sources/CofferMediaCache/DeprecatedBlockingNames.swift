// The blocking calls' old names (before the async form took the plain name), kept for one
// release so existing code still builds, with a warning whose fix-it writes the new name.

import Foundation

extension MediaCache {
    /// The blocking form's old name, kept for one release: use `dataBlocking(for:)`.
    @available(*, deprecated, renamed: "dataBlocking(for:)")
    public func data(for key: MediaKey) -> Data? { dataBlocking(for: key) }
    /// The blocking form's old name, kept for one release: use `storeBlocking(_:for:ttl:)`.
    @available(*, deprecated, renamed: "storeBlocking(_:for:ttl:)")
    public func store(_ data: Data, for key: MediaKey, ttl: TimeInterval? = nil) throws(MediaCacheError) {
        try storeBlocking(data, for: key, ttl: ttl)
    }
    /// The blocking form's old name, kept for one release: use `removeBlocking(_:)`.
    @available(*, deprecated, renamed: "removeBlocking(_:)")
    public func remove(_ key: MediaKey) { removeBlocking(key) }
    /// The blocking form's old name, kept for one release: use `invalidateBlocking(assetId:)`.
    @available(*, deprecated, renamed: "invalidateBlocking(assetId:)")
    public func invalidate(assetId: String) { invalidateBlocking(assetId: assetId) }
    /// The blocking form's old name, kept for one release: use `invalidateBlocking(albumId:)`.
    @available(*, deprecated, renamed: "invalidateBlocking(albumId:)")
    public func invalidate(albumId: String) { invalidateBlocking(albumId: albumId) }
    /// The blocking form's old name, kept for one release: use `clearBlocking(_:)`.
    @available(*, deprecated, renamed: "clearBlocking(_:)")
    public func clear(_ kind: MediaKind? = nil) { clearBlocking(kind) }
    /// The blocking form's old name, kept for one release: use `setLimitsBlocking(_:)`.
    @available(*, deprecated, renamed: "setLimitsBlocking(_:)")
    public func setLimits(_ newLimits: MediaCacheLimits) throws(MediaCacheError) { try setLimitsBlocking(newLimits) }
    /// The blocking form's old name, kept for one release: use `statisticsBlocking()`.
    @available(*, deprecated, renamed: "statisticsBlocking()")
    public func statistics() -> MediaCacheStatistics { statisticsBlocking() }
    /// The blocking form's old name, kept for one release: use `checkForPurgeBlocking()`.
    @available(*, deprecated, renamed: "checkForPurgeBlocking()")
    @discardableResult public func checkForPurge() -> Bool { checkForPurgeBlocking() }
}
