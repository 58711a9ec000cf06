// The background sender's schedule, driven by a clock and a random source the tests control.

import CofferCrypto
import CofferDevelopment
import Foundation
import Testing

@testable import CofferDeniable

@Suite("Background sender")
struct BackgroundSendTests {
    /// A store whose transport is the development service behind a switch, on CoverDrop's cadences.
    func makeSender(clock: TestClock, random: @escaping @Sendable () -> Double = { 0.5 }) async throws -> (
        DeniableStorage, SwitchableTransport, URL
    ) {
        let folder = temporaryFolder()
        let configuration = testConfiguration(base: .init())
        let node = try DevelopmentCoverNode(
            folder: folder.appendingPathComponent("dev-service"), configuration: configuration, clock: clock.function)
        let transport = SwitchableTransport(node)
        let (store, _) = try await makeStore(
            folder, configuration: configuration, clock: clock, transport: transport, random: random)
        return (store, transport, folder)
    }

    func schedule(_ folder: URL) throws -> BackgroundSchedule {
        try JSONDecoder().decode(
            BackgroundSchedule.self, from: Data(contentsOf: folder.appendingPathComponent("deniable/background-schedule.json")))
    }

    @Test("a run sends the two head items in order and replaces them with covers")
    func twoPerRun() async throws {
        let clock = TestClock()
        let (store, transport, _) = try await makeSender(clock: clock)
        try await store.unlock(passphrase: try await store.createVault())
        for text in ["one", "two", "three"] { try await store.send(text, to: "alice") }
        let report = try await store.runBackgroundSend()
        #expect(report.sent == 2 && !report.failed && !report.rateLimited)
        #expect(try transport.node.delivered().map(\.text) == ["one", "two"])
        #expect(try await store.queuedMessageCount() == 1)
    }

    @Test("runs are at least 60 minutes apart: a run sooner sends nothing, one after sends again")
    func rateLimited() async throws {
        let clock = TestClock()
        let (store, transport, _) = try await makeSender(clock: clock)
        _ = try await store.runBackgroundSend()
        clock.advance(59 * 60)
        let early = try await store.runBackgroundSend()
        #expect(early.sent == 0 && early.rateLimited)
        #expect(early.nextRunAfter >= clock.now.addingTimeInterval(60))
        clock.advance(60)
        #expect(try await store.runBackgroundSend().sent == 2)
        #expect(transport.sent == 4)
    }

    @Test("after a failed run the retry is not held back by an earlier success's interval")
    func retryAfterSuccess() async throws {
        let clock = TestClock()
        let (store, transport, _) = try await makeSender(clock: clock)
        _ = try await store.runBackgroundSend()
        clock.advance(3_600)
        transport.failing = true
        let failed = try await store.runBackgroundSend()
        #expect(failed.failed && failed.nextRunAfter == clock.now.addingTimeInterval(416))
        transport.failing = false
        clock.advance(420)
        #expect(try await store.runBackgroundSend().sent == 2)
    }

    @Test("a clock that went back before the last run does not block the next run")
    func clockWentBack() async throws {
        let clock = TestClock()
        let (store, _, _) = try await makeSender(clock: clock)
        _ = try await store.runBackgroundSend()
        clock.advance(-3_600)
        #expect(try await store.runBackgroundSend().sent == 2)
    }

    @Test("a failed send keeps its item at the head, and the retry does not wait for the interval")
    func failureKeepsItems() async throws {
        let clock = TestClock()
        let (store, transport, _) = try await makeSender(clock: clock)
        try await store.unlock(passphrase: try await store.createVault())
        try await store.send("kept", to: "alice")
        transport.failing = true
        let failed = try await store.runBackgroundSend()
        #expect(failed.failed && failed.sent == 0)
        #expect(try await store.queuedMessageCount() == 1)
        // The retry comes after the random delay alone (u = 0.5: 600·ln 2 ≈ 416 s), not the hour.
        #expect(failed.nextRunAfter == clock.now.addingTimeInterval(416))
        transport.failing = false
        clock.advance(420)
        let retry = try await store.runBackgroundSend()
        #expect(retry.sent == 2 && !retry.rateLimited)
        #expect(try transport.node.delivered().map(\.text) == ["kept"])
    }

    @Test("two runs at once on one folder (two processes' stores) send one run's two items between them, not four")
    func concurrentRunsSendOnce() async throws {
        let clock = TestClock()
        let (first, transport, folder) = try await makeSender(clock: clock)
        try await first.unlock(passphrase: try await first.createVault())
        for text in ["one", "two", "three"] { try await first.send(text, to: "alice") }
        let slow = SlowTransport(transport)
        let (second, _) = try await makeStore(
            folder, configuration: testConfiguration(base: .init()), clock: clock, transport: slow)
        let (third, _) = try await makeStore(
            folder, configuration: testConfiguration(base: .init()), clock: clock, transport: slow)
        async let a = second.runBackgroundSend()
        async let b = third.runBackgroundSend()
        let reports = try await [a, b]
        #expect(reports.map(\.sent).reduce(0, +) == 2, "\(reports)")
        #expect(reports.filter(\.rateLimited).count == 1, "\(reports)")
        #expect(try transport.node.delivered().map(\.text) == ["one", "two"])
    }

