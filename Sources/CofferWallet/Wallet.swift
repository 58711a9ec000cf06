// The encrypted record wallet: opening, creating, rekeying and closing one wallet file.

import CofferCrypto
import CofferSQLite
import CofferSync
import Foundation
import GRDB
import Logging

/// What unlocks a wallet: a raw 32-byte key, or a passphrase run through Argon2id.
public enum WalletKey: Sendable, CustomStringConvertible {
    /// A raw 32-byte key (for example from the platform keychain).
    case raw(Data)
    /// A passphrase; Argon2id turns it into the store key with the salt and costs kept in the file.
    case passphrase(String)

    /// A fresh random raw key. This is an explicit export: keep it in secure storage.
    public static func generateRawKey() -> Data { SecureRandom.bytes(32) }

    /// Never shows the secret.
    public var description: String {
        switch self {
        case .raw: return "WalletKey.raw(redacted)"
        case .passphrase: return "WalletKey.passphrase(redacted)"
        }
    }
}

extension WalletKey: CustomDebugStringConvertible, CustomReflectable {
    /// Never shows the secret.
    public var debugDescription: String { description }
    /// An empty mirror, so `dump` and debuggers show no secret.
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .enum) }
}

/// An encrypted store of records (type, id, value, tags) on SQLite.
///
/// Values, ids, types, tag names and encrypted tag values are sealed or blind-indexed before
/// they reach the file; only `~`-tag values are stored readable, by design. Every write runs in
/// one transaction and returns after commit (WAL, `synchronous=FULL`). A `Wallet` is `Sendable`:
/// many tasks may read and write it at once.
///
/// ## Topics
///
/// ### Opening and closing
///
/// - ``create(at:key:configuration:)``
/// - ``open(at:key:configuration:)``
/// - ``close()``
///
/// ### Profiles
///
/// - ``create(at:key:profile:configuration:)``
/// - ``open(at:key:profile:configuration:)``
/// - ``profiles(at:)``
/// - ``removeProfile(_:at:)``
/// - ``importBackup(from:passphrase:into:key:profile:configuration:progress:)``
///
/// ### Records
///
/// - ``add(type:id:value:tags:expiresAt:)``
/// - ``get(type:id:options:)``
/// - ``update(type:id:value:)``
/// - ``delete(type:id:)``
///
/// ### Tags
///
/// - ``addTags(type:id:tags:)``
/// - ``updateTags(type:id:tags:)``
/// - ``deleteTags(type:id:names:)``
///
/// ### Searching
///
/// - ``openSearch(type:query:options:)``
/// - ``searchNext(_:count:)``
/// - ``closeSearch(_:)``
/// - ``records(type:matching:options:pageSize:)``
///
/// ### Keys
///
/// - ``rekey(to:)``
public final class Wallet: Sendable {
    /// Settings of an opened wallet.
    public struct Configuration: Sendable {
        /// Argon2id costs used when a passphrase wallet is created or rekeyed (opening reads the stored ones).
        public var passphraseParameters: Argon2idParameters = .interactive
        /// How many searches may be open at once; opening one more reclaims the least recently used.
        public var maxOpenSearches: Int = 128
        /// A search not used for this long is reclaimed.
        public var searchIdleTimeout: Duration = .seconds(600)
        /// Where diagnostics go. Keys, values, ids and tags are never logged.
        public var logger: Logger = Logger(label: "coffer.wallet")
        /// Records the statements the wallet's connections run (tests of the open path's cost).
        package var statementProfile: StatementProfile?

        /// Defaults: Argon2id INTERACTIVE, 128 searches, 10 minutes idle.
        public init() {}
    }

    /// The wallet file's path.
    public let path: String
    let pool: DatabasePool
    /// Runs the pool's WAL checkpoints after commits return.
    let checkpointer: Checkpointer
    /// The wallet's keys, behind the gate a key rotation closes.
    let gate: KeyGate
    /// The keys now. Calls that read or write rows take them through ``gated(_:)`` instead.
    var keys: WalletKeys { gate.current }
    let searches: SearchRegistry<SQLiteSearchWalk>
    /// Opened held keys by verkey (see `HeldKeyCache`); emptied, and their secrets wiped, on close.
    let heldKeys = HeldKeyCache()
    /// Live queries (``observe(type:matching:options:interval:expiryCheck:)``), ended by ``close()``.
    let observations = WalletObservations()
    let logger: Logger
    let configuration: Configuration
    /// The sealed wallet key as this wallet last saw it in the file (read at open, written at
    /// create, rekey or rotation); nil when not known (a file upgraded at open). A rekey or
    /// rotation writes its own only over this one, so it never silently replaces a key another
    /// process set meanwhile (see ``checkSealedKeysUnchanged(_:_:seen:)``).
    let sealedKeysSeen: Locked<Data?>

    private init(
        path: String, pool: (DatabasePool, Checkpointer), keys: WalletKeys, configuration: Configuration, sealedKeys: Data?
    ) {
        self.path = path
        (self.pool, self.checkpointer) = pool
        self.sealedKeysSeen = Locked(sealedKeys)
        self.gate = KeyGate(keys)
        self.configuration = configuration
        self.logger = configuration.logger
        self.searches = SearchRegistry(capacity: configuration.maxOpenSearches, idleTimeout: configuration.searchIdleTimeout)
    }

