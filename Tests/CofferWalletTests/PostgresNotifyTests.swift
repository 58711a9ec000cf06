// Live queries' notifications on PostgreSQL, statement by statement: every write path of the wallet
// notifies its profile's observers with each type it wrote (no trigger: format 4), only when
// the profile is observed, only at commit; and a database of an older format loses the row
// trigger when it is opened. A listening connection of the test's own hears the payloads, and a
// marker it sends itself after each write bounds the wait (notifications arrive in commit order).

#if PostgreSQL
import CofferSync
import CofferTestSupport
import Foundation
import PostgresNIO
import Testing

@testable import CofferWallet

/// A listening connection of the test's own on the wallet's channel, observing `profiles` as an
/// observing process does (its rows in `coffer_observed`): every payload it hears, in order.
final class NotifyTap: Sendable {
    private let connection: PostgresConnection
    private let heard = Locked<[String]>([])
    private let listening = Locked<Task<Void, Never>?>(nil)

    private init(_ connection: PostgresConnection) { self.connection = connection }

    static func start(_ settings: PostgresSettings, observing profiles: [Int64]) async throws -> NotifyTap {
        let configuration = PostgresConnection.Configuration(
            host: settings.host, port: settings.port, username: settings.user, password: settings.password,
            database: settings.database, tls: .disable)
        let tap = NotifyTap(try await PostgresConnection.connect(configuration: configuration, id: 1, logger: PostgresStore.logger))
        let ready = Locked(false)
        let connection = tap.connection
        let heard = tap.heard
        tap.listening.withLock {
            $0 = Task {
                _ = try? await connection.listen(on: PostgresStore.notifyChannel) { notifications in
                    try await connection.query(
                        """
                        INSERT INTO coffer_observed(listener, profile) SELECT pg_backend_pid(), p FROM unnest(\(profiles)::bigint[]) AS p
                        """, logger: PostgresStore.logger)
                    ready.withLock { $0 = true }
                    for try await notification in notifications { heard.withLock { $0.append(notification.payload) } }
                }
            }
        }
        try await eventually("the tap listens") { ready.withLock { $0 } }
        return tap
    }

    /// The payloads of the notifications committed while `body` ran (and after the previous call).
    func collect<R>(_ body: () async throws -> R) async throws -> (R, [String]) {
        let start = heard.withLock { $0.count }
        let result = try await body()
        // Committed after every write of `body`: once heard, all they notified has been heard.
        let marker = "marker \(UUID())"
        try await connection.query("SELECT pg_notify(\(PostgresStore.notifyChannel), \(marker))", logger: PostgresStore.logger)
        try await eventually("the marker came back") { self.heard.withLock { $0.contains(marker) } }
        let payloads = heard.withLock { heard in Array(heard[start..<heard.firstIndex(of: marker)!]) }
        heard.withLock { $0.removeAll { $0 == marker } }
        return (result, payloads)
    }

    func stop() async {
        try? await connection.close()
        await listening.withLock { $0 }?.value
    }
}

/// A write of the wallet, from the public calls down to the storage seam's statements.
enum NotifyingWrite: String, CaseIterable, Sendable {
    case add, deleteExpired, addAll, update, replace, replaceExpiring, delete, deleteCredential, removeAll, transaction
    case importAll, rotation, removeProfile
    case seamInsertItem, seamRestoreItem, seamUpdateSealed, seamDeleteItem, seamTakeItem, seamInsertTags, seamDeleteTags
    case seamDeleteTag, seamBulkInsert

    static let name = Data(repeating: 7, count: 16)
    static let tag = StoredTag(name: 5, value: .plaintext("12"))

    static func column(_ wallet: PostgresWallet, _ type: String) -> Int64 { BlindColumn.value(wallet.keys.typeBlind(type)) }

