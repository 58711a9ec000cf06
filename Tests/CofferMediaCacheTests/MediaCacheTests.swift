import CofferMediaCache
import CofferTestSupport
import Foundation
import Testing

func cacheFolder() -> URL {
    let url = TemporaryFolders.path("coffer-cache")
    return url
}

func bytes(_ seed: Int, count: Int = 1_000) -> Data {
    Data((0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ seed) })
}

/// The cache files of a kind on disk.
func files(_ folder: URL, _ kind: MediaKind) -> [URL] {
    let dir = folder.appendingPathComponent(kind.rawValue)
    return ((try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []).map { dir.appendingPathComponent($0) }
}

actor Counter {
    var value = 0
    func increment() { value += 1 }
}

@Suite("Media cache: layers")
struct MediaCacheLayerTests {
    @Test("a stored image comes back from memory")
    func memoryHit() throws {
        let cache = try MediaCache(folder: cacheFolder())
        try cache.storeBlocking(bytes(1), for: .thumbnail("a1"))
        #expect(cache.memoryData(for: .thumbnail("a1")) == bytes(1))
    }

    @Test("after a memory purge the image comes back from disk")
    func diskHit() throws {
        let cache = try MediaCache(folder: cacheFolder())
        try cache.storeBlocking(bytes(2), for: .preview("a1"))
        cache.clearMemory()
        #expect(cache.memoryData(for: .preview("a1")) == nil)
        #expect(cache.dataBlocking(for: .preview("a1")) == bytes(2))
        #expect(cache.memoryData(for: .preview("a1")) == bytes(2))
    }

    @Test("the disk layer survives a restart")
    func restart() throws {
        let folder = cacheFolder()
        do {
            let cache = try MediaCache(folder: folder)
            try cache.storeBlocking(bytes(3), for: .albumThumbnail("album-1"))
        }
        let reopened = try MediaCache(folder: folder)
        #expect(reopened.dataBlocking(for: .albumThumbnail("album-1")) == bytes(3))
        #expect(reopened.statisticsBlocking().kinds[.albumThumbnail]?.diskEntries == 1)
    }

    @Test("a miss is nil, and the same id of another kind is another entry")
    func kindsAreSeparate() throws {
        let cache = try MediaCache(folder: cacheFolder())
        try cache.storeBlocking(bytes(4), for: .thumbnail("x"))
        #expect(cache.dataBlocking(for: .preview("x")) == nil)
        #expect(cache.dataBlocking(for: .thumbnail("y")) == nil)
    }

    @Test("an empty id or empty data is refused by name")
    func badInput() throws {
        let cache = try MediaCache(folder: cacheFolder())
        #expect(throws: MediaCacheError.invalidInput("the thumbnail id is empty")) {
            try cache.storeBlocking(bytes(1), for: .thumbnail(""))
        }
        #expect(throws: MediaCacheError.invalidInput("no bytes to cache for preview/p")) {
            try cache.storeBlocking(Data(), for: .preview("p"))
        }
    }

    @Test("an image larger than the disk layer's limit is refused")
    func tooLarge() throws {
        let cache = try MediaCache(folder: cacheFolder(), limits: MediaCacheLimits(diskBytes: 10_000))
        #expect(throws: MediaCacheError.self) { try cache.storeBlocking(bytes(1, count: 20_000), for: .preview("big")) }
        #expect(cache.statisticsBlocking().diskBytes == 0)
    }
}

@Suite("Media cache: limits and eviction")
struct MediaCacheLimitTests {
    @Test("a kind's entry limit holds after every write, oldest out first")
    func entryLimit() throws {
        let cache = try MediaCache(folder: cacheFolder(), limits: MediaCacheLimits(entries: [.thumbnail: 5]))
        for i in 0..<20 {
            try cache.storeBlocking(bytes(i), for: .thumbnail("a\(i)"))
            let stats = cache.statisticsBlocking().kinds[.thumbnail]!
            #expect(stats.diskEntries == min(i + 1, 5))
            #expect(stats.memoryEntries == min(i + 1, 5))
        }
        #expect(cache.dataBlocking(for: .thumbnail("a14")) == nil)
        #expect(cache.dataBlocking(for: .thumbnail("a15")) == bytes(15))
    }

