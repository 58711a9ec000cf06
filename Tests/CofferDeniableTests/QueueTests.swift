import CofferCrypto
import CofferDevelopment
import Foundation
import Testing

@testable import CofferDeniable

@Suite("Private sending queue")
struct QueueTests {
    func makeQueue(_ folder: URL, slots: Int = 8) throws -> SendingQueue {
        try SendingQueue(
            url: folder.appendingPathComponent("queue"), slots: slots, itemBytes: 128,
            storageKey: storageKey(folder)
        ) {
            SecureRandom.bytes(128)
        }
    }

    func item(_ n: Int) -> Data {
        var d = Data(repeating: UInt8(truncatingIfNeeded: n), count: 128)
        d[0] = 0xAA
        d[1] = UInt8(truncatingIfNeeded: n >> 8)
        return d
    }

    @Test("random enqueue, dequeue and reopen sequences keep every queue invariant")
    func randomSequences() throws {
        var rng = SystemRandomNumberGenerator()
        for round in 0..<20 {
            let folder = temporaryFolder("psq\(round)")
            let secret = SecretKey.random(byteCount: 16)
            var queue = try makeQueue(folder)
            var model = [Data]() // real items waiting, in order
            var sent = [Data]()
            var enqueued = [Data]()
            var next = 0
            for _ in 0..<150 {
                switch Int.random(in: 0..<10, using: &rng) {
                case 0..<5:
                    if model.count == 8 {
                        #expect(throws: DeniableError.queueFull) { try queue.enqueue(item(next), secret: secret) }
                    } else {
                        try queue.enqueue(item(next), secret: secret)
                        model.append(item(next))
                        enqueued.append(item(next))
                    }
                    next += 1
                case 5..<8:
                    let head = try queue.dequeue()
                    if let first = model.first {
                        #expect(head == first)
                        sent.append(model.removeFirst())
                    }
                default:
                    // "Lock and unlock": the queue is reopened from its file.
                    queue = try makeQueue(folder)
                }
                #expect(queue.fillLevel(secret: secret) == model.count)
                let size = try FileManager.default.attributesOfItem(atPath: folder.appendingPathComponent("queue").path)[.size] as? Int
                #expect(size == SendingQueue.fileLength(slots: 8, itemBytes: 128))
            }
            // Every real item ever enqueued was sent in order or still waits: none was lost.
            #expect(sent + model == enqueued)
        }
    }

    @Test("a send that fails leaves the head in place")
    func failedSendKeepsHead() async throws {
        let folder = temporaryFolder()
        let secret = SecretKey.random(byteCount: 16)
        let queue = try makeQueue(folder)
        try queue.enqueue(item(1), secret: secret)
        struct Offline: Error {}
        await #expect(throws: Offline.self) { try await queue.sendHead { _ in throw Offline() } }
        #expect(queue.peek() == item(1))
        #expect(queue.fillLevel(secret: secret) == 1)
    }

    @Test("a message enqueued while the head is being sent is not removed in its place")
    func enqueueDuringSend() async throws {
        let folder = temporaryFolder()
        let secret = SecretKey.random(byteCount: 16)
        let queue = try makeQueue(folder)
        let cover = queue.peek()
        var sentItem: Data?
        try await queue.sendHead { head in
            sentItem = head
            try queue.enqueue(item(7), secret: secret)
        }
        #expect(sentItem == cover)
        #expect(queue.peek() == item(7))
        #expect(queue.fillLevel(secret: secret) == 1)
    }

    @Test("another secret sees no real messages")
    func otherSecretSeesNothing() throws {
        let queue = try makeQueue(temporaryFolder())
        try queue.enqueue(item(1), secret: SecretKey.random(byteCount: 16))
        #expect(queue.fillLevel(secret: SecretKey.random(byteCount: 16)) == 0)
    }
}

