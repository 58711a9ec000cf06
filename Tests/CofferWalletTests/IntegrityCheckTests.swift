// `checkIntegrity()` as an attacker with write access but no key would test it: each kind of
// tampering it promises to find is found, with the record named where it can be.
import CofferWallet
import Foundation
import GRDB
import Testing

@Suite("Integrity check")
struct IntegrityCheckTests {
    /// A closed wallet with three tagged records, and its path.
    func wallet() async throws -> URL {
        let (w, url) = try await TestWallets.make()
        try await w.add(type: "t", id: "a", value: "va", tags: ["e": "1", "~p": ["x", "y"]])
        try await w.add(type: "t", id: "b", value: "vb", tags: ["e": "2"])
        try await w.add(type: "u", id: "c", value: "vc")
        try w.close()
        return url
    }

    func tamper(_ url: URL, _ sql: String) async throws {
        let db = try DatabaseQueue(path: url.path)
        try await db.write { db in try db.execute(sql: sql) }
        try db.close()
    }

    func check(_ url: URL) async throws -> IntegrityReport {
        let w = try await Wallet.open(at: url, key: .raw(TestWallets.rawKey))
        defer { try? w.close() }
        return try await w.checkIntegrity()
    }

    @Test("an untouched wallet is clean, with its records and tag rows counted")
    func clean() async throws {
        let report = try await check(try await wallet())
        #expect(report.isClean, "\(report.problems)")
        #expect(report.records == 3 && report.tagRows == 4)
        #expect(report.json == #"{"records":3,"tagRows":4,"problems":[],"problemCount":0}"#)
    }

    @Test("a record whose tag rows were deleted is named: searches would skip it")
    func deletedTagRows() async throws {
        let url = try await wallet()
        try await tamper(url, "DELETE FROM tags WHERE item = (SELECT MIN(item) FROM tags)")
        let report = try await check(url)
        #expect(report.problems.map(\.kind) == ["missingTagRow", "missingTagRow", "missingTagRow"])
        #expect(report.problems.allSatisfy { $0.type == "t" && $0.id == "a" })
    }

    @Test("a tag row moved to another record is found on both records")
    func movedTagRow() async throws {
        let url = try await wallet()
        try await tamper(url, """
            UPDATE tags SET item = (SELECT id FROM items ORDER BY id LIMIT 1 OFFSET 1)
            WHERE item = (SELECT id FROM items ORDER BY id LIMIT 1) AND typeof(value) = 'text' AND value = 'x'
            """)
        let report = try await check(url)
        #expect(Set(report.problems.map { "\($0.kind) \($0.id ?? "-")" }) == ["missingTagRow a", "extraTagRow b"], "\(report.problems)")
    }

    @Test("a tampered record is reported, and the check goes on to the others")
    func tamperedRecord() async throws {
        let url = try await wallet()
        try await tamper(url, "UPDATE items SET value = zeroblob(length(value)) WHERE id = (SELECT MIN(id) FROM items)")
        let report = try await check(url)
        #expect(report.records == 3)
        #expect(report.problems.map(\.kind).first == "record")
        #expect(!report.problems.contains { $0.id == "b" })
    }

    @Test("tag rows of no record are found")
    func orphanRows() async throws {
        let url = try await wallet()
        try await tamper(url, "INSERT INTO tags(item, name, value) VALUES (999999, 1, 'x')")
        #expect(try await check(url).problems.map(\.kind) == ["orphanTagRow"])
    }
}
