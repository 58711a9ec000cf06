// A wallet profile on PostgreSQL (package trait `PostgreSQL`): the same keys, blind indexes and
// sealed boxes as a wallet file, the rows in a PostgreSQL database through the shared client.

#if PostgreSQL
import CofferCrypto
import CofferSync
import Foundation
import PostgresNIO

/// One page of a ``PostgresWallet`` search.
public struct PostgresSearchPage: Sendable {
    /// The matching records, in insertion order.
    public let records: [WalletRecord]
    /// Where the next page starts: a token sealed under the profile's key (any process or
    /// replica holding the key continues from it; the server learns nothing from it). Nil
    /// when the search is done.
    public let next: String?
}

/// A wallet profile stored in PostgreSQL: records with type, id, value and tags, searched
/// with WQL, sealed and blinded in this process exactly as in a wallet file. Profiles share
/// one database and this process's pool of connections to it; each has its own key.
/// Every method is safe to call from many tasks at once.
public final class PostgresWallet: Sendable {
    /// The profile this wallet is.
    public let profile: String
    let store: PostgresStore
    let number: Int64
    /// The profile's keys as this wallet holds them, and the gate its writes carry: replaced
    /// together when this wallet rotates the key (``rekey(to:rotatingKey:progress:)``).
    let current: Locked<Sealing>
    private let state = Locked(false)
    /// Whether this wallet holds a use of the shared client (a transaction's view does not).
    private let ownsClient: Bool
    /// What it was opened with (its views, a transaction's or a held connection's, take the same).
    let configuration: Wallet.Configuration
    /// The opened pairs of the profile's keys (see PostgresWallet+Secrets.swift).
    let heldKeys = HeldKeyCache()
    /// The searches opened with ``SearchHandleWallet/openSearch(type:query:options:)``, ended by
    /// ``close()`` (see PostgresWallet+SearchHandles.swift).
    let searches: SearchRegistry<PostgresSearchWalk>
    /// The live observations (PostgresWallet+Observe.swift), ended by ``close()``.
    let observations = PostgresObservations()
    /// The profile's sealed key as this wallet last saw it (read at open, written at create
    /// and by its own rekey): a rekey replaces it only while the catalogue still holds it
    /// (see ``rekey(to:rotatingKey:configuration:progress:)``). Nil in a view.
    let sealedKeysSeen: Locked<Data?>

    /// Most times a read-modify-write (tags, update) is retried when other writers changed
    /// the record between its read and its write.
    static let rewriteAttempts = 100
    /// Imports of at least this many records refresh the planner's statistics when they end.
    static let analyzeAfter = 1000

    /// A wallet's keys and the gate of the writes sealed under them: one value, read once per
    /// write, so a write never seals under one key and passes the gate of another.
    struct Sealing: Sendable {
        let keys: WalletKeys
        let gate: ProfileGate
        /// The key of search position tokens (derived from the profile's own key).
        let positionKey: SecretKey

        init(keys: WalletKeys, gate: ProfileGate) {
            self.keys = keys
            self.gate = gate
            positionKey = KeyDerivation.hkdf(from: keys.master, info: "coffer.wallet.postgres.v1.search-position")
        }
    }

    init(
        profile: String, store: PostgresStore, number: Int64, keys: WalletKeys, generation: Int64, ownsClient: Bool = true,
        configuration: Wallet.Configuration = .init(), sharing: Locked<Sealing>? = nil, sealedKeys: Data? = nil
    ) {
        self.profile = profile
        sealedKeysSeen = Locked(sealedKeys)
        self.store = store
        self.number = number
        self.ownsClient = ownsClient
        self.configuration = configuration
        let label = ProfileCatalogue.label(path: store.settings.label, profile: profile)
        // A transaction's view (pinned to its connection) runs where the gate is already held.
        let gate = ProfileGate(number: number, generation: generation, label: label, held: store.pinned != nil)
        // A withConnection view shares its wallet's keys and gate, so a rotation by either is
        // seen by both (a transaction's view keeps the ones its transaction holds).
        current = sharing ?? Locked(Sealing(keys: keys, gate: gate))
        searches = SearchRegistry(capacity: configuration.maxOpenSearches, idleTimeout: configuration.searchIdleTimeout)
    }

    /// The profile's keys (reads; a write takes ``sealing`` once instead).
    var keys: WalletKeys { current.withLock { $0.keys } }
    /// The keys and the gate for one write.
    var sealing: Sealing { current.withLock { $0 } }
    private var positionKey: SecretKey { current.withLock { $0.positionKey } }

