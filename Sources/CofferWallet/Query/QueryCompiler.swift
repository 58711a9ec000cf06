// WQL → SQL over the blind-index columns. What the index cannot answer exactly (ranges, $like,
// $regex and numbers on encrypted tags) is widened to a superset and finished in memory.

import Foundation
import GRDB

/// A piece of SQL with its arguments.
struct SQLFragment: Sendable {
    var sql: String
    var arguments: [DatabaseValue]

    static let yes = SQLFragment(sql: "1", arguments: [])
    static let no = SQLFragment(sql: "0", arguments: [])
}

/// A query compiled for one record type: SQL that selects a superset of the matches (the exact
/// set when `exact`), and the tree to confirm each candidate in memory.
struct CompiledSearch: Sendable {
    /// How the walk finds its candidates. Every driver yields records in row-id order, so one
    /// keyset cursor (the last row id) serves them all.
    enum Driver: Sendable {
        /// Walk the type's records in insertion order.
        case type
        /// Walk the tag index entries of one (name, value) pair, which are in record order too.
        case tag(name: Data, value: DatabaseValue)
        /// Read the tag index range of one plaintext tag, then visit its records in id order:
        /// cheap for counts and whole results, not for small pages of a large range.
        case range(name: Data, conditions: SQLFragment)
    }

    /// One way to run the query: a driver and the rest of the predicate.
    struct Plan: Sendable {
        let driver: Driver
        /// Further exact equalities of a tag-driven plan, as unique joins on the tag index
        /// (`CROSS JOIN tags eN ON eN.item = d.item AND …`): cheaper than correlated subqueries.
        var joins = SQLFragment(sql: "", arguments: [])
        let predicate: SQLFragment
        /// The plan is exact only while no record holds two values for this plaintext tag.
        let requiresSingleValued: Data?
        /// The joins' equalities are left to the in-memory check (see ``withoutJoins``), so the
        /// SQL selects a superset of the matches.
        var joinsDropped = false
        /// What every row the SQL of ``withoutJoins`` selects must still satisfy when the query
        /// is exact: the query without the joined equalities (the driver and the predicate). A
        /// row that fails it was let through by an altered index. Nil for other drivers.
        var residual: WQLNode? = nil

        /// This plan with its further equalities checked on the decrypted tags instead of by
        /// one index probe per row: cheaper when nearly every row of the driver satisfies them.
        var withoutJoins: Plan {
            var plan = self
            plan.joins = SQLFragment(sql: "", arguments: [])
            plan.joinsDropped = true
            return plan
        }
    }

    let type: String
    let typeBlind: Data
    /// The keys it was compiled with: it may only run with them (a key rotation makes every
    /// blind in it stale). Held strongly, so that no later keys can take this object's address
    /// and pass the identity check.
    let keys: WalletKeys
    let root: WQLNode
    let exact: Bool
    /// Plans in order of preference; the last one (type driver) always applies.
    let plans: [Plan]
    /// How many of the first plans are the same query driven by different tag equalities (one
    /// per top-level equality, at most ``QueryCompiler/maxDriverChoices``): the walk takes the
    /// rarest of them (see `CompiledSearch.rarestDriver`). 0 or 1: nothing to choose.
    var driverChoices = 0
    /// The SQL dialect of every fragment in it.
    var dialect: SQLDialect = .sqlite
}

enum QueryCompiler {
    /// Conditions (tag tests, after `$in` lists and `$exist` names collapse to one each) above
    /// which a query is checked in memory over the type's records instead of in SQL.
    static let maxSQLConditions = 1_000
    /// Parentheses nested in a query's SQLite SQL above which it is checked in memory as well
    /// (see ``parenthesisDepth(_:)``). With the system's SQLite here (3.40, a parser stack of 100
    /// symbols), nesting of every leaf kind and combinator was refused from 26 to 34 levels
    /// (`$like` and `$exist` leaves under alternating `$and`/`$or` first, `$or`/`$not` pairs last);
    /// 16 leaves room for what the statements around it add. PostgreSQL's parser has no such
    /// limit, so the check is SQLite's only.
    static let maxSQLNesting = 16

