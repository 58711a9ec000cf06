// One typed client per entity, as seed 003 shows. Adding an entity: declare its record (Records.swift),
// its table (a new migration), a client protocol here, and the context's conformance.

import CofferSync
import Foundation
import GRDB

/// Seed 003's brand entity: what a brand row offers, as the seed declares it.
public protocol BrandEntityType {
    /// The brand's id (the primary key).
    var brandId: String { get }
    /// Image URL.
    var image: String { get set }
    /// Search keywords.
    var keywords: String { get set }
    /// Display name.
    var name: String { get set }
}

/// Seed 003's brand client.
public protocol BrandClientType: Sendable {
    /// Inserts a brand, the seed's `entity.insert(db)` (its language as given).
    /// Blocks the calling thread while SQLite works.
    /// - Throws: ``DatabaseStoreError/uniqueViolation(key:table:)`` when a brand with its id exists;
    ///   nothing is written.
    func saveBlocking(_ entity: Brand) throws
    /// Saves (inserts or replaces) a brand under a namespace (language).
    /// Blocks the calling thread while SQLite works: from the main actor, `await` the async form.
    func saveBlocking(_ entity: Brand, for nameSpace: String) throws
    /// Brands of a language.
    /// Blocks the calling thread while SQLite works: from the main actor, `await` the async form.
    func getBrandByLanguageBlocking(_ language: String) throws -> [Brand]?
    /// Removes a language's brands.
    /// Blocks the calling thread while SQLite works: from the main actor, `await` the async form.
    func clearBrandByBlocking(_ language: String) throws
    /// Deletes a brand; returns how many rows went (0 or 1).
    /// Blocks the calling thread while SQLite works: from the main actor, `await` the async form.
    func deleteBlocking(_ id: String) throws -> Int
}

/// The assets collection.
public protocol AssetClientType: Sendable {
    /// The asset with this server id.
    /// Blocks the calling thread while SQLite works: from the main actor, `await` the async form.
    func findByRemoteIdBlocking(_ remoteId: String) throws -> Asset?
    /// The asset with this device id.
    /// Blocks the calling thread while SQLite works: from the main actor, `await` the async form.
    func findByLocalIdBlocking(_ localId: String) throws -> Asset?
    /// Every asset of an owner, newest first.
    /// Blocks the calling thread while SQLite works: from the main actor, `await` the async form.
    func allForOwnerBlocking(_ ownerId: String) throws -> [Asset]
    /// Assets created in `start...end`, oldest first.
    /// Blocks the calling thread while SQLite works: from the main actor, `await` the async form.
    func createdBetweenBlocking(_ start: Date, _ end: Date) throws -> [Asset]
    /// Inserts or updates (matched on remote id, else local id, else owner + checksum) in one
    /// transaction. A `nil` remote or local id in `asset` never erases the id the row has: the
    /// row keeps it (a server sync, whose rows carry no device ids, keeps every local link), and
    /// the returned asset carries it. Clearing an id is an explicit call: ``clearLocalId(_:)-eo73``,
    /// ``clearRemoteId(_:)-774d6``. A row matched by its local id or by owner + checksum keeps the
    /// remote id and local id it has unless `onConflict` is
    /// ``AssetIdentityConflict/replaceIdentity``: an asset that names different ones is refused
    /// (``DatabaseStoreError/uniqueViolation(key:table:)`` naming the key it matched on) and
    /// nothing is written. A missing id is filled in (a local asset backed up gets its remote id).
    /// Blocks the calling thread while SQLite works: from the main actor, `await` the async form.
    @discardableResult func putBlocking(_ asset: Asset, onConflict: AssetIdentityConflict) throws -> Asset
    /// ``put(_:onConflict:)-sft3`` for many, all in one transaction (all or nothing).
    /// Blocks the calling thread while SQLite works: from the main actor, `await` the async form.
    @discardableResult func putAllBlocking(_ assets: [Asset], onConflict: AssetIdentityConflict) throws -> [Asset]
    /// Deletes the assets with these server ids in one transaction; returns how many went.
    /// Blocks the calling thread while SQLite works: from the main actor, `await` the async form.
    @discardableResult func deleteAllByRemoteIdBlocking(_ remoteIds: [String]) throws -> Int
    /// Unlinks the asset with this device id from the device (its local id and local file size
    /// become `nil`; the row and its remote id stay); returns whether a row had it. The one way
    /// to clear a local id: ``put(_:onConflict:)-sft3`` never erases one.
    /// Blocks the calling thread while SQLite works: from the main actor, `await` the async form.
    @discardableResult func clearLocalIdBlocking(_ localId: String) throws -> Bool
    /// Unlinks the asset with this server id from the server (its remote id becomes `nil`; the
    /// row and its local id stay); returns whether a row had it. The one way to clear a remote
    /// id: ``put(_:onConflict:)-sft3`` never erases one.
    /// Blocks the calling thread while SQLite works: from the main actor, `await` the async form.
    @discardableResult func clearRemoteIdBlocking(_ remoteId: String) throws -> Bool
    /// Number of assets.
    /// Blocks the calling thread while SQLite works: from the main actor, `await` the async form.
    func countBlocking() throws -> Int
    /// An owner's assets now and after every committed change that affects them.
    func observeOwner(_ ownerId: String) -> QueryObservation<[Asset]>
}

