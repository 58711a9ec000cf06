// The app database (`app.sqlite`): schema migrations through GRDB's migrator, then the ordered
// data-migration ladder whose version lives in the settings store, then integrity checks.

import CofferFileModes
import CofferSQLite
import CofferSettings
import CofferSync
import Foundation
import GRDB
import Logging

@_exported import struct CofferSync.StorageCause

/// Errors of the app database; each names what was wrong.
public enum DatabaseStoreError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A write would give two rows the same value of a unique key (named).
    case uniqueViolation(key: String, table: String)
    /// The file was written by a newer app version; it was not touched.
    case newerVersion(String)
    /// The integrity or foreign-key check after migrating failed.
    case integrityFailed(String)
    /// A row holds a value Coffer cannot read (the message names the table, the row, the column,
    /// the value and what to do); the call changed nothing.
    case unreadableRow(String)
    /// An argument was rejected.
    case invalidInput(String)
    /// SQLite or the file system failed.
    /// `cause` keeps the system's error number or SQLite's result code underneath (nil when
    /// there was none), so a caller can tell a full disk from a refused permission.
    case storage(String, cause: StorageCause? = nil)
    /// The database was closed (``AppDatabase/close()``, or its container's `close()` or
    /// `reset()`); open it again to use it.
    case closed

    /// What went wrong.
    public var description: String {
        switch self {
        case .closed: return "the app database was closed; open it again to use it"
        case .uniqueViolation(let key, let table): return "another \(table) row already has this \(key) (unique key \(key))"
        case .newerVersion(let m): return "the database was written by a newer app version and was left untouched: \(m)"
        case .integrityFailed(let m): return "the database failed its integrity check after migrating: \(m)"
        case .unreadableRow(let m): return "unreadable row: \(m)"
        case .invalidInput(let m): return "invalid input: \(m)"
        case .storage(let m, _): return "database storage: \(m)"
        }
    }

    /// Maps SQLite's unique-constraint errors to ``uniqueViolation(key:table:)``.
    static func from(_ error: Error) -> Error {
        if let e = error as? DatabaseStoreError { return e }
        if let e = error as? DatabaseError,
            e.extendedResultCode == .SQLITE_CONSTRAINT_UNIQUE || e.extendedResultCode == .SQLITE_CONSTRAINT_PRIMARYKEY,
            let message = e.message, let range = message.range(of: "constraint failed: ")
        {
            // "UNIQUE constraint failed: assets.ownerId, assets.checksum"
            let columns = message[range.upperBound...].split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            let table = columns.first?.split(separator: ".").first.map(String.init) ?? "?"
            let key = columns.compactMap { $0.split(separator: ".").last.map(String.init) }.joined(separator: "+")
            return DatabaseStoreError.uniqueViolation(key: key, table: table)
        }
        // A closed pool: GRDB refuses its readers ("Connection is closed") and SQLite its writer
        // (SQLITE_MISUSE, reported with the text of another code). Coffer's own statements
        // misuse nothing else, so the code alone means "closed".
        if let e = error as? DatabaseError, e.resultCode == .SQLITE_MISUSE { return DatabaseStoreError.closed }
        if let e = error as? DatabaseError { return DatabaseStoreError.storage("\(e)", cause: StorageCause(e)) }
        return error
    }
}

/// One named step of the data-migration ladder. It must be safe to run again: a crash part-way
/// rolls its transaction back, and it runs again at the next open.
public struct DataMigration: Sendable {
    /// The data version this step brings the database to.
    public let version: Int
    /// A name for logs and errors.
    public let name: String
    /// The step (inside one transaction, with the version bump).
    public let run: @Sendable (Database) throws -> Void

    /// A step.
    public init(version: Int, name: String, run: @escaping @Sendable (Database) throws -> Void) {
        self.version = version
        self.name = name
        self.run = run
    }
}