    /// The deepest nesting of parentheses in `sql`. The compiler's SQL puts every value in a bound
    /// parameter; the only string literals in it are PostgreSQL's constant names ('UTF8', 'hex'),
    /// which hold no parentheses.
    static func parenthesisDepth(_ sql: String) -> Int {
        var depth = 0
        var deepest = 0
        for byte in sql.utf8 {
            if byte == UInt8(ascii: "(") {
                depth += 1
                deepest = max(deepest, depth)
            } else if byte == UInt8(ascii: ")") {
                depth -= 1
            }
        }
        return deepest
    }

    /// `$in` operands and `$exist` names above which the list is bound as one JSON array
    /// (`json_each`) instead of one SQL parameter each.
    static let boundListThreshold = 16
    /// Top-level tag equalities considered as the walk's driver (each costs a 64-entry index
    /// sample per walk); further ones are joined (up to ``maxJoins``) or left to the predicate.
    static let maxDriverChoices = 4
    /// Top-level tag equalities joined besides the driver; further ones are checked by the
    /// predicate (one `EXISTS` each). SQLite joins at most 64 tables in one statement, and a flat
    /// AND of 65 equalities failed with "SQL logic error" when each was a join.
    static let maxJoins = 16

    static func compile(
        type: String, query: WalletQuery, keys: WalletKeys, allowReserved: Bool = false, dialect: SQLDialect = .sqlite
    ) throws(WalletError) -> CompiledSearch {
        try Validate.type(type, allowReserved: allowReserved)
        let tb = keys.typeBlind(type)
        var context = Context(typeBlind: tb, keys: keys, dialect: dialect)
        let root = query.root
        let conjuncts: [WQLNode]
        if case .and(let items) = root { conjuncts = items } else { conjuncts = [root] }
        var plans = [CompiledSearch.Plan]()

        // A positive, exactly indexable equality at the top level drives the walk: one plan per
        // such equality (the first few), the others joined; the walk picks the rarest.
        let equalities = conjuncts.indices.filter { context.equalityDriver(conjuncts[$0]) != nil }
        for at in equalities.prefix(maxDriverChoices) {
            let (name, value) = context.equalityDriver(conjuncts[at])!
            var rest = [WQLNode]()
            var joins = [String]()
            var joinArguments = [DatabaseValue]()
            for (i, c) in conjuncts.enumerated() where i != at {
                if joins.count < maxJoins, let (n, v) = context.equalityDriver(c) {
                    let alias = "e\(joins.count)"
                    let scope = dialect.scope(alias, keys.tables)
                    let equal = dialect.valueEquals("\(alias).value", v)
                    joins.append(
                        "\(dialect.innerJoin) \(dialect.tags(keys.tables)) \(alias) ON \(alias).item = d.item AND \(scope.sql)\(alias).name = ? AND \(equal.sql)"
                    )
                    joinArguments += scope.arguments + [BlindColumn.value(n).databaseValue] + equal.arguments
                } else {
                    rest.append(c)
                }
            }
            plans.append(
                .init(
                    driver: .tag(name: name, value: value),
                    joins: SQLFragment(sql: joins.joined(separator: " "), arguments: joinArguments),
                    predicate: context.sql(WQLNode.and(rest).simplified, positive: true), requiresSingleValued: nil,
                    residual: WQLNode.and([conjuncts[at]] + rest)))
        }
        // String ranges on one plaintext tag: one index range, exact while the tag is single-valued.
        if let tag = conjuncts.lazy.compactMap({ Context.rangeTag($0) }).first {
            var conditions = [SQLFragment]()
            var rest = [WQLNode]()
            for c in conjuncts {
                if Context.rangeTag(c) == tag, case .compare(_, let op, .string(let s)) = c {
                    conditions.append(dialect.valueCompare("d.value", Context.symbol(op), dialect.plaintext(s)))
                } else {
                    rest.append(c)
                }
            }
            let name = context.nameBlind(tag)
            plans.append(
                .init(
                    driver: .range(name: name, conditions: context.join(conditions, "AND")),
                    predicate: context.sql(WQLNode.and(rest).simplified, positive: true), requiresSingleValued: name))
        }
        var typeContext = context
        // Every record of the type, decrypted and checked against the whole tree.
        func decidedInMemory() -> CompiledSearch {
            CompiledSearch(
                type: type, typeBlind: tb, keys: keys, root: root, exact: false,
                plans: [.init(driver: .type, predicate: dialect.yes, requiresSingleValued: nil)], dialect: dialect)
        }
        // A query of more conditions than SQL should plan (each is a correlated subquery) is
        // answered by decrypting every record of the type and checking the whole tree: the same
        // results, at the cost of a full walk. `$in` lists and `$exist` names count as one.
        if root.conditionCount > maxSQLConditions {
            return decidedInMemory()
        }
        let full = typeContext.sql(root, positive: true)
        // SQLite's parser holds at most 100 symbols on its stack, and each level of parentheses
        // takes a few: a tree that alternated `$or` and `$not` 17 levels deep (34 parentheses)
        // failed to prepare, a storage error. Such a tree is answered as above. (The tag-driven
        // plans are dropped with it: the walk reads the whole type.)
        if dialect == .sqlite, Self.parenthesisDepth(full.sql) > maxSQLNesting {
            return decidedInMemory()
        }
        plans.append(.init(driver: .type, predicate: full, requiresSingleValued: nil))
        // Inexact leaves widen the SQL the same way in every plan; the full tree decides.
        return CompiledSearch(
            type: type, typeBlind: tb, keys: keys, root: root, exact: typeContext.exact, plans: plans,
            driverChoices: min(equalities.count, maxDriverChoices), dialect: dialect)
    }

