// `PostgresWallet.withConnection`: a view whose calls run on one held connection (one server
// session), each committed on its own, one at a time, and refused once the body has returned.

#if PostgreSQL
import CofferSync
import CofferTestSupport
import Foundation
import PostgresNIO
import Testing

@testable import CofferWallet

extension PostgresWalletTests {
    /// The server process serving the connection `wallet`'s next call runs on.
    static func backendPID(_ wallet: PostgresWallet) async throws -> Int32 {
        try await wallet.store.withConnection { connection in
            let rows = try await connection.query("SELECT pg_backend_pid()", logger: PostgresStore.logger)
            for try await pid in rows.decode(Int32.self) { return pid }
            return -1
        }
    }

    @Test("a withConnection view's calls all run in one server session and take no lease from the pool")
    func heldViewOneSession() async throws {
        let wallet = try await PostgresWallet.create(settings: try PostgresTesting.settings("held"), key: PostgresTesting.key)
        defer { wallet.close() }
        let (pids, leases) = try await wallet.withConnection { view in
            var pids = Set<Int32>()
            let granted = wallet.store.gauge.granted
            for i in 0..<20 {
                try await view.add(type: "h", id: "r\(i)", value: "v")
                _ = try await view.fetch(type: "h", id: "r\(i)")
                pids.insert(try await Self.backendPID(view))
            }
            return (pids, wallet.store.gauge.granted - granted)
        }
        #expect(pids.count == 1)
        #expect(leases == 0, "the view's calls leased \(leases) connections from the pool")
        #expect(try await wallet.count(type: "h") == 20)
    }

    @Test("each call of a withConnection view commits on its own: another wallet sees it before the body returns")
    func heldViewCommitsEachCall() async throws {
        let settings = try PostgresTesting.settings("held")
        let wallet = try await PostgresWallet.create(settings: settings, key: PostgresTesting.key)
        defer { wallet.close() }
        let other = try await PostgresWallet.open(settings: settings, key: PostgresTesting.key)
        defer { other.close() }
        let seen = try await wallet.withConnection { view in
            try await view.add(type: "h", id: "a", value: "v")
            return try await other.fetch(type: "h", id: "a")?.value
        }
        #expect(seen == "v")
    }

