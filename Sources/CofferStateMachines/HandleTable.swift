// Integer handles over live machines, and the JSON form machines are saved in.

import CofferSync
import CofferWallet
import Foundation

/// Errors of the state-machine layer; each names what was wrong.
public enum StateMachineError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The handle was never issued or has been released.
    case unknownHandle(Int)
    /// The handle points at a machine of another kind.
    case wrongKind(handle: Int, expected: MachineKind, found: MachineKind)
    /// The operation is not allowed in the machine's current state; nothing changed.
    case invalidTransition(kind: MachineKind, operation: String, state: Int)
    /// Serialized text that does not parse, or lacks a field.
    case invalidJSON(String)
    /// Serialized by a format version this code does not read (it reads 1 up to `supported`).
    case unsupportedVersion(found: Int, supported: Int)
    /// Serialized text of another kind of machine.
    case kindMismatch(expected: MachineKind, found: String)
    /// The injected protocol failed; nothing changed.
    case protocolFailed(String)
    /// The injected transport threw; nothing changed. The error it threw is kept, unchanged.
    case transportFailed(TransportFailure)
    /// An argument was rejected (the message names it); nothing changed.
    case invalidInput(String)
    /// Something the operation needs is not there (a saved machine, a credential's signature).
    case notFound(String)
    /// The wallet refused or failed; nothing changed. Its error is kept.
    case wallet(WalletError)
    /// The calling task was cancelled before the transition committed; nothing changed.
    case cancelled

    /// What went wrong.
    public var description: String {
        switch self {
        case .unknownHandle(let h): return "unknown state machine handle \(h) (never issued, or released)"
        case .wrongKind(let h, let expected, let found):
            return "handle \(h) is a \(found.rawValue) machine, not a \(expected.rawValue) machine"
        case .invalidTransition(let kind, let op, let state): return "\(op) is not allowed for a \(kind.rawValue) machine in state \(state)"
        case .invalidJSON(let m): return "serialized state machine does not parse: \(m)"
        case .unsupportedVersion(let found, let supported):
            return
                "serialized state machine has version \(found); this code reads versions 1 to \(supported) (a newer Coffer wrote it: update Coffer)"
        case .kindMismatch(let expected, let found):
            return "serialized state machine is a \(found) machine, not a \(expected.rawValue) machine"
        case .protocolFailed(let m): return "the protocol exchange failed: \(m)"
        case .transportFailed(let f): return "the protocol exchange failed: the transport threw \(f.underlying)"
        case .invalidInput(let m): return "invalid input: \(m)"
        case .notFound(let m): return "not found: \(m)"
        case .wallet(let e): return "the wallet failed: \(e)"
        case .cancelled: return "the task was cancelled; the machine did not change"
        }
    }
}

/// An error a ``StateMachines``'s transport threw, kept as it was thrown (catch it with
/// `if case .transportFailed(let f) = error, let e = f.underlying as? MyNetworkError`).
public struct TransportFailure: Error, Sendable, Equatable {
    /// What the transport threw.
    public let underlying: any Error

    /// Wraps `underlying`.
    public init(_ underlying: any Error) { self.underlying = underlying }

    /// Equal when both describe the same error (the underlying errors need not be Equatable).
    public static func == (a: TransportFailure, b: TransportFailure) -> Bool {
        String(reflecting: a.underlying) == String(reflecting: b.underlying)
    }
}

/// Live machines behind integer handles. Thread-safe; handles count up and are never reused.
public final class HandleTable: Sendable {
    private struct State {
        var next = 1
        var machines = [Int: AnyMachine]()
    }

    private let state = Locked(State())

    /// An empty table.
    public init() {}

    /// Stores `machine` under a new handle.
    public func insert(_ machine: AnyMachine) -> Int {
        state.withLock { state in
            let handle = state.next
            state.next += 1
            state.machines[handle] = machine
            return handle
        }
    }

    /// The machine behind `handle`.
    /// - Throws: ``StateMachineError/unknownHandle(_:)``.
    public func machine(_ handle: Int) throws(StateMachineError) -> AnyMachine {
        let found = state.withLock { $0.machines[handle] }
        guard let found else { throw .unknownHandle(handle) }
        return found
    }

    /// Replaces the machine behind `handle` with what `change` returns, atomically. When
    /// `change` throws, the machine is left as it was.
    @discardableResult
    public func update(_ handle: Int, _ change: (AnyMachine) throws(StateMachineError) -> AnyMachine) throws(StateMachineError)
        -> AnyMachine
    {
        return try state.withLock { (state) throws(StateMachineError) -> AnyMachine in
            guard let current = state.machines[handle] else { throw .unknownHandle(handle) }
            let updated = try change(current)
            state.machines[handle] = updated
            return updated
        }
    }

    /// Forgets the machine behind `handle`; the handle is never issued again.
    /// - Throws: ``StateMachineError/unknownHandle(_:)``.
    public func release(_ handle: Int) throws(StateMachineError) {
        let removed = state.withLock { $0.machines.removeValue(forKey: handle) }
        if removed == nil { throw .unknownHandle(handle) }
    }

