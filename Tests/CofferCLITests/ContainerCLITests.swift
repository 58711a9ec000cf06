// `coffer cache|cleanup|reset|secure` as other tools drive them.

import CofferDatabase
import CofferSettings
import CofferTestSupport
import Foundation
import Testing

func emptyStore() -> URL {
    TemporaryFolders.path("coffer-cli")
}

func jsonObject(_ text: String) throws -> [String: Any] {
    try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
}

@Suite("coffer cache, cleanup, reset, secure")
struct ContainerCLITests {
    @Test("cache put, stats, get and clear")
    func cache() async throws {
        let store = emptyStore()
        let image = store.deletingLastPathComponent().appendingPathComponent("img-\(UUID().uuidString)")
        try Data(repeating: 0x41, count: 3_000).write(to: image)
        #expect(try await CLI.run(["cache", "put", "thumbnail", "a1", image.path], store: store).status == 0)
        let stats = try jsonObject(try await CLI.run(["cache", "stats"], store: store).stdout)
        let thumbs = try #require((stats["kinds"] as? [String: Any])?["thumbnail"] as? [String: Any])
        #expect(thumbs["entries"] as? Int == 1)
        #expect(thumbs["limit"] as? Int == 10_000)
        #expect(try await CLI.run(["cache", "get", "thumbnail", "a1"], store: store).stdout == String(repeating: "A", count: 3_000))
        let cleared = try jsonObject(try await CLI.run(["cache", "clear", "--kind", "thumbnail"], store: store).stdout)
        #expect(cleared["cleared"] as? String == "thumbnail")
        #expect((cleared["bytes"] as? Int ?? 0) > 3_000)
        #expect(try await CLI.run(["cache", "get", "thumbnail", "a1"], store: store).status == 1)
    }

    @Test("cache clear with an unknown kind is an input error")
    func badKind() async throws {
        #expect(try await CLI.run(["cache", "clear", "--kind", "posters"], store: emptyStore()).status == 2)
    }

    @Test("secure set, get, list and delete; a missing item exits 1")
    func secure() async throws {
        let store = emptyStore()
        let set = try await CLI.run(["secure", "set", "accessToken", "--value-env", "TOKEN"], store: store, env: ["TOKEN": "tok-42"])
        #expect(set.status == 0)
        #expect(try await CLI.run(["secure", "get", "accessToken"], store: store).stdout == "tok-42")
        #expect(try await CLI.run(["secure", "list"], store: store).stdout == "[\"accessToken\"]\n")
        #expect(try await CLI.run(["secure", "delete", "accessToken"], store: store).status == 0)
        let missing = try await CLI.run(["secure", "get", "accessToken"], store: store)
        #expect(missing.status == 1)
        #expect(missing.stderr.hasPrefix("error: "))
    }

    @Test("the secure folder shows no item value")
    func secureOnDisk() async throws {
        let store = emptyStore()
        _ = try await CLI.run(
            ["secure", "set", "accessToken", "--value-env", "TOKEN"], store: store, env: ["TOKEN": "visible-token-marker"])
        var raw = Data()
        for case let url as URL in FileManager.default.enumerator(at: store, includingPropertiesForKeys: nil)! {
            raw.append((try? Data(contentsOf: url)) ?? Data())
        }
        #expect(raw.range(of: Data("visible-token-marker".utf8)) == nil)
    }

    @Test("cleanup --dry-run lists candidates with bytes; a real run needs --media-dir")
    func cleanup() async throws {
        let store = emptyStore()
        let app = try AppDatabase.openBlocking(at: store.appendingPathComponent("app.sqlite"))
        try app.context.assets.putBlocking(
            Asset(
                remoteId: "r1", localId: "l1.jpg", ownerId: "u", checksum: "c1", fileName: "IMG_1.jpg",
                fileCreatedAt: Date().addingTimeInterval(-40 * 86_400), fileSize: 1_234))
        try app.close()
        let dry = try await CLI.run(["cleanup", "--dry-run", "--cutoff-days", "30"], store: store)
        #expect(dry.status == 0)
        let result = try jsonObject(dry.stdout)
        #expect(result["count"] as? Int == 1)
        #expect(result["bytes"] as? Int == 1_234)
        #expect(try await CLI.run(["cleanup", "--cutoff-days", "30"], store: store).status == 2)
        #expect(try await CLI.run(["cleanup", "--dry-run"], store: store).status == 2) // no cutoff chosen in the settings
    }

