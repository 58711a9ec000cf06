// A development stand-in for a CoverDrop service (organisation, CoverNodes, journalists), for the
// command line, tests and benchmarks — as CoverDrop has a dev environment. It speaks CoverDrop's
// wire formats: the key bundle and dead-drop list in its API's JSON shape, user-to-CoverNode
// messages opened as a CoverNode and a journalist open them, replies as journalist-to-user
// TwoPartyBoxes in dead drops signed with CoverDrop's signature scheme. Development code: in no
// library product.

import CofferCrypto
import CofferDeniable
import CofferSync
import Foundation

/// The service side of a development environment, with real keys: an organisation key (the
/// trust anchor apps bundle) that certifies a CoverNode provisioning key and a journalist
/// provisioning key; two CoverNodes (`covernode_001`, `covernode_002`) and a roster of
/// journalists, each with an identity key and a messaging key.
///
/// Its secret keys live in a folder (mode 0600 files, raw 32-byte seeds and X25519 secret keys)
/// so separate processes — and an independent implementation in a test — can share one
/// environment. Production apps bundle their service's real organisation key instead.
///
/// Like CoverDrop's service, it publishes dead drops for all its users on its own schedule: a
/// dead drop of ``messagesPerDeadDrop`` slots whenever ``deadDropInterval`` has passed since the
/// last one (checked when a client fetches), its empty slots filled with covers (TwoPartyBoxes
/// between random keys, as CoverDrop's CoverNode fills them), and one at once when a reply is
/// published. Every store that fetches from it stores the same dead drops.
public final class DevelopmentCoverNode: Sendable, PublicKeySource, DeadDropSource, DeniableTransport {
    /// The journalists a new environment lists.
    public static let defaultJournalists = ["alice", "bob", "journalist"]
    /// The CoverNodes of an environment.
    public static let coverNodeIDs = ["covernode_001", "covernode_002"]

    struct Party: Sendable {
        let identity: Ed25519KeyPair
        let messaging: X25519KeyPair
    }

    /// The organisation key apps of this environment bundle.
    public let trustAnchor: TrustAnchor
    /// The journalists it lists, sorted.
    public let journalistIDs: [String]
    private let organization: Ed25519KeyPair
    private let coverNodeProvisioning: Ed25519KeyPair
    private let journalistProvisioning: Ed25519KeyPair
    private let coverNodes: [String: Party]
    private let journalists: [String: Party]
    private let configuration: DeniableConfiguration
    private let folder: URL
    private let clock: @Sendable () -> Date
    /// How often the service publishes a dead drop without replies.
    public let deadDropInterval: TimeInterval
    /// Slots in every dead drop (replies and covers together).
    public let messagesPerDeadDrop: Int

    /// Loads the environment kept in `folder`, creating what is missing (keys valid for a year).
    /// - Parameters:
    ///   - folder: where the service keeps its keys and dead drops.
    ///   - configuration: the retention its users' storage is configured with.
    ///   - journalists: journalists to list (each is created when missing; 1…128 ASCII bytes).
    ///   - deadDropInterval: seconds between scheduled dead drops (default an hour).
    ///   - messagesPerDeadDrop: slots in every dead drop (default 10; CoverDrop's production uses 20).
    ///   - clock: the service's time (injected in tests).
    public init(
        folder: URL, configuration: DeniableConfiguration = .init(), journalists: [String] = DevelopmentCoverNode.defaultJournalists,
        deadDropInterval: TimeInterval = 3_600, messagesPerDeadDrop: Int = 10, clock: @escaping @Sendable () -> Date = { Date() }
    ) throws(DeniableError) {
        try AtomicFile.ensureFolder(folder)
        self.configuration = configuration
        self.folder = folder
        self.clock = clock
        self.deadDropInterval = deadDropInterval
        self.messagesPerDeadDrop = max(messagesPerDeadDrop, 1)
        func secret(_ name: String) throws(DeniableError) -> SecretKey {
            let url = folder.appendingPathComponent(name)
            if let data = try AtomicFile.read(url) {
                do { return try SecretKey(copying: data, expectedCount: 32) } catch { throw .corrupted("\(url.path): \(error)") }
            }
            let key = SecretKey.random(byteCount: 32)
            try key.withUnsafeBytes { (b) throws(DeniableError) in try AtomicFile.write(b, to: url, permissions: 0o600) }
            return key
        }
        func party(_ prefix: String) throws(DeniableError) -> Party {
            do {
                return Party(
                    identity: try Ed25519KeyPair(seed: secret("\(prefix).id.seed")),
                    messaging: try X25519KeyPair(secretKey: secret("\(prefix).msg.key")))
            } catch let error as DeniableError { throw error } catch { throw .corrupted("development keys of \(prefix): \(error)") }
        }
        var roster = Set(journalists)
        for id in journalists { try JournalistMessage.checkID(id) }
        // Journalists created earlier in this folder stay listed.
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        for name in names where name.hasPrefix("journalist.") && name.hasSuffix(".id.seed") {
            roster.insert(String(name.dropFirst("journalist.".count).dropLast(".id.seed".count)))
        }
        do {
            organization = try Ed25519KeyPair(seed: secret("organization.seed"))
            coverNodeProvisioning = try Ed25519KeyPair(seed: secret("covernode-provisioning.seed"))
            journalistProvisioning = try Ed25519KeyPair(seed: secret("journalist-provisioning.seed"))
        } catch let error as DeniableError { throw error } catch { throw .corrupted("development keys: \(error)") }
        var nodes = [String: Party]()
        for id in Self.coverNodeIDs { nodes[id] = try party(id) }
        coverNodes = nodes
        var people = [String: Party]()
        for id in roster { people[id] = try party("journalist.\(id)") }
        self.journalists = people
        journalistIDs = roster.sorted()
        let expiryURL = folder.appendingPathComponent("keys.not-valid-after")
        let expiry: Int64
        if let data = try AtomicFile.read(expiryURL), let text = String(data: data, encoding: .utf8), let s = Int64(text) {
            expiry = s
        } else {
            expiry = Int64(Date().timeIntervalSince1970.rounded(.down)) + 365 * 86_400
            try AtomicFile.write(Data(String(expiry).utf8), to: expiryURL, permissions: 0o600)
        }
        keysNotValidAfter = expiry
        trustAnchor = TrustAnchor(publicKey: organization.publicKey, notValidAfter: Date(timeIntervalSince1970: Double(expiry)))
    }

