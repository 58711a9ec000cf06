// Importing libindy wallets and Aries Askar stores: Askar stores written by the real Askar (PyPI
// `aries-askar`), libindy wallets from a generator that follows libindy's format, and Askar's own
// upstream libindy fixture. Everything is driven through the `coffer` binary and read back
// through the wallet API.

import CofferSync
import CofferTestSupport
import CofferWallet
import Foundation
import GRDB
import Testing

/// The source stores, made by Tests/Interop/foreign.sh in a fresh folder.
enum ForeignStores {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// Runs foreign.sh with `arguments`: true when it made the stores, false (a recorded failure)
    /// when it failed. When PyPI cannot be reached the test is cancelled, which Swift Testing
    /// reports as skipped with the script's reason (not as a pass).
    static func make(_ arguments: [String]) async throws -> Bool {
        let r = try await runProcess(
            URL(fileURLWithPath: "/usr/bin/env"), ["bash", root.appendingPathComponent("Tests/Interop/foreign.sh").path] + arguments,
            within: .seconds(900)) // a first run installs from PyPI (venv.sh gives pip up to 600 s)
        try skipWhenOffline(r)
        #expect(r.status == 0 && r.stdout.contains("stores ok"), "\(r.stdout)\(r.stderr)")
        return r.status == 0
    }

    /// Askar's upstream libindy fixture, copied into a fresh folder (a reader of a WAL-mode
    /// file leaves SQLite's -wal and -shm beside it: not in the repository).
    static func fixture() throws -> URL {
        let copy = folder().appendingPathComponent("indy_wallet_sqlite.db")
        try FileManager.default.copyItem(at: root.appendingPathComponent("Tests/Interop/Fixtures/indy_wallet_sqlite.db"), to: copy)
        return copy
    }

    static func folder() -> URL { TemporaryFolders.make("coffer-foreign") }

    static func json(_ url: URL) throws -> [String: Any] {
        try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as! [String: Any]
    }

    /// A tag set as name → sorted values, from the JSON the generators wrote.
    static func tags(_ json: [String: Any]) -> [String: [String]] {
        var out = [String: [String]]()
        for (k, v) in json {
            if let s = v as? String { out[k] = [s] } else { out[k] = (v as! [String]).sorted() }
        }
        return out
    }

    /// The same from Coffer's tags.
    static func tags(_ tags: WalletTags?) -> [String: [String]] {
        var out = [String: [String]]()
        for (k, v) in tags ?? WalletTags() { out[k] = v.values.sorted() }
        return out
    }

    static func walletTags(_ json: [String: Any]) -> WalletTags {
        var t = WalletTags()
        for (k, v) in json { t[k] = (v as? String).map(TagValue.string) ?? .list(v as! [String]) }
        return t
    }

    /// The store's wallet, opened through the API with the CLI tests' key.
    static func open(_ store: URL) async throws -> Wallet {
        try await Wallet.open(at: store.appendingPathComponent("wallet.sqlite"), key: .raw(Data(repeating: 9, count: 32)))
    }

