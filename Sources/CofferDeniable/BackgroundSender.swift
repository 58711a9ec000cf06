// The background sender: CoverDrop's schedule for sending the sending queue's head items, so
// that what leaves the device (real messages and covers alike) follows one cadence for every
// install, used or not.

import CofferCrypto
import CofferSync
import Foundation
import Logging

/// Delivers one item of the sending queue to the service (CoverDrop's
/// `POST /v1/user/messages`); network access is the app's business. An app implements it over
/// its HTTP client; the development service (`DevelopmentCoverNode`, in the package's development
/// target, not in a library product) implements it for the command line and the tests.
public protocol DeniableTransport: Sendable {
    /// Sends one 773-byte queue item. Throwing leaves the item at the head of the queue, to be
    /// sent again at the next run.
    func send(_ item: Data) async throws
}

/// What one background run (``DeniableStorage/runBackgroundSend()``) did.
public struct BackgroundSendReport: Sendable, Equatable {
    /// A report (for tests and apps that build their own).
    public init(sent: Int, rateLimited: Bool, failed: Bool, nextRunAfter: Date) {
        self.sent = sent
        self.rateLimited = rateLimited
        self.failed = failed
        self.nextRunAfter = nextRunAfter
    }

    /// Items sent and removed from the queue (real messages and covers are not told apart).
    public var sent: Int
    /// Whether the run was skipped because the last successful run was less than
    /// ``DeniableConfiguration/backgroundMinInterval`` ago.
    public var rateLimited: Bool
    /// Whether a send failed (the item stays at the head; the next run retries without waiting
    /// for the minimum interval).
    public var failed: Bool
    /// The earliest time the next run should happen: the app asks the system to run its
    /// background task then (`BGAppRefreshTaskRequest.earliestBeginDate`, a WorkManager delay).
    public var nextRunAfter: Date
}

/// The background sender's persisted state (`background-schedule.json`, 0600): the same three
/// fields in every install, changed by the schedule alone, never by use of the vault.
struct BackgroundSchedule: Codable, Equatable {
    /// Unix seconds of the last run whose sends all succeeded; 0 for none.
    var lastRunAt: Int64 = 0
    /// Unix seconds before which the pending run should not happen.
    var nextRunAfter: Int64 = 0
    /// 1 when a run is owed (scheduled and not yet done); a start or a return to the foreground
    /// after ``nextRunAfter`` runs it, as the system may never have. A number rather than a
    /// boolean so the file's length does not depend on it.
    var pending: Int = 0
    /// 1 when the last run had a failed send: the retry is not held back by the interval.
    var failed: Int = 0
    /// 0 while the sending queue holds covers made before any verified CoverNode key (a first
    /// start before the first key fetch): no CoverNode could open them, so they are not sent,
    /// and the queue is filled again with covers to the verified keys when those first arrive.
    var coversVerified: Int = 1
    /// Unix seconds of the last successful dead-drop fetch; 0 for none (fetches are rate-limited
    /// to ``DeniableConfiguration/deadDropFetchInterval``).
    var deadDropsFetchedAt: Int64 = 0

    static let fileName = "background-schedule.json"

    var lastRun: Date? { lastRunAt == 0 ? nil : Date(timeIntervalSince1970: Double(lastRunAt)) }
    var next: Date { Date(timeIntervalSince1970: Double(nextRunAfter)) }

    /// Reads the state; a missing or unreadable file gives a fresh state (rewritten by the caller).
    static func load(_ url: URL) -> BackgroundSchedule? {
        guard let data = try? AtomicFile.read(url) else { return nil }
        return try? JSONDecoder().decode(BackgroundSchedule.self, from: data)
    }

