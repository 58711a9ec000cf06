// The two-layer media cache: decoded-size bytes in memory over checksummed files on disk, with
// per-kind entry limits and per-layer byte limits that hold after every write. This file holds the
// cache itself (its state, opening and closing, the public reads and writes, eviction); the memory
// layer, the disk layer and the loader runs are in the `MediaCache+*.swift` files.

import CofferCrypto
import CofferSecureStorage
import CofferSync
import Foundation
import Logging

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A memory layer over a disk layer, for image bytes keyed by ``MediaKey``.
///
/// - Every write keeps both layers within their limits (entries per kind, bytes per layer),
///   evicting the least recently used first; the cost of a write does not grow with the entries.
/// - Every file is sealed (XChaCha20-Poly1305, a fresh nonce per file) under a key kept in secure
///   storage (the Keychain on Apple platforms, a sealed-file store elsewhere) and named by a keyed
///   hash of its kind and id, so neither the images nor the asset ids can be read from the folder.
///   Files are written to a temporary name and renamed; a torn, truncated, damaged or foreign file
///   fails its authentication, reads as a miss and is removed. ``reset()`` deletes the key first
///   (crypto-shredding), then the files.
/// - An entry may expire (a per-kind default, ``MediaCacheLimits/timeToLive``, or a per-entry
///   `ttl`): an expired entry is a miss, removed when read or by the next eviction.
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
public final class MediaCache: Sendable {
    /// The disk layer's folder.
    public let folder: URL
    /// The layers, the loader runs and the flags, behind one lock. Taken after `fileLock` when
    /// both are held, never the other way round.
    let state: Locked<State>
    /// Serialises this instance's use of the folder's lock file between threads (flock is per
    /// open file), and guards the open file and the change counter this instance's index matches.
    let fileLock: Locked<FolderLockFile>
    static let lockName = ".coffer-cache-lock"
    static let logger = Logger(label: "coffer.media-cache")
    static let anchorName = ".coffer-cache-anchor"
    /// The keys the disk layer is sealed and named with.
    let keys: CacheKeys
    /// Where the cache key is kept (``reset()`` deletes it there).
    let keyStorage: any SecureStorage
    /// Seconds since 1970 (injectable for tests of expiry).
    let now: @Sendable () -> Double

    /// What `state` guards.
    struct State {
        var limits: MediaCacheLimits
        var memory = LRUIndex<MediaKey, MemoryEntry>()
        /// Disk entries; the payload is the entry's deadline in milliseconds since 1970 (0: none).
        var disk = LRUIndex<DiskKey, UInt64>()
        /// The disk entries that expire, earliest first.
        var expiries = ExpiryQueue()
        /// Hits, misses and expirations not yet added to the folder's counters.
        var counters = CacheCounters()
        var inFlight: [MediaKey: Flight] = [:]
        /// The id of the latest caller to join a loader run.
        var nextWaiter: UInt64 = 0
        var invalidatedInFlight: Set<MediaKey> = []
        var purges = 0
        /// Set by ``MediaCache/close()``: nothing is served or stored after it.
        var isClosed = false
        /// Whether `disk` lists the folder. Until then a disk read goes to the file directly, and
        /// anything that evicts or counts first builds the index.
        var diskIndexed = false
        /// Bumped by every change to the entries, so a read made without the index can tell
        /// whether the entry changed while its file was read.
        var mutations: UInt64 = 0
        /// Folder scans so far, for tests: opening does none on the caller's thread.
        var scans = 0
    }

    /// Opens (or creates) the cache in `folder`. Opening reads no entry: the files already
    /// there are indexed on a background queue (a folder of 10,000 files takes about 100 ms to
    /// list), and until then ``data(for:)`` reads a file directly, so the first hit does not wait
    /// for the scan. A store, a removal, ``setLimits(_:)`` or ``statistics()`` that comes first
    /// builds the index itself before it evicts or counts, so the limits hold throughout.
    /// Blocks the calling thread for a few file-system calls (no listing).
    ///
    /// The cache key is read from `keyStorage` (made there on first use, as the item
    /// ``keyItemName``); without one, from the Keychain (service `coffer.media-cache`) on Apple
    /// platforms and a sealed-file store in `folder/.coffer-cache-key` elsewhere. A folder written
    /// under another key — or by an earlier release, in plaintext — is emptied when it opens.
    /// - Throws: ``MediaCacheError/storage(_:cause:)`` when the folder cannot be created.
    public convenience init(
        folder: URL, limits: MediaCacheLimits = .default, keyStorage: (any SecureStorage)? = nil
    ) throws(MediaCacheError) {
        try self.init(folder: folder, limits: limits, keyStorage: keyStorage, indexInBackground: true)
    }

