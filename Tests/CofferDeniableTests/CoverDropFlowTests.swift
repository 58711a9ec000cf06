// The whole user flow over CoverDrop's formats: send → queue → dequeue → the CoverNode and the
// journalist read it; a reply or a handover → dead drop → unlock → mailbox; and stores made
// before the formats changed.

import CofferCrypto
import CofferDevelopment
import CofferTestSupport
import Foundation
import GRDB
import Testing

@testable import CofferDeniable

@Suite("The CoverDrop user flow")
struct CoverDropFlowTests {
    @Test("a sent message leaves the queue as a 773-byte item the CoverNode and the journalist read, with the user's reply key")
    func sendToJournalist() async throws {
        let (store, node) = try await makeStore(temporaryFolder())
        let passphrase = try await store.createVault()
        try await store.unlock(passphrase: passphrase)
        try await store.send("meet at noon", to: "alice")
        let replyKey = try await store.userPublicKey()
        let item = try await store.dequeue()
        #expect(item.count == CoverDropProtocol.userToCoverNodeEncryptedBytes)
        let read = try #require(node.read(queueItem: item))
        #expect(read.recipient == "alice" && read.text == "meet at noon" && read.replyKey == replyKey)
        // What follows in the queue are covers: the CoverNode sees the zero tag.
        let next = try await store.dequeue()
        #expect(next.count == 773 && node.read(queueItem: next) == nil)
    }

    @Test("a cover opens for the CoverNode to the zero tag and 593 bytes, like a real item's size")
    func coverItem() throws {
        let node = try DevelopmentCoverNode(folder: temporaryFolder())
        let keys = VerifiedKeys.verify(node.keyBundle(), anchor: node.trustAnchor, fetchedAt: Date(), now: Date())
        let cover = UserMessage.coverItem(coverNodeKeys: keys.wrappingKeys)
        #expect(cover.count == 773)
        #expect(node.read(queueItem: cover) == nil)
    }

    @Test("a journalist unknown to the key bundle, an empty text and a text over the limit are refused before anything is queued")
    func refusedSends() async throws {
        let (store, _) = try await makeStore(temporaryFolder())
        try await store.unlock(passphrase: try await store.createVault())
        await #expect(throws: DeniableError.self) { try await store.send("hi", to: "nobody") }
        await #expect(throws: DeniableError.self) { try await store.send("", to: "alice") }
        await #expect(throws: DeniableError.self) {
            try await store.send(SecureRandom.bytes(600).base64EncodedString(), to: "alice")
        }
        #expect(try await store.queuedMessageCount() == 0)
        #expect(try await store.mailbox().isEmpty)
    }

    @Test("a reply published by the service reaches the mailbox at the next start and unlock; others' replies do not")
    func replyToMailbox() async throws {
        let folder = temporaryFolder()
        let clock = TestClock()
        let configuration = testConfiguration()
        let node = try DevelopmentCoverNode(
            folder: folder.appendingPathComponent("svc"), configuration: configuration, clock: clock.function)
        func open() async throws -> DeniableStorage {
            try await DeniableStorage(
                folder: folder.appendingPathComponent("deniable"), configuration: configuration, trustAnchor: node.trustAnchor,
                keySource: node, deadDropSource: node, clock: clock.function)
        }
        var store = try await open()
        let passphrase = try await store.createVault()
        try await store.unlock(passphrase: passphrase)
        try await store.send("a tip", to: "alice")
        let userKey = try await store.userPublicKey()
        try await store.close()
        try node.publishReplies([("alice", "thanks, tell me more")], to: userKey)
        try node.publishReplies([("alice", "for someone else")], to: X25519KeyPair.generate().publicKey)
        clock.advance(60)
        store = try await open()
        try await store.unlock(passphrase: passphrase)
        let received = try await store.mailbox().filter { $0.direction == .received }
        #expect(received.map(\.text) == ["thanks, tell me more"])
        #expect(received.first?.peer == "alice")
    }

    @Test("a handover adds the new journalist, whose replies are then collected")
    func handoverFlow() async throws {
        let clock = TestClock()
        let (store, node) = try await makeStore(temporaryFolder(), clock: clock)
        let passphrase = try await store.createVault()
        try await store.unlock(passphrase: passphrase)
        try await store.send("a tip", to: "alice")
        let userKey = try await store.userPublicKey()
        try await store.lock()
        let drop = try node.deadDrop(
            id: 1, createdAt: clock.now, messages: [("alice", .handover("bob")), ("bob", .text("bob here"))], to: userKey, covers: 3)
        _ = try await store.receive(deadDrops: [drop])
        try await store.unlock(passphrase: passphrase)
        let received = try await store.mailbox().filter { $0.direction == .received }
        #expect(received.contains { $0.peer == "alice" && $0.handoverTo == "bob" && $0.text.isEmpty })
        #expect(received.contains { $0.peer == "bob" && $0.text == "bob here" })
        // Kept across a save: the handover target survives in the vault.
        try await store.lock()
        try await store.unlock(passphrase: passphrase)
        #expect(try await store.mailbox().contains { $0.handoverTo == "bob" })
    }

    @Test("dead drops fetched from the service arrive as CoverDrop's API JSON and are stored verified")
    func fetchedAsJSON() async throws {
        let node = try DevelopmentCoverNode(folder: temporaryFolder())
        try node.publishReplies([("bob", "x")], to: X25519KeyPair.generate().publicKey)
        let json = try await node.fetchDeadDrops(idsGreaterThan: 0)
        let object = try #require(try JSONSerialization.jsonObject(with: json) as? [String: Any])
        let first = try #require((object["dead_drops"] as? [[String: Any]])?.first)
        #expect(Set(first.keys) == ["id", "created_at", "data", "signature"])
        let drops = try DeadDropList.parse(json)
        let keys = VerifiedKeys.verify(node.keyBundle(), anchor: node.trustAnchor, fetchedAt: Date(), now: Date())
        #expect(drops.allSatisfy { $0.isSigned(byAnyOf: keys.deadDropSigningKeys) && $0.data.count == 10 * 553 })
        #expect(try DeadDropList.parse(await node.fetchDeadDrops(idsGreaterThan: drops.last!.id)).isEmpty)
    }
}

