// `PostgresWallet.transaction`: many calls on one connection in one PostgreSQL transaction, all
// committed together or none, as `Wallet.transaction` is on SQLite.

#if PostgreSQL
import CofferSync
import Foundation
import PostgresNIO

extension PostgresWallet {
    /// Runs `body` with a view of this profile whose every call runs on one pooled connection,
    /// inside one PostgreSQL transaction at isolation level REPEATABLE READ: everything it reads
    /// is one state of the database, and everything it writes is committed together when `body`
    /// returns, or rolled back when it throws (or the process dies, or the connection drops).
    /// The view is valid only inside `body`; do not close it.
    ///
    /// A write that conflicts with another transaction's (SQLSTATE 40001 or 40P01) fails the
    /// call with ``WalletError/storage(_:cause:)`` and nothing of `body` is kept: run it again.
    /// A write transaction holds the profile's key gate from its first statement (its catalogue row,
    /// locked `FOR KEY SHARE` at the generation of the key this wallet holds):
    /// a rotation waits for it, and one committed since this wallet was opened (by another wallet
    /// or process) fails it with ``WalletError/wrongKey(_:)`` before `body` runs.
    /// An error `body` throws rolls the transaction back and reaches the caller unchanged. An
    /// error the server raised fails the whole transaction, as PostgreSQL does: when `body`
    /// catches one and returns, nothing is committed and this throws
    /// ``WalletError/storage(_:cause:)`` (`ECANCELED`) naming it. Called
    /// on the view inside `body`, this runs `body` as part of the transaction already open.
    /// - Parameters:
    ///   - readOnly: a read-only transaction (searches, exports, checks): the server refuses any write.
    ///   - body: the work; its calls go through the view it is given.
    /// - Returns: what `body` returned.
    public func transaction<R: Sendable>(
        readOnly: Bool = false, _ body: @Sendable @escaping (PostgresWallet) async throws -> R
    ) async throws -> R {
        try await transaction(readOnly: readOnly, exclusive: false, body)
    }

    /// ``transaction(readOnly:_:)``; with `exclusive`, a READ COMMITTED transaction that first
    /// takes the profile's gate `FOR UPDATE` (``ProfileGate``): a rekey or rotation, which waits
    /// for the writes under way and then sees every one of them (a REPEATABLE READ snapshot
    /// would be taken before the wait and miss the records they added).
    func transaction<R: Sendable>(
        readOnly: Bool, exclusive: Bool, _ body: @Sendable @escaping (PostgresWallet) async throws -> R
    ) async throws -> R {
        try checkOpen()
        // A transaction's own view (a call such as `removeAll` or `search` made inside `body`)
        // joins the transaction it belongs to: a second BEGIN there would be ignored by the
        // server, and its COMMIT would commit the outer transaction's work half-way.
        if store.pinned != nil { return try await body(self) }
        let base = store
        let profile = self.profile
        let number = self.number
        let configuration = self.configuration
        let settings = store.settings
        // The keys the view seals under and the gate it holds: one value (a rotation by this
        // wallet meanwhile makes the gate refuse, never a record sealed under the old key).
        let held = sealing
        // What `body` threw reaches the caller as it was thrown, not as a storage error.
        return try await store.withConnection(keepingThrown: { connection, keep in
            let begin = exclusive ? "BEGIN" : "BEGIN ISOLATION LEVEL REPEATABLE READ" + (readOnly ? " READ ONLY" : "")
            try await connection.send(PostgresQuery(unsafeSQL: begin), logger: PostgresStore.logger)
            if !readOnly {
                // The gate's statement is the first, so it also takes a REPEATABLE READ
                // snapshot: when a rotation commits while it waits, the server fails it
                // (40001) and the retry finds the new generation.
                do { try await PostgresStore.holdGate(held.gate, on: connection, exclusive: exclusive) } catch {
                    _ = try? await connection.send("ROLLBACK", logger: PostgresStore.logger)
                    throw error
                }
            }
            var pinned = base
            pinned.pinned = connection
            let abort = PostgresAbort()
            pinned.abort = abort
            let view = PostgresWallet(
                profile: profile, store: pinned, number: number, keys: held.keys, generation: held.gate.generation, ownsClient: false,
                configuration: configuration)
            defer { view.close() }
            let result: R
            do {
                result = try await body(view)
            } catch {
                _ = try? await connection.send("ROLLBACK", logger: PostgresStore.logger)
                keep(error)
                throw error
            }
            // A server error `body` caught has failed the transaction: the server would roll it
            // back at COMMIT without an error.
            if !readOnly, let failure = abort.failure {
                _ = try? await connection.send("ROLLBACK", logger: PostgresStore.logger)
                throw WalletError.storage(
                    "a statement of this transaction failed on PostgreSQL at \(settings.label) (\(failure)), which rolled the whole transaction back, although the body caught the error and returned; nothing of it was kept: run it again",
                    cause: StorageCause(posix: .ECANCELED))
            }
            do {
                try await connection.send("COMMIT", logger: PostgresStore.logger)
            } catch {
                _ = try? await connection.send("ROLLBACK", logger: PostgresStore.logger)
                // Mapped here, so that no retry (a conflict at commit) runs `body` a second time;
                // a connection that ended once the COMMIT was sent leaves the outcome unknown.
                throw PostgresStore.mapInLease(error, settings: settings)
            }
            return result
        })
    }

    /// Runs `body` as a call of this wallet: refused once closed, the driver's errors mapped to
    /// ``WalletError``.
    func call<R>(_ body: () async throws -> R) async throws -> R {
        try checkOpen()
        do { return try await body() } catch { throw PostgresStore.map(error, settings: store.settings) }
    }
}
#endif