    struct Context {
        let typeBlind: Data
        let keys: WalletKeys
        let dialect: SQLDialect
        var exact = true

        func nameBlind(_ name: String) -> Data { keys.tagNameBlind(typeBlind: typeBlind, name: name) }

        static func rangeTag(_ node: WQLNode) -> String? {
            guard case .compare(let tag, let op, .string) = node, WalletTags.isPlaintext(tag) else { return nil }
            switch op {
            case .gt, .gte, .lt, .lte: return tag
            case .eq, .neq: return nil
            }
        }

        static func symbol(_ op: WQLCompare) -> String {
            switch op {
            case .eq: return "="
            case .neq: return "<>"
            case .gt: return ">"
            case .gte: return ">="
            case .lt: return "<"
            case .lte: return "<="
            }
        }

        func equalityDriver(_ node: WQLNode) -> (Data, DatabaseValue)? {
            guard case .compare(let tag, .eq, .string(let s)) = node else { return nil }
            let value: DatabaseValue =
                WalletTags.isPlaintext(tag)
                ? dialect.plaintext(s)
                : keys.tagValueBlind(typeBlind: typeBlind, name: tag, value: s).databaseValue
            return (nameBlind(tag), value)
        }

        /// SQL true for the records of `node` (positive polarity: a superset; negative: a subset).
        mutating func sql(_ node: WQLNode, positive: Bool) -> SQLFragment {
            switch node {
            case .all: return dialect.yes
            case .none: return dialect.no
            case .and(let children): return join(children.map { sql($0, positive: positive) }, "AND")
            case .or(let children): return join(children.map { sql($0, positive: positive) }, "OR")
            case .not(let child):
                let inner = sql(child, positive: !positive)
                return SQLFragment(sql: "NOT (\(inner.sql))", arguments: inner.arguments)
            case .exist(let names):
                let unique = Array(Set(names))
                guard unique.count > QueryCompiler.boundListThreshold else { return join(unique.map { exists($0, condition: nil) }, "AND") }
                // Every name present: as many distinct listed names among the record's tag rows.
                let list = "[" + unique.map { String(BlindColumn.value(nameBlind($0))) }.joined(separator: ",") + "]"
                let scope = dialect.scope("t", keys.tables)
                return SQLFragment(
                    sql:
                        "(SELECT COUNT(DISTINCT t.name) FROM \(dialect.tags(keys.tables)) t WHERE t.item = i.id AND \(scope.sql)t.name IN \(dialect.boundList(.integer))) = ?",
                    arguments: scope.arguments + [list.databaseValue, unique.count.databaseValue])
            case .compare(let tag, let op, let operand):
                if let cond = condition(tag: tag, op: op, operand: operand) { return exists(tag, condition: cond) }
                return inexact(tag, positive: positive)
            case .isIn(let tag, let operands) where operands.count > QueryCompiler.boundListThreshold:
                guard let cond = boundList(tag: tag, operands: operands) else { return inexact(tag, positive: positive) }
                return exists(tag, condition: cond)
            case .isIn(let tag, let operands):
                var parts = [SQLFragment]()
                for operand in operands {
                    guard let cond = condition(tag: tag, op: .eq, operand: operand) else { return inexact(tag, positive: positive) }
                    parts.append(cond)
                }
                return exists(tag, condition: join(parts, "OR"))
            case .like(let tag, let pattern):
                // PostgreSQL: no pattern reaches the server (see `SQLDialect.matchesPatterns`).
                guard WalletTags.isPlaintext(tag), dialect.matchesPatterns else { return inexact(tag, positive: positive) }
                return exists(tag, condition: Self.like(pattern))
            case .regex(let tag, let pattern):
                // Both as blobs: GRDB hands a SQL function its text arguments cut at U+0000.
                guard WalletTags.isPlaintext(tag), dialect.matchesPatterns else { return inexact(tag, positive: positive) }
                return exists(
                    tag,
                    condition: SQLFragment(
                        sql: "coffer_regexp(?, \(dialect.bytes("t.value")))", arguments: [Data(pattern.utf8).databaseValue]))
            }
        }

