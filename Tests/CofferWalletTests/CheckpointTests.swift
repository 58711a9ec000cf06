// The WAL is checkpointed after commits return (SQLite's automatic checkpoint is replaced).

import Foundation
import GRDB
import Testing

@testable import CofferWallet

@Suite("Checkpoints")
struct CheckpointTests {
    static func mainFileBytes(_ url: URL) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: url.path))?[.size] as? Int) ?? 0
    }

    @Test("a write that takes the WAL past the threshold is copied into the main file after it returns")
    func largeWriteReachesMainFile() async throws {
        let (w, url) = try await TestWallets.make()
        defer { try? w.close() }
        let before = Self.mainFileBytes(url)
        // ~3,000 records of 1 KiB: well over 1,000 WAL pages.
        let value = String(repeating: "x", count: 1024)
        try await w.transaction { txn in
            for i in 0..<3_000 { try txn.add(type: "t", id: "\(i)", value: value, tags: ["a": .string("\(i % 7)")]) }
        }
        // A later write runs after the queued checkpoint on the writer's queue.
        try await w.add(type: "t", id: "after", value: "v")
        #expect(Self.mainFileBytes(url) > before + 3_000 * 1024)
    }

    @Test("a checkpoint loses nothing: every record reads back after reopening")
    func recordsSurviveCheckpointAndReopen() async throws {
        let (w, url) = try await TestWallets.make()
        let value = String(repeating: "y", count: 1024)
        try await w.transaction { txn in
            for i in 0..<3_000 { try txn.add(type: "t", id: "\(i)", value: value) }
        }
        try await w.add(type: "t", id: "after", value: "v")
        try w.close()
        let reopened = try await Wallet.open(at: url, key: .raw(TestWallets.rawKey), configuration: TestWallets.fastConfiguration)
        defer { try? reopened.close() }
        #expect(try await reopened.count(type: "t") == 3_001)
        #expect(try await reopened.get(type: "t", id: "2999").value == value)
    }
}
