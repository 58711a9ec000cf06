// PostgreSQL's searches and counts are the shared query compiler's `postgres` statements, run
// through the storage seam's rows: they name the shared tables, bind the profile's number, and so
// never reach another profile's rows, even rows that carry this profile's own blinds.

#if PostgreSQL
import CofferTestSupport
import Foundation
import PostgresNIO
import Testing

@testable import CofferWallet

// Nested in the serialized PostgreSQL suite: no test of it runs while another restarts the server
// (as a suite of its own, one waited out its lease timeout during the restart test).
extension PostgresWalletTests {
    @Suite("PostgreSQL searches through the query compiler")
    struct PostgresCompiledSearchTests {
        /// Two profiles in one database (the second's number is not 0), the first holding `records`.
        static func twoProfiles(_ label: String) async throws -> (alice: PostgresWallet, bob: PostgresWallet) {
            let settings = try PostgresTesting.settings(label)
            let alice = try await PostgresWallet.create(settings: settings, profile: "alice", key: PostgresTesting.key)
            let bob = try await PostgresWallet.create(settings: settings, profile: "bob", key: PostgresTesting.otherKey)
            for (id, tags) in records { try await alice.add(type: "cred", id: id, value: "v-\(id)", tags: tags) }
            return (alice, bob)
        }

        static let records: [(String, WalletTags)] = [
            ("a", ["schema": "s1", "issuer": "i1", "~seq": "001"]),
            ("b", ["schema": "s1", "issuer": "i2", "~seq": "002"]),
            ("c", ["schema": "s2", "issuer": "i1", "~seq": "003"]),
        ]

