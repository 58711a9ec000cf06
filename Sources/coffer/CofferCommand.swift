// The `coffer` command line: a contract other tools drive (exit codes and output formats are fixed).

import ArgumentParser
import Coffer
import CofferBench
import CofferCLISupport
import CofferSync
import Foundation
import Logging

/// `--store DIR`: every command that reads or writes a store. The root declares the same group,
/// so it is accepted before the subcommand name too (the parser hands the root's value down by type).
struct StoreOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp("Store folder (default: $COFFER_HOME, else the platform's application-data folder).", valueName: "dir"))
    var store: String?

    /// An empty `--store` would mean the current folder (`coffer --store "" reset --yes` would
    /// remove Coffer's files there): refused.
    func validate() throws {
        if let store, store.isEmpty {
            throw ValidationError("--store needs a folder; an empty path is refused (it would mean the current folder)")
        }
    }

    var storeDirectory: URL {
        if let store { return URL(fileURLWithPath: store, isDirectory: true) }
        return StoreLocation.defaultStoreDirectory()
    }

    var walletURL: URL { StoreLocation.walletFile(in: storeDirectory) }

    /// The app container's folders: `--store DIR` holds everything (caches in DIR/caches),
    /// else the platform's data and cache folders.
    var locations: CofferLocations {
        if let store { return CofferLocations(store: URL(fileURLWithPath: store, isDirectory: true)) }
        return .platformDefault()
    }

    /// The store options of a parsed command: its own group, or one inside a group it declares
    /// (`WalletOptions`); nil for a command that works on no store.
    static func find(in command: Any, depth: Int = 0) -> StoreOptions? {
        if let options = command as? StoreOptions { return options }
        guard depth < 4 else { return nil }
        for child in Mirror(reflecting: command).children {
            if let found = find(in: child.value, depth: depth + 1) { return found }
        }
        return nil
    }

    /// Finishes a full reset that was stopped part-way (its marker is in the store), as the app
    /// container's open does, before the command reads anything: settings, collections and the
    /// wallet of a half-reset store were read and written (exit 0), and the next command that
    /// opened the container then finished the reset and removed what they had written.
    func finishStoppedReset() throws {
        let locations = self.locations
        guard FileManager.default.fileExists(atPath: locations.resetMarker.path) else { return }
        StandardError.write("coffer: finishing a full reset of \(locations.data.path) that was stopped part-way\n")
        try CofferContainer.resetBlocking(locations)
    }

    /// Opens the app database (STORE/app.sqlite), runs `body` with it and closes it.
    func withAppDatabase<T>(_ body: (AppDatabase) async throws -> T) async throws -> T {
        let app = try await AppDatabase.open(at: StoreLocation.appDatabaseFile(in: storeDirectory))
        let result: T
        do { result = try await body(app) } catch {
            try? app.close()
            throw error
        }
        // The close commits what `Settings.set` left pending; its failure is the command's.
        try app.close()
        return result
    }

    /// Opens the app container (database, settings, media cache, secure items), runs `body` with it and closes it.
    func withContainer<T>(_ body: (CofferContainer) async throws -> T) async throws -> T {
        let container = try await CofferContainer.open(locations)
        defer { container.close() }
        return try await body(container)
    }
}

/// The wallet's key, given exactly one way. The root declares this group too (hidden in its help),
/// so `coffer --raw-key-env VAR wallet …` keeps working; only wallet commands show it.
struct WalletKeyOptions: ParsableArguments {
    @Option(
        name: .customLong("raw-key"),
        help: ArgumentHelp(
            "The wallet's raw 32-byte key, base64 (other processes can read arguments: prefer --raw-key-env or --raw-key-file).",
            valueName: "base64"))
    var rawKey: String?

    @Option(
        name: .customLong("raw-key-env"),
        help: ArgumentHelp("Name of an environment variable holding the wallet's raw key, base64.", valueName: "var"))
    var rawKeyEnv: String?

