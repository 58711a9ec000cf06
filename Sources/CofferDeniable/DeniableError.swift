// The one error type of CofferDeniable, and its configuration.

import CofferCrypto
import CofferSync
import Foundation

@_exported import struct CofferSync.StorageCause

/// Errors of deniable storage. Messages name what was wrong and never include key material,
/// passphrases or message text.
public enum DeniableError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The passphrase did not open the vault. A wrong passphrase and a vault that was never used
    /// give this same error after the same work, so the two cannot be told apart.
    case unlockFailed
    /// The operation needs an unlocked session.
    case locked
    /// A passphrase is malformed or holds a word that is not in the word list.
    case invalidPassphrase(String)
    /// An argument was rejected (the message names it).
    case invalidInput(String)
    /// The sending queue holds only real messages; nothing can be added until one is sent.
    case queueFull
    /// No verified public key is available for the operation (fetch the keys first).
    case noVerifiedKeys(String)
    /// A file of deniable storage is damaged or not in the expected format.
    case corrupted(String)
    /// The secure element refused or failed (the message says why).
    case secureElement(String)
    /// Reading or writing a file failed.
    /// `cause` keeps the system's error number or SQLite's result code underneath (nil when
    /// there was none), so a caller can tell a full disk from a refused permission.
    case storage(String, cause: StorageCause? = nil)

    /// What went wrong.
    public var description: String {
        switch self {
        case .unlockFailed: return "the passphrase did not unlock the vault"
        case .locked: return "the session is locked: unlock it with the passphrase first"
        case .invalidPassphrase(let m): return "invalid passphrase: \(m)"
        case .invalidInput(let m): return "invalid input: \(m)"
        case .queueFull: return "the sending queue is full of messages waiting to be sent"
        case .noVerifiedKeys(let m): return "no verified public keys: \(m)"
        case .corrupted(let m): return "corrupted: \(m)"
        case .secureElement(let m): return "secure element: \(m)"
        case .storage(let m, _): return "storage: \(m)"
        }
    }
}

/// Sizes, costs and time limits of deniable storage. The defaults are the values CoverDrop's
/// clients use today: messages and dead drops kept 14 days, public keys fetched again after an
/// hour, dead drops fetched at most hourly (at start and on return to the foreground), five
/// minutes in the background before the session ends, and the background sender's cadence (2
/// items per run, runs at least an hour apart, a random delay of 5–120 minutes with mean 10).
/// ``seed`` holds the seed document's values (7 days, 7 days, 24 hours, locked at once).
public struct DeniableConfiguration: Sendable, Equatable {
    /// Bytes of the vault's padded plaintext; the vault file is this plus ``Vault/overhead``.
    public var vaultContentBytes = 512 * 1024
    /// Words in a generated passphrase (CoverDrop without a hardware secure element: 5, which is
    /// the default here, the default secure element being a key file beside the vault; with a
    /// hardware element CoverDrop uses 3, see ``hardwareSecureElement``; the seed: 3).
    public var passphraseWordCount = 5
    /// Argon2id costs for the passphrase (CoverDrop without a hardware secure element: 4 passes
    /// over 256 MiB, `Argon2idParameters.coverDrop`). Stored in the vault, which keeps opening
    /// when the default changes; an install keeps the costs its first start chose.
    public var passphraseKDF = Argon2idParameters.coverDrop
    /// Sequential key agreements with the secure element in every vault-key derivation
    /// (``DeviceCost``; CoverDrop's iOS app: 200, about a second in the Secure Enclave). Stored in
    /// the vault, as the Argon2id costs are.
    public var secureElementRounds = DeviceCost.defaultRounds
    /// Slots of the private sending queue.
    public var queueSlots = 8
    /// Bytes of one queue item: CoverDrop's user-to-CoverNode message, 773 (the only value accepted).
    public var queueItemBytes = 773
    /// Bytes of one dead-drop slot: CoverDrop's journalist-to-user TwoPartyBox, 553 (the only value accepted).
    public var deadDropMessageBytes = 553
    /// How long a mailbox message is kept after its date (CoverDrop: 14 days).
    public var mailboxRetention: TimeInterval = 14 * 86_400
    /// How far back from the newest dead drop dead drops are kept (CoverDrop: 14 days).
    public var deadDropRetention: TimeInterval = 14 * 86_400
    /// Dead drops kept at most (the oldest go first; CoverDrop's hourly dead drops over 14 days
    /// are 336).
    public var deadDropMaxStored = 1_000
    /// A dead drop dated further than this in the future is refused.
    public var deadDropMaxFutureSkew: TimeInterval = 7 * 86_400
    /// Cached public keys older than this are fetched again at start (CoverDrop: 1 hour).
    public var publicKeyMaxAge: TimeInterval = 3_600
    /// Dead drops are fetched at start and on return to the foreground, at most this often
    /// (CoverDrop: 1 hour; 0: at every start).
    public var deadDropFetchInterval: TimeInterval = 3_600
    /// How long the app may stay in the background before the session ends (0: at once;
    /// CoverDrop: 5 minutes).
    public var backgroundGrace: TimeInterval = 300
    /// An optional limit on how long a session lasts after unlocking.
    public var sessionLifetime: TimeInterval?
    /// Queue items the background sender sends per run (CoverDrop: 2).
    public var backgroundItemsPerRun = 2
    /// The least time between two successful background runs (CoverDrop: 60 minutes).
    public var backgroundMinInterval: TimeInterval = 3_600
    /// Mean of the exponential random delay before a background run (CoverDrop: 10 minutes).
    public var backgroundDelayMean: TimeInterval = 600
    /// The random delay is at least this (CoverDrop: 5 minutes).
    public var backgroundDelayMinimum: TimeInterval = 300
    /// The random delay is at most this (CoverDrop: 120 minutes).
    public var backgroundDelayMaximum: TimeInterval = 7_200
    /// The failsafe run owed at an app start when none is owed comes this much later than the
    /// random delay (CoverDrop: 10 minutes).
    public var backgroundStartExtraDelay: TimeInterval = 600

