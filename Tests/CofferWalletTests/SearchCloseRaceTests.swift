// A wallet closed while `openSearch` awaits its count: the call throws `WalletError.closed`
// instead of registering a handle in a closed wallet. The window is held open by a test hook.

import CofferTestSupport
import CofferWallet
import Foundation
import Testing

@Suite("openSearch against close")
struct SearchCloseRaceTests {
    @Test("a close between the count and the registration: openSearch throws closed, no handle is handed out")
    func closeWhileOpening() async throws {
        let (wallet, _) = try await TestWallets.make()
        try await wallet.add(type: "t", id: "a", value: "v")
        let (reached, reachedContinuation) = AsyncStream<Void>.makeStream()
        let (gate, gateContinuation) = AsyncStream<Void>.makeStream()
        let gateUpdates = Updates(gate)
        wallet.setBeforeSearchOpensForTesting {
            reachedContinuation.yield(())
            _ = try? await gateUpdates.next(within: .seconds(60))
        }
        let (results, resultContinuation) = AsyncStream<Result<Int, any Error>>.makeStream()
        Task {
            do {
                var options = SearchOptions()
                options.retrieveRecords = false
                options.retrieveTotalCount = true
                resultContinuation.yield(.success(try await wallet.openSearch(type: "t", query: .all, options: options)))
            } catch { resultContinuation.yield(.failure(error)) }
            resultContinuation.finish()
        }
        let result = Updates(results)
        _ = try #require(try await Updates(reached).next(within: .seconds(60)), "openSearch never reached its registration")
        try wallet.close()
        gateContinuation.yield(())
        let outcome = try #require(try await result.next(within: .seconds(60)))
        #expect(throws: WalletError.closed) { try outcome.get() }
    }
}