    @Option(
        name: .customLong("raw-key-file"),
        help: ArgumentHelp("A file holding the wallet's raw key, base64 (refused when group or others may read it).", valueName: "file"))
    var rawKeyFile: String?

    @Option(
        name: .customLong("passphrase-env"),
        help: ArgumentHelp("Name of an environment variable holding the wallet's passphrase.", valueName: "var"))
    var passphraseEnv: String?

    /// The options that take a value, as they may stand before a subcommand name.
    static let valueOptions: Set<String> = ["--raw-key", "--raw-key-env", "--raw-key-file", "--passphrase-env"]

    func walletKey() throws -> WalletKey {
        try CLIKeys.key(
            raw: rawKey, rawOption: "--raw-key", rawEnv: rawKeyEnv, rawFile: rawKeyFile, passphraseEnv: passphraseEnv,
            passphraseOption: "--passphrase-env",
            missing: "give the wallet key: --raw-key-env VAR, --raw-key-file FILE, --raw-key BASE64 or --passphrase-env VAR")
    }
}

/// `--profile NAME`: which of the store's profiles (wallets with their own keys in one file) a
/// wallet command works on. `coffer wallet` and the root declare it too, so it is accepted
/// before or after the subcommand name, as the key options are.
struct ProfileOptions: ParsableArguments {
    @Option(
        name: .customLong("profile"),
        help: ArgumentHelp("The wallet profile to use (default: default).", valueName: "name"))
    var profile: String?

    /// The profile named, or `default`.
    var name: String { profile ?? "default" }
}

/// What a wallet command takes: the store, where its wallet lives, the profile and the wallet's key.
struct WalletOptions: ParsableArguments {
    @OptionGroup var storeOptions: StoreOptions
    @OptionGroup var urlOptions: WalletURLOptions
    @OptionGroup var profileOptions: ProfileOptions
    @OptionGroup(title: "Wallet key (one of)") var key: WalletKeyOptions

    /// Where the wallet lives (`--wallet-url`, `$COFFER_WALLET_URL` or the store's file).
    func location() throws -> WalletLocation { try urlOptions.location(defaultFile: storeOptions.walletURL) }
    /// The profile the command works on.
    var profile: String { profileOptions.name }

    func walletKey() throws -> WalletKey { try key.walletKey() }

    /// Opens the wallet, runs `body` with it and closes it, whether `body` succeeded or threw.
    func withWallet<T>(_ body: (Wallet) async throws -> T) async throws -> T {
        let location = try location()
        let wallet = try await location.open(key: walletKey(), profile: profile)
        defer { try? wallet.close() }
        TestPause.at("wallet-opened") // debug builds only: lets tests widen the open-to-write window
        return try await body(wallet)
    }

    /// For a command both backends serve (records, imports, keys): `body` with the profile, on
    /// SQLite or, when `--wallet-url` names a database (a build with the PostgreSQL trait), on PostgreSQL.
    func withRecords<T>(_ body: (any RecordWallet & KeyWallet) async throws -> T) async throws -> T {
        #if PostgreSQL
        // The location first: the key is read once (reading a --raw-key warns).
        let location = try location()
        if case .postgres = location, let wallet = try await location.openPostgres(key: walletKey(), profile: profile) {
            defer { wallet.close() }
            TestPause.at("wallet-opened") // debug builds only: lets tests widen the open-to-write window
            return try await body(wallet)
        }
        #endif
        return try await withWallet(body)
    }
}

