// `coffer cache` with the sealed disk layer: nothing readable under the store, `--ttl`, and the
// hits, misses and expirations `cache stats` reports across processes.
import Foundation
import Testing

@Suite("coffer cache: sealed, ttl, counters")
struct CacheSealedCLITests {
    @Test("a marker stored with cache put is not found under the store; get still returns it")
    func noMarkerOnDisk() throws {
        let store = emptyStore()
        let image = store.deletingLastPathComponent().appendingPathComponent("img-\(UUID().uuidString)")
        try Data("CLI-PLAINTEXT-MARKER".utf8).write(to: image)
        #expect(try CLI.run(["cache", "put", "thumbnail", "asset-marker-1", image.path, "--ttl", "3600"], store: store).status == 0)
        var raw = Data()
        var names: [String] = []
        for case let url as URL in FileManager.default.enumerator(at: store, includingPropertiesForKeys: nil)! {
            raw.append((try? Data(contentsOf: url)) ?? Data())
            names.append(url.path)
        }
        #expect(raw.range(of: Data("CLI-PLAINTEXT-MARKER".utf8)) == nil)
        #expect(raw.range(of: Data("asset-marker-1".utf8)) == nil)
        #expect(!names.contains { $0.contains("asset-marker") })
        #expect(try CLI.run(["cache", "get", "thumbnail", "asset-marker-1"], store: store).stdout == "CLI-PLAINTEXT-MARKER")
    }

    @Test("cache stats shows the hits and misses of earlier processes, per kind")
    func statsCounters() throws {
        let store = emptyStore()
        let image = store.deletingLastPathComponent().appendingPathComponent("img-\(UUID().uuidString)")
        try Data(repeating: 0x42, count: 100).write(to: image)
        #expect(try CLI.run(["cache", "put", "preview", "p1", image.path], store: store).status == 0)
        #expect(try CLI.run(["cache", "get", "preview", "p1"], store: store).status == 0)
        #expect(try CLI.run(["cache", "get", "preview", "nope"], store: store).status == 1)
        let stats = try jsonObject(try CLI.run(["cache", "stats"], store: store).stdout)
        let previews = try #require((stats["kinds"] as? [String: Any])?["preview"] as? [String: Any])
        #expect(previews["hits"] as? Int == 1)
        #expect(previews["misses"] as? Int == 1)
        #expect(previews["expirations"] as? Int == 0)
        #expect(previews["entries"] as? Int == 1)
    }

    @Test("cache put --ttl that is not a positive number is an input error")
    func badTTL() throws {
        let store = emptyStore()
        let image = store.deletingLastPathComponent().appendingPathComponent("img-\(UUID().uuidString)")
        try Data([1]).write(to: image)
        #expect(try CLI.run(["cache", "put", "thumbnail", "a", image.path, "--ttl", "0"], store: store).status == 2)
    }
}
