// `coffer wallet key …` on `--wallet-url postgres://…`, seen from outside (the built binary
// against the tests' private server), compared with the same commands on a SQLite wallet; the
// keys' secrets looked for in the server's tables and in everything the commands print.

#if PostgreSQL
import CofferCrypto
import CofferTestSupport
import Foundation
import PostgresNIO
import Testing

@testable import CofferWallet

/// What one backend answered to the key scenario, with what differs by nature between two
/// wallets (their random verkeys, the signatures they make) replaced by what it stands for.
private struct KeyTranscript {
    var lines = [String]()
    /// Each verkey made so far, by the label it is written as.
    var verkeys = [String: String]()
    let run: ([String]) async throws -> ProcessResult

    /// The stdout with every verkey replaced by its label.
    func normalized(_ text: String) -> String {
        verkeys.reduce(text) { $0.replacingOccurrences(of: $1.key, with: $1.value) }
    }

    /// Runs `args` and writes its exit code and normalized stdout.
    @discardableResult
    mutating func step(_ args: [String]) async throws -> ProcessResult {
        let r = try await run(args)
        lines.append(normalized("\(args.joined(separator: " ")) -> \(r.status) \(r.stdout)"))
        return r
    }

    /// `key create`: the verkey printed, written as `label`.
    mutating func create(_ label: String, _ args: [String]) async throws -> String {
        let r = try await run(["wallet", "key", "create"] + args)
        let verkey = (PostgresCLI.json(r.stdout) as? [String: String])?["verkey"] ?? ""
        if !verkey.isEmpty { verkeys[verkey] = label }
        lines.append("create \(label) \(args.joined(separator: " ")) -> \(r.status) \(normalized(r.stdout))")
        return verkey
    }

    /// `key sign`, the signature written as whether `key verify` and the library accept it.
    mutating func sign(_ verkey: String, _ message: String, _ args: [String]) async throws {
        let r = try await run(["wallet", "key", "sign", verkey, message] + args)
        guard let signature = (PostgresCLI.json(r.stdout) as? [String: String])?["signature"] else {
            lines.append("sign \(normalized(verkey)) -> \(r.status) \(normalized(r.stdout))")
            return
        }
        let verified = try await run(["wallet", "key", "verify", verkey, message, signature])
        let library = try Wallet.verify(
            signature: Data(base64Encoded: signature) ?? Data(), message: Data(base64Encoded: message)!, verkey: verkey)
        lines.append("sign \(normalized(verkey)) -> \(r.status) verify: \(verified.status) \(verified.stdout) library: \(library)")
    }

    /// `key seal` to `verkey`, then `key open` of the box with `opener`: the opened message.
    mutating func sealAndOpen(to verkey: String, kind: String, openWith opener: String, _ message: String, _ args: [String]) async throws {
        let sealed = try await run(["wallet", "key", "seal", verkey, message, "--kind", kind])
        let box = (PostgresCLI.json(sealed.stdout) as? [String: String])?["box"] ?? ""
        let opened = try await run(["wallet", "key", "open", opener, box] + args)
        lines.append(
            "seal \(normalized(verkey)) \(kind) -> \(sealed.status); open with \(normalized(opener)) -> \(opened.status) \(opened.stdout)")
    }
}

