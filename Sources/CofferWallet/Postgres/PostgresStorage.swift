// The PostgreSQL backend of the storage seam (see WalletStorage.swift): one profile's rows in one
// PostgreSQL transaction (`PostgresRows`), and the backend of a database (`PostgresWalletStorage`:
// transactions holding the profile's key gate, the profile catalogue), over the tables
// `PostgresStore` made (every profile in the same tables, keyed by its number).
//
// `PostgresWallet`'s record calls (add, fetch, replace, delete, searches, imports) keep their own
// one-statement forms in PostgresStore: they are what is measured against Askar. The maintenance
// that is the same on both backends (the integrity check, the backup export) runs here.

#if PostgreSQL
import CofferSync
import Foundation
import PostgresNIO

/// One PostgreSQL transaction's access to one profile's rows: every call is statements on the
/// transaction's connection, against the rows of profile ``ProfileTables/number``.
///
/// Tag values are `bytea` for both kinds (a `~` value is its UTF-8 bytes, with the number the
/// writer parsed from it in `num`), so rows read back come as ``StoredTagValue/stored(_:number:)``
/// (``storedForm(_:)`` gives a computed row that form). Writes of tag rows move their item's
/// `version`, as every writer of a record's tag rows does here (PostgresStore's optimistic
/// rewrites rely on it).
///
/// Every statement that writes a row of `coffer_items` also notifies the profile's observers of
/// the record's type, in the same statement (``PostgresStore/notifySchema``).
///
/// Calls throw the driver's errors as they come (the backend's `read` and `write` map them to
/// ``WalletError`` and retry a transaction the server failed on a conflict).
struct PostgresRows: WalletStorageTransaction {
    let connection: PostgresConnection
    let tables: ProfileTables

    private var profile: Int64 { tables.number }
    private var logger: Logger { PostgresStore.logger }

    /// The `bytea` and `num` columns of a tag value.
    private static func columns(_ value: StoredTagValue) -> (value: Data, number: Double?) {
        switch value {
        case .blind(let data): return (data, nil)
        case .plaintext(let text): return (Data(text.utf8), NumericTag.parse(text))
        case .stored(let data, let number): return (data, number)
        }
    }

    /// The first row's first column as an integer (a count, `EXISTS`), or nil when no row.
    private func scalar(_ query: PostgresQuery) async throws -> Int64? {
        for try await value in try await connection.send(query, logger: logger).decode(Int64.self) { return value }
        return nil
    }

    private func items(_ query: PostgresQuery, type: Int64, name: Data) async throws -> StoredItem? {
        for try await (id, value, expiry) in try await connection.send(query, logger: logger).decode((Int64, Data, Int64?).self) {
            return StoredItem(rowid: id, type: type, name: name, sealed: value, expiry: expiry)
        }
        return nil
    }

    /// Runs `write`, a data-modifying CTE named `item` on `coffer_items` that returns the
    /// written rows' `type`, with the CTE that notifies the profile's observers of those types;
    /// the statement returns how many rows it wrote.
    @discardableResult
    private func written(_ write: String) async throws -> Int64 {
        let sql = """
            WITH \(write), \(PostgresStore.notifySQL(profile: String(profile), types: "item"))
            SELECT (SELECT count(*) FROM item), (SELECT count(*) FROM notified)
            """
        for try await (count, _) in try await connection.send(PostgresQuery(unsafeSQL: sql), logger: logger).decode((Int64, Int64).self) {
            return count
        }
        return 0
    }

    /// Moves the item's `version` (its tag rows changed).
    private func touch(_ item: Int64) async throws {
        try await written(
            "item AS (UPDATE coffer_items SET version = version + 1 WHERE id = \(item) AND profile = \(profile) RETURNING type)")
    }

    // MARK: Items

    func locate(type: Int64, name: Data) async throws -> StoredItem? {
        try await items(
            "SELECT id, value, expiry FROM coffer_items WHERE profile = \(profile) AND type = \(type) AND name = \(name)",
            type: type, name: name)
    }

    func locateLive(type: Int64, name: Data, now: Int64) async throws -> StoredItem? {
        try await items(
            """
            SELECT id, value, expiry FROM coffer_items
            WHERE profile = \(profile) AND type = \(type) AND name = \(name) AND (expiry IS NULL OR expiry > \(now))
            """, type: type, name: name)
    }

