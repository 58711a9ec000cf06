// A rotation of a PostgreSQL profile's key against writers that opened the profile before it:
// no acknowledged write may be left sealed under the old key. Every write carries the profile's
// key generation (its gate): a rotation waits for the writes under way, and the writes after it
// are refused with `wrongKey` and keep nothing.

#if PostgreSQL
import CofferSync
import CofferTestSupport
import Foundation
import PostgresNIO
import Testing

@testable import CofferWallet

extension PostgresWalletTests {
    /// A profile of a database of its own with `count` records, open twice (two writers).
    static func twoWriters(_ label: String, count: Int = 20) async throws -> (PostgresSettings, PostgresWallet, PostgresWallet) {
        let settings = try PostgresTesting.settings(label)
        let first = try await PostgresWallet.create(settings: settings, key: PostgresTesting.key)
        try await first.addAll((0..<count).map { (type: "cred", id: "r\($0)", value: "v\($0)", tags: ["n": .string("\($0 % 3)")]) })
        let second = try await PostgresWallet.open(settings: settings, key: PostgresTesting.key)
        return (settings, first, second)
    }

    @Test("after another writer rotates the key, every write of a wallet opened before is refused as wrongKey and keeps nothing")
    func staleWritesRefusedAfterRotation() async throws {
        let (settings, stale, rotator) = try await Self.twoWriters("gatestale")
        defer { stale.close() }
        try await rotator.rekey(to: PostgresTesting.otherKey, rotatingKey: true)
        rotator.close()

        let writes: [(String, @Sendable () async throws -> Void)] = [
            ("add", { try await stale.add(type: "cred", id: "late", value: "x") }),
            ("addAll", { try await stale.addAll([(type: "cred", id: "late2", value: "x", tags: [:])]) }),
            ("importAll (COPY)", { _ = try await stale.importAll([(type: "cred", id: "late3", value: "x", tags: [:])]) }),
            ("replace", { try await stale.replace(type: "cred", id: "r1", value: "x", tags: [:]) }),
            ("update", { try await stale.update(type: "cred", id: "r1", value: "x") }),
            ("delete", { try await stale.delete(type: "cred", id: "r2") }),
            ("transaction", { try await stale.transaction { tx in try await tx.add(type: "cred", id: "late4", value: "x") } }),
            ("createKey", { _ = try await stale.createKey() }),
        ]
        for (name, write) in writes {
            do {
                try await write()
                Issue.record("\(name) by a wallet opened before the rotation was acknowledged")
            } catch WalletError.wrongKey(let message) {
                #expect(message.contains("rotated"), "\(name): \(message)")
            } catch {
                Issue.record("\(name) failed with \(error), not wrongKey")
            }
        }
        // Under the new key: the 20 records, none of the refused writes, and nothing unreadable.
        let current = try await PostgresWallet.open(settings: settings, key: PostgresTesting.otherKey)
        defer { current.close() }
        #expect(try await current.count(type: "cred") == 20)
        #expect(try await current.fetch(type: "cred", id: "r1")?.value == "v1")
        #expect(try await current.listKeys().isEmpty)
        let report = try await current.checkIntegrity()
        #expect(report.isClean, "\(report)")
        let rows = try await current.store.withConnection { connection in
            var n: Int64 = 0
            for try await c in try await connection.query("SELECT count(*) FROM coffer_items", logger: PostgresStore.logger).decode(
                Int64.self)
            {
                n = c
            }
            return n
        }
        #expect(rows == 20, "rows outside the profile's 20 records are in the table")
    }

