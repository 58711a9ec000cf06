// Key rotation: dead drops kept as received and verified at every read, several trust anchors.

import CofferCrypto
import CofferDevelopment
import Foundation
import Testing

@testable import CofferDeniable

/// A key source whose bundle the test replaces (a rotation published between two fetches).
final class SwitchingKeySource: PublicKeySource, @unchecked Sendable {
    private let lock = NSLock()
    private var current: KeyBundle

    init(_ bundle: KeyBundle) { current = bundle }

    var bundle: KeyBundle {
        get { lock.withLock { current } }
        set { lock.withLock { current = newValue } }
    }

    func fetchKeyBundle() async throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return try encoder.encode(bundle)
    }
}

/// One bundle holding both services' hierarchies (CoverDrop's bundle during a rotation).
func merged(_ a: KeyBundle, _ b: KeyBundle) -> KeyBundle {
    KeyBundle(journalistProfiles: a.journalistProfiles, defaultJournalistID: a.defaultJournalistID, keys: a.keys + b.keys)
}

@Suite("Key rotation")
struct RotationTests {
    @Test("a dead drop signed by a CoverNode key that arrives later is read after the key refresh: the reply is not lost")
    func replyAcrossRotation() async throws {
        let folder = temporaryFolder()
        let clock = TestClock()
        let old = try DevelopmentCoverNode(folder: folder.appendingPathComponent("old"), clock: clock.function)
        let new = try DevelopmentCoverNode(folder: folder.appendingPathComponent("new"), clock: clock.function)
        let source = SwitchingKeySource(old.keyBundle())
        let store = try await DeniableStorage(
            folder: folder.appendingPathComponent("deniable"), configuration: testConfiguration(),
            trustAnchors: [old.trustAnchor, new.trustAnchor], keySource: source, clock: clock.function)
        let passphrase = try await store.createVault()
        try await store.unlock(passphrase: passphrase)
        try await store.send("a tip", to: "journalist")
        let userKey = try await store.userPublicKey()
        try await store.lock()

        // The service already signs with the new CoverNode key; this install's cache lacks it.
        let drop = try new.deadDrop(id: 1, createdAt: clock.now, replies: [("journalist", "got it")], to: userKey, covers: 3)
        #expect(try await store.receive(deadDrops: [drop]) == DeadDropMerge(kept: 0, unverified: 1, duplicates: 0, rejected: 0, trimmed: 0))
        try await store.unlock(passphrase: passphrase)
        #expect(try await store.mailbox().filter { $0.direction == .received }.isEmpty)
        try await store.lock()

        source.bundle = merged(old.keyBundle(), new.keyBundle())
        try await store.refreshPublicKeys()
        try await store.unlock(passphrase: passphrase)
        #expect(try await store.mailbox().filter { $0.direction == .received }.map(\.text) == ["got it"])
    }

    @Test("a list with one malformed item keeps the others; the malformed one is counted, not thrown")
    func oneBadItem() async throws {
        let clock = TestClock()
        let (store, node) = try await makeStore(temporaryFolder(), clock: clock)
        let key = X25519KeyPair.generate().publicKey
        let good = try node.deadDrop(id: 1, createdAt: clock.now, replies: [], to: key, covers: 1)
        let later = try node.deadDrop(id: 3, createdAt: clock.now, replies: [], to: key, covers: 1)
        var text = String(decoding: DeadDropList.json([good, later]), as: UTF8.self)
        text = text.replacingOccurrences(of: #"[{"#, with: #"[{"id":2,"created_at":"not a time","data":"","signature":""},{"#)
        let (drops, skipped) = try DeadDropList.parseItems(Data(text.utf8))
        #expect(drops == [good, later])
        #expect(skipped.count == 1 && skipped[0].contains("dead drop 2"))
        let merge = try await store.receive(deadDropsJSON: Data(text.utf8))
        #expect(merge.kept == 2 && merge.rejected == 1)
    }

    @Test("dead drops beyond the maximum count are trimmed, the oldest first")
    func bounded() async throws {
        let clock = TestClock()
        var configuration = testConfiguration()
        configuration.deadDropMaxStored = 2
        let (store, node) = try await makeStore(temporaryFolder(), configuration: configuration, clock: clock)
        let key = X25519KeyPair.generate().publicKey
        let drops = try (1...3).map { i in
            try node.deadDrop(id: Int64(i), createdAt: clock.now.addingTimeInterval(Double(i) * 60), replies: [], to: key, covers: 1)
        }
        #expect(try await store.receive(deadDrops: drops).trimmed == 1)
        #expect(try await store.status().deadDrops == 2)
        #expect(try await store.newestDeadDropID() == 3)
    }

    @Test("during an organisation-key rotation both hierarchies verify under two anchors, one under one")
    func twoAnchors() throws {
        let folder = temporaryFolder()
        let a = try DevelopmentCoverNode(folder: folder.appendingPathComponent("a"))
        let b = try DevelopmentCoverNode(folder: folder.appendingPathComponent("b"))
        let bundle = merged(a.keyBundle(), b.keyBundle())
        let now = Date()
        let both = VerifiedKeys.verify(bundle, anchors: [a.trustAnchor, b.trustAnchor], fetchedAt: now, now: now)
        let one = VerifiedKeys.verify(bundle, anchors: [a.trustAnchor], fetchedAt: now, now: now)
        #expect(both.deadDropSigningKeys.count == 4 && both.rejected == 0)
        #expect(both.journalistMessagingKeys["alice"]?.count == 2)
        #expect(one.deadDropSigningKeys.count == 2 && one.rejected == 1)
    }

    @Test("every *.pub.json of a folder is loaded as a trust anchor; a broken one is named")
    func anchorFolder() throws {
        let folder = temporaryFolder()
        let a = try DevelopmentCoverNode(folder: folder.appendingPathComponent("a"))
        let b = try DevelopmentCoverNode(folder: folder.appendingPathComponent("b"))
        let keys = folder.appendingPathComponent("organization_keys")
        try FileManager.default.createDirectory(at: keys, withIntermediateDirectories: true)
        try a.organizationKeyJSON().write(to: keys.appendingPathComponent("1.pub.json"))
        try b.organizationKeyJSON().write(to: keys.appendingPathComponent("2.pub.json"))
        try Data("not a key".utf8).write(to: keys.appendingPathComponent("README.md"))
        #expect(try TrustAnchor.load(folder: keys).map(\.publicKey) == [a.trustAnchor.publicKey, b.trustAnchor.publicKey])
        try Data("{}".utf8).write(to: keys.appendingPathComponent("3.pub.json"))
        do {
            _ = try TrustAnchor.load(folder: keys)
            Issue.record("a broken key file was accepted")
        } catch {
            #expect(error.description.contains("3.pub.json"))
        }
    }
}
