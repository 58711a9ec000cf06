// The disk layer sealed at rest: the cache key (kept in secure storage) and the keys derived from
// it, the file names that reveal nothing, the expiry queue, the hit/miss/expiry counters kept in
// the folder's lock file, crypto-shredding (`reset()`), and the Apple folder protections.

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

/// The keys one cache seals and names its files with, each derived (HKDF-SHA256) from the cache
/// key kept in secure storage.
final class CacheKeys: Sendable {
    /// XChaCha20-Poly1305 key of every file's contents.
    let seal: SecretKey
    /// HMAC-SHA256 of kind and id: the file names.
    let names: KeyedHash
    /// A keyed hash written in the anchor file, so a folder sealed under another key (a lost or
    /// shredded one, or a plaintext cache of an earlier release) is known at open and emptied.
    let anchorCheck: String
    /// Whether the key could not be kept in secure storage: then this session's files cannot be
    /// read after it, and the folder is not emptied for a mismatching anchor (the stored key may
    /// only be unavailable for now, e.g. before the first unlock).
    let ephemeral: Bool

    init(master: SecretKey, ephemeral: Bool) {
        seal = KeyDerivation.hkdf(from: master, info: "coffer.media-cache.seal.v1")
        names = KeyedHash(hkdfFrom: master, info: "coffer.media-cache.names.v1")
        let check = KeyedHash(hkdfFrom: master, info: "coffer.media-cache.anchor.v1").hash(byteCount: 16) { $0.add("anchor") }
        anchorCheck = check.map { String(format: "%02x", $0) }.joined()
        self.ephemeral = ephemeral
    }
}

/// Hits, misses and expirations per kind (indexed by ``MediaKind/index``).
struct CacheCounters: Equatable {
    var hits = [Int](repeating: 0, count: MediaKind.allCases.count)
    var misses = [Int](repeating: 0, count: MediaKind.allCases.count)
    var expirations = [Int](repeating: 0, count: MediaKind.allCases.count)

    var isZero: Bool { self == CacheCounters() }

    static func + (a: CacheCounters, b: CacheCounters) -> CacheCounters {
        var sum = a
        for i in 0..<MediaKind.allCases.count {
            sum.hits[i] += b.hits[i]
            sum.misses[i] += b.misses[i]
            sum.expirations[i] += b.expirations[i]
        }
        return sum
    }
}

/// The disk entries that expire, earliest first: a binary min-heap of (deadline, key,
/// generation). An entry replaced or removed meanwhile leaves a stale element, recognised by its
/// generation when it comes up, and dropped; the heap is rebuilt when stale elements dominate.
struct ExpiryQueue {
    struct Element {
        let deadline: UInt64
        let key: DiskKey
        let generation: UInt64
    }

    private(set) var elements: [Element] = []

    var count: Int { elements.count }
    /// The earliest deadline, if any entry expires.
    var earliest: UInt64? { elements.first?.deadline }

    mutating func push(_ element: Element) {
        elements.append(element)
        var child = elements.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard elements[child].deadline < elements[parent].deadline else { break }
            elements.swapAt(child, parent)
            child = parent
        }
    }

    mutating func popEarliest() -> Element? {
        guard !elements.isEmpty else { return nil }
        elements.swapAt(0, elements.count - 1)
        let earliest = elements.removeLast()
        var parent = 0
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var smallest = parent
            if left < elements.count, elements[left].deadline < elements[smallest].deadline { smallest = left }
            if right < elements.count, elements[right].deadline < elements[smallest].deadline { smallest = right }
            guard smallest != parent else { break }
            elements.swapAt(parent, smallest)
            parent = smallest
        }
        return earliest
    }

    mutating func removeAll() { elements.removeAll() }
}

extension MediaCache.State {
    /// Adds or replaces a disk entry; one that expires joins the expiry queue.
    mutating func insertDisk(_ key: DiskKey, deadline: UInt64, bytes: Int) {
        disk.insert(key, deadline, bytes: bytes)
        if deadline != 0, let generation = disk.generation(key) {
            expiries.push(.init(deadline: deadline, key: key, generation: generation))
        }
        if expiries.count > 2 * disk.count + 1_024 {
            // Mostly stale (entries replaced or removed): rebuild from the live entries.
            expiries.removeAll()
            for slot in disk.slots where slot.payload != nil && slot.payload! != 0 {
                expiries.push(.init(deadline: slot.payload!, key: slot.key, generation: slot.generation))
            }
        }
    }

    /// Forgets every disk entry and deadline.
    mutating func removeAllDisk() {
        disk.removeAll()
        expiries.removeAll()
    }
}

extension MediaCache {
    /// The name of the cache key's item in its secure storage.
    public static let keyItemName = "coffer.media-cache.key"