    /// Every expected record is in the wallet, byte for byte, and the import printed their count.
    static func expectRecords(_ records: [[String: Any]], in store: URL) async throws {
        let wallet = try await open(store)
        defer { try? wallet.close() }
        var perType = [String: Int]()
        for r in records {
            let type = r["type"] as! String
            let id = r["id"] as! String
            perType[type, default: 0] += 1
            let got = try await wallet.get(type: type, id: id, options: RecordOptions(retrieveValue: true, retrieveTags: true))
            #expect(got.value == r["value"] as? String, "\(type)/\(id)")
            #expect(tags(got.tags) == tags(r["tags"] as! [String: Any]), "\(type)/\(id)")
        }
        for (type, n) in perType { #expect(try await wallet.count(type: type) == n, "\(type)") }
    }

    /// Rows of the target wallet's items table (records, and the wallet's own secrets if any).
    static func itemRows(_ store: URL, where condition: String = "1") throws -> Int {
        let db = try DatabaseQueue(path: store.appendingPathComponent("wallet.sqlite").path)
        defer { try? db.close() }
        return try db.read { try Int.fetchOne($0, sql: "SELECT COUNT(*) FROM items WHERE \(condition)")! }
    }

    static func importAskar(_ source: URL, key: String, store: URL, extra: [String] = []) async throws -> CLIResult {
        try await CLI.run(
            ["--raw-key-env", "COFFER_TEST_KEY", "wallet", "import-askar", source.path, "--source-key-env", "SOURCE_KEY"] + extra,
            store: store, env: ["COFFER_TEST_KEY": CLI.key, "SOURCE_KEY": key])
    }

    static func importIndy(_ source: URL, key: String, kdf: String, store: URL) async throws -> CLIResult {
        try await CLI.run(
            [
                "--raw-key-env", "COFFER_TEST_KEY", "wallet", "import-indy", source.path, "--source-key-env", "SOURCE_KEY",
                "--source-kdf", kdf,
            ], store: store, env: ["COFFER_TEST_KEY": CLI.key, "SOURCE_KEY": key])
    }

    /// `coffer wallet import-indy` (raw source key) run under a python3 parent that has it as its
    /// only child and reports its peak resident set (`getrusage(RUSAGE_CHILDREN)`): the importing
    /// process's own peak memory, whatever else runs in the test process.
    static func peakResidentImport(_ source: URL, key: String, store: URL) async throws -> (result: CLIResult, peakBytes: Int) {
        let report =
            "import resource, subprocess, sys; code = subprocess.run(sys.argv[1:]).returncode; "
            + "print('peak-rss-kib', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr); sys.exit(code)"
        let r = try await runProcess(
            URL(fileURLWithPath: "/usr/bin/env"),
            [
                "python3", "-c", report, CLI.binary.path, "--store", store.path, "--raw-key-env", "COFFER_TEST_KEY", "wallet",
                "import-indy",
                source.path, "--source-key-env", "SOURCE_KEY", "--source-kdf", "raw",
            ], environment: ["COFFER_TEST_KEY": CLI.key, "SOURCE_KEY": key])
        let line = r.stderr.split(separator: "\n").last { $0.hasPrefix("peak-rss-kib ") }
        let kib = try #require(line.flatMap { Int($0.dropFirst("peak-rss-kib ".count)) }, "no peak reported: \(r.stderr)")
        return (r, kib * 1_024)
    }

    static func output(_ r: CLIResult) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any]) ?? [:]
    }

    static func expectUnchanged(_ file: URL, _ before: Data) throws {
        #expect(try Data(contentsOf: file) == before, "\(file.lastPathComponent) changed")
    }
}

