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

/// Connection states, numbered as the SDK numbers states.
public enum ConnectionState: Int, Sendable, Codable {
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
}

/// Credential (holder) states, numbered as the SDK numbers states.
public enum CredentialState: Int, Sendable, Codable {
    /// Not started.
    case none = 0
    /// An offer was received.
    case offerReceived = 1
    /// The credential request was sent.
    case requestSent = 2
    /// The issuer's credential arrived.
    case credentialReceived = 3
    /// The holder accepted and stored the credential.
    case accepted = 4
    /// The holder rejected the offer or the credential.
    case rejected = 9
}

/// Disclosed-proof (prover) states, numbered as the SDK numbers states.
public enum DisclosedProofState: Int, Sendable, Codable {
    /// Not started.
    case none = 0
    /// A proof request was received.
    case requestReceived = 1
    /// The presentation was sent.
    case presentationSent = 2
    /// The verifier acknowledged the presentation.
    case acknowledged = 4
    /// The holder rejected the request (or the verifier rejected the presentation).
    case rejected = 9
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
    /// The credential signature (kept as a wallet secret once accepted, never in the machine's JSON after that).
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

/// A credential machine's data.
public struct CredentialMachine: Sendable, Codable, Hashable {
    /// Stable identifier (also the credential's id in the wallet once accepted).
    public var id: String
    /// Current state.
    public var state: CredentialState
    /// The offer.
    public var offer: CredentialOffer
    /// The issued credential while it waits for acceptance; cleared when accepted (the
    /// signature then lives only as a wallet secret).
    public var issued: IssuedCredential?
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
        case let .connection(m): return m.id
        case let .credential(m): return m.id
        case let .disclosedProof(m): return m.id
        }
    }

    /// Its state number.
    public var stateNumber: Int {
        switch self {
        case let .connection(m): return m.state.rawValue
        case let .credential(m): return m.state.rawValue
        case let .disclosedProof(m): return m.state.rawValue
        }
    }
}
