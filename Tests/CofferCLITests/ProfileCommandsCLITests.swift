// `--profile NAME` on every `coffer wallet …` subcommand, in every place the key options go, and
// the commands that bring records in (import-backup, import-indy, import-askar) into a profile.

import CofferTestSupport
import Foundation
import GRDB
import Testing

@Suite("Wallet profiles: every subcommand takes --profile")
struct ProfileCommandsCLITests {
    static let bobKey = ProfileCLITests.bobKey
    static let env = ["K": CLI.key, "BOB_KEY": bobKey, "NEW_KEY": Data(repeating: 5, count: 32).base64EncodedString(), "BP": "backup pass"]

    /// `coffer --raw-key-env KEYVAR ARGS` with the keys and passphrases of ``env``.
    static func run(_ args: [String], store: URL, keyVar: String = "K") async throws -> CLIResult {
        try await CLI.run(["--raw-key-env", keyVar] + args, store: store, env: env)
    }

    /// The places `--profile NAME` can stand in `coffer wallet PATH… ARGS`: before `wallet`,
    /// right after it, between a group and its subcommand (`key --profile NAME create`), and last.
    static func placements(_ path: [String], _ args: [String], profile: String) -> [[String]] {
        let option = ["--profile", profile]
        var out = [
            option + ["wallet"] + path + args,
            ["wallet"] + option + path + args,
            ["wallet"] + path + args + option,
        ]
        if path.count == 2 { out.append(["wallet", path[0]] + option + [path[1]] + args) }
        return out
    }

    static func json(_ text: String) -> Any? { try? JSONSerialization.jsonObject(with: Data(text.utf8)) }