@Suite("Stores made before CoverDrop's formats")
struct CoverDropUpgradeTests {
    @Test("dead drops cached in the old format are dropped and fetched again; the vault and its mailbox open as before")
    func oldDeadDrops() async throws {
        let folder = temporaryFolder()
        let (store, _) = try await makeStore(folder)
        let passphrase = try await store.createVault()
        try await store.unlock(passphrase: passphrase)
        try await store.send("kept", to: "alice")
        try await store.close()
        // The old layout: user_version 0, a dead drop with a millisecond time.
        let url = folder.appendingPathComponent("deniable/dead-drops.sqlite")
        let queue = try DatabaseQueue(path: url.path)
        try await queue.write { db in
            try db.execute(sql: "PRAGMA user_version = 0")
            try db.execute(
                sql: "INSERT INTO dead_drops(id, created_at, data, signature) VALUES (99, 1700000000000, ?, ?)",
                arguments: [Data(count: 553), Data(count: 64)])
        }
        try queue.close()
        let (reopened, _) = try await makeStore(folder)
        #expect(try await reopened.status().deadDrops == 0)
        try await reopened.unlock(passphrase: passphrase)
        #expect(try await reopened.mailbox().map(\.text) == ["kept"])
    }

    @Test("a public-key cache in the old format is replaced by a fresh fetch")
    func oldKeyCache() async throws {
        let folder = temporaryFolder()
        _ = try await makeStore(folder)
        let cache = folder.appendingPathComponent("deniable/public-keys.json")
        try Data(#"{"bundle":{"keys":[]},"fetchedAt":1700000000}"#.utf8).write(to: cache)
        let (store, _) = try await makeStore(folder)
        let report = try #require(try await store.status().lastStart)
        #expect(report.replaced.contains("public-keys.json") && report.publicKeysRefreshed)
        #expect(await store.verifiedKeys()?.wrappingKeys.count == 2)
    }
}

@Suite("Deniable storage under concurrent calls (review findings)")
struct DeniableConcurrencyTests {
    @Test("a message sent while a second unlock waits for its key stays in the mailbox")
    func sendDuringUnlock() async throws {
        let folder = temporaryFolder()
        let element = HeldSecureElement(folder: folder)
        let (store, _) = try await makeStore(folder, secureElement: element)
        let passphrase = try await store.createVault()
        try await store.unlock(passphrase: passphrase)
        // The second unlock is held in its key derivation (after Argon2id) while the send runs.
        element.arm()
        let again = Task { try await store.unlock(passphrase: passphrase) }
        try await eventually("the second unlock waits for its key") { element.holding }
        try await store.send("sent meanwhile", to: "alice")
        element.releaseHeld()
        try await again.value
        #expect(try await store.mailbox().map(\.text).contains("sent meanwhile"))
        try await store.lock()
        try await store.unlock(passphrase: passphrase)
        #expect(try await store.mailbox().map(\.text).contains("sent meanwhile"))
    }

    @Test("a dead drop replayed under another id is a duplicate, not a second copy of its messages")
    func replayedDeadDrop() async throws {
        let clock = TestClock()
        let (store, node) = try await makeStore(temporaryFolder(), clock: clock)
        let drop = try node.deadDrop(id: 1, createdAt: clock.now, replies: [], to: X25519KeyPair.generate().publicKey, covers: 2)
        let replay = DeadDrop(id: 9_999, createdAtSeconds: drop.createdAtSeconds, data: drop.data, signature: drop.signature)
        #expect(try await store.receive(deadDrops: [drop]).kept == 1)
        let second = try await store.receive(deadDrops: [replay])
        #expect(second.kept == 0 && second.duplicates == 1)
        #expect(try await store.newestDeadDropID() == 1)
    }
}
