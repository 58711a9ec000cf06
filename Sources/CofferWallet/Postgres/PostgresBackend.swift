// The wallet's PostgreSQL backend, built only with the package trait `PostgreSQL`: the tables, the
// migrations, the shared client and its pool, and the statements, on opaque bytes. Crypto stays
// above it (PostgresWallet seals and blinds): the server sees blind indexes, sealed boxes, the
// cleartext of `~` tags and expiry times, exactly what an SQLite wallet file holds.

#if PostgreSQL
import CofferSync
import Foundation
import Logging
import PostgresNIO

extension PostgresSettings.TLSMode {
    /// The mode's name as a URL's `sslmode` writes it (libpq's), for messages.
    var sslmode: String {
        switch self {
        case .verifyCA: return "verify-ca"
        case .verifyFull: return "verify-full"
        default: return rawValue
        }
    }
}

/// Where a PostgreSQL wallet lives and how its pool behaves.
public struct PostgresSettings: Sendable, Hashable {
    /// How the connection uses TLS (libpq's `sslmode` names).
    public enum TLSMode: String, Sendable, Hashable {
        /// No TLS.
        case disable
        /// TLS when the server offers it, else plain; the certificate is not checked (libpq's `prefer`).
        case prefer
        /// TLS or no connection, without checking the server's certificate (libpq's `require`).
        case require
        /// TLS or no connection, and the server's certificate must chain to a trusted root (the
        /// system's, or ``PostgresSettings/rootCertificates``), whatever host it names (libpq's `verify-ca`).
        case verifyCA
        /// TLS or no connection, and the server's certificate must chain to a trusted root (the
        /// system's, or ``PostgresSettings/rootCertificates``) and name the host (libpq's `verify-full`).
        case verifyFull
    }

    /// The server's host name or address.
    public var host: String
    /// Its port.
    public var port: Int
    /// The role to log in as.
    public var user: String
    /// Its password (nil: none, as with trust authentication).
    public var password: String?
    /// The database holding the wallet's tables.
    public var database: String
    /// TLS (`sslmode`).
    public var tls: TLSMode
    /// A PEM file of the certificate authorities the server's certificate must chain to, in place
    /// of the system's roots (`sslrootcert`; nil: the system's). With it, ``TLSMode/require``
    /// checks the chain as ``TLSMode/verifyCA`` does, as libpq does when it finds a root file.
    public var rootCertificates: String?
    /// Most connections the process's shared client opens to this server (all profiles share them).
    public var maxConnections: Int
    /// How many connections the shared client opens as soon as it starts and keeps open, even idle
    /// (0: each is opened on demand and closed after ``idleTimeout`` unused). At most
    /// ``maxConnections``; a larger value is taken as ``maxConnections``.
    public var minConnections: Int
    /// How long opening one connection may take.
    public var connectTimeout: Duration
    /// How long an idle connection stays open.
    public var idleTimeout: Duration
    /// How long a call waits for a free connection before it fails with a clear error.
    public var leaseTimeout: Duration
    /// How often an idle connection is checked with a keep-alive query (nil: never).
    public var keepAlive: Duration?
    /// Whether the most frequent statements (reading, replacing and deleting one record) are
    /// prepared once per connection, so the server parses and plans them once, not at every call
    /// (the URL's `prepared_statements`, on by default). Behind a pooler that does not carry
    /// prepared statements between its server connections (PgBouncer before 1.21, or with
    /// `max_prepared_statements = 0`), the first statement the server refuses by name switches the
    /// process's pool to unnamed statements; a transaction that meets that refusal fails with
    /// ``WalletError/storage(_:cause:)`` (`EAGAIN`) and keeps nothing. Turn it off there to send
    /// every statement unnamed from the start.
    public var preparedStatements: Bool

    /// Settings with the pool's defaults unless given. The pool's default size is the URL's
    /// (``PostgresURL/defaultMaxConnections``), so a wallet opened from settings and one opened
    /// from a URL naming no `max_connections` share one pool of the same size.
    public init(
        host: String, port: Int = 5432, user: String, password: String? = nil, database: String, tls: TLSMode = .prefer,
        maxConnections: Int = PostgresURL.defaultMaxConnections, connectTimeout: Duration = .seconds(10),
        idleTimeout: Duration = .seconds(60),
        leaseTimeout: Duration = .seconds(30), keepAlive: Duration? = .seconds(30), preparedStatements: Bool = true,
        minConnections: Int = 0, rootCertificates: String? = nil
    ) {
        self.rootCertificates = rootCertificates
        self.host = host
        self.port = port
        self.user = user
        self.password = password
        self.database = database
        self.tls = tls
        self.maxConnections = maxConnections
        self.minConnections = minConnections
        self.connectTimeout = connectTimeout
        self.idleTimeout = idleTimeout
        self.leaseTimeout = leaseTimeout
        self.keepAlive = keepAlive
        self.preparedStatements = preparedStatements
    }

    /// The settings a ``PostgresURL`` names: its server, user, password, database, `sslmode`,
    /// `max_connections`, `min_connections`, `connect_timeout`, `idle_timeout` and
    /// `prepared_statements`; the lease
    /// timeout and keep-alive, which a URL does not carry, keep their defaults.
    public init(url: PostgresURL) {
        let tls: TLSMode
        switch url.tlsMode {
        case .disable: tls = .disable
        case .prefer: tls = .prefer
        case .require: tls = .require
        case .verifyCA: tls = .verifyCA
        case .verifyFull: tls = .verifyFull
        }
        self.init(
            host: url.host, port: url.port, user: url.user, password: url.password, database: url.database, tls: tls,
            maxConnections: url.maxConnections, connectTimeout: .seconds(url.connectTimeout), idleTimeout: .seconds(url.idleTimeout),
            preparedStatements: url.preparedStatements, minConnections: url.minConnections, rootCertificates: url.rootCertificates)
    }

    /// `host:port/database`, for messages (never the password).
    var label: String { "postgres://\(user)@\(host):\(port)/\(database)" }

    /// The TLS settings of ``tls`` (nil: no TLS): what the certificate must be, libpq's way.
    var tlsConfiguration: TLSConfiguration? {
        var configuration = TLSConfiguration.makeClientConfiguration()
        switch tls {
        case .disable: return nil
        case .prefer: configuration.certificateVerification = .none
        case .require: configuration.certificateVerification = rootCertificates == nil ? .none : .noHostnameVerification
        case .verifyCA: configuration.certificateVerification = .noHostnameVerification
        case .verifyFull: configuration.certificateVerification = .fullVerification
        }
        if let rootCertificates { configuration.trustRoots = .file(rootCertificates) }
        return configuration
    }

    /// One connection's settings (outside the pool: the live-query listener, and the check of a
    /// server no pooled connection reaches): the pool's server, login, database, TLS and connect timeout.
    func connectionConfiguration() throws -> PostgresConnection.Configuration {
        var tls = PostgresConnection.Configuration.TLS.disable
        if let configuration = tlsConfiguration {
            let context = try NIOSSLContext(configuration: configuration)
            tls = self.tls == .prefer ? .prefer(context) : .require(context)
        }
        var configuration = PostgresConnection.Configuration(
            host: host, port: port, username: user, password: password, database: database, tls: tls)
        let (seconds, attoseconds) = connectTimeout.components
        configuration.options.connectTimeout = .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
        return configuration
    }

    var clientConfiguration: PostgresClient.Configuration {
        var tlsConfiguration = PostgresClient.Configuration.TLS.disable
        if let configuration = self.tlsConfiguration {
            tlsConfiguration = tls == .prefer ? .prefer(configuration) : .require(configuration)
        }
        var configuration = PostgresClient.Configuration(
            host: host, port: port, username: user, password: password, database: database, tls: tlsConfiguration)
        configuration.options.maximumConnections = maxConnections
        configuration.options.minimumConnections = min(max(minConnections, 0), maxConnections)
        configuration.options.connectTimeout = connectTimeout
        configuration.options.connectionIdleTimeout = idleTimeout
        configuration.options.keepAliveBehavior = keepAlive.map { .init(frequency: $0) }
        return configuration
    }
}

/// A statement for a connection the driver already saw close: refused before it is written.
struct PostgresConnectionClosed: Error {}

/// A pooled lease whose connection had closed before anything of the call reached the server
/// (the pool handed out a connection the server had just ended): the call may run again on
/// another connection.
struct PostgresNothingSent: Error {}

/// A call whose connection ended after a statement that could write reached the server (an
/// autocommit write, or a `COMMIT`): the server may have kept it or not, and no one can tell.
struct PostgresOutcomeUnknown: Error {
    /// How the connection ended.
    let underlying: any Error
}

/// A call whose connection ended after it had sent statements, none of which could have written
/// (reads, or a transaction before its `COMMIT`, which the server rolls back): it may run again.
struct PostgresEndedUnwritten: Error {
    /// How the connection ended.
    let underlying: any Error
}

/// What ``PostgresConnection/send(_:logger:file:line:)`` let through during one pooled lease
/// (``PostgresStore/withConnection(_:)``): whether a failed call sent anything, and whether what
/// it sent could have written.
final class PostgresLeaseLog: Sendable {
    /// The lease the running task's statements belong to.
    @TaskLocal static var current: PostgresLeaseLog?

    private struct State {
        var sent = 0
        /// Inside an explicit transaction (`BEGIN` sent, no `COMMIT` or `ROLLBACK` yet), and
        /// whether it is `READ ONLY`.
        var inTransaction = false
        var readOnly = false
        /// A statement that could write has been sent outside a transaction, or a write
        /// transaction's `COMMIT`.
        var mayHaveWritten = false
    }

    private let state = Locked(State())
    /// The lease's own log, when this one is one call's on a held connection
    /// (``PostgresHeldConnection``): it is told of every statement too.
    private let lease: PostgresLeaseLog?

    /// A log of its own, or of one call inside the lease that `lease` logs.
    init(within lease: PostgresLeaseLog? = nil) { self.lease = lease }

    /// Statement `sql` is about to be written.
    func note(_ sql: String) {
        lease?.note(sql)
        let verb = Self.verb(sql)
        state.withLock { state in
            state.sent += 1
            switch verb {
            case "BEGIN", "START":
                state.inTransaction = true
                state.readOnly = sql.uppercased().contains("READ ONLY")
            case "COMMIT", "END":
                if state.inTransaction && !state.readOnly { state.mayHaveWritten = true }
                state.inTransaction = false
            case "ROLLBACK", "ABORT":
                state.inTransaction = false
            case "SELECT", "SHOW", "SET", "LISTEN", "UNLISTEN", "SAVEPOINT", "RELEASE":
                break
            default:
                // INSERT, UPDATE, DELETE, WITH (the wallet's writes are data-modifying CTEs),
                // COPY and the rest: a write once it runs outside a transaction.
                if !state.inTransaction { state.mayHaveWritten = true }
            }
        }
    }

    /// The statement's first word, upper-cased.
    static func verb(_ sql: String) -> String {
        sql.drop { $0.isWhitespace }.prefix { $0.isLetter }.uppercased()
    }

    /// How many statements were let through.
    var sent: Int { state.withLock { $0.sent } }

    /// Whether a statement that could have written reached the server.
    var mayHaveWritten: Bool { state.withLock { $0.mayHaveWritten } }

    /// `error` as an unknown outcome when it says the connection ended after a statement that
    /// could have written reached the server; nil otherwise.
    func unknownOutcome(_ error: any Error) -> (any Error)? {
        mayHaveWritten && PostgresStore.endedConnection(error) ? PostgresOutcomeUnknown(underlying: error) : nil
    }

