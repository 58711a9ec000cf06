// The store stays small from the command line: no WAL left after a command, compaction, a
// streamed import.

import CofferTestSupport
import Foundation
import Testing

@Suite("Footprint from the command line")
struct FootprintCLITests {
    static func exists(_ url: URL) -> Bool { FileManager.default.fileExists(atPath: url.path) }

    @Test("after wallet and settings commands exit, no WAL or shared-memory file is left")
    func noWALAfterCommands() async throws {
        let store = try await CLI.newStore()
        #expect(try await CLI.wallet(["add", "t", "a", "v"], store: store).status == 0)
        #expect(try await CLI.wallet(["get", "t", "a"], store: store).status == 0)
        #expect(try await CLI.wallet(["search", "t", "{}"], store: store).status == 0)
        #expect(try await CLI.run(["settings", "set", "themeMode", "dark"], store: store).status == 0)
        #expect(try await CLI.run(["settings", "get", "themeMode"], store: store).status == 0)
        for name in ["wallet.sqlite", "app.sqlite"] {
            #expect(!Self.exists(store.appendingPathComponent(name + "-wal")), "\(name)-wal is left")
            #expect(!Self.exists(store.appendingPathComponent(name + "-shm")), "\(name)-shm is left")
        }
    }

    @Test("wallet compact and db compact print the bytes before and after, and the store shrinks after a large removal")
    func compact() async throws {
        let store = try await CLI.newStore()
        let file = store.appendingPathComponent("in.jsonl")
        try (0..<5_000).map { #"{"type":"t","id":"r\#($0)","value":"\#(String(repeating: "v", count: 400))","tags":{"k":"\#($0 % 10)"}}"# }
            .joined(separator: "\n").write(to: file, atomically: true, encoding: .utf8)
        #expect(try await CLI.wallet(["import", file.path], store: store).status == 0)
        let full = try FileManager.default.attributesOfItem(atPath: store.appendingPathComponent("wallet.sqlite").path)[.size] as! Int
        #expect(try await CLI.wallet(["remove-all", "t", #"{"k": {"$neq": "0"}}"#], store: store).stdout == #"{"removed":4500}"# + "\n")
        let r = try await CLI.wallet(["compact"], store: store)
        #expect(r.status == 0)
        let json = try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as! [String: Int]
        #expect(json["bytesAfter"]! <= full * 20 / 100, "\(r.stdout) full \(full)")
        let db = try await CLI.run(["db", "compact"], store: store)
        #expect(db.status == 0 && db.stdout.hasPrefix(#"{"bytesBefore":"#), "\(db.stdout) \(db.stderr)")
    }

    @Test("import streams expiresAt through, and a bad line is named with nothing imported")
    func importExpiry() async throws {
        let store = try await CLI.newStore()
        let file = store.appendingPathComponent("in.jsonl")
        try """
        {"type":"t","id":"a","value":"1","expiresAt":1}
        {"type":"t","id":"b","value":"2","expiresAt":99999999999999}

        {"type":"t","id":"c","value":"3"}
        """.write(to: file, atomically: true, encoding: .utf8)
        #expect(try await CLI.wallet(["import", file.path], store: store).status == 0)
        #expect(try await CLI.wallet(["count", "t"], store: store).stdout == #"{"count":2}"# + "\n")
        try #"{"type":"t","id":"d","value":"4"}"#.appending("\n{\"type\":\"t\",\"id\":\"e\",\"value\":\"5\",\"expiresAt\":\"soon\"}\n")
            .write(to: file, atomically: true, encoding: .utf8)
        let bad = try await CLI.wallet(["import", file.path], store: store)
        #expect(bad.status == 2 && bad.stderr.contains("line 2"), "\(bad.stderr)")
        #expect(try await CLI.wallet(["count", "t"], store: store).stdout == #"{"count":2}"# + "\n")
    }
}
