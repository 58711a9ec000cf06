// The command line as a person meets it: usage errors name the command that failed, every
// argument is described, each command shows only the options it uses, mistyped names get a
// suggestion, numeric options state their range, and every mutating command prints JSON.

import CofferTestSupport
import Foundation
import Testing

/// The commands of `coffer`, read from the parser's own description of the tree.
enum CommandTree {
    /// Every leaf command as its path after `coffer` (`["wallet", "add"]`), without the parser's `help`.
    static func leaves() async throws -> [[String]] {
        let store = TemporaryFolders.path("coffer-tree")
        let r = try await CLI.run(["--experimental-dump-help"], store: store)
        #expect(r.status == 0, "\(r.stderr)")
        let root = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any])
        var out = [[String]]()
        func walk(_ command: [String: Any], _ path: [String]) {
            let subcommands = command["subcommands"] as? [[String: Any]] ?? []
            if subcommands.isEmpty, !path.isEmpty, path != ["help"] { out.append(path) }
            for sub in subcommands { walk(sub, path + [sub["commandName"] as? String ?? "?"]) }
        }
        walk(try #require(root["command"] as? [String: Any]), [])
        return out
    }

    /// The help screen's entries per section ("ARGUMENTS", "OPTIONS", "WALLET KEY (ONE OF)", …),
    /// each entry's lines joined with single spaces.
    static func entries(_ help: String) -> [(section: String, text: String)] {
        var out = [(section: String, text: String)]()
        var section = ""
        for line in help.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.isEmpty {
                section = ""
            } else if !line.hasPrefix(" "), line.hasSuffix(":") {
                section = String(line.dropLast())
            } else if !section.isEmpty {
                let text = line.split(separator: " ").joined(separator: " ")
                if line.hasPrefix("  "), !line.hasPrefix("   ") {
                    out.append((section, text))
                } else if !out.isEmpty {
                    out[out.count - 1].text += " " + text
                }
            }
        }
        return out
    }
}

@Suite("coffer usage: errors, help, suggestions")
struct CLIUsageTests {
    let store = TemporaryFolders.path("coffer-usage")

    @Test("a missing argument prints the failing subcommand's usage and the parser's hint, exit 2")
    func missingArgument() async throws {
        let add = try await CLI.wallet(["add", "cred", "c2"], store: try await CLI.newStore())
        #expect(add.status == 2)
        #expect(add.stderr.hasPrefix("error: "), "\(add.stderr)")
        #expect(add.stderr.contains("wallet add <type> <id> <value>"), "\(add.stderr)")
        #expect(add.stderr.contains("See 'coffer wallet add --help' for more information."), "\(add.stderr)")
        let get = try await CLI.wallet(["get", "cred"], store: store)
        #expect(get.status == 2)
        #expect(get.stderr.contains("error: Missing expected argument '<id>'"), "\(get.stderr)")
        #expect(get.stderr.contains("Usage: coffer wallet get <type> <id>"), "\(get.stderr)")
        #expect(get.stderr.contains("See 'coffer wallet get --help'"), "\(get.stderr)")
        let set = try await CLI.run(["settings", "set", "tilesPerRow"], store: store)
        #expect(set.status == 2)
        #expect(set.stderr.contains("Usage: coffer settings set <name> <value>"), "\(set.stderr)")
    }

    @Test("every positional argument of every command is described in its help")
    func positionalHelp() async throws {
        let leaves = try await CommandTree.leaves()
        #expect(leaves.count > 40)
        for path in leaves {
            let r = try await CLI.run(path + ["--help"], store: store)
            #expect(r.status == 0, "\(path): \(r.stderr)")
            for entry in CommandTree.entries(r.stdout) where entry.section == "ARGUMENTS" {
                let description = entry.text.split(separator: " ").dropFirst()
                #expect(!description.isEmpty, "coffer \(path.joined(separator: " ")): \(entry.text) has no description")
            }
        }
    }

    /// Wallet commands that open the wallet, and so take its key.
    static let keyed: Set<String> = [
        "wallet create", "wallet add", "wallet get", "wallet update", "wallet delete", "wallet add-tags", "wallet update-tags",
        "wallet delete-tags", "wallet search", "wallet count", "wallet remove-all", "wallet import", "wallet rekey", "wallet check",
        "wallet compact", "wallet export", "wallet import-backup", "wallet key create", "wallet key list", "wallet key sign",
        "wallet key open", "wallet import-indy", "wallet import-askar",
    ]
    /// Deniable commands that unlock the vault.
    static let vault: Set<String> = ["deniable unlock", "deniable status", "deniable send", "deniable reply"]
    /// Commands that touch no store.
    static let storeless: Set<String> = ["wallet key verify", "wallet key seal", "deniable check-vectors"]