    func save(_ url: URL) throws(DeniableError) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let data: Data
        do { data = try encoder.encode(self) } catch {
            throw .storage("encoding the background schedule failed: \(error)", cause: StorageCause(error))
        }
        try AtomicFile.write(data, to: url, permissions: 0o600)
    }

    /// Whether a run now would be refused by the minimum interval. A clock that went backwards
    /// (now before the last run) allows a run, as CoverDrop's does.
    func isRateLimited(now: Date, minInterval: TimeInterval) -> Bool {
        guard failed == 0, let last = lastRun, now >= last else { return false }
        return now.timeIntervalSince(last) < minInterval
    }

    /// Owes a run no earlier than `extra` plus a random delay from now, and (unless the last run
    /// failed) not before the minimum interval after the last successful run.
    mutating func schedule(now: Date, extra: TimeInterval, delay: TimeInterval, minInterval: TimeInterval) {
        var at = now.addingTimeInterval(extra + delay)
        if failed == 0, let last = lastRun, now >= last { at = max(at, last.addingTimeInterval(minInterval)) }
        nextRunAfter = Int64(saturating: at.timeIntervalSince1970, rounding: .up)
        pending = 1
    }
}

/// CoverDrop's random delay before a background run: exponentially distributed with the given
/// mean, clamped to `minimum…maximum` seconds.
public enum BackgroundDelay {
    /// The delay, in whole seconds, for `uniform`, a number in 0..<1 (inverse transform sampling).
    public static func sample(mean: TimeInterval, minimum: TimeInterval, maximum: TimeInterval, uniform: Double) -> TimeInterval {
        let u = min(max(uniform, 0), 1 - 1e-12)
        let value = -mean * log(1 - u)
        return min(max(value, minimum), maximum).rounded()
    }

    /// A uniform number in 0..<1 from the system's secure random source.
    @Sendable public static func secureUniform() -> Double {
        let bytes = SecureRandom.bytes(8)
        let bits = bytes.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        return Double(bits >> 11) / Double(UInt64(1) << 53)
    }
}

extension DeniableStorage {
    var scheduleURL: URL { folder.appendingPathComponent(BackgroundSchedule.fileName) }

    func randomDelay() -> TimeInterval {
        BackgroundDelay.sample(
            mean: configuration.backgroundDelayMean, minimum: configuration.backgroundDelayMinimum,
            maximum: configuration.backgroundDelayMaximum, uniform: random())
    }

    /// Folder lock held. When the queue holds covers made without verified keys and verified
    /// keys are known now, fills it again with fresh covers to them. No real item can be in such
    /// a queue: sending needs verified keys, and they arrive under the same lock as this refill.
    func refillCoversIfNeeded() throws(DeniableError) {
        var state = loadSchedule()
        guard state.coversVerified == 0, !coverKey.current.isEmpty else { return }
        queue.reload()
        try queue.wipe()
        state.coversVerified = 1
        try state.save(scheduleURL)
        logger.debug("filled the sending queue with covers to the verified keys")
    }

    /// Folder lock held. The stored schedule, or a fresh one when missing or unreadable.
    func loadSchedule() -> BackgroundSchedule { BackgroundSchedule.load(scheduleURL) ?? BackgroundSchedule() }

    /// Owes a background run after a random delay (CoverDrop's 5–120 minutes, mean 10) and
    /// returns its earliest time, for the app to schedule its background task (iOS:
    /// `BGAppRefreshTaskRequest` with this `earliestBeginDate`; Android: a WorkManager request
    /// with this initial delay). ``didEnterBackground()`` calls it; the app-start routine owes a
    /// failsafe run ``DeniableConfiguration/backgroundStartExtraDelay`` later when none is owed.
    /// The state is written alike in every install.
    @discardableResult
    public func scheduleBackgroundSend() throws(DeniableError) -> Date {
        defer { settle() }
        return try scheduleLocked(extra: 0)
    }

    func scheduleLocked(extra: TimeInterval) throws(DeniableError) -> Date {
        let now = clock()
        let delay = randomDelay()
        return try exclusive { () throws(DeniableError) -> Date in
            var state = loadSchedule()
            state.schedule(now: now, extra: extra, delay: delay, minInterval: configuration.backgroundMinInterval)
            try state.save(scheduleURL)
            return state.next
        }
    }

