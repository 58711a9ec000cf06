// `coffer bench launch`: what an app start costs, as a whole and by part, on empty stores and on
// stores of realistic size. Every store is made once, closed, then opened `--repeats` times; each
// part's median is reported with the sizes it ran at.

import ArgumentParser
import Coffer
import CofferDevelopment
import CofferSync
import Foundation

struct LaunchBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "launch",
        abstract: "App start by part (wallet, app database, media cache, secure storage, deniable start) at empty and realistic sizes.",
        discussion: """
            Two stores are built: an empty one and a realistic one (--wallet-records records, --assets \
            assets, --thumbnails cached thumbnails, a vault that was used). Each part is then opened \
            --repeats times, alternating between the two stores, and its median reported. Separately, \
            the wallet's raw-key open is timed at --scale-small and --scale-large records.
            """)

    @Option(name: .customLong("wallet-records"), help: "Wallet records in the realistic store (0 or more).")
    var walletRecords: Int = 10_000
    @Option(help: "Assets in the realistic store's app database (0 or more).") var assets: Int = 100_000
    @Option(help: "Cached thumbnails in the realistic store (0 or more).") var thumbnails: Int = 10_000
    @Option(name: .customLong("thumbnail-size"), help: "Bytes per cached thumbnail (1 or more).") var thumbnailSize: Int = 8_192
    @Option(name: .customLong("scale-small"), help: "Records of the smaller wallet of the open-scaling pair (1 or more).")
    var scaleSmall: Int = 1_000
    @Option(name: .customLong("scale-large"), help: "Records of the larger wallet of the open-scaling pair (1 or more).")
    var scaleLarge: Int = 100_000
    @Option(help: "Opens per part and store (1 or more).") var repeats: Int = 15
    @Option(help: "Working folder (default: a new temporary folder, removed afterwards).") var dir: String?
    @Flag(help: "Print one JSON object instead of a table.") var json = false

    func validate() throws {
        guard walletRecords >= 0, assets >= 0, thumbnails >= 0 else {
            throw ValidationError("--wallet-records, --assets and --thumbnails must be 0 or more")
        }
        guard thumbnailSize >= 1, scaleSmall >= 1, scaleLarge >= 1, repeats >= 1 else {
            throw ValidationError("--thumbnail-size, --scale-small, --scale-large and --repeats must be 1 or more")
        }
    }

    func run() async throws {
        let folder =
            dir.map { URL(fileURLWithPath: $0, isDirectory: true) }
            ?? FileManager.default.temporaryDirectory.appendingPathComponent("coffer-bench-launch-\(UUID().uuidString)", isDirectory: true)
        try? FileManager.default.removeItem(at: folder)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { if dir == nil { try? FileManager.default.removeItem(at: folder) } }
        let key = WalletKey.raw(WalletKey.generateRawKey())

        log("building the empty and the realistic store …")
        let (empty, full) = try await buildStores(in: folder, key: key)
        log("timing launches …")
        let samples = try await launches(empty, full, key: key)
        log("timing the wallet's open at \(scaleSmall) and \(scaleLarge) records …")
        let (smallOpens, largeOpens) = try await walletOpenScaling(in: folder, key: key)

        if json {
            printJSON(samples: samples, smallOpens: smallOpens, largeOpens: largeOpens)
        } else {
            printTable(samples: samples, smallOpens: smallOpens, largeOpens: largeOpens)
        }
    }

    /// A progress line on stderr, unless the output is JSON.
    func log(_ text: String) { if !json { FileHandle.standardError.write(Data("\(text)\n".utf8)) } }

    /// The empty and the realistic store.
    func buildStores(in folder: URL, key: WalletKey) async throws -> (empty: LaunchStore, full: LaunchStore) {
        let empty = try await LaunchStore.build(
            at: folder.appendingPathComponent("empty"), key: key, walletRecords: 0, assets: 0,
            thumbnails: 0, thumbnailSize: thumbnailSize, useVault: false)
        let full = try await LaunchStore.build(
            at: folder.appendingPathComponent("realistic"), key: key, walletRecords: walletRecords,
            assets: assets, thumbnails: thumbnails, thumbnailSize: thumbnailSize, useVault: true)
        return (empty, full)
    }

    /// `repeats` launches of each store; each part's seconds, by store label.
    func launches(_ empty: LaunchStore, _ full: LaunchStore, key: WalletKey) async throws -> [String: [String: [Double]]] {
        var samples: [String: [String: [Double]]] = ["empty": [:], "realistic": [:]]
        for round in 0..<repeats {
            // Alternate which store goes first, so neither always follows the other.
            for store in round % 2 == 0 ? [empty, full] : [full, empty] {
                let parts = try await store.launchOnce(key: key)
                for (part, seconds) in parts { samples[store.label, default: [:]][part, default: []].append(seconds) }
            }
        }
        return samples
    }

    /// The wallet's raw-key open at `scaleSmall` and at `scaleLarge` records, alternating.
    func walletOpenScaling(in folder: URL, key: WalletKey) async throws -> (small: [Double], large: [Double]) {
        let small = folder.appendingPathComponent("scale-small.sqlite")
        let large = folder.appendingPathComponent("scale-large.sqlite")
        try await LaunchStore.makeWallet(at: small, key: key, records: scaleSmall)
        try await LaunchStore.makeWallet(at: large, key: key, records: scaleLarge)
        var smallOpens = [Double]()
        var largeOpens = [Double]()
        for round in 0..<max(repeats, 5) {
            for (url, isSmall) in round % 2 == 0 ? [(small, true), (large, false)] : [(large, false), (small, true)] {
                let (wallet, t) = try await Clock.time { try await Wallet.open(at: url, key: key) }
                try wallet.close()
                if isSmall { smallOpens.append(t) } else { largeOpens.append(t) }
            }
        }
        return (smallOpens, largeOpens)
    }

    /// The medians as one JSON object, on stdout.
    func printJSON(samples: [String: [String: [Double]]], smallOpens: [Double], largeOpens: [Double]) {
        let parts = LaunchStore.parts
        let median = { (xs: [Double]) in percentile(xs, 50) }
        func group(_ label: String) -> JSONValue {
            .object(parts.map { ($0, .number(String(format: "%.6f", median(samples[label]?[$0] ?? [0])))) })
        }
        let sizes: JSONValue = .object([
            ("wallet_records", .number(String(walletRecords))), ("assets", .number(String(assets))),
            ("thumbnails", .number(String(thumbnails))), ("thumbnail_bytes", .number(String(thumbnailSize))),
            ("vault", .string("used")), ("repeats", .number(String(repeats))),
        ])
        let scaling: JSONValue = .object([
            ("records_small", .number(String(scaleSmall))), ("records_large", .number(String(scaleLarge))),
            ("raw_open_s_median_small", .number(String(format: "%.6f", median(smallOpens)))),
            ("raw_open_s_median_large", .number(String(format: "%.6f", median(largeOpens)))),
            ("large_over_small", .number(String(format: "%.3f", median(largeOpens) / median(smallOpens)))),
        ])
        print(
            JSONValue.object([
                ("tool", .string("coffer bench launch")), ("realistic_sizes", sizes),
                ("empty_s_median", group("empty")), ("realistic_s_median", group("realistic")), ("wallet_open_scaling", scaling),
            ]).jsonText)
    }

    /// The medians as a table, on stdout.
    func printTable(samples: [String: [String: [Double]]], smallOpens: [Double], largeOpens: [Double]) {
        let parts = LaunchStore.parts
        let median = { (xs: [Double]) in percentile(xs, 50) }
        print(
            "launch by part, median of \(repeats) (seconds); realistic = \(walletRecords) wallet records, \(assets) assets, "
                + "\(thumbnails) thumbnails of \(thumbnailSize) bytes, a used vault")
        print("part".padding(toLength: 30, withPad: " ", startingAt: 0), "     empty", " realistic", "     ratio")
        for part in parts {
            let e = median(samples["empty"]?[part] ?? [0])
            let r = median(samples["realistic"]?[part] ?? [0])
            print(
                part.padding(toLength: 30, withPad: " ", startingAt: 0), String(format: "%10.5f %10.5f %9.2fx", e, r, r / max(e, 1e-9)))
        }
        let s = median(smallOpens)
        let l = median(largeOpens)
        print(
            String(
                format: "wallet raw-key open: %.5f s at %d records, %.5f s at %d records (%.2fx)", s, scaleSmall, l, scaleLarge, l / s))
    }
}

