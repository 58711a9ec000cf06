// docs/concurrency.md's close rule for the deniable store: close() ends the session, and every
// call that needs the session then throws DeniableError.locked (its module's "closed") until the
// passphrase unlocks it again.

import Foundation
import Testing

@testable import CofferDeniable

@Suite("Deniable store: the close rule")
struct DeniableCloseRuleTests {
    struct Call: Sendable, CustomTestStringConvertible {
        let name: String
        let run: @Sendable (DeniableStorage) async throws -> Void
        var testDescription: String { name }
    }

    static let calls: [Call] = [
        Call(name: "mailbox") { _ = try await $0.mailbox() },
        Call(name: "userPublicKey") { _ = try await $0.userPublicKey() },
        Call(name: "queuedMessageCount") { _ = try await $0.queuedMessageCount() },
        Call(name: "send") { _ = try await $0.send("hello", to: "journalist") },
    ]

    @Test("after close() every session call throws DeniableError.locked", arguments: calls)
    func closed(_ call: Call) async throws {
        let (store, _) = try await makeStore(temporaryFolder())
        _ = try await store.refreshPublicKeys()
        try await store.unlock(passphrase: try await store.createVault())
        try await call.run(store) // works while open (send: the development node's journalist)
        try await store.close()
        await #expect(throws: DeniableError.locked) { try await call.run(store) }
    }
}
