// A search position is a sealed token: another replica (a wallet on its own client and pool)
// serves the next page from it, and a token that was changed, or that another profile or type
// gave, is refused instead of positioning a search anywhere.

#if PostgreSQL
import CofferTestSupport
import CofferWallet
import Foundation
import Testing

extension PostgresWalletTests {
    @Test(
        "a search position given by one replica serves the next page on another; changed, other-type and other-profile positions are refused"
    )
    func positionAcrossReplicas() async throws {
        let first = try PostgresTesting.settings("position")
        let writer = try await PostgresWallet.create(settings: first, key: PostgresTesting.key)
        defer { writer.close() }
        try await writer.addAll((0..<25).map { (type: "p", id: String(format: "r%02d", $0), value: "v", tags: [:]) })
        try await writer.add(type: "q", id: "other", value: "v")
        let other = try await PostgresWallet.create(settings: first, profile: "tenant2", key: PostgresTesting.otherKey)
        defer { other.close() }
        try await other.addAll((0..<25).map { (type: "p", id: "t\($0)", value: "v", tags: [:]) })

        // The second replica: same database, a client and pool of its own (other settings).
        var second = first
        second.maxConnections = 3
        let replica = try await PostgresWallet.open(settings: second, key: PostgresTesting.key)
        defer { replica.close() }

        let page1 = try await writer.search(type: "p", limit: 10)
        let next = try #require(page1.next)
        let page2 = try await replica.search(type: "p", limit: 10, after: next)
        #expect(page1.records.map(\.id) == (0..<10).map { String(format: "r%02d", $0) })
        #expect(page2.records.map(\.id) == (10..<20).map { String(format: "r%02d", $0) })

        var changed = try #require(Data(base64Encoded: next))
        changed[changed.count / 2] ^= 0x01
        for (what, token, wallet, type) in [
            ("a changed position", changed.base64EncodedString(), replica, "p"),
            ("another type's position", next, replica, "q"),
            ("another profile's position", next, other, "p"),
            ("text that is no position", "not-a-token", replica, "p"),
        ] {
            do {
                let page = try await wallet.search(type: type, limit: 10, after: token)
                Issue.record("\(what) gave a page of \(page.records.count)")
            } catch let error as WalletError {
                guard case .invalidInput(let message) = error else {
                    Issue.record("\(what): expected invalid input, got \(error)")
                    continue
                }
                #expect(message.contains("search position"), "\(what): \(message)")
            }
        }
    }
}
#endif