@Suite("Deniable store sequences")
struct StoreSequenceTests {
    @Test("random sends, background sends, locks and unlocks keep every invariant and lose no message")
    func randomStoreSequences() async throws {
        let folder = temporaryFolder()
        let (store, node) = try await makeStore(folder)
        let passphrase = try await store.createVault()
        let vaultURL = folder.appendingPathComponent("deniable/vault")
        let queueURL = folder.appendingPathComponent("deniable/sending-queue")
        let vaultLength = try Data(contentsOf: vaultURL).count
        let queueLength = try Data(contentsOf: queueURL).count
        var waiting = [String]()
        var delivered = [String]()
        var next = 0
        var unlocked = false
        for _ in 0..<120 {
            switch Int.random(in: 0..<10) {
            case 0..<4:
                if !unlocked {
                    await #expect(throws: DeniableError.locked) { try await store.send("x", to: "journalist") }
                } else if waiting.count == 8 {
                    await #expect(throws: DeniableError.queueFull) { try await store.send("x", to: "journalist") }
                } else {
                    try await store.send("m\(next)", to: "journalist")
                    waiting.append("m\(next)")
                    next += 1
                }
            case 4..<7:
                let item = try await store.dequeue()
                if let text = node.read(queueItem: item)?.text {
                    delivered.append(text)
                    #expect(text == waiting.first)
                    waiting.removeFirst()
                } else {
                    #expect(waiting.isEmpty)
                }
            case 7:
                try await store.lock()
                unlocked = false
            default:
                try await store.unlock(passphrase: passphrase)
                unlocked = true
            }
            if unlocked { #expect(try await store.queuedMessageCount() == waiting.count) }
            #expect(try Data(contentsOf: vaultURL).count == vaultLength)
            #expect(try Data(contentsOf: queueURL).count == queueLength)
        }
        #expect(delivered + waiting == (0..<next).map { "m\($0)" })
    }
}

@Suite("Mailbox, dead drops, keys and session")
struct SessionTests {
    @Test("mailbox messages are removed at lock once older than 7 days, not before")
    func mailboxExpiry() async throws {
        let clock = TestClock()
        let (store, _) = try await makeStore(temporaryFolder(), clock: clock)
        let passphrase = try await store.createVault()
        try await store.unlock(passphrase: passphrase)
        try await store.send("old", to: "journalist")
        clock.advance(6 * 86_400)
        try await store.send("new", to: "journalist")
        try await store.lock()
        try await store.unlock(passphrase: passphrase)
        #expect(try await store.mailbox().map(\.text) == ["old", "new"])
        clock.advance(1.5 * 86_400)
        // Still shown while unlocked; expiry happens at lock.
        #expect(try await store.mailbox().count == 2)
        try await store.lock()
        try await store.unlock(passphrase: passphrase)
        #expect(try await store.mailbox().map(\.text) == ["new"])
    }

    @Test("dead-drop messages addressed to the user move into the mailbox at unlock")
    func deadDropsToMailbox() async throws {
        let clock = TestClock()
        let (store, node) = try await makeStore(temporaryFolder(), clock: clock)
        let passphrase = try await store.createVault()
        try await store.unlock(passphrase: passphrase)
        let userKey = try await store.userPublicKey()
        // CoverDrop looks for replies only from journalists the user has a conversation with.
        try await store.send("hello", to: "journalist")
        try await store.lock()
        let mine = try node.deadDrop(id: 1, createdAt: clock.now, replies: [("journalist", "reply one")], to: userKey, covers: 5)
        let other = try node.deadDrop(
            id: 2, createdAt: clock.now, replies: [("journalist", "not yours")],
            to: X25519KeyPair.generate().publicKey, covers: 5)
        let merge = try await store.receive(deadDrops: [mine, other])
        #expect(merge.kept == 2)
        try await store.unlock(passphrase: passphrase)
        let received = try await store.mailbox().filter { $0.direction == .received }
        #expect(received.map(\.text) == ["reply one"])
        #expect(received.first?.deadDropID == 1)
    }

    @Test("dead drops are merged by id; one no verified key signs is stored unverified, a malformed one refused")
    func deadDropMerge() async throws {
        let clock = TestClock()
        let (store, node) = try await makeStore(temporaryFolder(), clock: clock)
        let key = X25519KeyPair.generate().publicKey
        let drop = try node.deadDrop(id: 5, createdAt: clock.now, replies: [], to: key, covers: 2)
        let forged = DeadDrop(id: 6, createdAtSeconds: drop.createdAtSeconds + 1, data: drop.data, signature: SecureRandom.bytes(64))
        let malformed = DeadDrop(id: 7, createdAtSeconds: drop.createdAtSeconds, data: Data(count: 100), signature: SecureRandom.bytes(64))
        let first = try await store.receive(deadDrops: [drop, forged, malformed])
        let second = try await store.receive(deadDrops: [drop])
        #expect(first == DeadDropMerge(kept: 1, unverified: 1, duplicates: 0, rejected: 1, trimmed: 0))
        #expect(second == DeadDropMerge(kept: 0, duplicates: 1, rejected: 0, trimmed: 0))
    }

    @Test("dead drops are kept 7 days counted back from the newest one")
    func deadDropRetention() async throws {
        let clock = TestClock()
        let (store, node) = try await makeStore(temporaryFolder(), clock: clock)
        let key = X25519KeyPair.generate().publicKey
        let t = clock.now
        let drops = try [0.0, 2, 6.5, 8].enumerated().map { i, days in
            try node.deadDrop(id: Int64(i + 1), createdAt: t.addingTimeInterval(-(8 - days) * 86_400), replies: [], to: key, covers: 1)
        }
        let merge = try await store.receive(deadDrops: drops)
        #expect(merge.trimmed == 1)
        #expect(try await store.status().deadDrops == 3)
    }

    @Test("a dead drop dated more than 7 days ahead is refused")
    func futureDeadDrop() async throws {
        let clock = TestClock()
        let (store, node) = try await makeStore(temporaryFolder(), clock: clock)
        let drop = try node.deadDrop(
            id: 1, createdAt: clock.now.addingTimeInterval(8 * 86_400), replies: [],
            to: X25519KeyPair.generate().publicKey, covers: 1)
        #expect(try await store.receive(deadDrops: [drop]).rejected == 1)
    }