    @Test("cleanup deletes the files in --media-dir and forgets only those local copies")
    func cleanupReal() async throws {
        let store = emptyStore()
        let media = store.appendingPathComponent("media")
        try FileManager.default.createDirectory(at: media, withIntermediateDirectories: true)
        try Data(count: 10).write(to: media.appendingPathComponent("l1.jpg"))
        // A folder in l2.jpg's place: refused, so not deleted.
        try FileManager.default.createDirectory(at: media.appendingPathComponent("l2.jpg"), withIntermediateDirectories: true)
        let app = try AppDatabase.openBlocking(at: store.appendingPathComponent("app.sqlite"))
        for n in 1...2 {
            try app.context.assets.putBlocking(
                Asset(
                    remoteId: "r\(n)", localId: "l\(n).jpg", ownerId: "u", checksum: "c\(n)", fileName: "f",
                    fileCreatedAt: Date().addingTimeInterval(-40 * 86_400), fileSize: 10))
        }
        try app.close()
        let run = try await CLI.run(["cleanup", "--cutoff-days", "30", "--media-dir", media.path], store: store)
        #expect(run.status == 0)
        let result = try jsonObject(run.stdout)
        #expect(result["count"] as? Int == 1)
        #expect((result["notDeleted"] as? [Any])?.count == 1)
        let reopened = try AppDatabase.openBlocking(at: store.appendingPathComponent("app.sqlite"))
        defer { try? reopened.close() }
        #expect(try reopened.context.assets.findByRemoteIdBlocking("r1")?.localId == nil)
        #expect(try reopened.context.assets.findByRemoteIdBlocking("r2")?.localId == "l2.jpg")
    }

    @Test("db put-asset refuses a creation time outside the years 0001 to 9999, naming the range")
    func putAssetDateRange() async throws {
        let store = emptyStore()
        for (n, value) in ["253402300800", "253402300799.9999", "1e15", "-1e12", "-62135596801"].enumerated() {
            let r = try await CLI.run(
                ["db", "put-asset", "r\(n)", "o", "c\(n)", "--local-id", "l\(n)", "--created-at=\(value)"], store: store)
            #expect(r.status == 2, "\(value): \(r.stderr)")
            #expect(r.stderr.contains("at least -62135596800 (0001-01-01) and less than 253402300800 (10000-01-01)"), "\(r.stderr)")
        }
        for (n, value) in ["-62135596800", "253402300799"].enumerated() {
            let r = try await CLI.run(
                ["db", "put-asset", "ok\(n)", "o", "ok\(n)", "--local-id", "ok\(n)", "--created-at=\(value)"], store: store)
            #expect(r.status == 0, "\(value): \(r.stderr)")
        }
        let dry = try await CLI.run(["cleanup", "--dry-run", "--cutoff-days", "0"], store: store)
        #expect(dry.status == 0, "\(dry.stderr)")
        #expect(try jsonObject(dry.stdout)["count"] as? Int == 1) // 0001-01-01; 9999 is not yet old enough
    }

    @Test("cleanup names an asset row whose creation date it cannot read (exit 5) instead of stopping the process")
    func cleanupUnreadableDate() async throws {
        let store = emptyStore()
        let app = try AppDatabase.openBlocking(at: store.appendingPathComponent("app.sqlite"))
        // Stored as "10000-01-01 00:00:00.000", which no date decoder reads back.
        try app.context.assets.putBlocking(
            Asset(
                remoteId: "RF", localId: "LF", ownerId: "o", checksum: "cF", fileName: "f",
                fileCreatedAt: Date(timeIntervalSince1970: 253_402_300_800)))
        try app.close()
        let dry = try await CLI.run(["cleanup", "--dry-run", "--cutoff-days", "0"], store: store)
        #expect(dry.status == 5, "\(dry.stderr)")
        #expect(dry.stderr.contains("assets row 1 (remote id RF) has fileCreatedAt"), "\(dry.stderr)")
        #expect(dry.stderr.contains("10000-01-01"), "\(dry.stderr)")
    }

