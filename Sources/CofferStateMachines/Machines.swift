// The holder-side state machines of the Aries protocols the SDK uses, as plain Codable values.
import Foundation

/// The kinds of state machine.
public enum MachineKind: String, Sendable, Codable, CaseIterable {
    /// A connection with another agent (invitee side).
    case connection
    /// A credential being issued to the holder.
    case credential
    /// A proof the holder is asked to disclose.
    case disclosedProof = "disclosed_proof"
}

/// A machine state and the number the SDK (VCX) reports for it.
protocol NumberedState: Sendable, Hashable {
    /// The state number VCX reports.
    var number: Int { get }
}

/// Connection states, numbered as VCX numbers them (1 → 4).
public enum ConnectionState: Int, Sendable, Codable, CaseIterable, NumberedState {
    /// Not started.
    case none = 0
    /// An invitation was received.
    case invited = 1
    /// The connection request was sent.
    case requested = 2
    /// The inviter's response arrived.
    case responded = 3
    /// The connection is established.
    case completed = 4

    /// The state number VCX reports (the raw value).
    public var number: Int { rawValue }
}

/// Credential (holder) states, with the numbers VCX's holder `Credential` reports:
/// offer received 3 (`VcxStateRequestReceived`), request sent 2 (`VcxStateOfferSent`),
/// credential received and accepted both 4 (`VcxStateAccepted`; VCX stores the credential on
/// receipt, Coffer has a separate accept step), rejected 9.
///
/// A problem report from the issuer is not a transition of its own in Coffer: the app records it
/// with ``StateMachines/credentialReject(_:)``, which reports 9. VCX reports a credential ended by
/// the other side's problem report as None (0); an app ported from VCX that checks for 0 there
/// must check for 9.
public enum CredentialState: Sendable, Hashable, CaseIterable, NumberedState {
    /// Not started.
    case none
    /// An offer was received (3).
    case offerReceived
    /// The credential request was sent (2).
    case requestSent
    /// The issuer's credential arrived; its signature is already a wallet secret (4).
    case credentialReceived
    /// The holder accepted and stored the credential (4).
    case accepted
    /// The holder rejected the offer or the credential (9).
    case rejected

    /// The state number VCX reports: 0, 3, 2, 4, 4, 9.
    public var number: Int {
        switch self {
        case .none: return 0
        case .offerReceived: return 3
        case .requestSent: return 2
        case .credentialReceived, .accepted: return 4
        case .rejected: return 9
        }
    }

    /// The step's name in serialized JSON (version 2), which tells the two steps numbered 4 apart.
    public var name: String {
        switch self {
        case .none: return "none"
        case .offerReceived: return "offer_received"
        case .requestSent: return "request_sent"
        case .credentialReceived: return "credential_received"
        case .accepted: return "accepted"
        case .rejected: return "rejected"
        }
    }

    /// The state named `name` (as ``name`` writes it), nil for an unknown name.
    public init?(name: String) {
        guard let found = Self.allCases.first(where: { $0.name == name }) else { return nil }
        self = found
    }

    /// The state a version-1 JSON number meant (1 offer received, 2 request sent, 3 credential
    /// received, 4 accepted, 9 rejected, 0 none); nil for any other number.
    init?(version1Number: Int) {
        switch version1Number {
        case 0: self = .none
        case 1: self = .offerReceived
        case 2: self = .requestSent
        case 3: self = .credentialReceived
        case 4: self = .accepted
        case 9: self = .rejected
        default: return nil
        }
    }
}

/// Disclosed-proof (prover) states, numbered as VCX's `DisclosedProof` reports them: request
/// received 3, presentation sent 2, acknowledged 4, rejected 9.
///
/// A problem report from the verifier is not a transition of its own in Coffer: the app records
/// it with ``StateMachines/proofReject(_:)`` from presentation sent, which reports 9. VCX reports
/// a proof ended by the other side's problem report as None (0); an app ported from VCX that
/// checks for 0 there must check for 9.
public enum DisclosedProofState: Int, Sendable, Codable, CaseIterable, NumberedState {
    /// Not started.
    case none = 0
    /// A proof request was received.
    case requestReceived = 3
    /// The presentation was sent.
    case presentationSent = 2
    /// The verifier acknowledged the presentation.
    case acknowledged = 4
    /// The holder rejected the request (or the verifier rejected the presentation).
    case rejected = 9

    /// The state number VCX reports (the raw value).
    public var number: Int { rawValue }

    /// The state a version-1 JSON number meant (1 request received, 2 presentation sent,
    /// 4 acknowledged, 9 rejected, 0 none); nil for any other number.
    init?(version1Number: Int) {
        switch version1Number {
        case 0: self = .none
        case 1: self = .requestReceived
        case 2: self = .presentationSent
        case 4: self = .acknowledged
        case 9: self = .rejected
        default: return nil
        }
    }
}

/// A credential offer: what the issuer proposes.
public struct CredentialOffer: Sendable, Codable, Hashable {
    /// The issuer's identifier (DID).
    public var issuerDID: String
    /// The schema identifier.
    public var schemaID: String
    /// The credential definition identifier.
    public var credentialDefinitionID: String
    /// Attribute names and the values offered.
    public var attributes: [String: String]

    /// An offer.
    public init(issuerDID: String, schemaID: String, credentialDefinitionID: String, attributes: [String: String]) {
        self.issuerDID = issuerDID
        self.schemaID = schemaID
        self.credentialDefinitionID = credentialDefinitionID
        self.attributes = attributes
    }
}