    /// After this wallet rotated the profile's key to `keys` (committed, at `generation`).
    func rotated(to keys: WalletKeys, generation: Int64) {
        current.withLock {
            $0 = Sealing(
                keys: keys, gate: ProfileGate(number: $0.gate.number, generation: generation, label: $0.gate.label, held: $0.gate.held))
        }
    }

    /// Runs a write's `body` with the keys and gate it seals and writes under. When the gate
    /// refuses it because this wallet itself rotated the key meanwhile, it runs once more under
    /// the new key (another writer's rotation, or a removed profile, is the caller's error).
    func writing<R>(_ body: (Sealing) async throws -> R) async throws -> R {
        let held = sealing
        do { return try await body(held) } catch WalletError.wrongKey(let message) {
            let now = sealing
            guard now.gate.generation != held.gate.generation else { throw WalletError.wrongKey(message) }
            return try await body(now)
        }
    }

    deinit {
        if ownsClient, !state.withLock({ $0 }) { PostgresClients.shared.release(store.settings) }
    }

    /// Ends this wallet's use of the shared client (the last user's close stops its
    /// connections), its open searches and every observation of it
    /// (``observe(type:matching:options:interval:expiryCheck:)`` throws ``WalletError/closed``).
    /// Later calls throw ``WalletError/closed``.
    public func close() {
        let wasClosed = state.withLock { closed in
            defer { closed = true }
            return closed
        }
        searches.close()
        observations.closeAll()
        heldKeys.close()
        if !wasClosed, ownsClient { PostgresClients.shared.release(store.settings) }
    }

    /// Whether ``close()`` was called.
    var isClosed: Bool { state.withLock { $0 } }

    func checkOpen() throws(WalletError) {
        if state.withLock({ $0 }) { throw .closed }
    }

    /// The wallet's label in messages: the server and database, and the profile.
    var label: String { ProfileCatalogue.label(path: store.settings.label, profile: profile) }

    // MARK: Creating and opening

    /// Runs `body` with a store on the shared client for `settings`, releasing the client
    /// when `body` throws.
    private static func withStore<R>(_ settings: PostgresSettings, _ body: (PostgresStore) async throws -> R) async throws -> R {
        let store = PostgresStore(settings: settings, client: PostgresClients.shared.acquire(settings))
        do { return try await body(store) } catch {
            PostgresClients.shared.release(settings)
            throw PostgresStore.map(error, settings: settings)
        }
    }

    /// Creates profile `profile` (the tables too, when the database has none) under `key`.
    /// With ``PostgresSettings/minConnections`` above 0, it returns once that many of the pool's
    /// connections are open and have run the record calls' statements (as ``open(settings:profile:key:configuration:)`` says).
    /// - Throws: ``WalletError/walletExists(path:)`` when the database has that profile.
    public static func create(
        settings: PostgresSettings, profile: String = "default", key: WalletKey, configuration: Wallet.Configuration = .init()
    ) async throws -> PostgresWallet {
        try ProfileCatalogue.validate(profile)
        let (storeKey, kdf) = try Wallet.makeStoreKey(key, parameters: configuration.passphraseParameters)
        let master = SecretKey.random()
        let sealedKeys = Locked<Data?>(nil)
        return try await withStore(settings) { store in
            try await store.migrate()
            guard
                let number = try await store.addProfile(
                    name: profile, kdf: Data(kdf.jsonText.utf8),
                    seal: { number in
                        let sealed = try Wallet.sealMaster(master, storeKey: storeKey, tables: ProfileTables(name: profile, number: number))
                        sealedKeys.withLock { $0 = sealed }
                        return sealed
                    })
            else { throw WalletError.walletExists(path: ProfileCatalogue.label(path: settings.label, profile: profile)) }
            let keys = WalletKeys(master: master, tables: ProfileTables(name: profile, number: number))
            await store.warm(connections: settings.minConnections, within: settings.connectTimeout)
            return PostgresWallet(
                profile: profile, store: store, number: number, keys: keys, generation: 0, configuration: configuration,
                sealedKeys: sealedKeys.withLock { $0 })
        }
    }

