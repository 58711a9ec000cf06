// Async forms of every collection call. Each runs the synchronous call on a worker thread
// (`offCaller`), so awaiting it from the main actor never blocks the actor; the work, its one
// transaction and its errors are the synchronous call's own. In async code Swift picks these
// forms, so `try await` is what a view model writes; the blocking forms are named `…Blocking`.

import CofferSync
import Foundation

extension BrandClientType {
    /// ``saveBlocking(_:)`` off the caller's executor.
    public func save(_ entity: Brand) async throws { try await offCallerUnlessCancelled { try self.saveBlocking(entity) } }
    /// ``saveBlocking(_:for:)`` off the caller's executor.
    public func save(_ entity: Brand, for nameSpace: String) async throws {
        try await offCallerUnlessCancelled { try self.saveBlocking(entity, for: nameSpace) }
    }
    /// ``getBrandByLanguageBlocking(_:)`` off the caller's executor.
    public func getBrandByLanguage(_ language: String) async throws -> [Brand]? {
        try await offCallerUnlessCancelled { try self.getBrandByLanguageBlocking(language) }
    }
    /// ``clearBrandByBlocking(_:)`` off the caller's executor.
    public func clearBrandBy(_ language: String) async throws {
        try await offCallerUnlessCancelled { try self.clearBrandByBlocking(language) }
    }
    /// ``deleteBlocking(_:)`` off the caller's executor.
    @discardableResult public func delete(_ id: String) async throws -> Int {
        try await offCallerUnlessCancelled { try self.deleteBlocking(id) }
    }
}

extension AssetClientType {
    /// ``findByRemoteIdBlocking(_:)`` off the caller's executor.
    public func findByRemoteId(_ remoteId: String) async throws -> Asset? {
        try await offCallerUnlessCancelled { try self.findByRemoteIdBlocking(remoteId) }
    }
    /// ``findByLocalIdBlocking(_:)`` off the caller's executor.
    public func findByLocalId(_ localId: String) async throws -> Asset? {
        try await offCallerUnlessCancelled { try self.findByLocalIdBlocking(localId) }
    }
    /// ``allForOwnerBlocking(_:)`` off the caller's executor.
    public func allForOwner(_ ownerId: String) async throws -> [Asset] {
        try await offCallerUnlessCancelled { try self.allForOwnerBlocking(ownerId) }
    }
    /// ``createdBetweenBlocking(_:_:)`` off the caller's executor.
    public func createdBetween(_ start: Date, _ end: Date) async throws -> [Asset] {
        try await offCallerUnlessCancelled { try self.createdBetweenBlocking(start, end) }
    }
    /// ``putBlocking(_:onConflict:)`` off the caller's executor.
    @discardableResult public func put(_ asset: Asset, onConflict: AssetIdentityConflict = .refuse) async throws -> Asset {
        try await offCallerUnlessCancelled { try self.putBlocking(asset, onConflict: onConflict) }
    }
    /// ``putAllBlocking(_:onConflict:)`` off the caller's executor.
    @discardableResult public func putAll(_ assets: [Asset], onConflict: AssetIdentityConflict = .refuse) async throws -> [Asset] {
        try await offCallerUnlessCancelled { try self.putAllBlocking(assets, onConflict: onConflict) }
    }
    /// ``deleteAllByRemoteIdBlocking(_:)`` off the caller's executor.
    @discardableResult public func deleteAllByRemoteId(_ remoteIds: [String]) async throws -> Int {
        try await offCallerUnlessCancelled { try self.deleteAllByRemoteIdBlocking(remoteIds) }
    }
    /// ``clearLocalIdBlocking(_:)`` off the caller's executor.
    @discardableResult public func clearLocalId(_ localId: String) async throws -> Bool {
        try await offCallerUnlessCancelled { try self.clearLocalIdBlocking(localId) }
    }
    /// ``clearRemoteIdBlocking(_:)`` off the caller's executor.
    @discardableResult public func clearRemoteId(_ remoteId: String) async throws -> Bool {
        try await offCallerUnlessCancelled { try self.clearRemoteIdBlocking(remoteId) }
    }
    /// ``countBlocking()`` off the caller's executor.
    public func count() async throws -> Int { try await offCallerUnlessCancelled { try self.countBlocking() } }
}

