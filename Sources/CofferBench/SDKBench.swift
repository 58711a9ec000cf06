// `coffer bench sdk`: state-machine JSON round trips, and the public-key crypto calls.

import ArgumentParser
import Coffer
import CofferCLISupport
import Foundation

struct SDKBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sdk",
        abstract:
            "Serialize + deserialize round trips over many machines, sign / verify / seal / open per second, and wallet-held keys against libsodium C.",
        discussion:
            "Benchmarks/compare-crypto.sh runs the same crypto calls from a small C program against libsodium and prints the ratios.")

    @Option(help: "State machines to round-trip.") var machines: Int = 10_000
    @Option(help: "Calls per crypto operation.") var calls: Int = 20_000
    @Option(name: .customLong("message-bytes"), help: "Message size for the crypto calls.") var messageBytes: Int = 100
    @Option(
        name: .customLong("backup-records"),
        help: "Records in the wallet whose backup export and restore are measured (time and peak resident memory); 0 skips it.")
    var backupRecords: Int = 150_000
    @Flag(help: "Print one JSON object instead of a table.") var json = false

    func validate() throws {
        guard backupRecords >= 0 else { throw ValidationError("--backup-records must be 0 or more") }
        guard machines >= 1, calls >= 1, messageBytes >= 1 else {
            throw ValidationError("--machines, --calls and --message-bytes must be at least 1")
        }
    }

    func run() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("coffer-bench-sdk-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let wallet = try await Wallet.create(at: folder.appendingPathComponent("wallet.sqlite"), key: .raw(WalletKey.generateRawKey()))
        defer { try? wallet.close() }
        let sm = StateMachines(wallet: wallet, protocol: NoNetwork())
        let offer = CredentialOffer(
            issuerDID: "did:sov:issuer", schemaID: "schema:bench:1.0", credentialDefinitionID: "creddef:bench:1",
            attributes: ["name": "Alice", "age": "30", "degree": "MSc", "year": "2020"])
        let handles = (0..<machines).map { _ in sm.credentialCreate(offer: offer) }
        let (_, tRound) = try await Clock.time {
            for h in handles {
                let restored = try await sm.deserialize(try sm.serialize(h), as: .credential)
                try sm.release(restored)
            }
        }
        var results: [(String, Double)] = [("state_machine_round_trips_per_sec", Double(machines) / tRound)]

        let message = SecureRandom.bytes(messageBytes)
        let signer = Ed25519KeyPair.generate()
        let signature = signer.sign(message)
        let recipient = X25519KeyPair.generate()
        let box = try SealedBox.seal(message, to: recipient.publicKey)
        var ok = true
        let (_, tSign) = await Clock.time { for _ in 0..<calls { _ = signer.sign(message) } }
        let (_, tVerify) = await Clock.time {
            for _ in 0..<calls { ok = ok && Ed25519KeyPair.verify(signature: signature, message: message, publicKey: signer.publicKey) }
        }
        let (_, tSeal) = try await Clock.time { for _ in 0..<calls { _ = try SealedBox.seal(message, to: recipient.publicKey) } }
        let (_, tOpen) = try await Clock.time { for _ in 0..<calls { _ = try recipient.openSealed(box) } }
        guard ok else { throw WalletError.corrupted("a benchmark signature failed to verify") }
        results += [
            ("sign_per_sec", Double(calls) / tSign), ("verify_per_sec", Double(calls) / tVerify),
            ("seal_per_sec", Double(calls) / tSeal), ("open_per_sec", Double(calls) / tOpen),
        ]
        // Keys held in the wallet against libsodium's C calls with the key in memory.
        results += try await HeldKeyBench.run(wallet: wallet, calls: calls, messageBytes: messageBytes)
        if backupRecords > 0 {
            StandardError.write("coffer: backup of \(backupRecords) records …\n")
            results += try await BackupMemoryBench.run(records: backupRecords, folder: folder)
        }
        if json {
            var fields = results.map { ($0.0, JSONValue.number(String(format: Self.isRatio($0.0) ? "%.2f" : "%.1f", $0.1))) }
            fields += [
                ("machines", .number(String(machines))), ("calls", .number(String(calls))),
                ("message_bytes", .number(String(messageBytes))),
            ]
            print(JSONValue.object([("tool", .string("coffer bench sdk")), ("results", .object(fields))]).jsonText)
        } else {
            for (k, v) in results {
                print(k.padding(toLength: 36, withPad: " ", startingAt: 0), String(format: Self.isRatio(k) ? "%12.2f" : "%12.1f", v))
            }
        }
    }

    /// Ratios print with two decimals, rates with one.
    static func isRatio(_ key: String) -> Bool { key.contains("_over_") }

    struct NoNetwork: AriesProtocol {
        func send(_ message: OutboundMessage) async throws {}
    }
}
