// Transitions of the holder-side machines. The message exchange is an injected protocol; the
// wallet keeps keys, the master secret, credentials and their signatures, and does every step
// that uses them (through `package` functions no client of the library can see).

import CofferCrypto
import CofferWallet
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

/// What a mutating operation did. `mustSave` is true whenever the machine changed: serialize
/// it and store it again. (Accepting a credential changes the machine while its number stays 4,
/// so compare `mustSave`, not the numbers.)
public struct Transition: Sendable, Hashable {
    /// The machine's handle.
    public let handle: Int
    /// State number before (VCX's numbering).
    public let from: Int
    /// State number after (VCX's numbering).
    public let to: Int
    /// Whether the machine changed and must be saved again.
    public let mustSave: Bool
}

/// The SDK's state machines over one wallet: create, advance, serialize, deserialize, release.
public final class StateMachines: Sendable {
    /// The live machines.
    public let table = HandleTable()
    let wallet: any RecordWallet & KeyWallet
    let messenger: AriesProtocol
    /// Whether accepting a credential stores it in the wallet (the SDK's default).
    public let storesCredentials: Bool

    /// Machines working with `wallet` and sending through `messenger`. The wallet is a wallet
    /// file (`Wallet`) or, in a build with the PostgreSQL trait, a profile on a server
    /// (`PostgresWallet`): the machines use only `RecordWallet` and `KeyWallet`.
    public init(wallet: any RecordWallet & KeyWallet, protocol messenger: AriesProtocol, storesCredentials: Bool = true) {
        self.wallet = wallet
        self.messenger = messenger
        self.storesCredentials = storesCredentials
    }

    // MARK: Handles and JSON

    /// The JSON text of the machine behind `handle` (with a version field; never a secret).
    public func serialize(_ handle: Int) throws(StateMachineError) -> String {
        MachineCoding.serialize(try table.machine(handle))
    }

    /// ``deserialize(_:as:)`` with the kind the JSON names (`"kind"`).
    public func deserialize(_ json: String) async throws(StateMachineError) -> Int {
        try await deserialize(json, as: try MachineCoding.kind(of: json))
    }

    /// A new handle for the machine in `json` (version 2, or version 1 converted to the same
    /// state under VCX's numbers). A version-1 credential machine that was received but not yet
    /// accepted carried its signature in the JSON: it is stored in the wallet's secrets first,
    /// and the machine's JSON from now on has none.
    /// - Throws: ``StateMachineError`` for JSON that does not parse or is of another kind or a
    ///   newer version, or ``StateMachineError/wallet(_:)`` when the wallet cannot store the signature.
    public func deserialize(_ json: String, as kind: MachineKind) async throws(StateMachineError) -> Int {
        let decoded = try MachineCoding.decode(json, as: kind)
        if let signature = decoded.pendingSignature {
            try await walletCall { try await wallet.storeCredentialSignature(signature, credentialID: decoded.machine.id) }
        }
        return table.insert(decoded.machine)
    }

    /// Forgets a machine.
    public func release(_ handle: Int) throws(StateMachineError) { try table.release(handle) }

    /// The state number of the machine behind `handle`, as legacy libvcx numbers states
    /// (connection 1, 2, 3, 3, 4; credential 3, 2, 4, 4; disclosed proof 3, 2, 4; rejected 0).
    public func state(_ handle: Int) throws(StateMachineError) -> Int { try table.machine(handle).stateNumber }

    /// The connection machine's state.
    public func connectionState(_ handle: Int) throws(StateMachineError) -> ConnectionState { try connection(handle).state }

    /// The disclosed-proof machine's state.
    public func disclosedProofState(_ handle: Int) throws(StateMachineError) -> DisclosedProofState { try proof(handle).state }

    /// The credential machine's state: its number alone does not tell a received credential
    /// from an accepted one (both 4).
    public func credentialState(_ handle: Int) throws(StateMachineError) -> CredentialState { try credential(handle).state }

    func connection(_ handle: Int) throws(StateMachineError) -> ConnectionMachine { try machine(handle, as: ConnectionMachine.self) }

    func credential(_ handle: Int) throws(StateMachineError) -> CredentialMachine { try machine(handle, as: CredentialMachine.self) }

    func proof(_ handle: Int) throws(StateMachineError) -> DisclosedProofMachine { try machine(handle, as: DisclosedProofMachine.self) }

    private func deliver(_ message: OutboundMessage) async throws(StateMachineError) {
        do { try await messenger.send(message) } catch { throw .transportFailed(TransportFailure(error)) }
    }

    // MARK: Connection

