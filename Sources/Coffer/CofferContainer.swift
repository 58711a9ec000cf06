// The app container: every store of an app in one folder (plus a caches folder), opened together.

import CofferCrypto
import CofferFileModes
import CofferSync
import Foundation
import Logging

@_exported import struct CofferSync.StorageCause

/// Where a container keeps its files.
///
/// Every file the stores write is mode 0600 and every folder they make 0700, whatever the
/// process umask. Folders that already exist at `data` and `caches` keep their mode (they may
/// be shared, and were not made by Coffer); the folders and files Coffer owns inside them
/// (`secure/`, `deniable/`, `media/`, the databases) are restricted to their owner when found wider.
public struct CofferLocations: Sendable, Equatable {
    /// Data that must last: `app.sqlite`, `wallet.sqlite`, `secure/`, `deniable/`.
    public var data: URL
    /// Data the OS may purge: the media cache's disk layer (`media/`).
    public var caches: URL

    /// Explicit folders.
    public init(data: URL, caches: URL) {
        self.data = data
        self.caches = caches
    }

    /// One store folder holding everything, caches in `store/caches`.
    public init(store: URL) {
        self.init(data: store, caches: store.appendingPathComponent("caches", isDirectory: true))
    }

    /// The platform's folders: Application Support and Caches on Apple platforms, the XDG data
    /// and cache folders on Linux; `$COFFER_HOME` (data) and `$COFFER_HOME/caches` when set.
    public static func platformDefault(environment: [String: String] = ProcessInfo.processInfo.environment) -> CofferLocations {
        CofferLocations(
            data: StoreLocation.defaultStoreDirectory(environment: environment),
            caches: StoreLocation.defaultCachesDirectory(environment: environment))
    }

    /// The app database (settings and collections).
    public var appDatabase: URL { StoreLocation.appDatabaseFile(in: data) }
    /// The encrypted wallet.
    public var wallet: URL { StoreLocation.walletFile(in: data) }
    /// The secure items' folder (where there is no Keychain).
    public var secureFolder: URL { data.appendingPathComponent("secure", isDirectory: true) }
    /// The deniable vault's folder.
    public var deniableFolder: URL { data.appendingPathComponent("deniable", isDirectory: true) }
    /// The media cache's disk layer.
    public var mediaCacheFolder: URL { caches.appendingPathComponent("media", isDirectory: true) }
    /// Where the media cache's key is kept where there is no Keychain: a sealed-file store in
    /// `data` (not beside the cached files it unlocks).
    public var mediaCacheKeyFolder: URL { data.appendingPathComponent("media-cache-key", isDirectory: true) }
    /// The Keychain service of the media cache's key (Apple platforms): this store's service
    /// followed by `.media-cache`, apart from the app's secure items.
    public var mediaCacheKeychainService: String { keychainService + ".media-cache" }

    /// The Keychain service of this store's secure items (Apple platforms): `coffer.` followed by
    /// 16 hex digits of a hash of the data folder's path, so every store has a Keychain space of
    /// its own and a reset or fresh install of one store deletes only its own items. See
    /// ``keychainService(data:home:)``.
    public var keychainService: String { Self.keychainService(data: data) }

    /// The Keychain service of the store whose data folder is `data`. The path is taken relative
    /// to `home` when inside it (iOS moves an app's container on updates, keeping its layout), so
    /// the service of a store stays the same across updates and reinstalls — a fresh install then
    /// finds and clears what an earlier install of the same store left. The hash (64-bit FNV-1a
    /// of the standardised path) is an identity, not a secret.
    public static func keychainService(data: URL, home: String = NSHomeDirectory()) -> String {
        let path = data.standardizedFileURL.path
        let homePath = URL(fileURLWithPath: home, isDirectory: true).standardizedFileURL.path
        var identity = path
        if !homePath.isEmpty, homePath != "/", path == homePath || path.hasPrefix(homePath + "/") {
            identity = "~" + path.dropFirst(homePath.count)
        }
        while identity.count > 1, identity.hasSuffix("/") { identity.removeLast() }
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in identity.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        let hex = String(hash, radix: 16)
        return "coffer." + String(repeating: "0", count: 16 - hex.count) + hex
    }