    // MARK: - Create and open

    /// Creates a new wallet file at `url` (parent folders too) protected by `key`. The file (and
    /// SQLite's `-wal`, `-shm`) is mode 0600 and each folder it makes 0700, whatever the umask.
    /// A store at `url` without a `default` profile (made by creating a named profile first)
    /// gets this wallet as its default profile; any other file there is left as it is.
    /// - Throws: ``WalletError/walletExists(path:)`` if a wallet is already there,
    ///   ``WalletError/invalidInput(_:)`` for a raw key that is not 32 bytes.
    public static func create(at url: URL, key: WalletKey, configuration: Configuration = Configuration()) async throws -> Wallet {
        try await create(at: url, key: key, configuration: configuration, schemaUpTo: nil)
    }

    /// Creates profile `profile` — a wallet of its own, in its own tables, under its own `key`
    /// (raw or passphrase, its own salt and costs, its own wallet key and blind indexes) — in
    /// the store file at `url`, creating the file when there is none. `"default"` is the profile
    /// ``create(at:key:configuration:)`` makes; a file made as a single wallet is its `default`
    /// profile. Profile names are stored in the clear (see the threat model).
    /// - Throws: ``WalletError/walletExists(path:)`` when the profile exists (the path names it),
    ///   ``WalletError/invalidInput(_:)`` for a malformed name or key,
    ///   ``WalletError/corrupted(_:)`` when the file at `url` is not a Coffer store.
    public static func create(
        at url: URL, key: WalletKey, profile: String, configuration: Configuration = Configuration()
    ) async throws -> Wallet {
        try ProfileCatalogue.validate(profile)
        if profile == ProfileCatalogue.defaultName { return try await create(at: url, key: key, configuration: configuration) }
        let path = url.path
        do { try DurableFile.refuseNonRegularFiles(url) } catch { throw WalletError.storage(error.message, cause: StorageCause(error)) }
        let (storeKey, kdf) = try makeStoreKey(key, parameters: configuration.passphraseParameters)
        let lock = try await creationLock(for: url)
        defer { lock.release() }
        if walletFileExists(path) {
            try checkIsWallet(path: path)
        } else {
            removeWalletFiles(at: restoringURL(for: url))
            do { try DurableFile.ensureFolder(url.deletingLastPathComponent()) } catch {
                throw WalletError.storage("cannot create folder for \(path): \(error.message)")
            }
        }
        let opened = try openPool(path: path)
        let master = SecretKey.random()
        do {
            let (keys, sealed) = try await opened.pool.write { db in
                try makeProfile(db, name: profile, path: path, master: master, storeKey: storeKey, kdf: kdf)
            }
            // The writer's digest function must hash under this profile's keys.
            try registerKeyedFunctions(opened.pool, keys: keys)
            configuration.logger.debug("created wallet profile", metadata: ["path": "\(path)", "kdf": "\(kdf.method)"])
            return Wallet(path: path, pool: opened, keys: keys, configuration: configuration, sealedKeys: sealed)
        } catch {
            closePool(opened)
            throw mapError(error)
        }
    }

    /// Opens profile `profile` of the store file at `url` with that profile's own key. A file
    /// made as a single wallet is its `default` profile (opened as it is: nothing is rewritten).
    /// - Throws: ``WalletError/walletMissing(path:)`` when the file or the profile does not
    ///   exist (the path names the profile), ``WalletError/wrongKey(_:)`` when `key` is not this
    ///   profile's (another profile's key opens nothing but its own profile),
    ///   ``WalletError/corrupted(_:)`` when the profile's tables were changed without its key.
    public static func open(
        at url: URL, key: WalletKey, profile: String, configuration: Configuration = Configuration()
    ) async throws -> Wallet {
        try ProfileCatalogue.validate(profile)
        return try await open(at: url, key: key, configuration: configuration, profile: profile)
    }

    /// The names of the store's profiles, `default` first (when the file has it). A file made as
    /// a single wallet lists `["default"]`. Needs no key: the names are stored in the clear.
    /// - Throws: ``WalletError/walletMissing(path:)`` when there is no store at `url`,
    ///   ``WalletError/corrupted(_:)`` when the file is not one.
    public static func profiles(at url: URL) async throws -> [String] {
        let path = url.path
        guard walletFileExists(path) else { throw WalletError.walletMissing(path: path) }
        try checkIsWallet(path: path)
        let opened = try openPool(path: path)
        defer { closePool(opened) }
        do { return try await SQLiteWalletStorage(pool: opened.pool, path: path).profileNames() } catch { throw mapError(error) }
    }