    /// ``init(folder:limits:keyStorage:)``; `indexInBackground: false` leaves the index to the
    /// first call that needs it, and `clock` (seconds since 1970) replaces the system's (tests).
    package init(
        folder: URL, limits: MediaCacheLimits, keyStorage: (any SecureStorage)? = nil, indexInBackground: Bool,
        clock: (@Sendable () -> Double)? = nil
    ) throws(MediaCacheError) {
        self.folder = folder
        let checkedLimits = try Self.checked(limits)
        self.state = Locked(State(limits: checkedLimits))
        self.fileLock = Locked(FolderLockFile())
        try Self.ensureFolder(folder)
        let storage = keyStorage ?? Self.defaultKeyStorage(folder)
        self.keyStorage = storage
        self.keys = Self.loadKeys(storage, folder: folder)
        self.now = clock ?? { Date().timeIntervalSince1970 }
        // A folder this cache (or another process's) already prepared needs no lock: only its
        // modes are checked. A new or purged one is prepared under the folder lock.
        if !isPrepared() {
            try withFolderLock(sync: false) { (lockFile) throws(MediaCacheError) in
                try prepareFolder()
                if lockFile.fd >= 0 { lockFile.knownChanges = lockFile.readChanges() }
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
        let skip = fileLock.withLock { _ in state.withLock { $0.diskIndexed || $0.isClosed } }
        if skip { return }
        withFolderLock { lockFile in
            if state.withLock({ $0.isClosed }) { return }
            let evicted = state.withLock { enforceLimits(&$0) }
            if evicted { lockFile.noteChange() }
        }
    }

    /// Folder scans so far (tests: opening does none on the caller's thread).
    package var folderScans: Int { state.withLock { $0.scans } }

    deinit {
        fileLock.withLock { $0.close() }
    }

    /// Closes the cache: the memory layer is emptied, reads answer nil, and stores and loads
    /// throw ``MediaCacheError/closed``. The files stay for the next open. Idempotent.
    public func close() {
        // This instance's hits, misses and expirations join the folder's counters.
        if state.withLock({ !$0.isClosed && !$0.counters.isZero }) {
            withFolderLock(sync: false) { lockFile in _ = flushCounters(lockFile) }
        }
        // Under the folder's in-process lock: a background index build in progress finishes
        // first, and none starts after (a reset that follows finds the folder left alone).
        fileLock.withLock { _ in
            state.withLock { state in
                state.isClosed = true
                state.memory.removeAll()
            }
        }
    }

    var closed: Bool { state.withLock { $0.isClosed } }

    // MARK: Reads

    /// The cached bytes from memory, else from disk (then kept in memory), else nil (also once
    /// the cache is closed).
    /// Blocks the calling thread on disk I/O: from async code, `await` the plain-named async form.
    public func dataBlocking(for key: MediaKey) -> Data? {
        let inMemory = state.withLock { state -> (closed: Bool, data: Data?) in
            if state.isClosed { return (true, nil) }
            guard let hit = state.memory.touch(key) else { return (false, nil) }
            if hit.payload.deadline != 0, hit.payload.deadline <= nowMillis() {
                state.memory.remove(key) // expired: the disk read below counts and removes it
                return (false, nil)
            }
            _ = state.disk.touch(hit.payload.disk)
            state.counters.hits[key.kind.index] += 1
            return (false, hit.payload.data)
        }
        if inMemory.closed { return nil }
        if let data = inMemory.data { return data }
        let diskKey = self.diskKey(key)
        let onDisk = state.withLock { state -> DiskLookup in
            guard state.diskIndexed else { return .unindexed(mutationsBefore: state.mutations) }
            guard let seen = state.disk.touch(diskKey) else {
                state.counters.misses[key.kind.index] += 1
                return .absent
            }
            return .indexed(generation: seen.generation)
        }
        let generation: UInt64
        switch onDisk {
        case .unindexed(let before): return unindexedRead(key, diskKey, mutationsBefore: before)
        case .absent: return nil
        case .indexed(let seen): generation = seen
        }
        switch readFile(key, diskKey) {
        case .hit(let data, let deadline):
            state.withLock { state in
                state.counters.hits[key.kind.index] += 1
                // Keep it in memory unless it was removed or replaced while it was read.
                if state.disk.generation(diskKey) == generation {
                    state.insertMemory(key, diskKey, data, deadline: deadline)
                }
            }
            return data
        case .expired:
            state.withLock { state in
                state.counters.misses[key.kind.index] += 1
                if state.disk.generation(diskKey) == generation {
                    state.disk.remove(diskKey)
                    state.mutations &+= 1
                    // One expiration per file: counted by whichever removal took it away.
                    if unlink(fileURL(diskKey).path) == 0 { state.counters.expirations[key.kind.index] += 1 }
                }
            }
            return nil
        case .missing:
            state.withLock { state in
                state.counters.misses[key.kind.index] += 1
                if state.disk.generation(diskKey) == generation { state.disk.remove(diskKey) }
            }
            withFolderLock { _ in
                if !FileManager.default.fileExists(atPath: folder.appendingPathComponent(Self.anchorName).path) { noticePurge() }
            }
            return nil
        case .damaged:
            state.withLock { state in
                state.counters.misses[key.kind.index] += 1
                if state.disk.generation(diskKey) == generation {
                    state.disk.remove(diskKey)
                    unlink(fileURL(diskKey).path)
                }
            }
            Self.logger.warning("a damaged cache file read as a miss and was removed", metadata: ["key": "\(key)"])
            return nil
        }
    }

    /// Where a read that missed the memory layer goes next, as the index says.
    private enum DiskLookup {
        /// The index is not built yet: read the file (`mutations` was `mutationsBefore`).
        case unindexed(mutationsBefore: UInt64)
        /// The index has no such entry.
        case absent
        /// The index has the entry, at this generation.
        case indexed(generation: UInt64)
    }

    /// A disk read before the index is built: the file itself says whether it is there. A hit
    /// goes to the memory layer unless an entry changed meanwhile (the disk index learns of the
    /// file, and its recency from the file time this read sets, when it is built).
    private func unindexedRead(_ key: MediaKey, _ diskKey: DiskKey, mutationsBefore: UInt64) -> Data? {
        switch readFile(key, diskKey) {
        case .hit(let data, let deadline):
            state.withLock { state in
                state.counters.hits[key.kind.index] += 1
                if state.mutations == mutationsBefore { state.insertMemory(key, diskKey, data, deadline: deadline) }
            }
            return data
        case .missing:
            state.withLock { $0.counters.misses[key.kind.index] += 1 }
            return nil
        case .expired:
            state.withLock { state in
                state.counters.misses[key.kind.index] += 1
                // One expiration per file: counted by whichever removal took it away (the index,
                // built meanwhile, may hold the file too and remove it as expired later).
                if state.mutations == mutationsBefore, unlink(fileURL(diskKey).path) == 0 {
                    state.counters.expirations[key.kind.index] += 1
                }
            }
            return nil
        case .damaged:
            state.withLock { state in
                state.counters.misses[key.kind.index] += 1
                if state.mutations == mutationsBefore { unlink(fileURL(diskKey).path) }
            }
            Self.logger.warning("a damaged cache file read as a miss and was removed", metadata: ["key": "\(key)"])
            return nil
        }
    }

    // MARK: Writes

    /// Stores `data` in both layers, evicting least recently used entries to stay within limits.
    /// The entry expires after `ttl` seconds when given, else after its kind's
    /// ``MediaCacheLimits/timeToLive`` (never when the kind has none).
    /// - Throws: ``MediaCacheError/invalidInput(_:)`` for an empty id or data, data larger
    ///   than the disk layer's limit, or a `ttl` that is not a positive number of seconds;
    ///   ``MediaCacheError/storage(_:cause:)`` when the file cannot be written.
    /// Blocks the calling thread on disk I/O: from async code, `await` the plain-named async form.
    public func storeBlocking(_ data: Data, for key: MediaKey, ttl: TimeInterval? = nil) throws(MediaCacheError) {
        try Self.validate(key)
        if let ttl, !(ttl > 0 && ttl.isFinite) {
            throw .invalidInput("the time to live of \(key) is \(ttl); give a positive number of seconds")
        }
        if closed { throw .closed }
        guard !data.isEmpty else { throw .invalidInput("no bytes to cache for \(key)") }
        let (diskLimit, kindLifetime) = state.withLock { ($0.limits.diskBytes, $0.limits.timeToLive[key.kind]) }
        let deadline = deadline(after: ttl ?? kindLifetime)
        let file = encode(data, key: key, deadline: deadline)
        guard file.count <= diskLimit else {
            throw .invalidInput("\(key) is \(data.count) bytes, more than the disk layer's limit of \(diskLimit)")
        }
        let diskKey = self.diskKey(key)
        let final = fileURL(diskKey)
        // Write, rename and evict under the folder lock: another process neither sweeps the
        // temporary file nor evicts on an index that misses this entry.
        try withFolderLock { (lockFile) throws(MediaCacheError) in
            if !FileManager.default.fileExists(atPath: folder.appendingPathComponent(Self.anchorName).path) {
                noticePurge()
            }
            let temporary = try writeTemporary(file, beside: final)
            // The rename and the index update are one step under the lock; nil when renamed.
            let renameFailure = state.withLock { state -> (String, Int32)? in
                guard rename(temporary.path, final.path) == 0 else { return (String(cString: strerror(errno)), errno) }
                state.insertDisk(diskKey, deadline: deadline, bytes: file.count)
                state.insertMemory(key, diskKey, data, deadline: deadline)
                state.mutations &+= 1
                enforceLimits(&state)
                return nil
            }
            if let (reason, code) = renameFailure {
                unlink(temporary.path)
                throw .storage("cannot store \(final.path): \(reason)", cause: StorageCause(errno: code))
            }
            lockFile.noteChange()
        }
    }

    /// Removes one entry from both layers.
    /// Blocks the calling thread on disk I/O: from async code, `await` the plain-named async form.
    public func removeBlocking(_ key: MediaKey) {
        removeUnderFolderLock([key])
    }

    /// Removes an asset's thumbnail and preview (the asset was deleted or changed).
    /// Blocks the calling thread on disk I/O: from async code, `await` the plain-named async form.
    public func invalidateBlocking(assetId: String) {
        removeUnderFolderLock([.thumbnail(assetId), .preview(assetId)])
    }

    /// Removes an album's cover (the album changed).
    /// Blocks the calling thread on disk I/O: from async code, `await` the plain-named async form.
    public func invalidateBlocking(albumId: String) {
        removeUnderFolderLock([.albumThumbnail(albumId)])
    }

    func removeUnderFolderLock(_ keys: [MediaKey], markInFlight: Bool = true) {
        withFolderLock { lockFile in
            state.withLock { removeLocked(keys, markInFlight: markInFlight, in: &$0) }
            // Another process's copy of the file goes too (its index may know it, ours may not).
            for key in keys { unlink(fileURL(diskKey(key)).path) }
            lockFile.noteChange()
        }
    }

    /// Removes every entry of one kind, or of every kind.
    /// Blocks the calling thread on disk I/O: from async code, `await` the plain-named async form.
    public func clearBlocking(_ kind: MediaKind? = nil) {
        withFolderLock { lockFile in
            state.withLock { state in
                state.mutations &+= 1
                for key in state.memory.keys(kind) { state.memory.remove(key) }
                for key in state.disk.keys(kind) {
                    state.disk.remove(key)
                    unlink(fileURL(key).path)
                }
                for key in state.inFlight.keys where kind == nil || key.kind == kind { state.invalidatedInFlight.insert(key) }
            }
            // Files the index never knew (written by another process) go too.
            for k in kind.map({ [$0] }) ?? MediaKind.allCases {
                let dir = kindFolder(k)
                for name in (try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? [] {
                    unlink(dir.appendingPathComponent(name).path)
                }
            }
            lockFile.noteChange()
        }
    }

    /// Applies new limits, evicting at once what no longer fits.
    /// Blocks the calling thread on disk I/O: from async code, `await` the plain-named async form.
    /// - Throws: ``MediaCacheError/closed`` once the cache is closed.
    public func setLimitsBlocking(_ newLimits: MediaCacheLimits) throws(MediaCacheError) {
        let checked = try Self.checked(newLimits)
        if closed { throw .closed }
        withFolderLock { lockFile in
            let evicted = state.withLock { state in
                state.limits = checked
                return enforceLimits(&state)
            }
            if evicted { lockFile.noteChange() }
        }
    }

    /// The current limits.
    public var currentLimits: MediaCacheLimits {
        state.withLock { $0.limits }
    }

    /// Entries and bytes per kind in each layer (builds the disk index first if it is not yet),
    /// and the hits, misses and expirations of every process using the folder since it was made.
    /// Blocks the calling thread on disk I/O: from async code, `await` the plain-named async form.
    public func statisticsBlocking() -> MediaCacheStatistics {
        let counters = withFolderLock { lockFile in
            if state.withLock({ removeExpired(&$0) }) { lockFile.noteChange() }
            return flushCounters(lockFile)
        }
        return state.withLock { state in
            var kinds: [MediaKind: MediaKindStatistics] = [:]
            for kind in MediaKind.allCases {
                let i = kind.index
                kinds[kind] = MediaKindStatistics(
                    memoryEntries: state.memory.counts[i], memoryBytes: state.memory.kindBytes[i],
                    diskEntries: state.disk.counts[i], diskBytes: state.disk.kindBytes[i],
                    hits: counters.hits[i], misses: counters.misses[i], expirations: counters.expirations[i])
            }
            return MediaCacheStatistics(kinds: kinds, purgesNoticed: state.purges)
        }
    }

    /// Checks the anchor file now (e.g. when the app returns to the foreground); when the OS
    /// purged the folder, forgets the disk index and recreates the folder. Returns whether it had.
    /// Blocks the calling thread on disk I/O: from async code, `await` the plain-named async form.
    @discardableResult
    public func checkForPurgeBlocking() -> Bool {
        withFolderLock { _ in
            guard !FileManager.default.fileExists(atPath: folder.appendingPathComponent(Self.anchorName).path) else { return false }
            noticePurge()
            return true
        }
    }

    // MARK: - Internals (the callers that take `state` hold its lock)

    static func checked(_ limits: MediaCacheLimits) throws(MediaCacheError) -> MediaCacheLimits {
        for kind in MediaKind.allCases where limits.entries(kind) < 0 {
            throw .invalidInput("the entry limit of \(kind.rawValue) is negative")
        }
        guard limits.memoryBytes >= 0, limits.diskBytes >= 0 else { throw .invalidInput("a byte limit is negative") }
        for (kind, lifetime) in limits.timeToLive where !(lifetime > 0 && lifetime.isFinite) {
            throw .invalidInput("the time to live of \(kind.rawValue) is \(lifetime); give a positive number of seconds")
        }
        return limits
    }

    static func validate(_ key: MediaKey) throws(MediaCacheError) {
        guard !key.id.isEmpty else { throw .invalidInput("the \(key.kind.rawValue) id is empty") }
        guard key.id.utf8.count <= 1024 else { throw .invalidInput("the \(key.kind.rawValue) id is longer than 1024 bytes") }
    }

    /// Lock held (`state` is the guarded state).
    private func removeLocked(_ keys: [MediaKey], markInFlight: Bool, in state: inout State) {
        state.mutations &+= 1
        for key in keys {
            state.memory.remove(key)
            let diskKey = self.diskKey(key)
            if state.disk.remove(diskKey) != nil { unlink(fileURL(diskKey).path) }
            if markInFlight, state.inFlight[key] != nil { state.invalidatedInFlight.insert(key) }
        }
    }

    /// Lock held (`state` is the guarded state). Evicts until every limit holds; returns whether
    /// a file was removed. A file is unlinked under the lock, so a concurrent store of the same
    /// key cannot be lost.
    @discardableResult
    func enforceLimits(_ state: inout State) -> Bool {
        var removedFile = removeExpired(&state)
        for kind in MediaKind.allCases {
            let limit = state.limits.entries(kind)
            while state.memory.counts[kind.index] > limit, let key = state.memory.leastRecent(kind) { state.memory.remove(key) }
        }
        while state.memory.totalBytes > state.limits.memoryBytes, let key = state.memory.leastRecentOverall() {
            state.memory.remove(key)
        }
        for kind in MediaKind.allCases {
            let limit = state.limits.entries(kind)
            while state.disk.counts[kind.index] > limit, let key = state.disk.leastRecent(kind) {
                state.disk.remove(key)
                unlink(fileURL(key).path)
                removedFile = true
            }
        }
        while state.disk.totalBytes > state.limits.diskBytes, let key = state.disk.leastRecentOverall() {
            state.disk.remove(key)
            unlink(fileURL(key).path)
            removedFile = true
        }
        return removedFile
    }
}
