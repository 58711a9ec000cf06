// The GRDB side of the public entities (Records.swift): one package-internal row type per table,
// each wrapping its public value and mapping it to and from a row column by column. Apps never see
// these; the public values carry no GRDB conformance, so no app code can `insert(db)` an `Asset`.
// The mapping copies fields (no Codable round trip), so it costs less than the Codable records
// it replaced (docs/benchmarks.md, collections).

import Foundation
import GRDB

/// An ``Asset`` as a row of `assets`.
package struct AssetRow: FetchableRecord, MutablePersistableRecord, Sendable {
    /// The value.
    package var asset: Asset
    /// The table.
    package static let databaseTableName = "assets"

    /// The row of `asset`.
    package init(_ asset: Asset) { self.asset = asset }

    /// Reads a row of `SELECT *` (or any select naming the columns).
    package init(row: Row) throws {
        guard let type = Asset.MediaType(rawValue: row["type"]) else {
            throw DatabaseStoreError.storage(
                "assets row \(row["id"] as Int64? ?? -1) has an unknown type \(row["type"] as String? ?? "NULL")")
        }
        asset = Asset(
            id: row["id"], remoteId: row["remoteId"], localId: row["localId"], ownerId: row["ownerId"], checksum: row["checksum"],
            fileName: row["fileName"], type: type, fileCreatedAt: row["fileCreatedAt"], fileModifiedAt: row["fileModifiedAt"],
            updatedAt: row["updatedAt"], durationInSeconds: row["durationInSeconds"], width: row["width"], height: row["height"],
            isFavorite: row["isFavorite"], isArchived: row["isArchived"], isTrashed: row["isTrashed"], fileSize: row["fileSize"])
    }

    /// Writes every column.
    package func encode(to container: inout PersistenceContainer) {
        container["id"] = asset.id
        container["remoteId"] = asset.remoteId
        container["localId"] = asset.localId
        container["ownerId"] = asset.ownerId
        container["checksum"] = asset.checksum
        container["fileName"] = asset.fileName
        container["type"] = asset.type.rawValue
        container["fileCreatedAt"] = asset.fileCreatedAt
        container["fileModifiedAt"] = asset.fileModifiedAt
        container["updatedAt"] = asset.updatedAt
        container["durationInSeconds"] = asset.durationInSeconds
        container["width"] = asset.width
        container["height"] = asset.height
        container["isFavorite"] = asset.isFavorite
        container["isArchived"] = asset.isArchived
        container["isTrashed"] = asset.isTrashed
        container["fileSize"] = asset.fileSize
    }

    /// Keeps the row id SQLite assigned.
    package mutating func didInsert(_ inserted: InsertionSuccess) { asset.id = inserted.rowID }
}

/// An ``Album`` as a row of `albums`.
package struct AlbumRow: FetchableRecord, MutablePersistableRecord, Sendable {
    /// The value.
    package var album: Album
    /// The table.
    package static let databaseTableName = "albums"

    /// The row of `album`.
    package init(_ album: Album) { self.album = album }

    /// Reads a row.
    package init(row: Row) {
        album = Album(
            id: row["id"], remoteId: row["remoteId"], name: row["name"], createdAt: row["createdAt"], modifiedAt: row["modifiedAt"],
            startDate: row["startDate"], endDate: row["endDate"], ownerId: row["ownerId"], shared: row["shared"])
    }

    /// Writes every column.
    package func encode(to container: inout PersistenceContainer) {
        container["id"] = album.id
        container["remoteId"] = album.remoteId
        container["name"] = album.name
        container["createdAt"] = album.createdAt
        container["modifiedAt"] = album.modifiedAt
        container["startDate"] = album.startDate
        container["endDate"] = album.endDate
        container["ownerId"] = album.ownerId
        container["shared"] = album.shared
    }

    /// Keeps the row id SQLite assigned.
    package mutating func didInsert(_ inserted: InsertionSuccess) { album.id = inserted.rowID }
}

