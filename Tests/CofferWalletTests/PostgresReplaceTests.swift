// PostgresWallet.replace writes a record with no expiry in one statement, without reading it
// first; these tests hold it to the read-modify-write path's behaviour: expiring, expired and
// missing records, and many writers of one record at once (its tag rows checked on the server).

#if PostgreSQL
import CofferCrypto
import CofferTestSupport
import Foundation
import PostgresNIO
import Testing

@testable import CofferWallet

// Nested in the serialized PostgreSQL suite: no test of it runs while another stops and restarts
// the test server, or while many `coffer` processes hold the server's connections.
extension PostgresWalletTests {
    @Suite("PostgreSQL replace in one statement")
    struct PostgresReplaceTests {
        /// The record's row id and expiry, and its tag rows as the server holds them.
        static func stored(_ wallet: PostgresWallet, type: String, id: String) async throws -> (
            expiry: Int64?, tags: Set<PostgresTagRow>, rows: Int
        )? {
            let tb = wallet.keys.typeBlind(type)
            let ib = wallet.keys.idBlind(typeBlind: tb, id: id)
            guard let row = try await wallet.store.locate(gate: wallet.sealing.gate, type: BlindColumn.value(tb), idBlind: ib) else {
                return nil
            }
            let item = row.rowid
            let tags = try await wallet.store.withConnection { connection in
                var out = [PostgresTagRow]()
                for try await (name, value, num) in try await connection.query(
                    "SELECT name, value, num FROM coffer_tags WHERE item = \(item)", logger: PostgresStore.logger
                ).decode((Int64, Data, Double?).self) {
                    out.append(PostgresTagRow(name: name, value: value, number: num))
                }
                return out
            }
            return (row.expiry, Set(tags), tags.count)
        }

        /// The tag rows `tags` make for a record of `type`.
        static func expected(_ wallet: PostgresWallet, type: String, tags: WalletTags) -> Set<PostgresTagRow> {
            Set(wallet.tagRows(typeBlind: wallet.keys.typeBlind(type), tags: tags))
        }

        @Test("an expiring record is replaced with its expiry kept, its box still opening")
        func expiringRecord() async throws {
            let wallet = try await PostgresWallet.create(settings: try PostgresTesting.settings("replace-exp"), key: PostgresTesting.key)
            defer { wallet.close() }
            let deadline = Date().addingTimeInterval(3600)
            try await wallet.add(type: "c", id: "e", value: "old", tags: ["a": "1", "~n": "5"], expiresAt: deadline)
            let before = try #require(try await Self.stored(wallet, type: "c", id: "e"))
            try await wallet.replace(type: "c", id: "e", value: "new", tags: ["b": "2"])
            let record = try #require(try await wallet.fetch(type: "c", id: "e"))
            #expect(record.value == "new")
            #expect(record.tags == ["b": "2"])
            let after = try #require(try await Self.stored(wallet, type: "c", id: "e"))
            #expect(after.expiry != nil && after.expiry == before.expiry, "the expiry changed")
            #expect(after.tags == Self.expected(wallet, type: "c", tags: ["b": "2"]) && after.rows == 1)
            #expect(try await wallet.count(type: "c", matching: WalletQuery(json: #"{"a": "1"}"#)) == 0)
            #expect(try await wallet.count(type: "c", matching: WalletQuery(json: #"{"b": "2"}"#)) == 1)
        }

