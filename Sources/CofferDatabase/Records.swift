// The entities of seeds 003 and 004 as plain values: nothing of GRDB is in their public surface
// (no record conformance, no `insert(db)`). Their rows, tables and columns are in RecordRows.swift;
// migrations use plain SQL strings, never these types, so old steps never change.

import Foundation

/// The one normalisation of owner (server user) ids, used by every write, query, cleanup and
/// migration 2: ASCII letters lower-cased, everything else kept — exactly SQLite's `lower()`, so
/// rows the migration rewrote and rows written since compare equal. Server ids are compared
/// case-insensitively; storing them one way keeps the `ownerId+checksum` key and the owner
/// index exact.
public enum OwnerId {
    /// `id` with its ASCII letters lower-cased.
    public static func normalized(_ id: String) -> String {
        guard id.utf8.contains(where: { $0 >= 0x41 && $0 <= 0x5A }) else { return id }
        return String(decoding: id.utf8.map { $0 >= 0x41 && $0 <= 0x5A ? $0 + 0x20 : $0 }, as: UTF8.self)
    }
}

/// A photo or video known locally, remotely, or both (seed 004 "Assets").
public struct Asset: Codable, Sendable, Hashable {
    /// Photo or video.
    public enum MediaType: String, Codable, Sendable, Hashable { case image, video, other }

    /// Auto-increment primary key (nil before the first save).
    public var id: Int64?
    /// Server id (unique).
    public var remoteId: String?
    /// Device id (unique).
    public var localId: String?
    /// Owner's user id; with `checksum` a unique pair.
    public var ownerId: String
    /// Content checksum (base64).
    public var checksum: String
    /// File name.
    public var fileName: String
    /// Photo or video.
    public var type: MediaType
    /// When the file was created.
    public var fileCreatedAt: Date
    /// When the file was last modified.
    public var fileModifiedAt: Date
    /// Last metadata update.
    public var updatedAt: Date
    /// Video length in seconds (0 for photos).
    public var durationInSeconds: Int
    /// Pixel width.
    public var width: Int?
    /// Pixel height.
    public var height: Int?
    /// Marked favourite.
    public var isFavorite: Bool
    /// Archived.
    public var isArchived: Bool
    /// In the trash.
    public var isTrashed: Bool
    /// Bytes of the local file, when there is one (schema v2).
    public var fileSize: Int64?

    /// An asset.
    public init(
        id: Int64? = nil, remoteId: String?, localId: String?, ownerId: String, checksum: String, fileName: String,
        type: MediaType = .image, fileCreatedAt: Date, fileModifiedAt: Date? = nil, updatedAt: Date? = nil,
        durationInSeconds: Int = 0, width: Int? = nil, height: Int? = nil, isFavorite: Bool = false,
        isArchived: Bool = false, isTrashed: Bool = false, fileSize: Int64? = nil
    ) {
        self.id = id
        self.remoteId = remoteId
        self.localId = localId
        self.ownerId = ownerId
        self.checksum = checksum
        self.fileName = fileName
        self.type = type
        self.fileCreatedAt = fileCreatedAt
        self.fileModifiedAt = fileModifiedAt ?? fileCreatedAt
        self.updatedAt = updatedAt ?? fileCreatedAt
        self.durationInSeconds = durationInSeconds
        self.width = width
        self.height = height
        self.isFavorite = isFavorite
        self.isArchived = isArchived
        self.isTrashed = isTrashed
        self.fileSize = fileSize
    }
}

/// An album (seed 004 "Albums"), linked to assets and users.
public struct Album: Codable, Sendable, Hashable {
    /// Auto-increment primary key.
    public var id: Int64?
    /// Server id (indexed).
    public var remoteId: String?
    /// Name.
    public var name: String
    /// Created.
    public var createdAt: Date
    /// Last modified.
    public var modifiedAt: Date
    /// Earliest asset date.
    public var startDate: Date?
    /// Latest asset date.
    public var endDate: Date?
    /// Owner's user id.
    public var ownerId: String
    /// Shared with other users.
    public var shared: Bool

    /// An album.
    public init(
        id: Int64? = nil, remoteId: String?, name: String, createdAt: Date, modifiedAt: Date? = nil,
        startDate: Date? = nil, endDate: Date? = nil, ownerId: String, shared: Bool = false
    ) {
        self.id = id
        self.remoteId = remoteId
        self.name = name
        self.createdAt = createdAt
        self.modifiedAt = modifiedAt ?? createdAt
        self.startDate = startDate
        self.endDate = endDate
        self.ownerId = ownerId
        self.shared = shared
    }
}

/// A device album selected (or excluded) for backup (seed 004 "BackupAlbum").
public struct BackupAlbum: Codable, Sendable, Hashable {
    /// Whether the album's assets are backed up.
    public enum Selection: String, Codable, Sendable, Hashable { case include, exclude, none }
    /// Device album id (primary key).
    public var id: String
    /// Album name.
    public var name: String
    /// Include, exclude or none.
    public var selection: Selection
    /// Last backup time.
    public var lastBackup: Date

    /// A backup album.
    public init(id: String, name: String, selection: Selection, lastBackup: Date) {
        self.id = id
        self.name = name
        self.selection = selection
        self.lastBackup = lastBackup
    }
}

/// A device asset already uploaded (seed 004 "DuplicatedAsset").
public struct DuplicatedAsset: Codable, Sendable, Hashable {
    /// Device asset id.
    public var id: String
    /// A duplicated asset.
    public init(id: String) { self.id = id }
}

/// Sync ETag per user (seed 004 "ETag").
public struct ETag: Codable, Sendable, Hashable {
    /// User id.
    public var id: String
    /// Number of assets at the last sync.
    public var assetCount: Int
    /// Last sync time.
    public var time: Date
    /// An ETag.
    public init(id: String, assetCount: Int, time: Date) {
        self.id = id
        self.assetCount = assetCount
        self.time = time
    }
}

/// An Android device asset's content hash.
public struct AndroidDeviceAsset: Codable, Sendable, Hashable {
    /// Asset id.
    public var id: String
    /// Content hash.
    public var hash: Data
    /// An Android device asset.
    public init(id: String, hash: Data) {
        self.id = id
        self.hash = hash
    }
}

/// An iOS device asset's content hash and modification time.
public struct IOSDeviceAsset: Codable, Sendable, Hashable {
    /// Asset id.
    public var id: String
    /// Content hash.
    public var hash: Data
    /// Modification time.
    public var modifiedTime: Date
    /// An iOS device asset.
    public init(id: String, hash: Data, modifiedTime: Date) {
        self.id = id
        self.hash = hash
        self.modifiedTime = modifiedTime
    }
}

/// Seed 003's example entity: a brand, kept per language namespace.
public struct Brand: Codable, Sendable, Hashable, BrandEntityType {
    /// Primary key.
    public var brandId: String
    /// Image URL.
    public var image: String
    /// Search keywords.
    public var keywords: String
    /// Display name.
    public var name: String
    /// The namespace (language) it was saved for.
    public var language: String
    /// A brand.
    public init(brandId: String, image: String, keywords: String, name: String, language: String = "") {
        self.brandId = brandId
        self.image = image
        self.keywords = keywords
        self.name = name
        self.language = language
    }
}
