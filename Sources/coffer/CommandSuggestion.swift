// A mistyped subcommand name: the parser only sees extra arguments; this names the closest command.

import ArgumentParser

enum CommandSuggestion {
    /// The message for a command line whose first unknown word stands where a subcommand name
    /// belongs (`coffer walet create`, `coffer wallet crate`), or nil when the command line fails
    /// for another reason (then the parser's own message is the right one).
    static func unknownSubcommand(in arguments: [String], root: ParsableCommand.Type = CofferCommand.self) -> String? {
        var node = root
        var path = [root._commandName]
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            if argument == "--" { return nil }
            if argument.hasPrefix("-") {
                // Only the options a command line may give before a subcommand name are known here;
                // any other option leaves the diagnosis to the parser.
                let name = String(argument.prefix { $0 != "=" })
                guard valueOptions.contains(name) else { return nil }
                index += argument.contains("=") ? 1 : 2
                continue
            }
            let subcommands = node.configuration.subcommands
            guard !subcommands.isEmpty else { return nil }
            if let next = subcommands.first(where: { $0._commandName == argument || $0.configuration.aliases.contains(argument) }) {
                node = next
                path.append(argument)
                index += 1
                continue
            }
            if argument == "help" { return nil } // the parser's own help subcommand
            return message(unknown: argument, names: subcommands.map { $0._commandName }, path: path, node: node, root: root)
        }
        return nil
    }

    /// The options that take a value and may stand before a subcommand name.
    static let valueOptions: Set<String> = WalletKeyOptions.valueOptions.union(["--store", "--profile"])

    static func message(unknown: String, names: [String], path: [String], node: ParsableCommand.Type, root: ParsableCommand.Type)
        -> String
    {
        let command = path.joined(separator: " ")
        var text = "error: '\(unknown)' is not a subcommand of '\(command)'"
        if let closest = closest(to: unknown, among: names) {
            text += "; did you mean '\(closest)'?"
        } else {
            text += "; its subcommands are \(names.joined(separator: ", "))"
        }
        let usage = node == root ? root.usageString() : root.usageString(for: node)
        return text + "\nUsage: \(usage)\n  See '\(command) --help' for more information.\n"
    }

    /// The name nearest to `word` by edit distance (a transposition counts as one edit), when it
    /// is near enough to be a typing mistake.
    static func closest(to word: String, among names: [String]) -> String? {
        let scored = names.map { ($0, distance(word.lowercased(), $0.lowercased())) }
        guard let best = scored.min(by: { $0.1 < $1.1 }) else { return nil }
        let allowed = max(1, min(2, best.0.count / 3))
        return best.1 <= allowed ? best.0 : nil
    }

    /// Optimal-string-alignment distance: insertions, deletions, substitutions and adjacent transpositions.
    static func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a)
        let b = Array(b)
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var d = [[Int]](repeating: [Int](repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in 0...a.count { d[i][0] = i }
        for j in 0...b.count { d[0][j] = j }
        for i in 1...a.count {
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
                }
            }
        }
        return d[a.count][b.count]
    }
}
