// `coffer bench cache`: the media cache beside Foundation's NSCache (memory) and URLCache (disk),
// same operations, same data, same run.

import ArgumentParser
import Coffer
import CofferCLISupport
import CofferDevelopment
import CofferSync
import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

struct CacheBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cache",
        abstract: "Memory hits (beside NSCache), disk hits and MB/s (beside URLCache), puts with eviction at 1,000 and 10,000 entries.")

    @Option(help: "Entries for the hit measurements and the larger eviction run.") var entries: Int = 10_000
    @Option(help: "Bytes per cached image.") var size: Int = 16_384
    @Option(help: "Memory lookups per side.") var reads: Int = 2_000_000
    @Option(help: "Disk reads per side.") var diskReads: Int = 20_000
    @Option(help: "Puts timed per eviction run.") var puts: Int = 5_000
    @Option(help: "Entries URLCache holds (Linux's URLCache slows down with every entry; 500 keeps the run short).")
    var urlcacheEntries: Int = 500
    @Flag(help: "Print one JSON object instead of a table.") var json = false

    func validate() throws {
        guard entries >= 1_000, size >= 1, reads >= 1, diskReads >= 1, puts >= 1, urlcacheEntries >= 1, urlcacheEntries <= entries else {
            throw ValidationError("counts must be positive (--entries at least 1000)")
        }
    }

    /// Rounds that alternate between the two sides of a comparison, so both see the same machine load.
    static let rounds = 5

    func run() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("coffer-bench-cache-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        var rng = SplitMix64(seed: 42)
        let payloads = (0..<64).map { _ in Data((0..<size).map { _ in UInt8(truncatingIfNeeded: rng.next()) }) }
        let ids = (0..<entries).map { "asset-\($0)" }
        let probe = (0..<max(reads, diskReads)).map { _ in Int(rng.next() % UInt64(entries)) }
        var results = [(String, Double)]()

        // Memory: our memory layer vs NSCache, both holding every entry.
        let keys = ids.map { MediaKey.thumbnail($0) }
        // Both caches stay open for the rest of the run.
        let memory = try await memoryHits(folder: folder, payloads: payloads, ids: ids, keys: keys, probe: probe)
        results += memory.results

        // Disk: our disk layer (memory layer off) vs URLCache with no memory capacity.
        let (diskOnly, openResults) = try await openDiskOnly(folder: folder)
        results += openResults
        let (urlCache, requests, tURLPut) = await urlCachePuts(folder: folder, payloads: payloads, ids: ids)
        results += try await diskHits(diskOnly, keys: keys, urlCache: urlCache, requests: requests, probe: probe)
        results += [("urlcache_put_per_sec", Double(urlcacheEntries) / tURLPut)]

        // Puts that each evict one entry, at 1,000 and at `entries` entries, in alternating rounds
        // (so both see the same disk write-back): the cost must not grow with the entry count.
        results += try await evictingPuts(folder: folder, payloads: payloads)
        results += await nsCachePuts(payloads: payloads)
        printResults(results)
    }

    /// Memory hits of the media cache and of NSCache, both filled with every entry; returns both caches.
    func memoryHits(
        folder: URL, payloads: [Data], ids: [String], keys: [MediaKey], probe: [Int]
    ) async throws -> (cache: MediaCache, nscache: NSCache<NSString, NSData>, results: [(String, Double)]) {
        let rounds = Self.rounds
        let limits = MediaCacheLimits(entries: [.thumbnail: entries], memoryBytes: entries * size * 2, diskBytes: entries * size * 4)
        let cache = try MediaCache(folder: folder.appendingPathComponent("coffer"), limits: limits)
        let nscache = NSCache<NSString, NSData>()
        nscache.countLimit = entries
        let nsKeys = ids.map { NSString(string: $0) }
        for i in 0..<entries {
            try await cache.store(payloads[i % 64], for: keys[i])
            nscache.setObject(payloads[i % 64] as NSData, forKey: nsKeys[i])
        }
        var hits = 0
        var nsHits = 0
        var tMemory = 0.0
        var tNSCache = 0.0
        for round in 0..<rounds {
            let slice = probe[(round * reads / rounds)..<((round + 1) * reads / rounds)]
            tMemory += await Clock.time { for i in slice where cache.memoryData(for: keys[i]) != nil { hits += 1 } }.1
            tNSCache += await Clock.time { for i in slice where nscache.object(forKey: nsKeys[i]) != nil { nsHits += 1 } }.1
        }
        guard hits == reads, nsHits == reads else { throw ValidationError("memory hits: coffer \(hits), NSCache \(nsHits) of \(reads)") }
        return (cache, nscache, [("memory_hit_per_sec", Double(reads) / tMemory), ("nscache_hit_per_sec", Double(reads) / tNSCache)])
    }

    /// Reopens the cache with its memory layer off; the open's and the index's times.
    func openDiskOnly(folder: URL) async throws -> (MediaCache, [(String, Double)]) {
        let (diskOnly, tOpen) = try await Clock.time {
            try MediaCache(
                folder: folder.appendingPathComponent("coffer"),
                limits: MediaCacheLimits(entries: [.thumbnail: entries], memoryBytes: 0, diskBytes: entries * size * 4))
        }
        // Opening reads no entry (the index is built in the background); statistics() builds it
        // now if the background has not yet, so this is at most the whole scan.
        let (stats, tIndex) = await Clock.time { diskOnly.statisticsBlocking() }
        guard stats.kinds[.thumbnail]?.diskEntries == entries else { throw ValidationError("reopening lost entries") }
        return (diskOnly, [("open_ms", tOpen * 1000), ("index_after_open_ms", tIndex * 1000)])
    }

    /// A URLCache without memory capacity, filled with `urlcacheEntries` responses; the time of the fill.
    func urlCachePuts(folder: URL, payloads: [Data], ids: [String]) async -> (URLCache, [URLRequest], Double) {
        let urlCache = URLCache(
            memoryCapacity: 0, diskCapacity: entries * size * 4, diskPath: folder.appendingPathComponent("urlcache").path)
        let requests = ids.map { URLRequest(url: URL(string: "https://media.example/thumbnails/\($0)")!) }
        let (_, tURLPut) = await Clock.time {
            for i in 0..<urlcacheEntries {
                let response = HTTPURLResponse(
                    url: requests[i].url!, statusCode: 200, httpVersion: "HTTP/1.1",
                    headerFields: ["Cache-Control": "max-age=86400", "Content-Type": "image/jpeg"])!
                urlCache.storeCachedResponse(CachedURLResponse(response: response, data: payloads[i % 64]), for: requests[i])
            }
        }
        return (urlCache, requests, tURLPut)
    }

    /// Disk hits of the media cache (sync and async) beside URLCache's.
    func diskHits(
        _ diskOnly: MediaCache, keys: [MediaKey], urlCache: URLCache, requests: [URLRequest], probe: [Int]
    ) async throws -> [(String, Double)] {
        let rounds = Self.rounds
        var results = [(String, Double)]()
        let urlReads = min(diskReads, 1_000) // at Linux URLCache's speed, more only lengthens the run
        var diskHits = 0
        var urlHits = 0
        var tDisk = 0.0
        var tURL = 0.0
        for round in 0..<rounds {
            let slice = probe[(round * diskReads / rounds)..<((round + 1) * diskReads / rounds)]
            tDisk += await Clock.time { for i in slice where diskOnly.dataBlocking(for: keys[i])?.count == size { diskHits += 1 } }.1
            tURL += await Clock.time {
                for i in slice.prefix(urlReads / rounds)
                where urlCache.cachedResponse(for: requests[i % urlcacheEntries])?.data.count == size { urlHits += 1 }
            }.1
        }
        guard diskHits == diskReads else { throw ValidationError("disk hits: coffer \(diskHits) of \(diskReads)") }
        let megabytes = Double(diskReads * size) / 1_048_576
        // The async form (each read on a worker thread), as a main-actor caller uses it.
        var asyncHits = 0
        let (_, tDiskAsync) = await Clock.time {
            for i in probe.prefix(diskReads) where await diskOnly.data(for: keys[i])?.count == size { asyncHits += 1 }
        }
        guard asyncHits == diskReads else { throw ValidationError("async disk hits: coffer \(asyncHits) of \(diskReads)") }
        results += [
            ("disk_hit_per_sec", Double(diskReads) / tDisk), ("disk_hit_mb_per_sec", megabytes / tDisk),
            ("disk_hit_async_per_sec", Double(diskReads) / tDiskAsync),
        ]
        let urlTimed = rounds * (urlReads / rounds)
        if urlHits == urlTimed {
            results += [
                ("urlcache_disk_hit_per_sec", Double(urlTimed) / tURL),
                ("urlcache_disk_hit_mb_per_sec", Double(urlTimed * size) / 1_048_576 / tURL),
            ]
        } else {
            StandardError.write("URLCache answered \(urlHits) of \(urlTimed) disk reads; its hit rate is not comparable\n")
            results += [("urlcache_disk_hit_ratio", Double(urlHits) / Double(urlTimed))]
        }
        return results
    }

    /// Puts that each evict one entry, into caches full at 1,000 and at `entries` entries.
    func evictingPuts(folder: URL, payloads: [Data]) async throws -> [(String, Double)] {
        let rounds = Self.rounds
        let sizes = [1_000, entries]
        let evicting = try sizes.map { n in
            let c = try MediaCache(
                folder: folder.appendingPathComponent("evict-\(n)"),
                limits: MediaCacheLimits(entries: [.thumbnail: n], diskBytes: Int.max / 2))
            for i in 0..<n { try c.storeBlocking(payloads[i % 64], for: .thumbnail("fill-\(i)")) }
            return c
        }
        var tPut = [0.0, 0.0]
        var serial = 0
        for _ in 0..<rounds {
            for (j, c) in evicting.enumerated() {
                let first = serial
                tPut[j] += try await Clock.time {
                    for i in 0..<(puts / rounds) { try c.storeBlocking(payloads[i % 64], for: .thumbnail("new-\(first + i)")) }
                }.1
                serial += puts / rounds
            }
        }
        for (j, c) in evicting.enumerated() {
            guard await c.statistics().kinds[.thumbnail]?.diskEntries == sizes[j] else {
                throw ValidationError("the entry limit did not hold")
            }
            await c.clear()
        }
        let timedPuts = Double(rounds * (puts / rounds))
        return [
            ("put_evict_at_1k_per_sec", timedPuts / tPut[0]), ("put_evict_at_\(entries / 1000)k_per_sec", timedPuts / tPut[1]),
            ("eviction_cost_ratio_large_over_1k", tPut[1] / tPut[0]),
        ]
    }

    /// NSCache's puts, each evicting one entry of a full cache.
    func nsCachePuts(payloads: [Data]) async -> [(String, Double)] {
        let nsEvicting = NSCache<NSString, NSData>()
        nsEvicting.countLimit = entries
        for i in 0..<entries { nsEvicting.setObject(payloads[i % 64] as NSData, forKey: NSString(string: "fill-\(i)")) }
        let newKeys = (0..<puts).map { NSString(string: "new-\($0)") }
        let (_, tNSPut) = await Clock.time { for i in 0..<puts { nsEvicting.setObject(payloads[i % 64] as NSData, forKey: newKeys[i]) } }
        return [("nscache_put_evict_per_sec", Double(puts) / tNSPut)]
    }

    /// The results as one JSON object or as a table, on stdout.
    func printResults(_ results: [(String, Double)]) {
        if json {
            var fields = results.map { ($0.0, JSONValue.number(String(format: "%.2f", $0.1))) }
            fields += [
                ("entries", .number(String(entries))), ("urlcache_entries", .number(String(urlcacheEntries))),
                ("bytes_per_image", .number(String(size))),
            ]
            print(JSONValue.object([("tool", .string("coffer bench cache")), ("results", .object(fields))]).jsonText)
        } else {
            for (k, v) in results { print(k.padding(toLength: 40, withPad: " ", startingAt: 0), String(format: "%14.2f", v)) }
        }
    }
}
