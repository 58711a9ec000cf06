// Profiles: many wallets in one store file, each in its own tables under its own key.

import CofferCrypto
import CofferWallet
import Foundation
import GRDB
import Testing

@Suite("Wallet profiles")
struct ProfileTests {
    static func eq(_ tag: String, _ value: String) throws -> WalletQuery { try WalletQuery(json: #"{"\#(tag)": "\#(value)"}"#) }

    static let keyA = WalletKey.raw(Data(repeating: 1, count: 32))
    static let keyB = WalletKey.raw(Data(repeating: 2, count: 32))
    static let keyC = WalletKey.raw(Data(repeating: 3, count: 32))

    /// A store with its default profile (keyA) and profile `bob` (keyB), both open.
    static func store() async throws -> (URL, Wallet, Wallet) {
        let url = TestWallets.folder().appendingPathComponent("wallet.sqlite")
        let main = try await Wallet.create(at: url, key: keyA, configuration: TestWallets.fastConfiguration)
        let bob = try await Wallet.create(at: url, key: keyB, profile: "bob", configuration: TestWallets.fastConfiguration)
        return (url, main, bob)
    }

    @Test("one profile's key opens no other profile: wrongKey both ways")
    func wrongProfileKey() async throws {
        let (url, main, bob) = try await Self.store()
        try main.close()
        try bob.close()
        await #expect(throws: WalletError.self) { _ = try await Wallet.open(at: url, key: Self.keyA, profile: "bob") }
        do {
            _ = try await Wallet.open(at: url, key: Self.keyA, profile: "bob")
        } catch let error as WalletError {
            guard case .wrongKey = error else {
                Issue.record("expected wrongKey, got \(error)")
                return
            }
        }
        do {
            _ = try await Wallet.open(at: url, key: Self.keyB)
            Issue.record("bob's key opened the default profile")
        } catch let error as WalletError {
            guard case .wrongKey = error else {
                Issue.record("expected wrongKey, got \(error)")
                return
            }
        }
        let reopened = try await Wallet.open(at: url, key: Self.keyB, profile: "bob")
        try reopened.close()
    }

    @Test("a store made profile-first gets its default profile from create; both profiles keep their own keys and records")
    func defaultAfterNamedProfile() async throws {
        let url = TestWallets.folder().appendingPathComponent("wallet.sqlite")
        let bob = try await Wallet.create(at: url, key: Self.keyB, profile: "bob", configuration: TestWallets.fastConfiguration)
        try await bob.add(type: "t", id: "b1", value: "bob's")
        #expect(try await Wallet.profiles(at: url) == ["bob"])
        let main = try await Wallet.create(at: url, key: Self.keyA, configuration: TestWallets.fastConfiguration)
        try await main.add(type: "t", id: "m1", value: "main's")
        #expect(try await Wallet.profiles(at: url) == ["default", "bob"])
        // A second create of the default finds it there.
        await #expect(throws: WalletError.walletExists(path: url.path)) {
            _ = try await Wallet.create(at: url, key: Self.keyC, configuration: TestWallets.fastConfiguration)
        }
        try main.close()
        try bob.close()
        let mainAgain = try await Wallet.open(at: url, key: Self.keyA, configuration: TestWallets.fastConfiguration)
        defer { try? mainAgain.close() }
        let bobAgain = try await Wallet.open(at: url, key: Self.keyB, profile: "bob", configuration: TestWallets.fastConfiguration)
        defer { try? bobAgain.close() }
        #expect(try await mainAgain.fetchAll(type: "t").map(\.id) == ["m1"])
        #expect(try await bobAgain.fetchAll(type: "t").map(\.id) == ["b1"])
        #expect(try await mainAgain.checkIntegrity().isClean)
        #expect(try await bobAgain.checkIntegrity().isClean)
    }

    @Test(
        "an SQLite file in WAL mode with no table (a restore into a new store that stopped) takes a new wallet; another database does not")
    func createInEmptyStore() async throws {
        let folder = TestWallets.folder()
        let empty = folder.appendingPathComponent("empty.sqlite")
        let other = folder.appendingPathComponent("other.sqlite")
        for url in [empty, other] {
            let pool = try DatabasePool(path: url.path)
            if url == other { try await pool.write { try $0.execute(sql: "CREATE TABLE notes(text)") } }
            try pool.close()
        }
        let wallet = try await Wallet.create(at: empty, key: Self.keyA, configuration: TestWallets.fastConfiguration)
        try await wallet.add(type: "t", id: "1", value: "v")
        try wallet.close()
        let files = { try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted() }
        let before = (try Data(contentsOf: other), try FileManager.default.attributesOfItem(atPath: other.path)[.posixPermissions] as? Int)
        let listed = try files()
        await #expect(throws: WalletError.walletExists(path: other.path)) {
            _ = try await Wallet.create(at: other, key: Self.keyA, configuration: TestWallets.fastConfiguration)
        }
        // Only looked at: the same bytes and mode, and no file left beside it.
        #expect(try Data(contentsOf: other) == before.0)
        #expect(try FileManager.default.attributesOfItem(atPath: other.path)[.posixPermissions] as? Int == before.1)
        #expect(try files() == listed)
    }

