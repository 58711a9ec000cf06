// Opened key pairs of the keys a wallet holds, kept per verkey so signing and opening do not
// read, decrypt and expand the stored key on every call.

import CofferCrypto
import CofferSync
import Foundation

/// A held key, opened: its kind and the key pair its secret determines. The pairs keep their
/// secrets in `SecretKey` storage, which is wiped when the last reference goes.
enum OpenedKey: Sendable {
    /// An Ed25519 signing pair; `agreement` is its X25519 conversion (made once, for boxes).
    case ed25519(Ed25519KeyPair, agreement: X25519KeyPair)
    /// An X25519 key-agreement pair.
    case x25519(X25519KeyPair)

    var kind: WalletKeyKind {
        switch self {
        case .ed25519: return .ed25519
        case .x25519: return .x25519
        }
    }

    /// The X25519 pair for boxes and sealed boxes.
    var agreementPair: X25519KeyPair {
        switch self {
        case .ed25519(_, let agreement): return agreement
        case .x25519(let pair): return pair
        }
    }

    /// Opens a stored key (its 32 secret bytes) of `kind`.
    init(kind: WalletKeyKind, secret: SecretKey) throws(CryptoError) {
        switch kind {
        case .ed25519:
            let pair = try Ed25519KeyPair(seed: secret)
            self = .ed25519(pair, agreement: pair.keyAgreementKeyPair())
        case .x25519:
            self = .x25519(try X25519KeyPair(secretKey: secret))
        }
    }
}

/// The opened keys of one wallet, by verkey. Entries are dropped when the key is removed through
/// the wallet and all at once when the wallet closes, so their secrets are wiped then (nothing
/// else holds the pairs beyond a single call). At most `capacity` keys are kept; past that the
/// cache is emptied and refilled on use.
final class HeldKeyCache: Sendable {
    private struct State {
        var opened = [String: OpenedKey]()
        /// Verkeys removed through this wallet: a read that raced the removal cannot cache them
        /// again (verkeys are random, so a removed one never comes back in this wallet).
        var retired = Set<String>()
        var closed = false
    }

    private let state = Locked(State())
    let capacity: Int

    init(capacity: Int = 256) { self.capacity = capacity }

    /// The opened key for `verkey`, if cached.
    func get(_ verkey: String) -> OpenedKey? { state.withLock { $0.opened[verkey] } }

    /// Keeps `key` for `verkey` (not after the wallet closed, nor for a removed key).
    func put(_ verkey: String, _ key: OpenedKey) {
        let capacity = capacity
        state.withLock { state in
            guard !state.closed, !state.retired.contains(verkey) else { return }
            if state.opened.count >= capacity, state.opened[verkey] == nil { state.opened.removeAll() }
            state.opened[verkey] = key
        }
    }

    /// Forgets `verkey`'s opened key; with `retire`, never caches it again (the key was removed).
    func remove(_ verkey: String, retire: Bool = false) {
        state.withLock { state in
            state.opened.removeValue(forKey: verkey)
            if retire { state.retired.insert(verkey) }
        }
    }

    /// Forgets every opened key and keeps none from now on (the wallet closed).
    func close() {
        state.withLock { state in
            state.opened.removeAll()
            state.closed = true
        }
    }

    /// How many keys are cached (for tests).
    var count: Int { state.withLock { $0.opened.count } }
}