        /// The tag-row condition for one comparison, or nil when only decryption can answer it.
        func condition(tag: String, op: WQLCompare, operand: WQLOperand) -> SQLFragment? {
            let symbol = Self.symbol(op)
            if WalletTags.isPlaintext(tag) {
                switch operand {
                case .string(let s):
                    if op == .eq { return dialect.valueEquals("t.value", dialect.plaintext(s)) }
                    return dialect.valueCompare("t.value", symbol, dialect.plaintext(s))
                case .number(let x, _):
                    let number = dialect.number
                    if op == .neq {
                        return SQLFragment(sql: "(\(number) IS NULL OR \(number) <> ?)", arguments: [x.databaseValue])
                    }
                    return SQLFragment(sql: "\(number) \(symbol) ?", arguments: [x.databaseValue])
                }
            }
            // Encrypted: blind indexes answer string equality and inequality only.
            guard case .string(let s) = operand, op == .eq || op == .neq else { return nil }
            let blind = keys.tagValueBlind(typeBlind: typeBlind, name: tag, value: s)
            if op == .eq { return dialect.valueEquals("t.value", blind.databaseValue) }
            return SQLFragment(sql: "t.value \(symbol) ?", arguments: [blind.databaseValue])
        }

        /// A long `$in` as tag-row conditions over one bound JSON array per kind of operand; nil
        /// when only decryption can answer it (numbers on an encrypted tag).
        func boundList(tag: String, operands: WQLValueSet) -> SQLFragment? {
            var strings = [String]()
            var numbers = [String]()
            for operand in operands {
                switch operand {
                case .string(let s): strings.append(s)
                case .number(let x, _):
                    guard WalletTags.isPlaintext(tag) else { return nil }
                    numbers.append(x.description)
                }
            }
            var parts = [SQLFragment]()
            if !strings.isEmpty {
                if WalletTags.isPlaintext(tag), strings.contains(where: { $0.utf8.contains(0) }) {
                    // JSON cannot carry U+0000 into SQLite (`json_each` ends a string at `\u0000`):
                    // compare the hex of the values' bytes.
                    let hex = strings.map { "\"" + Data($0.utf8).hexUppercase + "\"" }
                    parts.append(
                        SQLFragment(
                            sql: "\(dialect.hex("t.value")) IN \(dialect.boundList(.hex))",
                            arguments: [("[" + hex.joined(separator: ",") + "]").databaseValue]))
                } else if WalletTags.isPlaintext(tag) {
                    // `+t.value`: filter the record's own tag rows (found by its primary key) instead
                    // of letting the planner probe the value index once per listed value for
                    // every record (5,000 values × N records: seconds per query).
                    parts.append(
                        SQLFragment(
                            sql: "\(dialect.unindexed("t.value")) IN \(dialect.boundList(.tagValue))",
                            arguments: [JSONValue.array(strings.map { .string($0) }).jsonText.databaseValue]))
                } else {
                    // Blind indexes are blobs, which JSON cannot carry: compare their hex.
                    let hex = strings.map { "\"" + keys.tagValueBlind(typeBlind: typeBlind, name: tag, value: $0).hexUppercase + "\"" }
                    parts.append(
                        SQLFragment(
                            sql: "\(dialect.hex("t.value")) IN \(dialect.boundList(.hex))",
                            arguments: [("[" + hex.joined(separator: ",") + "]").databaseValue]))
                }
            }
            if !numbers.isEmpty {
                parts.append(
                    SQLFragment(
                        sql: "\(dialect.number) IN \(dialect.boundList(.number))",
                        arguments: [("[" + numbers.joined(separator: ",") + "]").databaseValue]))
            }
            return join(parts, "OR")
        }