    @Test("records, counts and searches never cross profiles; the same type and id in two profiles are independent")
    func isolation() async throws {
        let (_, main, bob) = try await Self.store()
        defer {
            try? main.close()
            try? bob.close()
        }
        try await main.add(type: "t", id: "same", value: "main", tags: ["k": "v"])
        try await bob.add(type: "t", id: "same", value: "bob", tags: ["k": "v"])
        for i in 0..<5 { try await bob.add(type: "t", id: "b\(i)", value: "x", tags: ["k": "v"]) }
        #expect(try await main.get(type: "t", id: "same").value == "main")
        #expect(try await bob.get(type: "t", id: "same").value == "bob")
        #expect(try await main.count(type: "t") == 1)
        #expect(try await main.count(type: "t", matching: Self.eq("k", "v")) == 1)
        #expect(try await bob.count(type: "t", matching: Self.eq("k", "v")) == 6)
        let found = try await main.fetchAll(type: "t", matching: Self.eq("k", "v"))
        #expect(found.map(\.id) == ["same"])
        try await bob.delete(type: "t", id: "same")
        #expect(try await main.get(type: "t", id: "same").value == "main")
    }

    @Test("removing a profile removes its tables and catalogue row and nothing else")
    func removalRemovesOnlyItsRecords() async throws {
        let (url, main, bob) = try await Self.store()
        let carol = try await Wallet.create(at: url, key: Self.keyC, profile: "carol", configuration: TestWallets.fastConfiguration)
        for i in 0..<3 { try await main.add(type: "t", id: "m\(i)", value: "x") }
        for i in 0..<5 { try await bob.add(type: "t", id: "b\(i)", value: "x") }
        for i in 0..<2 { try await carol.add(type: "t", id: "c\(i)", value: "x") }
        try bob.close()
        #expect(try await Wallet.profiles(at: url) == ["default", "bob", "carol"])
        try await Wallet.removeProfile("bob", at: url)
        #expect(try await Wallet.profiles(at: url) == ["default", "carol"])
        #expect(try await main.count(type: "t") == 3)
        #expect(try await carol.count(type: "t") == 2)
        #expect(try await main.checkIntegrity().problems.isEmpty)
        #expect(try await carol.checkIntegrity().problems.isEmpty)
        try main.close()
        try carol.close()
        let left = try await DatabaseQueue(path: url.path).read { db in
            try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE tbl_name LIKE 'cp1\\_%' ESCAPE '\\'")
        }
        #expect(left.isEmpty, "bob's objects left: \(left)")
        await #expect(throws: WalletError.self) { _ = try await Wallet.open(at: url, key: Self.keyB, profile: "bob") }
        let again = try await Wallet.open(at: url, key: Self.keyA)
        #expect(try await again.count(type: "t") == 3)
        try again.close()
    }