    @Test("evicted entries leave no file behind")
    func evictionRemovesFiles() throws {
        let folder = cacheFolder()
        let cache = try MediaCache(folder: folder, limits: MediaCacheLimits(entries: [.thumbnail: 3]))
        for i in 0..<10 { try cache.storeBlocking(bytes(i), for: .thumbnail("a\(i)")) }
        #expect(files(folder, .thumbnail).count == 3)
    }

    @Test("a recently read entry outlives older unread ones")
    func leastRecentlyUsedGoesFirst() throws {
        let cache = try MediaCache(folder: cacheFolder(), limits: MediaCacheLimits(entries: [.preview: 3]))
        for i in 0..<3 { try cache.storeBlocking(bytes(i), for: .preview("a\(i)")) }
        _ = cache.dataBlocking(for: .preview("a0"))
        try cache.storeBlocking(bytes(3), for: .preview("a3"))
        #expect(cache.dataBlocking(for: .preview("a0")) != nil)
        #expect(cache.dataBlocking(for: .preview("a1")) == nil)
    }

    @Test("the disk layer's byte limit holds after every write")
    func diskByteLimit() throws {
        let cache = try MediaCache(folder: cacheFolder(), limits: MediaCacheLimits(diskBytes: 10_000))
        for i in 0..<40 {
            try cache.storeBlocking(bytes(i, count: 1_500), for: .thumbnail("a\(i)"))
            #expect(cache.statisticsBlocking().diskBytes <= 10_000)
        }
        #expect(cache.dataBlocking(for: .thumbnail("a39")) == bytes(39, count: 1_500))
    }

    @Test("the memory layer's byte limit holds while the disk keeps more")
    func memoryByteLimit() throws {
        let cache = try MediaCache(folder: cacheFolder(), limits: MediaCacheLimits(memoryBytes: 5_000))
        for i in 0..<20 { try cache.storeBlocking(bytes(i), for: .thumbnail("a\(i)")) }
        let stats = cache.statisticsBlocking()
        #expect(stats.memoryBytes <= 5_000)
        #expect(stats.kinds[.thumbnail]?.diskEntries == 20)
    }

    @Test("filling one kind never evicts another kind")
    func kindsDoNotEvictEachOther() throws {
        let cache = try MediaCache(folder: cacheFolder(), limits: MediaCacheLimits(entries: [.thumbnail: 4, .albumThumbnail: 2]))
        try cache.storeBlocking(bytes(1), for: .albumThumbnail("album"))
        for i in 0..<50 { try cache.storeBlocking(bytes(i), for: .thumbnail("a\(i)")) }
        #expect(cache.dataBlocking(for: .albumThumbnail("album")) == bytes(1))
    }

    @Test("lower limits apply at once")
    func setLimits() throws {
        let cache = try MediaCache(folder: cacheFolder())
        for i in 0..<10 { try cache.storeBlocking(bytes(i), for: .thumbnail("a\(i)")) }
        try cache.setLimitsBlocking(MediaCacheLimits(entries: [.thumbnail: 2]))
        #expect(cache.statisticsBlocking().kinds[.thumbnail]?.diskEntries == 2)
        #expect(cache.dataBlocking(for: .thumbnail("a9")) != nil)
    }

    @Test("recency survives a restart: what was read last before it is kept")
    func recencyAfterRestart() throws {
        let folder = cacheFolder()
        do {
            let cache = try MediaCache(folder: folder)
            for i in 0..<3 {
                try cache.storeBlocking(bytes(i), for: .preview("a\(i)"))
                usleep(20_000)
            }
            cache.clearMemory()
            _ = cache.dataBlocking(for: .preview("a0")) // a disk read marks the file
        }
        let reopened = try MediaCache(folder: folder, limits: MediaCacheLimits(entries: [.preview: 3]))
        try reopened.storeBlocking(bytes(3), for: .preview("a3"))
        #expect(reopened.dataBlocking(for: .preview("a0")) != nil)
        #expect(reopened.dataBlocking(for: .preview("a1")) == nil)
    }
}

