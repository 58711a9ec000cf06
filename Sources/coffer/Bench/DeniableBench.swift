// `coffer bench deniable`: unlock time beside Argon2id alone, and save time against fill.
import ArgumentParser
import Coffer
import Foundation

struct DeniableBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "deniable",
        abstract: "Unlock time beside libsodium's Argon2id for the same costs, and vault save time empty vs full.")

    @Option(help: "Unlock and save repetitions.") var repeats: Int = 5
    @Option(name: .customLong("ops"), help: "Argon2id opslimit (default: MODERATE).") var ops: UInt64?
    @Option(name: .customLong("mem-mib"), help: "Argon2id memlimit in MiB (default: MODERATE).") var memMiB: Int?
    @Flag(help: "Print one JSON object instead of a table.") var json = false

    func validate() throws {
        guard repeats >= 1 else { throw ValidationError("--repeats must be at least 1") }
    }

    func run() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("coffer-bench-deniable-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        var config = DeniableConfiguration()
        if let ops { config.passphraseKDF.opsLimit = ops }
        if let memMiB { config.passphraseKDF.memLimit = memMiB << 20 }
        config.queueSlots = 1024
        let node = try DevelopmentCoverNode(folder: folder.appendingPathComponent("dev"), configuration: config)
        let store = try await DeniableStorage(folder: folder.appendingPathComponent("deniable"), configuration: config,
                                              trustAnchor: node.trustAnchor, keySource: node)
        let passphrase = try await store.createVault()

        // Argon2id alone (same costs, output length and passphrase, fresh salt) and a whole unlock,
        // in alternation so both see the same machine load; the ratio is taken per pair.
        var argon = [Double](), unlock = [Double](), ratio = [Double](), saveEmpty = [Double](), saveFull = [Double]()
        for _ in 0..<repeats {
            let salt = SecureRandom.bytes(16)
            let (_, a) = try await Clock.time { _ = try Argon2id.deriveKey(passphrase: passphrase, salt: salt, parameters: config.passphraseKDF) }
            argon.append(a)
            let (_, t) = try await Clock.time { try await store.unlock(passphrase: passphrase) }
            unlock.append(t)
            ratio.append(t / a)
            let (_, s) = try await Clock.time { try await store.lock() }
            saveEmpty.append(s)
        }
        // Fill the mailbox until the vault trims (~512 KiB of messages).
        try await store.unlock(passphrase: passphrase)
        let text = String(repeating: "lorem ipsum ", count: 50)
        var sent = 0
        while sent < 1_000 {
            try await store.send(text, to: "journalist")
            _ = try await store.dequeue()
            sent += 1
        }
        let held = try await store.mailbox().count
        try await store.lock()
        for _ in 0..<repeats {
            try await store.unlock(passphrase: passphrase)
            let (_, s) = try await Clock.time { try await store.lock() }
            saveFull.append(s)
        }
        let med = { (xs: [Double]) in xs.sorted()[xs.count / 2] }
        let results: [(String, Double)] = [
            ("argon2id_alone_s", med(argon)), ("unlock_s", med(unlock)), ("unlock_over_argon2id", med(ratio)),
            ("save_empty_s", med(saveEmpty)), ("save_full_s", med(saveFull)), ("save_full_over_empty", med(saveFull) / med(saveEmpty)),
        ]
        if json {
            var fields: [(String, JSONValue)] = results.map { ($0.0, .number(String(format: "%.6f", $0.1))) }
            fields.append(("full_vault_messages", .number(String(held))))
            fields.append(("kdf", .string(config.passphraseKDF.description)))
            fields.append(("vault_file_bytes", .number(String(Vault.fileLength(contentBytes: config.vaultContentBytes)))))
            print(JSONValue.object([("tool", .string("coffer bench deniable")), ("results", .object(fields))]).jsonText)
        } else {
            print("deniable storage, \(config.passphraseKDF), vault \(Vault.fileLength(contentBytes: config.vaultContentBytes)) bytes, full = \(held) messages")
            for (k, v) in results { print(k.padding(toLength: 24, withPad: " ", startingAt: 0), String(format: "%.4f", v)) }
        }
    }
}