        /// Queries that take each kind of plan and filter: the type's records, one tag equality, an
        /// equality joined to another, a plaintext range, `$in`, `$or`, `$not`, and `$like`/`$regex`
        /// (decided in memory), with what alice's records give for each.
        static let queries: [(String, [String])] = [
            ("{}", ["a", "b", "c"]),
            (#"{"schema":"s1"}"#, ["a", "b"]),
            (#"{"schema":"s1","issuer":"i1"}"#, ["a"]),
            (#"{"~seq":{"$gte":"002","$lt":"004"}}"#, ["b", "c"]),
            (#"{"issuer":{"$in":["i2","i9"]}}"#, ["b"]),
            (#"{"$or":[{"schema":"s2"},{"issuer":"i2"}]}"#, ["b", "c"]),
            (#"{"$not":{"schema":"s1"}}"#, ["c"]),
            (#"{"~seq":{"$like":"00%"}}"#, ["a", "b", "c"]),
            (#"{"~seq":{"$regex":"^00[12]$"}}"#, ["a", "b"]),
        ]

        @Test(
            "a search's page is the compiler's postgres statement: the shared tables, the profile's number bound, the index's value prefix")
        func compiledStatement() async throws {
            let (alice, bob) = try await Self.twoProfiles("compiled")
            defer {
                alice.close()
                bob.close()
            }
            let keys = alice.keys
            let (search, plan) = try alice.compiled(type: "cred", query: WalletQuery(json: #"{"schema":"s1","issuer":"i1"}"#), keys: keys)
            #expect(search.dialect == .postgres && search.exact)
            let statement = search.pageStatement(plan, after: 0, limit: 10, descending: false, now: 0, expiry: true)
            let sql = statement.sql
            #expect(sql.hasPrefix("SELECT i.id, i.name, i.value, i.expiry FROM coffer_tags d JOIN coffer_tags e0 ON"), "\(sql)")
            #expect(sql.contains("JOIN coffer_items i ON i.id = d.item WHERE d.profile = $"), "\(sql)")
            #expect(sql.contains("substring(d.value from 1 for \(PostgresStore.indexedPrefix)) = $"), "\(sql)")
            #expect(sql.hasSuffix("ORDER BY d.item ASC LIMIT $\(statement.arguments.count)"), "\(sql)")
            #expect(statement.arguments.filter { $0 == .integer(alice.number) }.count >= 2)
            // The statement runs as it is through the seam's rows, and finds what the search finds.
            let rows = try await alice.pageRows(
                search, plan, after: 0, limit: 10, now: 0, type: BlindColumn.value(keys.typeBlind("cred")), keys: keys)
            #expect(rows.count == 1)
            #expect(
                try await PostgresTesting.all(alice, type: "cred", query: WalletQuery(json: #"{"schema":"s1","issuer":"i1"}"#)) == ["a"])
            let count = search.countStatement(plan, now: 0, expiry: true)
            #expect(count.sql.hasPrefix("SELECT COUNT(*) FROM coffer_tags d"), "\(count.sql)")
            #expect(try await alice.countRows(search, plan, keys: keys) == 1)
        }

        @Test(
            "a count of a type, or of one tag equality, is the text of a prepared count, and counts what the statement sent unnamed counts",
            arguments: [
                ("{}", 3, "type"), (#"{"schema":"s1"}"#, 2, "tag"), (#"{"~seq":"002"}"#, 1, "tag"), (#"{"schema":"s9"}"#, 0, "tag"),
            ])
        func preparedCounts(_ json: String, _ expected: Int, _ shape: String) async throws {
            let (alice, bob) = try await Self.twoProfiles("prepcount")
            defer {
                alice.close()
                bob.close()
            }
            let (search, plan) = try alice.compiled(type: "cred", query: WalletQuery(json: json), keys: alice.keys, allowRange: true)
            let statement = search.countStatement(plan, now: unixMillis(Date()), expiry: true)
            #expect(statement.sql == (shape == "type" ? PostgresStore.CountOfType.countSQL : PostgresStore.CountOfTag.countSQL))
            let prepared = try await alice.store.preparedCount(statement)
            #expect(prepared?.count == Int64(expected))
            #expect(prepared?.generation == alice.sealing.gate.generation)
            let unnamed = try await alice.store.withConnection { connection in
                try await PostgresRows(connection: connection, tables: alice.keys.tables).gatedCount(statement)
            }
            #expect(unnamed.count == Int64(expected))
            #expect(try await alice.count(type: "cred", matching: WalletQuery(json: json)) == expected)
            #expect(try await bob.count(type: "cred", matching: WalletQuery(json: json)) == 0)
        }

        @Test("searches and counts never return another profile's rows, even copies that carry this profile's blinds")
        func otherProfilesRowsStayOut() async throws {
            let (alice, bob) = try await Self.twoProfiles("scoped")
            defer {
                alice.close()
                bob.close()
            }
            // Alice's rows copied, from outside, into bob's profile: the same blinds and sealed boxes,
            // which alice's key opens. Only the profile filter keeps them out of her searches.
            let (from, to) = (alice.number, bob.number)
            let copied = try await alice.store.withConnection { connection in
                try await connection.query(
                    """
                    WITH src AS (SELECT id, type, name, value, expiry FROM coffer_items WHERE profile = \(from)),
                    copied AS (
                        INSERT INTO coffer_items(profile, type, name, value, expiry)
                        SELECT \(to), type, name, value, expiry FROM src RETURNING id, type, name
                    )
                    INSERT INTO coffer_tags(item, profile, name, value, num)
                    SELECT c.id, \(to), t.name, t.value, t.num FROM copied c
                    JOIN src s ON s.type = c.type AND s.name = c.name JOIN coffer_tags t ON t.item = s.id
                    """, logger: PostgresStore.logger)
                for try await n in try await connection.query(
                    "SELECT count(*) FROM coffer_items WHERE profile = \(to)", logger: PostgresStore.logger
                ).decode(Int64.self) {
                    return n
                }
                return -1
            }
            #expect(copied == Int64(Self.records.count))
            for (json, expected) in Self.queries {
                let query = try WalletQuery(json: json)
                #expect(try await PostgresTesting.all(alice, type: "cred", query: query, pageSize: 2).sorted() == expected, "\(json)")
                #expect(try await alice.count(type: "cred", matching: query) == expected.count, "\(json)")
                // The one-snapshot page (a read-only transaction: the same statements on its connection).
                var options = SearchOptions()
                options.retrieveTotalCount = true
                let page = try await alice.search(type: "cred", matching: query, options: options)
                #expect(page.records?.map(\.id).sorted() == expected, "\(json)")
                #expect(page.totalCount == expected.count, "\(json)")
            }
        }
    }
}
#endif
