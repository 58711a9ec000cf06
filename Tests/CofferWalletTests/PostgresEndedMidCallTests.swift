// A call whose statement is running on the server when its connection is ended: what the error
// says. The statement is held on a lock another connection holds (ACCESS EXCLUSIVE on
// coffer_items; for a COMMIT, an advisory lock a deferred trigger waits for), its backend is ended
// with pg_terminate_backend, then the lock is let go.

#if PostgreSQL
import CofferSync
import CofferTestSupport
import Foundation
import PostgresNIO
import Testing

@testable import CofferWallet

extension PostgresWalletTests {
    /// Runs `call` while another connection's transaction holds a lock (by default every lock on
    /// the item table; `holding` is the statement that takes it), ends the backend that waits for
    /// it, and returns the call's error (nil when it succeeded).
    static func endedWhileWaiting(
        _ wallet: PostgresWallet, holding: String = "LOCK TABLE coffer_items IN ACCESS EXCLUSIVE MODE",
        _ call: @Sendable @escaping () async throws -> Void
    ) async throws -> (any Error)? {
        let locked = Locked(false)
        let release = Locked(false)
        // Let go however this ends, so the holder's connection never stays taken.
        defer { release.withLock { $0 = true } }
        let holder = Task {
            try await wallet.store.withConnection { connection in
                try await connection.query("BEGIN", logger: PostgresStore.logger)
                try await connection.query(PostgresQuery(unsafeSQL: holding), logger: PostgresStore.logger)
                locked.withLock { $0 = true }
                while !release.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(10)) }
                try await connection.query("ROLLBACK", logger: PostgresStore.logger)
            }
        }
        try await eventually("the lock is held") { locked.withLock { $0 } }
        let outcome = Locked<(any Error)?>(nil)
        let running = Task {
            do { try await call() } catch { outcome.withLock { $0 = error } }
        }
        try await endBackend(
            wallet, "the call waits for the lock on the server",
            from: "FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database() AND pid <> pg_backend_pid()")
        release.withLock { $0 = true }
        try await holder.value
        try await finished(running, "the ended call", within: .seconds(60))
        return outcome.withLock { $0 }
    }

    /// Waits until the server shows exactly one backend in `activity` (a `FROM pg_stat_activity
    /// WHERE …` clause; `what` names it for a failure), then ends it with `pg_terminate_backend`:
    /// the proof that the kill lands while that statement is on the server.
    static func endBackend(_ wallet: PostgresWallet, _ what: String, from activity: String) async throws {
        try await eventually(what) {
            try await wallet.store.withConnection { connection in
                for try await n in try await connection.query(
                    PostgresQuery(unsafeSQL: "SELECT count(*) \(activity)"), logger: PostgresStore.logger
                )
                .decode(Int.self) {
                    return n == 1
                }
                return false
            }
        }
        _ = try await wallet.store.withConnection { connection in
            try await connection.query(
                PostgresQuery(unsafeSQL: "SELECT pg_terminate_backend(pid) \(activity)"), logger: PostgresStore.logger)
        }
    }

    /// The message and cause of a storage error; records an issue (and gives nil) for anything else.
    static func storageFailure(_ error: (any Error)?) -> (message: String, cause: StorageCause?)? {
        guard case .storage(let message, let cause)? = error as? WalletError else {
            Issue.record("expected a storage error, got \(String(describing: error))")
            return nil
        }
        return (message, cause)
    }

    @Test(
        "an add whose statement had reached the server when its connection was ended says that whether it was kept is unknown (ECONNRESET), not that nothing was written"
    )
    func endedMidAutocommitWrite() async throws {
        let wallet = try await PostgresWallet.create(settings: try PostgresTesting.settings("ended-write"), key: PostgresTesting.key)
        defer { wallet.close() }
        try await wallet.add(type: "r", id: "before", value: "v")
        let error = try await Self.endedWhileWaiting(wallet) { try await wallet.add(type: "r", id: "blocked", value: "v") }
        guard let (message, cause) = Self.storageFailure(error) else { return }
        #expect(cause?.posix == .ECONNRESET)
        #expect(message.contains("whether it was kept is unknown") && message.contains("read it back"), "\(message)")
        #expect(!message.contains("nothing was written"), "\(message)")
        // It never ran (it waited for the lock), and the wallet goes on.
        try await wallet.add(type: "r", id: "after", value: "v")
        #expect(try await PostgresTesting.all(wallet, type: "r").sorted() == ["after", "before"])
    }

    @Test(
        "an add on a withConnection view whose statement had reached the server when its connection was ended says that whether it was kept is unknown (ECONNRESET)"
    )
    func endedMidViewWrite() async throws {
        let wallet = try await PostgresWallet.create(settings: try PostgresTesting.settings("ended-view-write"), key: PostgresTesting.key)
        defer { wallet.close() }
        let error = try await Self.endedWhileWaiting(wallet) {
            try await wallet.withConnection { view in try await view.add(type: "r", id: "blocked", value: "v") }
        }
        guard let (message, cause) = Self.storageFailure(error) else { return }
        #expect(cause?.posix == .ECONNRESET)
        #expect(message.contains("whether it was kept is unknown"), "\(message)")
        #expect(!message.contains("nothing was written"), "\(message)")
        #expect(try await wallet.count(type: "r") == 0)
    }

    @Test(
        "a transaction whose COMMIT had reached the server when its connection was ended says that whether it was kept is unknown (ECONNRESET)"
    )
    func endedMidCommit() async throws {
        let wallet = try await PostgresWallet.create(settings: try PostgresTesting.settings("ended-commit"), key: PostgresTesting.key)
        defer { wallet.close() }
        // A deferred trigger that waits at COMMIT for an advisory lock the test holds.
        try await wallet.store.withConnection { connection in
            for statement in [
                """
                CREATE FUNCTION coffer_test_wait() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    PERFORM pg_advisory_xact_lock(4242);
                    RETURN NULL;
                END $$
                """,
                """
                CREATE CONSTRAINT TRIGGER coffer_test_wait AFTER INSERT ON coffer_items DEFERRABLE INITIALLY DEFERRED
                FOR EACH ROW EXECUTE FUNCTION coffer_test_wait()
                """,
            ] {
                try await connection.query(PostgresQuery(unsafeSQL: statement), logger: PostgresStore.logger)
            }
        }
        let error = try await Self.endedWhileWaiting(wallet, holding: "SELECT pg_advisory_xact_lock(4242)") {
            try await wallet.transaction { view in try await view.add(type: "r", id: "committing", value: "v") }
        }
        guard let (message, cause) = Self.storageFailure(error) else { return }
        #expect(cause?.posix == .ECONNRESET)
        #expect(message.contains("whether it was kept is unknown"), "\(message)")
        // Ended while its COMMIT waited: the server rolled it back.
        #expect(try await wallet.count(type: "r") == 0)
    }

    @Test("a read whose statement was waiting on the server when its connection was ended runs again on another connection")
    func endedMidRead() async throws {
        let wallet = try await PostgresWallet.create(settings: try PostgresTesting.settings("ended-read"), key: PostgresTesting.key)
        defer { wallet.close() }
        try await wallet.add(type: "r", id: "a", value: "v")
        let read = Locked<String?>(nil)
        let error = try await Self.endedWhileWaiting(wallet) {
            let value = try await wallet.fetch(type: "r", id: "a")?.value
            read.withLock { $0 = value }
        }
        #expect(error == nil, "\(String(describing: error))")
        #expect(read.withLock { $0 } == "v")
    }

    @Test(
        "a write transaction whose statement was waiting when its connection was ended, before its COMMIT, fails as unavailable and keeps nothing"
    )
    func endedMidTransaction() async throws {
        let wallet = try await PostgresWallet.create(settings: try PostgresTesting.settings("ended-txn"), key: PostgresTesting.key)
        defer { wallet.close() }
        let error = try await Self.endedWhileWaiting(wallet) {
            try await wallet.transaction { view in
                try await view.add(type: "r", id: "one", value: "v")
                try await view.add(type: "r", id: "two", value: "v")
            }
        }
        guard let (message, cause) = Self.storageFailure(error) else { return }
        #expect(cause?.posix == .ECONNREFUSED)
        #expect(message.contains("is unavailable"), "\(message)")
        #expect(try await wallet.count(type: "r") == 0)
    }
}

