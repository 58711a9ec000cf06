// `coffer bench deniable`: unlock time beside Argon2id alone, save time against fill, and what
// the app-start routine costs (the queue rewrite on its own, and the whole start).

import ArgumentParser
import Coffer
import CofferDevelopment
import Foundation

struct DeniableBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "deniable",
        abstract:
            "Unlock time beside libsodium's Argon2id for the same costs, vault save time empty vs full, queue rewrite and app-start time.")

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
        func open(_ name: String) async throws -> DeniableStorage {
            try await DeniableStorage(
                folder: folder.appendingPathComponent(name), configuration: config,
                trustAnchor: node.trustAnchor, keySource: node)
        }
        let store = try await open("deniable")
        let passphrase = try await store.createVault()

        let (argon, unlock, ratio) = try await unlockBesideArgon2id(store, passphrase: passphrase, config: config)
        let (full, fullPassphrase, held) = try await fullVault(open)
        let (saveEmpty, saveFull, saveRatio) = try await saves(store, passphrase: passphrase, full: full, fullPassphrase: fullPassphrase)
        let (start, rewrite) = try await appStartAndQueueRewrite(store, folder: folder)
        let rounds = try secureElementRounds(config, folder: folder)
        let med = { (xs: [Double]) in xs.sorted()[xs.count / 2] }
        let results: [(String, Double)] = [
            ("argon2id_alone_s", med(argon)), ("unlock_s", med(unlock)), ("unlock_over_argon2id", med(ratio)),
            ("save_empty_s", med(saveEmpty)), ("save_full_s", med(saveFull)), ("save_full_over_empty", med(saveRatio)),
            ("queue_rewrite_s", med(rewrite)), ("app_start_s", med(start)),
            ("secure_element_rounds_s", med(rounds)),
        ]
        printResults(results, config: config, held: held)
    }

    /// Argon2id alone (same costs, output length and passphrase, fresh salt) and a whole unlock,
    /// in alternation so both see the same machine load; the ratio is taken per pair.
    func unlockBesideArgon2id(
        _ store: DeniableStorage, passphrase: String, config: DeniableConfiguration
    ) async throws -> (argon: [Double], unlock: [Double], ratio: [Double]) {
        var argon = [Double]()
        var unlock = [Double]()
        var ratio = [Double]()
        for _ in 0..<repeats {
            let salt = SecureRandom.bytes(16)
            let (_, a) = try await Clock.time {
                _ = try Argon2id.deriveKey(passphrase: passphrase, salt: salt, parameters: config.passphraseKDF)
            }
            argon.append(a)
            let (_, t) = try await Clock.time { try await store.unlock(passphrase: passphrase) }
            unlock.append(t)
            ratio.append(t / a)
            try await store.lock()
        }
        return (argon, unlock, ratio)
    }

    /// A second vault, filled until it trims (~512 KiB of messages); returns it locked, with its
    /// passphrase and the number of messages it holds.
    func fullVault(
        _ open: (String) async throws -> DeniableStorage
    ) async throws -> (full: DeniableStorage, passphrase: String, held: Int) {
        let full = try await open("deniable-full")
        let fullPassphrase = try await full.createVault()
        try await full.unlock(passphrase: fullPassphrase)
        let text = String(repeating: "lorem ipsum ", count: 50)
        var sent = 0
        while sent < 1_000 {
            try await full.send(text, to: "journalist")
            _ = try await full.dequeue()
            sent += 1
        }
        let held = try await full.mailbox().count
        try await full.lock()
        return (full, fullPassphrase, held)
    }

    /// Per repeat: saves of the empty and of the full vault, and their ratio.
    func saves(
        _ store: DeniableStorage, passphrase: String, full: DeniableStorage, fullPassphrase: String
    ) async throws -> (empty: [Double], full: [Double], ratio: [Double]) {
        var saveEmpty = [Double]()
        var saveFull = [Double]()
        var saveRatio = [Double]()
        // Saves of the empty and the full vault in alternation (each save is the lock that ends a
        // session: trim, encode, two seals, atomic durable write); the ratio is taken per pair.
        // The order within a pair alternates, so neither side always follows the unlocks.
        for round in 0..<repeats {
            try await store.unlock(passphrase: passphrase)
            try await full.unlock(passphrase: fullPassphrase)
            var e = 0.0
            var f = 0.0
            if round % 2 == 0 {
                e = try await Clock.time { try await store.lock() }.1
                f = try await Clock.time { try await full.lock() }.1
            } else {
                f = try await Clock.time { try await full.lock() }.1
                e = try await Clock.time { try await store.lock() }.1
            }
            saveEmpty.append(e)
            saveFull.append(f)
            saveRatio.append(f / e)
        }
        return (saveEmpty, saveFull, saveRatio)
    }

    /// The app-start routine's times and the default queue's rewrite times.
    func appStartAndQueueRewrite(_ store: DeniableStorage, folder: URL) async throws -> (start: [Double], rewrite: [Double]) {
        // The app-start routine on this store (keys fresh, no dead-drop source: only file work),
        // and the default 8-slot queue's rewrite alone (storage-key HKDF, seal, atomic write).
        var start = [Double]()
        var rewrite = [Double]()
        let defaults = DeniableConfiguration()
        let queue = try SendingQueue(
            url: folder.appendingPathComponent("queue-bench"), slots: defaults.queueSlots,
            itemBytes: defaults.queueItemBytes, storageKey: SecretKey.random(byteCount: 32)
        ) {
            SecureRandom.bytes(defaults.queueItemBytes)
        }
        for _ in 0..<max(repeats, 5) {
            start.append(try await Clock.time { try await store.appDidStart() }.1)
            rewrite.append(try await Clock.time { try queue.rewrite() }.1)
        }
        return (start, rewrite)
    }

    /// The device-bound part of an unlock alone: the configuration's rounds of key agreement
    /// with the file stand-in (on a phone they run in the Secure Enclave, about 5 ms each).
    func secureElementRounds(_ config: DeniableConfiguration, folder: URL) throws -> [Double] {
        let element = FileSecureElement(keyFile: folder.appendingPathComponent("rounds-bench.key"))
        _ = try element.prepare()
        var times = [Double]()
        for _ in 0..<max(repeats, 5) {
            let input = SecretKey.random()
            let salt = SecureRandom.bytes(16)
            let started = DispatchTime.now().uptimeNanoseconds
            _ = try DeviceCost.derive(input, salt: salt, rounds: config.secureElementRounds, secureElement: element)
            times.append(Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9)
        }
        return times
    }

    /// The results as one JSON object or as a table, on stdout.
    func printResults(_ results: [(String, Double)], config: DeniableConfiguration, held: Int) {
        if json {
            var fields: [(String, JSONValue)] = results.map { ($0.0, .number(String(format: "%.6f", $0.1))) }
            fields.append(("full_vault_messages", .number(String(held))))
            fields.append(("kdf", .string(config.passphraseKDF.description)))
            fields.append(("secure_element_rounds", .number(String(config.secureElementRounds))))
            fields.append(("vault_file_bytes", .number(String(Vault.fileLength(contentBytes: config.vaultContentBytes)))))
            print(JSONValue.object([("tool", .string("coffer bench deniable")), ("results", .object(fields))]).jsonText)
        } else {
            print(
                "deniable storage, \(config.passphraseKDF), \(config.secureElementRounds) secure-element rounds, vault \(Vault.fileLength(contentBytes: config.vaultContentBytes)) bytes, full = \(held) messages"
            )
            for (k, v) in results { print(k.padding(toLength: 24, withPad: " ", startingAt: 0), String(format: "%.4f", v)) }
        }
    }
}
