// docs/concurrency.md's two rules for the stores a container owns (media cache, secure storage,
// wallet) and the container itself: after close() every throwing call throws its module's
// `closed`; a cancelled task's call throws CancellationError before it reads or writes.

import Coffer
import CofferTestSupport
import Foundation
import Testing

/// A container with a wallet and one of each item, and the error its module throws once closed.
struct OpenStores: Sendable {
    let container: CofferContainer
    let wallet: Wallet

    static func open() async throws -> OpenStores {
        let container = try await CofferContainer.open(CofferLocations(store: containerFolder()))
        let wallet = try await container.openWallet(.raw(WalletKey.generateRawKey()))
        try await wallet.add(type: "t", id: "a", value: "v")
        try await container.cache.store(Data([1, 2, 3]), for: .thumbnail("a"))
        try await container.secure.save(Data("token".utf8), for: "a", accessibility: .afterFirstUnlock)
        return OpenStores(container: container, wallet: wallet)
    }
}

/// One public call, the module error it throws after close, and a look at what it would change.
struct ModuleCall: Sendable, CustomTestStringConvertible {
    let name: String
    let closedError: any Error & Equatable & Sendable
    let run: @Sendable (OpenStores) async throws -> Void
    init(_ name: String, _ closedError: any Error & Equatable & Sendable, _ run: @escaping @Sendable (OpenStores) async throws -> Void) {
        self.name = name
        self.closedError = closedError
        self.run = run
    }
    var testDescription: String { name }

    func isClosedError(_ error: (any Error)?) -> Bool {
        func same<E: Equatable>(_ expected: E) -> Bool { (error as? E) == expected }
        return same(closedError)
    }
}

/// A snapshot of everything the calls below could change.
private func contents(_ stores: OpenStores) async throws -> [String] {
    let c = stores.container
    return [
        "wallet \(try await stores.wallet.count(type: "t"))",
        "cache \(c.cache.memoryData(for: .thumbnail("a")) != nil) \(c.cache.memoryData(for: .thumbnail("b")) != nil)",
        "limits \(c.cache.currentLimits)",
        "secure \(try blocking { try c.secure.namesBlocking() }.sorted())",
    ]
}

@Suite("Container stores: one rule for close, one for cancellation")
struct ContainerCloseCancelTests {
    static let cacheClosed = MediaCacheError.closed
    static let secureClosed = SecureStorageError.closed
    static let walletClosed = WalletError.closed
    static let containerClosed = ContainerError.closed

    static let calls: [ModuleCall] = [
        // Media cache.
        ModuleCall("cache.store", cacheClosed) { s in try blocking { try s.container.cache.storeBlocking(Data([4]), for: .thumbnail("b")) }
        },
        ModuleCall("await cache.store", cacheClosed) { s in try await s.container.cache.store(Data([4]), for: .thumbnail("b")) },
        ModuleCall("cache.setLimits", cacheClosed) { s in
            try blocking { try s.container.cache.setLimitsBlocking(MediaCacheLimits(memoryBytes: 1 << 20, diskBytes: 1 << 20)) }
        },
        ModuleCall("await cache.setLimits", cacheClosed) { s in
            try await s.container.cache.setLimits(MediaCacheLimits(memoryBytes: 1 << 20, diskBytes: 1 << 20))
        },
        ModuleCall("await cache.data(for:orLoad:), a memory hit", cacheClosed) { s in
            _ = try await s.container.cache.data(for: .thumbnail("a")) { Data([9]) }
        },
        // Secure storage.
        ModuleCall("secure.save", secureClosed) { s in
            try blocking { try s.container.secure.saveBlocking(Data("x".utf8), for: "b", accessibility: .afterFirstUnlock) }
        },
        ModuleCall("await secure.save", secureClosed) { s in
            try await s.container.secure.save(Data("x".utf8), for: "b", accessibility: .afterFirstUnlock)
        },
        ModuleCall("await secure.load", secureClosed) { s in _ = try await s.container.secure.load("a") },
        ModuleCall("await secure.delete", secureClosed) { s in try await s.container.secure.delete("a") },
        ModuleCall("await secure.names", secureClosed) { s in _ = try await s.container.secure.names() },
        // Wallet.
        ModuleCall("await wallet.add", walletClosed) { s in try await s.wallet.add(type: "t", id: "b", value: "v") },
        ModuleCall("await wallet.fetch", walletClosed) { s in _ = try await s.wallet.fetch(type: "t", id: "a") },
        ModuleCall("await wallet.delete", walletClosed) { s in try await s.wallet.delete(type: "t", id: "a") },
        ModuleCall("await wallet.openSearch", walletClosed) { s in _ = try await s.wallet.openSearch(type: "t", query: .all) },
        ModuleCall("await wallet.count", walletClosed) { s in _ = try await s.wallet.count(type: "t") },
        // The container.
        ModuleCall("await container.clearCache", containerClosed) { s in try await s.container.clearCache() },
        ModuleCall("await container.openWallet", containerClosed) { s in
            _ = try await s.container.openWallet(.raw(WalletKey.generateRawKey()))
        },
    ]

    @Test("after close() every call throws its module's closed error", arguments: calls)
    func closed(_ call: ModuleCall) async throws {
        let stores = try await OpenStores.open()
        stores.container.close()
        let error: (any Error)?
        do {
            try await call.run(stores)
            error = nil
        } catch let thrown {
            error = thrown
        }
        #expect(call.isClosedError(error), "\(call.name) threw \(String(describing: error))")
    }

    @Test("a cancelled task's call throws CancellationError and changes nothing", arguments: calls.filter { $0.name.hasPrefix("await") })
    func cancelled(_ call: ModuleCall) async throws {
        let stores = try await OpenStores.open()
        defer { stores.container.close() }
        let before = try await contents(stores)
        let error = await inCancelledTask { try await call.run(stores) }
        #expect(error is CancellationError, "\(call.name) threw \(String(describing: error))")
        #expect(try await contents(stores) == before)
    }
}