/// One store laid out as an app's: the container's folders, a wallet, and deniable storage.
struct LaunchStore: Sendable {
    /// The parts timed by ``launchOnce(key:)``, in launch order.
    static let parts = [
        "container_open", "app_database_open", "media_cache_open", "media_cache_first_hit", "secure_storage_first_read",
        "wallet_open_raw", "deniable_start", "launch_total",
    ]

    let label: String
    let locations: CofferLocations
    let deniableFolder: URL
    let node: DevelopmentCoverNode
    let probe: MediaKey?

    static func build(
        at folder: URL, key: WalletKey, walletRecords: Int, assets: Int, thumbnails: Int, thumbnailSize: Int,
        useVault: Bool
    ) async throws -> LaunchStore {
        let locations = CofferLocations(store: folder)
        let container = try await CofferContainer.open(
            locations, cacheByteLimits: (memory: 96 << 20, disk: max(1 << 30, thumbnails * (thumbnailSize + 256) * 2)))
        defer { container.close() }
        try await container.secure.save(
            Data("token-\(folder.lastPathComponent)".utf8), for: "session-token", accessibility: .afterFirstUnlock)
        if assets > 0 {
            let t0 = Date(timeIntervalSince1970: 1_600_000_000)
            for start in stride(from: 0, to: assets, by: 10_000) {
                let batch = (start..<min(assets, start + 10_000)).map { i in
                    Asset(
                        remoteId: "remote-\(i)", localId: "local-\(i)", ownerId: "owner-\(i % 10)", checksum: "checksum-\(i)",
                        fileName: "IMG_\(i).jpg", fileCreatedAt: t0.addingTimeInterval(Double(i) * 60))
                }
                try await container.context.assets.putAll(batch)
            }
        }
        try await container.settings.put(SettingsCatalog.thumbnailCacheSize, max(thumbnails, 1))
        var rng = SplitMix64(seed: 7)
        let payload = Data((0..<thumbnailSize).map { _ in UInt8(truncatingIfNeeded: rng.next()) })
        for i in 0..<thumbnails { try await container.cache.store(payload, for: .thumbnail("asset-\(i)")) }
        let wallet = try await container.openWallet(key)
        try wallet.close()
        try await makeWallet(at: locations.wallet, key: key, records: walletRecords, existing: true)

        let deniableFolder = locations.data.appendingPathComponent("deniable")
        let node = try DevelopmentCoverNode(folder: locations.data.appendingPathComponent("deniable-dev-service"))
        let deniable = try await DeniableStorage(folder: deniableFolder, trustAnchor: node.trustAnchor, keySource: node)
        if useVault {
            let passphrase = try await deniable.createVault()
            try await deniable.unlock(passphrase: passphrase)
            for i in 0..<5 {
                _ = try await deniable.send("message \(i) to the newsroom", to: "journalist")
                _ = try await deniable.dequeue()
            }
            try await deniable.lock()
        }
        try await deniable.close()
        return LaunchStore(
            label: useVault ? "realistic" : "empty", locations: locations, deniableFolder: deniableFolder, node: node,
            probe: thumbnails > 0 ? .thumbnail("asset-\(thumbnails / 2)") : nil)
    }

