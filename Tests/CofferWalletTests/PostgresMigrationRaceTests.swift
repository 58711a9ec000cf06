// Many processes making the wallet's tables at once: the first migration of an empty database
// runs under the migration lock, so every process's `wallet create` succeeds and sees the one
// schema the first of them made.

#if PostgreSQL
import CofferTestSupport
import Foundation
import Testing

@testable import CofferWallet

extension PostgresWalletTests {
    @Test("8 coffer processes creating profiles at once in an empty database: every one succeeds, and every profile opens and works")
    func firstMigrationRace() async throws {
        let endpoint = try PostgresTestServer.endpoint()
        let database = try PostgresTestServer.makeDatabase("migrace")
        let url = endpoint.url(database: database) + "?sslmode=disable&max_connections=2"
        let store = TemporaryFolders.path("coffer-pg-migrace")
        let names = (0..<8).map { "tenant\($0)" }
        let results = try await withThrowingTaskGroup(of: (String, ProcessResult).self) { group in
            for name in names {
                group.addTask {
                    (
                        name,
                        try await PostgresCLI.run(["wallet", "create", "--profile", name, "--raw-key-env", "K"], url: url, store: store)
                    )
                }
            }
            return try await group.reduce(into: [(String, ProcessResult)]()) { $0.append($1) }
        }
        for (name, result) in results { #expect(result.status == 0, "\(name): \(result.stderr)") }
        let listed = try await PostgresWallet.profiles(settings: PostgresSettings(url: try PostgresURL(url)))
        #expect(Set(names).isSubset(of: Set(listed)), "\(listed)")
        for name in names {
            let wallet = try await PostgresWallet.open(
                settings: PostgresSettings(url: try PostgresURL(url)), profile: name, key: PostgresTesting.key)
            defer { wallet.close() }
            try await wallet.add(type: "t", id: name, value: "v")
            #expect(try await PostgresTesting.all(wallet, type: "t") == [name])
        }
    }
}
#endif
