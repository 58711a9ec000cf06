// The query compiler writes SQL per dialect: SQLite's text is what it was before dialects existed
// (byte for byte, so statements and plans are unchanged), PostgreSQL's is numbered and well formed.

import CofferCrypto
import Foundation
import GRDB
import Testing

@testable import CofferWallet

@Suite("SQL dialects")
struct SQLDialectTests {
    /// Queries beyond the case file's: long lists (bound as JSON), many `$exist` names, U+0000 in
    /// plaintext values and patterns, numbers, regexes, and the two-tag AND of the benchmark.
    static let extraQueries: [(String, String)] = {
        let many = (0..<20).map { "\"v\($0)\"" }.joined(separator: ",")
        let numbers = (0..<20).map { "\($0)" }.joined(separator: ",")
        let names = (0..<20).map { "\"n\($0)\"" }.joined(separator: ",")
        return [
            ("two-tag AND", #"{"schema_id":"s1","issuer_did":"did:a"}"#),
            ("three-tag AND", #"{"schema_id":"s1","issuer_did":"did:a","color":"red"}"#),
            ("long $in encrypted", #"{"color":{"$in":[\#(many)]}}"#),
            ("long $in plaintext", #"{"~name":{"$in":[\#(many)]}}"#),
            ("long $in plaintext with NUL", #"{"~name":{"$in":[\#(many),"a\u0000b"]}}"#),
            ("long $in numbers", #"{"~num":{"$in":[\#(numbers)]}}"#),
            ("many $exist", #"{"$exist":[\#(names)]}"#),
            ("$like with NUL", #"{"~name":{"$like":"a\u0000%"}}"#),
            ("$like", #"{"~name":{"$like":"car%"}}"#),
            ("$regex", #"{"~name":{"$regex":"^a.*e$"}}"#),
            ("number range", #"{"~num":{"$gt":5,"$lte":100}}"#),
            ("string range", #"{"~seq":{"$gte":"002","$lt":"005"}}"#),
            ("not", #"{"$not":{"color":"red"}}"#),
            ("or", #"{"$or":[{"color":"red"},{"~name":"bob"}]}"#),
        ]
    }()

    static var allQueries: [(String, String)] {
        WQLCase.all.filter { $0.expected != nil }.map { ($0.name, $0.query) } + extraQueries
    }

    /// Every statement a search can run for `query`: each plan's page (first and later, both
    /// directions), its count, its join sample, with and without expiry, in `dialect`.
    static func statements(_ query: String, keys: WalletKeys, dialect: SQLDialect) throws -> [(sql: String, arguments: [DatabaseValueKind])] {
        let search = try QueryCompiler.compile(type: "cred", query: WalletQuery(json: query), keys: keys)
        var out = [(String, [DatabaseValueKind])]()
        func add(_ s: (sql: String, arguments: [GRDBValue])) { out.append((s.sql, s.arguments.map(DatabaseValueKind.init))) }
        for plan in search.plans {
            for candidate in [plan, plan.withoutJoins] {
                for expiry in [false, true] {
                    add(search.pageSQL(candidate, after: nil, limit: 64, descending: false, now: 0, expiry: expiry))
                    add(search.pageSQL(candidate, after: 7, limit: 64, descending: true, now: 0, expiry: expiry))
                    add(search.countSQL(candidate, now: 0, expiry: expiry))
                }
                if let sample = search.sampleSQL(candidate, after: 7, descending: false) { add(sample) }
            }
        }
        return out
    }

    static let keys = WalletKeys(master: SecretKey.random())

    static func sqliteText(of query: String) throws -> String {
        try statements(query, keys: keys, dialect: .sqlite).map { "\($0.sql) -- \($0.arguments.map(\.rawValue).joined(separator: ","))" }
            .joined(separator: "\n")
    }

    @Test("writes the golden file (run by hand with COFFER_WRITE_SQL_GOLDEN)")
    func writeGolden() throws {
        guard let path = ProcessInfo.processInfo.environment["COFFER_WRITE_SQL_GOLDEN"] else { return }
        var object = [(String, JSONValue)]()
        for (name, query) in Self.allQueries { object.append((name, .string(try Self.sqliteText(of: query)))) }
        try JSONValue.object(object).jsonText.write(toFile: path, atomically: true, encoding: .utf8)
    }
}

typealias GRDBValue = GRDB.DatabaseValue

/// What kind of value a parameter is (blind values differ per key; their kinds do not).
enum DatabaseValueKind: String {
    case null, integer, real, text, blob

    init(_ value: GRDBValue) {
        switch value.storage {
        case .null: self = .null
        case .int64: self = .integer
        case .double: self = .real
        case .string: self = .text
        case .blob: self = .blob
        }
    }
}
