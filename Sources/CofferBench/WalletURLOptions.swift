// `--wallet-url URL`, declared once for the `coffer` command line and its benchmarks: the argument
// parser hands an option's value between commands by the type that declares it, so the root,
// `coffer wallet`, every wallet command and `coffer bench wallet` share this one type.

import ArgumentParser
import Coffer
import Foundation

/// `--wallet-url URL`: where the wallet lives (a PostgreSQL database or a SQLite file), else
/// `$COFFER_WALLET_URL`, else the store's `wallet.sqlite`. Declared by the root, `coffer wallet`
/// and every wallet command, so it is accepted before or after the subcommand name, as
/// `--profile` and the key options are.
package struct WalletURLOptions: ParsableArguments {
    /// The option's text, nil when not given.
    @Option(
        name: .customLong("wallet-url"),
        help: ArgumentHelp(
            "Where the wallet lives: postgres://USER:PASSWORD@HOST:PORT/DB[?sslmode=…&max_connections=N] (a build with the PostgreSQL trait) or sqlite://PATH (default: $COFFER_WALLET_URL, else the store's wallet.sqlite).",
            valueName: "url"))
    package var walletURL: String?

    /// An empty group; the parser fills it in.
    package init() {}

    /// Where the wallet is when the store's own file is `defaultFile` (see
    /// ``WalletLocation/resolve(option:environment:defaultFile:)``).
    package func location(defaultFile: URL) throws -> WalletLocation {
        try WalletLocation.resolve(option: walletURL, defaultFile: defaultFile)
    }
}
