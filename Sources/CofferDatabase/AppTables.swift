// An app's own tables in the app database, beside Coffer's: its schema steps run after Coffer's,
// under their own names, and its reads and writes go through the same pool. The one place an app
// writes GRDB itself: it declares GRDB as a dependency of its own and imports it (docs/app-data.md).

import CofferSync
import Foundation
import GRDB

/// One step of an app's own schema in the app database (its tables, indexes and their changes):
/// applied once, in order, after Coffer's own steps, in one transaction with the record that it
/// ran. Shipped steps never change; new ones are appended. An app database that has a step this
/// app does not know (written by a newer version of the app) is refused, as for Coffer's own.
///
/// The body receives GRDB's `Database`: an app that writes one adds GRDB (the version range
/// Coffer's `Package.swift` names) to its own dependencies and writes `import GRDB` in that file.
///
/// ```swift
/// let notes = AppMigration("notes-v1") { db in
///     try db.execute(sql: "CREATE TABLE notes(id INTEGER PRIMARY KEY, text TEXT NOT NULL)")
/// }
/// let app = try await AppDatabase.open(at: url, appMigrations: [notes])
/// ```
public struct AppMigration: Sendable {
    /// The step's name, unique among the app's steps (Coffer records it as `app:NAME`, so it
    /// never clashes with Coffer's own).
    public let name: String
    /// The step.
    public let migrate: @Sendable (Database) throws -> Void

    /// A step named `name`.
    public init(_ name: String, migrate: @escaping @Sendable (Database) throws -> Void) {
        precondition(!name.isEmpty, "an app migration needs a name")
        self.name = name
        self.migrate = migrate
    }

    /// The identifier the migrator records.
    var identifier: String { "app:" + name }
}

extension AppDatabase {
    /// Opens the app database as ``openBlocking(at:dataMigrations:schemaUpTo:)`` does, with the
    /// app's own schema steps run after Coffer's (see ``AppMigration``).
    /// Blocks the calling thread while the database opens and migrates: from async code, `await`
    /// ``open(at:appMigrations:dataMigrations:)-95jm3``.
    public static func openBlocking(
        at url: URL, appMigrations: [AppMigration], dataMigrations: [DataMigration] = AppDatabase.dataMigrations
    ) throws -> AppDatabase {
        try open(at: url, dataMigrations: dataMigrations, schemaUpTo: nil, profile: nil, appMigrations: appMigrations)
    }

    /// The blocking form's old name, kept for one release: use
    /// `openBlocking(at:appMigrations:dataMigrations:)`.
    @available(*, deprecated, renamed: "openBlocking(at:appMigrations:dataMigrations:)")
    public static func open(
        at url: URL, appMigrations: [AppMigration], dataMigrations: [DataMigration] = AppDatabase.dataMigrations
    ) throws -> AppDatabase {
        try openBlocking(at: url, appMigrations: appMigrations, dataMigrations: dataMigrations)
    }

    /// ``openBlocking(at:appMigrations:dataMigrations:)`` off the caller's executor.
    public static func open(
        at url: URL, appMigrations: [AppMigration], dataMigrations: [DataMigration] = AppDatabase.dataMigrations
    ) async throws -> AppDatabase {
        try await offCallerUnlessCancelled {
            try open(at: url, dataMigrations: dataMigrations, schemaUpTo: nil, profile: nil, appMigrations: appMigrations)
        }
    }

    /// Reads the app's own tables (or any table) with GRDB's `Database`, in one read transaction
    /// off the caller's executor. For the GRDB escape hatch (see ``AppMigration``): Coffer's own
    /// tables are better read through ``context``.
    /// - Throws: `CancellationError` when the task was cancelled before the call;
    ///   ``DatabaseStoreError/closed`` after ``close()``; else ``DatabaseStoreError``.
    public func read<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try Task.checkCancellation()
        try checkOpen()
        do { return try await pool.read(body) } catch { throw DatabaseStoreError.from(error) }
    }

    /// Writes the app's own tables with GRDB's `Database`, in one transaction (all or nothing)
    /// off the caller's executor, durable when it returns. Observations of the tables it changes
    /// (``StorageContext/observe(_:)``) yield after the commit.
    /// - Throws: `CancellationError` when the task was cancelled before the call (nothing is
    ///   written); ``DatabaseStoreError/closed`` after ``close()``; else ``DatabaseStoreError``
    ///   (a unique-key clash is ``DatabaseStoreError/uniqueViolation(key:table:)``).
    public func write<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try Task.checkCancellation()
        try checkOpen()
        do { return try await pool.write(body) } catch { throw DatabaseStoreError.from(error) }
    }
}
