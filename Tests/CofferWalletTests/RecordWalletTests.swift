// RecordWallet: the same record code, written once against the protocol, run on a wallet file and
// (a build with the trait `PostgreSQL`, its binaries installed) on a PostgreSQL profile. Each test
// runs on every backend this build has and expects the same results and the same errors.

import CofferCrypto
import CofferTestSupport
import Foundation
import Testing

@testable import CofferWallet

/// The backends a test runs on.
enum RecordBackend: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case sqlite
    case postgres

    var testDescription: String { rawValue }

    /// The backends this build has and can run here.
    static var available: [RecordBackend] {
        #if PostgreSQL
        return PostgresTesting.available ? [.sqlite, .postgres] : [.sqlite]
        #else
        return [.sqlite]
        #endif
    }

    /// A new, empty wallet under `key`, and how to open it again under another key.
    func make(key: WalletKey = .raw(TestWallets.rawKey)) async throws -> (
        wallet: any RecordWallet, reopen: @Sendable (WalletKey) async throws -> any RecordWallet
    ) {
        switch self {
        case .sqlite:
            let url = TestWallets.folder().appendingPathComponent("wallet.sqlite")
            let configuration = TestWallets.fastConfiguration
            let wallet = try await Wallet.create(at: url, key: key, configuration: configuration)
            return (wallet, { try await Wallet.open(at: url, key: $0, configuration: configuration) })
        case .postgres:
            #if PostgreSQL
            let settings = try PostgresTesting.settings("api")
            let wallet = try await PostgresWallet.create(settings: settings, key: key, configuration: TestWallets.fastConfiguration)
            return (wallet, { try await PostgresWallet.open(settings: settings, key: $0) })
            #else
            throw WalletError.invalidInput("this build has no PostgreSQL backend")
            #endif
        }
    }
}

/// Code an app or a service writes once: it sees only the protocol.
private enum Shared {
    static func seed(_ wallet: some RecordWallet) async throws {
        try await wallet.add(type: "cred", id: "a", value: "one", tags: ["schema": "s1", "~year": "2019"], expiresAt: nil)
        try await wallet.add(type: "cred", id: "b", value: "two", tags: ["schema": "s2", "~year": "2021"], expiresAt: nil)
        try await wallet.add(type: "cred", id: "c", value: "three", tags: ["schema": "s1", "~year": "2023"], expiresAt: nil)
        try await wallet.add(type: "other", id: "a", value: "elsewhere", tags: ["schema": "s1"], expiresAt: nil)
    }

    static func ids(_ wallet: some RecordWallet, _ query: WalletQuery) async throws -> [String] {
        try await wallet.search(type: "cred", matching: query, options: SearchOptions(), count: nil).records?.map(\.id).sorted() ?? []
    }
}

// With the trait, the suite is nested in the serialized PostgreSQL suite: its PostgreSQL cases
// never run while another test stops and restarts the test server or while many `coffer`
// processes hold the server's connections (in a build with the trait and without PostgreSQL's
// binaries, that suite and so this one are skipped). Without the trait it stands alone.
#if PostgreSQL
extension PostgresWalletTests {
    @Suite("RecordWallet: one record API on every backend") struct RecordWalletTests {}
}
typealias RecordWalletSuite = PostgresWalletTests.RecordWalletTests
#else
@Suite("RecordWallet: one record API on every backend") struct RecordWalletSuite {}
#endif

extension RecordWalletSuite {
    @Test("add, fetch, get, update, replace and delete give the same results", arguments: RecordBackend.available)
    func records(_ backend: RecordBackend) async throws {
        let (wallet, _) = try await backend.make()
        defer { try? wallet.close() }
        try await Shared.seed(wallet)
        #expect(try await wallet.get(type: "cred", id: "a").value == "one")
        try await wallet.update(type: "cred", id: "a", value: "uno")
        #expect(try await wallet.fetch(type: "cred", id: "a")?.value == "uno")
        #expect(try await wallet.get(type: "cred", id: "a").tags == ["schema": "s1", "~year": "2019"])
        try await wallet.replace(type: "cred", id: "a", value: "eins", tags: ["schema": "s9"])
        let replaced = try await wallet.get(type: "cred", id: "a")
        #expect(replaced.value == "eins" && replaced.tags == ["schema": "s9"])
        try await wallet.delete(type: "cred", id: "a")
        #expect(try await wallet.fetch(type: "cred", id: "a") == nil)
        #expect(try await wallet.get(type: "other", id: "a").value == "elsewhere")
    }