    func insertItem(type: Int64, name: Data, sealed: Data, expiry: Int64?) async throws -> ItemInsertOutcome {
        let rows = try await connection.send(
            """
            WITH item AS (
                INSERT INTO coffer_items(profile, type, name, value, expiry)
                VALUES (\(profile), \(type), \(name), \(sealed), \(expiry)::bigint)
                ON CONFLICT (profile, type, name) DO NOTHING RETURNING id
            ), \(unescaped: PostgresStore.notifyOneSQL(profile: String(profile), type: String(type)))
            SELECT (SELECT id FROM item), (SELECT count(*) FROM notified)
            """, logger: logger)
        for try await (id, _) in rows.decode((Int64?, Int64).self) {
            if let id { return .inserted(rowid: id) }
        }
        return .duplicate
    }

    func restoreItem(_ item: StoredItem) async throws {
        try await PostgresStore.drain(
            """
            WITH item AS (
                INSERT INTO coffer_items(id, profile, type, name, value, expiry)
                VALUES (\(item.rowid), \(profile), \(item.type), \(item.name), \(item.sealed), \(item.expiry)::bigint)
                RETURNING id
            ), \(unescaped: PostgresStore.notifyOneSQL(profile: String(profile), type: String(item.type)))
            SELECT count(*) FROM notified
            """, on: connection)
    }

    func updateSealed(rowid: Int64, sealed: Data) async throws {
        try await PostgresStore.drain(
            """
            WITH item AS (
                UPDATE coffer_items SET value = \(sealed), version = version + 1 WHERE id = \(rowid) AND profile = \(profile)
                RETURNING type
            ), \(unescaped: PostgresStore.notifySQL(profile: String(profile), types: "item"))
            SELECT count(*) FROM notified
            """, on: connection)
    }

    func deleteItem(rowid: Int64) async throws {
        try await written("item AS (DELETE FROM coffer_items WHERE id = \(rowid) AND profile = \(profile) RETURNING type)")
    }

    func takeItem(type: Int64, name: Data) async throws -> StoredItem? {
        try await items(
            """
            WITH item AS (
                DELETE FROM coffer_items WHERE profile = \(profile) AND type = \(type) AND name = \(name) RETURNING id, value, expiry
            ), \(unescaped: PostgresStore.notifyOneSQL(profile: String(profile), type: String(type)))
            SELECT id, value, expiry, (SELECT count(*) FROM notified) FROM item
            """, type: type, name: name)
    }

    func containsType(_ type: Int64) async throws -> Bool {
        try await scalar("SELECT count(*) FROM (SELECT 1 FROM coffer_items WHERE profile = \(profile) AND type = \(type) LIMIT 1) s")
            ?? 0 > 0
    }

    func anyExpiry() async throws -> Bool {
        try await scalar(
            "SELECT count(*) FROM (SELECT 1 FROM coffer_items WHERE profile = \(profile) AND expiry IS NOT NULL LIMIT 1) s") ?? 0 > 0
    }

    // MARK: Tags

    func tags(item: Int64) async throws -> [StoredTag] {
        try await tags(items: [item])[item]?.compactMap { $0 } ?? []
    }

    func insertTags(item: Int64, _ rows: [StoredTag]) async throws {
        guard !rows.isEmpty else { return }
        let columns = rows.map { Self.columns($0.value) }
        let names = rows.map(\.name)
        let values = columns.map { ByteBuffer(bytes: $0.value) }
        let numbered = columns.map { $0.number != nil }
        let numbers = columns.map { $0.number ?? 0 }
        // A row already there (same name and value) is skipped, as SQLite's primary key does.
        try await PostgresStore.drain(
            """
            WITH t AS (
                SELECT DISTINCT ON (n, v) n, v, h, x
                FROM unnest(\(names)::bigint[], \(values)::bytea[], \(numbered)::boolean[], \(numbers)::double precision[]) AS t(n, v, h, x)
            ), added AS (
                INSERT INTO coffer_tags(item, profile, name, value, num)
                SELECT \(item), \(profile), t.n, t.v, CASE WHEN t.h THEN t.x END FROM t
                WHERE NOT EXISTS (
                    SELECT 1 FROM coffer_tags c WHERE c.item = \(item) AND c.profile = \(profile) AND c.name = t.n AND c.value = t.v)
            ), item AS (
                UPDATE coffer_items SET version = version + 1 WHERE id = \(item) AND profile = \(profile) RETURNING type
            ), \(unescaped: PostgresStore.notifySQL(profile: String(profile), types: "item"))
            SELECT count(*) FROM notified
            """, on: connection)
    }

