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

/// Connection (invitee) states, numbered as legacy libvcx numbers them
/// (`vcx/libvcx/src/v3/handlers/connection/states.rs`, `DidExchangeState::code`): not started 1
/// (`VcxStateInitialized`), invited 2 (`VcxStateOfferSent`), requested and responded both 3
/// (`VcxStateRequestReceived`), completed 4 (`VcxStateAccepted`).
public enum ConnectionState: Sendable, Hashable, CaseIterable, NumberedState {
    /// Not started (1).
    case none
    /// An invitation was received (2).
    case invited
    /// The connection request was sent (3).
    case requested
    /// The inviter's response arrived (3).
    case responded
    /// The connection is established (4).
    case completed

    /// The state number libvcx reports: 1, 2, 3, 3, 4.
    public var number: Int {
        switch self {
        case .none: return 1
        case .invited: return 2
        case .requested, .responded: return 3
        case .completed: return 4
        }
    }

    /// The step's name in serialized JSON (version 3), which tells the two steps numbered 3 apart.
    public var name: String {
        switch self {
        case .none: return "none"
        case .invited: return "invited"
        case .requested: return "requested"
        case .responded: return "responded"
        case .completed: return "completed"
        }
    }

    /// The state named `name` (as ``name`` writes it), nil for an unknown name.
    public init?(name: String) {
        guard let found = Self.allCases.first(where: { $0.name == name }) else { return nil }
        self = found
    }

    /// The state a version-1 or version-2 JSON number meant (0 none, 1 invited, 2 requested,
    /// 3 responded, 4 completed); nil for any other number.
    init?(version2Number: Int) {
        switch version2Number {
        case 0: self = .none
        case 1: self = .invited
        case 2: self = .requested
        case 3: self = .responded
        case 4: self = .completed
        default: return nil
        }
    }
}

/// Credential (holder) states, with the numbers legacy libvcx's holder `Credential` reports
/// (`vcx/libvcx/src/api/credential.rs`, aries): offer received 3 (`VcxStateRequestReceived`),
/// request sent 2 (`VcxStateOfferSent`), credential received and accepted both 4
/// (`VcxStateAccepted`; VCX stores the credential on receipt, Coffer has a separate accept step),
/// rejected — declined by the holder or ended by the issuer's problem report — None (0).
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
    /// The holder declined the offer or the credential, or the issuer's problem report ended it (0).
    case rejected

    /// The state number libvcx reports: 0, 3, 2, 4, 4, 0.
    public var number: Int {
        switch self {
        case .none, .rejected: return 0
        case .offerReceived: return 3
        case .requestSent: return 2
        case .credentialReceived, .accepted: return 4
        }
    }

    /// The step's name in serialized JSON (version 2 and 3), which tells the steps sharing a number apart.
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

    /// The number version-2 JSON wrote for this state (rejected was 9 then).
    var version2Number: Int { self == .rejected ? 9 : number }
}

/// Disclosed-proof (prover) states, numbered as legacy libvcx's `DisclosedProof` reports them
/// (`vcx/libvcx/src/api/disclosed_proof.rs`, aries): request received 3, presentation sent 2,
/// acknowledged 4, rejected — declined by the holder or ended by the verifier's problem report —
/// None (0).
public enum DisclosedProofState: Sendable, Hashable, CaseIterable, NumberedState {
    /// Not started (0).
    case none
    /// A proof request was received (3).
    case requestReceived
    /// The presentation was sent (2).
    case presentationSent
    /// The verifier acknowledged the presentation (4).
    case acknowledged
    /// The holder declined the request, or the verifier's problem report ended it (0).
    case rejected

    /// The state number libvcx reports: 0, 3, 2, 4, 0.
    public var number: Int {
        switch self {
        case .none, .rejected: return 0
        case .requestReceived: return 3
        case .presentationSent: return 2
        case .acknowledged: return 4
        }
    }

    /// The step's name in serialized JSON (version 3), which tells none from rejected.
    public var name: String {
        switch self {
        case .none: return "none"
        case .requestReceived: return "request_received"
        case .presentationSent: return "presentation_sent"
        case .acknowledged: return "acknowledged"
        case .rejected: return "rejected"
        }
    }