    @Test(
        "a missing record is nil to fetch and notFound to get, update, replace, delete and the tag calls",
        arguments: RecordBackend.available)
    func missing(_ backend: RecordBackend) async throws {
        let (wallet, _) = try await backend.make()
        defer { try? wallet.close() }
        let notFound = WalletError.notFound(type: "cred", id: "nope")
        #expect(try await wallet.fetch(type: "cred", id: "nope") == nil)
        await #expect(throws: notFound) { try await wallet.get(type: "cred", id: "nope") }
        await #expect(throws: notFound) { try await wallet.update(type: "cred", id: "nope", value: "v") }
        await #expect(throws: notFound) { try await wallet.replace(type: "cred", id: "nope", value: "v", tags: [:]) }
        await #expect(throws: notFound) { try await wallet.delete(type: "cred", id: "nope") }
        await #expect(throws: notFound) { try await wallet.addTags(type: "cred", id: "nope", tags: ["t": "v"]) }
        await #expect(throws: notFound) { try await wallet.updateTags(type: "cred", id: "nope", tags: ["t": "v"]) }
        await #expect(throws: notFound) { try await wallet.deleteTags(type: "cred", id: "nope", names: ["t"]) }
    }

    @Test("a second add of a type and id is duplicate and leaves the first", arguments: RecordBackend.available)
    func duplicate(_ backend: RecordBackend) async throws {
        let (wallet, _) = try await backend.make()
        defer { try? wallet.close() }
        try await Shared.seed(wallet)
        await #expect(throws: WalletError.duplicate(type: "cred", id: "b")) {
            try await wallet.add(type: "cred", id: "b", value: "again", tags: [:], expiresAt: nil)
        }
        #expect(try await wallet.get(type: "cred", id: "b").value == "two")
    }

    @Test("addTags merges, updateTags replaces, deleteTags removes; searches follow", arguments: RecordBackend.available)
    func tags(_ backend: RecordBackend) async throws {
        let (wallet, _) = try await backend.make()
        defer { try? wallet.close() }
        try await Shared.seed(wallet)
        try await wallet.addTags(type: "cred", id: "b", tags: ["schema": "s1", "extra": "x"])
        #expect(try await wallet.get(type: "cred", id: "b").tags == ["schema": "s1", "~year": "2021", "extra": "x"])
        #expect(try await Shared.ids(wallet, try WalletQuery(json: #"{"schema": "s1"}"#)) == ["a", "b", "c"])
        try await wallet.deleteTags(type: "cred", id: "b", names: ["schema"])
        #expect(try await Shared.ids(wallet, try WalletQuery(json: #"{"schema": "s1"}"#)) == ["a", "c"])
        try await wallet.updateTags(type: "cred", id: "b", tags: ["only": "this"])
        #expect(try await wallet.get(type: "cred", id: "b").tags == ["only": "this"])
        #expect(try await Shared.ids(wallet, try WalletQuery(json: #"{"only": "this"}"#)) == ["b"])
    }

    @Test("search pages count and cap alike, counts agree, and count below 1 is invalid input", arguments: RecordBackend.available)
    func search(_ backend: RecordBackend) async throws {
        let (wallet, _) = try await backend.make()
        defer { try? wallet.close() }
        try await Shared.seed(wallet)
        let range = try WalletQuery(json: #"{"~year": {"$gte": "2020"}}"#)
        #expect(try await Shared.ids(wallet, range) == ["b", "c"])
        #expect(try await wallet.count(type: "cred", matching: try WalletQuery(json: #"{"schema": "s1"}"#)) == 2)
        #expect(try await wallet.count(type: "cred", matching: .all) == 3)
        var options = SearchOptions()
        options.retrieveTotalCount = true
        let page = try await wallet.search(type: "cred", matching: .all, options: options, count: 2)
        #expect(page.totalCount == 3)
        #expect(page.records?.count == 2)
        await #expect(throws: WalletError.self) {
            try await wallet.search(type: "cred", matching: .all, options: SearchOptions(), count: 0)
        }
    }

    @Test("removeAll removes the matches of one type and returns how many", arguments: RecordBackend.available)
    func removeAll(_ backend: RecordBackend) async throws {
        let (wallet, _) = try await backend.make()
        defer { try? wallet.close() }
        try await Shared.seed(wallet)
        #expect(try await wallet.removeAll(type: "cred", matching: try WalletQuery(json: #"{"schema": "s1"}"#)) == 2)
        #expect(try await Shared.ids(wallet, .all) == ["b"])
        #expect(try await wallet.get(type: "other", id: "a").value == "elsewhere")
    }

    @Test("an export restores into a wallet file with every record", arguments: RecordBackend.available)
    func export(_ backend: RecordBackend) async throws {
        let (wallet, _) = try await backend.make()
        defer { try? wallet.close() }
        try await Shared.seed(wallet)
        let folder = TestWallets.folder()
        let backup = folder.appendingPathComponent("records.backup")
        let key = try BackupKey.derive(passphrase: "backup words", parameters: .interactive)
        #expect(try await wallet.exportBackup(to: backup, key: key, firstFormatTypes: [], progress: nil) == 4)
        let restored = try await Wallet.importBackup(
            from: backup, passphrase: "backup words", into: folder.appendingPathComponent("restored.sqlite"),
            key: .raw(TestWallets.rawKey), configuration: TestWallets.fastConfiguration)
        defer { try? restored.close() }
        #expect(try await Shared.ids(restored, .all) == ["a", "b", "c"])
        #expect(try await restored.get(type: "cred", id: "c").tags == ["schema": "s1", "~year": "2023"])
    }

    @Test("rotation re-seals under the new key: the old key is refused, records stay", arguments: RecordBackend.available)
    func rotation(_ backend: RecordBackend) async throws {
        let (wallet, reopen) = try await backend.make()
        try await Shared.seed(wallet)
        let newKey = WalletKey.raw(Data(repeating: 7, count: 32))
        try await wallet.rekey(to: newKey, rotatingKey: true, progress: nil)
        try wallet.close()
        await #expect(throws: WalletError.self) { try await reopen(.raw(TestWallets.rawKey)) }
        let again = try await reopen(newKey)
        defer { try? again.close() }
        #expect(try await Shared.ids(again, try WalletQuery(json: #"{"schema": "s1"}"#)) == ["a", "c"])
        #expect(try await again.check() == true)
    }

    @Test(
        "inTransaction commits every call together, and its reads and searches see its own writes",
        arguments: RecordBackend.available)
    func transactionCommits(_ backend: RecordBackend) async throws {
        let (wallet, _) = try await backend.make()
        defer { try? wallet.close() }
        try await Shared.seed(wallet)
        let seen = try await wallet.inTransaction { records in
            try await records.add(type: "cred", id: "d", value: "four", tags: ["schema": "s1"], expiresAt: nil)
            try await records.replace(type: "cred", id: "b", value: "zwei", tags: ["schema": "s1"])
            try await records.delete(type: "cred", id: "c")
            let page = try await records.search(
                type: "cred", matching: try WalletQuery(json: #"{"schema": "s1"}"#), options: SearchOptions(), count: nil)
            return (page.records ?? []).map(\.id).sorted()
        }
        #expect(seen == ["a", "b", "d"])
        #expect(try await Shared.ids(wallet, try WalletQuery(json: #"{"schema": "s1"}"#)) == ["a", "b", "d"])
        #expect(try await wallet.get(type: "cred", id: "b").value == "zwei")
    }

    @Test("a body that throws in inTransaction keeps none of its writes", arguments: RecordBackend.available)
    func transactionRollsBack(_ backend: RecordBackend) async throws {
        struct Abandon: Error {}
        let (wallet, _) = try await backend.make()
        defer { try? wallet.close() }
        try await Shared.seed(wallet)
        await #expect(throws: Abandon.self) {
            try await wallet.inTransaction { records in
                try await records.add(type: "cred", id: "d", value: "four", tags: [:], expiresAt: nil)
                try await records.update(type: "cred", id: "a", value: "changed")
                try await records.removeAll(type: "other", matching: .all)
                throw Abandon()
            }
        }
        #expect(try await wallet.fetch(type: "cred", id: "d") == nil)
        #expect(try await wallet.get(type: "cred", id: "a").value == "one")
        #expect(try await wallet.count(type: "other", matching: .all) == 1)
    }

    @Test("bad input gets the same invalidInput on every backend, and nothing is written")
    func badInputAlike() async throws {
        var seen = [RecordBackend: [String]]()
        for backend in RecordBackend.available {
            let (wallet, _) = try await backend.make()
            defer { try? wallet.close() }
            let long: @Sendable (Int) -> String = { String(repeating: "x", count: $0) }
            let calls: [@Sendable () async throws -> Void] = [
                { try await wallet.add(type: "", id: "a", value: "v", tags: [:], expiresAt: nil) },
                { try await wallet.add(type: long(WalletLimits.maxTypeBytes + 1), id: "a", value: "v", tags: [:], expiresAt: nil) },
                { try await wallet.add(type: "cred", id: long(WalletLimits.maxIdBytes + 1), value: "v", tags: [:], expiresAt: nil) },
                { try await wallet.add(type: "cred", id: "a", value: long(WalletLimits.maxValueBytes + 1), tags: [:], expiresAt: nil) },
                {
                    try await wallet.add(
                        type: "cred", id: "a", value: "v", tags: ["t": .string(long(WalletLimits.maxTagValueBytes + 1))], expiresAt: nil)
                },
                { try await wallet.add(type: "__coffer_key", id: "a", value: "v", tags: [:], expiresAt: nil) },
                { _ = try await wallet.fetch(type: "__coffer_key", id: "a", options: RecordOptions()) },
                { _ = try await wallet.count(type: "", matching: .all) },
            ]
            var messages = [String]()
            for call in calls {
                do {
                    try await call()
                    messages.append("no error")
                } catch let error as WalletError {
                    guard case .invalidInput(let message) = error else {
                        messages.append("not invalidInput: \(error)")
                        continue
                    }
                    messages.append(message)
                }
            }
            #expect(!messages.contains { $0 == "no error" || $0.hasPrefix("not invalidInput") }, "\(backend): \(messages)")
            #expect(try await wallet.count(type: "cred", matching: .all) == 0)
            seen[backend] = messages
        }
        if let postgres = seen[.postgres] { #expect(postgres == seen[.sqlite]) }
    }
}

extension RecordWallet {
    /// Whether the integrity check finds nothing wrong.
    fileprivate func check() async throws -> Bool { try await checkIntegrity(progress: nil).isClean }
}