    /// Everything a full reset removes: Coffer's own files and folders only, never the rest of
    /// `data` or `caches` (which may be shared folders).
    /// The file a full reset writes before it removes anything and removes last: while it is
    /// there a reset was stopped part-way (a kill, a crash), and the next open finishes it.
    package var resetMarker: URL { data.appendingPathComponent(".coffer-reset-pending") }

    var resetItems: [URL] {
        let names = ["app.sqlite", "wallet.sqlite", ".wallet.sqlite.restoring"]
        let files = names.flatMap { name in ["", "-wal", "-shm", "-journal"].map { data.appendingPathComponent(name + $0) } }
        // A lock file a process killed while first opening left (it goes when released). The SDK's
        // and the wallet creation's lock files are not here: reset holds them and removes them
        // when done (unlinking a lock file another process holds would let a third take it anew).
        let locks = [".app.sqlite.lock"].map { data.appendingPathComponent($0) }
        return files + locks + [
            secureFolder, deniableFolder, data.appendingPathComponent("deniable-dev-service", isDirectory: true),
            data.appendingPathComponent("demo", isDirectory: true), mediaCacheKeyFolder, mediaCacheFolder,
        ]
    }
}

/// Why a container call failed.
public enum ContainerError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The container was reset or closed; open a new one.
    case closed
    /// Removing the container's files failed (named).
    /// `cause` keeps the system's error number or SQLite's result code underneath (nil when
    /// there was none), so a caller can tell a full disk from a refused permission.
    case storage(String, cause: StorageCause? = nil)

    /// The message.
    public var description: String {
        switch self {
        case .closed: return "the container was closed or reset; open it again"
        case .storage(let m, _): return "container storage: \(m)"
        }
    }
}

/// Every store of an app, opened together in one container: the app database (settings and
/// collections, migrated at open), the media cache (sized by the settings' cache-size keys and
/// following their changes; its memory layer is dropped on a UIKit memory warning), secure
/// storage (Keychain on Apple platforms) and, on request, the wallet.
public final class CofferContainer: Sendable {
    /// The folders.
    public let locations: CofferLocations
    /// Settings and collections (`app.sqlite`).
    public let database: AppDatabase
    /// The two-layer media cache.
    public let cache: MediaCache
    /// Tokens, client certificates, custom headers. Every call throws
    /// `SecureStorageError.closed` once the container is closed or reset.
    public let secure: any SecureStorage
    /// The secure store itself, which ``reset()`` still uses after closing.
    private let baseSecure: any SecureStorage
    /// What changes after open, all behind one lock (the secure wrappers hold it too, to see
    /// whether the container closed).
    private let state = Locked(MutableState())

    private struct MutableState {
        var isClosed = false
        /// The wallets it opened, closed with it.
        var wallets: [Wallet] = []
        /// The tasks that follow the cache-size settings.
        var watchers: [Task<Void, Never>] = []
        /// UIKit's memory-warning observer (iOS family only), handed over to `NotificationCenter` calls.
        var memoryWarningObserver: Handoff<any NSObjectProtocol>?
        /// Test hook: awaited between a wallet's opening and its adoption (``openWallet(_:createIfMissing:)``).
        var afterWalletOpened: (@Sendable (Wallet) async -> Void)?
    }

    /// The secure store with the SDK wallet's key in reach (``secure`` refuses that item): for
    /// ``initializeSDK(walletConfiguration:)`` only. Refuses every call once the container closed.
    var sdkKeyStore: any SecureStorage { ClosableSecureStorage(baseSecure, isClosed: { [state] in state.withLock { $0.isClosed } }) }
    /// The typed settings.
    public var settings: Settings { database.settings }
    /// One typed client per entity.
    public var context: StorageContext { database.context }