extension AssetClientType {
    /// ``put(_:onConflict:)-sft3`` that refuses to change an existing row's remote or local id.
    /// Blocks the calling thread while SQLite works: from the main actor, `await` the async form.
    @discardableResult public func putBlocking(_ asset: Asset) throws -> Asset { try putBlocking(asset, onConflict: .refuse) }
    /// ``putAll(_:onConflict:)-9y3h0`` that refuses to change an existing row's remote or local id.
    /// Blocks the calling thread while SQLite works: from the main actor, `await` the async form.
    @discardableResult public func putAllBlocking(_ assets: [Asset]) throws -> [Asset] { try putAllBlocking(assets, onConflict: .refuse) }
}

/// What an asset put does when the row it matches (by local id, or by owner + checksum) already
/// has a different remote id or local id than the asset names.
public enum AssetIdentityConflict: Sendable, Hashable {
    /// Refuse with ``DatabaseStoreError/uniqueViolation(key:table:)``; the row keeps its identity.
    case refuse
    /// Give the row the asset's remote id and local id (the row's own are overwritten).
    case replaceIdentity
}

/// The albums collection with its links to assets and users.
public protocol AlbumClientType: Sendable {
    /// Inserts or updates (matched on remote id) an album.
    /// Blocks the calling thread while SQLite works: from the main actor, `await` the async form.
    @discardableResult func putBlocking(_ album: Album) throws -> Album
    /// The album with this server id.
    /// Blocks the calling thread while SQLite works: from the main actor, `await` the async form.
    func findByRemoteIdBlocking(_ remoteId: String) throws -> Album?
    /// Links assets to an album (one transaction).
    /// Blocks the calling thread while SQLite works: from the main actor, `await` the async form.
    func linkBlocking(albumId: Int64, assetIds: [Int64]) throws
    /// Shares an album with users.
    /// Blocks the calling thread while SQLite works: from the main actor, `await` the async form.
    func shareBlocking(albumId: Int64, userIds: [String]) throws
    /// The album's assets.
    /// Blocks the calling thread while SQLite works: from the main actor, `await` the async form.
    func assetsBlocking(albumId: Int64) throws -> [Asset]
    /// An owner's albums.
    /// Blocks the calling thread while SQLite works: from the main actor, `await` the async form.
    func allForOwnerBlocking(_ ownerId: String) throws -> [Album]
    /// Removes the albums with these remote ids (their asset and user links go with them; the
    /// assets stay); returns how many were removed.
    /// Blocks the calling thread while SQLite works: from the main actor, `await` the async form.
    @discardableResult func deleteAllByRemoteIdBlocking(_ remoteIds: [String]) throws -> Int
}