/// A ``BackupAlbum`` as a row of `backup_albums`.
package struct BackupAlbumRow: FetchableRecord, PersistableRecord, Sendable {
    /// The value.
    package var value: BackupAlbum
    /// The table.
    package static let databaseTableName = "backup_albums"
    /// The row of `value`.
    package init(_ value: BackupAlbum) { self.value = value }

    /// Reads a row.
    package init(row: Row) throws {
        guard let selection = BackupAlbum.Selection(rawValue: row["selection"]) else {
            throw DatabaseStoreError.storage("backup_albums row has an unknown selection \(row["selection"] as String? ?? "NULL")")
        }
        value = BackupAlbum(id: row["id"], name: row["name"], selection: selection, lastBackup: row["lastBackup"])
    }

    /// Writes every column.
    package func encode(to container: inout PersistenceContainer) {
        container["id"] = value.id
        container["name"] = value.name
        container["selection"] = value.selection.rawValue
        container["lastBackup"] = value.lastBackup
    }
}

/// A ``DuplicatedAsset`` as a row of `duplicated_assets`.
package struct DuplicatedAssetRow: FetchableRecord, PersistableRecord, Sendable {
    /// The value.
    package var value: DuplicatedAsset
    /// The table.
    package static let databaseTableName = "duplicated_assets"
    /// The row of `value`.
    package init(_ value: DuplicatedAsset) { self.value = value }
    /// Reads a row.
    package init(row: Row) { value = DuplicatedAsset(id: row["id"]) }
    /// Writes every column.
    package func encode(to container: inout PersistenceContainer) { container["id"] = value.id }
}

/// An ``ETag`` as a row of `etags`.
package struct ETagRow: FetchableRecord, PersistableRecord, Sendable {
    /// The value.
    package var value: ETag
    /// The table.
    package static let databaseTableName = "etags"
    /// The row of `value`.
    package init(_ value: ETag) { self.value = value }
    /// Reads a row.
    package init(row: Row) { value = ETag(id: row["id"], assetCount: row["assetCount"], time: row["time"]) }
    /// Writes every column.
    package func encode(to container: inout PersistenceContainer) {
        container["id"] = value.id
        container["assetCount"] = value.assetCount
        container["time"] = value.time
    }
}

/// An ``AndroidDeviceAsset`` as a row of `android_device_assets`.
package struct AndroidDeviceAssetRow: FetchableRecord, PersistableRecord, Sendable {
    /// The value.
    package var value: AndroidDeviceAsset
    /// The table.
    package static let databaseTableName = "android_device_assets"
    /// The row of `value`.
    package init(_ value: AndroidDeviceAsset) { self.value = value }
    /// Reads a row.
    package init(row: Row) { value = AndroidDeviceAsset(id: row["id"], hash: row["hash"]) }
    /// Writes every column.
    package func encode(to container: inout PersistenceContainer) {
        container["id"] = value.id
        container["hash"] = value.hash
    }
}

/// An ``IOSDeviceAsset`` as a row of `ios_device_assets`.
package struct IOSDeviceAssetRow: FetchableRecord, PersistableRecord, Sendable {
    /// The value.
    package var value: IOSDeviceAsset
    /// The table.
    package static let databaseTableName = "ios_device_assets"
    /// The row of `value`.
    package init(_ value: IOSDeviceAsset) { self.value = value }
    /// Reads a row.
    package init(row: Row) { value = IOSDeviceAsset(id: row["id"], hash: row["hash"], modifiedTime: row["modifiedTime"]) }
    /// Writes every column.
    package func encode(to container: inout PersistenceContainer) {
        container["id"] = value.id
        container["hash"] = value.hash
        container["modifiedTime"] = value.modifiedTime
    }
}

/// A ``Brand`` as a row of `brands`.
package struct BrandRow: FetchableRecord, PersistableRecord, Sendable {
    /// The value.
    package var value: Brand
    /// The table.
    package static let databaseTableName = "brands"
    /// The row of `value`.
    package init(_ value: Brand) { self.value = value }
    /// Reads a row.
    package init(row: Row) {
        value = Brand(brandId: row["brandId"], image: row["image"], keywords: row["keywords"], name: row["name"], language: row["language"])
    }
    /// Writes every column.
    package func encode(to container: inout PersistenceContainer) {
        container["brandId"] = value.brandId
        container["image"] = value.image
        container["keywords"] = value.keywords
        container["name"] = value.name
        container["language"] = value.language
    }
}