extension PostgresWalletTests {
    /// The key scenario, run against one backend.
    private static func keyScenario(_ run: @escaping ([String]) async throws -> ProcessResult) async throws -> [String] {
        var t = KeyTranscript(run: run)
        let k = ["--raw-key-env", "K"]
        let bob = ["--profile", "bob", "--raw-key-env", "O"]
        let message = Data("a message to sign".utf8).base64EncodedString()
        // (`create` prints where the wallet is: not compared.)
        for args in [k, bob] { #expect(try await run(["wallet", "create"] + args).status == 0) }
        let ed = try await t.create("ED", k)
        let x = try await t.create("X", ["--kind", "x25519"] + k)
        _ = try await t.create("BAD", ["--kind", "rsa"] + k)
        let bobs = try await t.create("BOB", bob)
        try await t.step(["wallet", "key", "list"] + k)
        try await t.step(["wallet", "key", "list"] + bob)
        try await t.sign(ed, message, k)
        try await t.sign(bobs, message, bob)
        try await t.sign(x, message, k) // an x25519 key cannot sign: 2
        try await t.sign(ed, message, bob) // another profile's key: not found
        try await t.sign(Base58.encode(Data(repeating: 7, count: 32)), message, k)
        try await t.sign("not-a-verkey", message, k)
        try await t.step(["wallet", "key", "sign", ed, "not base64!"] + k)
        try await t.sealAndOpen(to: x, kind: "x25519", openWith: x, message, k)
        try await t.sealAndOpen(to: ed, kind: "ed25519", openWith: ed, message, k)
        try await t.sealAndOpen(to: x, kind: "x25519", openWith: ed, message, k) // not addressed to it: 2
        try await t.sealAndOpen(to: bobs, kind: "ed25519", openWith: bobs, message, bob)
        try await t.step(["wallet", "key", "open", x, "AAAA"] + k)
        // The profile's key is the one that opens it: any other is a wrong key (4), for every command.
        try await t.step(["wallet", "key", "list", "--raw-key-env", "O"])
        try await t.step(["wallet", "key", "create", "--raw-key-env", "O"])
        try await t.sign(ed, message, ["--raw-key-env", "O"])
        try await t.sealAndOpen(to: x, kind: "x25519", openWith: x, message, ["--raw-key-env", "O"])
        try await t.step(["wallet", "key", "list", "--profile", "bob", "--raw-key-env", "K"])
        // The keys' records are out of the record API's reach, as in a wallet file.
        try await t.step(["wallet", "search", "__coffer_key", "{}"] + k)
        try await t.step(["wallet", "get", "__coffer_key", ed] + k)
        try await t.step(["wallet", "count", "__coffer_key"] + k)
        try await t.step(["wallet", "remove-all", "__coffer_key"] + k)
        try await t.step(["wallet", "add", "__coffer_key", "mine", "v"] + k)
        try await t.step(["wallet", "key", "list"] + k)
        return t.lines
    }

    @Test("every coffer wallet key command on PostgreSQL prints and exits as on SQLite, per profile; a wrong profile key exits 4")
    func keyCommandsLikeSQLite() async throws {
        let both = try TwoBackends("clikeys")
        let postgres = try await Self.keyScenario { try await both.postgres($0) }
        let sqlite = try await Self.keyScenario { try await both.sqlite($0) }
        #expect(postgres.count == sqlite.count)
        for (pg, lite) in zip(postgres, sqlite) { #expect(pg == lite) }
        // The scenario did what it says (not merely the same thing twice).
        #expect(
            postgres.contains { $0.hasPrefix("sign ED -> 0 verify: 0 {\"valid\":true}") && $0.hasSuffix("library: true") }, "\(postgres)")
        #expect(postgres.contains { $0.hasPrefix("wallet key list --raw-key-env O -> 4") }, "\(postgres)")
        #expect(postgres.contains { $0.contains("open with X -> 0 {\"message\":\"YSBtZXNzYWdlIHRvIHNpZ24=\"}") }, "\(postgres)")
        #expect(
            postgres.last == #"wallet key list --raw-key-env K -> 0 [{"verkey":"ED","kind":"ed25519"},{"verkey":"X","kind":"x25519"}]"#
                + "\n",
            "\(postgres)")
    }