    /// Opens profile `profile` under `key`; `configuration` bounds its open searches (its
    /// passphrase costs are the ones the profile was protected with).
    ///
    /// With ``PostgresSettings/minConnections`` above 0, it returns once that many of the pool's
    /// connections are open and readied: each has run the statements of a point read, a replace
    /// and a delete once (matching nothing), so the first calls do not pay their statements'
    /// first run on a new connection. A process's later opens on the same settings find them
    /// readied and do not wait. Readying is best effort, within ``PostgresSettings/connectTimeout``
    /// and at most 2 s, and only while no other call of the process is using the pool: a
    /// connection it could not ready is left to its first call.
    /// - Throws: ``WalletError/walletMissing(path:)`` when there is no such profile,
    ///   ``WalletError/wrongKey(_:)`` when `key` does not open it.
    public static func open(
        settings: PostgresSettings, profile: String = "default", key: WalletKey, configuration: Wallet.Configuration = .init()
    ) async throws -> PostgresWallet {
        try ProfileCatalogue.validate(profile)
        if case .raw(let data) = key, data.count != 32 {
            throw WalletError.invalidInput("a raw key must be 32 bytes, got \(data.count)")
        }
        return try await withStore(settings) { store in
            try await store.migrate()
            guard let row = try await store.profile(named: profile) else {
                throw WalletError.walletMissing(path: ProfileCatalogue.label(path: settings.label, profile: profile))
            }
            let kdf = try KDFRecord(json: String(decoding: row.kdf, as: UTF8.self))
            let storeKey = try Wallet.deriveStoreKey(key, kdf: kdf)
            let tables = ProfileTables(name: profile, number: row.number)
            let (master, format4) = try Wallet.openMaster(row.keys, storeKey: storeKey, kdf: kdf, tables: tables)
            guard format4 else { throw WalletError.corrupted("the profile's key is not sealed as this backend seals it") }
            await store.warm(connections: settings.minConnections, within: settings.connectTimeout)
            return PostgresWallet(
                profile: profile, store: store, number: row.number, keys: WalletKeys(master: master, tables: tables),
                generation: row.generation, configuration: configuration, sealedKeys: row.keys)
        }
    }

    /// The database's profiles: `default` first, then the others by name.
    public static func profiles(settings: PostgresSettings) async throws -> [String] {
        try await withStore(settings) { store in
            try await store.migrate()
            let names = try await store.profileNames()
            PostgresClients.shared.release(settings)
            return names
        }
    }

    /// Removes profile `profile` with all its records, in one transaction (no key needed:
    /// whoever may write the database can delete rows anyway).
    /// - Throws: ``WalletError/walletMissing(path:)`` when there is no such profile.
    public static func removeProfile(_ profile: String, settings: PostgresSettings) async throws {
        try ProfileCatalogue.validate(profile)
        try await withStore(settings) { store in
            try await store.migrate()
            guard try await store.removeProfile(name: profile) else {
                throw WalletError.walletMissing(path: ProfileCatalogue.label(path: settings.label, profile: profile))
            }
            PostgresClients.shared.release(settings)
        }
    }

    // MARK: Records

    private func run<R>(_ body: () async throws -> R) async throws -> R {
        try checkOpen()
        do { return try await body() } catch { throw PostgresStore.map(error, settings: store.settings) }
    }

    /// A new record checked as every write checks it, blinded and sealed under `keys`: the row
    /// an insert writes (its type column, id blind, box, expiry and tag rows). The one body of
    /// `add`, `addAll` and the COPY import; `allowReserved` lets an import restore the wallet's
    /// own reserved records (keys). `replace` seals its one-statement box with it too.
    static func insertRow(
        type: String, id: String, value: String, tags: WalletTags, expiry: Int64?, keys: WalletKeys, allowReserved: Bool = false
    ) throws -> (type: Int64, idBlind: Data, sealed: Data, expiry: Int64?, tags: [PostgresTagRow]) {
        try Validate.type(type, allowReserved: allowReserved)
        try Validate.id(id)
        try Validate.value(value)
        try tags.validate()
        let tb = keys.typeBlind(type)
        let ib = keys.idBlind(typeBlind: tb, id: id)
        let sealed = RecordCodec.seal(
            .init(type: type, id: id, value: value, tags: tags), typeBlind: tb, idBlind: ib, expiry: expiry, keys: keys)
        return (BlindColumn.value(tb), ib, sealed, expiry, tagRows(keys: keys, typeBlind: tb, tags: tags))
    }

    /// The tag rows of `tags`: blind values, or the UTF-8 of `~` values (with their number).
    func tagRows(typeBlind: Data, tags: WalletTags) -> [PostgresTagRow] { Self.tagRows(keys: keys, typeBlind: typeBlind, tags: tags) }