/// Backup album selection, duplicated assets, ETags and device assets.
public protocol SyncClientType: Sendable {
    /// Saves a backup album selection.
    /// Blocks the calling thread while SQLite works: from the main actor, `await` the async form.
    func putBackupAlbumBlocking(_ album: BackupAlbum) throws
    /// Albums with a selection.
    /// Blocks the calling thread while SQLite works: from the main actor, `await` the async form.
    func backupAlbumsBlocking(_ selection: BackupAlbum.Selection) throws -> [BackupAlbum]
    /// Marks device assets as already uploaded.
    /// Blocks the calling thread while SQLite works: from the main actor, `await` the async form.
    func putDuplicatedBlocking(_ ids: [String]) throws
    /// Whether a device asset was already uploaded.
    /// Blocks the calling thread while SQLite works: from the main actor, `await` the async form.
    func isDuplicatedBlocking(_ id: String) throws -> Bool
    /// Saves a user's sync ETag.
    /// Blocks the calling thread while SQLite works: from the main actor, `await` the async form.
    func putETagBlocking(_ etag: ETag) throws
    /// A user's sync ETag.
    /// Blocks the calling thread while SQLite works: from the main actor, `await` the async form.
    func etagBlocking(_ userId: String) throws -> ETag?
    /// Saves Android device asset hashes.
    /// Blocks the calling thread while SQLite works: from the main actor, `await` the async form.
    func putAndroidAssetsBlocking(_ assets: [AndroidDeviceAsset]) throws
    /// Saves iOS device asset hashes.
    /// Blocks the calling thread while SQLite works: from the main actor, `await` the async form.
    func putIOSAssetsBlocking(_ assets: [IOSDeviceAsset]) throws
    /// An iOS device asset's hash record.
    /// Blocks the calling thread while SQLite works: from the main actor, `await` the async form.
    func iosAssetBlocking(_ id: String) throws -> IOSDeviceAsset?
    /// An Android device asset's hash record.
    /// Blocks the calling thread while SQLite works: from the main actor, `await` the async form.
    func androidAssetBlocking(_ id: String) throws -> AndroidDeviceAsset?
    /// Every backup album selection (whatever its selection).
    /// Blocks the calling thread while SQLite works: from the main actor, `await` the async form.
    func allBackupAlbumsBlocking() throws -> [BackupAlbum]
    /// Removes backup album selections by device album id; returns how many were removed.
    /// Blocks the calling thread while SQLite works: from the main actor, `await` the async form.
    @discardableResult func deleteBackupAlbumsBlocking(_ ids: [String]) throws -> Int
    /// Removes users' sync ETags; returns how many were removed.
    /// Blocks the calling thread while SQLite works: from the main actor, `await` the async form.
    @discardableResult func deleteETagsBlocking(_ userIds: [String]) throws -> Int
    /// Removes "already uploaded" marks; returns how many were removed.
    /// Blocks the calling thread while SQLite works: from the main actor, `await` the async form.
    @discardableResult func deleteDuplicatedBlocking(_ ids: [String]) throws -> Int
    /// Removes Android device asset hash records; returns how many were removed.
    /// Blocks the calling thread while SQLite works: from the main actor, `await` the async form.
    @discardableResult func deleteAndroidAssetsBlocking(_ ids: [String]) throws -> Int
    /// Removes iOS device asset hash records; returns how many were removed.
    /// Blocks the calling thread while SQLite works: from the main actor, `await` the async form.
    @discardableResult func deleteIOSAssetsBlocking(_ ids: [String]) throws -> Int
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

/// Ids whose cached images a committed write made stale: assets deleted or replaced, albums
/// changed or deleted. The container passes them to the media cache.
package struct MediaChanges: Sendable {
    /// Ids (remote and local) of assets deleted or replaced.
    package var assetIds: Set<String> = []
    /// Remote ids of albums changed or deleted.
    package var albumIds: Set<String> = []
    var isEmpty: Bool { assetIds.isEmpty && albumIds.isEmpty }
}

/// Who hears about ``MediaChanges`` (the container), called after the write committed.
package final class MediaChangeHooks: Sendable {
    private let handler = Locked<(@Sendable (MediaChanges) -> Void)?>(nil)

    /// Calls `body` after every committed write that made cached images stale.
    package func onChange(_ body: @escaping @Sendable (MediaChanges) -> Void) { handler.withLock { $0 = body } }

    func notify(_ changes: MediaChanges) {
        guard !changes.isEmpty, let body = handler.withLock({ $0 }) else { return }
        body(changes)
    }
}

/// The database behind every client; each write runs in one transaction. It is itself a
/// ``BrandClientType``, as seed 003's `extension StorageContext: BrandClientType` makes it.
public final class StorageContext: ClientType, BrandClientType, Sendable {
    let pool: DatabasePool
    /// The running observations, ended when the database closes.
    let observations = ObservationRegistry()
    /// Told which cached images each committed write made stale.
    package let mediaChanges = MediaChangeHooks()

