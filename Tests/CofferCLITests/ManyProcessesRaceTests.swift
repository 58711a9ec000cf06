// Races between `coffer` processes on one store that lost acknowledged data before: a key
// rotation against writers, deniable sends against each other and against a dequeue, restores
// into one empty store, and first opens of a new store. Each test proves its race window was
// hit: a debug build's test pause (COFFER_TEST_PAUSE_AT, see CofferSync.TestPause) holds a
// process at the point that matters, and the test waits until it reports it is there.

import CofferTestSupport
import Foundation
import Testing

@Suite("Many processes racing: nothing acknowledged is lost")
struct ManyProcessesRaceTests {
    static let newKey = Data(repeating: 7, count: 32).base64EncodedString()

    /// A wallet command under the rotated key.
    static func walletWithNewKey(_ args: [String], store: URL) async throws -> CLIResult {
        try await CLI.run(["--raw-key-env", "K2", "wallet"] + args, store: store, env: ["K2": newKey])
    }

    @Test("30 adds racing a key rotation: every add that exits 0 reads back under the new key, and the wallet checks clean")
    func addsRacingRotation() async throws {
        let store = try await CLI.newStore()
        for i in 0..<20 {
            #expect(try await CLI.wallet(["add", "t", "before\(i)", "v\(i)", "--tags", #"{"n":"\#(i)"}"#], store: store).status == 0)
        }
        let keyEnv = ["COFFER_TEST_KEY": CLI.key]
        // Ten adds open the wallet with the old key and then wait (the pause) until the rotation
        // has committed; twenty more start around the rotation without a pause.
        let paused = try (0..<10).map { i in
            try CLI.start(
                ["--raw-key-env", "COFFER_TEST_KEY", "wallet", "add", "t", "paused\(i)", "v", "--tags", #"{"n":"p"}"#], store: store,
                env: keyEnv.merging(["COFFER_TEST_PAUSE_AT": "wallet-opened", "COFFER_TEST_PAUSE_MS": "10000"]) { $1 })
        }
        // From the pause on, on a thread of its own: the pause lasts 10 s (a loaded CI machine took
        // over 2.5 s to start the racers and rotate), which an awaiting task
        // resumed by a busy cooperative pool can miss.
        let (racing, rotation, openedBeforeAndStillWaiting) = try await onOwnThread {
            () throws -> ([ChildProcess], ProcessResult, Int) in
            try paused.waitForStderrBlocking(containingOrEnded: "test-pause: wallet-opened")
            let racing = try (0..<20).map { i in
                try CLI.start(["--raw-key-env", "COFFER_TEST_KEY", "wallet", "add", "t", "racing\(i)", "v\(i)"], store: store, env: keyEnv)
            }
            let rotation = try runProcessBlocking(
                cofferBinary,
                ["--store", store.path, "--raw-key-env", "COFFER_TEST_KEY", "wallet", "rekey", "--rotate", "--new-raw-key-env", "K2"],
                environment: ["COFFER_TEST_KEY": CLI.key, "K2": Self.newKey])
            // The window: adds that opened under the old key and had not written when the rotation committed.
            return (racing, rotation, paused.filter { $0.isRunning && $0.stderrSoFar.contains("test-pause") }.count)
        }
        #expect(rotation.status == 0, "\(rotation.stderr)")
        #expect(openedBeforeAndStillWaiting > 0, "no add was held across the rotation: the race was not hit")
        let results = try await (paused + racing).wait()

        var acknowledged: [String] = []
        for (child, result) in zip(paused + racing, results) {
            let id = child.arguments[child.arguments.firstIndex(of: "t")! + 1]
            if result.status == 0 {
                acknowledged.append(id)
            } else {
                // Refused with the contract's wrong-key code and a message saying why; nothing written.
                #expect(result.status == 4, "\(id): \(result.stderr)")
            }
        }
        for (child, result) in zip(paused, results) where result.status != 0 {
            #expect(child.stderrSoFar.contains("rotated"), "\(child.stderrSoFar)")
        }
        for id in acknowledged + (0..<20).map({ "before\($0)" }) {
            let get = try await Self.walletWithNewKey(["get", "t", id], store: store)
            #expect(get.status == 0, "acknowledged record \(id) does not read back under the new key: \(get.stderr)")
        }
        let check = try await Self.walletWithNewKey(["check"], store: store)
        #expect(check.status == 0, "\(check.stdout) \(check.stderr)")
    }

    @Test("3 restores into one empty store at once, 3 rounds: one wins, the others say the wallet exists, and the wallet is whole")
    func concurrentRestores() async throws {
        let source = try await CLI.newStore()
        for i in 0..<40 {
            #expect(try await CLI.wallet(["add", "t", "r\(i)", "v\(i)", "--tags", #"{"n":"\#(i)"}"#], store: source).status == 0)
        }
        let backup = source.appendingPathComponent("backup.cfb")
        let export = try await CLI.run(
            [
                "--raw-key-env", "COFFER_TEST_KEY", "wallet", "export", backup.path, "--backup-passphrase-env", "BP", "--backup-kdf",
                "interactive",
            ], store: source,
            env: ["COFFER_TEST_KEY": CLI.key, "BP": "backup pass"])
        #expect(export.status == 0, "\(export.stderr)")
        var allRacing = 0
        for round in 0..<3 {
            let store = TemporaryFolders.path("coffer-restore-race")
            let env = [
                "COFFER_TEST_KEY": CLI.key, "BP": "backup pass", "COFFER_TEST_PAUSE_AT": "restore-starting", "COFFER_TEST_PAUSE_MS": "3000",
            ]
            let children = try (0..<3).map { _ in
                try CLI.start(
                    ["--raw-key-env", "COFFER_TEST_KEY", "wallet", "import-backup", backup.path, "--backup-passphrase-env", "BP"],
                    store: store, env: env)
            }
            // The window: all three past their check for an existing wallet, none finished (seen
            // from a thread of its own: the pause lasts 3 s).
            if try await onOwnThread({ () throws -> Bool in
                try children.waitForStderrBlocking(containingOrEnded: "test-pause: restore-starting")
                return children.allSatisfy({ $0.isRunning && $0.stderrSoFar.contains("test-pause") })
                    && !FileManager.default.fileExists(atPath: store.appendingPathComponent("wallet.sqlite").path)
            }) {
                allRacing += 1
            }
            let results = try await children.wait()
            let statuses = results.map(\.status).sorted()
            #expect(statuses == [0, 3, 3], "round \(round): \(statuses) \(children.map(\.stderrSoFar))")
            for (child, result) in zip(children, results) where result.status == 3 {
                #expect(child.stderrSoFar.contains("already exists"), "\(child.stderrSoFar)")
            }
            let count = try await CLI.wallet(["count", "t"], store: store)
            #expect(count.stdout.contains(#"{"count":40}"#), "round \(round): \(count.stdout) \(count.stderr)")
            let check = try await CLI.wallet(["check"], store: store)
            #expect(check.status == 0, "round \(round): \(check.stdout) \(check.stderr)")
            let left = try FileManager.default.contentsOfDirectory(atPath: store.path).filter { $0.hasPrefix(".") }
            #expect(left.isEmpty, "round \(round) left \(left)")
        }
        #expect(allRacing > 0, "no round had all three restores in the window at once")
    }

    @Test("40 processes opening a brand-new store at once, 2 rounds: none fails and every write is there")
    func concurrentFirstOpens() async throws {
        var allRacing = 0
        for round in 0..<2 {
            let store = TemporaryFolders.path("coffer-first-open")
            // Held until the gate file exists, so all of them go on migrating at once.
            let gate = TemporaryFolders.path("coffer-gate")
            let env = ["COFFER_TEST_PAUSE_AT": "app-database-migrating", "COFFER_TEST_PAUSE_FILE": gate.path]
            let children = try (0..<40).map { i in
                switch i % 4 {
                case 0, 2: try CLI.start(["settings", "set", "p\(i)", "\(i)", "--kind", "int"], store: store, env: env)
                case 1: try CLI.start(["db", "put-asset", "r\(i)", "owner", "c\(i)"], store: store, env: env)
                default:
                    try CLI.start(["secure", "set", "s\(i)", "--value-env", "V"], store: store, env: env.merging(["V": "v\(i)"]) { $1 })
                }
            }
            try await children.waitForStderr(containingOrEnded: "test-pause: app-database-migrating")
            // The window: every process found the new database's schema not yet made, and is
            // about to make it.
            if children.allSatisfy({ $0.isRunning && $0.stderrSoFar.contains("test-pause") }) {
                allRacing += 1
            }
            _ = FileManager.default.createFile(atPath: gate.path, contents: nil)
            defer { try? FileManager.default.removeItem(at: gate) }
            for (child, result) in zip(children, try await children.wait()) {
                #expect(result.status == 0, "round \(round): \(child.commandLine): \(result.stderr)")
            }
            let settings = try await CLI.run(["settings", "list"], store: store)
            let stored = try JSONSerialization.jsonObject(with: Data(settings.stdout.utf8)) as? [String: Any] ?? [:]
            for i in stride(from: 0, to: 40, by: 2) { #expect(stored["p\(i)"] as? Int == i, "round \(round): setting p\(i) lost") }
            let stats = try await CLI.run(["db", "stats"], store: store)
            let rows = try JSONSerialization.jsonObject(with: Data(stats.stdout.utf8)) as? [String: Any] ?? [:]
            #expect(rows["assets"] as? Int == 10, "round \(round): \(stats.stdout)")
            let secure = try await CLI.run(["secure", "list"], store: store)
            let names = try JSONSerialization.jsonObject(with: Data(secure.stdout.utf8)) as? [String] ?? []
            #expect(names.count == 10, "round \(round): \(secure.stdout) \(secure.stderr)")
            let left = try FileManager.default.contentsOfDirectory(atPath: store.path).filter { $0.hasSuffix(".lock") }
            #expect(left.isEmpty, "round \(round) left \(left)")
        }
        #expect(allRacing > 0, "no round had all 40 processes in the window at once")
    }

    /// Starts `commands` (each a `coffer` argument list) held at the `deniable-ready` pause, waits
    /// until all are there, lets them go at once, and waits for them. Returns the children and
    /// whether all were held together (the window).
    static func releasedTogether(_ commands: [[String]], store: URL, env: [String: String]) async throws -> (
        [(child: ChildProcess, result: ProcessResult)], Bool
    ) {
        let gate = TemporaryFolders.path("coffer-gate")
        let held = env.merging(["COFFER_TEST_PAUSE_AT": "deniable-ready", "COFFER_TEST_PAUSE_FILE": gate.path]) { $1 }
        let children = try commands.map { try CLI.start($0, store: store, env: held) }
        try await children.waitForStderr(containingOrEnded: "test-pause: deniable-ready")
        let together = children.allSatisfy { $0.isRunning && $0.stderrSoFar.contains("test-pause") }
        _ = FileManager.default.createFile(atPath: gate.path, contents: nil)
        let results = try await children.wait()
        try? FileManager.default.removeItem(at: gate)
        return (zip(children, results).map { ($0, $1) }, together)
    }

    @Test("6 deniable sends at once all land; dequeues racing sends each take a different message and none comes back")
    func deniableSendsAndDequeues() async throws {
        let store = TemporaryFolders.path("coffer-deniable-race")
        #expect(try await CLI.run(["deniable", "start"], store: store).status == 0)
        let created = try await CLI.run(["deniable", "init"], store: store)
        let passphrase = try #require(parsedObject(created.stdout)?["passphrase"] as? String, "\(created.stderr)")
        let env = ["P": passphrase]
        func send(_ text: String) -> [String] { ["--passphrase-env", "P", "deniable", "send", "--to", "alice", text] }

        let (sends, sendsTogether) = try await Self.releasedTogether((0..<6).map { send("first\($0)") }, store: store, env: env)
        #expect(sendsTogether, "the six sends were not all unlocked before any sent")
        for (_, result) in sends { #expect(result.status == 0, "\(result.stderr)") }
        var unlocked = try await CLI.run(["--passphrase-env", "P", "deniable", "unlock"], store: store, env: env)
        var object = try #require(parsedObject(unlocked.stdout), "\(unlocked.stderr)")
        #expect(object["queued"] as? Int == 6, "\(unlocked.stdout)")
        let sentTexts = ((object["mailbox"] as? [[String: Any]]) ?? []).compactMap { $0["text"] as? String }
        #expect(Set(sentTexts) == Set((0..<6).map { "first\($0)" }), "\(unlocked.stdout)")

        // Three dequeues and two sends at once.
        let (mixed, mixedTogether) = try await Self.releasedTogether(
            [["deniable", "dequeue"], ["deniable", "dequeue"], ["deniable", "dequeue"], send("second0"), send("second1")],
            store: store, env: env)
        #expect(mixedTogether, "the dequeues and sends were not all ready before any went on")
        for (_, result) in mixed { #expect(result.status == 0, "\(result.stderr)") }
        var dequeued: [String] = []
        for (child, result) in mixed where child.arguments.contains("dequeue") {
            let read = parsedObject(result.stdout)?["coverNode"] as? [String: Any]
            dequeued.append(read?["text"] as? String ?? "cover")
        }
        #expect(Set(dequeued).count == 3 && !dequeued.contains("cover"), "three dequeues took \(dequeued)")
        unlocked = try await CLI.run(["--passphrase-env", "P", "deniable", "unlock"], store: store, env: env)
        object = try #require(parsedObject(unlocked.stdout), "\(unlocked.stderr)")
        #expect(object["queued"] as? Int == 5, "6 - 3 + 2 real messages should wait: \(unlocked.stdout)")
        // Draining the queue yields every other message exactly once.
        for _ in 0..<5 {
            let r = try await CLI.run(["deniable", "dequeue"], store: store)
            dequeued.append((parsedObject(r.stdout)?["coverNode"] as? [String: Any])?["text"] as? String ?? "cover")
        }
        #expect(dequeued.sorted() == ((0..<6).map { "first\($0)" } + ["second0", "second1"]).sorted(), "\(dequeued)")
    }
}
