// A development stand-in for the service side (trust anchor, CoverNode keys, journalists'
// dead drops), for the command line, tests and benchmarks — as CoverDrop has a dev environment.
import CofferCrypto
import Foundation

/// The service side of a development environment, with real keys: a trust anchor that signs a
/// CoverNode's messaging (X25519) and signing (Ed25519) keys, a key bundle to serve, dead drops
/// with replies sealed to a user's public key, and the CoverNode's view of queue items.
///
/// Its secret keys live in a folder (mode 0600 files) so separate processes can share one
/// environment. Production apps bundle their service's real trust anchor instead.
///
/// Like CoverDrop's service, it publishes dead drops for all its users on its own schedule: a
/// dead drop of ``messagesPerDeadDrop`` messages whenever ``deadDropInterval`` has passed since
/// the last one (checked when a client fetches), holding the journalists' pending replies and
/// covers, and one at once when a reply is published. Every store that fetches from it stores
/// the same dead drops.
public final class DevelopmentCoverNode: Sendable, PublicKeySource, DeadDropSource {
    /// The trust anchor apps of this environment bundle.
    public let trustAnchor: TrustAnchor
    private let anchorKey: Ed25519KeyPair
    private let messagingKey: X25519KeyPair
    private let signingKey: Ed25519KeyPair
    private let configuration: DeniableConfiguration
    private let folder: URL
    private let clock: @Sendable () -> Date
    private let publishLock = NSLock()
    /// How often the service publishes a dead drop without replies.
    public let deadDropInterval: TimeInterval
    /// Messages in every dead drop (replies and covers together).
    public let messagesPerDeadDrop: Int

    /// Loads the environment kept in `folder`, creating it (keys valid for a year) when absent.
    /// - Parameters:
    ///   - folder: where the service keeps its keys, queue inbox and dead drops.
    ///   - configuration: the sizes its users' storage is configured with.
    ///   - deadDropInterval: seconds between scheduled dead drops (default an hour).
    ///   - messagesPerDeadDrop: messages in every dead drop (default 10).
    ///   - clock: the service's time (injected in tests).
    public init(
        folder: URL, configuration: DeniableConfiguration = .init(), deadDropInterval: TimeInterval = 3_600,
        messagesPerDeadDrop: Int = 10, clock: @escaping @Sendable () -> Date = { Date() }
    ) throws(DeniableError) {
        try AtomicFile.ensureFolder(folder)
        self.configuration = configuration
        self.folder = folder
        self.clock = clock
        self.deadDropInterval = deadDropInterval
        self.messagesPerDeadDrop = max(messagesPerDeadDrop, 1)
        func seed(_ name: String) throws(DeniableError) -> SecretKey {
            let url = folder.appendingPathComponent(name)
            if let data = try AtomicFile.read(url) {
                do { return try SecretKey(copying: data, expectedCount: 32) } catch { throw .corrupted("\(url.path): \(error)") }
            }
            let key = SecretKey.random(byteCount: 32)
            try key.withUnsafeBytes { (b) throws(DeniableError) in try AtomicFile.write(b, to: url, permissions: 0o600) }
            return key
        }
        do {
            anchorKey = try Ed25519KeyPair(seed: seed("anchor.seed"))
            signingKey = try Ed25519KeyPair(seed: seed("covernode-signing.seed"))
            messagingKey = try X25519KeyPair(secretKey: seed("covernode-messaging.key"))
        } catch let error as DeniableError { throw error } catch { throw .corrupted("development keys: \(error)") }
        let expiryURL = folder.appendingPathComponent("anchor.not-valid-after")
        let expiry: Date
        if let data = try AtomicFile.read(expiryURL), let text = String(data: data, encoding: .utf8), let s = Double(text) {
            expiry = Date(timeIntervalSince1970: s)
        } else {
            expiry = Date(timeIntervalSince1970: (Date().timeIntervalSince1970 + 365 * 86_400).rounded(.down))
            try AtomicFile.write(Data(String(Int(expiry.timeIntervalSince1970)).utf8), to: expiryURL, permissions: 0o600)
        }
        trustAnchor = TrustAnchor(publicKey: anchorKey.publicKey, notValidAfter: expiry)
    }

    /// The key bundle, signed by the anchor, keys valid until `notValidAfter` (default: the anchor's expiry).
    public func keyBundle(notValidAfter: Date? = nil) -> KeyBundle {
        let until = notValidAfter ?? trustAnchor.notValidAfter
        func published(_ role: PublishedKey.Role, _ key: Data) -> PublishedKey {
            let id = "covernode_dev"
            let signed = PublishedKey.signedBytes(role: role, id: id, key: key, notValidAfter: until)
            return PublishedKey(role: role, id: id, key: key, notValidAfter: until, signature: anchorKey.sign(signed))
        }
        return KeyBundle(keys: [
            published(.coverNodeMessaging, messagingKey.publicKey),
            published(.coverNodeSigning, signingKey.publicKey),
        ])
    }

    /// The bundle's JSON (``PublicKeySource``).
    public func fetchKeyBundle() async throws -> Data {
        try JSONEncoder().encode(keyBundle())
    }

