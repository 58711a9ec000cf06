// Many `coffer` processes on one store at the same moment, as an app, its extensions and scripts
// would: none fails, nothing is lost, the cache's limits hold.

import CofferTestSupport
import Foundation
import Testing

@Suite("Many processes, one store")
struct ManyProcessesTests {
    @Test(
        "56 processes writing settings, assets, secure items and cache entries at once: none fails, nothing is lost, the cache limit holds")
    func manyWriters() async throws {
        let store = TemporaryFolders.path("coffer-many")
        // The store exists (an installed app), with a small thumbnail limit to press on.
        #expect(try await CLI.run(["settings", "set", "thumbnailCacheSize", "5"], store: store).status == 0)
        let picture = TemporaryFolders.path("coffer-many").appendingPathExtension("jpg")
        try Data(repeating: 5, count: 4_000).write(to: picture)

        let count = 56
        var children: [ChildProcess] = []
        for i in 0..<count {
            switch i % 4 {
            case 0: children.append(try CLI.start(["settings", "set", "p\(i)", "\(i)", "--kind", "int"], store: store))
            case 1: children.append(try CLI.start(["db", "put-asset", "r\(i)", "owner", "c\(i)"], store: store))
            case 2: children.append(try CLI.start(["cache", "put", "thumbnail", "t\(i)", picture.path], store: store))
            default: children.append(try CLI.start(["secure", "set", "s\(i)", "--value-env", "V"], store: store, env: ["V": "v\(i)"]))
            }
        }
        for (child, result) in zip(children, try await children.wait()) {
            #expect(result.status == 0, "\(child.commandLine) failed: \(result.stderr)")
        }

        let settings = try await CLI.run(["settings", "list"], store: store)
        let stored = try #require(try JSONSerialization.jsonObject(with: Data(settings.stdout.utf8)) as? [String: Any])
        for i in stride(from: 0, to: count, by: 4) { #expect(stored["p\(i)"] as? Int == i, "setting p\(i) lost") }

        let stats = try await CLI.run(["db", "stats"], store: store)
        let rows = try #require(try JSONSerialization.jsonObject(with: Data(stats.stdout.utf8)) as? [String: Any])
        #expect(rows["assets"] as? Int == count / 4)

        let secure = try await CLI.run(["secure", "list"], store: store)
        let names = try #require(try JSONSerialization.jsonObject(with: Data(secure.stdout.utf8)) as? [String])
        #expect(names.count == count / 4, "\(secure.stdout) \(secure.stderr)")
        #expect(secure.stderr.isEmpty, "\(secure.stderr)")

        let thumbnails = try FileManager.default.contentsOfDirectory(atPath: store.appendingPathComponent("caches/media/thumbnail").path)
        #expect(thumbnails.count == 5, "\(thumbnails.count) thumbnail files against a limit of 5")
    }

    @Test("40 processes setting one key at once all succeed, and the stored value is one of theirs")
    func oneKeyManyWriters() async throws {
        let store = TemporaryFolders.path("coffer-many")
        #expect(try await CLI.run(["settings", "list"], store: store).status == 0)
        let children = try (1...40).map { try CLI.start(["settings", "set", "tilesPerRow", "\($0)"], store: store) }
        for (child, result) in zip(children, try await children.wait()) {
            #expect(result.status == 0, "\(child.commandLine): \(result.stderr)")
        }
        let get = try await CLI.run(["settings", "get", "tilesPerRow"], store: store)
        let value = try #require(try JSONSerialization.jsonObject(with: Data(get.stdout.utf8)) as? [String: Any])["value"] as? Int
        #expect((1...40).contains(value ?? 0))
    }
}