@Suite("Importing Askar stores made by Askar")
struct AskarImportTests {
    @Test(
        "raw key, two profiles, Argon2i, no key: every record reads back as Askar reads it; expired ones stay behind, the rest keep their expiry"
    )
    func everyRecordAsAskarReadsIt() async throws {
        let dir = ForeignStores.folder()
        guard try await ForeignStores.make(["askar", dir.path]) else { return }
        let manifest = try ForeignStores.json(dir.appendingPathComponent("askar.json"))
        for entry in manifest["stores"] as! [[String: Any]] {
            let source = dir.appendingPathComponent(entry["file"] as! String)
            let before = try Data(contentsOf: source)
            let store = try await CLI.newStore()
            var extra = [String]()
            if let profile = entry["profile"] as? String { extra += ["--source-profile", profile] }
            if entry["keyEntries"] != nil { extra.append("--skip-keys") }
            let r = try await ForeignStores.importAskar(source, key: entry["key"] as! String, store: store, extra: extra)
            #expect(r.status == 0, "\(r.stderr)")
            let records = entry["records"] as! [[String: Any]]
            let out = ForeignStores.output(r)
            #expect(out["imported"] as? Int == records.count)
            #expect(out["source"] as? String == "askar")
            #expect(out["profile"] as? String == entry["profileName"] as? String)
            let types = out["types"] as? [String: Int] ?? [:]
            #expect(types.values.reduce(0, +) == records.count)
            try await ForeignStores.expectRecords(records, in: store)
            // The expired record is not there; the expiring ones kept an expiry in the future.
            let expiring = records.filter { $0["expires"] as? Bool == true }.count
            #expect(expiring > 0)
            let now = Int64(Date().timeIntervalSince1970 * 1000)
            #expect(try ForeignStores.itemRows(store, where: "expiry IS NOT NULL") == expiring)
            #expect(
                try ForeignStores.itemRows(store, where: "expiry IS NOT NULL AND (expiry < \(now) OR expiry > \(now + 2 * 86_400_000))")
                    == 0)
            let wallet = try await ForeignStores.open(store)
            let profileName = entry["profileName"] as! String
            await #expect(throws: WalletError.self) {
                _ = try await wallet.get(type: "credential", id: "\(profileName)-expired")
            }
            try wallet.close()
            try ForeignStores.expectUnchanged(source, before)
        }
    }

    @Test(
        "WQL over imported records (encrypted and ~ tags, ranges, $like, $or, $not) answers as Askar and as on records added through Coffer"
    )
    func searchesAnswerAlike() async throws {
        let dir = ForeignStores.folder()
        guard try await ForeignStores.make(["askar", dir.path]) else { return }
        let entry = (try ForeignStores.json(dir.appendingPathComponent("askar.json"))["stores"] as! [[String: Any]])[0]
        let store = try await CLI.newStore()
        let r = try await ForeignStores.importAskar(dir.appendingPathComponent("askar-raw.db"), key: entry["key"] as! String, store: store)
        #expect(r.status == 0, "\(r.stderr)")
        let imported = try await ForeignStores.open(store)
        defer { try? imported.close() }
        let native = try await Wallet.create(
            at: ForeignStores.folder().appendingPathComponent("native.sqlite"), key: .raw(Data(repeating: 3, count: 32)))
        defer { try? native.close() }
        for rec in entry["records"] as! [[String: Any]] {
            try await native.add(
                type: rec["type"] as! String, id: rec["id"] as! String, value: rec["value"] as! String,
                tags: ForeignStores.walletTags(rec["tags"] as! [String: Any]))
        }
        let queries = entry["queries"] as! [[String: Any]]
        #expect(queries.count >= 20)
        for q in queries {
            let type = q["type"] as! String
            let json = String(decoding: try JSONSerialization.data(withJSONObject: q["query"]!), as: UTF8.self)
            let query = try WalletQuery(json: json)
            var a = [String]()
            for try await rec in imported.records(type: type, matching: query) { a.append(rec.id) }
            var b = [String]()
            for try await rec in native.records(type: type, matching: query) { b.append(rec.id) }
            #expect(
                a.sorted() == (q["ids"] as! [String]).sorted(), "\(type) \(json): Coffer \(a.count), Askar \((q["ids"] as! [String]).count)"
            )
            #expect(a.sorted() == b.sorted(), "\(type) \(json)")
        }
    }

    @Test("a key held by Askar's key manager is refused by name and nothing is imported; --skip-keys imports the rest")
    func keyEntriesNamed() async throws {
        let dir = ForeignStores.folder()
        guard try await ForeignStores.make(["askar", dir.path]) else { return }
        let entry = (try ForeignStores.json(dir.appendingPathComponent("askar.json"))["stores"] as! [[String: Any]])[2]
        let store = try await CLI.newStore()
        let source = dir.appendingPathComponent("askar-argon2i.db")
        let r = try await ForeignStores.importAskar(source, key: entry["key"] as! String, store: store)
        #expect(r.status == 2)
        #expect(r.stderr.contains("\"a-signing-key\"") && r.stderr.contains("--skip-keys"), "\(r.stderr)")
        #expect(try ForeignStores.itemRows(store) == 0)
        let ok = try await ForeignStores.importAskar(source, key: entry["key"] as! String, store: store, extra: ["--skip-keys"])
        #expect(ok.status == 0, "\(ok.stderr)")
        #expect(ForeignStores.output(ok)["imported"] as? Int == (entry["records"] as! [Any]).count)
    }

    @Test("an items row whose kind is text or 3 is exit 5 naming the row and what its kind is, not the 0 SQLite reads from text")
    func kindNamed() async throws {
        let dir = ForeignStores.folder()
        guard try await ForeignStores.make(["askar", dir.path]) else { return }
        let entry = (try ForeignStores.json(dir.appendingPathComponent("askar.json"))["stores"] as! [[String: Any]])[0]
        let source = dir.appendingPathComponent("askar-raw.db")
        for (kind, said) in [("'x'", "its kind is text,"), ("3", "its kind is 3,")] {
            let copy = dir.appendingPathComponent("kind-\(UUID().uuidString).db")
            try FileManager.default.copyItem(at: source, to: copy)
            let db = try DatabaseQueue(path: copy.path)
            let row = try await db.write { db -> Int64 in
                let id = try Int64.fetchOne(db, sql: "SELECT id FROM items WHERE profile_id = 1 ORDER BY id LIMIT 1")!
                try db.execute(sql: "UPDATE items SET kind = \(kind) WHERE id = ?", arguments: [id])
                return id
            }
            try db.close()
            let store = try await CLI.newStore()
            let r = try await ForeignStores.importAskar(copy, key: entry["key"] as! String, store: store)
            #expect(r.status == 5, "\(r.stderr)")
            #expect(r.stderr.contains("items row \(row): \(said) neither 1 (key) nor 2 (record)"), "\(r.stderr)")
            #expect(try ForeignStores.itemRows(store) == 0)
        }
    }

    @Test("wrong key 4, duplicate 3 (named), damaged row 5 (named), not an Askar store 2: nothing imported, source untouched")
    func errorsImportNothing() async throws {
        let dir = ForeignStores.folder()
        guard try await ForeignStores.make(["askar", dir.path]) else { return }
        let entry = (try ForeignStores.json(dir.appendingPathComponent("askar.json"))["stores"] as! [[String: Any]])[0]
        let key = entry["key"] as! String
        let source = dir.appendingPathComponent("askar-raw.db")
        let before = try Data(contentsOf: source)
        let store = try await CLI.newStore()
        #expect(try await CLI.wallet(["add", "connection", "default-rec-4-é✓", "mine"], store: store).status == 0)

        // Wrong key: a valid raw key of another store.
        let wrong = try await ForeignStores.importAskar(source, key: "5mgssUU4QBEdvCAaXkczkwmu9VtNyJ6W3NMb4QkzLEmd", store: store)
        #expect(wrong.status == 4, "\(wrong.stderr)")
        let passphrase = try await ForeignStores.importAskar(source, key: "a passphrase, not a raw key", store: store)
        #expect(passphrase.status == 4, "\(passphrase.stderr)")
        // A (type, id) the wallet has: named, nothing imported, the existing record kept.
        let dup = try await ForeignStores.importAskar(source, key: key, store: store)
        #expect(dup.status == 3, "\(dup.stderr)")
        #expect(dup.stderr.contains("\"connection\"") && dup.stderr.contains("\"default-rec-4-é✓\""), "\(dup.stderr)")
        #expect(try ForeignStores.itemRows(store) == 1)
        #expect(try await CLI.wallet(["get", "connection", "default-rec-4-é✓"], store: store).stdout.contains("mine"))
        try ForeignStores.expectUnchanged(source, before)

        // A damaged row (one byte of a value flipped, from outside, in a copy): exit 5 naming it.
        let damaged = dir.appendingPathComponent("damaged.db")
        try FileManager.default.copyItem(at: source, to: damaged)
        let db = try DatabaseQueue(path: damaged.path)
        let row = try await db.write { db -> Int64 in
            let id = try Int64.fetchOne(db, sql: "SELECT id FROM items WHERE profile_id = 1 ORDER BY id LIMIT 1 OFFSET 7")!
            // Byte 21 always changes (set to 0x00, or to 0x01 where it was 0x00: writing 0x00
            // alone left 1 value in 256 as it was, and the import then rightly succeeded).
            try db.execute(
                sql: """
                    UPDATE items SET value = substr(value, 1, 20)
                        || CASE WHEN substr(value, 21, 1) = x'00' THEN x'01' ELSE x'00' END || substr(value, 22)
                    WHERE id = ?
                    """, arguments: [id])
            return id
        }
        try db.close()
        let fresh = try await CLI.newStore()
        let bad = try await ForeignStores.importAskar(damaged, key: key, store: fresh)
        #expect(bad.status == 5, "\(bad.stderr)")
        #expect(bad.stderr.contains("items row \(row)"), "\(bad.stderr)")
        #expect(try ForeignStores.itemRows(fresh) == 0)

        // Not an Askar store: a libindy wallet, a Coffer wallet, a text file.
        let fixture = try ForeignStores.fixture()
        let text = dir.appendingPathComponent("notes.txt")
        try Data("hello".utf8).write(to: text)
        for other in [fixture, store.appendingPathComponent("wallet.sqlite"), text] {
            let r = try await ForeignStores.importAskar(other, key: key, store: fresh)
            #expect(r.status == 2, "\(other.lastPathComponent): \(r.stderr)")
        }
    }
}

