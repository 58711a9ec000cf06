import CofferCrypto
import CofferTestSupport
import Foundation
import Testing

@testable import CofferStateMachines
@testable import CofferWallet

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

/// Machines over a new wallet, provisioned for the SDK (master secret made) unless told not to.
func makeMachines(provisioned: Bool = true) async throws -> (StateMachines, RecordingProtocol, Wallet) {
    let url = TemporaryFolders.path("coffer-sm").appendingPathComponent("wallet.sqlite")
    let wallet = try await Wallet.create(at: url, key: .raw(Data(repeating: 3, count: 32)))
    if provisioned { try await wallet.initializeMasterSecret() }
    let messenger = RecordingProtocol()
    return (StateMachines(wallet: wallet, protocol: messenger), messenger, wallet)
}

/// The credential machine behind `handle`.
func credentialMachine(_ sm: StateMachines, _ handle: Int) throws -> CredentialMachine {
    guard case .credential(let machine) = try sm.table.machine(handle) else { throw StateMachineError.unknownHandle(handle) }
    return machine
}

let degreeOffer = CredentialOffer(
    issuerDID: "did:sov:issuer1", schemaID: "schema:degree:1.0",
    credentialDefinitionID: "creddef:degree:1", attributes: ["name": "Alice", "degree": "MSc"])

