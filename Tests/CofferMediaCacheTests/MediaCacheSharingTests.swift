// Many caches on one folder (as many processes would have) keep the limits; one loader run per
// missing key, however the requests interleave with its store.

import CofferMediaCache
import Foundation
import Testing

@Suite("Media cache: one folder, many instances")
struct MediaCacheSharingTests {
    @Test("instances writing one folder at once never leave more files than the entry limit")
    func sharedLimitHolds() async throws {
        let folder = cacheFolder()
        let limits = MediaCacheLimits(entries: [.thumbnail: 20])
        let caches = try (0..<4).map { _ in try MediaCache(folder: folder, limits: limits) }
        await withTaskGroup(of: Void.self) { group in
            for (n, cache) in caches.enumerated() {
                group.addTask {
                    for i in 0..<60 { try? cache.storeBlocking(bytes(i, count: 300), for: .thumbnail("w\(n)-\(i)")) }
                }
            }
        }
        #expect(files(folder, .thumbnail).count <= 20)
        #expect(files(folder, .thumbnail).count == 20, "the last writer fills the kind to its limit")
    }

    @Test("after another instance evicts, this one's statistics match the files once it next writes")
    func indexFollowsOtherInstances() throws {
        let folder = cacheFolder()
        let limits = MediaCacheLimits(entries: [.thumbnail: 5])
        let a = try MediaCache(folder: folder, limits: limits)
        let b = try MediaCache(folder: folder, limits: limits)
        for i in 0..<5 { try a.storeBlocking(bytes(i), for: .thumbnail("a\(i)")) }
        for i in 0..<5 { try b.storeBlocking(bytes(i), for: .thumbnail("b\(i)")) }
        try a.storeBlocking(bytes(99), for: .thumbnail("a-last"))
        #expect(files(folder, .thumbnail).count == 5)
        #expect(a.statisticsBlocking().kinds[.thumbnail]?.diskEntries == 5)
    }

    @Test("every store leaves a cache another instance opens within its limits")
    func noTemporaryFilesLeft() async throws {
        let folder = cacheFolder()
        let limits = MediaCacheLimits(entries: [.preview: 8])
        let caches = try (0..<3).map { _ in try MediaCache(folder: folder, limits: limits) }
        await withTaskGroup(of: Void.self) { group in
            for (n, cache) in caches.enumerated() {
                group.addTask { for i in 0..<30 { try? cache.storeBlocking(bytes(i), for: .preview("p\(n)-\(i)")) } }
            }
        }
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.appendingPathComponent("preview").path)
        #expect(!names.contains { $0.hasSuffix(".tmp") })
        #expect(names.count <= 8)
    }
}

@Suite("Media cache: the loader race")
struct MediaCacheLoaderRaceTests {
    @Test("requests arriving while a quick loader finishes and stores never run it again")
    func oneRunPerMissingKey() async throws {
        // A large image makes the store after the load slow: the window where the old code let
        // a request start a second run.
        let image = bytes(7, count: 2 << 20)
        for round in 0..<10 {
            let cache = try MediaCache(folder: cacheFolder())
            let calls = Counter()
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<8 {
                    group.addTask {
                        for _ in 0..<50 {
                            _ = try await cache.data(for: .thumbnail("k")) {
                                await calls.increment()
                                return image
                            }
                        }
                    }
                }
                try await group.waitForAll()
            }
            #expect(await calls.value == 1, "round \(round)")
        }
    }

    @Test("a key invalidated while its loader runs is not cached, and the next request loads again")
    func invalidatedDuringLoad() async throws {
        let cache = try MediaCache(folder: cacheFolder())
        let calls = Counter()
        let gate = AsyncStream<Void>.makeStream()
        async let first = cache.data(for: .thumbnail("k")) {
            await calls.increment()
            for await _ in gate.stream { break }
            return bytes(1)
        }
        while await calls.value == 0 { await Task.yield() }
        await cache.invalidate(assetId: "k")
        gate.continuation.yield()
        #expect(try await first == bytes(1))
        await #expect(cache.data(for: .thumbnail("k")) == nil)
        _ = try await cache.data(for: .thumbnail("k")) {
            await calls.increment()
            return bytes(2)
        }
        #expect(await calls.value == 2)
    }
}