    /// A connection machine for a received invitation (state invited, 2).
    public func connectionCreate(invitation: String) -> Int {
        table.insert(.connection(ConnectionMachine(id: UUID().uuidString, state: .invited, invitation: invitation)))
    }

    /// Makes this side's key in the wallet and sends the connection request (invited 2 → requested 3).
    public func connectionSendRequest(_ handle: Int) async throws(StateMachineError) -> Transition {
        try await step(
            handle, ConnectionMachine.self, "sendRequest",
            work: { (c) throws(StateMachineError) -> String in
                let verkey = try await walletCall { try await wallet.createKey(.ed25519) }
                do throws(StateMachineError) { try await deliver(.connectionRequest(invitation: c.invitation, verkey: verkey)) } catch {
                    // The step failed: the key made for it goes too, so nothing changed.
                    try? await wallet.removeKey(verkey)
                    throw error
                }
                return verkey
            },
            update: { c, verkey in c.myVerkey = verkey },
            undo: { verkey in try? await wallet.removeKey(verkey) })
    }

    /// Records the inviter's response and its key (requested 3 → responded 3; `mustSave` is true).
    /// - Throws: ``StateMachineError/invalidInput(_:)`` when `theirVerkey` is not a Base58 32-byte key.
    public func connectionReceiveResponse(_ handle: Int, theirVerkey: String) throws(StateMachineError) -> Transition {
        try step(
            handle, ConnectionMachine.self, "receiveResponse",
            check: { (_) throws(StateMachineError) in
                guard let bytes = Base58.decode(theirVerkey), bytes.count == 32 else {
                    throw .invalidInput("their verkey \(theirVerkey) is not a Base58 32-byte key")
                }
            },
            update: { c in c.theirVerkey = theirVerkey })
    }

    /// Acknowledges the response (responded 3 → completed 4).
    public func connectionComplete(_ handle: Int) async throws(StateMachineError) -> Transition {
        try await step(
            handle, ConnectionMachine.self, "complete",
            work: { (c) throws(StateMachineError) in try await deliver(.connectionAck(connectionID: c.id)) }, update: { _, _ in })
    }

    // MARK: Credential

    /// A credential machine for a received offer (state offer received, 3).
    public func credentialCreate(offer: CredentialOffer) -> Int {
        table.insert(.credential(CredentialMachine(id: UUID().uuidString, state: .offerReceived, offer: offer)))
    }

    /// Sends the credential request, bound to the master secret (offer received 3 → request
    /// sent 2). The binding is computed inside the wallet; the master secret never leaves it.
    /// - Throws: ``StateMachineError/wallet(_:)`` holding ``WalletError/invalidInput(_:)`` when the
    ///   wallet was not provisioned for the SDK (`KeyWallet.initializeMasterSecret()` makes the
    ///   master secret, once, at provisioning).
    public func credentialSendRequest(_ handle: Int) async throws(StateMachineError) -> Transition {
        try await step(
            handle, CredentialMachine.self, "sendRequest",
            work: { (c) throws(StateMachineError) in
                let binding = try await walletCall {
                    try await wallet.masterSecretBinding(credentialDefinitionID: c.offer.credentialDefinitionID)
                }
                try await deliver(.credentialRequest(credentialID: c.id, offer: c.offer, masterSecretBinding: binding))
            }, update: { _, _ in })
    }

    /// Records the issued credential (request sent 2 → credential received 4). Its signature goes
    /// into the wallet's secrets at once, under the machine's id; the machine keeps only the
    /// attributes, so its JSON never holds the signature.
    public func credentialReceive(_ handle: Int, credential issued: IssuedCredential) async throws(StateMachineError) -> Transition {
        try await step(
            handle, CredentialMachine.self, "receiveCredential",
            work: { (c) throws(StateMachineError) -> String in
                try await walletCall { try await wallet.storeCredentialSignature(issued.signature, credentialID: c.id) }
                return c.id
            },
            update: { c, _ in c.received = issued.attributes },
            // Another task moved the machine meanwhile: the signature stored for this step goes.
            undo: { id in
                // Lost to another task: when that one was a receive that committed (received or
                // accepted), the signature it stored under the same id is the machine's now and stays.
                let now = try? self.credential(handle).state
                if now != .credentialReceived && now != .accepted { try? await wallet.removeCredentialSignature(credentialID: id) }
            })
    }

