// The records of `coffer bench wallet`, the same on every run.

import Coffer
import CofferDevelopment
import CofferSync
import Foundation

/// The records of the workload, as askar_bench.py makes them.
struct BenchWorkload: Sendable {
    static let category = "credential"
    static let schemas = 10
    static let issuers = 5

    let n: Int
    let valueSize: Int
    let fetchCap: Int
    let txnCap: Int
    let names: [String]
    let values: [String]
    let newValues: [String]
    let tags: [WalletTags]
    let fetchOrder: [Int]
    let updateOrder: [Int]

    init(n: Int, valueSize: Int, fetchCap: Int, txnCap: Int) {
        self.n = n
        self.valueSize = valueSize
        self.fetchCap = fetchCap
        self.txnCap = txnCap
        var rng = SplitMix64(seed: 1)
        let ts0: Int64 = 1_700_000_000_000
        names = (0..<n).map { String(format: "rec-%08d", $0) }
        tags = (0..<n).map { i in
            [
                "schema_id": .string("schema:\(i % Self.schemas)"),
                "issuer_did": .string("did:example:issuer\(i % Self.issuers)"),
                "~seq": .string(String(format: "%08d", i)),
                "~ts": .string(String(format: "%013lld", ts0 + Int64(i) * 1000)),
            ]
        }
        let alphabet = Array("abcdefghijklmnopqrstuvwxyz0123456789")
        values = (0..<n).map { i in
            let head = "{\"i\": \(i), \"attr\": {\"name\": \"holder\(i)\", \"score\": \(i % 97)}"
            let pad = max(valueSize - head.count - 10, 0)
            let body = String((0..<pad).map { _ in alphabet[Int(rng.next() % UInt64(alphabet.count))] })
            return String((head + ", \"p\": \"\(body)\"}").prefix(valueSize))
        }
        newValues = values.map { String($0.reversed()) }
        fetchOrder = (0..<min(n, fetchCap)).map { _ in Int(rng.next() % UInt64(n)) }
        var order = Array(0..<n)
        for i in stride(from: n - 1, to: 0, by: -1) {
            order.swapAt(i, Int(rng.next() % UInt64(i + 1)))
        }
        updateOrder = order
    }

    var oneTxnCount: Int { min(n, txnCap) }
    var rangeWidth: Int { max(1, n / 10) }

    /// Writes the records as JSON lines (`coffer wallet import`'s input) to a new file at `url`,
    /// in chunks of about 1 MiB.
    func writeJSONLines(to url: URL) throws {
        _ = FileManager.default.createFile(atPath: url.path, contents: nil)
        let writer = try FileHandle(forWritingTo: url)
        var chunk = ""
        for i in 0..<n {
            chunk +=
                JSONValue.object([
                    ("type", .string(Self.category)), ("id", .string(names[i])), ("value", .string(values[i])),
                    ("tags", tags[i].jsonValue),
                ]).jsonText + "\n"
            if chunk.utf8.count > 1 << 20 {
                try writer.write(contentsOf: Data(chunk.utf8))
                chunk = ""
            }
        }
        try writer.write(contentsOf: Data(chunk.utf8))
        try writer.close()
    }
}
