// The blocking calls' old names (before the async form took the plain name), kept for one
// release so existing code still builds, with a warning whose fix-it writes the new name.

import Foundation

extension BrandClientType {
    /// The blocking form's old name, kept for one release: use `saveBlocking(_:)`.
    @available(*, deprecated, renamed: "saveBlocking(_:)")
    public func save(_ entity: Brand) throws { try saveBlocking(entity) }
    /// The blocking form's old name, kept for one release: use `saveBlocking(_:for:)`.
    @available(*, deprecated, renamed: "saveBlocking(_:for:)")
    public func save(_ entity: Brand, for nameSpace: String) throws { try saveBlocking(entity, for: nameSpace) }
    /// The blocking form's old name, kept for one release: use `getBrandByLanguageBlocking(_:)`.
    @available(*, deprecated, renamed: "getBrandByLanguageBlocking(_:)")
    public func getBrandByLanguage(_ language: String) throws -> [Brand]? { try getBrandByLanguageBlocking(language) }
    /// The blocking form's old name, kept for one release: use `clearBrandByBlocking(_:)`.
    @available(*, deprecated, renamed: "clearBrandByBlocking(_:)")
    public func clearBrandBy(_ language: String) throws { try clearBrandByBlocking(language) }
    /// The blocking form's old name, kept for one release: use `deleteBlocking(_:)`.
    @available(*, deprecated, renamed: "deleteBlocking(_:)")
    public func delete(_ id: String) throws -> Int { try deleteBlocking(id) }
}

extension AssetClientType {
    /// The blocking form's old name, kept for one release: use `findByRemoteIdBlocking(_:)`.
    @available(*, deprecated, renamed: "findByRemoteIdBlocking(_:)")
    public func findByRemoteId(_ remoteId: String) throws -> Asset? { try findByRemoteIdBlocking(remoteId) }
    /// The blocking form's old name, kept for one release: use `findByLocalIdBlocking(_:)`.
    @available(*, deprecated, renamed: "findByLocalIdBlocking(_:)")
    public func findByLocalId(_ localId: String) throws -> Asset? { try findByLocalIdBlocking(localId) }
    /// The blocking form's old name, kept for one release: use `allForOwnerBlocking(_:)`.
    @available(*, deprecated, renamed: "allForOwnerBlocking(_:)")
    public func allForOwner(_ ownerId: String) throws -> [Asset] { try allForOwnerBlocking(ownerId) }
    /// The blocking form's old name, kept for one release: use `createdBetweenBlocking(_:_:)`.
    @available(*, deprecated, renamed: "createdBetweenBlocking(_:_:)")
    public func createdBetween(_ start: Date, _ end: Date) throws -> [Asset] { try createdBetweenBlocking(start, end) }
    /// The blocking form's old name, kept for one release: use `putBlocking(_:onConflict:)`.
    @available(*, deprecated, renamed: "putBlocking(_:onConflict:)")
    @discardableResult public func put(_ asset: Asset, onConflict: AssetIdentityConflict) throws -> Asset {
        try putBlocking(asset, onConflict: onConflict)
    }
    /// The blocking form's old name, kept for one release: use `putAllBlocking(_:onConflict:)`.
    @available(*, deprecated, renamed: "putAllBlocking(_:onConflict:)")
    @discardableResult public func putAll(_ assets: [Asset], onConflict: AssetIdentityConflict) throws -> [Asset] {
        try putAllBlocking(assets, onConflict: onConflict)
    }
    /// The blocking form's old name, kept for one release: use `deleteAllByRemoteIdBlocking(_:)`.
    @available(*, deprecated, renamed: "deleteAllByRemoteIdBlocking(_:)")
    @discardableResult public func deleteAllByRemoteId(_ remoteIds: [String]) throws -> Int { try deleteAllByRemoteIdBlocking(remoteIds) }
    /// The blocking form's old name, kept for one release: use `clearLocalIdBlocking(_:)`.
    @available(*, deprecated, renamed: "clearLocalIdBlocking(_:)")
    @discardableResult public func clearLocalId(_ localId: String) throws -> Bool { try clearLocalIdBlocking(localId) }
    /// The blocking form's old name, kept for one release: use `clearRemoteIdBlocking(_:)`.
    @available(*, deprecated, renamed: "clearRemoteIdBlocking(_:)")
    @discardableResult public func clearRemoteId(_ remoteId: String) throws -> Bool { try clearRemoteIdBlocking(remoteId) }
    /// The blocking form's old name, kept for one release: use `countBlocking()`.
    @available(*, deprecated, renamed: "countBlocking()")
    public func count() throws -> Int { try countBlocking() }
    /// The blocking form's old name, kept for one release: use `putBlocking(_:)`.
    @available(*, deprecated, renamed: "putBlocking(_:)")
    @discardableResult public func put(_ asset: Asset) throws -> Asset { try putBlocking(asset) }
    /// The blocking form's old name, kept for one release: use `putAllBlocking(_:)`.
    @available(*, deprecated, renamed: "putAllBlocking(_:)")
    @discardableResult public func putAll(_ assets: [Asset]) throws -> [Asset] { try putAllBlocking(assets) }
}