    func deleteTags(item: Int64) async throws {
        try await connection.send("DELETE FROM coffer_tags WHERE item = \(item) AND profile = \(profile)", logger: logger)
        try await touch(item)
    }

    func deleteTag(item: Int64, _ row: StoredTag) async throws {
        let value = Self.columns(row.value).value
        try await connection.send(
            "DELETE FROM coffer_tags WHERE item = \(item) AND profile = \(profile) AND name = \(row.name) AND value = \(value)",
            logger: logger)
        try await touch(item)
    }

    /// Marks `names` in this profile's `coffer_tag_multi` (``PostgresStore/multiValuedSchema``):
    /// ``insertTags(item:_:)`` and ``bulkInsert(_:)`` leave it to their caller, as on SQLite.
    func markMultiValued(names: [Int64]) async throws {
        guard !names.isEmpty else { return }
        try await connection.send(
            "INSERT INTO coffer_tag_multi(profile, name) SELECT \(profile), unnest(\(names)::bigint[]) ON CONFLICT DO NOTHING",
            logger: logger)
    }

    /// Whether `name` is marked in this profile's `coffer_tag_multi`. The check reports a record
    /// holding several values of an unmarked tag: a mark deleted from outside, which lets a range
    /// counted from the tag index miss that record.
    func isMultiValued(name: Int64) async throws -> Bool {
        for try await marked in try await connection.send(
            "SELECT EXISTS (SELECT 1 FROM coffer_tag_multi WHERE profile = \(profile) AND name = \(name))", logger: logger
        ).decode(Bool.self) {
            return marked
        }
        return false
    }

    // MARK: Pages and counts

    /// `statement`'s parameters as the driver binds them.
    static func bindings(_ arguments: [StorageValue]) -> PostgresBindings {
        var binds = PostgresBindings()
        for argument in arguments {
            switch argument {
            case .null: binds.appendNull()
            case .integer(let v): binds.append(v)
            case .real(let v): binds.append(v)
            case .text(let v): binds.append(v)
            case .blob(let v): binds.append(ByteBuffer(bytes: v))
            }
        }
        return binds
    }

    func page(_ statement: CompiledStatement, type: Int64) async throws -> [StoredItem] {
        let query = PostgresQuery(unsafeSQL: statement.sql, binds: Self.bindings(statement.arguments))
        var out = [StoredItem]()
        for try await (id, name, value, expiry) in try await connection.send(query, logger: logger).decode(
            (Int64, Data, Data, Int64?).self)
        {
            out.append(StoredItem(rowid: id, type: type, name: name, sealed: value, expiry: expiry))
        }
        return out
    }

    /// ``page(_:type:)`` with the profile's key generation read in the same statement (nil when
    /// the profile is gone), even when the page is empty: the catalogue row left-joined to the
    /// page. A join of one row with no join clause to hash or merge on is a nested loop, which
    /// gives the page's rows in the page's order; the statement has no outer `ORDER BY` to say so
    /// (its sort doubled the server's time for a page of 1000 rows), so the rows are checked here
    /// as they come and sorted only if they ever come out of order.
    ///
    /// `singleValued`: the tag name (blind) a range plan needs single-valued; the same statement
    /// then reads its mark (``PostgresStore/multiValuedSchema``), and `marked` true means the rows
    /// may lack matches: the caller runs another plan.
    func gatedPage(_ statement: CompiledStatement, type: Int64, singleValued: Int64? = nil) async throws -> (
        generation: Int64?, marked: Bool, rows: [StoredItem]
    ) {
        let query = PostgresQuery(
            unsafeSQL:
                "SELECT p.generation, \(marked(singleValued)), r.* FROM coffer_profiles p LEFT JOIN LATERAL (\(statement.sql)) r ON true WHERE p.number = \(tables.number)",
            binds: Self.bindings(statement.arguments))
        var generation: Int64?
        var marked = false
        var out = [StoredItem]()
        var ordered = true
        for try await (current, multi, id, name, value, expiry) in try await connection.send(query, logger: logger).decode(
            (Int64, Bool, Int64?, Data?, Data?, Int64?).self)
        {
            generation = current
            marked = multi
            guard let id, let name, let value else { continue }
            if let last = out.last, last.rowid > id { ordered = false }
            out.append(StoredItem(rowid: id, type: type, name: name, sealed: value, expiry: expiry))
        }
        if !ordered { out.sort { $0.rowid < $1.rowid } }
        return (generation, marked, out)
    }

