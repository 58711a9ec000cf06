// The deniable store: vault, sending queue, dead drops and public keys in one folder, and the
// session that unlocks them.

import CofferCrypto
import CofferSync
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
    /// What the last app-start routine found and did.
    public let lastStart: DeniableStartReport?
}

/// What one run of the app-start routine (``DeniableStorage/appDidStart()``) did. It does the
/// same file work for every install; these fields say what it found, for status screens and
/// support, and are never written anywhere.
public struct DeniableStartReport: Sendable, Equatable {
    /// Files that did not exist and were made (every file at the first start).
    public var created: [String] = []
    /// Files that were damaged, truncated or unreadable with the device key, and were replaced
    /// by fresh ones. Whatever they held is gone: nobody could read it any more.
    public var replaced: [String] = []
    /// Files converted from an older layout (their contents kept).
    public var converted: [String] = []
    /// Whether the public keys were fetched (they were missing or older than the maximum age).
    public var publicKeysRefreshed = false
    /// New dead drops stored from the dead-drop source.
    public var deadDropsReceived = 0
    /// The background run this start caught up because it was due (see
    /// ``DeniableStorage/runBackgroundSend()``); nil when none was due.
    public var backgroundRun: BackgroundSendReport?

    /// An empty report.
    public init() {}
}

/// Fetches the dead drops a CoverDrop service publishes for all its users (network access is
/// the app's business): the body of CoverDrop's `GET /v1/user/dead-drops?ids_greater_than=N`.
public protocol DeadDropSource: Sendable {
    /// The dead-drop list (``DeadDropList``) of those published after `id` (0: every one the
    /// service still serves).
    func fetchDeadDrops(idsGreaterThan id: Int64) async throws -> Data
}