    private static let logger = Logger(label: "coffer.container")

    /// Opens every store under `locations`, running schema and data migrations on the app
    /// database. On a fresh install (no app database yet) it also empties secure storage, whose
    /// Keychain items would otherwise survive an uninstall.
    /// - Parameters:
    ///   - locations: the store's folders; by default the platform's (``CofferLocations/platformDefault(environment:)``).
    ///   - secureStorage: the secure store to use; by default the Keychain on Apple platforms, an
    ///     encrypted file store in `data/secure` elsewhere.
    ///   - keychainService: the Keychain service of the default secure store; by default the
    ///     store's own, ``CofferLocations/keychainService``.
    ///   - cacheByteLimits: the media cache's memory and disk byte limits; by default
    ///     `MediaCacheLimits.default` (its entry limits always follow the cache-size settings).
    ///   - appMigrations: the app's own tables in the app database (`AppMigration`), applied in
    ///     order after Coffer's schema steps; none by default.
    ///   - dataMigrations: the app database's data ladder; by default `AppDatabase.dataMigrations`.
    ///
    /// Blocks the calling thread while the database opens and migrates: from async code, `await`
    /// ``open(_:secureStorage:keychainService:cacheByteLimits:appMigrations:dataMigrations:)``.
    public static func openBlocking(
        _ locations: CofferLocations = .platformDefault(), secureStorage: (any SecureStorage)? = nil,
        keychainService: String? = nil, cacheByteLimits: (memory: Int, disk: Int)? = nil,
        appMigrations: [AppMigration] = [], dataMigrations: [DataMigration] = AppDatabase.dataMigrations
    ) throws -> CofferContainer {
        // A reset that was stopped part-way is finished first: the store is then a fresh install.
        if FileManager.default.fileExists(atPath: locations.resetMarker.path) {
            logger.notice("finishing a full reset that was stopped part-way", metadata: ["folder": "\(locations.data.path)"])
            try resetBlocking(locations, secureStorage: secureStorage, keychainService: keychainService)
        }
        let database = try AppDatabase.openBlocking(
            at: locations.appDatabase, appMigrations: appMigrations, dataMigrations: dataMigrations)
        let secure =
            secureStorage
            ?? PlatformSecureStorage.make(folder: locations.secureFolder, service: keychainService ?? locations.keychainService)
        let cacheKeyStorage = mediaCacheKeyStorage(locations, keychainService: keychainService)
        if database.isFreshInstall {
            do { try clearEarlierInstall(secure, locations: locations) } catch {
                logger.warning("could not clear secure items left by an earlier install: \(error)")
            }
            do { try cacheKeyStorage.deleteAllBlocking() } catch {
                logger.warning("could not clear the media cache key left by an earlier install: \(error)")
            }
        }
        var limits = MediaCacheLimits.default
        if let cacheByteLimits {
            limits.memoryBytes = cacheByteLimits.memory
            limits.diskBytes = cacheByteLimits.disk
        }
        limits.entries = cacheEntries(database.settings)
        let cache: MediaCache
        for path in removeLinks(at: locations.ownCacheFolders) {
            logger.warning("removed a symbolic link where the media cache's folder goes (never followed)", metadata: ["path": "\(path)"])
        }
        do { cache = try MediaCache(folder: locations.mediaCacheFolder, limits: limits, keyStorage: cacheKeyStorage) } catch {
            try? database.close()
            throw error
        }
        // Deleting or replacing an asset, or changing an album, through the collections makes
        // their cached images stale: they go from the cache once the write has committed.
        database.context.mediaChanges.onChange { [cache] changes in
            for id in changes.assetIds { cache.invalidateBlocking(assetId: id) }
            for id in changes.albumIds { cache.invalidateBlocking(albumId: id) }
        }
        let container = CofferContainer(locations: locations, database: database, cache: cache, secure: secure)
        container.watchCacheSettings()
        return container
    }

