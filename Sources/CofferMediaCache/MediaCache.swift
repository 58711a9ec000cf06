import CofferFileModes
// The two-layer media cache: decoded-size bytes in memory over checksummed files on disk, with
// per-kind entry limits and per-layer byte limits that hold after every write.
import Crypto
import Foundation
import Logging

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `close(2)`, named apart from ``MediaCache/close()``.
private func closeDescriptor(_ fd: Int32) {
    #if canImport(Glibc)
    _ = Glibc.close(fd)
    #else
    _ = Darwin.close(fd)
    #endif
}

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

    /// Limits; kinds missing from `entries` take the seed's defaults.
    public init(entries: [MediaKind: Int] = [:], memoryBytes: Int = 96 << 20, diskBytes: Int = 1 << 30) {
        var all = Self.seedEntries
        all.merge(entries) { _, new in new }
        self.entries = all
        self.memoryBytes = memoryBytes
        self.diskBytes = diskBytes
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
    case storage(String)
    /// The cache was closed (``MediaCache/close()``, or its container's `close()` or `reset()`).
    case closed

    /// The message, naming what was wrong.
    public var description: String {
        switch self {
        case .closed: return "the media cache was closed; open it again to use it"
        case .invalidInput(let m): return "invalid input: \(m)"
        case .storage(let m): return "media cache storage: \(m)"
        }
    }
}

/// A memory layer over a disk layer, for image bytes keyed by ``MediaKey``.
///
/// - Every write keeps both layers within their limits (entries per kind, bytes per layer),
///   evicting the least recently used first; the cost of a write does not grow with the entries.
/// - Files are written to a temporary name and renamed, and carry a SHA-256 of their content: a
///   torn, truncated or damaged file reads as a miss and is removed.
/// - The disk layer survives restarts (recency from file times) and notices when its folder was
///   purged (an anchor file vanishes) and starts over.
/// - ``data(for:orLoad:)`` runs the loader once for concurrent requests of one missing key.
/// - Many processes may share one folder: every change to the disk layer (store, eviction,
///   removal, clear) runs under an exclusive `flock(2)` on `folder/.coffer-cache-lock`, which
///   also holds a change counter; a process whose counter is behind re-reads the folder before it
///   evicts, so the limits hold across processes too.
/// - Files are mode 0600 and folders 0700 whatever the umask; the cache's own folders and anchor
///   found with a wider mode are restricted to their owner when the cache opens, its entries when
///   it indexes them (in the background after open, or at the first call that needs the index).
public final class MediaCache: @unchecked Sendable {
    /// The disk layer's folder.
    public let folder: URL
    private let lock = NSLock()
    private var limits: MediaCacheLimits
    private var memory = LRUIndex<MediaKey, MemoryEntry>()
    private var disk = LRUIndex<DiskKey, Void>()
    private var inFlight: [MediaKey: Flight] = [:]
    /// The id of the latest caller to join a loader run (lock held).
    private var nextWaiter: UInt64 = 0
    private var invalidatedInFlight: Set<MediaKey> = []
    private var purges = 0
    /// Set by ``close()`` (lock held): nothing is served or stored after it.
    private var isClosed = false
    /// Whether `disk` lists the folder (lock held). Until then a disk read goes to the file
    /// directly, and anything that evicts or counts first builds the index.
    private var diskIndexed = false
    /// Bumped (lock held) by every change to the entries, so a read made without the index can
    /// tell whether the entry changed while its file was read.
    private var mutations: UInt64 = 0
    /// Folder scans so far (lock held), for tests: opening does none on the caller's thread.
    private var scans = 0
    /// Serialises this instance's use of `lockFile` between threads (flock is per open file).
    private let fileLock = NSLock()
    /// The open lock file (guarded by `fileLock`); -1 when it could not be opened.
    private var lockFD: Int32 = -1
    /// The change counter this instance's disk index matches (guarded by `fileLock`).
    private var knownChanges: UInt64 = 0
    private static let lockName = ".coffer-cache-lock"
    private static let logger = Logger(label: "coffer.media-cache")
    private static let anchorName = ".coffer-cache-anchor"

    /// Opens (or creates) the cache in `folder`. Opening reads no entry: the files already
    /// there are indexed on a background queue (a folder of 10,000 files takes about 100 ms to
    /// list), and until then ``data(for:)`` reads a file directly, so the first hit does not wait
    /// for the scan. A store, a removal, ``setLimits(_:)`` or ``statistics()`` that comes first
    /// builds the index itself before it evicts or counts, so the limits hold throughout.
    /// - Throws: ``MediaCacheError/storage(_:)`` when the folder cannot be created.
    public convenience init(folder: URL, limits: MediaCacheLimits = .default) throws(MediaCacheError) {
        try self.init(folder: folder, limits: limits, indexInBackground: true)
    }

