// `PostgresWallet.addAll` is all or nothing: a record already there, or named twice, is the
// duplicate error naming it, and none of the list is written, whichever batch it falls in.

#if PostgreSQL
import CofferTestSupport
import CofferWallet
import Foundation
import Testing

extension PostgresWalletTests {
    static func addAllRecords(_ ids: [String]) -> [(type: String, id: String, value: String, tags: WalletTags)] {
        ids.map { (type: "a", id: $0, value: "v-\($0)", tags: ["n": .string($0)]) }
    }

    @Test("addAll with a record already there, in its third batch: the duplicate is named and none of the list is written")
    func addAllRefusesExisting() async throws {
        let wallet = try await PostgresWallet.create(settings: try PostgresTesting.settings("addall"), key: PostgresTesting.key)
        defer { wallet.close() }
        try await wallet.add(type: "a", id: "r25", value: "first")
        let list = Self.addAllRecords((0..<30).map { "r\($0)" })
        await #expect(throws: WalletError.duplicate(type: "a", id: "r25")) { try await wallet.addAll(list, batchSize: 10) }
        #expect(try await PostgresTesting.all(wallet, type: "a") == ["r25"])
        #expect(try await wallet.fetch(type: "a", id: "r25")?.value == "first")
        #expect(try await wallet.count(type: "a", matching: .all) == 1)
    }

    @Test("addAll naming one record twice: the duplicate is named and nothing is written")
    func addAllRefusesRepeated() async throws {
        let wallet = try await PostgresWallet.create(settings: try PostgresTesting.settings("addall"), key: PostgresTesting.key)
        defer { wallet.close() }
        let list = Self.addAllRecords(["x", "y", "z", "y"])
        await #expect(throws: WalletError.duplicate(type: "a", id: "y")) { try await wallet.addAll(list) }
        #expect(try await PostgresTesting.all(wallet, type: "a").isEmpty)
        try await wallet.addAll(Self.addAllRecords(["x", "y", "z"]), batchSize: 2)
        #expect(try await PostgresTesting.all(wallet, type: "a").sorted() == ["x", "y", "z"])
    }
}
#endif

#if PostgreSQL
extension PostgresWalletTests {
    @Test("addAll refused inside a transaction takes back only its own records: the transaction's other write commits")
    func addAllRefusedInsideTransaction() async throws {
        let wallet = try await PostgresWallet.create(settings: try PostgresTesting.settings("addall"), key: PostgresTesting.key)
        defer { wallet.close() }
        try await wallet.add(type: "a", id: "r7", value: "first")
        let caught = try await wallet.transaction { view -> WalletError? in
            try await view.add(type: "a", id: "kept", value: "v")
            do {
                try await view.addAll(Self.addAllRecords((0..<10).map { "r\($0)" }), batchSize: 4)
                return nil
            } catch let error as WalletError {
                return error
            }
        }
        #expect(caught == .duplicate(type: "a", id: "r7"))
        #expect(try await PostgresTesting.all(wallet, type: "a").sorted() == ["kept", "r7"])
    }
}
#endif
