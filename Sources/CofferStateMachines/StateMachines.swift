// Transitions of the holder-side machines. The message exchange is an injected protocol; the
// wallet keeps keys, the master secret, credentials and their signatures.
import CofferCrypto
@_spi(CofferSDK) import CofferWallet
import Foundation

/// A message the holder sends; delivering it (transport, AnonCreds math) is the app's protocol's job.
public enum OutboundMessage: Sendable, Hashable {
    /// Answer to an invitation, with this side's new verkey.
    case connectionRequest(invitation: String, verkey: String)
    /// Acknowledges the inviter's response.
    case connectionAck(connectionID: String)
    /// Requests the offered credential; `masterSecretBinding` is derived from the master secret
    /// for this credential definition (the secret itself never leaves the wallet).
    case credentialRequest(credentialID: String, offer: CredentialOffer, masterSecretBinding: Data)
    /// Tells the issuer the offer or credential was rejected.
    case credentialRejection(credentialID: String)
    /// Presents credentials for a proof request: referent → credential id.
    case presentation(proofID: String, referents: [String: String])
    /// Tells the verifier the request was rejected.
    case proofRejection(proofID: String)
}

/// Delivers the holder's messages.
public protocol AriesProtocol: Sendable {
    /// Sends one message; throwing leaves the machine unchanged.
    func send(_ message: OutboundMessage) async throws
}

/// What a mutating operation did. `mustSave` is true whenever the state changed: serialize the
/// machine and store it again.
public struct Transition: Sendable, Hashable {
    /// The machine's handle.
    public let handle: Int
    /// State number before.
    public let from: Int
    /// State number after.
    public let to: Int
    /// Whether the machine must be saved again.
    public var mustSave: Bool { from != to }
}

/// The SDK's state machines over one wallet: create, advance, serialize, deserialize, release.
public final class StateMachines: Sendable {
    /// The live machines.
    public let table = HandleTable()
    let wallet: Wallet
    let messenger: AriesProtocol
    /// Whether accepting a credential stores it in the wallet (the SDK's default).
    public let storesCredentials: Bool

    /// Machines working with `wallet` and sending through `messenger`.
    public init(wallet: Wallet, protocol messenger: AriesProtocol, storesCredentials: Bool = true) {
        self.wallet = wallet
        self.messenger = messenger
        self.storesCredentials = storesCredentials
    }

    // MARK: Handles and JSON

    /// The JSON text of the machine behind `handle` (with a version field).
    public func serialize(_ handle: Int) throws(StateMachineError) -> String {
        MachineCoding.serialize(try table.machine(handle))
    }

    /// A new handle for the machine in `json`.
    public func deserialize(_ json: String, as kind: MachineKind) throws(StateMachineError) -> Int {
        table.insert(try MachineCoding.deserialize(json, as: kind))
    }

    /// Forgets a machine.
    public func release(_ handle: Int) throws(StateMachineError) { try table.release(handle) }

    /// The state number of the machine behind `handle`.
    public func state(_ handle: Int) throws(StateMachineError) -> Int { try table.machine(handle).stateNumber }

    private func change(_ handle: Int, _ body: (AnyMachine) throws(StateMachineError) -> AnyMachine) throws(StateMachineError) -> Transition {
        let before = try table.machine(handle).stateNumber
        let after = try table.update(handle, body).stateNumber
        return Transition(handle: handle, from: before, to: after)
    }

    func connection(_ handle: Int) throws(StateMachineError) -> ConnectionMachine {
        let m = try table.machine(handle)
        guard case let .connection(c) = m else { throw .wrongKind(handle: handle, expected: .connection, found: m.kind) }
        return c
    }

    func credential(_ handle: Int) throws(StateMachineError) -> CredentialMachine {
        let m = try table.machine(handle)
        guard case let .credential(c) = m else { throw .wrongKind(handle: handle, expected: .credential, found: m.kind) }
        return c
    }

    func proof(_ handle: Int) throws(StateMachineError) -> DisclosedProofMachine {
        let m = try table.machine(handle)
        guard case let .disclosedProof(p) = m else { throw .wrongKind(handle: handle, expected: .disclosedProof, found: m.kind) }
        return p
    }

    private func require<S: RawRepresentable & Equatable>(_ state: S, in allowed: [S], _ kind: MachineKind, _ op: String) throws(StateMachineError) where S.RawValue == Int {
        guard allowed.contains(state) else { throw .invalidTransition(kind: kind, operation: op, state: state.rawValue) }
    }

    private func deliver(_ message: OutboundMessage) async throws(StateMachineError) {
        do { try await messenger.send(message) } catch { throw .protocolFailed("\(error)") }
    }

    /// Applies `apply` to the machine only if it is still in `expected` (another task may have
    /// moved it meanwhile): a transition is all or nothing.
    private func commit<S: RawRepresentable>(_ handle: Int, expected: S, _ apply: (AnyMachine) -> AnyMachine, _ kind: MachineKind, _ op: String) throws(StateMachineError) -> Transition where S.RawValue == Int {
        try change(handle) { (m) throws(StateMachineError) in
            guard m.stateNumber == expected.rawValue else { throw .invalidTransition(kind: kind, operation: op, state: m.stateNumber) }
            return apply(m)
        }
    }

