// The VCX way of driving machines: create a machine from the protocol message an agent received,
// and hand it every later message (`update(_:message:)`, VCX's `update_state_with_message`).
// Each message is parsed here and dispatched to the typed transition it stands for, which goes
// through `step` like every other transition.

import CofferWallet
import Foundation

/// The Aries message types the holder's machines understand, by `@type`.
public enum AriesMessageType: String, Sendable, CaseIterable {
    /// `issue-credential/1.0/offer-credential`: creates a credential machine.
    case credentialOffer = "issue-credential/1.0/offer-credential"
    /// `issue-credential/1.0/issue-credential`: the issued credential (request sent → received).
    case credential = "issue-credential/1.0/issue-credential"
    /// `issue-credential/1.0/problem-report`: the issuer ended the exchange.
    case credentialProblemReport = "issue-credential/1.0/problem-report"
    /// `present-proof/1.0/request-presentation`: creates a disclosed-proof machine.
    case presentationRequest = "present-proof/1.0/request-presentation"
    /// `present-proof/1.0/ack`: the verifier accepted the presentation.
    case presentationAck = "present-proof/1.0/ack"
    /// `present-proof/1.0/problem-report`: the verifier ended the exchange.
    case presentationProblemReport = "present-proof/1.0/problem-report"
    /// `connections/1.0/response`: the inviter's connection response.
    case connectionResponse = "connections/1.0/response"

    /// The type named by an `@type` value, in either of Aries's URI forms
    /// (`https://didcomm.org/…` or `did:sov:BzCbsNYhMrjHiqZDTUASHg;spec/…`); `_` and `-` in the
    /// message name are the same (Aries agents write `problem_report` and `problem-report`).
    public init?(atType: String) {
        var rest = atType
        for prefix in ["https://didcomm.org/", "did:sov:BzCbsNYhMrjHiqZDTUASHg;spec/"] where rest.hasPrefix(prefix) {
            rest = String(rest.dropFirst(prefix.count))
        }
        rest = rest.replacingOccurrences(of: "problem_report", with: "problem-report")
        guard let found = Self(rawValue: rest) else { return nil }
        self = found
    }

    /// The kind of machine the message belongs to.
    public var machineKind: MachineKind {
        switch self {
        case .credentialOffer, .credential, .credentialProblemReport: return .credential
        case .presentationRequest, .presentationAck, .presentationProblemReport: return .disclosedProof
        case .connectionResponse: return .connection
        }
    }
}

/// A parsed protocol message: its type and body.
struct AriesMessage {
    let type: AriesMessageType
    let body: [(String, JSONValue)]

    /// Parses `json`, an Aries message object with a known `@type`.
    init(_ json: String) throws(StateMachineError) {
        let value: JSONValue
        do { value = try JSONValue.parse(json) } catch { throw .invalidInput("the message is not JSON: \(error)") }
        guard case .object(let members) = value else { throw .invalidInput("the message is \(value.kindName), not a JSON object") }
        guard let t = members.first(where: { $0.0 == "@type" })?.1 else { throw .invalidInput("the message has no \"@type\"") }
        guard case .string(let name) = t else { throw .invalidInput("the message's \"@type\" is \(t.kindName), not a string") }
        guard let type = AriesMessageType(atType: name) else {
            throw .invalidInput(
                "unknown message type \"\(name)\"; the holder's machines understand "
                    + AriesMessageType.allCases.map(\.rawValue).joined(separator: ", "))
        }
        self.type = type
        body = members
    }

    subscript(_ key: String) -> JSONValue? { body.first(where: { $0.0 == key })?.1 }