    init(pool: DatabasePool) { self.pool = pool }

    /// Brands.
    public var brand: BrandClientType { BrandClient(pool: pool) }

    /// Inserts a brand (``BrandClientType/saveBlocking(_:)``).
    public func saveBlocking(_ entity: Brand) throws { try brand.saveBlocking(entity) }
    /// Saves a brand under a namespace (``BrandClientType/saveBlocking(_:for:)``).
    public func saveBlocking(_ entity: Brand, for nameSpace: String) throws { try brand.saveBlocking(entity, for: nameSpace) }
    /// Brands of a language (``BrandClientType/getBrandByLanguageBlocking(_:)``).
    public func getBrandByLanguageBlocking(_ language: String) throws -> [Brand]? { try brand.getBrandByLanguageBlocking(language) }
    /// Removes a language's brands (``BrandClientType/clearBrandByBlocking(_:)``).
    public func clearBrandByBlocking(_ language: String) throws { try brand.clearBrandByBlocking(language) }
    /// Deletes a brand (``BrandClientType/deleteBlocking(_:)``).
    public func deleteBlocking(_ id: String) throws -> Int { try brand.deleteBlocking(id) }
    /// Assets.
    public var assets: AssetClientType { AssetClient(pool: pool, observations: observations, hooks: mediaChanges) }
    /// Albums.
    public var albums: AlbumClientType { AlbumClient(pool: pool, hooks: mediaChanges) }
    /// Sync bookkeeping.
    public var sync: SyncClientType { SyncClient(pool: pool) }

    /// Observes any read of the app database, written with GRDB's `Database` (the one call of
    /// the collections that needs `import GRDB`; ``observe(client:)`` needs none): yields its
    /// result now and after every committed change to the tables it read (unchanged results are
    /// skipped).
    ///
    /// A GRDB escape hatch, like ``AppMigration``: an app that calls it depends on GRDB itself
    /// (its own `Package.swift` entry and `import GRDB`); the app's own tables are its usual use.
    ///
    ///     for try await n in app.context.observe({ db in try Int.fetchOne(db, sql: "SELECT count(*) FROM notes") ?? 0 }) { … }
    public func observe<Value: Equatable & Sendable>(_ query: @escaping @Sendable (Database) throws -> Value)
        -> QueryObservation<Value>
    {
        QueryObservation(registry: observations) { [pool] in ValueObservation.tracking(query).removeDuplicates().values(in: pool) }
    }

