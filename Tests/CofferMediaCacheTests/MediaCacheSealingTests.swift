// The disk layer sealed at rest (no plaintext, names that reveal nothing, foreign and damaged files
// are misses, crypto-shredding) and expiry (per entry, per kind, lazily and by eviction), with an
// injected clock instead of sleeps.

import CofferMediaCache
import CofferSecureStorage
import CofferSync
import Foundation
import Testing

/// Every byte of every file under `folder`.
private func allBytes(under folder: URL) -> Data {
    var raw = Data()
    if let walker = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: nil) {
        for case let url as URL in walker { raw.append((try? Data(contentsOf: url)) ?? Data()) }
    }
    return raw
}

/// Every path under `folder`, relative.
private func allNames(under folder: URL) -> [String] {
    (FileManager.default.enumerator(atPath: folder.path)?.allObjects as? [String]) ?? []
}

/// A key store in a folder of its own (the real sealed-file store).
private func keyStore() -> EncryptedFileSecureStorage {
    EncryptedFileSecureStorage(folder: cacheFolder().appendingPathComponent("key-store", isDirectory: true))
}

/// A clock tests move by hand.
private final class TestClock: Sendable {
    let seconds = Locked<Double>(1_800_000_000)
    func advance(_ by: Double) { seconds.withLock { $0 += by } }
    var read: @Sendable () -> Double { { [seconds] in seconds.withLock { $0 } } }
}

/// A real key store that records, when the cache key is deleted, whether `watched` still existed.
private final class OrderRecordingStorage: SecureStorage, Sendable {
    let base: EncryptedFileSecureStorage
    let watched: Locked<URL?> = Locked(nil)
    let fileExistedAtKeyDeletion: Locked<Bool?> = Locked(nil)
    init(_ base: EncryptedFileSecureStorage) { self.base = base }
    func saveBlocking(_ data: Data, for name: String, accessibility: SecureAccessibility) throws(SecureStorageError) {
        try base.saveBlocking(data, for: name, accessibility: accessibility)
    }
    func loadBlocking(_ name: String) throws(SecureStorageError) -> Data? { try base.loadBlocking(name) }
    func deleteBlocking(_ name: String) throws(SecureStorageError) {
        let existed = watched.withLock { $0.map { FileManager.default.fileExists(atPath: $0.path) } }
        fileExistedAtKeyDeletion.withLock { $0 = existed }
        try base.deleteBlocking(name)
    }
    func namesBlocking() throws(SecureStorageError) -> [String] { try base.namesBlocking() }
    func deleteAllBlocking() throws(SecureStorageError) { try base.deleteAllBlocking() }
}

@Suite("Media cache: sealed at rest")
struct MediaCacheSealingTests {
    @Test("neither the image bytes nor the asset id can be found under the cache folder")
    func noPlaintext() throws {
        let folder = cacheFolder()
        let cache = try MediaCache(folder: folder, keyStorage: keyStore())
        let marker = Data("PLAINTEXT-MARKER-0123456789".utf8)
        try cache.storeBlocking(marker + bytes(1), for: .thumbnail("asset-id-marker-42"))
        try cache.storeBlocking(marker, for: .albumThumbnail("album-id-marker-7"))
        let raw = allBytes(under: folder)
        #expect(!raw.isEmpty)
        #expect(raw.range(of: marker) == nil)
        #expect(raw.range(of: Data("asset-id-marker-42".utf8)) == nil)
        #expect(!allNames(under: folder).contains { $0.contains("marker") })
        cache.clearMemory()
        #expect(cache.dataBlocking(for: .thumbnail("asset-id-marker-42")) == marker + bytes(1))
    }

    @Test("another entry's file put under an entry's name is a miss and is removed, never served")
    func foreignFile() throws {
        let folder = cacheFolder()
        let cache = try MediaCache(folder: folder, keyStorage: keyStore())
        try cache.storeBlocking(bytes(1), for: .thumbnail("a"))
        let fileA = try #require(files(folder, .thumbnail).first)
        try cache.storeBlocking(bytes(2), for: .thumbnail("b"))
        let fileB = try #require(files(folder, .thumbnail).first { $0 != fileA })
        try FileManager.default.removeItem(at: fileA)
        try FileManager.default.copyItem(at: fileB, to: fileA)
        cache.clearMemory()
        #expect(cache.dataBlocking(for: .thumbnail("a")) == nil)
        #expect(!FileManager.default.fileExists(atPath: fileA.path))
        #expect(cache.dataBlocking(for: .thumbnail("b")) == bytes(2))
    }

