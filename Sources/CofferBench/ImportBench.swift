// `coffer bench import`: import rates from a libindy wallet and an Aries Askar store, and the
// importing process's peak resident memory. The sources are written here, in each format, with
// libsodium's primitives (the tests check the readers against the real Askar instead).

import ArgumentParser
import CSodium
import Coffer
import CofferSync
import Foundation
import GRDB

struct ImportBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Records per second and peak RSS of `wallet import-indy` and `wallet import-askar` (each in its own process).",
        discussion: """
            N records of four types, ~200-byte JSON values, three tags each (two encrypted, one plaintext), \
            written as a libindy wallet and as an Askar store, then imported into a fresh wallet by a child \
            `coffer` process whose VmHWM is sampled. --source-kdf argon2i-mod or argon2i-int gives both sources \
            a passphrase (libindy's ARGON2I_MOD / ARGON2I_INT, Askar's kdf:argon2i:mod / int) instead of a raw key: \
            the import then runs Argon2i once, whose memory (128 MiB for MODERATE, 32 MiB for INTERACTIVE) \
            libsodium holds while it runs.
            """)

    @Option(help: "Number of records.") var n: Int = 100_000
    @Option(help: "How the sources' keys are made: raw, argon2i-mod or argon2i-int.") var sourceKdf: String = "raw"
    @Flag(help: "Print one JSON object instead of a table.") var json = false

    func validate() throws {
        guard n >= 1 else { throw ValidationError("--n must be at least 1") }
        guard ["raw", "argon2i-mod", "argon2i-int"].contains(sourceKdf) else {
            throw ValidationError("--source-kdf must be raw, argon2i-mod or argon2i-int")
        }
    }

    func run() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("coffer-bench-import-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let targetKey = WalletKey.generateRawKey().base64EncodedString()
        var results = [(String, Double)]()
        for format in ["indy", "askar"] {
            let source = folder.appendingPathComponent("\(format).db")
            let sourceKey =
                format == "indy"
                ? try ForeignWriter.writeIndy(n: n, kdf: sourceKdf, to: source)
                : try ForeignWriter.writeAskar(n: n, kdf: sourceKdf, to: source)
            let kdfArguments = format == "indy" ? ["--source-kdf", sourceKdf] : []
            let suffix = sourceKdf == "raw" ? "" : "_" + sourceKdf.replacingOccurrences(of: "-", with: "_")
            let store = folder.appendingPathComponent("target-\(format)", isDirectory: true)
            let env = ["COFFER_BENCH_KEY": targetKey, "COFFER_BENCH_SOURCE_KEY": sourceKey]
            let create = try ChildRun.run(
                ["--store", store.path, "--raw-key-env", "COFFER_BENCH_KEY", "wallet", "create"], environment: env)
            guard create.status == 0 else { throw WalletError.storage("coffer wallet create exited with \(create.status)") }
            let ((status, peak), seconds) = try Clock.timeSync {
                try ChildRun.run(
                    [
                        "--store", store.path, "--raw-key-env", "COFFER_BENCH_KEY", "wallet", "import-\(format)", source.path,
                        "--source-key-env", "COFFER_BENCH_SOURCE_KEY",
                    ] + kdfArguments, environment: env)
            }
            guard status == 0 else { throw WalletError.storage("coffer wallet import-\(format) exited with \(status)") }
            results += [
                ("import_\(format)\(suffix)_records_per_sec", Double(n) / seconds), ("import_\(format)\(suffix)_peak_rss_mib", peak),
            ]
        }
        if json {
            let fields = results.map { ($0.0, JSONValue.number(String(format: "%.1f", $0.1))) }
            print(
                JSONValue.object([("tool", .string("coffer bench import")), ("records", .number(String(n))), ("results", .object(fields))])
                    .jsonText)
        } else {
            print("records".padding(toLength: 40, withPad: " ", startingAt: 0), String(format: "%14d", n))
            for (k, v) in results { print(k.padding(toLength: 40, withPad: " ", startingAt: 0), String(format: "%14.1f", v)) }
        }
    }
}

