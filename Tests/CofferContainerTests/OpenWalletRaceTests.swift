// A container closed or reset while `openWallet` awaits the wallet's opening: the call throws
// `ContainerError.closed` and the wallet it opened is closed, never handed out. The window is
// held open by the container's test hook, so the race lands in it every run.

import Coffer
import CofferTestSupport
import Foundation
import Testing

@Suite("openWallet against close and reset")
struct OpenWalletRaceTests {
    /// Starts `openWallet` and waits (bounded) until the wallet opened and the call sits in the
    /// window before adoption; `release` lets it go on.
    static func openPaused(_ app: CofferContainer) async throws -> (
        wallet: Wallet, release: @Sendable () -> Void, result: Updates<Result<Wallet, any Error>>
    ) {
        let (opened, openedContinuation) = AsyncStream<Wallet>.makeStream()
        let (gate, gateContinuation) = AsyncStream<Void>.makeStream()
        let gateUpdates = Updates(gate)
        app.setAfterWalletOpenedForTesting { wallet in
            openedContinuation.yield(wallet)
            // Bounded: a test that fails before releasing does not leave the call waiting.
            _ = try? await gateUpdates.next(within: .seconds(60))
        }
        let (results, resultContinuation) = AsyncStream<Result<Wallet, any Error>>.makeStream()
        Task {
            do { resultContinuation.yield(.success(try await app.openWallet(.raw(WalletKey.generateRawKey())))) } catch {
                resultContinuation.yield(.failure(error))
            }
            resultContinuation.finish()
        }
        let result = Updates(results)
        let wallet = try #require(
            try await Updates(opened).next(within: .seconds(60)), "openWallet never reached the window before adoption")
        return (wallet, { gateContinuation.yield(()) }, result)
    }

    @Test("a close while the wallet opens: openWallet throws closed and closes the wallet it opened")
    func closeWhileOpening() async throws {
        let app = try await CofferContainer.open(CofferLocations(store: containerFolder()))
        let (wallet, release, result) = try await Self.openPaused(app)
        app.close()
        release()
        let outcome = try #require(try await result.next(within: .seconds(60)))
        #expect(throws: ContainerError.closed) { try outcome.get() }
        await #expect(throws: WalletError.closed) { try await wallet.add(type: "t", id: "a", value: "v") }
    }

    @Test("a reset while the wallet opens: openWallet throws closed, closes the wallet, and the wallet file stays removed")
    func resetWhileOpening() async throws {
        let locations = CofferLocations(store: containerFolder())
        let app = try await CofferContainer.open(locations)
        let (wallet, release, result) = try await Self.openPaused(app)
        try await app.reset()
        release()
        let outcome = try #require(try await result.next(within: .seconds(60)))
        #expect(throws: ContainerError.closed) { try outcome.get() }
        await #expect(throws: WalletError.closed) { try await wallet.add(type: "t", id: "a", value: "v") }
        #expect(!FileManager.default.fileExists(atPath: locations.wallet.path))
    }

    @Test("without a close the hooked call still hands the wallet out (the hook alone changes nothing)")
    func openWithoutClose() async throws {
        let app = try await CofferContainer.open(CofferLocations(store: containerFolder()))
        let (wallet, release, result) = try await Self.openPaused(app)
        release()
        let outcome = try #require(try await result.next(within: .seconds(60)))
        #expect(try outcome.get() === wallet)
        try await wallet.add(type: "t", id: "a", value: "v")
        app.close()
        await #expect(throws: WalletError.closed) { try await wallet.add(type: "t", id: "b", value: "v") }
    }
}
