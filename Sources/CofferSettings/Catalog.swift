// The seed's key tables as ready-made keys. Secrets (the access token) are not here: they
// belong in secure storage.

import Foundation
import GRDB

/// The logged-in user, kept as one Codable setting (`currentUser`).
public struct User: Codable, Sendable, Hashable {
    /// Server id.
    public var id: String
    /// E-mail address.
    public var email: String
    /// Display name.
    public var name: String
    /// Whether the user is an administrator.
    public var isAdmin: Bool

    /// A user.
    public init(id: String, email: String, name: String, isAdmin: Bool = false) {
        self.id = id
        self.email = email
        self.name = name
        self.isAdmin = isAdmin
    }

    private enum CodingKeys: String, CodingKey {
        case id, email, name, isAdmin
    }

    /// Decodes a user; `isAdmin` is optional (false when absent), the other fields are required.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        email = try container.decode(String.self, forKey: .email)
        name = try container.decode(String.self, forKey: .name)
        isAdmin = try container.decodeIfPresent(Bool.self, forKey: .isAdmin) ?? false
    }
}

/// The app's colour scheme choice.
public enum ThemeMode: String, Sendable, Codable, CaseIterable {
    /// Follow the system.
    case system
    /// Always light.
    case light
    /// Always dark.
    case dark
}

/// Which media type cleanup keeps (seed 004: "Keep photos/videos/both").
public enum KeepMediaType: String, Sendable, Codable, CaseIterable {
    /// Keep nothing by type.
    case none
    /// Keep photos.
    case photos
    /// Keep videos.
    case videos
    /// Keep photos and videos (only other media types are removed).
    case both
}

/// The seed's keys: store keys, user settings with their defaults, cache sizes, cleanup.
public enum SettingsCatalog {
    // MARK: Store keys

    /// Data-migration version of the app's data (see the migration ladder).
    public static let version = StoreKey("version", default: 0)
    /// Last sync ETag.
    public static let assetETag = StoreKey("assetETag", default: "")
    /// The logged-in user.
    public static let currentUser = StoreKey<User?>(codable: "currentUser", default: nil)
    /// Unique device identifier.
    public static let deviceId = StoreKey("deviceId", default: "")
    /// Hashed device id.
    public static let deviceIdHash = StoreKey("deviceIdHash", default: 0)
    /// Server URL.
    public static let serverUrl = StoreKey("serverUrl", default: "")
    /// API endpoint URL.
    public static let serverEndpoint = StoreKey("serverEndpoint", default: "")
    /// Auto backup enabled.
    public static let autoBackup = StoreKey("autoBackup", default: false)
    /// Background backup enabled.
    public static let backgroundBackup = StoreKey("backgroundBackup", default: false)
    /// Require Wi-Fi for backup.
    public static let backupRequireWifi = StoreKey("backupRequireWifi", default: true)
    /// Require charging for backup.
    public static let backupRequireCharging = StoreKey("backupRequireCharging", default: false)
    /// Minutes before a backup starts.
    public static let backupTriggerDelay = StoreKey("backupTriggerDelay", default: 30)
    /// When backups started failing (nil: they are not failing); a DateTime as the seed has it
    /// (kind `date`, milliseconds since 1970; data migration 4 converts the earlier JSON form).
    public static let backupFailedSince = StoreKey<Date?>(optionalDate: "backupFailedSince")

    // MARK: User settings

    /// Load preview images.
    public static let loadPreview = StoreKey("loadPreview", default: true)
    /// Load full resolution.
    public static let loadOriginal = StoreKey("loadOriginal", default: false)
    /// Light, dark or system.
    public static let themeMode = StoreKey(enum: "themeMode", default: ThemeMode.system)
    /// Theme accent colour (the seed's default, `Default`; data migration 4 rewrites a stored
    /// `default` of earlier releases).
    public static let primaryColor = StoreKey("primaryColor", default: "Default")
    /// Use dynamic colours.
    public static let dynamicTheme = StoreKey("dynamicTheme", default: false)
    /// Colourful UI elements.
    public static let colorfulInterface = StoreKey("colorfulInterface", default: true)
    /// Grid columns.
    public static let tilesPerRow = StoreKey("tilesPerRow", default: 4)
    /// Dynamic grid layout.
    public static let dynamicLayout = StoreKey("dynamicLayout", default: false)
    /// Grouping mode.
    public static let groupAssetsBy = StoreKey("groupAssetsBy", default: 0)
    /// Show the storage indicator.
    public static let storageIndicator = StoreKey("storageIndicator", default: true)
    /// Loop video playback.
    public static let loopVideo = StoreKey("loopVideo", default: true)
    /// Auto-play videos.
    public static let autoPlayVideo = StoreKey("autoPlayVideo", default: true)
    /// Haptic feedback.
    public static let enableHapticFeedback = StoreKey("enableHapticFeedback", default: true)

    // MARK: Cache sizes

