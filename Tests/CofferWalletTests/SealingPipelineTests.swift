// Transactions whose adds and replaces are sealed on other cores ahead of the writer
// (`SealingPipeline`): the order, the errors and the all-or-nothing commit stay those of the
// calls made one by one.

import Foundation
import GRDB
import Testing

@testable import CofferWallet

@Suite("Sealing ahead of the writer")
struct SealingPipelineTests {
    /// More writes than the pipeline waits for before it starts, and several batches.
    static let count = SealingPipeline.startAfter + 10 * SealingPipeline.batchSize + 7
    static let startAfter = SealingPipeline.startAfter

    static func tags(_ i: Int) -> WalletTags { ["e": .string("v\(i % 7)"), "~n": .string(String(format: "%05d", i))] }

    @Test("a transaction's batched adds are written in the order they were made, each with its tags")
    func insertionOrder() async throws {
        let (w, _) = try await TestWallets.make()
        defer { try? w.close() }
        // Ids whose order is not the insertion order: the file's order must be the calls'.
        let ids = (0..<Self.count).map { "r\(($0 * 7919) % Self.count)" }
        let pipelined = try await w.transaction { txn -> Bool in
            for (i, id) in ids.enumerated() { try txn.add(type: "t", id: id, value: "value \(i)", tags: Self.tags(i)) }
            return (txn.pipeline?.sealedAhead ?? 0) > 0
        }
        #expect(pipelined, "the transaction did not seal ahead")
        let records = try await w.fetchAll(type: "t")
        #expect(records.map(\.id) == ids)
        #expect(records.enumerated().allSatisfy { $0.element.value == "value \($0.offset)" && $0.element.tags == Self.tags($0.offset) })
        #expect(try await w.count(type: "t", matching: WalletQuery(json: #"{"e": "v3"}"#)) == (0..<Self.count).filter { $0 % 7 == 3 }.count)
        #expect(try await w.checkIntegrity().isClean)
    }

