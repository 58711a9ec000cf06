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
    enum Driver: Sendable {
        /// Walk the type's records in insertion order.
        case type
        /// Walk the tag index entries of one (name, value) pair, which are in record order too.
        case tag(name: Data, value: DatabaseValue)
    }

    let type: String
    let typeBlind: Data
    let root: WQLNode
    let exact: Bool
    let driver: Driver
    let predicate: SQLFragment
}

enum QueryCompiler {
    static func compile(type: String, query: WalletQuery, keys: WalletKeys) -> CompiledSearch {
        let tb = keys.typeBlind(type)
        var context = Context(typeBlind: tb, keys: keys)
        let root = query.root

        // A positive, exactly indexable equality at the top level drives the walk.
        var driver = CompiledSearch.Driver.type
        var rest = root
        let conjuncts: [WQLNode]
        if case let .and(items) = root { conjuncts = items } else { conjuncts = [root] }
        if let at = conjuncts.firstIndex(where: { context.driverLeaf($0) != nil }) {
            let (name, value) = context.driverLeaf(conjuncts[at])!
            driver = .tag(name: name, value: value)
            var remaining = conjuncts
            remaining.remove(at: at)
            rest = WQLNode.and(remaining).simplified
        }
        let predicate = context.sql(rest, positive: true)
        return CompiledSearch(type: type, typeBlind: tb, root: root, exact: context.exact, driver: driver, predicate: predicate)
    }

    struct Context {
        let typeBlind: Data
        let keys: WalletKeys
        var exact = true

        func nameBlind(_ name: String) -> Data { keys.tagNameBlind(typeBlind: typeBlind, name: name) }

        func driverLeaf(_ node: WQLNode) -> (Data, DatabaseValue)? {
            guard case let .compare(tag, .eq, .string(s)) = node else { return nil }
            let value: DatabaseValue = WalletTags.isPlaintext(tag)
                ? s.databaseValue
                : keys.tagValueBlind(typeBlind: typeBlind, name: tag, value: s).databaseValue
            return (nameBlind(tag), value)
        }

        /// SQL true for the records of `node` (positive polarity: a superset; negative: a subset).
        mutating func sql(_ node: WQLNode, positive: Bool) -> SQLFragment {
            switch node {
            case .all: return .yes
            case .none: return .no
            case let .and(children): return join(children.map { sql($0, positive: positive) }, "AND")
            case let .or(children): return join(children.map { sql($0, positive: positive) }, "OR")
            case let .not(child):
                let inner = sql(child, positive: !positive)
                return SQLFragment(sql: "NOT (\(inner.sql))", arguments: inner.arguments)
            case let .exist(names):
                return join(names.map { exists($0, condition: nil) }, "AND")
            case let .compare(tag, op, operand):
                if let cond = condition(tag: tag, op: op, operand: operand) { return exists(tag, condition: cond) }
                return inexact(tag, positive: positive)
            case let .isIn(tag, operands):
                var parts = [SQLFragment]()
                for operand in operands {
                    guard let cond = condition(tag: tag, op: .eq, operand: operand) else { return inexact(tag, positive: positive) }
                    parts.append(cond)
                }
                return exists(tag, condition: join(parts, "OR"))
            case let .like(tag, pattern):
                guard WalletTags.isPlaintext(tag) else { return inexact(tag, positive: positive) }
                return exists(tag, condition: SQLFragment(sql: "t.value LIKE ?", arguments: [pattern.databaseValue]))
            case let .regex(tag, pattern):
                guard WalletTags.isPlaintext(tag) else { return inexact(tag, positive: positive) }
                return exists(tag, condition: SQLFragment(sql: "coffer_regexp(?, t.value)", arguments: [pattern.databaseValue]))
            }
        }

        /// The tag-row condition for one comparison, or nil when only decryption can answer it.
        func condition(tag: String, op: WQLCompare, operand: WQLOperand) -> SQLFragment? {
            let symbol: String
            switch op {
            case .eq: symbol = "="
            case .neq: symbol = "<>"
            case .gt: symbol = ">"
            case .gte: symbol = ">="
            case .lt: symbol = "<"
            case .lte: symbol = "<="
            }
            if WalletTags.isPlaintext(tag) {
                switch operand {
                case let .string(s):
                    return SQLFragment(sql: "t.value \(symbol) ?", arguments: [s.databaseValue])
                case let .number(x, _):
                    if op == .neq {
                        return SQLFragment(sql: "(coffer_num(t.value) IS NULL OR coffer_num(t.value) <> ?)", arguments: [x.databaseValue])
                    }
                    return SQLFragment(sql: "coffer_num(t.value) \(symbol) ?", arguments: [x.databaseValue])
                }
            }
            // Encrypted: blind indexes answer string equality and inequality only.
            guard case let .string(s) = operand, op == .eq || op == .neq else { return nil }
            let blind = keys.tagValueBlind(typeBlind: typeBlind, name: tag, value: s)
            return SQLFragment(sql: "t.value \(symbol) ?", arguments: [blind.databaseValue])
        }

        func exists(_ tag: String, condition: SQLFragment?) -> SQLFragment {
            var sql = "EXISTS (SELECT 1 FROM tags t WHERE t.item = i.id AND t.name = ?"
            var args: [DatabaseValue] = [nameBlind(tag).databaseValue]
            if let condition {
                sql += " AND (\(condition.sql))"
                args += condition.arguments
            }
            return SQLFragment(sql: sql + ")", arguments: args)
        }

        /// Every comparison needs the tag present: a superset when positive, nothing when negative.
        mutating func inexact(_ tag: String, positive: Bool) -> SQLFragment {
            exact = false
            return positive ? exists(tag, condition: nil) : .no
        }

        func join(_ parts: [SQLFragment], _ op: String) -> SQLFragment {
            if parts.isEmpty { return op == "AND" ? .yes : .no }
            if parts.count == 1 { return parts[0] }
            return SQLFragment(
                sql: parts.map { "(\($0.sql))" }.joined(separator: " \(op) "),
                arguments: parts.flatMap(\.arguments))
        }
    }
}