    /// ``init(folder:limits:)``; `indexInBackground: false` leaves the index to the first call
    /// that needs it (tests).
    package init(folder: URL, limits: MediaCacheLimits, indexInBackground: Bool) throws(MediaCacheError) {
        self.folder = folder
        self.limits = try Self.checked(limits)
        try Self.ensureFolder(folder)
        // A folder this cache (or another process's) already prepared needs no lock: only its
        // modes are checked. A new or purged one is prepared under the folder lock.
        if !isPrepared() {
            try withFolderLock(sync: false) { () throws(MediaCacheError) in
                try prepareFolder()
                if lockFD >= 0 { knownChanges = readChanges() }
            }
        }
        if indexInBackground {
            DispatchQueue.global(qos: .utility).async { [weak self] in self?.buildIndex() }
        }
    }

    /// Builds the index when no call has yet, then evicts what the limits no longer allow
    /// (files left over a lower limit, or written by another process).
    private func buildIndex() {
        // Nothing to do when a call has built the index already, or the cache closed: then the
        // folder is not touched at all (it may be being purged or reset meanwhile).
        let skip = fileLock.withLock { lock.withLock { diskIndexed || isClosed } }
        if skip { return }
        withFolderLock {
            if lock.withLock({ isClosed }) { return }
            lock.lock()
            let evicted = enforceLimits()
            lock.unlock()
            if evicted { noteChange() }
        }
    }

    /// Folder scans so far (tests: opening does none on the caller's thread).
    package var folderScans: Int { lock.withLock { scans } }

    deinit {
        if lockFD >= 0 { closeDescriptor(lockFD) }
    }

    /// Closes the cache: the memory layer is emptied, reads answer nil, and stores and loads
    /// throw ``MediaCacheError/closed``. The files stay for the next open. Idempotent.
    public func close() {
        // Under the folder's in-process lock: a background index build in progress finishes
        // first, and none starts after (a reset that follows finds the folder left alone).
        fileLock.lock()
        lock.lock()
        isClosed = true
        memory.removeAll()
        lock.unlock()
        fileLock.unlock()
    }

    private var closed: Bool { lock.withLock { isClosed } }

    // MARK: Reads

    /// The cached bytes from memory only (no disk access), marking them recently used in both
    /// layers (an image shown from memory is not the disk layer's next victim).
    public func memoryData(for key: MediaKey) -> Data? {
        lock.lock()
        defer { lock.unlock() }
        if isClosed { return nil }
        guard let hit = memory.touch(key) else { return nil }
        _ = disk.touch(hit.payload.disk)
        return hit.payload.data
    }

    /// The cached bytes from memory, else from disk (then kept in memory), else nil (also once
    /// the cache is closed).
    /// Blocks the calling thread on disk I/O: from the main actor, `await` the async form.
    public func data(for key: MediaKey) -> Data? {
        lock.lock()
        if isClosed {
            lock.unlock()
            return nil
        }
        if let hit = memory.touch(key) {
            _ = disk.touch(hit.payload.disk)
            lock.unlock()
            return hit.payload.data
        }
        lock.unlock()
        let diskKey = DiskKey(key)
        lock.lock()
        guard diskIndexed else {
            let before = mutations
            lock.unlock()
            return unindexedRead(key, diskKey, mutationsBefore: before)
        }
        guard let seen = disk.touch(diskKey) else {
            lock.unlock()
            return nil
        }
        lock.unlock()
        switch readFile(key, diskKey) {
        case .hit(let data):
            lock.lock()
            // Keep it in memory unless it was removed or replaced while it was read.
            if disk.generation(diskKey) == seen.generation {
                insertMemory(key, diskKey, data)
            }
            lock.unlock()
            return data
        case .missing:
            lock.lock()
            if disk.generation(diskKey) == seen.generation { disk.remove(diskKey) }
            lock.unlock()
            withFolderLock {
                if !FileManager.default.fileExists(atPath: folder.appendingPathComponent(Self.anchorName).path) { noticePurge() }
            }
            return nil
        case .damaged:
            lock.lock()
            if disk.generation(diskKey) == seen.generation {
                disk.remove(diskKey)
                unlink(fileURL(diskKey).path)
            }
            lock.unlock()
            Self.logger.warning("a damaged cache file read as a miss and was removed", metadata: ["key": "\(key)"])
            return nil
        }
    }

    /// A disk read before the index is built: the file itself says whether it is there. A hit
    /// goes to the memory layer unless an entry changed meanwhile (the disk index learns of the
    /// file, and its recency from the file time this read sets, when it is built).
    private func unindexedRead(_ key: MediaKey, _ diskKey: DiskKey, mutationsBefore: UInt64) -> Data? {
        switch readFile(key, diskKey) {
        case .hit(let data):
            lock.lock()
            if mutations == mutationsBefore { insertMemory(key, diskKey, data) }
            lock.unlock()
            return data
        case .missing:
            return nil
        case .damaged:
            lock.lock()
            if mutations == mutationsBefore { unlink(fileURL(diskKey).path) }
            lock.unlock()
            Self.logger.warning("a damaged cache file read as a miss and was removed", metadata: ["key": "\(key)"])
            return nil
        }
    }

