// The wallet's current keys, and the gate a key rotation closes while it re-seals every record.

import CofferSync
import Foundation

/// Hands out the wallet's keys to the calls that read and write with them, and lets a key
/// rotation wait until no call holds them, keep new ones out while it works, and then swap the
/// keys. Every call that touches rows with keys enters once (never nested) and leaves when its
/// SQLite work is done, so a call never mixes keys with rows of the other generation.
///
/// The calls enter the package's ``AsyncGate`` shared, a rotation exclusive; the keys change
/// only while a rotation holds it, so the keys a call reads after entering stay current until it
/// leaves.
final class KeyGate: Sendable {
    private struct State {
        var keys: WalletKeys
        var walletClosed = false
    }

    private let gate = AsyncGate()
    private let state: Locked<State>

    init(_ keys: WalletKeys) { state = Locked(State(keys: keys)) }

    /// The keys now (to compile a query; the search checks they are still current when it runs).
    var current: WalletKeys { state.withLock { $0.keys } }

    /// The keys, entering the gate; nil while a rotation holds it closed.
    func tryEnter() -> WalletKeys? {
        guard gate.tryEnterShared() else { return nil }
        return current
    }

    /// The keys, entering the gate (waiting while a rotation holds it closed).
    func enter() async -> WalletKeys {
        await gate.enterShared()
        return current
    }

    /// Leaves the gate entered by ``enter()`` or ``tryEnter()``.
    func leave() { gate.leaveShared() }

    /// Closes the gate for a rotation: waits for another rotation to finish, keeps new calls
    /// out, and returns once no call holds the keys.
    func close() async { await gate.enterExclusive() }

    /// Whether the wallet was closed (``markClosed()``): calls then throw `WalletError.closed`.
    var isWalletClosed: Bool { state.withLock { $0.walletClosed } }

    /// Records that the wallet closed.
    func markClosed() { state.withLock { $0.walletClosed = true } }

    /// Opens the gate again, with `newKeys` from now on when given.
    func open(with newKeys: WalletKeys?) {
        if let newKeys { state.withLock { $0.keys = newKeys } }
        gate.leaveExclusive()
    }
}