    @Test("a bad record in the middle of a batch fails the transaction and nothing of it is written")
    func badRecordWritesNothing() async throws {
        let (w, _) = try await TestWallets.make()
        defer { try? w.close() }
        try await w.add(type: "t", id: "before", value: "kept")
        let bad = Self.count / 2
        await #expect(throws: WalletError.invalidInput("tag name must not be empty")) {
            try await w.transaction { txn in
                for i in 0..<Self.count {
                    try txn.add(type: "t", id: "r\(i)", value: "v", tags: i == bad ? ["": "x"] : Self.tags(i))
                }
            }
        }
        #expect(try await w.count(type: "t") == 1)
        #expect(try await w.checkIntegrity().isClean)
    }

    @Test("a replace whose stored record fails to open, sealed ahead, fails the whole transaction: nothing is written")
    func deferredFailureWritesNothing() async throws {
        let (w, url) = try await TestWallets.make()
        try await w.transaction { txn in
            for i in 0..<Self.count { try txn.add(type: "t", id: "r\(i)", value: "old \(i)", tags: Self.tags(i)) }
        }
        try w.close()
        // The box of the record in the middle is damaged from outside (no key).
        let attacker = try TestWallets.attackerQueue(url)
        try await attacker.write { db in
            try db.execute(
                sql: "UPDATE items SET value = zeroblob(length(value)) WHERE id = (SELECT id FROM items ORDER BY id LIMIT 1 OFFSET ?)",
                arguments: [Self.count / 2])
        }
        try attacker.close()
        let reopened = try await Wallet.open(at: url, key: .raw(TestWallets.rawKey))
        defer { try? reopened.close() }
        await #expect(throws: WalletError.self) {
            try await reopened.transaction { txn in
                for i in 0..<Self.count { try txn.replace(type: "t", id: "r\(i)", value: "new \(i)", tags: [:]) }
            }
        }
        let first = try await reopened.get(type: "t", id: "r0")
        #expect(first.value == "old 0" && first.tags == Self.tags(0))
        #expect(try await reopened.get(type: "t", id: "r\(Self.count - 1)").value == "old \(Self.count - 1)")
        #expect(try await reopened.count(type: "t", matching: WalletQuery(json: #"{"e": "v1"}"#)) > 0)
    }

    @Test(
        "a duplicate in a batch — of a record added earlier in it, or stored before — throws duplicate from its own call",
        arguments: [false, true])
    func duplicateInBatch(typeHadRecords: Bool) async throws {
        let (w, _) = try await TestWallets.make()
        defer { try? w.close() }
        // A type with records before the transaction is checked against the file; a type without
        // against what the transaction added.
        if typeHadRecords { try await w.add(type: "t", id: "stored", value: "first") }
        let caught = try await w.transaction { txn -> [WalletError] in
            var caught = [WalletError]()
            for i in 0..<Self.count {
                try txn.add(type: "t", id: "r\(i)", value: "v\(i)", tags: Self.tags(i))
                // Added a few calls ago (still being sealed), and long ago (written by now).
                for id in i == Self.count - 3 ? ["r\(i - 2)", "r\(Self.startAfter + 1)"] : [] {
                    do { try txn.add(type: "t", id: id, value: "again", tags: ["x": "y"]) } catch let error as WalletError {
                        caught.append(error)
                    }
                }
            }
            if typeHadRecords {
                do { try txn.add(type: "t", id: "stored", value: "again") } catch let error as WalletError { caught.append(error) }
            }
            return caught
        }
        var expected: [WalletError] = [
            .duplicate(type: "t", id: "r\(Self.count - 5)"), .duplicate(type: "t", id: "r\(Self.startAfter + 1)"),
        ]
        if typeHadRecords { expected.append(.duplicate(type: "t", id: "stored")) }
        #expect(caught == expected)
        #expect(try await w.count(type: "t") == Self.count + (typeHadRecords ? 1 : 0))
        #expect(try await w.get(type: "t", id: "r\(Self.count - 5)").value == "v\(Self.count - 5)")
        #expect(try await w.count(type: "t", matching: WalletQuery(json: #"{"x": "y"}"#)) == 0)
    }

    @Test("past the records it remembers of a new type, a batch checks the file: a duplicate of a written record is still refused")
    func rememberedRecordsAreBounded() async throws {
        let (w, _) = try await TestWallets.make()
        defer { try? w.close() }
        let keys = w.keys
        let caught = try await w.pool.write { db -> [WalletError] in
            let pipeline = SealingPipeline(store: RecordStore(db: db, keys: keys), addedLimit: 40)
            defer { pipeline.abandon() }
            var caught = [WalletError]()
            for i in 0..<Self.count { try pipeline.add(type: "t", id: "r\(i)", value: "v", tags: [:], expiresAt: nil) }
            for id in ["r5", "r\(Self.count - 1)"] {
                do { try pipeline.add(type: "t", id: id, value: "again", tags: [:], expiresAt: nil) } catch let error as WalletError {
                    caught.append(error)
                }
            }
            try pipeline.finish()
            return caught
        }
        #expect(caught == [.duplicate(type: "t", id: "r5"), .duplicate(type: "t", id: "r\(Self.count - 1)")])
        #expect(try await w.count(type: "t") == Self.count)
        #expect(try await w.get(type: "t", id: "r5").value == "v")
    }

    @Test("a replace of a record the batch added and has not written yet finds it (nothing is read in between)")
    func replaceOfPendingAdd() async throws {
        let (w, _) = try await TestWallets.make()
        defer { try? w.close() }
        let last = "r\(Self.count - 1)"
        try await w.transaction { txn in
            for i in 0..<Self.count { try txn.add(type: "t", id: "r\(i)", value: "v\(i)") }
            // The add of `last` is still queued: the replace must write it first, then find it.
            try txn.replace(type: "t", id: last, value: "replaced", tags: ["k": "1"])
        }
        #expect(try await w.get(type: "t", id: last).value == "replaced")
        #expect(try await w.count(type: "t", matching: WalletQuery(json: #"{"k": "1"}"#)) == 1)
    }

    @Test("reads, replaces and deletes in a batch see the adds made before them")
    func laterCallsSeeEarlierAdds() async throws {
        let (w, _) = try await TestWallets.make()
        defer { try? w.close() }
        let seen = try await w.transaction { txn -> [Int] in
            for i in 0..<Self.count { try txn.add(type: "t", id: "r\(i)", value: "v\(i)") }
            let counted = try txn.reader.count(type: "t")
            try txn.replace(type: "t", id: "r\(Self.count - 1)", value: "replaced", tags: ["k": "1"])
            try txn.add(type: "t", id: "late", value: "v")
            try txn.delete(type: "t", id: "late")
            return [counted, try txn.reader.count(type: "t", matching: WalletQuery(json: #"{"k": "1"}"#))]
        }
        #expect(seen == [Self.count, 1])
        #expect(try await w.get(type: "t", id: "r\(Self.count - 1)").value == "replaced")
        #expect(try await w.fetch(type: "t", id: "late") == nil)
    }

    @Test("an expired record with the id of a batched add gives way to it, as an add made alone does")
    func expiredGivesWay() async throws {
        let (w, _) = try await TestWallets.make()
        defer { try? w.close() }
        try await w.add(type: "t", id: "r\(Self.count - 1)", value: "expired", expiresAt: Date(timeIntervalSinceNow: -60))
        try await w.transaction { txn in
            for i in 0..<Self.count { try txn.add(type: "t", id: "r\(i)", value: "v\(i)") }
        }
        #expect(try await w.get(type: "t", id: "r\(Self.count - 1)").value == "v\(Self.count - 1)")
        #expect(try await w.count(type: "t") == Self.count)
    }

    @Test("batched writes running while the wallet key is rotated lose nothing and read back under the new key")
    func rotationDuringBatches() async throws {
        let (w, url) = try await TestWallets.make()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for t in 0..<3 {
                group.addTask {
                    for round in 0..<3 {
                        try await w.transaction { txn in
                            for i in 0..<Self.count {
                                try txn.add(type: "t", id: "\(t)-\(round)-\(i)", value: "v\(i)", tags: Self.tags(i))
                            }
                        }
                    }
                }
            }
            group.addTask { try await w.rekey(to: .raw(Data(repeating: 9, count: 32)), rotatingKey: true) }
            try await group.waitForAll()
        }
        #expect(try await w.count(type: "t") == 9 * Self.count)
        #expect(
            try await w.count(type: "t", matching: WalletQuery(json: #"{"e": "v0"}"#)) == 9 * (0..<Self.count).filter { $0 % 7 == 0 }.count)
        #expect(try await w.checkIntegrity().isClean)
        try w.close()
        let reopened = try await Wallet.open(at: url, key: .raw(Data(repeating: 9, count: 32)))
        defer { try? reopened.close() }
        #expect(try await reopened.get(type: "t", id: "2-2-\(Self.count - 1)").value == "v\(Self.count - 1)")
    }
}