    /// What the write needs there before it runs; a row id for the seam's writes by row.
    func prepare(_ wallet: PostgresWallet) async throws -> Int64 {
        switch self {
        case .add, .addAll, .transaction, .importAll, .seamInsertItem, .seamRestoreItem, .seamBulkInsert: return 0
        case .deleteExpired, .replaceExpiring:
            try await wallet.add(type: "note", id: "n1", value: "v", expiresAt: Date().addingTimeInterval(3600))
        case .update, .replace, .delete, .rotation:
            try await wallet.add(type: "note", id: "n1", value: "v", tags: ["a": "1"])
        case .deleteCredential: try await wallet.add(type: "credential", id: "c1", value: "v")
        case .removeAll:
            try await wallet.add(type: "note", id: "n1", value: "v")
            try await wallet.add(type: "note", id: "n2", value: "v")
        case .removeProfile:
            try await wallet.add(type: "note", id: "n1", value: "v")
            try await wallet.add(type: "card", id: "k1", value: "v")
        case .seamUpdateSealed, .seamDeleteItem, .seamTakeItem, .seamInsertTags, .seamDeleteTags, .seamDeleteTag:
            return try await wallet.storage.write(wallet.keys.tables) { tx in
                guard case .inserted(let rowid) = try await tx.insertItem(type: 7, name: Self.name, sealed: Data([1]), expiry: nil)
                else { throw WalletError.storage("the seam's row was not inserted") }
                try await tx.insertTags(item: rowid, [Self.tag])
                return rowid
            }
        }
        return 0
    }

    /// Runs the write; the types (their columns) it must notify.
    func run(_ wallet: PostgresWallet, row: Int64) async throws -> Set<Int64> {
        let note = Self.column(wallet, "note")
        switch self {
        case .add:
            try await wallet.add(type: "note", id: "n1", value: "v", tags: ["a": "1"])
        case .deleteExpired:
            // The statement an add runs when an expired record holds its id (the add's own insert
            // notifies too, so it is called alone here), as if an hour later.
            let ib = wallet.keys.idBlind(typeBlind: wallet.keys.typeBlind("note"), id: "n1")
            let later = unixMillis(Date().addingTimeInterval(7200))
            #expect(try await wallet.store.deleteExpired(gate: wallet.sealing.gate, type: note, idBlind: ib, now: later))
        case .addAll:
            try await wallet.addAll([(type: "note", id: "n1", value: "v", tags: [:]), (type: "card", id: "k1", value: "v", tags: [:])])
            return [note, Self.column(wallet, "card")]
        case .update: try await wallet.update(type: "note", id: "n1", value: "v2")
        case .replace, .replaceExpiring: try await wallet.replace(type: "note", id: "n1", value: "v2", tags: ["b": "2"])
        case .delete: try await wallet.delete(type: "note", id: "n1")
        case .deleteCredential:
            // Its signature (a reserved type no observation can name) goes too, unannounced.
            try await wallet.delete(type: "credential", id: "c1")
            return [Self.column(wallet, "credential")]
        case .removeAll: #expect(try await wallet.removeAll(type: "note") == 2)
        case .transaction:
            try await wallet.transaction { view in
                try await view.add(type: "note", id: "n1", value: "v")
                try await view.add(type: "card", id: "k1", value: "v")
                try await view.delete(type: "card", id: "k1")
            }
            return [note, Self.column(wallet, "card")]
        case .importAll:
            #expect(
                try await wallet.importAll([
                    (type: "note", id: "n1", value: "v", tags: ["a": "1"]), (type: "card", id: "k1", value: "v", tags: [:]),
                ]) == 2)
            return [note, Self.column(wallet, "card")]
        case .rotation:
            // The record moves from the old key's type blind to the new one's: both are told.
            try await wallet.rekey(to: PostgresTesting.key, rotatingKey: true)
            let moved = Self.column(wallet, "note")
            #expect(moved != note)
            return [note, moved]
        case .removeProfile:
            try await PostgresWallet.removeProfile(wallet.profile, settings: wallet.store.settings)
            return [note, Self.column(wallet, "card")]
        case .seamInsertItem, .seamRestoreItem, .seamUpdateSealed, .seamDeleteItem, .seamTakeItem, .seamInsertTags, .seamDeleteTags,
            .seamDeleteTag, .seamBulkInsert:
            let path = self
            try await wallet.storage.write(wallet.keys.tables) { tx in
                switch path {
                case .seamInsertItem:
                    #expect(try await tx.insertItem(type: 7, name: Self.name, sealed: Data([1]), expiry: nil) != .duplicate)
                case .seamRestoreItem:
                    try await tx.restoreItem(
                        StoredItem(rowid: 1_000_000 + wallet.number, type: 7, name: Self.name, sealed: Data([1]), expiry: nil))
                case .seamUpdateSealed: try await tx.updateSealed(rowid: row, sealed: Data([2]))
                case .seamDeleteItem: try await tx.deleteItem(rowid: row)
                case .seamTakeItem: #expect(try await tx.takeItem(type: 7, name: Self.name)?.rowid == row)
                case .seamInsertTags: try await tx.insertTags(item: row, [StoredTag(name: 6, value: .plaintext("x"))])
                case .seamDeleteTags: try await tx.deleteTags(item: row)
                case .seamDeleteTag: try await tx.deleteTag(item: row, Self.tag)
                default:
                    _ = try await tx.bulkInsert([
                        NewStoredItem(type: 7, name: Self.name, sealed: Data([1]), expiry: nil, tags: [Self.tag]),
                        NewStoredItem(type: 8, name: Self.name, sealed: Data([1]), expiry: 1, tags: []),
                    ])
                }
            }
            return self == .seamBulkInsert ? [7, 8] : [7]
        }
        return [note]
    }
}

