// `coffer cache` with the sealed disk layer: nothing readable under the store, `--ttl`, and the
// hits, misses and expirations `cache stats` reports across processes.

import CofferTestSupport
import Foundation
import Testing

@Suite("coffer cache: sealed, ttl, counters")
struct CacheSealedCLITests {
    @Test("a marker stored with cache put is not found under the store; get still returns it")
    func noMarkerOnDisk() async throws {
        let store = emptyStore()
        let image = store.deletingLastPathComponent().appendingPathComponent("img-\(UUID().uuidString)")
        try Data("CLI-PLAINTEXT-MARKER".utf8).write(to: image)
        #expect(try await CLI.run(["cache", "put", "thumbnail", "asset-marker-1", image.path, "--ttl", "3600"], store: store).status == 0)
        var raw = Data()
        var names: [String] = []
        for case let url as URL in FileManager.default.enumerator(at: store, includingPropertiesForKeys: nil)! {
            raw.append((try? Data(contentsOf: url)) ?? Data())
            names.append(url.path)
        }
        #expect(raw.range(of: Data("CLI-PLAINTEXT-MARKER".utf8)) == nil)
        #expect(raw.range(of: Data("asset-marker-1".utf8)) == nil)
        #expect(!names.contains { $0.contains("asset-marker") })
        #expect(try await CLI.run(["cache", "get", "thumbnail", "asset-marker-1"], store: store).stdout == "CLI-PLAINTEXT-MARKER")
    }

    @Test("cache stats shows the hits and misses of earlier processes, per kind")
    func statsCounters() async throws {
        let store = emptyStore()
        let image = store.deletingLastPathComponent().appendingPathComponent("img-\(UUID().uuidString)")
        try Data(repeating: 0x42, count: 100).write(to: image)
        #expect(try await CLI.run(["cache", "put", "preview", "p1", image.path], store: store).status == 0)
        #expect(try await CLI.run(["cache", "get", "preview", "p1"], store: store).status == 0)
        #expect(try await CLI.run(["cache", "get", "preview", "nope"], store: store).status == 1)
        let stats = try jsonObject(try await CLI.run(["cache", "stats"], store: store).stdout)
        let previews = try #require((stats["kinds"] as? [String: Any])?["preview"] as? [String: Any])
        #expect(previews["hits"] as? Int == 1)
        #expect(previews["misses"] as? Int == 1)
        #expect(previews["expirations"] as? Int == 0)
        #expect(previews["entries"] as? Int == 1)
    }

    @Test("cache put of a folder or a device is an input error naming it; a pipe's bytes are stored")
    func putInputKinds() async throws {
        let store = emptyStore()
        let folder = store.deletingLastPathComponent().appendingPathComponent("dir-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let onFolder = try await CLI.run(["cache", "put", "thumbnail", "a", folder.path], store: store)
        #expect(onFolder.status == 2)
        #expect(onFolder.stderr.contains("it is a folder"), "\(onFolder.stderr)")
        let onDevice = try await CLI.run(["cache", "put", "thumbnail", "a", "/dev/null"], store: store)
        #expect(onDevice.status == 2)
        #expect(onDevice.stderr.contains("it is a device"), "\(onDevice.stderr)")
        let fifo = store.deletingLastPathComponent().appendingPathComponent("fifo-\(UUID().uuidString)")
        #expect(mkfifo(fifo.path, 0o600) == 0)
        // The writer's open waits for the command to open the pipe for reading.
        DispatchQueue.global().async {
            guard let handle = FileHandle(forWritingAtPath: fifo.path) else { return }
            handle.write(Data(repeating: 9, count: 70_000))
            try? handle.close()
        }
        let onPipe = try await CLI.run(["cache", "put", "thumbnail", "p", fifo.path], store: store)
        #expect(onPipe.status == 0, "\(onPipe.stderr)")
        #expect(onPipe.stdout == #"{"stored":{"kind":"thumbnail","id":"p","bytes":70000}}"# + "\n")
    }

    @Test("cache put --ttl that is not a positive number is an input error")
    func badTTL() async throws {
        let store = emptyStore()
        let image = store.deletingLastPathComponent().appendingPathComponent("img-\(UUID().uuidString)")
        try Data([1]).write(to: image)
        #expect(try await CLI.run(["cache", "put", "thumbnail", "a", image.path, "--ttl", "0"], store: store).status == 2)
    }

    @Test("an entry put with --ttl expires: get misses and stats counts the expiration")
    func ttlExpires() async throws {
        let store = emptyStore()
        let image = store.deletingLastPathComponent().appendingPathComponent("img-\(UUID().uuidString)")
        try Data(repeating: 7, count: 64).write(to: image)
        #expect(try await CLI.run(["cache", "put", "thumbnail", "t1", image.path, "--ttl", "1"], store: store).status == 0)
        try await eventually("the entry expired") { try await CLI.run(["cache", "get", "thumbnail", "t1"], store: store).status == 1 }
        let stats = try jsonObject(try await CLI.run(["cache", "stats"], store: store).stdout)
        let thumbnails = try #require((stats["kinds"] as? [String: Any])?["thumbnail"] as? [String: Any])
        #expect(thumbnails["expirations"] as? Int == 1)
        #expect(thumbnails["entries"] as? Int == 0)
    }

    @Test("after reset a copy of the cache folder taken before it cannot be read")
    func resetShreds() async throws {
        let store = emptyStore()
        let image = store.deletingLastPathComponent().appendingPathComponent("img-\(UUID().uuidString)")
        try Data("SHRED-MARKER".utf8).write(to: image)
        #expect(try await CLI.run(["cache", "put", "thumbnail", "a1", image.path], store: store).status == 0)
        let media = store.appendingPathComponent("caches/media", isDirectory: true)
        let copy = store.deletingLastPathComponent().appendingPathComponent("media-copy-\(UUID().uuidString)")
        try FileManager.default.copyItem(at: media, to: copy)
        #expect(try await CLI.run(["reset", "--yes"], store: store).status == 0)
        // The key's sealed-file store (the Keychain on Apple platforms) is gone with the reset.
        #expect(!FileManager.default.fileExists(atPath: store.appendingPathComponent("media-cache-key").path))
        // The copy put back where the cache was: its key is gone, so the entry is a miss.
        try FileManager.default.createDirectory(at: media.deletingLastPathComponent(), withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: copy, to: media)
        #expect(try await CLI.run(["cache", "get", "thumbnail", "a1"], store: store).status == 1)
    }
}
