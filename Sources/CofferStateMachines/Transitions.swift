// Every transition a machine allows, as data: the operation, the states it may start from and
// the state it ends in. Every transition of `StateMachines` goes through `StateMachines.step`,
// which reads this table; nothing else moves a machine's state.

import CofferWallet
import Foundation

/// A machine as it sits in the handle table, one of ``AnyMachine``'s cases.
protocol MachineValue: Sendable {
    associatedtype State: NumberedState
    /// The machine's kind.
    static var kind: MachineKind { get }
    /// The transitions it allows, by operation name.
    static var transitions: [String: TransitionRule<State>] { get }
    /// Its current state.
    var state: State { get set }
    /// The machine inside `any`, when it is of this kind.
    init?(_ any: AnyMachine)
    /// The machine as a table entry.
    var any: AnyMachine { get }
}

/// One allowed transition: the states it may start from and the state it ends in.
struct TransitionRule<State: NumberedState>: Sendable {
    let from: Set<State>
    let to: State
}

extension ConnectionMachine: MachineValue {
    static var kind: MachineKind { .connection }
    static let transitions: [String: TransitionRule<ConnectionState>] = [
        "sendRequest": TransitionRule(from: [.invited], to: .requested),
        "receiveResponse": TransitionRule(from: [.requested], to: .responded),
        "complete": TransitionRule(from: [.responded], to: .completed),
    ]
    init?(_ any: AnyMachine) {
        guard case .connection(let m) = any else { return nil }
        self = m
    }
    var any: AnyMachine { .connection(self) }
}

extension CredentialMachine: MachineValue {
    static var kind: MachineKind { .credential }
    static let transitions: [String: TransitionRule<CredentialState>] = [
        "sendRequest": TransitionRule(from: [.offerReceived], to: .requestSent),
        "receiveCredential": TransitionRule(from: [.requestSent], to: .credentialReceived),
        "accept": TransitionRule(from: [.credentialReceived], to: .accepted),
        "reject": TransitionRule(from: [.offerReceived, .requestSent, .credentialReceived], to: .rejected),
        "receiveProblemReport": TransitionRule(from: [.requestSent, .credentialReceived], to: .rejected),
    ]
    init?(_ any: AnyMachine) {
        guard case .credential(let m) = any else { return nil }
        self = m
    }
    var any: AnyMachine { .credential(self) }
}

extension DisclosedProofMachine: MachineValue {
    static var kind: MachineKind { .disclosedProof }
    static let transitions: [String: TransitionRule<DisclosedProofState>] = [
        "sendPresentation": TransitionRule(from: [.requestReceived], to: .presentationSent),
        "receiveAck": TransitionRule(from: [.presentationSent], to: .acknowledged),
        "reject": TransitionRule(from: [.requestReceived, .presentationSent], to: .rejected),
        "receiveProblemReport": TransitionRule(from: [.presentationSent], to: .rejected),
    ]
    init?(_ any: AnyMachine) {
        guard case .disclosedProof(let m) = any else { return nil }
        self = m
    }
    var any: AnyMachine { .disclosedProof(self) }
}

extension StateMachines {
    /// The machine behind `handle`, as `M`.
    func machine<M: MachineValue>(_ handle: Int, as type: M.Type) throws(StateMachineError) -> M {
        let m = try table.machine(handle)
        guard let typed = M(m) else { throw .wrongKind(handle: handle, expected: M.kind, found: m.kind) }
        return typed
    }

    /// The one way a machine changes state. Checks that `operation` is allowed from the
    /// machine's current state (the table above); runs `work` (the wallet and the transport:
    /// its result is what the commit needs); then, only if the machine is still in the state
    /// `work` started from (another task may have moved it), applies `update` and the rule's end
    /// state. When the commit fails, `undo` runs with `work`'s result: a transition is all or
    /// nothing.
    func step<M: MachineValue, Extra: Sendable>(
        _ handle: Int, _ type: M.Type, _ operation: String,
        work: (M) async throws(StateMachineError) -> Extra,
        update: (inout M, Extra) -> Void,
        undo: (Extra) async -> Void = { _ in }
    ) async throws(StateMachineError) -> Transition {
        let (start, rule) = try begin(handle, type, operation)
        let extra = try await work(start)
        do { return try commit(handle, type, operation, from: start.state, to: rule.to, extra, update) } catch {
            await undo(extra)
            throw error
        }
    }

    /// ``step(_:_:_:work:update:undo:)`` for a transition with no side effect to wait for.
    func step<M: MachineValue>(
        _ handle: Int, _ type: M.Type, _ operation: String, check: (M) throws(StateMachineError) -> Void = { _ in },
        update: (inout M) -> Void = { _ in }
    ) throws(StateMachineError) -> Transition {
        let (start, rule) = try begin(handle, type, operation)
        try check(start)
        return try commit(handle, type, operation, from: start.state, to: rule.to, ()) { m, _ in update(&m) }
    }

    private func begin<M: MachineValue>(_ handle: Int, _ type: M.Type, _ operation: String) throws(StateMachineError) -> (
        M, TransitionRule<M.State>
    ) {
        let start = try machine(handle, as: type)
        guard let rule = M.transitions[operation], rule.from.contains(start.state) else {
            throw .invalidTransition(kind: M.kind, operation: operation, state: start.state.number)
        }
        return (start, rule)
    }

    private func commit<M: MachineValue, Extra>(
        _ handle: Int, _ type: M.Type, _ operation: String, from: M.State, to: M.State, _ extra: Extra,
        _ update: (inout M, Extra) -> Void
    ) throws(StateMachineError) -> Transition {
        var before: AnyMachine?
        let after = try table.update(handle) { (any) throws(StateMachineError) -> AnyMachine in
            before = any
            guard var m = M(any), m.state == from else {
                throw .invalidTransition(kind: M.kind, operation: operation, state: any.stateNumber)
            }
            update(&m, extra)
            m.state = to
            return m.any
        }
        guard let before else { throw .unknownHandle(handle) }
        return Transition(handle: handle, from: before.stateNumber, to: after.stateNumber, mustSave: before != after)
    }

    /// Runs a wallet call, reporting its failure as ``StateMachineError/wallet(_:)``.
    func walletCall<T>(_ body: () async throws -> T) async throws(StateMachineError) -> T {
        do { return try await body() } catch let error as StateMachineError { throw error } catch let error as WalletError {
            throw .wallet(error)
        } catch is CancellationError {
            throw .cancelled
        } catch {
            throw .wallet(.storage("\(error)"))
        }
    }
}
