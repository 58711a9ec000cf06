// A process that sets a setting with Settings.set (`coffer settings set --deferred`) and is killed
// before it closes: the worker thread committed the value within the window, so the kill loses
// nothing set before the window. Proved from outside: the value is read from the file by this
// process while the child is still paused before its close, then the child is killed with SIGKILL.

import CofferTestSupport
import Foundation
import GRDB
import Testing

@Suite("Settings.set killed before close")
struct DeferredSettingsKillTests {
    @Test("the window's commit reaches the disk without flush or close; a kill -9 after it loses nothing")
    func killedAfterWindow() async throws {
        let store = FileManager.default.temporaryDirectory.appendingPathComponent("coffer-set-kill-\(UUID().uuidString)")
        #expect(try await CLI.run(["settings", "set", "tilesPerRow", "3"], store: store).status == 0)
        let child = try CLI.start(
            ["settings", "set", "tilesPerRow", "7", "--deferred"], store: store,
            env: ["COFFER_TEST_PAUSE_AT": "settings-set-pending", "COFFER_TEST_PAUSE_MS": "600000"])
        defer { child.kill() }
        let file = store.appendingPathComponent("app.sqlite").path
        let stored = { @Sendable () throws -> Int? in
            var config = Configuration()
            config.readonly = true
            config.busyMode = .timeout(5)
            let queue = try DatabaseQueue(path: file, configuration: config)
            defer { try? queue.close() }
            return try queue.read { db in try Int.fetchOne(db, sql: "SELECT value FROM coffer_settings WHERE name = 'tilesPerRow'") }
        }
        try await eventually("the deferred commit, seen from outside") { try stored() == 7 || !child.isRunning }
        // The child is still paused before its close: the commit was the worker thread's.
        #expect(child.isRunning, "the child ended before the value was seen: the commit may have been its close")
        #expect(try stored() == 7)
        #expect(try await child.killAndWait().wasSignalled)
        let read = try await CLI.run(["settings", "get", "tilesPerRow"], store: store)
        #expect(read.status == 0 && read.stdout.contains("7"), "\(read.stdout) \(read.stderr)")
    }
}