/// Drives a credential machine to `credentialReceived`.
func receivedCredential(_ sm: StateMachines) async throws -> Int {
    let h = sm.credentialCreate(offer: degreeOffer)
    _ = try await sm.credentialSendRequest(h)
    _ = try await sm.credentialReceive(h, credential: IssuedCredential(attributes: degreeOffer.attributes, signature: #"{"sig":"s1"}"#))
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
    @Test("serialize then deserialize gives an equal machine under a new handle, as version 3")
    func roundTrip() async throws {
        let (sm, _, _) = try await makeMachines()
        let h = try await receivedCredential(sm)
        let json = try sm.serialize(h)
        let h2 = try await sm.deserialize(json, as: .credential)
        #expect(h2 != h)
        #expect(try sm.table.machine(h2) == sm.table.machine(h))
        #expect(json.contains(#""version":3"#))
    }

    @Test("JSON of another kind is a clear error")
    func otherKind() async throws {
        let (sm, _, _) = try await makeMachines()
        let json = try sm.serialize(sm.connectionCreate(invitation: "i"))
        await #expect(throws: StateMachineError.kindMismatch(expected: .credential, found: "connection")) {
            _ = try await sm.deserialize(json, as: .credential)
        }
    }

    @Test("JSON of a newer version is a clear error")
    func newerVersion() async throws {
        let (sm, _, _) = try await makeMachines()
        let json = try sm.serialize(sm.connectionCreate(invitation: "i")).replacingOccurrences(of: #""version":3"#, with: #""version":4"#)
        await #expect(throws: StateMachineError.unsupportedVersion(found: 4, supported: 3)) {
            _ = try await sm.deserialize(json, as: .connection)
        }
    }

    @Test("broken text is a clear error")
    func brokenText() async throws {
        let (sm, _, _) = try await makeMachines()
        await #expect(throws: StateMachineError.self) { _ = try await sm.deserialize("{not json", as: .connection) }
    }

    @Test("a version-3 credential whose step and number disagree is refused")
    func stepNumberMismatch() async throws {
        let (sm, _, _) = try await makeMachines()
        let json = try sm.serialize(sm.credentialCreate(offer: degreeOffer)).replacingOccurrences(of: #""state":3"#, with: #""state":2"#)
        await #expect(throws: StateMachineError.self) { _ = try await sm.deserialize(json, as: .credential) }
    }
}

/// One committed version-1 fixture and the state it must come back in.
struct Version1Case: Sendable, CustomTestStringConvertible {
    let file: String
    let kind: MachineKind
    let number: Int
    let check: @Sendable (AnyMachine) -> Bool
    var testDescription: String { file }

    static let all: [Version1Case] = [
        .init(file: "connection_v1_invited", kind: .connection, number: 2) {
            if case .connection(let m) = $0 { m.state == .invited } else { false }
        },
        .init(file: "connection_v1_responded", kind: .connection, number: 3) {
            if case .connection(let m) = $0 { m.state == .responded && m.theirVerkey != nil && m.myVerkey != nil } else { false }
        },
        .init(file: "credential_v1_offer_received", kind: .credential, number: 3) {
            if case .credential(let m) = $0 { m.state == .offerReceived } else { false }
        },
        .init(file: "credential_v1_request_sent", kind: .credential, number: 2) {
            if case .credential(let m) = $0 { m.state == .requestSent } else { false }
        },
        .init(file: "credential_v1_credential_received", kind: .credential, number: 4) {
            if case .credential(let m) = $0 {
                m.state == .credentialReceived && m.received == ["name": "Alice", "grade": "A"]
            } else {
                false
            }
        },
        .init(file: "credential_v1_accepted", kind: .credential, number: 4) {
            if case .credential(let m) = $0 { m.state == .accepted } else { false }
        },
        .init(file: "credential_v1_rejected", kind: .credential, number: 0) {
            if case .credential(let m) = $0 { m.state == .rejected } else { false }
        },
        .init(file: "disclosed_proof_v1_request_received", kind: .disclosedProof, number: 3) {
            if case .disclosedProof(let m) = $0 { m.state == .requestReceived } else { false }
        },
        .init(file: "disclosed_proof_v1_presentation_sent", kind: .disclosedProof, number: 2) {
            if case .disclosedProof(let m) = $0 { m.state == .presentationSent && m.presented != nil } else { false }
        },
        .init(file: "disclosed_proof_v1_acknowledged", kind: .disclosedProof, number: 4) {
            if case .disclosedProof(let m) = $0 { m.state == .acknowledged } else { false }
        },
        .init(file: "disclosed_proof_v1_rejected", kind: .disclosedProof, number: 0) {
            if case .disclosedProof(let m) = $0 { m.state == .rejected } else { false }
        },
    ]

    func json() throws -> String {
        let url = try #require(Bundle.module.url(forResource: file, withExtension: "json", subdirectory: "Fixtures"))
        return try String(contentsOf: url, encoding: .utf8)
    }
}

@Suite("Version-1 JSON")
struct Version1Tests {
    @Test("a committed version-1 machine deserializes into the same state, under VCX's number", arguments: Version1Case.all)
    func sameState(_ c: Version1Case) async throws {
        let (sm, _, _) = try await makeMachines()
        let json = try c.json()
        #expect(json.contains(#""version":1"#))
        let h = try await sm.deserialize(json, as: c.kind)
        #expect(c.check(try sm.table.machine(h)))
        #expect(try sm.state(h) == c.number)
    }

    @Test("a converted machine is written back as version 3", arguments: Version1Case.all)
    func writtenAsVersion3(_ c: Version1Case) async throws {
        let (sm, _, _) = try await makeMachines()
        let h = try await sm.deserialize(try c.json(), as: c.kind)
        let again = try sm.serialize(h)
        #expect(again.contains(#""version":3"#))
        let h2 = try await sm.deserialize(again, as: c.kind)
        #expect(try sm.table.machine(h2) == sm.table.machine(h))
    }

    @Test("a version-1 received credential's signature moves into the wallet and out of the JSON")
    func signatureMoves() async throws {
        let (sm, _, wallet) = try await makeMachines()
        let c = try #require(Version1Case.all.first { $0.file == "credential_v1_credential_received" })
        let h = try await sm.deserialize(try c.json(), as: .credential)
        let id = try credentialMachine(sm, h).id
        #expect(try await wallet.withCredentialSignature(credentialID: id) { $0 } == #"{"v1-fixture-signature":"s-3"}"#)
        #expect(try sm.serialize(h).contains("v1-fixture-signature") == false)
    }

    @Test("a converted received credential can still be accepted")
    func convertedAccepts() async throws {
        let (sm, _, wallet) = try await makeMachines()
        let c = try #require(Version1Case.all.first { $0.file == "credential_v1_credential_received" })
        let h = try await sm.deserialize(try c.json(), as: .credential)
        let t = try await sm.credentialAccept(h)
        #expect(t.mustSave && t.to == 4)
        #expect(try await wallet.count(type: "credential") == 1)
    }

    @Test("MachineCoding alone refuses a version-1 machine carrying a signature, pointing to StateMachines.deserialize")
    func codingAloneRefuses() throws {
        let c = try #require(Version1Case.all.first { $0.file == "credential_v1_credential_received" })
        #expect(throws: StateMachineError.self) { _ = try MachineCoding.deserialize(try c.json(), as: .credential) }
    }
}

@Suite("Transitions")
struct TransitionTests {
    @Test("a connection goes invited → requested → responded → completed, each step asking to be saved")
    func connectionFlow() async throws {
        let (sm, messenger, wallet) = try await makeMachines()
        let h = sm.connectionCreate(invitation: "invitation-1")
        #expect(try sm.state(h) == ConnectionState.invited.number)
        let t1 = try await sm.connectionSendRequest(h)
        let their = try await wallet.createKey()
        let t2 = try sm.connectionReceiveResponse(h, theirVerkey: their)
        let t3 = try await sm.connectionComplete(h)
        #expect(t1.to == 3 && t2.to == 3 && t3.to == 4)
        #expect(t1.mustSave && t2.mustSave && t3.mustSave)
        #expect(messenger.sent.count == 2)
    }

    @Test("a transition not allowed from the current state is an error and changes nothing")
    func invalidTransition() async throws {
        let (sm, _, _) = try await makeMachines()
        let h = sm.credentialCreate(offer: degreeOffer)
        let before = try sm.serialize(h)
        await #expect(throws: StateMachineError.invalidTransition(kind: .credential, operation: "accept", state: 3)) {
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
        #expect(try sm.credentialState(h) == .offerReceived)
    }

    @Test("a failed connection request leaves no key behind")
    func failedRequestLeavesNoKey() async throws {
        let (sm, messenger, wallet) = try await makeMachines()
        let h = sm.connectionCreate(invitation: "i")
        messenger.fail(true)
        await #expect(throws: StateMachineError.self) { _ = try await sm.connectionSendRequest(h) }
        #expect(try await wallet.listKeys().isEmpty)
        #expect(try sm.state(h) == ConnectionState.invited.number)
    }

    @Test("accepting stores the attributes with their tags and the signature as a secret, and nothing else")
    func acceptStores() async throws {
        let (sm, _, wallet) = try await makeMachines()
        let h = try await receivedCredential(sm)
        let t = try await sm.credentialAccept(h)
        #expect(try sm.credentialState(h) == .accepted && t.to == 4 && t.mustSave)
        let machine = try credentialMachine(sm, h)
        let record = try await wallet.get(type: "credential", id: machine.id)
        #expect(record.tags?.dictionary["schema_id"] == "schema:degree:1.0")
        #expect(record.tags?.dictionary["attr::name::value"] == "Alice")
        #expect(record.tags?.dictionary["issuer_did"] == "did:sov:issuer1")
        #expect(try await wallet.hasCredentialSignature(credentialID: machine.id))
        #expect(machine.received == nil)
        #expect(try sm.serialize(h).contains("s1") == false)
        #expect(try await wallet.count(type: "credential") == 1)
    }

    @Test("a proof request's restrictions find the matching credentials, and the presentation goes out")
    func proofMatching() async throws {
        let (sm, messenger, wallet) = try await makeMachines()
        let c = try await receivedCredential(sm)
        _ = try await sm.credentialAccept(c)
        try await wallet.add(
            type: "credential", id: "other", value: "{}",
            tags: ["attr::name::marker": "1", "schema_id": "schema:other", "issuer_did": "did:sov:x"])
        let request = ProofRequest(
            name: "degree check",
            requestedAttributes: [
                "r1": .init(name: "name", restrictions: [["schema_id": "schema:degree:1.0"], ["issuer_did": "did:sov:nobody"]])
            ])
        let p = sm.proofCreate(request: request)
        let matches = try await sm.proofMatchingCredentials(p)
        guard case .credential(let machine) = try sm.table.machine(c) else {
            Issue.record("kind")
            return
        }
        #expect(matches == ["r1": [machine.id]])
        await #expect(throws: StateMachineError.invalidInput("credential other does not satisfy the restrictions of referent r1")) {
            _ = try await sm.proofSendPresentation(p, credentials: ["r1": "other"])
        }
        let t = try await sm.proofSendPresentation(p, credentials: ["r1": machine.id])
        #expect(t.to == DisclosedProofState.presentationSent.number)
        #expect(try sm.proofReceiveAck(p).to == DisclosedProofState.acknowledged.number)
        #expect(
            messenger.sent.contains(
                .presentation(
                    proofID: { if case .disclosedProof(let m) = try! sm.table.machine(p) { return m.id } else { return "" } }(),
                    referents: ["r1": machine.id])))
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
        #expect(t.to == 2)
        #expect(try fresh.credentialState(h2) == .requestSent)
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
        #expect(try sm.state(h) == DisclosedProofState.requestReceived.number)
    }
}

