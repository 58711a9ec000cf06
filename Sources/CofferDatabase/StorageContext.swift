// One typed client per entity, as seed 003 shows. Adding an entity: declare its record (Records.swift),
// its table (a new migration), a client protocol here, and the context's conformance.
import Foundation
import GRDB

/// Seed 003's brand client.
public protocol BrandClientType: Sendable {
    /// Saves (inserts or replaces) a brand under a namespace (language).
    func save(_ entity: Brand, for nameSpace: String) throws
    /// Brands of a language.
    func getBrandByLanguage(_ language: String) throws -> [Brand]?
    /// Removes a language's brands.
    func clearBrandBy(_ language: String) throws
    /// Deletes a brand; returns how many rows went (0 or 1).
    func delete(_ id: String) throws -> Int
}

/// The assets collection.
public protocol AssetClientType: Sendable {
    /// The asset with this server id.
    func findByRemoteId(_ remoteId: String) throws -> Asset?
    /// The asset with this device id.
    func findByLocalId(_ localId: String) throws -> Asset?
    /// Every asset of an owner, newest first.
    func allForOwner(_ ownerId: String) throws -> [Asset]
    /// Assets created in `start...end`, oldest first.
    func createdBetween(_ start: Date, _ end: Date) throws -> [Asset]
    /// Inserts or updates (matched on remote id, local id, or owner + checksum) in one transaction.
    @discardableResult func put(_ asset: Asset) throws -> Asset
    /// ``put(_:)`` for many, all in one transaction (all or nothing).
    @discardableResult func putAll(_ assets: [Asset]) throws -> [Asset]
    /// Deletes the assets with these server ids in one transaction; returns how many went.
    @discardableResult func deleteAllByRemoteId(_ remoteIds: [String]) throws -> Int
    /// Number of assets.
    func count() throws -> Int
    /// An owner's assets now and after every committed change that affects them.
    func observeOwner(_ ownerId: String) -> AsyncValueObservation<[Asset]>
}

/// The albums collection with its links to assets and users.
public protocol AlbumClientType: Sendable {
    /// Inserts or updates (matched on remote id) an album.
    @discardableResult func put(_ album: Album) throws -> Album
    /// The album with this server id.
    func findByRemoteId(_ remoteId: String) throws -> Album?
    /// Links assets to an album (one transaction).
    func link(albumId: Int64, assetIds: [Int64]) throws
    /// Shares an album with users.
    func share(albumId: Int64, userIds: [String]) throws
    /// The album's assets.
    func assets(albumId: Int64) throws -> [Asset]
    /// An owner's albums.
    func allForOwner(_ ownerId: String) throws -> [Album]
}

/// Backup album selection, duplicated assets, ETags and device assets.
public protocol SyncClientType: Sendable {
    /// Saves a backup album selection.
    func putBackupAlbum(_ album: BackupAlbum) throws
    /// Albums with a selection.
    func backupAlbums(_ selection: BackupAlbum.Selection) throws -> [BackupAlbum]
    /// Marks device assets as already uploaded.
    func putDuplicated(_ ids: [String]) throws
    /// Whether a device asset was already uploaded.
    func isDuplicated(_ id: String) throws -> Bool
    /// Saves a user's sync ETag.
    func putETag(_ etag: ETag) throws
    /// A user's sync ETag.
    func etag(_ userId: String) throws -> ETag?
    /// Saves Android device asset hashes.
    func putAndroidAssets(_ assets: [AndroidDeviceAsset]) throws
    /// Saves iOS device asset hashes.
    func putIOSAssets(_ assets: [IOSDeviceAsset]) throws
    /// An iOS device asset's hash record.
    func iosAsset(_ id: String) throws -> IOSDeviceAsset?
}

/// Every client, as seed 003's `ClientType`.
public protocol ClientType: Sendable {
    /// Brands.
    var brand: BrandClientType { get }
    /// Assets.
    var assets: AssetClientType { get }
    /// Albums.
    var albums: AlbumClientType { get }
    /// Sync bookkeeping.
    var sync: SyncClientType { get }
}

/// The database behind every client; each write runs in one transaction.
public final class StorageContext: ClientType, Sendable {
    let pool: DatabasePool

    init(pool: DatabasePool) { self.pool = pool }