    @Test("what a withConnection body throws reaches the caller unchanged, and the calls made before it stay committed")
    func heldViewThrowKeepsWrites() async throws {
        struct Stop: Error, Equatable {}
        let wallet = try await PostgresWallet.create(settings: try PostgresTesting.settings("held"), key: PostgresTesting.key)
        defer { wallet.close() }
        await #expect(throws: Stop()) {
            try await wallet.withConnection { view in
                try await view.add(type: "h", id: "kept", value: "v")
                throw Stop()
            }
        }
        #expect(try await wallet.fetch(type: "h", id: "kept")?.value == "v")
    }

    @Test("concurrent calls on one withConnection view wait for each other and all succeed")
    func heldViewConcurrentCalls() async throws {
        let wallet = try await PostgresWallet.create(settings: try PostgresTesting.settings("held"), key: PostgresTesting.key)
        defer { wallet.close() }
        try await wallet.withConnection { view in
            try await withThrowingTaskGroup(of: Void.self) { group in
                for i in 0..<32 {
                    group.addTask {
                        try await view.add(type: "h", id: "c\(i)", value: "v", tags: ["n": .string("\(i % 4)")])
                        _ = try await view.search(type: "h", query: WalletQuery(json: #"{"n": "\#(i % 4)"}"#), limit: 100)
                    }
                }
                try await group.waitForAll()
            }
        }
        #expect(try await wallet.count(type: "h") == 32)
    }

    @Test("a withConnection view used after its body returned throws WalletError.closed")
    func heldViewRefusedAfterBody() async throws {
        let wallet = try await PostgresWallet.create(settings: try PostgresTesting.settings("held"), key: PostgresTesting.key)
        defer { wallet.close() }
        let escaped = try await wallet.withConnection { $0 }
        await #expect(throws: WalletError.closed) { try await escaped.add(type: "h", id: "late", value: "v") }
        #expect(try await wallet.fetch(type: "h", id: "late") == nil)
        try await wallet.add(type: "h", id: "after", value: "v")
    }

    @Test("a transaction on a withConnection view commits together; a call on the outer view inside it is refused, not a hang")
    func heldViewTransaction() async throws {
        let wallet = try await PostgresWallet.create(settings: try PostgresTesting.settings("held"), key: PostgresTesting.key)
        defer { wallet.close() }
        let refused = try await wallet.withConnection { view -> Bool in
            try await view.transaction { txn -> Bool in
                try await txn.add(type: "h", id: "t1", value: "v")
                try await txn.add(type: "h", id: "t2", value: "v")
                do {
                    _ = try await view.fetch(type: "h", id: "t1")
                    return false
                } catch WalletError.invalidInput(let message) {
                    return message.contains("transaction's view")
                }
            }
        }
        #expect(refused)
        #expect(try await PostgresTesting.all(wallet, type: "h").sorted() == ["t1", "t2"])
    }

    @Test("rekey and observe on a withConnection view are refused, naming the wallet as the place for them")
    func heldViewRefusesRekeyAndObserve() async throws {
        let wallet = try await PostgresWallet.create(settings: try PostgresTesting.settings("held"), key: PostgresTesting.key)
        defer { wallet.close() }
        try await wallet.withConnection { view in
            await #expect {
                try await view.rekey(to: PostgresTesting.otherKey, configuration: .init())
            } throws: { error in
                guard case WalletError.invalidInput(let message) = error else { return false }
                return message.contains("withConnection")
            }
            await #expect {
                for try await _ in view.observe(type: "h") {}
            } throws: { error in
                guard case WalletError.invalidInput(let message) = error else { return false }
                return message.contains("withConnection")
            }
        }
        // The wallet still opens with its first key.
        #expect(try await wallet.count(type: "h") == 0)
    }

    @Test("a rotation by the wallet while a withConnection view is held: the view reads and writes under the new key")
    func heldViewSeesRotation() async throws {
        let wallet = try await PostgresWallet.create(settings: try PostgresTesting.settings("held"), key: PostgresTesting.key)
        defer { wallet.close() }
        try await wallet.add(type: "h", id: "before", value: "v")
        let got = try await wallet.withConnection { view in
            try await wallet.rekey(to: PostgresTesting.key, rotatingKey: true, configuration: .init())
            try await view.add(type: "h", id: "after", value: "w")
            return try await view.fetch(type: "h", id: "before")?.value
        }
        #expect(got == "v")
        #expect(try await wallet.fetch(type: "h", id: "after")?.value == "w")
    }

    @Test("a call on a withConnection view whose task is cancelled while it waits for its turn writes nothing")
    func heldViewCancelledWaiter() async throws {
        let wallet = try await PostgresWallet.create(settings: try PostgresTesting.settings("held"), key: PostgresTesting.key)
        defer { wallet.close() }
        let released = Locked(false)
        let inside = Locked(false)
        let outcome = try await wallet.withConnection { view -> String in
            let holder = Task {
                try await view.transaction { txn in
                    try await txn.add(type: "h", id: "t", value: "v")
                    inside.withLock { $0 = true }
                    try await eventually("the test lets the transaction go") { released.withLock { $0 } }
                }
            }
            try await eventually("the transaction holds the view's connection") { inside.withLock { $0 } }
            let waiter = Task { try await view.add(type: "h", id: "cancelled", value: "v") }
            try await Task.sleep(for: .milliseconds(200))
            waiter.cancel()
            released.withLock { $0 = true }
            try await holder.value
            do {
                try await waiter.value
                return "written"
            } catch let error as WalletError {
                guard case .storage(_, let cause) = error, cause?.posix == .ECANCELED else { return "\(error)" }
                return "cancelled"
            }
        }
        #expect(outcome == "cancelled")
        #expect(try await wallet.fetch(type: "h", id: "cancelled") == nil)
        #expect(try await wallet.fetch(type: "h", id: "t")?.value == "v")
    }

    @Test("inside a transaction of a second view nested in the first view's transaction, a call on the first view is refused, not a hang")
    func heldViewNestedRefused() async throws {
        let wallet = try await PostgresWallet.create(settings: try PostgresTesting.settings("held"), key: PostgresTesting.key)
        defer { wallet.close() }
        let refused = try await wallet.withConnection { a -> Bool in
            try await wallet.withConnection { b -> Bool in
                try await a.transaction { _ -> Bool in
                    try await b.transaction { _ -> Bool in
                        do {
                            _ = try await a.fetch(type: "h", id: "x")
                            return false
                        } catch WalletError.invalidInput {
                            return true
                        }
                    }
                }
            }
        }
        #expect(refused)
    }

    @Test("a task started inside a view's transaction may use the view once the transaction has ended")
    func heldViewTaskAfterTransaction() async throws {
        let wallet = try await PostgresWallet.create(settings: try PostgresTesting.settings("held"), key: PostgresTesting.key)
        defer { wallet.close() }
        try await wallet.withConnection { view in
            let later = Locked<Task<Void, any Error>?>(nil)
            let go = Locked(false)
            try await view.transaction { txn in
                try await txn.add(type: "h", id: "in", value: "v")
                later.withLock {
                    $0 = Task {
                        try await eventually("the transaction ended") { go.withLock { $0 } }
                        try await view.add(type: "h", id: "later", value: "v")
                    }
                }
            }
            go.withLock { $0 = true }
            try await later.withLock { $0 }!.value
        }
        #expect(try await PostgresTesting.all(wallet, type: "h").sorted() == ["in", "later"])
    }

    @Test("a withConnection view and a transaction's view keep the wallet's configuration (its bound on open searches)")
    func viewsKeepConfiguration() async throws {
        var configuration = Wallet.Configuration()
        configuration.maxOpenSearches = 1
        let wallet = try await PostgresWallet.create(
            settings: try PostgresTesting.settings("held"), key: PostgresTesting.key, configuration: configuration)
        defer { wallet.close() }
        try await wallet.add(type: "h", id: "a", value: "v")
        let counts = try await wallet.withConnection { view in
            _ = try await view.openSearch(type: "h", queryJSON: "{}")
            _ = try await view.openSearch(type: "h", queryJSON: "{}")
            let held = view.openSearchCount
            let inTransaction = try await view.transaction { txn in
                _ = try await txn.openSearch(type: "h", queryJSON: "{}")
                _ = try await txn.openSearch(type: "h", queryJSON: "{}")
                return txn.openSearchCount
            }
            return [held, inTransaction]
        }
        #expect(counts == [1, 1])
    }
}
#endif