@Suite("Media cache: damage, purge, invalidation")
struct MediaCacheDamageTests {
    @Test("a file with a flipped byte reads as a miss and is removed")
    func damagedFile() throws {
        let folder = cacheFolder()
        let cache = try MediaCache(folder: folder)
        try cache.storeBlocking(bytes(5), for: .thumbnail("a"))
        cache.clearMemory()
        let file = try #require(files(folder, .thumbnail).first)
        var raw = try Data(contentsOf: file)
        raw[raw.count - 10] ^= 0xff
        try raw.write(to: file)
        #expect(cache.dataBlocking(for: .thumbnail("a")) == nil)
        #expect(!FileManager.default.fileExists(atPath: file.path))
        #expect(cache.statisticsBlocking().kinds[.thumbnail]?.diskEntries == 0)
    }

    @Test("a truncated file (a torn write) reads as a miss")
    func truncatedFile() throws {
        let folder = cacheFolder()
        let cache = try MediaCache(folder: folder)
        try cache.storeBlocking(bytes(6), for: .preview("a"))
        cache.clearMemory()
        let file = try #require(files(folder, .preview).first)
        try Data(try Data(contentsOf: file).prefix(60)).write(to: file)
        #expect(cache.dataBlocking(for: .preview("a")) == nil)
    }

    @Test("leftover temporary files of an interrupted write are removed when the reopened cache builds its index")
    func leftoversRemoved() throws {
        let folder = cacheFolder()
        _ = try MediaCache(folder: folder)
        let stray = folder.appendingPathComponent("thumbnail/.0000.tmp")
        try Data([1, 2, 3]).write(to: stray)
        let reopened = try MediaCache(folder: folder)
        _ = reopened.statisticsBlocking() // builds the index now, if the background has not yet
        #expect(!FileManager.default.fileExists(atPath: stray.path))
    }

    @Test("a folder purged by the OS is noticed: misses, then writes work again")
    func purged() throws {
        let folder = cacheFolder()
        // No background index build: it could recreate the folder while this test removes it.
        let cache = try MediaCache(folder: folder, limits: .default, indexInBackground: false)
        try cache.storeBlocking(bytes(7), for: .thumbnail("a"))
        cache.clearMemory()
        try FileManager.default.removeItem(at: folder)
        #expect(cache.dataBlocking(for: .thumbnail("a")) == nil)
        #expect(cache.statisticsBlocking().purgesNoticed == 1)
        #expect(cache.statisticsBlocking().kinds[.thumbnail]?.diskEntries == 0)
        try cache.storeBlocking(bytes(8), for: .thumbnail("b"))
        cache.clearMemory()
        #expect(cache.dataBlocking(for: .thumbnail("b")) == bytes(8))
    }

    @Test("invalidating an asset removes its thumbnail and preview only")
    func invalidateAsset() throws {
        let cache = try MediaCache(folder: cacheFolder())
        try cache.storeBlocking(bytes(1), for: .thumbnail("a"))
        try cache.storeBlocking(bytes(2), for: .preview("a"))
        try cache.storeBlocking(bytes(3), for: .thumbnail("b"))
        try cache.storeBlocking(bytes(4), for: .albumThumbnail("a"))
        cache.invalidateBlocking(assetId: "a")
        #expect(cache.dataBlocking(for: .thumbnail("a")) == nil)
        #expect(cache.dataBlocking(for: .preview("a")) == nil)
        #expect(cache.dataBlocking(for: .thumbnail("b")) == bytes(3))
        #expect(cache.dataBlocking(for: .albumThumbnail("a")) == bytes(4))
    }

    @Test("invalidating an album removes its cover")
    func invalidateAlbum() throws {
        let cache = try MediaCache(folder: cacheFolder())
        try cache.storeBlocking(bytes(1), for: .albumThumbnail("album"))
        try cache.storeBlocking(bytes(2), for: .thumbnail("album"))
        cache.invalidateBlocking(albumId: "album")
        #expect(cache.dataBlocking(for: .albumThumbnail("album")) == nil)
        #expect(cache.dataBlocking(for: .thumbnail("album")) == bytes(2))
    }

    @Test("clearing one kind leaves the others; clearing all leaves no file")
    func clearing() throws {
        let folder = cacheFolder()
        let cache = try MediaCache(folder: folder)
        try cache.storeBlocking(bytes(1), for: .thumbnail("a"))
        try cache.storeBlocking(bytes(2), for: .preview("a"))
        cache.clearBlocking(.thumbnail)
        #expect(cache.dataBlocking(for: .thumbnail("a")) == nil)
        #expect(cache.dataBlocking(for: .preview("a")) == bytes(2))
        cache.clearBlocking()
        #expect(MediaKind.allCases.allSatisfy { files(folder, $0).isEmpty })
        #expect(cache.statisticsBlocking().diskBytes == 0)
    }

