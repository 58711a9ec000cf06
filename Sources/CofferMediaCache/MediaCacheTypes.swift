// The cache's public values: what an entry is (kind, key), the limits it keeps, the statistics it
// reports and the errors it throws.

import CofferSync
import Foundation

@_exported import struct CofferSync.StorageCause

/// What a cached image is for; each kind has its own entry limit, so one never evicts another.
public enum MediaKind: String, Sendable, Codable, CaseIterable {
    /// Grid thumbnails (seed default: 10,000 entries).
    case thumbnail
    /// Full-screen previews (seed default: 350 entries).
    case preview
    /// Album covers (seed default: 200 entries).
    case albumThumbnail

    var index: Int {
        switch self {
        case .thumbnail: return 0
        case .preview: return 1
        case .albumThumbnail: return 2
        }
    }
}

/// One cached image: its kind and the id it belongs to (an asset id for thumbnails and
/// previews, an album id for album thumbnails).
public struct MediaKey: Hashable, Sendable, CustomStringConvertible {
    /// The kind.
    public let kind: MediaKind
    /// The asset id (thumbnail, preview) or album id (album thumbnail).
    public let id: String

    /// A key; the id is checked when the key is used.
    public init(_ kind: MediaKind, _ id: String) {
        self.kind = kind
        self.id = id
    }

    /// An asset's grid thumbnail.
    public static func thumbnail(_ assetId: String) -> MediaKey { MediaKey(.thumbnail, assetId) }
    /// An asset's full-screen preview.
    public static func preview(_ assetId: String) -> MediaKey { MediaKey(.preview, assetId) }
    /// An album's cover.
    public static func albumThumbnail(_ albumId: String) -> MediaKey { MediaKey(.albumThumbnail, albumId) }

    /// `kind/id`.
    public var description: String { "\(kind.rawValue)/\(id)" }
}

/// The cache's limits: entries per kind (in each layer) and bytes per layer.
public struct MediaCacheLimits: Sendable, Equatable {
    /// Most entries of each kind a layer holds.
    public var entries: [MediaKind: Int]
    /// Most bytes the memory layer holds.
    public var memoryBytes: Int
    /// Most bytes the disk layer holds (file sizes, headers included).
    public var diskBytes: Int
    /// How long an entry of each kind lives, in seconds, unless its store gives its own `ttl`;
    /// a kind missing here keeps its entries until they are evicted or removed.
    public var timeToLive: [MediaKind: TimeInterval]

    /// Limits; kinds missing from `entries` take the seed's defaults, kinds missing from
    /// `timeToLive` never expire.
    public init(
        entries: [MediaKind: Int] = [:], memoryBytes: Int = 96 << 20, diskBytes: Int = 1 << 30,
        timeToLive: [MediaKind: TimeInterval] = [:]
    ) {
        var all = Self.seedEntries
        all.merge(entries) { _, new in new }
        self.entries = all
        self.memoryBytes = memoryBytes
        self.diskBytes = diskBytes
        self.timeToLive = timeToLive
    }

    /// The seed's entry counts: thumbnail 10,000, preview 350, album thumbnail 200.
    public static let seedEntries: [MediaKind: Int] = [.thumbnail: 10_000, .preview: 350, .albumThumbnail: 200]

    /// The seed's entry counts, 96 MiB of memory, 1 GiB of disk.
    public static let `default` = MediaCacheLimits()

    func entries(_ kind: MediaKind) -> Int { entries[kind] ?? Self.seedEntries[kind]! }
}

/// Entries and bytes of one kind in each layer.
public struct MediaKindStatistics: Sendable, Equatable {
    /// Entries in memory.
    public var memoryEntries: Int
    /// Bytes in memory.
    public var memoryBytes: Int
    /// Entries on disk.
    public var diskEntries: Int
    /// Bytes on disk.
    public var diskBytes: Int
    /// Reads answered (memory or disk) by every process using the folder since it was made.
    public var hits: Int = 0
    /// Reads that found nothing to serve (absent, expired, damaged or foreign).
    public var misses: Int = 0
    /// Entries found expired (when read, or by eviction).
    public var expirations: Int = 0
}

/// What the cache holds, per kind, for a storage indicator.
public struct MediaCacheStatistics: Sendable, Equatable {
    /// Per kind.
    public var kinds: [MediaKind: MediaKindStatistics]
    /// Times the cache found its disk folder purged (by the OS) and started over.
    public var purgesNoticed: Int
    /// Disk bytes of every kind.
    public var diskBytes: Int { kinds.values.reduce(0) { $0 + $1.diskBytes } }
    /// Memory bytes of every kind.
    public var memoryBytes: Int { kinds.values.reduce(0) { $0 + $1.memoryBytes } }
}

/// Why a cache call failed.
public enum MediaCacheError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The key or data is not acceptable.
    case invalidInput(String)
    /// The folder cannot be created or written.
    /// `cause` keeps the system's error number or SQLite's result code underneath (nil when
    /// there was none), so a caller can tell a full disk from a refused permission.
    case storage(String, cause: StorageCause? = nil)
    /// The cache was closed (``MediaCache/close()``, or its container's `close()` or `reset()`).
    case closed

    /// The message, naming what was wrong.
    public var description: String {
        switch self {
        case .closed: return "the media cache was closed; open it again to use it"
        case .invalidInput(let m): return "invalid input: \(m)"
        case .storage(let m, _): return "media cache storage: \(m)"
        }
    }
}

extension MediaCacheError: LocalizedError {
    /// The same text as `description`: what went wrong and what to do (for
    /// `localizedDescription`, alerts and logs).
    public var errorDescription: String? { description }
}