    /// The first attachment of `key` (`offers~attach`, …) as JSON: `data.json`, or `data.base64` decoded.
    func attachment(_ key: String) throws(StateMachineError) -> [(String, JSONValue)] {
        guard case .array(let list)? = self[key], case .object(let first)? = list.first,
            case .object(let data)? = first.first(where: { $0.0 == "data" })?.1
        else { throw .invalidInput("the \(type.rawValue) message has no \"\(key)\" attachment with data") }
        if case .object(let json)? = data.first(where: { $0.0 == "json" })?.1 { return json }
        guard case .string(let b64)? = data.first(where: { $0.0 == "base64" })?.1,
            let bytes = Data(base64Encoded: Self.padded(b64)) ?? Data(base64Encoded: Self.padded(Self.standard(b64)))
        else { throw .invalidInput("the \"\(key)\" attachment's data is neither \"json\" nor valid \"base64\"") }
        let decoded: JSONValue
        do { decoded = try JSONValue.parse(String(decoding: bytes, as: UTF8.self)) } catch {
            throw .invalidInput("the \"\(key)\" attachment is not JSON: \(error)")
        }
        guard case .object(let object) = decoded else { throw .invalidInput("the \"\(key)\" attachment is not a JSON object") }
        return object
    }

    static func standard(_ b64: String) -> String {
        b64.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
    }

    static func padded(_ b64: String) -> String {
        let stripped = b64.trimmingCharacters(in: CharacterSet(charactersIn: "="))
        return stripped + String(repeating: "=", count: (4 - stripped.count % 4) % 4)
    }

    static func string(_ object: [(String, JSONValue)], _ key: String, in what: String) throws(StateMachineError) -> String {
        guard case .string(let s)? = object.first(where: { $0.0 == key })?.1 else {
            throw .invalidInput("\(what) has no string \"\(key)\"")
        }
        return s
    }

    /// The offer of an `offer-credential` message: ids from the attached libindy offer, the
    /// attribute values from `credential_preview`.
    func credentialOffer() throws(StateMachineError) -> CredentialOffer {
        let offer = try attachment("offers~attach")
        let schemaID = try Self.string(offer, "schema_id", in: "the offer attachment")
        let credDefID = try Self.string(offer, "cred_def_id", in: "the offer attachment")
        // The issuer's DID: given, or the first segment of the credential definition id (Indy's form).
        let issuer =
            (try? Self.string(offer, "issuer_did", in: "")) ?? String(credDefID.split(separator: ":").first ?? Substring(credDefID))
        var attributes = [String: String]()
        if case .object(let preview)? = self["credential_preview"],
            case .array(let list)? = preview.first(where: { $0.0 == "attributes" })?.1
        {
            for case .object(let attribute) in list {
                let name = try Self.string(attribute, "name", in: "a credential_preview attribute")
                attributes[name] = try Self.string(attribute, "value", in: "credential_preview attribute \(name)")
            }
        }
        return CredentialOffer(issuerDID: issuer, schemaID: schemaID, credentialDefinitionID: credDefID, attributes: attributes)
    }

    /// The credential of an `issue-credential` message: `values` (`raw` of each) and the signature
    /// (the attached `signature` object's JSON text).
    func issuedCredential() throws(StateMachineError) -> IssuedCredential {
        let credential = try attachment("credentials~attach")
        guard case .object(let values)? = credential.first(where: { $0.0 == "values" })?.1 else {
            throw .invalidInput("the credential attachment has no \"values\" object")
        }
        var attributes = [String: String]()
        for (name, value) in values {
            guard case .object(let v) = value else { throw .invalidInput("credential value \(name) is not an object with \"raw\"") }
            attributes[name] = try Self.string(v, "raw", in: "credential value \(name)")
        }
        guard let signature = credential.first(where: { $0.0 == "signature" })?.1 else {
            throw .invalidInput("the credential attachment has no \"signature\"")
        }
        return IssuedCredential(attributes: attributes, signature: signature.jsonText)
    }

    /// The proof request of a `request-presentation` message (the attached libindy request).
    func proofRequest() throws(StateMachineError) -> ProofRequest {
        let request = try attachment("request_presentations~attach")
        do {
            return try JSONDecoder().decode(ProofRequest.self, from: Data(JSONValue.object(request).jsonText.utf8))
        } catch {
            throw .invalidInput("the proof request attachment is not a proof request (name, requested_attributes): \(error)")
        }
    }