    /// The tag rows of `tags` under `keys` (an import seals on a thread of its own).
    static func tagRows(keys: WalletKeys, typeBlind: Data, tags: WalletTags) -> [PostgresTagRow] {
        var rows = Set<PostgresTagRow>()
        var ordered = [PostgresTagRow]()
        for (key, value) in tags.entries {
            let name = key.string
            let nb = BlindColumn.value(keys.tagNameBlind(typeBlind: typeBlind, name: name))
            let plaintext = WalletTags.isPlaintext(name)
            for v in value.values {
                let row =
                    plaintext
                    ? PostgresTagRow(name: nb, value: Data(v.utf8), number: NumericTag.parse(v))
                    : PostgresTagRow(name: nb, value: keys.tagValueBlind(typeBlind: typeBlind, name: name, value: v), number: nil)
                if rows.insert(row).inserted { ordered.append(row) }
            }
        }
        return ordered
    }

    /// Adds a record.
    /// - Throws: ``WalletError/duplicate(type:id:)`` when a live record of this type and id exists.
    public func add(type: String, id: String, value: String, tags: WalletTags = [:], expiresAt: Date? = nil) async throws {
        try await run {
            try await writing { s in
                let row = try Self.insertRow(
                    type: type, id: id, value: value, tags: tags, expiry: expiresAt.map(unixMillis), keys: s.keys)
                if try await store.insert(
                    gate: s.gate, type: row.type, idBlind: row.idBlind, sealed: row.sealed, expiry: row.expiry, tags: row.tags) != nil
                {
                    return
                }
                // A record of this type and id is there: an expired one gives way, a live one is a duplicate.
                guard try await store.deleteExpired(gate: s.gate, type: row.type, idBlind: row.idBlind, now: unixMillis(Date())),
                    try await store.insert(
                        gate: s.gate, type: row.type, idBlind: row.idBlind, sealed: row.sealed, expiry: row.expiry, tags: row.tags) != nil
                else { throw WalletError.duplicate(type: type, id: id) }
            }
        }
    }

    /// Adds many records in one statement per `batchSize` records (an import), all in one
    /// transaction: a record whose type and id exist (or that the list names twice) throws
    /// ``WalletError/duplicate(type:id:)`` naming it, and none of the records is written. Inside
    /// a ``transaction(readOnly:_:)`` it is a savepoint of that transaction: refused, it takes
    /// back only its own records.
    public func addAll(_ records: [(type: String, id: String, value: String, tags: WalletTags)], batchSize: Int = 500) async throws {
        try await run {
            // One key for every batch: a rotation meanwhile refuses the transaction.
            let s = sealing
            let size = max(batchSize, 1)
            // The first batch a record of which was already there, when one was.
            let refused = Locked<Range<Int>?>(nil)
            let insert: @Sendable (PostgresWallet) async throws -> Void = { view in
                var start = 0
                while start < records.count {
                    let range = start..<min(records.count, start + size)
                    let rows = try records[range].map {
                        try Self.insertRow(type: $0.type, id: $0.id, value: $0.value, tags: $0.tags, expiry: nil, keys: s.keys)
                    }
                    guard try await view.store.insertMany(gate: s.gate, records: rows) == rows.count else {
                        refused.withLock { $0 = range }
                        throw WalletError.storage("a batch of addAll met records already there")
                    }
                    start = range.upperBound
                }
            }
            do {
                if store.pinned != nil {
                    try await savepoint { try await insert(self) }
                } else {
                    try await transaction(readOnly: false, insert)
                }
            } catch {
                guard let range = refused.withLock({ $0 }) else { throw error }
                throw try await duplicate(among: records[range], held: s)
            }
            if records.count >= Self.analyzeAfter, store.pinned == nil { await store.analyze() }
        }
    }

    /// `body` inside a savepoint of the open transaction: what it wrote is taken back when it throws.
    private func savepoint(_ body: () async throws -> Void) async throws {
        func run(_ sql: String) async throws {
            try await store.withConnection { connection -> Void in
                try await connection.send(PostgresQuery(unsafeSQL: sql), logger: PostgresStore.logger)
            }
        }
        try await run("SAVEPOINT coffer_add_all")
        // A server error inside the savepoint fails the transaction only until it is rolled back to.
        let failedBefore = store.abort?.failure
        do {
            try await body()
        } catch {
            if (try? await run("ROLLBACK TO SAVEPOINT coffer_add_all")) != nil { store.abort?.reset(to: failedBefore) }
            try? await run("RELEASE SAVEPOINT coffer_add_all")
            throw error
        }
        try await run("RELEASE SAVEPOINT coffer_add_all")
    }

