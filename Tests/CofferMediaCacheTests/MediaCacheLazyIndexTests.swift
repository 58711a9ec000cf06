// Opening the media cache reads no entry: the index is built in the background or by the first
// call that evicts or counts, and a hit before that reads the file directly.

import CofferMediaCache
import Foundation
import Testing

@Suite("Media cache: opening without a scan")
struct MediaCacheLazyIndexTests {
    /// A folder holding `count` thumbnails written by a cache that is then dropped.
    static func filledFolder(_ count: Int) throws -> URL {
        let folder = cacheFolder()
        let writer = try MediaCache(folder: folder, limits: MediaCacheLimits(entries: [.thumbnail: count]))
        for i in 0..<count { try writer.storeBlocking(bytes(i), for: .thumbnail("a\(i)")) }
        return folder
    }

    @Test("opening over 200 files scans nothing, and a disk hit before the index is built scans nothing either")
    func openAndHitWithoutScan() throws {
        let folder = try Self.filledFolder(200)
        let cache = try MediaCache(folder: folder, limits: MediaCacheLimits(entries: [.thumbnail: 200]), indexInBackground: false)
        #expect(cache.folderScans == 0)
        #expect(cache.dataBlocking(for: .thumbnail("a150")) == bytes(150))
        #expect(cache.dataBlocking(for: .thumbnail("missing")) == nil)
        #expect(cache.folderScans == 0)
        // The hit went to memory.
        #expect(cache.memoryData(for: .thumbnail("a150")) == bytes(150))
    }

    @Test("a store before the index is built builds it and keeps the entry limit")
    func storeBuildsIndexAndEvicts() throws {
        let folder = try Self.filledFolder(20)
        let cache = try MediaCache(folder: folder, limits: MediaCacheLimits(entries: [.thumbnail: 20]), indexInBackground: false)
        try cache.storeBlocking(bytes(99), for: .thumbnail("new"))
        #expect(cache.folderScans == 1)
        #expect(files(folder, .thumbnail).count == 20)
        #expect(cache.statisticsBlocking().kinds[.thumbnail]?.diskEntries == 20)
        #expect(cache.dataBlocking(for: .thumbnail("new")) == bytes(99))
    }

    @Test("files over a lowered limit are evicted by the background index, without any further call")
    func backgroundIndexEvicts() async throws {
        let folder = try Self.filledFolder(30)
        let cache = try MediaCache(folder: folder, limits: MediaCacheLimits(entries: [.thumbnail: 10]))
        // Wait (bounded) for the background scan and the eviction that follows it (the scan is
        // counted before the files over the limit go); no call on the cache builds the index here.
        for _ in 0..<500 where cache.folderScans == 0 || files(folder, .thumbnail).count > 10 {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(cache.folderScans == 1)
        #expect(files(folder, .thumbnail).count == 10)
    }

    @Test("a damaged file read before the index is built is a miss and is removed")
    func damagedBeforeIndex() throws {
        let folder = try Self.filledFolder(3)
        for file in files(folder, .thumbnail) {
            var data = try Data(contentsOf: file)
            data[data.count - 1] ^= 0xFF
            try data.write(to: file)
        }
        let cache = try MediaCache(folder: folder, limits: MediaCacheLimits(entries: [.thumbnail: 3]), indexInBackground: false)
        #expect(cache.dataBlocking(for: .thumbnail("a1")) == nil)
        #expect(files(folder, .thumbnail).count == 2)
    }

    @Test("an entry removed before the index is built does not come back")
    func removeBeforeIndex() throws {
        let folder = try Self.filledFolder(5)
        let cache = try MediaCache(folder: folder, limits: MediaCacheLimits(entries: [.thumbnail: 5]), indexInBackground: false)
        #expect(cache.dataBlocking(for: .thumbnail("a2")) == bytes(2))
        cache.removeBlocking(.thumbnail("a2"))
        #expect(cache.dataBlocking(for: .thumbnail("a2")) == nil)
        #expect(cache.memoryData(for: .thumbnail("a2")) == nil)
    }
}