    /// Runs `body` on `connection` with its statements counted; throws ``PostgresNothingSent``
    /// when it failed on a closed connection before any statement of it was written: `send`
    /// refused the first one, or the driver refused it unsent because the connection was
    /// closing (`clientClosedConnection`). When the connection ended after statements were
    /// sent, throws ``PostgresOutcomeUnknown`` if one of them could have written, else
    /// ``PostgresEndedUnwritten``.
    static func run<R: Sendable>(
        _ connection: PostgresConnection, _ body: @Sendable @escaping (PostgresConnection) async throws -> R
    ) async throws -> R {
        let log = PostgresLeaseLog()
        do {
            return try await $current.withValue(log) { try await body(connection) }
        } catch is PostgresConnectionClosed where log.sent == 0 {
            throw PostgresNothingSent()
        } catch let error as PSQLError where error.code == .clientClosedConnection && log.sent == 1 {
            throw PostgresNothingSent()
        } catch {
            if let unknown = log.unknownOutcome(error) { throw unknown }
            guard PostgresStore.endedConnection(error) else { throw error }
            throw PostgresEndedUnwritten(underlying: error)
        }
    }
}

extension PostgresConnection {
    /// `query(_:logger:)`, refused at once with ``PostgresConnectionClosed`` when the connection has
    /// closed. postgres-nio 1.33 drops a statement written to a connection whose channel has closed
    /// and never answers it (the driver's fix for that, in its pull request 487, was reverted), so
    /// the caller would wait forever: a `ROLLBACK` after the server went away mid-statement did.
    /// Every statement of the wallet goes through one of the two `send`s.
    @discardableResult
    func send(_ query: PostgresQuery, logger: Logger, file: String = #fileID, line: Int = #line) async throws -> PostgresRowSequence {
        guard !isClosed else { throw PostgresConnectionClosed() }
        PostgresLeaseLog.current?.note(query.sql)
        return try await self.query(query, logger: logger, file: file, line: line)
    }

    /// `execute(_:logger:)` of a prepared statement, refused at once on a closed connection (see
    /// ``send(_:logger:file:line:)``).
    @discardableResult
    func send<S: PostgresPreparedStatement>(
        _ statement: S, logger: Logger, file: String = #fileID, line: Int = #line
    ) async throws -> AsyncThrowingMapSequence<PostgresRowSequence, S.Row> {
        guard !isClosed else { throw PostgresConnectionClosed() }
        PostgresLeaseLog.current?.note(S.sql)
        return try await execute(statement, logger: logger, file: file, line: line)
    }
}

/// One `PostgresClient` per server and settings in this process, shared by every wallet and
/// profile opened on it; its run loop runs while at least one of them is open.
final class PostgresClients: Sendable {
    static let shared = PostgresClients()

    final class Entry: Sendable {
        let client: PostgresClient
        let runner: Task<Void, Never>
        let gauge = PostgresLeaseGauge()
        /// The client's one listening connection, open while an observation runs (PostgresWallet+Observe.swift).
        let listener: PostgresListener
        init(client: PostgresClient, runner: Task<Void, Never>, listener: PostgresListener) {
            self.client = client
            self.runner = runner
            self.listener = listener
        }
    }

    private struct State {
        var entries: [PostgresSettings: (entry: Entry, users: Int)] = [:]
    }
    private let state = Locked(State())

    /// The shared client for `settings` (started on first use); pair with ``release(_:)``.
    func acquire(_ settings: PostgresSettings) -> PostgresClient {
        state.withLock { state in
            if let found = state.entries[settings] {
                state.entries[settings] = (found.entry, found.users + 1)
                return found.entry.client
            }
            var logger = Logger(label: "coffer.wallet.postgres")
            logger.logLevel = .critical
            let client = PostgresClient(configuration: settings.clientConfiguration, backgroundLogger: logger)
            let runner = Task { await client.run() }
            state.entries[settings] = (Entry(client: client, runner: runner, listener: PostgresListener(settings: settings)), 1)
            return client
        }
    }

    /// What this process knows of the pool of the shared client for `settings` (a fresh gauge
    /// when there is no such client: its calls then all take the bounded path).
    func gauge(_ settings: PostgresSettings) -> PostgresLeaseGauge {
        state.withLock { $0.entries[settings]?.entry.gauge } ?? PostgresLeaseGauge()
    }

    /// The listening connection of the shared client for `settings` (nil when there is no such client).
    func listener(_ settings: PostgresSettings) -> PostgresListener? {
        state.withLock { $0.entries[settings]?.entry.listener }
    }

    /// Gives back a client from ``acquire(_:)``; the last user's release ends its run loop
    /// (which closes its connections) and its listening connection.
    func release(_ settings: PostgresSettings) {
        let ended: Entry? = state.withLock { state in
            guard let found = state.entries[settings] else { return nil }
            if found.users > 1 {
                state.entries[settings] = (found.entry, found.users - 1)
                return nil
            }
            state.entries[settings] = nil
            return found.entry
        }
        ended?.runner.cancel()
        ended?.listener.stop()
    }
}

/// What this process knows of one client's pool: the connections its calls have seen open (until
/// each one's close), and how many of its calls hold or wait for one. A call that certainly finds
/// an idle connection (no more calls than open connections) leases directly, with no timer: it
/// cannot wait for another call to give one back. Any other call waits under the lease timeout.
/// Every lease of the client goes through ``PostgresStore/withConnection(_:)``, so the count is
/// whole. Its lock is held for a counter's change only.
final class PostgresLeaseGauge: Sendable {
    private struct State {
        var open = Set<PostgresConnection.ID>()
        /// The open connections ``PostgresStore/warm(connections:within:)`` readied.
        var warmed = Set<PostgresConnection.ID>()
        var calls = 0
        var leases = 0
        var granted = 0
        var diagnosing = false
        var unnamedOnly = false
        /// Open connections on which a named statement failed (see ``stopPreparing(on:)``).
        var unnamed = Set<PostgresConnection.ID>()
    }
    private let state = Locked(State())

    /// False once a statement prepared by name was refused as missing or already there
    /// (``PostgresStore/isPoolerRefusal(_:)``): a pooler in transaction mode stands between
    /// the process and the server and does not keep a connection's prepared statements, so
    /// the client's calls send every statement unnamed from then on.
    var preparesStatements: Bool { state.withLock { !$0.unnamedOnly } }

    /// Sends every later statement of the client unnamed (see ``preparesStatements``).
    func stopPreparing() { state.withLock { $0.unnamedOnly = true } }

    /// Whether named statements are sent on `connection`: the client prepares them, and none
    /// failed on it.
    func preparesStatements(on connection: PostgresConnection) -> Bool {
        state.withLock { !$0.unnamedOnly && !$0.unnamed.contains(connection.id) }
    }

    /// Sends every later statement on `connection` unnamed, until it closes: the driver keeps a
    /// statement whose preparation failed (in a transaction already failed, say) failed on its
    /// connection for good, which would fail every later call of it there.
    func stopPreparing(on connection: PostgresConnection) { state.withLock { _ = $0.unnamed.insert(connection.id) } }

    /// Counts a call in (pair with ``leave()``); true when an idle connection is certainly there.
    func enter() -> Bool {
        state.withLock { state in
            state.calls += 1
            state.leases += 1
            return state.calls <= state.open.count
        }
    }

    /// How many calls have leased a connection of the client so far (each one round trip or
    /// more): what the tests count to show a read takes one.
    var leases: Int { state.withLock { $0.leases } }

    /// Counts a call out.
    func leave() { state.withLock { $0.calls -= 1 } }

    /// How many leases the pool has granted so far (a call waiting while this does not move
    /// waits on a pool that makes no progress).
    var granted: Int { state.withLock { $0.granted } }

    /// Whether a connection the pool has leased is still open: one that may come free for a
    /// waiting call. False while the pool has never got a connection, or all it got have closed.
    var holdsConnections: Bool { state.withLock { !$0.open.isEmpty } }

    /// Starts the one check of the server at a time: false when another call is checking.
    func startDiagnosis() -> Bool {
        state.withLock { state in
            defer { state.diagnosing = true }
            return !state.diagnosing
        }
    }

    /// Ends the check ``startDiagnosis()`` started.
    func endDiagnosis() { state.withLock { $0.diagnosing = false } }

    /// Notes a leased connection as open, until it closes.
    func saw(_ connection: PostgresConnection) {
        let id = connection.id
        guard
            state.withLock({
                $0.granted += 1
                return $0.open.insert(id).inserted
            })
        else { return }
        connection.closeFuture.whenComplete { [state] _ in
            state.withLock {
                $0.open.remove(id)
                $0.warmed.remove(id)
                $0.unnamed.remove(id)
            }
        }
    }

    /// How many open connections are readied.
    var warmedCount: Int { state.withLock { $0.warmed.count } }

    /// Whether no call holds or waits for a connection.
    var isIdle: Bool { state.withLock { $0.calls == 0 } }

    /// Claims a leased (and ``saw(_:)``) connection for readying: true when none readied it
    /// yet; ``unclaim(_:)`` gives it back when readying failed.
    func claim(_ connection: PostgresConnection) -> Bool {
        state.withLock { $0.open.contains(connection.id) && $0.warmed.insert(connection.id).inserted }
    }

    /// Marks a claimed connection as not readied.
    func unclaim(_ connection: PostgresConnection) { state.withLock { _ = $0.warmed.remove(connection.id) } }
}

/// The first error the server raised inside one wallet transaction. PostgreSQL fails every later
/// statement of a transaction one has failed, and answers its `COMMIT` with a rollback, not an
/// error: a body that catches the error and returns would be told its transaction committed.
/// The transaction checks this before it commits (PostgresWallet+Transaction.swift).
final class PostgresAbort: Sendable {
    private let first = Locked<String?>(nil)

    /// Notes `error` when the server raised it (a statement refused by name counts: the server
    /// failed it too); the first one noted stays.
    func note(_ error: any Error) {
        let what: String
        if let error = error as? PSQLError, let state = PostgresStore.sqlState(error) {
            what = "\(error.serverInfo?[.message] ?? "error") (SQLSTATE \(state))"
        } else if let refusal = error as? PostgresStore.PoolerRefusedPreparedStatement {
            what = "a statement refused by name by a pooler (SQLSTATE \(refusal.state))"
        } else {
            return
        }
        first.withLock { if $0 == nil { $0 = what } }
    }

    /// What the server failed first, or nil when it failed nothing.
    var failure: String? { first.withLock { $0 } }

    /// Back to what ``failure`` was at a savepoint, once the transaction was rolled back to it
    /// (which undoes the failure of what came after).
    func reset(to failure: String?) { first.withLock { $0 = failure } }
}

/// What ends a wait for a pooled connection first (``PostgresStore``'s lease).
private enum LeaseEvent<R: Sendable>: Sendable {
    /// The call ran on a leased connection.
    case leased(R)
    /// The lease timeout passed.
    case timedOut
    /// The server accepted a connection of its own, or no check was made: keep waiting.
    case reachable
    /// The server cannot be reached, or refused the login or database.
    case unreachable(WalletError)
}

/// A row of `coffer_items` as the wallet reads it.
struct PostgresItemRow: Sendable {
    let rowid: Int64
    let idBlind: Data
    let sealed: Data
    let expiry: Int64?
    let version: Int64
}

/// One tag row to write: the name's blind integer, the value (blind bytes, or the UTF-8 of a
/// `~` tag's value), and for `~` tags written as a number that number.
struct PostgresTagRow: Sendable, Hashable {
    let name: Int64
    let value: Data
    let number: Double?
}

