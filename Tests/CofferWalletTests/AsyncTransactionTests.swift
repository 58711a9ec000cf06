// Transactions and sessions whose bodies await, and the storage seam's SQLite backend driven
// through its async transaction forms (as a second backend would be).

import Foundation
import Testing

@testable import CofferWallet

@Suite("Async transaction bodies")
struct AsyncTransactionTests {
    struct Planned: Error {}

    @Test("writes of an async body commit together, with awaits between them")
    func commitsTogether() async throws {
        let (wallet, _) = try await TestWallets.make()
        defer { try? wallet.close() }
        try await wallet.transaction { (tx: AsyncWalletTransaction) in
            try await tx.add(type: "t", id: "a", value: "1")
            await Task.yield()
            try await tx.add(type: "t", id: "b", value: "2", tags: ["k": "v"])
            // The transaction sees its own writes.
            #expect(try await tx.count(type: "t") == 2)
        }
        #expect(try await wallet.count(type: "t", matching: WalletQuery(json: #"{"k":"v"}"#)) == 1)
        #expect(try await wallet.get(type: "t", id: "a").value == "1")
    }

    @Test("an async body that throws leaves nothing of its writes")
    func throwRollsBack() async throws {
        let (wallet, _) = try await TestWallets.make()
        defer { try? wallet.close() }
        try await wallet.add(type: "t", id: "kept", value: "0")
        await #expect(throws: Planned.self) {
            try await wallet.transaction { (tx: AsyncWalletTransaction) in
                try await tx.add(type: "t", id: "a", value: "1")
                try await tx.update(type: "t", id: "kept", value: "changed")
                await Task.yield()
                throw Planned()
            }
        }
        #expect(try await wallet.fetch(type: "t", id: "a") == nil)
        #expect(try await wallet.get(type: "t", id: "kept").value == "0")
    }

    @Test("the reads of an async session see one state while another task commits")
    func sessionSeesOneState() async throws {
        let (wallet, _) = try await TestWallets.make()
        defer { try? wallet.close() }
        try await wallet.add(type: "t", id: "a", value: "1")
        let (before, after) = try await wallet.session { (reader: AsyncWalletReader) in
            let before = try await reader.count(type: "t")
            // A write commits between two reads of the session (WAL: it does not wait for us).
            try await wallet.add(type: "t", id: "b", value: "2")
            try await wallet.update(type: "t", id: "a", value: "changed")
            let after = try await reader.count(type: "t")
            #expect(try await reader.get(type: "t", id: "a").value == "1")
            return (before, after)
        }
        #expect(before == 1 && after == 1)
        #expect(try await wallet.count(type: "t") == 2)
    }

    @Test("a wallet call inside its own async transaction is refused, not a deadlock")
    func walletCallInsideIsRefused() async throws {
        let (wallet, _) = try await TestWallets.make()
        defer { try? wallet.close() }
        try await wallet.transaction { (tx: AsyncWalletTransaction) in
            try await tx.add(type: "t", id: "a", value: "1")
            await #expect {
                try await wallet.add(type: "t", id: "b", value: "2")
            } throws: { error in
                guard case WalletError.invalidInput(let message) = error else { return false }
                return message.contains("inside one of its own transactions")
            }
        }
        #expect(try await wallet.count(type: "t") == 1)
    }

    @Test("a transaction kept past its body refuses calls")
    func usedAfterBody() async throws {
        let (wallet, _) = try await TestWallets.make()
        defer { try? wallet.close() }
        let kept = try await wallet.transaction { (tx: AsyncWalletTransaction) in tx }
        await #expect {
            try await kept.add(type: "t", id: "late", value: "1")
        } throws: { error in
            guard case WalletError.invalidInput = error else { return false }
            return true
        }
        #expect(try await wallet.fetch(type: "t", id: "late") == nil)
    }

    @Test("a synchronous body still picks the synchronous transaction")
    func synchronousBodyStillWorks() async throws {
        let (wallet, _) = try await TestWallets.make()
        defer { try? wallet.close() }
        try await wallet.transaction { tx in try tx.add(type: "t", id: "a", value: "1") }
        let count = try await wallet.session { reader in try reader.count(type: "t") }
        #expect(count == 1)
    }
}

@Suite("Storage seam: the SQLite backend through its async forms")
struct SQLiteStorageSeamTests {
    static func storage() async throws -> (Wallet, SQLiteWalletStorage) {
        let (wallet, _) = try await TestWallets.make()
        return (wallet, SQLiteWalletStorage(pool: wallet.pool, path: wallet.path))
    }

    @Test("a write body's rows commit together and a read body sees them")
    func writeThenRead() async throws {
        let (wallet, storage) = try await Self.storage()
        defer { try? wallet.close() }
        let name = Data(repeating: 7, count: 16)
        let rowid = try await storage.write(.default) { tx in
            guard case .inserted(let rowid) = try await tx.insertItem(type: 42, name: name, sealed: Data([1, 2, 3]), expiry: nil) else {
                throw WalletError.storage("not inserted")
            }
            try await tx.insertTags(
                item: rowid, [StoredTag(name: 5, value: .plaintext("x")), StoredTag(name: 6, value: .blind(Data([9])))])
            #expect(try await tx.insertItem(type: 42, name: name, sealed: Data(), expiry: nil) == .duplicate)
            return rowid
        }
        let (item, tags) = try await storage.read(.default) { tx in
            (try await tx.locate(type: 42, name: name), try await tx.tags(item: rowid))
        }
        #expect(item == StoredItem(rowid: rowid, type: 42, name: name, sealed: Data([1, 2, 3]), expiry: nil))
        #expect(Set(tags) == [StoredTag(name: 5, value: .plaintext("x")), StoredTag(name: 6, value: .blind(Data([9])))])
    }

    @Test("a write body that throws leaves no row")
    func writeRollsBack() async throws {
        let (wallet, storage) = try await Self.storage()
        defer { try? wallet.close() }
        let name = Data(repeating: 8, count: 16)
        await #expect(throws: AsyncTransactionTests.Planned.self) {
            try await storage.write(.default) { tx in
                _ = try await tx.insertItem(type: 42, name: name, sealed: Data([1]), expiry: nil)
                try await tx.setMeta("probe", Data([1]))
                throw AsyncTransactionTests.Planned()
            }
        }
        let (item, probe) = try await storage.read(.default) { tx in (try await tx.locate(type: 42, name: name), try await tx.meta("probe"))
        }
        #expect(item == nil && probe == nil)
    }

    @Test("a compiled page statement runs through the seam and walks in row-id order")
    func pageThroughSeam() async throws {
        let (wallet, storage) = try await Self.storage()
        defer { try? wallet.close() }
        for i in 0..<5 { try await wallet.add(type: "cred", id: "r\(i)", value: "v", tags: ["~seq": .string("\(i)")]) }
        let search = try QueryCompiler.compile(type: "cred", query: WalletQuery(json: #"{"~seq":{"$gte":"1"}}"#), keys: wallet.keys)
        let plan = search.plans[search.plans.count - 1]
        let statement = search.pageStatement(plan, after: nil, limit: 3, descending: false, now: 0, expiry: false)
        let rows = try await storage.read(.default) { tx in try await tx.page(statement, type: BlindColumn.value(search.typeBlind)) }
        #expect(rows.count == 3)
        #expect(rows.map(\.rowid) == rows.map(\.rowid).sorted())
        let count = try await storage.read(.default) { tx in try await tx.integers(search.countStatement(plan, now: 0, expiry: false)) }
        #expect(count == [4])
    }
}
