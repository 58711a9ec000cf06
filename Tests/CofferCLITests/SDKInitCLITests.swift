// `coffer sdk init` from outside: the zero-configuration wallet under real processes — several
// initialising one store at once, and a process killed between saving the wallet's key and
// making the wallet (or while building it). Each kill is proven to land at that moment by a debug
// build's test pause (COFFER_TEST_PAUSE_AT, see CofferSync.TestPause): the test waits until the
// child reports it is there and checks the files before killing it.

import CofferSecureStorage
import CofferTestSupport
import CofferWallet
import Foundation
import Testing

@Suite("coffer sdk init: one wallet, one key, whatever runs or dies")
struct SDKInitCLITests {
    static let keyItem = "coffer.sdk.wallet-key"

    static func secure(_ store: URL) -> EncryptedFileSecureStorage {
        EncryptedFileSecureStorage(folder: store.appendingPathComponent("secure", isDirectory: true))
    }

    /// The `sdk` object of `coffer sdk init`'s output.
    static func output(_ text: String) throws -> [String: Any] {
        let object = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]
        return try #require(object?["sdk"] as? [String: Any], "not the sdk init output: \(text)")
    }

    static func newFolder() -> URL {
        TemporaryFolders.path("coffer-sdk")
    }

    /// Starts `coffer sdk init` paused at `point` and waits until it says so. The pause lasts up
    /// to 10 minutes: the test kills the child, and between the pause and the kill the test
    /// awaits, which in the parallel suite can take a minute before a cooperative thread is free
    /// (a 60 s pause ran out there and let the child finish before the kill).
    static func pausedInit(_ store: URL, at point: String) async throws -> ChildProcess {
        let child = try CLI.start(["sdk", "init"], store: store, env: ["COFFER_TEST_PAUSE_AT": point, "COFFER_TEST_PAUSE_MS": "600000"])
        try await [child].waitForStderr(containingOrEnded: "test-pause: \(point)")
        return child
    }

    @Test("sdk init prints the wallet, created, the agent's verkey and the master secret; a second run opens it; the key is never printed")
    func initTwice() async throws {
        let store = Self.newFolder()
        let first = try await CLI.run(["sdk", "init"], store: store)
        #expect(first.status == 0, "\(first.stderr)")
        let a = try Self.output(first.stdout)
        #expect(a["created"] as? Bool == true && a["masterSecret"] as? Bool == true)
        #expect(a["wallet"] as? String == store.appendingPathComponent("wallet.sqlite").path)
        let second = try await CLI.run(["sdk", "init"], store: store)
        let b = try Self.output(second.stdout)
        #expect(b["created"] as? Bool == false && b["agentVerkey"] as? String == a["agentVerkey"] as? String)
        let key = try #require(try Self.secure(store).loadBlocking(Self.keyItem))
        for text in [first.stdout, first.stderr, second.stdout, second.stderr] {
            #expect(!text.contains(key.base64EncodedString()) && !text.contains(key.map { String(format: "%02x", $0) }.joined()))
        }
        // The secure commands refuse the key's item: never printed, replaced or removed by hand.
        let get = try await CLI.run(["secure", "get", Self.keyItem, "--base64"], store: store)
        #expect(get.status == 2 && get.stdout.isEmpty && get.stderr.contains("never print"))
        #expect(try await CLI.run(["secure", "delete", Self.keyItem], store: store).status == 2)
        #expect(try Self.secure(store).loadBlocking(Self.keyItem) == key)
    }

    @Test("coffer reset removes the wallet and its key: the next sdk init makes new ones")
    func resetThenInit() async throws {
        let store = Self.newFolder()
        let first = try Self.output(try await CLI.run(["sdk", "init"], store: store).stdout)
        #expect(try await CLI.run(["reset", "--yes"], store: store).status == 0)
        #expect(!FileManager.default.fileExists(atPath: store.appendingPathComponent("wallet.sqlite").path))
        #expect(try Self.secure(store).loadBlocking(Self.keyItem) == nil)
        let again = try Self.output(try await CLI.run(["sdk", "init"], store: store).stdout)
        #expect(again["created"] as? Bool == true && again["agentVerkey"] as? String != first["agentVerkey"] as? String)
    }

    @Test(
        "a reset from another process while sdk init is between its key and its wallet waits for it: the next sdk init gets a usable wallet"
    )
    func resetDuringInit() async throws {
        let store = Self.newFolder()
        // Paused for 3 s after saving the key; the reset starts while it is paused there.
        let child = try CLI.start(
            ["sdk", "init"], store: store, env: ["COFFER_TEST_PAUSE_AT": "sdk-key-saved", "COFFER_TEST_PAUSE_MS": "3000"])
        // Acted on from a thread of its own: the pause lasts 3 s, which an awaiting task resumed
        // by a busy cooperative pool can miss.
        let (paused, running, reset) = try await onOwnThread { () throws -> (Bool, Bool, ProcessResult) in
            try [child].waitForStderrBlocking(containingOrEnded: "test-pause: sdk-key-saved")
            let paused = child.stderrSoFar.contains("test-pause: sdk-key-saved")
            let running = child.isRunning
            return (paused, running, try runProcessBlocking(cofferBinary, ["--store", store.path, "reset", "--yes"]))
        }
        #expect(paused, "the pause was not reached")
        #expect(running, "sdk init finished before the reset started")
        #expect(reset.status == 0, "\(reset.stderr)")
        let result = try await child.wait()
        #expect(result.status == 0, "\(result.stderr)")
        // The reset ran after that init finished: nothing of it is left, and the next init makes a usable wallet.
        #expect(!FileManager.default.fileExists(atPath: store.appendingPathComponent("wallet.sqlite").path))
        let again = try await CLI.run(["sdk", "init"], store: store)
        #expect(again.status == 0, "\(again.stderr)")
        let third = try await CLI.run(["sdk", "init"], store: store)
        #expect(third.status == 0, "\(third.stderr)")
        #expect(try Self.output(third.stdout)["created"] as? Bool == false)
    }

    @Test("killed after saving the key and before making the wallet: the next run makes the wallet with that key")
    func killedBetweenKeyAndWallet() async throws {
        let store = Self.newFolder()
        let child = try await Self.pausedInit(store, at: "sdk-key-saved")
        // The kill lands mid-operation: the child is paused there, the key is saved, no wallet yet.
        #expect(child.isRunning)
        let key = try #require(try await Self.secure(store).load(Self.keyItem), "the key was not saved before the pause")
        #expect(!FileManager.default.fileExists(atPath: store.appendingPathComponent("wallet.sqlite").path))
        #expect(try await child.killAndWait().wasSignalled)
        let next = try await CLI.run(["sdk", "init"], store: store)
        #expect(next.status == 0, "\(next.stderr)")
        #expect(try Self.output(next.stdout)["created"] as? Bool == true)
        #expect(try await Self.secure(store).load(Self.keyItem) == key)
        let wallet = try await awaitWallet(store, key: key)
        #expect(wallet.master && wallet.keys == 1)
    }

    @Test("killed while building the provisioned wallet: no wallet is left half-made, and the next run makes it")
    func killedWhileBuilding() async throws {
        let store = Self.newFolder()
        let child = try await Self.pausedInit(store, at: "provisioned-building")
        #expect(child.isRunning)
        #expect(FileManager.default.fileExists(atPath: store.appendingPathComponent(".wallet.sqlite.restoring").path))
        #expect(!FileManager.default.fileExists(atPath: store.appendingPathComponent("wallet.sqlite").path))
        #expect(try await child.killAndWait().wasSignalled)
        let next = try await CLI.run(["sdk", "init"], store: store)
        #expect(next.status == 0, "\(next.stderr)")
        #expect(try Self.output(next.stdout)["created"] as? Bool == true)
        #expect(!FileManager.default.fileExists(atPath: store.appendingPathComponent(".wallet.sqlite.restoring").path))
        let key = try #require(try await Self.secure(store).load(Self.keyItem))
        let wallet = try await awaitWallet(store, key: key)
        #expect(wallet.master && wallet.keys == 1)
    }

    @Test("three processes initialising one new store at once make one wallet and one key")
    func threeAtOnce() async throws {
        let store = Self.newFolder()
        let gate = Self.newFolder().appendingPathExtension("go")
        let children = try (0..<3).map { _ in
            try CLI.start(
                ["sdk", "init"], store: store, env: ["COFFER_TEST_PAUSE_AT": "sdk-starting", "COFFER_TEST_PAUSE_FILE": gate.path])
        }
        try await children.waitForStderr(containingOrEnded: "test-pause: sdk-starting")
        // All three have opened the store and wait at the SDK's lock together.
        #expect(children.allSatisfy { $0.isRunning && $0.stderrSoFar.contains("test-pause") })
        _ = FileManager.default.createFile(atPath: gate.path, contents: nil)
        let results = try await children.wait()
        #expect(results.allSatisfy { $0.status == 0 }, "\(results.map(\.stderr))")
        let outputs = try results.map { try Self.output($0.stdout) }
        #expect(outputs.filter { $0["created"] as? Bool == true }.count == 1)
        #expect(Set(outputs.compactMap { $0["agentVerkey"] as? String }).count == 1)
        let key = try #require(try await Self.secure(store).load(Self.keyItem))
        #expect(try await awaitWallet(store, key: key).keys == 1)
    }

    /// Opens the store's wallet with `key`: whether it has the master secret, and how many keys it holds.
    func awaitWallet(_ store: URL, key: Data) async throws -> (master: Bool, keys: Int) {
        let wallet = try await Wallet.open(at: store.appendingPathComponent("wallet.sqlite"), key: .raw(key))
        defer { try? wallet.close() }
        return (try await wallet.hasMasterSecret(), try await wallet.listKeys().count)
    }
}