    @Test("the random delay is exponential with a 10-minute mean, clamped to 5–120 minutes")
    func delayDistribution() {
        func sample(_ u: Double) -> TimeInterval { BackgroundDelay.sample(mean: 600, minimum: 300, maximum: 7_200, uniform: u) }
        #expect(sample(0) == 300)
        #expect(sample(1 - exp(-2)) == 1_200)
        #expect(sample(0.999_999_9) == 7_200)
        // Over many secure draws: within the bounds, and the mean the clamp gives (it lifts the
        // draws under 5 minutes: 300 + 600·e^(-1/2) ≈ 664 s).
        let draws = (0..<20_000).map { _ in sample(BackgroundDelay.secureUniform()) }
        #expect(draws.allSatisfy { (300...7_200).contains($0) })
        let mean = draws.reduce(0, +) / Double(draws.count)
        #expect(abs(mean - 664) < 40, "mean \(mean)")
    }

    @Test("the first start owes a failsafe run 10 minutes plus the random delay later")
    func failsafeAtStart() async throws {
        let clock = TestClock()
        let (_, _, folder) = try await makeSender(clock: clock, random: { 0 })
        let state = try schedule(folder)
        #expect(state.pending == 1)
        #expect(state.next == clock.now.addingTimeInterval(600 + 300))
    }

    @Test("a run owed at going to the background that the system skipped happens at the next start")
    func catchUpAtStart() async throws {
        let clock = TestClock()
        let (store, transport, folder) = try await makeSender(clock: clock)
        let due = try await store.didEnterBackground()
        #expect(due == clock.now.addingTimeInterval(416))
        // Not due yet: a start does not send.
        clock.advance(400)
        let configuration = testConfiguration(base: .init())
        let (early, _) = try await makeStore(folder, configuration: configuration, clock: clock, transport: transport)
        #expect(try await early.status().lastStart?.backgroundRun == nil)
        clock.advance(20)
        let (late, _) = try await makeStore(folder, configuration: configuration, clock: clock, transport: transport)
        #expect(try await late.status().lastStart?.backgroundRun?.sent == 2)
        #expect(transport.sent == 2)
        // The successful run owes the next one after the hour and a random delay.
        #expect(try schedule(folder).next == clock.now.addingTimeInterval(3_600 + 416))
    }

    @Test("a due run is caught up on return to the foreground")
    func catchUpOnForeground() async throws {
        let clock = TestClock()
        let (store, transport, _) = try await makeSender(clock: clock)
        try await store.didEnterBackground()
        clock.advance(30 * 60)
        try await store.willEnterForeground()
        #expect(transport.sent == 2)
    }

    @Test("without a transport a run is refused with a clear error")
    func noTransport() async throws {
        let (store, _) = try await makeStore(temporaryFolder())
        await #expect(throws: DeniableError.invalidInput("no transport is configured for background sending")) {
            try await store.runBackgroundSend()
        }
    }
}

@Suite("Covers only to verified keys")
struct VerifiedCoverTests {
    @Test("a first start fills the queue with covers to the verified CoverNode keys once they arrive")
    func firstStartCovers() async throws {
        let (store, node) = try await makeStore(temporaryFolder())
        for _ in 0..<8 {
            let item = try await store.dequeue()
            #expect(node.opens(queueItem: item))
        }
    }

    @Test("without verified keys no cover is sent; when keys first arrive the queue is refilled for them")
    func noCoverToThrowawayKey() async throws {
        let folder = temporaryFolder()
        let clock = TestClock()
        let node = try DevelopmentCoverNode(folder: folder.appendingPathComponent("service"), clock: clock.function)
        let transport = SwitchableTransport(node)
        let source = SwitchingKeySource(node.keyBundle())
        let store = try await DeniableStorage(
            folder: folder.appendingPathComponent("deniable"), configuration: testConfiguration(),
            trustAnchor: node.trustAnchor, transport: transport, clock: clock.function)
        let report = try await store.runBackgroundSend()
        #expect(report.sent == 0 && report.failed)
        #expect(transport.sent == 0)
        // Keys arrive (a later start with a key source): the covers are made again, for them.
        let keyed = try await DeniableStorage(
            folder: folder.appendingPathComponent("deniable"), configuration: testConfiguration(),
            trustAnchor: node.trustAnchor, keySource: source, transport: transport, clock: clock.function)
        for _ in 0..<8 { #expect(node.opens(queueItem: try await keyed.dequeue())) }
        #expect(try await keyed.runBackgroundSend().sent == 2)
    }

    @Test("a queue made without keys in a store that already had one is not wiped (an upgrade keeps its messages)")
    func existingQueueKept() async throws {
        let folder = temporaryFolder()
        let (store, _) = try await makeStore(folder)
        let passphrase = try await store.createVault()
        try await store.unlock(passphrase: passphrase)
        try await store.send("waiting", to: "alice")
        try await store.lock()
        // An older install had no schedule file: it starts without one.
        try FileManager.default.removeItem(at: folder.appendingPathComponent("deniable/background-schedule.json"))
        let (again, node) = try await makeStore(folder)
        #expect(node.read(queueItem: try await again.dequeue())?.text == "waiting")
    }
}

/// A transport that takes 300 ms a send, so that runs started together overlap.
struct SlowTransport: DeniableTransport {
    let inner: DeniableTransport
    init(_ inner: DeniableTransport) { self.inner = inner }
    func send(_ item: Data) async throws {
        try await Task.sleep(for: .milliseconds(300))
        try await inner.send(item)
    }
}