    /// Number of live machines.
    public var count: Int { state.withLock { $0.machines.count } }
}

/// The saved form: `{"version": 3, "kind": "…", "data": {…}}` (keys sorted), with legacy
/// libvcx's state numbers and each state's name (`step`). Version 1 (Coffer's first numbers:
/// credential 1/2/3/4, proof 1/2/4) and version 2 (connection 0…4, rejected 9) are still read and
/// converted to the same states.
public enum MachineCoding {
    /// The format version written; every version from 1 up to it is read.
    public static let version = 3

    struct Envelope<T: Codable>: Codable {
        var version: Int
        var kind: String
        var data: T
    }

    struct Header: Decodable {
        var version: Int?
        var kind: String?
    }

    /// A version-1 credential machine: its old numbers, and the issued credential with its signature.
    struct CredentialV1: Codable {
        var id: String
        var state: Int
        var offer: CredentialOffer
        var issued: IssuedCredential?
    }

    /// A version-1 disclosed-proof machine: its old numbers.
    struct DisclosedProofV1: Codable {
        var id: String
        var state: Int
        var request: ProofRequest
        var presented: [String: String]?
    }

    /// A version-1 or version-2 connection machine: its old numbers (0…4).
    struct ConnectionV2: Codable {
        var id: String
        var state: Int
        var invitation: String
        var myVerkey: String?
        var theirVerkey: String?
    }

    /// A version-2 credential machine: its step, and rejected numbered 9.
    struct CredentialV2: Codable {
        var id: String
        var state: Int
        var step: String
        var offer: CredentialOffer
        var received: [String: String]?
    }

    /// A version-2 disclosed-proof machine: rejected numbered 9.
    struct DisclosedProofV2: Codable {
        var id: String
        var state: Int
        var request: ProofRequest
        var presented: [String: String]?
    }

    /// A decoded machine, and the credential signature a version-1 credential machine still
    /// carried (version 2 never has one): it belongs in the wallet's secrets.
    struct Decoded {
        var machine: AnyMachine
        var pendingSignature: String?
    }