/// What every write of a profile carries so that it cannot outlive the key it was sealed
/// with: the profile's number and the generation of its own key when the writer read it. Each
/// write statement opens with `g`, which locks the profile's catalogue row `FOR KEY SHARE` only
/// if the generation still matches; the write itself joins `g`, so when it does not match (a
/// rotation committed since) or the row is gone (the profile was removed) nothing is written
/// and the caller learns why (``PostgresStore/gateClosed(_:)``). A rotation takes the row
/// `FOR UPDATE` first: it waits for writes holding the gate, then every write that comes after
/// waits for it and, at READ COMMITTED, re-reads the row it waited for and sees the new
/// generation. So no acknowledged record is ever sealed under a key the profile no longer has.
struct ProfileGate: Sendable, Equatable {
    /// The profile's number.
    let number: Int64
    /// The generation of the profile's own key the writer holds (0 until its first rotation).
    let generation: Int64
    /// The profile's label in messages (server, database and profile).
    let label: String
    /// Whether the transaction the writes run in already holds the gate (a wallet transaction
    /// takes it in its first statement): its statements then skip the lock (each would re-lock a
    /// row the transaction holds, and plan a larger statement; batched updates ran 40 % slower).
    var held = false

    /// The gate as a CTE named `g` (its numbers are the writer's own, never user input).
    var sql: String { held ? "g AS (SELECT 1)" : Self.preparedSQL(number: String(number), generation: String(generation)) }

    /// The gate as a CTE named `g` over two SQL expressions (parameters of a prepared statement).
    static func preparedSQL(number: String, generation: String) -> String {
        "g AS (SELECT 1 FROM coffer_profiles WHERE number = \(number) AND generation = \(generation) FOR KEY SHARE)"
    }
}

/// The backend: statements against one database through the shared client, for one profile
/// at a time (every statement names its profile's number).
struct PostgresStore: Sendable {
    let settings: PostgresSettings
    let client: PostgresClient
    /// The shared client's lease gauge (``PostgresLeaseGauge``).
    let gauge: PostgresLeaseGauge
    /// Inside a wallet transaction (PostgresWallet+Transaction.swift): the one connection
    /// every statement runs on, in that transaction; nil: each call leases its own.
    var pinned: PostgresConnection? = nil
    /// With ``pinned``: what the server failed in that transaction (see ``PostgresAbort``).
    var abort: PostgresAbort? = nil
    /// Inside a ``PostgresWallet/withConnection(_:)`` view: the connection its calls run on, one
    /// at a time, each committed on its own (no lease); nil: each call leases its own.
    var held: PostgresHeldConnection? = nil

    /// A store on `client`, the shared client ``PostgresClients/acquire(_:)`` gave for `settings`.
    init(settings: PostgresSettings, client: PostgresClient) {
        self.settings = settings
        self.client = client
        gauge = PostgresClients.shared.gauge(settings)
    }

    /// The newest schema format this code reads and writes: 1, the tables; 2, also the profiles'
    /// `generation` (see ``ProfileGate``); 3, also a row trigger that notified observers of every
    /// change of a record; 4, the same table of observed profiles without that trigger: the
    /// wallet's write statements notify themselves (``notifySchema``). An older database gains
    /// what it lacks, and loses the trigger, when a process of this code opens it (idempotent
    /// statements, no rewrite), after which older builds refuse it as newer. 5: also the marks of
    /// tag names some record holds several values of (``multiValuedSchema``).
    static let format = 5
    /// The advisory lock key migrations and profile changes hold (`pg_advisory_xact_lock`).
    static let migrationLock: Int64 = 0x436F_6666_6572_0001
    /// Bytes of a tag value the lookup index holds (PostgreSQL's B-tree entries are limited to
    /// about 2.7 kB; `~` tag values may be 64 KiB). Equalities compare the prefix through the
    /// index, then the whole value (the query compiler writes them so:
    /// ``SQLDialect/valueEquals(_:_:)``).
    static let indexedPrefix = SQLDialect.postgresIndexedPrefix
    /// Serialization failures and deadlocks are retried this many times.
    static let retries = 5

    static let logger: Logger = {
        var logger = Logger(label: "coffer.wallet.postgres")
        logger.logLevel = .critical
        return logger
    }()

    // MARK: Connections and errors

    /// Runs `body` on a pooled connection, waiting at most the lease timeout for one; maps
    /// the driver's errors to ``WalletError`` and retries serialization failures. With
    /// `rerunEnded`, a call whose connection ended after it sent only statements that could not
    /// have written (reads, or a transaction before its `COMMIT`) runs again on another
    /// connection; callers whose `body` runs someone else's code pass false.
    func withConnection<R: Sendable>(
        rerunEnded: Bool = true, _ body: @Sendable @escaping (PostgresConnection) async throws -> R
    ) async throws -> R {
        if let pinned { return try await noting { try await body(pinned) } } // the transaction's own: no lease, no retry
        var attempt = 0
        while true {
            do {
                return try await leased(body)
            } catch let error as PSQLError where Self.isRetryable(error) && attempt < Self.retries {
                attempt += 1
                try await Task.sleep(for: .milliseconds(5 << attempt))
            } catch let error
                where (error is PostgresNothingSent || (rerunEnded && error is PostgresEndedUnwritten)) && attempt < Self.retries
            {
                // The connection ended before the call sent anything (the pool handed out one the
                // server had just ended), or under a read or an uncommitted transaction (a restart,
                // pg_terminate_backend, a pooler closing it): nothing was written, so the same call
                // again on another connection, once the pool noticed.
                attempt += 1
                try await Task.sleep(for: .milliseconds(1 << attempt))
            } catch is PoolerRefusedPreparedStatement where attempt < Self.retries {
                // Nothing ran (the server refused the statement's name before running it):
                // the same call again, now unnamed.
                attempt += 1
            } catch let error as WalletError {
                throw error
            } catch {
                throw Self.map(error, settings: settings)
            }
        }
    }

    /// What `work` gives; a server error it throws is noted in ``abort`` first (inside a wallet
    /// transaction, whose every statement then fails until it ends).
    private func noting<R>(_ work: () async throws -> R) async throws -> R {
        do { return try await work() } catch {
            abort?.note(error)
            throw error
        }
    }

    /// Runs `body` inside one transaction (retried whole after a serialization failure or deadlock).
    func transaction<R: Sendable>(_ body: @Sendable @escaping (PostgresConnection) async throws -> R) async throws -> R {
        if let pinned { return try await noting { try await body(pinned) } } // inside a wallet transaction: part of it
        return try await withConnection { connection in
            try await connection.send("BEGIN", logger: Self.logger)
            do {
                let result = try await body(connection)
                try await connection.send("COMMIT", logger: Self.logger)
                return result
            } catch {
                _ = try? await connection.send("ROLLBACK", logger: Self.logger)
                throw error
            }
        }
    }

    /// ``withConnection(_:)`` for work that runs a caller's own body: what `work` hands to `keep`
    /// (what that body threw) reaches the caller unchanged when the work fails, and any other
    /// error is mapped to ``WalletError``.
    func withConnection<R: Sendable>(
        keepingThrown work: @Sendable @escaping (PostgresConnection, _ keep: @Sendable (any Error) -> Void) async throws -> R
    ) async throws -> R {
        let thrown = Locked<(any Error)?>(nil)
        do {
            // Never run again after its connection ended: `work` runs the caller's own code.
            return try await withConnection(rerunEnded: false) { connection in
                try await work(connection) { error in thrown.withLock { $0 = error } }
            }
        } catch {
            if let original = thrown.withLock({ $0 }) { throw original }
            throw Self.map(error, settings: settings)
        }
    }

    private func leased<R: Sendable>(_ body: @Sendable @escaping (PostgresConnection) async throws -> R) async throws -> R {
        if let held { return try await held.run(body) }
        let gauge = self.gauge
        defer { gauge.leave() }
        let client = self.client
        // The common case: an open connection is idle, so the lease cannot wait for another
        // call; no timer and no child tasks (a task group with a sleeping timer per call cost
        // about a tenth of a point read here).
        if gauge.enter() {
            return try await client.withConnection { connection in
                gauge.saw(connection)
                return try await PostgresLeaseLog.run(connection, body)
            }
        }
        let bound = settings.leaseTimeout
        let settings = self.settings
        // The lease waits in the pool's queue; a call that finds no free connection in time
        // fails with a clear error instead of waiting forever (and its request leaves the queue).
        // The pool retries a server it cannot reach without saying why, so a call still waiting
        // after a whole connect timeout (at least 1 s), while no call of the process got a
        // connection meanwhile, connects once by itself (one such check at a time): a refused
        // connection, login or database fails the call at once with the server's own reason. A
        // pool that is only slow to connect (a loaded server) has had its own attempt's full time
        // before a check adds another connection.
        let leasedAt = Locked<Bool>(false)
        let grantedBefore = gauge.granted
        return try await withThrowingTaskGroup(of: LeaseEvent<R>.self) { group in
            group.addTask {
                .leased(
                    try await client.withConnection { connection in
                        leasedAt.withLock { $0 = true }
                        gauge.saw(connection)
                        return try await PostgresLeaseLog.run(connection, body)
                    })
            }
            group.addTask {
                try? await Task.sleep(for: bound)
                return .timedOut
            }
            group.addTask {
                try? await Task.sleep(for: min(max(settings.connectTimeout, .seconds(1)), bound))
                guard !Task.isCancelled, gauge.granted == grantedBefore, gauge.startDiagnosis() else { return .reachable }
                defer { gauge.endDiagnosis() }
                if let error = await Self.unreachable(settings, poolHoldsConnections: gauge.holdsConnections) {
                    return .unreachable(error)
                }
                return .reachable
            }
            while let next = try await group.next() {
                switch next {
                case .leased(let value):
                    group.cancelAll()
                    return value
                case .reachable: continue
                case .unreachable(let error):
                    guard !leasedAt.withLock({ $0 }) else { continue }
                    group.cancelAll()
                    throw error
                case .timedOut:
                    guard !leasedAt.withLock({ $0 }) else { continue }
                    group.cancelAll()
                    throw WalletError.storage(
                        "no PostgreSQL connection to \(settings.label) became free within \(bound) (the pool has \(settings.maxConnections)); nothing was written: retry later, or raise max_connections",
                        cause: StorageCause(posix: .ETIMEDOUT))
                }
            }
            throw WalletError.storage("the PostgreSQL call to \(settings.label) was cancelled", cause: StorageCause(posix: .ECANCELED))
        }
    }

    /// Why no connection to the server of `settings` can be opened (refused, unreachable, the
    /// login or the database refused, TLS failed), or nil when one opens (it is closed again):
    /// the pool is then only busy. A server or role at its connection limit (SQLSTATE 53300)
    /// counts as reachable while `poolHoldsConnections`: the pool's connections to it may come
    /// free before the lease timeout. When the pool holds none, none will: the limit is the
    /// reason, and the call fails with it.
    static func unreachable(_ settings: PostgresSettings, poolHoldsConnections: Bool) async -> WalletError? {
        let configuration: PostgresConnection.Configuration
        do { configuration = try settings.connectionConfiguration() } catch { return tlsSetupFailure(settings, error) }
        do {
            let connection = try await PostgresConnection.connect(configuration: configuration, id: 0, logger: logger)
            try? await connection.close()
            return nil
        } catch let error as PSQLError where sqlState(error) == "53300" && poolHoldsConnections {
            return nil
        } catch {
            return connectFailure(error, settings: settings)
        }
    }