@Suite("Importing libindy wallets")
struct IndyImportTests {
    @Test("raw key, Argon2i moderate and interactive: every record, type, id, value and tag reads back byte for byte")
    func generatedWallets() async throws {
        let dir = ForeignStores.folder()
        for kdf in ["raw", "argon2i-mod", "argon2i-int"] {
            guard try await ForeignStores.make(["indy", dir.path, kdf, kdf, "200"]) else { return }
            let manifest = try ForeignStores.json(dir.appendingPathComponent("\(kdf).json"))
            let source = dir.appendingPathComponent("\(kdf).db")
            let before = try Data(contentsOf: source)
            let store = try await CLI.newStore()
            let r = try await ForeignStores.importIndy(source, key: manifest["key"] as! String, kdf: kdf, store: store)
            #expect(r.status == 0, "\(kdf): \(r.stderr)")
            let out = ForeignStores.output(r)
            #expect(out["imported"] as? Int == 200)
            #expect(out["source"] as? String == "indy")
            #expect(out["types"] as? [String: Int] == ["Indy::Did": 50, "Indy::Key": 50, "credential": 50, "Indy::Schema ✓": 50])
            try await ForeignStores.expectRecords(manifest["records"] as! [[String: Any]], in: store)
            try ForeignStores.expectUnchanged(source, before)
            // The other derivation is a wrong key (exit 4), and nothing more is imported.
            let other = kdf == "raw" ? "argon2i-int" : kdf == "argon2i-mod" ? "argon2i-int" : "argon2i-mod"
            let wrong = try await ForeignStores.importIndy(
                source, key: manifest["key"] as! String, kdf: other, store: try await CLI.newStore())
            #expect(wrong.status == 4, "\(kdf) as \(other): \(wrong.stderr)")
        }
    }

