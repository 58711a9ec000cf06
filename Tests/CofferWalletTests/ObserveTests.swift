// Live wallet queries: what a commit shows, what it does not, coalescing, and the end at close().
// Every wait is bounded (`Updates.next(within:)`, `eventually`): an update that never comes fails
// its test instead of stopping the suite.

import CofferTestSupport
import CofferWallet
import Foundation
import Testing

extension Updates<[WalletRecord]> {
    /// The next result, failing the test when none came within the bound or the sequence ended.
    fileprivate func result(_ what: String, sourceLocation: SourceLocation = #_sourceLocation) async throws -> [WalletRecord] {
        try #require(try await next(), "the observation ended before \(what)", sourceLocation: sourceLocation)
    }
}

@Suite("Wallet: live queries")
struct ObserveTests {
    @Test("an added, updated and removed credential is each seen")
    func addUpdateRemove() async throws {
        let (wallet, _) = try await TestWallets.make()
        defer { try? wallet.close() }
        let updates = Updates(wallet.observe(type: "credential", interval: .milliseconds(20)))
        #expect(try await updates.result("the first result").isEmpty)
        try await wallet.add(type: "credential", id: "c1", value: "v1")
        #expect(try await updates.result("the add").map(\.value) == ["v1"])
        try await wallet.update(type: "credential", id: "c1", value: "v2")
        #expect(try await updates.result("the update").map(\.value) == ["v2"])
        try await wallet.delete(type: "credential", id: "c1")
        #expect(try await updates.result("the delete").isEmpty)
    }

    @Test("a credential that expires leaves the result without any commit")
    func expiry() async throws {
        let (wallet, _) = try await TestWallets.make()
        defer { try? wallet.close() }
        try await wallet.add(type: "credential", id: "long", value: "v")
        // The expiring record must be in the first result for the test to mean anything; on a
        // machine so loaded that it expired before that read, try again with a longer life.
        for (attempt, lifetime) in [2.0, 8.0, 30.0].enumerated() {
            let id = "short\(attempt)"
            try await wallet.add(type: "credential", id: id, value: "v", expiresAt: Date().addingTimeInterval(lifetime))
            let updates = Updates(wallet.observe(type: "credential", interval: .milliseconds(20), expiryCheck: .milliseconds(100)))
            defer { updates.cancel() }
            let first = try await updates.result("the first result")
            guard first.map(\.id).contains(id) else { continue }
            #expect(first.map(\.id).sorted() == ["long", id])
            let later = try await updates.next(within: .seconds(lifetime + 30))
            #expect(later?.map(\.id) == ["long"])
            return
        }
        Issue.record("an expiring record was never in a first result: the machine is too loaded to tell")
    }

    @Test("a write to another type wakes nothing")
    func otherTypeQuiet() async throws {
        let (wallet, _) = try await TestWallets.make()
        defer { try? wallet.close() }
        try await wallet.add(type: "credential", id: "c1", value: "v")
        let updates = Updates(wallet.observe(type: "credential", interval: .milliseconds(20), expiryCheck: .milliseconds(100)))
        #expect(try await updates.result("the first result").map(\.id) == ["c1"])
        for i in 0..<5 {
            let readsBefore = wallet.observationReads
            try await wallet.add(type: "connection", id: "k\(i)", value: "v")
            // Two reads after the commit began: the second began after it, and saw it.
            try await eventually("the observation looked at the commit") { wallet.observationReads >= readsBefore + 2 }
        }
        try await wallet.add(type: "credential", id: "c2", value: "v")
        // Every element is kept: had a connection's commit given one, it would come first.
        #expect(try await updates.result("the credential's add").map(\.id).sorted() == ["c1", "c2"])
    }

    @Test("10,000 adds in one transaction give one update")
    func oneTransactionOneUpdate() async throws {
        let (wallet, _) = try await TestWallets.make()
        defer { try? wallet.close() }
        let updates = Updates(wallet.observe(type: "credential", interval: .milliseconds(20)))
        #expect(try await updates.result("the first result").isEmpty)
        try await wallet.transaction { tx in
            for i in 0..<10_000 { try tx.add(type: "credential", id: "c\(i)", value: "v") }
        }
        #expect(try await updates.result("the transaction").count == 10_000)
        try await wallet.add(type: "credential", id: "marker", value: "v")
        // Every element is kept: had the transaction given more than one, this would be one of them.
        #expect(try await updates.result("the marker").count == 10_001)
    }

    @Test("close() ends every observation with the wallet's closed error")
    func endsAtClose() async throws {
        let (wallet, _) = try await TestWallets.make()
        let first = Updates(wallet.observe(type: "credential", interval: .milliseconds(20)))
        let second = Updates(wallet.observe(type: "connection", interval: .milliseconds(20)))
        _ = try await first.result("the first result")
        _ = try await second.result("the first result")
        #expect(wallet.liveObservations == 2)
        try wallet.close()
        #expect(wallet.liveObservations == 0)
        await #expect(throws: WalletError.closed) { _ = try await first.next() }
        await #expect(throws: WalletError.closed) { _ = try await second.next() }
        let late = Updates(wallet.observe(type: "credential"))
        await #expect(throws: WalletError.closed) { _ = try await late.next() }
        #expect(wallet.liveObservations == 0)
    }

    @Test("the observable model follows the wallet and keeps the closed error")
    @MainActor
    func observableModel() async throws {
        guard #available(macOS 14, iOS 17, tvOS 17, watchOS 10, *) else { return }
        let (wallet, _) = try await TestWallets.make()
        let model = ObservedWalletQuery(wallet, type: "credential")
        try await wallet.add(type: "credential", id: "c1", value: "v")
        try await eventually("the model shows the added record") { @MainActor in model.records?.count == 1 }
        try wallet.close()
        try await eventually("the model shows the closed error") { @MainActor in model.error != nil }
        #expect(model.error as? WalletError == .closed)
        #expect(model.records?.map(\.id) == ["c1"])
    }
}
