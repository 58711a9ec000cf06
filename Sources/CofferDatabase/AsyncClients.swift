// Async forms of every collection call. Each runs the synchronous call on a worker thread
// (`offCaller`), so awaiting it from the main actor never blocks the actor; the work, its one
// transaction and its errors are the synchronous call's own. In async code Swift picks these
// forms, so `try await` is what a view model writes.

import CofferSync
import Foundation

extension BrandClientType {
    /// ``save(_:for:)`` off the caller's executor.
    public func save(_ entity: Brand, for nameSpace: String) async throws {
        try await offCallerUnlessCancelled { try self.save(entity, for: nameSpace) }
    }
    /// ``getBrandByLanguage(_:)`` off the caller's executor.
    public func getBrandByLanguage(_ language: String) async throws -> [Brand]? {
        try await offCallerUnlessCancelled { try self.getBrandByLanguage(language) }
    }
    /// ``clearBrandBy(_:)`` off the caller's executor.
    public func clearBrandBy(_ language: String) async throws { try await offCallerUnlessCancelled { try self.clearBrandBy(language) } }
    /// ``delete(_:)`` off the caller's executor.
    @discardableResult public func delete(_ id: String) async throws -> Int { try await offCallerUnlessCancelled { try self.delete(id) } }
}

extension AssetClientType {
    /// ``findByRemoteId(_:)`` off the caller's executor.
    public func findByRemoteId(_ remoteId: String) async throws -> Asset? {
        try await offCallerUnlessCancelled { try self.findByRemoteId(remoteId) }
    }
    /// ``findByLocalId(_:)`` off the caller's executor.
    public func findByLocalId(_ localId: String) async throws -> Asset? {
        try await offCallerUnlessCancelled { try self.findByLocalId(localId) }
    }
    /// ``allForOwner(_:)`` off the caller's executor.
    public func allForOwner(_ ownerId: String) async throws -> [Asset] {
        try await offCallerUnlessCancelled { try self.allForOwner(ownerId) }
    }
    /// ``createdBetween(_:_:)`` off the caller's executor.
    public func createdBetween(_ start: Date, _ end: Date) async throws -> [Asset] {
        try await offCallerUnlessCancelled { try self.createdBetween(start, end) }
    }
    /// ``put(_:onConflict:)`` off the caller's executor.
    @discardableResult public func put(_ asset: Asset, onConflict: AssetIdentityConflict = .refuse) async throws -> Asset {
        try await offCallerUnlessCancelled { try self.put(asset, onConflict: onConflict) }
    }
    /// ``putAll(_:onConflict:)`` off the caller's executor.
    @discardableResult public func putAll(_ assets: [Asset], onConflict: AssetIdentityConflict = .refuse) async throws -> [Asset] {
        try await offCallerUnlessCancelled { try self.putAll(assets, onConflict: onConflict) }
    }
    /// ``deleteAllByRemoteId(_:)`` off the caller's executor.
    @discardableResult public func deleteAllByRemoteId(_ remoteIds: [String]) async throws -> Int {
        try await offCallerUnlessCancelled { try self.deleteAllByRemoteId(remoteIds) }
    }
    /// ``clearLocalId(_:)`` off the caller's executor.
    @discardableResult public func clearLocalId(_ localId: String) async throws -> Bool {
        try await offCallerUnlessCancelled { try self.clearLocalId(localId) }
    }
    /// ``clearRemoteId(_:)`` off the caller's executor.
    @discardableResult public func clearRemoteId(_ remoteId: String) async throws -> Bool {
        try await offCallerUnlessCancelled { try self.clearRemoteId(remoteId) }
    }
    /// ``count()`` off the caller's executor.
    public func count() async throws -> Int { try await offCallerUnlessCancelled { try self.count() } }
}