    /// Where a cache opened without a key store keeps its key: the Keychain (service
    /// `coffer.media-cache`) on Apple platforms, a sealed-file store in `folder/.coffer-cache-key`
    /// elsewhere.
    static func defaultKeyStorage(_ folder: URL) -> any SecureStorage {
        PlatformSecureStorage.make(
            folder: folder.appendingPathComponent(".coffer-cache-key", isDirectory: true), service: "coffer.media-cache")
    }

    /// The cache key from `storage`, made (and saved) on first use under the folder lock, so
    /// processes opening one folder together agree on one key. A key that cannot be read is
    /// replaced (its files become unreadable: misses); when storage is unavailable (a locked
    /// device) or refuses the new key, the cache runs this session under a key kept in memory only.
    static func loadKeys(_ storage: any SecureStorage, folder: URL) -> CacheKeys {
        if case .some(.some(let master)) = try? existingKey(storage) { return CacheKeys(master: master, ephemeral: false) }
        var lockFile = FolderLockFile()
        let locked = lockFile.acquire(folder)
        defer {
            if locked { lockFile.unlock() }
            lockFile.close()
        }
        do {
            if let master = try existingKey(storage) { return CacheKeys(master: master, ephemeral: false) }
        } catch SecureStorageError.unavailable(let reason) {
            logger.warning(
                "the media cache key is unavailable; this session's disk entries will not be readable after it",
                metadata: ["reason": "\(reason)"])
            return CacheKeys(master: .random(byteCount: 32), ephemeral: true)
        } catch {
            logger.warning("the media cache key cannot be read; a new key replaces it (the cached files become misses)")
        }
        let master = SecretKey.random(byteCount: 32)
        do {
            try storage.saveBlocking(master.exportBytes(), for: keyItemName, accessibility: .afterFirstUnlockThisDeviceOnly)
            return CacheKeys(master: master, ephemeral: false)
        } catch {
            logger.warning(
                "the media cache key cannot be saved; this session's disk entries will not be readable after it",
                metadata: ["reason": "\(error)"])
            return CacheKeys(master: master, ephemeral: true)
        }
    }

    private static func existingKey(_ storage: any SecureStorage) throws -> SecretKey? {
        guard let bytes = try storage.loadBlocking(keyItemName) else { return nil }
        return try SecretKey(copying: bytes, expectedCount: AEAD.keyByteCount)
    }

    /// The anchor file's contents for this cache's key.
    var anchorText: String { "coffer media cache 2 \(keys.anchorCheck)\n" }