    /// ``openBlocking(_:secureStorage:keychainService:cacheByteLimits:appMigrations:dataMigrations:)`` off the
    /// caller's executor: opening and migrating run on a worker thread, so an app can open its
    /// container from the main actor (e.g. in a SwiftUI `.task`) without blocking it.
    public static func open(
        _ locations: CofferLocations = .platformDefault(), secureStorage: (any SecureStorage)? = nil,
        keychainService: String? = nil, cacheByteLimits: (memory: Int, disk: Int)? = nil,
        appMigrations: [AppMigration] = [], dataMigrations: [DataMigration] = AppDatabase.dataMigrations
    ) async throws -> CofferContainer {
        try await offCaller {
            try openBlocking(
                locations, secureStorage: secureStorage, keychainService: keychainService,
                cacheByteLimits: cacheByteLimits, appMigrations: appMigrations, dataMigrations: dataMigrations)
        }
    }

    /// A fresh install's clearing of the secure items an earlier install left (Keychain items
    /// outlive an uninstall), under the SDK's lock (see ``initializeSDK(walletConfiguration:)``):
    /// every item goes, except the SDK wallet's key while the wallet it opens is there (a process
    /// initialising the SDK at the same moment made both, in that order, under the same lock).
    static func clearEarlierInstall(_ secure: any SecureStorage, locations: CofferLocations) throws {
        let lockPath = locations.data.appendingPathComponent(".sdk.lock").path
        let clear = { () throws(any Error) in
            guard Wallet.walletFileExists(locations.wallet.path) else { return try secure.deleteAllBlocking() }
            for name in try secure.namesBlocking() where name != CofferSDK.walletKeyItem { try secure.deleteBlocking(name) }
        }
        let failure = { (e: ProcessLockError) -> any Error in ContainerError.storage(e.message, cause: StorageCause(e)) }
        try ProcessLock.withLock(at: lockPath, removeWhenDone: true, failure: failure, clear)
    }

    /// Takes a wallet opened for this container, so ``close()`` and ``reset()`` close it.
    /// The check and the append are one locked step, so a wallet is never added to a container
    /// that closed meanwhile (the caller closes it on `closed`).
    func adopt(_ wallet: Wallet) throws(ContainerError) {
        try state.withLock { (state) throws(ContainerError) in
            if state.isClosed { throw .closed }
            state.wallets.append(wallet)
        }
    }

    /// Test hook: `body` runs in ``openWallet(_:createIfMissing:)`` after the wallet opened and
    /// before the container adopts it, so a test can close or reset the container in that window.
    package func setAfterWalletOpenedForTesting(_ body: (@Sendable (Wallet) async -> Void)?) {
        state.withLock { $0.afterWalletOpened = body }
    }

    /// The secure store of the media cache's key: the Keychain (service
    /// ``CofferLocations/mediaCacheKeychainService``, or `keychainService` + `.media-cache`) on
    /// Apple platforms, a sealed-file store in ``CofferLocations/mediaCacheKeyFolder`` elsewhere.
    /// Kept apart from the app's secure items, so `secure.names()` lists only the app's.
    static func mediaCacheKeyStorage(_ locations: CofferLocations, keychainService: String?) -> any SecureStorage {
        PlatformSecureStorage.make(
            folder: locations.mediaCacheKeyFolder,
            service: keychainService.map { $0 + ".media-cache" } ?? locations.mediaCacheKeychainService)
    }

    private init(locations: CofferLocations, database: AppDatabase, cache: MediaCache, secure: any SecureStorage) {
        self.locations = locations
        self.database = database
        self.cache = cache
        self.baseSecure = secure
        self.secure = ClosableSecureStorage(
            secure, reserved: [CofferSDK.walletKeyItem], isClosed: { [state] in state.withLock { $0.isClosed } })
    }

    static func cacheEntries(_ settings: Settings) -> [MediaKind: Int] {
        [
            .thumbnail: max(0, settings.get(SettingsCatalog.thumbnailCacheSize)),
            .preview: max(0, settings.get(SettingsCatalog.imageCacheSize)),
            .albumThumbnail: max(0, settings.get(SettingsCatalog.albumThumbnailCacheSize)),
        ]
    }