    /// Observes any query of a client, written against the clients: the client's reads join the
    /// observation's own read, so the tables they touch are tracked. Only reads may run inside.
    ///
    ///     for try await albums in app.context.observe({ try app.context.albums.allForOwner(id) }) { … }
    public func observe<Value: Equatable & Sendable>(client query: @escaping @Sendable () throws -> Value)
        -> QueryObservation<Value>
    {
        observe { db in try ObservationScope.with(db) { try query() } }
    }
}

/// The database of an observation running on this thread, so client reads made inside it use
/// that read (tracked, and not a second, reentrant read of the pool).
enum ObservationScope {
    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        precondition(pthread_key_create(&key, nil) == 0, "cannot create a thread-local key")
        return key
    }()

    static func with<T>(_ db: Database, _ body: () throws -> T) throws -> T {
        let previous = pthread_getspecific(key)
        pthread_setspecific(key, Unmanaged.passUnretained(db).toOpaque())
        defer { pthread_setspecific(key, previous) }
        return try body()
    }

    static var current: Database? {
        pthread_getspecific(key).map { Unmanaged<Database>.fromOpaque($0).takeUnretainedValue() }
    }
}

/// Runs a write and maps unique-key clashes to a clear error.
func write<T>(_ pool: DatabasePool, _ body: (Database) throws -> T) throws -> T {
    do { return try pool.write(body) } catch { throw DatabaseStoreError.from(error) }
}

func read<T>(_ pool: DatabasePool, _ body: (Database) throws -> T) throws -> T {
    if let observing = ObservationScope.current { return try body(observing) }
    do { return try pool.read(body) } catch { throw DatabaseStoreError.from(error) }
}

struct BrandClient: BrandClientType {
    let pool: DatabasePool

    func saveBlocking(_ entity: Brand) throws {
        try write(pool) { db in try BrandRow(entity).insert(db) }
    }

    func saveBlocking(_ entity: Brand, for nameSpace: String) throws {
        var brand = entity
        brand.language = nameSpace
        try write(pool) { db in try BrandRow(brand).save(db) }
    }

    func getBrandByLanguageBlocking(_ language: String) throws -> [Brand]? {
        let found = try read(pool) { db in try BrandRow.filter(Column("language") == language).fetchAll(db).map(\.value) }
        return found.isEmpty ? nil : found
    }

    func clearBrandByBlocking(_ language: String) throws {
        _ = try write(pool) { db in try BrandRow.filter(Column("language") == language).deleteAll(db) }
    }

    func deleteBlocking(_ id: String) throws -> Int {
        try write(pool) { db in try BrandRow.filter(Column("brandId") == id).deleteAll(db) }
    }
}

struct AssetClient: AssetClientType {
    let pool: DatabasePool
    let observations: ObservationRegistry
    let hooks: MediaChangeHooks

    // Hot reads use cached prepared statements: building and preparing SQL per call would cost
    // more than the indexed read itself.

    func findByRemoteIdBlocking(_ remoteId: String) throws -> Asset? {
        try read(pool) { db in
            try AssetRow.fetchOne(db.cachedStatement(sql: "SELECT * FROM assets WHERE remoteId = ?"), arguments: [remoteId])?.asset
        }
    }

    func findByLocalIdBlocking(_ localId: String) throws -> Asset? {
        try read(pool) { db in
            try AssetRow.fetchOne(db.cachedStatement(sql: "SELECT * FROM assets WHERE localId = ?"), arguments: [localId])?.asset
        }
    }

    func allForOwnerBlocking(_ ownerId: String) throws -> [Asset] {
        try read(pool) { db in
            try AssetRow.fetchAll(
                db.cachedStatement(sql: "SELECT * FROM assets WHERE ownerId = ? ORDER BY fileCreatedAt DESC"),
                arguments: [OwnerId.normalized(ownerId)]
            ).map(\.asset)
        }
    }

    func createdBetweenBlocking(_ start: Date, _ end: Date) throws -> [Asset] {
        guard start <= end else { throw DatabaseStoreError.invalidInput("createdBetween: start \(start) is after end \(end)") }
        return try read(pool) { db in
            try AssetRow.fetchAll(
                db.cachedStatement(sql: "SELECT * FROM assets WHERE fileCreatedAt >= ? AND fileCreatedAt <= ? ORDER BY fileCreatedAt"),
                arguments: [start, end]
            ).map(\.asset)
        }
    }