    /// The error of a batch some record of which was already there (the batch's transaction is
    /// rolled back): the first record named twice in it, or the first one the wallet holds.
    private func duplicate(among batch: ArraySlice<(type: String, id: String, value: String, tags: WalletTags)>, held: Sealing)
        async throws -> WalletError
    {
        var seen = Set<[String]>()
        for r in batch where !seen.insert([r.type, r.id]).inserted { return .duplicate(type: r.type, id: r.id) }
        for r in batch {
            let tb = held.keys.typeBlind(r.type)
            if try await store.locate(gate: held.gate, type: BlindColumn.value(tb), idBlind: held.keys.idBlind(typeBlind: tb, id: r.id))
                != nil
            {
                return .duplicate(type: r.type, id: r.id)
            }
        }
        return .storage("a record of the batch was added by another writer meanwhile; nothing was written: retry")
    }

    /// The live record of `type` and `id`.
    /// - Throws: ``WalletError/notFound(type:id:)`` when there is none.
    public func get(type: String, id: String, options: RecordOptions = .init()) async throws -> WalletRecord {
        guard let record = try await fetch(type: type, id: id, options: options) else { throw WalletError.notFound(type: type, id: id) }
        return record
    }

    /// The live record of `type` and `id`, or nil (as Askar's `fetch`).
    public func fetch(type: String, id: String, options: RecordOptions = .init()) async throws -> WalletRecord? {
        try await run {
            try Validate.type(type)
            try Validate.id(id)
            guard let contents = try await openLive(type: type, id: id, value: options.retrieveValue ? .text : .skipped) else {
                return nil
            }
            return RecordStore.record(contents, type: type, options: options)
        }
    }

    /// The live record of `type` and `id` opened under the keys this wallet holds (its value read
    /// as `value` says) after checking the id sealed in it; nil when there is none. What `fetch`,
    /// `readReservedBytes` and `containsReserved` share (`readReservedSecret` opens the value
    /// into a ``SecretKey`` instead).
    func openLive(type: String, id: String, value: RecordCodec.ValueMode) async throws -> RecordCodec.Contents? {
        let held = sealing
        guard let live = try await liveRow(type: type, id: id, held) else { return nil }
        let contents = try RecordCodec.open(
            live.row.sealed, typeBlind: live.typeBlind, idBlind: live.idBlind, expiry: live.row.expiry, keys: held.keys,
            expectedType: type, value: value)
        try RecordCodec.checkSealedID(contents.id, id)
        return contents
    }

    /// The row of `type` and `id` unless it expired, with the blind indexes it was found under
    /// (computed with `held`'s keys); nil when there is none. Every point read starts here; a
    /// reader whose key was rotated away gets `wrongKey`, not nil (see ``PostgresStore/locate(gate:type:idBlind:)``).
    func liveRow(type: String, id: String, _ held: Sealing) async throws -> (row: PostgresItemRow, typeBlind: Data, idBlind: Data)? {
        let tb = held.keys.typeBlind(type)
        let ib = held.keys.idBlind(typeBlind: tb, id: id)
        guard let row = try await store.locate(gate: held.gate, type: BlindColumn.value(tb), idBlind: ib),
            row.expiry.map({ $0 > unixMillis(Date()) }) ?? true
        else { return nil }
        return (row, tb, ib)
    }

    /// Reads the live record, changes its contents with `change`, and writes it back only if
    /// no other writer changed it meanwhile (else reads again): one round trip per write.
    private func rewrite(type: String, id: String, replacingTags: Bool, _ change: (inout RecordCodec.Contents) -> Void) async throws {
        try Validate.type(type)
        try Validate.id(id)
        try await writing { s in try await rewrite(s, type: type, id: id, replacingTags: replacingTags, change) }
    }