    /// The JSON text of `machine`.
    public static func serialize(_ machine: AnyMachine) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let data: Data
        switch machine {
        case .connection(let m): data = try! encoder.encode(Envelope(version: version, kind: machine.kind.rawValue, data: m))
        case .credential(let m): data = try! encoder.encode(Envelope(version: version, kind: machine.kind.rawValue, data: m))
        case .disclosedProof(let m): data = try! encoder.encode(Envelope(version: version, kind: machine.kind.rawValue, data: m))
        }
        return String(decoding: data, as: UTF8.self)
    }

    /// The machine in `json`, which must be of `kind` and of version 1 or 2. A version-1
    /// credential machine that still carries a signature (received, not yet accepted) is refused
    /// here: deserialize it with ``StateMachines/deserialize(_:as:)``, which moves the signature
    /// into the wallet.
    /// - Throws: ``StateMachineError/invalidJSON(_:)``, ``StateMachineError/unsupportedVersion(found:supported:)``,
    ///   ``StateMachineError/kindMismatch(expected:found:)``.
    public static func deserialize(_ json: String, as kind: MachineKind) throws(StateMachineError) -> AnyMachine {
        let decoded = try decode(json, as: kind)
        guard decoded.pendingSignature == nil else {
            throw .invalidJSON(
                "this version-1 credential machine carries its signature: deserialize it with StateMachines.deserialize, which keeps the signature in the wallet"
            )
        }
        return decoded.machine
    }

    /// The kind a saved machine's JSON says it is.
    static func kind(of json: String) throws(StateMachineError) -> MachineKind {
        let header: Header
        do { header = try JSONDecoder().decode(Header.self, from: Data(json.utf8)) } catch {
            throw .invalidJSON("not a JSON object with version and kind")
        }
        guard let k = header.kind else { throw .invalidJSON("missing \"kind\"") }
        guard let kind = MachineKind(rawValue: k) else { throw .invalidJSON("unknown kind \"\(k)\"") }
        return kind
    }

    static func decode(_ json: String, as kind: MachineKind) throws(StateMachineError) -> Decoded {
        let bytes = Data(json.utf8)
        let decoder = JSONDecoder()
        let header: Header
        do { header = try decoder.decode(Header.self, from: bytes) } catch { throw .invalidJSON("not a JSON object with version and kind") }
        guard let v = header.version else { throw .invalidJSON("missing \"version\"") }
        guard (1...version).contains(v) else { throw .unsupportedVersion(found: v, supported: version) }
        guard let k = header.kind else { throw .invalidJSON("missing \"kind\"") }
        guard k == kind.rawValue else { throw .kindMismatch(expected: kind, found: k) }
        if v == 1 { return try decodeVersion1(bytes, as: kind) }
        if v == 2 { return try decodeVersion2(bytes, as: kind) }
        do {
            switch kind {
            case .connection: return Decoded(machine: .connection(try decoder.decode(Envelope<ConnectionMachine>.self, from: bytes).data))
            case .credential: return Decoded(machine: .credential(try decoder.decode(Envelope<CredentialMachine>.self, from: bytes).data))
            case .disclosedProof:
                return Decoded(machine: .disclosedProof(try decoder.decode(Envelope<DisclosedProofMachine>.self, from: bytes).data))
            }
        } catch {
            throw .invalidJSON("\(kind.rawValue) data: \(error)")
        }
    }

    /// A version-1 or version-2 connection → the same state under libvcx's numbers.
    static func decodeOldConnection(_ bytes: Data, version: Int) throws(StateMachineError) -> Decoded {
        let old: ConnectionV2
        do { old = try JSONDecoder().decode(Envelope<ConnectionV2>.self, from: bytes).data } catch {
            throw .invalidJSON("version-\(version) connection data: \(error)")
        }
        guard let state = ConnectionState(version2Number: old.state) else {
            throw .invalidJSON("version-\(version) connection state \(old.state) is not one of 0, 1, 2, 3, 4")
        }
        return Decoded(
            machine: .connection(
                ConnectionMachine(
                    id: old.id, state: state, invitation: old.invitation, myVerkey: old.myVerkey, theirVerkey: old.theirVerkey)))
    }

    /// Version 2 → the same states under libvcx's numbers (connection 1, 2, 3, 3, 4; rejected 0).
    static func decodeVersion2(_ bytes: Data, as kind: MachineKind) throws(StateMachineError) -> Decoded {
        let decoder = JSONDecoder()
        switch kind {
        case .connection: return try decodeOldConnection(bytes, version: 2)
        case .credential:
            let old: CredentialV2
            do { old = try decoder.decode(Envelope<CredentialV2>.self, from: bytes).data } catch {
                throw .invalidJSON("version-2 credential data: \(error)")
            }
            guard let state = CredentialState(name: old.step) else {
                throw .invalidJSON("version-2 credential step \(old.step) is unknown")
            }
            guard state.version2Number == old.state else {
                throw .invalidJSON("version-2 credential state \(old.state) does not match step \(old.step) (\(state.version2Number))")
            }
            return Decoded(machine: .credential(CredentialMachine(id: old.id, state: state, offer: old.offer, received: old.received)))
        case .disclosedProof:
            let old: DisclosedProofV2
            do { old = try decoder.decode(Envelope<DisclosedProofV2>.self, from: bytes).data } catch {
                throw .invalidJSON("version-2 disclosed_proof data: \(error)")
            }
            guard let state = DisclosedProofState(version2Number: old.state) else {
                throw .invalidJSON("version-2 disclosed_proof state \(old.state) is not one of 0, 2, 3, 4, 9")
            }
            return Decoded(
                machine: .disclosedProof(DisclosedProofMachine(id: old.id, state: state, request: old.request, presented: old.presented)))
        }
    }

    /// Version 1 → the same states under libvcx's numbers.
    static func decodeVersion1(_ bytes: Data, as kind: MachineKind) throws(StateMachineError) -> Decoded {
        let decoder = JSONDecoder()
        switch kind {
        case .connection: return try decodeOldConnection(bytes, version: 1)
        case .credential:
            let old: CredentialV1
            do { old = try decoder.decode(Envelope<CredentialV1>.self, from: bytes).data } catch {
                throw .invalidJSON("version-1 credential data: \(error)")
            }
            guard let state = CredentialState(version1Number: old.state) else {
                throw .invalidJSON("version-1 credential state \(old.state) is not one of 0, 1, 2, 3, 4, 9")
            }
            // Only a received, not yet accepted credential kept its data; anything left over in
            // another state is dropped, as accepting or rejecting did.
            let waiting = state == .credentialReceived ? old.issued : nil
            if state == .credentialReceived, waiting == nil {
                throw .invalidJSON("version-1 credential machine in state 3 (credential received) without its issued credential")
            }
            return Decoded(
                machine: .credential(CredentialMachine(id: old.id, state: state, offer: old.offer, received: waiting?.attributes)),
                pendingSignature: waiting?.signature)
        case .disclosedProof:
            let old: DisclosedProofV1
            do { old = try decoder.decode(Envelope<DisclosedProofV1>.self, from: bytes).data } catch {
                throw .invalidJSON("version-1 disclosed_proof data: \(error)")
            }
            guard let state = DisclosedProofState(version1Number: old.state) else {
                throw .invalidJSON("version-1 disclosed_proof state \(old.state) is not one of 0, 1, 2, 4, 9")
            }
            return Decoded(
                machine: .disclosedProof(DisclosedProofMachine(id: old.id, state: state, request: old.request, presented: old.presented)))
        }
    }
}

extension StateMachineError: LocalizedError {
    /// The same text as `description`: what went wrong and what to do (for
    /// `localizedDescription`, alerts and logs).
    public var errorDescription: String? { description }
}