    /// A compiled count (`SELECT COUNT(*) FROM …`) with the profile's key generation read in the
    /// same statement (nil when the profile is gone): an aggregate gives its row even when nothing
    /// matches, so the generation rides on that row as a scalar subquery. (The count nested whole
    /// as a second scalar subquery cost about a tenth of `count_all`'s rate.) `singleValued` and
    /// `marked`: as for ``gatedPage(_:type:singleValued:)``.
    func gatedCount(_ statement: CompiledStatement, singleValued: Int64? = nil) async throws -> (
        generation: Int64?, marked: Bool, count: Int64
    ) {
        let head = "SELECT COUNT(*) "
        let gateColumns = "(SELECT generation FROM coffer_profiles WHERE number = \(tables.number)), \(marked(singleValued))"
        let sql =
            statement.sql.hasPrefix(head)
            ? "SELECT \(gateColumns), COUNT(*) " + statement.sql.dropFirst(head.count)
            : "SELECT \(gateColumns), (\(statement.sql))"
        let query = PostgresQuery(unsafeSQL: sql, binds: Self.bindings(statement.arguments))
        for try await row in try await connection.send(query, logger: logger).decode((Int64?, Bool, Int64?).self) {
            return (row.0, row.1, row.2 ?? 0)
        }
        return (nil, false, 0)
    }

    /// SQL true when tag name `name` (a blind) is marked as holding several values in some
    /// record of this profile; `false` for nil.
    private func marked(_ name: Int64?) -> String {
        guard let name else { return "false" }
        return "EXISTS (SELECT 1 FROM coffer_tag_multi WHERE profile = \(tables.number) AND name = \(name))"
    }

    func integers(_ statement: CompiledStatement) async throws -> [Int64] {
        let query = PostgresQuery(unsafeSQL: statement.sql, binds: Self.bindings(statement.arguments))
        for try await row in try await connection.send(query, logger: logger) {
            return try row.map { cell in cell.bytes == nil ? 0 : try cell.decode(Int64.self) }
        }
        return []
    }

    // MARK: Metadata and digest

    /// The metadata PostgreSQL keeps per profile, in its catalogue row: `kdf` (the KDF
    /// parameters and salt) and `keys` (the profile's sealed own key). Other names have no value.
    func meta(_ name: String) async throws -> Data? {
        let query: PostgresQuery
        switch name {
        case "kdf": query = "SELECT kdf FROM coffer_profiles WHERE number = \(profile)"
        case "keys": query = "SELECT keys FROM coffer_profiles WHERE number = \(profile)"
        default: return nil
        }
        for try await value in try await connection.send(query, logger: logger).decode(Data.self) { return value }
        return nil
    }

    /// Sets `kdf` or `keys` (see ``meta(_:)``); any other name is refused.
    func setMeta(_ name: String, _ value: Data) async throws {
        switch name {
        case "kdf": try await connection.send("UPDATE coffer_profiles SET kdf = \(value) WHERE number = \(profile)", logger: logger)
        case "keys": try await connection.send("UPDATE coffer_profiles SET keys = \(value) WHERE number = \(profile)", logger: logger)
        default:
            throw WalletError.storage(
                "PostgreSQL keeps no profile metadata named \(WalletError.quote(name)) (only kdf and keys, in coffer_profiles)")
        }
    }

    /// Nil: a PostgreSQL profile has no records digest (``DigestKeeping/none``).
    func digest() async throws -> Data? { nil }

    func setDigest(_ state: Data) async throws {
        throw WalletError.storage("a PostgreSQL profile keeps no records digest (see docs/wallet-threat-model.md)")
    }

    // MARK: Bulk

