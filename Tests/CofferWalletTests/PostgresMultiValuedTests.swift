// String ranges on PostgreSQL are counted (and whole results read) from the tag index's range, both
// bounds on one tag row: exact only while no record holds two values of the tag. These tests write
// such a record every way a tag row can be written, and check that the range still finds it (the
// server marks the tag, and the read goes back to one condition per bound).

#if PostgreSQL
import CofferTestSupport
import Foundation
import PostgresNIO
import Testing

@testable import CofferWallet

extension PostgresWalletTests {
    @Suite("PostgreSQL ranges over multi-valued tags")
    struct PostgresMultiValuedTests {
        /// `$gt 3` and `$lt 5`: "both-sides" (values 1 and 9) meets each bound with a different
        /// value and matches; no one value of it is in between.
        static let range = #"{"~v": {"$gt": "3", "$lt": "5"}}"#
        static let expected = ["both-sides", "inside"]

        /// The range's results through every read: the count, a whole-result read (pages of 1000,
        /// which take the range plan), pages of one, and the one-snapshot page.
        static func results(_ wallet: PostgresWallet) async throws -> (count: Int, whole: [String], paged: [String], snapshot: [String]) {
            let query = try WalletQuery(json: range)
            let count = try await wallet.count(type: "t", matching: query)
            let whole = try await PostgresTesting.all(wallet, type: "t", query: query, pageSize: 1000).sorted()
            let paged = try await PostgresTesting.all(wallet, type: "t", query: query, pageSize: 1).sorted()
            let snapshot = try await wallet.search(type: "t", matching: query).records?.map(\.id).sorted() ?? []
            return (count, whole, paged, snapshot)
        }

        static func expectExact(_ wallet: PostgresWallet, _ label: String, sourceLocation: SourceLocation = #_sourceLocation) async throws {
            let (count, whole, paged, snapshot) = try await results(wallet)
            #expect(count == expected.count, "count, \(label)", sourceLocation: sourceLocation)
            #expect(whole == expected, "whole result, \(label)", sourceLocation: sourceLocation)
            #expect(paged == expected, "pages of one, \(label)", sourceLocation: sourceLocation)
            #expect(snapshot == expected, "one-snapshot page, \(label)", sourceLocation: sourceLocation)
        }

        /// A new wallet at `settings` holding "inside", "outside" and "both-sides".
        static func threeRecords(_ settings: PostgresSettings) async throws -> PostgresWallet {
            let wallet = try await PostgresWallet.create(settings: settings, key: PostgresTesting.key)
            try await wallet.add(type: "t", id: "inside", value: "v", tags: ["~v": "4"])
            try await wallet.add(type: "t", id: "outside", value: "v", tags: ["~v": "8"])
            try await wallet.add(type: "t", id: "both-sides", value: "v", tags: ["~v": ["1", "9"]])
            return wallet
        }

        static func marks(_ wallet: PostgresWallet) async throws -> Int64 {
            try await wallet.store.withConnection { connection in
                for try await n in try await connection.query(
                    "SELECT count(*) FROM coffer_tag_multi WHERE profile = \(wallet.number)", logger: PostgresStore.logger
                ).decode(Int64.self) {
                    return n
                }
                return -1
            }
        }

        enum Path: String, CaseIterable, Sendable {
            case add, addAll, importAll, transaction, replaceAddingValue, addTags
        }

        @Test("a range finds a record whose two values each meet one bound, whichever way it was written", arguments: Path.allCases)
        func everyWritePath(_ path: Path) async throws {
            let wallet = try await PostgresWallet.create(settings: try PostgresTesting.settings("multi"), key: PostgresTesting.key)
            defer { wallet.close() }
            try await wallet.add(type: "t", id: "inside", value: "v", tags: ["~v": "4"])
            try await wallet.add(type: "t", id: "outside", value: "v", tags: ["~v": "8"])
            let both: WalletTags = ["~v": ["1", "9"], "k": "x"]
            switch path {
            case .add: try await wallet.add(type: "t", id: "both-sides", value: "v", tags: both)
            case .addAll: try await wallet.addAll([(type: "t", id: "both-sides", value: "v", tags: both)])
            case .importAll: try await wallet.importAll([(type: "t", id: "both-sides", value: "v", tags: both)])
            case .transaction: try await wallet.transaction { tx in try await tx.add(type: "t", id: "both-sides", value: "v", tags: both) }
            case .replaceAddingValue:
                try await wallet.add(type: "t", id: "both-sides", value: "v", tags: ["~v": "1", "k": "x"])
                // The one-statement replace keeps the row of "1" and inserts only "9".
                try await wallet.replace(type: "t", id: "both-sides", value: "v2", tags: both)
            case .addTags:
                try await wallet.add(type: "t", id: "both-sides", value: "v", tags: ["~v": "1"])
                try await wallet.updateTags(type: "t", id: "both-sides", tags: both)
            }
            #expect(try await Self.marks(wallet) == 1)
            try await Self.expectExact(wallet, path.rawValue)
        }