    private func rewrite(
        _ s: Sealing, type: String, id: String, replacingTags: Bool, _ change: (inout RecordCodec.Contents) -> Void
    ) async throws {
        let keys = s.keys
        let tb = keys.typeBlind(type)
        let ib = keys.idBlind(typeBlind: tb, id: id)
        let t = BlindColumn.value(tb)
        for _ in 0..<Self.rewriteAttempts {
            guard let row = try await store.locate(gate: s.gate, type: t, idBlind: ib),
                row.expiry.map({ $0 > unixMillis(Date()) }) ?? true
            else { throw WalletError.notFound(type: type, id: id) }
            var contents = try RecordCodec.open(row.sealed, typeBlind: tb, idBlind: ib, expiry: row.expiry, keys: keys, expectedType: type)
            try RecordCodec.checkSealedID(contents.id, id)
            change(&contents)
            contents.type = type
            let sealed = RecordCodec.seal(contents, typeBlind: tb, idBlind: ib, expiry: row.expiry, keys: keys)
            let tags = replacingTags ? Self.tagRows(keys: keys, typeBlind: tb, tags: contents.tags) : nil
            if try await store.rewrite(gate: s.gate, row: row, sealed: sealed, tags: tags) { return }
        }
        throw WalletError.storage(
            "the record of type \(WalletError.quote(type)) with id \(WalletError.quote(id)) kept changing under \(Self.rewriteAttempts) attempts to write it; nothing was written: retry"
        )
    }

    /// Replaces the value of a live record (its tags stay).
    public func update(type: String, id: String, value: String) async throws {
        try await run {
            try Validate.value(value)
            try await rewrite(type: type, id: id, replacingTags: false) { $0.value = value }
        }
    }

    /// Replaces the value and the tags of a live record. A record with no expiry (the common
    /// case) is written in one statement without reading it first; an expiring one, a missing one
    /// and one another writer changes meanwhile take the read-modify-write path.
    public func replace(type: String, id: String, value: String, tags: WalletTags) async throws {
        try await run {
            // Everything of the box is given (type, id, value, tags; no expiry), so it can be
            // sealed without the stored one, as a new record's is.
            let done = try await writing { s in
                let row = try Self.insertRow(type: type, id: id, value: value, tags: tags, expiry: nil, keys: s.keys)
                return try await store.replaceUnexpiring(
                    gate: s.gate, type: row.type, idBlind: row.idBlind, sealed: row.sealed, tags: row.tags)
            }
            if done { return }
            try await rewrite(type: type, id: id, replacingTags: true) {
                $0.value = value
                $0.tags = tags
            }
        }
    }

    /// Adds or replaces these tags of a live record.
    public func addTags(type: String, id: String, tags: WalletTags) async throws {
        try await run {
            try tags.validate()
            try await rewrite(type: type, id: id, replacingTags: true) { contents in
                for (name, value) in tags.entries { contents.tags.entries[name] = value }
            }
        }
    }

    /// Makes these the tags of a live record.
    public func updateTags(type: String, id: String, tags: WalletTags) async throws {
        try await run {
            try tags.validate()
            try await rewrite(type: type, id: id, replacingTags: true) { $0.tags = tags }
        }
    }

    /// Removes these tags of a live record.
    public func deleteTags(type: String, id: String, names: [String]) async throws {
        try await run {
            try Validate.tagNames(names)
            try await rewrite(type: type, id: id, replacingTags: true) { contents in
                for name in names { contents.tags.entries[ByteString(name)] = nil }
            }
        }
    }

    /// Deletes a live record.
    /// - Throws: ``WalletError/notFound(type:id:)`` when there is none.
    public func delete(type: String, id: String) async throws {
        try await run {
            try Validate.type(type)
            try Validate.id(id)
            let now = unixMillis(Date())
            let deleted = try await writing { w in
                let tb = w.keys.typeBlind(type)
                let ib = w.keys.idBlind(typeBlind: tb, id: id)
                guard type == SecretTypes.credential else {
                    return try await store.delete(gate: w.gate, type: BlindColumn.value(tb), idBlind: ib, liveAt: now)
                }
                // A credential's signature (a secret) goes with it, in the same statement, as on SQLite.
                let sb = w.keys.typeBlind(SecretTypes.credentialSignature)
                return try await store.deleteCredential(
                    gate: w.gate, type: BlindColumn.value(tb), idBlind: ib, signatureType: BlindColumn.value(sb),
                    signatureIdBlind: w.keys.idBlind(typeBlind: sb, id: id), liveAt: now)
            }
            guard deleted else { throw WalletError.notFound(type: type, id: id) }
        }
    }

    // MARK: Search

