// `--wallet-url URL` and `$COFFER_WALLET_URL` on `coffer wallet …` and `coffer bench wallet`:
// where they are accepted, which wins, and the errors for a bad URL and for a PostgreSQL URL in
// a build without the PostgreSQL trait, all seen from outside through the built binary.

import CofferTestSupport
import CofferWallet
import Foundation
import Testing

@Suite("--wallet-url from the command line")
struct WalletURLCLITests {
    static let password = "pw-Zq81x"
    /// A server nobody listens on: a build without the backend must refuse before connecting.
    static let postgres = "postgres://app:\(password)@127.0.0.1:1/wallets?sslmode=disable"
    static let keyEnv = ["K": CLI.key]

    static func json(_ text: String) throws -> Any { try JSONSerialization.jsonObject(with: Data(text.utf8)) }

    /// A store (with its own wallet.sqlite) and a second wallet file outside it, named by a sqlite:// URL.
    static func storeAndOtherFile() async throws -> (store: URL, other: URL, url: String) {
        let store = try await CLI.newStore()
        let other = TemporaryFolders.path("coffer-wallet-url").appendingPathComponent("other.sqlite")
        return (store, other, "sqlite://\(other.path)")
    }

    static func count(_ store: URL, env: [String: String] = [:], _ extra: [String] = []) async throws -> Int? {
        let r = try await CLI.run(
            ["wallet", "count", "t"] + extra + ["--raw-key-env", "K"], store: store, env: keyEnv.merging(env) { $1 })
        return (try? json(r.stdout) as? [String: Int])?["count"]
    }

    @Test("--wallet-url works before the group, between the group and the command, and after the command")
    func placements() async throws {
        let (store, other, url) = try await Self.storeAndOtherFile()
        let create = try await CLI.run(["wallet", "create", "--wallet-url", url, "--raw-key-env", "K"], store: store, env: Self.keyEnv)
        #expect(create.status == 0, "\(create.stderr)")
        #expect(try Self.json(create.stdout) as? [String: String] == ["created": other.path], "\(create.stdout)")
        let runs = [
            ["--wallet-url", url, "wallet", "add", "t", "a", "v", "--raw-key-env", "K"],
            ["wallet", "--wallet-url", url, "add", "t", "b", "v", "--raw-key-env", "K"],
            ["wallet", "add", "t", "c", "v", "--raw-key-env", "K", "--wallet-url", url],
        ]
        for args in runs {
            let r = try await CLI.run(args, store: store, env: Self.keyEnv)
            #expect(r.status == 0, "\(args): \(r.stderr)")
        }
        #expect(try await Self.count(store, ["--wallet-url", url]) == 3)
        #expect(try await Self.count(store) == 0, "the store's own wallet.sqlite was written")
    }

    @Test("$COFFER_WALLET_URL names the wallet when --wallet-url is not given; the option wins over it")
    func environmentVariable() async throws {
        let (store, _, url) = try await Self.storeAndOtherFile()
        let env = ["COFFER_WALLET_URL": url]
        let create = try await CLI.run(["wallet", "create", "--raw-key-env", "K"], store: store, env: Self.keyEnv.merging(env) { $1 })
        #expect(create.status == 0, "\(create.stderr)")
        let add = try await CLI.run(
            ["wallet", "add", "t", "a", "v", "--raw-key-env", "K"], store: store, env: Self.keyEnv.merging(env) { $1 })
        #expect(add.status == 0, "\(add.stderr)")
        #expect(try await Self.count(store, env: env) == 1)
        let storeFile = "sqlite://\(store.appendingPathComponent("wallet.sqlite").path)"
        #expect(try await Self.count(store, env: env, ["--wallet-url", storeFile]) == 0)
        #expect(try await Self.count(store, env: ["COFFER_WALLET_URL": ""]) == 0, "an empty variable counts as unset")
    }