    /// Whether the anchor file at `path` was written for this cache's key (any sealed cache's,
    /// when the key is ephemeral).
    func anchorMatches(_ path: String) -> Bool {
        let fd = open(path, O_RDONLY | O_NOFOLLOW)
        guard fd >= 0 else { return false }
        defer { closeDescriptor(fd) }
        var buffer = [UInt8](repeating: 0, count: 128)
        let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress!, $0.count) }
        guard n > 0 else { return false }
        let text = String(decoding: buffer[0..<n], as: UTF8.self)
        return keys.ephemeral ? text.hasPrefix("coffer media cache 2 ") : text == anchorText
    }

    /// The current time in milliseconds since 1970 (the injected clock's).
    func nowMillis() -> UInt64 {
        let seconds = now()
        return seconds > 0 ? UInt64(min(seconds, 1e13) * 1_000) : 0
    }

    /// The deadline of an entry stored now for `lifetime` seconds (0: it never expires).
    func deadline(after lifetime: TimeInterval?) -> UInt64 {
        guard let lifetime else { return 0 }
        return nowMillis() + UInt64(min(lifetime, 1e10) * 1_000)
    }

    /// The disk entry (file name) of `key`: a keyed hash of its kind and id.
    func diskKey(_ key: MediaKey) -> DiskKey { DiskKey(key, names: keys.names) }

    /// Lock held (`state` is the guarded state). Removes the disk entries whose deadline has
    /// passed; returns whether a file was removed.
    func removeExpired(_ state: inout State) -> Bool {
        guard let earliest = state.expiries.earliest else { return false }
        let now = nowMillis()
        guard earliest <= now else { return false }
        var removed = false
        while let next = state.expiries.earliest, next <= now, let element = state.expiries.popEarliest() {
            guard state.disk.generation(element.key) == element.generation else { continue } // replaced or gone
            state.disk.remove(element.key)
            // Counted only by the removal that took the file away: a read (in this or another
            // process) that found it expired first has counted it already.
            if unlink(fileURL(element.key).path) == 0 { state.counters.expirations[element.key.kind.index] += 1 }
            removed = true
        }
        if removed { state.mutations &+= 1 }
        return removed
    }

    // MARK: Counters, kept in the lock file after the change counter

    private static let countersOffset: off_t = 8
    private static var counterSlots: Int { 3 * MediaKind.allCases.count }

    /// Folder lock held. Adds this instance's counts to the folder's and returns the folder's totals.
    @discardableResult
    func flushCounters(_ lockFile: FolderLockFile) -> CacheCounters {
        let pending = state.withLock { state -> CacheCounters in
            defer { state.counters = CacheCounters() }
            return state.counters
        }
        guard lockFile.fd >= 0 else { return pending }
        var stored = [UInt64](repeating: 0, count: Self.counterSlots)
        let bytes = Self.counterSlots * 8
        let n = stored.withUnsafeMutableBytes { pread(lockFile.fd, $0.baseAddress!, bytes, Self.countersOffset) }
        if n != bytes { stored = [UInt64](repeating: 0, count: Self.counterSlots) }
        var totals = CacheCounters()
        for kind in 0..<MediaKind.allCases.count {
            totals.hits[kind] = Int(truncatingIfNeeded: UInt64(littleEndian: stored[kind * 3]))
            totals.misses[kind] = Int(truncatingIfNeeded: UInt64(littleEndian: stored[kind * 3 + 1]))
            totals.expirations[kind] = Int(truncatingIfNeeded: UInt64(littleEndian: stored[kind * 3 + 2]))
        }
        totals = totals + pending
        guard !pending.isZero else { return totals }
        for kind in 0..<MediaKind.allCases.count {
            stored[kind * 3] = UInt64(truncatingIfNeeded: totals.hits[kind]).littleEndian
            stored[kind * 3 + 1] = UInt64(truncatingIfNeeded: totals.misses[kind]).littleEndian
            stored[kind * 3 + 2] = UInt64(truncatingIfNeeded: totals.expirations[kind]).littleEndian
        }
        _ = stored.withUnsafeBytes { pwrite(lockFile.fd, $0.baseAddress!, bytes, Self.countersOffset) }
        return totals
    }

    // MARK: Crypto-shredding

    /// Logout: closes the cache, deletes its key from secure storage **first** — from then on
    /// whatever is still on disk cannot be read by anyone (crypto-shredding) — then removes the
    /// folder and its files. The memory layer is emptied; later stores throw
    /// ``MediaCacheError/closed``. Blocks the calling thread on disk I/O.
    /// - Throws: ``MediaCacheError/storage(_:cause:)`` when the key or a file cannot be removed (the
    ///   rest is removed all the same); retry, or remove the folder by hand.
    public func reset() throws(MediaCacheError) {
        fileLock.withLock { _ in
            state.withLock { state in
                state.isClosed = true
                state.memory.removeAll()
                state.removeAllDisk()
                state.counters = CacheCounters()
            }
        }
        var failures: [String] = []
        do { try keyStorage.deleteBlocking(Self.keyItemName) } catch { failures.append("cannot delete the media cache key: \(error)") }
        if FileManager.default.fileExists(atPath: folder.path) {
            do { try FileManager.default.removeItem(at: folder) } catch {
                failures.append("cannot remove \(folder.path): \(error.localizedDescription)")
            }
        }
        guard failures.isEmpty else { throw .storage(failures.joined(separator: "; ")) }
    }

    // MARK: Apple folder protections

    /// On iOS, tvOS, watchOS and visionOS: gives a new cache file the protection class
    /// `completeUntilFirstUserAuthentication` explicitly (besides what it inherits from its
    /// folder). Best effort: a failure is logged. Elsewhere it does nothing.
    static func protectFile(_ path: String) {
        #if os(iOS) || os(tvOS) || os(watchOS) || os(visionOS)
        do {
            try FileManager.default.setAttributes(
                [.protectionKey: FileProtectionType.completeUntilFirstUserAuthentication], ofItemAtPath: path)
        } catch {
            logger.warning("a media cache file's protection class could not be set", metadata: ["reason": "\(error)"])
        }
        #endif
    }

    /// On Apple platforms: keeps the folder out of backups (iCloud, Finder/iTunes) and, on iOS,
    /// tvOS, watchOS and visionOS, gives it the protection class `completeUntilFirstUserAuthentication`
    /// (files created in it inherit the class: unreadable until the first unlock after a boot,
    /// readable by a background task after it, as the cache key's Keychain item is). Best
    /// effort: a failure is logged. Elsewhere it does nothing.
    static func protectFolder(_ url: URL) {
        #if canImport(Darwin)
        var values = URLResourceValues()
        values.isExcludedFromBackup = true
        var target = url
        do { try target.setResourceValues(values) } catch {
            logger.warning("the media cache folder could not be excluded from backups", metadata: ["reason": "\(error)"])
        }
        #endif
        #if os(iOS) || os(tvOS) || os(watchOS) || os(visionOS)
        do {
            try FileManager.default.setAttributes(
                [.protectionKey: FileProtectionType.completeUntilFirstUserAuthentication], ofItemAtPath: url.path)
        } catch {
            logger.warning("the media cache folder's protection class could not be set", metadata: ["reason": "\(error)"])
        }
        #endif
    }
}
