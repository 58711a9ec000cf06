// Wallet input from files, standard input and the environment; UTF-8 checked, never repaired;
// nothing overwritten; progress lines that end before an error.

import CofferTestSupport
import Foundation
import GRDB
import Testing

/// Runs `coffer` through bash, so that arguments can hold bytes that are not UTF-8 (Process
/// takes Swift strings, which cannot).
func runRawArguments(_ shellArguments: String, store: URL) async throws -> CLIResult {
    try await runProcess(
        URL(fileURLWithPath: "/bin/bash"), ["-c", "exec \"$COFFER\" --store \"$STORE\" --raw-key-env K " + shellArguments],
        environment: ["COFFER": CLI.binary.path, "STORE": store.path, "K": CLI.key])
}

@Suite("coffer wallet input")
struct WalletInputTests {
    func temporaryFile(_ contents: Data, mode: Int = 0o600) throws -> URL {
        let url = TemporaryFolders.path("coffer-input")
        try contents.write(to: url)
        try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: url.path)
        return url
    }

    @Test("a query of about 1 MB from --query-file and from standard input searches like a small one")
    func queryFile() async throws {
        let store = try await CLI.newStore()
        for i in 0..<20 {
            #expect(try await CLI.wallet(["add", "t", "r\(i)", "v", "--tags", #"{"e":"v\#(i)"}"#], store: store).status == 0)
        }
        let values = (0..<100_000).map { "\"v\($0 * 4)\"" }.joined(separator: ",")
        let query = Data((#"{"e":{"$in":["# + values + "]}}").utf8)
        #expect(query.count > 900_000)
        let file = try temporaryFile(query)
        for r in [
            try await CLI.wallet(["search", "t", "--query-file", file.path], store: store),
            try await CLI.wallet(["search", "t", "--query-file", "-"], store: store, stdin: query),
        ] {
            #expect(r.status == 0, "\(r.stderr)")
            let records = (try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any])?["records"] as? [[String: Any]]
            #expect(Set(records?.compactMap { $0["id"] as? String } ?? []) == Set(stride(from: 0, to: 20, by: 4).map { "r\($0)" }))
        }
        #expect(try await CLI.wallet(["search", "t", "{}", "--query-file", file.path], store: store).status == 2)
    }

    @Test("values and tags come from files and standard input, byte for byte")
    func valueAndTagsFiles() async throws {
        let store = try await CLI.newStore()
        let value = String(repeating: "é\n", count: 100_000)
        let valueFile = try temporaryFile(Data(value.utf8))
        let tagsFile = try temporaryFile(Data(#"{"a":"1","~b":"2"}"#.utf8))
        #expect(
            try await CLI.wallet(["add", "t", "a", "--value-file", valueFile.path, "--tags-file", tagsFile.path], store: store).status == 0)
        #expect(try await CLI.wallet(["add", "t", "b", "--value-file", "-"], store: store, stdin: Data("from stdin".utf8)).status == 0)
        #expect(try await CLI.wallet(["update", "t", "b", "--value-file", "-"], store: store, stdin: Data("updated".utf8)).status == 0)
        let a = try await CLI.wallet(["get", "t", "a"], store: store)
        let object = try JSONSerialization.jsonObject(with: Data(a.stdout.utf8)) as? [String: Any]
        #expect(object?["value"] as? String == value)
        #expect(object?["tags"] as? [String: String] == ["a": "1", "~b": "2"])
        #expect(try await CLI.wallet(["get", "t", "b"], store: store).stdout.contains(#""value":"updated""#))
        #expect(try await CLI.wallet(["add", "t", "c"], store: store).status == 2)
    }

    @Test("the raw key comes from the environment or an owner-only file; --raw-key warns once")
    func keySources() async throws {
        let store = try await CLI.newStore()
        let keyFile = try temporaryFile(Data(CLI.key.utf8))
        #expect(try await CLI.run(["--raw-key-file", keyFile.path, "wallet", "add", "t", "1", "v"], store: store).status == 0)
        let wide = try temporaryFile(Data(CLI.key.utf8), mode: 0o644)
        let refused = try await CLI.run(["--raw-key-file", wide.path, "wallet", "get", "t", "1"], store: store)
        #expect(refused.status == 2 && refused.stderr.contains("group or others"), "\(refused.stderr)")
        let visible = try await CLI.run(["--raw-key", CLI.key, "wallet", "get", "t", "1"], store: store)
        #expect(visible.status == 0)
        #expect(visible.stderr.components(separatedBy: "\n").filter { $0.hasPrefix("warning:") }.count == 1, "\(visible.stderr)")
        #expect(try await CLI.wallet(["get", "t", "1"], store: store).stderr.isEmpty)
        let both = try await CLI.run(
            ["--raw-key-file", keyFile.path, "--raw-key-env", "X", "wallet", "get", "t", "1"], store: store, env: ["X": CLI.key])
        #expect(both.status == 2)
        // rekey's new key the same ways.
        let newKey = Data(repeating: 3, count: 32).base64EncodedString()
        let newKeyFile = try temporaryFile(Data(newKey.utf8))
        #expect(try await CLI.wallet(["rekey", "--new-raw-key-file", newKeyFile.path], store: store).status == 0)
        #expect(try await CLI.run(["--raw-key-env", "N", "wallet", "get", "t", "1"], store: store, env: ["N": newKey]).status == 0)
    }

    @Test("arguments that are not valid UTF-8 are refused with exit 2, and nothing is written")
    func invalidUTF8Arguments() async throws {
        let store = try await CLI.newStore()
        let add = try await runRawArguments("wallet add t \"$(printf 'bad\\377')\" v1", store: store)
        #expect(add.status == 2)
        #expect(add.stderr.contains("argument 8 (after t)") && add.stderr.contains("not valid UTF-8"), "\(add.stderr)")
        let tags = try await runRawArguments("wallet add t ok v --tags \"$(printf '{\"a\":\"\\376\"}')\"", store: store)
        #expect(tags.status == 2)
        #expect(try await CLI.wallet(["search", "t", "{}"], store: store).stdout.contains(#""records":[]"#))
    }

    @Test("files and JSON lines that are not valid UTF-8 are refused naming the file or line")
    func invalidUTF8Files() async throws {
        let store = try await CLI.newStore()
        let bad = try temporaryFile(Data([0x62, 0x61, 0x64, 0xFF]))
        let r = try await CLI.wallet(["add", "t", "1", "--value-file", bad.path], store: store)
        #expect(r.status == 2 && r.stderr.contains("not valid UTF-8"), "\(r.stderr)")
        var lines = Data((#"{"type":"t","id":"a","value":"v"}"# + "\n").utf8)
        lines.append(Data(#"{"type":"t","id":"b","value":"v"#.utf8))
        lines.append(0xFE)
        lines.append(Data("\"}\n".utf8))
        let jsonl = try temporaryFile(lines)
        let imported = try await CLI.wallet(["import", jsonl.path], store: store)
        #expect(imported.status == 2 && imported.stderr.contains("line 2"), "\(imported.stderr)")
        #expect(try await CLI.wallet(["search", "t", "{}"], store: store).stdout.contains(#""records":[]"#))
    }

    @Test("--value-file, --tags-file and --query-file naming a device or a folder are refused by name, and nothing is added")
    func inputFileKinds() async throws {
        let store = try await CLI.newStore()
        let folder = TemporaryFolders.path("coffer-input-folder")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let tags = try temporaryFile(Data("{}".utf8))
        for (arguments, kind) in [
            (["add", "t", "a", "--value-file", "/dev/null"], "a device"),
            (["add", "t", "a", "--value-file", folder.path], "a folder"),
            (["add", "t", "a", "v", "--tags-file", "/dev/zero"], "a device"),
            (["count", "t", "--query-file", "/dev/zero"], "a device"),
            (["add", "t", "a", "--value-file", tags.path, "--tags-file", folder.path], "a folder"),
        ] {
            let r = try await CLI.wallet(arguments, store: store)
            #expect(r.status == 2, "\(arguments): \(r.stderr)")
            #expect(r.stderr.contains("it is \(kind), not a text file or a pipe"), "\(arguments): \(r.stderr)")
        }
        #expect(try await CLI.wallet(["count", "t"], store: store).stdout == #"{"count":0}"# + "\n")
    }

    @Test("a value file or standard input larger than the largest value is refused naming the limit, before or while reading")
    func valueInputOverLimit() async throws {
        let store = try await CLI.newStore()
        let big = Data(repeating: 0x61, count: (16 << 20) + 1)
        let file = try temporaryFile(big)
        let fromFile = try await CLI.wallet(["add", "t", "a", "--value-file", file.path], store: store)
        #expect(fromFile.status == 2)
        #expect(fromFile.stderr.contains("it is 16777217 bytes, more than the largest value of 16777216 bytes"), "\(fromFile.stderr)")
        let fromPipe = try await CLI.wallet(["add", "t", "a", "--value-file", "-"], store: store, stdin: big + big)
        #expect(fromPipe.status == 2)
        #expect(
            fromPipe.stderr.contains("cannot read standard input: it gave more than the largest value of 16777216 bytes"),
            "\(fromPipe.stderr)")
        #expect(try await CLI.wallet(["count", "t"], store: store).stdout == #"{"count":0}"# + "\n")
    }

    @Test("an import line whose expiresAt is the largest Int64 imports the record (it used to stop the process)")
    func importFarExpiry() async throws {
        let store = try await CLI.newStore()
        let lines = try temporaryFile(Data(#"{"type":"t","id":"far","value":"x","expiresAt":9223372036854775807}"#.utf8 + [0x0A]))
        let imported = try await CLI.wallet(["import", lines.path], store: store)
        #expect(imported.status == 0, "\(imported.stderr)")
        #expect(try await CLI.wallet(["get", "t", "far"], store: store).stdout.contains(#""value":"x""#))
    }

    @Test("create refuses any existing file; a file that is not a wallet is corrupted and left as it was")
    func nothingOverwritten() async throws {
        let sqlite = TemporaryFolders.path("other").appendingPathExtension("sqlite")
        let made = try await runProcess(
            URL(fileURLWithPath: "/usr/bin/env"),
            [
                "python3", "-c", "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('create table x(y)'); c.commit()",
                sqlite.path,
            ])
        #expect(made.status == 0, "\(made.stderr)")
        let contents: [(String, Data)] = [
            // (An empty file is what a killed create leaves: no wallet, see CreateKillTests.)
            ("one byte", Data([0])), ("garbage", Data(repeating: 0x41, count: 5000)),
            ("another SQLite database", try Data(contentsOf: sqlite)),
        ]
        for (label, bytes) in contents {
            let store = TemporaryFolders.path("coffer-overwrite")
            try FileManager.default.createDirectory(at: store, withIntermediateDirectories: true)
            let file = store.appendingPathComponent("wallet.sqlite")
            try bytes.write(to: file)
            let created = try await CLI.wallet(["create"], store: store)
            #expect(created.status == 3, "\(label): create \(created.status) \(created.stderr)")
            let opened = try await CLI.wallet(["get", "t", "1"], store: store)
            #expect(opened.status == 5, "\(label): open \(opened.status) \(opened.stderr)")
            #expect(try Data(contentsOf: file) == bytes, "\(label) was changed")
        }
    }

    @Test("a failing import ends the progress line before the error, and draws no carriage returns into a pipe")
    func progressThenError() async throws {
        let store = try await CLI.newStore()
        var lines = ""
        for i in 0..<3_000 { lines += #"{"type":"t","id":"r\#(i)","value":"v"}"# + "\n" }
        lines += #"{"type":"t","id":"r5","value":"v"}"# + "\n"
        let file = try temporaryFile(Data(lines.utf8))
        let r = try await CLI.wallet(["import", file.path], store: store)
        #expect(r.status == 3)
        #expect(!r.stderr.contains("\r"))
        #expect(r.stderr.components(separatedBy: "\n").contains { $0.hasPrefix("error: ") }, "\(r.stderr)")
    }

    @Test("wallet check prints one JSON report and exits 0 when clean, 5 with the record named when an index row is gone")
    func check() async throws {
        let store = try await CLI.newStore()
        #expect(try await CLI.wallet(["add", "t", "a", "v", "--tags", #"{"e":"1"}"#], store: store).status == 0)
        let clean = try await CLI.wallet(["check"], store: store)
        #expect(clean.status == 0)
        #expect(clean.stdout == #"{"records":1,"tagRows":1,"problems":[],"problemCount":0}"# + "\n")
        let db = try DatabaseQueue(path: store.appendingPathComponent("wallet.sqlite").path)
        try await db.write { db in try db.execute(sql: "DELETE FROM tags") }
        try db.close()
        let damaged = try await CLI.wallet(["check"], store: store)
        #expect(damaged.status == 5)
        #expect(damaged.stdout.contains(#""kind":"missingTagRow","type":"t","id":"a""#), "\(damaged.stdout)")
        #expect(damaged.stderr.contains("error: corrupted"))
    }

    @Test("wallet count and remove-all take a query (or none, or --query-file) and print their JSON")
    func countAndRemoveAll() async throws {
        let store = try await CLI.newStore()
        for i in 0..<10 {
            #expect(try await CLI.wallet(["add", "t", "r\(i)", "v", "--tags", #"{"p":"\#(i % 2)"}"#], store: store).status == 0)
        }
        #expect(try await CLI.wallet(["count", "t"], store: store).stdout == #"{"count":10}"# + "\n")
        #expect(try await CLI.wallet(["count", "t", #"{"p":"1"}"#], store: store).stdout == #"{"count":5}"# + "\n")
        let query = try temporaryFile(Data(#"{"p":"0"}"#.utf8))
        #expect(try await CLI.wallet(["remove-all", "t", "--query-file", query.path], store: store).stdout == #"{"removed":5}"# + "\n")
        #expect(try await CLI.wallet(["count", "t", #"{"p":"0"}"#], store: store).stdout == #"{"count":0}"# + "\n")
        #expect(try await CLI.wallet(["remove-all", "t"], store: store).stdout == #"{"removed":5}"# + "\n")
        #expect(try await CLI.wallet(["count", "t", #"{"p": {"$nope": 1}}"#], store: store).status == 2)
    }
}
