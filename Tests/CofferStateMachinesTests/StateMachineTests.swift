import CofferCrypto
@testable import CofferStateMachines
import CofferWallet
import Foundation
import Testing

/// A protocol that records what it was asked to send, and can be told to fail.
final class RecordingProtocol: AriesProtocol, @unchecked Sendable {
    private let lock = NSLock()
    private var messages = [OutboundMessage]()
    private var failing = false

    var sent: [OutboundMessage] { lock.withLock { messages } }
    func fail(_ on: Bool) { lock.withLock { failing = on } }

    struct Offline: Error {}

    func send(_ message: OutboundMessage) async throws {
        try lock.withLock {
            if failing { throw Offline() }
            messages.append(message)
        }
    }
}

func makeMachines() async throws -> (StateMachines, RecordingProtocol, Wallet) {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("coffer-sm-\(UUID().uuidString)/wallet.sqlite")
    let wallet = try await Wallet.create(at: url, key: .raw(Data(repeating: 3, count: 32)))
    let messenger = RecordingProtocol()
    return (StateMachines(wallet: wallet, protocol: messenger), messenger, wallet)
}

let degreeOffer = CredentialOffer(issuerDID: "did:sov:issuer1", schemaID: "schema:degree:1.0",
                                  credentialDefinitionID: "creddef:degree:1", attributes: ["name": "Alice", "degree": "MSc"])

