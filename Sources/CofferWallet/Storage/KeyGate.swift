// The wallet's current keys, and the gate a key rotation closes while it re-seals every record.

import CofferSync
import Foundation

/// Hands out the wallet's keys to the calls that read and write with them, and lets a key
/// rotation wait until no call holds them, keep new ones out while it works, and then swap the
/// keys. Every call that touches rows with keys enters once (never nested) and leaves when its
/// SQLite work is done, so a call never mixes keys with rows of the other generation.
final class KeyGate: @unchecked Sendable {
    // All guarded by `lock`.
    private let lock = Lock()
    private var keys: WalletKeys
    private var active = 0
    private var closed = false
    private var walletClosed = false
    private var waiting = [CheckedContinuation<Void, Never>]()
    private var drained: CheckedContinuation<Void, Never>?

    init(_ keys: WalletKeys) { self.keys = keys }

    /// The keys now (to compile a query; the search checks they are still current when it runs).
    var current: WalletKeys { lock.withLock { keys } }

    /// The keys, entering the gate; nil while a rotation holds it closed.
    func tryEnter() -> WalletKeys? {
        lock.withLock {
            if closed { return nil }
            active += 1
            return keys
        }
    }

    /// The keys, entering the gate (waiting while a rotation holds it closed).
    func enter() async -> WalletKeys {
        while true {
            if let keys = tryEnter() { return keys }
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                let now = lock.withLock { () -> Bool in
                    if !closed { return true }
                    waiting.append(c)
                    return false
                }
                if now { c.resume() }
            }
        }
    }

    /// Leaves the gate entered by ``enter()`` or ``tryEnter()``.
    func leave() {
        let resume = lock.withLock { () -> CheckedContinuation<Void, Never>? in
            active -= 1
            guard active == 0, let d = drained else { return nil }
            drained = nil
            return d
        }
        resume?.resume()
    }

    /// Closes the gate for a rotation: waits for another rotation to finish, keeps new calls
    /// out, and returns once no call holds the keys.
    func close() async {
        while true {
            let won = lock.withLock { () -> Bool in
                if closed { return false }
                closed = true
                return true
            }
            if won { break }
            _ = await enter()
            leave()
        }
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let now = lock.withLock { () -> Bool in
                if active == 0 { return true }
                drained = c
                return false
            }
            if now { c.resume() }
        }
    }

    /// Whether the wallet was closed (``markClosed()``): calls then throw `WalletError.closed`.
    var isWalletClosed: Bool { lock.withLock { walletClosed } }

    /// Records that the wallet closed.
    func markClosed() { lock.withLock { walletClosed = true } }

    /// Opens the gate again, with `newKeys` from now on when given.
    func open(with newKeys: WalletKeys?) {
        let resume = lock.withLock { () -> [CheckedContinuation<Void, Never>] in
            if let newKeys { keys = newKeys }
            closed = false
            defer { waiting.removeAll() }
            return waiting
        }
        for c in resume { c.resume() }
    }
}
