// Where a wallet lives, as the command line and its benchmarks name it (`--wallet-url URL`,
// `$COFFER_WALLET_URL`): a SQLite file or a PostgreSQL database. The one place where that name
// becomes an open wallet, so the PostgreSQL backend plugs in here and nowhere else.

import Foundation

/// A wallet's place: a SQLite file, or a database on a PostgreSQL server.
package enum WalletLocation: Sendable, Equatable, CustomStringConvertible {
    /// A SQLite wallet file.
    case file(URL)
    /// A database on a PostgreSQL server (``PostgresURL``).
    case postgres(PostgresURL)

    /// The environment variable the command line reads when `--wallet-url` is not given.
    package static let environmentVariable = "COFFER_WALLET_URL"

    /// Whether this build has the PostgreSQL backend (the package trait `PostgreSQL`).
    package static var postgresBuiltIn: Bool {
        #if PostgreSQL
        return true
        #else
        return false
        #endif
    }

    /// Where the wallet is: `option` (the text of `--wallet-url`, nil when not given), else the
    /// environment variable's value when set and not empty, else `defaultFile`.
    /// - Throws: ``WalletError/invalidInput(_:)`` for a URL that does not parse (naming the part,
    ///   never the password) or whose scheme is neither `postgres://`, `postgresql://` nor `sqlite://`.
    package static func resolve(
        option: String?, environment: [String: String] = ProcessInfo.processInfo.environment, defaultFile: URL
    ) throws -> WalletLocation {
        if let option { return try parse(option, source: "--wallet-url") }
        if let value = environment[environmentVariable], !value.isEmpty {
            return try parse(value, source: "$\(environmentVariable)")
        }
        return .file(defaultFile)
    }

    /// Parses `postgres://…`, `postgresql://…` or `sqlite://PATH` (PATH as written: `sqlite:///abs`
    /// is absolute, `sqlite://rel` relative to the current folder). `source` names where the
    /// text came from in messages.
    package static func parse(_ text: String, source: String) throws -> WalletLocation {
        guard !text.isEmpty else {
            throw WalletError.invalidInput("\(source) needs a URL: postgres://USER:PASSWORD@HOST:PORT/DATABASE or sqlite://PATH")
        }
        if PostgresURL.isPostgresURL(text) {
            do { return .postgres(try PostgresURL(text)) } catch WalletError.invalidInput(let message) {
                throw WalletError.invalidInput("\(source): \(message)")
            }
        }
        if text.lowercased().hasPrefix("sqlite://") {
            let path = String(text.dropFirst("sqlite://".count))
            guard !path.isEmpty, !path.hasSuffix("/") else {
                throw WalletError.invalidInput(
                    "\(source): sqlite:// needs the wallet file's path, e.g. sqlite:///var/lib/app/wallet.sqlite")
            }
            return .file(URL(fileURLWithPath: path))
        }
        // Only the scheme is named: the rest may hold a password.
        let scheme = text.range(of: "://").map { String(text[..<$0.lowerBound].prefix(32)) }
        let named = scheme.map { "the scheme \"\($0)\" is not supported" } ?? "not a wallet URL"
        throw WalletError.invalidInput(
            "\(source): \(named); give postgres://USER:PASSWORD@HOST:PORT/DATABASE[?sslmode=…&max_connections=N] or sqlite://PATH")
    }

    /// The file, or a database's URL without its password.
    package var description: String {
        switch self {
        case .file(let url): return url.path
        case .postgres(let url): return url.description
        }
    }

    // MARK: - Opening. On PostgreSQL, what `PostgresWallet` serves goes to it; what needs a
    // `Wallet` (until the wallet runs on a storage seam) is refused with ``postgresUnsupported(_:_:)``.

    /// Opens profile `profile` with `key`.
    /// - Throws: on PostgreSQL, ``WalletError/invalidInput(_:)``: a `Wallet` cannot live there yet.
    package func open(key: WalletKey, profile: String, configuration: Wallet.Configuration = .init()) async throws -> Wallet {
        switch self {
        case .file(let url): return try await Wallet.open(at: url, key: key, profile: profile, configuration: configuration)
        case .postgres(let url): throw Self.postgresUnsupported(url, "this command")
        }
    }

    /// Creates profile `profile` (and the store when there is none) under `key`.
    /// - Throws: on PostgreSQL, ``WalletError/invalidInput(_:)`` (see ``createProfile(key:profile:configuration:)``).
    package func create(key: WalletKey, profile: String, configuration: Wallet.Configuration = .init()) async throws -> Wallet {
        switch self {
        case .file(let url): return try await Wallet.create(at: url, key: key, profile: profile, configuration: configuration)
        case .postgres(let url): throw Self.postgresUnsupported(url, "this command")
        }
    }

    /// Creates profile `profile` (and the store or tables when there are none) under `key`, and
    /// closes it; returns where it was made (a file's path, or the database's URL without its
    /// password).
    package func createProfile(key: WalletKey, profile: String, configuration: Wallet.Configuration = .init()) async throws
        -> String
    {
        switch self {
        case .file:
            let wallet = try await create(key: key, profile: profile, configuration: configuration)
            try wallet.close()
            return wallet.path
        case .postgres(let url):
            #if PostgreSQL
            let wallet = try await PostgresWallet.create(
                settings: PostgresSettings(url: url), profile: profile, key: key, configuration: configuration)
            wallet.close()
            return url.description
            #else
            throw Self.backendNotBuilt(url)
            #endif
        }
    }

    /// The store's profile names, `default` first.
    package func profiles() async throws -> [String] {
        switch self {
        case .file(let url): return try await Wallet.profiles(at: url)
        case .postgres(let url):
            #if PostgreSQL
            return try await PostgresWallet.profiles(settings: PostgresSettings(url: url))
            #else
            throw Self.backendNotBuilt(url)
            #endif
        }
    }

    /// Removes profile `profile` and every record in it.
    package func removeProfile(_ profile: String) async throws {
        switch self {
        case .file(let url): try await Wallet.removeProfile(profile, at: url)
        case .postgres(let url):
            #if PostgreSQL
            try await PostgresWallet.removeProfile(profile, settings: PostgresSettings(url: url))
            #else
            throw Self.backendNotBuilt(url)
            #endif
        }
    }

    #if PostgreSQL
    /// Opens profile `profile` of a PostgreSQL location with `key`; nil for a file (open it as a ``Wallet``).
    package func openPostgres(key: WalletKey, profile: String) async throws -> PostgresWallet? {
        guard case .postgres(let url) = self else { return nil }
        return try await PostgresWallet.open(settings: PostgresSettings(url: url), profile: profile, key: key)
    }
    #endif

    /// The error for a command the PostgreSQL backend cannot run yet (`what` names it); in a
    /// build without the backend, ``backendNotBuilt(_:)``.
    package static func postgresUnsupported(_ url: PostgresURL, _ what: String) -> WalletError {
        guard postgresBuiltIn else { return backendNotBuilt(url) }
        return .invalidInput(
            "the PostgreSQL backend does not support \(what) yet (\(url)): it serves wallet create, profiles, remove-profile, add, get, update, delete, add-tags, update-tags, delete-tags, search, count, remove-all, export, check, compact, rekey, import, import-indy, import-askar, import-backup and key"
        )
    }

    /// The SQLite file, for what only a file can do (`what` names it, e.g. "import-backup").
    /// - Throws: ``WalletError/invalidInput(_:)`` for a PostgreSQL location.
    package func file(for what: String) throws -> URL {
        switch self {
        case .file(let url): return url
        case .postgres(let url):
            guard Self.postgresBuiltIn else { throw Self.backendNotBuilt(url) }
            throw WalletError.invalidInput("\(what) works on a SQLite wallet file only, not on \(url)")
        }
    }

    /// The error for a PostgreSQL URL in a build without the backend: what to build instead.
    package static func backendNotBuilt(_ url: PostgresURL) -> WalletError {
        .invalidInput(
            "this coffer was built without the PostgreSQL trait, so it cannot open \(url); build it with `swift build --traits PostgreSQL` (a package depending on Coffer: traits: [\"PostgreSQL\"] on its Coffer dependency)"
        )
    }
}
