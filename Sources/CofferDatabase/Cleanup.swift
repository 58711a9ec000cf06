// "Free up space": remove the device copies of assets the server already has, as the seed's four
// cleanup settings choose them. The device's media library deletes; the records follow only what
// it actually deleted.

import CofferSettings
import CofferSync
import Foundation
import GRDB

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#endif

/// Which local assets a cleanup may remove (the seed's `cleanup…` settings).
public struct CleanupOptions: Sendable, Equatable {
    /// Keep favourites.
    public var keepFavorites: Bool
    /// Keep every asset of this media type.
    public var keepMediaType: KeepMediaType
    /// Keep assets in these albums (album server ids, or local row ids as text).
    public var keepAlbumIds: [String]
    /// Only assets created at least this many days ago go; must be 0 or more.
    public var cutoffDaysAgo: Int

    /// Options given directly.
    public init(keepFavorites: Bool = true, keepMediaType: KeepMediaType = .none, keepAlbumIds: [String] = [], cutoffDaysAgo: Int) {
        self.keepFavorites = keepFavorites
        self.keepMediaType = keepMediaType
        self.keepAlbumIds = keepAlbumIds
        self.cutoffDaysAgo = cutoffDaysAgo
    }

    /// The options the settings store holds.
    public init(settings: Settings) {
        self.init(
            keepFavorites: settings.get(SettingsCatalog.cleanupKeepFavorites),
            keepMediaType: settings.get(SettingsCatalog.cleanupKeepMediaType),
            keepAlbumIds: settings.get(SettingsCatalog.cleanupKeepAlbumIds),
            cutoffDaysAgo: settings.get(SettingsCatalog.cleanupCutoffDaysAgo))
    }
}

/// One asset whose device copy a cleanup would remove.
public struct CleanupCandidate: Sendable, Hashable, Codable {
    /// The asset's row id.
    public var assetId: Int64
    /// The device id of the local copy (what the media library deletes).
    public var localId: String
    /// The server id of the copy that stays.
    public var remoteId: String
    /// The file name.
    public var fileName: String
    /// The local file's size in bytes (0 when unknown).
    public var bytes: Int64
    /// When the file was created.
    public var fileCreatedAt: Date
}

/// What a cleanup did (or, in a dry run, would do).
public struct CleanupResult: Sendable, Equatable {
    /// The assets whose device copies are gone (dry run: would go).
    public var removed: [CleanupCandidate]
    /// Candidates the media library did not delete (the user declined, or it refused the id);
    /// their records are unchanged.
    public var notDeleted: [CleanupCandidate]
    /// Candidates whose local copy the library found already gone (``LocalMediaLibrary/missing(localIds:)``:
    /// an earlier cleanup stopped between deleting and updating the records, or the user deleted
    /// it); their records forgot the local copy. Not counted in ``removed`` or ``bytes``.
    public var alreadyGone: [CleanupCandidate] = []
    /// Bytes freed (dry run: would be freed).
    public var bytes: Int64 { removed.reduce(0) { $0 + $1.bytes } }
}

/// The device's media library, which owns the local files. An app passes its platform's
/// (e.g. PhotoKit's deletion request); on a desktop, ``DirectoryMediaLibrary``.
public protocol LocalMediaLibrary: Sendable {
    /// Deletes the local assets and returns the ids it actually deleted.
    func delete(localIds: [String]) async throws -> Set<String>

    /// The ids among `localIds` whose local asset the library knows for sure no longer exists: a
    /// cleanup forgets their local copies without deleting anything, which repairs the records
    /// of a cleanup that was stopped after deleting and before updating them. Return only what
    /// is certainly gone (never an id of a library that could not be read). The default: none.
    func missing(localIds: [String]) async throws -> Set<String>
}

extension LocalMediaLibrary {
    /// No id is known to be gone: every candidate is asked to ``delete(localIds:)``.
    public func missing(localIds: [String]) async throws -> Set<String> { [] }
}

/// Local media as files in one folder, the local id being the path inside it.
public struct DirectoryMediaLibrary: LocalMediaLibrary {
    /// The folder.
    public let root: URL

    /// A library rooted at `root`.
    public init(root: URL) { self.root = root }

    /// Deletes the regular files the ids name inside the folder and returns the ids it deleted.
    /// An id is refused (not deleted, not returned) when it is empty, absolute, has an empty,
    /// `.` or `..` part, names something that is not a regular file (a folder, a link, a device),
    /// or passes through a symbolic link on its way: each part below ``root`` is opened without
    /// following links, so nothing outside the folder and no folder tree is ever removed. The
    /// folder itself may be a link.
    public func delete(localIds: [String]) async throws -> Set<String> {
        var deleted: Set<String> = []
        for id in localIds {
            let gone = withEntry(id) { entry -> Bool in
                guard case .file(let parent, let name) = entry else { return false }
                // Flags 0: unlinkat never removes a folder; a link swapped in for the file since
                // the look would itself be removed, never what it points to.
                return unlinkat(parent, name, 0) == 0
            }
            if gone { deleted.insert(id) }
        }
        return deleted
    }