    /// The inviter's key: `connection~sig.signer` of a `response` message.
    func responseSigner() throws(StateMachineError) -> String {
        guard case .object(let sig)? = self["connection~sig"] else {
            throw .invalidInput("the connection response has no \"connection~sig\"")
        }
        return try Self.string(sig, "signer", in: "the connection response's connection~sig")
    }
}

extension StateMachines {
    /// A credential machine for a received `offer-credential` message (VCX's
    /// `vcx_credential_create_with_offer`; state offer received, 3).
    /// - Throws: ``StateMachineError/invalidInput(_:)`` naming what is wrong with the message.
    public func credentialCreate(offerMessage json: String) throws(StateMachineError) -> Int {
        let message = try AriesMessage(json)
        guard message.type == .credentialOffer else {
            throw .invalidInput("a credential machine is created from an offer-credential message, not \(message.type.rawValue)")
        }
        return credentialCreate(offer: try message.credentialOffer())
    }

    /// A disclosed-proof machine for a received `request-presentation` message (VCX's
    /// `vcx_disclosed_proof_create_with_request`; state request received, 3).
    /// - Throws: ``StateMachineError/invalidInput(_:)`` naming what is wrong with the message.
    public func proofCreate(requestMessage json: String) throws(StateMachineError) -> Int {
        let message = try AriesMessage(json)
        guard message.type == .presentationRequest else {
            throw .invalidInput("a disclosed-proof machine is created from a request-presentation message, not \(message.type.rawValue)")
        }
        return proofCreate(request: try message.proofRequest())
    }

    /// Hands the machine behind `handle` the next protocol message (VCX's
    /// `update_state_with_message`): the message's `@type` picks the transition — a connection
    /// `response`, a credential `issue-credential` or `problem-report`, a proof `ack` or
    /// `problem-report`. Returns the transition, whose `to` is the new state.
    /// - Throws: ``StateMachineError/invalidInput(_:)`` for a message that is not JSON, of an
    ///   unknown type, for another kind of machine, or one that creates machines;
    ///   ``StateMachineError/invalidTransition(kind:operation:state:)`` for a message out of order.
    ///   Either way the machine is unchanged.
    public func update(_ handle: Int, message json: String) async throws(StateMachineError) -> Transition {
        let message = try AriesMessage(json)
        let kind = try table.machine(handle).kind
        guard message.type.machineKind == kind else {
            throw .invalidInput(
                "a \(message.type.rawValue) message is for a \(message.type.machineKind.rawValue) machine; handle \(handle) is a \(kind.rawValue) machine"
            )
        }
        switch message.type {
        case .credentialOffer, .presentationRequest:
            throw .invalidInput(
                "a \(message.type.rawValue) message creates a machine (credentialCreate(offerMessage:) / proofCreate(requestMessage:)); it does not advance one"
            )
        case .connectionResponse:
            return try connectionReceiveResponse(handle, theirVerkey: try message.responseSigner())
        case .credential:
            return try await credentialReceive(handle, credential: try message.issuedCredential())
        case .credentialProblemReport:
            return try await credentialReceiveProblemReport(handle)
        case .presentationAck:
            return try proofReceiveAck(handle)
        case .presentationProblemReport:
            return try proofReceiveProblemReport(handle)
        }
    }

    /// The issuer's problem report ended the exchange (request sent or credential received →
    /// rejected); nothing is sent. A received credential's signature is removed from the wallet.
    public func credentialReceiveProblemReport(_ handle: Int) async throws(StateMachineError) -> Transition {
        let id = try credential(handle).id
        let transition = try step(handle, CredentialMachine.self, "receiveProblemReport", update: { c in c.received = nil })
        if transition.from == CredentialState.credentialReceived.number && transition.mustSave {
            try? await wallet.removeCredentialSignature(credentialID: id)
        }
        return transition
    }

    /// The verifier's problem report ended the exchange (presentation sent → rejected); nothing is sent.
    public func proofReceiveProblemReport(_ handle: Int) throws(StateMachineError) -> Transition {
        try step(handle, DisclosedProofMachine.self, "receiveProblemReport")
    }
}
