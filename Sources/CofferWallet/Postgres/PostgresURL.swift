// Where a wallet on PostgreSQL lives and how its connection pool behaves, parsed from one URL.
// Plain Swift (no NIO): it is built and tested without the package trait `PostgreSQL`, and the
// backend (built with the trait) turns it into its client's configuration.

import CofferSync
import Foundation

/// A PostgreSQL wallet's connection settings, parsed from
/// `postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?sslmode=…&sslrootcert=PATH&max_connections=N&min_connections=N&connect_timeout=S&idle_timeout=S&prepared_statements=on|off]`
/// (the scheme `postgresql://` too).
///
/// The user name, password and database name are percent-decoded (write `@` as `%40`, `/` as
/// `%2F`, `:` in a user name as `%3A`); an IPv6 host goes in brackets (`[::1]`). Unknown query
/// parameters are refused, so a misspelt setting is never silently ignored. The password is
/// kept for the connection but never shown: ``description`` and every error leave it out.
public struct PostgresURL: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// How the connection uses TLS (the URL's `sslmode`, with libpq's names).
    public enum TLSMode: String, Sendable, Hashable, CaseIterable {
        /// No TLS: everything, the password's proof included, crosses the network in the clear.
        case disable
        /// TLS when the server offers it, else plain text, without checking the server's
        /// certificate (libpq's default).
        case prefer
        /// TLS always, without checking the server's certificate (unless ``PostgresURL/rootCertificates``
        /// is set: then the certificate must chain to it, as libpq does when a root file is given).
        case require
        /// TLS always, and the server's certificate must chain to a trusted root (the system's, or
        /// ``PostgresURL/rootCertificates``); its host name is not checked.
        case verifyCA = "verify-ca"
        /// TLS always, and the server's certificate must chain to a trusted root and name the host.
        case verifyFull = "verify-full"
    }

    /// The port PostgreSQL listens on unless the URL names another.
    public static let defaultPort = 5432
    /// The pool's size unless the URL sets `max_connections` (also ``PostgresSettings``'s
    /// default). Ten, as Askar's PostgreSQL backend: a server's default `max_connections` is 100,
    /// so ten per process leaves room for several processes or replicas on one stock server;
    /// raise it where one process serves many concurrent tenants.
    public static let defaultMaxConnections = 10
    /// How long a connection attempt may take unless the URL sets `connect_timeout` (seconds).
    public static let defaultConnectTimeout = 10
    /// How long an unused pooled connection stays open unless the URL sets `idle_timeout` (seconds).
    public static let defaultIdleTimeout = 60

    /// The largest `max_connections` accepted (PostgreSQL's own limit is usually 100).
    public static let maxConnectionsLimit = 1000
    /// The largest timeout accepted, in seconds (one day).
    public static let timeoutLimit = 86_400

    /// The database user (percent-decoded).
    public var user: String
    /// The user's password (percent-decoded), or nil to authenticate without one (trust, peer,
    /// certificates). Never printed.
    public var password: String?
    /// The server's host name or IP address (an IPv6 address without its brackets).
    public var host: String
    /// The server's TCP port.
    public var port: Int
    /// The database holding the wallet (percent-decoded).
    public var database: String
    /// How the connection uses TLS.
    public var tlsMode: TLSMode
    /// A PEM file of the certificate authorities the server's certificate must chain to, in place
    /// of the system's roots (the URL's `sslrootcert`, as libpq's; nil: the system's). With it,
    /// `sslmode=require` checks the chain as `verify-ca` does.
    public var rootCertificates: String?
    /// The most connections the process's pool opens to the server, shared by every profile.
    public var maxConnections: Int
    /// How many connections the pool opens as soon as the wallet opens and keeps open while it is
    /// open, even idle (the URL's `min_connections`, 0 to ``maxConnections``; 0 by default: every
    /// connection is opened on demand and closed after ``idleTimeout`` unused). A server that
    /// must answer its first requests without a connection's setup (TCP, authentication, session
    /// start) keeps a few open this way.
    public var minConnections: Int = 0
    /// How long opening one connection may take before it fails, in seconds.
    public var connectTimeout: Int
    /// How long an unused pooled connection stays open before the pool closes it, in seconds.
    public var idleTimeout: Int
    /// Whether the wallet's most frequent statements are prepared once per connection
    /// (`prepared_statements=on`, the default; a pooler found not to carry them switches the
    /// process to unnamed ones) or sent unnamed at every call from the start (`off`: for a pooler
    /// that does not carry prepared statements, such as PgBouncer before 1.21 or with
    /// `max_prepared_statements = 0`).
    public var preparedStatements: Bool = true

    /// Settings given field by field; the defaults are those of a URL that names none.
    /// - Throws: ``WalletError/invalidInput(_:)`` when a value is out of range (the message
    ///   names the setting, never the password).
    public init(
        user: String, password: String?, host: String, port: Int = PostgresURL.defaultPort, database: String,
        tlsMode: TLSMode = .prefer, maxConnections: Int = PostgresURL.defaultMaxConnections,
        connectTimeout: Int = PostgresURL.defaultConnectTimeout, idleTimeout: Int = PostgresURL.defaultIdleTimeout,
        minConnections: Int = 0
    ) throws {
        guard !user.isEmpty else { throw Self.error("the user name is empty") }
        guard !database.isEmpty else { throw Self.error("the database name is empty") }
        try Self.checkHost(host)
        guard (1...65_535).contains(port) else { throw Self.error("the port must be 1 to 65535, got \(port)") }
        guard (1...Self.maxConnectionsLimit).contains(maxConnections) else {
            throw Self.error("max_connections must be 1 to \(Self.maxConnectionsLimit), got \(maxConnections)")
        }
        guard minConnections >= 0 else { throw Self.error("min_connections must be 0 or more, got \(minConnections)") }
        guard minConnections <= maxConnections else {
            throw Self.error(
                "min_connections (\(minConnections)) must not exceed max_connections (\(maxConnections)): lower min_connections or raise max_connections"
            )
        }
        for (name, value) in [("connect_timeout", connectTimeout), ("idle_timeout", idleTimeout)] {
            guard (1...Self.timeoutLimit).contains(value) else {
                throw Self.error("\(name) must be 1 to \(Self.timeoutLimit) seconds, got \(value)")
            }
        }
        self.user = user
        self.password = password
        self.host = host
        self.port = port
        self.database = database
        self.tlsMode = tlsMode
        self.maxConnections = maxConnections
        self.minConnections = minConnections
        self.connectTimeout = connectTimeout
        self.idleTimeout = idleTimeout
    }

    /// Whether `text` names a PostgreSQL wallet (its scheme is `postgres://` or `postgresql://`),
    /// whether or not the rest of it is valid.
    public static func isPostgresURL(_ text: String) -> Bool {
        scheme(of: text) != nil
    }

    /// Parses a `postgres://` or `postgresql://` URL.
    /// - Throws: ``WalletError/invalidInput(_:)`` naming the part that is wrong (scheme, user,
    ///   host, port, database or query parameter) and what it should be; the message never
    ///   contains the password, nor any text from where the password is or may be.
    public init(_ text: String) throws {
        guard let schemeLength = Self.scheme(of: text) else {
            throw Self.error("the URL must start with postgres:// or postgresql://")
        }
        var rest = Substring(text.dropFirst(schemeLength))
        if rest.contains("#") {
            throw Self.error("a fragment (#…) is not part of a PostgreSQL URL; percent-encode # in a password as %23")
        }
        // RFC 3986: the authority ends at the first "/" or "?". A userinfo holds no "/", "?" or
        // "@" unencoded; an "@" beyond the authority means one slipped into the user or password.
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" } ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        rest = rest[authorityEnd...]
        if rest.contains("@") {
            throw Self.error(
                "an @ appears after the host: percent-encode /, ?, # and @ in the user name and password (%2F, %3F, %23, %40)")
        }
        var hostPort = authority
        var user: String?
        var password: String?
        if let at = authority.lastIndex(of: "@") {
            let userinfo = authority[..<at]
            hostPort = authority[authority.index(after: at)...]
            if let colon = userinfo.firstIndex(of: ":") {
                user = try Self.decode(userinfo[..<colon], part: "the user name")
                password = try Self.decode(userinfo[userinfo.index(after: colon)...], part: "the password")
            } else {
                user = try Self.decode(userinfo, part: "the user name")
            }
        }
        guard let user, !user.isEmpty else {
            throw Self.error("no user name: write postgres://USER:PASSWORD@HOST:PORT/DATABASE")
        }
        let (host, port) = try Self.hostAndPort(hostPort)

        var path = rest
        var query: Substring = ""
        if let q = rest.firstIndex(of: "?") {
            path = rest[..<q]
            query = rest[rest.index(after: q)...]
        }
        guard path.hasPrefix("/"), path.count > 1 else {
            throw Self.error("no database name: write postgres://USER:PASSWORD@HOST:PORT/DATABASE")
        }
        guard !path.dropFirst().contains("/") else {
            throw Self.error("the path after the host must be one database name, without / (percent-encode it as %2F)")
        }
        let database = try Self.decode(path.dropFirst(), part: "the database name")

        var settings = Settings()
        try settings.parse(query)
        try self.init(
            user: user, password: password, host: host, port: port, database: database, tlsMode: settings.tlsMode,
            maxConnections: settings.maxConnections, connectTimeout: settings.connectTimeout, idleTimeout: settings.idleTimeout,
            minConnections: settings.minConnections)
        preparedStatements = settings.preparedStatements
        rootCertificates = settings.rootCertificates
    }

    /// The URL with every setting spelt out (`min_connections` only when not 0,
    /// `prepared_statements` only when off) and the
    /// password replaced by `***`, e.g.
    /// `postgres://app:***@db.internal:5432/wallets?sslmode=require&max_connections=10&connect_timeout=10&idle_timeout=60`.
    public var description: String {
        let userinfo = Self.encode(user) + (password == nil ? "" : ":***")
        let hostText = host.contains(":") ? "[\(host)]" : host
        return "postgres://\(userinfo)@\(hostText):\(port)/\(Self.encode(database))?sslmode=\(tlsMode.rawValue)"
            + "&max_connections=\(maxConnections)" + (minConnections == 0 ? "" : "&min_connections=\(minConnections)")
            + (rootCertificates.map { "&sslrootcert=\(Self.encode($0))" } ?? "")
            + "&connect_timeout=\(connectTimeout)&idle_timeout=\(idleTimeout)"
            + (preparedStatements ? "" : "&prepared_statements=off")
    }

    /// The same as ``description``: the password stays hidden in debug output too.
    public var debugDescription: String { description }

    /// The fields as `dump` and debuggers show them, the password replaced by `***`.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "user": user, "password": password == nil ? "nil" : "***", "host": host, "port": port, "database": database,
                "tlsMode": tlsMode, "rootCertificates": rootCertificates ?? "nil", "maxConnections": maxConnections,
                "minConnections": minConnections, "connectTimeout": connectTimeout,
                "idleTimeout": idleTimeout,
                "preparedStatements": preparedStatements,
            ], displayStyle: .struct)
    }

    // MARK: - Parsing

    /// The query parameters, each at most once.
    private struct Settings {
        var tlsMode = TLSMode.prefer
        var maxConnections = PostgresURL.defaultMaxConnections
        var minConnections = 0
        var connectTimeout = PostgresURL.defaultConnectTimeout
        var idleTimeout = PostgresURL.defaultIdleTimeout
        var preparedStatements = true
        var rootCertificates: String?

        static let names = [
            "sslmode", "sslrootcert", "max_connections", "min_connections", "connect_timeout", "idle_timeout", "prepared_statements",
        ]

        mutating func parse(_ query: Substring) throws {
            var seen = Set<String>()
            for pair in query.split(separator: "&", omittingEmptySubsequences: true) {
                guard let eq = pair.firstIndex(of: "=") else {
                    throw PostgresURL.error("query parameter \(PostgresURL.quote(pair)) has no value (write NAME=VALUE)")
                }
                let name = String(pair[..<eq])
                let value = try PostgresURL.decode(pair[pair.index(after: eq)...], part: "the value of \(name)")
                guard Self.names.contains(name) else {
                    throw PostgresURL.error(
                        "unknown query parameter \(PostgresURL.quote(name)) (known: \(Self.names.joined(separator: ", ")))")
                }
                guard seen.insert(name).inserted else { throw PostgresURL.error("query parameter \(name) is given twice") }
                switch name {
                case "sslmode":
                    guard let mode = TLSMode(rawValue: value) else {
                        throw PostgresURL.error(
                            "sslmode must be one of \(TLSMode.allCases.map(\.rawValue).joined(separator: ", ")), got \(PostgresURL.quote(value))"
                        )
                    }
                    tlsMode = mode
                case "sslrootcert":
                    guard !value.isEmpty else {
                        throw PostgresURL.error("sslrootcert is empty: name a PEM file of certificate authorities")
                    }
                    rootCertificates = value
                case "max_connections":
                    maxConnections = try Self.integer(value, name: name, range: 1...PostgresURL.maxConnectionsLimit)
                case "min_connections":
                    minConnections = try Self.integer(value, name: name, range: 0...PostgresURL.maxConnectionsLimit)
                case "prepared_statements":
                    switch value {
                    case "on": preparedStatements = true
                    case "off": preparedStatements = false
                    default: throw PostgresURL.error("prepared_statements must be on or off, got \(PostgresURL.quote(value))")
                    }
                case "connect_timeout":
                    connectTimeout = try Self.integer(value, name: name, range: 1...PostgresURL.timeoutLimit, unit: " seconds")
                default:
                    idleTimeout = try Self.integer(value, name: name, range: 1...PostgresURL.timeoutLimit, unit: " seconds")
                }
            }
        }

        static func integer(_ value: String, name: String, range: ClosedRange<Int>, unit: String = "") throws -> Int {
            guard value.allSatisfy(\.isASCII), let n = Int(value), range.contains(n) else {
                throw PostgresURL.error(
                    "\(name) must be a whole number from \(range.lowerBound) to \(range.upperBound)\(unit), got \(PostgresURL.quote(value))"
                )
            }
            return n
        }
    }

    /// The length of `postgres://` or `postgresql://` (any case) at the start of `text`, or nil.
    private static func scheme(of text: String) -> Int? {
        let lower = text.prefix(13).lowercased()
        if lower.hasPrefix("postgresql://") { return 13 }
        if lower.hasPrefix("postgres://") { return 11 }
        return nil
    }

    private static func hostAndPort(_ text: Substring) throws -> (String, Int) {
        guard !text.isEmpty else { throw error("no host: write postgres://USER:PASSWORD@HOST:PORT/DATABASE") }
        if text.contains(",") { throw error("several hosts (\(quote(text))) are not supported: name one host") }
        var host: Substring
        var portText: Substring?
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else {
                throw error("the IPv6 host \(quote(text)) has no closing ]")
            }
            host = text[text.index(after: text.startIndex)..<close]
            let after = text[text.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw error("after the IPv6 host \(quote(host)) comes \(quote(after)), not :PORT") }
                portText = after.dropFirst()
            }
            guard !host.isEmpty, host.contains(":"), host.allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." }) else {
                throw error("\(quote(host)) between [ and ] is not an IPv6 address")
            }
        } else {
            let colons = text.filter { $0 == ":" }.count
            if colons > 1 { throw error("the host \(quote(text)) looks like an IPv6 address: put it in brackets, [::1]:5432") }
            if let colon = text.firstIndex(of: ":") {
                host = text[..<colon]
                portText = text[text.index(after: colon)...]
            } else {
                host = text
            }
        }
        var port = defaultPort
        if let portText {
            guard !portText.isEmpty, portText.allSatisfy(\.isASCII), let n = Int(portText), (1...65_535).contains(n) else {
                throw error("the port must be a number from 1 to 65535, got \(quote(portText))")
            }
            port = n
        }
        try checkHost(String(host))
        return (String(host), port)
    }

    /// A host name (letters, digits, `-`, `.`, `_`) or an IP address.
    private static func checkHost(_ host: String) throws {
        guard !host.isEmpty else { throw error("no host: write postgres://USER:PASSWORD@HOST:PORT/DATABASE") }
        if host.contains(":") {
            guard host.allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." }) else {
                throw error("the host \(quote(host)) is not an IPv6 address")
            }
            return
        }
        guard host.utf8.count <= 253, host.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-._".contains($0)) }) else {
            throw error("the host \(quote(host)) is not a host name or IP address (letters, digits, -, . and _; IPv6 in brackets)")
        }
    }

    /// Percent-decodes one part. The message names the part, never its text (it may be the password).
    private static func decode(_ text: Substring, part: String) throws -> String {
        var bytes = [UInt8]()
        bytes.reserveCapacity(text.utf8.count)
        var i = text.utf8.startIndex
        let utf8 = text.utf8
        while i < utf8.endIndex {
            let byte = utf8[i]
            if byte == UInt8(ascii: "%") {
                let h1 = utf8.index(after: i)
                guard h1 < utf8.endIndex, utf8.index(after: h1) < utf8.endIndex,
                    let high = hexValue(utf8[h1]), let low = hexValue(utf8[utf8.index(after: h1)])
                else {
                    throw error("\(part) has a % not followed by two hex digits (write a literal % as %25)")
                }
                bytes.append(high << 4 | low)
                i = utf8.index(i, offsetBy: 3)
            } else {
                bytes.append(byte)
                i = utf8.index(after: i)
            }
        }
        guard let decoded = String(validUTF8: bytes) else {
            throw error("\(part) is not valid UTF-8 once percent-decoded")
        }
        guard !decoded.unicodeScalars.contains(where: { $0.value == 0 }) else {
            throw error("\(part) contains a NUL character (%00)")
        }
        return decoded
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }

    /// Percent-encodes everything but RFC 3986's unreserved characters.
    private static func encode(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            let c = Character(Unicode.Scalar(byte))
            if byte < 0x80, c.isLetter || c.isNumber || "-._~".contains(c) {
                out.append(c)
            } else {
                out += String(format: "%%%02X", byte)
            }
        }
        return out
    }

    private static func quote<S: StringProtocol>(_ text: S) -> String {
        let shown = text.count > 64 ? String(text.prefix(64)) + "…" : String(text)
        return "\"" + shown.unicodeScalars.map { $0.isASCII && $0.value >= 0x20 ? String($0) : $0.escaped(asASCII: true) }.joined() + "\""
    }

    private static func error(_ message: String) -> WalletError {
        .invalidInput("wallet URL: \(message)")
    }
}