enum CLIKeys {
    /// The one key given by exactly one of the four ways (`rawOption` names the argument form;
    /// its `-env` and `-file` forms follow from it).
    static func key(
        raw: String?, rawOption: String, rawEnv: String?, rawFile: String?, passphraseEnv: String?,
        passphraseOption: String, missing: String
    ) throws -> WalletKey {
        let given = [raw != nil, rawEnv != nil, rawFile != nil, passphraseEnv != nil].filter { $0 }.count
        guard given > 0 else { throw WalletError.invalidInput(missing) }
        guard given == 1 else {
            throw WalletError.invalidInput(
                "give one of \(rawOption)-env, \(rawOption)-file, \(rawOption) or \(passphraseOption), not several")
        }
        if let raw {
            StandardError.note(
                "warning: \(rawOption) on the command line can be read by other processes (ps); use \(rawOption)-env or \(rawOption)-file")
            return .raw(try decodeRawKey(raw, option: rawOption))
        }
        if let rawEnv {
            return .raw(try decodeRawKey(try environment(rawEnv, option: "\(rawOption)-env"), option: "\(rawOption)-env"))
        }
        if let rawFile {
            return .raw(try decodeRawKey(try ownerOnlyFile(rawFile, option: "\(rawOption)-file"), option: "\(rawOption)-file"))
        }
        return .passphrase(try passphrase(fromEnvironment: passphraseEnv!, option: passphraseOption))
    }

    /// A key file's text, refused when its mode lets group or others read it.
    static func ownerOnlyFile(_ path: String, option: String) throws -> String {
        let mode: Int
        do { mode = (try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber)?.intValue ?? 0o777 } catch {
            throw WalletError.invalidInput("\(option): cannot read \(path)")
        }
        guard mode & 0o077 == 0 else {
            throw WalletError.invalidInput(
                "\(option): \(path) can be read by group or others (mode \(String(mode, radix: 8))); chmod 600 it")
        }
        return try CLIInput.text(path: path, what: option)
    }

    /// An environment variable's value, checked to be valid UTF-8 (never repaired).
    static func environment(_ variable: String, option: String) throws -> String {
        guard let raw = getenv(variable) else {
            throw WalletError.invalidInput("\(option): environment variable \(variable) is not set")
        }
        guard let value = String(validatingCString: raw) else {
            throw WalletError.invalidInput("\(option): environment variable \(variable) is not valid UTF-8")
        }
        guard !value.isEmpty else { throw WalletError.invalidInput("\(option): environment variable \(variable) is empty") }
        return value
    }

    static func decodeRawKey(_ base64: String, option: String) throws -> Data {
        guard let data = Data(base64Encoded: base64.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw WalletError.invalidInput("\(option) is not valid base64")
        }
        guard data.count == 32 else {
            throw WalletError.invalidInput("\(option) must decode to 32 bytes, got \(data.count)")
        }
        return data
    }

    static func passphrase(fromEnvironment variable: String, option: String) throws -> String {
        try environment(variable, option: option)
    }
}

/// Text inputs: files, standard input and arguments, all checked to be valid UTF-8.
enum CLIInput {
    /// The most bytes an input other than a value is read to (a query, tags, a key file, and
    /// `secure set`'s standard input): 64 MiB, far above any real one, so that `/dev/zero` or a
    /// wrong file ends in an error.
    static let maxTextBytes = 64 << 20

    /// The whole text of `path` (`-`: standard input), at most `limit` bytes: a regular file or a
    /// pipe at a path (a folder, a device or a socket is refused by name), anything on standard
    /// input.
    static func text(path: String, what: String, limit: Int = maxTextBytes, limitName: String = "the limit for a text input") throws
        -> String
    {
        let reader = BoundedInput(limit: limit, limitName: limitName, fileKind: "a text file")
        let data =
            path == "-"
            ? try reader.bytesOfStandardInput(prefix: "\(what): ") : try reader.bytes(atPath: path, prefix: "\(what): ")
        guard let text = String(validUTF8: data) else {
            throw WalletError.invalidInput("\(what): \(path == "-" ? "standard input" : path) is not valid UTF-8")
        }
        return text
    }