    @Test("Askar's upstream libindy fixture opens with its raw key and imports its (no) records; another key is exit 4")
    func upstreamFixture() async throws {
        let fixture = try ForeignStores.fixture()
        let before = try Data(contentsOf: fixture)
        let store = try await CLI.newStore()
        let r = try await ForeignStores.importIndy(fixture, key: "GfwU1DC7gEZNs3w41tjBiZYj7BNToDoFEqKY6wZXqs1A", kdf: "raw", store: store)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == #"{"imported":0,"source":"indy","types":{}}"#)
        let wrong = try await ForeignStores.importIndy(
            fixture, key: "5mgssUU4QBEdvCAaXkczkwmu9VtNyJ6W3NMb4QkzLEmd", kdf: "raw", store: store)
        #expect(wrong.status == 4, "\(wrong.stderr)")
        try ForeignStores.expectUnchanged(fixture, before)
    }

    @Test("the source key file is refused when group or others may read it, and read when it is owner-only")
    func keyFileMode() async throws {
        let fixture = try ForeignStores.fixture()
        let dir = ForeignStores.folder()
        let keyFile = dir.appendingPathComponent("source.key")
        try Data("GfwU1DC7gEZNs3w41tjBiZYj7BNToDoFEqKY6wZXqs1A\n".utf8).write(to: keyFile)
        let store = try await CLI.newStore()
        func run() async throws -> CLIResult {
            try await CLI.run(
                ["--raw-key-env", "COFFER_TEST_KEY", "wallet", "import-indy", fixture.path, "--source-key-file", keyFile.path],
                store: store, env: ["COFFER_TEST_KEY": CLI.key])
        }
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: keyFile.path)
        let refused = try await run()
        #expect(refused.status == 2)
        #expect(refused.stderr.contains("chmod 600"), "\(refused.stderr)")
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: keyFile.path)
        let ok = try await run()
        #expect(ok.status == 0, "\(ok.stderr)")
    }

    @Test("a damaged libindy row is exit 5 naming it, and the target keeps what it had")
    func damagedRow() async throws {
        let dir = ForeignStores.folder()
        guard try await ForeignStores.make(["indy", dir.path, "w", "raw", "50"]) else { return }
        let manifest = try ForeignStores.json(dir.appendingPathComponent("w.json"))
        let source = dir.appendingPathComponent("w.db")
        let db = try DatabaseQueue(path: source.path)
        try await db.write {
            try $0.execute(
                sql: """
                    UPDATE items SET key = substr(key, 1, 30) || CASE substr(key, 31, 1) WHEN x'ff' THEN x'00' ELSE x'ff' END
                        || substr(key, 32) WHERE id = 33
                    """)
        }
        try db.close()
        let store = try await CLI.newStore()
        let r = try await ForeignStores.importIndy(source, key: manifest["key"] as! String, kdf: "raw", store: store)
        #expect(r.status == 5, "\(r.stderr)")
        #expect(r.stderr.contains("items row 33"), "\(r.stderr)")
        #expect(try ForeignStores.itemRows(store) == 0)
    }

    @Test(
        "a libindy items row whose id is not an integer (the table rebuilt without its key) is exit 5, not a crash, and nothing is imported"
    )
    func nonIntegerIdRefused() async throws {
        let dir = ForeignStores.folder()
        guard try await ForeignStores.make(["indy", dir.path, "w", "raw", "20"]) else { return }
        let manifest = try ForeignStores.json(dir.appendingPathComponent("w.json"))
        let source = dir.appendingPathComponent("w.db")
        var config = Configuration()
        config.foreignKeysEnabled = false // dropping items must not delete the tags rows
        let db = try DatabaseQueue(path: source.path, configuration: config)
        try await db.write {
            try $0.execute(
                sql: """
                    CREATE TABLE i2(id, type, name, value, key); INSERT INTO i2 SELECT id, type, name, value, key FROM items;
                    INSERT INTO i2 VALUES (NULL, x'00', x'00', x'00', x'00');
                    DROP TABLE items; ALTER TABLE i2 RENAME TO items;
                    """)
        }
        try db.close()
        let store = try await CLI.newStore()
        let r = try await ForeignStores.importIndy(source, key: manifest["key"] as! String, kdf: "raw", store: store)
        #expect(r.status == 5, "\(r.status) \(r.stderr)")
        #expect(r.stderr.contains("no integer id"), "\(r.stderr)")
        #expect(try ForeignStores.itemRows(store) == 0)
    }

    @Test("a FIFO given as the source is exit 2 naming it, at once (its read would block forever)")
    func fifoRefused() async throws {
        let fifo = ForeignStores.folder().appendingPathComponent("wallet.db")
        #expect(mkfifo(fifo.path, 0o600) == 0)
        let store = try await CLI.newStore()
        let r = try await ForeignStores.importIndy(fifo, key: "GfwU1DC7gEZNs3w41tjBiZYj7BNToDoFEqKY6wZXqs1A", kdf: "raw", store: store)
        #expect(r.status == 2, "\(r.status) \(r.stderr)")
        #expect(r.stderr.contains("not a regular file") && r.stderr.contains(fifo.path), "\(r.stderr)")
    }

    @Test(
        "a libindy wallet whose writer was killed mid-transaction (a hot rollback journal beside it) is refused naming the journal, and nothing is imported"
    )
    func hotJournalRefused() async throws {
        let dir = ForeignStores.folder()
        guard try await ForeignStores.make(["indy", dir.path, "w", "raw", "50"]) else { return }
        let manifest = try ForeignStores.json(dir.appendingPathComponent("w.json"))
        let source = dir.appendingPathComponent("w.db")
        // A writer that deletes every tag, spills the change to the file (a one-page cache) and
        // is killed before it commits: the file alone has no tags, its journal has them.
        let writer = """
            import os, sqlite3, sys
            c = sqlite3.connect(sys.argv[1], isolation_level=None)
            c.execute("PRAGMA journal_mode = DELETE")
            c.execute("PRAGMA cache_size = 1")
            c.execute("BEGIN")
            c.execute("DELETE FROM tags_plaintext")
            c.execute("DELETE FROM tags_encrypted")
            os.kill(os.getpid(), 9)
            """
        let killed = try await runProcess(URL(fileURLWithPath: "/usr/bin/env"), ["python3", "-c", writer, source.path])
        #expect(killed.status != 0)
        let journal = source.path + "-journal"
        #expect(FileManager.default.fileExists(atPath: journal), "the writer left no journal: the test proves nothing")
        let journalBefore = try Data(contentsOf: URL(fileURLWithPath: journal))
        let store = try await CLI.newStore()
        let r = try await ForeignStores.importIndy(source, key: manifest["key"] as! String, kdf: "raw", store: store)
        #expect(r.status == 6, "\(r.status) \(r.stderr)")
        #expect(r.stderr.contains("rollback journal") && r.stderr.contains(journal), "\(r.stderr)")
        #expect(try ForeignStores.itemRows(store) == 0)
        #expect(try Data(contentsOf: URL(fileURLWithPath: journal)) == journalBefore)
    }

    @Test("U+0000 in an id and in a plaintext tag value kept as TEXT: imported byte for byte, not cut at the NUL")
    func nulBytesKept() async throws {
        let dir = ForeignStores.folder()
        guard try await ForeignStores.make(["indy", dir.path, "w", "raw", "4"]) else { return }
        let manifest = try ForeignStores.json(dir.appendingPathComponent("w.json"))
        let source = dir.appendingPathComponent("w.db")
        // The generator's record 1 has U+0000 in its id and its ~z tag; libindy keeps plaintext
        // tag values as TEXT, and a hand-made wallet may hold its sealed id as TEXT too.
        let db = try DatabaseQueue(path: source.path)
        try await db.write { try $0.execute(sql: "UPDATE items SET name = CAST(name AS TEXT) WHERE id = 2") }
        let kinds = try await db.read { try String.fetchAll($0, sql: "SELECT typeof(value) FROM tags_plaintext WHERE item_id = 2") }
        #expect(kinds == ["text", "text"])
        try db.close()
        let store = try await CLI.newStore()
        let r = try await ForeignStores.importIndy(source, key: manifest["key"] as! String, kdf: "raw", store: store)
        #expect(r.status == 0, "\(r.stderr)")
        let wallet = try await ForeignStores.open(store)
        defer { try? wallet.close() }
        let got = try await wallet.get(type: "Indy::Key", id: "id-1-ü\u{0}after nul", options: RecordOptions(retrieveTags: true))
        #expect(got.tags?["~z"] == .string("before\u{0}after"))
        try await ForeignStores.expectRecords(manifest["records"] as! [[String: Any]], in: store)
    }

    @Test("a value longer than Coffer's limit is refused by row (exit 2) without reading it into memory")
    func overLongValueNotRead() async throws {
        let dir = ForeignStores.folder()
        guard try await ForeignStores.make(["indy", dir.path, "w", "raw", "8"]) else { return }
        let key = try ForeignStores.json(dir.appendingPathComponent("w.json"))["key"] as! String
        let source = dir.appendingPathComponent("w.db")
        // The baseline: the same import of the same wallet before its value grows.
        let small = try await ForeignStores.peakResidentImport(source, key: key, store: try await CLI.newStore())
        #expect(small.result.status == 0, "\(small.result.stderr)")
        let big = 64 << 20
        let db = try DatabaseQueue(path: source.path)
        try await db.write { try $0.execute(sql: "UPDATE items SET value = zeroblob(?) WHERE id = 1", arguments: [big]) }
        try db.close()
        let refused = try await ForeignStores.peakResidentImport(source, key: key, store: try await CLI.newStore())
        #expect(refused.result.status == 2, "\(refused.result.stderr)")
        #expect(
            refused.result.stderr.contains("items row 1:") && refused.result.stderr.contains("value is longer"), "\(refused.result.stderr)")
        // Measured in the importing process alone (not this one, where other tests run in
        // parallel): reading the value would raise its peak by 64 MiB over the baseline.
        let rise = refused.peakBytes - small.peakBytes
        #expect(
            rise < big / 2, "the import's peak memory rose by \(rise) bytes (\(small.peakBytes) → \(refused.peakBytes)): the value was read"
        )
    }

    @Test("importing a WAL-mode source that had no -wal or -shm leaves its folder's files as they were")
    func walCompanionsRemoved() async throws {
        let dir = ForeignStores.folder()
        guard try await ForeignStores.make(["indy", dir.path, "w", "raw", "20"]) else { return }
        let key = try ForeignStores.json(dir.appendingPathComponent("w.json"))["key"] as! String
        let source = dir.appendingPathComponent("w.db")
        let setup = try DatabaseQueue(path: source.path)
        try await setup.writeWithoutTransaction { try $0.execute(sql: "PRAGMA journal_mode = WAL") }
        try setup.close()
        func files() throws -> [String] { try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted() }
        let before = try files()
        #expect(before == ["w.db", "w.json"])
        let content = try Data(contentsOf: source)
        let r = try await ForeignStores.importIndy(source, key: key, kdf: "raw", store: try await CLI.newStore())
        #expect(r.status == 0, "\(r.stderr)")
        #expect(try files() == before)
        // A failed import (wrong key) cleans up too.
        let wrong = try await ForeignStores.importIndy(
            source, key: "GfwU1DC7gEZNs3w41tjBiZYj7BNToDoFEqKY6wZXqs1A", kdf: "raw", store: try await CLI.newStore())
        #expect(wrong.status == 4, "\(wrong.stderr)")
        #expect(try files() == before)
        try ForeignStores.expectUnchanged(source, content)
        // Companions that were there before the import stay.
        let reader = try DatabaseQueue(path: source.path)
        _ = try await reader.read { try Int.fetchOne($0, sql: "SELECT COUNT(*) FROM items") }
        let withCompanions = try files()
        #expect(withCompanions.contains("w.db-shm"))
        #expect(try await ForeignStores.importIndy(source, key: key, kdf: "raw", store: try await CLI.newStore()).status == 0)
        #expect(try files() == withCompanions)
        try reader.close()
    }
}