    @Test("statistics count entries and bytes per kind")
    func statistics() throws {
        let cache = try MediaCache(folder: cacheFolder())
        try cache.storeBlocking(bytes(1, count: 100), for: .thumbnail("a"))
        try cache.storeBlocking(bytes(2, count: 300), for: .thumbnail("b"))
        let thumbs = try #require(cache.statisticsBlocking().kinds[.thumbnail])
        #expect(thumbs.memoryEntries == 2)
        #expect(thumbs.memoryBytes == 400)
        #expect(thumbs.diskEntries == 2)
        #expect(thumbs.diskBytes > 400)
    }
}

@Suite("Media cache: concurrency")
struct MediaCacheConcurrencyTests {
    @Test("concurrent stores, reads and invalidations keep the limit, and index and files agree")
    func concurrentWriters() async throws {
        let folder = cacheFolder()
        let cache = try MediaCache(folder: folder, limits: MediaCacheLimits(entries: [.thumbnail: 50]))
        await withTaskGroup(of: Void.self) { group in
            for worker in 0..<8 {
                group.addTask {
                    for i in 0..<150 {
                        let id = "a\((i * 7 + worker) % 120)"
                        try? cache.storeBlocking(bytes(i, count: 200 + worker), for: .thumbnail(id))
                        _ = cache.dataBlocking(for: .thumbnail("a\(i % 120)"))
                        if i % 25 == 0 { cache.invalidateBlocking(assetId: "a\(i % 120)") }
                    }
                }
            }
        }
        let entries = try await #require(cache.statistics().kinds[.thumbnail]?.diskEntries)
        #expect(entries <= 50)
        #expect(files(folder, .thumbnail).count == entries)
        let reopened = try MediaCache(folder: folder, limits: MediaCacheLimits(entries: [.thumbnail: 50]))
        await #expect(reopened.statistics().kinds[.thumbnail]?.diskEntries == entries)
    }
}

@Suite("Media cache: loading")
struct MediaCacheLoadingTests {
    @Test("concurrent requests for one missing key run the loader once")
    func coalesced() async throws {
        let cache = try MediaCache(folder: cacheFolder())
        let calls = Counter()
        let gate = Gate()
        let results = try await withThrowingTaskGroup(of: Data?.self) { group in
            for _ in 0..<40 {
                group.addTask {
                    try await cache.data(for: .thumbnail("slow")) {
                        await calls.increment()
                        await gate.wait()
                        return bytes(9)
                    }
                }
            }
            // The load is held until all 40 requests wait for it.
            group.addTask {
                try await LoaderCancellationTests.waitUntilJoined(40, cache, .thumbnail("slow"))
                await gate.open()
                return nil
            }
            return try await group.reduce(into: [Data]()) { if let data = $1 { $0.append(data) } }
        }
        #expect(await calls.value == 1)
        #expect(results.count == 40)
        #expect(results.allSatisfy { $0 == bytes(9) })
        await #expect(cache.data(for: .thumbnail("slow")) == bytes(9))
    }

    @Test("a failed load stores nothing and the error reaches the caller")
    func failedLoad() async throws {
        struct Offline: Error {}
        let cache = try MediaCache(folder: cacheFolder())
        await #expect(throws: Offline.self) {
            try await cache.data(for: .preview("p")) { throw Offline() }
        }
        await #expect(cache.data(for: .preview("p")) == nil)
    }

    @Test("a cached key does not call the loader")
    func cachedSkipsLoader() async throws {
        let cache = try MediaCache(folder: cacheFolder())
        try await cache.store(bytes(1), for: .preview("p"))
        let calls = Counter()
        let data = try await cache.data(for: .preview("p")) {
            await calls.increment()
            return bytes(2)
        }
        #expect(data == bytes(1))
        #expect(await calls.value == 0)
    }
}