    /// Removes profile `profile` from the store at `url`: its tables (records, tags, digest, keys)
    /// and its catalogue row go in one transaction; every other profile stays exactly as it was.
    /// Needs no key: whoever can write the file can delete rows anyway. An open ``Wallet`` on the
    /// removed profile fails its next call (its search's next page too) with a
    /// ``WalletError/storage(_:cause:)`` that says the profile was removed.
    /// - Throws: ``WalletError/walletMissing(path:)`` when there is no such profile,
    ///   ``WalletError/invalidInput(_:)`` for the `default` profile (it holds the store's
    ///   migration record; delete the file to remove a store).
    public static func removeProfile(_ profile: String, at url: URL) async throws {
        try ProfileCatalogue.validate(profile)
        let path = url.path
        guard profile != ProfileCatalogue.defaultName else {
            throw WalletError.invalidInput(
                "the default profile cannot be removed (it holds the store's record of applied migrations); delete the store file to remove the store"
            )
        }
        guard walletFileExists(path) else { throw WalletError.walletMissing(path: path) }
        try checkIsWallet(path: path)
        let opened = try openPool(path: path)
        defer { closePool(opened) }
        do {
            guard try await SQLiteWalletStorage(pool: opened.pool, path: path).removeProfile(profile) else {
                throw WalletError.walletMissing(path: ProfileCatalogue.label(path: path, profile: profile))
            }
        } catch { throw mapError(error) }
    }

    /// ``create(at:key:configuration:)`` with the file layout of an older release: the
    /// migrations up to and including `schemaUpTo` (tests open such files to check upgrades).
    /// With `locking` (the default) it holds the wallet's creation lock (see
    /// `creationLock(for:)`), so processes creating or restoring one wallet at once make one and
    /// the others find it there; a restore that holds the lock already builds without it.
    static func create(
        at url: URL, key: WalletKey, configuration: Configuration, schemaUpTo: String?, locking: Bool = true
    ) async throws -> Wallet {
        let path = url.path
        do { try DurableFile.refuseNonRegularFiles(url) } catch { throw WalletError.storage(error.message, cause: StorageCause(error)) }
        // Whatever is at the path — a wallet, garbage, another database — stays as it is, but for
        // a store without a default profile, which gets it (see canTakeDefaultProfile), and an
        // empty file a killed create left, which is no wallet (see walletFileExists).
        func refuseExisting() throws {
            if walletFileExists(path), !canTakeDefaultProfile(path: path) {
                throw WalletError.walletExists(path: path)
            }
        }
        try refuseExisting()
        let (storeKey, kdf) = try makeStoreKey(key, parameters: configuration.passphraseParameters)
        let lock = locking ? try await creationLock(for: url) : nil
        defer { lock?.release() }
        try refuseExisting()
        // What a restore killed part-way left (no restore runs: this one holds the lock).
        if locking { removeWalletFiles(at: restoringURL(for: url)) }
        // Missing folders are made owner-only (0700); an existing folder keeps its mode.
        do { try DurableFile.ensureFolder(url.deletingLastPathComponent()) } catch {
            throw WalletError.storage("cannot create folder for \(path): \(error.message)", cause: StorageCause(error))
        }
        let opened = try openPool(path: path)
        let pool = opened.pool
        let master = SecretKey.random()
        // A file of an older layout (tests of upgrades) has its key sealed as that format did.
        let format = schemaUpTo.map(Schema.format(after:)) ?? Schema.format
        let sealedKeys = try sealMaster(master, storeKey: storeKey, format4: format >= 4)
        let keys = WalletKeys(master: master)
        do {
            try registerKeyedFunctions(pool, keys: keys)
            let migrator = Schema.migrator(upgrade: Schema.Upgrade(keys: keys, sealedKeys: nil))
            if let schemaUpTo {
                try migrator.migrate(pool, upTo: schemaUpTo)
            } else {
                try migrator.migrate(pool)
            }
            try await pool.write { db in
                if try Data.fetchOne(db, sql: "SELECT value FROM \(keys.tables.meta) WHERE name = 'keys'") != nil {
                    throw WalletError.walletExists(path: path)
                }
                try db.execute(
                    sql: "INSERT INTO \(keys.tables.meta)(name, value) VALUES ('format', ?), ('kdf', ?), ('keys', ?)",
                    arguments: [Data(String(format).utf8), Data(kdf.jsonText.utf8), sealedKeys])
                // A store made profile-first lists its profiles: the default joins them.
                if try db.tableExists(ProfileCatalogue.table) {
                    try db.execute(
                        sql: "INSERT INTO \(ProfileCatalogue.table)(name, number) VALUES (?, 0)", arguments: [ProfileCatalogue.defaultName])
                }
                try recordKeyCheck(db, keys)
                if format >= 4 { try FileIntegrity.write(db, keys: keys) }
            }
        } catch {
            closePool(opened)
            throw mapError(error)
        }
        configuration.logger.debug("created wallet", metadata: ["path": "\(path)", "kdf": "\(kdf.method)"])
        return Wallet(path: path, pool: opened, keys: keys, configuration: configuration, sealedKeys: sealedKeys)
    }

    /// Whether the file at `path` is a Coffer store without a `default` profile, in which
    /// ``create(at:key:configuration:)`` makes it: one whose tables are the profile catalogue and
    /// other profiles' (it was made by creating a named profile first), or one with no table at
    /// all (a restore into a new store that stopped before it committed). Any other file,
    /// including one that cannot be read, is left as it is.
    static func canTakeDefaultProfile(path: String) -> Bool {
        // Read-only, and the -wal and -shm it makes removed again: the file is only looked at.
        guard (try? checkIsWallet(path: path)) != nil, let (queue, companions) = try? ForeignDatabase.readOnly(path: path) else {
            return false
        }
        defer {
            try? queue.close()
            companions.removeCreated()
        }
        let answer = try? queue.read { db -> Bool in
            let tables = try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table'")
            if tables.isEmpty { return true }
            guard tables.contains(ProfileCatalogue.table), !tables.contains(ProfileTables.default.meta),
                !tables.contains(ProfileTables.default.items)
            else { return false }
            return try ProfileCatalogue.resolve(db, name: ProfileCatalogue.defaultName) == nil
        }
        return answer ?? false
    }

