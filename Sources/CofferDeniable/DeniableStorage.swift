// The deniable store: vault, sending queue, dead drops and public keys in one folder, and the
// session that unlocks them.
import CofferCrypto
import Foundation
import Logging

/// What can be told about deniable storage without the passphrase (and, when unlocked, a little more).
public struct DeniableStatus: Sendable, Equatable {
    /// Whether a session is unlocked.
    public let unlocked: Bool
    /// Bytes of the vault file (constant).
    public let vaultFileBytes: Int
    /// Bytes of the sending-queue file (constant).
    public let queueFileBytes: Int
    /// Slots of the sending queue.
    public let queueSlots: Int
    /// Real messages waiting in the queue; nil while locked (only the queue secret can tell).
    public let queuedMessages: Int?
    /// Messages in the mailbox; nil while locked.
    public let mailboxMessages: Int?
    /// Dead drops stored.
    public let deadDrops: Int
    /// When the cached public keys were fetched; nil when none are cached.
    public let publicKeysFetchedAt: Date?
    /// Verified messaging and signing keys in the cache.
    public let verifiedKeys: Int
}

/// CoverDrop-style deniable storage in one folder:
///
///     vault              fixed-size, two-layer encrypted vault (see ``Vault``)
///     sending-queue      fixed-size private sending queue (see ``SendingQueue``)
///     secure-element.key the software secure element's key, mode 0600 (Linux stand-in)
///     dead-drops.sqlite  verified dead drops
///     public-keys.json   the public key bundle and its fetch time
///
/// Opening it creates the vault under a random passphrase nobody sees, whether or not the user
/// ever uses the feature, and re-encrypts the vault's outer layer, so every install's vault
/// changes at every start. A session is unlocked with the passphrase and ends on ``lock()``,
/// on leaving the private views, on going to the background, at an optional expiry time, and
/// at exit (``close()``); ending it saves the vault and drops every secret from memory.
public actor DeniableStorage {
    /// The folder holding the files.
    public nonisolated let folder: URL
    /// Sizes, costs and time limits.
    public nonisolated let configuration: DeniableConfiguration
    let secureElement: SecureElement
    let keySource: PublicKeySource?
    let clock: @Sendable () -> Date
    let queue: SendingQueue
    let deadDropStore: DeadDropStore
    let keyCache: PublicKeyCache
    let logger = Logger(label: "coffer.deniable")
    let coverKey: CoverKey

    struct Session {
        var contents: VaultContents
        var vaultKey: SecretKey
        var header: Vault.Header
        var unlockedAt: Date
    }

    private var session: Session?
    private var backgroundedAt: Date?
    /// Locks the session when its lifetime or the background grace runs out, even if nothing
    /// touches the store meanwhile.
    private var timer: Task<Void, Never>?
    private var keys: VerifiedKeys?

    var vaultURL: URL { folder.appendingPathComponent("vault") }

    deinit { timer?.cancel() }

    /// Opens (creating when absent) deniable storage in `folder`.
    /// - Parameters:
    ///   - trustAnchor: the bundled key that signs published keys.
    ///   - keySource: fetches the key bundle when the cache is missing or older than
    ///     ``DeniableConfiguration/publicKeyMaxAge`` (nil: use the cache only).
    ///   - secureElement: the device key (default: a ``FileSecureElement`` in the folder).
    ///   - clock: the current time (injected in tests).
    /// - Throws: ``DeniableError`` when the configuration is invalid or a file is damaged.
    public init(folder: URL, configuration: DeniableConfiguration = .init(), trustAnchor: TrustAnchor,
                keySource: PublicKeySource? = nil, secureElement: SecureElement? = nil,
                clock: @escaping @Sendable () -> Date = { Date() }) async throws(DeniableError) {
        try configuration.validate()
        try AtomicFile.ensureFolder(folder)
        self.folder = folder
        self.configuration = configuration
        self.secureElement = secureElement ?? FileSecureElement(keyFile: folder.appendingPathComponent("secure-element.key"))
        self.keySource = keySource
        self.clock = clock
        self.keyCache = PublicKeyCache(url: folder.appendingPathComponent("public-keys.json"), anchor: trustAnchor)
        self.deadDropStore = try DeadDropStore(url: folder.appendingPathComponent("dead-drops.sqlite"))
        let loaded = try keyCache.load(now: clock())
        let itemBytes = configuration.queueItemBytes
        let coverKey = CoverKey(loaded?.messaging.first?.key)
        self.coverKey = coverKey
        self.queue = try SendingQueue(url: folder.appendingPathComponent("sending-queue"), slots: configuration.queueSlots,
                                      itemBytes: itemBytes) { Self.cover(itemBytes: itemBytes, to: coverKey.current) }
        self.keys = loaded
        try touchOrCreateVault()
        await refreshKeysIfStale()
    }

    // MARK: Vault

    /// Creates the vault under a random passphrase when absent, else re-encrypts its outer layer.
    private func touchOrCreateVault() throws(DeniableError) {
        guard let file = try AtomicFile.read(vaultURL) else {
            try writeFreshVault(passphrase: Passphrase.generate(wordCount: configuration.passphraseWordCount))
            logger.info("created the vault")
            return
        }
        try rewrap(file)
    }

    private func rewrap(_ file: Data) throws(DeniableError) {
        let header = try Vault.Header.parse(file, expectedContentBytes: configuration.vaultContentBytes)
        let outer = try Vault.outerKey(salt: header.salt, secureElement: secureElement)
        let inner = try Vault.unwrap(file, header: header, outerKey: outer)
        try AtomicFile.write(Vault.wrap(inner: inner, header: header, outerKey: outer), to: vaultURL)
    }

    /// Writes a new vault (new salt, fresh keys, empty mailbox) under `passphrase`.
    private func writeFreshVault(passphrase: String) throws(DeniableError) {
        let header = Vault.Header(contentBytes: configuration.vaultContentBytes, kdf: configuration.passphraseKDF,
                                  salt: SecureRandom.bytes(Argon2idParameters.saltByteCount))
        let key = try Vault.vaultKey(passphrase: passphrase, header: header, secureElement: secureElement)
        var contents = VaultContents.fresh()
        try save(&contents, header: header, vaultKey: key)
    }

    private func save(_ contents: inout VaultContents, header: Vault.Header, vaultKey: SecretKey) throws(DeniableError) {
        var plain = try contents.padded(size: header.contentBytes)
        defer { SecureMemory.wipe(&plain) }
        let outer = try Vault.outerKey(salt: header.salt, secureElement: secureElement)
        try AtomicFile.write(Vault.seal(plain, header: header, vaultKey: vaultKey, outerKey: outer), to: vaultURL)
    }

    /// Replaces the vault with a new one under a freshly generated passphrase, which is returned
    /// for the user to write down (it is not stored anywhere). The secure element's key, the
    /// user's key pair and the queue secret are renewed, the sending queue is wiped, and the
    /// session is locked. Unlock with the returned passphrase to start using it.
    public func createVault() throws(DeniableError) -> String {
        session = nil
        let passphrase = Passphrase.generate(wordCount: configuration.passphraseWordCount)
        try secureElement.regenerate()
        try writeFreshVault(passphrase: passphrase)
        try queue.wipe()
        logger.info("replaced the vault")
        return passphrase
    }

    /// Whether a session is unlocked (expiry is checked first).
    public var isUnlocked: Bool {
        expireIfDue()
        return session != nil
    }

    /// Unlocks the vault: derives the key (Argon2id and the secure element), opens the vault,
    /// moves the dead-drop messages addressed to the user into the mailbox, and saves.
    /// - Throws: ``DeniableError/invalidPassphrase(_:)`` for a malformed passphrase or a word not
    ///   in the list (before any key work); ``DeniableError/unlockFailed`` for a wrong passphrase
    ///   and for a vault that was never used alike, after the same work.
    public func unlock(passphrase: String) throws(DeniableError) {
        let normalized = try Passphrase.normalize(passphrase)
        guard let file = try AtomicFile.read(vaultURL) else { throw .storage("the vault file is missing") }
        let header = try Vault.Header.parse(file, expectedContentBytes: configuration.vaultContentBytes)
        let outer = try Vault.outerKey(salt: header.salt, secureElement: secureElement)
        let inner = try Vault.unwrap(file, header: header, outerKey: outer)
        let key = try Vault.vaultKey(passphrase: normalized, header: header, secureElement: secureElement)
        var contents = try Vault.openInner(inner, header: header, vaultKey: key)
        _ = try collectMessages(into: &contents)
        try save(&contents, header: header, vaultKey: key)
        session = Session(contents: contents, vaultKey: key, header: header, unlockedAt: clock())
        backgroundedAt = nil
        if let lifetime = configuration.sessionLifetime { schedule(after: lifetime) }
        logger.info("session unlocked")
    }

    /// Ends the session: removes expired messages, saves the vault, drops every secret from
    /// memory. While locked it re-encrypts the vault's outer layer, so the file changes the same
    /// way whether or not a session was open.
    public func lock() throws(DeniableError) {
        timer?.cancel()
        timer = nil
        guard var current = session else {
            if let file = try AtomicFile.read(vaultURL) { try rewrap(file) }
            return
        }
        session = nil
        backgroundedAt = nil
        let cutoff = clock().addingTimeInterval(-configuration.mailboxRetention)
        current.contents.messages.removeAll { $0.date < cutoff }
        try save(&current.contents, header: current.header, vaultKey: current.vaultKey)
        logger.info("session locked")
    }

    /// Runs the due checks after `seconds` (real time).
    private func schedule(after seconds: TimeInterval) {
        timer?.cancel()
        timer = Task { [weak self] in
            try? await Task.sleep(nanoseconds: UInt64(max(seconds, 0) * 1_000_000_000))
            guard !Task.isCancelled else { return }
            await self?.runDueChecks()
        }
    }

    private func runDueChecks() {
        expireIfDue()
        if let since = backgroundedAt, clock().timeIntervalSince(since) >= configuration.backgroundGrace {
            do { try lock() } catch { session = nil; logger.error("saving the vault after the background grace failed: \(error)") }
        }
    }

    private func expireIfDue() {
        guard let current = session, let lifetime = configuration.sessionLifetime else { return }
        if clock().timeIntervalSince(current.unlockedAt) >= lifetime {
            do { try lock() } catch { session = nil; logger.error("saving the vault at session expiry failed: \(error)") }
        }
    }

    private func requireSession() throws(DeniableError) -> Session {
        expireIfDue()
        guard let session else { throw .locked }
        return session
    }

    // MARK: Lifecycle triggers

    /// The app went to the background: the session ends now, or after
    /// ``DeniableConfiguration/backgroundGrace`` (checked on return).
    public func didEnterBackground() throws(DeniableError) {
        if configuration.backgroundGrace == 0 { try lock() } else if session != nil {
            backgroundedAt = clock()
            schedule(after: configuration.backgroundGrace)
        }
    }

    /// The app came back: the session ends if it stayed away longer than the grace period.
    public func willEnterForeground() throws(DeniableError) {
        guard let since = backgroundedAt else { return }
        backgroundedAt = nil
        if clock().timeIntervalSince(since) >= configuration.backgroundGrace {
            try lock()
        } else if let current = session, let lifetime = configuration.sessionLifetime {
            schedule(after: lifetime - clock().timeIntervalSince(current.unlockedAt))
        } else {
            timer?.cancel()
            timer = nil
        }
    }

    /// The user left the private views: the session ends.
    public func didLeavePrivateViews() throws(DeniableError) { try lock() }

    /// The app is exiting: the session ends and the vault is saved.
    public func close() throws(DeniableError) { try lock() }

    // MARK: Messages

    /// The mailbox, oldest first.
    public func mailbox() throws(DeniableError) -> [MailboxMessage] {
        try requireSession().contents.messages.sorted { $0.date < $1.date }
    }

    /// The user's public key (X25519), which journalists seal their replies to.
    public func userPublicKey() throws(DeniableError) -> Data {
        try requireSession().contents.userKey.publicKey
    }

    /// Real messages waiting in the sending queue.
    public func queuedMessageCount() throws(DeniableError) -> Int {
        queue.fillLevel(secret: try requireSession().contents.queueSecret)
    }

    /// Whether a sent message still waits in the sending queue.
    public func isWaiting(_ message: MailboxMessage) throws(DeniableError) -> Bool {
        _ = try requireSession()
        guard let hint = message.queueHint else { return false }
        return queue.contains(hint: hint)
    }

    /// Seals `text` for `recipient` to the newest verified CoverNode key, puts it in the front-most
    /// free slot of the sending queue, and records it in the mailbox.
    /// - Throws: ``DeniableError/locked``, ``DeniableError/noVerifiedKeys(_:)``,
    ///   ``DeniableError/invalidInput(_:)`` for a text that does not fit, ``DeniableError/queueFull``.
    @discardableResult
    public func send(_ text: String, to recipient: String) throws(DeniableError) -> MailboxMessage {
        var current = try requireSession()
        guard let coverNode = currentKeys()?.messaging.first else {
            throw .noVerifiedKeys("no verified CoverNode messaging key to seal the message to")
        }
        let plain = try MessagePadding.encode(peer: recipient, text: text,
                                              size: configuration.queueItemBytes - SealedBox.overhead)
        let item: Data
        do { item = try SealedBox.seal(plain, to: coverNode.key) } catch { throw .invalidInput("cannot seal to the CoverNode key: \(error)") }
        let hint = try queue.enqueue(item, secret: current.contents.queueSecret)
        let message = MailboxMessage(direction: .sent, peer: recipient, text: text, date: clock(), queueHint: hint)
        current.contents.messages.append(message)
        do { try save(&current.contents, header: current.header, vaultKey: current.vaultKey) } catch {
            // The mailbox could not record it: the message leaves the queue again, so nothing changed.
            try? queue.withdraw(item)
            throw error
        }
        session = current
        return message
    }

    // MARK: Background work (no secret needed)

    /// Sends the head of the sending queue through `send` and replaces it with a cover; when
    /// `send` throws, the head stays for the next attempt.
    @discardableResult
    public func sendNextQueued(_ send: @Sendable (Data) async throws -> Void) async throws -> Data {
        try await queue.sendHead(send)
    }

    /// Removes the head of the sending queue and appends a cover; returns the removed item.
    @discardableResult
    public func dequeue() throws(DeniableError) -> Data { try queue.dequeue() }

    /// Verifies and stores dead drops (merged by id, trimmed to the retention window before the
    /// newest); while unlocked, messages for the user move into the mailbox at once.
    /// - Returns: how many were kept, already known, rejected and trimmed.
    @discardableResult
    public func receive(deadDrops: [DeadDrop]) throws(DeniableError) -> DeadDropMerge {
        guard let signing = currentKeys()?.signing, !signing.isEmpty else {
            throw .noVerifiedKeys("no verified CoverNode signing key to check dead drops with")
        }
        let r = try deadDropStore.merge(deadDrops, signingKeys: signing, now: clock(),
                                        retention: configuration.deadDropRetention,
                                        maxFutureSkew: configuration.deadDropMaxFutureSkew,
                                        messageBytes: configuration.deadDropMessageBytes)
        if var current = session {
            if try collectMessages(into: &current.contents) > 0 {
                try save(&current.contents, header: current.header, vaultKey: current.vaultKey)
            }
            session = current
        }
        return DeadDropMerge(kept: r.kept, duplicates: r.duplicates, rejected: r.rejected, trimmed: r.trimmed)
    }

    /// The id after which to fetch dead drops (the newest stored), nil when none are stored.
    public func newestDeadDropID() throws(DeniableError) -> Int64? { try deadDropStore.newestID() }

    /// Trial-decrypts every stored dead drop message with the user's key; adds new ones.
    private func collectMessages(into contents: inout VaultContents) throws(DeniableError) -> Int {
        let size = configuration.deadDropMessageBytes
        var known = Set(contents.messages.map(\.id))
        var added = 0
        for drop in try deadDropStore.all() {
            var offset = 0, index: UInt64 = 0
            while offset + size <= drop.data.count {
                defer { offset += size; index += 1 }
                let id = Self.receivedID(drop: drop.id, index: index)
                guard !known.contains(id),
                      let plain = try? contents.userKey.openSealed(drop.data.subdata(in: offset..<(offset + size))),
                      let (peer, text) = MessagePadding.decode(plain)
                else { continue }
                contents.messages.append(MailboxMessage(id: id, direction: .received, peer: peer, text: text,
                                                        date: drop.createdAt, deadDropID: drop.id))
                known.insert(id)
                added += 1
            }
        }
        return added
    }

    /// A received message's id: its dead drop and position, so a message is added once.
    static func receivedID(drop: Int64, index: UInt64) -> UUID {
        var bytes = [UInt8](repeating: 0, count: 16)
        for i in 0..<8 {
            bytes[i] = UInt8((UInt64(bitPattern: drop) >> (56 - 8 * UInt64(i))) & 0xFF)
            bytes[8 + i] = UInt8((index >> (56 - 8 * UInt64(i))) & 0xFF)
        }
        return UUID(uuid: (bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                           bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]))
    }

    // MARK: Public keys

    private func currentKeys() -> VerifiedKeys? {
        // Verified again at the current time: a key that expired since the last load is dropped.
        guard let cached = try? keyCache.load(now: clock()) else { return keys }
        keys = cached
        coverKey.current = cached.messaging.first?.key
        return cached
    }

    private func refreshKeysIfStale() async {
        let now = clock()
        if let keys, now.timeIntervalSince(keys.fetchedAt) < configuration.publicKeyMaxAge { return }
        do { _ = try await refreshPublicKeys() } catch {
            logger.warning("fetching public keys failed; using the cached copy: \(error)")
        }
    }

    /// Fetches the key bundle now, caches it with the fetch time and returns what verifies.
    /// - Throws: ``DeniableError/noVerifiedKeys(_:)`` without a key source; the source's error
    ///   when fetching fails (the cache is kept).
    @discardableResult
    public func refreshPublicKeys() async throws -> VerifiedKeys {
        guard let keySource else { throw DeniableError.noVerifiedKeys("no key source is configured") }
        let json = try await keySource.fetchKeyBundle()
        let now = clock()
        try keyCache.store(json, fetchedAt: now)
        guard let loaded = try keyCache.load(now: now) else { throw DeniableError.storage("the key cache vanished") }
        keys = loaded
        coverKey.current = loaded.messaging.first?.key
        return loaded
    }

    /// The cached keys that verify now; nil when nothing is cached.
    public func verifiedKeys() -> VerifiedKeys? { currentKeys() }

    // MARK: Status and reset

    /// Sizes and counts; the queue fill level and mailbox size only while unlocked.
    public func status() throws(DeniableError) -> DeniableStatus {
        expireIfDue()
        let keys = currentKeys()
        return DeniableStatus(
            unlocked: session != nil,
            vaultFileBytes: Vault.fileLength(contentBytes: configuration.vaultContentBytes),
            queueFileBytes: SendingQueue.fileLength(slots: configuration.queueSlots, itemBytes: configuration.queueItemBytes),
            queueSlots: configuration.queueSlots,
            queuedMessages: session.map { queue.fillLevel(secret: $0.contents.queueSecret) },
            mailboxMessages: session?.contents.messages.count,
            deadDrops: try deadDropStore.all().count,
            publicKeysFetchedAt: keys?.fetchedAt,
            verifiedKeys: (keys?.messaging.count ?? 0) + (keys?.signing.count ?? 0))
    }

    /// A cover item: a zero byte (no recipient) and random bytes, sealed to the CoverNode key (to
    /// a throwaway key when none is verified yet), so covers and real items are the same kind of
    /// ciphertext and only the CoverNode can tell them apart.
    static func cover(itemBytes: Int, to key: Data?) -> Data {
        let target = key ?? X25519KeyPair.generate().publicKey
        var plain = Data([0])
        plain.append(SecureRandom.bytes(itemBytes - SealedBox.overhead - 1))
        return (try? SealedBox.seal(plain, to: target)) ?? SecureRandom.bytes(itemBytes)
    }
}

/// What ``DeniableStorage/receive(deadDrops:)`` did.
public struct DeadDropMerge: Sendable, Equatable {
    /// New dead drops stored.
    public let kept: Int
    /// Dead drops already stored (merged by id).
    public let duplicates: Int
    /// Dead drops refused: bad signature, dated too far in the future, or malformed.
    public let rejected: Int
    /// Dead drops removed as older than the retention window before the newest.
    public let trimmed: Int
}

/// The CoverNode key covers are sealed to, shared with the queue's cover maker.
final class CoverKey: @unchecked Sendable {
    private let lock = NSLock()
    private var key: Data?

    init(_ key: Data?) { self.key = key }

    var current: Data? {
        get { lock.withLock { key } }
        set { lock.withLock { key = newValue } }
    }
}
