// The seed's WalletApi and the SDK's secrets (master secret, credential signatures) on both
// backends: one body per behaviour, run on a wallet file and (a build with the trait
// `PostgreSQL`, its binaries installed) on a PostgreSQL profile, with the same expectations.
// Another process (the built `coffer`) writes while a search handle pages; the stored bytes are
// read from outside the wallet (the file's bytes; the server's rows through a query of its own).

import CofferCrypto
import CofferTestSupport
import Foundation
import Testing

@testable import CofferWallet

#if PostgreSQL
import PostgresNIO
#endif

/// A wallet of one backend for these tests, with what the tests need to reach it from outside.
private struct BackendWallet {
    let wallet: any SearchHandleWallet & KeyWallet
    /// `--wallet-url` for the built `coffer`, which writes to the same wallet from another process.
    let url: String
    /// Everything the storage holds, read from outside the wallet: a wallet file's bytes (with
    /// its WAL), or every row of every table of the database as text.
    let stored: @Sendable () async throws -> Data

    static func make(_ backend: RecordBackend, configuration: Wallet.Configuration = TestWallets.fastConfiguration) async throws
        -> BackendWallet
    {
        switch backend {
        case .sqlite:
            let file = TestWallets.folder().appendingPathComponent("wallet.sqlite")
            let wallet = try await Wallet.create(at: file, key: .raw(TestWallets.rawKey), configuration: configuration)
            return BackendWallet(
                wallet: wallet, url: "sqlite://" + file.path,
                stored: {
                    var bytes = Data()
                    for suffix in ["", "-wal"] {
                        if let d = try? Data(contentsOf: URL(fileURLWithPath: file.path + suffix)) { bytes += d }
                    }
                    return bytes
                })
        case .postgres:
            #if PostgreSQL
            let url = try PostgresTestServer.endpoint().url(database: try PostgresTestServer.makeDatabase("api")) + "?sslmode=disable"
            let settings = PostgresSettings(url: try PostgresURL(url))
            let wallet = try await PostgresWallet.create(settings: settings, key: PostgresTesting.key, configuration: configuration)
            return BackendWallet(wallet: wallet, url: url, stored: { try await Self.rows(settings) })
            #else
            throw WalletError.invalidInput("this build has no PostgreSQL backend")
            #endif
        }
    }

    #if PostgreSQL
    /// Every row of every table of the database as text, read by a wallet of its own (not the one tested).
    static func rows(_ settings: PostgresSettings) async throws -> Data {
        let reader = try await PostgresWallet.open(settings: settings, key: PostgresTesting.key)
        defer { reader.close() }
        return try await reader.store.withConnection { connection in
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
            return Data(text.utf8)
        }
    }
    #endif

    /// `coffer ARGS` on this wallet from another process (the key in `K`).
    func coffer(_ args: [String]) async throws {
        let r = try await runCoffer(
            args + ["--raw-key-env", "K", "--wallet-url", url], environment: ["K": TestWallets.rawKey.base64EncodedString()],
            within: .seconds(120))
        #expect(r.status == 0, "\(args): \(r.stderr)")
    }

    /// Whether `secret` is in the stored bytes in any of the forms a leak would take: its bytes,
    /// their hex, their base64 (and that text's hex, as a database prints bytes).
    func holdsInClear(_ stored: Data, _ secret: Data) -> String? {
        func hex(_ data: Data) -> String { data.map { String(format: "%02x", $0) }.joined() }
        let base64 = secret.base64EncodedString()
        let forms: [(String, Data)] = [
            ("bytes", secret), ("hex", Data(hex(secret).utf8)), ("base64", Data(base64.utf8)),
            ("hex of base64", Data(hex(Data(base64.utf8)).utf8)), ("first half", secret.prefix(16)),
            ("hex of the first half", Data(hex(secret.prefix(16)).utf8)),
        ]
        return forms.first { stored.range(of: $0.1) != nil }?.0
    }

    /// The wallet's keys (to count, in debug builds, reserved values decoded into a `String`).
    var keys: WalletKeys? {
        if let w = wallet as? Wallet { return w.keys }
        #if PostgreSQL
        if let w = wallet as? PostgresWallet { return w.keys }
        #endif
        return nil
    }
}

// With the trait, the suite is nested in the serialized PostgreSQL suite (as RecordWalletTests
// is): its PostgreSQL cases never overlap the test that restarts the server.
#if PostgreSQL
extension PostgresWalletTests {
    @Suite("WalletApi and the SDK's secrets on every backend") struct WalletApiBackendsTests {}
}
typealias WalletApiBackendsSuite = PostgresWalletTests.WalletApiBackendsTests
#else
@Suite("WalletApi and the SDK's secrets on every backend") struct WalletApiBackendsSuite {}
#endif

