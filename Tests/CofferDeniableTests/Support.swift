// Shared helpers: temporary folders, a settable clock, a counting secure element.
import CofferCrypto
import Foundation

@testable import CofferDeniable

/// A fresh empty folder under the system's temporary folder.
func temporaryFolder(_ name: String = #function) -> URL {
    let url = FileManager.default.temporaryDirectory
        .appendingPathComponent("coffer-deniable-tests")
        .appendingPathComponent("\(name.filter { $0.isLetter || $0.isNumber })-\(UUID().uuidString)")
    try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
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

    init(folder: URL) { inner = FileSecureElement(keyFile: folder.appendingPathComponent("se.key")) }

    var calls: Int { lock.withLock { count } }

    func authenticate(_ message: Data) throws(DeniableError) -> SecretKey {
        lock.withLock { count += 1 }
        return try inner.authenticate(message)
    }

    func regenerate() throws(DeniableError) { try inner.regenerate() }
}

/// Small and fast settings for tests: a 16 KiB vault and the cheapest Argon2id.
func testConfiguration() -> DeniableConfiguration {
    var c = DeniableConfiguration()
    c.vaultContentBytes = 16 * 1024
    c.passphraseKDF = .minimum
    return c
}

/// A store with a development CoverNode as its key source and trust anchor.
func makeStore(
    _ folder: URL, configuration: DeniableConfiguration = testConfiguration(), clock: TestClock = TestClock(),
    secureElement: SecureElement? = nil
) async throws -> (DeniableStorage, DevelopmentCoverNode) {
    let node = try DevelopmentCoverNode(folder: folder.appendingPathComponent("dev-service"), configuration: configuration)
    let anchor = TrustAnchor(publicKey: node.trustAnchor.publicKey, notValidAfter: clock.now.addingTimeInterval(365 * 86_400))
    let store = try await DeniableStorage(
        folder: folder.appendingPathComponent("deniable"), configuration: configuration,
        trustAnchor: anchor, keySource: node, secureElement: secureElement,
        clock: clock.function)
    return (store, node)
}

/// Pearson's chi-square statistic of byte frequencies against the uniform distribution.
func chiSquare(_ bytes: Data) -> Double {
    var counts = [Int](repeating: 0, count: 256)
    for b in bytes { counts[Int(b)] += 1 }
    let expected = Double(bytes.count) / 256
    return counts.reduce(0) { $0 + pow(Double($1) - expected, 2) / expected }
}
