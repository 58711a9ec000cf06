// `coffer sdk init`: the SDK's zero-configuration wallet of a store.

import ArgumentParser
import Coffer
import Foundation

struct SDKCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sdk",
        abstract: "The SDK's default wallet: made, keyed from secure storage and provisioned on first run.",
        subcommands: [Init.self])

    @OptionGroup var storeOptions: StoreOptions

    struct Init: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "init",
            abstract:
                "Initialise the SDK: on first run create the default wallet with a random key kept in secure storage, the credential master secret and the cloud agent's key; later runs open it. Prints {\"sdk\": {\"wallet\", \"created\", \"agentVerkey\", \"masterSecret\"}} (never the key).",
            discussion:
                "Processes running it at once make one wallet and one key. `coffer reset --yes` removes the wallet and its key with the rest of the store."
        )
        @OptionGroup var storeOptions: StoreOptions

        func run() async throws {
            let sdk = try await CofferSDK.initialize(storeOptions.locations)
            defer { sdk.close() }
            let masterSecret = try await sdk.wallet.hasMasterSecret()
            print(
                JSONValue.object([
                    (
                        "sdk",
                        .object([
                            ("wallet", .string(sdk.wallet.path)), ("created", .bool(sdk.createdWallet)),
                            ("agentVerkey", .string(sdk.provisioning.agentVerkey)), ("masterSecret", .bool(masterSecret)),
                        ])
                    )
                ]).jsonText)
        }
    }
}