    /// Why a connection to the server of `settings` failed to open, as an error naming the
    /// reason (the server's message and SQLSTATE, the driver's error code, the TLS or socket
    /// error under it: never postgres-nio's placeholder description of `PSQLError`, and never
    /// the password, which none of them holds) and advice that fits it. The server's own
    /// refusals of the login, the database or a permission keep ``map(_:settings:)``'s messages;
    /// every other failure is `ECONNREFUSED`, which callers (a live query's reads) treat as the
    /// server being away for now.
    static func connectFailure(_ error: any Error, settings: PostgresSettings) -> WalletError {
        let refused = StorageCause(posix: .ECONNREFUSED)
        guard let error = error as? PSQLError else {
            return unavailable(settings, String(describing: error))
        }
        if let tls = tlsDetail(error) {
            return .storage(
                "PostgreSQL at \(settings.label) could not be reached over TLS (\(tls)); nothing was written: check sslmode in the URL (now \(settings.tls.sslmode)) against the server's TLS setup (ssl = on with a certificate, and sslrootcert naming the authority that signed it)",
                cause: refused)
        }
        if let state = sqlState(error) {
            let message = error.serverInfo?[.message] ?? "error"
            switch state {
            case "28P01", "28000", "3D000", "42501":
                return map(error, settings: settings)
            case "55000":
                return .storage(
                    "PostgreSQL at \(settings.label) refused the connection: \(message) (SQLSTATE \(state)); nothing was written: the database is closed to new connections (ALTER DATABASE … ALLOW_CONNECTIONS false, or a template database); ask its administrator to reopen it",
                    cause: refused)
            case "53300":
                return .storage(
                    "PostgreSQL at \(settings.label) refused the connection: \(message) (SQLSTATE \(state)), and this process holds no connection to it that could come free; nothing was written: the server, the role or the database is at its connection limit (max_connections, ALTER ROLE … CONNECTION LIMIT, ALTER DATABASE … CONNECTION LIMIT); close other sessions or raise that limit",
                    cause: refused)
            default:
                if let detail = endedDetail(error) { return unavailable(settings, detail) }
                return .storage(
                    "PostgreSQL at \(settings.label) refused the connection: \(message) (SQLSTATE \(state)); nothing was written: see the server's log for the reason",
                    cause: refused)
            }
        }
        switch error.code {
        case .authMechanismRequiresPassword, .unsupportedAuthMechanism, .saslError:
            return .storage(
                "PostgreSQL at \(settings.label) refused the login (\(driverDetail(error))); nothing was written: check the user and password in the URL",
                cause: StorageCause(posix: .EACCES))
        default:
            return unavailable(settings, driverDetail(error))
        }
    }

    /// The driver's own account of `error`: its code, and the error under it when there is one
    /// (``PSQLError``'s `description` is a placeholder that hides everything).
    static func driverDetail(_ error: PSQLError) -> String {
        error.underlying.map { "\(error.code): \(String(describing: $0))" } ?? "\(error.code)"
    }

    /// What went wrong with TLS when `error` is a TLS failure (the server does not offer TLS,
    /// the handshake or the certificate check failed); nil for any other error.
    static func tlsDetail(_ error: PSQLError) -> String? {
        switch error.code {
        case .sslUnsupported: return "the server does not accept TLS connections (sslUnsupported)"
        case .failedToAddSSLHandler, .receivedUnencryptedDataAfterSSLRequest: return driverDetail(error)
        default:
            guard let underlying = error.underlying,
                underlying is NIOSSLError || underlying is NIOSSLExtraError || underlying is BoringSSLError
            else { return nil }
            return driverDetail(error)
        }
    }

    /// The TLS settings of `settings` could not be made (`error`, from building the TLS context):
    /// most often the file `sslrootcert` names is missing or not PEM.
    static func tlsSetupFailure(_ settings: PostgresSettings, _ error: any Error) -> WalletError {
        let file = settings.rootCertificates.map { " from sslrootcert \(WalletError.quote($0))" } ?? ""
        return .storage(
            "PostgreSQL at \(settings.label): the TLS settings could not be loaded\(file) (\(String(describing: error))); nothing was written: check that sslrootcert names a readable PEM file of certificate authorities",
            cause: StorageCause(posix: .EINVAL))
    }

    static func sqlState(_ error: PSQLError) -> String? { error.serverInfo?[.sqlState] }

    /// Whether the server refused a statement prepared by name as already prepared (SQLSTATE
    /// 42P05) or as never prepared (26000). The driver prepares each statement once per
    /// connection it holds, so either means the statement did not reach the server session it
    /// was prepared on: a pooler in transaction mode (PgBouncer before 1.21, or with
    /// `max_prepared_statements = 0`) hands each transaction to any of its server connections.
    static func isPoolerRefusal(_ error: PSQLError) -> Bool {
        guard let state = sqlState(error) else { return false }
        return state == "42P05" || state == "26000"
    }

    static func isRetryable(_ error: PSQLError) -> Bool {
        guard let state = sqlState(error) else { return false }
        return state == "40001" || state == "40P01"
    }

    /// The driver's error as a ``WalletError`` that says what failed and what to do.
    static func map(_ error: Error, settings: PostgresSettings) -> WalletError {
        if let error = error as? WalletError { return error }
        if let refusal = error as? PoolerRefusedPreparedStatement {
            return .storage(
                "PostgreSQL at \(settings.label) is behind a pooler that does not keep prepared statements (SQLSTATE \(refusal.state)); this process now sends its statements unnamed, but the transaction that met it was rolled back and nothing of it was kept: run it again (add prepared_statements=off to the URL to start unnamed)",
                cause: StorageCause(posix: .EAGAIN))
        }
        if error is PostgresConnectionClosed || error is PostgresNothingSent {
            return unavailable(settings, "the server closed the connection")
        }
        if let ended = error as? PostgresEndedUnwritten { return map(ended.underlying, settings: settings) }
        if let unknown = error as? PostgresOutcomeUnknown {
            return .storage(
                "PostgreSQL at \(settings.label): the connection ended (\(endedDetail(unknown.underlying) ?? "\(unknown.underlying)")) after the call's write had reached the server, so whether it was kept is unknown: read it back before trying again",
                cause: StorageCause(posix: .ECONNRESET))
        }
        if let error = error as? PostgresTransactionError {
            if let inner = error.closureError ?? error.commitError ?? error.beginError { return map(inner, settings: settings) }
        }
        if let detail = endedDetail(error) { return unavailable(settings, detail) }
        guard let error = error as? PSQLError else {
            if error is CancellationError {
                return .storage("the PostgreSQL call to \(settings.label) was cancelled", cause: StorageCause(posix: .ECANCELED))
            }
            return .storage("PostgreSQL at \(settings.label): \(String(describing: error))")
        }
        if let state = sqlState(error) {
            let message = error.serverInfo?[.message] ?? "error"
            switch state {
            case "23505":
                return .storage("PostgreSQL at \(settings.label) refused a duplicate row (\(message))", cause: StorageCause(posix: .EEXIST))
            case "40001", "40P01":
                return .storage(
                    "PostgreSQL at \(settings.label) kept failing the transaction on conflicts with others (\(state)); nothing was written: retry",
                    cause: StorageCause(posix: .EAGAIN))
            case "53100":
                return .storage("PostgreSQL at \(settings.label) has no disk space left (\(message))", cause: StorageCause(posix: .ENOSPC))
            case "42501":
                return .storage(
                    "PostgreSQL at \(settings.label) refused the role the permission (\(message)); grant it on the wallet's tables",
                    cause: StorageCause(posix: .EACCES))
            case "28P01", "28000":
                return .storage(
                    "PostgreSQL at \(settings.label) refused the login (\(message)); check the user and password in the URL",
                    cause: StorageCause(posix: .EACCES))
            case "3D000":
                return .storage(
                    "PostgreSQL at \(settings.label) has no such database (\(message)); create it first (createdb)",
                    cause: StorageCause(posix: .ENOENT))
            default:
                return .storage("PostgreSQL at \(settings.label) failed: \(message) (SQLSTATE \(state))")
            }
        }
        return .storage("PostgreSQL at \(settings.label) failed: \(error.code)")
    }

    /// ``map(_:settings:)`` for an error caught inside a lease's body (where
    /// ``PostgresLeaseLog/run(_:_:)`` will not see the driver's error): when the connection ended
    /// after this lease sent a statement that could have written (a `COMMIT`), the outcome is
    /// unknown, not "nothing was written".
    static func mapInLease(_ error: any Error, settings: PostgresSettings) -> WalletError {
        map(PostgresLeaseLog.current?.unknownOutcome(error) ?? error, settings: settings)
    }

    /// Whether `error` says the connection ended or could not be had (see ``endedDetail(_:)``).
    static func endedConnection(_ error: any Error) -> Bool { endedDetail(error) != nil }

    /// How the connection ended, or could not be had, when `error` says so (what
    /// ``unavailable(_:_:)`` reports): the server's reason and SQLSTATE (shut down, cannot connect
    /// now, connection failures), else the driver's (the socket's own reason, such as connection
    /// refused, no route or TLS refused, when there is one; a COPY's writer only says the
    /// connection closed); nil for any other error.
    static func endedDetail(_ error: any Error) -> String? {
        if error is PostgresConnectionClosed { return "the server closed the connection" }
        // What the driver's COPY writer throws when the connection closed under it.
        if case .connectionClosed? = error as? PostgresError { return "the server closed the connection" }
        guard let error = error as? PSQLError else { return nil }
        if let state = sqlState(error) {
            guard ["57P01", "57P02", "57P03", "08000", "08003", "08006", "08001", "08004"].contains(state) else { return nil }
            return "\(error.serverInfo?[.message] ?? "error") (\(state))"
        }
        switch error.code {
        case .connectionError, .serverClosedConnection, .uncleanShutdown, .clientClosedConnection, .poolClosed:
            return driverDetail(error)
        default: return nil
        }
    }

    static func unavailable(_ settings: PostgresSettings, _ detail: String) -> WalletError {
        .storage(
            "PostgreSQL at \(settings.label) is unavailable (\(detail)); nothing was written: check the server is running and reachable, then retry",
            cause: StorageCause(posix: .ECONNREFUSED))
    }

    // MARK: Schema

    /// Creates the tables when the database has none, under the migration lock (processes
    /// starting together make them once); refuses a database of a newer format.
    func migrate() async throws {
        try await transaction { connection in
            try await connection.send("SELECT pg_advisory_xact_lock(\(Self.migrationLock))", logger: Self.logger)
            try await connection.send(
                "CREATE TABLE IF NOT EXISTS coffer_schema(id integer PRIMARY KEY CHECK (id = 1), format integer NOT NULL)",
                logger: Self.logger)
            var stored: Int?
            for try await format in try await connection.send("SELECT format FROM coffer_schema WHERE id = 1", logger: Self.logger)
                .decode(Int.self)
            {
                stored = format
            }
            if let stored, stored > Self.format {
                throw WalletError.invalidInput(
                    "the PostgreSQL wallet at \(settings.label) has format \(stored), written by a newer Coffer; this one reads up to \(Self.format)"
                )
            }
            if stored == Self.format { return }
            for statement in Self.schema + Self.notifySchema + Self.multiValuedSchema {
                try await connection.send(PostgresQuery(unsafeSQL: statement), logger: Self.logger)
            }
            try await connection.send(
                "INSERT INTO coffer_schema(id, format) VALUES (1, \(Self.format)) ON CONFLICT (id) DO UPDATE SET format = EXCLUDED.format",
                logger: Self.logger)
        }
    }

