// data(for:orLoad:) honours cancellation: a cancelled caller returns at once, and a run nobody
// waits for any more is cancelled and caches nothing.

import CofferSync
import CofferTestSupport
import Foundation
import Testing

@testable import CofferMediaCache

/// Something a loader can wait on until the test opens it.
actor Gate {
    private var waiters: [CheckedContinuation<Void, Never>] = []
    private var isOpen = false
    func wait() async {
        if isOpen { return }
        await withCheckedContinuation { waiters.append($0) }
    }
    func open() {
        isOpen = true
        waiters.forEach { $0.resume() }
        waiters = []
    }
}

/// What the loader saw.
actor LoaderLog {
    var started = 0
    var sawCancellation = false
    func start() { started += 1 }
    func cancelled() { sawCancellation = true }
}

@Suite("Media cache: loader cancellation")
struct LoaderCancellationTests {
    /// A loader that starts, then sleeps until cancelled (or 30 s), then returns bytes anyway.
    static func stubbornLoader(_ log: LoaderLog) -> @Sendable () async throws -> Data {
        {
            await log.start()
            do { try await Task.sleep(for: .seconds(30)) } catch { await log.cancelled() }
            return Data([9, 9, 9])
        }
    }

    static func waitUntilStarted(_ log: LoaderLog) async throws {
        try await eventually("the loader started") { await log.started > 0 }
    }

    /// Waits until `count` callers wait for the run in flight for `key` (a caller joins it
    /// before it suspends).
    static func waitUntilJoined(_ count: Int, _ cache: MediaCache, _ key: MediaKey) async throws {
        try await eventually("\(count) callers joined the run for \(key)") {
            (cache.state.withLock { $0.inFlight[key] }?.fields.withLock { $0.active } ?? 0) >= count
        }
    }

    /// The task running the loader for `key`, taken while it is in flight.
    static func runningTask(_ cache: MediaCache, _ key: MediaKey) throws -> Task<Void, Never> {
        try #require(cache.state.withLock { $0.inFlight[key] }?.fields.withLock { $0.task }, "no run in flight for \(key)")
    }

    @Test("a cancelled caller gets CancellationError while the loader is still running")
    func cancelledCallerReturns() async throws {
        let cache = try MediaCache(folder: cacheFolder())
        let log = LoaderLog()
        let caller = Task { try await cache.data(for: .thumbnail("a"), orLoad: Self.stubbornLoader(log)) }
        try await Self.waitUntilStarted(log)
        caller.cancel()
        await #expect(throws: CancellationError.self) { _ = try await caller.value }
    }

    @Test("when every caller has cancelled, the loader's task is cancelled and nothing is cached")
    func abandonedRunCachesNothing() async throws {
        let cache = try MediaCache(folder: cacheFolder())
        let log = LoaderLog()
        let first = Task { try await cache.data(for: .thumbnail("a"), orLoad: Self.stubbornLoader(log)) }
        try await Self.waitUntilStarted(log)
        let second = Task { try await cache.data(for: .thumbnail("a"), orLoad: Self.stubbornLoader(log)) }
        try await Self.waitUntilJoined(2, cache, .thumbnail("a"))
        let run = try Self.runningTask(cache, .thumbnail("a"))
        first.cancel()
        second.cancel()
        _ = try? await first.value
        _ = try? await second.value
        // The abandoned run ends (its loader saw the cancellation and returned bytes anyway); it
        // must not have stored them.
        try await finished(run, "the abandoned run")
        #expect(await log.sawCancellation)
        #expect(await log.started == 1)
        await #expect(cache.data(for: .thumbnail("a")) == nil)
        // A later call loads afresh.
        let fresh = try await cache.data(for: .thumbnail("a")) { Data([1]) }
        #expect(fresh == Data([1]))
    }

    @Test("one caller cancelling does not stop the run for another, which gets the bytes, cached")
    func otherWaiterStillServed() async throws {
        let cache = try MediaCache(folder: cacheFolder())
        let gate = Gate()
        let log = LoaderLog()
        let loader: @Sendable () async throws -> Data = {
            await log.start()
            await gate.wait()
            return Data([7])
        }
        let leaving = Task { try await cache.data(for: .thumbnail("b"), orLoad: loader) }
        try await Self.waitUntilStarted(log)
        let staying = Task { try await cache.data(for: .thumbnail("b"), orLoad: loader) }
        try await Self.waitUntilJoined(2, cache, .thumbnail("b"))
        leaving.cancel()
        await #expect(throws: CancellationError.self) { _ = try await leaving.value }
        await gate.open()
        #expect(try await staying.value == Data([7]))
        #expect(await log.started == 1)
        await #expect(cache.data(for: .thumbnail("b")) == Data([7]))
    }

    @Test("a caller already cancelled gets CancellationError without starting the loader")
    func alreadyCancelled() async throws {
        let cache = try MediaCache(folder: cacheFolder())
        let log = LoaderLog()
        let caller = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await cache.data(for: .thumbnail("c"), orLoad: Self.stubbornLoader(log))
        }
        await #expect(throws: CancellationError.self) { _ = try await caller.value }
        #expect(await log.started == 0)
    }
}