@Suite("Media cache: loads that cannot be cached")
struct MediaCacheUncachableTests {
    @Test("a loaded image too large to cache still reaches the caller")
    func tooLargeStillReturned() async throws {
        let cache = try MediaCache(folder: cacheFolder(), limits: MediaCacheLimits(diskBytes: 1_000))
        let data = try await cache.data(for: .preview("big")) { bytes(1, count: 5_000) }
        #expect(data == bytes(1, count: 5_000))
        await #expect(cache.data(for: .preview("big")) == nil)
    }
}

@Suite("Media cache: links in its folder")
struct MediaCacheLinkTests {
    /// A folder outside the cache holding a stranger's file, mode 0755.
    func outside() throws -> URL {
        let dir = TemporaryFolders.path("coffer-outside")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        try Data("not the cache's".utf8).write(to: dir.appendingPathComponent("stranger.txt"))
        chmod(dir.path, 0o755)
        return dir
    }

    @Test("a symbolic link at a kind folder is replaced by a real folder: the target's files and mode are untouched")
    func linkedKindFolderReplaced() throws {
        let folder = cacheFolder()
        do { _ = try MediaCache(folder: folder) }
        let target = try outside()
        let kind = folder.appendingPathComponent(MediaKind.thumbnail.rawValue)
        try FileManager.default.removeItem(at: kind)
        try FileManager.default.createSymbolicLink(at: kind, withDestinationURL: target)
        let cache = try MediaCache(folder: folder)
        try cache.storeBlocking(bytes(9), for: .thumbnail("t1"))
        _ = cache.statisticsBlocking()
        #expect(FileManager.default.fileExists(atPath: target.appendingPathComponent("stranger.txt").path))
        #expect(try FileManager.default.contentsOfDirectory(atPath: target.path) == ["stranger.txt"])
        #expect((try FileManager.default.attributesOfItem(atPath: target.path)[.posixPermissions] as? Int) == 0o755)
        let kindType = try FileManager.default.attributesOfItem(atPath: kind.path)[.type] as? FileAttributeType
        #expect(kindType == .typeDirectory)
        #expect(cache.dataBlocking(for: .thumbnail("t1")) == bytes(9))
    }

    @Test("a symbolic link in place of an entry is removed when the index is built: its target keeps its mode and bytes")
    func linkedEntryRemoved() throws {
        let folder = cacheFolder()
        do {
            let cache = try MediaCache(folder: folder)
            try cache.storeBlocking(bytes(5), for: .preview("p1"))
        }
        let entry = try #require(files(folder, .preview).first, "no entry written")
        // A copy of the entry elsewhere, readable by others, then a link to it in the entry's place.
        let target = try outside().appendingPathComponent("copy")
        try FileManager.default.copyItem(at: entry, to: target)
        #expect(chmod(target.path, 0o644) == 0)
        let original = try Data(contentsOf: target)
        try FileManager.default.removeItem(at: entry)
        try FileManager.default.createSymbolicLink(at: entry, withDestinationURL: target)
        let cache = try MediaCache(folder: folder)
        #expect(cache.statisticsBlocking().kinds[.preview]?.diskEntries == 0)
        #expect(cache.dataBlocking(for: .preview("p1")) == nil)
        #expect((try FileManager.default.attributesOfItem(atPath: target.path)[.posixPermissions] as? Int) == 0o644)
        #expect(try Data(contentsOf: target) == original)
        #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: entry.path)) == nil)
    }

    @Test("a symbolic link at the anchor is removed, never written through")
    func linkedAnchorNotWritten() throws {
        let folder = cacheFolder()
        do { _ = try MediaCache(folder: folder) }
        let target = try outside().appendingPathComponent("stranger.txt")
        let anchorURL = folder.appendingPathComponent(".coffer-cache-anchor")
        #expect(FileManager.default.fileExists(atPath: anchorURL.path), "the cache's anchor has another name")
        try FileManager.default.removeItem(at: anchorURL)
        try FileManager.default.createSymbolicLink(at: anchorURL, withDestinationURL: target)
        _ = try MediaCache(folder: folder)
        #expect(try Data(contentsOf: target) == Data("not the cache's".utf8))
        let anchorType = try FileManager.default.attributesOfItem(atPath: anchorURL.path)[.type] as? FileAttributeType
        #expect(anchorType == .typeRegular)
    }
}