/// CoverDrop-style deniable storage in one folder:
///
///     vault                    fixed-size, two-layer encrypted vault (see ``Vault``)
///     sending-queue            fixed-size private sending queue (see ``SendingQueue``)
///     storage.key              the key of the vault's and the queue's outer layers, mode 0600
///     secure-element-p256.key  the software secure element's P-256 key, mode 0600 (stand-in
///                              for hardware, absent when the app passes its own element)
///     dead-drops.sqlite        dead drops as received
///     public-keys.json         the public key bundle and its fetch time
///
/// Opening it runs the app-start routine (``appDidStart()``), which does the same file work for
/// every install whether or not its user ever set up the feature: the secure-element key is made
/// once, at the first start; the vault (made under a random passphrase nobody sees when absent)
/// and the sending queue are rewritten with fresh randomness; public keys are fetched when
/// stale; the service's dead drops are fetched and merged, and expired ones pruned. A damaged,
/// truncated or missing vault, queue or key file is replaced by a fresh one. Afterwards every
/// file in the folder is mode 0600, the folder 0700, and their modification times are the
/// start's time (writes later in the same run keep that time).
///
/// A session is unlocked with the passphrase and ends on ``lock()``, on leaving the private
/// views, on going to the background, at an optional expiry time, and at exit (``close()``);
/// ending it saves the vault and drops every secret from memory. Nothing is logged at `.info`
/// or above that differs between an install that uses the feature and one that does not.
public actor DeniableStorage {
    /// The folder holding the files.
    public nonisolated let folder: URL
    /// Sizes, costs and time limits.
    public nonisolated let configuration: DeniableConfiguration
    let secureElement: SecureElement
    let keySource: PublicKeySource?
    let deadDropSource: DeadDropSource?
    let transport: DeniableTransport?
    let clock: @Sendable () -> Date
    let random: @Sendable () -> Double
    let queue: SendingQueue
    let deadDropStore: DeadDropStore
    let keyCache: PublicKeyCache
    let logger = Logger(label: "coffer.deniable")
    let coverKey: CoverKey
    /// The outer layers' key (``StorageKey``), read at open.
    let storageKey: SecretKey
    /// The former HMAC stand-in's key, while files written under it may still need converting.
    private var former: LegacyElementKey?
    /// The default secure element's key file name.
    static let deviceKeyName = "secure-element-p256.key"

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
    /// The wall-clock time of the last app start: every deniable file carries it as its mtime.
    private var startedAt = Date()
    private var lastStart: DeniableStartReport?
    /// Held alone by one vault operation at a time (see ``enterVaultOperation()``).
    private let vaultOperation = AsyncGate()

    var vaultURL: URL { folder.appendingPathComponent("vault") }
    /// The lock file every read-modify-write of the vault and the queue holds, in any process
    /// (see ``exclusive(_:)``). Made at every start, used or not, and never removed, so it is
    /// the same empty 0600 file in every install.
    static let lockName = ".coffer-lock"
    nonisolated var lockPath: String { folder.appendingPathComponent(Self.lockName).path }

    deinit { timer?.cancel() }

    /// Opens deniable storage trusting one organisation key; see
    /// ``init(folder:configuration:trustAnchors:keySource:deadDropSource:transport:secureElement:clock:random:)``.
    public init(
        folder: URL, configuration: DeniableConfiguration = .init(), trustAnchor: TrustAnchor,
        keySource: PublicKeySource? = nil, deadDropSource: DeadDropSource? = nil,
        transport: DeniableTransport? = nil,
        secureElement: SecureElement? = nil,
        clock: @escaping @Sendable () -> Date = { Date() },
        random: @escaping @Sendable () -> Double = BackgroundDelay.secureUniform
    ) async throws(DeniableError) {
        try await self.init(
            folder: folder, configuration: configuration, trustAnchors: [trustAnchor], keySource: keySource,
            deadDropSource: deadDropSource, transport: transport, secureElement: secureElement, clock: clock, random: random)
    }

    /// Opens (creating when absent) deniable storage in `folder` and runs the app-start routine
    /// (see ``appDidStart()``).
    /// - Parameters:
    ///   - folder: where the vault, queue and caches live (made 0700 when missing).
    ///   - configuration: sizes, costs and timeouts (the defaults are CoverDrop's).
    ///   - trustAnchors: the bundled organisation keys that sign published keys (CoverDrop's apps
    ///     bundle several during a rotation; ``TrustAnchor/load(folder:)`` reads `*.pub.json`).
    ///   - keySource: fetches the key bundle when the cache is missing or older than
    ///     ``DeniableConfiguration/publicKeyMaxAge`` (nil: use the cache only).
    ///   - deadDropSource: fetches the service's dead drops at every start (nil: dead drops
    ///     arrive only through ``receive(deadDrops:)``).
    ///   - transport: sends queue items for the background sender (nil: the app sends with
    ///     ``sendNextQueued(_:)`` or ``dequeue()`` itself, and no run is caught up at start).
    ///   - secureElement: the device key (default: a ``FileSecureElement`` in the folder).
    ///   - clock: the current time (injected in tests).
    ///   - random: numbers in 0..<1 for the background sender's delays (default: the system's
    ///     secure random source; injected in tests).
    /// - Throws: ``DeniableError`` when the configuration is invalid, the secure element refuses,
    ///   or the folder cannot be written. Damaged files are replaced, not reported as errors.
    public init(
        folder: URL, configuration: DeniableConfiguration = .init(), trustAnchors: [TrustAnchor],
        keySource: PublicKeySource? = nil, deadDropSource: DeadDropSource? = nil,
        transport: DeniableTransport? = nil,
        secureElement: SecureElement? = nil,
        clock: @escaping @Sendable () -> Date = { Date() },
        random: @escaping @Sendable () -> Double = BackgroundDelay.secureUniform
    ) async throws(DeniableError) {
        try configuration.validate()
        guard !trustAnchors.isEmpty else { throw .invalidInput("at least one trust anchor (organisation key) is needed") }
        try AtomicFile.ensureFolder(folder)
        // A folder its owner made unreadable would otherwise look empty (every file "missing").
        guard access(folder.path, R_OK | W_OK | X_OK) == 0 else {
            throw .storage(
                "cannot read and write \(folder.path) (\(String(cString: strerror(errno)))); give its owner read, write and search permission again (chmod u+rwx)",
                cause: StorageCause(errno: errno))
        }
        // Temporary files of vault, queue or key writes killed before their rename: an old
        // vault's copy would still open under its old passphrase. Done at every open, used or not.
        DurableFile.sweepTemporaries(in: folder)
        self.folder = folder
        self.configuration = configuration
        let keyFile = folder.appendingPathComponent(Self.deviceKeyName)
        self.secureElement = secureElement ?? FileSecureElement(keyFile: keyFile)
        self.keySource = keySource
        self.deadDropSource = deadDropSource
        self.transport = transport
        self.clock = clock
        self.random = random
        let log = Logger(label: "coffer.deniable")
        var report = DeniableStartReport()
        startedAt = Date()
        let lockPath = folder.appendingPathComponent(Self.lockName).path

        // The device key first: when it had to be made, what it protected is replaced below.
        // Under the folder's lock: processes starting at once make one key between them.
        let se = self.secureElement
        let storage = StorageKey(url: folder.appendingPathComponent("storage.key"))
        let (storageKey, former, deviceKeyRenewed) = try Self.exclusive(lockPath) {
            () throws(DeniableError) -> (SecretKey, LegacyElementKey?, Bool) in
            let renewed = try Self.prepare(se, into: &report)
            let (key, created, replaced) = try storage.prepare()
            if created { report.created.append("storage.key") }
            if replaced { report.replaced.append("storage.key") }
            return (key, try LegacyElementKey.load(folder: folder), renewed)
        }
        self.storageKey = storageKey
        self.former = former

        let cache = PublicKeyCache(url: folder.appendingPathComponent("public-keys.json"), anchors: trustAnchors)
        self.keyCache = cache
        var loaded: VerifiedKeys?
        do { loaded = try cache.load(now: clock()) } catch {
            log.debug("replacing an unreadable public-key cache")
            try Self.remove(cache.url)
            report.replaced.append("public-keys.json")
        }

        let dropsURL = folder.appendingPathComponent("dead-drops.sqlite")
        let dropsExisted = FileManager.default.fileExists(atPath: dropsURL.path)
        do { self.deadDropStore = try DeadDropStore(url: dropsURL) } catch {
            log.debug("replacing an unreadable dead-drop database")
            for suffix in ["", "-journal", "-wal", "-shm"] { try Self.remove(URL(fileURLWithPath: dropsURL.path + suffix)) }
            self.deadDropStore = try DeadDropStore(url: dropsURL)
            report.replaced.append("dead-drops.sqlite")
        }
        if !dropsExisted { report.created.append("dead-drops.sqlite") }

        let itemBytes = configuration.queueItemBytes
        let coverKey = CoverKey(loaded?.wrappingKeys ?? [])
        self.coverKey = coverKey
        let queueURL = folder.appendingPathComponent("sending-queue")
        let makeQueue = { () throws(DeniableError) -> SendingQueue in
            try SendingQueue(
                url: queueURL, slots: configuration.queueSlots, itemBytes: itemBytes, storageKey: storageKey, former: former
            ) {
                UserMessage.coverItem(coverNodeKeys: coverKey.current)
            }
        }
        // Under the folder's lock: a queue another process is writing is read whole, and
        // processes starting at once make one queue.
        self.queue = try Self.exclusive(lockPath) { () throws(DeniableError) -> SendingQueue in
            let queueExisted = FileManager.default.fileExists(atPath: queueURL.path)
            if !queueExisted { report.created.append("sending-queue") }
            do throws(DeniableError) {
                let queue = try makeQueue()
                if queue.converted { report.converted.append("sending-queue") }
                return queue
            } catch {
                guard case .corrupted = error else { throw error }
                log.debug("replacing an unreadable sending queue")
                try Self.remove(queueURL)
                report.replaced.append("sending-queue")
                return try makeQueue()
            }
        }
        // Debug builds only: lets tests kill a conversion between the queue and the vault.
        if report.converted.contains("sending-queue") { TestPause.at("deniable-queue-converted") }
        self.keys = loaded
        // A queue made now without verified keys holds covers no CoverNode can open: recorded,
        // so they are replaced when keys first arrive and never sent before.
        if report.created.contains("sending-queue") || report.replaced.contains("sending-queue"), coverKey.current.isEmpty {
            let url = folder.appendingPathComponent(BackgroundSchedule.fileName)
            try Self.exclusive(lockPath) { () throws(DeniableError) in
                var state = BackgroundSchedule.load(url) ?? BackgroundSchedule()
                state.coversVerified = 0
                try state.save(url)
            }
        }
        try await runStartRoutine(report, deviceKeyRenewed: deviceKeyRenewed)
    }

    /// The app-start routine, for an app that keeps this instance across launches of its UI
    /// (opening ``DeniableStorage`` runs it already). It does the same file work for every
    /// install, used or not: the vault and the sending queue are rewritten with fresh randomness
    /// (a damaged or missing one is replaced by a fresh one), public keys are fetched when stale,
    /// the dead-drop source's new dead drops are merged and expired ones pruned, file modes are
    /// set to 0600 (folder 0700), and modification times to this start's time. Trial decryption
    /// of dead drops waits for ``unlock(passphrase:)``. Failures to reach the network are logged
    /// and do not throw.
    /// - Returns: what it found and did.
    @discardableResult
    public func appDidStart() async throws(DeniableError) -> DeniableStartReport {
        startedAt = Date()
        var report = DeniableStartReport()
        let renewed = try Self.prepare(secureElement, into: &report)
        try await runStartRoutine(report, deviceKeyRenewed: renewed)
        return lastStart ?? report
    }

    private func runStartRoutine(_ start: DeniableStartReport, deviceKeyRenewed: Bool) async throws(DeniableError) {
        var report = start
        // The queue rewrites its file (as another process may have left it, else from memory,
        // which also repairs a file damaged since it was read), under a fresh outer salt and nonce.
        try exclusive { () throws(DeniableError) in
            queue.reload()
            try queue.rewrite()
        }
        // Under the vault-operation gate: a create or unlock waiting for its key must not see
        // the vault replaced by a start that had to make a fresh one.
        await enterVaultOperation()
        defer { leaveVaultOperation() }
        try await startVault(&report, deviceKeyRenewed: deviceKeyRenewed)
        try retireFormerKey(&report)
        report.publicKeysRefreshed = await refreshKeysIfStale()
        _ = currentKeys()
        try exclusive { () throws(DeniableError) in try refillCoversIfNeeded() }
        report.deadDropsReceived = await fetchDeadDrops()
        // A background run the system skipped happens now; none owed: a failsafe one is.
        report.backgroundRun = try await catchUpBackgroundSend(failsafeExtra: configuration.backgroundStartExtraDelay)
        lastStart = report
        settle()
    }

    /// Makes sure the device key exists (``SecureElement/prepare()``) and records in `report`
    /// whether it had to be created (none yet) or replaced (the stored one was unreadable).
    /// - Returns: whether the key is new (a vault made under the old one cannot be unlocked).
    private static func prepare(_ secureElement: SecureElement, into report: inout DeniableStartReport) throws(DeniableError) -> Bool {
        let keyFile = (secureElement as? FileSecureElement)?.keyFile
        let name = keyFile?.lastPathComponent ?? "secure-element"
        let keyExisted = keyFile.map { FileManager.default.fileExists(atPath: $0.path) } ?? true
        guard try secureElement.prepare() else { return false }
        if keyExisted { report.replaced.append(name) } else { report.created.append(name) }
        return true
    }

    /// Once the vault and the queue are in version 3, the former stand-in's key file is removed
    /// (a converted vault carries its key inside its outer layer). Last step of a conversion: a
    /// start killed before it converts again from what is on disk.
    private func retireFormerKey(_ report: inout DeniableStartReport) throws(DeniableError) {
        guard former != nil else { return }
        try exclusive { () throws(DeniableError) in
            try Self.remove(folder.appendingPathComponent(LegacyElementKey.fileName))
        }
        former = nil
        report.converted.append(LegacyElementKey.fileName)
    }

    /// Runs `body` holding the folder's lock between processes (an exclusive `flock(2)` on
    /// ``lockName``, made when missing): every read-modify-write of the vault and the sending
    /// queue runs under it, re-reading the file first, so processes sharing the folder (an app,
    /// its extensions, the command line) never write back a copy older than another's change.
    /// Never held across an `await`, and never nested.
    static func exclusive<R>(_ lockPath: String, _ body: () throws(DeniableError) -> R) throws(DeniableError) -> R {
        try ProcessLock.withLock(at: lockPath, failure: { DeniableError.storage($0.message, cause: $0.storageCause) }, body)
    }

    func exclusive<R>(_ body: () throws(DeniableError) -> R) throws(DeniableError) -> R {
        try Self.exclusive(lockPath, body)
    }

    /// Folder lock held. The session's vault contents as the file has them now (another process
    /// may have saved the vault since this one read it); the session's own when the file is
    /// missing or does not open; nil when the file is another vault (a create in another
    /// process replaced it), which this session must not write over.
    private func currentContents(_ current: Session) throws(DeniableError) -> VaultContents? {
        guard let file = try AtomicFile.read(vaultURL), let opened = try? openVault(file) else { return current.contents }
        guard opened.header == current.header else { return nil }
        return (try? Vault.openInner(opened.inner, header: current.header, vaultKey: current.vaultKey)) ?? current.contents
    }

    /// Removes a file; a missing one is fine.
    private static func remove(_ url: URL) throws(DeniableError) {
        do { try DurableFile.remove(url) } catch { throw .storage(error.message, cause: StorageCause(error)) }
    }

    /// Sets the folder to 0700 and every file in it to 0600, and gives them all this start's
    /// modification time, so that a write later in the run (a send, an unlock) does not show in
    /// the files' times. Called after every operation that writes.
    func settle() {
        let fm = FileManager.default
        let names = (try? fm.contentsOfDirectory(atPath: folder.path)) ?? []
        for name in names where !name.hasPrefix(".") {
            let path = folder.appendingPathComponent(name).path
            try? fm.setAttributes([.posixPermissions: 0o600, .modificationDate: startedAt], ofItemAtPath: path)
        }
        try? fm.setAttributes([.posixPermissions: 0o700, .modificationDate: startedAt], ofItemAtPath: folder.path)
    }

    // MARK: Vault

    /// A vault file without its outer layer (converting a format-1 or format-2 file read with the
    /// former stand-in's key while that is still around).
    private func openVault(_ file: Data) throws(DeniableError) -> Vault.Opened {
        try Vault.open(
            file, expectedContentBytes: configuration.vaultContentBytes, storageKey: storageKey, former: former,
            rounds: configuration.secureElementRounds)
    }

    /// Rewrites the vault's outer layer (converting an earlier format); creates the vault under a
    /// random passphrase when it is missing, and replaces it when it cannot be read (damaged,
    /// truncated, written under another storage key) or its device key is new — for every
    /// install alike, since nobody can open such a vault.
    private func startVault(_ report: inout DeniableStartReport, deviceKeyRenewed: Bool) async throws(DeniableError) {
        // Under the folder's lock: the outer layer is rewritten over what is on disk now.
        var seen: Data?
        let rewrapped = try exclusive { () throws(DeniableError) -> Bool in
            guard let file = try AtomicFile.read(vaultURL) else { return false }
            seen = file
            let opened: Vault.Opened
            do throws(DeniableError) { opened = try openVault(file) } catch {
                guard case .corrupted = error else { throw error }
                return false
            }
            // A version-3 vault's key needs the device key that was just replaced.
            if deviceKeyRenewed, !opened.converted { return false }
            if opened.converted { report.converted.append("vault") }
            try AtomicFile.write(
                Vault.wrap(inner: opened.inner, header: opened.header, carried: opened.carried, storageKey: storageKey), to: vaultURL)
            return true
        }
        if rewrapped {
            // Debug builds only: lets tests kill a conversion before the former key is removed.
            if report.converted.contains("vault") { TestPause.at("deniable-vault-converted") }
            return
        }
        // Missing or unusable: a fresh vault. Its key takes seconds, made outside the lock;
        // written only if no other process made a readable vault meanwhile. Its key needs the
        // secure element: on a locked phone (a background launch) the start goes on without it
        // and the next start makes it — the same for every install.
        let header: Vault.Header
        let key: SecretKey
        do throws(DeniableError) {
            (header, key) = try await freshVaultKey(passphrase: Passphrase.generate(wordCount: configuration.passphraseWordCount))
        } catch {
            guard case .secureElement = error else { throw error }
            logger.debug("the secure element is unavailable; the vault is made at the next start")
            return
        }
        try exclusive { () throws(DeniableError) in
            let existing = try AtomicFile.read(vaultURL)
            if let existing, existing != seen, (try? openVault(existing)) != nil { return }
            var contents = VaultContents.fresh()
            try save(&contents, header: header, vaultKey: key)
            logger.debug(existing == nil ? "created the vault" : "replaced an unreadable vault")
            if existing == nil { report.created.append("vault") } else { report.replaced.append("vault") }
        }
    }

    /// Folder lock held.
    private func rewrap(_ file: Data) throws(DeniableError) {
        let opened = try openVault(file)
        try AtomicFile.write(
            Vault.wrap(inner: opened.inner, header: opened.header, carried: opened.carried, storageKey: storageKey), to: vaultURL)
    }

    /// The header (new salt) and key of a new vault under `passphrase`; nothing is written. The
    /// costs are `costs`' (the install's vault) when given, else the configuration's.
    private func freshVaultKey(passphrase: String, costs: Vault.Header? = nil) async throws(DeniableError) -> (Vault.Header, SecretKey) {
        let header = Vault.Header(
            contentBytes: configuration.vaultContentBytes, kdf: costs?.kdf ?? configuration.passphraseKDF,
            rounds: costs?.rounds ?? configuration.secureElementRounds, salt: SecureRandom.bytes(Argon2idParameters.saltByteCount))
        return (header, try await Self.deriveCurrentKey(passphrase: passphrase, header: header, secureElement: secureElement))
    }

    private func save(_ contents: inout VaultContents, header: Vault.Header, vaultKey: SecretKey) throws(DeniableError) {
        var plain = try contents.padded(size: header.contentBytes)
        defer { SecureMemory.wipe(&plain) }
        try AtomicFile.write(Vault.seal(plain, header: header, vaultKey: vaultKey, storageKey: storageKey), to: vaultURL)
    }

    /// Replaces the vault with a new one under a freshly generated passphrase, which is returned
    /// for the user to write down (it is not stored anywhere). The vault's Argon2id salt, the
    /// user's key pair and the queue secret are new, the sending queue holds only fresh covers,
    /// and the session is locked. The secure element's key stays (it was made at the first
    /// start, for every install). Unlock with the returned passphrase to start using it.
    /// It succeeds whatever the old vault's state: the app-start routine has already replaced a
    /// damaged one.
    public func createVault() async throws(DeniableError) -> String {
        await enterVaultOperation()
        defer { leaveVaultOperation() }
        session = nil
        DurableFile.sweepTemporaries(in: folder)
        let passphrase = Passphrase.generate(wordCount: configuration.passphraseWordCount)
        // The install's costs, as its first start set them: a vault made later by its user must
        // not show (to whoever opens the outer layer) costs an unused install's vault lacks.
        let costs = (try? AtomicFile.read(vaultURL)).flatMap { $0 }.flatMap { try? openVault($0).header }
        let (header, key) = try await freshVaultKey(passphrase: passphrase, costs: costs)
        try exclusive { () throws(DeniableError) in
            var contents = VaultContents.fresh() // new keys and queue secret, empty mailbox
            try save(&contents, header: header, vaultKey: key)
            try queue.wipe()
        }
        settle()
        logger.debug("vault operation finished")
        return passphrase
    }

    /// The passphrase's version-3 key (Argon2id and the secure element's rounds) on a worker
    /// thread: the seconds it takes never occupy the actor's executor (a thread of Swift's
    /// cooperative pool).
    private static func deriveCurrentKey(passphrase: String, header: Vault.Header, secureElement: SecureElement) async throws(DeniableError)
        -> SecretKey
    {
        try await offCaller { () throws(DeniableError) -> SecretKey in
            try Vault.currentKey(passphrase: passphrase, header: header, secureElement: secureElement)
        }
    }

    /// The passphrase's version-3 and former keys (``Vault/Keys``), on a worker thread.
    private static func deriveKeys(
        passphrase: String, header: Vault.Header, carried: SecretKey, secureElement: SecureElement
    ) async throws(DeniableError) -> Vault.Keys {
        try await offCaller { () throws(DeniableError) -> Vault.Keys in
            try Vault.keys(passphrase: passphrase, header: header, carried: carried, secureElement: secureElement)
        }
    }

    /// Vault operations that suspend for Argon2id (create, unlock) run one at a time: while one
    /// waits for its key, another cannot replace the vault under it. Calls that do not suspend
    /// (lock, send, receive) run between them as before; an unlock reads the vault again after
    /// its key is ready, so what they saved meanwhile is kept. The app-start routine takes the
    /// gate too, as it may write a fresh vault.
    private func enterVaultOperation() async {
        await vaultOperation.enterExclusive()
    }

    private func leaveVaultOperation() {
        vaultOperation.leaveExclusive()
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
    public func unlock(passphrase: String) async throws(DeniableError) {
        let normalized = try Passphrase.normalize(passphrase)
        await enterVaultOperation()
        defer { leaveVaultOperation() }
        guard let file = try AtomicFile.read(vaultURL) else { throw .storage("the vault file is missing") }
        let opened = try openVault(file)
        let header = opened.header
        let keys = try await Self.deriveKeys(passphrase: normalized, header: header, carried: opened.carried, secureElement: secureElement)
        // Read again after the wait: calls that do not take the gate (a send, a lock, a receive),
        // here or in another process, may have saved the vault meanwhile, and what they saved
        // must not be lost. From here on nothing suspends, so no other call runs until the
        // session is set; the folder's lock keeps other processes out until it is saved.
        // A converted vault (opened by its former key) is saved only once re-keyed, below.
        let (opening, former) = try exclusive { () throws(DeniableError) -> (VaultContents, Bool) in
            var (contents, former) = try openCurrentVault(header: header, keys: keys)
            guard !former else { return (contents, true) }
            _ = try collectMessages(into: &contents)
            try save(&contents, header: header, vaultKey: keys.current)
            return (contents, false)
        }
        var contents = opening
        var sessionHeader = header
        var sessionKey = keys.current
        if former {
            // Re-keyed under the version-3 key: a new salt, the same costs, fresh carried bytes —
            // the vault then looks as every other vault does, and no longer needs the former key.
            let newHeader = header.resalted()
            let newKey = try await Self.deriveCurrentKey(passphrase: normalized, header: newHeader, secureElement: secureElement)
            contents = try exclusive { () throws(DeniableError) -> VaultContents in
                var (contents, _) = try openCurrentVault(header: header, keys: keys)
                _ = try collectMessages(into: &contents)
                try save(&contents, header: newHeader, vaultKey: newKey)
                return contents
            }
            sessionHeader = newHeader
            sessionKey = newKey
        }
        settle()
        session = Session(contents: contents, vaultKey: sessionKey, header: sessionHeader, unlockedAt: clock())
        backgroundedAt = nil
        if let lifetime = configuration.sessionLifetime { schedule(after: lifetime) }
        logger.debug("session event")
    }

    /// Folder lock held. The vault as the file has it now, opened with the passphrase's keys.
    /// - Throws: ``DeniableError/unlockFailed`` when the file is another vault than `header`'s,
    ///   or no key opens it.
    private func openCurrentVault(header: Vault.Header, keys: Vault.Keys) throws(DeniableError) -> (VaultContents, former: Bool) {
        guard let current = try AtomicFile.read(vaultURL) else { throw .storage("the vault file is missing") }
        let reopened = try openVault(current)
        guard reopened.header == header else { throw .unlockFailed }
        return try Vault.openInner(reopened.inner, header: header, keys: keys)
    }

    /// Ends the session: removes expired messages, saves the vault, drops every secret from
    /// memory. While locked it re-encrypts the vault's outer layer, so the file changes the same
    /// way whether or not a session was open.
    public func lock() throws(DeniableError) {
        timer?.cancel()
        timer = nil
        guard let current = session else {
            try exclusive { () throws(DeniableError) in
                if let file = try AtomicFile.read(vaultURL) { try rewrap(file) }
            }
            settle()
            return
        }
        session = nil
        backgroundedAt = nil
        let cutoff = clock().addingTimeInterval(-configuration.mailboxRetention)
        try exclusive { () throws(DeniableError) in
            // What is on disk now (other processes may have added to it), pruned and saved; a
            // vault another process made in its place is only re-wrapped, as when locked.
            guard var contents = try currentContents(current) else {
                if let file = try AtomicFile.read(vaultURL) { try rewrap(file) }
                return
            }
            contents.messages.removeAll { $0.date < cutoff }
            try save(&contents, header: current.header, vaultKey: current.vaultKey)
        }
        settle()
        logger.debug("session event")
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
            do { try lock() } catch {
                session = nil
                logger.debug("saving the vault at a session end failed")
            }
        }
    }

    private func expireIfDue() {
        guard let current = session, let lifetime = configuration.sessionLifetime else { return }
        if clock().timeIntervalSince(current.unlockedAt) >= lifetime {
            do { try lock() } catch {
                session = nil
                logger.debug("saving the vault at a session end failed")
            }
        }
    }

    private func requireSession() throws(DeniableError) -> Session {
        expireIfDue()
        guard let session else { throw .locked }
        return session
    }

    // MARK: Lifecycle triggers

    /// The app went to the background: the session ends now, or after
    /// ``DeniableConfiguration/backgroundGrace`` (checked on return), and a background run is
    /// owed after a random delay (``scheduleBackgroundSend()``), as CoverDrop's apps schedule
    /// their send job whenever they leave the foreground.
    /// - Returns: when the owed background run is due: schedule the app's background task then.
    @discardableResult
    public func didEnterBackground() throws(DeniableError) -> Date {
        if configuration.backgroundGrace == 0 {
            try lock()
        } else if session != nil {
            backgroundedAt = clock()
            schedule(after: configuration.backgroundGrace)
        }
        return try scheduleBackgroundSend()
    }

    /// The app came back: the session ends if it stayed away longer than the grace period; a
    /// background run the system skipped is done now when it is due; dead drops are fetched
    /// when the last fetch is older than ``DeniableConfiguration/deadDropFetchInterval``.
    /// Network failures are logged and do not throw.
    public func willEnterForeground() async throws(DeniableError) {
        if let since = backgroundedAt {
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
        _ = await fetchDeadDrops()
        _ = try await catchUpBackgroundSend(failsafeExtra: nil)
        settle()
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
        let secret = try requireSession().contents.queueSecret
        queue.reload()
        return queue.fillLevel(secret: secret)
    }

    /// Whether a sent message still waits in the sending queue.
    public func isWaiting(_ message: MailboxMessage) throws(DeniableError) -> Bool {
        _ = try requireSession()
        guard let hint = message.queueHint else { return false }
        queue.reload()
        return queue.contains(hint: hint)
    }

    /// Puts `text` for the journalist `recipient` in the front-most free slot of the sending
    /// queue as CoverDrop's clients send it, and records it in the mailbox: the text (gzipped and
    /// padded to 512 bytes) with the user's public key as the reply key, in an AnonymousBox to the
    /// journalist's newest verified messaging key, behind the journalist's recipient tag, in a
    /// MultiAnonymousBox to the CoverNodes' newest messaging keys (773 bytes).
    /// - Throws: ``DeniableError/locked``; ``DeniableError/noVerifiedKeys(_:)`` when the
    ///   journalist or the CoverNodes have no verified key; ``DeniableError/invalidInput(_:)`` for
    ///   an empty text or one that compresses past CoverDrop's 510-byte limit;
    ///   ``DeniableError/queueFull``.
    @discardableResult
    public func send(_ text: String, to recipient: String) throws(DeniableError) -> MailboxMessage {
        var current = try requireSession()
        guard !text.isEmpty else { throw .invalidInput("a message must not be empty") }
        let keys = currentKeys()
        guard let coverNodes = keys?.wrappingKeys, !coverNodes.isEmpty else {
            throw .noVerifiedKeys("no verified CoverNode messaging key to wrap the message for")
        }
        guard let journalistKey = keys?.journalistMessagingKeys[recipient]?.first else {
            throw .noVerifiedKeys(
                "no verified messaging key for the journalist \"\(recipient)\" (is the id right? the key bundle lists the journalists)")
        }
        let item = try UserMessage.realItem(
            text: text, replyKey: current.contents.userKey.publicKey, journalistID: recipient, journalistKey: journalistKey,
            coverNodeKeys: coverNodes)
        defer { settle() }
        // Under the folder's lock, over the queue and the vault as they are on disk now: a send
        // or dequeue in another process since this session began is kept.
        return try exclusive { () throws(DeniableError) -> MailboxMessage in
            guard let contents = try currentContents(current) else {
                session = nil
                throw .storage("another process replaced the vault (a new vault was created) since this session began; unlock again")
            }
            current.contents = contents
            queue.reload()
            let hint = try queue.enqueue(item, secret: current.contents.queueSecret)
            let message = MailboxMessage(direction: .sent, peer: recipient, text: text, date: clock(), queueHint: hint)
            current.contents.messages.append(message)
            do throws(DeniableError) { try save(&current.contents, header: current.header, vaultKey: current.vaultKey) } catch {
                // The mailbox could not record it: the message leaves the queue again, so nothing changed.
                try? queue.withdraw(item)
                throw error
            }
            session = current
            return message
        }
    }

    // MARK: Background work (no secret needed)

    /// Sends the head of the sending queue through `send` and replaces it with a cover; when
    /// `send` throws, the head stays for the next attempt.
    @discardableResult
    public func sendNextQueued(_ send: @Sendable (Data) async throws -> Void) async throws -> Data {
        defer { settle() }
        let head = try exclusive { () throws(DeniableError) -> Data in
            queue.reload()
            return queue.peek()
        }
        try await send(head)
        // Exactly that item leaves (wherever sends meanwhile, in any process, moved it).
        try exclusive { () throws(DeniableError) in
            queue.reload()
            try queue.withdraw(head)
        }
        return head
    }

    /// Removes the head of the sending queue and appends a cover; returns the removed item.
    @discardableResult
    public func dequeue() throws(DeniableError) -> Data {
        defer { settle() }
        return try exclusive { () throws(DeniableError) -> Data in
            queue.reload()
            return try queue.dequeue()
        }
    }

    /// Stores dead drops as received (merged by id, trimmed to the retention window before the
    /// newest and to ``DeniableConfiguration/deadDropMaxStored``); while unlocked, messages for the
    /// user move into the mailbox at once. Signatures are checked again at every read, under the
    /// keys verified then: a drop no verified key signs yet is kept (a CoverNode key may arrive
    /// with the next key refresh) and skipped until one does.
    /// - Returns: how many were new and verified now, new and not verifiable yet, already known,
    ///   refused (malformed, or dated too far ahead) and trimmed.
    @discardableResult
    public func receive(deadDrops: [DeadDrop]) throws(DeniableError) -> DeadDropMerge {
        let result = try merge(deadDrops: deadDrops)
        if var current = session {
            try exclusive { () throws(DeniableError) in
                guard let contents = try currentContents(current) else {
                    session = nil
                    return
                }
                current.contents = contents
                if try collectMessages(into: &current.contents) > 0 {
                    try save(&current.contents, header: current.header, vaultKey: current.vaultKey)
                }
                session = current
            }
        }
        settle()
        return result
    }

    /// Stores dead drops; no trial decryption.
    private func merge(deadDrops: [DeadDrop]) throws(DeniableError) -> DeadDropMerge {
        let signing = currentKeys()?.deadDropSigningKeys ?? []
        let r = try deadDropStore.merge(
            deadDrops, signingKeys: signing, now: clock(),
            retention: configuration.deadDropRetention,
            maxFutureSkew: configuration.deadDropMaxFutureSkew,
            messageBytes: configuration.deadDropMessageBytes,
            maxStored: configuration.deadDropMaxStored)
        settle()
        return DeadDropMerge(kept: r.kept, unverified: r.unverified, duplicates: r.duplicates, rejected: r.rejected, trimmed: r.trimmed)
    }

    /// The id after which to fetch dead drops (the newest stored), nil when none are stored.
    public func newestDeadDropID() throws(DeniableError) -> Int64? { try deadDropStore.newestID() }

    /// Stores a dead-drop list in CoverDrop's API shape (``DeadDropList``), item by item: an
    /// item that does not parse is skipped (logged at debug) and counted as rejected.
    /// - Throws: ``DeniableError/invalidInput(_:)`` when the body is not a dead-drop list; as
    ///   ``receive(deadDrops:)`` otherwise.
    @discardableResult
    public func receive(deadDropsJSON json: Data) throws(DeniableError) -> DeadDropMerge {
        let (drops, skipped) = try DeadDropList.parseItems(json)
        for problem in skipped { logger.debug("skipping a dead-drop list item: \(problem)") }
        let r = try receive(deadDrops: drops)
        return DeadDropMerge(
            kept: r.kept, unverified: r.unverified, duplicates: r.duplicates, rejected: r.rejected + skipped.count, trimmed: r.trimmed)
    }

    /// Trial-decrypts every stored dead drop's 553-byte slots, as CoverDrop's clients do: as
    /// TwoPartyBoxes from each verified messaging key of every journalist the user has a
    /// conversation with (sent to, heard from, or handed over to) to the user's key. Text
    /// replies and handovers are added to the mailbox once each.
    private func collectMessages(into contents: inout VaultContents) throws(DeniableError) -> Int {
        let size = CoverDropProtocol.journalistToUserEncryptedBytes
        var journalists = Set(contents.messages.map(\.peer))
        journalists.formUnion(contents.messages.compactMap(\.handoverTo))
        let keys = currentKeys()?.journalistMessagingKeys ?? [:]
        var known = Set(contents.messages.map(\.id))
        var added = 0
        // Verified at every read, item by item, under the keys verified now: a drop no key signs
        // (yet) is skipped, never the rest.
        let signing = currentKeys()?.deadDropSigningKeys ?? []
        let drops = try deadDropStore.all().filter { drop in
            let signed = drop.isSigned(byAnyOf: signing)
            if !signed { logger.debug("skipping a dead drop no verified CoverNode key signs") }
            return signed
        }
        // A handover adds a journalist, whose replies in the same dead drops are then looked for.
        var searched = Set<String>()
        while true {
            let fresh = journalists.subtracting(searched).sorted()
            guard !fresh.isEmpty else { break }
            searched.formUnion(fresh)
            let openers: [(String, TwoPartyBox.Opener)] = fresh.flatMap { id in
                (keys[id] ?? []).compactMap { key in
                    (try? TwoPartyBox.Opener(senderPublicKey: key, recipient: contents.userKey)).map { (id, $0) }
                }
            }
            guard !openers.isEmpty else { continue }
            for drop in drops {
                var index: UInt64 = 0
                var offset = 0
                while offset + size <= drop.data.count {
                    defer {
                        offset += size
                        index += 1
                    }
                    let id = Self.receivedID(drop: drop.id, index: index)
                    guard !known.contains(id) else { continue }
                    let slot = drop.data.subdata(in: offset..<(offset + size))
                    for (journalist, opener) in openers {
                        guard let plain = try? opener.open(slot), let message = try? JournalistMessage.decode(plain) else { continue }
                        switch message {
                        case .text(let text):
                            contents.messages.append(
                                MailboxMessage(
                                    id: id, direction: .received, peer: journalist, text: text, date: drop.createdAt, deadDropID: drop.id))
                        case .handover(let target):
                            contents.messages.append(
                                MailboxMessage(
                                    id: id, direction: .received, peer: journalist, text: "", date: drop.createdAt, deadDropID: drop.id,
                                    handoverTo: target))
                            journalists.insert(target)
                        }
                        known.insert(id)
                        added += 1
                        break
                    }
                }
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
        return UUID(
            uuid: (
                bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]
            ))
    }

    // MARK: Public keys

    private func currentKeys() -> VerifiedKeys? {
        // Verified again at the current time: a key that expired since the last load is dropped.
        guard let cached = try? keyCache.load(now: clock()) else { return keys }
        keys = cached
        coverKey.current = cached.wrappingKeys
        return cached
    }

    /// Fetches the keys when none are cached or the cache is older than the maximum age.
    private func refreshKeysIfStale() async -> Bool {
        let now = clock()
        if let keys, now.timeIntervalSince(keys.fetchedAt) < configuration.publicKeyMaxAge { return false }
        guard keySource != nil else { return false }
        do {
            _ = try await refreshPublicKeys()
            return true
        } catch {
            logger.warning("fetching public keys failed; using the cached copy: \(error)")
            return false
        }
    }

    /// Merges the dead-drop source's new dead drops (and prunes expired ones) unless the last
    /// fetch was less than ``DeniableConfiguration/deadDropFetchInterval`` ago; how many were kept.
    private func fetchDeadDrops(force: Bool = false) async -> Int {
        guard let deadDropSource else { return 0 }
        let now = clock()
        let interval = configuration.deadDropFetchInterval
        do {
            let due = try exclusive { () throws(DeniableError) -> Bool in
                let last = loadSchedule().deadDropsFetchedAt
                guard !force, interval > 0, last != 0 else { return true }
                let at = Date(timeIntervalSince1970: Double(last))
                return now < at || now.timeIntervalSince(at) >= interval
            }
            guard due else { return 0 }
            let newest = try deadDropStore.newestID()
            let (drops, skipped) = try DeadDropList.parseItems(try await deadDropSource.fetchDeadDrops(idsGreaterThan: newest ?? 0))
            for problem in skipped { logger.debug("skipping a dead-drop list item: \(problem)") }
            try exclusive { () throws(DeniableError) in
                var state = loadSchedule()
                state.deadDropsFetchedAt = Int64(now.timeIntervalSince1970.rounded(.down))
                try state.save(scheduleURL)
            }
            guard !drops.isEmpty else { return 0 }
            // Stored only: trial decryption waits for unlock, also when a session is open.
            return try merge(deadDrops: drops).kept
        } catch {
            logger.warning("fetching dead drops failed; trying again at the next start: \(error)")
            return 0
        }
    }

    /// Fetches the dead-drop source's new dead drops now, whenever the last fetch was (for a
    /// development tool; apps leave fetching to the start routine and ``willEnterForeground()``,
    /// at most hourly as CoverDrop's apps do). Failures are logged.
    /// - Returns: how many new dead drops were stored.
    @discardableResult
    public func refreshDeadDrops() async -> Int {
        defer { settle() }
        return await fetchDeadDrops(force: true)
    }

    /// Fetches the key bundle now, caches it with the fetch time and returns what verifies.
    /// - Throws: ``DeniableError/noVerifiedKeys(_:)`` without a key source; the source's error
    ///   when fetching fails (the cache is kept).
    @discardableResult
    public func refreshPublicKeys() async throws -> VerifiedKeys {
        // The cache's write keeps this start's mtime, as every other write does.
        defer { settle() }
        guard let keySource else { throw DeniableError.noVerifiedKeys("no key source is configured") }
        let json = try await keySource.fetchKeyBundle()
        let now = clock()
        // The cache and the queue's first covers to verified keys change under one lock: a send
        // in another process that saw the new keys finds the refilled queue.
        return try exclusive { () throws(DeniableError) -> VerifiedKeys in
            try keyCache.store(json, fetchedAt: now)
            guard let loaded = try keyCache.load(now: now) else { throw DeniableError.storage("the key cache vanished") }
            keys = loaded
            coverKey.current = loaded.wrappingKeys
            try refillCoversIfNeeded()
            return loaded
        }
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
            queuedMessages: session.map { current in
                queue.reload()
                return queue.fillLevel(secret: current.contents.queueSecret)
            },
            mailboxMessages: session?.contents.messages.count,
            deadDrops: try deadDropStore.all().count,
            publicKeysFetchedAt: keys?.fetchedAt,
            verifiedKeys: keys?.count ?? 0,
            lastStart: lastStart)
    }
}

/// What ``DeniableStorage/receive(deadDrops:)`` did.
public struct DeadDropMerge: Sendable, Equatable {
    /// New dead drops stored that a verified CoverNode identity key signs.
    public let kept: Int
    /// New dead drops stored that no verified key signs yet: checked again at every read (a key
    /// refresh may bring the CoverNode key that signed them), never used until one does.
    public let unverified: Int
    /// Dead drops already stored (merged by id).
    public let duplicates: Int
    /// Dead drops refused: dated too far in the future, or malformed.
    public let rejected: Int
    /// Dead drops removed as older than the retention window before the newest, or beyond the
    /// maximum count.
    public let trimmed: Int

    /// A merge outcome.
    public init(kept: Int, unverified: Int = 0, duplicates: Int, rejected: Int, trimmed: Int) {
        self.kept = kept
        self.unverified = unverified
        self.duplicates = duplicates
        self.rejected = rejected
        self.trimmed = trimmed
    }
}

/// The CoverNode keys covers are wrapped for, shared with the queue's cover maker.
final class CoverKey: Sendable {
    private let key: Locked<[Data]>

    init(_ key: [Data]) { self.key = Locked(key) }

    var current: [Data] {
        get { key.withLock { $0 } }
        set { key.withLock { $0 = newValue } }
    }
}