    /// A signed dead drop holding `replies` (sender, text) sealed to `userPublicKey`, plus
    /// `covers` messages sealed to throwaway keys, in random order.
    public func deadDrop(
        id: Int64, createdAt: Date, replies: [(sender: String, text: String)],
        to userPublicKey: Data, covers: Int = 0
    ) throws(DeniableError) -> DeadDrop {
        let size = configuration.deadDropMessageBytes
        var messages = [Data]()
        for reply in replies {
            let plain = try MessagePadding.encode(peer: reply.sender, text: reply.text, size: size - SealedBox.overhead)
            do { messages.append(try SealedBox.seal(plain, to: userPublicKey)) } catch { throw .invalidInput("user public key: \(error)") }
        }
        for _ in 0..<covers {
            messages.append(DeniableStorage.cover(itemBytes: size, to: nil))
        }
        messages.shuffle()
        let data = messages.reduce(into: Data()) { $0.append($1) }
        return DeadDrop(
            id: id, createdAt: createdAt, data: data,
            signature: signingKey.sign(DeadDrop.signedBytes(id: id, createdAt: createdAt, data: data)))
    }

    /// What the CoverNode reads from a queue item: recipient and text for a real message, nil for a cover.
    public func read(queueItem: Data) -> (recipient: String, text: String)? {
        guard let plain = try? messagingKey.openSealed(queueItem) else { return nil }
        return MessagePadding.decode(plain).map { ($0.peer, $0.text) }
    }

    // MARK: Publishing dead drops

    private var publishedURL: URL { folder.appendingPathComponent("published-dead-drops.json") }

    private struct Published: Codable {
        var id: Int64
        var createdAtMillis: Int64
        var data: Data
        var signature: Data
    }

    /// Every dead drop the service still serves (the retention window back from the newest), oldest first.
    public func publishedDeadDrops() throws(DeniableError) -> [DeadDrop] {
        try withPublicationLock { () throws(DeniableError) in try readPublished() }
    }

    /// Publishes a dead drop now holding `replies` sealed to `userPublicKey`, filled with covers
    /// up to ``messagesPerDeadDrop`` (more messages when there are more replies).
    @discardableResult
    public func publishReplies(_ replies: [(sender: String, text: String)], to userPublicKey: Data) throws(DeniableError) -> DeadDrop {
        try withPublicationLock { () throws(DeniableError) in
            try publish(replies: replies, to: userPublicKey, existing: readPublished())
        }
    }

    /// Publishes a cover dead drop when none was published within ``deadDropInterval``.
    /// - Returns: the new dead drop, or nil when none was due.
    @discardableResult
    public func publishIfDue() throws(DeniableError) -> DeadDrop? {
        try withPublicationLock { () throws(DeniableError) in
            let existing = try readPublished()
            if let newest = existing.last, clock().timeIntervalSince(newest.createdAt) < deadDropInterval { return nil }
            return try publish(replies: [], to: nil, existing: existing)
        }
    }

    /// The dead drops published after `id` (``DeadDropSource``); publishes one first when due.
    public func fetchDeadDrops(after id: Int64?) async throws -> [DeadDrop] {
        try publishIfDue()
        return try publishedDeadDrops().filter { id == nil || $0.id > id! }
    }

    private func publish(
        replies: [(sender: String, text: String)], to userPublicKey: Data?,
        existing: [DeadDrop]
    ) throws(DeniableError) -> DeadDrop {
        let now = clock()
        let createdAt = Date(timeIntervalSince1970: Double(unixMillis(now)) / 1000)
        let id = (existing.last?.id ?? 0) + 1
        let drop = try deadDrop(
            id: id, createdAt: createdAt, replies: replies, to: userPublicKey ?? X25519KeyPair.generate().publicKey,
            covers: max(messagesPerDeadDrop - replies.count, 0))
        var kept = existing + [drop]
        let cutoff = createdAt.addingTimeInterval(-configuration.deadDropRetention)
        kept.removeAll { $0.createdAt < cutoff }
        let stored = kept.map { Published(id: $0.id, createdAtMillis: unixMillis($0.createdAt), data: $0.data, signature: $0.signature) }
        let json: Data
        do { json = try JSONEncoder().encode(stored) } catch { throw .storage("cannot encode published dead drops: \(error)") }
        try AtomicFile.write(json, to: publishedURL, permissions: 0o600)
        return drop
    }

    private func readPublished() throws(DeniableError) -> [DeadDrop] {
        guard let data = try AtomicFile.read(publishedURL) else { return [] }
        do {
            return try JSONDecoder().decode([Published].self, from: data).map {
                DeadDrop(
                    id: $0.id, createdAt: Date(timeIntervalSince1970: Double($0.createdAtMillis) / 1000), data: $0.data,
                    signature: $0.signature)
            }
        } catch { throw .corrupted("\(publishedURL.path) does not parse: \(error)") }
    }

    /// Serialises publication between threads, and between processes sharing the folder (flock).
    private func withPublicationLock<R>(_ body: () throws(DeniableError) -> R) throws(DeniableError) -> R {
        publishLock.lock()
        defer { publishLock.unlock() }
        let fd = open(folder.appendingPathComponent("publish.lock").path, O_RDWR | O_CREAT, 0o600)
        guard fd >= 0 else { throw .storage("cannot open the development service's lock file in \(folder.path)") }
        defer { close(fd) }
        _ = flock(fd, LOCK_EX)
        defer { _ = flock(fd, LOCK_UN) }
        return try body()
    }
}