    func bulkInsert(_ items: [NewStoredItem]) async throws -> [Int64] {
        guard !items.isEmpty else { return [] }
        let types = items.map(\.type)
        let names = items.map { ByteBuffer(bytes: $0.name) }
        let boxes = items.map { ByteBuffer(bytes: $0.sealed) }
        let expiring = items.map { $0.expiry != nil }
        let expiries = items.map { $0.expiry ?? 0 }
        var ordinals = [Int64]()
        var tagNames = [Int64]()
        var tagValues = [ByteBuffer]()
        var numbered = [Bool]()
        var numbers = [Double]()
        for (i, item) in items.enumerated() {
            for tag in item.tags {
                let (value, number) = Self.columns(tag.value)
                ordinals.append(Int64(i + 1))
                tagNames.append(tag.name)
                tagValues.append(ByteBuffer(bytes: value))
                numbered.append(number != nil)
                numbers.append(number ?? 0)
            }
        }
        // One statement: no ON CONFLICT, so a (type, name) already stored fails it (23505) and
        // the caller's transaction rolls back whole.
        let rows = try await connection.send(
            """
            WITH input AS (
                SELECT * FROM unnest(\(types)::bigint[], \(names)::bytea[], \(boxes)::bytea[], \(expiring)::boolean[], \(expiries)::bigint[])
                    WITH ORDINALITY AS r(type, name, value, e, expiry, ord)
            ), item AS (
                INSERT INTO coffer_items(profile, type, name, value, expiry)
                SELECT \(profile), type, name, value, CASE WHEN e THEN expiry END FROM input ORDER BY ord
                RETURNING id, type, name
            ), \(unescaped: PostgresStore.notifySQL(profile: String(profile), types: "item")), tagged AS (
                INSERT INTO coffer_tags(item, profile, name, value, num)
                SELECT item.id, \(profile), t.n, t.v, CASE WHEN t.h THEN t.x END
                FROM unnest(\(ordinals)::bigint[], \(tagNames)::bigint[], \(tagValues)::bytea[], \(numbered)::boolean[], \(numbers)::double precision[]) AS t(o, n, v, h, x)
                JOIN input ON input.ord = t.o
                JOIN item ON item.type = input.type AND item.name = input.name
            )
            SELECT input.ord, item.id, (SELECT count(*) FROM notified) FROM input JOIN item ON item.type = input.type AND item.name = input.name
            """, logger: logger)
        var ids = [Int64](repeating: 0, count: items.count)
        for try await (ord, id, _) in rows.decode((Int64, Int64, Int64).self) { ids[Int(ord) - 1] = id }
        return ids
    }

    func itemCount() async throws -> Int {
        Int(try await scalar("SELECT count(*) FROM coffer_items WHERE profile = \(profile)") ?? 0)
    }

    // MARK: Maintenance

    func items(after: Int64, limit: Int) async throws -> [WalkedItem] {
        var out = [WalkedItem]()
        for try await (id, type, name, value, expiry) in try await connection.send(
            """
            SELECT id, type, name, value, expiry FROM coffer_items
            WHERE profile = \(profile) AND id > \(after) ORDER BY id LIMIT \(Int64(limit))
            """, logger: logger
        ).decode((Int64, Int64, Data, Data, Int64?).self) {
            // The columns are typed: a row cannot hold the wrong kind of value.
            out.append(.item(StoredItem(rowid: id, type: type, name: name, sealed: value, expiry: expiry)))
        }
        return out
    }

    func item(rowid: Int64) async throws -> StoredItem? {
        for try await (id, type, name, value, expiry) in try await connection.send(
            "SELECT id, type, name, value, expiry FROM coffer_items WHERE profile = \(profile) AND id = \(rowid)", logger: logger
        ).decode((Int64, Int64, Data, Data, Int64?).self) {
            return StoredItem(rowid: id, type: type, name: name, sealed: value, expiry: expiry)
        }
        return nil
    }

    func tags(items: [Int64]) async throws -> [Int64: [StoredTag?]] {
        guard !items.isEmpty else { return [:] }
        var out = [Int64: [StoredTag?]]()
        for try await (item, name, value, number) in try await connection.send(
            "SELECT item, name, value, num FROM coffer_tags WHERE profile = \(profile) AND item = ANY(\(items)::bigint[])",
            logger: logger
        ).decode((Int64, Int64, Data, Double?).self) {
            out[item, default: []].append(StoredTag(name: name, value: .stored(value, number: number)))
        }
        return out
    }

