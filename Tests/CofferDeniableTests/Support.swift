// Shared helpers: temporary folders, a settable clock, counting and holding secure elements.

import CofferCrypto
import CofferDevelopment
import CofferSync
import CofferTestSupport
import Foundation

@testable import CofferDeniable

/// A fresh empty folder under the test run's temporary folder (removed when the run ends).
func temporaryFolder(_ name: String = #function) -> URL {
    TemporaryFolders.make("deniable-\(name)")
}

/// A clock tests move by hand.
final class TestClock: @unchecked Sendable {
    private let lock = NSLock()
    private var current: Date

    init(_ start: Date = Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down))) { current = start }

    var now: Date { lock.withLock { current } }

    func advance(_ seconds: TimeInterval) { lock.withLock { current = current.addingTimeInterval(seconds) } }

    var function: @Sendable () -> Date { { [self] in now } }
}

/// A real file secure element that counts how often it is asked to compute.
final class CountingSecureElement: SecureElement, @unchecked Sendable {
    let inner: FileSecureElement
    private let lock = NSLock()
    private var count = 0
    private var failing = false

    init(folder: URL) { inner = FileSecureElement(keyFile: folder.appendingPathComponent("se.key")) }

    var calls: Int { lock.withLock { count } }

    /// While set, every key agreement fails, as a Secure Enclave key does on a locked phone.
    var locked: Bool {
        get { lock.withLock { failing } }
        set { lock.withLock { failing = newValue } }
    }

    func sharedSecret(with publicKey: P256PublicKey) throws(DeniableError) -> SecretKey {
        let refuse = lock.withLock { () -> Bool in
            count += 1
            return failing
        }
        if refuse { throw .secureElement("the device is locked") }
        return try inner.sharedSecret(with: publicKey)
    }

    func regenerate() throws(DeniableError) { try inner.regenerate() }

    func prepare() throws(DeniableError) -> Bool { try inner.prepare() }
}

/// A real file secure element whose vault-key derivation (computed off the store's executor)
/// can be held: once armed, its next key agreement records that it started and waits until
/// released (at most 30 s), so a test acts while an unlock waits for its key.
final class HeldSecureElement: SecureElement, Sendable {
    let inner: FileSecureElement
    private let state = Locked((armed: false, holding: false))
    private let release = DispatchSemaphore(value: 0)

    init(folder: URL) { inner = FileSecureElement(keyFile: folder.appendingPathComponent("se.key")) }

    /// Holds the next vault-key derivation.
    func arm() { state.withLock { $0.armed = true } }

    /// Whether a held call has started and waits.
    var holding: Bool { state.withLock { $0.holding } }

    /// Lets the held call go on.
    func releaseHeld() { release.signal() }

    func sharedSecret(with publicKey: P256PublicKey) throws(DeniableError) -> SecretKey {
        let hold = state.withLock { state -> Bool in
            guard state.armed else { return false }
            state.armed = false
            state.holding = true
            return true
        }
        if hold { _ = release.wait(timeout: .now() + 30) }
        return try inner.sharedSecret(with: publicKey)
    }

    func regenerate() throws(DeniableError) { try inner.regenerate() }

    func prepare() throws(DeniableError) -> Bool { try inner.prepare() }
}

/// The outer-layer key kept in `folder` (made at the first call), for queues opened directly.
func storageKey(_ folder: URL) throws -> SecretKey {
    try StorageKey(url: folder.appendingPathComponent("storage.key")).prepare().0
}

/// A public key to agree with (a fresh one each call).
func somePublicKey() -> P256PublicKey { P256PrivateKey().publicKey }

/// Small and fast settings for tests: a 16 KiB vault and the cheapest Argon2id, on the seed's
/// cadences (`base: .init()` for CoverDrop's).
func testConfiguration(base: DeniableConfiguration = .seed) -> DeniableConfiguration {
    var c = base
    c.vaultContentBytes = 16 * 1024
    c.passphraseKDF = .minimum
    c.secureElementRounds = 8
    return c
}

/// A store with a development CoverNode as its key source and trust anchor.
func makeStore(
    _ folder: URL, configuration: DeniableConfiguration = testConfiguration(), clock: TestClock = TestClock(),
    secureElement: SecureElement? = nil, deadDrops: Bool = false, transport: DeniableTransport? = nil,
    random: @escaping @Sendable () -> Double = { 0.5 }
) async throws -> (DeniableStorage, DevelopmentCoverNode) {
    let node = try DevelopmentCoverNode(
        folder: folder.appendingPathComponent("dev-service"), configuration: configuration, clock: clock.function)
    let anchor = TrustAnchor(publicKey: node.trustAnchor.publicKey, notValidAfter: clock.now.addingTimeInterval(365 * 86_400))
    let store = try await DeniableStorage(
        folder: folder.appendingPathComponent("deniable"), configuration: configuration,
        trustAnchor: anchor, keySource: node, deadDropSource: deadDrops ? node : nil, transport: transport,
        secureElement: secureElement, clock: clock.function, random: random)
    return (store, node)
}

/// A transport to the development service that fails while `failing` is set, and counts what it sent.
final class SwitchableTransport: DeniableTransport, @unchecked Sendable {
    struct Offline: Error {}
    let node: DevelopmentCoverNode
    private let lock = NSLock()
    private var failingNow = false
    private var count = 0

    init(_ node: DevelopmentCoverNode) { self.node = node }

    var failing: Bool {
        get { lock.withLock { failingNow } }
        set { lock.withLock { failingNow = newValue } }
    }

    var sent: Int { lock.withLock { count } }

    func send(_ item: Data) async throws {
        if failing { throw Offline() }
        try await node.send(item)
        lock.withLock { count += 1 }
    }
}

/// Pearson's chi-square statistic of byte frequencies against the uniform distribution.
func chiSquare(_ bytes: Data) -> Double {
    var counts = [Int](repeating: 0, count: 256)
    for b in bytes { counts[Int(b)] += 1 }
    let expected = Double(bytes.count) / 256
    return counts.reduce(0) { $0 + pow(Double($1) - expected, 2) / expected }
}
