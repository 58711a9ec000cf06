// `coffer bench app`: settings beside Foundation's UserDefaults, collections beside direct GRDB.

import ArgumentParser
import Coffer
import Foundation
import GRDB

struct AppBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "app",
        abstract: "Settings get/put beside UserDefaults; putAll, lookups and created-between beside direct GRDB.")

    @Option(help: "Assets for the collection operations.") var assets: Int = 100_000
    @Option(help: "Settings reads.") var reads: Int = 1_000_000
    @Option(help: "Settings writes (each durable).") var writes: Int = 2_000
    @Option(help: "Lookups by remote id.") var lookups: Int = 20_000
    @Flag(help: "Print one JSON object instead of a table.") var json = false

    func validate() throws {
        guard assets >= 100, reads >= 1, writes >= 1, lookups >= 1 else {
            throw ValidationError("counts must be positive (--assets at least 100)")
        }
    }

    func run() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("coffer-bench-app-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        var results = [(String, Double)]()

        // Settings vs UserDefaults.
        let app = try await AppDatabase.open(at: folder.appendingPathComponent("app.sqlite"))
        defer { try? app.close() }
        results += try await settingsBesideUserDefaults(app)

        // Collections vs the same operations written directly against GRDB.
        results += try await collectionsBesideGRDB(app, folder: folder)
        printResults(results)
    }

    /// Settings get, durable put (sync and async) beside UserDefaults' get, set and synchronize.
    func settingsBesideUserDefaults(_ app: AppDatabase) async throws -> [(String, Double)] {
        let key = SettingsCatalog.tilesPerRow
        try await app.settings.put(key, 5)
        var sum = 0
        let suite = "coffer-bench-\(UUID().uuidString)"
        guard let defaults = UserDefaults(suiteName: suite) else { throw ValidationError("UserDefaults(suiteName:) is unavailable") }
        defer { defaults.removePersistentDomain(forName: suite) }
        defaults.set(5, forKey: "tilesPerRow")
        // In alternating rounds, so both see the same machine load.
        var tGet = 0.0
        var tDefaultsGet = 0.0
        for _ in 0..<5 {
            tGet += await Clock.time { for _ in 0..<(reads / 5) { sum &+= app.settings.get(key) } }.1
            tDefaultsGet += await Clock.time { for _ in 0..<(reads / 5) { sum &+= defaults.integer(forKey: "tilesPerRow") } }.1
        }
        let (_, tPut) = try await Clock.time { for i in 0..<writes { try app.settings.putBlocking(key, i) } }
        // The async form (a worker-thread hop around the same commit), as a main-actor caller uses it.
        let (_, tPutAsync) = try await Clock.time { for i in 0..<writes { try await app.settings.put(key, i) } }
        // Settings.set (what a view's slider uses): memory now, the disk coalesced by a worker
        // thread; then one flush makes them durable. Counted: the commits the sets cost.
        let commitsBefore = app.settings.deferredCommits
        let sets = writes * 50
        let (_, tSet) = try await Clock.time { for i in 0..<sets { try app.settings.set(key, i) } }
        let (_, tFlush) = try await Clock.time { try await app.settings.flush() }
        let setCommits = app.settings.deferredCommits - commitsBefore
        let (_, tDefaultsSet) = await Clock.time { for i in 0..<writes { defaults.set(i, forKey: "tilesPerRow") } }
        let (_, tDefaultsSync) = await Clock.time {
            for i in 0..<writes {
                defaults.set(i, forKey: "tilesPerRow")
                defaults.synchronize()
            }
        }
        if sum == 42 { print("") } // keep the reads
        return [
            ("settings_get_per_sec", Double(reads) / tGet), ("userdefaults_get_per_sec", Double(reads) / tDefaultsGet),
            ("settings_put_durable_per_sec", Double(writes) / tPut), ("userdefaults_set_per_sec", Double(writes) / tDefaultsSet),
            ("userdefaults_set_synchronize_per_sec", Double(writes) / tDefaultsSync),
            ("settings_put_durable_async_per_sec", Double(writes) / tPutAsync),
            ("settings_set_deferred_per_sec", Double(sets) / tSet), ("settings_set_deferred_sets", Double(sets)),
            ("settings_set_deferred_commits", Double(setCommits)), ("settings_flush_ms", tFlush * 1000),
        ]
    }

    /// Assets' putAll, lookups by remote id and created-between windows beside the same
    /// operations written against GRDB on a second database.
    func collectionsBesideGRDB(_ app: AppDatabase, folder: URL) async throws -> [(String, Double)] {
        let t0 = Date(timeIntervalSince1970: 1_600_000_000)
        let batch = (0..<assets).map { i in
            Asset(
                remoteId: "remote-\(i)", localId: "local-\(i)", ownerId: "owner-\(i % 10)", checksum: "checksum-\(i)",
                fileName: "IMG_\(i).jpg", fileCreatedAt: t0.addingTimeInterval(Double(i) * 60))
        }
        let (_, tPutAll) = try await Clock.time { try app.context.assets.putAllBlocking(batch) }
        let probe = (0..<lookups).map { "remote-\(($0 &* 7919) % assets)" }
        let windows = (0..<20).map { j in
            (t0.addingTimeInterval(Double(j * assets / 20) * 60), t0.addingTimeInterval(Double((j + 1) * assets / 20 - 1) * 60))
        }

        let direct = try await Self.directDatabase(in: folder)
        defer { try? direct.close() }
        let (_, tDirectPutAll) = try await Clock.time {
            try direct.write { db in
                for a in batch {
                    var row = AssetRow(a)
                    try row.insert(db)
                }
            }
        }
        let r = try await alternatingReads(app, direct: direct, probe: probe, windows: windows)
        var asyncFound = 0
        let (_, tLookupAsync) = try await Clock.time {
            for id in probe { if try await app.context.assets.findByRemoteId(id) != nil { asyncFound += 1 } }
        }
        guard r.found == r.directFound, asyncFound == r.found, r.rows == r.directRows, r.rows == assets else {
            throw ValidationError("the two sides disagree: \(r.found)/\(r.directFound) lookups, \(r.rows)/\(r.directRows) rows")
        }
        return [
            ("putall_assets_per_sec", Double(assets) / tPutAll), ("direct_grdb_insert_assets_per_sec", Double(assets) / tDirectPutAll),
            ("lookup_remote_id_per_sec", Double(lookups) / r.tLookup), ("direct_grdb_lookup_per_sec", Double(lookups) / r.tDirectLookup),
            ("lookup_remote_id_async_per_sec", Double(probe.count) / tLookupAsync),
            ("created_between_rows_per_sec", Double(r.rows) / r.tBetween),
            ("direct_grdb_created_between_rows_per_sec", Double(r.directRows) / r.tDirectBetween),
        ]
    }

    /// The GRDB side: the app database's schema in a second file, with the same durability.
    static func directDatabase(in folder: URL) async throws -> DatabasePool {
        let direct = try DatabasePool(
            path: folder.appendingPathComponent("direct.sqlite").path,
            configuration: {
                var c = Configuration()
                c.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = FULL") }
                return c
            }())
        try await direct.writeWithoutTransaction { try $0.execute(sql: "PRAGMA synchronous = FULL") }
        try AppDatabase.migrator().migrate(direct)
        return direct
    }

    /// What the alternating read rounds found and how long each side took.
    struct ReadTotals {
        let found: Int
        let directFound: Int
        let rows: Int
        let directRows: Int
        let tLookup: Double
        let tDirectLookup: Double
        let tBetween: Double
        let tDirectBetween: Double
    }

    /// Lookups by remote id and created-between windows, on the collection and on direct GRDB.
    func alternatingReads(
        _ app: AppDatabase, direct: DatabasePool, probe: [String], windows: [(Date, Date)]
    ) async throws -> ReadTotals {
        // Reads alternate between the two sides in rounds, so both see the same machine load.
        var found = 0
        var directFound = 0
        var rows = 0
        var directRows = 0
        var tLookup = 0.0
        var tDirectLookup = 0.0
        var tBetween = 0.0
        var tDirectBetween = 0.0
        let rounds = 5
        for round in 0..<rounds {
            let slice = probe[(round * probe.count / rounds)..<((round + 1) * probe.count / rounds)]
            tLookup += try await Clock.time {
                for id in slice { if try app.context.assets.findByRemoteIdBlocking(id) != nil { found += 1 } }
            }.1
            tDirectLookup += try await Clock.time {
                for id in slice {
                    if try direct.read({ db in
                        try AssetRow.fetchOne(db.cachedStatement(sql: "SELECT * FROM assets WHERE remoteId = ?"), arguments: [id])
                    }) != nil {
                        directFound += 1
                    }
                }
            }.1
            let windowSlice = windows[(round * windows.count / rounds)..<((round + 1) * windows.count / rounds)]
            tBetween += try await Clock.time {
                for (a, b) in windowSlice { rows += try app.context.assets.createdBetweenBlocking(a, b).count }
            }.1
            tDirectBetween += try await Clock.time {
                for (a, b) in windowSlice {
                    directRows += try direct.read { db in
                        try AssetRow.fetchAll(
                            db.cachedStatement(
                                sql: "SELECT * FROM assets WHERE fileCreatedAt >= ? AND fileCreatedAt <= ? ORDER BY fileCreatedAt"),
                            arguments: [a, b]
                        ).count
                    }
                }
            }.1
        }
        return ReadTotals(
            found: found, directFound: directFound, rows: rows, directRows: directRows, tLookup: tLookup, tDirectLookup: tDirectLookup,
            tBetween: tBetween, tDirectBetween: tDirectBetween)
    }

    /// The results as one JSON object or as a table, on stdout.
    func printResults(_ results: [(String, Double)]) {
        if json {
            var fields = results.map { ($0.0, JSONValue.number(String(format: "%.1f", $0.1))) }
            fields.append(("assets", .number(String(assets))))
            print(JSONValue.object([("tool", .string("coffer bench app")), ("results", .object(fields))]).jsonText)
        } else {
            for (k, v) in results { print(k.padding(toLength: 42, withPad: " ", startingAt: 0), String(format: "%14.1f", v)) }
        }
    }
}
