// The seed's key tables as ready-made keys. Secrets (the access token) are not here: they
// belong in secure storage.
import Foundation

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

/// Which media type cleanup keeps.
public enum KeepMediaType: String, Sendable, Codable, CaseIterable {
    /// Keep nothing by type.
    case none
    /// Keep photos.
    case photos
    /// Keep videos.
    case videos
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
    /// When backups started failing (nil: they are not failing).
    public static let backupFailedSince = StoreKey<Date?>(codable: "backupFailedSince", default: nil)

    // MARK: User settings

    /// Load preview images.
    public static let loadPreview = StoreKey("loadPreview", default: true)
    /// Load full resolution.
    public static let loadOriginal = StoreKey("loadOriginal", default: false)
    /// Light, dark or system.
    public static let themeMode = StoreKey(enum: "themeMode", default: ThemeMode.system)
    /// Theme accent colour.
    public static let primaryColor = StoreKey("primaryColor", default: "default")
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

    /// Every catalogue key's name and kind, for tools (`coffer settings list`).
    public static let all: [(name: String, kind: String)] = [
        (version.name, version.codec.kind), (assetETag.name, assetETag.codec.kind), (currentUser.name, currentUser.codec.kind),
        (deviceId.name, deviceId.codec.kind), (deviceIdHash.name, deviceIdHash.codec.kind), (serverUrl.name, serverUrl.codec.kind),
        (serverEndpoint.name, serverEndpoint.codec.kind), (autoBackup.name, autoBackup.codec.kind),
        (backgroundBackup.name, backgroundBackup.codec.kind), (backupRequireWifi.name, backupRequireWifi.codec.kind),
        (backupRequireCharging.name, backupRequireCharging.codec.kind), (backupTriggerDelay.name, backupTriggerDelay.codec.kind),
        (backupFailedSince.name, backupFailedSince.codec.kind), (loadPreview.name, loadPreview.codec.kind),
        (loadOriginal.name, loadOriginal.codec.kind), (themeMode.name, themeMode.codec.kind), (primaryColor.name, primaryColor.codec.kind),
        (dynamicTheme.name, dynamicTheme.codec.kind), (colorfulInterface.name, colorfulInterface.codec.kind),
        (tilesPerRow.name, tilesPerRow.codec.kind), (dynamicLayout.name, dynamicLayout.codec.kind),
        (groupAssetsBy.name, groupAssetsBy.codec.kind), (storageIndicator.name, storageIndicator.codec.kind),
        (loopVideo.name, loopVideo.codec.kind), (autoPlayVideo.name, autoPlayVideo.codec.kind),
        (enableHapticFeedback.name, enableHapticFeedback.codec.kind), (thumbnailCacheSize.name, thumbnailCacheSize.codec.kind),
        (imageCacheSize.name, imageCacheSize.codec.kind), (albumThumbnailCacheSize.name, albumThumbnailCacheSize.codec.kind),
        (cleanupKeepFavorites.name, cleanupKeepFavorites.codec.kind), (cleanupKeepMediaType.name, cleanupKeepMediaType.codec.kind),
        (cleanupKeepAlbumIds.name, cleanupKeepAlbumIds.codec.kind), (cleanupCutoffDaysAgo.name, cleanupCutoffDaysAgo.codec.kind),
    ]
}