    /// Gives the pool's writer the functions that need the wallet's keys (the records' version
    /// digest the triggers keep). Readers never write, so they need none.
    static func registerKeyedFunctions(_ pool: DatabasePool, keys: WalletKeys) throws {
        try pool.writeWithoutTransaction { db in try DigestFunction.register(on: db, keys: keys) }
    }

    /// Opens an existing wallet file. A wallet file (or its `-wal`, `-shm`) whose mode lets
    /// group or others in is restricted to its owner (0644 becomes 0600) before it is opened.
    /// - Throws: ``WalletError/walletMissing(path:)`` when there is none,
    ///   ``WalletError/wrongKey(_:)`` when `key` does not open it (never garbage),
    ///   ``WalletError/corrupted(_:)`` when the file is not a wallet or was damaged.
    public static func open(at url: URL, key: WalletKey, configuration: Configuration = Configuration()) async throws -> Wallet {
        try await open(at: url, key: key, configuration: configuration, profile: ProfileCatalogue.defaultName)
    }

    /// ``open(at:key:profile:configuration:)``'s work.
    private static func open(at url: URL, key: WalletKey, configuration: Configuration, profile: String) async throws -> Wallet {
        let path = url.path
        do { try DurableFile.refuseNonRegularFiles(url) } catch { throw WalletError.storage(error.message, cause: StorageCause(error)) }
        // What a restore killed part-way left, also when that left no wallet (see the function).
        sweepInterruptedRestore(of: url)
        guard walletFileExists(path) else { throw WalletError.walletMissing(path: path) }
        if case .raw(let data) = key, data.count != 32 {
            throw WalletError.invalidInput("a raw key must be 32 bytes, got \(data.count)")
        }
        try checkIsWallet(path: path)
        // An open that writes nothing (see placeWALPlaceholder); the wallet takes no WAL snapshots.
        SQLiteFootprint.placeWALPlaceholder(forDatabaseAt: path)
        let opened = try openPool(path: path, profile: configuration.statementProfile)
        let pool = opened.pool
        do {
            // Launch path: one visit to the writer connection, which the pool has just opened,
            // so no reader connection is opened here. Nothing in it reads records: the metadata
            // rows, the applied migrations and one pragma (the open costs the same at any size;
            // `WalletOpenCostTests` counts the statements and their VM steps).
            let state = try readForOpen(pool, path: path, key: key, profile: profile, migrator: Schema.migrator())
            // Bring older files up to date (nothing for the current format), and give files made
            // before free pages could be returned that ability, once (one VACUUM). Only a file
            // whose wallet key is sealed for an older format is upgraded (see readForOpen).
            // Under the wallet's creation lock, so two processes opening an old file at once do
            // not both run a migration (each re-checks under it: the migrator reads what is applied).
            if state.upgrade != nil || !state.incremental {
                let lock = try await creationLock(for: url)
                defer { lock.release() }
                if let upgrade = state.upgrade {
                    // Its steps rewrite whole tables (see SQLiteFootprint.withTempStoreOnDisk).
                    // When it fails, the open fails and closes the pool: nothing to put back.
                    try await pool.writeWithoutTransaction { try $0.execute(sql: "PRAGMA temp_store = FILE") }
                    try Schema.migrator(upgrade: upgrade).migrate(pool)
                    try await pool.writeWithoutTransaction { try $0.execute(sql: "PRAGMA temp_store = MEMORY") }
                }
                try await pool.writeWithoutTransaction { db in
                    if try !SQLiteFootprint.isIncremental(db) { try SQLiteFootprint.convertToIncremental(db) }
                }
            }
            // An upgrade re-seals the key, or another process's upgrade did: not known then.
            return Wallet(
                path: path, pool: opened, keys: state.keys, configuration: configuration,
                sealedKeys: state.upgrade == nil ? state.sealedKeys : nil)
        } catch {
            closePool(opened)
            throw mapError(error)
        }
    }

    /// The launch path's one visit to the writer (synchronous, so the pool's synchronous write
    /// is the one called): the metadata rows, the keys, the applied migrations and one pragma.
    private static func readForOpen(
        _ pool: DatabasePool, path: String, key: WalletKey, profile: String, migrator: DatabaseMigrator
    ) throws -> OpenState {
        // One read transaction: the sealed keys, the integrity record and the digest come from
        // one snapshot, so a rotation another process commits meanwhile cannot pair the old
        // keys with the new digest (a false "corrupted"); this process then opens with the old
        // keys, and its first write is refused as rotated (`checkKeys`).
        try pool.writeWithoutTransaction { db in
            var state: OpenState?
            try db.inTransaction(.deferred) {
                state = try readForOpen(db, path: path, key: key, profile: profile, migrator: migrator)
                return .commit
            }
            return state!
        }
    }