    @Test("a file sealed under another cache key is a miss and is removed")
    func otherKeysFile() throws {
        let folder = cacheFolder()
        let other = cacheFolder()
        let keys = keyStore()
        let cache = try MediaCache(folder: folder, keyStorage: keys)
        try cache.storeBlocking(bytes(1), for: .thumbnail("a"))
        let mine = try #require(files(folder, .thumbnail).first)
        let stranger = try MediaCache(folder: other, keyStorage: keyStore())
        try stranger.storeBlocking(bytes(9), for: .thumbnail("a"))
        let theirs = try #require(files(other, .thumbnail).first)
        try FileManager.default.removeItem(at: mine)
        try FileManager.default.copyItem(at: theirs, to: mine)
        cache.clearMemory()
        #expect(cache.dataBlocking(for: .thumbnail("a")) == nil)
        #expect(!FileManager.default.fileExists(atPath: mine.path))
    }

    @Test("a folder written under another key is emptied when the cache opens")
    func folderOfAnotherKey() throws {
        let folder = cacheFolder()
        let first = try MediaCache(folder: folder, keyStorage: keyStore())
        try first.storeBlocking(bytes(1), for: .thumbnail("a"))
        first.close()
        #expect(files(folder, .thumbnail).count == 1)
        let second = try MediaCache(folder: folder, keyStorage: keyStore())
        #expect(files(folder, .thumbnail).isEmpty)
        #expect(second.dataBlocking(for: .thumbnail("a")) == nil)
    }

    @Test("a plaintext cache of an earlier release is cleared when the cache opens")
    func earlierPlaintextCache() throws {
        let folder = cacheFolder()
        for kind in MediaKind.allCases {
            try FileManager.default.createDirectory(at: folder.appendingPathComponent(kind.rawValue), withIntermediateDirectories: true)
        }
        try Data("coffer media cache\n".utf8).write(to: folder.appendingPathComponent(".coffer-cache-anchor"))
        let old = folder.appendingPathComponent("thumbnail/0123456789abcdef0123456789abcdef")
        try (Data("CFMC".utf8) + Data("OLD-PLAINTEXT-IMAGE".utf8)).write(to: old)
        let cache = try MediaCache(folder: folder, keyStorage: keyStore())
        #expect(!FileManager.default.fileExists(atPath: old.path))
        #expect(allBytes(under: folder).range(of: Data("OLD-PLAINTEXT-IMAGE".utf8)) == nil)
        try cache.storeBlocking(bytes(3), for: .thumbnail("a"))
        cache.clearMemory()
        #expect(cache.dataBlocking(for: .thumbnail("a")) == bytes(3))
    }

    @Test("the cache key survives a reopen: entries written before are hits")
    func keyPersists() throws {
        let folder = cacheFolder()
        let keys = keyStore()
        let first = try MediaCache(folder: folder, keyStorage: keys)
        try first.storeBlocking(bytes(4), for: .preview("p"))
        first.close()
        let second = try MediaCache(folder: folder, keyStorage: keys)
        #expect(second.dataBlocking(for: .preview("p")) == bytes(4))
    }

    @Test("reset deletes the key first, then the files; leftover copies are unreadable")
    func resetShredsKeyFirst() throws {
        let folder = cacheFolder()
        let keys = OrderRecordingStorage(keyStore())
        let cache = try MediaCache(folder: folder, keyStorage: keys)
        try cache.storeBlocking(bytes(5), for: .thumbnail("a"))
        keys.watched.withLock { $0 = files(folder, .thumbnail).first }
        // A copy of the folder (a backup, an imaged disk) taken before the reset.
        let copy = cacheFolder()
        try FileManager.default.copyItem(at: folder, to: copy)
        try cache.reset()
        #expect(keys.fileExistedAtKeyDeletion.withLock { $0 } == true)
        #expect(try keys.loadBlocking(MediaCache.keyItemName) == nil)
        #expect(!FileManager.default.fileExists(atPath: folder.path))
        #expect(throws: MediaCacheError.closed) { try cache.storeBlocking(bytes(1), for: .thumbnail("b")) }
        // The copy with the same key store: the key is gone, so nothing in it opens.
        let copyFile = try #require(files(copy, .thumbnail).first)
        let sealed = try Data(contentsOf: copyFile)
        let reopened = try MediaCache(folder: copy, keyStorage: keys)
        #expect(reopened.dataBlocking(for: .thumbnail("a")) == nil)
        #expect(sealed.range(of: bytes(5)) == nil)
    }
}

@Suite("Media cache: expiry")
struct MediaCacheExpiryTests {
    @Test("an entry stored with a ttl is a hit before it and a miss after, and its file is removed")
    func perEntryTTL() throws {
        let folder = cacheFolder()
        let clock = TestClock()
        let cache = try MediaCache(folder: folder, limits: .default, keyStorage: keyStore(), indexInBackground: false, clock: clock.read)
        try cache.storeBlocking(bytes(1), for: .thumbnail("a"), ttl: 10)
        clock.advance(9)
        #expect(cache.memoryData(for: .thumbnail("a")) == bytes(1))
        cache.clearMemory()
        #expect(cache.dataBlocking(for: .thumbnail("a")) == bytes(1))
        clock.advance(2)
        #expect(cache.memoryData(for: .thumbnail("a")) == nil)
        #expect(cache.dataBlocking(for: .thumbnail("a")) == nil)
        #expect(files(folder, .thumbnail).isEmpty)
        let stats = cache.statisticsBlocking().kinds[.thumbnail]!
        #expect(stats.expirations == 1)
        #expect(stats.diskEntries == 0)
    }