    @Test("public keys are fetched again at start only when older than 24 hours")
    func keyRefresh() async throws {
        let folder = temporaryFolder()
        let clock = TestClock()
        _ = try await makeStore(folder, clock: clock)
        let cache = folder.appendingPathComponent("deniable/public-keys.json")
        let first = try Data(contentsOf: cache)
        clock.advance(23 * 3600)
        _ = try await makeStore(folder, clock: clock)
        #expect(try Data(contentsOf: cache) == first)
        clock.advance(2 * 3600)
        let (store, _) = try await makeStore(folder, clock: clock)
        #expect(try Data(contentsOf: cache) != first)
        #expect(await store.verifiedKeys()?.fetchedAt == clock.now)
    }

    @Test("keys with a bad certificate or past their expiry are not used, nor anything below them")
    func keyVerification() throws {
        let folder = temporaryFolder()
        let node = try DevelopmentCoverNode(folder: folder)
        let now = Date()
        var bundle = node.keyBundle()
        let good = VerifiedKeys.verify(bundle, anchor: node.trustAnchor, fetchedAt: now, now: now)
        #expect(good.wrappingKeys.count == 2 && good.deadDropSigningKeys.count == 2 && good.rejected == 0)
        #expect(good.journalistMessagingKeys.keys.sorted() == DevelopmentCoverNode.defaultJournalists)
        // A CoverNode messaging key swapped under its certificate is dropped.
        var family = bundle.keys[0].covernodes[0].covernodes["covernode_001"]![0]
        let msg = family.msgPKs[0]
        family.msgPKs[0] = SignedPublicKey(
            key: X25519KeyPair.generate().publicKey, certificate: msg.certificate, notValidAfterSeconds: msg.notValidAfterSeconds)
        bundle.keys[0].covernodes[0].covernodes["covernode_001"] = [family]
        let tampered = VerifiedKeys.verify(bundle, anchor: node.trustAnchor, fetchedAt: now, now: now)
        #expect(tampered.rejected == 1 && tampered.wrappingKeys.count == 1)
        // A bundle whose organisation key is not the anchor yields nothing.
        let stranger = TrustAnchor(publicKey: Ed25519KeyPair.generate().publicKey, notValidAfter: now.addingTimeInterval(86_400))
        #expect(VerifiedKeys.verify(node.keyBundle(), anchor: stranger, fetchedAt: now, now: now).count == 0)
        let expired = VerifiedKeys.verify(
            node.keyBundle(notValidAfter: now.addingTimeInterval(-1)), anchor: node.trustAnchor, fetchedAt: now, now: now)
        #expect(expired.count == 0 && expired.rejected == 1)
    }

    @Test("going to the background ends the session")
    func backgroundLocks() async throws {
        let (store, _) = try await makeStore(temporaryFolder())
        try await store.unlock(passphrase: try await store.createVault())
        try await store.didEnterBackground()
        #expect(await store.isUnlocked == false)
        await #expect(throws: DeniableError.locked) { _ = try await store.mailbox() }
    }

    @Test("with CoverDrop's five-minute grace, a short trip to the background keeps the session")
    func backgroundGrace() async throws {
        let clock = TestClock()
        var c = testConfiguration()
        c.backgroundGrace = DeniableConfiguration.coverDropCurrent.backgroundGrace
        let (store, _) = try await makeStore(temporaryFolder(), configuration: c, clock: clock)
        try await store.unlock(passphrase: try await store.createVault())
        try await store.didEnterBackground()
        clock.advance(60)
        try await store.willEnterForeground()
        #expect(await store.isUnlocked)
        try await store.didEnterBackground()
        clock.advance(301)
        try await store.willEnterForeground()
        #expect(await store.isUnlocked == false)
    }

    @Test("leaving the private views ends the session")
    func leavingLocks() async throws {
        let (store, _) = try await makeStore(temporaryFolder())
        try await store.unlock(passphrase: try await store.createVault())
        try await store.didLeavePrivateViews()
        #expect(await store.isUnlocked == false)
    }

    @Test("a session with a lifetime ends when it is reached")
    func sessionExpiry() async throws {
        let clock = TestClock()
        var c = testConfiguration()
        c.sessionLifetime = 3 * 3600
        let (store, _) = try await makeStore(temporaryFolder(), configuration: c, clock: clock)
        try await store.unlock(passphrase: try await store.createVault())
        clock.advance(3 * 3600 - 1)
        #expect(await store.isUnlocked)
        clock.advance(1)
        #expect(await store.isUnlocked == false)
    }

    @Test("a sent message is readable by the CoverNode and leaves the queue in order")
    func sendAndDequeue() async throws {
        let (store, node) = try await makeStore(temporaryFolder())
        try await store.unlock(passphrase: try await store.createVault())
        try await store.send("first", to: "alice")
        try await store.send("second", to: "bob")
        #expect(try await store.queuedMessageCount() == 2)
        let a = try await store.dequeue()
        let b = try await store.dequeue()
        let c = try await store.dequeue()
        #expect(node.read(queueItem: a)?.text == "first")
        #expect(node.read(queueItem: b)?.recipient == "bob")
        #expect(node.read(queueItem: c) == nil)
        #expect(try await store.queuedMessageCount() == 0)
    }
}