        // A plaintext tag value as a number is `dialect.number`, read whole: as text, GRDB would
        // hand `coffer_num` the value cut at its first U+0000 (`"5\u{0}9"` read as 5).

        /// `$like` on a plaintext tag value. SQLite's `LIKE` stops at U+0000 in the value and in
        /// the pattern (`"a\u{0}b" LIKE "a"` holds), so a value or pattern holding one is decided
        /// by `coffer_like` (``LikePattern``, the in-memory rule) on its bytes; every other value
        /// by SQLite's `LIKE`.
        /// (PostgreSQL matches no pattern in SQL: see ``SQLDialect/matchesPatterns``.)
        static func like(_ pattern: String) -> SQLFragment {
            let bytes = Data(pattern.utf8).databaseValue
            if pattern.utf8.contains(0) {
                return SQLFragment(sql: "coffer_like(?, CAST(t.value AS BLOB))", arguments: [bytes])
            }
            return SQLFragment(
                sql: "CASE WHEN instr(t.value, char(0)) > 0 THEN coffer_like(?, CAST(t.value AS BLOB)) ELSE t.value LIKE ? END",
                arguments: [bytes, pattern.databaseValue])
        }

        func exists(_ tag: String, condition: SQLFragment?) -> SQLFragment {
            let scope = dialect.scope("t", keys.tables)
            var sql = "EXISTS (SELECT 1 FROM \(dialect.tags(keys.tables)) t WHERE t.item = i.id AND \(scope.sql)t.name = ?"
            var args: [DatabaseValue] = scope.arguments + [BlindColumn.value(nameBlind(tag)).databaseValue]
            if let condition {
                sql += " AND (\(condition.sql))"
                args += condition.arguments
            }
            return SQLFragment(sql: sql + ")", arguments: args)
        }

        /// Every comparison needs the tag present: a superset when positive, nothing when negative.
        mutating func inexact(_ tag: String, positive: Bool) -> SQLFragment {
            exact = false
            return positive ? exists(tag, condition: nil) : dialect.no
        }

        /// Joins `parts` with AND or OR as a balanced tree, so SQLite's expression depth grows
        /// with the logarithm of the count (a flat chain of 1,000 hits its depth limit).
        func join(_ parts: [SQLFragment], _ op: String) -> SQLFragment {
            if parts.isEmpty { return op == "AND" ? dialect.yes : dialect.no }
            if parts.count == 1 { return parts[0] }
            if parts.count <= 8 {
                return SQLFragment(
                    sql: parts.map { "(\($0.sql))" }.joined(separator: " \(op) "),
                    arguments: parts.flatMap(\.arguments))
            }
            let middle = parts.count / 2
            let left = join(Array(parts[..<middle]), op)
            let right = join(Array(parts[middle...]), op)
            return SQLFragment(sql: "(\(left.sql)) \(op) (\(right.sql))", arguments: left.arguments + right.arguments)
        }
    }
}

extension Data {
    /// Upper-case hexadecimal, as SQLite's `hex()` prints a blob.
    fileprivate var hexUppercase: String {
        let digits = Array("0123456789ABCDEF".utf8)
        var out = [UInt8]()
        out.reserveCapacity(count * 2)
        for byte in self {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}

extension WQLNode {
    /// Tag tests in the tree (a `$in` list or an `$exist` of many names counts as one): how many
    /// correlated subqueries its SQL would hold.
    var conditionCount: Int {
        switch self {
        case .all, .none: return 0
        case .and(let children), .or(let children): return children.reduce(0) { $0 + $1.conditionCount }
        case .not(let child): return child.conditionCount
        case .exist(let names): return names.count > QueryCompiler.boundListThreshold ? 1 : names.count
        case .compare, .isIn, .like, .regex: return 1
        }
    }
}
