// Every wallet operation on one profile of a store that holds several: backups (export, and
// restore into a new profile), imports, compact and rekey act on that profile only, and the
// others keep their records, byte for byte, and open with their own keys.

import CofferCrypto
import CofferTestSupport
import Foundation
import GRDB
import Testing

@testable import CofferWallet

@Suite("Wallet profiles: every operation per profile")
struct ProfileOperationTests {
    static let keyA = ProfileTests.keyA
    static let keyB = ProfileTests.keyB
    static let keyC = ProfileTests.keyC

    /// Every row of every table of the default profile (items, tags, digest, meta), as stored.
    static func defaultRows(_ url: URL) throws -> [String: [[DatabaseValue]]] {
        try rows(url, tables: ProfileTables.default.allTables)
    }

    /// Every row of `tables`, as stored, in a stable order.
    static func rows(_ url: URL, tables: [String]) throws -> [String: [[DatabaseValue]]] {
        let queue = try DatabaseQueue(path: url.path)
        defer { try? queue.close() }
        return try queue.read { db in
            var out = [String: [[DatabaseValue]]]()
            for table in tables {
                // Sorted by their text, so the order does not depend on how SQLite walks the table.
                out[table] = try Row.fetchAll(db, sql: "SELECT * FROM \(table)").map { row in
                    (0..<row.count).map { row[$0] as DatabaseValue }
                }.sorted { "\($0)" < "\($1)" }
            }
            return out
        }
    }

    /// A store with the default profile (keyA, 3 records) and `bob` (keyB, 20 tagged records).
    static func filledStore() async throws -> (URL, Wallet, Wallet) {
        let (url, main, bob) = try await ProfileTests.store()
        for i in 0..<3 { try await main.add(type: "t", id: "m\(i)", value: "main \(i)", tags: ["k": "1"]) }
        try await bob.transaction { tx in
            for i in 0..<20 {
                try tx.add(type: "t", id: "b\(i)", value: "bob \(i)", tags: ["k": .string("\(i % 3)"), "~n": .string("\(i)")])
            }
        }
        return (url, main, bob)
    }

    /// A closed store from ``filledStore()`` and a backup of its profile `bob` (passphrase "pass").
    static func storeWithBobBackup() async throws -> (url: URL, backup: URL) {
        let (url, main, bob) = try await filledStore()
        let backup = TestWallets.folder().appendingPathComponent("bob.backup")
        try await bob.exportBackup(to: backup, passphrase: "pass", parameters: .interactive)
        try main.close()
        try bob.close()
        return (url, backup)
    }

    /// A copy of `backup` with its last 40 bytes cut off.
    static func truncated(_ backup: URL) throws -> URL {
        let bytes = try Data(contentsOf: backup)
        let truncated = TestWallets.folder().appendingPathComponent("truncated.backup")
        try bytes.prefix(bytes.count - 40).write(to: truncated)
        return truncated
    }

    @Test("a backup of one profile holds that profile's records only")
    func exportOneProfile() async throws {
        let (_, main, bob) = try await Self.filledStore()
        defer {
            try? main.close()
            try? bob.close()
        }
        let backup = TestWallets.folder().appendingPathComponent("bob.backup")
        #expect(try await bob.exportBackup(to: backup, passphrase: "pass", parameters: .interactive) == 20)
        let restored = try await Wallet.importBackup(
            from: backup, passphrase: "pass", into: TestWallets.folder().appendingPathComponent("r.sqlite"), key: Self.keyC)
        defer { try? restored.close() }
        #expect(try await restored.fetchAll(type: "t").map(\.id).sorted() == (0..<20).map { "b\($0)" }.sorted())
    }