    @Test("a key's secret is never in the server's tables in clear, nor in anything the key commands print")
    func keySecretsNeverInClear() async throws {
        let both = try TwoBackends("clikeysecret")
        let k = ["--raw-key-env", "K"]
        #expect(try await both.postgres(["wallet", "create"] + k).status == 0)
        // Keys of known secrets, kept through the library as `key create` keeps random ones.
        let edSecret = Data((0..<32).map { UInt8(truncatingIfNeeded: 0xA0 + $0) })
        let xSecret = Data((0..<32).map { UInt8(truncatingIfNeeded: 0x31 * ($0 + 1)) })
        let settings = PostgresSettings(url: try PostgresURL(both.url))
        let wallet = try await PostgresWallet.open(settings: settings, key: PostgresTesting.key)
        let ed = try await wallet.addHeldKey(secret: SecretKey(copying: edSecret), kind: .ed25519)
        let x = try await wallet.addHeldKey(secret: SecretKey(copying: xSecret), kind: .x25519)

        var printed = ""
        let message = Data("sign me".utf8).base64EncodedString()
        func run(_ args: [String]) async throws -> ProcessResult {
            let r = try await both.postgres(args)
            printed += r.stdout + r.stderr
            #expect(r.status == 0, "\(args): \(r.stderr)")
            return r
        }
        #expect(try await run(["wallet", "key", "list"] + k).stdout.contains(ed))
        let signed = try await run(["wallet", "key", "sign", ed, message] + k)
        let signature = try #require((PostgresCLI.json(signed.stdout) as? [String: String])?["signature"])
        // The stored key is the one that signs: its signature verifies under the known key's verkey.
        #expect(try Wallet.verify(signature: Data(base64Encoded: signature)!, message: Data(base64Encoded: message)!, verkey: ed))
        let box = try Wallet.sealedBox(Data("for x".utf8), to: x).base64EncodedString()
        #expect(try await run(["wallet", "key", "open", x, box] + k).stdout.contains(Data("for x".utf8).base64EncodedString()))
        _ = try await run(["wallet", "check"] + k)

        // Every row of every table of the database, as text, read with a query of its own.
        let dump = try await wallet.store.withConnection { connection in
            var tables = [String]()
            for try await name in try await connection.query(
                "SELECT tablename::text FROM pg_tables WHERE schemaname = 'public'", logger: PostgresStore.logger
            ).decode(String.self) {
                tables.append(name)
            }
            var text = ""
            for table in tables {
                for try await row in try await connection.query(
                    PostgresQuery(unsafeSQL: "SELECT t::text FROM \(table) t"), logger: PostgresStore.logger
                ).decode(String.self) {
                    text += row + "\n"
                }
            }
            return (tables, text)
        }
        wallet.close()
        #expect(dump.0.contains("coffer_items") && dump.0.contains("coffer_tags"), "\(dump.0)")
        let rows = dump.1.lowercased()
        #expect(rows.split(separator: "\n").count >= 4, "\(rows)")
        func hex(_ data: Data) -> String { data.map { String(format: "%02x", $0) }.joined() }
        for (name, secret) in [("ed25519", edSecret), ("x25519", xSecret)] {
            let forms = [
                hex(secret), hex(Data(secret.base64EncodedString().utf8)), secret.base64EncodedString(), Base58.encode(secret),
                hex(secret.prefix(16)), hex(secret.suffix(16)),
            ]
            for form in forms {
                #expect(!rows.contains(form.lowercased()), "the \(name) secret is in the server's rows as \(form)")
                #expect(!printed.lowercased().contains(form.lowercased()), "the \(name) secret was printed as \(form)")
            }
        }
        // Nor are the keys' ids and kinds: they are sealed and blind-indexed like any record's.
        for clear in [ed, x, "ed25519", "x25519", "__coffer_key"] {
            #expect(!rows.contains(hex(Data(clear.utf8))) && !rows.contains(clear.lowercased()), "\(clear) is in the server's rows")
        }
    }