extension AlbumClientType {
    /// ``putBlocking(_:)`` off the caller's executor.
    @discardableResult public func put(_ album: Album) async throws -> Album {
        try await offCallerUnlessCancelled { try self.putBlocking(album) }
    }
    /// ``findByRemoteIdBlocking(_:)`` off the caller's executor.
    public func findByRemoteId(_ remoteId: String) async throws -> Album? {
        try await offCallerUnlessCancelled { try self.findByRemoteIdBlocking(remoteId) }
    }
    /// ``linkBlocking(albumId:assetIds:)`` off the caller's executor.
    public func link(albumId: Int64, assetIds: [Int64]) async throws {
        try await offCallerUnlessCancelled { try self.linkBlocking(albumId: albumId, assetIds: assetIds) }
    }
    /// ``shareBlocking(albumId:userIds:)`` off the caller's executor.
    public func share(albumId: Int64, userIds: [String]) async throws {
        try await offCallerUnlessCancelled { try self.shareBlocking(albumId: albumId, userIds: userIds) }
    }
    /// ``assetsBlocking(albumId:)`` off the caller's executor.
    public func assets(albumId: Int64) async throws -> [Asset] {
        try await offCallerUnlessCancelled { try self.assetsBlocking(albumId: albumId) }
    }
    /// ``allForOwnerBlocking(_:)`` off the caller's executor.
    public func allForOwner(_ ownerId: String) async throws -> [Album] {
        try await offCallerUnlessCancelled { try self.allForOwnerBlocking(ownerId) }
    }
    /// ``deleteAllByRemoteIdBlocking(_:)`` off the caller's executor.
    @discardableResult public func deleteAllByRemoteId(_ remoteIds: [String]) async throws -> Int {
        try await offCallerUnlessCancelled { try self.deleteAllByRemoteIdBlocking(remoteIds) }
    }
}

extension SyncClientType {
    /// ``putBackupAlbumBlocking(_:)`` off the caller's executor.
    public func putBackupAlbum(_ album: BackupAlbum) async throws {
        try await offCallerUnlessCancelled { try self.putBackupAlbumBlocking(album) }
    }
    /// ``backupAlbumsBlocking(_:)`` off the caller's executor.
    public func backupAlbums(_ selection: BackupAlbum.Selection) async throws -> [BackupAlbum] {
        try await offCallerUnlessCancelled { try self.backupAlbumsBlocking(selection) }
    }
    /// ``putDuplicatedBlocking(_:)`` off the caller's executor.
    public func putDuplicated(_ ids: [String]) async throws { try await offCallerUnlessCancelled { try self.putDuplicatedBlocking(ids) } }
    /// ``isDuplicatedBlocking(_:)`` off the caller's executor.
    public func isDuplicated(_ id: String) async throws -> Bool { try await offCallerUnlessCancelled { try self.isDuplicatedBlocking(id) } }
    /// ``putETagBlocking(_:)`` off the caller's executor.
    public func putETag(_ etag: ETag) async throws { try await offCallerUnlessCancelled { try self.putETagBlocking(etag) } }
    /// ``etagBlocking(_:)`` off the caller's executor.
    public func etag(_ userId: String) async throws -> ETag? { try await offCallerUnlessCancelled { try self.etagBlocking(userId) } }
    /// ``putAndroidAssetsBlocking(_:)`` off the caller's executor.
    public func putAndroidAssets(_ assets: [AndroidDeviceAsset]) async throws {
        try await offCallerUnlessCancelled { try self.putAndroidAssetsBlocking(assets) }
    }
    /// ``putIOSAssetsBlocking(_:)`` off the caller's executor.
    public func putIOSAssets(_ assets: [IOSDeviceAsset]) async throws {
        try await offCallerUnlessCancelled { try self.putIOSAssetsBlocking(assets) }
    }
    /// ``iosAssetBlocking(_:)`` off the caller's executor.
    public func iosAsset(_ id: String) async throws -> IOSDeviceAsset? {
        try await offCallerUnlessCancelled { try self.iosAssetBlocking(id) }
    }
    /// ``androidAssetBlocking(_:)`` off the caller's executor.
    public func androidAsset(_ id: String) async throws -> AndroidDeviceAsset? {
        try await offCallerUnlessCancelled { try self.androidAssetBlocking(id) }
    }
    /// ``allBackupAlbumsBlocking()`` off the caller's executor.
    public func allBackupAlbums() async throws -> [BackupAlbum] {
        try await offCallerUnlessCancelled { try self.allBackupAlbumsBlocking() }
    }
    /// ``deleteBackupAlbumsBlocking(_:)`` off the caller's executor.
    @discardableResult public func deleteBackupAlbums(_ ids: [String]) async throws -> Int {
        try await offCallerUnlessCancelled { try self.deleteBackupAlbumsBlocking(ids) }
    }
    /// ``deleteETagsBlocking(_:)`` off the caller's executor.
    @discardableResult public func deleteETags(_ userIds: [String]) async throws -> Int {
        try await offCallerUnlessCancelled { try self.deleteETagsBlocking(userIds) }
    }
    /// ``deleteDuplicatedBlocking(_:)`` off the caller's executor.
    @discardableResult public func deleteDuplicated(_ ids: [String]) async throws -> Int {
        try await offCallerUnlessCancelled { try self.deleteDuplicatedBlocking(ids) }
    }
    /// ``deleteAndroidAssetsBlocking(_:)`` off the caller's executor.
    @discardableResult public func deleteAndroidAssets(_ ids: [String]) async throws -> Int {
        try await offCallerUnlessCancelled { try self.deleteAndroidAssetsBlocking(ids) }
    }
    /// ``deleteIOSAssetsBlocking(_:)`` off the caller's executor.
    @discardableResult public func deleteIOSAssets(_ ids: [String]) async throws -> Int {
        try await offCallerUnlessCancelled { try self.deleteIOSAssetsBlocking(ids) }
    }
}