    /// Max thumbnail cache entries.
    public static let thumbnailCacheSize = StoreKey("thumbnailCacheSize", default: 10_000)
    /// Max preview cache entries.
    public static let imageCacheSize = StoreKey("imageCacheSize", default: 350)
    /// Max album thumbnail entries.
    public static let albumThumbnailCacheSize = StoreKey("albumThumbnailCacheSize", default: 200)

    // MARK: Cleanup

    /// Keep favourite assets when freeing space.
    public static let cleanupKeepFavorites = StoreKey("cleanupKeepFavorites", default: true)
    /// Media type to keep when freeing space.
    public static let cleanupKeepMediaType = StoreKey(enum: "cleanupKeepMediaType", default: KeepMediaType.none)
    /// Albums whose assets are kept when freeing space.
    public static let cleanupKeepAlbumIds = StoreKey<[String]>(codable: "cleanupKeepAlbumIds", default: [])
    /// Only assets older than this many days are removed (-1: no cutoff chosen).
    public static let cleanupCutoffDaysAgo = StoreKey("cleanupCutoffDaysAgo", default: -1)

    /// Every catalogue key with what tools need to enforce it (`coffer settings`): kind, stored
    /// default, allowed enum values, whether only Coffer writes it, and a minimum for counts.
    public static let all: [CatalogEntry] = [
        CatalogEntry(
            version, reserved: "the data-migration ladder writes it; a wrong value makes the store unopenable or re-runs migrations"),
        CatalogEntry(assetETag), CatalogEntry(currentUser), CatalogEntry(deviceId), CatalogEntry(deviceIdHash),
        CatalogEntry(serverUrl), CatalogEntry(serverEndpoint), CatalogEntry(autoBackup), CatalogEntry(backgroundBackup),
        CatalogEntry(backupRequireWifi), CatalogEntry(backupRequireCharging), CatalogEntry(backupTriggerDelay, minimum: 0),
        CatalogEntry(backupFailedSince), CatalogEntry(loadPreview), CatalogEntry(loadOriginal),
        CatalogEntry(themeMode, allowed: ThemeMode.allCases.map(\.rawValue)), CatalogEntry(primaryColor),
        CatalogEntry(dynamicTheme), CatalogEntry(colorfulInterface), CatalogEntry(tilesPerRow, minimum: 1),
        CatalogEntry(dynamicLayout), CatalogEntry(groupAssetsBy, minimum: 0), CatalogEntry(storageIndicator),
        CatalogEntry(loopVideo), CatalogEntry(autoPlayVideo), CatalogEntry(enableHapticFeedback),
        CatalogEntry(thumbnailCacheSize, minimum: 1), CatalogEntry(imageCacheSize, minimum: 1),
        CatalogEntry(albumThumbnailCacheSize, minimum: 1), CatalogEntry(cleanupKeepFavorites),
        CatalogEntry(cleanupKeepMediaType, allowed: KeepMediaType.allCases.map(\.rawValue)),
        CatalogEntry(cleanupKeepAlbumIds), CatalogEntry(cleanupCutoffDaysAgo, minimum: -1),
    ]

    /// The catalogue entry named `name`, nil for a name outside the catalogue.
    public static func entry(named name: String) -> CatalogEntry? {
        all.first { $0.name == name }
    }
}

/// What tools know of one catalogue key, without its Swift type.
public struct CatalogEntry: Sendable {
    /// The persisted name.
    public let name: String
    /// The stored kind (`int`, `bool`, `string`, `double`, `date`, `data`, `enum`, `json`).
    public let kind: String
    /// The default in its stored form (NULL for a nil default); for Coffer's tools.
    package let defaultValue: DatabaseValue
    /// The raw values an enum key accepts, nil for other kinds.
    public let allowedValues: [String]?
    /// Why only Coffer writes this key, nil when tools may set it.
    public let reservedReason: String?
    /// The smallest value an integer key accepts, nil when any integer is fine.
    public let minimum: Int?
    private let decodes: @Sendable (DatabaseValue) -> Bool

    /// The entry of `key`.
    public init<Value>(_ key: StoreKey<Value>, allowed: [String]? = nil, reserved: String? = nil, minimum: Int? = nil) {
        name = key.name
        kind = key.codec.kind
        defaultValue = (try? key.codec.encode(key.defaultValue)) ?? .null
        allowedValues = allowed
        reservedReason = reserved
        self.minimum = minimum
        let codec = key.codec
        decodes = { codec.decode($0) != nil }
    }

    /// Whether `value`, stored under kind `kind`, reads back as this key's type (and is an
    /// allowed enum value, at or above the minimum).
    package func accepts(kind: String, _ value: DatabaseValue) -> Bool {
        guard kind == self.kind, decodes(value) else { return false }
        if let allowedValues, let text = String.fromDatabaseValue(value), !allowedValues.contains(text) { return false }
        if let minimum, let number = Int.fromDatabaseValue(value), number < minimum { return false }
        return true
    }
}