    private let keysNotValidAfter: Int64

    /// The organisation key's file as CoverDrop's apps bundle it (`{"key", "certificate",
    /// "not_valid_after"}`, self-signed).
    public func organizationKeyJSON() -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return (try? encoder.encode(SignedPublicKey.certify(organization.publicKey, until: keysNotValidAfter, by: organization))) ?? Data()
    }

    /// The key bundle in CoverDrop's API shape, every key certified by its parent and valid until
    /// `notValidAfter` (default: the environment's key expiry).
    public func keyBundle(notValidAfter: Date? = nil) -> KeyBundle {
        let until = notValidAfter.map { Int64($0.timeIntervalSince1970.rounded(.down)) } ?? keysNotValidAfter
        func family(_ party: Party, provisioning: Ed25519KeyPair) -> [KeyBundle.IdentityFamily] {
            [
                KeyBundle.IdentityFamily(
                    idPK: .certify(party.identity.publicKey, until: until, by: provisioning),
                    msgPKs: [.certify(party.messaging.publicKey, until: until, by: party.identity)])
            ]
        }
        let hierarchy = KeyBundle.Hierarchy(
            orgPK: .certify(organization.publicKey, until: until, by: organization),
            covernodes: [
                KeyBundle.CoverNodeBranch(
                    provisioningPK: .certify(coverNodeProvisioning.publicKey, until: until, by: organization),
                    covernodes: coverNodes.mapValues { family($0, provisioning: coverNodeProvisioning) })
            ],
            journalists: [
                KeyBundle.JournalistBranch(
                    provisioningPK: .certify(journalistProvisioning.publicKey, until: until, by: organization),
                    journalists: journalists.mapValues { family($0, provisioning: journalistProvisioning) })
            ])
        let profiles = journalistIDs.map {
            KeyBundle.Profile(
                id: $0, displayName: $0, sortName: $0, description: "development journalist", isDesk: false,
                tag: Hex.encode(RecipientTag.of($0)), status: "VISIBLE")
        }
        return KeyBundle(journalistProfiles: profiles, defaultJournalistID: journalistIDs.first, keys: [hierarchy])
    }

    /// The bundle's JSON (``PublicKeySource``), as CoverDrop's `GET /v1/public-keys` serves it.
    public func fetchKeyBundle() async throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return try encoder.encode(keyBundle())
    }

    /// A signed dead drop holding `replies` (a journalist's id and message) in TwoPartyBoxes from
    /// the journalist's messaging key to `userPublicKey`, plus `covers` cover slots, in random order.
    /// - Throws: ``DeniableError/invalidInput(_:)`` for an unknown journalist or a message that
    ///   does not fit.
    public func deadDrop(
        id: Int64, createdAt: Date, messages replies: [(sender: String, message: JournalistMessage)], to userPublicKey: Data,
        covers: Int = 0
    ) throws(DeniableError) -> DeadDrop {
        var slots = [Data]()
        for reply in replies {
            guard let journalist = journalists[reply.sender] else {
                throw .invalidInput("\"\(reply.sender)\" is not a journalist of this development service (it lists \(journalistIDs))")
            }
            do { slots.append(try TwoPartyBox.seal(reply.message.encoded(), from: journalist.messaging, to: userPublicKey)) } catch let
                error as DeniableError
            {
                throw error
            } catch { throw .invalidInput("user public key: \(error)") }
        }
        for _ in 0..<covers { slots.append(try Self.coverSlot()) }
        slots.shuffle()
        let data = slots.reduce(into: Data()) { $0.append($1) }
        let signer = coverNodes[Self.coverNodeIDs[0]]!.identity
        return DeadDrop.signed(id: id, createdAtSeconds: Int64(createdAt.timeIntervalSince1970.rounded(.down)), data: data, by: signer)
    }

    /// ``deadDrop(id:createdAt:messages:to:covers:)`` for text replies.
    public func deadDrop(
        id: Int64, createdAt: Date, replies: [(sender: String, text: String)], to userPublicKey: Data, covers: Int = 0
    ) throws(DeniableError) -> DeadDrop {
        try deadDrop(id: id, createdAt: createdAt, messages: replies.map { ($0.sender, .text($0.text)) }, to: userPublicKey, covers: covers)
    }

    /// A cover slot as CoverDrop's CoverNode makes one: an empty text between two random keys.
    static func coverSlot() throws(DeniableError) -> Data {
        do {
            return try TwoPartyBox.seal(JournalistMessage.text("").encoded(), from: .generate(), to: X25519KeyPair.generate().publicKey)
        } catch let error as DeniableError {
            throw error
        } catch { throw .storage("making a cover slot failed: \(error)", cause: StorageCause(error)) }
    }

    /// What the service reads from a queue item.
    public struct QueueItemContent: Sendable, Equatable {
        /// The journalist it is for.
        public let recipient: String
        /// The text.
        public let text: String
        /// The user's key to reply to.
        public let replyKey: Data
    }

    /// What the service reads from a queue item, as a CoverNode and then the journalist would:
    /// the MultiAnonymousBox opened with a CoverNode messaging key, the recipient tag matched to a
    /// journalist, the AnonymousBox opened with the journalist's messaging key. Nil for a cover
    /// (the all-zero tag) or an item none of its keys opens.
    public func read(queueItem: Data) -> QueueItemContent? {
        readQueueItem(queueItem) ?? nil
    }

    /// Whether one of the service's CoverNodes opens the item's outer layer (a real message or a
    /// cover made for its keys; false for an item made for any other key).
    public func opens(queueItem: Data) -> Bool { readQueueItem(queueItem) != nil }

    /// nil: no CoverNode key opens it; .some(nil): a cover or unreadable inside; else the message.
    private func readQueueItem(_ queueItem: Data) -> QueueItemContent?? {
        for id in Self.coverNodeIDs {
            guard let node = coverNodes[id],
                let plain = try? MultiAnonymousBox.open(
                    queueItem, recipients: CoverDropProtocol.coverNodeWrappingKeyCount, with: node.messaging)
            else { continue }
            guard plain.count == CoverDropProtocol.userToCoverNodeBytes else { return .some(nil) }
            let tag = plain.prefix(CoverDropProtocol.recipientTagBytes)
            guard tag != RecipientTag.cover,
                let journalist = journalistIDs.first(where: { RecipientTag.of($0) == tag }),
                let inner = try? AnonymousBox.open(
                    plain.dropFirst(CoverDropProtocol.recipientTagBytes), with: journalists[journalist]!.messaging),
                let (replyKey, text) = try? UserMessage.readUserToJournalist(inner)
            else { return .some(nil) }
            return QueueItemContent(recipient: journalist, text: text, replyKey: replyKey)
        }
        return nil
    }

    // MARK: Publishing dead drops

    private var publishedURL: URL { folder.appendingPathComponent("dead-drops-api.json") }

    /// Every dead drop the service still serves (the retention window back from the newest), oldest first.
    public func publishedDeadDrops() throws(DeniableError) -> [DeadDrop] {
        try withPublicationLock { () throws(DeniableError) in try readPublished() }
    }

    /// Publishes a dead drop now holding `replies` to `userPublicKey`, filled with covers up to
    /// ``messagesPerDeadDrop`` (more slots when there are more replies).
    @discardableResult
    public func publishReplies(_ replies: [(sender: String, text: String)], to userPublicKey: Data) throws(DeniableError) -> DeadDrop {
        try publish(replies.map { ($0.sender, .text($0.text)) }, to: userPublicKey)
    }

    /// Publishes a dead drop now holding `messages` (texts or handovers) to `userPublicKey`.
    @discardableResult
    public func publish(_ messages: [(sender: String, message: JournalistMessage)], to userPublicKey: Data) throws(DeniableError)
        -> DeadDrop
    {
        try withPublicationLock { () throws(DeniableError) in
            try publish(messages: messages, to: userPublicKey, existing: readPublished())
        }
    }

    /// Publishes a cover dead drop when none was published within ``deadDropInterval``.
    /// - Returns: the new dead drop, or nil when none was due.
    @discardableResult
    public func publishIfDue() throws(DeniableError) -> DeadDrop? {
        try withPublicationLock { () throws(DeniableError) in
            let existing = try readPublished()
            if let newest = existing.last, clock().timeIntervalSince(newest.createdAt) < deadDropInterval { return nil }
            return try publish(messages: [], to: nil, existing: existing)
        }
    }

    /// The dead-drop list of those published after `id` (``DeadDropSource``), as CoverDrop's API
    /// serves it; publishes one first when due.
    public func fetchDeadDrops(idsGreaterThan id: Int64) async throws -> Data {
        try publishIfDue()
        return DeadDropList.json(try publishedDeadDrops().filter { $0.id > id })
    }

    private func publish(
        messages: [(sender: String, message: JournalistMessage)], to userPublicKey: Data?, existing: [DeadDrop]
    ) throws(DeniableError) -> DeadDrop {
        let now = clock()
        let id = (existing.last?.id ?? 0) + 1
        let drop = try deadDrop(
            id: id, createdAt: now, messages: messages, to: userPublicKey ?? X25519KeyPair.generate().publicKey,
            covers: max(messagesPerDeadDrop - messages.count, 0))
        var kept = existing + [drop]
        let cutoff = drop.createdAtSeconds - Int64(configuration.deadDropRetention.rounded())
        kept.removeAll { $0.createdAtSeconds < cutoff }
        try AtomicFile.write(DeadDropList.json(kept), to: publishedURL, permissions: 0o600)
        return drop
    }

    private func readPublished() throws(DeniableError) -> [DeadDrop] {
        guard let data = try AtomicFile.read(publishedURL) else { return [] }
        do { return try DeadDropList.parse(data) } catch { throw .corrupted("\(publishedURL.path): \(error)") }
    }

    /// Serialises publication between threads, and between processes sharing the folder (flock).
    // MARK: Receiving queue items

    private var deliveredURL: URL { folder.appendingPathComponent("delivered.json") }

    /// Receives one queue item as CoverDrop's messaging endpoint does (``DeniableTransport``):
    /// an item of the wrong size is refused; a real message is recorded in ``delivered()``, a
    /// cover is dropped.
    public func send(_ item: Data) async throws {
        guard item.count == CoverDropProtocol.userToCoverNodeEncryptedBytes else {
            throw DeniableError.invalidInput(
                "a queue item must be \(CoverDropProtocol.userToCoverNodeEncryptedBytes) bytes, got \(item.count)")
        }
        guard let content = read(queueItem: item) else { return }
        try withPublicationLock { () throws(DeniableError) in
            var all = try readDelivered()
            all.append(Delivered(recipient: content.recipient, text: content.text))
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            guard let data = try? encoder.encode(all) else { throw .storage("encoding the delivered messages failed") }
            try AtomicFile.write(data, to: deliveredURL, permissions: 0o600)
        }
    }

    /// A real message the service received through ``send(_:)``.
    public struct Delivered: Sendable, Equatable, Codable {
        /// The journalist it is for.
        public let recipient: String
        /// The text.
        public let text: String
    }

    /// The real messages received through ``send(_:)``, in arrival order (covers are not kept).
    public func delivered() throws(DeniableError) -> [Delivered] {
        try withPublicationLock { () throws(DeniableError) in try readDelivered() }
    }

    private func readDelivered() throws(DeniableError) -> [Delivered] {
        guard let data = try AtomicFile.read(deliveredURL) else { return [] }
        do { return try JSONDecoder().decode([Delivered].self, from: data) } catch {
            throw .corrupted("the development service's delivered.json does not parse: \(error)")
        }
    }

    private func withPublicationLock<R>(_ body: () throws(DeniableError) -> R) throws(DeniableError) -> R {
        // The package's one lock between processes (a lock file that cannot be opened or locked is
        // an error naming it, never a publication without the lock).
        let failure = { (e: ProcessLockError) -> DeniableError in .storage(e.message, cause: e.storageCause) }
        let path = folder.appendingPathComponent("publish.lock").path
        // Each call opens the file anew, and flock(2) excludes another open of it in this process
        // as in any other: threads are serialised too.
        return try ProcessLock.withLock(at: path, failure: failure, body)
    }
}
