// Opening a wallet does the same work at any size: the statements it runs and their SQLite
// virtual-machine steps (which grow with every row a statement visits) are counted at two sizes.

import CofferSQLite
import CofferWallet
import Foundation
import Testing

@Suite("Wallet open cost")
struct WalletOpenCostTests {
    /// A closed wallet of `records` records (two tags each) and its path.
    static func wallet(records: Int) async throws -> URL {
        let (w, url) = try await TestWallets.make()
        try await w.transaction { txn in
            for i in 0..<records {
                try txn.add(
                    type: "credential", id: "cred-\(i)", value: String(repeating: "v", count: 200),
                    tags: ["schema_id": .string("s\(i % 10)"), "~seq": .string(String(i))])
            }
        }
        try w.close()
        return url
    }

    /// The statements a raw-key open of `url` runs.
    static func openProfile(_ url: URL) async throws -> [(sql: String, steps: Int)] {
        var configuration = TestWallets.fastConfiguration
        let profile = StatementProfile()
        configuration.statementProfile = profile
        let w = try await Wallet.open(at: url, key: .raw(TestWallets.rawKey), configuration: configuration)
        let statements = profile.statements
        try w.close()
        return statements
    }

    @Test("opening runs the same statements with the same VM steps at 10 and at 5,000 records")
    func sameWorkAtAnySize() async throws {
        let small = try await Self.openProfile(try await Self.wallet(records: 10))
        let large = try await Self.openProfile(try await Self.wallet(records: 5_000))
        #expect(!small.isEmpty)
        #expect(small.map(\.sql) == large.map(\.sql))
        #expect(small.map(\.steps) == large.map(\.steps), "\(Array(zip(small.map(\.sql), zip(small.map(\.steps), large.map(\.steps)))))")
    }

    @Test("opening reads no record: no statement names the items or tags tables")
    func readsNoRecord() async throws {
        let statements = try await Self.openProfile(try await Self.wallet(records: 100))
        for (sql, _) in statements {
            #expect(!sql.contains("items") && !sql.contains("tags"), "open ran \(sql)")
        }
    }

    @Test("opening a closed wallet writes nothing: the main file's bytes and time are unchanged")
    func writesNothing() async throws {
        let url = try await Self.wallet(records: 100)
        let before = try Data(contentsOf: url)
        let mtime = try FileManager.default.attributesOfItem(atPath: url.path)[.modificationDate] as? Date
        let w = try await Wallet.open(at: url, key: .raw(TestWallets.rawKey), configuration: TestWallets.fastConfiguration)
        // Nothing committed: the WAL holds no frame (at most its 32-byte header).
        let wal = (try? FileManager.default.attributesOfItem(atPath: url.path + "-wal")[.size] as? Int) ?? 0
        #expect(wal <= 32, "the open wrote \(wal) bytes to the WAL")
        try w.close()
        #expect(try Data(contentsOf: url) == before)
        #expect(try FileManager.default.attributesOfItem(atPath: url.path)[.modificationDate] as? Date == mtime)
        #expect(!FileManager.default.fileExists(atPath: url.path + "-wal"))
    }

    @Test("a wallet opened over the empty WAL placeholder reads and writes as before, and the WAL goes at close")
    func placeholderIsHarmless() async throws {
        let url = try await Self.wallet(records: 3)
        let w = try await Wallet.open(at: url, key: .raw(TestWallets.rawKey), configuration: TestWallets.fastConfiguration)
        #expect(try await w.get(type: "credential", id: "cred-1").value == String(repeating: "v", count: 200))
        try await w.add(type: "credential", id: "new", value: "n")
        try w.close()
        #expect(!FileManager.default.fileExists(atPath: url.path + "-wal"))
        let again = try await Wallet.open(at: url, key: .raw(TestWallets.rawKey), configuration: TestWallets.fastConfiguration)
        #expect(try await again.get(type: "credential", id: "new").value == "n")
        #expect(try await again.count(type: "credential") == 4)
        try again.close()
    }
}

@Suite("Wallet after close")
struct WalletClosedTests {
    @Test("every call on a closed wallet throws WalletError.closed, not an SQLite error")
    func callsAfterClose() async throws {
        let (w, _) = try await TestWallets.make()
        try await w.add(type: "t", id: "a", value: "v")
        try w.close()
        await #expect(throws: WalletError.closed) { try await w.add(type: "t", id: "b", value: "v") }
        await #expect(throws: WalletError.closed) { _ = try await w.get(type: "t", id: "a") }
        await #expect(throws: WalletError.closed) { _ = try await w.fetchAll(type: "t") }
        await #expect(throws: WalletError.closed) { _ = try await w.count(type: "t") }
        await #expect(throws: WalletError.closed) { try await w.delete(type: "t", id: "a") }
    }
}

@Suite("Record sequences")
struct RecordSequenceTests {
    @Test("records(…) needs no try of its own: bad arguments are thrown by the first iteration")
    func badArgumentsThrownOnIteration() async throws {
        let (w, _) = try await TestWallets.make()
        defer { try? w.close() }
        let empty = w.records(type: "", pageSize: 10)
        await #expect(throws: WalletError.self) { for try await _ in empty {} }
        let badPage = w.records(type: "t", pageSize: 0)
        await #expect(throws: WalletError.invalidInput("pageSize must be at least 1, got 0")) { for try await _ in badPage {} }
    }
}