@Suite("Imports stopped midway")
struct ForeignImportInterruptTests {
    @Test("kill -9 during a 100,000-record import, after it reported progress: the wallet is as before, and the rerun imports everything")
    func killedMidImport() async throws {
        let dir = ForeignStores.folder()
        let n = 100_000
        guard try await ForeignStores.make(["indy", dir.path, "big", "raw", String(n)]) else { return }
        let key = try ForeignStores.json(dir.appendingPathComponent("big.json"))["key"] as! String
        let source = dir.appendingPathComponent("big.db")
        let store = try await CLI.newStore()
        #expect(try await CLI.wallet(["add", "mine", "kept", "before the import"], store: store).status == 0)
        var landed = false
        for _ in 0..<3 where !landed {
            let child = try CLI.start(
                ["--raw-key-env", "COFFER_TEST_KEY", "wallet", "import-indy", source.path, "--source-key-env", "SOURCE_KEY"], store: store,
                env: ["COFFER_TEST_KEY": CLI.key, "SOURCE_KEY": key])
            // The progress line (reported inside the import's transaction, before its commit)
            // proves the kill lands mid-import.
            let midway = { @Sendable (stderr: Data) -> Bool in
                String(decoding: stderr, as: UTF8.self).split(separator: "\n").contains { line in
                    guard line.hasPrefix("import-indy: ") else { return false }
                    let done = Int(line.dropFirst("import-indy: ".count).split(separator: "/")[0]) ?? 0
                    return done > 0 && done < n
                }
            }
            let seen = try await child.waitUntil("progress midway") { $0.termination != nil || midway($0.stderr) }
            let result = try await child.killAndWait()
            landed = midway(seen.stderr) && result.wasSignalled
        }
        #expect(landed, "no kill landed while the import was running")
        #expect(try ForeignStores.itemRows(store) == 1)
        #expect(try await CLI.wallet(["get", "mine", "kept"], store: store).stdout.contains("before the import"))
        let rerun = try await ForeignStores.importIndy(source, key: key, kdf: "raw", store: store)
        #expect(rerun.status == 0, "\(rerun.stderr)")
        #expect(ForeignStores.output(rerun)["imported"] as? Int == n)
        #expect(try ForeignStores.itemRows(store) == n + 1)
    }

