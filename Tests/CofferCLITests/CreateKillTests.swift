// A wallet create killed after it made the (still empty) file and before SQLite wrote a page: the
// kill is proven to land there by the child being paused at that point with a 0-byte file. The
// leftover is no wallet (an open says so, exit 1), and the next create makes the wallet in it.

import CofferTestSupport
import Foundation
import Testing

@Suite("Wallet create under kill -9")
struct CreateKillTests {
    /// `wallet create` (of `profile`, when given) started, paused after it made the empty file, and killed there.
    func killedCreate(profile: String?) async throws -> URL {
        let store = TemporaryFolders.path("coffer-create-kill")
        let profileArguments = profile.map { ["--profile", $0] } ?? []
        let child = try CLI.start(
            ["--raw-key-env", "COFFER_TEST_KEY", "wallet", "create"] + profileArguments, store: store,
            env: ["COFFER_TEST_KEY": CLI.key, "COFFER_TEST_PAUSE_AT": "wallet-file-made", "COFFER_TEST_PAUSE_MS": "600000"])
        try await child.waitForStderr(containing: "test-pause: wallet-file-made")
        let file = store.appendingPathComponent("wallet.sqlite")
        // The kill lands mid-create: the child is paused with the file made and empty.
        #expect(child.isRunning)
        #expect((try FileManager.default.attributesOfItem(atPath: file.path)[.size] as? Int) == 0)
        #expect(try await child.killAndWait().wasSignalled)
        #expect((try FileManager.default.attributesOfItem(atPath: file.path)[.size] as? Int) == 0)
        return store
    }

    @Test("killed with the wallet file made and empty: open says there is no wallet (exit 1), and the next create makes it")
    func killedWithEmptyFile() async throws {
        let store = try await killedCreate(profile: nil)
        let count = try await CLI.wallet(["count", "t"], store: store)
        #expect(count.status == 1 && count.stderr.contains("no wallet at"), "\(count.stderr)")
        let create = try await CLI.wallet(["create"], store: store)
        #expect(create.status == 0, "\(create.stderr)")
        #expect(try await CLI.wallet(["add", "t", "r1", "v"], store: store).status == 0)
        let get = try await CLI.wallet(["get", "t", "r1"], store: store)
        #expect(get.status == 0 && get.stdout.contains(#""value":"v""#), "\(get.stderr)")
    }

    @Test("a named profile's create killed the same way: the next create of that profile makes the store and the profile")
    func killedProfileCreate() async throws {
        let store = try await killedCreate(profile: "bob")
        let create = try await CLI.wallet(["create", "--profile", "bob"], store: store)
        #expect(create.status == 0, "\(create.stderr)")
        let profiles = try await CLI.run(["wallet", "profiles"], store: store)
        #expect(profiles.status == 0 && profiles.stdout.contains("bob"), "\(profiles.stderr)")
    }

    @Test("after such a kill, sdk init makes the SDK's wallet in place of the empty file (it said the key was lost and advised a reset)")
    func sdkInitAfterKilledCreate() async throws {
        let store = try await killedCreate(profile: nil)
        let first = try await CLI.run(["sdk", "init"], store: store)
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.stdout.contains(#""created":true"#), "\(first.stdout)")
        let again = try await CLI.run(["sdk", "init"], store: store)
        #expect(again.status == 0 && again.stdout.contains(#""created":false"#), "\(again.stdout) \(again.stderr)")
    }
}
