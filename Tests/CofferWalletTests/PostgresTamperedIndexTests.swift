// A tag index altered with SQL on PostgreSQL: a row the index claims matches a search whose
// sealed tags do not reads as corrupted, as on SQLite, instead of being dropped in silence.

#if PostgreSQL
import CofferTestSupport
import Foundation
import PostgresNIO
import Testing

@testable import CofferWallet

extension PostgresWalletTests {
    /// Runs `sql` on the wallet's database, as someone with write access to it could.
    static func alter(_ wallet: PostgresWallet, _ sql: String) async throws {
        try await wallet.store.withConnection { connection in
            try await connection.query(PostgresQuery(unsafeSQL: sql), logger: PostgresStore.logger)
        }
    }

    /// Whether `call` failed with ``WalletError/corrupted(_:)`` naming the tag index; records
    /// an issue for any other outcome.
    static func expectIndexDisagrees(_ call: () async throws -> Void) async {
        do {
            try await call()
            Issue.record("a tampered tag index was trusted")
        } catch WalletError.corrupted(let message) {
            #expect(message.contains("tag index disagrees"), "\(message)")
        } catch {
            Issue.record("expected corrupted, got \(error)")
        }
    }

    @Test("a search finds a record whose encrypted tag row was given another record's blind value: corrupted, not a silent miss")
    func tamperedEncryptedTagRow() async throws {
        let wallet = try await PostgresWallet.create(settings: try PostgresTesting.settings("tampered-blind"), key: PostgresTesting.key)
        defer { wallet.close() }
        for (id, color) in [("red", "red"), ("blue", "blue"), ("green", "green")] {
            try await wallet.add(type: "t", id: id, value: "v", tags: ["color": .string(color)])
        }
        // The index now claims the last record (green) is red.
        try await Self.alter(
            wallet,
            """
            UPDATE coffer_tags SET value = (SELECT value FROM coffer_tags WHERE item = (SELECT min(item) FROM coffer_tags))
            WHERE item = (SELECT max(item) FROM coffer_tags)
            """)
        await Self.expectIndexDisagrees {
            _ = try await PostgresTesting.all(wallet, type: "t", query: WalletQuery(json: #"{"color": "red"}"#))
        }
    }

    @Test("a search finds a record whose plaintext tag row was given another value: corrupted, not an empty result")
    func tamperedPlaintextTagRow() async throws {
        let wallet = try await PostgresWallet.create(settings: try PostgresTesting.settings("tampered-plain"), key: PostgresTesting.key)
        defer { wallet.close() }
        try await wallet.add(type: "t", id: "a", value: "v", tags: ["~age": "33"])
        try await wallet.add(type: "t", id: "b", value: "v", tags: ["~age": "44"])
        try await Self.alter(wallet, #"UPDATE coffer_tags SET value = '\x3939', num = 99 WHERE num = 33"#)
        await Self.expectIndexDisagrees {
            _ = try await PostgresTesting.all(wallet, type: "t", query: WalletQuery(json: #"{"~age": "99"}"#))
        }
    }

    @Test("removing the matches of a query reads a tampered tag row as corrupted and removes nothing")
    func tamperedTagRowRemoveAll() async throws {
        let wallet = try await PostgresWallet.create(settings: try PostgresTesting.settings("tampered-remove"), key: PostgresTesting.key)
        defer { wallet.close() }
        try await wallet.add(type: "t", id: "a", value: "v", tags: ["~age": "33"])
        try await wallet.add(type: "t", id: "b", value: "v", tags: ["~age": "44"])
        try await Self.alter(wallet, #"UPDATE coffer_tags SET value = '\x3434', num = 44 WHERE num = 33"#)
        await Self.expectIndexDisagrees { try await wallet.removeAll(type: "t", matching: WalletQuery(json: #"{"~age": "44"}"#)) }
        #expect(try await wallet.count(type: "t") == 2)
    }
}
#endif