    @Test("a backup restored into a new profile of a store: its records there, the other profiles unchanged byte for byte")
    func restoreIntoProfile() async throws {
        let (url, backup) = try await Self.storeWithBobBackup()
        let before = try Self.defaultRows(url)
        let bobBefore = try Self.rows(url, tables: ["cp1_items", "cp1_tags", "cp1_coffer_meta"])
        let carol = try await Wallet.importBackup(
            from: backup, passphrase: "pass", into: url, key: Self.keyC, profile: "carol", configuration: TestWallets.fastConfiguration)
        #expect(try await carol.count(type: "t") == 20)
        #expect(try await carol.get(type: "t", id: "b7").value == "bob 7")
        #expect(try await carol.count(type: "t", matching: ProfileTests.eq("k", "1")) == 7)
        #expect(try await carol.checkIntegrity().problems.isEmpty)
        try carol.close()
        #expect(try await Wallet.profiles(at: url) == ["default", "bob", "carol"])
        #expect(try Self.defaultRows(url) == before)
        #expect(try Self.rows(url, tables: ["cp1_items", "cp1_tags", "cp1_coffer_meta"]) == bobBefore)
        // carol's key is carol's only; the others open with their own.
        await #expect(throws: WalletError.self) { _ = try await Wallet.open(at: url, key: Self.keyC) }
        await #expect(throws: WalletError.self) { _ = try await Wallet.open(at: url, key: Self.keyC, profile: "bob") }
        let reopened = try await Wallet.open(at: url, key: Self.keyA)
        #expect(try await reopened.count(type: "t") == 3)
        try reopened.close()
    }