@Suite("PostgreSQL: which sent statements could have written")
struct PostgresLeaseLogTests {
    @Test(
        "an autocommit write or a write transaction's COMMIT could have written; reads, read-only transactions and a transaction not committed could not",
        arguments: [
            (["WITH g AS (SELECT 1), item AS (INSERT INTO coffer_items …) SELECT 1"], true),
            (["  \n  insert into coffer_items VALUES (1)"], true),
            (["DELETE FROM coffer_tags WHERE item = 1"], true),
            (["BEGIN", "WITH item AS (INSERT …) SELECT 1", "COMMIT"], true),
            (["BEGIN", "WITH item AS (INSERT …) SELECT 1"], false),
            (["BEGIN", "WITH item AS (INSERT …) SELECT 1", "ROLLBACK"], false),
            (["BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", "SELECT 1", "COMMIT"], false),
            (["SELECT id, value FROM coffer_items WHERE profile = $1"], false),
            (["BEGIN", "ROLLBACK", "UPDATE coffer_items SET value = $1"], true),
        ])
    func classifies(_ statements: [String], _ mayHaveWritten: Bool) {
        let log = PostgresLeaseLog()
        for sql in statements { log.note(sql) }
        #expect(log.mayHaveWritten == mayHaveWritten, "\(statements)")
        #expect(log.sent == statements.count)
    }
}
#endif