    /// The cached bytes, or the loader's (then stored in both layers). Concurrent calls for one
    /// missing key share one run of the loader; a failed load stores nothing and is rethrown to
    /// every waiter. Loaded bytes that cannot be cached (empty, larger than the disk limit, disk
    /// full) are still returned, and the reason is logged.
    ///
    /// Cancellation: a caller whose task is cancelled gets `CancellationError` at once, whatever
    /// the loader is doing; when every caller waiting for a run has cancelled, the loader's task
    /// is cancelled and nothing it returns is cached (a later call loads afresh).
    public func data(for key: MediaKey, orLoad loader: @escaping @Sendable () async throws -> Data) async throws -> Data {
        try Self.validate(key)
        if closed { throw MediaCacheError.closed }
        try Task.checkCancellation()
        for attempt in 0... {
            // A memory hit answers at once. A caller that finds a run in flight joins it at once
            // (the run stores what it loads); otherwise the disk is read off the caller's executor.
            if let hit = memoryData(for: key) { return hit }
            if !lock.withLock({ inFlight[key] != nil }), let hit = await data(for: key) { return hit }
            let diskKey = DiskKey(key)
            let joined: (Flight, UInt64)? = lock.withLock {
                let flight: Flight
                if let running = inFlight[key] {
                    flight = running
                } else {
                    // A run that finished between the miss above and this lock has stored its
                    // result: read it rather than load again.
                    // (Bounded: an entry that keeps vanishing between index and file is loaded.)
                    if attempt < 3, memory.peek(key) != nil || disk.peek(diskKey) != nil { return nil }
                    flight = Flight()
                    inFlight[key] = flight
                    flight.task = Task { [self] in await run(flight, key, loader) }
                }
                nextWaiter &+= 1
                flight.active += 1
                return (flight, nextWaiter)
            }
            if let (flight, id) = joined { return try await wait(for: flight, key, id) }
        }
        fatalError("unreachable")
    }

    /// One run of a loader for one key and the callers waiting for it (every field guarded by
    /// the cache's `lock`).
    private final class Flight: @unchecked Sendable {
        var task: Task<Void, Never>?
        /// Callers waiting, by id.
        var waiters: [UInt64: CheckedContinuation<Data, any Error>] = [:]
        /// Callers cancelled before they started waiting.
        var cancelledEarly: Set<UInt64> = []
        /// Callers that joined and have neither been answered nor cancelled.
        var active = 0
        /// The loader's outcome, once it is known.
        var result: Result<Data, any Error>?
        /// Every caller cancelled: nothing this run loads is cached.
        var abandoned = false
    }

    private func run(_ flight: Flight, _ key: MediaKey, _ loader: @Sendable () async throws -> Data) async {
        let result: Result<Data, any Error>
        do { result = .success(try await loader()) } catch { result = .failure(error) }
        let keep = lock.withLock { !flight.abandoned && !invalidatedInFlight.contains(key) }
        if case .success(let data) = result, keep {
            // Stored while still in flight, so a request arriving meanwhile waits for this run
            // instead of starting another. The caller gets its image even when it cannot be
            // cached (disk full, too large).
            do { try await store(data, for: key) } catch {
                Self.logger.warning("a loaded image was not cached", metadata: ["key": "\(key)", "reason": "\(error)"])
            }
        }
        let (waiting, invalidatedDuringStore) = lock.withLock { () -> ([CheckedContinuation<Data, any Error>], Bool) in
            flight.result = result
            let waiting = Array(flight.waiters.values)
            flight.waiters.removeAll()
            flight.active = 0
            guard !flight.abandoned else { return (waiting, false) }
            if inFlight[key] === flight { inFlight[key] = nil }
            return (waiting, invalidatedInFlight.remove(key) != nil)
        }
        // Invalidated while it was being stored: what was stored is stale.
        if invalidatedDuringStore, keep, case .success = result { removeUnderFolderLock([key], markInFlight: false) }
        for waiter in waiting { waiter.resume(with: result) }
    }

