// `coffer wallet import`, `import-indy`, `import-askar` and `import-backup` on either backend: a
// SQLite wallet file, or (a build with the package trait `PostgreSQL`) a profile in a PostgreSQL
// database named by `--wallet-url` / `$COFFER_WALLET_URL`, where the records go in with COPY.

import Coffer
import CofferCLISupport
import Foundation

#if PostgreSQL
extension WalletCommand.ImportBackup {
    /// On PostgreSQL: restores the backup as a new profile of the database (one transaction),
    /// and prints what the SQLite restore prints, the database's URL (without its password) in
    /// place of the file's path. False when the wallet is a SQLite file.
    func importIntoPostgres() async throws -> Bool {
        guard case .postgres(let url) = try walletOptions.location() else { return false }
        let passphrase = try CLIKeys.passphrase(fromEnvironment: backupPassphraseEnv, option: "--backup-passphrase-env")
        let bar = Progress(label: "import", total: 0)
        let wallet = try await PostgresWallet.importBackup(
            from: URL(fileURLWithPath: file), passphrase: passphrase, settings: PostgresSettings(url: url), key: walletOptions.walletKey(),
            profile: walletOptions.profile
        ) { bar.update($0.done, of: $0.total) }
        bar.finish()
        wallet.close()
        var members: [(String, JSONValue)] = [("imported", .string(url.description))]
        if let profile = walletOptions.profileOptions.profile { members.append(("profile", .string(profile))) }
        print(JSONValue.object(members).jsonText)
        return true
    }
}
#endif
