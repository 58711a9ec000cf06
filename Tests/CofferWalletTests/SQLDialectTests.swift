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
    static func statements(_ query: String, dialect: SQLDialect, keys: WalletKeys = keys) throws -> [CompiledStatement] {
        let search = try QueryCompiler.compile(type: "cred", query: WalletQuery(json: query), keys: keys, dialect: dialect)
        var out = [CompiledStatement]()
        for plan in search.plans {
            for candidate in [plan, plan.withoutJoins] {
                for expiry in [false, true] {
                    out.append(search.pageStatement(candidate, after: nil, limit: 64, descending: false, now: 0, expiry: expiry))
                    out.append(search.pageStatement(candidate, after: 7, limit: 64, descending: true, now: 0, expiry: expiry))
                    out.append(search.countStatement(candidate, now: 0, expiry: expiry))
                }
                if let sample = search.sampleStatement(candidate, after: 7, descending: false) { out.append(sample) }
            }
        }
        return out
    }

    static let keys = WalletKeys(master: SecretKey.random())

    static func kind(_ value: StorageValue) -> String {
        switch value {
        case .null: return "null"
        case .integer: return "integer"
        case .real: return "real"
        case .text: return "text"
        case .blob: return "blob"
        }
    }

    static func sqliteText(of query: String) throws -> String {
        try statements(query, dialect: .sqlite).map { "\($0.sql) -- \($0.arguments.map(kind).joined(separator: ","))" }
            .joined(separator: "\n")
    }

    static let golden: [String: String] = {
        let url = Bundle.module.url(forResource: "wql-sqlite-statements", withExtension: "json", subdirectory: "Fixtures")!
        guard case .object(let members) = try! JSONValue.parse(String(contentsOf: url, encoding: .utf8)) else { return [:] }
        return Dictionary(
            members.compactMap { name, value in
                if case .string(let text) = value { return (name, text) } else { return nil }
            }, uniquingKeysWith: { first, _ in first })
    }()

    @Test("the golden file covers every query") func goldenCoversQueries() {
        #expect(Self.golden.count == Self.allQueries.count)
        #expect(Self.allQueries.count >= 60)
    }

    @Test("SQLite statements are byte-identical to those before dialects", arguments: allQueries.map(\.0))
    func sqliteUnchanged(_ name: String) throws {
        let query = try #require(Self.allQueries.first { $0.0 == name }?.1)
        #expect(try Self.sqliteText(of: query) == Self.golden[name])
    }

    @Test("PostgreSQL statements are numbered, well formed, and bind tag values as bytes", arguments: allQueries.map(\.0))
    func postgresWellFormed(_ name: String) throws {
        let query = try #require(Self.allQueries.first { $0.0 == name }?.1)
        let statements = try Self.statements(query, dialect: .postgres)
        #expect(!statements.isEmpty)
        for statement in statements {
            let sql = statement.sql
            #expect(!sql.contains("?"), "a ? is left in: \(sql)")
            // $1…$n, each once, in order, one per argument.
            let numbers = Self.placeholders(sql)
            #expect(numbers == Array(1...max(1, statement.arguments.count)).prefix(statement.arguments.count).map { $0 }, "\(sql)")
            for spelling in ["json_each", "CAST(", "NOT INDEXED", "CROSS JOIN", "hex(", "instr(", "+t.value", "char(0)"] {
                #expect(!sql.contains(spelling), "SQLite's \(spelling) in: \(sql)")
            }
            #expect(!sql.contains("AND (1)") && !sql.contains("(0)") && !sql.hasSuffix(" 1"), "an integer used as a predicate: \(sql)")
            #expect(Self.balanced(sql), "unbalanced parentheses: \(sql)")
            // Tag values are bytea in PostgreSQL: the only text parameters are JSON lists.
            for case .text(let text) in statement.arguments {
                #expect(text.hasPrefix("["), "a text parameter other than a JSON list: \(text)")
            }
        }
    }

    /// Keys of a profile other than the default one (SQLite would name its tables `cp7_…`).
    static let profileKeys = WalletKeys(master: SecretKey.random(), tables: ProfileTables(name: "seventh", number: 7))

    @Test(
        "PostgreSQL statements read the shared tables kept to the profile's rows, lead tag equalities and string ranges by the index's prefix, and call no wallet function",
        arguments: allQueries.map(\.0))
    func postgresScopedToProfile(_ name: String) throws {
        let query = try #require(Self.allQueries.first { $0.0 == name }?.1)
        for statement in try Self.statements(query, dialect: .postgres, keys: Self.profileKeys) {
            let sql = statement.sql
            #expect(!sql.contains("cp7_"), "a per-profile SQLite table in: \(sql)")
            for function in ["coffer_num(", "coffer_like(", "coffer_regexp("] {
                #expect(!sql.contains(function), "\(function) would run on the server: \(sql)")
            }
            // Every read of a shared table starts with its profile filter, bound to the profile's
            // number; only the item a tag row belongs to is joined by its id alone.
            var rest = sql[...]
            var tables = 0
            while let found = rest.range(of: #"(FROM|JOIN) coffer_(items|tags) [a-z0-9]+ +(WHERE|ON) "#, options: .regularExpression) {
                tables += 1
                let head = rest[found]
                let alias = head.split(separator: " ")[2]
                var clause = rest[found.upperBound...]
                rest = clause
                // The driver's item, and the items of a range's tag rows (read with their filter).
                if clause.hasPrefix("i.id = d.item") || clause.hasPrefix("i.id IN (SELECT d.item FROM coffer_tags d WHERE") { continue }
                if clause.hasPrefix("\(alias).item = "), let and = clause.range(of: " AND ") { clause = clause[and.upperBound...] }
                let filter = "\(alias).profile = $"
                #expect(clause.hasPrefix(filter), "\(head) without its profile filter: \(sql)")
                let digits = clause.dropFirst(filter.count).prefix { $0.isASCII && $0.isNumber }
                let index = try #require(Int(digits)) - 1
                #expect(statement.arguments[index] == .integer(7), "\(head) bound to another profile: \(sql)")
            }
            #expect(tables > 0, "no shared table in: \(sql)")
            // Each whole-value equality is led by the prefix the tag index holds.
            let equalities = sql.components(separatedBy: ".value = $").count - 1
            let prefixed = sql.components(separatedBy: "from 1 for \(SQLDialect.postgresIndexedPrefix)) = $").count - 1
            #expect(equalities == prefixed, "an equality the tag index cannot answer: \(sql)")
            // And each string range too.
            for symbol in [">", ">=", "<", "<="] {
                let whole = sql.components(separatedBy: ".value \(symbol) $").count - 1
                #expect(whole == 0, "a range (\(symbol)) on the whole value, which the tag index cannot answer: \(sql)")
            }
        }
    }

    @Test("rendering numbers every ? in order and leaves SQLite's text alone")
    func rendering() {
        let sql = "SELECT a FROM t WHERE b = ? AND c IN (SELECT value FROM x(?::jsonb)) LIMIT ?"
        #expect(SQLDialect.sqlite.render(sql) == sql)
        #expect(SQLDialect.postgres.render(sql) == "SELECT a FROM t WHERE b = $1 AND c IN (SELECT value FROM x($2::jsonb)) LIMIT $3")
    }

    /// The numbers of the `$n` placeholders of `sql`, in order.
    static func placeholders(_ sql: String) -> [Int] {
        var out = [Int]()
        var characters = sql[...]
        while let dollar = characters.firstIndex(of: "$") {
            let digits = characters[characters.index(after: dollar)...].prefix { $0.isASCII && $0.isNumber }
            if let n = Int(digits) { out.append(n) }
            characters = characters[characters.index(after: dollar)...]
        }
        return out
    }

    static func balanced(_ sql: String) -> Bool {
        var depth = 0
        for c in sql {
            if c == "(" { depth += 1 }
            if c == ")" {
                depth -= 1
                if depth < 0 { return false }
            }
        }
        return depth == 0
    }

    @Test("writes the golden file (run by hand with COFFER_WRITE_SQL_GOLDEN)")
    func writeGolden() throws {
        guard let path = ProcessInfo.processInfo.environment["COFFER_WRITE_SQL_GOLDEN"] else { return }
        var object = [(String, JSONValue)]()
        for (name, query) in Self.allQueries { object.append((name, .string(try Self.sqliteText(of: query)))) }
        try JSONValue.object(object).jsonText.write(toFile: path, atomically: true, encoding: .utf8)
    }
}