    /// CoverDrop's values (the defaults).
    public init() {}

    /// The values CoverDrop's code uses today (the same as ``init()``).
    public static var coverDropCurrent: DeniableConfiguration { DeniableConfiguration() }

    /// CoverDrop's values for a device whose secure element is hardware (an app passing
    /// `SecureEnclaveElement` on Apple devices): 3-word passphrases and Argon2id 2 × 256 MiB
    /// before the 200 rounds in the element, as CoverDrop's apps do where a guess costs secure-
    /// element time. Not for ``FileSecureElement``, whose rounds cost a copier of the folder
    /// only CPU time.
    public static var hardwareSecureElement: DeniableConfiguration {
        var c = DeniableConfiguration()
        c.passphraseWordCount = 3
        c.passphraseKDF = Argon2idParameters(
            opsLimit: Argon2idParameters.interactive.opsLimit, memLimit: Argon2idParameters.coverDrop.memLimit)
        return c
    }

    /// The seed document's values: messages and dead drops kept 7 days, keys fetched again
    /// after 24 hours, dead drops fetched at every start, the session ends as soon as the app
    /// goes to the background, 3-word passphrases. The background sender keeps CoverDrop's cadence.
    public static var seed: DeniableConfiguration {
        var c = DeniableConfiguration()
        c.mailboxRetention = 7 * 86_400
        c.deadDropRetention = 7 * 86_400
        c.publicKeyMaxAge = 86_400
        c.deadDropFetchInterval = 0
        c.backgroundGrace = 0
        c.passphraseWordCount = 3
        c.passphraseKDF = .moderate
        return c
    }

    /// Checks that every size and limit is usable.
    /// - Throws: ``DeniableError/invalidInput(_:)`` naming the first bad field.
    public func validate() throws(DeniableError) {
        guard vaultContentBytes >= 1024, vaultContentBytes <= 64 << 20 else {
            throw .invalidInput("vaultContentBytes must be 1 KiB…64 MiB, got \(vaultContentBytes)")
        }
        guard (1...24).contains(passphraseWordCount) else {
            throw .invalidInput("passphraseWordCount must be 1…24, got \(passphraseWordCount)")
        }
        guard (1...1024).contains(queueSlots) else { throw .invalidInput("queueSlots must be 1…1024, got \(queueSlots)") }
        guard queueItemBytes == CoverDropProtocol.userToCoverNodeEncryptedBytes else {
            throw .invalidInput(
                "queueItemBytes must be \(CoverDropProtocol.userToCoverNodeEncryptedBytes) (CoverDrop's user-to-CoverNode message), got \(queueItemBytes)"
            )
        }
        guard deadDropMessageBytes == CoverDropProtocol.journalistToUserEncryptedBytes else {
            throw .invalidInput(
                "deadDropMessageBytes must be \(CoverDropProtocol.journalistToUserEncryptedBytes) (CoverDrop's journalist-to-user message), got \(deadDropMessageBytes)"
            )
        }
        do { try passphraseKDF.validateWithinCap() } catch { throw .invalidInput("passphraseKDF: \(error)") }
        guard DeviceCost.allowedRounds.contains(secureElementRounds) else {
            throw .invalidInput("secureElementRounds must be \(DeviceCost.allowedRounds), got \(secureElementRounds)")
        }
        for (name, value) in [
            ("mailboxRetention", mailboxRetention), ("deadDropRetention", deadDropRetention),
            ("deadDropMaxFutureSkew", deadDropMaxFutureSkew), ("publicKeyMaxAge", publicKeyMaxAge),
            ("backgroundGrace", backgroundGrace), ("deadDropFetchInterval", deadDropFetchInterval),
            ("backgroundMinInterval", backgroundMinInterval), ("backgroundStartExtraDelay", backgroundStartExtraDelay),
        ] where !(value >= 0 && value.isFinite) {
            throw .invalidInput("\(name) must be a finite, non-negative number of seconds")
        }
        guard (1...100_000).contains(deadDropMaxStored) else {
            throw .invalidInput("deadDropMaxStored must be 1…100000, got \(deadDropMaxStored)")
        }
        guard (1...1024).contains(backgroundItemsPerRun) else {
            throw .invalidInput("backgroundItemsPerRun must be 1…1024, got \(backgroundItemsPerRun)")
        }
        guard backgroundDelayMean > 0, backgroundDelayMean.isFinite, backgroundDelayMinimum >= 0,
            backgroundDelayMaximum.isFinite, backgroundDelayMinimum <= backgroundDelayMaximum
        else {
            throw .invalidInput(
                "the background delay needs a positive finite mean and 0 ≤ backgroundDelayMinimum ≤ backgroundDelayMaximum (finite)")
        }
        if let sessionLifetime, !(sessionLifetime > 0 && sessionLifetime.isFinite) {
            throw .invalidInput("sessionLifetime must be a positive number of seconds")
        }
    }
}

extension DeniableError: LocalizedError {
    /// The same text as `description`: what went wrong and what to do (for
    /// `localizedDescription`, alerts and logs).
    public var errorDescription: String? { description }
}
