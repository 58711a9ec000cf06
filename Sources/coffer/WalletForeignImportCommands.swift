// `coffer wallet import-indy` and `import-askar`: bring a libindy wallet or an Askar store profile
// into the store's wallet, all or nothing, the source left untouched.

import ArgumentParser
import Coffer
import CofferCLISupport
import Foundation

/// The source store's key, given one way: an environment variable or an owner-only file.
struct SourceKeyOptions: ParsableArguments {
    @Option(
        name: .customLong("source-key-env"),
        help: ArgumentHelp("Name of an environment variable holding the source's key (base58 raw key or passphrase).", valueName: "var"))
    var sourceKeyEnv: String?

    @Option(
        name: .customLong("source-key-file"),
        help: ArgumentHelp(
            "A file holding the source's key (refused when group or others may read it; one trailing newline is dropped).",
            valueName: "file"))
    var sourceKeyFile: String?

    func validate() throws {
        switch (sourceKeyEnv, sourceKeyFile) {
        case (nil, nil): throw ValidationError("give the source's key: --source-key-env VAR or --source-key-file FILE")
        case (.some, .some): throw ValidationError("give --source-key-env or --source-key-file, not both")
        default: break
        }
    }

    /// The key's text.
    func key() throws -> String {
        if let sourceKeyEnv { return try CLIKeys.environment(sourceKeyEnv, option: "--source-key-env") }
        var text = try CLIKeys.ownerOnlyFile(sourceKeyFile!, option: "--source-key-file")
        if text.hasSuffix("\r\n") {
            text.removeLast(2)
        } else if text.hasSuffix("\n") {
            text.removeLast()
        }
        guard !text.isEmpty else { throw WalletError.invalidInput("--source-key-file: \(sourceKeyFile!) is empty") }
        return text
    }
}

extension WalletCommand {
    /// `{"imported": N, "source": S, "profile"?: P, "types": {TYPE: N, …}}`.
    static func importSummary(_ summary: ForeignImportSummary, source: String) -> String {
        var members: [(String, JSONValue)] = [("imported", .number(String(summary.imported))), ("source", .string(source))]
        if let profile = summary.profile { members.append(("profile", .string(profile))) }
        members.append(("types", .object(summary.types.map { ($0.type, .number(String($0.count))) })))
        return JSONValue.object(members).jsonText
    }

    struct ImportIndy: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "import-indy",
            abstract:
                "Import every record of a libindy (Indy SDK / Evernym) wallet, all or nothing; prints {\"imported\": N, \"source\": \"indy\", \"types\": {TYPE: N}}.",
            discussion:
                "The source is opened read-only and left byte-identical. Exit 4: wrong source key; 3: a (type, id) the wallet already has; 5: a damaged source row; 2: not a libindy wallet."
        )
        @Argument(help: ArgumentHelp("The libindy wallet's SQLite file (sqlite.db).", valueName: "source")) var source: String
        @OptionGroup(title: "Source key (one of)") var sourceKey: SourceKeyOptions
        @Option(
            name: .customLong("source-kdf"),
            help: ArgumentHelp(
                "How libindy derived the master key: raw (base58 key), argon2i-mod or argon2i-int (passphrase).", valueName: "kdf"))
        var sourceKDF: String = "raw"
        @OptionGroup var walletOptions: WalletOptions

        func validate() throws {
            guard IndyKeyDerivation(rawValue: sourceKDF) != nil else {
                throw ValidationError("--source-kdf must be raw, argon2i-mod or argon2i-int, not \(sourceKDF)")
            }
        }

        func run() async throws {
            let key = try sourceKey.key()
            let summary = try await walletOptions.withRecords { wallet in
                let progress = Progress(label: "import-indy", total: 0)
                defer { progress.finish() }
                return try await wallet.importIndyWallet(
                    at: URL(fileURLWithPath: source), key: key, keyDerivation: IndyKeyDerivation(rawValue: sourceKDF)!
                ) { p in progress.update(p.rowsRead, of: p.totalRows) }
            }
            print(WalletCommand.importSummary(summary, source: "indy"))
        }
    }

    struct ImportAskar: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "import-askar",
            abstract:
                "Import one profile of an Aries Askar store, all or nothing; prints {\"imported\": N, \"source\": \"askar\", \"profile\": NAME, \"types\": {TYPE: N}} (NAME: the Askar profile read).",
            discussion:
                "The store's key method (raw, Argon2i, none) is read from the store. Expired records are not imported; the others keep their expiry. --profile NAME reads the Askar profile NAME into the Coffer profile NAME (which must exist: wallet create --profile NAME); --source-profile NAME reads another Askar profile. The source is opened read-only and left byte-identical. Exit 4: wrong source key; 3: a (type, id) the wallet already has; 5: a damaged source row; 2: not an Askar store, or a record Coffer cannot hold."
        )
        @Argument(help: ArgumentHelp("The Askar store's SQLite file.", valueName: "source")) var source: String
        @OptionGroup(title: "Source key (one of)") var sourceKey: SourceKeyOptions
        @Option(
            name: .customLong("source-profile"),
            help: ArgumentHelp(
                "The Askar profile to import when it differs from --profile (default: the --profile name, else the Askar store's default profile).",
                valueName: "name"))
        var sourceProfile: String?
        @Flag(
            name: .customLong("skip-keys"),
            help: "Pass over the keys Askar's key manager holds (their values are CBOR, which a record cannot hold) instead of refusing.")
        var skipKeys = false
        @OptionGroup var walletOptions: WalletOptions

        func run() async throws {
            let key = try sourceKey.key()
            // `--profile NAME` (issue 34's contract) names the Askar profile, imported into the
            // Coffer profile of the same name; `--source-profile` names the source alone.
            let sourceProfile = sourceProfile ?? walletOptions.profileOptions.profile
            let summary = try await walletOptions.withRecords { wallet in
                let progress = Progress(label: "import-askar", total: 0)
                defer { progress.finish() }
                return try await wallet.importAskarStore(
                    at: URL(fileURLWithPath: source), key: key, profile: sourceProfile, skipKeyEntries: skipKeys
                ) {
                    p in progress.update(p.rowsRead, of: p.totalRows)
                }
            }
            if summary.keysSkipped > 0 { StandardError.note("passed over \(summary.keysSkipped) key entries (--skip-keys)") }
            print(WalletCommand.importSummary(summary, source: "askar"))
        }
    }
}
