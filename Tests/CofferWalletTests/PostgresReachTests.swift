// What a wallet says when no pooled connection can reach its server (nobody listening, no such
// database), and TLS with libpq's sslmode meanings against a server with a self-signed certificate.

#if PostgreSQL
import CofferTestSupport
import CofferWallet
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// In the serialized suite: the TLS test turns TLS on for the shared server, and another test of
/// the suite restarts it.
extension PostgresWalletTests {
    /// A loopback port nobody listens on: bound by the kernel's choice, then closed.
    static func closedLoopbackPort() -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// The storage error's message of `body`, or nil (and an issue) when it throws another or none.
    static func storageMessage(_ body: () async throws -> Void) async -> String? {
        do {
            try await body()
            Issue.record("expected a storage error, got none")
        } catch WalletError.storage(let message, _) {
            return message
        } catch {
            Issue.record("expected a storage error, got \(error)")
        }
        return nil
    }

    @Test("a server nobody listens on: the call fails with the connection's own reason, not the pool's timeout")
    func unreachableServerNamed() async throws {
        let endpoint = try PostgresTestServer.endpoint()
        // A lease timeout far longer than the check's delay: the pool's timeout message would mean
        // the call waited it out without asking the server why.
        let settings = PostgresSettings(
            host: endpoint.host, port: Self.closedLoopbackPort(), user: endpoint.user, database: "postgres", tls: .disable,
            connectTimeout: .seconds(5), leaseTimeout: .seconds(300))
        let message = await Self.storageMessage { _ = try await PostgresWallet.create(settings: settings, key: PostgresTesting.key) }
        #expect(message?.contains("is unavailable") == true, "\(message ?? "")")
        #expect(message?.lowercased().contains("refused") == true, "\(message ?? "")")
        #expect(message?.contains("raise max_connections") == false)
    }

    @Test("a database that does not exist is named as such, with what to do")
    func missingDatabaseNamed() async throws {
        let endpoint = try PostgresTestServer.endpoint()
        let settings = PostgresSettings(
            host: endpoint.host, port: endpoint.port, user: endpoint.user, database: "no_such_wallet_db", tls: .disable,
            connectTimeout: .seconds(5), leaseTimeout: .seconds(300))
        let message = await Self.storageMessage { _ = try await PostgresWallet.create(settings: settings, key: PostgresTesting.key) }
        #expect(message?.contains("has no such database") == true, "\(message ?? "")")
        #expect(message?.contains("createdb") == true)
    }

    /// How many sessions on `database` use TLS, asked by `psql` from outside.
    static func tlsSessions(on database: String) throws -> Int {
        try psqlCount("SELECT count(*) FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) WHERE a.datname = '\(database)' AND s.ssl")
    }

    @Test(
        "sslmode keeps libpq's meanings against a self-signed certificate: prefer and require use TLS without checking it, verify-ca and verify-full refuse it unless sslrootcert names it"
    )
    func tlsModesAgainstSelfSignedServer() async throws {
        let folder = TemporaryFolders.make("tls")
        let certificate = folder.appendingPathComponent("server.crt").path
        let key = folder.appendingPathComponent("server.key").path
        let made = try runProcessBlocking(
            URL(fileURLWithPath: "/usr/bin/openssl"),
            [
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", certificate, "-days", "2", "-subj",
                "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
            ], within: .seconds(60))
        try #require(made.status == 0, "openssl req failed: \(made.stderr)")
        try PostgresTestServer.setTLS(true, certificate: certificate, key: key)
        defer { try? PostgresTestServer.setTLS(false) }
        let endpoint = try PostgresTestServer.endpoint()

        func open(_ query: String) async throws -> (PostgresWallet, String) {
            let database = try PostgresTestServer.makeDatabase("tls")
            let url = try PostgresURL(endpoint.url(database: database) + "?" + query + "&min_connections=1&connect_timeout=5")
            return (try await PostgresWallet.create(settings: PostgresSettings(url: url), key: PostgresTesting.key), database)
        }
        // Taken without a check, as libpq takes it, and the session really is encrypted.
        for mode in ["prefer", "require"] {
            let (wallet, database) = try await open("sslmode=\(mode)")
            defer { wallet.close() }
            try await wallet.add(type: "t", id: mode, value: "v")
            #expect(try await wallet.fetch(type: "t", id: mode)?.value == "v")
            #expect(try Self.tlsSessions(on: database) >= 1, "sslmode=\(mode) connected without TLS")
        }
        // Checked against the system's roots, which do not hold a self-signed certificate.
        for mode in ["verify-ca", "verify-full"] {
            let message = await Self.storageMessage { _ = try await open("sslmode=\(mode)") }
            #expect(message?.contains("PostgreSQL") == true, "sslmode=\(mode): \(message ?? "")")
            #expect(message?.contains("over TLS") == true, "sslmode=\(mode): \(message ?? "")")
            #expect(message?.contains("raise max_connections") == false, "sslmode=\(mode) waited out the pool: \(message ?? "")")
        }
        // Checked against the certificate named by sslrootcert (verify-full also checks the host,
        // 127.0.0.1, which the certificate names).
        let root = certificate.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-._~")))!
        for mode in ["verify-ca", "verify-full", "require"] {
            let (wallet, database) = try await open("sslmode=\(mode)&sslrootcert=\(root)")
            defer { wallet.close() }
            try await wallet.add(type: "t", id: mode, value: "v")
            #expect(try Self.tlsSessions(on: database) >= 1)
        }
    }
}
#endif