    /// The existing row an asset matches, the key it matched on, and the row's own ids.
    struct Match {
        let id: Int64
        let key: String
        let remoteId: String?
        let localId: String?
    }

    /// The existing row an asset should update: same remote id, else local id, else owner + checksum.
    static func existing(_ db: Database, _ asset: Asset) throws -> Match? {
        func match(_ sql: String, _ arguments: StatementArguments, _ key: String) throws -> Match? {
            guard
                let row = try Row.fetchOne(
                    db.cachedStatement(sql: "SELECT id, remoteId, localId FROM assets WHERE " + sql), arguments: arguments)
            else {
                return nil
            }
            return Match(id: row[0], key: key, remoteId: row[1], localId: row[2])
        }
        if let remoteId = asset.remoteId, let found = try match("remoteId = ?", [remoteId], "remoteId") { return found }
        if let localId = asset.localId, let found = try match("localId = ?", [localId], "localId") { return found }
        return try match("ownerId = ? AND checksum = ?", [asset.ownerId, asset.checksum], "ownerId+checksum")
    }

    /// Whether updating `match` with `asset` would change an id the row already has: its remote id
    /// (when matched by local id or owner + checksum) or its local id (when matched by owner +
    /// checksum). Filling in an id the row lacks is not a change.
    static func changesIdentity(_ match: Match, _ asset: Asset) -> Bool {
        func differs(_ old: String?, _ new: String?) -> Bool {
            if let old, let new { return old != new }
            return false
        }
        switch match.key {
        case "localId": return differs(match.remoteId, asset.remoteId)
        case "ownerId+checksum": return differs(match.remoteId, asset.remoteId) || differs(match.localId, asset.localId)
        default: return false
        }
    }

    static func upsert(
        _ db: Database, _ given: Asset, onConflict: AssetIdentityConflict = .refuse, replaced: ((Set<String>) -> Void)? = nil
    ) throws -> Asset {
        var asset = given
        asset.ownerId = OwnerId.normalized(given.ownerId)
        var a = AssetRow(asset)
        // Most puts are new assets: try the insert first (one statement); a unique-key clash
        // rolls back only that statement, and the existing row is then found and updated.
        if asset.id == nil {
            do {
                try a.insert(db)
                return a.asset
            } catch let error as DatabaseError where error.extendedResultCode == .SQLITE_CONSTRAINT_UNIQUE {
                a.asset.id = nil
            }
        }
        if let match = try existing(db, asset) {
            if onConflict == .refuse, changesIdentity(match, asset) {
                throw DatabaseStoreError.uniqueViolation(key: match.key, table: "assets")
            }
            a.asset.id = match.id
            // An id the incoming row does not carry is not a request to erase the stored one.
            a.asset.remoteId = asset.remoteId ?? match.remoteId
            a.asset.localId = asset.localId ?? match.localId
            try a.update(db)
            replaced?(Set([match.remoteId, match.localId, a.asset.remoteId, a.asset.localId].compactMap { $0 }))
        } else {
            a.asset.id = nil
            try a.insert(db)
        }
        return a.asset
    }

    func putBlocking(_ asset: Asset, onConflict: AssetIdentityConflict) throws -> Asset {
        try putAllBlocking([asset], onConflict: onConflict)[0]
    }

    func putAllBlocking(_ assets: [Asset], onConflict: AssetIdentityConflict) throws -> [Asset] {
        var changes = MediaChanges()
        let stored = try write(pool) { db in
            changes = MediaChanges()
            return try assets.map { try Self.upsert(db, $0, onConflict: onConflict, replaced: { changes.assetIds.formUnion($0) }) }
        }
        hooks.notify(changes)
        return stored
    }

