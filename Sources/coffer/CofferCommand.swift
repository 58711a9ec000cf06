// The `coffer` command line: a contract other tools drive (exit codes and output formats are fixed).
import ArgumentParser
import Coffer
import Foundation
import Logging

/// Options every store-touching command takes, given before or after the subcommand name.
struct StoreOptions: ParsableArguments {
    @Option(name: .long, help: "Store folder (default: $COFFER_HOME, else the platform's application-data folder).")
    var store: String?

    @Option(name: .customLong("raw-key"), help: "The wallet's raw 32-byte key, base64.")
    var rawKey: String?

    @Option(name: .customLong("passphrase-env"), help: "Name of an environment variable holding the wallet passphrase.")
    var passphraseEnv: String?

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

    func walletKey() throws -> WalletKey {
        switch (rawKey, passphraseEnv) {
        case (nil, nil):
            throw WalletError.invalidInput("give the wallet key: --raw-key BASE64 or --passphrase-env VAR")
        case (.some, .some):
            throw WalletError.invalidInput("give either --raw-key or --passphrase-env, not both")
        case let (raw?, nil):
            return .raw(try CLIKeys.decodeRawKey(raw, option: "--raw-key"))
        case let (nil, variable?):
            return .passphrase(try CLIKeys.passphrase(fromEnvironment: variable, option: "--passphrase-env"))
        }
    }

    func openWallet() async throws -> Wallet {
        try await Wallet.open(at: walletURL, key: walletKey())
    }
}

enum CLIKeys {
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
        guard let value = ProcessInfo.processInfo.environment[variable] else {
            throw WalletError.invalidInput("\(option): environment variable \(variable) is not set")
        }
        guard !value.isEmpty else { throw WalletError.invalidInput("\(option): environment variable \(variable) is empty") }
        return value
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
        subcommands: [WalletCommand.self, DeniableCommand.self, SettingsCommand.self, DBCommand.self, CacheCommand.self,
                      CleanupCommand.self, ResetCommand.self, SecureCommand.self, DemoCommand.self, BenchCommand.self])

    @OptionGroup var storeOptions: StoreOptions

    /// Runs the command and turns every failure into `error: …` on stderr and the contract's exit code.
    static func main() async {
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            let level = ProcessInfo.processInfo.environment["COFFER_LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:))
            handler.logLevel = level ?? .warning
            return handler
        }
        do {
            var command = try parseAsRoot()
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
        } catch let error as SettingsError {
            if case .storage = error { fail(error.description, code: 6) }
            fail(error.description, code: 2)
        } catch {
            let code = exitCode(for: error)
            if code == .success { exit(withError: error) } // --help, --version
            if error is ExitCode { exit(withError: error) }
            fail(message(for: error) + "\n" + usageString(), code: 2)
        }
    }

    static func fail(_ message: String, code: Int32) -> Never {
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
        case .storage: return 6
        }
    }
}

extension ExitCodes {
    /// App-database errors: a clash is a duplicate, a newer or damaged file is corrupted-like.
    static func code(for error: DatabaseStoreError) -> Int32 {
        switch error {
        case .uniqueViolation: return 3
        case .invalidInput: return 2
        case .newerVersion, .integrityFailed: return 5
        case .storage: return 6
        }
    }

    /// Secure-storage errors: bad names and values are input errors, a failed check is corruption.
    static func code(for error: SecureStorageError) -> Int32 {
        switch error {
        case .invalidName, .invalidValue: return 2
        case .corrupted: return 5
        case .keyFile, .unavailable, .storage: return 6
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

/// Writes to stderr (progress, notes) without touching stdout, which carries results.
enum StandardError {
    static func write(_ s: String) {
        FileHandle.standardError.write(Data(s.utf8))
    }
}
