// Helpers the wallet specifications share: temporary wallets and the WQL case file.

import CofferCrypto
import CofferTestSupport
import CofferWallet
import Foundation
import GRDB
import Testing

enum TestWallets {
    static let rawKey = Data((0..<32).map { UInt8($0) })

    static func folder() -> URL {
        let url = TemporaryFolders.path("coffer-tests")
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    static var fastConfiguration: Wallet.Configuration {
        var c = Wallet.Configuration()
        c.passphraseParameters = .minimum
        return c
    }

    static func make(key: WalletKey = .raw(rawKey), configuration: Wallet.Configuration = fastConfiguration) async throws -> (Wallet, URL) {
        let url = folder().appendingPathComponent("wallet.sqlite")
        return (try await Wallet.create(at: url, key: key, configuration: configuration), url)
    }

    /// A wallet in a store that holds two profiles, `default` and `second`, each under its own
    /// key: the wallet returned is `profile`'s, and the other profile holds decoys — records of
    /// the types and ids the suites use, tagged as they tag — so a read, count, search or write
    /// that crossed profiles would find them (or collide with them).
    static func make(_ profile: TestProfile, configuration: Wallet.Configuration = fastConfiguration) async throws -> (Wallet, URL) {
        let url = folder().appendingPathComponent("wallet.sqlite")
        let main = try await Wallet.create(at: url, key: .raw(rawKey), configuration: configuration)
        let second = try await Wallet.create(
            at: url, key: .raw(TestProfile.secondKey), profile: TestProfile.second.rawValue, configuration: configuration)
        let (wallet, other) = profile == .default ? (main, second) : (second, main)
        defer { try? other.close() }
        try await addDecoys(to: other)
        return (wallet, url)
    }

    /// Records in the other profile that a crossing would find (see ``make(_:configuration:)``).
    static func addDecoys(to wallet: Wallet) async throws {
        let types = ["cred", "t", "c", "d", "a", "b", "x", WQLCase.category]
        let ids = ["1", "2", "i", "n", "o0", "o1", "o2", "o3", "o4", "decoy"]
        try await wallet.transaction { tx in
            for type in Set(types) {
                for id in ids {
                    try tx.add(type: type, id: id, value: "decoy", tags: ["a": "1", "k": "x", "~b": "x", "enctag": "x", "~plain": "x"])
                }
            }
            for r in WQLCase.records { try tx.add(type: r.type, id: r.id, value: r.value, tags: r.tags) }
        }
    }

    /// A connection to a wallet file as an attacker without the key has one: the triggers that
    /// keep the records' version digest call keyed functions only the wallet registers, so here
    /// they leave the digest as it was (the attacker cannot compute it).
    static func attackerQueue(_ url: URL) throws -> DatabaseQueue {
        var config = Configuration()
        config.prepareDatabase { db in
            db.add(function: DatabaseFunction("coffer_digest_step", argumentCount: 4) { values in values[0] })
            db.add(function: DatabaseFunction("coffer_digest_v4", argumentCount: -1) { values in values[0] })
        }
        return try DatabaseQueue(path: url.path, configuration: config)
    }

    /// Every byte of the wallet's files (main, WAL, shared memory).
    static func fileBytes(_ url: URL) -> Data {
        var all = Data()
        for suffix in ["", "-wal", "-shm"] {
            if let d = FileManager.default.contents(atPath: url.path + suffix) { all.append(d) }
        }
        return all
    }
}

/// Which profile of a two-profile store a suite runs on (``TestWallets/make(_:configuration:)``).
enum TestProfile: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case `default`
    case second

    /// The `second` profile's own key (the default profile's is ``TestWallets/rawKey``).
    static let secondKey = Data((0..<32).map { UInt8(255 - $0) })

    /// The key `profile` opens with.
    var key: WalletKey { .raw(self == .default ? TestWallets.rawKey : Self.secondKey) }

    var testDescription: String { "profile \(rawValue)" }
}

/// The query cases of `Fixtures/askar-cases.json`, with Askar's and Coffer's expected results.
struct WQLCase: Sendable, CustomTestStringConvertible {
    let name: String
    let query: String
    /// Sorted ids, or nil when an invalid-query error is expected.
    let expected: [String]?

    var testDescription: String { name }

    static let file: JSONValue = {
        let url = Bundle.module.url(forResource: "askar-cases", withExtension: "json", subdirectory: "Fixtures")!
        return try! JSONValue.parse(String(contentsOf: url, encoding: .utf8))
    }()

    static func member(_ v: JSONValue, _ key: String) -> JSONValue? {
        guard case .object(let m) = v else { return nil }
        return m.first { $0.0 == key }?.1
    }

    static let all: [WQLCase] = {
        guard case .array(let cases)? = member(file, "cases") else { return [] }
        return cases.map { c in
            guard case .string(let name)? = member(c, "name") else { fatalError("case without name") }
            let query: String
            if case .string(let raw)? = member(c, "query_raw") { query = raw } else { query = member(c, "query")!.jsonText }
            var expected: [String]?
            if case .array(let ids)? = member(c, "coffer_expect") {
                expected = ids.map { if case .string(let s) = $0 { return s } else { fatalError() } }.sorted()
            }
            return WQLCase(name: name, query: query, expected: expected)
        }
    }()

    struct Record {
        let type: String
        let id: String
        let value: String
        let tags: WalletTags
    }

    static let records: [Record] = {
        guard case .array(let items)? = member(file, "records") else { return [] }
        return items.map { r in
            guard case .string(let id)? = member(r, "id"), case .string(let type)? = member(r, "category"),
                case .string(let value)? = member(r, "value"), let tags = member(r, "tags")
            else { fatalError("bad record") }
            return Record(type: type, id: id, value: value, tags: try! WalletTags(json: tags.jsonText))
        }
    }()

    static var category: String {
        if case .string(let s)? = member(file, "category") { return s }
        return "cred"
    }
}