    @Test(
        "a wallet open on a removed profile whose number a new profile took says the profile was removed on write, search and check, and reads nothing of the new one"
    )
    func removedProfileNumberReused() async throws {
        let (url, main, bob) = try await Self.store()
        defer {
            try? main.close()
            try? bob.close()
        }
        try await bob.add(type: "t", id: "b1", value: "bob's")
        try await Wallet.removeProfile("bob", at: url)
        let carol = try await Wallet.create(at: url, key: Self.keyC, profile: "carol", configuration: TestWallets.fastConfiguration)
        defer { try? carol.close() }
        try await carol.add(type: "t", id: "c1", value: "carol's")
        let calls: [(String, @Sendable () async throws -> Void)] = [
            ("add", { try await bob.add(type: "t", id: "late", value: "v") }),
            ("search", { _ = try await bob.search(type: "t", matching: .all) }),
            ("check", { _ = try await bob.checkIntegrity() }),
        ]
        for (name, call) in calls {
            do {
                try await call()
                Issue.record("\(name) on the removed profile succeeded")
            } catch let error as WalletError {
                guard case .storage(let message, _) = error else {
                    Issue.record("\(name): expected the removed profile's storage error, got \(error)")
                    continue
                }
                #expect(message.contains("profile was removed"), "\(name): \(message)")
            }
        }
        #expect(try await carol.fetchAll(type: "t").map(\.id) == ["c1"])
        #expect(try await carol.checkIntegrity().isClean)
    }

    @Test("a search running on a profile that is removed ends with an error saying the profile was removed")
    func removalUnderRunningSearch() async throws {
        let (url, main, bob) = try await Self.store()
        defer {
            try? main.close()
            try? bob.close()
        }
        try await bob.transaction { tx in for i in 0..<300 { try tx.add(type: "t", id: "b\(i)", value: "x") } }
        let handle = try await bob.openSearch(type: "t", query: .all)
        let first = try await bob.searchNext(handle, count: 10)
        #expect(first.records?.count == 10)
        try await Wallet.removeProfile("bob", at: url)
        do {
            _ = try await bob.searchNext(handle, count: 10)
            Issue.record("the search went on after its profile was removed")
        } catch let error as WalletError {
            #expect("\(error)".contains("removed"), "\(error)")
        }
        #expect(try await main.count(type: "t") == 0)
    }

    /// Every row of the items table with its row id, as stored.
    static func itemRows(_ url: URL) throws -> [[DatabaseValue]] {
        try DatabaseQueue(path: url.path).read { db in
            try Row.fetchAll(db, sql: "SELECT id, type, name, value, expiry FROM items ORDER BY id").map { row in
                (0..<5).map { row[$0] as DatabaseValue }
            }
        }
    }

    @Test("a single-wallet file is its default profile: adding a profile and reopening rewrites none of its records")
    func singleWalletFileIsDefaultProfile() async throws {
        let (wallet, url) = try await TestWallets.make(key: Self.keyA)
        try await wallet.transaction { tx in
            for i in 0..<50 { try tx.add(type: "t", id: "r\(i)", value: "v\(i)", tags: ["k": .string("\(i)")]) }
        }
        try wallet.close()
        let before = try Self.itemRows(url)
        #expect(try await Wallet.profiles(at: url) == ["default"])
        let bob = try await Wallet.create(at: url, key: Self.keyB, profile: "bob", configuration: TestWallets.fastConfiguration)
        try await bob.add(type: "t", id: "x", value: "y")
        try bob.close()
        let reopened = try await Wallet.open(at: url, key: Self.keyA, profile: "default")
        #expect(try await reopened.count(type: "t") == 50)
        #expect(try await reopened.checkIntegrity().problems.isEmpty)
        try reopened.close()
        #expect(try Self.itemRows(url) == before)
        #expect(before.count == 50)
    }

    @Test("two profiles written at once by many tasks: every record lands in its own profile")
    func concurrentTasks() async throws {
        let (_, main, bob) = try await Self.store()
        defer {
            try? main.close()
            try? bob.close()
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for i in 0..<40 {
                group.addTask { try await main.add(type: "t", id: "r\(i)", value: "main", tags: ["p": "main"]) }
                group.addTask { try await bob.add(type: "t", id: "r\(i)", value: "bob", tags: ["p": "bob"]) }
            }
            try await group.waitForAll()
        }
        #expect(try await main.count(type: "t", matching: Self.eq("p", "main")) == 40)
        #expect(try await bob.count(type: "t", matching: Self.eq("p", "bob")) == 40)
        #expect(try await main.count(type: "t", matching: Self.eq("p", "bob")) == 0)
        #expect(try await main.checkIntegrity().problems.isEmpty)
        #expect(try await bob.checkIntegrity().problems.isEmpty)
    }

