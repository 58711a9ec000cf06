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
public final class DevelopmentCoverNode: Sendable, PublicKeySource {
    /// The trust anchor apps of this environment bundle.
    public let trustAnchor: TrustAnchor
    private let anchorKey: Ed25519KeyPair
    private let messagingKey: X25519KeyPair
    private let signingKey: Ed25519KeyPair
    private let configuration: DeniableConfiguration

    /// Loads the environment kept in `folder`, creating it (keys valid for a year) when absent.
    public init(folder: URL, configuration: DeniableConfiguration = .init()) throws(DeniableError) {
        try AtomicFile.ensureFolder(folder)
        self.configuration = configuration
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
            try AtomicFile.write(Data(String(Int(expiry.timeIntervalSince1970)).utf8), to: expiryURL, permissions: 0o644)
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
        return KeyBundle(keys: [published(.coverNodeMessaging, messagingKey.publicKey),
                                published(.coverNodeSigning, signingKey.publicKey)])
    }

    /// The bundle's JSON (``PublicKeySource``).
    public func fetchKeyBundle() async throws -> Data {
        try JSONEncoder().encode(keyBundle())
    }

    /// A signed dead drop holding `replies` (sender, text) sealed to `userPublicKey`, plus
    /// `covers` messages sealed to throwaway keys, in random order.
    public func deadDrop(id: Int64, createdAt: Date, replies: [(sender: String, text: String)],
                         to userPublicKey: Data, covers: Int = 0) throws(DeniableError) -> DeadDrop {
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
        return DeadDrop(id: id, createdAt: createdAt, data: data,
                        signature: signingKey.sign(DeadDrop.signedBytes(id: id, createdAt: createdAt, data: data)))
    }

    /// What the CoverNode reads from a queue item: recipient and text for a real message, nil for a cover.
    public func read(queueItem: Data) -> (recipient: String, text: String)? {
        guard let plain = try? messagingKey.openSealed(queueItem) else { return nil }
        return MessagePadding.decode(plain).map { ($0.peer, $0.text) }
    }
}
