// Serialization failures and deadlocks (SQLSTATE 40001, 40P01) raised by the real server: a
// trigger on the wallet's item table fails the first inserts with the code under test (counted
// by a sequence, which a rollback does not undo), so the retries are seen from the server's side.

#if PostgreSQL
import CofferSync
import CofferTestSupport
import Foundation
import PostgresNIO
import Testing

@testable import CofferWallet

extension PostgresWalletTests {
    /// Makes the next `failures` inserts into `coffer_items` fail with SQLSTATE `code`; returns a
    /// function giving how many inserts were tried since.
    static func failInserts(_ wallet: PostgresWallet, code: String, failures: Int) async throws -> @Sendable () async throws -> Int {
        try await wallet.store.withConnection { connection in
            for statement in [
                "CREATE SEQUENCE coffer_test_attempts",
                """
                CREATE FUNCTION coffer_test_fail() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    IF nextval('coffer_test_attempts') <= \(failures) THEN
                        RAISE EXCEPTION 'injected by the test' USING ERRCODE = '\(code)';
                    END IF;
                    RETURN NEW;
                END $$
                """,
                "CREATE TRIGGER coffer_test_fail BEFORE INSERT ON coffer_items FOR EACH ROW EXECUTE FUNCTION coffer_test_fail()",
            ] {
                try await connection.query(PostgresQuery(unsafeSQL: statement), logger: PostgresStore.logger)
            }
        }
        return {
            try await wallet.store.withConnection { connection in
                let rows = try await connection.query(
                    "SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM coffer_test_attempts", logger: PostgresStore.logger)
                for try await value in rows.decode(Int.self) { return value }
                return -1
            }
        }
    }

    @Test("an add the server fails twice with a serialization failure (40001) is tried again and written once")
    func retriedSerializationFailure() async throws {
        let wallet = try await PostgresWallet.create(settings: try PostgresTesting.settings("retry"), key: PostgresTesting.key)
        defer { wallet.close() }
        let attempts = try await Self.failInserts(wallet, code: "40001", failures: 2)
        try await wallet.add(type: "r", id: "a", value: "v")
        #expect(try await attempts() == 3)
        #expect(try await wallet.fetch(type: "r", id: "a")?.value == "v")
        #expect(try await wallet.count(type: "r") == 1)
    }

    @Test("an add the server fails once with a deadlock (40P01) is tried again and written once")
    func retriedDeadlock() async throws {
        let wallet = try await PostgresWallet.create(settings: try PostgresTesting.settings("retry"), key: PostgresTesting.key)
        defer { wallet.close() }
        let attempts = try await Self.failInserts(wallet, code: "40P01", failures: 1)
        try await wallet.add(type: "r", id: "a", value: "v")
        #expect(try await attempts() == 2)
        #expect(try await wallet.count(type: "r") == 1)
    }

    @Test("an add that keeps failing with 40001 stops after five retries with EAGAIN, and nothing is written")
    func retriesExhausted() async throws {
        let wallet = try await PostgresWallet.create(settings: try PostgresTesting.settings("retry"), key: PostgresTesting.key)
        defer { wallet.close() }
        let attempts = try await Self.failInserts(wallet, code: "40001", failures: 1_000)
        do {
            try await wallet.add(type: "r", id: "a", value: "v")
            Issue.record("the add succeeded although every attempt failed")
        } catch let WalletError.storage(message, cause) {
            #expect(cause?.posix == .EAGAIN)
            #expect(message.contains("nothing was written") && message.contains("retry"), "\(message)")
        }
        #expect(try await attempts() == 1 + PostgresStore.retries)
        #expect(try await wallet.count(type: "r") == 0)
    }

    @Test(
        "a transaction whose insert fails with 40001 is not run again behind the caller's back: EAGAIN, nothing kept, and it runs when retried"
    )
    func transactionSerializationFailure() async throws {
        let wallet = try await PostgresWallet.create(settings: try PostgresTesting.settings("retry"), key: PostgresTesting.key)
        defer { wallet.close() }
        let attempts = try await Self.failInserts(wallet, code: "40001", failures: 1)
        let runs = Locked(0)
        do {
            try await wallet.transaction { view in
                runs.withLock { $0 += 1 }
                try await view.add(type: "r", id: "first", value: "v")
            }
            Issue.record("the transaction succeeded although its insert failed")
        } catch let WalletError.storage(_, cause) {
            #expect(cause?.posix == .EAGAIN)
        }
        #expect(runs.withLock { $0 } == 1)
        #expect(try await attempts() == 1)
        #expect(try await wallet.count(type: "r") == 0)
        try await wallet.transaction { view in try await view.add(type: "r", id: "first", value: "v") }
        #expect(try await wallet.count(type: "r") == 1)
    }

    @Test("a transaction whose body catches a server error and returns is refused, and keeps nothing of what it wrote before the error")
    func caughtServerErrorRefusesCommit() async throws {
        let wallet = try await PostgresWallet.create(settings: try PostgresTesting.settings("retry"), key: PostgresTesting.key)
        defer { wallet.close() }
        try await wallet.add(type: "r", id: "before", value: "v")
        // Every insert from now on fails on the server (not a conflict: nothing retries it).
        _ = try await Self.failInserts(wallet, code: "P0001", failures: 1_000)
        do {
            try await wallet.transaction { view in
                try await view.update(type: "r", id: "before", value: "changed")
                do { try await view.add(type: "r", id: "refused", value: "v") } catch {}
            }
            Issue.record("the transaction reported a commit that PostgreSQL rolled back")
        } catch let WalletError.storage(message, _) {
            #expect(message.contains("rolled the whole transaction back") && message.contains("P0001"), "\(message)")
        }
        #expect(try await wallet.fetch(type: "r", id: "before")?.value == "v")
    }

    @Test("a read first prepared inside a transaction the server has failed does not break that read on its connection afterwards")
    func preparationInFailedTransaction() async throws {
        // One pooled connection: the read after the transaction runs where the failed preparation did.
        let wallet = try await PostgresWallet.create(
            settings: try PostgresTesting.settings("retry", maxConnections: 1), key: PostgresTesting.key)
        defer { wallet.close() }
        try await wallet.add(type: "r", id: "before", value: "v")
        _ = try await Self.failInserts(wallet, code: "P0001", failures: 1_000)
        await #expect(throws: WalletError.self) {
            try await wallet.transaction { view in
                do { try await view.add(type: "r", id: "refused", value: "v") } catch {}
                _ = try? await view.fetch(type: "r", id: "before") // its first preparation, refused (25P02)
            }
        }
        #expect(try await wallet.fetch(type: "r", id: "before")?.value == "v")
    }

    @Test("a server error inside an addAll's savepoint, rolled back to, leaves the transaction able to commit what came after")
    func savepointRollbackKeepsTransaction() async throws {
        let wallet = try await PostgresWallet.create(settings: try PostgresTesting.settings("retry"), key: PostgresTesting.key)
        defer { wallet.close() }
        _ = try await Self.failInserts(wallet, code: "P0001", failures: 1)
        try await wallet.transaction { view in
            await #expect(throws: WalletError.self) {
                try await view.addAll([(type: "r", id: "in-savepoint", value: "v", tags: [:])])
            }
            try await view.add(type: "r", id: "after", value: "v")
        }
        #expect(try await PostgresTesting.all(wallet, type: "r") == ["after"])
    }
}
#endif
