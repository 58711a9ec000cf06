// The package's async gate (the wallet's key gate is built on it): an exclusive holder waits for
// the shared ones inside and keeps new ones out; shared waiters go in when it leaves.

import CofferSync
import CofferTestSupport
import Foundation
import Testing

@Suite("AsyncGate")
struct AsyncGateTests {
    @Test("an exclusive entry waits for the shared holder, keeps new shared entries out, and lets them in when it leaves")
    func exclusiveAfterShared() async throws {
        let gate = AsyncGate()
        #expect(gate.tryEnterShared())
        let (entered, enteredContinuation) = AsyncStream<Void>.makeStream()
        Task {
            await gate.enterExclusive()
            enteredContinuation.yield(())
        }
        let exclusive = Updates(entered)
        // The request keeps new shared entries out at once, while the holder is still inside.
        try await eventually("the exclusive request keeps shared entries out") {
            if gate.tryEnterShared() {
                gate.leaveShared()
                return false
            }
            return true
        }
        await #expect(throws: TimedOut.self) { _ = try await exclusive.next(within: .milliseconds(200)) }
        gate.leaveShared()
        _ = try #require(try await exclusive.next(within: .seconds(30)), "the exclusive entry never came")
        let (shared, sharedContinuation) = AsyncStream<Void>.makeStream()
        Task {
            await gate.enterShared()
            sharedContinuation.yield(())
        }
        let sharedEntry = Updates(shared)
        await #expect(throws: TimedOut.self) { _ = try await sharedEntry.next(within: .milliseconds(200)) }
        gate.leaveExclusive()
        _ = try #require(try await sharedEntry.next(within: .seconds(30)), "the shared waiter never came in")
        gate.leaveShared()
        #expect(gate.tryEnterShared())
        gate.leaveShared()
    }
}
