import Foundation
import Testing

// A search cancelled while SQLite is inside one long `$regex` match stops within that value:
// the matcher reads the search's cancellation flag as it goes.
@testable import CofferWallet

@Suite("Cancelling a search while a $regex matches")
struct RegexCancellationTests {
    @Test("a search cancelled during an expensive $regex ends in CancellationError, stopped by the matcher")
    func cancelledMidMatch() async throws {
        let (wallet, _) = try await TestWallets.make()
        // 64 values of 60,000 letters: about 40 million automaton steps each for the pattern below
        // (an allowed one: linear in the text), so the whole search would run far longer than
        // the wait for its first poll.
        let long = String(repeating: "a", count: 60_000)
        for i in 0..<64 {
            try await wallet.add(type: "t", id: "r\(i)", value: "v", tags: ["~long": .string(long)])
        }
        let query = try WalletQuery(json: #"{"~long": {"$regex": "(?:a|b){1,300}c"}}"#)
        let pollsBefore = MatchCancellation.polls.withLock { $0 }
        let observedBefore = MatchCancellation.observed.withLock { $0 }
        let search = Task { try await wallet.openSearch(type: "t", query: query, options: SearchOptions(retrieveTotalCount: true)) }
        // Cancel once a match is under way (the matcher has read the flag at least once).
        while MatchCancellation.polls.withLock({ $0 }) == pollsBefore { try await Task.sleep(nanoseconds: 1_000_000) }
        search.cancel()
        await #expect(throws: CancellationError.self) { _ = try await search.value }
        #expect(MatchCancellation.observed.withLock { $0 } > observedBefore)
        try wallet.close()
    }
}
