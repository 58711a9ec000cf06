// `coffer wallet export` / `import-backup` (with their progress on stderr) and `coffer wallet key …`
// driven through the built binary. Nothing here needs the network or PyPI.

import CofferTestSupport
import Foundation
import Testing

/// A store with `count` records of type `t` (ids r0…), made through the CLI.
func storeWithRecords(_ count: Int) async throws -> URL {
    let store = try await CLI.newStore()
    let file = store.appendingPathComponent("in.jsonl")
    try (0..<count).map { #"{"type":"t","id":"r\#($0)","value":"v\#($0)","tags":{"n":"\#($0 % 2)"}}"# }.joined(separator: "\n")
        .write(to: file, atomically: true, encoding: .utf8)
    let r = try await CLI.wallet(["import", file.path], store: store)
    precondition(r.status == 0, "import failed: \(r.stderr)")
    return store
}

/// `args` on the store's wallet with the backup passphrase in environment variable BP.
/// An export costs the backup key's floor (INTERACTIVE), not the default MODERATE: these tests
/// make many backups.
func backupCommand(_ args: [String], store: URL, passphrase: String = "backup pass") async throws -> CLIResult {
    try await CLI.run(
        ["--raw-key-env", "COFFER_TEST_KEY", "wallet"] + args + (args.first == "export" ? ["--backup-kdf", "interactive"] : []),
        store: store,
        env: ["COFFER_TEST_KEY": CLI.key, "BP": passphrase])
}

/// The one JSON object a command printed.
func printedObject(_ r: CLIResult) throws -> [String: Any] {
    try #require(JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any])
}

func newStoreFolder() -> URL {
    TemporaryFolders.path("coffer-cli")
}

@Suite("coffer wallet export and import-backup")
struct BackupCLITests {
    @Test("export prints how many items it wrote and the file")
    func exportPrints() async throws {
        let store = try await storeWithRecords(40)
        let file = store.appendingPathComponent("wallet.backup")
        let r = try await backupCommand(["export", file.path, "--backup-passphrase-env", "BP"], store: store)
        #expect(r.status == 0)
        #expect(try printedObject(r)["exported"] as? Int == 40)
        #expect(try printedObject(r)["file"] as? String == file.path)
    }

    @Test("export costs the backup key MODERATE unless --backup-kdf says interactive; another cost exits 2 and writes nothing")
    func exportCosts() async throws {
        let store = try await storeWithRecords(2)
        func costs(_ file: URL) throws -> (ops: UInt32, memKiB: UInt32) {
            let header = Array(try Data(contentsOf: file).prefix(17))
            return (header[9..<13].reduce(0) { $0 << 8 | UInt32($1) }, header[13..<17].reduce(0) { $0 << 8 | UInt32($1) })
        }
        let env = ["COFFER_TEST_KEY": CLI.key, "BP": "backup pass"]
        let base = ["--raw-key-env", "COFFER_TEST_KEY", "wallet", "export"]
        let byDefault = store.appendingPathComponent("default.backup")
        #expect(try await CLI.run(base + [byDefault.path, "--backup-passphrase-env", "BP"], store: store, env: env).status == 0)
        #expect(try costs(byDefault) == (3, 256 * 1024))
        let floor = store.appendingPathComponent("floor.backup")
        let cheaper = try await CLI.run(
            base + [floor.path, "--backup-passphrase-env", "BP", "--backup-kdf", "interactive"], store: store, env: env)
        #expect(cheaper.status == 0)
        #expect(try costs(floor) == (2, 64 * 1024))
        let refused = store.appendingPathComponent("refused.backup")
        let r = try await CLI.run(
            base + [refused.path, "--backup-passphrase-env", "BP", "--backup-kdf", "minimum"], store: store, env: env)
        #expect(r.status == 2)
        #expect(r.stderr.contains("--backup-kdf must be moderate or interactive"))
        #expect(!FileManager.default.fileExists(atPath: refused.path))
    }

    @Test("export shows its progress on stderr, ending at every item written")
    func exportProgress() async throws {
        let store = try await storeWithRecords(40)
        let r = try await backupCommand(["export", store.appendingPathComponent("b").path, "--backup-passphrase-env", "BP"], store: store)
        #expect(r.stderr.contains("export"))
        #expect(r.stderr.contains("40/40"))
    }

    @Test("import-backup makes the new store's wallet with every record and prints its path")
    func importRestores() async throws {
        let store = try await storeWithRecords(40)
        let file = store.appendingPathComponent("wallet.backup")
        #expect(try await backupCommand(["export", file.path, "--backup-passphrase-env", "BP"], store: store).status == 0)
        let target = newStoreFolder()
        let r = try await backupCommand(["import-backup", file.path, "--backup-passphrase-env", "BP"], store: target)
        #expect(r.status == 0)
        #expect(try printedObject(r)["imported"] as? String == target.appendingPathComponent("wallet.sqlite").path)
        let count = try await CLI.wallet(["count", "t", #"{"n": "1"}"#], store: target)
        #expect(count.stdout == #"{"count":20}"# + "\n")
    }

    @Test("import-backup shows its progress on stderr, ending at every item restored")
    func importProgress() async throws {
        let store = try await storeWithRecords(40)
        let file = store.appendingPathComponent("wallet.backup")
        _ = try await backupCommand(["export", file.path, "--backup-passphrase-env", "BP"], store: store)
        let r = try await backupCommand(["import-backup", file.path, "--backup-passphrase-env", "BP"], store: newStoreFolder())
        #expect(r.stderr.contains("import"))
        #expect(r.stderr.contains("40/40"))
    }

    @Test("a held key comes back with the backup and still signs as the same verkey")
    func keySurvivesBackup() async throws {
        let store = try await storeWithRecords(1)
        let verkey = try #require(try printedObject(await CLI.wallet(["key", "create"], store: store))["verkey"] as? String)
        let file = store.appendingPathComponent("wallet.backup")
        _ = try await backupCommand(["export", file.path, "--backup-passphrase-env", "BP"], store: store)
        let target = newStoreFolder()
        _ = try await backupCommand(["import-backup", file.path, "--backup-passphrase-env", "BP"], store: target)
        let message = Data("after restore".utf8).base64EncodedString()
        let signature = try #require(
            try printedObject(await CLI.wallet(["key", "sign", verkey, message], store: target))["signature"] as? String)
        #expect(try await CLI.wallet(["key", "verify", verkey, message, signature], store: target).status == 0)
    }

    @Test("export without the passphrase variable set exits 2 and writes no file")
    func exportNeedsPassphrase() async throws {
        let store = try await storeWithRecords(3)
        let file = store.appendingPathComponent("wallet.backup")
        let r = try await backupCommand(["export", file.path, "--backup-passphrase-env", "NOT_SET_ANYWHERE"], store: store)
        #expect(r.status == 2)
        #expect(r.stderr.contains("NOT_SET_ANYWHERE"))
        #expect(FileManager.default.fileExists(atPath: file.path) == false)
    }

    @Test("import-backup with the wrong passphrase exits 4 and creates no wallet")
    func importWrongPassphrase() async throws {
        let store = try await storeWithRecords(3)
        let file = store.appendingPathComponent("wallet.backup")
        _ = try await backupCommand(["export", file.path, "--backup-passphrase-env", "BP"], store: store)
        let target = newStoreFolder()
        let r = try await backupCommand(
            ["import-backup", file.path, "--backup-passphrase-env", "BP"], store: target, passphrase: "not the passphrase")
        #expect(r.status == 4)
        #expect(r.stderr.hasPrefix("error: wrong key"))
        #expect(FileManager.default.fileExists(atPath: target.appendingPathComponent("wallet.sqlite").path) == false)
    }

    @Test("import-backup of a damaged file exits 5 (corrupted) and creates no wallet")
    func importDamaged() async throws {
        let store = try await storeWithRecords(30)
        let file = store.appendingPathComponent("wallet.backup")
        _ = try await backupCommand(["export", file.path, "--backup-passphrase-env", "BP"], store: store)
        var bytes = try Data(contentsOf: file)
        bytes[bytes.count - 20] ^= 0x55
        try bytes.write(to: file)
        let target = newStoreFolder()
        let r = try await backupCommand(["import-backup", file.path, "--backup-passphrase-env", "BP"], store: target)
        #expect(r.status == 5)
        #expect(r.stderr.contains("error: corrupted"))
        #expect(FileManager.default.fileExists(atPath: target.appendingPathComponent("wallet.sqlite").path) == false)
    }

    @Test("import-backup of a file that does not exist exits non-zero naming it")
    func importMissingFile() async throws {
        let missing = newStoreFolder().appendingPathComponent("no.backup")
        let r = try await backupCommand(["import-backup", missing.path, "--backup-passphrase-env", "BP"], store: newStoreFolder())
        #expect(r.status != 0)
        #expect(r.stderr.contains("no.backup"))
    }

    @Test("import-backup or import of a folder exits 2 naming the folder, and creates no wallet")
    func importFolderRefused() async throws {
        let folder = newStoreFolder().appendingPathComponent("backups.d")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let target = newStoreFolder()
        let r = try await backupCommand(["import-backup", folder.path, "--backup-passphrase-env", "BP"], store: target)
        #expect(r.status == 2, "\(r.stderr)")
        #expect(r.stderr.contains("backups.d") && r.stderr.contains("is a folder"), "\(r.stderr)")
        #expect(!FileManager.default.fileExists(atPath: target.appendingPathComponent("wallet.sqlite").path))
        let store = try await storeWithRecords(1)
        let records = try await CLI.wallet(["import", folder.path], store: store)
        #expect(records.status == 2, "\(records.stderr)")
        #expect(records.stderr.contains("backups.d") && records.stderr.contains("is a folder"), "\(records.stderr)")
    }
}

@Suite("coffer wallet key")
struct KeyCLITests {
    func create(_ store: URL, kind: String = "ed25519") async throws -> String {
        let r = try await CLI.wallet(["key", "create", "--kind", kind], store: store)
        precondition(r.status == 0, "key create failed: \(r.stderr)")
        return try #require(try printedObject(r)["verkey"] as? String)
    }

    @Test("key create prints only the Base58 public key")
    func createPrintsVerkey() async throws {
        let store = try await CLI.newStore()
        let r = try await CLI.wallet(["key", "create"], store: store)
        #expect(r.status == 0)
        let object = try printedObject(r)
        #expect(Array(object.keys) == ["verkey"])
        #expect((object["verkey"] as? String)?.count ?? 0 >= 43)
    }

    @Test("key list gives each held key's verkey and kind, and nothing else")
    func listKeys() async throws {
        let store = try await CLI.newStore()
        let a = try await create(store)
        let b = try await create(store, kind: "x25519")
        let r = try await CLI.wallet(["key", "list"], store: store)
        let listed = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [[String: String]])
        #expect(Set(listed) == [["verkey": a, "kind": "ed25519"], ["verkey": b, "kind": "x25519"]])
    }

    @Test("key create with an unknown kind exits 2 naming the allowed kinds")
    func unknownKind() async throws {
        let r = try await CLI.wallet(["key", "create", "--kind", "rsa"], store: try await CLI.newStore())
        #expect(r.status == 2)
        #expect(r.stderr.contains("ed25519 or x25519"))
    }

    @Test("key sign's signature verifies with key verify: {\"valid\":true}, exit 0")
    func signVerify() async throws {
        let store = try await CLI.newStore()
        let verkey = try await create(store)
        let message = Data("hello".utf8).base64EncodedString()
        let signature = try #require(
            try printedObject(await CLI.wallet(["key", "sign", verkey, message], store: store))["signature"] as? String)
        let r = try await CLI.wallet(["key", "verify", verkey, message, signature], store: store)
        #expect(r.status == 0)
        #expect(r.stdout == #"{"valid":true}"# + "\n")
    }

    @Test("key verify of another message prints {\"valid\":false} and exits 2")
    func verifyFails() async throws {
        let store = try await CLI.newStore()
        let verkey = try await create(store)
        let signature = try #require(
            try printedObject(await CLI.wallet(["key", "sign", verkey, Data("a".utf8).base64EncodedString()], store: store))["signature"]
                as? String)
        let r = try await CLI.wallet(["key", "verify", verkey, Data("b".utf8).base64EncodedString(), signature], store: store)
        #expect(r.status == 2)
        #expect(r.stdout == #"{"valid":false}"# + "\n")
    }

    @Test("key sign with a key the wallet does not hold exits 1")
    func signUnknownKey() async throws {
        let store = try await CLI.newStore()
        let other = try await create(try await CLI.newStore())
        let r = try await CLI.wallet(["key", "sign", other, Data("m".utf8).base64EncodedString()], store: store)
        #expect(r.status == 1)
        #expect(r.stderr.contains(other))
    }

    @Test("key sign with an x25519 key exits 2 saying it cannot sign")
    func signWithX25519() async throws {
        let store = try await CLI.newStore()
        let verkey = try await create(store, kind: "x25519")
        let r = try await CLI.wallet(["key", "sign", verkey, Data("m".utf8).base64EncodedString()], store: store)
        #expect(r.status == 2)
        #expect(r.stderr.contains("cannot sign"))
    }

    @Test("key sign with a message that is not base64 exits 2 naming MESSAGE")
    func signBadMessage() async throws {
        let store = try await CLI.newStore()
        let r = try await CLI.wallet(["key", "sign", try await create(store), "not base64!"], store: store)
        #expect(r.status == 2)
        #expect(r.stderr.contains("MESSAGE"))
    }

    @Test("key seal to an x25519 key and key open with it give back the message", arguments: ["x25519", "ed25519"])
    func sealOpen(kind: String) async throws {
        let store = try await CLI.newStore()
        let verkey = try await create(store, kind: kind)
        let message = Data("sealed for you".utf8).base64EncodedString()
        let box = try #require(
            try printedObject(await CLI.wallet(["key", "seal", verkey, message, "--kind", kind], store: store))["box"] as? String)
        let r = try await CLI.wallet(["key", "open", verkey, box], store: store)
        #expect(r.status == 0)
        #expect(try printedObject(r)["message"] as? String == message)
    }

    @Test("key open of an altered box exits 2")
    func openAltered() async throws {
        let store = try await CLI.newStore()
        let verkey = try await create(store, kind: "x25519")
        let box = try #require(
            try printedObject(await CLI.wallet(["key", "seal", verkey, Data("m".utf8).base64EncodedString()], store: store))["box"]
                as? String)
        var bytes = try #require(Data(base64Encoded: box))
        bytes[bytes.count - 1] ^= 1
        let r = try await CLI.wallet(["key", "open", verkey, bytes.base64EncodedString()], store: store)
        #expect(r.status == 2)
        #expect(r.stderr.contains("does not open"))
    }
}