    /// Format 2. Every profile's rows are in the same tables, keyed by the profile's number.
    static let schema = [
        """
        CREATE TABLE IF NOT EXISTS coffer_profiles(
            number bigint PRIMARY KEY,
            name text NOT NULL UNIQUE,
            kdf bytea NOT NULL,
            keys bytea NOT NULL,
            generation bigint NOT NULL DEFAULT 0
        )
        """,
        // Format 1 had no generation: every profile starts at 0.
        "ALTER TABLE coffer_profiles ADD COLUMN IF NOT EXISTS generation bigint NOT NULL DEFAULT 0",
        """
        CREATE TABLE IF NOT EXISTS coffer_items(
            id bigserial PRIMARY KEY,
            profile bigint NOT NULL,
            type bigint NOT NULL,
            name bytea NOT NULL,
            value bytea NOT NULL,
            expiry bigint,
            version bigint NOT NULL DEFAULT 0
        )
        """,
        "CREATE UNIQUE INDEX IF NOT EXISTS coffer_items_name ON coffer_items(profile, type, name)",
        "CREATE INDEX IF NOT EXISTS coffer_items_type ON coffer_items(profile, type, id)",
        """
        CREATE TABLE IF NOT EXISTS coffer_tags(
            item bigint NOT NULL,
            profile bigint NOT NULL,
            name bigint NOT NULL,
            value bytea NOT NULL,
            num double precision
        )
        """,
        "CREATE INDEX IF NOT EXISTS coffer_tags_item ON coffer_tags(item)",
        "CREATE INDEX IF NOT EXISTS coffer_tags_lookup ON coffer_tags(profile, name, substring(value from 1 for \(indexedPrefix)), item)",
        "CREATE INDEX IF NOT EXISTS coffer_tags_number ON coffer_tags(profile, name, num, item) WHERE num IS NOT NULL",
    ]

    /// The channel the wallet's writes notify on (PostgreSQL's notifications are per database).
    static let notifyChannel = "coffer_wallet"

    /// Format 4: the table of observed profiles, and no trigger. Every statement of the wallet
    /// that inserts, updates or deletes rows of `coffer_items` also notifies ``notifyChannel``
    /// with each written record's profile number and blind type (`"PROFILE TYPE"`, two integers;
    /// old and new when a rotation re-blinds a record's type), in the same statement (a CTE,
    /// ``notifyOneSQL(profile:type:written:)`` or ``notifySQL(profile:types:)``) or, for an
    /// import, in a statement of its own in the same transaction (``notifyStaged(_:profile:)``). A
    /// notification is queued in the writing transaction and delivered only when it commits, so a
    /// rolled-back write notifies nothing; PostgreSQL folds identical ones of one transaction into
    /// one. A tag row never changes without its record's row.
    ///
    /// Only observed profiles notify: `coffer_observed` holds a row per listening connection
    /// (its backend's pid) and profile it observes, and a write notifies for a profile only when
    /// it has one. PostgreSQL makes every notifying transaction's commit wait for the one before
    /// it (a database-wide lock held until the commit is flushed, so notifications queue in commit
    /// order): concurrent writers of an observed profile commit one at a time, and writers of the
    /// others keep committing together.
    ///
    /// Format 3 notified from a PL/pgSQL row trigger, `coffer_items_notify`, so that a write made
    /// with any tool notified too. It cost about 14 % of a one-record delete on the server (the
    /// trigger's call and its query of `coffer_observed` at every row, and the function's
    /// compilation on every new server connection), which made that delete slower than Askar's;
    /// the migration to format 4 drops it. Rows written outside this code (psql, other tools) now
    /// notify no one: an observation sees them at its next expiry check.
    static let notifySchema = [
        """
        CREATE TABLE IF NOT EXISTS coffer_observed(
            listener integer NOT NULL,
            profile bigint NOT NULL,
            PRIMARY KEY (profile, listener)
        )
        """,
        "DROP TRIGGER IF EXISTS coffer_items_notify ON coffer_items",
        "DROP FUNCTION IF EXISTS coffer_items_notify()",
    ]

    /// Format 5: `coffer_tag_multi` marks, per profile, the tag names (blind) that some record
    /// holds several values of, as SQLite's `tag_multi` does. A string range over a plaintext tag
    /// is then answered from the tag index's range alone (both bounds on one tag row) while the
    /// tag's name is unmarked; that is exact only while no record holds two values of it (with
    /// values 5 and 50, `$gte 10` and `$lt 20` each hold, and no one value is in between). A
    /// reader reads the mark in the same statement as the range (one snapshot) and, when it is
    /// there, runs the query again with one condition per bound.
    ///
    /// Every statement of the wallet that inserts tag rows marks, in a CTE of its own
    /// (``markSQL(profile:pairs:written:)``), the names it writes twice for one record; the
    /// storage seam's `insertTags`/`bulkInsert` leave it to their caller's `markMultiValued`, as
    /// on SQLite. A statement trigger on the tag table did the same for any writer, and cost
    /// 15–25 % of a one-record insert (measured: 993 and 946 inserts a second against 1,323 and
    /// 1,128 without it, N = 20,000), so rows written outside Coffer are not marked (the check
    /// reports them, `multiValuedUnmarked`). Marks are only ever added (a rotation leaves the
    /// old names' marks, which no query names any more) until the profile is removed. The
    /// migration marks the names the rows already there hold several values of (encrypted tags'
    /// names too: the server cannot tell them apart, and no range reads them).
    static let multiValuedSchema = [
        """
        CREATE TABLE IF NOT EXISTS coffer_tag_multi(
            profile bigint NOT NULL,
            name bigint NOT NULL,
            PRIMARY KEY (profile, name)
        )
        """,
        """
        INSERT INTO coffer_tag_multi(profile, name)
        SELECT DISTINCT profile, name FROM (SELECT profile, name FROM coffer_tags GROUP BY item, profile, name HAVING count(*) > 1) m
        ON CONFLICT DO NOTHING
        """,
    ]

    /// A CTE `marked` that marks in `coffer_tag_multi` (``multiValuedSchema``) the tag names
    /// `pairs` names more than once for one record: `pairs` is a query of the tag rows a
    /// statement writes, as columns `k` (which record; any value that tells them apart) and `n`
    /// (the name). Only when the CTE `written` has a row (the write happened); PostgreSQL runs a
    /// data-modifying CTE whether or not the statement reads it. `profile` is an SQL expression.
    static func markSQL(profile: String, pairs: String, written: String = "item") -> String {
        """
        marked AS (
            INSERT INTO coffer_tag_multi(profile, name)
            SELECT DISTINCT (\(profile))::bigint, m.n FROM (\(pairs)) m WHERE EXISTS (SELECT 1 FROM \(written))
            GROUP BY m.k, m.n HAVING count(*) > 1
            ON CONFLICT DO NOTHING
        )
        """
    }

    /// ``markSQL(profile:pairs:written:)`` over the rows a CTE `tagged` inserted into
    /// `coffer_tags` (`RETURNING item, name`), when they are every tag row of their records.
    static func markTaggedSQL(profile: String) -> String {
        markSQL(profile: profile, pairs: "SELECT item AS k, name AS n FROM tagged", written: "tagged")
    }

    /// A CTE `notified` that notifies ``notifyChannel`` once with `"PROFILE TYPE"` when the
    /// statement's data-modifying CTE `written` returned a row and `profile` is observed: the
    /// one-record writes' form (`profile` and `type` are SQL expressions, parameters of a prepared
    /// statement). PostgreSQL runs a plain SELECT CTE only when the statement reads it, so the
    /// statement must read `notified` (`(SELECT count(*) FROM notified)`), at least whenever
    /// `written` has a row.
    static func notifyOneSQL(profile: String, type: String, written: String = "item") -> String {
        """
        notified AS (
            SELECT pg_notify('\(notifyChannel)', (\(profile))::text || ' ' || (\(type))::text) FROM coffer_observed
            WHERE profile = (\(profile)) AND EXISTS (SELECT 1 FROM \(written)) LIMIT 1
        )
        """
    }

    /// A CTE `notified` that notifies ``notifyChannel`` once per distinct `type` of the relation
    /// `types` (a CTE's name, or a parenthesized query with a `type` column) when `profile` (an
    /// SQL expression) is observed: the form of writes of many records. As with
    /// ``notifyOneSQL(profile:type:written:)``, the statement must read `notified`.
    static func notifySQL(profile: String, types: String) -> String {
        """
        notified AS (
            SELECT pg_notify('\(notifyChannel)', (\(profile))::text || ' ' || k.type::text)
            FROM (SELECT DISTINCT type FROM \(types) AS t) k
            WHERE EXISTS (SELECT 1 FROM coffer_observed WHERE profile = (\(profile)))
        )
        """
    }

    /// Notifies, in the transaction open on `connection`, once per type of the records an import
    /// staged in `coffer_import` (PostgresImport.swift) for `profile`, when it is observed.
    static func notifyStaged(_ connection: PostgresConnection, profile: Int64) async throws {
        try await drain(
            PostgresQuery(
                unsafeSQL: """
                    WITH \(notifySQL(profile: String(profile), types: "(SELECT a AS type FROM coffer_import WHERE c IS NOT NULL)"))
                    SELECT count(*) FROM notified
                    """), on: connection)
    }

    /// Runs `query` on `connection` and reads every row it returns. A statement that returns
    /// rows reports an error met while it runs (a duplicate key, a conflict) in its row stream,
    /// which a caller that reads no row never sees: the transaction would then be left aborted
    /// and its COMMIT roll back without an error.
    static func drain(_ query: PostgresQuery, on connection: PostgresConnection) async throws {
        for try await _ in try await connection.send(query, logger: logger) {}
    }

    // MARK: Profiles

    struct ProfileRow: Sendable {
        let number: Int64
        let kdf: Data
        let keys: Data
        /// How many times the profile's own key was rotated (``ProfileGate``).
        let generation: Int64
    }

    func profile(named name: String) async throws -> ProfileRow? {
        try await withConnection { connection in
            let rows = try await connection.send(
                "SELECT number, kdf, keys, generation FROM coffer_profiles WHERE name = \(name)", logger: Self.logger)
            for try await (number, kdf, keys, generation) in rows.decode((Int64, Data, Data, Int64).self) {
                return ProfileRow(number: number, kdf: kdf, keys: keys, generation: generation)
            }
            return nil
        }
    }

    func profileNames() async throws -> [String] {
        try await withConnection { connection in
            var names = [String]()
            let rows = try await connection.send(
                "SELECT name FROM coffer_profiles ORDER BY name <> 'default', name", logger: Self.logger)
            for try await name in rows.decode(String.self) { names.append(name) }
            return names
        }
    }

    /// Adds profile `name` under the next number (the default profile is number 0); nil
    /// when it exists. `seal` gives its sealed key for the number it gets.
    func addProfile(name: String, kdf: Data, seal: @Sendable @escaping (Int64) throws -> Data) async throws -> Int64? {
        try await transaction { connection in
            try await connection.send("SELECT pg_advisory_xact_lock(\(Self.migrationLock))", logger: Self.logger)
            return try await addProfile(on: connection, name: name, kdf: kdf, seal: seal)
        }
    }