    /// `query` over `type` as the shared query compiler writes it for PostgreSQL (its `postgres`
    /// dialect: the shared tables kept to this profile's rows), and the plan its statements take:
    /// the first, driven by the query's first top-level tag equality when it has one; else, when
    /// `allowRange`, by the index range of its string ranges on one plaintext tag; else by the
    /// type's records. What SQL cannot answer exactly (`$like`, `$regex`, numbers on encrypted
    /// tags) is widened there and decided in memory by Coffer's own matchers: no pattern reaches
    /// the server.
    ///
    /// A range plan reads its whole range at every statement, so only reads that take the range
    /// once allow it: a count, and the first page of a read of at least ``rangePageMinimum``
    /// records (later pages go on by the plan of ``fallbackPlan(_:)``, whose cost does not grow
    /// with the position). It is exact only while no record holds two values of the tag: its
    /// statements read the tag's mark too (``PostgresStore/multiValuedSchema``), and a marked tag
    /// sends the read to the fallback plan.
    func compiled(type: String, query: WalletQuery, keys: WalletKeys, allowRange: Bool = false) throws -> (
        search: CompiledSearch, plan: CompiledSearch.Plan
    ) {
        let search = try QueryCompiler.compile(type: type, query: query, keys: keys, allowReserved: true, dialect: .postgres)
        if allowRange, let first = search.plans.first, case .range = first.driver { return (search, first) }
        return (search, Self.fallbackPlan(search))
    }

    /// The plan of `search` that needs no tag to be single-valued: its first plan other than a
    /// string range's.
    static func fallbackPlan(_ search: CompiledSearch) -> CompiledSearch.Plan {
        search.plans.first {
            if case .range = $0.driver { return false }
            return true
        } ?? search.plans[search.plans.count - 1]
    }

    /// Records a page must ask for, at the start of a read, to be read through a string range's
    /// plan (see ``compiled(type:query:keys:allowRange:)``): a whole-result read, as
    /// ``forEachCandidate(type:query:value:_:)``'s batches are.
    static let rangePageMinimum = 1000

    /// The rows of one keyset page of `plan` (after row `after`, at most `limit`), on this
    /// wallet's connection (its transaction's, inside one), through the storage seam's PostgreSQL
    /// rows. The same statement reads the profile's key generation, even when it finds nothing
    /// (``PostgresRows/gatedPage(_:type:singleValued:)``): a reader whose key was rotated away
    /// since `gate` was read (its blinds match no row) gets what ``PostgresStore/gateClosed(_:)``
    /// says, not an empty page, with no second round trip. A range plan whose tag turned out
    /// multi-valued is run again as ``fallbackPlan(_:)``. `gate` goes with `keys` (the same
    /// ``Sealing``); nil: this wallet's gate now.
    func pageRows(
        _ search: CompiledSearch, _ plan: CompiledSearch.Plan, after: Int64, limit: Int, now: Int64, type: Int64, keys: WalletKeys,
        gate: ProfileGate? = nil
    ) async throws -> [StoredItem] {
        try await confirmed(search, plan, gate: gate ?? sealing.gate) { plan, singleValued in
            let statement = search.pageStatement(plan, after: after, limit: limit, descending: false, now: now, expiry: true)
            return try await store.withConnection { connection in
                try await PostgresRows(connection: connection, tables: keys.tables).gatedPage(
                    statement, type: type, singleValued: singleValued)
            }
        }
    }

    /// The count of `plan`, checked against `gate` in the same statement, and run again as
    /// ``fallbackPlan(_:)`` when a range plan's tag is marked (see
    /// ``pageRows(_:_:after:limit:now:type:keys:gate:)``).
    func countRows(_ search: CompiledSearch, _ plan: CompiledSearch.Plan, keys: WalletKeys, gate: ProfileGate? = nil) async throws
        -> Int
    {
        let count = try await confirmed(search, plan, gate: gate ?? sealing.gate) { plan, singleValued in
            let statement = search.countStatement(plan, now: unixMillis(Date()), expiry: true)
            if singleValued == nil, let (generation, count) = try await store.preparedCount(statement) {
                return (generation, false, count)
            }
            return try await store.withConnection { connection in
                try await PostgresRows(connection: connection, tables: keys.tables).gatedCount(statement, singleValued: singleValued)
            }
        }
        return Int(count)
    }

    /// What `read` gives for `plan` (with the tag name it needs single-valued, when it is a range
    /// plan: `read` gives the generation its statement read, whether that tag is marked, and its
    /// result), after confirming `gate` against that generation; read again with
    /// ``fallbackPlan(_:)``, which needs no tag single-valued, when the tag was marked.
    private func confirmed<R>(
        _ search: CompiledSearch, _ plan: CompiledSearch.Plan, gate: ProfileGate,
        _ read: (CompiledSearch.Plan, Int64?) async throws -> (Int64?, Bool, R)
    ) async throws -> R {
        let (generation, marked, result) = try await read(plan, plan.requiresSingleValued.map { BlindColumn.value($0) })
        try PostgresStore.confirm(gate, current: generation)
        guard marked else { return result }
        let fallback = Self.fallbackPlan(search)
        let (again, _, fallbackResult) = try await read(fallback, nil)
        try PostgresStore.confirm(gate, current: again)
        return fallbackResult
    }

