// `coffer deniable check-vectors` and the README's walk-through over CoverDrop's formats, run as
// separate processes.

import CofferTestSupport
import Foundation
import Testing

/// The repository root (this file is Tests/CofferCLITests/…).
let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
/// CoverDrop's published vectors, as the deniable tests keep them.
let coverDropVectors = repositoryRoot.appendingPathComponent("Tests/CofferDeniableTests/Fixtures/coverdrop/vectors")

func parsedObject(_ text: String) -> [String: Any]? {
    (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any]
}

@Suite("coffer deniable check-vectors")
struct CheckVectorsCLITests {
    let store = TemporaryFolders.path("coffer-vectors-cli")

    @Test("CoverDrop's published vectors pass: one JSON object, a field per group, exit 0")
    func published() async throws {
        let r = try await CLI.run(["deniable", "check-vectors", coverDropVectors.path], store: store)
        #expect(r.status == 0, "\(r.stderr)")
        let object = try #require(parsedObject(r.stdout))
        for group in ["anonymous_box", "multi_anonymous_box", "two_party_box", "signature", "certificate_data", "journalist_dead_drop"] {
            #expect(object[group] as? String == "pass", "\(group): \(r.stdout)")
        }
    }

    @Test("a tampered box exits 5 and names the failing group; absent groups are skipped")
    func tampered() async throws {
        let copy = TemporaryFolders.path("coffer-vectors")
        try FileManager.default.createDirectory(at: copy, withIntermediateDirectories: true)
        for group in ["anonymous_box", "signature"] {
            try FileManager.default.copyItem(at: coverDropVectors.appendingPathComponent(group), to: copy.appendingPathComponent(group))
        }
        let box = copy.appendingPathComponent("anonymous_box/04_anonymous_box")
        var bytes = try Data(contentsOf: box)
        bytes[100] ^= 0x80
        try bytes.write(to: box)
        let r = try await CLI.run(["deniable", "check-vectors", copy.path], store: store)
        #expect(r.status == 5)
        let object = try #require(parsedObject(r.stdout))
        #expect((object["anonymous_box"] as? String)?.hasPrefix("fail") == true)
        #expect(object["signature"] as? String == "pass")
        #expect(object["two_party_box"] as? String == "skipped (absent)")
    }

    @Test("a folder not in CoverDrop's layout exits 2 with a message saying what it expected")
    func wrongLayout() async throws {
        let r = try await CLI.run(["deniable", "check-vectors", store.path], store: store)
        #expect(r.status == 2)
        #expect(r.stderr.contains("common/tests/vectors") || r.stderr.contains("not a folder"), "\(r.stderr)")
    }
}

@Suite("The deniable walk-through over CoverDrop's formats")
struct CoverDropWalkthroughTests {
    @Test("init, send, dequeue, reply, handover, unlock: every message crosses in CoverDrop's formats, each command its own process")
    func walkthrough() async throws {
        let store = TemporaryFolders.path("coffer-walkthrough")
        let started = try await CLI.run(["deniable", "start"], store: store)
        #expect(started.status == 0, "\(started.stderr)")
        let created = try await CLI.run(["deniable", "init"], store: store)
        let passphrase = try #require(parsedObject(created.stdout)?["passphrase"] as? String)
        let env = ["P": passphrase]
        let sent = try await CLI.run(["--passphrase-env", "P", "deniable", "send", "--to", "alice", "hello"], store: store, env: env)
        #expect(sent.status == 0, "\(sent.stderr)")
        let head = try await CLI.run(["deniable", "dequeue"], store: store)
        let item = try #require(parsedObject(head.stdout))
        #expect(Data(base64Encoded: item["item"] as? String ?? "")?.count == 773)
        let read = try #require(item["coverNode"] as? [String: Any], "\(head.stdout)")
        #expect(read["recipient"] as? String == "alice" && read["text"] as? String == "hello")
        let reply = try await CLI.run(["--passphrase-env", "P", "deniable", "reply", "--from", "alice", "hi back"], store: store, env: env)
        #expect(reply.status == 0, "\(reply.stderr)")
        let handover = try await CLI.run(
            ["--passphrase-env", "P", "deniable", "reply", "--from", "alice", "--handover-to", "bob"], store: store, env: env)
        #expect(handover.status == 0, "\(handover.stderr)")
        let fromBob = try await CLI.run(
            ["--passphrase-env", "P", "deniable", "reply", "--from", "bob", "bob here"], store: store, env: env)
        #expect(fromBob.status == 0, "\(fromBob.stderr)")
        let unlocked = try await CLI.run(["--passphrase-env", "P", "deniable", "unlock"], store: store, env: env)
        let mailbox = try #require(parsedObject(unlocked.stdout)?["mailbox"] as? [[String: Any]], "\(unlocked.stdout)")
        let received = mailbox.filter { $0["direction"] as? String == "received" }
        #expect(received.contains { $0["peer"] as? String == "alice" && $0["text"] as? String == "hi back" }, "\(unlocked.stdout)")
        #expect(received.contains { $0["peer"] as? String == "alice" && $0["handoverTo"] as? String == "bob" }, "\(unlocked.stdout)")
        #expect(received.contains { $0["peer"] as? String == "bob" && $0["text"] as? String == "bob here" }, "\(unlocked.stdout)")
        let status = try await CLI.run(["deniable", "status"], store: store)
        #expect(status.status == 0)
        let unknown = try await CLI.run(["--passphrase-env", "P", "deniable", "send", "--to", "nobody", "hi"], store: store, env: env)
        #expect(unknown.status != 0 && unknown.stderr.contains("nobody"), "\(unknown.stderr)")
    }
}