    /// Removes profile `name`, its records and their tags, in one transaction; false when
    /// there is no such profile.
    func removeProfile(name: String) async throws -> Bool {
        try await transaction { connection in
            try await connection.send("SELECT pg_advisory_xact_lock(\(Self.migrationLock))", logger: Self.logger)
            var number: Int64?
            for try await n in try await connection.send(
                "DELETE FROM coffer_profiles WHERE name = \(name) RETURNING number", logger: Self.logger
            ).decode(Int64.self) {
                number = n
            }
            guard let number else { return false }
            try await connection.send("DELETE FROM coffer_tags WHERE profile = \(number)", logger: Self.logger)
            try await connection.send("DELETE FROM coffer_tag_multi WHERE profile = \(number)", logger: Self.logger)
            // Observers of the profile hear of every type it held.
            try await Self.drain(
                PostgresQuery(
                    unsafeSQL: """
                        WITH item AS (DELETE FROM coffer_items WHERE profile = \(number) RETURNING type),
                        \(Self.notifySQL(profile: String(number), types: "item"))
                        SELECT (SELECT count(*) FROM item), (SELECT count(*) FROM notified)
                        """), on: connection)
            return true
        }
    }

    /// Whether profile `number` is still in the catalogue under `name` (a removed profile's
    /// open wallets write nothing more).
    func profileExists(number: Int64, name: String) async throws -> Bool {
        try await withConnection { connection in
            for try await _ in try await connection.send(
                "SELECT 1 FROM coffer_profiles WHERE number = \(number) AND name = \(name)", logger: Self.logger
            ).decode(Int.self) {
                return true
            }
            return false
        }
    }

    // MARK: Records

    /// Binds a record's tag rows as four parallel arrays (`unnest` makes them rows).
    static func tagArrays(_ tags: [PostgresTagRow]) -> (names: [Int64], values: [ByteBuffer], numbered: [Bool], numbers: [Double]) {
        (
            tags.map(\.name), tags.map { ByteBuffer(bytes: $0.value) }, tags.map { $0.number != nil },
            tags.map { $0.number ?? 0 }
        )
    }

    /// Inserts a record and its tag rows in one statement (one round trip); nil when a record
    /// of this type and id blind exists (live or expired: the caller decides).
    /// - Throws: what ``gateClosed(_:)`` throws when the profile's gate refuses the write.
    func insert(gate: ProfileGate, type: Int64, idBlind: Data, sealed: Data, expiry: Int64?, tags: [PostgresTagRow]) async throws
        -> Int64?
    {
        let (names, values, numbered, numbers) = Self.tagArrays(tags)
        let profile = gate.number
        let (opened, id) = try await withConnection { connection in
            let rows = try await connection.send(
                """
                WITH \(unescaped: gate.sql), item AS (
                    INSERT INTO coffer_items(profile, type, name, value, expiry)
                    SELECT \(profile)::bigint, \(type)::bigint, \(idBlind)::bytea, \(sealed)::bytea, \(expiry)::bigint FROM g
                    ON CONFLICT (profile, type, name) DO NOTHING RETURNING id
                ), tagged AS (
                    INSERT INTO coffer_tags(item, profile, name, value, num)
                    SELECT item.id, \(profile), t.n, t.v, CASE WHEN t.h THEN t.x END
                    FROM item, unnest(\(names)::bigint[], \(values)::bytea[], \(numbered)::boolean[], \(numbers)::double precision[]) AS t(n, v, h, x)
                    RETURNING item, name
                ), \(unescaped: Self.markTaggedSQL(profile: String(profile))),
                \(unescaped: Self.notifyOneSQL(profile: String(profile), type: String(type)))
                SELECT (SELECT count(*) FROM g), (SELECT id FROM item), (SELECT count(*) FROM notified)
                """, logger: Self.logger)
            for try await row in rows.decode((Int64, Int64?, Int64).self) { return (row.0 > 0, row.1) }
            return (false, nil)
        }
        guard opened else { throw try await gateClosed(gate) }
        return id
    }

    /// Inserts many records and their tags in one statement (multi-row `unnest`): a batch of
    /// an import. Returns how many were inserted (records already there are skipped).
    func insertMany(gate: ProfileGate, records: [(type: Int64, idBlind: Data, sealed: Data, expiry: Int64?, tags: [PostgresTagRow])])
        async throws -> Int
    {
        guard !records.isEmpty else { return 0 }
        let profile = gate.number
        let types = records.map(\.type)
        let ids = records.map { ByteBuffer(bytes: $0.idBlind) }
        let boxes = records.map { ByteBuffer(bytes: $0.sealed) }
        let expiring = records.map { $0.expiry != nil }
        let expiries = records.map { $0.expiry ?? 0 }
        var ordinals = [Int64]()
        var tagRows = [PostgresTagRow]()
        for (i, record) in records.enumerated() {
            for tag in record.tags {
                ordinals.append(Int64(i + 1))
                tagRows.append(tag)
            }
        }
        let (names, values, numbered, numbers) = Self.tagArrays(tagRows)
        let tagOrdinals = ordinals
        let (opened, inserted) = try await withConnection { connection in
            let rows = try await connection.send(
                """
                WITH \(unescaped: gate.sql), input AS (
                    SELECT * FROM unnest(\(types)::bigint[], \(ids)::bytea[], \(boxes)::bytea[], \(expiring)::boolean[], \(expiries)::bigint[])
                        WITH ORDINALITY AS r(type, name, value, e, expiry, ord)
                ), item AS (
                    INSERT INTO coffer_items(profile, type, name, value, expiry)
                    SELECT \(profile), type, name, value, CASE WHEN e THEN expiry END FROM input WHERE EXISTS (SELECT 1 FROM g) ORDER BY ord
                    ON CONFLICT (profile, type, name) DO NOTHING RETURNING id, type, name
                ), tagged AS (
                    INSERT INTO coffer_tags(item, profile, name, value, num)
                    SELECT item.id, \(profile), t.n, t.v, CASE WHEN t.h THEN t.x END
                    FROM unnest(\(tagOrdinals)::bigint[], \(names)::bigint[], \(values)::bytea[], \(numbered)::boolean[], \(numbers)::double precision[]) AS t(o, n, v, h, x)
                    JOIN input ON input.ord = t.o
                    JOIN item ON item.type = input.type AND item.name = input.name
                    RETURNING item, name
                ), \(unescaped: Self.markTaggedSQL(profile: String(profile))),
                \(unescaped: Self.notifySQL(profile: String(profile), types: "item"))
                SELECT (SELECT count(*) FROM g), (SELECT count(*) FROM item), (SELECT count(*) FROM notified)
                """, logger: Self.logger)
            for try await row in rows.decode((Int64, Int64, Int64).self) { return (row.0 > 0, Int(row.1)) }
            return (false, 0)
        }
        guard opened else { throw try await gateClosed(gate) }
        return inserted
    }

    /// Refreshes the planner's statistics of the wallet's tables (after an import: until
    /// autovacuum gets to them, a table that grew from nothing is planned as if it held one row,
    /// and tag-driven searches then walk the type's records once per candidate).
    /// Best effort: it runs after the records are committed, so its failure (a dropped
    /// connection, a closed `withConnection` view) must not report the committed call as failed.
    func analyze() async {
        _ = try? await withConnection { connection in
            try await connection.send("ANALYZE coffer_items, coffer_tags", logger: Self.logger)
        }
    }

    /// The row of a record (live or expired), or nil.
    /// The row of `type` and `idBlind` in `gate`'s profile, expired or not; nil when there is none.
    /// A miss also reads the profile's generation (in the same statement): when the profile is
    /// gone, or its key was rotated since `gate` was read, it throws what ``gateClosed(_:)`` says
    /// instead of reporting the record absent (every blind changed with the key).
    func locate(gate: ProfileGate, type: Int64, idBlind: Data) async throws -> PostgresItemRow? {
        let statement = Locate(profile: gate.number, type: type, name: idBlind)
        let prepared = settings.preparedStatements
        let found = try await withConnection { connection in
            try await Self.rows(statement, on: connection, prepared: prepared, gauge: gauge).first
        }
        guard let (generation, id, value, expiry, version) = found else { throw Self.closedError(gate, current: nil) }
        guard let id, let value, let version else {
            if generation != gate.generation { throw Self.closedError(gate, current: generation) }
            return nil
        }
        return PostgresItemRow(rowid: id, idBlind: idBlind, sealed: value, expiry: expiry, version: version)
    }

    /// Replaces a record's box (and, when `tags` is given, its tag rows) in one statement,
    /// only if the row is still at `version`: false when another writer changed it first
    /// (the caller reads again and retries). The tag rows go by the row's known id, not
    /// `IN (SELECT … FROM item)`, which made updates about 4× slower than Askar's (measured at
    /// N=200; a semi-join over a data-modifying CTE the planner cannot size).
    func rewrite(gate: ProfileGate, row: PostgresItemRow, sealed: Data, tags: [PostgresTagRow]?) async throws -> Bool {
        let replaceTags = tags != nil
        let (names, values, numbered, numbers) = Self.tagArrays(tags ?? [])
        let profile = gate.number
        let (opened, written) = try await withConnection { connection in
            let rows = try await connection.send(
                """
                WITH \(unescaped: gate.sql), item AS (
                    UPDATE coffer_items SET value = \(sealed), version = version + 1
                    WHERE id = \(row.rowid) AND profile = \(profile) AND version = \(row.version) AND EXISTS (SELECT 1 FROM g)
                    RETURNING id, type
                ), dropped AS (
                    DELETE FROM coffer_tags WHERE \(replaceTags) AND item = \(row.rowid) AND EXISTS (SELECT 1 FROM item)
                ), tagged AS (
                    INSERT INTO coffer_tags(item, profile, name, value, num)
                    SELECT item.id, \(profile), t.n, t.v, CASE WHEN t.h THEN t.x END
                    FROM item, unnest(\(names)::bigint[], \(values)::bytea[], \(numbered)::boolean[], \(numbers)::double precision[]) AS t(n, v, h, x)
                    RETURNING item, name
                ), \(unescaped: Self.markTaggedSQL(profile: String(profile))),
                \(unescaped: Self.notifySQL(profile: String(profile), types: "item"))
                SELECT (SELECT count(*) FROM g), (SELECT count(*) FROM item), (SELECT count(*) FROM notified)
                """, logger: Self.logger)
            for try await row in rows.decode((Int64, Int64, Int64).self) { return (row.0 > 0, row.1 == 1) }
            return (false, false)
        }
        guard opened else { throw try await gateClosed(gate) }
        return written
    }

    /// Replaces the box and the tag rows of a record that has no expiry, in one statement (one
    /// round trip, where ``locate(profile:type:idBlind:)`` then ``rewrite(profile:row:sealed:tags:)``
    /// take two): `sealed` is the whole new box, sealed for no expiry. False when nothing was
    /// written: there is no such record, it has an expiry (live or not), or another writer changed
    /// it after this statement's snapshot; the caller then takes the read-modify-write path, which
    /// tells those apart.
    ///
    /// The row is updated only at the version the statement's own snapshot read (the scalar
    /// subquery, evaluated with that snapshot, also when the update re-checks a row another
    /// writer changed). Under READ COMMITTED a writer that committed after the snapshot makes that
    /// re-check fail (the row's version moved on), so nothing is written: the tag delete, which
    /// sees the snapshot's tag rows only, never runs against a row whose newer tag rows it cannot
    /// see. Every writer of a record's tag rows updates its item row in the same transaction, so a
    /// changed tag set always shows as a changed version. (A join with a `cur` CTE expresses the
    /// same; PostgreSQL took 0.35 ms to plan it, against 0.11 ms for the subquery, at every call.)
    ///
    /// Only the tag rows that change are written: a row of the old set that the new one also
    /// holds (same name, value and number) stays, the others go, and only the new set's missing
    /// rows are inserted. Both checks read the statement's snapshot, which is the record's current
    /// tag set whenever the update wrote (see above), and both find the record's rows through the
    /// tag table's item index whatever the planner's statistics say (an anti-join of the new rows
    /// with the whole tag table was planned as a scan of all of it when the statistics were
    /// stale). A replace that gives the record's tags again (Askar's `replace` takes them every
    /// time) then writes the item row alone, not every tag row and its index entries twice.
    func replaceUnexpiring(gate: ProfileGate, type: Int64, idBlind: Data, sealed: Data, tags: [PostgresTagRow]) async throws -> Bool {
        let (names, values, numbered, numbers) = Self.tagArrays(tags)
        let statement = ReplaceUnexpiring(
            profile: gate.number, type: type, name: idBlind, sealed: sealed, names: names, values: values, numbered: numbered,
            numbers: numbers, generation: gate.generation)
        let prepared = settings.preparedStatements
        let row = try await withConnection { connection in
            try await Self.rows(statement, on: connection, prepared: prepared, gauge: gauge).first
        }
        guard let row, row.0 > 0 else { throw try await gateClosed(gate) }
        return row.1 == 1
    }