    /// Exactly one of an argument and a file option: the text (a file read to at most `limit`
    /// bytes, see ``text(path:what:limit:limitName:)``).
    static func one(
        argument: String?, file: String?, argumentName: String, fileOption: String, limit: Int = maxTextBytes,
        limitName: String = "the limit for a text input"
    ) throws -> String {
        switch (argument, file) {
        case (let a?, nil): return a
        case (nil, let f?): return try text(path: f, what: fileOption, limit: limit, limitName: limitName)
        case (nil, nil): throw WalletError.invalidInput("give \(argumentName) or \(fileOption) FILE|-")
        case (.some, .some): throw WalletError.invalidInput("give \(argumentName) or \(fileOption), not both")
        }
    }

    /// A record's value: the argument, or `--value-file` read to at most the largest value
    /// (``WalletLimits/maxValueBytes``).
    static func value(argument: String?, file: String?) throws -> String {
        try one(
            argument: argument, file: file, argumentName: "a value", fileOption: "--value-file", limit: WalletLimits.maxValueBytes,
            limitName: "the largest value")
    }

    /// Checks, while parsing (so that a usage error prints the command's usage), that at most one of
    /// an argument and a file option is given, and with `required` at least one.
    static func checkOne(argument: String?, file: String?, argumentName: String, fileOption: String, required: Bool = true) throws {
        switch (argument, file) {
        case (nil, nil) where required: throw ValidationError("give \(argumentName) or \(fileOption) FILE|-")
        case (.some, .some): throw ValidationError("give \(argumentName) or \(fileOption), not both")
        default: break
        }
    }

    /// The process's arguments as bytes, checked before parsing: Swift would otherwise replace
    /// invalid UTF-8 with U+FFFD, and two different names would become one.
    /// - Returns: a message naming the first argument that is not valid UTF-8, or nil.
    static func invalidArgument() -> String? {
        for i in 1..<Int(CommandLine.argc) {
            guard let raw = CommandLine.unsafeArgv[i] else { continue }
            if String(validatingCString: raw) == nil {
                let previous = i > 1 ? CommandLine.unsafeArgv[i - 1].flatMap { String(validatingCString: $0) } : nil
                let after = previous.map { " (after \($0))" } ?? ""
                return "argument \(i)\(after) is not valid UTF-8; names and values are kept byte for byte, so they must be valid UTF-8"
            }
        }
        return nil
    }
}

