// The SDK's state machines on both backends: one body per behaviour, run on a wallet file and (a
// build with the trait `PostgreSQL`, its binaries installed) on a PostgreSQL profile, with the
// same expectations. The machines see only `RecordWallet & KeyWallet`: keys made and removed,
// the master secret's binding, signatures kept and dropped, credentials stored against their
// signature, proof matching by WQL, and machines saved as records and restored.

import CofferStateMachines
import CofferSync
import CofferTestSupport
import Foundation
import Testing

@testable import CofferWallet

/// Records what the machines send, and fails every send while told to.
private final class Outbox: AriesProtocol {
    struct Offline: Error {}
    private let state = Locked<(sent: [OutboundMessage], failing: Bool)>(([], false))

    var sent: [OutboundMessage] { state.withLock { $0.sent } }
    func fail(_ on: Bool) { state.withLock { $0.failing = on } }

    func send(_ message: OutboundMessage) async throws {
        try state.withLock {
            if $0.failing { throw Offline() }
            $0.sent.append(message)
        }
    }
}

// With the trait, the suite is nested in the serialized PostgreSQL suite (as RecordWalletTests
// is): its PostgreSQL cases never overlap the test that restarts the server.
#if PostgreSQL
extension PostgresWalletTests {
    @Suite("The SDK's state machines on every backend") struct SDKBackendsTests {}
}
typealias SDKBackendsSuite = PostgresWalletTests.SDKBackendsTests
#else
@Suite("The SDK's state machines on every backend") struct SDKBackendsSuite {}
#endif

extension SDKBackendsSuite {
    private static let offer = CredentialOffer(
        issuerDID: "did:sov:issuer1", schemaID: "schema:degree:1.0",
        credentialDefinitionID: "creddef:degree:1", attributes: ["name": "Alice", "degree": "MSc"])

    /// A provisioned wallet of `backend` (master secret made), machines over it, and how to open
    /// the wallet again.
    private static func machines(_ backend: RecordBackend) async throws -> (
        StateMachines, Outbox, any RecordWallet & KeyWallet, reopen: @Sendable () async throws -> any RecordWallet & KeyWallet
    ) {
        let made = try await backend.make()
        let wallet = try #require(made.wallet as? any RecordWallet & KeyWallet)
        try await wallet.initializeMasterSecret()
        let outbox = Outbox()
        let reopen: @Sendable () async throws -> any RecordWallet & KeyWallet = {
            try #require(try await made.reopen(.raw(TestWallets.rawKey)) as? any RecordWallet & KeyWallet)
        }
        return (StateMachines(wallet: wallet, protocol: outbox), outbox, wallet, reopen)
    }

    private static func credentialID(_ sm: StateMachines, _ handle: Int) throws -> String {
        guard case .credential(let machine) = try sm.table.machine(handle) else { throw StateMachineError.unknownHandle(handle) }
        return machine.id
    }

    @Test("a connection, an accepted credential and a presented proof run the same on every backend", arguments: RecordBackend.available)
    func credentialFlow(_ backend: RecordBackend) async throws {
        let (sm, outbox, wallet, _) = try await Self.machines(backend)
        defer { try? wallet.close() }
        let connection = sm.connectionCreate(invitation: "invitation-1")
        _ = try await sm.connectionSendRequest(connection)
        let keys = try await wallet.listKeys()
        #expect(keys.count == 1)
        #expect(outbox.sent.contains(.connectionRequest(invitation: "invitation-1", verkey: keys.first?.verkey ?? "")))

        let h = sm.credentialCreate(offer: Self.offer)
        _ = try await sm.credentialSendRequest(h)
        _ = try await sm.credentialReceive(h, credential: IssuedCredential(attributes: Self.offer.attributes, signature: #"{"sig":"s1"}"#))
        let id = try Self.credentialID(sm, h)
        #expect(try await wallet.hasCredentialSignature(credentialID: id))
        _ = try await sm.credentialAccept(h)
        #expect(try await wallet.count(type: "credential", matching: .all) == 1)
        #expect(try await wallet.fetch(type: "credential", id: id, options: RecordOptions()) != nil)

        let p = sm.proofCreate(
            request: ProofRequest(
                name: "degree check", requestedAttributes: ["r1": .init(name: "name", restrictions: [["schema_id": "schema:degree:1.0"]])]))
        #expect(try await sm.proofMatchingCredentials(p) == ["r1": [id]])
        let sent = try await sm.proofSendPresentation(p, credentials: ["r1": id])
        #expect(sent.to == DisclosedProofState.presentationSent.number)
    }

    @Test("a rejected credential's signature is removed, and a credential without one is not stored", arguments: RecordBackend.available)
    func signatureRules(_ backend: RecordBackend) async throws {
        let (sm, _, wallet, _) = try await Self.machines(backend)
        defer { try? wallet.close() }
        let h = sm.credentialCreate(offer: Self.offer)
        _ = try await sm.credentialSendRequest(h)
        _ = try await sm.credentialReceive(h, credential: IssuedCredential(attributes: Self.offer.attributes, signature: "s2"))
        let id = try Self.credentialID(sm, h)
        _ = try await sm.credentialReject(h)
        #expect(try await wallet.hasCredentialSignature(credentialID: id) == false)

        await #expect(throws: WalletError.notFound(type: "credential signature", id: "unsigned")) {
            try await wallet.storeCredential(id: "unsigned", value: "{}", tags: [:])
        }
        #expect(try await wallet.count(type: "credential", matching: .all) == 0)
    }

    @Test("a connection request that cannot be sent removes the key it made", arguments: RecordBackend.available)
    func keyRemovedOnFailedStep(_ backend: RecordBackend) async throws {
        let (sm, outbox, wallet, _) = try await Self.machines(backend)
        defer { try? wallet.close() }
        outbox.fail(true)
        let connection = sm.connectionCreate(invitation: "invitation-2")
        await #expect(throws: StateMachineError.self) { _ = try await sm.connectionSendRequest(connection) }
        #expect(try await wallet.listKeys().isEmpty)
        #expect(try sm.state(connection) == ConnectionState.invited.number)
    }

    @Test("machines saved as records come back under new handles in a wallet opened again", arguments: RecordBackend.available)
    func savedAndRestored(_ backend: RecordBackend) async throws {
        let (sm, _, wallet, reopen) = try await Self.machines(backend)
        let store = StateMachineStore(machines: sm, storage: WalletMachineStorage(wallet: wallet))
        let h = sm.credentialCreate(offer: Self.offer)
        _ = try await sm.credentialSendRequest(h)
        let id = try await store.save(h)
        // Saved again after another step: the record is replaced, not duplicated.
        _ = try await sm.credentialReceive(h, credential: IssuedCredential(attributes: Self.offer.attributes, signature: "s3"))
        #expect(try await store.save(h) == id)
        try wallet.close()

        let again = try await reopen()
        defer { try? again.close() }
        let restored = StateMachineStore(
            machines: StateMachines(wallet: again, protocol: Outbox()), storage: WalletMachineStorage(wallet: again))
        let handles = try await restored.restoreAll(kind: .credential)
        #expect(Array(handles.keys) == [id])
        let handle = try #require(handles[id])
        #expect(try restored.machines.state(handle) == CredentialState.credentialReceived.number)
        _ = try await restored.machines.credentialAccept(handle)
        #expect(try await again.count(type: "credential", matching: .all) == 1)
    }
}