    func deleteAllByRemoteIdBlocking(_ remoteIds: [String]) throws -> Int {
        var changes = MediaChanges()
        let deleted = try write(pool) { db in
            let gone = try AssetRow.filter(remoteIds.contains(Column("remoteId"))).fetchAll(db).map(\.asset)
            changes.assetIds = Set(gone.flatMap { [$0.remoteId, $0.localId].compactMap { $0 } })
            return try AssetRow.filter(remoteIds.contains(Column("remoteId"))).deleteAll(db)
        }
        hooks.notify(changes)
        return deleted
    }

    func clearLocalIdBlocking(_ localId: String) throws -> Bool {
        try clearId(localId, sql: "UPDATE assets SET localId = NULL, fileSize = NULL WHERE localId = ?")
    }

    func clearRemoteIdBlocking(_ remoteId: String) throws -> Bool {
        try clearId(remoteId, sql: "UPDATE assets SET remoteId = NULL WHERE remoteId = ?")
    }

    /// Runs `sql` (an UPDATE clearing the column that holds `id`) in one transaction and tells the
    /// observers of `id` when a row changed; returns whether one did.
    private func clearId(_ id: String, sql: String) throws -> Bool {
        let cleared = try write(pool) { db in
            try db.execute(sql: sql, arguments: [id])
            return db.changesCount > 0
        }
        if cleared { hooks.notify(MediaChanges(assetIds: [id])) }
        return cleared
    }

    func countBlocking() throws -> Int { try read(pool) { db in try AssetRow.fetchCount(db) } }

    func observeOwner(_ ownerId: String) -> QueryObservation<[Asset]> {
        let ownerId = OwnerId.normalized(ownerId)
        return QueryObservation(registry: observations) { [pool] in
            ValueObservation.tracking { db in
                try AssetRow.filter(Column("ownerId") == ownerId).order(Column("fileCreatedAt").desc).fetchAll(db).map(\.asset)
            }
            .removeDuplicates()
            .values(in: pool)
        }
    }
}

struct AlbumClient: AlbumClientType {
    let pool: DatabasePool
    let hooks: MediaChangeHooks

    func putBlocking(_ album: Album) throws -> Album {
        var changes = MediaChanges()
        defer { hooks.notify(changes) }
        return try write(pool) { db in
            var a = AlbumRow(album)
            a.album.ownerId = OwnerId.normalized(album.ownerId)
            if let remoteId = album.remoteId,
                let id = try Int64.fetchOne(db, sql: "SELECT id FROM albums WHERE remoteId = ?", arguments: [remoteId])
            {
                a.album.id = id
                try a.update(db)
                changes.albumIds = [remoteId]
            } else {
                a.album.id = nil
                try a.insert(db)
            }
            return a.album
        }
    }

    func findByRemoteIdBlocking(_ remoteId: String) throws -> Album? {
        try read(pool) { db in try AlbumRow.filter(Column("remoteId") == remoteId).fetchOne(db)?.album }
    }

    func linkBlocking(albumId: Int64, assetIds: [Int64]) throws {
        var changes = MediaChanges()
        defer { hooks.notify(changes) }
        try write(pool) { db in
            if let remoteId = try String.fetchOne(db, sql: "SELECT remoteId FROM albums WHERE id = ?", arguments: [albumId]) {
                changes.albumIds = [remoteId]
            }
            for assetId in assetIds {
                try db.execute(sql: "INSERT OR IGNORE INTO album_assets(albumId, assetId) VALUES (?, ?)", arguments: [albumId, assetId])
            }
        }
    }

    func shareBlocking(albumId: Int64, userIds: [String]) throws {
        try write(pool) { db in
            for userId in userIds {
                try db.execute(sql: "INSERT OR IGNORE INTO album_users(albumId, userId) VALUES (?, ?)", arguments: [albumId, userId])
            }
        }
    }