    @Test("a source another process writes during the import is read as one snapshot: what it commits meanwhile is not seen")
    func consistentSnapshot() async throws {
        let dir = ForeignStores.folder()
        let n = 20_000
        guard try await ForeignStores.make(["indy", dir.path, "w", "raw", String(n)]) else { return }
        let key = try ForeignStores.json(dir.appendingPathComponent("w.json"))["key"] as! String
        let source = dir.appendingPathComponent("w.db")
        // WAL, as Askar keeps its stores: a writer may commit while the import reads.
        let setup = try DatabaseQueue(path: source.path)
        try await setup.writeWithoutTransaction { try $0.execute(sql: "PRAGMA journal_mode = WAL") }
        try setup.close()
        let wallet = try await Wallet.create(at: dir.appendingPathComponent("target.sqlite"), key: .raw(Data(repeating: 4, count: 32)))
        defer { try? wallet.close() }
        // At its first progress report (1,000 rows read, inside the import), another connection
        // adds a row no key opens (read, it would fail the import as damaged) and removes the
        // last record; the import waits for that commit, so the write lands mid-import whatever
        // the machine's load.
        let writtenAt = Locked(0)
        let summary = try await wallet.importIndyWallet(at: source, key: key) { progress in
            guard writtenAt.withLock({ $0 }) == 0 else { return }
            do {
                let writer = try DatabaseQueue(path: source.path)
                try writer.write { db in
                    try db.execute(sql: "INSERT INTO items(type, name, value, key) VALUES (x'00', x'01', x'02', x'03')")
                    try db.execute(
                        sql: "DELETE FROM tags_plaintext WHERE item_id = ?; DELETE FROM tags_encrypted WHERE item_id = ?",
                        arguments: [n, n])
                    try db.execute(sql: "DELETE FROM items WHERE id = ?", arguments: [n])
                }
                try writer.close()
                writtenAt.withLock { $0 = progress.rowsRead }
            } catch {
                writtenAt.withLock { $0 = -1 }
            }
        }
        let at = writtenAt.withLock { $0 }
        #expect(at > 0 && at < n, "the write did not land mid-import: \(at)")
        #expect(summary.imported == n)
        #expect(try await wallet.count(type: "Indy::Did") == n / 4)
        let check = try DatabaseQueue(path: source.path)
        #expect(try await check.read { try Int.fetchOne($0, sql: "SELECT COUNT(*) FROM items WHERE id = ?", arguments: [n]) } == 0)
        try check.close()
        // The removed record came in whole: with the tags the writer removed first.
        let last = try await wallet.get(type: "Indy::Schema ✓", id: "id-\(n - 1)-ü")
        #expect(last.tags?["~n"] == .string("0\(n - 1)"))
        #expect(last.tags?["e"] == .string("v3"))
    }