/// The app database: one file shared by settings and the entity collections.
public final class AppDatabase: Sendable {
    /// The connection pool (one per file). Package-internal: apps reach the data through
    /// ``settings``, ``context`` and their observations, which are Coffer's own types.
    package let pool: DatabasePool
    /// The typed settings store.
    public let settings: Settings
    /// One typed client per entity.
    public let context: StorageContext
    /// Whether this open created the file (a fresh install, or the first open after a reset).
    public let isFreshInstall: Bool

    static let logger = Logger(label: "coffer.database")

    /// Schema migrations, oldest first. Shipped steps never change; new ones are appended.
    package static func migrator(appMigrations: [AppMigration] = []) -> DatabaseMigrator {
        var migrator = DatabaseMigrator()
        Settings.registerMigrations(&migrator)
        migrator.registerMigration("app-v1") { db in
            try db.execute(
                sql: """
                    CREATE TABLE assets(
                        id INTEGER PRIMARY KEY AUTOINCREMENT,
                        remoteId TEXT UNIQUE,
                        localId TEXT UNIQUE,
                        ownerId TEXT NOT NULL,
                        checksum TEXT NOT NULL,
                        fileName TEXT NOT NULL,
                        type TEXT NOT NULL,
                        fileCreatedAt DATETIME NOT NULL,
                        fileModifiedAt DATETIME NOT NULL,
                        updatedAt DATETIME NOT NULL,
                        durationInSeconds INTEGER NOT NULL DEFAULT 0,
                        width INTEGER, height INTEGER,
                        isFavorite BOOLEAN NOT NULL DEFAULT 0,
                        isArchived BOOLEAN NOT NULL DEFAULT 0,
                        isTrashed BOOLEAN NOT NULL DEFAULT 0);
                    CREATE UNIQUE INDEX assets_owner_checksum ON assets(ownerId, checksum);
                    CREATE TABLE albums(
                        id INTEGER PRIMARY KEY AUTOINCREMENT,
                        remoteId TEXT,
                        name TEXT NOT NULL,
                        createdAt DATETIME NOT NULL,
                        modifiedAt DATETIME NOT NULL,
                        startDate DATETIME, endDate DATETIME,
                        ownerId TEXT NOT NULL,
                        shared BOOLEAN NOT NULL DEFAULT 0);
                    CREATE INDEX albums_remote ON albums(remoteId);
                    CREATE TABLE album_assets(
                        albumId INTEGER NOT NULL REFERENCES albums(id) ON DELETE CASCADE,
                        assetId INTEGER NOT NULL REFERENCES assets(id) ON DELETE CASCADE,
                        PRIMARY KEY(albumId, assetId)) WITHOUT ROWID;
                    CREATE INDEX album_assets_asset ON album_assets(assetId);
                    CREATE TABLE album_users(
                        albumId INTEGER NOT NULL REFERENCES albums(id) ON DELETE CASCADE,
                        userId TEXT NOT NULL,
                        PRIMARY KEY(albumId, userId)) WITHOUT ROWID;
                    CREATE TABLE backup_albums(id TEXT PRIMARY KEY NOT NULL, name TEXT NOT NULL, selection TEXT NOT NULL, lastBackup DATETIME NOT NULL);
                    CREATE TABLE duplicated_assets(id TEXT PRIMARY KEY NOT NULL);
                    CREATE TABLE etags(id TEXT PRIMARY KEY NOT NULL, assetCount INTEGER NOT NULL, time DATETIME NOT NULL);
                    CREATE TABLE android_device_assets(id TEXT PRIMARY KEY NOT NULL, hash BLOB NOT NULL);
                    CREATE TABLE ios_device_assets(id TEXT PRIMARY KEY NOT NULL, hash BLOB NOT NULL, modifiedTime DATETIME NOT NULL);
                    CREATE TABLE brands(brandId TEXT PRIMARY KEY NOT NULL, image TEXT NOT NULL, keywords TEXT NOT NULL,
                                        name TEXT NOT NULL, language TEXT NOT NULL DEFAULT '');
                    CREATE INDEX brands_language ON brands(language);
                    """)
        }
        migrator.registerMigration("app-v2") { db in
            // Local file sizes for cleanup, and the date index created-between queries walk.
            try db.execute(
                sql: """
                    ALTER TABLE assets ADD COLUMN fileSize INTEGER;
                    CREATE INDEX assets_owner_created ON assets(ownerId, fileCreatedAt);
                    CREATE INDEX assets_created ON assets(fileCreatedAt);
                    """)
        }
        // The app's own steps, after Coffer's (which never follow them: Coffer's steps are all
        // registered first, and a new one of Coffer's runs before the app's new ones).
        for step in appMigrations { migrator.registerMigration(step.identifier, migrate: step.migrate) }
        return migrator
    }