    /// Deletes a live record and its tag rows in one statement; whether a row went. The tag
    /// rows go by `= ANY(ARRAY(…))`, which the tag index serves (an `IN (SELECT …)` over the
    /// deleted rows made deletes about 5× slower).
    ///
    /// A delete takes no gate (``ProfileGate``): it seals nothing, so it cannot leave a record
    /// under a key the profile no longer has. One by a wallet that opened the profile before a
    /// rotation finds no row (every blind changed; a row the rotation holds is re-checked once it
    /// commits), and only then is the profile's generation read, to refuse it as the gate would.
    func delete(gate: ProfileGate, type: Int64, idBlind: Data, liveAt now: Int64) async throws -> Bool {
        let statement = DeleteLive(profile: gate.number, type: type, name: idBlind, now: now)
        let prepared = settings.preparedStatements
        let deleted = try await withConnection { connection in
            try await Self.rows(statement, on: connection, prepared: prepared, gauge: gauge).first?.0
        }
        if let deleted, deleted > 0 { return true }
        if let error = try await staleGate(gate) { throw error }
        return false
    }

    /// After a write that found nothing: the error the gate would have given when the profile
    /// is gone or its key was rotated since `gate` was read; nil when it is as the writer knew it.
    func staleGate(_ gate: ProfileGate) async throws -> WalletError? {
        let current = try await withConnection { connection in try await Self.generation(of: gate, on: connection) }
        return current == gate.generation ? nil : Self.closedError(gate, current: current)
    }

    /// After a read that also read the profile's generation (`current`, nil when the profile is
    /// gone) in its own snapshot: throws what ``gateClosed(_:)`` says when the profile is gone or
    /// its key was rotated since `gate` was read (a stale reader's blinds match no row, so its
    /// empty answer would be wrong); returns when the profile is as the reader knew it.
    static func confirm(_ gate: ProfileGate, current: Int64?) throws {
        if current != gate.generation { throw closedError(gate, current: current) }
    }

    /// Deletes a live credential record, its tag rows and the credential's signature (a reserved
    /// record of type `signatureType` and id blind `signatureIdBlind`, which has no tag rows) in
    /// one statement; whether the credential's row went (the signature goes only with it).
    func deleteCredential(
        gate: ProfileGate, type: Int64, idBlind: Data, signatureType: Int64, signatureIdBlind: Data, liveAt now: Int64
    ) async throws -> Bool {
        let statement = DeleteCredential(
            profile: gate.number, type: type, name: idBlind, now: now, signatureType: signatureType, signatureName: signatureIdBlind)
        let prepared = settings.preparedStatements
        // No gate, as ``delete(gate:type:idBlind:liveAt:)`` says.
        let deleted = try await withConnection { connection in
            try await Self.rows(statement, on: connection, prepared: prepared, gauge: gauge).first?.0
        }
        if let deleted, deleted > 0 { return true }
        if let error = try await staleGate(gate) { throw error }
        return false
    }

    /// Deletes an expired record of this type and id (so a new one may take its place);
    /// whether there was one.
    func deleteExpired(gate: ProfileGate, type: Int64, idBlind: Data, now: Int64) async throws -> Bool {
        var binds = PostgresBindings()
        binds.append(gate.number)
        binds.append(type)
        try binds.append(idBlind)
        binds.append(now)
        binds.append(gate.generation)
        let query = PostgresQuery(
            unsafeSQL: """
                WITH \(ProfileGate.preparedSQL(number: "$1", generation: "$5")), item AS (
                    DELETE FROM coffer_items WHERE profile = $1 AND type = $2 AND name = $3 AND expiry <= $4 AND EXISTS (SELECT 1 FROM g)
                    RETURNING id
                ), dropped AS (
                    DELETE FROM coffer_tags WHERE item = ANY(ARRAY(SELECT id FROM item))
                ), \(Self.notifyOneSQL(profile: "$1", type: "$2"))
                SELECT (SELECT count(*) FROM g), (SELECT count(*) FROM item), (SELECT count(*) FROM notified)
                """, binds: binds)
        let (opened, deleted) = try await withConnection { connection in
            for try await row in try await connection.send(query, logger: Self.logger).decode((Int64, Int64, Int64).self) {
                return (row.0 > 0, row.1 > 0)
            }
            return (false, false)
        }
        guard opened else { throw try await gateClosed(gate) }
        return deleted
    }

    /// The error of a write the profile's gate refused (``ProfileGate``): the profile is gone
    /// (``WalletError/walletMissing(path:)``), or its key was rotated since `gate` was read
    /// (``WalletError/wrongKey(_:)``). Nothing of the write was kept.
    func gateClosed(_ gate: ProfileGate) async throws -> WalletError {
        try await withConnection { connection in try await Self.gateClosed(gate, on: connection) }
    }

    /// ``gateClosed(_:)`` read on `connection`.
    static func gateClosed(_ gate: ProfileGate, on connection: PostgresConnection) async throws -> WalletError {
        closedError(gate, current: try await generation(of: gate, on: connection))
    }

    /// The generation of `gate`'s profile now, or nil when the profile is gone.
    static func generation(of gate: ProfileGate, on connection: PostgresConnection) async throws -> Int64? {
        for try await generation in try await connection.send(
            "SELECT generation FROM coffer_profiles WHERE number = \(gate.number)", logger: logger
        ).decode(Int64.self) {
            return generation
        }
        return nil
    }

    /// What a refused write reports when the profile's generation is `current` (nil: removed).
    static func closedError(_ gate: ProfileGate, current: Int64?) -> WalletError {
        guard current != nil else { return .walletMissing(path: gate.label) }
        return .wrongKey(
            "the key of \(gate.label) was rotated (by another process, or another PostgresWallet) after this one opened it, so records sealed here would no longer open; nothing was written: open the profile again with its current key"
        )
    }

    /// Takes the profile's gate for the rest of the transaction open on `connection`: its
    /// catalogue row locked `FOR KEY SHARE` (every write of a transaction, an import) or, with
    /// `exclusive`, `FOR UPDATE` (a rekey or rotation: it waits for the writes holding the gate,
    /// and the writes after it wait for it). Throws what ``gateClosed(_:)`` says when the row is
    /// gone or at another generation.
    static func holdGate(_ gate: ProfileGate, on connection: PostgresConnection, exclusive: Bool = false) async throws {
        let lock = exclusive ? "FOR UPDATE" : "FOR KEY SHARE"
        let query = PostgresQuery(
            unsafeSQL: "SELECT 1 FROM coffer_profiles WHERE number = \(gate.number) AND generation = \(gate.generation) \(lock)")
        for try await _ in try await connection.send(query, logger: logger).decode(Int.self) { return }
        throw try await gateClosed(gate, on: connection)
    }
}

// MARK: Readying connections

extension PostgresStore {
    /// Readies up to `count` of the pool's connections for the record calls, so that none of
    /// them pays its statements' first run on a caller's clock: on each, the point read, the
    /// one-statement replace and the delete run once matching no row (profile number -1, which
    /// no database holds), so the server has parsed and planned them and loaded the catalogue
    /// entries they use, and (with ``PostgresSettings/preparedStatements`` on) the connection
    /// holds them prepared. On this machine a replace's first run on a new connection took about
    /// 2.4 ms against 0.6 ms for its next ones; a whole pool doing that at once is the tail of
    /// its first requests.
    ///
    /// The `count` leases are held at once (the pool opens what it lacks, up to its maximum), so
    /// each is a different connection; one readied before is passed over. Only while no other
    /// call of the process uses the pool (readying holds its connections until all arrive, which
    /// would keep busy callers waiting), and best effort within `bound` (at most 2 s): a
    /// connection the pool cannot give by then is left to its first call, and a statement that
    /// fails leaves its connection unreadied. Nothing is written.
    func warm(connections count: Int, within bound: Duration) async {
        let count = min(count, settings.maxConnections)
        guard count > 0, pinned == nil, gauge.warmedCount < count, gauge.isIdle else { return }
        let bound = min(bound, .seconds(2))
        let arrivals = PostgresArrivals(expected: count)
        let gauge = self.gauge
        let prepared = settings.preparedStatements
        await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<count {
                group.addTask {
                    _ = try? await self.withConnection { connection in
                        if gauge.claim(connection) {
                            do { try await Self.ready(connection, prepared: prepared, gauge: gauge) } catch { gauge.unclaim(connection) }
                        }
                        await arrivals.arrive()
                    }
                    return true
                }
            }
            group.addTask {
                try? await Task.sleep(for: bound)
                return false
            }
            var done = 0
            for await worker in group {
                if worker {
                    done += 1
                    if done == count { group.cancelAll() } // every lease came back: stop the timer
                } else {
                    arrivals.open() // time is up: let the held ones go, and stop waiting for the others
                    group.cancelAll()
                }
            }
        }
    }

    /// Runs the record calls' statements once on `connection`, matching no row.
    static func ready(_ connection: PostgresConnection, prepared: Bool, gauge: PostgresLeaseGauge) async throws {
        let none: Int64 = -1
        _ = try await rows(Locate(profile: none, type: 0, name: Data()), on: connection, prepared: prepared, gauge: gauge)
        _ = try await rows(
            ReplaceUnexpiring(
                profile: none, type: 0, name: Data(), sealed: Data(), names: [], values: [], numbered: [], numbers: [], generation: 0),
            on: connection, prepared: prepared, gauge: gauge)
        _ = try await rows(DeleteLive(profile: none, type: 0, name: Data(), now: 0), on: connection, prepared: prepared, gauge: gauge)
    }
}

/// Tasks that wait for one another: each ``arrive()`` returns once `expected` have arrived,
/// or at once after ``open()``.
final class PostgresArrivals: Sendable {
    private struct State {
        var arrived = 0
        var opened = false
        var waiting = [CheckedContinuation<Void, Never>]()
    }
    private let expected: Int
    private let state = Locked(State())

    init(expected: Int) { self.expected = expected }

    /// Counts this task in and waits for the others (or ``open()``).
    func arrive() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let released: [CheckedContinuation<Void, Never>] = state.withLock { state in
                state.arrived += 1
                if state.opened || state.arrived >= expected {
                    state.opened = true
                    defer { state.waiting = [] }
                    return state.waiting + [continuation]
                }
                state.waiting.append(continuation)
                return []
            }
            for waiter in released { waiter.resume() }
        }
    }

    /// Lets every waiting task go, and every later one through at once.
    func open() {
        let released = state.withLock { state in
            state.opened = true
            defer { state.waiting = [] }
            return state.waiting
        }
        for waiter in released { waiter.resume() }
    }
}

// MARK: Prepared statements