    /// Accepts the credential (credential received 4 → accepted 4; `mustSave` is true): by
    /// default stores its attributes in the wallet (type `credential`, id = the machine's id,
    /// tags per attribute plus schema id, credential definition id and issuer), beside the
    /// signature stored when it arrived.
    public func credentialAccept(_ handle: Int) async throws(StateMachineError) -> Transition {
        try await step(
            handle, CredentialMachine.self, "accept",
            work: { (c) throws(StateMachineError) in
                guard let attributes = c.received else { throw .invalidJSON("credential received without its attributes") }
                if storesCredentials {
                    try await walletCall {
                        try await wallet.storeCredential(
                            id: c.id, value: Self.attributesJSON(attributes),
                            tags: Self.credentialTags(offer: c.offer, attributes: attributes))
                    }
                }
            }, update: { c, _ in c.received = nil })
    }

    /// Rejects the offer or the credential (offer received, request sent or credential received
    /// → rejected, 0 as libvcx reports a decline), telling the issuer. A received credential's signature is removed from
    /// the wallet.
    public func credentialReject(_ handle: Int) async throws(StateMachineError) -> Transition {
        let id = try credential(handle).id
        let transition = try await step(
            handle, CredentialMachine.self, "reject",
            work: { (c) throws(StateMachineError) in try await deliver(.credentialRejection(credentialID: c.id)) },
            update: { c, _ in c.received = nil })
        // Decided on the state the commit actually left (another task may have moved the machine
        // between a read here and the step): a received credential's signature goes.
        if transition.from == CredentialState.credentialReceived.number {
            // The machine is rejected either way; a signature that could not be removed now is
            // an unused secret, removed with the wallet.
            try? await wallet.removeCredentialSignature(credentialID: id)
        }
        return transition
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

    /// A disclosed-proof machine for a received request (state request received, 3).
    public func proofCreate(request: ProofRequest) -> Int {
        table.insert(.disclosedProof(DisclosedProofMachine(id: UUID().uuidString, state: .requestReceived, request: request)))
    }

    /// The wallet's credentials that can answer each requested attribute (referent → ids).
    public func proofMatchingCredentials(_ handle: Int) async throws(StateMachineError) -> [String: [String]] {
        let p = try proof(handle)
        var out = [String: [String]]()
        for (referent, attribute) in p.request.requestedAttributes {
            out[referent] = try await walletCall {
                let query = try WalletQuery(json: Self.restrictionQuery(attribute).jsonText)
                return try await wallet.search(
                    type: "credential", matching: query,
                    options: SearchOptions(retrieveRecords: true, retrieveTotalCount: false, retrieveValue: false, retrieveTags: false),
                    count: nil
                ).records?.map(\.id) ?? []
            }
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
    /// needs one, and each must match) (request received 3 → presentation sent 2).
    /// - Throws: ``StateMachineError/invalidInput(_:)`` for a missing or non-matching choice,
    ///   ``StateMachineError/notFound(_:)`` for a credential whose signature is not in the wallet.
    public func proofSendPresentation(_ handle: Int, credentials: [String: String]) async throws(StateMachineError) -> Transition {
        try await step(
            handle, DisclosedProofMachine.self, "sendPresentation",
            work: { (p) throws(StateMachineError) in
                let matching = try await proofMatchingCredentials(handle)
                for referent in p.request.requestedAttributes.keys {
                    guard let chosen = credentials[referent] else { throw .invalidInput("no credential chosen for referent \(referent)") }
                    guard matching[referent]?.contains(chosen) == true else {
                        throw .invalidInput("credential \(chosen) does not satisfy the restrictions of referent \(referent)")
                    }
                    guard try await walletCall({ try await wallet.hasCredentialSignature(credentialID: chosen) }) else {
                        throw .notFound("the signature of credential \(chosen) is not in the wallet")
                    }
                }
                try await deliver(.presentation(proofID: p.id, referents: credentials))
            }, update: { p, _ in p.presented = credentials })
    }

    /// The verifier acknowledged (presentation sent 2 → acknowledged 4).
    public func proofReceiveAck(_ handle: Int) throws(StateMachineError) -> Transition {
        try step(handle, DisclosedProofMachine.self, "receiveAck")
    }

    /// Rejects the proof: the holder declines the request (request received 3 → rejected 0, as
    /// libvcx reports a decline), or rejects after the presentation went out (presentation sent 2
    /// → rejected 0). Either way the other side is told. (A verifier's problem report is
    /// ``proofReceiveProblemReport(_:)``, which sends nothing.)
    public func proofReject(_ handle: Int) async throws(StateMachineError) -> Transition {
        try await step(
            handle, DisclosedProofMachine.self, "reject",
            work: { (p) throws(StateMachineError) in try await deliver(.proofRejection(proofID: p.id)) }, update: { _, _ in })
    }
}