        @Test("a missing record and an expired one are not found, and nothing is written")
        func missingAndExpired() async throws {
            let wallet = try await PostgresWallet.create(settings: try PostgresTesting.settings("replace-miss"), key: PostgresTesting.key)
            defer { wallet.close() }
            await #expect(throws: WalletError.notFound(type: "c", id: "nobody")) {
                try await wallet.replace(type: "c", id: "nobody", value: "v", tags: ["a": "1"])
            }
            try await wallet.add(type: "c", id: "gone", value: "old", tags: ["a": "1"], expiresAt: Date().addingTimeInterval(-60))
            await #expect(throws: WalletError.notFound(type: "c", id: "gone")) {
                try await wallet.replace(type: "c", id: "gone", value: "new", tags: ["b": "2"])
            }
            let rows = try await wallet.store.withConnection { connection in
                var n: Int64 = 0
                for try await count in try await connection.query("SELECT count(*) FROM coffer_items", logger: PostgresStore.logger)
                    .decode(Int64.self)
                {
                    n = count
                }
                return n
            }
            #expect(rows == 1, "a replace of a missing record wrote a row")
            let expired = try #require(try await Self.stored(wallet, type: "c", id: "gone"))
            #expect(expired.tags == Self.expected(wallet, type: "c", tags: ["a": "1"]), "the expired record's tag rows changed")
        }

        @Test("a record with no expiry: value and tags replaced, the old tag rows gone")
        func plainRecord() async throws {
            let wallet = try await PostgresWallet.create(settings: try PostgresTesting.settings("replace-plain"), key: PostgresTesting.key)
            defer { wallet.close() }
            try await wallet.add(type: "c", id: "p", value: "old", tags: ["a": "1", "~n": "5", "l": .list(["x", "y"])])
            try await wallet.replace(type: "c", id: "p", value: "new", tags: ["a": "2", "~n": "7"])
            let record = try #require(try await wallet.fetch(type: "c", id: "p"))
            #expect(record.value == "new" && record.tags == ["a": "2", "~n": "7"])
            let stored = try #require(try await Self.stored(wallet, type: "c", id: "p"))
            #expect(stored.expiry == nil)
            #expect(stored.tags == Self.expected(wallet, type: "c", tags: ["a": "2", "~n": "7"]) && stored.rows == 2)
            #expect(try await wallet.count(type: "c", matching: WalletQuery(json: #"{"~n": {"$gt": "6"}}"#)) == 1)
        }

        /// The transaction that wrote each tag row of the record (`xmin`), by the row's name and value.
        static func writers(_ wallet: PostgresWallet, type: String, id: String) async throws -> [String: String] {
            let tb = wallet.keys.typeBlind(type)
            let ib = wallet.keys.idBlind(typeBlind: tb, id: id)
            let row = try #require(try await wallet.store.locate(gate: wallet.sealing.gate, type: BlindColumn.value(tb), idBlind: ib))
            let item = row.rowid
            return try await wallet.store.withConnection { connection in
                var out = [String: String]()
                for try await (name, value, writer) in try await connection.query(
                    "SELECT name, value, xmin::text FROM coffer_tags WHERE item = \(item)", logger: PostgresStore.logger
                ).decode((Int64, Data, String).self) {
                    out["\(name):\(value.base64EncodedString())"] = writer
                }
                return out
            }
        }

        @Test("a replace writes only the tag rows that change: the ones it gives again stay as they were")
        func unchangedTagRowsStay() async throws {
            let wallet = try await PostgresWallet.create(settings: try PostgresTesting.settings("replace-keep"), key: PostgresTesting.key)
            defer { wallet.close() }
            try await wallet.add(type: "c", id: "k", value: "old", tags: ["a": "1", "b": "2", "~n": "5"])
            let before = try await Self.writers(wallet, type: "c", id: "k")
            try await wallet.replace(type: "c", id: "k", value: "new", tags: ["a": "1", "b": "3", "~n": "5"])
            let after = try await Self.writers(wallet, type: "c", id: "k")
            let kept = Set(before.keys).intersection(after.keys)
            #expect(kept.count == 2, "the rows of a and ~n are not both there: \(after)")
            for key in kept { #expect(before[key] == after[key], "a tag row given again was rewritten") }
            let record = try #require(try await wallet.fetch(type: "c", id: "k"))
            #expect(record.value == "new" && record.tags == ["a": "1", "b": "3", "~n": "5"])
            let stored = try #require(try await Self.stored(wallet, type: "c", id: "k"))
            #expect(stored.tags == Self.expected(wallet, type: "c", tags: ["a": "1", "b": "3", "~n": "5"]) && stored.rows == 3)
            #expect(try await wallet.count(type: "c", matching: WalletQuery(json: #"{"b": "2"}"#)) == 0)
            #expect(try await wallet.count(type: "c", matching: WalletQuery(json: #"{"b": "3"}"#)) == 1)
            // The same tags again: no tag row is written at all.
            try await wallet.replace(type: "c", id: "k", value: "newer", tags: ["a": "1", "b": "3", "~n": "5"])
            #expect(try await Self.writers(wallet, type: "c", id: "k") == after)
            #expect(try await wallet.fetch(type: "c", id: "k")?.value == "newer")
        }

        /// The names of the statements prepared on the pool's one connection.
        static func prepared(_ wallet: PostgresWallet) async throws -> Set<String> {
            try await wallet.store.withConnection { connection in
                var names = Set<String>()
                for try await name in try await connection.query("SELECT name FROM pg_prepared_statements", logger: PostgresStore.logger)
                    .decode(String.self)
                {
                    names.insert(name)
                }
                return names
            }
        }

        @Test(
            "reads, replaces and deletes run prepared statements, or unnamed ones with prepared_statements off, with the same results",
            arguments: [true, false])
        func preparedOrNot(_ prepared: Bool) async throws {
            var settings = try PostgresTesting.settings("replace-prep", maxConnections: 1)
            settings.preparedStatements = prepared
            let wallet = try await PostgresWallet.create(settings: settings, key: PostgresTesting.key)
            defer { wallet.close() }
            try await wallet.add(type: "c", id: "a", value: "one", tags: ["t": "1"])
            try await wallet.replace(type: "c", id: "a", value: "two", tags: ["t": "2"])
            let record = try #require(try await wallet.fetch(type: "c", id: "a"))
            #expect(record.value == "two" && record.tags == ["t": "2"])
            #expect(try await wallet.fetch(type: "c", id: "missing") == nil)
            try await wallet.delete(type: "c", id: "a")
            await #expect(throws: WalletError.notFound(type: "c", id: "a")) { try await wallet.delete(type: "c", id: "a") }
            #expect(try await wallet.count(type: "c") == 0)
            let names = try await Self.prepared(wallet)
            let ours: Set = [PostgresStore.Locate.name, PostgresStore.ReplaceUnexpiring.name, PostgresStore.DeleteLive.name]
            #expect(names.isSuperset(of: ours) == prepared, "prepared on the server: \(names.sorted())")
            #expect(names.isDisjoint(with: ours) == !prepared, "prepared on the server: \(names.sorted())")
        }

        @Test("many tasks replacing and retagging one record at once leave exactly the last writer's tag rows")
        func concurrentWriters() async throws {
            let wallet = try await PostgresWallet.create(
                settings: try PostgresTesting.settings("replace-race", maxConnections: 8), key: PostgresTesting.key)
            defer { wallet.close() }
            try await wallet.add(type: "c", id: "r", value: "v", tags: ["start": "1"])
            // Writers give different numbers of tags, so rows of two writers mixed show as a count too.
            func tags(_ task: Int, _ round: Int) -> WalletTags {
                var tags: WalletTags = ["w": .string("\(task)"), "~i": .string("\(round)")]
                for extra in 0..<(task % 4) { tags.entries[ByteString("x\(extra)")] = .string("\(task)-\(round)") }
                return tags
            }
            // Rounds of writers all at once: most of each round's writes wait for another's row lock
            // and meet a row changed after their statement's snapshot, and the round's last write is
            // checked. (Over one long run only the very last write would be, and any later write
            // tidies up what an earlier one left.)
            for round in 0..<30 {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for task in 0..<8 {
                        group.addTask {
                            if task == 7 && round % 3 == 0 {
                                // The read-modify-write path, racing the one-statement one.
                                try await wallet.updateTags(type: "c", id: "r", tags: tags(task, round))
                            } else {
                                try await wallet.replace(type: "c", id: "r", value: "\(task)-\(round)", tags: tags(task, round))
                            }
                        }
                    }
                    try await group.waitForAll()
                }
                let record = try #require(try await wallet.fetch(type: "c", id: "r"))
                let last = try #require(record.tags)
                let stored = try #require(try await Self.stored(wallet, type: "c", id: "r"))
                #expect(stored.rows == stored.tags.count, "round \(round): a tag row is there twice")
                #expect(
                    stored.tags == Self.expected(wallet, type: "c", tags: last), "round \(round): the tag rows are not the last writer's")
                let writer = try #require(last["w"]?.values.first)
                #expect(try await wallet.count(type: "c", matching: WalletQuery(json: #"{"w": "\#(writer)"}"#)) == 1)
                #expect(try await wallet.count(type: "c", matching: WalletQuery(json: #"{"~i": "\#(round)"}"#)) == 1)
            }
        }
    }
}
#endif
