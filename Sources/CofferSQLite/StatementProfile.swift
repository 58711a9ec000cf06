// What SQL a connection ran and how much work each statement did, for tests that prove a code
// path does no per-record work (the same statements and virtual-machine steps at any size).

import CofferSync
import Foundation
import GRDB
import GRDBSQLite

/// Records every statement the connections it is installed on run: its SQL and its
/// virtual-machine steps (`SQLITE_STMTSTATUS_VM_STEP`), which grow with every row a statement
/// visits. Installed through SQLite's `sqlite3_trace_v2` profile event; meant for tests.
package final class StatementProfile: Sendable {
    /// The statements so far; connections report from their own threads.
    private let entries = Locked<[(sql: String, steps: Int)]>([])

    package init() {}

    /// Every statement so far, in order.
    package var statements: [(sql: String, steps: Int)] { entries.withLock { $0 } }

    /// Starts recording the statements `db` runs. The profile must outlive the connection.
    package func install(on db: Database) {
        let context = Unmanaged.passUnretained(self).toOpaque()
        sqlite3_trace_v2(
            db.sqliteConnection, UInt32(SQLITE_TRACE_PROFILE),
            { _, context, statement, _ in
                guard let context, let statement else { return 0 }
                let stmt = OpaquePointer(statement)
                let sql = sqlite3_sql(stmt).map { String(cString: $0) } ?? ""
                let steps = Int(sqlite3_stmt_status(stmt, SQLITE_STMTSTATUS_VM_STEP, 0))
                Unmanaged<StatementProfile>.fromOpaque(context).takeUnretainedValue().record(sql, steps)
                return 0
            }, context)
    }

    private func record(_ sql: String, _ steps: Int) {
        entries.withLock { $0.append((sql, steps)) }
    }
}