    @Test("keys survive rekey --rotate on PostgreSQL, and export / import-backup carry them between PostgreSQL and SQLite")
    func keysThroughRotationAndBackups() async throws {
        let both = try TwoBackends("clikeyrotate")
        let k = ["--raw-key-env", "K"]
        let message = Data("rotate".utf8).base64EncodedString()
        func verified(_ r: ProcessResult, _ verkey: String) throws -> Bool {
            guard let signature = (PostgresCLI.json(r.stdout) as? [String: String])?["signature"] else { return false }
            return try Wallet.verify(signature: Data(base64Encoded: signature)!, message: Data(base64Encoded: message)!, verkey: verkey)
        }
        #expect(try await both.postgres(["wallet", "create"] + k).status == 0)
        let made = try await both.postgres(["wallet", "key", "create"] + k)
        let verkey = try #require((PostgresCLI.json(made.stdout) as? [String: String])?["verkey"], "\(made.stderr)")
        #expect(try await both.postgres(["wallet", "add", "cred", "a", "one", "--tags", #"{"t":"1"}"#] + k).status == 0)
        let listed = try await both.postgres(["wallet", "key", "list"] + k).stdout

        let rotated = try await both.postgres(["wallet", "rekey", "--rotate", "--new-raw-key-env", "O"] + k)
        #expect(rotated.status == 0, "\(rotated.stderr)")
        let o = ["--raw-key-env", "O"]
        #expect(try verified(try await both.postgres(["wallet", "key", "sign", verkey, message] + o), verkey))
        #expect(try await both.postgres(["wallet", "key", "list"] + o).stdout == listed)
        #expect(try await both.postgres(["wallet", "key", "list"] + k).status == 4)
        let check = try await both.postgres(["wallet", "check"] + o)
        #expect(check.status == 0, "\(check.stdout) \(check.stderr)")

        // PostgreSQL → backup → a SQLite wallet: the same key signs there.
        try FileManager.default.createDirectory(at: both.store, withIntermediateDirectories: true)
        let backup = both.store.appendingPathComponent("keys.cfb")
        let exported = try await both.postgres(
            ["wallet", "export", backup.path, "--backup-passphrase-env", "BP", "--backup-kdf", "interactive"] + o)
        #expect(exported.status == 0, "\(exported.stderr)")
        let restored = try await both.sqlite(["wallet", "import-backup", backup.path, "--backup-passphrase-env", "BP"] + k)
        #expect(restored.status == 0, "\(restored.stderr)")
        #expect(try verified(try await both.sqlite(["wallet", "key", "sign", verkey, message] + k), verkey))
        #expect(try await both.sqlite(["wallet", "key", "list"] + k).stdout == listed)

        // A SQLite wallet's key → backup → a new PostgreSQL profile: it signs there.
        let liteKey = try #require(
            (PostgresCLI.json(try await both.sqlite(["wallet", "key", "create", "--kind", "ed25519"] + k).stdout) as? [String: String])?[
                "verkey"])
        let liteBackup = both.store.appendingPathComponent("lite.cfb")
        #expect(
            try await both.sqlite(
                ["wallet", "export", liteBackup.path, "--backup-passphrase-env", "BP", "--backup-kdf", "interactive"] + k
            )
            .status == 0)
        let intoPostgres = try await both.postgres(
            ["wallet", "import-backup", liteBackup.path, "--backup-passphrase-env", "BP", "--profile", "lite"] + k)
        #expect(intoPostgres.status == 0, "\(intoPostgres.stderr)")
        #expect(try verified(try await both.postgres(["wallet", "key", "sign", liteKey, message, "--profile", "lite"] + k), liteKey))
        #expect(
            try await both.postgres(["wallet", "key", "list", "--profile", "lite"] + k).stdout
                == (try await both.sqlite(["wallet", "key", "list"] + k).stdout))
    }

    @Test("PostgresWallet's keys: a box between two profiles' keys opens, and the record API refuses the keys' reserved type")
    func keysThroughTheLibrary() async throws {
        let settings = try PostgresTesting.settings("keyslib")
        let alice = try await PostgresWallet.create(settings: settings, key: PostgresTesting.key)
        defer { alice.close() }
        let bob = try await PostgresWallet.create(settings: settings, profile: "bob", key: PostgresTesting.otherKey)
        defer { bob.close() }
        let a = try await alice.createKey(.x25519)
        let b = try await bob.createKey(.ed25519)
        let boxed = try await alice.box(Data("hello bob".utf8), from: a, to: b, recipientKind: .ed25519)
        #expect(try await bob.openBox(boxed, from: a, to: b) == Data("hello bob".utf8))
        await #expect(throws: WalletError.self) { _ = try await bob.openBox(boxed, from: b, senderKind: .ed25519, to: b) }
        await #expect(throws: WalletError.self) { _ = try await alice.sign(Data(), with: b) }
        #expect(try await alice.listKeys() == [WalletPublicKey(verkey: a, kind: .x25519)])
        for attempt in [
            { _ = try await alice.search(type: SecretTypes.key) },
            { _ = try await alice.count(type: SecretTypes.key) },
            { _ = try await alice.get(type: SecretTypes.key, id: a) },
            { try await alice.add(type: SecretTypes.key, id: "x", value: "v") },
        ] as [@Sendable () async throws -> Void] {
            await #expect(throws: WalletError.self) { try await attempt() }
        }
    }

    #if DEBUG
    @Test("export and rekey --rotate on PostgreSQL carry a key's secret as bytes, never decoded into a String")
    func keyValuesStayBytes() async throws {
        let settings = try PostgresTesting.settings("keysbytes")
        let wallet = try await PostgresWallet.create(settings: settings, key: PostgresTesting.key)
        defer { wallet.close() }
        let verkey = try await wallet.createKey(.ed25519)
        try await wallet.add(type: "cred", id: "a", value: "one")
        let keyType = wallet.keys.typeBlind(SecretTypes.key)
        let texts = { RecordCodec.reservedValueTexts.withLock { $0[keyType] ?? 0 } }
        let backup = TemporaryFolders.make("coffer-pg-keybytes").appendingPathComponent("b.cfb")
        #expect(try await wallet.exportBackup(to: backup, key: try BackupKey.derive(passphrase: "p", parameters: .interactive)) == 2)
        try await wallet.rekey(to: .raw(Data(repeating: 4, count: 32)), rotatingKey: true)
        #expect(texts() == 0, "a key's value was made into a String")
        let rotated = try await PostgresWallet.open(settings: settings, key: .raw(Data(repeating: 4, count: 32)))
        defer { rotated.close() }
        #expect(try Wallet.verify(signature: try await rotated.sign(Data("m".utf8), with: verkey), message: Data("m".utf8), verkey: verkey))
    }
    #endif
}
#endif