    /// The rows of a wallet's meta table that `sql` selects (name, value), by name. A row whose
    /// name is not text or whose value is not bytes (an edited file: SQLite keeps any value in
    /// any column) is `corrupted`, naming `path` and the row, never a crash.
    static func metaValues(_ db: Database, sql: String, arguments: StatementArguments = [], path: String) throws -> [String: Data] {
        var meta = [String: Data]()
        for row in try Row.fetchAll(db, sql: sql, arguments: arguments) {
            guard let name = String.fromDatabaseValue(row[0]) else {
                throw WalletError.corrupted("\(path) has a wallet meta row whose name is not text: the file was altered or damaged")
            }
            let stored: DatabaseValue = row[1]
            if stored.isNull { continue }
            guard let value = Data.fromDatabaseValue(stored) else {
                throw WalletError.corrupted(
                    "\(path) has a wallet meta row \(WalletError.quote(name)) whose value is not bytes: the file was altered or damaged")
            }
            meta[name] = value
        }
        return meta
    }

    /// ``readForOpen(_:path:key:profile:migrator:)``'s work, inside its read transaction.
    private static func readForOpen(
        _ db: Database, path: String, key: WalletKey, profile: String, migrator: DatabaseMigrator
    ) throws -> OpenState {
        guard try db.tableExists("coffer_meta") || db.tableExists(ProfileCatalogue.table) else {
            throw WalletError.corrupted("\(path) is an SQLite database without a Coffer wallet's keys")
        }
        guard let tables = try ProfileCatalogue.resolve(db, name: profile), try db.tableExists(tables.meta) else {
            throw WalletError.walletMissing(path: ProfileCatalogue.label(path: path, profile: profile))
        }
        let meta = try metaValues(db, sql: "SELECT name, value FROM \(tables.meta)", path: path)
        guard let sealedKeys = meta["keys"], let kdfData = meta["kdf"] else {
            throw WalletError.corrupted("\(path) is an SQLite database without a Coffer wallet's keys")
        }
        let format = meta["format"].flatMap { Int(String(decoding: $0, as: UTF8.self)) }
        if let format, format > Schema.format {
            throw WalletError.invalidInput(
                "the wallet at \(path) has format \(format), written by a newer Coffer; this one reads up to \(Schema.format)")
        }
        let kdf = try KDFRecord(json: String(decoding: kdfData, as: UTF8.self))
        let storeKey = try deriveStoreKey(key, kdf: kdf)
        let (master, sealedForFormat4) = try openMaster(sealedKeys, storeKey: storeKey, kdf: kdf, tables: tables)
        let keys = WalletKeys(master: master, tables: tables)
        try DigestFunction.register(on: db, keys: keys)
        // The schema is part of what the key protects, checked before any record is read. A
        // wallet key sealed for format 4 says, under the key, that the file has format 4:
        // then the schema, the format and the digest must be exactly what the key
        // authenticated, and nothing is ever migrated (a migration re-run would rebuild the
        // digest over whatever rows are there). A key sealed the old way belongs to a file
        // of format 1 to 3, which is checked for foreign objects and then upgraded.
        let migrated = try migrator.hasCompletedMigrations(db)
        if sealedForFormat4 {
            try FileIntegrity.verify(
                db, keys: keys, stored: meta[FileIntegrity.metaName], format: format,
                path: ProfileCatalogue.label(path: path, profile: profile))
            // Only the default profile's tables are migrated (other profiles are made at format 4).
            guard migrated || !tables.isDefault else {
                throw WalletError.corrupted(
                    "the wallet at \(path) was changed without its key: its record of applied migrations was altered; it was left as it was (restore a backup)"
                )
            }
            _ = try DigestState.read(db, keys: keys)
        } else {
            let legacyFormat = format ?? 1
            guard tables.isDefault, legacyFormat < 4, meta[FileIntegrity.metaName] == nil, !migrated else {
                throw WalletError.corrupted(
                    "the wallet at \(path) claims format \(legacyFormat) but its key is sealed as an older format's: the file was changed without its key; it was left as it was (restore a backup)"
                )
            }
            try FileIntegrity.verifyLegacy(db, format: legacyFormat, path: path)
        }
        let upgrade =
            sealedForFormat4
            ? nil : Schema.Upgrade(keys: keys, sealedKeys: try sealMaster(master, storeKey: storeKey, format4: true))
        return OpenState(keys: keys, upgrade: upgrade, incremental: try SQLiteFootprint.isIncremental(db), sealedKeys: sealedKeys)
    }

    /// What ``open(at:key:configuration:)`` learns in its one visit to the writer.
    private struct OpenState {
        let keys: WalletKeys
        /// What the upgrade of a file of an older format needs (nil: the file is current).
        let upgrade: Schema.Upgrade?
        let incremental: Bool
        /// The sealed wallet key as read.
        let sealedKeys: Data
    }