@Suite("VCX state numbers")
struct VCXNumberTests {
    @Test("a holder's credential reports 3 (offer received), 2 (request sent), 4 (received), 4 (accepted)")
    func credentialNumbers() async throws {
        let (sm, _, _) = try await makeMachines()
        let h = sm.credentialCreate(offer: degreeOffer)
        #expect(try sm.state(h) == 3)
        let sent = try await sm.credentialSendRequest(h)
        let received = try await sm.credentialReceive(h, credential: IssuedCredential(attributes: degreeOffer.attributes, signature: "s"))
        let accepted = try await sm.credentialAccept(h)
        #expect([sent.from, sent.to, received.to, accepted.to] as [Int] == [3, 2, 4, 4])
    }

    @Test("accepting keeps the number 4 but still asks to be saved")
    func acceptMustSave() async throws {
        let (sm, _, _) = try await makeMachines()
        let h = try await receivedCredential(sm)
        let t = try await sm.credentialAccept(h)
        #expect(t.from == 4 && t.to == 4 && t.mustSave)
    }

    @Test("a prover's proof reports 3 (request received), 2 (presentation sent), 4 (acknowledged)")
    func proofNumbers() async throws {
        let (sm, _, _) = try await makeMachines()
        let c = try await receivedCredential(sm)
        _ = try await sm.credentialAccept(c)
        let p = sm.proofCreate(request: ProofRequest(name: "check", requestedAttributes: ["r1": .init(name: "name")]))
        #expect(try sm.state(p) == 3)
        let sent = try await sm.proofSendPresentation(p, credentials: ["r1": try credentialMachine(sm, c).id])
        let acked = try sm.proofReceiveAck(p)
        #expect([sent.to, acked.to] as [Int] == [2, 4])
    }
}