    @Test("every subcommand that opens the wallet reaches the named profile wherever --profile stands (a missing profile is named, exit 1)")
    func everyWalletSubcommandTakesProfile() async throws {
        let store = try await ProfileCLITests.store()
        let folder = TemporaryFolders.make("coffer-profile-args")
        let jsonl = folder.appendingPathComponent("in.jsonl")
        try Data(#"{"type": "t", "id": "x", "value": "v"}"#.utf8).write(to: jsonl)
        let source = folder.appendingPathComponent("missing-source.db").path
        let commands: [([String], [String])] = [
            (["add"], ["t", "i", "v"]),
            (["get"], ["t", "i"]),
            (["update"], ["t", "i", "v"]),
            (["delete"], ["t", "i"]),
            (["add-tags"], ["t", "i", #"{"a": "1"}"#]),
            (["update-tags"], ["t", "i", #"{"a": "1"}"#]),
            (["delete-tags"], ["t", "i", #"["a"]"#]),
            (["search"], ["t", "{}"]),
            (["count"], ["t"]),
            (["remove-all"], ["t"]),
            (["import"], [jsonl.path]),
            (["rekey"], ["--new-raw-key-env", "NEW_KEY"]),
            (["check"], []),
            (["compact"], []),
            (["export"], [folder.appendingPathComponent("b.backup").path, "--backup-passphrase-env", "BP", "--backup-kdf", "interactive"]),
            (["import-indy"], [source, "--source-key-env", "BP"]),
            (["import-askar"], [source, "--source-key-env", "BP"]),
            (["key", "create"], []),
            (["key", "list"], []),
            (["key", "sign"], ["4vJ9JU1bJJE96FWSJKvHsmmFADCg4gpZQff4P3bkLKi", "aGk="]),
            (["key", "open"], ["4vJ9JU1bJJE96FWSJKvHsmmFADCg4gpZQff4P3bkLKi", "aGk="]),
        ]
        var ran = 0
        for (path, args) in commands {
            for argv in Self.placements(path, args, profile: "ghost") {
                let r = try await Self.run(argv, store: store)
                ran += 1
                #expect(r.status == 1, "\(argv.joined(separator: " ")): exit \(r.status) \(r.stderr)")
                #expect(r.stderr.contains("(profile \"ghost\")"), "\(argv.joined(separator: " ")): \(r.stderr)")
            }
        }
        #expect(ran == 3 * commands.count + 4)
        // Nothing reached another profile: the default wallet and bob are as they were.
        #expect(Self.json(try await CLI.wallet(["count", "t"], store: store).stdout) as? [String: Int] == ["count": 0])
        #expect(Self.json(try await ProfileCLITests.bob(["count", "t"], store: store).stdout) as? [String: Int] == ["count": 0])
        #expect(Self.json(try await CLI.run(["wallet", "profiles"], store: store).stdout) as? [String] == ["default", "bob"])
    }

    @Test("create, import-backup, profiles, remove-profile, key verify and key seal take --profile wherever it stands")
    func profileCommandsTakeProfile() async throws {
        let store = try await ProfileCLITests.store()
        // create: one new profile per placement.
        for (i, argv) in Self.placements(["create"], [], profile: "made").enumerated() {
            let named = argv.map { $0 == "made" ? "made\(i)" : $0 }
            let r = try await Self.run(named, store: store)
            #expect(r.status == 0, "\(named.joined(separator: " ")): \(r.stderr)")
            #expect((Self.json(r.stdout) as? [String: String])?["profile"] == "made\(i)", "\(r.stdout)")
        }
        // import-backup: a backup of bob restored into one new profile per placement.
        #expect(try await ProfileCLITests.bob(["add", "t", "b1", "bob"], store: store).status == 0)
        let backup = TemporaryFolders.make("coffer-profile-backup").appendingPathComponent("bob.backup")
        let exported = try await Self.run(
            ["wallet", "export", backup.path, "--backup-passphrase-env", "BP", "--backup-kdf", "interactive", "--profile", "bob"],
            store: store, keyVar: "BOB_KEY")
        #expect(exported.status == 0, "\(exported.stderr)")
        for (i, argv) in Self.placements(["import-backup"], [backup.path, "--backup-passphrase-env", "BP"], profile: "r").enumerated() {
            let named = argv.map { $0 == "r" ? "restored\(i)" : $0 }
            let r = try await Self.run(named, store: store)
            #expect(r.status == 0, "\(named.joined(separator: " ")): \(r.stderr)")
            #expect((Self.json(r.stdout) as? [String: String])?["profile"] == "restored\(i)", "\(r.stdout)")
            let got = try await Self.run(["wallet", "get", "t", "b1", "--profile", "restored\(i)"], store: store)
            #expect(got.stdout.contains("\"bob\""), "\(got.stdout) \(got.stderr)")
        }
        let names = try #require(Self.json(try await CLI.run(["wallet", "profiles"], store: store).stdout) as? [String])
        #expect(names == ["default", "bob", "made0", "made1", "made2", "restored0", "restored1", "restored2"])
        for argv in Self.placements(["profiles"], [], profile: "bob") {
            #expect(Self.json(try await Self.run(argv, store: store).stdout) as? [String] == names, "\(argv)")
        }
        for (i, argv) in Self.placements(["remove-profile"], ["made\(0)", "--yes"], profile: "bob").enumerated() {
            let named = argv.map { $0 == "made0" ? "made\(i)" : $0 }
            let r = try await Self.run(named, store: store)
            #expect((Self.json(r.stdout) as? [String: String]) == ["removed": "made\(i)"], "\(named) \(r.stderr)")
        }
        // verify and seal open no wallet; they accept --profile as every wallet command does.
        let verkey = try #require(
            (Self.json(try await ProfileCLITests.bob(["key", "create"], store: store).stdout) as? [String: String])?["verkey"])
        let signed = try await ProfileCLITests.bob(["key", "sign", verkey, "aGk="], store: store)
        let signature = try #require((Self.json(signed.stdout) as? [String: String])?["signature"], "\(signed.stderr)")
        for argv in Self.placements(["key", "verify"], [verkey, "aGk=", signature], profile: "bob") {
            let r = try await Self.run(argv, store: store)
            #expect(r.status == 0 && r.stdout.contains("true"), "\(argv) \(r.stderr)")
        }
        let xkey = try #require(
            (Self.json(try await ProfileCLITests.bob(["key", "create", "--kind", "x25519"], store: store).stdout) as? [String: String])?[
                "verkey"]
        )
        for argv in Self.placements(["key", "seal"], [xkey, "aGk="], profile: "bob") {
            let r = try await Self.run(argv, store: store)
            #expect(r.status == 0, "\(argv) \(r.stderr)")
            let box = try #require((Self.json(r.stdout) as? [String: String])?["box"])
            let opened = try await ProfileCLITests.bob(["key", "open", xkey, box], store: store)
            #expect((Self.json(opened.stdout) as? [String: String])?["message"] == "aGk=", "\(opened.stderr)")
        }
        // The keys were made in bob: the default wallet holds none.
        #expect(Self.json(try await CLI.wallet(["key", "list"], store: store).stdout) as? [Any] != nil)
        #expect((Self.json(try await CLI.wallet(["key", "list"], store: store).stdout) as? [Any])?.isEmpty == true)
    }

    @Test("a session of record commands on bob, --profile alternating places: everything lands in bob, nothing in default")
    func recordCommandsActOnTheProfile() async throws {
        let store = try await ProfileCLITests.store()
        let steps: [([String], [String], String)] = [
            (["add"], ["t", "a", "one", "--tags", #"{"k": "1"}"#], #"{"added":{"type":"t","id":"a"}}"#),
            (["add"], ["t", "b", "two"], #"{"added":{"type":"t","id":"b"}}"#),
            (["update"], ["t", "a", "uno"], #"{"updated":{"type":"t","id":"a"}}"#),
            (["add-tags"], ["t", "b", #"{"k": "1"}"#], #"{"tagsAdded":{"type":"t","id":"b"}}"#),
            (["update-tags"], ["t", "a", #"{"k": "1", "m": "2"}"#], #"{"tagsUpdated":{"type":"t","id":"a"}}"#),
            (["delete-tags"], ["t", "a", #"["m"]"#], #"{"tagsDeleted":{"type":"t","id":"a"}}"#),
            (["count"], ["t", #"{"k": "1"}"#], #"{"count":2}"#),
            (["get"], ["t", "a"], #"{"id":"a","value":"uno","tags":{"k":"1"}}"#),
            (["delete"], ["t", "b"], #"{"deleted":{"type":"t","id":"b"}}"#),
            (["remove-all"], ["t", #"{"k": "2"}"#], #"{"removed":0}"#),
        ]
        for (i, (path, args, expected)) in steps.enumerated() {
            let argv = Self.placements(path, args, profile: "bob")[i % 3]
            let r = try await Self.run(argv, store: store, keyVar: "BOB_KEY")
            #expect(r.stdout == expected + "\n", "\(argv.joined(separator: " ")): \(r.stdout) \(r.stderr)")
        }
        let search = try await Self.run(["wallet", "search", "t", "{}", "--profile", "bob"], store: store, keyVar: "BOB_KEY")
        #expect(search.stdout.contains("\"uno\""), "\(search.stdout)")
        #expect(try await Self.run(["wallet", "--profile", "bob", "check"], store: store, keyVar: "BOB_KEY").status == 0)
        #expect(try await Self.run(["wallet", "compact", "--profile", "bob"], store: store, keyVar: "BOB_KEY").status == 0)
        #expect(Self.json(try await CLI.wallet(["count", "t"], store: store).stdout) as? [String: Int] == ["count": 0])
        // rekey of bob: the new key opens bob only; the default wallet keeps its key.
        let rekeyed = try await Self.run(
            ["--profile", "bob", "wallet", "rekey", "--new-raw-key-env", "NEW_KEY"], store: store, keyVar: "BOB_KEY")
        #expect(rekeyed.status == 0, "\(rekeyed.stderr)")
        #expect(
            try await Self.run(["wallet", "count", "t", "--profile", "bob"], store: store, keyVar: "NEW_KEY").stdout == #"{"count":1}"#
                + "\n")
        #expect(try await Self.run(["wallet", "count", "t"], store: store, keyVar: "NEW_KEY").status == 4)
        #expect(try await CLI.wallet(["check"], store: store).status == 0)
    }

    @Test("wallet create --profile NAME on a folder with no store makes the store holding that profile alone")
    func createProfileMakesStore() async throws {
        let store = TemporaryFolders.path("coffer-profile-new")
        let r = try await Self.run(["wallet", "create", "--profile", "alice"], store: store)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(Self.json(try await CLI.run(["wallet", "profiles"], store: store).stdout) as? [String] == ["alice"])
        #expect(try await Self.run(["wallet", "count", "t", "--profile", "alice"], store: store).stdout == #"{"count":0}"# + "\n")
        #expect(try await CLI.wallet(["count", "t"], store: store).status == 1)
    }

    @Test("import-backup into a profile: exit 3 when it exists, 4 for a wrong passphrase; the store's profiles as they were")
    func importBackupErrors() async throws {
        let store = try await ProfileCLITests.store()
        #expect(try await CLI.wallet(["add", "t", "a", "main"], store: store).status == 0)
        let backup = TemporaryFolders.make("coffer-profile-backup").appendingPathComponent("main.backup")
        #expect(
            try await Self.run(
                ["wallet", "export", backup.path, "--backup-passphrase-env", "BP", "--backup-kdf", "interactive"], store: store
            )
            .status == 0)
        let exists = try await Self.run(
            ["wallet", "import-backup", backup.path, "--backup-passphrase-env", "BP", "--profile", "bob"], store: store)
        #expect(exists.status == 3, "\(exists.stderr)")
        let wrong = try await CLI.run(
            ["--raw-key-env", "K", "wallet", "import-backup", backup.path, "--backup-passphrase-env", "WRONG", "--profile", "carol"],
            store: store, env: ["K": CLI.key, "WRONG": "not it"])
        #expect(wrong.status == 4, "\(wrong.stderr)")
        #expect(Self.json(try await CLI.run(["wallet", "profiles"], store: store).stdout) as? [String] == ["default", "bob"])
        let into = try await Self.run(
            ["wallet", "import-backup", backup.path, "--backup-passphrase-env", "BP", "--profile", "carol"], store: store)
        #expect(into.status == 0, "\(into.stderr)")
        #expect(try await Self.run(["wallet", "get", "t", "a", "--profile", "carol"], store: store).stdout.contains("\"main\""))
    }

    @Test(
        "kill -9 inside import-backup into a new profile, its tables made but not committed: no such profile, the others' rows unchanged; the rerun restores"
    )
    func killMidRestoreIntoProfile() async throws {
        let store = try await ProfileCLITests.store()
        let lines = (0..<30).map { #"{"type": "t", "id": "m\#($0)", "value": "main"}"# }.joined(separator: "\n")
        let linesFile = TemporaryFolders.make("coffer-profile-lines").appendingPathComponent("main.jsonl")
        try Data(lines.utf8).write(to: linesFile)
        #expect(try await CLI.wallet(["import", linesFile.path], store: store).status == 0)
        let backup = TemporaryFolders.make("coffer-profile-backup").appendingPathComponent("main.backup")
        #expect(
            try await Self.run(
                ["wallet", "export", backup.path, "--backup-passphrase-env", "BP", "--backup-kdf", "interactive"], store: store
            )
            .status == 0)
        let rowsBefore = try ProfileCLITests.defaultRows(store)
        let child = try CLI.start(
            ["--raw-key-env", "K", "wallet", "import-backup", backup.path, "--backup-passphrase-env", "BP", "--profile", "carol"],
            store: store,
            env: Self.env.merging(["COFFER_TEST_PAUSE_AT": "restore-profile-building", "COFFER_TEST_PAUSE_MS": "600000"]) { $1 })
        #expect(try await ProfileCLITests.reachedPause(child, "restore-profile-building"), "the restore never made the profile's tables")
        #expect(child.isRunning, "the restore ended before the kill")
        #expect(try await child.killAndWait().wasSignalled)
        #expect(Self.json(try await CLI.run(["wallet", "profiles"], store: store).stdout) as? [String] == ["default", "bob"])
        #expect(try ProfileCLITests.defaultRows(store) == rowsBefore)
        #expect(try await CLI.wallet(["check"], store: store).status == 0)
        #expect(try await ProfileCLITests.bob(["check"], store: store).status == 0)
        let rerun = try await Self.run(
            ["wallet", "import-backup", backup.path, "--backup-passphrase-env", "BP", "--profile", "carol"], store: store)
        #expect(rerun.status == 0, "\(rerun.stderr)")
        #expect(try await Self.run(["wallet", "count", "t", "--profile", "carol"], store: store).stdout == #"{"count":30}"# + "\n")
    }

    @Test("import-indy --profile NAME imports into that profile only")
    func importIndyIntoProfile() async throws {
        let dir = ForeignStores.folder()
        guard try await ForeignStores.make(["indy", dir.path, "w", "raw", "20"]) else { return }
        let manifest = try ForeignStores.json(dir.appendingPathComponent("w.json"))
        let store = try await ProfileCLITests.store()
        let r = try await CLI.run(
            [
                "wallet", "import-indy", dir.appendingPathComponent("w.db").path, "--source-key-env", "S", "--profile", "bob",
                "--raw-key-env", "K",
            ],
            store: store, env: ["K": Self.bobKey, "S": manifest["key"] as! String])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(ForeignStores.output(r)["imported"] as? Int == 20)
        let types = ForeignStores.output(r)["types"] as? [String: Int] ?? [:]
        for (type, n) in types {
            let bob = try await ProfileCLITests.bob(["count", type], store: store)
            #expect(Self.json(bob.stdout) as? [String: Int] == ["count": n], "\(type): \(bob.stdout) \(bob.stderr)")
            #expect(Self.json(try await CLI.wallet(["count", type], store: store).stdout) as? [String: Int] == ["count": 0], "\(type)")
        }
    }

    @Test(
        "import-askar --profile NAME reads Askar profile NAME into Coffer profile NAME; --source-profile overrides the source side; \"profile\" names the source"
    )
    func importAskarProfileMapping() async throws {
        let dir = ForeignStores.folder()
        guard try await ForeignStores.make(["askar", dir.path]) else { return }
        let stores = try ForeignStores.json(dir.appendingPathComponent("askar.json"))["stores"] as! [[String: Any]]
        let second = try #require(stores.first { $0["profile"] as? String == "second" })
        let records = second["records"] as! [[String: Any]]
        let source = dir.appendingPathComponent(second["file"] as! String).path
        let key = second["key"] as! String
        let store = try await CLI.newStore()
        func importAskar(_ extra: [String], into profile: String?) async throws -> CLIResult {
            try await CLI.run(
                ["wallet", "import-askar", source, "--source-key-env", "S", "--raw-key-env", "K"] + extra,
                store: store, env: ["K": profile == nil ? CLI.key : Self.bobKey, "S": key])
        }
        // --profile second: the Coffer profile second must exist (exit 1, named, until it is made).
        let missing = try await importAskar(["--profile", "second"], into: "second")
        #expect(missing.status == 1 && missing.stderr.contains("(profile \"second\")"), "\(missing.stderr)")
        #expect(
            try await CLI.run(["--raw-key-env", "K", "wallet", "create", "--profile", "second"], store: store, env: ["K": Self.bobKey])
                .status
                == 0)
        let mapped = try await importAskar(["--profile", "second"], into: "second")
        #expect(mapped.status == 0, "\(mapped.stderr)")
        #expect(ForeignStores.output(mapped)["imported"] as? Int == records.count)
        #expect(ForeignStores.output(mapped)["profile"] as? String == "second")
        let inSecond = try await CLI.run(
            ["wallet", "search", "credential", "{}", "--profile", "second", "--raw-key-env", "K"], store: store, env: ["K": Self.bobKey])
        #expect(inSecond.stdout.contains("second-rec-"), "\(inSecond.stdout.prefix(200)) \(inSecond.stderr)")
        #expect(Self.json(try await CLI.wallet(["count", "credential"], store: store).stdout) as? [String: Int] == ["count": 0])
        // --source-profile second into the Coffer profile other.
        #expect(
            try await CLI.run(["--raw-key-env", "K", "wallet", "create", "--profile", "other"], store: store, env: ["K": Self.bobKey])
                .status == 0
        )
        let overridden = try await importAskar(["--profile", "other", "--source-profile", "second"], into: "other")
        #expect(overridden.status == 0, "\(overridden.stderr)")
        #expect(ForeignStores.output(overridden)["profile"] as? String == "second")
        #expect(ForeignStores.output(overridden)["imported"] as? Int == records.count)
        // --source-profile alone: into the default profile, as before.
        let intoDefault = try await importAskar(["--source-profile", "second"], into: nil)
        #expect(intoDefault.status == 0, "\(intoDefault.stderr)")
        #expect(ForeignStores.output(intoDefault)["profile"] as? String == "second")
        let counted = try await CLI.wallet(["count", "credential"], store: store)
        #expect((Self.json(counted.stdout) as? [String: Int])?["count"] ?? 0 > 0, "\(counted.stdout)")
    }
}