    /// Whether there is a wallet file at `path` to open or to keep. False when there is none, and
    /// for an empty regular file (0 bytes) without WAL frames: what a create killed before its
    /// first write leaves (it makes the file, owner-only, before SQLite writes a page). SQLite
    /// reads such a file as a database without tables: a create makes the wallet in it, and an
    /// open finds no wallet there (``WalletError/walletMissing(path:)``), where it said "not a
    /// Coffer wallet" and a create said "a wallet already exists".
    package static func walletFileExists(_ path: String) -> Bool {
        var info = stat()
        guard lstat(path, &info) == 0 else { return false }
        guard info.st_size == 0, info.st_mode & mode_t(S_IFMT) == mode_t(S_IFREG) else { return true }
        var wal = stat()
        // A WAL of 32 bytes or less holds no frames (see SQLiteFootprint.placeWALPlaceholder).
        return lstat(path + "-wal", &wal) == 0 && wal.st_size > 32
    }

    /// Refuses, before anything could write to it, a file that is not a Coffer wallet: one that
    /// does not start with SQLite's header (empty, truncated, garbage) or an SQLite database not
    /// in WAL mode. The file is left exactly as it was. (A WAL-mode database without the
    /// wallet's table is refused after opening, as `corrupted` too.)
    static func checkIsWallet(path: String) throws(WalletError) {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw .storage("cannot read the wallet file at \(path)", cause: StorageCause(errno: errno))
        }
        let head = (try? handle.read(upToCount: 100)) ?? Data()
        try? handle.close()
        guard head.count == 100, head.prefix(16) == Data("SQLite format 3\0".utf8) else {
            throw .corrupted(
                "\(path) is not a Coffer wallet (\(head.count < 100 ? "\(head.count) bytes" : "no SQLite header")); it was left as it was")
        }
        // A wallet is always in WAL mode (file format bytes 18 and 19 are 2). Any other SQLite
        // file would be switched to WAL by opening it for writing, so it is refused unopened.
        guard head[18] == 2, head[19] == 2 else {
            throw .corrupted("\(path) is an SQLite database but not a Coffer wallet; it was left as it was")
        }
    }

    /// Replaces the key that protects the wallet. Only the sealed wallet keys are rewritten, so
    /// the cost does not depend on how many records there are. The WAL is then checkpointed and
    /// truncated, so the main file alone no longer opens with the old key.
    public func rekey(to newKey: WalletKey) async throws {
        let (storeKey, kdf) = try Self.makeStoreKey(newKey, parameters: configuration.passphraseParameters)
        try await gated { keys in
            let sealed = try Self.sealMaster(keys.master, storeKey: storeKey, tables: keys.tables)
            let seen = sealedKeysSeen
            try await self.pool.write { db in
                // A rotation elsewhere replaced the master key: sealing this one would lock
                // every record out.
                try Self.checkKeys(db, keys)
                // A rekey elsewhere set another key, which this one would silently undo. (Two
                // rekeys of this wallet at once count as such too: the second is refused.)
                try Self.checkSealedKeysUnchanged(db, keys, seen: seen)
                try db.execute(sql: "UPDATE \(keys.tables.meta) SET value = ? WHERE name = 'kdf'", arguments: [Data(kdf.jsonText.utf8)])
                try db.execute(sql: "UPDATE \(keys.tables.meta) SET value = ? WHERE name = 'keys'", arguments: [sealed])
            }
            seen.withLock { $0 = sealed }
            await self.dropOldKeyMaterial()
        }
        logger.debug("rekeyed wallet", metadata: ["kdf": "\(kdf.method)"])
    }

    /// After a rekey or rotation: copies the WAL into the main file and truncates it, so the
    /// main file alone no longer holds the old sealed key (secure_delete zeroed the old rows in
    /// their pages). Best effort: the change is committed either way; a reader still on an older
    /// snapshot makes the truncation wait for it (up to the busy timeout), then it is skipped,
    /// and the next checkpoint copies the pages.
    func dropOldKeyMaterial() async {
        do {
            try await pool.writeWithoutTransaction { db in _ = try db.checkpoint(.truncate) }
        } catch {
            logger.warning("the WAL could not be checkpointed after a key change: \(Self.mapError(error).redactedDescription)")
        }
    }

    /// Gives every free page of the file back to the file system and truncates the WAL, so the
    /// wallet takes only the space its records need (space is also given back on its own after
    /// large deletes; this returns all of it now). Other calls wait while it runs.
    /// - Returns: the bytes of the wallet file and its WAL before and after.
    @discardableResult
    public func compact() async throws -> (bytesBefore: Int, bytesAfter: Int) {
        let path = self.path
        return try await gated { _ in
            try await pool.writeWithoutTransaction { db in
                let (before, after) = try SQLiteFootprint.compact(db, path: path)
                return (bytesBefore: before, bytesAfter: after)
            }
        }
    }

    /// Closes the wallet: open searches end and the file is released. Every later call throws
    /// ``WalletError/closed``. Blocks the calling thread briefly while SQLite closes the file.
    public func close() throws {
        gate.markClosed()
        observations.closeAll()
        searches.close()
        heldKeys.close()
        do { try pool.close() } catch { throw Self.mapError(error) }
        checkpointer.poolClosed()
        SQLiteFootprint.removeWAL(atPath: path)
        gate.current.clearCaches()
    }

    // MARK: - Keys

    static func makeStoreKey(_ key: WalletKey, parameters: Argon2idParameters) throws -> (SecretKey, KDFRecord) {
        switch key {
        case .raw(let data):
            guard data.count == 32 else { throw WalletError.invalidInput("a raw key must be 32 bytes, got \(data.count)") }
            return (try SecretKey(copying: data, expectedCount: 32), KDFRecord(method: "raw"))
        case .passphrase(let passphrase):
            guard !passphrase.isEmpty else { throw WalletError.invalidInput("the passphrase must not be empty") }
            do { try parameters.validateWithinCap() } catch { throw WalletError.invalidInput("passphrase key costs: \(error)") }
            let salt = SecureRandom.bytes(Argon2idParameters.saltByteCount)
            let record = KDFRecord(method: "argon2id", parameters: parameters, salt: salt)
            do {
                return (try Argon2id.deriveKey(passphrase: passphrase, salt: salt, parameters: parameters), record)
            } catch { throw WalletError.storage("\(error)", cause: StorageCause(error)) }
        }
    }

    static func deriveStoreKey(_ key: WalletKey, kdf: KDFRecord) throws -> SecretKey {
        switch (key, kdf.method) {
        case (.raw(let data), "raw"):
            return try SecretKey(copying: data, expectedCount: 32)
        case (.passphrase(let passphrase), "argon2id"):
            guard let parameters = kdf.parameters, let salt = kdf.salt else {
                throw WalletError.corrupted("the wallet's key-derivation record lacks its Argon2id parameters")
            }
            do { return try Argon2id.deriveKey(passphrase: passphrase, salt: salt, parameters: parameters) } catch {
                throw WalletError.corrupted("stored Argon2id parameters are unusable: \(error)")
            }
        case (.raw, "argon2id"):
            throw WalletError.wrongKey("this wallet is protected by a passphrase; a raw key was given")
        case (.passphrase, "raw"):
            throw WalletError.wrongKey("this wallet is protected by a raw key; a passphrase was given")
        default:
            throw WalletError.corrupted("unknown key-derivation method \(WalletError.quote(kdf.method))")
        }
    }

    static let keysAssociatedData = Data("coffer.wallet.keys.v1".utf8)
    /// The associated data of a wallet key sealed in a file of format 4: opening under it tells,
    /// under the key, that the file's integrity state is authenticated (``FileIntegrity``).
    static let keysAssociatedDataV4 = Data("coffer.wallet.keys.v4".utf8)
    static let keysMagic = Data("CWK1".utf8)

    /// The associated data a profile's wallet key is sealed under (format 4): the default
    /// profile's is a single wallet's; another profile's names the profile, so a catalogue whose
    /// names were swapped makes the key fail instead of opening one profile as another.
    static func keysAssociatedData(for tables: ProfileTables) -> Data {
        tables.isDefault ? keysAssociatedDataV4 : Data("coffer.wallet.keys.v4.profile:\(tables.name)".utf8)
    }

    static func sealMaster(_ master: SecretKey, storeKey: SecretKey, format4: Bool = true, tables: ProfileTables = .default) throws -> Data
    {
        var plain = [UInt8](keysMagic)
        master.withUnsafeBytes { plain.append(contentsOf: $0) }
        defer { SecureMemory.wipe(&plain) }
        do {
            return try AEAD.xchacha20Poly1305.seal(
                plain, key: storeKey, associatedData: format4 ? keysAssociatedData(for: tables) : keysAssociatedData)
        } catch {
            throw WalletError.storage("\(error)", cause: StorageCause(error))
        }
    }

    /// The wallet key, and whether it was sealed for format 4.
    static func openMaster(
        _ sealed: Data, storeKey: SecretKey, kdf: KDFRecord, tables: ProfileTables = .default
    ) throws -> (SecretKey, sealedForFormat4: Bool) {
        var plain: Data
        var format4 = true
        if let opened = try? AEAD.xchacha20Poly1305.open(sealed, key: storeKey, associatedData: keysAssociatedData(for: tables)) {
            plain = opened
        } else if tables.isDefault, let opened = try? AEAD.xchacha20Poly1305.open(sealed, key: storeKey, associatedData: keysAssociatedData)
        {
            plain = opened
            format4 = false
        } else {
            throw WalletError.wrongKey(
                kdf.method == "raw" ? "the raw key does not open this wallet" : "the passphrase does not open this wallet")
        }
        defer { plain.resetBytes(in: 0..<plain.count) }
        guard plain.count == keysMagic.count + 32, plain.prefix(keysMagic.count) == keysMagic else {
            throw WalletError.corrupted("the wallet's sealed keys do not decode")
        }
        return (try SecretKey(copying: plain.suffix(32), expectedCount: 32), format4)
    }

    /// Opens the pool on the wallet file, first making the file owner-only: created 0600 when
    /// missing (SQLite gives `-wal` and `-shm` the same mode), an existing file and its `-wal`
    /// and `-shm` restricted to 0600 when their mode is wider.
    static func openPool(path: String, profile: StatementProfile? = nil) throws -> (pool: DatabasePool, checkpointer: Checkpointer) {
        do { try DurableFile.prepareOwnerOnlyDatabase(URL(fileURLWithPath: path)) } catch {
            throw WalletError.storage(error.message, cause: StorageCause(error))
        }
        TestPause.at("wallet-file-made") // debug builds only: lets tests kill a create whose file is still empty
        do {
            var poolConfiguration = Schema.configuration(label: "coffer.wallet")
            if let profile { poolConfiguration.prepareDatabase { profile.install(on: $0) } }
            let pool = try DatabasePool(path: path, configuration: poolConfiguration)
            try Schema.makeDurable(pool)
            return (pool, Checkpointer.install(on: pool))
        } catch {
            throw mapError(error)
        }
    }

    /// Closes a pool that ``openPool(path:)`` opened, on a failure path (errors ignored).
    static func closePool(_ opened: (pool: DatabasePool, checkpointer: Checkpointer)) {
        let path = opened.pool.path
        if (try? opened.pool.close()) != nil {
            opened.checkpointer.poolClosed()
            SQLiteFootprint.removeWAL(atPath: path)
        }
    }

    /// Errors of the store become ``WalletError``; an error the caller's own closure threw
    /// passes through unchanged, so it can be caught as itself.
    static func translate(_ error: Error) -> Error {
        switch error {
        case is WalletError, is DatabaseError, is CryptoError: return mapError(error)
        default: return error
        }
    }

    /// What a call on a wallet whose profile was removed while it was open says.
    static let profileRemovedMessage =
        "this wallet's profile was removed from the store while it was open (its tables are gone); nothing more can be read or written through it"

    /// Turns any error from GRDB or below into a ``WalletError``.
    static func mapError(_ error: Error) -> WalletError {
        if let e = error as? WalletError { return e }
        if let e = error as? DatabaseError {
            let cause = StorageCause(sqliteCode: e.extendedResultCode.rawValue)
            switch e.resultCode {
            case .SQLITE_CORRUPT where e.message == DigestFunction.corruptMessage:
                return .corrupted(DigestFunction.corruptMessage)
            case .SQLITE_NOTADB, .SQLITE_CORRUPT:
                return .corrupted("the file is not a readable wallet database (\(e.resultCode))")
            case .SQLITE_FULL:
                return .storage("the disk is full", cause: cause)
            case .SQLITE_BUSY, .SQLITE_LOCKED:
                return .storage("the wallet stayed locked by another writer for too long", cause: cause)
            case .SQLITE_READONLY, .SQLITE_CANTOPEN, .SQLITE_PERM:
                return .storage("cannot open the wallet file for writing (\(e.resultCode))", cause: cause)
            case .SQLITE_ERROR where e.message?.hasPrefix("no such table: cp") == true:
                // Another profile's removal dropped this one's tables while it was open.
                return .storage(profileRemovedMessage, cause: cause)
            case .SQLITE_MISUSE where e.message == "Connection is closed":
                // GRDB's answer to any use of a closed pool.
                return .closed
            default:
                // SQLite's own message says which limit or statement (bound values never appear in it).
                return .storage("SQLite error \(e.resultCode)\(e.message.map { ": \($0)" } ?? "")", cause: cause)
            }
        }
        if let e = error as? CryptoError { return .storage("\(e)") }
        return .storage("\(error)", cause: StorageCause(error))
    }
}