    @Test("a kind's default time to live applies to entries stored without a ttl; other kinds keep theirs")
    func perKindDefault() throws {
        let clock = TestClock()
        let limits = MediaCacheLimits(timeToLive: [.preview: 60])
        let cache = try MediaCache(
            folder: cacheFolder(), limits: limits, keyStorage: keyStore(), indexInBackground: false, clock: clock.read)
        try cache.storeBlocking(bytes(1), for: .preview("p"))
        try cache.storeBlocking(bytes(2), for: .preview("q"), ttl: 3_600)
        try cache.storeBlocking(bytes(3), for: .thumbnail("t"))
        clock.advance(61)
        #expect(cache.dataBlocking(for: .preview("p")) == nil)
        #expect(cache.dataBlocking(for: .preview("q")) == bytes(2))
        #expect(cache.dataBlocking(for: .thumbnail("t")) == bytes(3))
    }

    @Test("expired entries are removed by the next eviction, unread")
    func removedByEviction() throws {
        let folder = cacheFolder()
        let clock = TestClock()
        let cache = try MediaCache(folder: folder, limits: .default, keyStorage: keyStore(), indexInBackground: false, clock: clock.read)
        for i in 0..<5 { try cache.storeBlocking(bytes(i), for: .thumbnail("short-\(i)"), ttl: 5) }
        try cache.storeBlocking(bytes(9), for: .thumbnail("long"))
        clock.advance(6)
        try cache.storeBlocking(bytes(10), for: .preview("new"))
        #expect(files(folder, .thumbnail).count == 1)
        let stats = cache.statisticsBlocking().kinds[.thumbnail]!
        #expect(stats.diskEntries == 1)
        #expect(stats.expirations == 5)
        #expect(cache.dataBlocking(for: .thumbnail("long")) == bytes(9))
    }

    @Test("a reopened cache knows the deadlines of the files it indexes")
    func deadlinesSurviveReopen() throws {
        let folder = cacheFolder()
        let clock = TestClock()
        let keys = keyStore()
        let first = try MediaCache(folder: folder, limits: .default, keyStorage: keys, indexInBackground: false, clock: clock.read)
        try first.storeBlocking(bytes(1), for: .thumbnail("a"), ttl: 5)
        first.close()
        clock.advance(6)
        let second = try MediaCache(folder: folder, limits: .default, keyStorage: keys, indexInBackground: false, clock: clock.read)
        #expect(second.statisticsBlocking().kinds[.thumbnail]?.diskEntries == 0)
        #expect(files(folder, .thumbnail).isEmpty)
    }

    @Test("a ttl that is not a positive number of seconds is refused")
    func badTTL() throws {
        let cache = try MediaCache(folder: cacheFolder(), keyStorage: keyStore())
        #expect(throws: MediaCacheError.self) { try cache.storeBlocking(bytes(1), for: .thumbnail("a"), ttl: 0) }
        #expect(throws: MediaCacheError.self) { try cache.storeBlocking(bytes(1), for: .thumbnail("a"), ttl: -.infinity) }
        #expect(throws: MediaCacheError.self) { try cache.setLimitsBlocking(MediaCacheLimits(timeToLive: [.preview: -1])) }
    }

    @Test("hits, misses and expirations per kind are counted and kept for other instances")
    func counters() throws {
        let folder = cacheFolder()
        let clock = TestClock()
        let keys = keyStore()
        let cache = try MediaCache(folder: folder, limits: .default, keyStorage: keys, indexInBackground: false, clock: clock.read)
        try cache.storeBlocking(bytes(1), for: .thumbnail("a"))
        try cache.storeBlocking(bytes(2), for: .preview("p"), ttl: 1)
        _ = cache.dataBlocking(for: .thumbnail("a"))
        _ = cache.dataBlocking(for: .thumbnail("missing"))
        clock.advance(2)
        _ = cache.dataBlocking(for: .preview("p"))
        cache.close()
        let later = try MediaCache(folder: folder, limits: .default, keyStorage: keys, indexInBackground: false, clock: clock.read)
        let stats = later.statisticsBlocking()
        #expect(stats.kinds[.thumbnail]?.hits == 1)
        #expect(stats.kinds[.thumbnail]?.misses == 1)
        #expect(stats.kinds[.preview]?.misses == 1)
        #expect(stats.kinds[.preview]?.expirations == 1)
        #expect(stats.kinds[.albumThumbnail]?.hits == 0)
    }
}