    @Test("a cleanup killed after deleting the files leaves records the next run repairs")
    func cleanupKilledMidway() async throws {
        let store = emptyStore()
        let media = store.appendingPathComponent("media")
        try FileManager.default.createDirectory(at: media, withIntermediateDirectories: true)
        let app = try AppDatabase.openBlocking(at: store.appendingPathComponent("app.sqlite"))
        for n in 1...3 {
            try Data(count: 10).write(to: media.appendingPathComponent("l\(n).jpg"))
            try app.context.assets.putBlocking(
                Asset(
                    remoteId: "r\(n)", localId: "l\(n).jpg", ownerId: "u", checksum: "c\(n)", fileName: "f",
                    fileCreatedAt: Date().addingTimeInterval(-40 * 86_400), fileSize: 10))
        }
        try app.close()
        let arguments = ["cleanup", "--cutoff-days", "30", "--media-dir", media.path]
        let child = try CLI.start(
            arguments, store: store, env: ["COFFER_TEST_PAUSE_AT": "cleanup-deleted", "COFFER_TEST_PAUSE_MS": "120000"])
        try await child.waitForStderr(containing: "test-pause: cleanup-deleted")
        let killed = try await child.killAndWait()
        #expect(killed.wasSignalled)
        func localIds() throws -> [String?] {
            let db = try AppDatabase.openBlocking(at: store.appendingPathComponent("app.sqlite"))
            defer { try? db.close() }
            return try (1...3).map { try db.context.assets.findByRemoteIdBlocking("r\($0)")?.localId }
        }
        // Killed midway: the files are gone, the records still claim them.
        #expect(try FileManager.default.contentsOfDirectory(atPath: media.path).isEmpty)
        #expect(try localIds() == ["l1.jpg", "l2.jpg", "l3.jpg"])
        let next = try await CLI.run(arguments, store: store)
        #expect(next.status == 0, "\(next.stderr)")
        let result = try jsonObject(next.stdout)
        #expect((result["alreadyGone"] as? [Any])?.count == 3)
        #expect((result["notDeleted"] as? [Any])?.count == 0)
        #expect(result["count"] as? Int == 0)
        #expect(try localIds() == [nil, nil, nil])
    }

    @Test("db put-asset refuses an empty --local-id, exit 2 naming it")
    func putAssetEmptyLocalId() async throws {
        let store = emptyStore()
        for n in 1...2 {
            let r = try await CLI.run(["db", "put-asset", "r\(n)", "o", "c\(n)", "--local-id", ""], store: store)
            #expect(r.status == 2, "\(r.stderr)")
            #expect(r.stderr.hasPrefix("error: invalid input: --local-id must not be empty"), "\(r.stderr)")
        }
    }

    @Test("reset needs --yes; with it the store is a fresh install")
    func reset() async throws {
        let store = emptyStore()
        _ = try await CLI.run(["settings", "set", "themeMode", "dark"], store: store)
        _ = try await CLI.run(["secure", "set", "accessToken", "--value-env", "T"], store: store, env: ["T": "x"])
        let refused = try await CLI.run(["reset"], store: store)
        #expect(refused.status == 2)
        #expect(try await CLI.run(["secure", "get", "accessToken"], store: store).status == 0)
        #expect(try await CLI.run(["reset", "--yes"], store: store).status == 0)
        #expect(try await CLI.run(["secure", "get", "accessToken"], store: store).status == 1)
        let theme = try jsonObject(try await CLI.run(["settings", "get", "themeMode"], store: store).stdout)
        #expect(theme["set"] as? Bool == false)
    }

    @Test("cleanup refuses an empty --media-dir (the current folder: its files were deleted) and one that is not a folder")
    func cleanupMediaDirRefused() async throws {
        let store = TemporaryFolders.path("coffer-cleanup-dir")
        let cwd = TemporaryFolders.make("coffer-cleanup-cwd")
        try Data("mine".utf8).write(to: cwd.appendingPathComponent("report.txt"))
        #expect(
            try await CLI.run(["db", "put-asset", "r1", "o", "c1", "--local-id", "report.txt", "--created-at", "0"], store: store).status
                == 0)
        let empty = try await runCoffer(
            ["--store", store.path, "cleanup", "--cutoff-days", "0", "--media-dir", ""], currentDirectory: cwd)
        #expect(empty.status == 2 && empty.stderr.contains("--media-dir"), "\(empty.status) \(empty.stderr)")
        #expect(FileManager.default.fileExists(atPath: cwd.appendingPathComponent("report.txt").path))
        let missing = try await CLI.run(
            ["cleanup", "--cutoff-days", "0", "--media-dir", cwd.appendingPathComponent("nope").path], store: store)
        #expect(missing.status == 2 && missing.stderr.contains("is not a folder"), "\(missing.status) \(missing.stderr)")
        let file = try await CLI.run(
            ["cleanup", "--cutoff-days", "0", "--media-dir", cwd.appendingPathComponent("report.txt").path], store: store)
        #expect(file.status == 2, "\(file.stderr)")
        // The record still claims its local copy: nothing was forgotten.
        let dry = try await CLI.run(["cleanup", "--cutoff-days", "0", "--dry-run"], store: store)
        #expect(dry.status == 0 && dry.stdout.contains("r1"), "\(dry.stdout) \(dry.stderr)")
    }
}