extension AlbumClientType {
    /// ``put(_:)`` off the caller's executor.
    @discardableResult public func put(_ album: Album) async throws -> Album { try await offCallerUnlessCancelled { try self.put(album) } }
    /// ``findByRemoteId(_:)`` off the caller's executor.
    public func findByRemoteId(_ remoteId: String) async throws -> Album? {
        try await offCallerUnlessCancelled { try self.findByRemoteId(remoteId) }
    }
    /// ``link(albumId:assetIds:)`` off the caller's executor.
    public func link(albumId: Int64, assetIds: [Int64]) async throws {
        try await offCallerUnlessCancelled { try self.link(albumId: albumId, assetIds: assetIds) }
    }
    /// ``share(albumId:userIds:)`` off the caller's executor.
    public func share(albumId: Int64, userIds: [String]) async throws {
        try await offCallerUnlessCancelled { try self.share(albumId: albumId, userIds: userIds) }
    }
    /// ``assets(albumId:)`` off the caller's executor.
    public func assets(albumId: Int64) async throws -> [Asset] { try await offCallerUnlessCancelled { try self.assets(albumId: albumId) } }
    /// ``allForOwner(_:)`` off the caller's executor.
    public func allForOwner(_ ownerId: String) async throws -> [Album] {
        try await offCallerUnlessCancelled { try self.allForOwner(ownerId) }
    }
    /// ``deleteAllByRemoteId(_:)`` off the caller's executor.
    @discardableResult public func deleteAllByRemoteId(_ remoteIds: [String]) async throws -> Int {
        try await offCallerUnlessCancelled { try self.deleteAllByRemoteId(remoteIds) }
    }
}

extension SyncClientType {
    /// ``putBackupAlbum(_:)`` off the caller's executor.
    public func putBackupAlbum(_ album: BackupAlbum) async throws { try await offCallerUnlessCancelled { try self.putBackupAlbum(album) } }
    /// ``backupAlbums(_:)`` off the caller's executor.
    public func backupAlbums(_ selection: BackupAlbum.Selection) async throws -> [BackupAlbum] {
        try await offCallerUnlessCancelled { try self.backupAlbums(selection) }
    }
    /// ``putDuplicated(_:)`` off the caller's executor.
    public func putDuplicated(_ ids: [String]) async throws { try await offCallerUnlessCancelled { try self.putDuplicated(ids) } }
    /// ``isDuplicated(_:)`` off the caller's executor.
    public func isDuplicated(_ id: String) async throws -> Bool { try await offCallerUnlessCancelled { try self.isDuplicated(id) } }
    /// ``putETag(_:)`` off the caller's executor.
    public func putETag(_ etag: ETag) async throws { try await offCallerUnlessCancelled { try self.putETag(etag) } }
    /// ``etag(_:)`` off the caller's executor.
    public func etag(_ userId: String) async throws -> ETag? { try await offCallerUnlessCancelled { try self.etag(userId) } }
    /// ``putAndroidAssets(_:)`` off the caller's executor.
    public func putAndroidAssets(_ assets: [AndroidDeviceAsset]) async throws {
        try await offCallerUnlessCancelled { try self.putAndroidAssets(assets) }
    }
    /// ``putIOSAssets(_:)`` off the caller's executor.
    public func putIOSAssets(_ assets: [IOSDeviceAsset]) async throws {
        try await offCallerUnlessCancelled { try self.putIOSAssets(assets) }
    }
    /// ``iosAsset(_:)`` off the caller's executor.
    public func iosAsset(_ id: String) async throws -> IOSDeviceAsset? { try await offCallerUnlessCancelled { try self.iosAsset(id) } }
    /// ``androidAsset(_:)`` off the caller's executor.
    public func androidAsset(_ id: String) async throws -> AndroidDeviceAsset? {
        try await offCallerUnlessCancelled { try self.androidAsset(id) }
    }
    /// ``allBackupAlbums()`` off the caller's executor.
    public func allBackupAlbums() async throws -> [BackupAlbum] { try await offCallerUnlessCancelled { try self.allBackupAlbums() } }
    /// ``deleteBackupAlbums(_:)`` off the caller's executor.
    @discardableResult public func deleteBackupAlbums(_ ids: [String]) async throws -> Int {
        try await offCallerUnlessCancelled { try self.deleteBackupAlbums(ids) }
    }
    /// ``deleteETags(_:)`` off the caller's executor.
    @discardableResult public func deleteETags(_ userIds: [String]) async throws -> Int {
        try await offCallerUnlessCancelled { try self.deleteETags(userIds) }
    }
    /// ``deleteDuplicated(_:)`` off the caller's executor.
    @discardableResult public func deleteDuplicated(_ ids: [String]) async throws -> Int {
        try await offCallerUnlessCancelled { try self.deleteDuplicated(ids) }
    }
    /// ``deleteAndroidAssets(_:)`` off the caller's executor.
    @discardableResult public func deleteAndroidAssets(_ ids: [String]) async throws -> Int {
        try await offCallerUnlessCancelled { try self.deleteAndroidAssets(ids) }
    }
    /// ``deleteIOSAssets(_:)`` off the caller's executor.
    @discardableResult public func deleteIOSAssets(_ ids: [String]) async throws -> Int {
        try await offCallerUnlessCancelled { try self.deleteIOSAssets(ids) }
    }
}