    /// Brands.
    public var brand: BrandClientType { BrandClient(pool: pool) }
    /// Assets.
    public var assets: AssetClientType { AssetClient(pool: pool) }
    /// Albums.
    public var albums: AlbumClientType { AlbumClient(pool: pool) }
    /// Sync bookkeeping.
    public var sync: SyncClientType { SyncClient(pool: pool) }
}

/// Runs a write and maps unique-key clashes to a clear error.
func write<T>(_ pool: DatabasePool, _ body: (Database) throws -> T) throws -> T {
    do { return try pool.write(body) } catch { throw DatabaseStoreError.from(error) }
}

func read<T>(_ pool: DatabasePool, _ body: (Database) throws -> T) throws -> T {
    do { return try pool.read(body) } catch { throw DatabaseStoreError.from(error) }
}

struct BrandClient: BrandClientType {
    let pool: DatabasePool

    func save(_ entity: Brand, for nameSpace: String) throws {
        var brand = entity
        brand.language = nameSpace
        try write(pool) { db in try brand.save(db) }
    }

    func getBrandByLanguage(_ language: String) throws -> [Brand]? {
        let found = try read(pool) { db in try Brand.filter(Column("language") == language).fetchAll(db) }
        return found.isEmpty ? nil : found
    }

    func clearBrandBy(_ language: String) throws {
        _ = try write(pool) { db in try Brand.filter(Column("language") == language).deleteAll(db) }
    }

    func delete(_ id: String) throws -> Int {
        try write(pool) { db in try Brand.filter(Column("brandId") == id).deleteAll(db) }
    }
}

struct AssetClient: AssetClientType {
    let pool: DatabasePool

    // Hot reads use cached prepared statements: building and preparing SQL per call would cost
    // more than the indexed read itself.

    func findByRemoteId(_ remoteId: String) throws -> Asset? {
        try read(pool) { db in try Asset.fetchOne(db.cachedStatement(sql: "SELECT * FROM assets WHERE remoteId = ?"), arguments: [remoteId]) }
    }

    func findByLocalId(_ localId: String) throws -> Asset? {
        try read(pool) { db in try Asset.fetchOne(db.cachedStatement(sql: "SELECT * FROM assets WHERE localId = ?"), arguments: [localId]) }
    }

    func allForOwner(_ ownerId: String) throws -> [Asset] {
        try read(pool) { db in
            try Asset.fetchAll(db.cachedStatement(sql: "SELECT * FROM assets WHERE ownerId = ? ORDER BY fileCreatedAt DESC"),
                               arguments: [OwnerId.normalized(ownerId)])
        }
    }

    func createdBetween(_ start: Date, _ end: Date) throws -> [Asset] {
        guard start <= end else { throw DatabaseStoreError.invalidInput("createdBetween: start \(start) is after end \(end)") }
        return try read(pool) { db in
            try Asset.fetchAll(db.cachedStatement(sql: "SELECT * FROM assets WHERE fileCreatedAt >= ? AND fileCreatedAt <= ? ORDER BY fileCreatedAt"),
                               arguments: [start, end])
        }
    }

    /// The existing row an asset should update: same remote id, else local id, else owner + checksum.
    static func existingId(_ db: Database, _ asset: Asset) throws -> Int64? {
        if let remoteId = asset.remoteId,
           let id = try Int64.fetchOne(db.cachedStatement(sql: "SELECT id FROM assets WHERE remoteId = ?"), arguments: [remoteId]) {
            return id
        }
        if let localId = asset.localId,
           let id = try Int64.fetchOne(db.cachedStatement(sql: "SELECT id FROM assets WHERE localId = ?"), arguments: [localId]) {
            return id
        }
        return try Int64.fetchOne(db.cachedStatement(sql: "SELECT id FROM assets WHERE ownerId = ? AND checksum = ?"),
                                  arguments: [asset.ownerId, asset.checksum])
    }

    static func upsert(_ db: Database, _ given: Asset) throws -> Asset {
        var asset = given
        asset.ownerId = OwnerId.normalized(given.ownerId)
        var a = asset
        // Most puts are new assets: try the insert first (one statement); a unique-key clash
        // rolls back only that statement, and the existing row is then found and updated.
        if asset.id == nil {
            do {
                try a.insert(db)
                return a
            } catch let error as DatabaseError where error.extendedResultCode == .SQLITE_CONSTRAINT_UNIQUE {
                a.id = nil
            }
        }
        if let id = try existingId(db, asset) {
            a.id = id
            try a.update(db)
        } else {
            a.id = nil
            try a.insert(db)
        }
        return a
    }