    /// The background task: sends up to ``DeniableConfiguration/backgroundItemsPerRun`` items
    /// from the head of the sending queue through the transport, each replaced by a fresh cover
    /// once sent, unless the last successful run was less than
    /// ``DeniableConfiguration/backgroundMinInterval`` ago. A failed send keeps its item at the
    /// head and ends the run; the next run (after a random delay, without waiting for the
    /// interval) sends it again. Every run owes the next one and returns when it is due. Needs no
    /// passphrase; what it does depends on the schedule alone, never on what the queue holds.
    /// - Throws: ``DeniableError/invalidInput(_:)`` when no transport is configured; storage
    ///   errors of the queue or the schedule file. A transport's error is reported, not thrown.
    @discardableResult
    public func runBackgroundSend() async throws(DeniableError) -> BackgroundSendReport {
        guard let transport else { throw .invalidInput("no transport is configured for background sending") }
        defer { settle() }
        let now = clock()
        let minInterval = configuration.backgroundMinInterval
        // The run is claimed under the lock, in the same step as the interval's check: its time
        // is written as the last run's, so a run in another process checking meanwhile is
        // rate-limited (two at once would both send). A run that fails gives the claim back.
        // A run killed part-way keeps its claim: the next waits the interval, never less.
        let lastRunBefore = try exclusive { () throws(DeniableError) -> Int64? in
            var state = loadSchedule()
            guard !state.isRateLimited(now: now, minInterval: minInterval) else { return nil }
            let before = state.lastRunAt
            state.lastRunAt = Int64(now.timeIntervalSince1970.rounded(.down))
            state.failed = 0
            try state.save(scheduleURL)
            return before
        }
        guard let lastRunBefore else {
            let delay = randomDelay()
            let next = try exclusive { () throws(DeniableError) -> Date in
                var state = loadSchedule()
                state.schedule(now: now, extra: 0, delay: delay, minInterval: minInterval)
                try state.save(scheduleURL)
                return state.next
            }
            logger.debug("background run skipped: the last one was too recent")
            return BackgroundSendReport(sent: 0, rateLimited: true, failed: false, nextRunAfter: next)
        }
        var sent = 0
        // Covers made before any verified key would go to a throwaway key: send nothing yet.
        var failed = try exclusive { () throws(DeniableError) -> Bool in
            try refillCoversIfNeeded()
            return loadSchedule().coversVerified == 0
        }
        if failed { logger.debug("background run: no verified CoverNode key yet; nothing sent") }
        for _ in 0..<(failed ? 0 : configuration.backgroundItemsPerRun) {
            let head = try exclusive { () throws(DeniableError) -> Data in
                queue.reload()
                return queue.peek()
            }
            do { try await transport.send(head) } catch {
                logger.debug("a background send failed; its item stays at the head")
                failed = true
                break
            }
            // Exactly that item leaves (wherever sends meanwhile, in any process, moved it).
            try exclusive { () throws(DeniableError) in
                queue.reload()
                try queue.withdraw(head)
            }
            sent += 1
        }
        let delay = randomDelay()
        let next = try exclusive { () throws(DeniableError) -> Date in
            var state = loadSchedule()
            // The claim stays only for a run whose sends all succeeded.
            if failed { state.lastRunAt = lastRunBefore }
            state.failed = failed ? 1 : 0
            // After a success the next run waits the interval and a random delay; after a
            // failure only the random delay (the retry is not rate-limited).
            state.schedule(now: now, extra: failed ? 0 : minInterval, delay: delay, minInterval: minInterval)
            try state.save(scheduleURL)
            return state.next
        }
        return BackgroundSendReport(sent: sent, rateLimited: false, failed: failed, nextRunAfter: next)
    }

    /// At a start or a return to the foreground: runs the owed background run when it is due
    /// (the system may have skipped it), and owes one when none is (a failsafe `extra` later).
    /// Returns the run's report, nil when none was due.
    func catchUpBackgroundSend(failsafeExtra extra: TimeInterval?) async throws(DeniableError) -> BackgroundSendReport? {
        let now = clock()
        let state = try exclusive { () throws(DeniableError) -> BackgroundSchedule in
            let state = loadSchedule()
            // Written at every start, used or not, so the file exists alike everywhere.
            if BackgroundSchedule.load(scheduleURL) == nil { try state.save(scheduleURL) }
            return state
        }
        if state.pending == 1, now >= state.next, transport != nil {
            return try await runBackgroundSend()
        }
        if state.pending == 0, let extra { _ = try scheduleLocked(extra: extra) }
        return nil
    }
}
