// The PostgreSQL wallet URL: each parsing rule, the defaults, and that the password never shows.

import CofferWallet
import Foundation
import Testing

@Suite("PostgreSQL wallet URL")
struct PostgresURLTests {
    static let secret = "s3cr3t-PW"

    /// The message of the error `text` raises, or nil when it parses.
    static func message(_ text: String) -> String? {
        do {
            _ = try PostgresURL(text)
            return nil
        } catch let error as WalletError {
            guard case .invalidInput(let message) = error else { return "unexpected error \(error)" }
            return message
        } catch {
            return "unexpected error \(error)"
        }
    }

    @Test("a full URL gives every field")
    func fullURL() throws {
        let url = try PostgresURL(
            "postgres://app:\(Self.secret)@db.example.com:6543/wallets?sslmode=verify-full&max_connections=32&connect_timeout=5&idle_timeout=300"
        )
        #expect(url.user == "app")
        #expect(url.password == Self.secret)
        #expect(url.host == "db.example.com")
        #expect(url.port == 6543)
        #expect(url.database == "wallets")
        #expect(url.tlsMode == .verifyFull)
        #expect(url.maxConnections == 32)
        #expect(url.connectTimeout == 5)
        #expect(url.idleTimeout == 300)
    }

    @Test("a URL without port or query takes the defaults")
    func defaults() throws {
        let url = try PostgresURL("postgres://app:pw@localhost/wallets")
        #expect(url.port == 5432)
        #expect(url.tlsMode == .prefer)
        #expect(url.maxConnections == PostgresURL.defaultMaxConnections)
        #expect(url.connectTimeout == PostgresURL.defaultConnectTimeout)
        #expect(url.idleTimeout == PostgresURL.defaultIdleTimeout)
    }

    @Test("the postgresql:// scheme, in any case, is the same")
    func postgresqlScheme() throws {
        #expect(try PostgresURL("postgresql://app:pw@h/db") == PostgresURL("postgres://app:pw@h/db"))
        #expect(try PostgresURL("PostgreSQL://app:pw@h/db").database == "db")
        #expect(PostgresURL.isPostgresURL("postgresql://x"))
        #expect(!PostgresURL.isPostgresURL("/var/lib/wallet.sqlite"))
        #expect(!PostgresURL.isPostgresURL("mysql://app@h/db"))
    }

    @Test("user, password and database are percent-decoded")
    func percentDecoding() throws {
        let url = try PostgresURL("postgres://us%3Aer%40corp:p%40ss%2Fw%3Ard%25%23@h/my%20wallets%C3%A9")
        #expect(url.user == "us:er@corp")
        #expect(url.password == "p@ss/w:rd%#")
        #expect(url.database == "my walletsé")
    }

    @Test("an unencoded @ or : in the password still parses (the last @ ends the user part)")
    func lenientPassword() throws {
        let url = try PostgresURL("postgres://app:p@ss:word@h:5433/db")
        #expect(url.password == "p@ss:word")
        #expect(url.host == "h")
        #expect(url.port == 5433)
    }

    @Test("a user without a password has none")
    func noPassword() throws {
        let url = try PostgresURL("postgres://app@h/db")
        #expect(url.user == "app")
        #expect(url.password == nil)
        #expect(!url.description.contains("***"))
    }

    @Test("an IPv6 host goes in brackets, with or without a port")
    func ipv6() throws {
        let a = try PostgresURL("postgres://app:pw@[::1]:5433/db")
        #expect(a.host == "::1")
        #expect(a.port == 5433)
        let b = try PostgresURL("postgres://app:pw@[2001:db8::7]/db")
        #expect(b.host == "2001:db8::7")
        #expect(b.port == 5432)
        #expect(b.description.contains("@[2001:db8::7]:5432/"))
    }

    @Test("an IPv6 host without brackets is refused with a hint")
    func ipv6WithoutBrackets() {
        #expect(Self.message("postgres://app:pw@::1:5432/db")?.contains("brackets") == true)
    }