extension AlbumClientType {
    /// The blocking form's old name, kept for one release: use `putBlocking(_:)`.
    @available(*, deprecated, renamed: "putBlocking(_:)")
    @discardableResult public func put(_ album: Album) throws -> Album { try putBlocking(album) }
    /// The blocking form's old name, kept for one release: use `findByRemoteIdBlocking(_:)`.
    @available(*, deprecated, renamed: "findByRemoteIdBlocking(_:)")
    public func findByRemoteId(_ remoteId: String) throws -> Album? { try findByRemoteIdBlocking(remoteId) }
    /// The blocking form's old name, kept for one release: use `linkBlocking(albumId:assetIds:)`.
    @available(*, deprecated, renamed: "linkBlocking(albumId:assetIds:)")
    public func link(albumId: Int64, assetIds: [Int64]) throws { try linkBlocking(albumId: albumId, assetIds: assetIds) }
    /// The blocking form's old name, kept for one release: use `shareBlocking(albumId:userIds:)`.
    @available(*, deprecated, renamed: "shareBlocking(albumId:userIds:)")
    public func share(albumId: Int64, userIds: [String]) throws { try shareBlocking(albumId: albumId, userIds: userIds) }
    /// The blocking form's old name, kept for one release: use `assetsBlocking(albumId:)`.
    @available(*, deprecated, renamed: "assetsBlocking(albumId:)")
    public func assets(albumId: Int64) throws -> [Asset] { try assetsBlocking(albumId: albumId) }
    /// The blocking form's old name, kept for one release: use `allForOwnerBlocking(_:)`.
    @available(*, deprecated, renamed: "allForOwnerBlocking(_:)")
    public func allForOwner(_ ownerId: String) throws -> [Album] { try allForOwnerBlocking(ownerId) }
    /// The blocking form's old name, kept for one release: use `deleteAllByRemoteIdBlocking(_:)`.
    @available(*, deprecated, renamed: "deleteAllByRemoteIdBlocking(_:)")
    @discardableResult public func deleteAllByRemoteId(_ remoteIds: [String]) throws -> Int { try deleteAllByRemoteIdBlocking(remoteIds) }
}