extension PostgresWalletTests {
    @Suite("Live queries' notifications on PostgreSQL")
    struct PostgresNotifyTests {
        /// Two profiles of a new database, both observed by a tap of the test's own.
        static func make(_ label: String) async throws -> (alice: PostgresWallet, bob: PostgresWallet, tap: NotifyTap) {
            let settings = try PostgresTesting.settings(label)
            let alice = try await PostgresWallet.create(settings: settings, key: PostgresTesting.key)
            let bob = try await PostgresWallet.create(settings: settings, profile: "bob", key: PostgresTesting.otherKey)
            return (alice, bob, try await NotifyTap.start(settings, observing: [alice.number, bob.number]))
        }

        @Test(
            "every write path notifies its profile's observers once per type it wrote, and the same write to another profile notifies only that profile",
            arguments: NotifyingWrite.allCases)
        func everyWritePathNotifies(_ write: NotifyingWrite) async throws {
            let (alice, bob, tap) = try await Self.make("ntf-\(write.rawValue)")
            for wallet in [alice, bob] {
                // The preparation's own notifications are heard before the write's window opens.
                let (row, _) = try await tap.collect { try await write.prepare(wallet) }
                let (types, heard) = try await tap.collect { try await write.run(wallet, row: row) }
                #expect(Set(heard) == Set(types.map { "\(wallet.number) \($0)" }), "\(write) on \(wallet.profile)")
            }
            await tap.stop()
            alice.close()
            bob.close()
        }

        @Test("a write to a profile nobody observes notifies nothing")
        func unobservedQuiet() async throws {
            let settings = try PostgresTesting.settings("ntf-unobserved")
            let alice = try await PostgresWallet.create(settings: settings, key: PostgresTesting.key)
            let carol = try await PostgresWallet.create(settings: settings, profile: "carol", key: PostgresTesting.otherKey)
            let tap = try await NotifyTap.start(settings, observing: [alice.number])
            let (_, quiet) = try await tap.collect {
                try await carol.add(type: "note", id: "n1", value: "v")
                try await carol.delete(type: "note", id: "n1")
            }
            #expect(quiet.isEmpty, "\(quiet)")
            let (_, heard) = try await tap.collect { try await alice.add(type: "note", id: "n1", value: "v") }
            #expect(heard == ["\(alice.number) \(NotifyingWrite.column(alice, "note"))"])
            await tap.stop()
            alice.close()
            carol.close()
        }

