// Live wallet queries: what a commit shows, what it does not, coalescing, and the end at close().
import CofferWallet
import Foundation
import Testing

/// The next element of an observation, failing the test when the sequence ended.
private func next(_ iterator: inout AsyncThrowingStream<[WalletRecord], any Error>.Iterator) async throws -> [WalletRecord] {
    try #require(try await iterator.next())
}

@Suite("Wallet: live queries")
struct ObserveTests {
    @Test("an added, updated and removed credential is each seen")
    func addUpdateRemove() async throws {
        let (wallet, _) = try await TestWallets.make()
        defer { try? wallet.close() }
        var updates = wallet.observe(type: "credential", interval: .milliseconds(20)).makeAsyncIterator()
        #expect(try await next(&updates).isEmpty)
        try await wallet.add(type: "credential", id: "c1", value: "v1")
        #expect(try await next(&updates).map(\.value) == ["v1"])
        try await wallet.update(type: "credential", id: "c1", value: "v2")
        #expect(try await next(&updates).map(\.value) == ["v2"])
        try await wallet.delete(type: "credential", id: "c1")
        #expect(try await next(&updates).isEmpty)
    }

    @Test("a credential that expires leaves the result without any commit")
    func expiry() async throws {
        let (wallet, _) = try await TestWallets.make()
        defer { try? wallet.close() }
        try await wallet.add(type: "credential", id: "short", value: "v", expiresAt: Date().addingTimeInterval(3))
        try await wallet.add(type: "credential", id: "long", value: "v")
        var updates = wallet.observe(type: "credential", interval: .milliseconds(20), expiryCheck: .milliseconds(100))
            .makeAsyncIterator()
        #expect(try await next(&updates).map(\.id).sorted() == ["long", "short"])
        #expect(try await next(&updates).map(\.id) == ["long"])
    }

    @Test("a write to another type wakes nothing")
    func otherTypeQuiet() async throws {
        let (wallet, _) = try await TestWallets.make()
        defer { try? wallet.close() }
        try await wallet.add(type: "credential", id: "c1", value: "v")
        var updates = wallet.observe(type: "credential", interval: .milliseconds(20)).makeAsyncIterator()
        #expect(try await next(&updates).map(\.id) == ["c1"])
        for i in 0..<5 {
            try await wallet.add(type: "connection", id: "k\(i)", value: "v")
            try await Task.sleep(for: .milliseconds(50)) // several checks see each of these commits
        }
        try await wallet.add(type: "credential", id: "c2", value: "v")
        // The next element is the credential's change: nothing came for the connections.
        #expect(try await next(&updates).map(\.id).sorted() == ["c1", "c2"])
    }

    @Test("10,000 adds in one transaction give one update")
    func oneTransactionOneUpdate() async throws {
        let (wallet, _) = try await TestWallets.make()
        defer { try? wallet.close() }
        var updates = wallet.observe(type: "credential", interval: .milliseconds(20)).makeAsyncIterator()
        #expect(try await next(&updates).isEmpty)
        try await wallet.transaction { tx in
            for i in 0..<10_000 { try tx.add(type: "credential", id: "c\(i)", value: "v") }
        }
        #expect(try await next(&updates).count == 10_000)
        try await wallet.add(type: "credential", id: "marker", value: "v")
        // Had the transaction given more than one element, this would be one of them.
        #expect(try await next(&updates).count == 10_001)
    }

    @Test("close() ends every observation with the wallet's closed error")
    func endsAtClose() async throws {
        let (wallet, _) = try await TestWallets.make()
        var first = wallet.observe(type: "credential", interval: .milliseconds(20)).makeAsyncIterator()
        var second = wallet.observe(type: "connection", interval: .milliseconds(20)).makeAsyncIterator()
        _ = try await next(&first)
        _ = try await next(&second)
        #expect(wallet.liveObservations == 2)
        try wallet.close()
        #expect(wallet.liveObservations == 0)
        await #expect(throws: WalletError.closed) { _ = try await first.next() }
        await #expect(throws: WalletError.closed) { _ = try await second.next() }
        var late = wallet.observe(type: "credential").makeAsyncIterator()
        await #expect(throws: WalletError.closed) { _ = try await late.next() }
    }

    @Test("the observable model follows the wallet and keeps the closed error")
    @MainActor
    func observableModel() async throws {
        guard #available(macOS 14, iOS 17, tvOS 17, watchOS 10, *) else { return }
        let (wallet, _) = try await TestWallets.make()
        let model = ObservedWalletQuery(wallet, type: "credential")
        try await wallet.add(type: "credential", id: "c1", value: "v")
        while model.records?.count != 1 { try await Task.sleep(for: .milliseconds(20)) }
        try wallet.close()
        while model.error == nil { try await Task.sleep(for: .milliseconds(20)) }
        #expect(model.error as? WalletError == .closed)
        #expect(model.records?.map(\.id) == ["c1"])
    }
}