    func tagRowCount() async throws -> Int {
        Int(try await scalar("SELECT count(*) FROM coffer_tags WHERE profile = \(profile)") ?? 0)
    }

    func orphanTagRowCount() async throws -> Int {
        Int(
            try await scalar(
                """
                SELECT count(*) FROM coffer_tags t WHERE t.profile = \(profile)
                AND NOT EXISTS (SELECT 1 FROM coffer_items i WHERE i.id = t.item AND i.profile = \(profile))
                """) ?? 0)
    }

    func duplicateItems(limit: Int) async throws -> [DuplicateItems] {
        var out = [DuplicateItems]()
        for try await (rowid, count) in try await connection.send(
            """
            SELECT min(id), count(*) FROM coffer_items WHERE profile = \(profile)
            GROUP BY type, name HAVING count(*) > 1 LIMIT \(Int64(limit))
            """, logger: logger
        ).decode((Int64, Int64).self) {
            out.append(DuplicateItems(rowid: rowid, count: Int(count)))
        }
        return out
    }

    /// The row as ``tags(items:)`` reads it back: the value's bytes and, for a `~` value, the
    /// number the writer parsed from it (PostgresWallet's writers and ``insertTags(item:_:)``
    /// write both so).
    func storedForm(_ row: StoredTag) -> StoredTag {
        let (value, number) = Self.columns(row.value)
        return StoredTag(name: row.name, value: .stored(value, number: number))
    }
}

/// The PostgreSQL backend of one database: transactions over one profile's rows on a connection
/// of the shared client's pool, and the database's profile catalogue.
///
/// A `write` is REPEATABLE READ and holds the profile's key gate (``ProfileGate``) from its first
/// statement, at the generation of the key the writer holds (``gates``): a rotation waits for
/// it, and one committed before it fails it with ``WalletError/wrongKey(_:)`` before its body
/// runs, so nothing it writes is sealed under a key the profile no longer has. A `read` is one
/// snapshot (REPEATABLE READ READ ONLY) whose first statement confirms the profile is still at the
/// generation of the key held (``gates``), else it fails as the gate would. A transaction the
/// server fails on a conflict (SQLSTATE 40001 or 40P01) is rolled back and run again, whole: the
/// retry is ``PostgresStore/withConnection(_:)``'s, which runs the whole transaction again (up to
/// ``PostgresStore/retries`` times) when its body throws one of those retryable SQLSTATEs. Inside
/// a `PostgresWallet` transaction (its store pinned to a connection) both join that transaction
/// instead of opening one, and nothing is retried there (the caller's transaction fails whole).
struct PostgresWalletStorage: WalletStorage {
    let store: PostgresStore
    /// The gates of the profiles this storage may write, by profile number: the generation of
    /// the key each writer holds.
    let gates: [Int64: ProfileGate]

    var dialect: SQLDialect { .postgres }
    /// No records digest on PostgreSQL, by decision (``DigestKeeping/none``).
    var digestKeeping: DigestKeeping { .none }

    func read<T: Sendable>(_ profile: ProfileTables, _ body: @escaping @Sendable (PostgresRows) async throws -> T) async throws -> T {
        try await run(profile, begin: "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", gate: nil, confirming: gates[profile.number], body)
    }

    func write<T: Sendable>(_ profile: ProfileTables, _ body: @escaping @Sendable (PostgresRows) async throws -> T) async throws -> T {
        try await write(profile, exclusive: false, body)
    }

    /// A write; with `exclusive`, a READ COMMITTED transaction that takes the gate `FOR UPDATE`
    /// first (a rotation: it waits for the writes under way and then sees all they wrote).
    func write<T: Sendable>(_ profile: ProfileTables, exclusive: Bool, _ body: @escaping @Sendable (PostgresRows) async throws -> T)
        async throws -> T
    {
        guard let gate = gates[profile.number] else {
            throw WalletError.invalidInput(
                "no key of profile \(WalletError.quote(profile.name)) is held by this PostgreSQL storage, so it cannot write there")
        }
        return try await run(
            profile, begin: exclusive ? "BEGIN" : "BEGIN ISOLATION LEVEL REPEATABLE READ", gate: (gate, exclusive), confirming: nil, body)
    }

