// The writer's durability setting, which GRDB's pool would otherwise lower to NORMAL.

import Foundation
import GRDB
import Testing

@testable import CofferWallet

@Suite("Durability")
struct DurabilityTests {
    @Test("the wallet's writer commits with synchronous = FULL (a write returns after the WAL is on disk)")
    func writerIsFull() async throws {
        let (wallet, _) = try await TestWallets.make()
        let level = try await wallet.pool.write { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") }
        #expect(level == 2)
    }

    @Test("a reopened wallet's writer is FULL too")
    func reopenedWriterIsFull() async throws {
        let (wallet, url) = try await TestWallets.make()
        try wallet.close()
        let reopened = try await Wallet.open(at: url, key: .raw(TestWallets.rawKey), configuration: TestWallets.fastConfiguration)
        let level = try await reopened.pool.write { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") }
        #expect(level == 2)
    }
}