    @Test("profiles and remove-profile take --wallet-url too")
    func profileCommands() async throws {
        let (store, _, url) = try await Self.storeAndOtherFile()
        let create = try await CLI.run(
            ["wallet", "create", "--profile", "bob", "--wallet-url", url, "--raw-key-env", "K"], store: store, env: Self.keyEnv)
        #expect(create.status == 0, "\(create.stderr)")
        let list = try await CLI.run(["wallet", "profiles", "--wallet-url", url], store: store)
        #expect(try Self.json(list.stdout) as? [String] == ["bob"], "\(list.stdout) \(list.stderr)")
        let removed = try await CLI.run(["--wallet-url", url, "wallet", "remove-profile", "bob", "--yes"], store: store)
        #expect(removed.status == 0, "\(removed.stderr)")
        #expect(try Self.json(try await CLI.run(["wallet", "profiles"], store: store).stdout) as? [String] == ["default"])
    }

    @Test("a URL that does not parse exits 2 naming the bad part, without the password")
    func badURL() async throws {
        let store = try await CLI.newStore()
        let cases: [(String, String)] = [
            ("postgres://app:\(Self.password)@db:port/wallets", "the port must be a number"),
            ("postgres://app:\(Self.password)@db/wallets?max_conections=4", "unknown query parameter \"max_conections\""),
            ("postgres://app:\(Self.password)@db", "no database name"),
            ("mysql://app:\(Self.password)@db/wallets", "the scheme \"mysql\" is not supported"),
            ("/var/lib/wallet.sqlite", "not a wallet URL"),
        ]
        for (url, expected) in cases {
            let r = try await CLI.run(["wallet", "count", "t", "--raw-key-env", "K", "--wallet-url", url], store: store, env: Self.keyEnv)
            #expect(r.status == 2, "\(expected): \(r.stderr)")
            #expect(r.stderr.contains("--wallet-url"), "\(r.stderr)")
            #expect(r.stderr.contains(expected), "\(r.stderr)")
            #expect(!r.stderr.contains(Self.password) && !r.stdout.contains(Self.password), "\(r.stderr)")
            let viaEnv = try await CLI.run(
                ["wallet", "count", "t", "--raw-key-env", "K"], store: store, env: Self.keyEnv.merging(["COFFER_WALLET_URL": url]) { $1 })
            #expect(viaEnv.status == 2, "\(viaEnv.stderr)")
            #expect(viaEnv.stderr.contains("$COFFER_WALLET_URL") && viaEnv.stderr.contains(expected), "\(viaEnv.stderr)")
        }
    }

    @Test(
        "a postgres:// URL in a build without the PostgreSQL trait exits 2 saying how to build it, wherever it is given",
        .enabled(if: !WalletLocation.postgresBuiltIn, "this build has the PostgreSQL backend"))
    func notBuilt() async throws {
        let store = try await CLI.newStore()
        let key = ["--raw-key-env", "K"]
        let runs: [([String], [String: String])] = [
            (["--wallet-url", Self.postgres, "wallet", "count", "t"] + key, [:]),
            (["wallet", "--wallet-url", Self.postgres, "get", "t", "a"] + key, [:]),
            (["wallet", "create"] + key + ["--wallet-url", Self.postgres], [:]),
            (["wallet", "add", "t", "a", "v"] + key, ["COFFER_WALLET_URL": Self.postgres]),
            (["wallet", "profiles", "--wallet-url", Self.postgres], [:]),
            (["wallet", "remove-profile", "bob", "--yes", "--wallet-url", Self.postgres], [:]),
            (["wallet", "key", "list"] + key + ["--wallet-url", Self.postgres], [:]),
            (["wallet", "import-backup", "/nonexistent", "--backup-passphrase-env", "K"] + key + ["--wallet-url", Self.postgres], [:]),
            (["bench", "wallet", "--n", "10", "--wallet-url", Self.postgres], [:]),
        ]
        for (args, env) in runs {
            let r = try await CLI.run(args, store: store, env: Self.keyEnv.merging(env) { $1 })
            #expect(r.status == 2, "\(args): \(r.stderr)")
            #expect(r.stderr.contains("built without the PostgreSQL trait"), "\(args): \(r.stderr)")
            #expect(r.stderr.contains("swift build --traits PostgreSQL"), "\(r.stderr)")
            #expect(!r.stderr.contains(Self.password), "the error shows the password: \(r.stderr)")
        }
        #expect(try await Self.count(store) == 0)
    }
}
