// A search cancelled while one long `$regex` match is under way stops within that value: the
// matcher reads the search's cancellation flag as it goes, inside SQLite (plaintext tags) and on
// the threads that match decrypted tags.

import CofferSync
import Foundation
import Testing

@testable import CofferWallet

@Suite("Cancelling a search while a $regex matches")
struct RegexCancellationTests {
    /// Values whose match is long: 60,000 letters, about 40 million automaton steps each for
    /// `pattern` (an allowed one: linear in the text), so the whole search would run far longer
    /// than the wait for its first poll.
    static let values = 48
    static let pattern = "(?:a|b){1,300}c"

    /// `task`'s result, or nil when it has not ended within `seconds` (the task is left running).
    static func outcome(of task: Task<Int, Error>, within seconds: Double) async -> Result<Int, Error>? {
        let waiter = Locked<CheckedContinuation<Result<Int, Error>?, Never>?>(nil)
        let finish: @Sendable (Result<Int, Error>?) -> Void = { result in
            waiter.withLock { w -> CheckedContinuation<Result<Int, Error>?, Never>? in
                defer { w = nil }
                return w
            }?.resume(returning: result)
        }
        return await withCheckedContinuation { continuation in
            waiter.withLock { $0 = continuation }
            Task { finish(await task.result) }
            Task {
                try? await Task.sleep(nanoseconds: UInt64(seconds * 1e9))
                finish(nil)
            }
        }
    }

    @Test(
        "a search cancelled during an expensive $regex ends in CancellationError, each match stopped by the flag",
        arguments: ["~long", "long", "count"])
    func cancelledMidMatch(_ way: String) async throws {
        let tag = way == "count" ? "~long" : way
        let (wallet, _) = try await TestWallets.make()
        defer { try? wallet.close() }
        let long = String(repeating: "a", count: 60_000)
        for i in 0..<Self.values {
            try await wallet.add(type: "t", id: "r\(i)", value: "v", tags: [tag: .string(long)])
        }
        let query = try WalletQuery(json: #"{"\#(tag)": {"$regex": "\#(Self.pattern)"}}"#)
        let observer = MatchCancellation.Observer()
        let search = Task {
            try await MatchCancellation.$observing.withValue(observer) {
                // A plaintext tag is matched inside SQLite by the count; an encrypted one on the
                // threads that open records, by the page read.
                if way == "count" { return try await wallet.count(type: "t", matching: query) }
                let handle = try await wallet.openSearch(
                    type: "t", query: query, options: SearchOptions(retrieveTotalCount: tag.hasPrefix("~")))
                return try await wallet.searchNext(handle, count: Self.values).records?.count ?? 0
            }
        }
        // Cancel once a match is under way (the matcher has read the flag once).
        #expect(await observer.firstPoll(within: 60), "no match started within 60 s")
        search.cancel()
        // Bounded: a matcher that ignored the flag would run on for minutes.
        guard let outcome = await Self.outcome(of: search, within: 60) else {
            Issue.record("the cancelled search had not ended 60 s later (the matcher read the set flag \(observer.stops) times)")
            return
        }
        #expect(throws: CancellationError.self) { _ = try outcome.get() }
        // Each value's match stopped at its first read of the set flag: at most one stop per
        // value. A matcher that went on matching would read the set flag thousands of times.
        #expect(observer.stops >= 1)
        #expect(observer.stops <= Self.values, "the matcher read the set flag \(observer.stops) times: it did not stop")
    }
}