    /// Waits for `flight` as caller `id`, returning at once with `CancellationError` when the
    /// caller's task is cancelled.
    private func wait(for flight: Flight, _ key: MediaKey, _ id: UInt64) async throws -> Data {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Data, any Error>) in
                lock.lock()
                if let result = flight.result {
                    lock.unlock()
                    continuation.resume(with: result)
                } else if flight.cancelledEarly.remove(id) != nil {
                    lock.unlock()
                    continuation.resume(throwing: CancellationError())
                } else {
                    flight.waiters[id] = continuation
                    lock.unlock()
                }
            }
        } onCancel: {
            lock.lock()
            guard flight.result == nil else {
                lock.unlock()
                return
            }
            let waiter = flight.waiters.removeValue(forKey: id)
            if waiter == nil { flight.cancelledEarly.insert(id) }
            flight.active -= 1
            var abandonedTask: Task<Void, Never>?
            if flight.active == 0 {
                // Nobody wants this run any more: stop it, cache nothing, and let a later call
                // start a new one.
                flight.abandoned = true
                if inFlight[key] === flight { inFlight[key] = nil }
                abandonedTask = flight.task
            }
            lock.unlock()
            waiter?.resume(throwing: CancellationError())
            abandonedTask?.cancel()
        }
    }

    // MARK: Writes

    /// Stores `data` in both layers, evicting least recently used entries to stay within limits.
    /// - Throws: ``MediaCacheError/invalidInput(_:)`` for an empty id or data, or data larger
    ///   than the disk layer's limit; ``MediaCacheError/storage(_:)`` when the file cannot be written.
    /// Blocks the calling thread on disk I/O: from the main actor, `await` the async form.
    public func store(_ data: Data, for key: MediaKey) throws(MediaCacheError) {
        try Self.validate(key)
        if closed { throw .closed }
        guard !data.isEmpty else { throw .invalidInput("no bytes to cache for \(key)") }
        let file = Self.encode(data, key: key)
        lock.lock()
        let diskLimit = limits.diskBytes
        lock.unlock()
        guard file.count <= diskLimit else {
            throw .invalidInput("\(key) is \(data.count) bytes, more than the disk layer's limit of \(diskLimit)")
        }
        let diskKey = DiskKey(key)
        let final = fileURL(diskKey)
        // Write, rename and evict under the folder lock: another process neither sweeps the
        // temporary file nor evicts on an index that misses this entry.
        try withFolderLock { () throws(MediaCacheError) in
            if !FileManager.default.fileExists(atPath: folder.appendingPathComponent(Self.anchorName).path) {
                noticePurge()
            }
            let temporary = try writeTemporary(file, beside: final)
            lock.lock()
            guard rename(temporary.path, final.path) == 0 else {
                let reason = String(cString: strerror(errno))
                lock.unlock()
                unlink(temporary.path)
                throw .storage("cannot store \(final.path): \(reason)")
            }
            disk.insert(diskKey, (), bytes: file.count)
            insertMemory(key, diskKey, data)
            mutations &+= 1
            enforceLimits()
            lock.unlock()
            noteChange()
        }
    }

    /// Removes one entry from both layers.
    /// Blocks the calling thread on disk I/O: from the main actor, `await` the async form.
    public func remove(_ key: MediaKey) {
        removeUnderFolderLock([key])
    }

    /// Removes an asset's thumbnail and preview (the asset was deleted or changed).
    /// Blocks the calling thread on disk I/O: from the main actor, `await` the async form.
    public func invalidate(assetId: String) {
        removeUnderFolderLock([.thumbnail(assetId), .preview(assetId)])
    }

    /// Removes an album's cover (the album changed).
    /// Blocks the calling thread on disk I/O: from the main actor, `await` the async form.
    public func invalidate(albumId: String) {
        removeUnderFolderLock([.albumThumbnail(albumId)])
    }

    private func removeUnderFolderLock(_ keys: [MediaKey], markInFlight: Bool = true) {
        withFolderLock {
            lock.lock()
            removeLocked(keys, markInFlight: markInFlight)
            lock.unlock()
            // Another process's copy of the file goes too (its index may know it, ours may not).
            for key in keys { unlink(fileURL(DiskKey(key)).path) }
            noteChange()
        }
    }

    /// Removes every entry of one kind, or of every kind.
    /// Blocks the calling thread on disk I/O: from the main actor, `await` the async form.
    public func clear(_ kind: MediaKind? = nil) {
        withFolderLock {
            lock.lock()
            mutations &+= 1
            for key in memory.keys(kind) { memory.remove(key) }
            for key in disk.keys(kind) {
                disk.remove(key)
                unlink(fileURL(key).path)
            }
            for key in inFlight.keys where kind == nil || key.kind == kind { invalidatedInFlight.insert(key) }
            lock.unlock()
            // Files the index never knew (written by another process) go too.
            for k in kind.map({ [$0] }) ?? MediaKind.allCases {
                let dir = kindFolder(k)
                for name in (try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? [] {
                    unlink(dir.appendingPathComponent(name).path)
                }
            }
            noteChange()
        }
    }

    /// Empties the memory layer (a memory warning); the disk layer keeps everything.
    public func clearMemory() {
        lock.lock()
        memory.removeAll()
        lock.unlock()
    }

    /// Applies new limits, evicting at once what no longer fits.
    /// Blocks the calling thread on disk I/O: from the main actor, `await` the async form.
    public func setLimits(_ newLimits: MediaCacheLimits) throws(MediaCacheError) {
        let checked = try Self.checked(newLimits)
        withFolderLock {
            lock.lock()
            limits = checked
            let evicted = enforceLimits()
            lock.unlock()
            if evicted { noteChange() }
        }
    }

    /// The current limits.
    public var currentLimits: MediaCacheLimits {
        lock.lock()
        defer { lock.unlock() }
        return limits
    }

    /// Entries and bytes per kind in each layer (builds the disk index first if it is not yet).
    /// Blocks the calling thread on disk I/O: from the main actor, `await` the async form.
    public func statistics() -> MediaCacheStatistics {
        withFolderLock {}
        lock.lock()
        defer { lock.unlock() }
        var kinds: [MediaKind: MediaKindStatistics] = [:]
        for kind in MediaKind.allCases {
            kinds[kind] = MediaKindStatistics(
                memoryEntries: memory.counts[kind.index], memoryBytes: memory.kindBytes[kind.index],
                diskEntries: disk.counts[kind.index], diskBytes: disk.kindBytes[kind.index])
        }
        return MediaCacheStatistics(kinds: kinds, purgesNoticed: purges)
    }

    /// Checks the anchor file now (e.g. when the app returns to the foreground); when the OS
    /// purged the folder, forgets the disk index and recreates the folder. Returns whether it had.
    /// Blocks the calling thread on disk I/O: from the main actor, `await` the async form.
    @discardableResult
    public func checkForPurge() -> Bool {
        withFolderLock {
            guard !FileManager.default.fileExists(atPath: folder.appendingPathComponent(Self.anchorName).path) else { return false }
            noticePurge()
            return true
        }
    }

    // MARK: - Internals (callers hold the lock where noted)

    private static func checked(_ limits: MediaCacheLimits) throws(MediaCacheError) -> MediaCacheLimits {
        for kind in MediaKind.allCases where limits.entries(kind) < 0 {
            throw .invalidInput("the entry limit of \(kind.rawValue) is negative")
        }
        guard limits.memoryBytes >= 0, limits.diskBytes >= 0 else { throw .invalidInput("a byte limit is negative") }
        return limits
    }

    private static func validate(_ key: MediaKey) throws(MediaCacheError) {
        guard !key.id.isEmpty else { throw .invalidInput("the \(key.kind.rawValue) id is empty") }
        guard key.id.utf8.count <= 1024 else { throw .invalidInput("the \(key.kind.rawValue) id is longer than 1024 bytes") }
    }

    /// Lock held.
    private func insertMemory(_ key: MediaKey, _ diskKey: DiskKey, _ data: Data) {
        guard data.count <= limits.memoryBytes, limits.entries(key.kind) > 0 else {
            memory.remove(key)
            return
        }
        memory.insert(key, MemoryEntry(data: data, disk: diskKey), bytes: data.count)
    }

    /// Lock held. Evicts until every limit holds; returns whether a file was removed. A file is
    /// unlinked under the lock, so a concurrent store of the same key cannot be lost.
    @discardableResult
    private func enforceLimits() -> Bool {
        var removedFile = false
        for kind in MediaKind.allCases {
            let limit = limits.entries(kind)
            while memory.counts[kind.index] > limit, let key = memory.leastRecent(kind) { memory.remove(key) }
        }
        while memory.totalBytes > limits.memoryBytes, let key = memory.leastRecentOverall() { memory.remove(key) }
        for kind in MediaKind.allCases {
            let limit = limits.entries(kind)
            while disk.counts[kind.index] > limit, let key = disk.leastRecent(kind) {
                disk.remove(key)
                unlink(fileURL(key).path)
                removedFile = true
            }
        }
        while disk.totalBytes > limits.diskBytes, let key = disk.leastRecentOverall() {
            disk.remove(key)
            unlink(fileURL(key).path)
            removedFile = true
        }
        return removedFile
    }

    // MARK: The folder lock (between processes)

    /// Runs `body` holding this instance's `fileLock` and an exclusive `flock(2)` on the folder's
    /// lock file; first brings the disk index up to date when another process changed the folder
    /// since this instance last looked. Without a lock file (it cannot be created) the body runs
    /// under `fileLock` alone, as a single-process cache.
    private func withFolderLock<R, E: Error>(sync: Bool = true, _ body: () throws(E) -> R) throws(E) -> R {
        fileLock.lock()
        defer { fileLock.unlock() }
        let locked = acquireFolderLock()
        defer { if locked { _ = flock(lockFD, LOCK_UN) } }
        if sync {
            let indexed = lock.withLock { diskIndexed }
            if locked {
                let changes = readChanges()
                if changes != knownChanges || !indexed {
                    // Not built yet, or another process stored, evicted or removed files: read
                    // the folder (names and times only) so eviction counts what is really there.
                    loadIndex()
                    knownChanges = changes
                }
            } else if !indexed {
                loadIndex()
            }
            if !indexed {
                // The first index of this instance: what a lower limit no longer allows goes now,
                // whichever call built it.
                lock.lock()
                let evicted = enforceLimits()
                lock.unlock()
                if evicted, locked { noteChange() }
            }
        }
        return try body()
    }

    /// `fileLock` held. Opens the lock file when needed and takes the flock; reopens it when the
    /// folder was purged or the file replaced (a lock on an unlinked file excludes nobody).
    private func acquireFolderLock() -> Bool {
        let path = folder.appendingPathComponent(Self.lockName).path
        for _ in 0..<3 {
            if lockFD < 0 {
                try? Self.ensureFolder(folder)
                let fd = open(path, O_RDWR | O_CREAT, 0o600)
                guard fd >= 0 else {
                    Self.logger.warning(
                        "the media cache lock file cannot be opened; other processes are not excluded",
                        metadata: ["path": "\(path)", "reason": "\(Self.errnoText())"])
                    return false
                }
                _ = fchmod(fd, 0o600)
                lockFD = fd
                knownChanges = .max // a new file: read the folder again
            }
            var result: Int32
            repeat { result = flock(lockFD, LOCK_EX) } while result != 0 && errno == EINTR
            guard result == 0 else { return false }
            var held = stat()
            var named = stat()
            if fstat(lockFD, &held) == 0, stat(path, &named) == 0, held.st_ino == named.st_ino, held.st_dev == named.st_dev {
                return true
            }
            _ = flock(lockFD, LOCK_UN)
            closeDescriptor(lockFD)
            lockFD = -1
        }
        return false
    }

    /// Folder lock held. The change counter kept in the lock file (0 when new).
    private func readChanges() -> UInt64 {
        var value: UInt64 = 0
        let n = withUnsafeMutableBytes(of: &value) { pread(lockFD, $0.baseAddress!, 8, 0) }
        return n == 8 ? UInt64(littleEndian: value) : 0
    }

    /// Folder lock held (a no-op without it). Records that this process changed the folder, so
    /// the others re-read it before they evict.
    private func noteChange() {
        guard lockFD >= 0 else { return }
        let next = readChanges() &+ 1
        var bytes = next.littleEndian
        if withUnsafeBytes(of: &bytes, { pwrite(lockFD, $0.baseAddress!, 8, 0) }) == 8 { knownChanges = next }
    }

    /// Lock held.
    private func removeLocked(_ keys: [MediaKey], markInFlight: Bool = true) {
        mutations &+= 1
        for key in keys {
            memory.remove(key)
            let diskKey = DiskKey(key)
            if disk.remove(diskKey) != nil { unlink(fileURL(diskKey).path) }
            if markInFlight, inFlight[key] != nil { invalidatedInFlight.insert(key) }
        }
    }

    /// Folder lock held.
    private func noticePurge() {
        lock.lock()
        disk.removeAll()
        diskIndexed = true // an empty folder, known to be empty
        mutations &+= 1
        purges += 1
        lock.unlock()
        Self.logger.notice("the media cache folder was purged; starting an empty disk layer", metadata: ["folder": "\(folder.path)"])
        try? prepareFolder()
    }

    private func kindFolder(_ kind: MediaKind) -> URL { folder.appendingPathComponent(kind.rawValue, isDirectory: true) }

    private func fileURL(_ key: DiskKey) -> URL {
        kindFolder(key.kind).appendingPathComponent(key.fileName)
    }

    /// Makes the folder, its kind folders and the anchor file, all owner-only whatever the
    /// umask: new folders 0700 (parents too), the anchor 0600; the cache's own folders and anchor
    /// that exist with a wider mode are restricted to their owner.
    private func prepareFolder() throws(MediaCacheError) {
        let anchor = folder.appendingPathComponent(Self.anchorName)
        let fm = FileManager.default
        let fresh = !fm.fileExists(atPath: anchor.path)
        for kind in MediaKind.allCases {
            let dir = kindFolder(kind)
            // Without the anchor, whatever is left is not ours to trust: start empty.
            if fresh, fm.fileExists(atPath: dir.path) {
                do { try fm.removeItem(at: dir) } catch {
                    throw .storage("cannot prepare \(folder.path): \(error.localizedDescription)")
                }
            }
            try Self.ensureFolder(dir)
        }
        for owned in [folder] + MediaKind.allCases.map(kindFolder) { Self.restrictToOwner(owned.path) }
        if fresh {
            let fd = open(anchor.path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
            guard fd >= 0 else { throw .storage("cannot prepare \(folder.path): cannot create \(anchor.path): \(Self.errnoText())") }
            defer { closeDescriptor(fd) }
            let text = Array("coffer media cache\n".utf8)
            guard fchmod(fd, 0o600) == 0, text.withUnsafeBytes({ write(fd, $0.baseAddress!, $0.count) }) == text.count else {
                throw .storage("cannot prepare \(folder.path): cannot write \(anchor.path): \(Self.errnoText())")
            }
        } else {
            Self.restrictToOwner(anchor.path)
        }
    }

    /// Whether the anchor and every kind folder exist (then restricted to their owner, as
    /// ``prepareFolder()`` would), so opening needs no lock and no change.
    private func isPrepared() -> Bool {
        let anchor = folder.appendingPathComponent(Self.anchorName).path
        var info = stat()
        guard stat(anchor, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return false }
        for kind in MediaKind.allCases {
            var dir = stat()
            guard stat(kindFolder(kind).path, &dir) == 0, (dir.st_mode & S_IFMT) == S_IFDIR else { return false }
        }
        for owned in [folder] + MediaKind.allCases.map(kindFolder) { Self.restrictToOwner(owned.path) }
        Self.restrictToOwner(anchor, mode: info.st_mode)
        return true
    }

    /// Creates `folder` and any missing parents, each new folder 0700 whatever the umask.
    private static func ensureFolder(_ folder: URL) throws(MediaCacheError) {
        do { try OwnerOnlyFiles.ensureFolder(folder) } catch { throw .storage(error.message) }
    }

    /// Takes group and other permissions away from one of the cache's own files or folders
    /// (0644 becomes 0600, 0755 becomes 0700); best effort, a failure is logged.
    private static func restrictToOwner(_ path: String) {
        do { try OwnerOnlyFiles.restrictToOwner(path) } catch {
            logger.warning("a cache file or folder stays readable by others", metadata: ["path": "\(path)", "reason": "\(error)"])
        }
    }

    /// ``restrictToOwner(_:)`` for a path whose mode was just read.
    private static func restrictToOwner(_ path: String, mode: mode_t) {
        do { try OwnerOnlyFiles.restrictToOwner(path, mode: mode) } catch {
            logger.warning("a cache file or folder stays readable by others", metadata: ["path": "\(path)", "reason": "\(error)"])
        }
    }

    private static func errnoText() -> String { String(cString: strerror(errno)) }

    /// Indexes the files on disk, oldest access first (so recency survives a restart). Only names
    /// and file times are read; contents are checked when an entry is read.
    private func loadIndex() {
        var found: [(key: DiskKey, bytes: Int, time: Double)] = []
        for kind in MediaKind.allCases {
            let dir = kindFolder(kind)
            for name in (try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? [] {
                let path = dir.appendingPathComponent(name).path
                var info = stat()
                guard let key = DiskKey(kind, fileName: name), stat(path, &info) == 0, info.st_size > Self.headerSize else {
                    unlink(path) // a temporary file of an interrupted write, or a stranger
                    continue
                }
                Self.restrictToOwner(path, mode: info.st_mode) // written by an older release under a wide umask
                #if canImport(Darwin)
                let time = Double(info.st_mtimespec.tv_sec) + Double(info.st_mtimespec.tv_nsec) / 1e9
                #else
                let time = Double(info.st_mtim.tv_sec) + Double(info.st_mtim.tv_nsec) / 1e9
                #endif
                found.append((key, Int(info.st_size), time))
            }
        }
        found.sort { $0.time < $1.time }
        lock.lock()
        disk.removeAll()
        for entry in found { disk.insert(entry.key, (), bytes: entry.bytes) }
        diskIndexed = true
        scans += 1
        lock.unlock()
    }

    // MARK: File format
    //
    // Little-endian: magic "CFMC" (4) · format 1 (1) · kind (1) · id length (2) · data length (8)
    // · SHA-256 of id ‖ data (32) · id · data.

    private static let headerSize = 48
    private static let magic: [UInt8] = Array("CFMC".utf8)

    private static func encode(_ data: Data, key: MediaKey) -> Data {
        let id = Data(key.id.utf8)
        var hasher = SHA256()
        hasher.update(data: id)
        hasher.update(data: data)
        let digest = hasher.finalize()
        var file = Data(capacity: headerSize + id.count + data.count)
        file.append(contentsOf: magic)
        file.append(1)
        file.append(UInt8(key.kind.index))
        withUnsafeBytes(of: UInt16(id.count).littleEndian) { file.append(contentsOf: $0) }
        withUnsafeBytes(of: UInt64(data.count).littleEndian) { file.append(contentsOf: $0) }
        file.append(contentsOf: digest)
        file.append(id)
        file.append(data)
        return file
    }

    private enum ReadResult {
        case hit(Data)
        case missing, damaged
    }

    private func readFile(_ key: MediaKey, _ diskKey: DiskKey) -> ReadResult {
        let fd = open(fileURL(diskKey).path, O_RDONLY)
        guard fd >= 0 else { return errno == ENOENT ? .missing : .damaged }
        defer { closeDescriptor(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { return .damaged }
        var header = [UInt8](repeating: 0, count: Self.headerSize)
        guard Self.readFully(fd, &header, offset: 0), Array(header[0..<4]) == Self.magic, header[4] == 1,
            header[5] == UInt8(key.kind.index)
        else { return .damaged }
        let idLength = Int(header[6]) | Int(header[7]) << 8
        var dataLength: UInt64 = 0
        for i in 0..<8 { dataLength |= UInt64(header[8 + i]) << (8 * UInt64(i)) }
        guard UInt64(info.st_size) == UInt64(Self.headerSize + idLength) + dataLength, dataLength > 0 else { return .damaged }
        var id = [UInt8](repeating: 0, count: idLength)
        guard Self.readFully(fd, &id, offset: Self.headerSize) else { return .damaged }
        guard id.elementsEqual(key.id.utf8) else { return .damaged } // another id under this name: not ours to serve
        var data = Data(count: Int(dataLength))
        let ok = data.withUnsafeMutableBytes { buffer in
            Self.readFully(fd, buffer, offset: Self.headerSize + idLength)
        }
        guard ok else { return .damaged }
        var hasher = SHA256()
        hasher.update(data: id)
        hasher.update(data: data)
        guard hasher.finalize().elementsEqual(header[16..<48]) else { return .damaged }
        _ = futimens(fd, nil) // recency that survives a restart
        return .hit(data)
    }

    private static func readFully(_ fd: Int32, _ bytes: inout [UInt8], offset: Int) -> Bool {
        bytes.withUnsafeMutableBytes { readFully(fd, $0, offset: offset) }
    }

    private static func readFully(_ fd: Int32, _ buffer: UnsafeMutableRawBufferPointer, offset: Int) -> Bool {
        var done = 0
        while done < buffer.count {
            let n = pread(fd, buffer.baseAddress! + done, buffer.count - done, off_t(offset + done))
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { return false }
            done += n
        }
        return true
    }

    private func writeTemporary(_ file: Data, beside final: URL) throws(MediaCacheError) -> URL {
        let temporary = final.deletingLastPathComponent().appendingPathComponent(".\(UUID().uuidString).tmp")
        var fd = open(temporary.path, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        if fd < 0, errno == ENOENT {
            noticePurge()
            fd = open(temporary.path, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        }
        guard fd >= 0 else { throw .storage("cannot create \(temporary.path): \(String(cString: strerror(errno)))") }
        defer { closeDescriptor(fd) }
        // open(2)'s mode passes through the umask; set it exactly.
        guard fchmod(fd, 0o600) == 0 else {
            let reason = Self.errnoText()
            unlink(temporary.path)
            throw .storage("cannot set the mode of \(temporary.path): \(reason)")
        }
        let written = file.withUnsafeBytes { raw -> Bool in
            var done = 0
            while done < raw.count {
                let n = write(fd, raw.baseAddress! + done, raw.count - done)
                if n < 0, errno == EINTR { continue }
                guard n > 0 else { return false }
                done += n
            }
            return true
        }
        guard written else {
            let reason = String(cString: strerror(errno))
            unlink(temporary.path)
            throw .storage("cannot write \(temporary.path): \(reason)")
        }
        return temporary
    }
}

/// A memory entry: the bytes and the disk entry they mirror (so a memory hit refreshes the disk
/// entry's recency without hashing the id).
struct MemoryEntry {
    let data: Data
    let disk: DiskKey
}

/// A disk entry: its kind and the first 128 bits of the SHA-256 of its id, which is also its file
/// name (hex), so the index is rebuilt from a directory listing alone.
struct DiskKey: CacheIndexKey {
    let kind: MediaKind
    let high: UInt64
    let low: UInt64

    init(_ key: MediaKey) {
        let digest = SHA256.hash(data: Data(key.id.utf8))
        var high: UInt64 = 0
        var low: UInt64 = 0
        for (i, byte) in digest.prefix(16).enumerated() {
            if i < 8 { high = high << 8 | UInt64(byte) } else { low = low << 8 | UInt64(byte) }
        }
        self.kind = key.kind
        self.high = high
        self.low = low
    }

    init?(_ kind: MediaKind, fileName: String) {
        guard fileName.utf8.count == 32, let high = UInt64(fileName.prefix(16), radix: 16),
            let low = UInt64(fileName.suffix(16), radix: 16)
        else { return nil }
        self.kind = kind
        self.high = high
        self.low = low
        guard self.fileName == fileName else { return nil } // only names this type writes
    }

    var fileName: String {
        let h = String(high, radix: 16)
        let l = String(low, radix: 16)
        return String(repeating: "0", count: 16 - h.count) + h + String(repeating: "0", count: 16 - l.count) + l
    }
}