    /// The data-migration ladder, in version order.
    public static let dataMigrations: [DataMigration] = [
        DataMigration(version: 1, name: "secrets-out-of-settings") { db in
            // Secrets never live in settings: a legacy access token is removed (it belongs in
            // secure storage, which the app fills at its next login).
            try db.execute(sql: "DELETE FROM coffer_settings WHERE name IN ('accessToken', 'sslClientCertData', 'sslClientCertPassword')")
        },
        DataMigration(version: 2, name: "owner-ids-lower-case") { db in
            // Server user ids are compared case-insensitively; store them one way. SQLite's lower()
            // lower-cases ASCII letters only: the same rule as OwnerId.normalized, which every
            // write and query since uses.
            // Assets are unique by (owner id, checksum): of assets whose owner ids differ only in
            // case and that share a checksum, one takes the lower-cased id (one that has it
            // already, else the most recently updated, else the later inserted); the others keep
            // theirs. Lower-casing them all failed the step for good, and every open with it.
            try db.execute(
                sql: """
                    UPDATE assets SET ownerId = lower(ownerId)
                    WHERE id IN (
                        SELECT id FROM (
                            SELECT id, ownerId, row_number() OVER (
                                PARTITION BY lower(ownerId), checksum
                                ORDER BY ownerId = lower(ownerId) DESC, updatedAt DESC, id DESC) AS rank
                            FROM assets)
                        WHERE rank = 1 AND ownerId <> lower(ownerId))
                    """)
            let kept = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM assets WHERE ownerId <> lower(ownerId)") ?? 0
            if kept > 0 {
                Logger(label: "coffer.database").warning(
                    "data migration 2: \(kept) assets keep an owner id that is not lower-cased: another asset of the same owner has their checksum"
                )
            }
            try db.execute(sql: "UPDATE albums SET ownerId = lower(ownerId) WHERE ownerId <> lower(ownerId)")
        },
        DataMigration(version: 3, name: "album-date-range") { db in
            try db.execute(
                sql: """
                    UPDATE albums SET
                        startDate = (SELECT MIN(a.fileCreatedAt) FROM album_assets x JOIN assets a ON a.id = x.assetId WHERE x.albumId = albums.id),
                        endDate = (SELECT MAX(a.fileCreatedAt) FROM album_assets x JOIN assets a ON a.id = x.assetId WHERE x.albumId = albums.id)
                    WHERE startDate IS NULL
                    """)
        },
        DataMigration(version: 4, name: "seed-004-setting-values") { db in
            // The seed's types and values: backupFailedSince is a DateTime (was JSON: a number of
            // milliseconds, or null), primaryColor's default is "Default" (was "default").
            try db.execute(
                sql: """
                    DELETE FROM coffer_settings WHERE name = 'backupFailedSince' AND kind = 'json' AND (value IS NULL OR value = 'null');
                    UPDATE coffer_settings SET kind = 'date', value = CAST(value AS INTEGER)
                        WHERE name = 'backupFailedSince' AND kind = 'json' AND CAST(value AS INTEGER) || '' = value;
                    UPDATE coffer_settings SET value = 'Default' WHERE name = 'primaryColor' AND kind = 'string' AND value = 'default';
                    """)
        },
        DataMigration(version: 5, name: "settings-names-nfc") { db in
            // Settings names are stored in Unicode form C: two spellings of one name were two
            // rows, and whichever loaded last won at the next launch.
            _ = try Settings.normalizeStoredNames(db)
        },
    ]