/// The credential the issuer sends: attribute values and the (unblinded) signature.
public struct IssuedCredential: Sendable, Codable, Hashable {
    /// Attribute names and values.
    public var attributes: [String: String]
    /// The credential signature. ``StateMachines/credentialReceive(_:credential:)`` stores it as a
    /// wallet secret at once; it is never part of a machine or its JSON.
    public var signature: String

    /// An issued credential.
    public init(attributes: [String: String], signature: String) {
        self.attributes = attributes
        self.signature = signature
    }
}

/// A proof request: attributes wanted, each with restrictions on which credentials may answer.
public struct ProofRequest: Sendable, Codable, Hashable {
    /// One requested attribute.
    public struct Attribute: Sendable, Codable, Hashable {
        /// The attribute name.
        public var name: String
        /// Restrictions, list form: a credential matches when it satisfies any one entry, and an
        /// entry when it has every field given (`schema_id`, `cred_def_id`, `issuer_did`, or any tag).
        public var restrictions: [[String: String]]

        /// A requested attribute.
        public init(name: String, restrictions: [[String: String]] = []) {
            self.name = name
            self.restrictions = restrictions
        }
    }

    /// The request's name.
    public var name: String
    /// Requested attributes by referent.
    public var requestedAttributes: [String: Attribute]

    /// A proof request.
    public init(name: String, requestedAttributes: [String: Attribute]) {
        self.name = name
        self.requestedAttributes = requestedAttributes
    }

    enum CodingKeys: String, CodingKey {
        case name
        case requestedAttributes = "requested_attributes"
    }
}

/// A connection machine's data.
public struct ConnectionMachine: Sendable, Codable, Hashable {
    /// Stable identifier (the key it is saved under).
    public var id: String
    /// Current state.
    public var state: ConnectionState
    /// The invitation as received.
    public var invitation: String
    /// This side's key for the connection (its private half stays in the wallet).
    public var myVerkey: String?
    /// The other side's key, from its response.
    public var theirVerkey: String?
}

/// A credential machine's data. Its JSON (version 2) has `state` (the VCX number), `step`
/// (the state's ``CredentialState/name``), `offer` and, while it waits for acceptance,
/// `received`: never a signature, which the wallet keeps from the moment it arrives.
public struct CredentialMachine: Sendable, Codable, Hashable {
    /// Stable identifier (also the credential's id in the wallet, and its signature's).
    public var id: String
    /// Current state.
    public var state: CredentialState
    /// The offer.
    public var offer: CredentialOffer
    /// The issued credential's attributes while it waits for acceptance; cleared when accepted
    /// or rejected.
    public var received: [String: String]?

    init(id: String, state: CredentialState, offer: CredentialOffer, received: [String: String]? = nil) {
        self.id = id
        self.state = state
        self.offer = offer
        self.received = received
    }

    enum CodingKeys: String, CodingKey { case id, state, step, offer, received }

    /// Decodes version-2 data; `step` decides the state and must agree with `state`.
    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        id = try c.decode(String.self, forKey: .id)
        let step = try c.decode(String.self, forKey: .step)
        guard let state = CredentialState(name: step) else {
            throw DecodingError.dataCorruptedError(forKey: .step, in: c, debugDescription: "unknown credential step \(step)")
        }
        let number = try c.decode(Int.self, forKey: .state)
        guard number == state.number else {
            throw DecodingError.dataCorruptedError(
                forKey: .state, in: c, debugDescription: "state \(number) does not match step \(step) (\(state.number))")
        }
        self.state = state
        offer = try c.decode(CredentialOffer.self, forKey: .offer)
        received = try c.decodeIfPresent([String: String].self, forKey: .received)
    }

    /// Encodes version-2 data.
    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(id, forKey: .id)
        try c.encode(state.number, forKey: .state)
        try c.encode(state.name, forKey: .step)
        try c.encode(offer, forKey: .offer)
        try c.encodeIfPresent(received, forKey: .received)
    }
}

/// A disclosed-proof machine's data.
public struct DisclosedProofMachine: Sendable, Codable, Hashable {
    /// Stable identifier.
    public var id: String
    /// Current state.
    public var state: DisclosedProofState
    /// The request.
    public var request: ProofRequest
    /// Referent → credential id used in the presentation, once sent.
    public var presented: [String: String]?
}

/// Any machine, as the handle table holds it.
public enum AnyMachine: Sendable, Hashable {
    /// A connection.
    case connection(ConnectionMachine)
    /// A credential.
    case credential(CredentialMachine)
    /// A disclosed proof.
    case disclosedProof(DisclosedProofMachine)

    /// Its kind.
    public var kind: MachineKind {
        switch self {
        case .connection: return .connection
        case .credential: return .credential
        case .disclosedProof: return .disclosedProof
        }
    }

    /// Its identifier.
    public var id: String {
        switch self {
        case .connection(let m): return m.id
        case .credential(let m): return m.id
        case .disclosedProof(let m): return m.id
        }
    }

    /// Its state number, as VCX numbers states.
    public var stateNumber: Int {
        switch self {
        case .connection(let m): return m.state.number
        case .credential(let m): return m.state.number
        case .disclosedProof(let m): return m.state.number
        }
    }

    /// Its state, whichever kind it is.
    var state: any NumberedState {
        switch self {
        case .connection(let m): return m.state
        case .credential(let m): return m.state
        case .disclosedProof(let m): return m.state
        }
    }
}