    private func run<T: Sendable>(
        _ profile: ProfileTables, begin: String, gate: (ProfileGate, exclusive: Bool)?, confirming: ProfileGate?,
        _ body: @escaping @Sendable (PostgresRows) async throws -> T
    ) async throws -> T {
        let joining = store.pinned != nil
        // What `body` threw (other than the driver's errors) reaches the caller as it was thrown.
        return try await store.withConnection(keepingThrown: { connection, keep in
            let rows = PostgresRows(connection: connection, tables: profile)
            if joining { return try await body(rows) }
            try await connection.send(PostgresQuery(unsafeSQL: begin), logger: PostgresStore.logger)
            let result: T
            do {
                if let (gate, exclusive) = gate { try await PostgresStore.holdGate(gate, on: connection, exclusive: exclusive) }
                if let confirming { try await Self.confirm(confirming, on: connection) }
                result = try await body(rows)
                try await connection.send("COMMIT", logger: PostgresStore.logger)
            } catch {
                _ = try? await connection.send("ROLLBACK", logger: PostgresStore.logger)
                if !(error is PSQLError) { keep(error) }
                throw error
            }
            return result
        })
    }

    /// Throws what the gate would when the profile is gone or its key was rotated since `gate`
    /// was read, in the snapshot the read's first statement takes: a reader holding a rotated-away
    /// key would find every record unopenable (a check would call them all damaged).
    private static func confirm(_ gate: ProfileGate, on connection: PostgresConnection) async throws {
        for try await generation in try await connection.send(
            "SELECT generation FROM coffer_profiles WHERE number = \(gate.number)", logger: PostgresStore.logger
        ).decode(Int64.self) where generation == gate.generation {
            return
        }
        throw try await PostgresStore.gateClosed(gate, on: connection)
    }

    func profileNames() async throws -> [String] {
        do { return try await store.profileNames() } catch { throw PostgresStore.map(error, settings: store.settings) }
    }

    func resolveProfile(_ name: String) async throws -> ProfileTables? {
        do {
            return try await store.profile(named: name).map { ProfileTables(name: name, number: $0.number) }
        } catch { throw PostgresStore.map(error, settings: store.settings) }
    }

    /// Adds the profile with its catalogue row's metadata: `meta` must give `kdf` and `keys`
    /// (the only metadata PostgreSQL keeps, see ``PostgresRows/meta(_:)``).
    func createProfile(_ name: String, meta: @escaping @Sendable (ProfileTables) throws -> [(name: String, value: Data)]) async throws
        -> ProfileTables
    {
        let store = self.store
        do {
            try await store.migrate()
            let number = try await store.transaction { connection in
                try await connection.send("SELECT pg_advisory_xact_lock(\(PostgresStore.migrationLock))", logger: PostgresStore.logger)
                let kdf = Locked<Data?>(nil)
                guard
                    let number = try await store.addProfile(
                        on: connection, name: name, kdf: Data(),
                        seal: { number in
                            let given = Dictionary(try meta(ProfileTables(name: name, number: number)).map { ($0.name, $0.value) }) {
                                $1
                            }
                            guard let keys = given["keys"], let k = given["kdf"], given.count == 2 else {
                                throw WalletError.invalidInput("a PostgreSQL profile is created with exactly its kdf and keys metadata")
                            }
                            kdf.withLock { $0 = k }
                            return keys
                        })
                else { return Int64?.none }
                // The KDF record in the same transaction as the row (the seal above gave it).
                let record = kdf.withLock { $0 } ?? Data()
                try await connection.send(
                    "UPDATE coffer_profiles SET kdf = \(record) WHERE number = \(number)", logger: PostgresStore.logger)
                return number
            }
            guard let number else {
                throw WalletError.walletExists(path: ProfileCatalogue.label(path: store.settings.label, profile: name))
            }
            return ProfileTables(name: name, number: number)
        } catch { throw PostgresStore.map(error, settings: store.settings) }
    }

    func removeProfile(_ name: String) async throws -> Bool {
        do { return try await store.removeProfile(name: name) } catch { throw PostgresStore.map(error, settings: store.settings) }
    }

    /// Nothing to end: the connections are the shared client's, released by the wallets that
    /// hold it (``PostgresWallet/close()``).
    func close() throws {}
}
#endif