    /// The row id a position token names, after checking it was sealed for this profile and type.
    private func position(_ token: String?, typeBlind: Data) throws -> Int64 {
        guard let token else { return 0 }
        guard let sealed = Data(base64Encoded: token),
            let plain = try? AEAD.xchacha20Poly1305.open(sealed, key: positionKey, associatedData: typeBlind), plain.count == 8
        else { throw WalletError.invalidInput("the search position is not one this profile's searches of this type gave") }
        return BlindColumn.value(plain)
    }

    private func token(_ rowid: Int64, typeBlind: Data) throws -> String {
        try AEAD.xchacha20Poly1305.seal(BlindColumn.blind(rowid), key: positionKey, associatedData: typeBlind).base64EncodedString()
    }

    /// Up to `limit` records of `type` matching `query`, after `position` (a previous page's
    /// ``PostgresSearchPage/next``). Pages follow row order (keyset paging): records written
    /// while a search runs never make it repeat or skip one that stayed.
    public func search(
        type: String, query: WalletQuery = .all, options: RecordOptions = .init(), limit: Int = 100, after position: String? = nil
    ) async throws -> PostgresSearchPage {
        try await run {
            try Validate.type(type)
            guard limit > 0 else { throw WalletError.invalidInput("a search page must hold at least 1 record, got \(limit)") }
            let held = sealing
            let keys = held.keys
            let tb = keys.typeBlind(type)
            let t = BlindColumn.value(tb)
            let (search, first) = try compiled(type: type, query: query, keys: keys, allowRange: true)
            var after = try self.position(position, typeBlind: tb)
            var records = [WalletRecord]()
            let batch = search.exact ? limit : max(limit, 256)
            // A range plan for the first page of a whole-result read only.
            var plan = after == 0 && batch >= Self.rangePageMinimum ? first : Self.fallbackPlan(search)
            while records.count < limit {
                let rows = try await pageRows(
                    search, plan, after: after, limit: batch, now: unixMillis(Date()), type: t, keys: keys, gate: held.gate)
                plan = Self.fallbackPlan(search)
                for row in rows {
                    let contents = try RecordCodec.open(
                        row.sealed, typeBlind: tb, idBlind: row.name, expiry: row.expiry, keys: keys, expectedType: type,
                        value: options.retrieveValue ? .text : .skipped)
                    after = row.rowid
                    if query.matches(contents.tags) {
                        records.append(RecordStore.record(contents, type: type, options: options))
                        if records.count == limit { break }
                    } else if search.exact {
                        // The SQL selected the matches exactly: a row whose sealed tags do not
                        // match was let through by an altered tag index, as on SQLite.
                        throw WalletError.indexDisagrees
                    }
                }
                if rows.count < batch && (records.count < limit || rows.last?.rowid == after) {
                    return PostgresSearchPage(records: records, next: nil)
                }
            }
            return PostgresSearchPage(records: records, next: try token(after, typeBlind: tb))
        }
    }

    /// How many live records of `type` match `query`: counted by the server when it can
    /// filter the query exactly, else by opening the candidates.
    public func count(type: String, matching query: WalletQuery = .all) async throws -> Int {
        try await run {
            try Validate.type(type)
            let held = sealing
            let (search, plan) = try compiled(type: type, query: query, keys: held.keys, allowRange: true)
            if search.exact { return try await countRows(search, plan, keys: held.keys, gate: held.gate) }
            var total = 0
            try await forEachCandidate(type: type, query: query, value: .skipped) { if query.matches($1.tags) { total += 1 } }
            return total
        }
    }
}

/// The record API both backends share (``RecordWallet``): every requirement but one is one of
/// this type's own methods.
extension PostgresWallet: RecordWallet {
    /// ``transaction(readOnly:_:)`` (a write transaction) for code written against ``RecordWallet``.
    public func inTransaction<T: Sendable>(_ body: @escaping @Sendable (any RecordAccess) async throws -> T) async throws -> T {
        try await transaction { view in try await body(view) }
    }
}
#endif