    @Test("an index added to one profile's table is detected by that profile's open; the other profile still opens")
    func tamperedProfileSchema() async throws {
        let (url, main, bob) = try await Self.store()
        try main.close()
        try bob.close()
        try await TestWallets.attackerQueue(url).write { db in try db.execute(sql: "CREATE INDEX cp1_planted ON cp1_items(expiry)") }
        do {
            _ = try await Wallet.open(at: url, key: Self.keyB, profile: "bob")
            Issue.record("bob opened with a planted index")
        } catch let error as WalletError {
            guard case .corrupted = error else {
                Issue.record("expected corrupted, got \(error)")
                return
            }
        }
        let other = try await Wallet.open(at: url, key: Self.keyA)
        try other.close()
    }

    @Test("a trigger on another profile's table that writes into the default profile's is detected by the default profile")
    func plantedTriggerReachingAnotherProfile() async throws {
        let (url, main, bob) = try await Self.store()
        try main.close()
        try bob.close()
        try await TestWallets.attackerQueue(url).write { db in
            try db.execute(sql: "CREATE TRIGGER cp1_planted AFTER INSERT ON cp1_items BEGIN DELETE FROM items; END")
        }
        do {
            _ = try await Wallet.open(at: url, key: Self.keyA)
            Issue.record("the default profile opened with a trigger elsewhere that deletes its records")
        } catch let error as WalletError {
            guard case .corrupted = error else {
                Issue.record("expected corrupted, got \(error)")
                return
            }
        }
    }

    @Test("check, backup and restore, rekey and key rotation work on one profile and leave the other as it was")
    func backupCheckRekeyPerProfile() async throws {
        let (url, main, bob) = try await Self.store()
        try await main.add(type: "t", id: "m", value: "main")
        try await bob.transaction { tx in
            for i in 0..<20 { try tx.add(type: "t", id: "b\(i)", value: "v\(i)", tags: ["k": .string("\(i % 3)")]) }
        }
        #expect(try await bob.checkIntegrity().records == 20)
        let backup = TestWallets.folder().appendingPathComponent("bob.backup")
        #expect(try await bob.exportBackup(to: backup, passphrase: "backup pass", parameters: .interactive) == 20)
        let restoredURL = TestWallets.folder().appendingPathComponent("restored.sqlite")
        let restored = try await Wallet.importBackup(from: backup, passphrase: "backup pass", into: restoredURL, key: Self.keyC)
        #expect(try await restored.count(type: "t") == 20)
        #expect(try await restored.get(type: "t", id: "b7").value == "v7")
        try restored.close()
        try await bob.rekey(to: .passphrase("bob's new passphrase"), rotatingKey: true)
        #expect(try await bob.checkIntegrity().problems.isEmpty)
        try bob.close()
        await #expect(throws: WalletError.self) { _ = try await Wallet.open(at: url, key: Self.keyB, profile: "bob") }
        let reopened = try await Wallet.open(
            at: url, key: .passphrase("bob's new passphrase"), profile: "bob", configuration: TestWallets.fastConfiguration)
        #expect(try await reopened.count(type: "t", matching: Self.eq("k", "1")) == 7)
        try reopened.close()
        #expect(try await main.get(type: "t", id: "m").value == "main")
        #expect(try await main.checkIntegrity().problems.isEmpty)
        try main.close()
    }

    @Test("creating a profile that exists, or with a malformed name, is refused; the default profile cannot be removed")
    func namesRefused() async throws {
        let (url, main, bob) = try await Self.store()
        try main.close()
        try bob.close()
        await #expect(throws: WalletError.self) { _ = try await Wallet.create(at: url, key: Self.keyC, profile: "bob") }
        await #expect(throws: WalletError.self) { _ = try await Wallet.create(at: url, key: Self.keyC, profile: "no spaces") }
        await #expect(throws: WalletError.self) { try await Wallet.removeProfile("default", at: url) }
        #expect(try await Wallet.profiles(at: url) == ["default", "bob"])
    }
}