/// Writes libindy wallets and Askar stores as their own code does, for the bench.
enum ForeignWriter {
    /// nonce ‖ ChaCha20-Poly1305-IETF(plaintext) under `key`; the nonce is HMAC-SHA256(`hmacKey`,
    /// plaintext)'s first 12 bytes when `hmacKey` is given, else random.
    static func seal(_ plaintext: [UInt8], key: [UInt8], hmacKey: [UInt8]? = nil) -> [UInt8] {
        var nonce = [UInt8](repeating: 0, count: 12)
        if let hmacKey {
            let mac = hmac(hmacKey, plaintext)
            nonce = Array(mac[0..<12])
        } else {
            randombytes_buf(&nonce, 12)
        }
        var out = [UInt8](repeating: 0, count: plaintext.count + 16)
        var written: UInt64 = 0
        _ = crypto_aead_chacha20poly1305_ietf_encrypt(&out, &written, plaintext, UInt64(plaintext.count), nil, 0, nil, nonce, key)
        return nonce + out
    }

    static func hmac(_ key: [UInt8], _ message: [UInt8]) -> [UInt8] {
        var state = crypto_auth_hmacsha256_state()
        var out = [UInt8](repeating: 0, count: 32)
        crypto_auth_hmacsha256_init(&state, key, key.count)
        crypto_auth_hmacsha256_update(&state, message, UInt64(message.count))
        crypto_auth_hmacsha256_final(&state, &out)
        return out
    }

    /// The passphrase of the bench's Argon2i sources.
    static let passphrase = "bench pässphrase"

    /// Argon2i (libsodium's ALG_ARGON2I13) of ``passphrase`` with `salt` at `kdf`'s level, as
    /// libindy and Askar derive a passphrase's key.
    static func argon2i(salt: [UInt8], kdf: String) throws -> [UInt8] {
        let moderate = kdf == "argon2i-mod"
        let ops = moderate ? crypto_pwhash_argon2i_opslimit_moderate() : crypto_pwhash_argon2i_opslimit_interactive()
        let mem = moderate ? crypto_pwhash_argon2i_memlimit_moderate() : crypto_pwhash_argon2i_memlimit_interactive()
        var out = [UInt8](repeating: 0, count: 32)
        let status = crypto_pwhash_argon2i(
            &out, 32, passphrase, UInt64(passphrase.utf8.count), salt, UInt64(ops), mem, crypto_pwhash_argon2i_ALG_ARGON2I13)
        guard status == 0 else { throw WalletError.storage("Argon2i failed (out of memory?)") }
        return out
    }

    static func randomKey() -> [UInt8] {
        var k = [UInt8](repeating: 0, count: 32)
        randombytes_buf(&k, 32)
        return k
    }

    /// The bench's record `i`: type, id, value and tags (name, value, plaintext).
    static func record(_ i: Int) -> (String, String, String, [(String, String, Bool)]) {
        let type = ["credential", "connection", "Indy::Did", "Indy::Key"][i % 4]
        let value =
            #"{"schema_id":"schema:\#(i % 50)","cred_def_id":"creddef:\#(i % 7)","attrs":{"name":"holder \#(i)","n":"\#(i)"},"pad":"0123456789abcdef0123456789abcdef0123456789"}"#
        return (
            type, "record-\(i)", value,
            [("schema_id", "schema:\(i % 50)", false), ("issuer_did", "did:\(i % 13)", false), ("seq", String(i), true)]
        )
    }

