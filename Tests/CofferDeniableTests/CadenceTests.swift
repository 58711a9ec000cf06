// CoverDrop's cadences (the defaults) against the seed's (a named configuration), and the
// start routine's smaller promises.

import CofferCrypto
import CofferDevelopment
import Foundation
import Testing

@testable import CofferDeniable

@Suite("CoverDrop's cadences")
struct CadenceTests {
    let coverDrop = testConfiguration(base: .init())

    @Test("the defaults are CoverDrop's values and .seed keeps the seed's")
    func namedConfigurations() {
        let d = DeniableConfiguration()
        #expect(d.mailboxRetention == 14 * 86_400 && d.deadDropRetention == 14 * 86_400)
        #expect(d.publicKeyMaxAge == 3_600 && d.deadDropFetchInterval == 3_600 && d.backgroundGrace == 300)
        #expect(d.backgroundItemsPerRun == 2 && d.backgroundMinInterval == 3_600)
        #expect(d.backgroundDelayMean == 600 && d.backgroundDelayMinimum == 300 && d.backgroundDelayMaximum == 7_200)
        #expect(DeniableConfiguration.coverDropCurrent == d)
        let s = DeniableConfiguration.seed
        #expect(s.mailboxRetention == 7 * 86_400 && s.deadDropRetention == 7 * 86_400)
        #expect(s.publicKeyMaxAge == 86_400 && s.deadDropFetchInterval == 0 && s.backgroundGrace == 0)
    }

    @Test("by default a mailbox message is kept 14 days: an 8-day-old reply survives the lock")
    func mailbox14Days() async throws {
        let clock = TestClock()
        let (store, _) = try await makeStore(temporaryFolder(), configuration: coverDrop, clock: clock)
        let passphrase = try await store.createVault()
        try await store.unlock(passphrase: passphrase)
        try await store.send("old", to: "journalist")
        clock.advance(8 * 86_400)
        try await store.lock()
        try await store.unlock(passphrase: passphrase)
        #expect(try await store.mailbox().map(\.text) == ["old"])
        clock.advance(6.5 * 86_400)
        try await store.lock()
        try await store.unlock(passphrase: passphrase)
        #expect(try await store.mailbox().isEmpty)
    }

    @Test("by default dead drops are kept 14 days back from the newest")
    func deadDrops14Days() async throws {
        let clock = TestClock()
        let (store, node) = try await makeStore(temporaryFolder(), configuration: coverDrop, clock: clock)
        let key = X25519KeyPair.generate().publicKey
        let drops = try [0.0, 5, 13].enumerated().map { i, ageDays in
            try node.deadDrop(
                id: Int64(i + 1), createdAt: clock.now.addingTimeInterval(-ageDays * 86_400), replies: [], to: key, covers: 1)
        }
        let older = try node.deadDrop(id: 4, createdAt: clock.now.addingTimeInterval(-15 * 86_400), replies: [], to: key, covers: 1)
        let merge = try await store.receive(deadDrops: drops + [older])
        #expect(merge.trimmed == 1)
        #expect(try await store.status().deadDrops == 3)
    }

    @Test("by default public keys are fetched again after an hour, not before")
    func keys1Hour() async throws {
        let folder = temporaryFolder()
        let clock = TestClock()
        _ = try await makeStore(folder, configuration: coverDrop, clock: clock)
        clock.advance(59 * 60)
        let (early, _) = try await makeStore(folder, configuration: coverDrop, clock: clock)
        #expect(try await early.status().lastStart?.publicKeysRefreshed == false)
        clock.advance(60)
        let (late, _) = try await makeStore(folder, configuration: coverDrop, clock: clock)
        #expect(try await late.status().lastStart?.publicKeysRefreshed == true)
    }

    @Test("by default dead drops are fetched at most hourly at start, and on return to the foreground")
    func deadDropsHourly() async throws {
        let folder = temporaryFolder()
        let clock = TestClock()
        let (first, node) = try await makeStore(folder, configuration: coverDrop, clock: clock, deadDrops: true)
        #expect(try await first.status().deadDrops == 1)
        // Ten minutes on the service publishes a reply at once; a start then does not fetch it.
        clock.advance(10 * 60)
        try node.publishReplies([("alice", "hi")], to: X25519KeyPair.generate().publicKey)
        let (second, _) = try await makeStore(folder, configuration: coverDrop, clock: clock, deadDrops: true)
        #expect(try await second.status().lastStart?.deadDropsReceived == 0)
        try await second.willEnterForeground()
        #expect(try await second.status().deadDrops == 1)
        // An hour after the last fetch, the return to the foreground fetches.
        clock.advance(50 * 60)
        try await second.willEnterForeground()
        #expect(try await second.status().deadDrops == 2)
    }

    @Test("a dead drop fetched while a session is open waits for the next unlock (no trial decryption at start)")
    func noTrialDecryptionAtStart() async throws {
        let folder = temporaryFolder()
        let clock = TestClock()
        let (store, node) = try await makeStore(folder, clock: clock, deadDrops: true)
        let passphrase = try await store.createVault()
        try await store.unlock(passphrase: passphrase)
        try await store.send("hello", to: "journalist")
        try node.publishReplies([("journalist", "reply")], to: try await store.userPublicKey())
        let report = try await store.appDidStart()
        #expect(report.deadDropsReceived == 1)
        #expect(try await store.mailbox().filter { $0.direction == .received }.isEmpty)
        try await store.lock()
        try await store.unlock(passphrase: passphrase)
        #expect(try await store.mailbox().filter { $0.direction == .received }.map(\.text) == ["reply"])
    }

    @Test("refreshing the public keys keeps the start's modification time on the cache")
    func refreshPinsMtime() async throws {
        let folder = temporaryFolder()
        let (store, _) = try await makeStore(folder)
        let deniable = folder.appendingPathComponent("deniable")
        func mtime(_ name: String) throws -> Date? {
            try FileManager.default.attributesOfItem(atPath: deniable.appendingPathComponent(name).path)[.modificationDate] as? Date
        }
        let started = try mtime("vault")
        // An unpinned write would carry the wall-clock time of the write (nanoseconds apart).
        try await store.refreshPublicKeys()
        #expect(try mtime("public-keys.json") == started)
    }
}

@Suite("Passphrase length")
struct PassphraseLengthTests {
    @Test("a new vault's passphrase has CoverDrop's 5 words by default (no hardware secure element), the seed's 3 in .seed")
    func words() async throws {
        let (store, _) = try await makeStore(temporaryFolder(), configuration: testConfiguration(base: .init()))
        #expect(try await store.createVault().split(separator: " ").count == 5)
        let (seed, _) = try await makeStore(temporaryFolder(), configuration: testConfiguration(base: .seed))
        #expect(try await seed.createVault().split(separator: " ").count == 3)
    }
}