    func assetsBlocking(albumId: Int64) throws -> [Asset] {
        try read(pool) { db in
            try AssetRow.fetchAll(
                db, sql: "SELECT a.* FROM assets a JOIN album_assets x ON x.assetId = a.id WHERE x.albumId = ? ORDER BY a.fileCreatedAt",
                arguments: [albumId]
            ).map(\.asset)
        }
    }

    func allForOwnerBlocking(_ ownerId: String) throws -> [Album] {
        try read(pool) { db in try AlbumRow.filter(Column("ownerId") == OwnerId.normalized(ownerId)).fetchAll(db).map(\.album) }
    }

    func deleteAllByRemoteIdBlocking(_ remoteIds: [String]) throws -> Int {
        var changes = MediaChanges()
        defer { hooks.notify(changes) }
        return try write(pool) { db in
            let deleted = try AlbumRow.filter(remoteIds.contains(Column("remoteId"))).deleteAll(db)
            if deleted > 0 { changes.albumIds = Set(remoteIds) }
            return deleted
        }
    }
}

struct SyncClient: SyncClientType {
    let pool: DatabasePool

    func putBackupAlbumBlocking(_ album: BackupAlbum) throws { try write(pool) { db in try BackupAlbumRow(album).save(db) } }

    func backupAlbumsBlocking(_ selection: BackupAlbum.Selection) throws -> [BackupAlbum] {
        try read(pool) { db in try BackupAlbumRow.filter(Column("selection") == selection.rawValue).fetchAll(db).map(\.value) }
    }

    func putDuplicatedBlocking(_ ids: [String]) throws {
        try write(pool) { db in for id in ids { try DuplicatedAssetRow(DuplicatedAsset(id: id)).save(db) } }
    }

    func isDuplicatedBlocking(_ id: String) throws -> Bool {
        try read(pool) { db in try DuplicatedAssetRow.exists(db, key: id) }
    }

    func putETagBlocking(_ etag: ETag) throws { try write(pool) { db in try ETagRow(etag).save(db) } }

    func etagBlocking(_ userId: String) throws -> ETag? { try read(pool) { db in try ETagRow.fetchOne(db, key: userId)?.value } }

    func putAndroidAssetsBlocking(_ assets: [AndroidDeviceAsset]) throws {
        try write(pool) { db in for a in assets { try AndroidDeviceAssetRow(a).save(db) } }
    }

    func putIOSAssetsBlocking(_ assets: [IOSDeviceAsset]) throws {
        try write(pool) { db in for a in assets { try IOSDeviceAssetRow(a).save(db) } }
    }

    func iosAssetBlocking(_ id: String) throws -> IOSDeviceAsset? {
        try read(pool) { db in try IOSDeviceAssetRow.fetchOne(db, key: id)?.value }
    }

    func androidAssetBlocking(_ id: String) throws -> AndroidDeviceAsset? {
        try read(pool) { db in try AndroidDeviceAssetRow.fetchOne(db, key: id)?.value }
    }

    func allBackupAlbumsBlocking() throws -> [BackupAlbum] { try read(pool) { db in try BackupAlbumRow.fetchAll(db).map(\.value) } }

    func deleteBackupAlbumsBlocking(_ ids: [String]) throws -> Int { try write(pool) { db in try BackupAlbumRow.deleteAll(db, keys: ids) } }

    func deleteETagsBlocking(_ userIds: [String]) throws -> Int { try write(pool) { db in try ETagRow.deleteAll(db, keys: userIds) } }

    func deleteDuplicatedBlocking(_ ids: [String]) throws -> Int {
        try write(pool) { db in try DuplicatedAssetRow.deleteAll(db, keys: ids) }
    }

    func deleteAndroidAssetsBlocking(_ ids: [String]) throws -> Int {
        try write(pool) { db in try AndroidDeviceAssetRow.deleteAll(db, keys: ids) }
    }

    func deleteIOSAssetsBlocking(_ ids: [String]) throws -> Int { try write(pool) { db in try IOSDeviceAssetRow.deleteAll(db, keys: ids) } }
}