    /// Configuration: WAL, `synchronous=FULL` (a write returns after it is on disk), foreign keys.
    static func configuration() -> Configuration {
        var config = Configuration()
        config.label = "coffer.app"
        config.busyMode = .timeout(10)
        config.foreignKeysEnabled = true
        config.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = FULL")
            // A new file gives free pages back incrementally (set before its first page is
            // written; a no-op for existing files, which open() converts once).
            if !db.configuration.readonly { try SQLiteFootprint.makeIncremental(db) }
        }
        return config
    }

    /// Opens (creating when absent) the app database at `url`, runs the schema migrations, then
    /// the data ladder, then `PRAGMA quick_check` and `foreign_key_check`. The file and its
    /// `-wal`, `-shm` are mode 0600 (an existing wider mode is restricted), new folders 0700.
    /// - Throws: ``DatabaseStoreError/newerVersion(_:)`` before touching a file written by a newer
    ///   app; ``DatabaseStoreError/integrityFailed(_:)`` when a check fails afterwards.
    /// Blocks the calling thread while the database opens and migrates: from async code, `await`
    /// ``open(at:dataMigrations:schemaUpTo:)-2ift0``.
    public static func openBlocking(
        at url: URL, dataMigrations: [DataMigration] = AppDatabase.dataMigrations,
        schemaUpTo lastMigration: String? = nil
    ) throws -> AppDatabase {
        try open(at: url, dataMigrations: dataMigrations, schemaUpTo: lastMigration, profile: nil)
    }

    /// The blocking open's old name, kept for one release: use
    /// `openBlocking(at:dataMigrations:schemaUpTo:)`.
    @available(*, deprecated, renamed: "openBlocking(at:dataMigrations:schemaUpTo:)")
    public static func open(
        at url: URL, dataMigrations: [DataMigration] = AppDatabase.dataMigrations,
        schemaUpTo lastMigration: String? = nil
    ) throws -> AppDatabase {
        try openBlocking(at: url, dataMigrations: dataMigrations, schemaUpTo: lastMigration)
    }

    /// ``openBlocking(at:dataMigrations:schemaUpTo:)`` recording the statements its pool runs (tests of
    /// the open path's cost).
    package static func open(
        at url: URL, dataMigrations: [DataMigration] = AppDatabase.dataMigrations,
        schemaUpTo lastMigration: String? = nil, profile: StatementProfile?, appMigrations: [AppMigration] = []
    ) throws -> AppDatabase {
        let migrator = migrator(appMigrations: appMigrations)
        let target = dataMigrations.map(\.version).max() ?? 0
        do { try OwnerOnlyFiles.refuseNonRegularFiles(url) } catch {
            throw DatabaseStoreError.storage(error.message, cause: StorageCause(error))
        }
        let existed = FileManager.default.fileExists(atPath: url.path)
        if existed {
            try refuseNewer(url, migrator: migrator, dataTarget: target, ownsAppSteps: !appMigrations.isEmpty)
        } else {
            do { try OwnerOnlyFiles.ensureFolder(url.deletingLastPathComponent()) } catch {
                throw DatabaseStoreError.storage(error.message, cause: StorageCause(error))
            }
        }
        // Created 0600 (SQLite then makes -wal and -shm 0600 too), or restricted to 0600.
        do { try OwnerOnlyFiles.prepareDatabase(url) } catch { throw DatabaseStoreError.storage(error.message, cause: StorageCause(error)) }
        let pool: DatabasePool
        // Whether this open changed the schema (then the file is checked below).
        var schemaMigrated = false
        do {
            var poolConfiguration = configuration()
            if let profile { poolConfiguration.prepareDatabase { profile.install(on: $0) } }
            let makePool = { try DatabasePool(path: url.path, configuration: poolConfiguration) }
            if SQLiteFootprint.isInWALMode(atPath: url.path) {
                pool = try makePool()
            } else {
                // The pool's first connection switches a new file to WAL. SQLite does not wait
                // for the lock that switch needs, so two processes switching at once failed with
                // "database is locked": they switch one at a time, under the migration lock.
                pool = try ProcessLock.withLock(at: migrationLockPath(url), removeWhenDone: true, failure: { $0 as any Error }, makePool)
            }
            // DatabasePool puts its writer in WAL with synchronous = NORMAL after
            // prepareDatabase; a commit must reach the disk before it returns.
            let schemaCurrent = try pool.writeWithoutTransaction { db in
                try db.execute(sql: "PRAGMA synchronous = FULL")
                try SQLiteFootprint.limitWAL(db)
                return try schemaIsCurrent(db, migrator: migrator)
            }
            if !schemaCurrent || lastMigration != nil {
                TestPause.at("app-database-migrating")
                // Processes opening a new (or older) store at once migrate one at a time, under
                // one lock between processes; each one re-reads what is applied once it holds it
                // (the migrator reads it), so the steps run once.
                let migrate = { () throws -> Void in
                    if let lastMigration {
                        try migrator.migrate(pool, upTo: lastMigration)
                    } else {
                        try migrator.migrate(pool)
                        schemaMigrated = existed
                    }
                }
                try ProcessLock.withLock(at: migrationLockPath(url), removeWhenDone: true, failure: { $0 as any Error }, migrate)
            }
            // Files made before that are converted once (one VACUUM).
            if existed { try pool.writeWithoutTransaction { try SQLiteFootprint.convertToIncremental($0) } }
        } catch {
            throw DatabaseStoreError.storage("opening or migrating \(url.path) failed: \(error)", cause: StorageCause(error))
        }
        // Fresh: this process found no file and was the one to record the first data version.
        // (Two processes opening a new store at once may both find no file; only one records the
        // version, so only one treats the start as a fresh install.)
        var recordedFirst = !existed
        if lastMigration == nil {
            var dataMigrated = false
            do {
                if !dataMigrations.isEmpty {
                    let ladder = try runLadder(pool, dataMigrations, freshInstall: !existed)
                    recordedFirst = ladder.recordedFirst
                    dataMigrated = ladder.ranSteps
                }
                // The seed's last migration step: verify the data. Only after a migration rewrote
                // the file: both checks read every page (74 ms at 100,000 assets, measured by
                // `coffer bench launch`), which a launch with nothing to migrate does not pay.
                // ``checkIntegrity()`` runs them on demand (e.g. in the background).
                if schemaMigrated || dataMigrated { try check(pool) }
            } catch let error as DatabaseStoreError {
                throw error
            } catch {
                // SQLite's own error (the file removed meanwhile by a reset in another process).
                throw DatabaseStoreError.storage("opening \(url.path) failed: \(error)", cause: StorageCause(error))
            }
        }
        let settings = try Settings(database: pool)
        return AppDatabase(pool: pool, settings: settings, isFreshInstall: !existed && recordedFirst)
    }

    private init(pool: DatabasePool, settings: Settings, isFreshInstall: Bool) {
        self.pool = pool
        self.settings = settings
        self.context = StorageContext(pool: pool)
        self.isFreshInstall = isFreshInstall
    }

    /// Whether every schema step is applied, read without the migration lock. GRDB's own
    /// `hasCompletedMigrations` reads `grdb_migrations` and, when that fails, looks whether the
    /// table exists: another process committing the table's creation between the two made it throw
    /// "no such table" (three `sdk init`s on a new store, one failed). The table is looked for
    /// first here; once it exists it stays, so the read that follows cannot miss it.
    static func schemaIsCurrent(_ db: Database, migrator: DatabaseMigrator) throws -> Bool {
        let exists = try Bool.fetchOne(
            db, sql: "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'grdb_migrations')")
        guard exists == true else { return false }
        return try migrator.hasCompletedMigrations(db)
    }

    /// The lock file schema migrations hold (`.NAME.lock` beside the database; present only while
    /// held, or when a process was killed holding it).
    static func migrationLockPath(_ url: URL) -> String {
        url.deletingLastPathComponent().appendingPathComponent(".\(url.lastPathComponent).lock").path
    }

    /// Reads the file read-only and refuses it when it is newer than this code knows.
    /// `ownsAppSteps`: the opener passed the app's own schema steps, so one it does not know is a
    /// newer app's; an opener without them (the `coffer` tool, a container) leaves `app:` steps alone.
    static func refuseNewer(_ url: URL, migrator: DatabaseMigrator, dataTarget: Int, ownsAppSteps: Bool = false) throws {
        var config = Configuration()
        config.readonly = true
        // Another process may be migrating or writing: wait for its lock as every other connection does.
        config.busyMode = .timeout(10)
        do {
            let queue = try DatabaseQueue(path: url.path, configuration: config)
            defer { try? queue.close() }
            try queue.read { db in
                // A file another process has only begun to make has no migrations yet.
                if try db.tableExists("grdb_migrations"), try migrator.hasBeenSuperseded(db) {
                    let applied = try String.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations")
                    let known = Set(migrator.migrations)
                    let unknown = applied.filter { !known.contains($0) && (ownsAppSteps || !$0.hasPrefix("app:")) }
                    if !unknown.isEmpty { throw DatabaseStoreError.newerVersion("unknown schema migrations \(unknown)") }
                }
                if try db.tableExists("coffer_settings"),
                    let version = try Int.fetchOne(db, sql: "SELECT value FROM coffer_settings WHERE name = 'version' AND kind = 'int'"),
                    version > dataTarget
                {
                    throw DatabaseStoreError.newerVersion("data version \(version), this app knows up to \(dataTarget)")
                }
            }
        } catch let error as DatabaseStoreError {
            throw error
        } catch {
            throw DatabaseStoreError.storage("cannot read \(url.path): \(error)", cause: StorageCause(error))
        }
    }

    /// Runs every step above the stored version, each in one transaction with its version bump.
    /// On a fresh install (the file did not exist) there is nothing to migrate: the steps only
    /// record their versions.
    /// Runs the data ladder's steps above the recorded version, each in one IMMEDIATE transaction
    /// that re-reads the version first (another process may have run it meanwhile). Returns
    /// whether this call recorded the first version (none was recorded before).
    @discardableResult
    static func runLadder(_ pool: DatabasePool, _ steps: [DataMigration], freshInstall fresh: Bool) throws -> LadderResult {
        let ordered = steps.sorted { $0.version < $1.version }
        var recordedFirst = false
        var ranSteps = false
        // One read of the version for the usual launch, where every step is done.
        let recorded = try pool.read { db in
            try Int.fetchOne(db, sql: "SELECT value FROM coffer_settings WHERE name = 'version' AND kind = 'int'") ?? 0
        }
        for step in ordered where step.version > recorded {
            do {
                try pool.writeWithoutTransaction { db in
                    try db.inTransaction(.immediate) {
                        // Under the write lock: skip a step another process has done meanwhile.
                        let now = try Int.fetchOne(db, sql: "SELECT value FROM coffer_settings WHERE name = 'version' AND kind = 'int'")
                        guard step.version > (now ?? 0) else { return .commit }
                        if now == nil { recordedFirst = true }
                        // A fresh install has nothing to migrate: it only records the version.
                        if !fresh {
                            try step.run(db)
                            ranSteps = true
                        }
                        try db.execute(
                            sql: """
                                INSERT INTO coffer_settings(name, kind, value, updated_at) VALUES ('version', 'int', ?, ?)
                                ON CONFLICT(name) DO UPDATE SET kind = 'int', value = excluded.value, updated_at = excluded.updated_at
                                """, arguments: [step.version, Int64(Date().timeIntervalSince1970 * 1000)])
                        return .commit
                    }
                }
            } catch {
                throw DatabaseStoreError.storage(
                    "data migration \(step.version) \"\(step.name)\" failed (it will run again): \(error)", cause: StorageCause(error))
            }
            if !fresh { logger.info("data migration \(step.version) \(step.name) done") }
        }
        return LadderResult(recordedFirst: recordedFirst, ranSteps: ranSteps)
    }

    /// What ``runLadder(_:_:freshInstall:)`` did.
    struct LadderResult {
        /// This call recorded the first data version (none was recorded before).
        let recordedFirst: Bool
        /// A step rewrote data (not only recorded its version).
        let ranSteps: Bool
    }

    /// Runs SQLite's `PRAGMA quick_check` and `PRAGMA foreign_key_check` over the whole file —
    /// what ``openBlocking(at:dataMigrations:schemaUpTo:)`` runs after a migration. It reads every page
    /// (74 ms at 100,000 assets here), so run it off the main actor, e.g. in a background task
    /// after launch. Other reads and writes go on meanwhile (it reads a snapshot).
    /// - Throws: ``DatabaseStoreError/integrityFailed(_:)`` naming the first problems.
    public func checkIntegrity() async throws {
        try Task.checkCancellation()
        try checkOpen()
        let pool = self.pool
        try await Task.detached(priority: .utility) {
            do { try Self.check(pool) } catch { throw DatabaseStoreError.from(error) }
        }.value
    }

    /// Throws ``DatabaseStoreError/closed`` once ``close()`` ran, so a call after it never reaches
    /// the closed pool (whose errors would name SQLite, not the store).
    func checkOpen() throws {
        if context.observations.isClosed { throw DatabaseStoreError.closed }
    }

    /// `PRAGMA quick_check` and `PRAGMA foreign_key_check`; a failure is reported, not ignored.
    static func check(_ pool: DatabasePool) throws {
        let (integrity, foreignKeys) = try pool.read { db in
            (try String.fetchAll(db, sql: "PRAGMA quick_check"), try Row.fetchAll(db, sql: "PRAGMA foreign_key_check"))
        }
        guard integrity == ["ok"] else { throw DatabaseStoreError.integrityFailed(integrity.prefix(5).joined(separator: "; ")) }
        guard foreignKeys.isEmpty else {
            let first = foreignKeys.prefix(3).map { "\($0[0] as String? ?? "?") row \($0[1] as Int64? ?? -1) → \($0[2] as String? ?? "?")" }
            throw DatabaseStoreError.integrityFailed("\(foreignKeys.count) foreign-key violations, e.g. \(first.joined(separator: ", "))")
        }
    }

    /// ``openBlocking(at:dataMigrations:schemaUpTo:)`` off the caller's executor: the migrations and
    /// checks run on a worker thread, so awaiting it from the main actor does not block it.
    public static func open(
        at url: URL, dataMigrations: [DataMigration] = AppDatabase.dataMigrations,
        schemaUpTo lastMigration: String? = nil
    ) async throws -> AppDatabase {
        try await offCallerUnlessCancelled { try open(at: url, dataMigrations: dataMigrations, schemaUpTo: lastMigration, profile: nil) }
    }

    /// ``statsBlocking()`` off the caller's executor.
    public func stats() async throws -> [(table: String, rows: Int)] {
        let rows = try await offCallerUnlessCancelled { try self.statsBlocking().map { TableRows(table: $0.table, rows: $0.rows) } }
        return rows.map { (table: $0.table, rows: $0.rows) }
    }

    /// ``compactBlocking()`` off the caller's executor.
    @discardableResult
    public func compact() async throws -> (bytesBefore: Int, bytesAfter: Int) {
        let sizes = try await offCallerUnlessCancelled { () throws -> [Int] in
            let (before, after) = try self.compactBlocking() as (bytesBefore: Int, bytesAfter: Int)
            return [before, after]
        }
        return (bytesBefore: sizes[0], bytesAfter: sizes[1])
    }

    /// One collection's row count (a `Sendable` carrier for ``stats()``).
    private struct TableRows: Sendable {
        let table: String
        let rows: Int
    }

    /// Rows per collection (`coffer db stats`). Blocks the calling thread while SQLite counts;
    /// from async code, `await` ``stats()-iawp``.
    public func statsBlocking() throws -> [(table: String, rows: Int)] {
        let tables = [
            "assets", "albums", "album_assets", "album_users", "backup_albums", "duplicated_assets", "etags",
            "android_device_assets", "ios_device_assets", "brands", "coffer_settings",
        ]
        try checkOpen()
        do {
            return try pool.read { db in
                try tables.map { ($0, try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM \($0)") ?? 0) }
            }
        } catch {
            throw DatabaseStoreError.from(error)
        }
    }

    /// Closes the pool and ends every settings stream and collection observation it serves (each
    /// ends by throwing its store's `closed`); later calls throw ``DatabaseStoreError/closed``
    /// (settings writes: `SettingsError.closed`). Calling it again does nothing.
    ///
    /// Settings values that `Settings.set` left pending are committed first. When that commit
    /// fails (a full disk), the close still completes and then throws
    /// ``DatabaseStoreError/storage(_:cause:)`` naming the settings that were not saved: memory
    /// had them, the disk does not.
    public func close() throws {
        context.observations.closeAll()
        var unsaved: SettingsError?
        do { try settings.flushBlocking() } catch { unsaved = error }
        settings.close()
        try pool.close()
        // GRDB closes its read-only readers last, and they cannot remove the WAL.
        SQLiteFootprint.removeWAL(atPath: pool.path)
        if let unsaved, case .storage(let message, let cause) = unsaved {
            throw DatabaseStoreError.storage(message, cause: cause)
        }
    }

    /// Gives every free page back to the file system and truncates the WAL. Blocks the calling
    /// thread; from async code, `await` ``compact()-1j2ag``.
    /// - Returns: the bytes of `app.sqlite` and its WAL before and after.
    @discardableResult
    public func compactBlocking() throws -> (bytesBefore: Int, bytesAfter: Int) {
        try checkOpen()
        let path = pool.path
        do {
            return try pool.writeWithoutTransaction { db in
                let (before, after) = try SQLiteFootprint.compact(db, path: path)
                return (bytesBefore: before, bytesAfter: after)
            }
        } catch {
            throw DatabaseStoreError.from(error)
        }
    }
}

extension AppDatabase {
    /// The blocking form's old name, kept for one release: use `statsBlocking()`.
    @available(*, deprecated, renamed: "statsBlocking()")
    public func stats() throws -> [(table: String, rows: Int)] { try statsBlocking() }

    /// The blocking form's old name, kept for one release: use `compactBlocking()`.
    @available(*, deprecated, renamed: "compactBlocking()")
    @discardableResult
    public func compact() throws -> (bytesBefore: Int, bytesAfter: Int) { try compactBlocking() }
}

extension DatabaseStoreError: LocalizedError {
    /// The same text as `description`: what went wrong and what to do (for
    /// `localizedDescription`, alerts and logs).
    public var errorDescription: String? { description }
}