    /// The ids whose path, inside a folder that exists and can be read, leads to nothing: the
    /// file (or a folder on its way) does not exist. An id that is refused, that leads to
    /// something (a file, a folder, a link), that passes through a link, or that leads into a
    /// folder that cannot be read is not missing; nor is any id when the folder itself is absent
    /// or unreadable (an unmounted disk).
    public func missing(localIds: [String]) async throws -> Set<String> {
        Set(
            localIds.filter { id in
                withEntry(id) { entry in
                    if case .absent = entry { return true }
                    return false
                }
            })
    }

    /// What an id leads to inside the folder, looked at without following symbolic links.
    enum Entry {
        /// A regular file: `name` in the open folder `parent` (valid only inside the call).
        case file(parent: Int32, name: String)
        /// Nothing at that path (a part of it does not exist) inside a folder that opened.
        case absent
        /// A refused id, a link, a folder or other non-file, or a folder that would not open.
        case refused
    }

    /// Calls `body` with what `id` leads to, walking down from ``root`` one part at a time
    /// (`O_NOFOLLOW`), so a symbolic link anywhere below the folder is refused.
    func withEntry<T>(_ id: String, _ body: (Entry) -> T) -> T {
        let parts = id.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        guard let last = parts.last, !id.hasPrefix("/"), !parts.contains(where: { $0.isEmpty || $0 == "." || $0 == ".." }) else {
            return body(.refused)
        }
        var folder = open(root.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard folder >= 0 else { return body(.refused) }
        for part in parts.dropLast() {
            let next = openat(folder, part, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            let failure = errno
            close(folder)
            guard next >= 0 else { return body(failure == ENOENT ? .absent : .refused) }
            folder = next
        }
        defer { close(folder) }
        var info = stat()
        guard fstatat(folder, last, &info, AT_SYMLINK_NOFOLLOW) == 0 else { return body(errno == ENOENT ? .absent : .refused) }
        guard info.st_mode & mode_t(S_IFMT) == mode_t(S_IFREG) else { return body(.refused) }
        return body(.file(parent: folder, name: last))
    }
}

/// Free-up-space over the assets collection.
public struct AssetCleanup: Sendable {
    let pool: DatabasePool

    /// Cleanup over a database.
    public init(database: AppDatabase) { pool = database.pool }

    /// The assets a cleanup with `options` would remove, oldest first: local assets with a server
    /// copy (not trashed, owned by the logged-in user when one is set), created on or before the
    /// cutoff, minus favourites, the kept media type and assets in kept albums. Blocks the calling
    /// thread while SQLite reads: from async code, `await` ``candidates(_:now:ownerId:)-3mq02``.
    /// - Throws: ``DatabaseStoreError/invalidInput(_:)`` when no cutoff is chosen (negative);
    ///   ``DatabaseStoreError/unreadableRow(_:)`` naming a chosen row whose values cannot be read
    ///   (a creation date outside the years 0001–9999, say).
    public func candidatesBlocking(_ options: CleanupOptions, now: Date = Date(), ownerId: String? = nil) throws -> [CleanupCandidate] {
        guard options.cutoffDaysAgo >= 0 else {
            throw DatabaseStoreError.invalidInput(
                "no cleanup cutoff chosen: cutoffDaysAgo is \(options.cutoffDaysAgo); give 0 or more days")
        }
        let cutoff = now.addingTimeInterval(-Double(options.cutoffDaysAgo) * 86_400)
        var sql = """
            SELECT id, localId, remoteId, fileName, COALESCE(fileSize, 0) AS bytes, fileCreatedAt FROM assets a
            WHERE localId IS NOT NULL AND remoteId IS NOT NULL AND isTrashed = 0 AND fileCreatedAt <= ?
            """
        var arguments: StatementArguments = [cutoff]
        if let ownerId {
            sql += " AND ownerId = ?"
            arguments += [OwnerId.normalized(ownerId)]
        }
        if options.keepFavorites { sql += " AND isFavorite = 0" }
        switch options.keepMediaType {
        case .none: break
        case .photos: sql += " AND type <> 'image'"
        case .videos: sql += " AND type <> 'video'"
        case .both: sql += " AND type NOT IN ('image', 'video')"
        }
        if !options.keepAlbumIds.isEmpty {
            let marks = Array(repeating: "?", count: options.keepAlbumIds.count).joined(separator: ",")
            sql += """
                 AND NOT EXISTS (SELECT 1 FROM album_assets x JOIN albums b ON b.id = x.albumId
                                 WHERE x.assetId = a.id AND (b.remoteId IN (\(marks)) OR CAST(b.id AS TEXT) IN (\(marks))))
                """
            arguments += StatementArguments(options.keepAlbumIds)
            arguments += StatementArguments(options.keepAlbumIds)
        }
        sql += " ORDER BY fileCreatedAt, id"
        let query = sql
        let queryArguments = arguments
        do {
            return try pool.read { db in
                try Row.fetchAll(db, sql: query, arguments: queryArguments).map(Self.candidate(from:))
            }
        } catch { throw DatabaseStoreError.from(error) }
    }

    /// A candidate from its row, every value checked (a subscript that cannot decode a value
    /// stops the process): a row written by another tool, or by an older `db put-asset` that
    /// took any finite time, may hold a date Coffer cannot read.
    static func candidate(from row: Row) throws -> CleanupCandidate {
        let id: Int64 = row["id"] // the INTEGER PRIMARY KEY: always an integer
        func value<Value: DatabaseValueConvertible>(_ column: String, _ type: Value.Type) throws -> Value {
            let stored: DatabaseValue = row[column]
            if let value = Value.fromDatabaseValue(stored) { return value }
            let remote = String.fromDatabaseValue(row["remoteId"]).map { " (remote id \($0))" } ?? ""
            throw DatabaseStoreError.unreadableRow(
                "assets row \(id)\(remote) has \(column) \(stored.description), which is not a \(Value.self) Coffer can read; "
                    + "nothing was deleted: set the asset again (put, or coffer db put-asset, with a date in the years "
                    + "0001 to 9999) or remove the row, then run the cleanup again")
        }
        return CleanupCandidate(
            assetId: id, localId: try value("localId", String.self), remoteId: try value("remoteId", String.self),
            fileName: try value("fileName", String.self), bytes: try value("bytes", Int64.self),
            fileCreatedAt: try value("fileCreatedAt", Date.self))
    }

    /// ``candidatesBlocking(_:now:ownerId:)`` off the caller's executor.
    /// - Throws: `CancellationError` when the task was cancelled before the call; else as the
    ///   blocking form.
    public func candidates(_ options: CleanupOptions, now: Date = Date(), ownerId: String? = nil) async throws -> [CleanupCandidate] {
        try await offCallerUnlessCancelled { try candidatesBlocking(options, now: now, ownerId: ownerId) }
    }

    /// The blocking form's old name, kept for one release: use `candidatesBlocking(_:now:ownerId:)`.
    @available(*, deprecated, renamed: "candidatesBlocking(_:now:ownerId:)")
    public func candidates(_ options: CleanupOptions, now: Date = Date(), ownerId: String? = nil) throws -> [CleanupCandidate] {
        try candidatesBlocking(options, now: now, ownerId: ownerId)
    }

    /// Runs a cleanup: asks `library` which candidates' local copies are already gone
    /// (``LocalMediaLibrary/missing(localIds:)``) and to delete the others, then, in one
    /// transaction, forgets the local copy (local id, file size, device hash rows) of exactly the
    /// assets it deleted or found gone. A cleanup stopped between the deletion and that
    /// transaction (a killed process) leaves records that still claim the deleted copies; the
    /// next run finds them gone and forgets them (``CleanupResult/alreadyGone``). With `dryRun`
    /// nothing is asked or deleted and `removed` lists the candidates.
    public func run(
        _ options: CleanupOptions, library: any LocalMediaLibrary, dryRun: Bool = false,
        now: Date = Date(), ownerId: String? = nil
    ) async throws -> CleanupResult {
        let chosen = try await candidates(options, now: now, ownerId: ownerId)
        if dryRun || chosen.isEmpty { return CleanupResult(removed: chosen, notDeleted: []) }
        let gone = try await library.missing(localIds: chosen.map(\.localId))
        let present = chosen.filter { !gone.contains($0.localId) }
        let deleted = present.isEmpty ? [] : try await library.delete(localIds: present.map(\.localId))
        TestPause.at("cleanup-deleted") // debug builds only: lets tests kill between the deletion and the records
        let removed = present.filter { deleted.contains($0.localId) }
        let kept = present.filter { !deleted.contains($0.localId) }
        let alreadyGone = chosen.filter { gone.contains($0.localId) }
        do {
            try await pool.write { db in
                for candidate in removed + alreadyGone {
                    try db.execute(
                        sql: "UPDATE assets SET localId = NULL, fileSize = NULL WHERE id = ? AND localId = ?",
                        arguments: [candidate.assetId, candidate.localId])
                    try db.execute(sql: "DELETE FROM ios_device_assets WHERE id = ?", arguments: [candidate.localId])
                    try db.execute(sql: "DELETE FROM android_device_assets WHERE id = ?", arguments: [candidate.localId])
                }
            }
        } catch { throw DatabaseStoreError.from(error) }
        return CleanupResult(removed: removed, notDeleted: kept, alreadyGone: alreadyGone)
    }
}
