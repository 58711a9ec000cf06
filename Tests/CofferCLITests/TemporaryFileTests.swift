// No temporary file outlives its write: a write killed with SIGKILL between creating its
// temporary file and renaming it leaves the file behind, and the next open of that store removes
// it — `secure delete` and `deniable init` leave nothing that opens.
import Foundation
import Testing

@Suite("Temporary files of killed writes")
struct TemporaryFileTests {
    /// Names in `folder` ending in `.tmp`.
    static func temporaries(_ folder: URL) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []).filter { $0.hasSuffix(".tmp") }.sorted()
    }

    /// Runs `coffer arguments` with standard input read from `input`, waits until a `.tmp` file
    /// appears in `folder`, and kills it with SIGKILL. Returns whether the kill landed while the
    /// process was running with the temporary file present.
    static func killWhileTemporary(in folder: URL, input: URL, _ arguments: [String]) throws -> Bool {
        let process = Process()
        process.executableURL = CLI.binary
        process.arguments = arguments
        process.standardInput = try FileHandle(forReadingFrom: input)
        process.standardOutput = Pipe()
        process.standardError = Pipe()
        try process.run()
        var seen = false
        for _ in 0..<50_000 where process.isRunning {
            if !temporaries(folder).isEmpty {
                seen = true
                break
            }
            usleep(100)
        }
        let landed = seen && process.isRunning && !temporaries(folder).isEmpty
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        return landed && process.terminationReason == .uncaughtSignal
    }

    @Test("secure set killed before its rename: the sealed temporary file is removed at the next open, and secure delete leaves nothing")
    func killedSecureSet() throws {
        let store = FileManager.default.temporaryDirectory.appendingPathComponent("coffer-tmp-kill-\(UUID().uuidString)")
        let items = store.appendingPathComponent("secure/items")
        // The key exists first, so the kill lands in the item's write.
        #expect(try CLI.run(["secure", "set", "warm", "--value-env", "V"], store: store, env: ["V": "w"]).status == 0)
        let big = store.appendingPathComponent("value.bin")
        try Data(repeating: 0x61, count: 48 << 20).write(to: big)
        var landed = false
        for _ in 0..<20 where !landed {
            landed = try Self.killWhileTemporary(in: items, input: big, ["--store", store.path, "secure", "set", "big"])
            if !landed { Self.temporaries(items).forEach { try? FileManager.default.removeItem(at: items.appendingPathComponent($0)) } }
        }
        try #require(landed, "no kill landed while the temporary file existed")
        // The killed write left its sealed copy behind, and no item file for "big".
        #expect(Self.temporaries(items).count == 1)
        #expect(try CLI.run(["secure", "get", "big"], store: store).status == 1)

        // The next open removes it (any command that opens the secure store).
        let list = try CLI.run(["secure", "list"], store: store)
        #expect(list.status == 0 && list.stdout == #"["warm"]"# + "\n", "\(list.stdout) \(list.stderr)")
        #expect(Self.temporaries(items).isEmpty, "left: \(Self.temporaries(items))")
        #expect(try CLI.run(["secure", "delete", "big"], store: store).status == 0)
        let left = try FileManager.default.contentsOfDirectory(atPath: items.path)
        #expect(left.count == 1, "only warm's item should remain: \(left)")
    }

    @Test("secure delete after a killed set removes the killed write's copy too")
    func deleteSweeps() throws {
        let store = FileManager.default.temporaryDirectory.appendingPathComponent("coffer-tmp-delete-\(UUID().uuidString)")
        let items = store.appendingPathComponent("secure/items")
        #expect(try CLI.run(["secure", "set", "warm", "--value-env", "V"], store: store, env: ["V": "w"]).status == 0)
        let big = store.appendingPathComponent("value.bin")
        try Data(repeating: 0x62, count: 48 << 20).write(to: big)
        var landed = false
        for _ in 0..<20 where !landed {
            landed = try Self.killWhileTemporary(in: items, input: big, ["--store", store.path, "secure", "set", "big"])
            if !landed { Self.temporaries(items).forEach { try? FileManager.default.removeItem(at: items.appendingPathComponent($0)) } }
        }
        try #require(landed, "no kill landed while the temporary file existed")
        #expect(Self.temporaries(items).count == 1)
        #expect(try CLI.run(["secure", "delete", "big"], store: store).status == 0)
        #expect(Self.temporaries(items).isEmpty, "left: \(Self.temporaries(items))")
    }

    @Test("deniable init leaves no earlier vault under a temporary name, so the old passphrase opens nothing")
    func deniableInitSweeps() throws {
        let store = FileManager.default.temporaryDirectory.appendingPathComponent("coffer-tmp-deniable-\(UUID().uuidString)")
        let folder = store.appendingPathComponent("deniable")
        let first = try CLI.run(["deniable", "init"], store: store)
        #expect(first.status == 0)
        let old = (try JSONSerialization.jsonObject(with: Data(first.stdout.utf8)) as? [String: Any])?["passphrase"] as? String ?? ""
        // What a vault write killed before its rename leaves: the whole sealed vault under its
        // temporary name (renamed into place, it opens under the old passphrase).
        let leftover = folder.appendingPathComponent(".vault.\(UUID().uuidString).tmp")
        try FileManager.default.copyItem(at: folder.appendingPathComponent("vault"), to: leftover)
        let second = try CLI.run(["deniable", "init"], store: store)
        #expect(second.status == 0, "\(second.stderr)")
        #expect(Self.temporaries(folder).isEmpty, "left: \(Self.temporaries(folder))")
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { !$0.hasPrefix(".") }
        #expect(Set(names) == ["vault", "sending-queue", "secure-element.key", "dead-drops.sqlite", "public-keys.json"])
        #expect(try CLI.run(["--passphrase-env", "P", "deniable", "unlock"], store: store, env: ["P": old]).status == 4)
    }
}