    // MARK: Connection

    /// A connection machine for a received invitation (state invited).
    public func connectionCreate(invitation: String) -> Int {
        table.insert(.connection(ConnectionMachine(id: UUID().uuidString, state: .invited, invitation: invitation)))
    }

    /// Makes this side's key in the wallet and sends the connection request (invited → requested).
    public func connectionSendRequest(_ handle: Int) async throws -> Transition {
        let c = try connection(handle)
        try require(c.state, in: [.invited], .connection, "sendRequest")
        let verkey = try await wallet.createKey(.ed25519)
        do { try await deliver(.connectionRequest(invitation: c.invitation, verkey: verkey)) } catch {
            // The step failed: the key made for it goes too, so nothing changed.
            try? await wallet.removeKey(verkey)
            throw error
        }
        return try commit(handle, expected: ConnectionState.invited, { m in
            guard case var .connection(c) = m else { return m }
            c.state = .requested
            c.myVerkey = verkey
            return .connection(c)
        }, .connection, "sendRequest")
    }

    /// Records the inviter's response and its key (requested → responded).
    public func connectionReceiveResponse(_ handle: Int, theirVerkey: String) throws -> Transition {
        let c = try connection(handle)
        try require(c.state, in: [.requested], .connection, "receiveResponse")
        guard let bytes = Base58.decode(theirVerkey), bytes.count == 32 else {
            throw WalletError.invalidInput("their verkey \(theirVerkey) is not a Base58 32-byte key")
        }
        return try commit(handle, expected: ConnectionState.requested, { m in
            guard case var .connection(c) = m else { return m }
            c.state = .responded
            c.theirVerkey = theirVerkey
            return .connection(c)
        }, .connection, "receiveResponse")
    }

    /// Acknowledges the response (responded → completed).
    public func connectionComplete(_ handle: Int) async throws -> Transition {
        let c = try connection(handle)
        try require(c.state, in: [.responded], .connection, "complete")
        try await deliver(.connectionAck(connectionID: c.id))
        return try commit(handle, expected: ConnectionState.responded, { m in
            guard case var .connection(c) = m else { return m }
            c.state = .completed
            return .connection(c)
        }, .connection, "complete")
    }

    // MARK: Credential

    /// A credential machine for a received offer (state offer received).
    public func credentialCreate(offer: CredentialOffer) -> Int {
        table.insert(.credential(CredentialMachine(id: UUID().uuidString, state: .offerReceived, offer: offer)))
    }

    /// Sends the credential request, bound to the master secret (offer received → request sent).
    public func credentialSendRequest(_ handle: Int) async throws -> Transition {
        let c = try credential(handle)
        try require(c.state, in: [.offerReceived], .credential, "sendRequest")
        try await wallet.initializeMasterSecret()
        let binding = try await wallet.withMasterSecret { secret in
            KeyedHash(key: secret).hash(domain: 1, Data(c.offer.credentialDefinitionID.utf8))
        }
        try await deliver(.credentialRequest(credentialID: c.id, offer: c.offer, masterSecretBinding: binding))
        return try commit(handle, expected: CredentialState.offerReceived, { m in
            guard case var .credential(c) = m else { return m }
            c.state = .requestSent
            return .credential(c)
        }, .credential, "sendRequest")
    }

    /// Records the issued credential (request sent → credential received).
    public func credentialReceive(_ handle: Int, credential issued: IssuedCredential) throws -> Transition {
        let c = try credential(handle)
        try require(c.state, in: [.requestSent], .credential, "receiveCredential")
        return try commit(handle, expected: CredentialState.requestSent, { m in
            guard case var .credential(c) = m else { return m }
            c.state = .credentialReceived
            c.issued = issued
            return .credential(c)
        }, .credential, "receiveCredential")
    }

    /// Accepts the credential (credential received → accepted): by default stores its attributes
    /// in the wallet (type `credential`, id = the machine's id, tags per attribute plus schema id,
    /// credential definition id and issuer) and its signature as a secret, in one transaction.
    public func credentialAccept(_ handle: Int) async throws -> Transition {
        let c = try credential(handle)
        try require(c.state, in: [.credentialReceived], .credential, "accept")
        guard let issued = c.issued else { throw StateMachineError.invalidJSON("credential received without its data") }
        if storesCredentials {
            try await wallet.storeCredential(id: c.id, value: Self.attributesJSON(issued.attributes),
                                             tags: Self.credentialTags(offer: c.offer, attributes: issued.attributes),
                                             signature: issued.signature)
        }
        return try commit(handle, expected: CredentialState.credentialReceived, { m in
            guard case var .credential(c) = m else { return m }
            c.state = .accepted
            c.issued = nil
            return .credential(c)
        }, .credential, "accept")
    }