@main
struct CofferCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "coffer",
        abstract: "Coffer: encrypted local storage for mobile apps.",
        discussion: """
            Exit codes: 0 ok, 1 not found, 2 invalid input or query, 3 duplicate, 4 wrong key, \
            5 corrupted, 6 storage failure, 7 sending queue full.
            """,
        subcommands: [
            WalletCommand.self, DeniableCommand.self, SettingsCommand.self, DBCommand.self, CacheCommand.self,
            CleanupCommand.self, ResetCommand.self, SecureCommand.self, SDKCommand.self, DemoCommand.self, BenchCommand.self,
        ])

    @OptionGroup var storeOptions: StoreOptions
    /// Accepted before the subcommand name (`coffer --raw-key-env VAR wallet …`, `coffer --passphrase-env VAR
    /// deniable unlock`); each command that uses a key shows its own options in its help.
    @OptionGroup(visibility: .hidden) var walletKey: WalletKeyOptions
    /// `coffer --profile NAME wallet …` (see ``ProfileOptions``).
    @OptionGroup(visibility: .hidden) var profileOptions: ProfileOptions
    /// `coffer --wallet-url URL wallet …` (see ``WalletURLOptions``).
    @OptionGroup(visibility: .hidden) var urlOptions: WalletURLOptions

    /// Errors are printed as `error: …`, as every other failure of the command line.
    static var _errorPrefix: String { "error: " }

    /// Runs the command and turns every failure into `error: …` on stderr and the contract's exit code.
    static func main() async {
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            let level = ProcessInfo.processInfo.environment["COFFER_LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:))
            handler.logLevel = level ?? .warning
            return handler
        }
        if let message = CLIInput.invalidArgument() { fail(message, code: 2) }
        do {
            var command = try parseAsRoot()
            try StoreOptions.find(in: command)?.finishStoppedReset()
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch let error as WalletError {
            fail(error.description, code: ExitCodes.code(for: error))
        } catch let error as DeniableError {
            fail(error.description, code: ExitCodes.code(for: error))
        } catch let error as DatabaseStoreError {
            fail(error.description, code: ExitCodes.code(for: error))
        } catch let error as SecureStorageError {
            fail(error.description, code: ExitCodes.code(for: error))
        } catch let error as MediaCacheError {
            if case .invalidInput = error { fail(error.description, code: 2) }
            fail(error.description, code: 6)
        } catch let error as ContainerError {
            fail(error.description, code: 6)
        } catch let error as SettingsCLIError {
            fail(error.description, code: error.exitCode)
        } catch let error as SettingsError {
            if case .storage(_, let cause) = error { fail(error.description, code: cause?.isDamaged == true ? 5 : 6) }
            if error == .closed { fail(error.description, code: 6) }
            fail(error.description, code: 2)
        } catch {
            // A storage error that reached here unwrapped (SQLite's or the system's: a store
            // removed by a reset running meanwhile) is a storage failure, not a usage error.
            if !(error is ExitCode), let cause = StorageCause(error) {
                fail("storage: \(error); retry the command", code: cause.isDamaged ? 5 : 6)
            }
            let code = exitCode(for: error)
            if code == .success { exit(withError: error) } // --help, --version
            if error is ExitCode { exit(withError: error) }
            // A command line the parser refused: the message, the usage of the (sub)command that
            // failed and the parser's hint; a mistyped subcommand name is named with the closest one.
            let text = CommandSuggestion.unknownSubcommand(in: Array(CommandLine.arguments.dropFirst())) ?? fullMessage(for: error)
            StandardError.endProgressLine()
            FileHandle.standardError.write(Data((text.hasSuffix("\n") ? text : text + "\n").utf8))
            Foundation.exit(2)
        }
    }

    static func fail(_ message: String, code: Int32) -> Never {
        StandardError.endProgressLine()
        FileHandle.standardError.write(Data("error: \(message)\n".utf8))
        Foundation.exit(code)
    }
}

/// The exit codes of the command-line contract.
enum ExitCodes {
    static func code(for error: WalletError) -> Int32 {
        switch error {
        case .notFound, .walletMissing: return 1
        case .invalidInput, .invalidQuery, .invalidHandle: return 2
        case .duplicate, .walletExists: return 3
        case .wrongKey: return 4
        case .corrupted: return 5
        case .storage, .closed: return 6
        }
    }
}

extension ExitCodes {
    /// App-database errors: a clash is a duplicate, a newer or damaged file is corrupted-like.
    static func code(for error: DatabaseStoreError) -> Int32 {
        switch error {
        case .uniqueViolation: return 3
        case .invalidInput: return 2
        case .newerVersion, .integrityFailed, .unreadableRow: return 5
        // A damaged file, or one that is not a database, is corrupted, as a wallet's is.
        case .storage(_, let cause): return cause?.isDamaged == true ? 5 : 6
        case .closed: return 6
        }
    }

    /// Secure-storage errors: bad names and values are input errors, a failed check is corruption.
    static func code(for error: SecureStorageError) -> Int32 {
        switch error {
        case .invalidName, .invalidValue: return 2
        case .corrupted, .keyLost: return 5
        case .keyFile, .unavailable, .storage, .closed: return 6
        }
    }

    /// Deniable-storage errors on the same scale: a failed unlock is a wrong key.
    static func code(for error: DeniableError) -> Int32 {
        switch error {
        case .noVerifiedKeys: return 1
        case .invalidPassphrase, .invalidInput, .locked: return 2
        case .unlockFailed: return 4
        case .corrupted: return 5
        case .storage, .secureElement: return 6
        case .queueFull: return 7
        }
    }
}