/// The statements every record read, replace and delete runs: prepared once per connection when
/// ``PostgresSettings/preparedStatements`` is on (the server then parses and plans each once per
/// connection; unnamed, it does so at every call, which took longer than running them: 0.11 ms
/// to plan the replace), else sent unnamed with the same text and bindings.
extension PostgresStore {
    /// A statement prepared by name that the server refused as missing or already there, whose
    /// client now sends statements unnamed (``PostgresLeaseGauge/stopPreparing()``): a call outside
    /// a transaction runs again (nothing of it ran); inside one, the transaction is lost and the
    /// caller is told to run it again.
    struct PoolerRefusedPreparedStatement: Error {
        /// The server's SQLSTATE: 42P05 or 26000.
        let state: String
    }

    /// The rows `statement` gives on `connection`, all read before returning; a statement the
    /// server refuses by name (``isPoolerRefusal(_:)``) stops `gauge`'s client preparing and
    /// throws ``PoolerRefusedPreparedStatement``; any other error the server raised for it stops
    /// `connection` preparing.
    static func rows<S: PostgresPreparedStatement>(
        _ statement: S, on connection: PostgresConnection, prepared: Bool, gauge: PostgresLeaseGauge
    ) async throws -> [S.Row] {
        var out = [S.Row]()
        guard prepared && gauge.preparesStatements(on: connection) else {
            let query = PostgresQuery(unsafeSQL: S.sql, binds: try statement.makeBindings())
            for try await row in try await connection.send(query, logger: logger) { out.append(try statement.decodeRow(row)) }
            return out
        }
        do {
            for try await row in try await connection.send(statement, logger: logger) { out.append(row) }
            return out
        } catch let error as PSQLError where isPoolerRefusal(error) {
            gauge.stopPreparing()
            throw PoolerRefusedPreparedStatement(state: sqlState(error) ?? "")
        } catch let error as PSQLError where sqlState(error) != nil {
            // The server failed it, perhaps while preparing it: that connection sends it unnamed
            // from now on (see ``PostgresLeaseGauge/stopPreparing(on:)``).
            gauge.stopPreparing(on: connection)
            throw error
        }
    }

    /// The count of a compiled count statement in one of the two shapes the query compiler writes
    /// most (every live record of a type; the records of one tag equality), as a prepared statement:
    /// planned once per connection, where a count sent unnamed was planned at every call. nil
    /// when `statement` is of another shape (the caller sends it unnamed). The profile's key
    /// generation comes in the same row, as ``PostgresRows/gatedCount(_:singleValued:)`` reads it.
    func preparedCount(_ statement: CompiledStatement) async throws -> (generation: Int64?, count: Int64)? {
        let prepared = settings.preparedStatements
        func run<S: PreparedCount>(_ count: S) async throws -> (generation: Int64?, count: Int64) {
            let row = try await withConnection { connection in
                try await Self.rows(count, on: connection, prepared: prepared, gauge: gauge).first
            }
            return (row?.0, row?.1 ?? 0)
        }
        switch statement.sql {
        case CountOfType.countSQL: return try await run(CountOfType(arguments: statement.arguments))
        case CountOfTag.countSQL: return try await run(CountOfTag(arguments: statement.arguments))
        default: return nil
        }
    }

    /// A prepared count: `countSQL` is the query compiler's text for the shape, word for word
    /// (``preparedCount(_:)`` sends a statement through it only when its text is that one, so a
    /// change of the compiler's text sends the count unnamed rather than counting something else),
    /// and its first argument is the profile's number, which the key generation's read takes too.
    protocol PreparedCount: PostgresPreparedStatement where Row == (Int64?, Int64) {
        static var countSQL: String { get }
        var arguments: [StorageValue] { get }
    }

    /// Every live record of a type (`count_all`'s shape).
    struct CountOfType: PreparedCount {
        static let name = "coffer_count_type_v1"
        static let countSQL =
            "SELECT COUNT(*) FROM coffer_items i WHERE i.profile = $1 AND i.type = $2 AND (i.expiry IS NULL OR i.expiry > $3)"
        static let sql = PostgresStore.generationCount(countSQL)
        let arguments: [StorageValue]
    }

    /// The live records of one tag equality, by the tag index (`count_tag_eq`'s shape).
    struct CountOfTag: PreparedCount {
        static let name = "coffer_count_tag_v1"
        static let countSQL =
            "SELECT COUNT(*) FROM coffer_tags d  JOIN coffer_items i ON i.id = d.item WHERE d.profile = $1 AND d.name = $2"
            + " AND substring(d.value from 1 for \(indexedPrefix)) = $3 AND d.value = $4 AND i.type = $5"
            + " AND (i.expiry IS NULL OR i.expiry > $6)"
        static let sql = PostgresStore.generationCount(countSQL)
        let arguments: [StorageValue]
    }

    /// `count` (`SELECT COUNT(*) …` whose `$1` is the profile's number) with the profile's key
    /// generation read first in the same row.
    static func generationCount(_ count: String) -> String {
        "SELECT (SELECT generation FROM coffer_profiles WHERE number = $1), " + count.dropFirst("SELECT ".count)
    }

    /// The row of a record (live or expired).
    struct Locate: PostgresPreparedStatement {
        static let name = "coffer_locate_v2"
        // The profile's generation comes with the row, or without one (a miss): a reader whose
        // key was rotated away finds no row, and learns why in the same round trip.
        static let sql = """
            SELECT p.generation, i.id, i.value, i.expiry, i.version FROM coffer_profiles p
            LEFT JOIN coffer_items i ON i.profile = p.number AND i.type = $2 AND i.name = $3
            WHERE p.number = $1
            """
        typealias Row = (Int64, Int64?, Data?, Int64?, Int64?)
        let profile: Int64
        let type: Int64
        let name: Data

        func makeBindings() throws -> PostgresBindings {
            var binds = PostgresBindings()
            binds.append(profile)
            binds.append(type)
            try binds.append(name)
            return binds
        }

        func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Row.self) }
    }

    /// ``PostgresStore/replaceUnexpiring(profile:type:idBlind:sealed:tags:)``: how many rows it wrote (0 or 1).
    struct ReplaceUnexpiring: PostgresPreparedStatement {
        static let name = "coffer_replace_unexpiring_v5"
        static let sql = """
            WITH \(ProfileGate.preparedSQL(number: "$1", generation: "$9")), item AS (
                UPDATE coffer_items SET value = $4, version = version + 1
                WHERE profile = $1 AND type = $2 AND name = $3 AND expiry IS NULL
                AND version = (SELECT version FROM coffer_items WHERE profile = $1 AND type = $2 AND name = $3)
                AND EXISTS (SELECT 1 FROM g)
                RETURNING id
            ), wanted AS (
                SELECT t.n, t.v, CASE WHEN t.h THEN t.x END AS x
                FROM unnest($5::bigint[], $6::bytea[], $7::boolean[], $8::double precision[]) AS t(n, v, h, x)
            ), old AS (
                SELECT r.name, r.value, r.num FROM coffer_tags r WHERE r.item = ANY(ARRAY(SELECT id FROM item))
            ), dropped AS (
                DELETE FROM coffer_tags r WHERE r.item = ANY(ARRAY(SELECT id FROM item))
                AND NOT EXISTS (SELECT 1 FROM wanted w WHERE w.n = r.name AND w.v = r.value AND w.x IS NOT DISTINCT FROM r.num)
            ), tagged AS (
                INSERT INTO coffer_tags(item, profile, name, value, num)
                SELECT item.id, $1, w.n, w.v, w.x FROM item, wanted w
                WHERE NOT EXISTS (SELECT 1 FROM old o WHERE o.name = w.n AND o.value = w.v AND o.num IS NOT DISTINCT FROM w.x)
            ), \(PostgresStore.markSQL(profile: "$1", pairs: "SELECT 0 AS k, n FROM wanted")),
            \(PostgresStore.notifyOneSQL(profile: "$1", type: "$2"))
            SELECT (SELECT count(*) FROM g), (SELECT count(*) FROM item), (SELECT count(*) FROM notified)
            """
        /// Whether the gate let the write through, how many rows it wrote, and whether it notified.
        typealias Row = (Int64, Int64, Int64)
        let profile: Int64
        let type: Int64
        let name: Data
        let sealed: Data
        let names: [Int64]
        let values: [ByteBuffer]
        let numbered: [Bool]
        let numbers: [Double]
        let generation: Int64

        func makeBindings() throws -> PostgresBindings {
            var binds = PostgresBindings()
            binds.append(profile)
            binds.append(type)
            try binds.append(name)
            try binds.append(sealed)
            binds.append(names)
            binds.append(values)
            binds.append(numbered)
            binds.append(numbers)
            binds.append(generation)
            return binds
        }

        func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Row.self) }
    }

    /// ``PostgresStore/delete(profile:type:idBlind:liveAt:)``: how many records it deleted (0 or 1).
    /// The tag rows go by `= ANY(ARRAY(…))`, which the tag index serves (an `IN (SELECT …)` over
    /// the deleted rows made deletes about 5× slower).
    /// ``DeleteLive`` for a credential: its signature goes in the same statement.
    struct DeleteCredential: PostgresPreparedStatement {
        static let name = "coffer_delete_credential_v3"
        static let sql = """
            WITH item AS (
                DELETE FROM coffer_items WHERE profile = $1 AND type = $2 AND name = $3 AND (expiry IS NULL OR expiry > $4) RETURNING id
            ), dropped AS (
                DELETE FROM coffer_tags WHERE item = ANY(ARRAY(SELECT id FROM item))
            ), signature AS (
                DELETE FROM coffer_items WHERE profile = $1 AND type = $5 AND name = $6 AND EXISTS (SELECT 1 FROM item)
            ), \(PostgresStore.notifyOneSQL(profile: "$1", type: "$2"))
            SELECT (SELECT count(*) FROM item), (SELECT count(*) FROM notified)
            """
        // The signature's type is reserved, which no observation can name: only the credential's notifies.
        /// How many credentials it deleted (0 or 1), and whether it notified.
        typealias Row = (Int64, Int64)
        let profile: Int64
        let type: Int64
        let name: Data
        let now: Int64
        let signatureType: Int64
        let signatureName: Data

        func makeBindings() throws -> PostgresBindings {
            var binds = PostgresBindings()
            binds.append(profile)
            binds.append(type)
            try binds.append(name)
            binds.append(now)
            binds.append(signatureType)
            try binds.append(signatureName)
            return binds
        }

        func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Row.self) }
    }

    struct DeleteLive: PostgresPreparedStatement {
        static let name = "coffer_delete_live_v4"
        static let sql = """
            WITH item AS (
                DELETE FROM coffer_items WHERE profile = $1 AND type = $2 AND name = $3 AND (expiry IS NULL OR expiry > $4) RETURNING id
            ), dropped AS (
                DELETE FROM coffer_tags WHERE item = ANY(ARRAY(SELECT id FROM item))
            ), \(PostgresStore.notifyOneSQL(profile: "$1", type: "$2"))
            SELECT (SELECT count(*) FROM item), (SELECT count(*) FROM notified)
            """
        /// How many records it deleted (0 or 1), and whether it notified.
        typealias Row = (Int64, Int64)
        let profile: Int64
        let type: Int64
        let name: Data
        let now: Int64

        func makeBindings() throws -> PostgresBindings {
            var binds = PostgresBindings()
            binds.append(profile)
            binds.append(type)
            try binds.append(name)
            binds.append(now)
            return binds
        }

        func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Row.self) }
    }
}

/// A prepared count binds the compiled statement's arguments as they are, and reads one row.
extension PostgresStore.PreparedCount {
    func makeBindings() throws -> PostgresBindings { PostgresRows.bindings(arguments) }
    func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Row.self) }
}
#endif