    /// Fills (or creates) a wallet with `records` records of the bench workload's shape.
    static func makeWallet(at url: URL, key: WalletKey, records: Int, existing: Bool = false) async throws {
        let wallet = existing ? try await Wallet.open(at: url, key: key) : try await Wallet.create(at: url, key: key)
        let value = String(repeating: "v", count: 200)
        for start in stride(from: 0, to: records, by: 10_000) {
            try await wallet.transaction { txn in
                for i in start..<min(records, start + 10_000) {
                    try txn.add(
                        type: "credential", id: "cred-\(i)", value: value,
                        tags: ["schema_id": .string("schema-\(i % 10)"), "~seq": .string(String(i))])
                }
            }
        }
        try wallet.close()
    }

    /// One launch: the container (app database, secure storage, media cache), the first cache
    /// hit, the first secure read, the wallet, deniable storage's start routine; then closes all.
    func launchOnce(key: WalletKey) async throws -> [(String, Double)] {
        let (container, tContainer) = try await Clock.time { try CofferContainer.openBlocking(locations) }
        let (_, tFirstHit) = await Clock.time { if let probe { _ = container.cache.dataBlocking(for: probe) } }
        // The same parts opened alone, after the container (so the files are as warm as at a launch).
        let (database, tDatabase) = try await Clock.time { try AppDatabase.openBlocking(at: locations.appDatabase) }
        try database.close()
        let (_, tCache) = try await Clock.time { try MediaCache(folder: locations.mediaCacheFolder, limits: container.cache.currentLimits) }
        let (_, tSecure) = try await Clock.time { _ = try container.secure.loadBlocking("session-token") }
        let (wallet, tWallet) = try await Clock.time { try await container.openWallet(key, createIfMissing: false) }
        _ = wallet
        let (deniable, tDeniable) = try await Clock.time {
            try await DeniableStorage(folder: deniableFolder, trustAnchor: node.trustAnchor, keySource: node)
        }
        let total = tContainer + tFirstHit + tSecure + tWallet + tDeniable
        try await deniable.close()
        container.close()
        return [
            ("container_open", tContainer), ("app_database_open", tDatabase), ("media_cache_open", tCache),
            ("media_cache_first_hit", tFirstHit), ("secure_storage_first_read", tSecure), ("wallet_open_raw", tWallet),
            ("deniable_start", tDeniable), ("launch_total", total),
        ]
    }
}
