// `PostgresWallet.withConnection`: many calls on one held connection, each committed on its own
// (Askar's session), so a loop of calls pays no pool lease per call.

#if PostgreSQL
import CofferSync
import Foundation
import PostgresNIO

extension PostgresWallet {
    /// Runs `body` with a view of this profile whose calls all run on one pooled connection,
    /// held until `body` returns. Each call commits on its own, as it does on the wallet; what the
    /// view saves is the pool's lease per call (with postgres-nio's timers, 50–80 µs of a point
    /// read here). Askar calls this a session: a server handler or a loop that makes many calls
    /// in a row is the case for it.
    ///
    /// The view's statements take turns on the connection: concurrent calls on it wait for each
    /// other's statements (a connection runs one at a time anyway), without the lease timeout's
    /// bound, and a call whose task was cancelled while it waited fails (as a cancelled call on the
    /// wallet does: ``WalletError/storage(_:cause:)`` with `ECANCELED`) and writes nothing. A ``transaction(readOnly:_:)`` on the view runs on the held connection and
    /// holds it until it ends; inside its body, make calls on the transaction's view, not on this
    /// one (such a call throws ``WalletError/invalidInput(_:)`` rather than wait for itself). The
    /// view shares the wallet's keys, so a rotation by either is seen by both. The view is valid
    /// only inside `body` (do not close it, and do not observe it: observe the wallet): when
    /// `body` returns, the statement in progress finishes and every later one throws
    /// ``WalletError/closed``, so a task `body` leaves running can see its call fail part way
    /// (await such tasks inside `body`). If the connection drops, the view's later calls fail as
    /// the server being unavailable: return and call this again. A write on the view whose
    /// statement (or `COMMIT`) had reached the server when the connection dropped fails with
    /// `ECONNRESET`, its outcome unknown: read it back before writing it again. Called on a view inside `body`,
    /// this runs `body` with that view; on a transaction's view, it runs `body` with that view,
    /// inside the transaction.
    ///
    /// ```swift
    /// try await wallet.withConnection { view in
    ///     for id in ids { try await view.delete(type: "offer", id: id) }
    /// }
    /// ```
    /// - Parameter body: the work; its calls go through the view it is given.
    /// - Returns: what `body` returned.
    public func withConnection<R: Sendable>(_ body: @Sendable @escaping (PostgresWallet) async throws -> R) async throws -> R {
        try checkOpen()
        if store.pinned != nil || store.held != nil { return try await body(self) }
        let base = store
        let profile = self.profile
        let number = self.number
        let configuration = self.configuration
        let held = sealing
        let shared = current
        // What `body` threw reaches the caller as it was thrown, not as a storage error.
        return try await store.withConnection(keepingThrown: { connection, keep in
            let holder = PostgresHeldConnection(connection)
            var heldStore = base
            heldStore.held = holder
            let view = PostgresWallet(
                profile: profile, store: heldStore, number: number, keys: held.keys, generation: held.gate.generation,
                ownsClient: false, configuration: configuration, sharing: shared)
            defer { view.close() }
            do {
                let result = try await body(view)
                // The statement still running (from a task `body` left behind) ends
                // before the connection goes back to the pool; later ones are refused.
                await holder.end()
                return result
            } catch {
                await holder.end()
                keep(error)
                throw error
            }
        })
    }
}

/// The connection a ``PostgresWallet/withConnection(_:)`` view holds: its statements (a
/// transaction counts as one) run on it one at a time, in arrival order (the package's async
/// gate, entered alone), and none after the view has ended.
final class PostgresHeldConnection: Sendable {
    private let connection: PostgresConnection
    private let gate = AsyncGate()
    private let ended = Locked(false)

    /// One turn on a held connection, while it lasts.
    private final class Turn: Sendable {
        let holder: PostgresHeldConnection
        private let active = Locked(true)
        init(_ holder: PostgresHeldConnection) { self.holder = holder }
        var isActive: Bool { active.withLock { $0 } }
        func finish() { active.withLock { $0 = false } }
    }

    /// The turns the current task is inside, innermost last: a call made from one of them on the
    /// same view would wait for itself. A task started inside a turn inherits them; a turn that
    /// has ended no longer counts.
    @TaskLocal private static var turns: [Turn] = []

    init(_ connection: PostgresConnection) { self.connection = connection }

    /// Runs `body` on the connection once no other call of the view is on it.
    /// - Throws: ``WalletError/closed`` once the view has ended; ``WalletError/invalidInput(_:)``
    ///   for a call made from inside another call's work on the same view (a transaction's body).
    func run<R: Sendable>(_ body: @Sendable (PostgresConnection) async throws -> R) async throws -> R {
        if Self.turns.contains(where: { $0.holder === self && $0.isActive }) {
            throw WalletError.invalidInput(
                "a call on a withConnection view from inside a transaction on that view would wait for itself: make it on the transaction's view"
            )
        }
        await gate.enterExclusive()
        defer { gate.leaveExclusive() }
        if ended.withLock({ $0 }) { throw WalletError.closed }
        // A task cancelled while it waited for its turn writes nothing.
        try Task.checkCancellation()
        let turn = Turn(self)
        defer { turn.finish() }
        // The call's own statements decide what its error says: the lease's log also counts
        // the view's earlier calls, which committed on their own.
        let log = PostgresLeaseLog(within: PostgresLeaseLog.current)
        do {
            return try await Self.$turns.withValue(Self.turns + [turn]) {
                try await PostgresLeaseLog.$current.withValue(log) { try await body(connection) }
            }
        } catch {
            // Never run again (a view's calls are not): a write may have been kept.
            throw log.unknownOutcome(error) ?? error
        }
    }

    /// Waits for the statement (or transaction) on the connection, if any, and refuses every later one.
    func end() async {
        await gate.enterExclusive()
        ended.withLock { $0 = true }
        gate.leaveExclusive()
    }
}
#endif