        @Test("a rolled-back transaction's writes notify nothing; committed, they notify at commit")
        func rollbackNotifiesNothing() async throws {
            struct Abort: Error {}
            let (alice, bob, tap) = try await Self.make("ntf-rollback")
            _ = try await tap.collect { try await alice.add(type: "note", id: "kept", value: "v") }
            let (_, quiet) = try await tap.collect {
                await #expect(throws: Abort.self) {
                    try await alice.transaction { view in
                        try await view.add(type: "note", id: "gone", value: "v")
                        try await view.replace(type: "note", id: "kept", value: "v2", tags: [:])
                        try await view.delete(type: "note", id: "kept")
                        throw Abort()
                    }
                }
            }
            #expect(quiet.isEmpty, "\(quiet)")
            let (_, heard) = try await tap.collect {
                try await alice.transaction { view in try await view.delete(type: "note", id: "kept") }
            }
            #expect(heard == ["\(alice.number) \(NotifyingWrite.column(alice, "note"))"])
            await tap.stop()
            alice.close()
            bob.close()
        }

        /// Format 3's row trigger and its function, as that format installed them.
        static let formatThreeTrigger = [
            """
            CREATE OR REPLACE FUNCTION coffer_items_notify() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                IF TG_OP <> 'DELETE' AND EXISTS (SELECT 1 FROM coffer_observed WHERE profile = NEW.profile) THEN
                    PERFORM pg_notify('coffer_wallet', NEW.profile::text || ' ' || NEW.type::text);
                END IF;
                IF (TG_OP = 'DELETE' OR OLD.profile <> NEW.profile OR OLD.type <> NEW.type)
                    AND EXISTS (SELECT 1 FROM coffer_observed WHERE profile = OLD.profile) THEN
                    PERFORM pg_notify('coffer_wallet', OLD.profile::text || ' ' || OLD.type::text);
                END IF;
                RETURN NULL;
            END
            $$
            """,
            """
            CREATE TRIGGER coffer_items_notify AFTER INSERT OR UPDATE OR DELETE ON coffer_items
            FOR EACH ROW EXECUTE FUNCTION coffer_items_notify()
            """,
        ]

        @Test(
            "a database of an older format (with format 3's row trigger) loses the trigger and its function when opened, and observation works",
            arguments: [1, 3])
        func olderFormatLosesTheTrigger(_ format: Int) async throws {
            let settings = try PostgresTesting.settings("ntf-upgrade\(format)")
            let wallet = try await PostgresWallet.create(settings: settings, key: PostgresTesting.key)
            defer { wallet.close() }
            func count(_ sql: String) async throws -> Int64 {
                try await wallet.store.withConnection { connection in
                    for try await n in try await connection.query(PostgresQuery(unsafeSQL: sql), logger: PostgresStore.logger)
                        .decode(Int64.self)
                    {
                        return n
                    }
                    return -1
                }
            }
            let triggers = "SELECT count(*) FROM pg_trigger WHERE tgname = 'coffer_items_notify'"
            let functions = "SELECT count(*) FROM pg_proc WHERE proname = 'coffer_items_notify'"
            #expect(try await count(triggers) == 0, "a new database has the trigger")
            #expect(try await count(functions) == 0, "a new database has the function")
            try await wallet.store.withConnection { connection in
                for statement in Self.formatThreeTrigger {
                    try await connection.query(PostgresQuery(unsafeSQL: statement), logger: PostgresStore.logger)
                }
                try await connection.query("UPDATE coffer_schema SET format = \(format)", logger: PostgresStore.logger)
            }
            #expect(try await count(triggers) == 1)
            #expect(try await count(functions) == 1)
            let reopened = try await PostgresWallet.open(settings: settings, key: PostgresTesting.key)
            reopened.close()
            #expect(try await count(triggers) == 0, "the trigger is still there")
            #expect(try await count(functions) == 0, "the function is still there")
            #expect(try await count("SELECT format FROM coffer_schema") == Int64(PostgresStore.format))
            #expect(PostgresStore.format == 5)
            // Observation works without it: the add's own statement notifies.
            let updates = Updates(
                wallet.observe(type: "credential", interval: .milliseconds(20), expiryCheck: PostgresObserveTests.never))
            #expect(try await updates.next()?.isEmpty == true)
            try await wallet.add(type: "credential", id: "c1", value: "v")
            #expect(try await updates.next()?.map(\.id) == ["c1"])
        }
    }
}
#endif