    /// The state named `name` (as ``name`` writes it), nil for an unknown name.
    public init?(name: String) {
        guard let found = Self.allCases.first(where: { $0.name == name }) else { return nil }
        self = found
    }

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

    /// The state a version-2 JSON number meant (3 request received, 2 presentation sent,
    /// 4 acknowledged, 9 rejected, 0 none); nil for any other number.
    init?(version2Number: Int) {
        switch version2Number {
        case 0: self = .none
        case 3: self = .requestReceived
        case 2: self = .presentationSent
        case 4: self = .acknowledged
        case 9: self = .rejected
        default: return nil
        }
    }
}

/// Reads and writes a machine's `state` (the number) and `step` (the name) in version-3 JSON.
protocol NamedState: NumberedState {
    var name: String { get }
    init?(name: String)
}

extension ConnectionState: NamedState {}
extension CredentialState: NamedState {}
extension DisclosedProofState: NamedState {}

enum StateCoding {
    /// `step` decides the state and `state` must agree with it.
    static func decode<S: NamedState, K: CodingKey>(_ c: KeyedDecodingContainer<K>, state: K, step: K) throws -> S {
        let name = try c.decode(String.self, forKey: step)
        guard let found = S(name: name) else {
            throw DecodingError.dataCorruptedError(forKey: step, in: c, debugDescription: "unknown step \(name)")
        }
        let number = try c.decode(Int.self, forKey: state)
        guard number == found.number else {
            throw DecodingError.dataCorruptedError(
                forKey: state, in: c, debugDescription: "state \(number) does not match step \(name) (\(found.number))")
        }
        return found
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

    init(id: String, state: ConnectionState, invitation: String, myVerkey: String? = nil, theirVerkey: String? = nil) {
        self.id = id
        self.state = state
        self.invitation = invitation
        self.myVerkey = myVerkey
        self.theirVerkey = theirVerkey
    }

    enum CodingKeys: String, CodingKey { case id, state, step, invitation, myVerkey, theirVerkey }

    /// Decodes version-3 data; `step` decides the state and must agree with `state`.
    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        id = try c.decode(String.self, forKey: .id)
        state = try StateCoding.decode(c, state: .state, step: .step)
        invitation = try c.decode(String.self, forKey: .invitation)
        myVerkey = try c.decodeIfPresent(String.self, forKey: .myVerkey)
        theirVerkey = try c.decodeIfPresent(String.self, forKey: .theirVerkey)
    }

    /// Encodes version-3 data.
    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(id, forKey: .id)
        try c.encode(state.number, forKey: .state)
        try c.encode(state.name, forKey: .step)
        try c.encode(invitation, forKey: .invitation)
        try c.encodeIfPresent(myVerkey, forKey: .myVerkey)
        try c.encodeIfPresent(theirVerkey, forKey: .theirVerkey)
    }
}

/// A credential machine's data. Its JSON (version 3) has `state` (the VCX number), `step`
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

    /// Decodes version-3 data; `step` decides the state and must agree with `state`.
    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        id = try c.decode(String.self, forKey: .id)
        state = try StateCoding.decode(c, state: .state, step: .step)
        offer = try c.decode(CredentialOffer.self, forKey: .offer)
        received = try c.decodeIfPresent([String: String].self, forKey: .received)
    }

    /// Encodes version-3 data.
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

    init(id: String, state: DisclosedProofState, request: ProofRequest, presented: [String: String]? = nil) {
        self.id = id
        self.state = state
        self.request = request
        self.presented = presented
    }

    enum CodingKeys: String, CodingKey { case id, state, step, request, presented }

    /// Decodes version-3 data; `step` decides the state and must agree with `state`.
    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        id = try c.decode(String.self, forKey: .id)
        state = try StateCoding.decode(c, state: .state, step: .step)
        request = try c.decode(ProofRequest.self, forKey: .request)
        presented = try c.decodeIfPresent([String: String].self, forKey: .presented)
    }

    /// Encodes version-3 data.
    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(id, forKey: .id)
        try c.encode(state.number, forKey: .state)
        try c.encode(state.name, forKey: .step)
        try c.encode(request, forKey: .request)
        try c.encodeIfPresent(presented, forKey: .presented)
    }
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
