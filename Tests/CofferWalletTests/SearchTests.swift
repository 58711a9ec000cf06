// Search handles, paging stability and concurrency.

import CofferWallet
import Foundation
import Testing

@Suite("Search and concurrency")
struct SearchTests {
    /// A wallet on `profile` of a two-profile store (the other profile holding decoys of type
    /// `t`), with `n` records of type `t`.
    static func filled(
        _ profile: TestProfile, _ n: Int, configuration: Wallet.Configuration = TestWallets.fastConfiguration
    ) async throws -> Wallet {
        let (w, _) = try await TestWallets.make(profile, configuration: configuration)
        try await w.transaction { txn in
            for i in 0..<n {
                try txn.add(
                    type: "t", id: String(format: "r%05d", i), value: "v\(i)",
                    tags: ["parity": i % 2 == 0 ? "even" : "odd", "~i": .string(String(format: "%05d", i))])
            }
        }
        return w
    }

    @Test("pages follow the seed's shape and options", arguments: TestProfile.allCases)
    func pageShape(_ profile: TestProfile) async throws {
        let w = try await Self.filled(profile, 3)
        defer { try? w.close() }
        let h = try await w.openSearch(
            type: "t", queryJSON: #"{"parity": "even"}"#,
            optionsJSON: #"{"retrieveTotalCount": true, "retrieveType": true, "retrieveTags": false}"#)
        let page = try await w.searchNext(h, count: 10)
        #expect(
            page.json == #"{"totalCount":2,"records":[{"id":"r00000","type":"t","value":"v0"},{"id":"r00002","type":"t","value":"v2"}]}"#)
    }

    @Test("retrieveRecords false gives only the count", arguments: TestProfile.allCases)
    func countOnly(_ profile: TestProfile) async throws {
        let w = try await Self.filled(profile, 5)
        defer { try? w.close() }
        let h = try await w.openSearch(type: "t", queryJSON: "{}", optionsJSON: #"{"retrieveRecords": false, "retrieveTotalCount": true}"#)
        #expect(try await w.searchNext(h, count: 10).json == #"{"totalCount":5}"#)
    }

    @Test("an exhausted search returns an empty page", arguments: TestProfile.allCases)
    func exhausted(_ profile: TestProfile) async throws {
        let w = try await Self.filled(profile, 2)
        defer { try? w.close() }
        let h = try await w.openSearch(type: "t", query: .all)
        #expect(try await w.searchNext(h, count: 5).records?.count == 2)
        #expect(try await w.searchNext(h, count: 5).records == [])
    }

    @Test("an unknown handle is an error", arguments: TestProfile.allCases)
    func unknownHandle(_ profile: TestProfile) async throws {
        let w = try await Self.filled(profile, 1)
        defer { try? w.close() }
        await #expect(throws: WalletError.invalidHandle(999)) { try await w.searchNext(999, count: 1) }
        await #expect(throws: WalletError.invalidHandle(999)) { try await w.closeSearch(999) }
    }

    @Test("a closed handle is an error and is never reused", arguments: TestProfile.allCases)
    func closedHandle(_ profile: TestProfile) async throws {
        let w = try await Self.filled(profile, 1)
        defer { try? w.close() }
        let h = try await w.openSearch(type: "t", query: .all)
        try await w.closeSearch(h)
        await #expect(throws: WalletError.invalidHandle(h)) { try await w.searchNext(h, count: 1) }
        let h2 = try await w.openSearch(type: "t", query: .all)
        #expect(h2 != h)
    }

    @Test("a count below 1 is invalid input", arguments: TestProfile.allCases)
    func badCount(_ profile: TestProfile) async throws {
        let w = try await Self.filled(profile, 1)
        defer { try? w.close() }
        let h = try await w.openSearch(type: "t", query: .all)
        await #expect(throws: WalletError.self) { try await w.searchNext(h, count: 0) }
    }

    @Test("open searches are bounded: the least recently used is reclaimed", arguments: TestProfile.allCases)
    func bounded(_ profile: TestProfile) async throws {
        var config = TestWallets.fastConfiguration
        config.maxOpenSearches = 3
        let w = try await Self.filled(profile, 4, configuration: config)
        defer { try? w.close() }
        let first = try await w.openSearch(type: "t", query: .all)
        for _ in 0..<3 { _ = try await w.openSearch(type: "t", query: .all) }
        #expect(w.openSearchCount == 3)
        await #expect(throws: WalletError.invalidHandle(first)) { try await w.searchNext(first, count: 1) }
    }

    @Test("an abandoned search is reclaimed after its idle timeout", arguments: TestProfile.allCases)
    func idleReclaim(_ profile: TestProfile) async throws {
        var config = TestWallets.fastConfiguration
        config.searchIdleTimeout = .milliseconds(50)
        let w = try await Self.filled(profile, 2, configuration: config)
        defer { try? w.close() }
        let h = try await w.openSearch(type: "t", query: .all)
        try await Task.sleep(for: .milliseconds(150))
        _ = try await w.openSearch(type: "t", query: .all)
        await #expect(throws: WalletError.invalidHandle(h)) { try await w.searchNext(h, count: 1) }
        #expect(w.openSearchCount == 1)
    }

    @Test("a paged walk sees every record exactly once while others are added and removed", arguments: TestProfile.allCases)
    func pagingUnderChanges(_ profile: TestProfile) async throws {
        let w = try await Self.filled(profile, 400)
        defer { try? w.close() }
        let h = try await w.openSearch(type: "t", queryJSON: "{}")
        var seen = [String]()
        var removed = Set<String>()
        var step = 0
        while true {
            let page = try await w.searchNext(h, count: 17)
            guard let records = page.records, !records.isEmpty else { break }
            seen += records.map(\.id)
            // Between pages: add new records and delete some already seen and some not yet seen.
            for k in 0..<3 { try await w.add(type: "t", id: "new-\(step)-\(k)", value: "n") }
            let victims = [String(format: "r%05d", (step * 37) % 400), String(format: "r%05d", (step * 53 + 11) % 400)]
            for v in victims where !removed.contains(v) {
                try await w.delete(type: "t", id: v)
                removed.insert(v)
            }
            step += 1
        }
        #expect(Set(seen).count == seen.count, "a record was returned twice")
        let survivors = (0..<400).map { String(format: "r%05d", $0) }.filter { !removed.contains($0) }
        #expect(Set(survivors).isSubset(of: Set(seen)), "a record present throughout was skipped")
    }

    @Test("paging with a tag-driven query under inserts and deletes repeats and skips nothing", arguments: TestProfile.allCases)
    func tagDrivenPaging(_ profile: TestProfile) async throws {
        let w = try await Self.filled(profile, 300)
        defer { try? w.close() }
        let h = try await w.openSearch(type: "t", queryJSON: #"{"parity": "even"}"#)
        var seen = [String]()
        var step = 0
        while true {
            let page = try await w.searchNext(h, count: 11)
            guard let records = page.records, !records.isEmpty else { break }
            seen += records.map(\.id)
            try await w.add(type: "t", id: "late-\(step)", value: "n", tags: ["parity": "even"])
            step += 1
        }
        #expect(Set(seen).count == seen.count)
        #expect(Set((0..<150).map { String(format: "r%05d", $0 * 2) }).isSubset(of: Set(seen)))
    }

    @Test("the AsyncSequence walks every match in insertion order", arguments: TestProfile.allCases)
    func asyncSequence(_ profile: TestProfile) async throws {
        let w = try await Self.filled(profile, 1000)
        defer { try? w.close() }
        var ids = [String]()
        for try await record in try w.records(type: "t", matching: WalletQuery(json: #"{"parity": "odd"}"#), pageSize: 7) {
            ids.append(record.id)
        }
        #expect(ids == (0..<500).map { String(format: "r%05d", $0 * 2 + 1) })
    }

    @Test("concurrent writers lose nothing", arguments: TestProfile.allCases)
    func concurrentWriters(_ profile: TestProfile) async throws {
        let (w, _) = try await TestWallets.make(profile)
        defer { try? w.close() }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for task in 0..<8 {
                group.addTask {
                    for i in 0..<50 { try await w.add(type: "t", id: "\(task)-\(i)", value: "v", tags: ["task": .string(String(task))]) }
                }
            }
            try await group.waitForAll()
        }
        #expect(try await w.count(type: "t") == 400)
        for task in 0..<8 {
            #expect(try await w.count(type: "t", matching: WalletQuery(json: #"{"task": "\#(task)"}"#)) == 50)
        }
    }

    @Test("concurrent readers and writers see consistent records", arguments: TestProfile.allCases)
    func concurrentReadWrite(_ profile: TestProfile) async throws {
        let w = try await Self.filled(profile, 100)
        defer { try? w.close() }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for i in 0..<100 { try await w.update(type: "t", id: String(format: "r%05d", i), value: "u\(i)") }
            }
            for _ in 0..<4 {
                group.addTask {
                    for i in 0..<100 {
                        let v = try await w.get(type: "t", id: String(format: "r%05d", i)).value
                        #expect(v == "v\(i)" || v == "u\(i)")
                    }
                }
            }
            try await group.waitForAll()
        }
    }

    @Test("a write returns after commit: a reopened wallet sees it", arguments: TestProfile.allCases)
    func durableAfterReturn(_ profile: TestProfile) async throws {
        let (w, url) = try await TestWallets.make(profile)
        try await w.add(type: "t", id: "1", value: "v")
        let other = try await Wallet.open(at: url, key: profile.key, profile: profile.rawValue)
        #expect(try await other.get(type: "t", id: "1").value == "v")
        try other.close()
        try w.close()
    }
}

@Suite("Paging while another task writes")
struct ConcurrentPagingTests {
    @Test("a walk concurrent with inserts and deletes of other records repeats and skips nothing", arguments: TestProfile.allCases)
    func walkDuringWrites(_ profile: TestProfile) async throws {
        let w = try await SearchTests.filled(profile, 600)
        defer { try? w.close() }
        // The writer only touches records outside the walk's set ("churn-…"), so every
        // original record must be seen exactly once however the two tasks interleave.
        let writer = Task {
            for i in 0..<300 {
                try await w.add(type: "t", id: "churn-\(i)", value: "c", tags: ["parity": "even"])
                if i % 3 == 0 { try await w.delete(type: "t", id: "churn-\(i)") }
            }
        }
        let h = try await w.openSearch(type: "t", queryJSON: #"{"~i": {"$lt": "99999"}}"#)
        var seen = [String]()
        while true {
            let page = try await w.searchNext(h, count: 13)
            guard let records = page.records, !records.isEmpty else { break }
            seen += records.map(\.id)
            await Task.yield()
        }
        try await writer.value
        #expect(Set(seen).count == seen.count, "a record was returned twice")
        #expect(seen == (0..<600).map { String(format: "r%05d", $0) })
    }
}