    /// Rejects the offer or the credential (→ rejected).
    public func credentialReject(_ handle: Int) async throws -> Transition {
        let c = try credential(handle)
        let allowed: [CredentialState] = [.offerReceived, .requestSent, .credentialReceived]
        try require(c.state, in: allowed, .credential, "reject")
        try await deliver(.credentialRejection(credentialID: c.id))
        return try commit(handle, expected: c.state, { m in
            guard case var .credential(c) = m else { return m }
            c.state = .rejected
            c.issued = nil
            return .credential(c)
        }, .credential, "reject")
    }

    static func attributesJSON(_ attributes: [String: String]) -> String {
        JSONValue.object(attributes.sorted { $0.key < $1.key }.map { ($0.key, .string($0.value)) }).jsonText
    }

    /// Indy-style credential tags: `attr::NAME::value`, `attr::NAME::marker`, and the offer's ids.
    static func credentialTags(offer: CredentialOffer, attributes: [String: String]) -> WalletTags {
        var tags: [String: TagValue] = [
            "schema_id": .string(offer.schemaID), "cred_def_id": .string(offer.credentialDefinitionID),
            "issuer_did": .string(offer.issuerDID),
        ]
        for (name, value) in attributes {
            tags["attr::\(name)::value"] = .string(value)
            tags["attr::\(name)::marker"] = .string("1")
        }
        return WalletTags(tags)
    }

    // MARK: Disclosed proof

    /// A disclosed-proof machine for a received request (state request received).
    public func proofCreate(request: ProofRequest) -> Int {
        table.insert(.disclosedProof(DisclosedProofMachine(id: UUID().uuidString, state: .requestReceived, request: request)))
    }

    /// The wallet's credentials that can answer each requested attribute (referent → ids).
    public func proofMatchingCredentials(_ handle: Int) async throws -> [String: [String]] {
        let p = try proof(handle)
        var out = [String: [String]]()
        for (referent, attribute) in p.request.requestedAttributes {
            let query = try WalletQuery(json: Self.restrictionQuery(attribute).jsonText)
            out[referent] = try await wallet.fetchAll(type: "credential", matching: query,
                                                      options: RecordOptions(retrieveValue: false, retrieveTags: false)).map(\.id)
        }
        return out
    }

    /// WQL for one requested attribute: the attribute's marker, and any one restriction entry.
    static func restrictionQuery(_ attribute: ProofRequest.Attribute) -> JSONValue {
        let marker = JSONValue.object([("attr::\(attribute.name)::marker", .string("1"))])
        guard !attribute.restrictions.isEmpty else { return marker }
        let alternatives = attribute.restrictions.map { entry in
            JSONValue.object(entry.sorted { $0.key < $1.key }.map { ($0.key, .string($0.value)) })
        }
        return .object([("$and", .array([marker, .object([("$or", .array(alternatives))])]))])
    }

    /// Sends the presentation built from `credentials` (referent → credential id; every referent
    /// needs one, and each must match) (request received → presentation sent).
    public func proofSendPresentation(_ handle: Int, credentials: [String: String]) async throws -> Transition {
        let p = try proof(handle)
        try require(p.state, in: [.requestReceived], .disclosedProof, "sendPresentation")
        let matching = try await proofMatchingCredentials(handle)
        for referent in p.request.requestedAttributes.keys {
            guard let chosen = credentials[referent] else { throw WalletError.invalidInput("no credential chosen for referent \(referent)") }
            guard matching[referent]?.contains(chosen) == true else {
                throw WalletError.invalidInput("credential \(chosen) does not satisfy the restrictions of referent \(referent)")
            }
            guard try await wallet.hasCredentialSignature(credentialID: chosen) else {
                throw WalletError.notFound(type: "credential signature", id: chosen)
            }
        }
        try await deliver(.presentation(proofID: p.id, referents: credentials))
        return try commit(handle, expected: DisclosedProofState.requestReceived, { m in
            guard case var .disclosedProof(p) = m else { return m }
            p.state = .presentationSent
            p.presented = credentials
            return .disclosedProof(p)
        }, .disclosedProof, "sendPresentation")
    }

    /// The verifier acknowledged (presentation sent → acknowledged).
    public func proofReceiveAck(_ handle: Int) throws -> Transition {
        let p = try proof(handle)
        try require(p.state, in: [.presentationSent], .disclosedProof, "receiveAck")
        return try commit(handle, expected: DisclosedProofState.presentationSent, { m in
            guard case var .disclosedProof(p) = m else { return m }
            p.state = .acknowledged
            return .disclosedProof(p)
        }, .disclosedProof, "receiveAck")
    }

    /// Rejects the proof: the holder declines the request (request received → rejected), or the
    /// presentation went out and the verifier rejected it — their problem report ends the
    /// exchange (presentation sent → rejected). Either way the other side is told.
    public func proofReject(_ handle: Int) async throws -> Transition {
        let p = try proof(handle)
        try require(p.state, in: [.requestReceived, .presentationSent], .disclosedProof, "reject")
        try await deliver(.proofRejection(proofID: p.id))
        return try commit(handle, expected: p.state, { m in
            guard case var .disclosedProof(p) = m else { return m }
            p.state = .rejected
            return .disclosedProof(p)
        }, .disclosedProof, "reject")
    }
}