    @Test("cancelling the importing task stops it with CancellationError and imports nothing")
    func cancelled() async throws {
        let dir = ForeignStores.folder()
        guard try await ForeignStores.make(["indy", dir.path, "w", "raw", "30000"]) else { return }
        let key = try ForeignStores.json(dir.appendingPathComponent("w.json"))["key"] as! String
        let wallet = try await Wallet.create(at: dir.appendingPathComponent("target.sqlite"), key: .raw(Data(repeating: 4, count: 32)))
        defer { try? wallet.close() }
        try await wallet.add(type: "mine", id: "kept", value: "v")
        // The task is cancelled from the import's own progress report (inside the import), so
        // the cancellation lands mid-import whatever the machine's load.
        let seen = Locked(0)
        let handle = Locked<Task<ForeignImportSummary, Error>?>(nil)
        let task = Task {
            try await wallet.importIndyWallet(at: dir.appendingPathComponent("w.db"), key: key) { progress in
                seen.withLock { $0 = progress.rowsRead }
                handle.withLock { $0 }?.cancel()
            }
        }
        handle.withLock { $0 = task }
        let result = await task.result
        #expect(throws: CancellationError.self) { try result.get() }
        #expect(seen.withLock { $0 } < 30_000)
        #expect(try await wallet.count(type: "Indy::Did") == 0)
        #expect(try await wallet.count(type: "mine") == 1)
    }
}