    /// Applies the cache-size settings to the cache now and whenever one of them changes.
    private func watchCacheSettings() {
        let keys = [SettingsCatalog.thumbnailCacheSize, SettingsCatalog.imageCacheSize, SettingsCatalog.albumThumbnailCacheSize]
        // Subscribed here, before open returns, so no write after open can be missed.
        let streams = keys.map { settings.changes($0) }
        let tasks = streams.map { stream in
            Task { [settings, cache] in
                // Ends with the settings (their close throws `closed` into it).
                do {
                    for try await _ in stream {
                        var limits = cache.currentLimits
                        limits.entries = Self.cacheEntries(settings)
                        try? await cache.setLimits(limits)
                    }
                } catch {}
            }
        }
        state.withLock { $0.watchers = tasks }
        #if os(iOS) || os(tvOS) || os(visionOS)
        // UIKit's memory warning (by its stable name, so this file needs no UIKit): drop the memory layer.
        let observer = NotificationCenter.default.addObserver(
            forName: Notification.Name("UIApplicationDidReceiveMemoryWarningNotification"), object: nil, queue: nil
        ) { [cache] _ in cache.clearMemory() }
        state.withLock { $0.memoryWarningObserver = Handoff(observer) }
        #endif
    }

    private func checkOpen() throws(ContainerError) {
        if state.withLock({ $0.isClosed }) { throw .closed }
    }

    /// Opens the container's wallet, creating it when `createIfMissing` and it does not exist.
    /// The container closes it at ``close()`` and ``reset()-8nu0y``.
    /// - Throws: ``ContainerError/closed`` when the container is closed or reset before the
    ///   wallet is ready (a wallet opened meanwhile is closed again, never handed out).
    public func openWallet(_ key: WalletKey, createIfMissing: Bool = true) async throws -> Wallet {
        try checkOpen()
        try Task.checkCancellation()
        let exists = Wallet.walletFileExists(locations.wallet.path)
        let wallet =
            exists || !createIfMissing
            ? try await Wallet.open(at: locations.wallet, key: key)
            : try await Wallet.create(at: locations.wallet, key: key)
        // Opening awaited (Argon2id takes a good part of a second): the container may have closed
        // meanwhile, so whether it is still open is decided again, with the adoption, in one step.
        if let hook = state.withLock({ $0.afterWalletOpened }) { await hook(wallet) }
        do { try adopt(wallet) } catch {
            try? wallet.close()
            throw error
        }
        return wallet
    }

    /// Free up space: removes the device copies of backed-up assets the options choose (by
    /// default the settings' `cleanup…` keys), only for the logged-in user's assets when one is
    /// set, through `library`; `dryRun` lists them without deleting. Their cached thumbnails and
    /// previews stay (the server copy still shows them).
    public func freeUpSpace(
        _ options: CleanupOptions? = nil, library: any LocalMediaLibrary, dryRun: Bool = false,
        now: Date = Date()
    ) async throws -> CleanupResult {
        try checkOpen()
        try Task.checkCancellation()
        let chosen = options ?? CleanupOptions(settings: settings)
        let owner = settings.get(SettingsCatalog.currentUser)?.id
        return try await AssetCleanup(database: database).run(chosen, library: library, dryRun: dryRun, now: now, ownerId: owner)
    }

    /// ``clearCacheBlocking(_:)`` off the caller's executor.
    /// - Throws: `CancellationError` when the task was cancelled before the call (nothing is
    ///   removed), else the ``ContainerError`` of the blocking form.
    public func clearCache(_ kind: MediaKind? = nil) async throws {
        try await offCallerUnlessCancelled { try self.clearCacheBlocking(kind) }
    }

    /// Clear cache: thumbnails, previews and album covers (or one kind); synced data untouched.
    /// Blocks the calling thread while files are removed: from async code, `await` ``clearCache(_:)-8gzxv``.
    public func clearCacheBlocking(_ kind: MediaKind? = nil) throws(ContainerError) {
        try checkOpen()
        cache.clearBlocking(kind)
    }

