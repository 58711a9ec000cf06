// `coffer wallet import-askar` on `--wallet-url postgres://…`, seen from outside: the stores the
// SQLite import tests read (written by the real Askar, Tests/Interop/foreign.sh), imported by the
// built binary into the tests' private server and into a wallet file, output and records compared.

#if PostgreSQL
import CofferTestSupport
import Foundation
import Testing

@testable import CofferWallet

extension PostgresWalletTests {
    @Test("import-askar on PostgreSQL prints what it prints on SQLite for every Askar-written store, and the records read back alike")
    func importAskarLikeSQLite() async throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let dir = TemporaryFolders.make("coffer-pg-askar")
        let made = try await runProcess(
            URL(fileURLWithPath: "/usr/bin/env"),
            ["bash", root.appendingPathComponent("Tests/Interop/foreign.sh").path, "askar", dir.path],
            within: .seconds(900)) // a first run installs Askar from PyPI
        if made.stdout.hasPrefix("SKIP:") { try Test.cancel(Comment(rawValue: made.stdout)) }
        #expect(made.status == 0 && made.stdout.contains("stores ok"), "\(made.stdout)\(made.stderr)")
        let manifest = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: dir.appendingPathComponent("askar.json"))) as? [String: Any])
        let stores = try #require(manifest["stores"] as? [[String: Any]])
        #expect(stores.count >= 3)
        let k = ["--raw-key-env", "K"]
        for (n, entry) in stores.enumerated() {
            let source = dir.appendingPathComponent(try #require(entry["file"] as? String))
            let before = try Data(contentsOf: source)
            let both = try TwoBackends("cliaskar\(n)")
            #expect(try await both.postgres(["wallet", "create"] + k).status == 0)
            #expect(try await both.sqlite(["wallet", "create"] + k).status == 0)
            let sourceKey = ["S": try #require(entry["key"] as? String)]
            var args = ["wallet", "import-askar", source.path, "--source-key-env", "S"] + k
            if let profile = entry["profile"] as? String { args += ["--source-profile", profile] }
            if entry["keyEntries"] != nil {
                // A key held by Askar's key manager: refused alike, nothing imported, then --skip-keys.
                let pg = try await both.postgres(args, extra: sourceKey)
                let lite = try await both.sqlite(args, extra: sourceKey)
                #expect(pg.status == 2 && lite.status == 2, "\(pg.stderr) \(lite.stderr)")
                #expect(pg.stdout == lite.stdout)
                args.append("--skip-keys")
            }
            let pg = try await both.postgres(args, extra: sourceKey)
            let lite = try await both.sqlite(args, extra: sourceKey)
            #expect(pg.status == 0, "\(entry["file"] ?? ""): \(pg.stderr)")
            #expect(pg.stdout == lite.stdout, "\(entry["file"] ?? ""): PostgreSQL \(pg.stdout) SQLite \(lite.stdout)")
            let summary = PostgresCLI.json(pg.stdout) as? [String: Any]
            #expect(summary?["imported"] as? Int == (entry["records"] as? [Any])?.count, "\(pg.stdout)")
            // The records, type by type, as search and count print them (expired ones stayed behind on both).
            let types = (summary?["types"] as? [String: Int] ?? [:]).keys.sorted()
            #expect(!types.isEmpty)
            for type in types {
                for step in [
                    ["wallet", "search", type, "{}", "--options", #"{"retrieveType":true,"retrieveTotalCount":true}"#],
                    ["wallet", "count", type],
                ] {
                    let pgRead = try await both.postgres(step + k)
                    let liteRead = try await both.sqlite(step + k)
                    #expect(pgRead.status == 0, "\(step): \(pgRead.stderr)")
                    #expect(pgRead.stdout == liteRead.stdout, "\(step): PostgreSQL \(pgRead.stdout) SQLite \(liteRead.stdout)")
                }
            }
            if n == 0 {
                // Errors alike: the same store again (every record a duplicate, 3) and a wrong source key (4).
                let wrongKey = ["S": "5mgssUU4QBEdvCAaXkczkwmu9VtNyJ6W3NMb4QkzLEmd"]
                for (extra, code) in [(sourceKey, Int32(3)), (wrongKey, Int32(4))] {
                    let pgAgain = try await both.postgres(args, extra: extra)
                    let liteAgain = try await both.sqlite(args, extra: extra)
                    #expect(pgAgain.status == code && liteAgain.status == code, "\(pgAgain.stderr) \(liteAgain.stderr)")
                    #expect(pgAgain.stdout == liteAgain.stdout)
                }
            }
            #expect(try Data(contentsOf: source) == before, "\(source.lastPathComponent) changed")
        }
    }
}
#endif