    @Test("after another writer rotates the key, every read of a wallet opened before fails as wrongKey, never as an absent record")
    func staleReadsRefusedAfterRotation() async throws {
        let (_, stale, rotator) = try await Self.twoWriters("gatestaleread")
        defer { stale.close() }
        try await stale.initializeMasterSecret()
        #expect(try await stale.fetch(type: "cred", id: "r1")?.value == "v1")
        try await rotator.rekey(to: PostgresTesting.otherKey, rotatingKey: true)
        defer { rotator.close() }

        let n1 = try WalletQuery(json: #"{"n":"1"}"#)
        let reads: [(String, @Sendable () async throws -> Void)] = [
            ("fetch of a stored record", { _ = try await stale.fetch(type: "cred", id: "r1") }),
            ("fetch of a missing record", { _ = try await stale.fetch(type: "cred", id: "never") }),
            ("get", { _ = try await stale.get(type: "cred", id: "r2") }),
            ("count (server-side)", { _ = try await stale.count(type: "cred", matching: n1) }),
            ("count (in memory)", { _ = try await stale.count(type: "cred", matching: try WalletQuery(json: #"{"n":{"$like":"1"}}"#)) }),
            ("search", { _ = try await stale.search(type: "cred", query: n1) }),
            ("search page", { _ = try await stale.search(type: "cred", matching: .all, options: SearchOptions(), count: nil) }),
            ("hasMasterSecret", { _ = try await stale.hasMasterSecret() }),
        ]
        for (name, read) in reads {
            do {
                try await read()
                Issue.record("\(name) by a wallet opened before the rotation answered as if nothing had changed")
            } catch WalletError.wrongKey(let message) {
                #expect(message.contains("rotated"), "\(name): \(message)")
            } catch {
                Issue.record("\(name) failed with \(error), not wrongKey")
            }
        }
        // The rotating wallet reads on.
        #expect(try await rotator.fetch(type: "cred", id: "r1")?.value == "v1")
        #expect(try await rotator.fetch(type: "cred", id: "never") == nil)
        #expect(try await rotator.count(type: "cred", matching: n1) == 7)
    }

    @Test("an empty search or count reads the key's generation in its own statement: one call, no second round trip")
    func emptyReadsTakeOneCall() async throws {
        let settings = try PostgresTesting.settings("gateonecall")
        let wallet = try await PostgresWallet.create(settings: settings, key: PostgresTesting.key)
        defer { wallet.close() }
        try await wallet.add(type: "cred", id: "a", value: "v", tags: ["n": "1"])
        let none = try WalletQuery(json: #"{"n":"2"}"#)
        let noneInMemory = try WalletQuery(json: #"{"n":{"$like":"2"}}"#)
        let reads: [(String, @Sendable () async throws -> Int)] = [
            ("search", { try await wallet.search(type: "cred", query: none).records.count }),
            ("search of a type with no records", { try await wallet.search(type: "other").records.count }),
            ("count (server-side)", { try await wallet.count(type: "cred", matching: none) }),
            ("count (in memory)", { try await wallet.count(type: "cred", matching: noneInMemory) }),
        ]
        let gauge = wallet.store.gauge
        for (name, read) in reads {
            let before = gauge.leases
            #expect(try await read() == 0, "\(name) found records")
            #expect(gauge.leases - before == 1, "\(name) took \(gauge.leases - before) calls to the server")
        }
    }

    @Test("the wallet that rotated the key goes on writing under the new key")
    func rotatingWalletGoesOn() async throws {
        let (settings, wallet, other) = try await Self.twoWriters("gateown")
        other.close()
        try await wallet.rekey(to: PostgresTesting.otherKey, rotatingKey: true)
        try await wallet.add(type: "cred", id: "after", value: "new", tags: ["n": "1"])
        try await wallet.replace(type: "cred", id: "r0", value: "changed", tags: ["n": "1"])
        try await wallet.transaction { tx in try await tx.add(type: "cred", id: "inTx", value: "t") }
        #expect(try await wallet.fetch(type: "cred", id: "after")?.value == "new")
        wallet.close()
        let reopened = try await PostgresWallet.open(settings: settings, key: PostgresTesting.otherKey)
        defer { reopened.close() }
        #expect(try await reopened.fetch(type: "cred", id: "after")?.value == "new")
        #expect(try await reopened.fetch(type: "cred", id: "r0")?.value == "changed")
        #expect(try await reopened.fetch(type: "cred", id: "inTx")?.value == "t")
        #expect(try await reopened.count(type: "cred", matching: try WalletQuery(json: #"{"n":"1"}"#)) == 9)
    }

    @Test("a rotation waits for a write transaction under way and re-seals what it added")
    func rotationWaitsForOpenTransaction() async throws {
        let (settings, writer, rotator) = try await Self.twoWriters("gatewait")
        let release = Locked(false)
        let added = Locked(false)
        let transaction = Task {
            try await writer.transaction { tx in
                try await tx.add(type: "cred", id: "during", value: "d")
                added.withLock { $0 = true }
                try await eventually("the test releases the transaction", within: .seconds(90)) { release.withLock { $0 } }
            }
        }
        try await eventually("the transaction added its record") { added.withLock { $0 } }
        let rotation = Task { try await rotator.rekey(to: PostgresTesting.otherKey, rotatingKey: true) }
        // From the server: the rotation's session waits on a lock while the transaction is open.
        try await eventually("the rotation waits for the profile's row lock", within: .seconds(60)) {
            try await writer.store.withConnection { connection in
                for try await waiting in try await connection.query(
                    """
                    SELECT count(*) FROM pg_stat_activity
                    WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%FOR UPDATE%'
                    """, logger: PostgresStore.logger
                ).decode(Int64.self) {
                    return waiting > 0
                }
                return false
            }
        }
        release.withLock { $0 = true }
        try await transaction.value
        try await rotation.value
        writer.close()
        rotator.close()
        let current = try await PostgresWallet.open(settings: settings, key: PostgresTesting.otherKey)
        defer { current.close() }
        #expect(try await current.fetch(type: "cred", id: "during")?.value == "d", "the record added before the rotation was not re-sealed")
        #expect(try await current.count(type: "cred") == 21)
    }

    @Test("a profile removed under an open wallet: its writes are refused as walletMissing and leave no rows")
    func writesAfterRemovalRefused() async throws {
        let (settings, wallet, other) = try await Self.twoWriters("gateremoved")
        other.close()
        defer { wallet.close() }
        try await PostgresWallet.removeProfile("default", settings: settings)
        await #expect(throws: WalletError.walletMissing(path: wallet.label)) {
            try await wallet.add(type: "cred", id: "orphan", value: "x")
        }
        await #expect(throws: WalletError.walletMissing(path: wallet.label)) { _ = try await wallet.fetch(type: "cred", id: "r1") }
        await #expect(throws: WalletError.walletMissing(path: wallet.label)) { _ = try await wallet.count(type: "cred") }
        await #expect(throws: WalletError.walletMissing(path: wallet.label)) { _ = try await wallet.search(type: "cred") }
        let rows = try await wallet.store.withConnection { connection in
            var n: Int64 = -1
            for try await c in try await connection.query("SELECT count(*) FROM coffer_items", logger: PostgresStore.logger).decode(
                Int64.self)
            {
                n = c
            }
            return n
        }
        #expect(rows == 0)
    }

    @Test("a database of format 1 gains the key generation when opened, and its records stay")
    func formatOneMigrates() async throws {
        let (settings, wallet, other) = try await Self.twoWriters("gateformat", count: 5)
        other.close()
        try await wallet.store.withConnection { connection in
            try await connection.query("ALTER TABLE coffer_profiles DROP COLUMN generation", logger: PostgresStore.logger)
            try await connection.query("UPDATE coffer_schema SET format = 1", logger: PostgresStore.logger)
        }
        wallet.close()
        let reopened = try await PostgresWallet.open(settings: settings, key: PostgresTesting.key)
        defer { reopened.close() }
        #expect(try await reopened.count(type: "cred") == 5)
        try await reopened.add(type: "cred", id: "more", value: "m")
        let format = try await reopened.store.withConnection { connection in
            var f = 0
            for try await v in try await connection.query("SELECT format FROM coffer_schema", logger: PostgresStore.logger).decode(Int.self)
            {
                f = v
            }
            return f
        }
        #expect(format == PostgresStore.format)
    }

    @Test("20 `coffer wallet add` processes racing `rekey --rotate`: every add that exits 0 reads back under the new key")
    func addsRacingRotationFromProcesses() async throws {
        let both = try TwoBackends("gaterace")
        let settings = PostgresSettings(url: try PostgresURL(both.url))
        let seed = try await PostgresWallet.create(settings: settings, key: PostgresTesting.key)
        try await seed.addAll((0..<20).map { (type: "t", id: "before\($0)", value: "v", tags: [:]) })
        seed.close()
        try FileManager.default.createDirectory(at: both.store, withIntermediateDirectories: true)
        let env = TwoBackends.environment
        // Ten adds open the profile under the old key and wait (the pause) until the rotation has
        // committed; ten more start around the rotation without a pause.
        let paused = try (0..<10).map { i in
            try startCoffer(
                ["wallet", "add", "t", "paused\(i)", "v", "--raw-key-env", "K", "--wallet-url", both.url], store: both.store,
                environment: env.merging(["COFFER_TEST_PAUSE_AT": "wallet-opened", "COFFER_TEST_PAUSE_MS": "10000"]) { $1 })
        }
        let url = both.url
        let store = both.store
        let (racing, rotation, held) = try await onOwnThread { () throws -> ([ChildProcess], ProcessResult, Int) in
            try paused.waitForStderrBlocking(containingOrEnded: "test-pause: wallet-opened")
            let racing = try (0..<10).map { i in
                try startCoffer(
                    ["wallet", "add", "t", "racing\(i)", "v", "--raw-key-env", "K", "--wallet-url", url], store: store, environment: env)
            }
            let rotation = try runProcessBlocking(
                cofferBinary,
                [
                    "--store", store.path, "wallet", "rekey", "--rotate", "--raw-key-env", "K", "--new-raw-key-env", "O", "--wallet-url",
                    url,
                ],
                environment: env)
            return (racing, rotation, paused.filter { $0.isRunning && $0.stderrSoFar.contains("test-pause") }.count)
        }
        #expect(rotation.status == 0, "\(rotation.stderr)")
        #expect(held > 0, "no add was held across the rotation: the race was not hit")
        let results = try await (paused + racing).wait()
        var acknowledged = (0..<20).map { "before\($0)" }
        var refusedAfterOpening = 0
        for (index, (child, result)) in zip(paused + racing, results).enumerated() {
            let id = child.arguments[child.arguments.firstIndex(of: "t")! + 1]
            if result.status == 0 {
                acknowledged.append(id)
            } else {
                // Refused with the contract's wrong-key code: at open (the old key no longer opens
                // the profile) or, for one that opened before the rotation, at its write.
                #expect(result.status == 4, "\(id): \(result.stderr)")
                if index < paused.count {
                    #expect(result.stderr.contains("rotated"), "\(id): \(result.stderr)")
                    refusedAfterOpening += 1
                }
            }
        }
        #expect(refusedAfterOpening > 0, "no add held across the rotation was refused at its write")
        let current = try await PostgresWallet.open(settings: settings, key: PostgresTesting.otherKey)
        defer { current.close() }
        for id in acknowledged {
            #expect(try await current.fetch(type: "t", id: id) != nil, "acknowledged record \(id) does not read back under the new key")
        }
        #expect(try await current.count(type: "t") == acknowledged.count)
        #expect(try await current.checkIntegrity().isClean)
    }

    @Test(
        "a rekey or rotation by a wallet opened before another wallet rekeyed the profile is refused with wrongKey, so the key the first set still opens it",
        arguments: [false, true])
    func staleRekeyRefused(rotating: Bool) async throws {
        let (settings, first, stale) = try await Self.twoWriters(rotating ? "stalerekeyrot" : "stalerekey")
        defer { stale.close() }
        let third = WalletKey.raw(Data(repeating: 9, count: 32))
        try await first.rekey(to: PostgresTesting.otherKey)
        first.close()
        do {
            try await stale.rekey(to: third, rotatingKey: rotating)
            Issue.record("a rekey by a wallet opened before another rekey was acknowledged")
        } catch WalletError.wrongKey(let message) {
            #expect(message.contains("changed (by a rekey in another process"), "\(message)")
        }
        // The stale wallet still writes (a plain rekey keeps the profile's own key).
        try await stale.add(type: "cred", id: "after", value: "v")
        await #expect(throws: WalletError.self) { try await PostgresWallet.open(settings: settings, key: third) }
        let current = try await PostgresWallet.open(settings: settings, key: PostgresTesting.otherKey)
        defer { current.close() }
        #expect(try await current.fetch(type: "cred", id: "after")?.value == "v")
        #expect(try await current.count(type: "cred") == 21)
    }

    @Test("one PostgreSQL wallet rekeyed several times in a row ends under the last key")
    func rekeyTwiceInARow() async throws {
        let (settings, wallet, other) = try await Self.twoWriters("rekeytwice")
        other.close()
        let third = WalletKey.raw(Data(repeating: 9, count: 32))
        try await wallet.rekey(to: PostgresTesting.otherKey)
        try await wallet.rekey(to: third, rotatingKey: true)
        try await wallet.rekey(to: PostgresTesting.otherKey)
        wallet.close()
        let fresh = try await PostgresWallet.open(settings: settings, key: PostgresTesting.otherKey)
        defer { fresh.close() }
        #expect(try await fresh.count(type: "cred") == 20)
    }
}
#endif