        @Test("without a multi-valued record, a count and a whole-result read take the tag index's range; pages of 100 do not")
        func singleValuedTakesTheRange() async throws {
            let wallet = try await PostgresWallet.create(settings: try PostgresTesting.settings("multi"), key: PostgresTesting.key)
            defer { wallet.close() }
            for i in 0..<30 { try await wallet.add(type: "t", id: "r\(i)", value: "v", tags: ["~v": .string(String(format: "%02d", i))]) }
            let query = try WalletQuery(json: #"{"$and": [{"~v": {"$gte": "10"}}, {"~v": {"$lt": "20"}}]}"#)
            let (search, plan) = try wallet.compiled(type: "t", query: query, keys: wallet.keys, allowRange: true)
            guard case .range = plan.driver else {
                Issue.record("the count's plan is not the range's")
                return
            }
            let count = search.countStatement(plan, now: 0, expiry: true).sql
            #expect(count.contains("i.id IN (SELECT d.item FROM coffer_tags d WHERE d.profile = $"), "\(count)")
            guard case .type = PostgresWallet.fallbackPlan(search).driver else {
                Issue.record("the fallback plan is not the type's")
                return
            }
            #expect(try await wallet.count(type: "t", matching: query) == 10)
            #expect(try await PostgresTesting.all(wallet, type: "t", query: query, pageSize: 1000) == (10..<20).map { "r\($0)" })
            #expect(try await PostgresTesting.all(wallet, type: "t", query: query, pageSize: 3) == (10..<20).map { "r\($0)" })
            #expect(try await Self.marks(wallet) == 0)
        }

        @Test("a key rotation marks the tag's new name, and the range stays exact")
        func rotationMarksNewNames() async throws {
            let settings = try PostgresTesting.settings("multirot")
            let wallet = try await Self.threeRecords(settings)
            try await wallet.rekey(to: PostgresTesting.otherKey, rotatingKey: true)
            wallet.close()
            let reopened = try await PostgresWallet.open(settings: settings, key: PostgresTesting.otherKey)
            defer { reopened.close() }
            // The old name's mark stays (no query names it any more), the new name's is added.
            #expect(try await Self.marks(reopened) == 2)
            try await Self.expectExact(reopened, "after rotation")
        }

        @Test("a database of format 4 gains the marks of the multi-valued tags it already holds when opened")
        func formatFourMigrates() async throws {
            let settings = try PostgresTesting.settings("multiformat")
            let wallet = try await Self.threeRecords(settings)
            try await wallet.store.withConnection { connection in
                // Format 4: the same rows, no table of marks.
                for statement in ["DROP TABLE coffer_tag_multi", "UPDATE coffer_schema SET format = 4"] {
                    try await connection.query(PostgresQuery(unsafeSQL: statement), logger: PostgresStore.logger)
                }
            }
            wallet.close()
            let reopened = try await PostgresWallet.open(settings: settings, key: PostgresTesting.key)
            defer { reopened.close() }
            #expect(try await Self.marks(reopened) == 1)
            try await Self.expectExact(reopened, "after the migration")
        }

        @Test("the integrity check reports a record whose multi-valued tag lost its mark")
        func checkFindsAnUnmarkedTag() async throws {
            let wallet = try await PostgresWallet.create(settings: try PostgresTesting.settings("multicheck"), key: PostgresTesting.key)
            defer { wallet.close() }
            try await wallet.add(type: "t", id: "both-sides", value: "v", tags: ["~v": ["1", "9"]])
            #expect(try await wallet.checkIntegrity().problems.isEmpty)
            _ = try await wallet.store.withConnection { connection in
                try await connection.query("DELETE FROM coffer_tag_multi", logger: PostgresStore.logger)
            }
            let report = try await wallet.checkIntegrity()
            #expect(report.problems.map(\.kind) == ["multiValuedUnmarked"])
        }

        @Test("`coffer wallet import` and `add` processes writing multi-valued records at once: the range count finds every match")
        func processesMarkTogether() async throws {
            let endpoint = try PostgresTestServer.endpoint()
            let url = endpoint.url(database: try PostgresTestServer.makeDatabase("multicli")) + "?sslmode=disable&max_connections=2"
            let store = TemporaryFolders.path("coffer-pg-multi")
            let key = ["--raw-key-env", "K"]
            #expect(try await PostgresCLI.run(["wallet", "create"] + key, url: url, store: store).status == 0)
            // Per writer: "mN" holds 1 and 9 (a match: each value meets one bound), "iN" holds 4 (a
            // match), "oN" holds 6 and 8 (no match: neither is below 5). No tag is marked before they start.
            func lines(_ writer: Int) -> String {
                (0..<10).map { i in
                    [
                        #"{"type":"t","id":"m\#(writer)-\#(i)","value":"v","tags":{"~v":["1","9"]}}"#,
                        #"{"type":"t","id":"i\#(writer)-\#(i)","value":"v","tags":{"~v":"4"}}"#,
                        #"{"type":"t","id":"o\#(writer)-\#(i)","value":"v","tags":{"~v":["6","8"]}}"#,
                    ].joined(separator: "\n")
                }.joined(separator: "\n") + "\n"
            }
            let files = try (0..<3).map { writer in
                let file = store.appendingPathComponent("records-\(writer).jsonl")
                try FileManager.default.createDirectory(at: store, withIntermediateDirectories: true)
                try Data(lines(writer).utf8).write(to: file)
                return file
            }
            let statuses = try await withThrowingTaskGroup(of: Int32.self) { group in
                for file in files {
                    group.addTask { try await PostgresCLI.run(["wallet", "import", file.path] + key, url: url, store: store).status }
                }
                for i in 0..<4 {
                    group.addTask {
                        try await PostgresCLI.run(
                            ["wallet", "add", "t", "a\(i)", "v", "--tags", #"{"~v":["1","9"]}"#] + key, url: url, store: store
                        ).status
                    }
                }
                return try await group.reduce(into: [Int32]()) { $0.append($1) }
            }
            #expect(statuses == Array(repeating: 0, count: 7), "\(statuses)")
            let counted = try await PostgresCLI.run(["wallet", "count", "t", Self.range] + key, url: url, store: store)
            // 3 writers × (10 "m" + 10 "i") and the 4 adds.
            #expect(PostgresCLI.json(counted.stdout) as? [String: Int] == ["count": 64], "\(counted.stdout) \(counted.stderr)")
        }

        @Test(
            "a transaction whose snapshot predates another writer's first mark of the tag fails with EAGAIN, keeps nothing, and runs when retried"
        )
        func transactionMeetsANewMark() async throws {
            let settings = try PostgresTesting.settings("multitx")
            let wallet = try await PostgresWallet.create(settings: settings, key: PostgresTesting.key)
            let other = try await PostgresWallet.open(settings: settings, key: PostgresTesting.key)
            defer {
                wallet.close()
                other.close()
            }
            do {
                try await wallet.transaction { tx in
                    _ = try await tx.fetch(type: "t", id: "none") // the snapshot is taken
                    try await other.add(type: "t", id: "first", value: "v", tags: ["~v": ["1", "9"]])
                    try await tx.add(type: "t", id: "second", value: "v", tags: ["~v": ["1", "9"]])
                }
                Issue.record("the transaction committed over a mark it could not see")
            } catch let WalletError.storage(_, cause) {
                #expect(cause?.posix == .EAGAIN)
            }
            #expect(try await wallet.fetch(type: "t", id: "second") == nil)
            try await wallet.transaction { tx in try await tx.add(type: "t", id: "second", value: "v", tags: ["~v": ["1", "9"]]) }
            #expect(try await wallet.count(type: "t", matching: WalletQuery(json: Self.range)) == 2)
        }

        @Test("removing a profile removes its marks and no other profile's")
        func removalTakesTheMarks() async throws {
            let settings = try PostgresTesting.settings("multiremove")
            let alice = try await PostgresWallet.create(settings: settings, profile: "alice", key: PostgresTesting.key)
            let bob = try await PostgresWallet.create(settings: settings, profile: "bob", key: PostgresTesting.otherKey)
            defer { bob.close() }
            try await alice.add(type: "t", id: "a", value: "v", tags: ["~v": ["1", "9"]])
            try await bob.add(type: "t", id: "b", value: "v", tags: ["~v": ["1", "9"]])
            alice.close()
            try await PostgresWallet.removeProfile("alice", settings: settings)
            let left = try await bob.store.withConnection { connection in
                var profiles = [Int64]()
                for try await p in try await connection.query("SELECT profile FROM coffer_tag_multi", logger: PostgresStore.logger).decode(
                    Int64.self)
                {
                    profiles.append(p)
                }
                return profiles
            }
            #expect(left == [bob.number])
        }
    }
}
#endif