extension SyncClientType {
    /// The blocking form's old name, kept for one release: use `putBackupAlbumBlocking(_:)`.
    @available(*, deprecated, renamed: "putBackupAlbumBlocking(_:)")
    public func putBackupAlbum(_ album: BackupAlbum) throws { try putBackupAlbumBlocking(album) }
    /// The blocking form's old name, kept for one release: use `backupAlbumsBlocking(_:)`.
    @available(*, deprecated, renamed: "backupAlbumsBlocking(_:)")
    public func backupAlbums(_ selection: BackupAlbum.Selection) throws -> [BackupAlbum] { try backupAlbumsBlocking(selection) }
    /// The blocking form's old name, kept for one release: use `putDuplicatedBlocking(_:)`.
    @available(*, deprecated, renamed: "putDuplicatedBlocking(_:)")
    public func putDuplicated(_ ids: [String]) throws { try putDuplicatedBlocking(ids) }
    /// The blocking form's old name, kept for one release: use `isDuplicatedBlocking(_:)`.
    @available(*, deprecated, renamed: "isDuplicatedBlocking(_:)")
    public func isDuplicated(_ id: String) throws -> Bool { try isDuplicatedBlocking(id) }
    /// The blocking form's old name, kept for one release: use `putETagBlocking(_:)`.
    @available(*, deprecated, renamed: "putETagBlocking(_:)")
    public func putETag(_ etag: ETag) throws { try putETagBlocking(etag) }
    /// The blocking form's old name, kept for one release: use `etagBlocking(_:)`.
    @available(*, deprecated, renamed: "etagBlocking(_:)")
    public func etag(_ userId: String) throws -> ETag? { try etagBlocking(userId) }
    /// The blocking form's old name, kept for one release: use `putAndroidAssetsBlocking(_:)`.
    @available(*, deprecated, renamed: "putAndroidAssetsBlocking(_:)")
    public func putAndroidAssets(_ assets: [AndroidDeviceAsset]) throws { try putAndroidAssetsBlocking(assets) }
    /// The blocking form's old name, kept for one release: use `putIOSAssetsBlocking(_:)`.
    @available(*, deprecated, renamed: "putIOSAssetsBlocking(_:)")
    public func putIOSAssets(_ assets: [IOSDeviceAsset]) throws { try putIOSAssetsBlocking(assets) }
    /// The blocking form's old name, kept for one release: use `iosAssetBlocking(_:)`.
    @available(*, deprecated, renamed: "iosAssetBlocking(_:)")
    public func iosAsset(_ id: String) throws -> IOSDeviceAsset? { try iosAssetBlocking(id) }
    /// The blocking form's old name, kept for one release: use `androidAssetBlocking(_:)`.
    @available(*, deprecated, renamed: "androidAssetBlocking(_:)")
    public func androidAsset(_ id: String) throws -> AndroidDeviceAsset? { try androidAssetBlocking(id) }
    /// The blocking form's old name, kept for one release: use `allBackupAlbumsBlocking()`.
    @available(*, deprecated, renamed: "allBackupAlbumsBlocking()")
    public func allBackupAlbums() throws -> [BackupAlbum] { try allBackupAlbumsBlocking() }
    /// The blocking form's old name, kept for one release: use `deleteBackupAlbumsBlocking(_:)`.
    @available(*, deprecated, renamed: "deleteBackupAlbumsBlocking(_:)")
    @discardableResult public func deleteBackupAlbums(_ ids: [String]) throws -> Int { try deleteBackupAlbumsBlocking(ids) }
    /// The blocking form's old name, kept for one release: use `deleteETagsBlocking(_:)`.
    @available(*, deprecated, renamed: "deleteETagsBlocking(_:)")
    @discardableResult public func deleteETags(_ userIds: [String]) throws -> Int { try deleteETagsBlocking(userIds) }
    /// The blocking form's old name, kept for one release: use `deleteDuplicatedBlocking(_:)`.
    @available(*, deprecated, renamed: "deleteDuplicatedBlocking(_:)")
    @discardableResult public func deleteDuplicated(_ ids: [String]) throws -> Int { try deleteDuplicatedBlocking(ids) }
    /// The blocking form's old name, kept for one release: use `deleteAndroidAssetsBlocking(_:)`.
    @available(*, deprecated, renamed: "deleteAndroidAssetsBlocking(_:)")
    @discardableResult public func deleteAndroidAssets(_ ids: [String]) throws -> Int { try deleteAndroidAssetsBlocking(ids) }
    /// The blocking form's old name, kept for one release: use `deleteIOSAssetsBlocking(_:)`.
    @available(*, deprecated, renamed: "deleteIOSAssetsBlocking(_:)")
    @discardableResult public func deleteIOSAssets(_ ids: [String]) throws -> Int { try deleteIOSAssetsBlocking(ids) }
}