    @Test("an unclosed or non-IPv6 bracket host is refused")
    func badBrackets() {
        #expect(Self.message("postgres://app:pw@[::1/db")?.contains("closing ]") == true)
        #expect(Self.message("postgres://app:pw@[host]/db")?.contains("not an IPv6 address") == true)
        #expect(Self.message("postgres://app:pw@[::1]x/db")?.contains("not :PORT") == true)
    }

    @Test("every sslmode name parses, others are refused with the list")
    func sslModes() throws {
        for mode in PostgresURL.TLSMode.allCases {
            #expect(try PostgresURL("postgres://a:b@h/db?sslmode=\(mode.rawValue)").tlsMode == mode)
        }
        let message = Self.message("postgres://a:b@h/db?sslmode=allow")
        #expect(message?.contains("sslmode must be one of disable, prefer, require, verify-ca, verify-full") == true)
        #expect(message?.contains("\"allow\"") == true)
    }

    @Test("sslrootcert names a file of authorities: percent-decoded, shown in the description and parsed back; empty is refused")
    func rootCertificates() throws {
        let url = try PostgresURL("postgres://a:b@h/db?sslmode=verify-full&sslrootcert=%2Fetc%2Fssl%2Frds%20ca.pem")
        #expect(url.rootCertificates == "/etc/ssl/rds ca.pem")
        #expect(try PostgresURL(url.description.replacingOccurrences(of: ":***", with: ":b")) == url)
        #expect(try PostgresURL("postgres://a:b@h/db").rootCertificates == nil)
        #expect(Self.message("postgres://a:b@h/db?sslrootcert=")?.contains("sslrootcert is empty") == true)
    }

    @Test("the scheme must be postgres:// or postgresql://")
    func badScheme() {
        #expect(Self.message("mysql://a:b@h/db")?.contains("must start with postgres://") == true)
        #expect(Self.message("postgres:/a:b@h/db")?.contains("must start with postgres://") == true)
    }

    @Test("a missing user, host or database is named")
    func missingParts() {
        #expect(Self.message("postgres://h/db")?.contains("no user name") == true)
        #expect(Self.message("postgres://:pw@h/db")?.contains("no user name") == true)
        #expect(Self.message("postgres://a:pw@/db")?.contains("no host") == true)
        #expect(Self.message("postgres://a:pw@h")?.contains("no database name") == true)
        #expect(Self.message("postgres://a:pw@h/")?.contains("no database name") == true)
        #expect(Self.message("postgres://a:pw@h/?sslmode=require")?.contains("no database name") == true)
    }

    @Test("a bad port is named with its text")
    func badPort() {
        #expect(Self.message("postgres://a:pw@h:abc/db")?.contains("the port must be a number from 1 to 65535, got \"abc\"") == true)
        #expect(Self.message("postgres://a:pw@h:0/db")?.contains("got \"0\"") == true)
        #expect(Self.message("postgres://a:pw@h:65536/db")?.contains("got \"65536\"") == true)
        #expect(Self.message("postgres://a:pw@h:/db")?.contains("the port") == true)
    }

    @Test("a bad host name is named")
    func badHost() {
        #expect(Self.message("postgres://a:pw@bad host/db")?.contains("the host \"bad host\"") == true)
        #expect(Self.message("postgres://a:pw@h1,h2/db")?.contains("several hosts") == true)
    }

    @Test("a path of more than one segment is refused")
    func nestedPath() throws {
        #expect(Self.message("postgres://a:pw@h/db/more")?.contains("one database name") == true)
        #expect(try PostgresURL("postgres://a:pw@h/db%2Fmore").database == "db/more")
    }