    /// Closes the wallets it opened, the media cache and the app database, ending every settings
    /// stream and collection observation they serve; later calls throw their module's `closed`
    /// error. Idempotent. Blocks the calling thread briefly while the files close. Settings values
    /// that `Settings.set` left pending are committed first; a commit that fails (a full disk) is
    /// logged naming the settings that were not saved. To handle it instead, `await`
    /// `settings.flush()` before closing: it throws that error.
    public func close() {
        let (opened, tasks, observer, wasClosed) = state.withLock {
            (state) -> ([Wallet], [Task<Void, Never>], Handoff<any NSObjectProtocol>?, Bool) in
            defer { state = MutableState(isClosed: true) }
            return (state.wallets, state.watchers, state.memoryWarningObserver, state.isClosed)
        }
        guard !wasClosed else { return }
        if let observer { NotificationCenter.default.removeObserver(observer.value) }
        tasks.forEach { $0.cancel() }
        for wallet in opened { try? wallet.close() }
        cache.close()
        do { try database.close() } catch { Self.logger.error("closing the app database: \(error)") }
    }

    /// ``resetBlocking()`` off the caller's executor.
    public func reset() async throws {
        try await offCallerUnlessCancelled { try self.resetBlocking() }
    }

    /// Full reset: closes everything, then removes the database (settings included), the wallet,
    /// the deniable vault, the media cache and every secure item (see
    /// ``resetBlocking(_:secureStorage:keychainService:)``). This container is closed afterwards.
    /// Blocks the calling thread while files are removed: from async code, `await` ``reset()-8nu0y``.
    public func resetBlocking() throws(ContainerError) {
        try checkOpen()
        // The cache key goes first, so whatever cached file survives is unreadable at once.
        do { try cache.reset() } catch { Self.logger.warning("media cache reset: \(error)") }
        close()
        try Self.resetBlocking(locations, secureStorage: baseSecure)
    }

    /// Full reset of the stores under `locations` **without opening them**, so it works on a
    /// store in any state: written by a newer app version, damaged, half-restored, or with a
    /// secure-storage key that no longer opens. It removes every file Coffer writes there — the
    /// app database, the wallet (and a restore's leftovers), the deniable folder and its
    /// development service, the demo's folder, the media cache (and `caches` itself when that
    /// leaves it empty) — and every secure item (the Keychain items of `keychainService`, by
    /// default this store's own ``CofferLocations/keychainService``, on Apple platforms; the
    /// sealed-file folder elsewhere). Other stores' items are untouched. The next
    /// ``open(_:secureStorage:keychainService:cacheByteLimits:appMigrations:dataMigrations:)`` is a fresh install.
    /// Close any container or wallet of these locations first. Blocks the calling thread: from
    /// async code, `await` ``reset(_:secureStorage:keychainService:)-eq3g``.
    /// - Throws: ``ContainerError/storage(_:cause:)`` naming every item that could not be removed (the
    ///   others are removed all the same).
    public static func resetBlocking(
        _ locations: CofferLocations = .platformDefault(), secureStorage: (any SecureStorage)? = nil,
        keychainService: String? = nil
    ) throws(ContainerError) {
        // Under the SDK's lock and the wallet creation's lock (in the order SDK initialisation
        // takes them): a reset never runs between an SDK initialisation's key and its wallet.
        // The store folder's owner permissions come back first, so the lock files can be made there.
        restoreOwnerPermissions(locations.data.path)
        guard FileManager.default.fileExists(atPath: locations.data.path) else {
            return try resetHoldingLocks(locations, secureStorage: secureStorage, keychainService: keychainService)
        }
        let failure = { (e: ProcessLockError) -> ContainerError in .storage(e.message, cause: e.storageCause) }
        let sdkLock = locations.data.appendingPathComponent(".sdk.lock").path
        let walletLock = locations.data.appendingPathComponent("." + locations.wallet.lastPathComponent + ".lock").path
        try ProcessLock.withLock(at: sdkLock, removeWhenDone: true, failure: failure) { () throws(ContainerError) in
            try ProcessLock.withLock(at: walletLock, removeWhenDone: true, failure: failure) { () throws(ContainerError) in
                try resetHoldingLocks(locations, secureStorage: secureStorage, keychainService: keychainService)
            }
        }
    }