@Suite("coffer deniable background")
struct BackgroundCLITests {
    @Test("each run is its own process: 2 items per run, at most hourly (--now), the message delivered, a bad time exit 2")
    func schedule() async throws {
        let store = TemporaryFolders.path("coffer-background-cli")
        func background(_ now: String) async throws -> [String: Any] {
            let r = try await CLI.run(["deniable", "background", "--now", now], store: store)
            #expect(r.status == 0, "\(r.stderr)")
            return try #require(parsedObject(r.stdout))
        }
        let initialized = try await CLI.run(["deniable", "init"], store: store)
        let passphrase = parsedObject(initialized.stdout)?["passphrase"] as? String ?? ""
        let sent = try await CLI.run(
            ["--passphrase-env", "P", "deniable", "send", "--to", "alice", "hello"], store: store, env: ["P": passphrase])
        #expect(sent.status == 0, "\(sent.stderr)")

        let first = try await background("2030-01-01T10:00:00Z")
        #expect(first["sent"] as? Int == 2 && first["rateLimited"] as? Bool == false)
        let early = try await background("2030-01-01T10:30:00Z")
        #expect(early["sent"] as? Int == 0 && early["rateLimited"] as? Bool == true)
        // Not before an hour after the last run; the random delay (5–120 min from 10:30) may put
        // it later, never past 12:30.
        let nextRun = try #require((early["nextRunAfter"] as? String).flatMap { ISO8601DateFormatter().date(from: $0) })
        let hourAfterFirst = try #require(ISO8601DateFormatter().date(from: "2030-01-01T11:00:00Z"))
        #expect(nextRun >= hourAfterFirst && nextRun <= hourAfterFirst.addingTimeInterval(90 * 60), "\(nextRun)")
        let later = try await background("2030-01-01T11:01:00Z")
        #expect(later["sent"] as? Int == 2)
        let delivered = try Data(contentsOf: store.appendingPathComponent("deniable-dev-service/delivered.json"))
        #expect(String(decoding: delivered, as: UTF8.self).contains(#""text":"hello""#))

        let bad = try await CLI.run(["deniable", "background", "--now", "yesterday"], store: store)
        #expect(bad.status == 2 && bad.stderr.contains("ISO 8601"), "\(bad.stderr)")
    }
}

@Suite("coffer deniable: the folder's lock file")
struct DeniableLockFileCLITests {
    @Test("a symbolic link at deniable/.coffer-lock is refused (exit 6, naming it); nothing is created or re-permissioned where it points")
    func linkedLockFileRefused() async throws {
        let store = TemporaryFolders.path("coffer-lock-link")
        #expect(try await CLI.run(["deniable", "start"], store: store).status == 0)
        let lock = store.appendingPathComponent("deniable/.coffer-lock")
        let target = TemporaryFolders.path("coffer-lock-target")
        try FileManager.default.createDirectory(at: target, withIntermediateDirectories: true)
        let pointed = target.appendingPathComponent("created-by-lock")
        try FileManager.default.removeItem(at: lock)
        try FileManager.default.createSymbolicLink(at: lock, withDestinationURL: pointed)
        let r = try await CLI.run(["deniable", "start"], store: store)
        #expect(r.status == 6, "\(r.stderr)")
        #expect(r.stderr.contains(".coffer-lock") && r.stderr.contains("symbolic link"), "\(r.stderr)")
        #expect(!FileManager.default.fileExists(atPath: pointed.path), "the lock's open followed the link")
    }
}