@Suite("Secrets of the SDK flow")
struct SDKSecretTests {
    @Test("a credential's signature is a wallet secret as soon as it is received")
    func signatureStoredOnReceipt() async throws {
        let (sm, _, wallet) = try await makeMachines()
        let h = try await receivedCredential(sm)
        #expect(try await wallet.withCredentialSignature(credentialID: try credentialMachine(sm, h).id) { $0 } == #"{"sig":"s1"}"#)
    }

    @Test("a machine serialized after receiving the credential has no signature in its JSON")
    func noSignatureInJSON() async throws {
        let (sm, _, _) = try await makeMachines()
        let h = try await receivedCredential(sm)
        let json = try sm.serialize(h)
        #expect(json.contains("credential_received"))
        #expect(json.contains("sig") == false && json.contains("s1") == false)
    }

    @Test("a credential request on a wallet not provisioned for the SDK is refused and makes no master secret")
    func unprovisionedRefused() async throws {
        let (sm, messenger, wallet) = try await makeMachines(provisioned: false)
        let h = sm.credentialCreate(offer: degreeOffer)
        do {
            _ = try await sm.credentialSendRequest(h)
            Issue.record("an unprovisioned wallet sent a credential request")
        } catch {
            // The wallet's own error, kept inside the state-machine layer's one error type.
            guard case .wallet(.invalidInput(let message)) = error else { throw error }
            #expect(message.contains("initializeMasterSecret"))
        }
        #expect(try await wallet.hasMasterSecret() == false)
        #expect(messenger.sent.isEmpty)
    }

