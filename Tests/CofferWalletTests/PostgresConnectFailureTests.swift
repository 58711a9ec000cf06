// Why a connection could not be opened, as a call that gets none says it: the server's reason or
// the driver's (TLS refused, a database closed to connections, an unreadable sslrootcert), never
// postgres-nio's placeholder description of its error, and never the password.

#if PostgreSQL
import CofferTestSupport
import Foundation
import PostgresNIO
import Testing

@testable import CofferWallet

extension PostgresWalletTests {
    /// What postgres-nio's `PSQLError` says of itself instead of a reason.
    static let placeholder = "Generic description"

    /// Settings for `database` on the test server that connect once a second at most and never
    /// wait out a pool's lease timeout (a message about the pool would mean the call did).
    static func failingSettings(
        database: String, password: String? = nil, tls: PostgresSettings.TLSMode = .disable, rootCertificates: String? = nil
    ) throws -> PostgresSettings {
        let endpoint = try PostgresTestServer.endpoint()
        return PostgresSettings(
            host: endpoint.host, port: endpoint.port, user: endpoint.user, password: password, database: database, tls: tls,
            connectTimeout: .seconds(1), leaseTimeout: .seconds(300), rootCertificates: rootCertificates)
    }

    @Test("sslmode=require against a server without TLS names TLS and sslmode, with the driver's reason, and never the password")
    func tlsRefusedNamed() async throws {
        let password = "s3cret-Pa55word"
        let settings = try Self.failingSettings(
            database: try PostgresTestServer.makeDatabase("tls-refused"), password: password, tls: .require)
        let message = await Self.storageMessage { _ = try await PostgresWallet.create(settings: settings, key: PostgresTesting.key) }
        guard let message else { return }
        #expect(message.contains("over TLS") && message.contains("sslmode") && message.contains("sslUnsupported"), "\(message)")
        #expect(!message.contains(password), "\(message)")
        #expect(!message.contains(Self.placeholder), "\(message)")
    }

    @Test("a database closed to connections (ALLOW_CONNECTIONS false) is named with the server's message and SQLSTATE 55000")
    func databaseClosedNamed() async throws {
        let database = try PostgresTestServer.makeDatabase("closed-db")
        let admin = try await PostgresWallet.create(settings: try PostgresTesting.settings("closed-admin"), key: PostgresTesting.key)
        defer { admin.close() }
        try await Self.alter(admin, "ALTER DATABASE \(database) ALLOW_CONNECTIONS false")
        let message = await Self.storageMessage {
            _ = try await PostgresWallet.create(settings: try Self.failingSettings(database: database), key: PostgresTesting.key)
        }
        try await Self.alter(admin, "ALTER DATABASE \(database) ALLOW_CONNECTIONS true")
        guard let message else { return }
        #expect(message.contains("not currently accepting connections") && message.contains("SQLSTATE 55000"), "\(message)")
        #expect(message.contains("ALLOW_CONNECTIONS"), "\(message)")
        #expect(!message.contains(Self.placeholder), "\(message)")
    }

    @Test("an sslrootcert file that does not exist is named, not reported as the server being unavailable")
    func missingRootCertificatesNamed() async throws {
        let missing = TemporaryFolders.path("coffer-no-such-ca").appendingPathExtension("pem").path
        let settings = try Self.failingSettings(
            database: try PostgresTestServer.makeDatabase("no-root"), tls: .verifyCA, rootCertificates: missing)
        let message = await Self.storageMessage { _ = try await PostgresWallet.create(settings: settings, key: PostgresTesting.key) }
        guard let message else { return }
        #expect(message.contains(missing) && message.contains("sslrootcert"), "\(message)")
        #expect(!message.contains("is unavailable"), "\(message)")
    }

    @Test(
        "a role at its connection limit while the pool holds no connection fails with the server's reason (SQLSTATE 53300), not the pool's lease timeout"
    )
    func roleConnectionLimitNamed() async throws {
        let database = try PostgresTestServer.makeDatabase("role-limit")
        let admin = try await PostgresWallet.create(settings: try PostgresTesting.settings("role-limit-admin"), key: PostgresTesting.key)
        defer { admin.close() }
        // Roles are the server's, not the database's: a name of its own, dropped at the end.
        // Not a superuser: the role limit does not apply to superusers.
        let role = "limited_\(UUID().uuidString.prefix(8).lowercased())"
        try await Self.alter(admin, "CREATE ROLE \(role) LOGIN CONNECTION LIMIT 0")
        var settings = try Self.failingSettings(database: database)
        settings.user = role
        // Far shorter than the default 30 s, still far longer than the check's delay (1 s): the
        // pool's timeout message would mean the call waited it out.
        settings.leaseTimeout = .seconds(20)
        let message = await Self.storageMessage { _ = try await PostgresWallet.create(settings: settings, key: PostgresTesting.key) }
        try await Self.alter(admin, "DROP ROLE \(role)")
        guard let message else { return }
        #expect(message.contains("too many connections for role") && message.contains("SQLSTATE 53300"), "\(message)")
        #expect(message.contains("CONNECTION LIMIT"), "\(message)")
        #expect(!message.contains("became free"), "\(message)")
    }
}
#endif