    @Test(
        "restoring into a profile is all or nothing: a wrong passphrase, a truncated backup or an existing profile leave the store as it was"
    )
    func restoreIntoProfileAllOrNothing() async throws {
        let (url, backup) = try await Self.storeWithBobBackup()
        let before = try Self.defaultRows(url)
        do {
            _ = try await Wallet.importBackup(from: backup, passphrase: "wrong", into: url, key: Self.keyC, profile: "carol")
            Issue.record("a wrong passphrase restored")
        } catch let error as WalletError {
            if case .wrongKey = error {} else { Issue.record("expected wrongKey, got \(error)") }
        }
        let truncated = try Self.truncated(backup)
        do {
            _ = try await Wallet.importBackup(from: truncated, passphrase: "pass", into: url, key: Self.keyC, profile: "carol")
            Issue.record("a truncated backup restored")
        } catch let error as WalletError {
            if case .corrupted = error {} else { Issue.record("expected corrupted, got \(error)") }
        }
        await #expect(throws: WalletError.walletExists(path: "\(url.path) (profile \"bob\")")) {
            _ = try await Wallet.importBackup(from: backup, passphrase: "pass", into: url, key: Self.keyC, profile: "bob")
        }
        #expect(try await Wallet.profiles(at: url) == ["default", "bob"])
        let left = try await DatabaseQueue(path: url.path).read { db in
            try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE name LIKE 'cp2\\_%' ESCAPE '\\'")
        }
        #expect(left.isEmpty, "a failed restore left \(left)")
        #expect(try Self.defaultRows(url) == before)
        let again = try await Wallet.open(at: url, key: Self.keyB, profile: "bob")
        #expect(try await again.count(type: "t") == 20)
        try again.close()
    }

    @Test("restoring into a profile of a store that does not exist makes the store with that profile alone; a failure leaves no file")
    func restoreIntoProfileOfNewStore() async throws {
        let (_, backup) = try await Self.storeWithBobBackup()
        let url = TestWallets.folder().appendingPathComponent("new.sqlite")
        let truncated = try Self.truncated(backup)
        await #expect(throws: WalletError.self) {
            _ = try await Wallet.importBackup(from: truncated, passphrase: "pass", into: url, key: Self.keyC, profile: "carol")
        }
        #expect(!FileManager.default.fileExists(atPath: url.path), "a failed restore left a store file")
        let carol = try await Wallet.importBackup(from: backup, passphrase: "pass", into: url, key: Self.keyC, profile: "carol")
        #expect(try await carol.count(type: "t") == 20)
        try carol.close()
        #expect(try await Wallet.profiles(at: url) == ["carol"])
    }

    @Test("a JSON-lines import into one profile lands there only")
    func jsonLinesImportIntoProfile() async throws {
        let (_, main, bob) = try await Self.filledStore()
        defer {
            try? main.close()
            try? bob.close()
        }
        let file = TestWallets.folder().appendingPathComponent("in.jsonl")
        let lines = (0..<50).map { #"{"type": "t", "id": "j\#($0)", "value": "v", "tags": {"k": "1"}}"# }
        try Data(lines.joined(separator: "\n").utf8).write(to: file)
        #expect(try await bob.importRecords(fromJSONLines: file) == 50)
        #expect(try await bob.count(type: "t") == 70)
        #expect(try await main.count(type: "t") == 3)
        #expect(try await main.count(type: "t", matching: ProfileTests.eq("k", "1")) == 3)
        // The same file into the default profile: no duplicate, as the profiles do not share ids.
        #expect(try await main.importRecords(fromJSONLines: file) == 50)
        #expect(try await main.count(type: "t") == 53)
    }

    @Test("compact through one profile gives back the file's free pages; every profile reads and checks clean after")
    func compactPerProfile() async throws {
        let (url, main, bob) = try await Self.filledStore()
        defer {
            try? main.close()
            try? bob.close()
        }
        try await bob.transaction { tx in
            for i in 0..<500 { try tx.add(type: "big", id: "x\(i)", value: String(repeating: "x", count: 2_000)) }
        }
        #expect(try await bob.removeAll(type: "big") == 500)
        let before = try Self.defaultRows(url)
        let (bytesBefore, bytesAfter) = try await bob.compact()
        #expect(bytesAfter < bytesBefore)
        #expect(try Self.defaultRows(url) == before)
        #expect(try await main.count(type: "t") == 3)
        #expect(try await bob.count(type: "t") == 20)
        #expect(try await main.checkIntegrity().problems.isEmpty)
        #expect(try await bob.checkIntegrity().problems.isEmpty)
    }

    @Test("removing a profile of more than 16 MiB gives its pages back to the file system at once, as a large delete does")
    func removalGivesSpaceBack() async throws {
        let (url, main, bob) = try await Self.filledStore()
        defer { try? main.close() }
        // Random text (values are compressed before sealing): about 24 MiB stored.
        let values = (0..<32).map { _ in SecureRandom.bytes(768 << 10).base64EncodedString() }
        try await bob.transaction { tx in for (i, value) in values.enumerated() { try tx.add(type: "big", id: "x\(i)", value: value) } }
        try bob.close()
        // The database's own size (its pages, as the WAL has them): the file shrinks to it at the next checkpoint.
        let pages = { (sql: String) in try await DatabaseQueue(path: url.path).read { try Int.fetchOne($0, sql: sql) ?? -1 } }
        let before = try await pages("PRAGMA page_count")
        try await Wallet.removeProfile("bob", at: url)
        let free = try await pages("PRAGMA freelist_count")
        let after = try await pages("PRAGMA page_count")
        #expect(free <= 4_096, "\(free) free pages left")
        #expect(after < before - 4_096, "\(before) pages before, \(after) after")
        #expect(try await main.count(type: "t") == 3)
        #expect(try await main.checkIntegrity().problems.isEmpty)
    }

    @Test("rekeying the default profile (no rotation) changes its key only: bob still opens with bob's, the new key opens only default")
    func rekeyOneProfile() async throws {
        let (url, main, bob) = try await Self.filledStore()
        try bob.close()
        let newKey = WalletKey.raw(Data(repeating: 42, count: 32))
        try await main.rekey(to: newKey)
        try main.close()
        await #expect(throws: WalletError.self) { _ = try await Wallet.open(at: url, key: Self.keyA) }
        await #expect(throws: WalletError.self) { _ = try await Wallet.open(at: url, key: newKey, profile: "bob") }
        let reopened = try await Wallet.open(at: url, key: newKey)
        #expect(try await reopened.count(type: "t") == 3)
        try reopened.close()
        let bobAgain = try await Wallet.open(at: url, key: Self.keyB, profile: "bob")
        #expect(try await bobAgain.count(type: "t", matching: ProfileTests.eq("k", "1")) == 7)
        #expect(try await bobAgain.checkIntegrity().problems.isEmpty)
        try bobAgain.close()
    }

    @Test("rotating bob's wallet key re-seals bob's rows only: the default profile's rows are unchanged byte for byte")
    func rotationLeavesOthersBytes() async throws {
        let (url, main, bob) = try await Self.filledStore()
        try main.close()
        let before = try Self.defaultRows(url)
        let bobItems = try Self.rows(url, tables: ["cp1_items"])
        try await bob.rekey(to: Self.keyC, rotatingKey: true)
        #expect(try await bob.count(type: "t", matching: ProfileTests.eq("k", "2")) == 6)
        try bob.close()
        #expect(try Self.defaultRows(url) == before)
        #expect(try Self.rows(url, tables: ["cp1_items"]) != bobItems)
        let reopened = try await Wallet.open(at: url, key: Self.keyA)
        #expect(try await reopened.checkIntegrity().problems.isEmpty)
        try reopened.close()
    }

    @Test("equal type, id and tags in two profiles are stored as different bytes: no blind, name or sealed value is shared")
    func equalRecordsBlindDifferently() async throws {
        let (url, main, bob) = try await ProfileTests.store()
        for wallet in [main, bob] {
            try await wallet.add(type: "cred", id: "same-id", value: "same value", tags: ["k": "same", "other": "same"])
            try wallet.close()
        }
        let queue = try DatabaseQueue(path: url.path)
        defer { try? queue.close() }
        func column(_ sql: String) throws -> Set<DatabaseValue> {
            Set(try queue.read { db in try Row.fetchAll(db, sql: sql).map { $0[0] as DatabaseValue } })
        }
        for (what, a, b) in [
            ("type", "SELECT type FROM items", "SELECT type FROM cp1_items"),
            ("id", "SELECT name FROM items", "SELECT name FROM cp1_items"),
            ("value", "SELECT value FROM items", "SELECT value FROM cp1_items"),
            ("tag name", "SELECT name FROM tags", "SELECT name FROM cp1_tags"),
            ("tag value", "SELECT value FROM tags", "SELECT value FROM cp1_tags"),
        ] {
            let left = try column(a)
            let right = try column(b)
            #expect(!left.isEmpty && !right.isEmpty, "\(what): no rows")
            #expect(left.isDisjoint(with: right), "\(what): the two profiles store equal bytes")
        }
    }

    @Test(
        "a search on one profile pages through its own records while another is removed; the removed one's search ends with a clear error")
    func removalUnderSearchesOnBoth() async throws {
        let (url, main, bob) = try await ProfileTests.store()
        defer {
            try? main.close()
            try? bob.close()
        }
        try await main.transaction { tx in for i in 0..<250 { try tx.add(type: "t", id: "m\(i)", value: "x", tags: ["p": "x"]) } }
        try await bob.transaction { tx in for i in 0..<250 { try tx.add(type: "t", id: "b\(i)", value: "x", tags: ["p": "x"]) } }
        let query = try ProfileTests.eq("p", "x")
        let onMain = try await main.openSearch(type: "t", query: query)
        let onBob = try await bob.openSearch(type: "t", query: query)
        var seen = try await main.searchNext(onMain, count: 50).records?.map(\.id) ?? []
        #expect(try await bob.searchNext(onBob, count: 50).records?.count == 50)
        try await Wallet.removeProfile("bob", at: url)
        do {
            _ = try await bob.searchNext(onBob, count: 50)
            Issue.record("the removed profile's search went on")
        } catch let error as WalletError {
            #expect("\(error)".contains("removed"), "\(error)")
        }
        while let page = try await main.searchNext(onMain, count: 50).records, !page.isEmpty { seen += page.map(\.id) }
        #expect(seen.sorted() == (0..<250).map { "m\($0)" }.sorted())
        #expect(try await main.checkIntegrity().problems.isEmpty)
    }
}