    @Test("the request's binding comes from the provisioned master secret and is stable per definition")
    func bindingStable() async throws {
        let (sm, messenger, _) = try await makeMachines()
        _ = try await sm.credentialSendRequest(sm.credentialCreate(offer: degreeOffer))
        _ = try await sm.credentialSendRequest(sm.credentialCreate(offer: degreeOffer))
        let bindings = messenger.sent.compactMap { if case .credentialRequest(_, _, let b) = $0 { b } else { nil } }
        #expect(bindings.count == 2 && bindings[0] == bindings[1] && bindings[0].count == 32)
    }

    @Test("rejecting a received credential removes its signature from the wallet")
    func rejectRemovesSignature() async throws {
        let (sm, _, wallet) = try await makeMachines()
        let h = try await receivedCredential(sm)
        _ = try await sm.credentialReject(h)
        #expect(try await wallet.hasCredentialSignature(credentialID: try credentialMachine(sm, h).id) == false)
    }
}

/// Credential states, and how to drive a new machine into each.
enum CredentialStep: String, CaseIterable, Sendable {
    case none, offerReceived, requestSent, credentialReceived, accepted, rejected

    var state: CredentialState {
        switch self {
        case .none: return .none
        case .offerReceived: return .offerReceived
        case .requestSent: return .requestSent
        case .credentialReceived: return .credentialReceived
        case .accepted: return .accepted
        case .rejected: return .rejected
        }
    }

