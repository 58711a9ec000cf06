import Foundation
import Testing

@testable import CofferStateMachines
@testable import CofferWallet

/// libvcx's `VcxStateType` (`vcx/libvcx/src/api/mod.rs`, hyperledger/indy-sdk).
enum VcxStateType: Int {
    case none = 0
    case initialized = 1
    case offerSent = 2
    case requestReceived = 3
    case accepted = 4
}

/// The numbers legacy libvcx reports, written down from its sources:
/// `vcx/libvcx/src/v3/handlers/connection/states.rs:58-62` (invitee `DidExchangeState::code`),
/// `vcx/libvcx/src/api/credential.rs` and `api/disclosed_proof.rs` (aries holder/prover states;
/// a decline or the other side's problem report is None).
enum LibVCX {
    static let connection: [(ConnectionState, VcxStateType)] = [
        (.none, .initialized), (.invited, .offerSent), (.requested, .requestReceived), (.responded, .requestReceived),
        (.completed, .accepted),
    ]
    static let credential: [(CredentialState, VcxStateType)] = [
        (.none, .none), (.offerReceived, .requestReceived), (.requestSent, .offerSent), (.credentialReceived, .accepted),
        (.accepted, .accepted), (.rejected, .none),
    ]
    static let proof: [(DisclosedProofState, VcxStateType)] = [
        (.none, .none), (.requestReceived, .requestReceived), (.presentationSent, .offerSent), (.acknowledged, .accepted),
        (.rejected, .none),
    ]
}

/// A committed version-2 fixture (the numbers before libvcx's connection numbers and declines).
struct Version2Case: Sendable, CustomTestStringConvertible {
    let file: String
    let kind: MachineKind
    let state: String
    var testDescription: String { file }

    static let all: [Version2Case] =
        ["none", "invited", "requested", "responded", "completed"].map {
            Version2Case(file: "connection_v2_\($0)", kind: .connection, state: $0)
        }
        + ["none", "offer_received", "request_sent", "credential_received", "accepted", "rejected"].map {
            Version2Case(file: "credential_v2_\($0)", kind: .credential, state: $0)
        }
        + ["none", "request_received", "presentation_sent", "acknowledged", "rejected"].map {
            Version2Case(file: "disclosed_proof_v2_\($0)", kind: .disclosedProof, state: $0)
        }

    func json() throws -> String {
        let url = try #require(Bundle.module.url(forResource: file, withExtension: "json", subdirectory: "Fixtures"))
        return try String(contentsOf: url, encoding: .utf8)
    }

    /// The state's name and libvcx's number for it.
    func expected(_ machine: AnyMachine) -> (name: String, number: Int)? {
        switch machine {
        case .connection(let m): return (m.state.name, LibVCX.connection.first { $0.0 == m.state }!.1.rawValue)
        case .credential(let m): return (m.state.name, LibVCX.credential.first { $0.0 == m.state }!.1.rawValue)
        case .disclosedProof(let m): return (m.state.name, LibVCX.proof.first { $0.0 == m.state }!.1.rawValue)
        }
    }
}

@Suite("libvcx's state numbers")
struct VCXNumbersTests {
    @Test("every connection state reports libvcx's invitee number (1, 2, 3, 3, 4)")
    func connection() {
        for (state, vcx) in LibVCX.connection { #expect(state.number == vcx.rawValue, "\(state)") }
        #expect(LibVCX.connection.count == ConnectionState.allCases.count)
    }

    @Test("every credential state reports libvcx's holder number; a decline is None (0)")
    func credential() {
        for (state, vcx) in LibVCX.credential { #expect(state.number == vcx.rawValue, "\(state)") }
        #expect(LibVCX.credential.count == CredentialState.allCases.count)
    }

    @Test("every disclosed-proof state reports libvcx's prover number; a decline is None (0)")
    func proof() {
        for (state, vcx) in LibVCX.proof { #expect(state.number == vcx.rawValue, "\(state)") }
        #expect(LibVCX.proof.count == DisclosedProofState.allCases.count)
    }

    @Test("a connection driven through its steps reports 2, 3, 3, 4")
    func drivenConnection() async throws {
        let (sm, _, wallet) = try await makeMachines()
        let h = sm.connectionCreate(invitation: "i")
        var numbers = [try sm.state(h)]
        numbers.append(try await sm.connectionSendRequest(h).to)
        numbers.append(try sm.connectionReceiveResponse(h, theirVerkey: try await wallet.createKey()).to)
        numbers.append(try await sm.connectionComplete(h).to)
        #expect(numbers == [2, 3, 3, 4])
    }

    @Test("a declined proof request reports None (0), as libvcx's aries DisclosedProof does")
    func declinedProof() async throws {
        let (sm, _, _) = try await makeMachines()
        let p = sm.proofCreate(request: ProofRequest(name: "n", requestedAttributes: [:]))
        #expect(try await sm.proofReject(p).to == VcxStateType.none.rawValue)
    }

    @Test("a committed version-2 machine loads into the same state under libvcx's numbers", arguments: Version2Case.all)
    func version2Converts(_ c: Version2Case) async throws {
        let (sm, _, _) = try await makeMachines()
        let json = try c.json()
        #expect(json.contains(#""version":2"#))
        let h = try await sm.deserialize(json, as: c.kind)
        let machine = try sm.table.machine(h)
        let expected = try #require(c.expected(machine))
        #expect(expected.name == c.state)
        #expect(try sm.state(h) == expected.number)
        let again = try sm.serialize(h)
        #expect(again.contains(#""version":3"#))
        #expect(try sm.table.machine(try await sm.deserialize(again, as: c.kind)) == machine)
    }

    @Test("a version-2 machine with a number its version never wrote is refused")
    func version2BadNumber() async throws {
        let (sm, _, _) = try await makeMachines()
        let bad = try Version2Case.all.first { $0.file == "credential_v2_rejected" }!.json()
            .replacingOccurrences(of: #""state":9"#, with: #""state":0"#)
        await #expect(throws: StateMachineError.self) { _ = try await sm.deserialize(bad, as: .credential) }
        let conn = try Version2Case.all.first { $0.file == "connection_v2_responded" }!.json()
            .replacingOccurrences(of: #""state":3"#, with: #""state":7"#)
        await #expect(throws: StateMachineError.self) { _ = try await sm.deserialize(conn, as: .connection) }
    }
}