    private static func resetHoldingLocks(
        _ locations: CofferLocations, secureStorage: (any SecureStorage)?, keychainService: String?
    ) throws(ContainerError) {
        var failures: [String] = []
        // A folder of Coffer's that its owner made unreadable (mode 000) cannot be emptied: the
        // owner's permissions come back first (on the store and caches folders themselves too,
        // as on a fresh install; other files in them are not touched).
        restoreOwnerPermissions(locations.data.path)
        // Written (durably) before anything goes, removed last: a reset killed part-way (the
        // secure items gone, the database not yet) is finished by the next open instead of
        // leaving half a store, such as settings kept and the login token gone, or a wallet
        // whose key was removed.
        if FileManager.default.fileExists(atPath: locations.data.path) {
            do { try DurableFile.write(Data(), to: locations.resetMarker) } catch {
                throw .storage("cannot start the reset: \(error.message)", cause: error.storageCause)
            }
        }
        // A symbolic link at one of the store's own folders goes as a link: emptying or removing
        // the folder through it deleted files elsewhere.
        let ownFolders =
            locations.ownCacheFolders + [
                locations.secureFolder, locations.deniableFolder, locations.mediaCacheKeyFolder,
                locations.data.appendingPathComponent("deniable-dev-service", isDirectory: true),
                locations.data.appendingPathComponent("demo", isDirectory: true),
            ]
        for path in removeLinks(at: ownFolders) {
            logger.notice("reset removed a symbolic link without following it", metadata: ["path": "\(path)"])
        }
        restoreOwnerPermissions(locations.caches.path)
        for url in locations.resetItems { OwnerOnlyFiles.restoreOwnerAccess(url.path) }
        let secure =
            secureStorage
            ?? PlatformSecureStorage.make(folder: locations.secureFolder, service: keychainService ?? locations.keychainService)
        // The media cache's key first (crypto-shredding: the cached files left are unreadable from
        // here on), then the secure items; removing them needs no key, and a store whose key is
        // lost is removed with its folder below.
        do { try mediaCacheKeyStorage(locations, keychainService: keychainService).deleteAllBlocking() } catch {
            if FileManager.default.fileExists(atPath: locations.mediaCacheKeyFolder.path) == false { failures.append("\(error)") }
        }
        do { try secure.deleteAllBlocking() } catch {
            if FileManager.default.fileExists(atPath: locations.secureFolder.path) == false { failures.append("\(error)") }
        }
        TestPause.at("reset-secure-removed") // debug builds only: lets tests kill a reset part-way
        for url in locations.resetItems {
            do { try DurableFile.remove(url) } catch { failures.append(error.message) }
        }
        if let left = try? FileManager.default.contentsOfDirectory(atPath: locations.caches.path), left.isEmpty {
            try? FileManager.default.removeItem(at: locations.caches)
        }
        // Every item was tried: a failure is reported, not tried again at each open.
        do { try DurableFile.remove(locations.resetMarker) } catch { failures.append(error.message) }
        DurableFile.syncFolder(locations.data)
        guard failures.isEmpty else { throw .storage(failures.joined(separator: "; ")) }
        logger.notice("full reset done", metadata: ["folder": "\(locations.data.path)"])
    }
}