    /// A libindy wallet with a raw key (or a passphrase, for an Argon2i `kdf`); returns the key
    /// (base58) or the passphrase.
    static func writeIndy(n: Int, kdf: String, to url: URL) throws -> String {
        _ = sodium_init()
        let keys = (0..<7).map { _ in randomKey() }
        let (typeKey, nameKey, valueKey, itemHMAC, tagNameKey, tagValueKey, tagHMAC) = (
            keys[0], keys[1], keys[2], keys[3], keys[4], keys[5], keys[6]
        )
        let salt = randomKey() // libindy keeps 32 bytes and uses the first 16
        let master = kdf == "raw" ? randomKey() : try argon2i(salt: Array(salt[0..<16]), kdf: kdf)
        let packed: [UInt8] = [0x97] + keys.flatMap { key -> [UInt8] in [0xc4, 32] + key }
        let saltField = kdf == "raw" ? "" : #","master_key_salt":[\#(salt.map(String.init).joined(separator: ","))]"#
        let metadata = #"{"keys":[\#(seal(packed, key: master).map(String.init).joined(separator: ","))]\#(saltField)}"#
        let db = try DatabaseQueue(path: url.path)
        try db.write { db in
            try db.execute(
                sql: """
                    CREATE TABLE metadata (id INTEGER NOT NULL, value NOT NULL, PRIMARY KEY(id));
                    CREATE TABLE items(id INTEGER NOT NULL, type NOT NULL, name NOT NULL, value NOT NULL, key NOT NULL, PRIMARY KEY(id));
                    CREATE UNIQUE INDEX ux_items_type_name ON items(type, name);
                    CREATE TABLE tags_encrypted(name NOT NULL, value NOT NULL, item_id INTEGER NOT NULL, PRIMARY KEY(name, item_id));
                    CREATE INDEX ix_tags_encrypted_item_id ON tags_encrypted(item_id);
                    CREATE TABLE tags_plaintext(name NOT NULL, value NOT NULL, item_id INTEGER NOT NULL, PRIMARY KEY(name, item_id));
                    CREATE INDEX ix_tags_plaintext_item_id ON tags_plaintext(item_id);
                    """)
            try db.execute(sql: "INSERT INTO metadata(value) VALUES (?)", arguments: [Data(metadata.utf8)])
            let item = try db.makeStatement(sql: "INSERT INTO items(type, name, value, key) VALUES (?, ?, ?, ?)")
            let encrypted = try db.makeStatement(sql: "INSERT INTO tags_encrypted(name, value, item_id) VALUES (?, ?, ?)")
            let plain = try db.makeStatement(sql: "INSERT INTO tags_plaintext(name, value, item_id) VALUES (?, ?, ?)")
            for i in 0..<n {
                let (type, id, value, tags) = record(i)
                let recordKey = randomKey()
                try item.execute(arguments: [
                    Data(seal(Array(type.utf8), key: typeKey, hmacKey: itemHMAC)),
                    Data(seal(Array(id.utf8), key: nameKey, hmacKey: itemHMAC)),
                    Data(seal(Array(value.utf8), key: recordKey)), Data(seal(recordKey, key: valueKey)),
                ])
                let rowid = db.lastInsertedRowID
                for (name, text, isPlain) in tags {
                    let sealedName = Data(seal(Array(name.utf8), key: tagNameKey, hmacKey: tagHMAC))
                    if isPlain {
                        try plain.execute(arguments: [sealedName, text, rowid])
                    } else {
                        try encrypted.execute(arguments: [
                            sealedName, Data(seal(Array(text.utf8), key: tagValueKey, hmacKey: tagHMAC)), rowid,
                        ])
                    }
                }
            }
        }
        try db.close()
        return kdf == "raw" ? Base58.encode(Data(master)) : passphrase
    }

