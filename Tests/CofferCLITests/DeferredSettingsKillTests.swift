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

    @Test("a deferred commit that fails (a full disk) is the command's error: exit 6 naming the setting, not exit 0")
    func failedCommitReported() async throws {
        let store = TemporaryFolders.path("coffer-set-full")
        #expect(try await CLI.run(["settings", "set", "tilesPerRow", "3"], store: store).status == 0)
        // The file-size limit (in 512-byte blocks, with SIGXFSZ ignored so a write past it fails
        // with EFBIG) leaves room for the 32 KiB -shm but not for the WAL frames of a 60 kB value.
        let value = String(repeating: "x", count: 60_000)
        let result = try await runProcess(
            URL(fileURLWithPath: "/bin/sh"),
            [
                "-c", #"trap "" XFSZ; ulimit -f 64; exec "$0" "$@""#, CLI.binary.path, "--store", store.path,
                "settings", "set", "--kind", "string", "note", value, "--deferred",
            ])
        #expect(result.status == 6, "\(result.status) \(result.stdout.prefix(80)) \(result.stderr)")
        #expect(result.stderr.contains("\"note\"") && result.stderr.contains("not saved"), "\(result.stderr)")
        #expect(result.stdout.isEmpty)
        // Nothing was lost that had been committed, and the store opens as before.
        let read = try await CLI.run(["settings", "get", "tilesPerRow"], store: store)
        #expect(read.status == 0 && read.stdout.contains("3"), "\(read.stderr)")
        #expect(try await CLI.run(["settings", "get", "note"], store: store).status == 1)
    }
}
