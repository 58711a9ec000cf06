// WAL checkpoints after a commit has returned, instead of inside it.

import CofferSync
import Foundation
import GRDB
import GRDBSQLite

/// Moves a database's WAL checkpoints off the commit path, and keeps the WAL and the free pages
/// from growing for good.
///
/// SQLite's automatic checkpoint runs inside the commit that takes the WAL past 1,000 pages, so
/// that one write call also copies the whole WAL into the database file and waits for it to
/// reach the disk: about a tenth of a large batch's time on the machine measured. Here a WAL
/// hook on the writer notes the same threshold and queues a passive checkpoint on the writer's
/// queue, behind the commit: the call returns once its own commit is durable, and the next write
/// waits for the checkpoint only if it comes before the checkpoint is done.
///
/// Durability is unchanged: a commit is on disk once the WAL is (`synchronous = FULL`); a
/// checkpoint only copies committed pages into the main file, and a crash before or during one
/// loses nothing (SQLite replays the WAL on open).
///
/// After a checkpoint that copied the whole WAL, a WAL file larger than
/// ``SQLiteFootprint/walLimitBytes`` is truncated (a truncating checkpoint that does not wait:
/// if a reader still needs the WAL it is left for the next one, and `journal_size_limit` trims it
/// at the next write). A database with more than ``SQLiteFootprint/freePagesToReclaim`` free
/// pages (after large deletes) gives them back to the file system (`incremental_vacuum`).
package final class Checkpointer: Sendable {
    /// WAL pages that trigger a checkpoint (SQLite's own automatic threshold).
    package static let walPages: Int32 = 1_000

    private struct State {
        /// A checkpoint is queued on the writer and has not started.
        var queued = false
        weak var pool: DatabasePool?
        /// The hook holds a reference to this object (until ``Checkpointer/poolClosed()``).
        var installed = false
    }

    private let state: Locked<State>

    private init(pool: DatabasePool) { state = Locked(State(pool: pool, installed: true)) }

    /// Hooks the pool's writer. This replaces SQLite's automatic checkpoint on that connection
    /// (the two share one hook). The hook keeps this object alive until ``poolClosed()``.
    package static func install(on pool: DatabasePool) -> Checkpointer {
        let checkpointer = Checkpointer(pool: pool)
        let context = Unmanaged.passRetained(checkpointer).toOpaque()
        pool.writeWithoutTransaction { db in
            _ = sqlite3_wal_hook(
                db.sqliteConnection,
                { context, _, _, pages in
                    if pages >= Checkpointer.walPages, let context {
                        Unmanaged<Checkpointer>.fromOpaque(context).takeUnretainedValue().enqueue()
                    }
                    return SQLITE_OK
                }, context)
        }
        return checkpointer
    }

    /// Called from the hook, on the writer, as a commit completes.
    private func enqueue() {
        let target = state.withLock { (state) -> DatabasePool? in
            guard !state.queued, let pool = state.pool else { return nil }
            state.queued = true
            return pool
        }
        guard let pool = target else { return }
        pool.asyncWriteWithoutTransaction { db in
            self.state.withLock { $0.queued = false }
            // Passive: never waits for readers; what it cannot copy now, a later one will.
            SQLiteFootprint.reclaimFreePages(db)
            SQLiteFootprint.checkpointAndTrim(db)
        }
    }

    /// Drops the hook's reference once the pool's connections are closed (no commit can call
    /// the hook any more).
    package func poolClosed() {
        let release = state.withLock { (state) -> Bool in
            defer { state.installed = false }
            return state.installed
        }
        if release { Unmanaged.passUnretained(self).release() }
    }
}