    /// An Askar store with a raw key (or a passphrase, for an Argon2i `kdf`) and one profile;
    /// returns the key (base58) or the passphrase.
    static func writeAskar(n: Int, kdf: String, to url: URL) throws -> String {
        _ = sodium_init()
        let salt = Array(randomKey()[0..<16])
        let storeKey = kdf == "raw" ? randomKey() : try argon2i(salt: salt, kdf: kdf)
        let method =
            kdf == "raw"
            ? "raw" : "kdf:argon2i:\(kdf == "argon2i-mod" ? "mod" : "int")?salt=" + salt.map { String(format: "%02x", $0) }.joined()
        let (ick, ink, ihk, tnk, tvk, thk) = (randomKey(), randomKey(), randomKey(), randomKey(), randomKey(), randomKey())
        // CBOR {"ver": "1", "ick": bytes(32), …}
        var cbor: [UInt8] = [0xa7, 0x63] + Array("ver".utf8) + [0x61, UInt8(ascii: "1")]
        for (name, key) in [("ick", ick), ("ink", ink), ("ihk", ihk), ("tnk", tnk), ("tvk", tvk), ("thk", thk)] {
            cbor += [0x63] + Array(name.utf8) + [0x58, 32] + key
        }
        let db = try DatabaseQueue(path: url.path)
        try db.write { db in
            try db.execute(
                sql: """
                    CREATE TABLE config (name TEXT NOT NULL, value TEXT, PRIMARY KEY (name));
                    CREATE TABLE profiles (id INTEGER NOT NULL, name TEXT NOT NULL, reference TEXT NULL, profile_key BLOB NULL, PRIMARY KEY(id));
                    CREATE UNIQUE INDEX ix_profile_name ON profiles (name);
                    CREATE TABLE items (id INTEGER NOT NULL, profile_id INTEGER NOT NULL, kind INTEGER NOT NULL, category BLOB NOT NULL,
                        name BLOB NOT NULL, value BLOB NOT NULL, expiry DATETIME NULL, PRIMARY KEY (id));
                    CREATE UNIQUE INDEX ix_items_uniq ON items (profile_id, kind, category, name);
                    CREATE TABLE items_tags (id INTEGER NOT NULL, item_id INTEGER NOT NULL, name BLOB NOT NULL, value BLOB NOT NULL,
                        plaintext BOOLEAN NOT NULL, PRIMARY KEY (id));
                    CREATE INDEX ix_items_tags_item_id ON items_tags (item_id);
                    INSERT INTO config (name, value) VALUES ('default_profile', 'bench'), ('version', '1');
                    """)
            try db.execute(sql: "INSERT INTO config (name, value) VALUES ('key', ?)", arguments: [method])
            try db.execute(
                sql: "INSERT INTO profiles (name, profile_key) VALUES ('bench', ?)", arguments: [Data(seal(cbor, key: storeKey))])
            let item = try db.makeStatement(sql: "INSERT INTO items (profile_id, kind, category, name, value) VALUES (1, 2, ?, ?, ?)")
            let tag = try db.makeStatement(sql: "INSERT INTO items_tags (item_id, name, value, plaintext) VALUES (?, ?, ?, ?)")
            for i in 0..<n {
                let (type, id, value, tags) = record(i)
                let c = Array(type.utf8)
                let nm = Array(id.utf8)
                let valueKey = hmac(
                    ihk,
                    withUnsafeBytes(of: UInt32(c.count).bigEndian, Array.init) + c
                        + withUnsafeBytes(of: UInt32(nm.count).bigEndian, Array.init) + nm)
                try item.execute(arguments: [
                    Data(seal(c, key: ick, hmacKey: ihk)), Data(seal(nm, key: ink, hmacKey: ihk)),
                    Data(seal(Array(value.utf8), key: valueKey)),
                ])
                let rowid = db.lastInsertedRowID
                for (name, text, isPlain) in tags {
                    let sealedValue = isPlain ? Data(text.utf8) : Data(seal(Array(text.utf8), key: tvk, hmacKey: thk))
                    try tag.execute(arguments: [rowid, Data(seal(Array(name.utf8), key: tnk, hmacKey: thk)), sealedValue, isPlain])
                }
            }
        }
        try db.close()
        return kdf == "raw" ? Base58.encode(Data(storeKey)) : passphrase
    }
}