    func drive(_ sm: StateMachines) async throws -> Int {
        let h = sm.credentialCreate(offer: degreeOffer)
        if self == .none {
            // No operation leads to none: only saved JSON can hold it.
            let json = try sm.serialize(h).replacingOccurrences(
                of: #""state":3,"step":"offer_received""#, with: #""state":0,"step":"none""#)
            return try await sm.deserialize(json, as: .credential)
        }
        if self == .offerReceived { return h }
        if self == .rejected {
            _ = try await sm.credentialReject(h)
            return h
        }
        _ = try await sm.credentialSendRequest(h)
        if self == .requestSent { return h }
        _ = try await sm.credentialReceive(h, credential: IssuedCredential(attributes: degreeOffer.attributes, signature: #"{"sig":"s"}"#))
        if self == .accepted { _ = try await sm.credentialAccept(h) }
        return h
    }
}

/// Disclosed-proof states, and how to drive a new machine into each.
enum ProofStep: String, CaseIterable, Sendable {
    case none, requestReceived, presentationSent, acknowledged, rejected

    var state: DisclosedProofState {
        switch self {
        case .none: return .none
        case .requestReceived: return .requestReceived
        case .presentationSent: return .presentationSent
        case .acknowledged: return .acknowledged
        case .rejected: return .rejected
        }
    }

    func drive(_ sm: StateMachines) async throws -> Int {
        let c = try await CredentialStep.accepted.drive(sm)
        let p = sm.proofCreate(request: ProofRequest(name: "check", requestedAttributes: ["r1": .init(name: "name", restrictions: [])]))
        switch self {
        case .none:
            // No operation leads to none: only saved JSON can hold it.
            let json = try sm.serialize(p).replacingOccurrences(
                of: #""state":3,"step":"request_received""#, with: #""state":0,"step":"none""#)
            return try await sm.deserialize(json, as: .disclosedProof)
        case .requestReceived: break
        case .rejected: _ = try await sm.proofReject(p)
        case .presentationSent, .acknowledged:
            _ = try await sm.proofSendPresentation(p, credentials: ["r1": try credentialMachine(sm, c).id])
            if self == .acknowledged { _ = try sm.proofReceiveAck(p) }
        }
        return p
    }
}

@Suite("Rejections")
struct RejectionTests {
    @Test(
        "credentialReject moves the machine to rejected (0, libvcx's decline) from every state it is allowed in",
        arguments: [CredentialStep.offerReceived, .requestSent, .credentialReceived])
    func credentialRejected(_ step: CredentialStep) async throws {
        let (sm, _, _) = try await makeMachines()
        let h = try await step.drive(sm)
        let t = try await sm.credentialReject(h)
        #expect(t.from == step.state.number && t.to == 0 && t.mustSave)
        #expect(try sm.credentialState(h) == .rejected)
    }

    @Test("credentialReject tells the issuer", arguments: [CredentialStep.offerReceived, .requestSent, .credentialReceived])
    func credentialRejectionSent(_ step: CredentialStep) async throws {
        let (sm, messenger, _) = try await makeMachines()
        let h = try await step.drive(sm)
        _ = try await sm.credentialReject(h)
        #expect(messenger.sent.contains(.credentialRejection(credentialID: try credentialMachine(sm, h).id)))
    }

    @Test(
        "credentialReject is refused from the other states, and the machine stays as it was",
        arguments: [CredentialStep.none, .accepted, .rejected])
    func credentialRejectRefused(_ step: CredentialStep) async throws {
        let (sm, _, _) = try await makeMachines()
        let h = try await step.drive(sm)
        let before = try sm.serialize(h)
        await #expect(throws: StateMachineError.invalidTransition(kind: .credential, operation: "reject", state: step.state.number)) {
            _ = try await sm.credentialReject(h)
        }
        #expect(try sm.serialize(h) == before)
    }

    @Test(
        "proofReject moves the machine to rejected (0, libvcx's decline) from every state it is allowed in",
        arguments: [ProofStep.requestReceived, .presentationSent])
    func proofRejected(_ step: ProofStep) async throws {
        let (sm, _, _) = try await makeMachines()
        let p = try await step.drive(sm)
        let t = try await sm.proofReject(p)
        #expect(t.from == step.state.number && t.to == 0 && t.mustSave)
        #expect(try sm.disclosedProofState(p) == .rejected)
    }

    @Test("proofReject tells the verifier", arguments: [ProofStep.requestReceived, .presentationSent])
    func proofRejectionSent(_ step: ProofStep) async throws {
        let (sm, messenger, _) = try await makeMachines()
        let p = try await step.drive(sm)
        _ = try await sm.proofReject(p)
        #expect(messenger.sent.contains { if case .proofRejection = $0 { return true } else { return false } })
    }

    @Test(
        "proofReject is refused from the other states, and the machine stays as it was",
        arguments: [ProofStep.none, .acknowledged, .rejected])
    func proofRejectRefused(_ step: ProofStep) async throws {
        let (sm, _, _) = try await makeMachines()
        let p = try await step.drive(sm)
        let before = try sm.serialize(p)
        await #expect(throws: StateMachineError.invalidTransition(kind: .disclosedProof, operation: "reject", state: step.state.number)) {
            _ = try await sm.proofReject(p)
        }
        #expect(try sm.serialize(p) == before)
    }

    @Test("every credential and proof state is covered: allowed or refused")
    func coverage() {
        #expect(Set(CredentialStep.allCases.map(\.state)) == Set(CredentialState.allCases))
        #expect(Set(ProofStep.allCases.map(\.state)) == Set(DisclosedProofState.allCases))
    }
}

@Suite("State machines: typed API")
struct StateMachineTypedAPITests {
    @Test("connectionState and disclosedProofState give the typed states")
    func typedStates() async throws {
        let (sm, _, _) = try await makeMachines()
        let c = sm.connectionCreate(invitation: "i")
        #expect(try sm.connectionState(c) == .invited)
        #expect(throws: StateMachineError.self) { _ = try sm.disclosedProofState(c) }
    }

    @Test("a transport's error reaches the caller as itself, inside transportFailed")
    func transportErrorKept() async throws {
        let (sm, messenger, _) = try await makeMachines()
        let h = sm.credentialCreate(offer: degreeOffer)
        messenger.fail(true)
        do {
            _ = try await sm.credentialSendRequest(h)
            Issue.record("the send did not fail")
        } catch let StateMachineError.transportFailed(failure) {
            #expect(failure.underlying is RecordingProtocol.Offline)
        }
    }

    @Test("deserialize(_:) and restore(id:) read the kind from the saved JSON")
    func kindFromJSON() async throws {
        let (sm, _, wallet) = try await makeMachines()
        let h = sm.connectionCreate(invitation: "i")
        let json = try sm.serialize(h)
        let h2 = try await sm.deserialize(json)
        #expect(try sm.connectionState(h2) == .invited)
        let store = StateMachineStore(machines: sm, storage: WalletMachineStorage(wallet: wallet))
        let id = try await store.save(h)
        let h3 = try await store.restore(id: id)
        #expect(try sm.serialize(h3) == json)
        await #expect(throws: StateMachineError.notFound("no state machine is saved under id missing")) {
            _ = try await store.restore(id: "missing")
        }
    }
}