/// Drives a credential machine to `credentialReceived`.
func receivedCredential(_ sm: StateMachines) async throws -> Int {
    let h = sm.credentialCreate(offer: degreeOffer)
    _ = try await sm.credentialSendRequest(h)
    _ = try sm.credentialReceive(h, credential: IssuedCredential(attributes: degreeOffer.attributes, signature: #"{"sig":"s1"}"#))
    return h
}

@Suite("Handles")
struct HandleTests {
    @Test("handles are never reused, and a released handle is a clear error")
    func neverReused() async throws {
        let (sm, _, _) = try await makeMachines()
        let a = sm.connectionCreate(invitation: "inv")
        try sm.release(a)
        let b = sm.connectionCreate(invitation: "inv")
        #expect(a != b)
        #expect(throws: StateMachineError.unknownHandle(a)) { try sm.state(a) }
        #expect(throws: StateMachineError.unknownHandle(a)) { try sm.release(a) }
    }

    @Test("many tasks creating machines at once get distinct handles")
    func concurrentHandles() async throws {
        let (sm, _, _) = try await makeMachines()
        let handles = await withTaskGroup(of: Int.self) { group in
            for _ in 0..<1000 { group.addTask { sm.connectionCreate(invitation: "i") } }
            return await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(Set(handles).count == 1000)
    }
}

@Suite("Serialization")
struct SerializationTests {
    @Test("serialize then deserialize gives an equal machine under a new handle")
    func roundTrip() async throws {
        let (sm, _, _) = try await makeMachines()
        let h = try await receivedCredential(sm)
        let json = try sm.serialize(h)
        let h2 = try sm.deserialize(json, as: .credential)
        #expect(h2 != h)
        #expect(try sm.table.machine(h2) == sm.table.machine(h))
        #expect(json.contains(#""version":1"#))
    }

    @Test("JSON of another version, another kind, or broken text is a clear error")
    func badJSON() async throws {
        let (sm, _, _) = try await makeMachines()
        let json = try sm.serialize(sm.connectionCreate(invitation: "i"))
        #expect(throws: StateMachineError.kindMismatch(expected: .credential, found: "connection")) { try sm.deserialize(json, as: .credential) }
        let v2 = json.replacingOccurrences(of: #""version":1"#, with: #""version":2"#)
        #expect(throws: StateMachineError.unsupportedVersion(found: 2, supported: 1)) { try sm.deserialize(v2, as: .connection) }
        #expect(throws: StateMachineError.self) { try sm.deserialize("{not json", as: .connection) }
    }
}

@Suite("Transitions")
struct TransitionTests {
    @Test("a connection goes invited → requested → responded → completed, each step asking to be saved")
    func connectionFlow() async throws {
        let (sm, messenger, wallet) = try await makeMachines()
        let h = sm.connectionCreate(invitation: "invitation-1")
        #expect(try sm.state(h) == ConnectionState.invited.rawValue)
        let t1 = try await sm.connectionSendRequest(h)
        let their = try await wallet.createKey()
        let t2 = try sm.connectionReceiveResponse(h, theirVerkey: their)
        let t3 = try await sm.connectionComplete(h)
        #expect(t1.to == 2 && t2.to == 3 && t3.to == 4)
        #expect(t1.mustSave && t2.mustSave && t3.mustSave)
        #expect(messenger.sent.count == 2)
    }

    @Test("a transition not allowed from the current state is an error and changes nothing")
    func invalidTransition() async throws {
        let (sm, _, _) = try await makeMachines()
        let h = sm.credentialCreate(offer: degreeOffer)
        let before = try sm.serialize(h)
        await #expect(throws: StateMachineError.invalidTransition(kind: .credential, operation: "accept", state: 1)) {
            _ = try await sm.credentialAccept(h)
        }
        #expect(try sm.serialize(h) == before)
    }

    @Test("a failed send leaves the machine where it was")
    func failedSend() async throws {
        let (sm, messenger, _) = try await makeMachines()
        let h = sm.credentialCreate(offer: degreeOffer)
        messenger.fail(true)
        await #expect(throws: StateMachineError.self) { _ = try await sm.credentialSendRequest(h) }
        #expect(try sm.state(h) == CredentialState.offerReceived.rawValue)
    }

    @Test("a failed connection request leaves no key behind")
    func failedRequestLeavesNoKey() async throws {
        let (sm, messenger, wallet) = try await makeMachines()
        let h = sm.connectionCreate(invitation: "i")
        messenger.fail(true)
        await #expect(throws: StateMachineError.self) { _ = try await sm.connectionSendRequest(h) }
        #expect(try await wallet.listKeys().isEmpty)
        #expect(try sm.state(h) == ConnectionState.invited.rawValue)
    }

    @Test("accepting stores the attributes with their tags and the signature as a secret, and nothing else")
    func acceptStores() async throws {
        let (sm, _, wallet) = try await makeMachines()
        let h = try await receivedCredential(sm)
        let t = try await sm.credentialAccept(h)
        #expect(t.to == CredentialState.accepted.rawValue)
        guard case let .credential(machine) = try sm.table.machine(h) else { Issue.record("kind"); return }
        let record = try await wallet.get(type: "credential", id: machine.id)
        #expect(record.tags?.dictionary["schema_id"] == "schema:degree:1.0")
        #expect(record.tags?.dictionary["attr::name::value"] == "Alice")
        #expect(record.tags?.dictionary["issuer_did"] == "did:sov:issuer1")
        #expect(try await wallet.hasCredentialSignature(credentialID: machine.id))
        #expect(machine.issued == nil)
        #expect(try sm.serialize(h).contains("s1") == false)
        #expect(try await wallet.count(type: "credential") == 1)
    }

    @Test("a proof request's restrictions find the matching credentials, and the presentation goes out")
    func proofMatching() async throws {
        let (sm, messenger, wallet) = try await makeMachines()
        let c = try await receivedCredential(sm)
        _ = try await sm.credentialAccept(c)
        try await wallet.add(type: "credential", id: "other", value: "{}",
                             tags: ["attr::name::marker": "1", "schema_id": "schema:other", "issuer_did": "did:sov:x"])
        let request = ProofRequest(name: "degree check", requestedAttributes: [
            "r1": .init(name: "name", restrictions: [["schema_id": "schema:degree:1.0"], ["issuer_did": "did:sov:nobody"]]),
        ])
        let p = sm.proofCreate(request: request)
        let matches = try await sm.proofMatchingCredentials(p)
        guard case let .credential(machine) = try sm.table.machine(c) else { Issue.record("kind"); return }
        #expect(matches == ["r1": [machine.id]])
        await #expect(throws: WalletError.self) { _ = try await sm.proofSendPresentation(p, credentials: ["r1": "other"]) }
        let t = try await sm.proofSendPresentation(p, credentials: ["r1": machine.id])
        #expect(t.to == DisclosedProofState.presentationSent.rawValue)
        #expect(try sm.proofReceiveAck(p).to == DisclosedProofState.acknowledged.rawValue)
        #expect(messenger.sent.contains(.presentation(proofID: { if case let .disclosedProof(m) = try! sm.table.machine(p) { return m.id } else { return "" } }(), referents: ["r1": machine.id])))
    }
}

@Suite("Store")
struct StoreTests {
    @Test("machines saved in the wallet come back after a restart under new handles and keep advancing")
    func restoreAfterRestart() async throws {
        let (sm, messenger, wallet) = try await makeMachines()
        let store = StateMachineStore(machines: sm, storage: WalletMachineStorage(wallet: wallet))
        let h = sm.credentialCreate(offer: degreeOffer)
        let id = try await store.save(h)
        // "Restart": a new machine table over the same wallet.
        let fresh = StateMachines(wallet: wallet, protocol: messenger)
        let restored = StateMachineStore(machines: fresh, storage: WalletMachineStorage(wallet: wallet))
        let h2 = try await restored.restore(id: id, kind: .credential)
        let t = try await fresh.credentialSendRequest(h2)
        #expect(t.to == CredentialState.requestSent.rawValue)
        try await restored.save(h2)
        #expect(try await restored.restoreAll(kind: .credential).count == 1)
    }

    @Test("an app-chosen store works through the same protocol")
    func appStore() async throws {
        actor Memory: MachineStorage {
            var items = [String: String]()
            func save(id: String, kind: MachineKind, json: String) { items["\(kind.rawValue)/\(id)"] = json }
            func load(id: String, kind: MachineKind) -> String? { items["\(kind.rawValue)/\(id)"] }
            func delete(id: String, kind: MachineKind) { items["\(kind.rawValue)/\(id)"] = nil }
            func ids(kind: MachineKind) -> [String] {
                items.keys.filter { $0.hasPrefix(kind.rawValue + "/") }.map { String($0.dropFirst(kind.rawValue.count + 1)) }
            }
        }
        let (sm, _, _) = try await makeMachines()
        let store = StateMachineStore(machines: sm, storage: Memory())
        let id = try await store.save(sm.proofCreate(request: ProofRequest(name: "p", requestedAttributes: [:])))
        let h = try await store.restore(id: id, kind: .disclosedProof)
        #expect(try sm.state(h) == DisclosedProofState.requestReceived.rawValue)
    }
}

@Suite("Rejections")
struct RejectionTests {
    /// A disclosed-proof machine driven to `presentationSent` (with `sent` true) or left at
    /// `requestReceived`.
    func proof(_ sm: StateMachines, sent: Bool) async throws -> Int {
        let c = try await receivedCredential(sm)
        _ = try await sm.credentialAccept(c)
        let p = sm.proofCreate(request: ProofRequest(name: "check", requestedAttributes: ["r1": .init(name: "name", restrictions: [])]))
        if sent {
            guard case let .credential(machine) = try sm.table.machine(c) else { throw StateMachineError.unknownHandle(c) }
            _ = try await sm.proofSendPresentation(p, credentials: ["r1": machine.id])
        }
        return p
    }

    @Test("a prover rejects a request it received, and a presentation the verifier rejected", arguments: [false, true])
    func proofRejected(afterPresentation: Bool) async throws {
        let (sm, messenger, _) = try await makeMachines()
        let p = try await proof(sm, sent: afterPresentation)
        let from = try sm.state(p)
        let t = try await sm.proofReject(p)
        #expect(t.from == from && t.to == DisclosedProofState.rejected.rawValue)
        #expect(try sm.state(p) == DisclosedProofState.rejected.rawValue)
        #expect(messenger.sent.contains { if case .proofRejection = $0 { return true } else { return false } })
    }

    @Test("a proof that was acknowledged or already rejected cannot be rejected, and stays as it was")
    func proofRejectRefused() async throws {
        let (sm, _, _) = try await makeMachines()
        let acknowledged = try await proof(sm, sent: true)
        _ = try sm.proofReceiveAck(acknowledged)
        let rejected = try await proof(sm, sent: false)
        _ = try await sm.proofReject(rejected)
        for (h, state) in [(acknowledged, DisclosedProofState.acknowledged), (rejected, DisclosedProofState.rejected)] {
            await #expect(throws: StateMachineError.self) { _ = try await sm.proofReject(h) }
            #expect(try sm.state(h) == state.rawValue)
        }
    }

    @Test("a holder rejects a credential from offer received, request sent and credential received", arguments: [0, 1, 2])
    func credentialRejected(steps: Int) async throws {
        let (sm, messenger, _) = try await makeMachines()
        let h = sm.credentialCreate(offer: degreeOffer)
        if steps >= 1 { _ = try await sm.credentialSendRequest(h) }
        if steps >= 2 {
            _ = try sm.credentialReceive(h, credential: IssuedCredential(attributes: degreeOffer.attributes, signature: #"{"sig":"s"}"#))
        }
        let t = try await sm.credentialReject(h)
        #expect(t.to == CredentialState.rejected.rawValue)
        #expect(messenger.sent.contains { if case .credentialRejection = $0 { return true } else { return false } })
    }

    @Test("an accepted credential cannot be rejected")
    func credentialRejectRefused() async throws {
        let (sm, _, _) = try await makeMachines()
        let h = try await receivedCredential(sm)
        _ = try await sm.credentialAccept(h)
        await #expect(throws: StateMachineError.self) { _ = try await sm.credentialReject(h) }
        #expect(try sm.state(h) == CredentialState.accepted.rawValue)
    }
}