    @Test("each command's help shows only the store and key options it uses; the vault's passphrase is the vault's")
    func optionsPerCommand() async throws {
        for path in try await CommandTree.leaves() {
            let name = path.joined(separator: " ")
            let help = try await CLI.run(path + ["--help"], store: store).stdout
            let options = CommandTree.entries(help).filter { $0.section != "ARGUMENTS" }.map(\.text)
            func entry(_ option: String) -> String? { options.first { $0.hasPrefix(option + " ") } }
            let keyed = Self.keyed.contains(name)
            for option in ["--raw-key", "--raw-key-env", "--raw-key-file"] {
                #expect((entry(option) != nil) == keyed, "coffer \(name) --help and \(option)")
            }
            if !keyed { #expect(!help.contains("--raw-key"), "coffer \(name) --help mentions a wallet key") }
            let passphrase = entry("--passphrase-env")
            if keyed {
                #expect(passphrase?.contains("wallet's passphrase") == true, "coffer \(name): \(passphrase ?? "no --passphrase-env")")
            } else if Self.vault.contains(name) {
                #expect(passphrase?.contains("vault's passphrase") == true, "coffer \(name): \(passphrase ?? "no --passphrase-env")")
            } else {
                #expect(!help.contains("--passphrase-env"), "coffer \(name) --help mentions --passphrase-env")
            }
            if path.first != "bench" {
                #expect((entry("--store") != nil) == !Self.storeless.contains(name), "coffer \(name) --help and --store")
            }
        }
    }

    @Test("global options before the subcommand keep working where they were accepted")
    func globalOptions() async throws {
        let env = ["K": CLI.key, "P": "a passphrase"]
        #expect(try await CLI.run(["--raw-key-env", "K", "settings", "list"], store: store, env: env).status == 0)
        #expect(try await CLI.run(["--passphrase-env", "P", "db", "stats"], store: store, env: env).status == 0)
        #expect(try await CLI.run(["settings", "list", "--raw-key-env", "K"], store: store, env: env).status == 0)
        let wallet = try await CLI.newStore()
        #expect(
            try await CLI.run(["wallet", "count", "t", "--raw-key-env", "K"], store: wallet, env: env).stdout == #"{"count":0}"# + "\n")
        #expect(
            try await CLI.run(["--raw-key-env", "K", "wallet", "count", "t"], store: wallet, env: env).stdout == #"{"count":0}"# + "\n")
    }

    @Test("a mistyped subcommand names the closest one, at any level, exit 2")
    func didYouMean() async throws {
        let top = try await CLI.run(["walet", "create"], store: store)
        #expect(top.status == 2)
        #expect(top.stderr.hasPrefix("error: 'walet' is not a subcommand of 'coffer'; did you mean 'wallet'?"), "\(top.stderr)")
        #expect(top.stderr.contains("See 'coffer --help'"), "\(top.stderr)")
        let below = try await CLI.wallet(["crate"], store: store)
        #expect(below.status == 2)
        #expect(below.stderr.contains("did you mean 'create'?"), "\(below.stderr)")
        #expect(below.stderr.contains("Usage: coffer wallet "), "\(below.stderr)")
        let deeper = try await CLI.wallet(["key", "lsit"], store: store)
        #expect(deeper.stderr.contains("'lsit' is not a subcommand of 'coffer wallet key'; did you mean 'list'?"), "\(deeper.stderr)")
        let far = try await CLI.run(["settings", "frobnicate"], store: store)
        #expect(far.status == 2)
        #expect(far.stderr.contains("its subcommands are get, set, delete, list"), "\(far.stderr)")
    }

    @Test("numeric options out of range say their range, exit 2")
    func numericRanges() async throws {
        let wallet = try await CLI.newStore()
        for value in ["-1", "0"] {
            let r = try await CLI.wallet(["search", "t", "{}", "--count", value], store: wallet)
            #expect(r.status == 2)
            #expect(r.stderr.hasPrefix("error: --count must be at least 1, got \(value)\n"), "\(r.stderr)")
        }
        let cleanup = try await CLI.run(["cleanup", "--dry-run", "--cutoff-days", "-3"], store: store)
        #expect(cleanup.status == 2)
        #expect(cleanup.stderr.hasPrefix("error: --cutoff-days must be at least 0, got -3\n"), "\(cleanup.stderr)")
        let notANumber = try await CLI.run(["db", "put-asset", "r", "o", "c", "--created-at", "nan"], store: store)
        #expect(notANumber.status == 2)
        #expect(notANumber.stderr.contains("--created-at must be a finite number"), "\(notANumber.stderr)")
        let before1970 = try await CLI.run(["db", "put-asset", "r", "o", "c", "--created-at", "-86400"], store: store)
        #expect(before1970.status == 0, "\(before1970.stderr)")
        #expect(try await CLI.wallet(["search", "t", "{}", "--count", "1"], store: wallet).status == 0)
    }

    @Test("help states each option's values and range once")
    func noDuplicateValues() async throws {
        for path in try await CommandTree.leaves() {
            let help = try await CLI.run(path + ["--help"], store: store).stdout
            for entry in CommandTree.entries(help) {
                guard let range = entry.text.range(of: "(values: ") else { continue }
                let list = entry.text[range.upperBound...].prefix { $0 != ")" && $0 != ";" }
                let values = list.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
                let rest = String(entry.text[..<range.lowerBound])
                #expect(!values.allSatisfy { rest.contains($0) }, "coffer \(path.joined(separator: " ")): \(entry.text)")
            }
        }
        func flat(_ args: [String]) async throws -> String {
            try await CLI.run(args, store: store).stdout.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        }
        #expect(try await flat(["wallet", "search", "--help"]).contains("--count <n> Records in the page, 1 or more"))
        #expect(try await flat(["cleanup", "--help"]).contains("this many days ago, 0 or more"))
    }
}

@Suite("coffer: every mutating command prints one JSON object")
struct MutationOutputTests {
    @Test("wallet record and tag commands")
    func walletCommands() async throws {
        let store = try await CLI.newStore()
        let cases: [([String], String)] = [
            (["add", "cred", "c1", "v"], #"{"added":{"type":"cred","id":"c1"}}"#),
            (["update", "cred", "c1", "v2"], #"{"updated":{"type":"cred","id":"c1"}}"#),
            (["add-tags", "cred", "c1", #"{"a":"1"}"#], #"{"tagsAdded":{"type":"cred","id":"c1"}}"#),
            (["update-tags", "cred", "c1", #"{"b":"2"}"#], #"{"tagsUpdated":{"type":"cred","id":"c1"}}"#),
            (["delete-tags", "cred", "c1", #"["b"]"#], #"{"tagsDeleted":{"type":"cred","id":"c1"}}"#),
            (["delete", "cred", "c1"], #"{"deleted":{"type":"cred","id":"c1"}}"#),
        ]
        for (args, printed) in cases {
            let r = try await CLI.wallet(args, store: store)
            #expect(r.status == 0, "\(args): \(r.stderr)")
            #expect(r.stdout == printed + "\n", "\(args)")
        }
        #expect(
            try await CLI.wallet(["add", "cred", "c2", "--value-file", "-"], store: store, stdin: Data("x".utf8)).stdout.contains(
                #""added""#))
    }

    @Test("settings, secure items, the cache and reset")
    func appCommands() async throws {
        let store = TemporaryFolders.path("coffer-mutations")
        #expect(
            try await CLI.run(["settings", "set", "tilesPerRow", "6"], store: store).stdout
                == #"{"set":{"name":"tilesPerRow","kind":"int","value":6}}"# + "\n")
        #expect(
            try await CLI.run(["settings", "set", "autoBackup", "true"], store: store).stdout
                == #"{"set":{"name":"autoBackup","kind":"bool","value":true}}"# + "\n")
        #expect(
            try await CLI.run(["settings", "delete", "tilesPerRow"], store: store).stdout == #"{"deleted":{"name":"tilesPerRow"}}"# + "\n")
        let secure = try await CLI.run(["secure", "set", "accessToken", "--value-env", "T"], store: store, env: ["T": "tok-secret"])
        #expect(secure.stdout == #"{"set":{"name":"accessToken","accessibility":"afterFirstUnlock"}}"# + "\n")
        #expect(!secure.stdout.contains("tok-secret"))
        #expect(
            try await CLI.run(["secure", "delete", "accessToken"], store: store).stdout == #"{"deleted":{"name":"accessToken"}}"# + "\n")
        let image = store.appendingPathComponent("image.bin")
        try Data(repeating: 7, count: 100).write(to: image)
        #expect(
            try await CLI.run(["cache", "put", "thumbnail", "a1", image.path], store: store).stdout
                == #"{"stored":{"kind":"thumbnail","id":"a1","bytes":100}}"# + "\n")
        let reset = try await CLI.run(["reset", "--yes"], store: store)
        #expect(reset.status == 0, "\(reset.stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(reset.stdout.utf8)) as? [String: [String: String]])
        #expect(object["reset"]?["data"] == store.path)
    }

    @Test("settings errors say what is wrong with the setting, on the same exit codes")
    func settingsErrors() async throws {
        let store = TemporaryFolders.path("coffer-settings-errors")
        let missing = try await CLI.run(["settings", "get", "noSuchSetting"], store: store)
        #expect(missing.status == 1)
        #expect(missing.stderr.hasPrefix(#"error: not found: setting "noSuchSetting" is not set"#), "\(missing.stderr)")
        #expect(!missing.stderr.contains("record"), "\(missing.stderr)")
        let refused = try await CLI.run(["settings", "set", "noSuchSetting", "1"], store: store)
        #expect(refused.status == 2)
        #expect(refused.stderr.hasPrefix("error: invalid input: noSuchSetting is not in the catalogue: give --kind"), "\(refused.stderr)")
    }

    @Test("the demo prints its data as JSON, never as Swift dictionaries")
    func demoJSON() async throws {
        let store = TemporaryFolders.path("coffer-demo-json")
        let r = try await CLI.run(["demo"], store: store)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.range(of: #"\["[^"]*": "#, options: .regularExpression) == nil, "a Swift dictionary in:\n\(r.stdout)")
        for marker in ["matching credentials: ", "→ presentation using "] {
            let line = try #require(r.stdout.split(separator: "\n").first { $0.contains(marker) }, "no \(marker)line")
            let json = line[line.range(of: marker)!.upperBound...]
            #expect(try JSONSerialization.jsonObject(with: Data(json.utf8)) is [String: Any], "\(line)")
        }
    }
}
