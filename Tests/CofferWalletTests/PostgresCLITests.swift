// `coffer wallet … --wallet-url postgres://…` in a build with the PostgreSQL trait, seen from
// outside: the built binary against the tests' private server. In the serialized PostgreSQL
// suite, since one of its tests restarts that server.

#if PostgreSQL
import CofferTestSupport
import Foundation
import Testing

@testable import CofferWallet

enum PostgresCLI {
    static let keyEnv = ["K": PostgresTesting.key.rawBase64, "O": PostgresTesting.otherKey.rawBase64]

    /// `coffer --store STORE ARGS --wallet-url URL` with the keys in the environment.
    static func run(_ args: [String], url: String, store: URL) async throws -> ProcessResult {
        try await runCoffer(args + ["--wallet-url", url], store: store, environment: keyEnv, within: .seconds(120))
    }

    /// The built `coffer`.
    static var binary: URL { cofferBinary }

    static func json(_ text: String) -> Any? { try? JSONSerialization.jsonObject(with: Data(text.utf8)) }
}

extension WalletKey {
    fileprivate var rawBase64: String {
        guard case .raw(let data) = self else { return "" }
        return data.base64EncodedString()
    }
}

extension PostgresWalletTests {
    @Test("coffer wallet create, profiles, add, get, update, count, delete, remove-profile on a PostgreSQL URL")
    func commandLine() async throws {
        let endpoint = try PostgresTestServer.endpoint()
        let database = try PostgresTestServer.makeDatabase("cli")
        let url = endpoint.url(database: database) + "?sslmode=disable&max_connections=2"
        let store = TemporaryFolders.path("coffer-pg-cli")
        let k = ["--raw-key-env", "K"]
        func ok(_ args: [String]) async throws -> String {
            let r = try await PostgresCLI.run(args, url: url, store: store)
            #expect(r.status == 0, "\(args): \(r.stderr)")
            return r.stdout
        }
        let created = try await ok(["wallet", "create"] + k)
        #expect(PostgresCLI.json(created) as? [String: String] == ["created": try PostgresURL(url).description], "\(created)")
        _ = try await ok(["wallet", "create", "--profile", "bob"] + k)
        #expect(PostgresCLI.json(try await ok(["wallet", "profiles"])) as? [String] == ["default", "bob"])
        _ = try await ok(["wallet", "add", "cred", "a", "one", "--tags", #"{"schema":"s1","~n":"5"}"#] + k)
        _ = try await ok(["wallet", "update", "cred", "a", "two"] + k)
        let got = PostgresCLI.json(try await ok(["wallet", "get", "cred", "a"] + k)) as? [String: Any]
        #expect(got?["value"] as? String == "two")
        #expect(PostgresCLI.json(try await ok(["wallet", "count", "cred", #"{"schema":"s1"}"#] + k)) as? [String: Int] == ["count": 1])

        // The record is in the database, readable by the library under the same key.
        let wallet = try await PostgresWallet.open(settings: PostgresSettings(url: try PostgresURL(url)), key: PostgresTesting.key)
        #expect(try await wallet.fetch(type: "cred", id: "a")?.value == "two")
        wallet.close()

        let wrongKey = try await PostgresCLI.run(["wallet", "get", "cred", "a", "--raw-key-env", "O"], url: url, store: store)
        #expect(wrongKey.status == 4, "\(wrongKey.stderr)")
        let duplicate = try await PostgresCLI.run(["wallet", "add", "cred", "a", "x"] + k, url: url, store: store)
        #expect(duplicate.status == 3, "\(duplicate.stderr)")
        _ = try await ok(["wallet", "delete", "cred", "a"] + k)
        let missing = try await PostgresCLI.run(["wallet", "get", "cred", "a"] + k, url: url, store: store)
        #expect(missing.status == 1, "\(missing.stderr)")
        _ = try await ok(["wallet", "remove-profile", "bob", "--yes"])
        #expect(PostgresCLI.json(try await ok(["wallet", "profiles"])) as? [String] == ["default"])
        #expect(!FileManager.default.fileExists(atPath: store.appendingPathComponent("wallet.sqlite").path), "a SQLite wallet was made")
    }
}
#endif