extension WalletApiBackendsSuite {
    // MARK: WalletApi

    private static func recordCalls<W: SearchHandleWallet>(_ wallet: W) async throws {
        let api = RecordWalletApi(wallet: wallet)
        try await api.addRecordWallet("credential", "c1", "value-1")
        try await api.addRecordTags("credential", "c1", #"{"Tag1": "value1", "~n": "5"}"#)
        try await api.updateRecordWallet("credential", "c1", "value-2")
        #expect(
            try await api.getRecordWallet("credential", "c1", #"{"retrieveType": true}"#)
                == #"{"id":"c1","type":"credential","value":"value-2","tags":{"Tag1":"value1","~n":"5"}}"#)
        try await api.deleteRecordTags("credential", "c1", #"["~n"]"#)
        try await api.updateRecordTags("credential", "c1", #"{"Tag2": "x"}"#)
        #expect(try await api.getRecordWallet("credential", "c1") == #"{"id":"c1","value":"value-2","tags":{"Tag2":"x"}}"#)
        await #expect(throws: WalletError.duplicate(type: "credential", id: "c1")) {
            try await api.addRecordWallet("credential", "c1", "v")
        }
        try await api.deleteRecordWallet("credential", "c1")
        await #expect(throws: WalletError.notFound(type: "credential", id: "c1")) { _ = try await api.getRecordWallet("credential", "c1") }
        await #expect(throws: WalletError.self) { try await api.deleteRecordTags("credential", "c1", #"{"not": "an array"}"#) }
    }

    @Test("the record calls take and give the seed's strings and throw the same errors", arguments: RecordBackend.available)
    func recordCalls(_ backend: RecordBackend) async throws {
        let b = try await BackendWallet.make(backend)
        defer { try? b.wallet.close() }
        try await Self.recordCalls(b.wallet)
    }

    private static func searchPages<W: SearchHandleWallet>(_ wallet: W) async throws {
        let api = RecordWalletApi(wallet: wallet)
        for i in 0..<3 { try await api.addRecordWallet("t", "r\(i)", "v\(i)", #"{"k": "a"}"#) }
        try await api.addRecordWallet("t", "other", "v", #"{"k": "b"}"#)
        let h = try await api.openSearch("t", #"{"k": "a"}"#, #"{"retrieveTotalCount": true, "retrieveTags": false}"#)
        #expect(try await api.searchNextRecords(h, 2) == #"{"totalCount":3,"records":[{"id":"r0","value":"v0"},{"id":"r1","value":"v1"}]}"#)
        #expect(try await api.searchNextRecords(h, 2) == #"{"totalCount":3,"records":[{"id":"r2","value":"v2"}]}"#)
        #expect(try await api.searchNextRecords(h, 2) == #"{"totalCount":3,"records":[]}"#)
        let counting = try await api.openSearch("t", "{}", #"{"retrieveRecords": false, "retrieveTotalCount": true}"#)
        #expect(try await api.searchNextRecords(counting, 5) == #"{"totalCount":4}"#)
        let typed = try await api.openSearch("t", #"{"$not": {"k": "a"}}"#, #"{"retrieveType": true, "retrieveValue": false}"#)
        #expect(try await api.searchNextRecords(typed, 5) == #"{"records":[{"id":"other","type":"t","tags":{"k":"b"}}]}"#)
        #expect(h != counting && counting != typed)
    }

    @Test("a search handle gives the seed's {totalCount, records} page by page, then an empty page", arguments: RecordBackend.available)
    func searchPages(_ backend: RecordBackend) async throws {
        let b = try await BackendWallet.make(backend)
        defer { try? b.wallet.close() }
        try await Self.searchPages(b.wallet)
    }

    private static func pagedWhileWritten<W: SearchHandleWallet>(_ wallet: W, _ b: BackendWallet) async throws {
        let api = RecordWalletApi(wallet: wallet)
        for i in 0..<6 { try await api.addRecordWallet("t", "r\(i)", "v\(i)") }
        let h = try await api.openSearch("t", "{}", #"{"retrieveTags": false}"#)
        var pages = [String]()
        pages.append(try await api.searchNextRecords(h, 2))
        // Another process writes between pages: a new record, one changed, one gone before the
        // search reaches them.
        try await b.coffer(["wallet", "add", "t", "n0", "new-0"])
        try await b.coffer(["wallet", "update", "t", "r2", "changed"])
        try await b.coffer(["wallet", "delete", "t", "r3"])
        pages.append(try await api.searchNextRecords(h, 2))
        try await b.coffer(["wallet", "add", "t", "n1", "new-1"])
        try await b.coffer(["wallet", "delete", "t", "r5"])
        pages.append(try await api.searchNextRecords(h, 2))
        pages.append(try await api.searchNextRecords(h, 2))
        #expect(
            pages == [
                #"{"records":[{"id":"r0","value":"v0"},{"id":"r1","value":"v1"}]}"#,
                #"{"records":[{"id":"r2","value":"changed"},{"id":"r4","value":"v4"}]}"#,
                #"{"records":[{"id":"n0","value":"new-0"},{"id":"n1","value":"new-1"}]}"#,
                #"{"records":[]}"#,
            ])
        try await api.closeSearch(h)
    }

    @Test(
        "a handle pages while another process writes: no record twice, none that stayed skipped, the writes seen",
        arguments: RecordBackend.available)
    func pagedWhileWritten(_ backend: RecordBackend) async throws {
        let b = try await BackendWallet.make(backend)
        defer { try? b.wallet.close() }
        try await Self.pagedWhileWritten(b.wallet, b)
    }

    private static func handleErrors<W: SearchHandleWallet>(_ wallet: W) async throws {
        let api = RecordWalletApi(wallet: wallet)
        try await api.addRecordWallet("t", "a", "v")
        await #expect(throws: WalletError.invalidHandle(99)) { _ = try await api.searchNextRecords(99, 1) }
        await #expect(throws: WalletError.invalidHandle(99)) { try await api.closeSearch(99) }
        let h = try await api.openSearch("t", "{}")
        await #expect(throws: WalletError.self) { _ = try await api.searchNextRecords(h, 0) }
        // A refused page leaves the search where it was.
        #expect(try await api.searchNextRecords(h, 1) == #"{"records":[{"id":"a","value":"v","tags":{}}]}"#)
        try await api.closeSearch(h)
        await #expect(throws: WalletError.invalidHandle(h)) { _ = try await api.searchNextRecords(h, 1) }
        await #expect(throws: WalletError.invalidHandle(h)) { try await api.closeSearch(h) }
        await #expect(throws: WalletError.self) { _ = try await api.openSearch("t", "not json") }
        await #expect(throws: WalletError.self) { _ = try await api.openSearch("t", "{}", #"{"retrieveEverything": true}"#) }
        await #expect(throws: WalletError.self) { _ = try await api.openSearch(SecretTypes.masterSecret, "{}") }
        // A handle is never reused.
        #expect(try await api.openSearch("t", "{}") > h)
        let (error, handle): ((any Error)?, Int) = await withCheckedContinuation { c in
            api.openSearch("t", query: "not json") { c.resume(returning: ($0, $1)) }
        }
        #expect(error is WalletError && handle == 0)
        #expect(wallet.openSearchCount == 1)
    }

    @Test("unknown, closed and refused handles throw the same errors, and a handle is never reused", arguments: RecordBackend.available)
    func handleErrors(_ backend: RecordBackend) async throws {
        let b = try await BackendWallet.make(backend)
        defer { try? b.wallet.close() }
        try await Self.handleErrors(b.wallet)
    }

    private static func handlesEndWithWallet<W: SearchHandleWallet>(_ wallet: W) async throws {
        let api = RecordWalletApi(wallet: wallet)
        try await api.addRecordWallet("t", "a", "v")
        let h = try await api.openSearch("t", "{}")
        #expect(wallet.openSearchCount == 1)
        try wallet.close()
        #expect(wallet.openSearchCount == 0)
        await #expect(throws: WalletError.invalidHandle(h)) { _ = try await api.searchNextRecords(h, 1) }
        await #expect(throws: WalletError.invalidHandle(h)) { try await api.closeSearch(h) }
        await #expect(throws: WalletError.closed) { _ = try await api.openSearch("t", "{}") }
        await #expect(throws: WalletError.closed) { _ = try await api.getRecordWallet("t", "a") }
    }

    @Test("closing the wallet ends its handles; no search opens after", arguments: RecordBackend.available)
    func handlesEndWithWallet(_ backend: RecordBackend) async throws {
        let b = try await BackendWallet.make(backend)
        defer { try? b.wallet.close() }
        try await Self.handlesEndWithWallet(b.wallet)
    }

    private static func leastRecentlyUsedReclaimed<W: SearchHandleWallet>(_ wallet: W) async throws {
        let api = RecordWalletApi(wallet: wallet)
        try await api.addRecordWallet("t", "a", "v")
        let first = try await api.openSearch("t", "{}")
        let second = try await api.openSearch("t", "{}")
        _ = try await api.searchNextRecords(first, 1) // `second` is now the least recently used
        let third = try await api.openSearch("t", "{}")
        #expect(wallet.openSearchCount == 2)
        await #expect(throws: WalletError.invalidHandle(second)) { _ = try await api.searchNextRecords(second, 1) }
        #expect(try await api.searchNextRecords(first, 1) == #"{"records":[]}"#)
        #expect(try await api.searchNextRecords(third, 1) == #"{"records":[{"id":"a","value":"v","tags":{}}]}"#)
    }

    @Test("beyond maxOpenSearches, opening a search reclaims the least recently used", arguments: RecordBackend.available)
    func leastRecentlyUsedReclaimed(_ backend: RecordBackend) async throws {
        var configuration = TestWallets.fastConfiguration
        configuration.maxOpenSearches = 2
        let b = try await BackendWallet.make(backend, configuration: configuration)
        defer { try? b.wallet.close() }
        try await Self.leastRecentlyUsedReclaimed(b.wallet)
    }

    // MARK: The SDK's secrets

    @Test("initializeMasterSecret creates the master secret once; the binding it gives stays", arguments: RecordBackend.available)
    func masterSecretOnce(_ backend: RecordBackend) async throws {
        let b = try await BackendWallet.make(backend)
        defer { try? b.wallet.close() }
        let wallet = b.wallet
        #expect(try await wallet.hasMasterSecret() == false)
        await #expect(throws: Wallet.notProvisioned) { _ = try await wallet.masterSecretBinding(credentialDefinitionID: "d") }
        #expect(try await wallet.initializeMasterSecret())
        let binding = try await wallet.masterSecretBinding(credentialDefinitionID: "d")
        #expect(try await wallet.initializeMasterSecret() == false)
        #expect(try await wallet.hasMasterSecret())
        #expect(try await wallet.masterSecretBinding(credentialDefinitionID: "d") == binding)
        #expect(try await wallet.masterSecretBinding(credentialDefinitionID: "e") != binding)
    }

    @Test(
        "a credential signature is stored, replaced and removed, and goes with its credential (delete and removeAll)",
        arguments: RecordBackend.available)
    func credentialSignatures(_ backend: RecordBackend) async throws {
        let b = try await BackendWallet.make(backend)
        defer { try? b.wallet.close() }
        let wallet = b.wallet
        #expect(try await wallet.hasCredentialSignature(credentialID: "c1") == false)
        try await wallet.storeCredentialSignature(#"{"sig":1}"#, credentialID: "c1")
        try await wallet.storeCredentialSignature(#"{"sig":2}"#, credentialID: "c1") // replaces
        try await wallet.storeCredentialSignature("", credentialID: "empty")
        #expect(try await wallet.hasCredentialSignature(credentialID: "c1"))
        #expect(try await wallet.hasCredentialSignature(credentialID: "empty"))
        let holder = wallet.keyAccess.holder
        #expect(try await holder.credentialSignatureBytes(credentialID: "c1")??.exportBytes() == Data(#"{"sig":2}"#.utf8))
        #expect(try await holder.credentialSignatureBytes(credentialID: "empty").map { $0 == nil } == true)
        #expect(try await holder.credentialSignatureBytes(credentialID: "none") == nil)
        await #expect(throws: WalletError.self) { try await wallet.storeCredentialSignature("s", credentialID: "") }
        await #expect(throws: WalletError.self) { _ = try await wallet.hasCredentialSignature(credentialID: "") }
        try await wallet.removeCredentialSignature(credentialID: "empty")
        try await wallet.removeCredentialSignature(credentialID: "empty") // none: no error
        #expect(try await wallet.hasCredentialSignature(credentialID: "empty") == false)

        // Deleting a credential deletes its signature; one of another type's record does not.
        try await wallet.add(type: SecretTypes.credential, id: "c1", value: "{}", tags: [:], expiresAt: nil)
        try await wallet.add(type: "offer", id: "c2", value: "{}", tags: [:], expiresAt: nil)
        try await wallet.storeCredentialSignature("s2", credentialID: "c2")
        try await wallet.delete(type: SecretTypes.credential, id: "c1")
        try await wallet.delete(type: "offer", id: "c2")
        #expect(try await wallet.hasCredentialSignature(credentialID: "c1") == false)
        #expect(try await wallet.hasCredentialSignature(credentialID: "c2"))
        // So does removeAll, for the credentials it removes only.
        for id in ["k1", "k2", "k3"] {
            try await wallet.add(
                type: SecretTypes.credential, id: id, value: "{}", tags: ["keep": id == "k3" ? "yes" : "no"], expiresAt: nil)
            try await wallet.storeCredentialSignature("s-\(id)", credentialID: id)
        }
        #expect(try await wallet.removeAll(type: SecretTypes.credential, matching: WalletQuery(json: #"{"keep": "no"}"#)) == 2)
        #expect(try await wallet.hasCredentialSignature(credentialID: "k1") == false)
        #expect(try await wallet.hasCredentialSignature(credentialID: "k2") == false)
        #expect(try await wallet.hasCredentialSignature(credentialID: "k3"))
    }

    @Test("the record API and search handles refuse the secrets' reserved types", arguments: RecordBackend.available)
    func reservedTypesRefused(_ backend: RecordBackend) async throws {
        let b = try await BackendWallet.make(backend)
        defer { try? b.wallet.close() }
        let wallet = b.wallet
        try await wallet.initializeMasterSecret()
        try await wallet.storeCredentialSignature("sig", credentialID: "c1")
        for (type, id) in [(SecretTypes.masterSecret, SecretTypes.masterSecretID), (SecretTypes.credentialSignature, "c1")] {
            for attempt in [
                { _ = try await wallet.fetch(type: type, id: id) },
                { _ = try await wallet.get(type: type, id: id) },
                { try await wallet.add(type: type, id: "x", value: "v", tags: [:], expiresAt: nil) },
                { try await wallet.update(type: type, id: id, value: "v") },
                { try await wallet.replace(type: type, id: id, value: "v", tags: [:]) },
                { try await wallet.addTags(type: type, id: id, tags: ["t": "v"]) },
                { try await wallet.delete(type: type, id: id) },
                { _ = try await wallet.count(type: type, matching: .all) },
                { _ = try await wallet.search(type: type, matching: .all, options: SearchOptions(), count: nil) },
                { _ = try await wallet.removeAll(type: type, matching: .all) },
                { _ = try await wallet.openSearch(type: type, query: .all) },
            ] as [@Sendable () async throws -> Void] {
                await #expect { try await attempt() } throws: { error in
                    guard case WalletError.invalidInput(let message) = error else { return false }
                    return message.contains("reserved")
                }
            }
        }
        #expect(try await wallet.hasMasterSecret())
        #expect(try await wallet.hasCredentialSignature(credentialID: "c1"))
    }

    @Test(
        "the master secret and a signature are never in clear in the stored bytes, and are never decoded into a String",
        arguments: RecordBackend.available)
    func secretsNeverInClear(_ backend: RecordBackend) async throws {
        let b = try await BackendWallet.make(backend)
        defer { try? b.wallet.close() }
        let wallet = b.wallet
        let keys = try #require(b.keys)
        let signature = "a-credential-signature-\(UUID().uuidString)-that-must-stay-sealed"
        try await wallet.initializeMasterSecret()
        try await wallet.storeCredentialSignature("an earlier signature", credentialID: "c1")
        try await wallet.storeCredentialSignature(signature, credentialID: "c1")
        #expect(try await wallet.hasMasterSecret())
        #expect(try await wallet.hasCredentialSignature(credentialID: "c1"))
        _ = try await wallet.masterSecretBinding(credentialDefinitionID: "d")
        let secret = try await wallet.keyAccess.holder.withMasterSecret { $0.exportBytes() }
        #expect(secret.count == 32)

        let stored = try await b.stored()
        #expect(stored.count > 400)
        #expect(b.holdsInClear(stored, secret) == nil, "the master secret is stored as its \(b.holdsInClear(stored, secret) ?? "")")
        let text = Data(signature.utf8)
        #expect(b.holdsInClear(stored, text) == nil, "the signature is stored as its \(b.holdsInClear(stored, text) ?? "")")
        for clear in [SecretTypes.masterSecret, SecretTypes.credentialSignature] {
            #expect(b.holdsInClear(stored, Data(clear.utf8)) == nil, "\(clear) is stored in clear")
        }
        #if DEBUG
        let blinds = [SecretTypes.masterSecret, SecretTypes.credentialSignature].map { keys.typeBlind($0) }
        #expect(RecordCodec.reservedValueTexts.withLock { counts in blinds.reduce(0) { $0 + (counts[$1] ?? 0) } } == 0)
        #endif
    }
}