    func put(_ asset: Asset) throws -> Asset {
        try write(pool) { db in try Self.upsert(db, asset) }
    }

    func putAll(_ assets: [Asset]) throws -> [Asset] {
        try write(pool) { db in try assets.map { try Self.upsert(db, $0) } }
    }

    func deleteAllByRemoteId(_ remoteIds: [String]) throws -> Int {
        try write(pool) { db in try Asset.filter(remoteIds.contains(Column("remoteId"))).deleteAll(db) }
    }

    func count() throws -> Int { try read(pool) { db in try Asset.fetchCount(db) } }

    func observeOwner(_ ownerId: String) -> AsyncValueObservation<[Asset]> {
        let ownerId = OwnerId.normalized(ownerId)
        return ValueObservation.tracking { db in
            try Asset.filter(Column("ownerId") == ownerId).order(Column("fileCreatedAt").desc).fetchAll(db)
        }
        .removeDuplicates()
        .values(in: pool)
    }
}

struct AlbumClient: AlbumClientType {
    let pool: DatabasePool

    func put(_ album: Album) throws -> Album {
        try write(pool) { db in
            var a = album
            a.ownerId = OwnerId.normalized(album.ownerId)
            if let remoteId = album.remoteId, let id = try Int64.fetchOne(db, sql: "SELECT id FROM albums WHERE remoteId = ?", arguments: [remoteId]) {
                a.id = id
                try a.update(db)
            } else {
                a.id = nil
                try a.insert(db)
            }
            return a
        }
    }

    func findByRemoteId(_ remoteId: String) throws -> Album? {
        try read(pool) { db in try Album.filter(Column("remoteId") == remoteId).fetchOne(db) }
    }

    func link(albumId: Int64, assetIds: [Int64]) throws {
        try write(pool) { db in
            for assetId in assetIds {
                try db.execute(sql: "INSERT OR IGNORE INTO album_assets(albumId, assetId) VALUES (?, ?)", arguments: [albumId, assetId])
            }
        }
    }

    func share(albumId: Int64, userIds: [String]) throws {
        try write(pool) { db in
            for userId in userIds {
                try db.execute(sql: "INSERT OR IGNORE INTO album_users(albumId, userId) VALUES (?, ?)", arguments: [albumId, userId])
            }
        }
    }

    func assets(albumId: Int64) throws -> [Asset] {
        try read(pool) { db in
            try Asset.fetchAll(db, sql: "SELECT a.* FROM assets a JOIN album_assets x ON x.assetId = a.id WHERE x.albumId = ? ORDER BY a.fileCreatedAt",
                               arguments: [albumId])
        }
    }

    func allForOwner(_ ownerId: String) throws -> [Album] {
        try read(pool) { db in try Album.filter(Column("ownerId") == OwnerId.normalized(ownerId)).fetchAll(db) }
    }
}

struct SyncClient: SyncClientType {
    let pool: DatabasePool

    func putBackupAlbum(_ album: BackupAlbum) throws { try write(pool) { db in try album.save(db) } }

    func backupAlbums(_ selection: BackupAlbum.Selection) throws -> [BackupAlbum] {
        try read(pool) { db in try BackupAlbum.filter(Column("selection") == selection.rawValue).fetchAll(db) }
    }

    func putDuplicated(_ ids: [String]) throws {
        try write(pool) { db in for id in ids { try DuplicatedAsset(id: id).save(db) } }
    }

    func isDuplicated(_ id: String) throws -> Bool {
        try read(pool) { db in try DuplicatedAsset.exists(db, key: id) }
    }

    func putETag(_ etag: ETag) throws { try write(pool) { db in try etag.save(db) } }

    func etag(_ userId: String) throws -> ETag? { try read(pool) { db in try ETag.fetchOne(db, key: userId) } }

    func putAndroidAssets(_ assets: [AndroidDeviceAsset]) throws {
        try write(pool) { db in for a in assets { try a.save(db) } }
    }

    func putIOSAssets(_ assets: [IOSDeviceAsset]) throws {
        try write(pool) { db in for a in assets { try a.save(db) } }
    }

    func iosAsset(_ id: String) throws -> IOSDeviceAsset? { try read(pool) { db in try IOSDeviceAsset.fetchOne(db, key: id) } }
}
