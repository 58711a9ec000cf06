// `coffer wallet key …`: the wallet's keys, used through the wallet (no command prints a private key),
// in a wallet file or, with `--wallet-url postgres://…`, in a PostgreSQL profile.

import ArgumentParser
import Coffer
import Foundation

struct WalletKeyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "key",
        abstract: "Create and use keys held in the wallet; only public keys are ever printed.",
        subcommands: [Create.self, List.self, Sign.self, Verify.self, Seal.self, Open.self])

    static func bytes(_ base64: String, _ what: String) throws -> Data {
        guard let data = Data(base64Encoded: base64) else { throw WalletError.invalidInput("\(what) is not valid base64") }
        return data
    }

    static func kind(_ text: String) throws -> WalletKeyKind {
        guard let kind = WalletKeyKind(rawValue: text) else {
            throw WalletError.invalidInput("--kind must be ed25519 or x25519, got \"\(text)\"")
        }
        return kind
    }

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Create a key pair; prints {\"verkey\": BASE58}.")
        @Option(help: "ed25519 (signing) or x25519 (key agreement).") var kind = "ed25519"
        @OptionGroup var walletOptions: WalletOptions

        func run() async throws {
            let kind = try WalletKeyCommand.kind(kind)
            let verkey = try await walletOptions.withRecords { try await $0.createKey(kind) }
            print(JSONValue.object([("verkey", .string(verkey))]).jsonText)
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the public keys the wallet holds.")
        @OptionGroup var walletOptions: WalletOptions

        func run() async throws {
            let keys = try await walletOptions.withRecords { try await $0.listKeys() }.map {
                JSONValue.object([("verkey", .string($0.verkey)), ("kind", .string($0.kind.rawValue))])
            }
            print(JSONValue.array(keys).jsonText)
        }
    }

    struct Sign: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Sign base64 MESSAGE with a held Ed25519 key; prints {\"signature\": B64}.")
        @Argument(help: "The held Ed25519 key's public key (Base58), as key create printed it.") var verkey: String
        @Argument(help: "The message to sign, base64.") var message: String
        @OptionGroup var walletOptions: WalletOptions

        func run() async throws {
            let data = try WalletKeyCommand.bytes(message, "MESSAGE")
            let signature = try await walletOptions.withRecords { try await $0.sign(data, with: verkey) }
            print(JSONValue.object([("signature", .string(signature.base64EncodedString()))]).jsonText)
        }
    }

    struct Verify: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Check an Ed25519 signature (base64) of base64 MESSAGE by VERKEY; prints {\"valid\": BOOL}, exit 2 when invalid.")
        @Argument(help: "The signer's Ed25519 public key (Base58).") var verkey: String
        @Argument(help: "The signed message, base64.") var message: String
        @Argument(help: "The signature, base64.") var signature: String

        func run() async throws {
            let valid = try Wallet.verify(
                signature: WalletKeyCommand.bytes(signature, "SIGNATURE"),
                message: WalletKeyCommand.bytes(message, "MESSAGE"), verkey: verkey)
            print(JSONValue.object([("valid", .bool(valid))]).jsonText)
            if !valid { throw WalletError.invalidInput("the signature does not verify") }
        }
    }

    struct Seal: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Seal base64 MESSAGE to RECIPIENT (Base58 public key); prints {\"box\": B64}.")
        @Argument(help: "The recipient's public key (Base58).") var recipient: String
        @Argument(help: "The message to seal, base64.") var message: String
        @Option(help: "The recipient key's kind: x25519 or ed25519.") var kind = "x25519"

        func run() async throws {
            let box = try Wallet.sealedBox(
                WalletKeyCommand.bytes(message, "MESSAGE"), to: recipient,
                recipientKind: WalletKeyCommand.kind(kind))
            print(JSONValue.object([("box", .string(box.base64EncodedString()))]).jsonText)
        }
    }

    struct Open: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Open a sealed box (base64) addressed to a held key; prints {\"message\": B64}.")
        @Argument(help: "The held key the box is addressed to (Base58 public key).") var verkey: String
        @Argument(help: "The sealed box, base64.") var box: String
        @OptionGroup var walletOptions: WalletOptions

        func run() async throws {
            let data = try WalletKeyCommand.bytes(box, "BOX")
            let message = try await walletOptions.withRecords { try await $0.openSealedBox(data, with: verkey) }
            print(JSONValue.object([("message", .string(message.base64EncodedString()))]).jsonText)
        }
    }
}