    @Test("pool settings out of range or not numbers are refused, naming the setting")
    func badPoolSettings() {
        #expect(
            Self.message("postgres://a:b@h/db?max_connections=0")?.contains("max_connections must be a whole number from 1 to 1000") == true
        )
        #expect(Self.message("postgres://a:b@h/db?max_connections=ten")?.contains("got \"ten\"") == true)
        #expect(Self.message("postgres://a:b@h/db?connect_timeout=-1")?.contains("connect_timeout must be") == true)
        #expect(Self.message("postgres://a:b@h/db?idle_timeout=1.5")?.contains("idle_timeout must be") == true)
        #expect(Self.message("postgres://a:b@h/db?idle_timeout=86401")?.contains("86400 seconds") == true)
    }

    @Test("an unknown, repeated or valueless query parameter is refused")
    func badQuery() {
        let unknown = Self.message("postgres://a:b@h/db?max_conections=5")
        #expect(unknown?.contains("unknown query parameter \"max_conections\"") == true)
        #expect(unknown?.contains("max_connections") == true)
        #expect(Self.message("postgres://a:b@h/db?sslmode=require&sslmode=disable")?.contains("sslmode is given twice") == true)
        #expect(Self.message("postgres://a:b@h/db?sslmode")?.contains("has no value") == true)
    }

    @Test("prepared_statements is on unless the URL says off; other values are refused; off shows in the description")
    func preparedStatements() throws {
        #expect(try PostgresURL("postgres://a:b@h/db").preparedStatements)
        #expect(try PostgresURL("postgres://a:b@h/db?prepared_statements=on").preparedStatements)
        let off = try PostgresURL("postgres://a:b@h/db?prepared_statements=off")
        #expect(!off.preparedStatements)
        #expect(off.description.hasSuffix("&idle_timeout=60&prepared_statements=off"))
        #expect(try PostgresURL(off.description.replacingOccurrences(of: "***", with: "b")) == off)
        #if PostgreSQL // PostgresSettings is the backend's (package trait `PostgreSQL`)
        #expect(!PostgresSettings(url: off).preparedStatements)
        #expect(PostgresSettings(url: try PostgresURL("postgres://a:b@h/db")).preparedStatements)
        #endif
        #expect(Self.message("postgres://a:b@h/db?prepared_statements=no")?.contains("prepared_statements must be on or off") == true)
    }

    @Test("min_connections is 0 unless given, is parsed, shows in the description and goes back through the parser")
    func minConnections() throws {
        #expect(try PostgresURL("postgres://a:b@h/db").minConnections == 0)
        let url = try PostgresURL("postgres://a:b@h/db?max_connections=8&min_connections=4")
        #expect(url.minConnections == 4)
        #expect(
            url.description
                == "postgres://a:***@h:5432/db?sslmode=prefer&max_connections=8&min_connections=4&connect_timeout=10&idle_timeout=60")
        #expect(try PostgresURL(url.description.replacingOccurrences(of: "***", with: "b")) == url)
        #expect(try PostgresURL("postgres://a:b@h/db?min_connections=10").minConnections == PostgresURL.defaultMaxConnections)
        #expect(
            try PostgresURL(user: "a", password: nil, host: "h", database: "db", maxConnections: 3, minConnections: 3).minConnections == 3)
    }

    @Test("min_connections above max_connections, negative or not a number is refused with a message naming both settings")
    func minConnectionsRefused() {
        #expect(
            Self.message("postgres://a:b@h/db?max_connections=4&min_connections=5")?.contains(
                "min_connections (5) must not exceed max_connections (4)") == true)
        #expect(Self.message("postgres://a:b@h/db?min_connections=11")?.contains("must not exceed max_connections (10)") == true)
        #expect(Self.message("postgres://a:b@h/db?min_connections=-1")?.contains("min_connections must be a whole number from 0") == true)
        #expect(Self.message("postgres://a:b@h/db?min_connections=two")?.contains("min_connections must be a whole number") == true)
        #expect(throws: WalletError.self) {
            try PostgresURL(user: "a", password: nil, host: "h", database: "db", maxConnections: 2, minConnections: 3)
        }
        #expect(throws: WalletError.self) { try PostgresURL(user: "a", password: nil, host: "h", database: "db", minConnections: -1) }
    }

    @Test("a bad percent-encoding names the part")
    func badPercent() {
        #expect(Self.message("postgres://a%zz:b@h/db")?.contains("the user name has a % not followed by two hex digits") == true)
        #expect(Self.message("postgres://a:b@h/db%4")?.contains("the database name has a %") == true)
        #expect(Self.message("postgres://a:b@h/db%FF")?.contains("the database name is not valid UTF-8") == true)
        #expect(Self.message("postgres://a:b@h/db%00")?.contains("NUL") == true)
    }

    @Test("field-by-field settings are checked as the URL's are")
    func memberwise() throws {
        let url = try PostgresURL(user: "app", password: nil, host: "::1", database: "db", maxConnections: 4)
        #expect(url.description == "postgres://app@[::1]:5432/db?sslmode=prefer&max_connections=4&connect_timeout=10&idle_timeout=60")
        #expect(throws: WalletError.self) { try PostgresURL(user: "app", password: nil, host: "h", database: "db", maxConnections: 0) }
        #expect(throws: WalletError.self) { try PostgresURL(user: "", password: nil, host: "h", database: "db") }
        #expect(throws: WalletError.self) { try PostgresURL(user: "a", password: nil, host: "h", port: 70_000, database: "db") }
    }

    @Test("description spells out every setting and hides the password")
    func descriptionRedacts() throws {
        let url = try PostgresURL("postgresql://app%40corp:\(Self.secret)@db:6000/w%20x?sslmode=require")
        #expect(
            url.description
                == "postgres://app%40corp:***@db:6000/w%20x?sslmode=require&max_connections=10&connect_timeout=10&idle_timeout=60")
        #expect(!url.description.contains(Self.secret))
        #expect(!"\(url)".contains(Self.secret))
        #expect(!String(reflecting: url).contains(Self.secret))
        var dumped = ""
        dump(url, to: &dumped)
        #expect(dumped.contains("***"))
        #expect(!dumped.contains(Self.secret))
    }

    @Test("no error message or description contains the password, whatever is wrong")
    func errorsNeverShowThePassword() {
        let s = Self.secret
        let broken = [
            "postgres://app:\(s)@h:abc/db", // bad port
            "postgres://app:\(s)@bad host/db", // bad host
            "postgres://app:\(s)@/db", // no host
            "postgres://app:\(s)@h", // no database
            "postgres://app:\(s)@h/db?sslmode=\(s)x", // a bad value is named… but this one is not the password
            "postgres://app:\(s)/x@h/db", // unencoded / in the password
            "postgres://app:\(s)?x@h/db", // unencoded ? in the password
            "postgres://app:\(s)#x@h/db", // unencoded # in the password
            "postgres://app:\(s)%4@h/db", // bad percent in the password
            "postgres://app:\(s)%FF@h/db", // not UTF-8 once decoded
            "postgres://app:\(s)", // no @ at all: user app, host?
            "postgres://:\(s)@h/db", // no user
            "postgres://app:\(s)@[::1/db", // unclosed bracket
            "postgres://app:\(s)@h/db?max_connections=0",
            "postgres://app:\(s)@h/db/x",
            "postgres://app:\(s)@h1,h2/db",
            "mysql://app:\(s)@h/db",
        ]
        for text in broken {
            let message = Self.message(text)
            #expect(message != nil, "\(text.replacingOccurrences(of: s, with: "***")) parsed")
            guard let message else { continue }
            // The one message allowed to quote the query value shows that value, not the password
            // field: strip the deliberately echoed sslmode value before checking.
            let checked = text.contains("sslmode=") ? message.replacingOccurrences(of: "\"\(s)x\"", with: "") : message
            #expect(!checked.contains(s), "the message for a broken URL shows the password: \(checked)")
            let description = WalletError.invalidInput(message).description
            #expect(!(text.contains("sslmode=") ? description.replacingOccurrences(of: "\"\(s)x\"", with: "") : description).contains(s))
        }
    }
}