/// Removes a symbolic link (dangling or not) at each of `folders` — the link itself, never what it
/// points to — and returns the paths it removed. The folders are the store's own (the caches
/// folder when it is inside the store, the media cache's folder, and for a reset the secure,
/// deniable, demo and media-cache-key folders): followed, a link there made a reset delete
/// files elsewhere, and the media cache write its files into (and re-mode) a folder elsewhere.
func removeLinks(at folders: [URL]) -> [String] {
    var removed: [String] = []
    for folder in folders {
        var info = stat()
        guard lstat(folder.path, &info) == 0, info.st_mode & mode_t(S_IFMT) == mode_t(S_IFLNK) else { continue }
        if unlink(folder.path) == 0 { removed.append(folder.path) }
    }
    return removed
}

extension CofferLocations {
    /// The caches folder when it is inside the store (`--store DIR`: DIR/caches), then the media
    /// cache's folder: the folders the container's open never follows a link at.
    var ownCacheFolders: [URL] {
        let store = data.standardizedFileURL.path
        let inside = caches.standardizedFileURL.path.hasPrefix(store.hasSuffix("/") ? store : store + "/")
        return (inside ? [caches] : []) + [mediaCacheFolder]
    }
}

/// Gives the owner back read, write and search permission on the folder `path` itself (a store
/// or caches folder) when it lacks them, as reset needs them to remove Coffer's files from it;
/// the other bits stay. Nothing happens to a missing path or one owned by another user.
private func restoreOwnerPermissions(_ path: String) {
    var info = stat()
    guard lstat(path, &info) == 0, info.st_mode & mode_t(S_IFMT) == mode_t(S_IFDIR), info.st_uid == geteuid(),
        info.st_mode & 0o700 != 0o700
    else { return }
    _ = chmod(path, (info.st_mode & 0o7777) | 0o700)
}

extension CofferContainer {
    /// ``resetBlocking(_:secureStorage:keychainService:)`` off the caller's executor.
    public static func reset(
        _ locations: CofferLocations = .platformDefault(), secureStorage: (any SecureStorage)? = nil,
        keychainService: String? = nil
    ) async throws {
        try await offCaller { try resetBlocking(locations, secureStorage: secureStorage, keychainService: keychainService) }
    }

    /// The blocking open's old name, kept for one release: use
    /// `openBlocking(_:secureStorage:keychainService:cacheByteLimits:dataMigrations:)`.
    @available(*, deprecated, renamed: "openBlocking(_:secureStorage:keychainService:cacheByteLimits:dataMigrations:)")
    public static func open(
        _ locations: CofferLocations = .platformDefault(), secureStorage: (any SecureStorage)? = nil,
        keychainService: String? = nil, cacheByteLimits: (memory: Int, disk: Int)? = nil,
        dataMigrations: [DataMigration] = AppDatabase.dataMigrations
    ) throws -> CofferContainer {
        try openBlocking(
            locations, secureStorage: secureStorage, keychainService: keychainService, cacheByteLimits: cacheByteLimits,
            dataMigrations: dataMigrations)
    }

    /// The blocking form's old name, kept for one release: use
    /// `resetBlocking(_:secureStorage:keychainService:)`.
    @available(*, deprecated, renamed: "resetBlocking(_:secureStorage:keychainService:)")
    public static func reset(
        _ locations: CofferLocations = .platformDefault(), secureStorage: (any SecureStorage)? = nil,
        keychainService: String? = nil
    ) throws(ContainerError) {
        try resetBlocking(locations, secureStorage: secureStorage, keychainService: keychainService)
    }

    /// The blocking form's old name, kept for one release: use `resetBlocking()`.
    @available(*, deprecated, renamed: "resetBlocking()")
    public func reset() throws(ContainerError) { try resetBlocking() }

    /// The blocking form's old name, kept for one release: use `clearCacheBlocking(_:)`.
    @available(*, deprecated, renamed: "clearCacheBlocking(_:)")
    public func clearCache(_ kind: MediaKind? = nil) throws(ContainerError) { try clearCacheBlocking(kind) }
}

extension ContainerError: LocalizedError {
    /// The same text as `description`: what went wrong and what to do (for
    /// `localizedDescription`, alerts and logs).
    public var errorDescription: String? { description }
}