/// The key-derivation record stored in plaintext beside the sealed keys: method, costs, salt.
struct KDFRecord: Sendable {

    var method: String
    var parameters: Argon2idParameters?
    var salt: Data?

    init(method: String, parameters: Argon2idParameters? = nil, salt: Data? = nil) {
        self.method = method
        self.parameters = parameters
        self.salt = salt
    }

    init(json: String) throws {
        guard case .object(let members)? = try? JSONValue.parse(json) else {
            throw WalletError.corrupted("the wallet's key-derivation record is not JSON")
        }
        var dict = [String: JSONValue]()
        for (k, v) in members { dict[k] = v }
        guard case .string(let method)? = dict["method"] else {
            throw WalletError.corrupted("the wallet's key-derivation record has no method")
        }
        self.method = method
        if method == "argon2id" {
            guard case .number(let ops)? = dict["opsLimit"], case .number(let mem)? = dict["memLimit"],
                case .string(let salt64)? = dict["salt"], let o = UInt64(ops), let m = Int(mem),
                let salt = Data(base64Encoded: salt64)
            else { throw WalletError.corrupted("the wallet's Argon2id record is incomplete") }
            // The record is not authenticated: refuse costs over Coffer's cap (which create and
            // rekey also enforce), so an altered file cannot make opening hang or exhaust memory.
            let found = Argon2idParameters(opsLimit: o, memLimit: m)
            do { try found.validateWithinCap() } catch {
                throw WalletError.corrupted("the wallet's stored key costs are refused: \(error)")
            }
            guard salt.count == Argon2idParameters.saltByteCount else {
                throw WalletError.corrupted("the wallet's Argon2id salt is not 16 bytes")
            }
            parameters = found
            self.salt = salt
        }
    }

    var jsonText: String {
        var members: [(String, JSONValue)] = [("method", .string(method))]
        if let parameters, let salt {
            members.append(("opsLimit", .number(String(parameters.opsLimit))))
            members.append(("memLimit", .number(String(parameters.memLimit))))
            members.append(("salt", .string(salt.base64EncodedString())))
        }
        return JSONValue.object(members).jsonText
    }
}
