// A live wallet query sees a write made by another process (the `coffer` CLI).

import CofferTestSupport
import CofferWallet
import Foundation
import Testing

@Suite("Wallet: live queries across processes")
struct WalletObserveCLITests {
    @Test("a record written by another process is seen by an observation in this one")
    func otherProcessWrite() async throws {
        let store = try await CLI.newStore()
        let wallet = try await Wallet.open(
            at: store.appendingPathComponent("wallet.sqlite"), key: .raw(Data(base64Encoded: CLI.key)!))
        defer { try? wallet.close() }
        let updates = Updates(wallet.observe(type: "credential", interval: .milliseconds(20)))
        #expect(try #require(try await updates.next(), "the observation ended before its first result").isEmpty)
        let added = try await CLI.wallet(["add", "credential", "from-cli", "hello"], store: store)
        #expect(added.status == 0, "\(added.stderr)")
        let seen = try #require(try await updates.next(), "the observation ended before the other process's write")
        #expect(seen.map(\.id) == ["from-cli"])
        #expect(seen.map(\.value) == ["hello"])
    }
}
