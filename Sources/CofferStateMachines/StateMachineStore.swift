// Saving serialized machines (in the wallet or in a store the app chooses) and restoring them.

import CofferWallet
import Foundation

/// Where serialized machines are kept: the wallet, or any store the app implements.
public protocol MachineStorage: Sendable {
    /// Saves (or replaces) the JSON of machine `id` of `kind`.
    func save(id: String, kind: MachineKind, json: String) async throws
    /// The JSON of machine `id`, nil when none is saved.
    func load(id: String, kind: MachineKind) async throws -> String?
    /// Removes machine `id` (no error when absent).
    func delete(id: String, kind: MachineKind) async throws
    /// Ids of every saved machine of `kind`.
    func ids(kind: MachineKind) async throws -> [String]
}

/// Saves machines as wallet records: type `state_machine.<kind>`, id = the machine's id. Works
/// on any `RecordWallet`: a wallet file, or a PostgreSQL profile in a build with the trait.
public struct WalletMachineStorage: MachineStorage {
    let wallet: any RecordWallet

    /// Storage in `wallet`.
    public init(wallet: any RecordWallet) { self.wallet = wallet }

    static func type(_ kind: MachineKind) -> String { "state_machine.\(kind.rawValue)" }

    /// Saves or replaces the record, in one transaction.
    public func save(id: String, kind: MachineKind, json: String) async throws {
        let type = Self.type(kind)
        try await wallet.inTransaction { tx in
            if try await tx.fetch(type: type, id: id, options: RecordOptions(retrieveValue: false, retrieveTags: false)) != nil {
                try await tx.update(type: type, id: id, value: json)
            } else {
                try await tx.add(type: type, id: id, value: json, tags: [:], expiresAt: nil)
            }
        }
    }

    /// The record's value.
    public func load(id: String, kind: MachineKind) async throws -> String? {
        try await wallet.fetch(type: Self.type(kind), id: id, options: RecordOptions(retrieveValue: true, retrieveTags: false))?.value
    }

    /// Deletes the record if present.
    public func delete(id: String, kind: MachineKind) async throws {
        do { try await wallet.delete(type: Self.type(kind), id: id) } catch WalletError.notFound {}
    }

    /// Ids of the saved machines.
    public func ids(kind: MachineKind) async throws -> [String] {
        let page = try await wallet.search(
            type: Self.type(kind), matching: .all,
            options: SearchOptions(retrieveRecords: true, retrieveTotalCount: false, retrieveValue: false, retrieveTags: false), count: nil)
        return page.records?.map(\.id) ?? []
    }
}

/// Saves live machines by handle and restores them into new handles (after a restart, say).
public struct StateMachineStore: Sendable {
    /// The machines.
    public let machines: StateMachines
    /// Where they are kept.
    public let storage: MachineStorage

    /// A store over `machines` keeping them in `storage`.
    public init(machines: StateMachines, storage: MachineStorage) {
        self.machines = machines
        self.storage = storage
    }

    /// Serializes the machine behind `handle` and saves it under its id; returns the id.
    @discardableResult
    public func save(_ handle: Int) async throws -> String {
        let machine = try machines.table.machine(handle)
        try await storage.save(id: machine.id, kind: machine.kind, json: MachineCoding.serialize(machine))
        return machine.id
    }

    /// Restores saved machine `id` into a new handle.
    /// - Throws: ``StateMachineError/notFound(_:)`` when nothing is saved under `id`; the
    ///   storage's error when it fails.
    public func restore(id: String, kind: MachineKind) async throws -> Int {
        guard let json = try await storage.load(id: id, kind: kind) else {
            throw StateMachineError.notFound("no \(kind.rawValue) machine is saved under id \(id)")
        }
        return try await machines.deserialize(json, as: kind)
    }

    /// Restores saved machine `id` into a new handle, whatever its kind (machines of different
    /// kinds never share an id: ids are UUIDs).
    /// - Throws: ``StateMachineError/notFound(_:)`` when nothing is saved under `id`; the
    ///   storage's error when it fails.
    public func restore(id: String) async throws -> Int {
        for kind in MachineKind.allCases {
            if let json = try await storage.load(id: id, kind: kind) { return try await machines.deserialize(json, as: kind) }
        }
        throw StateMachineError.notFound("no state machine is saved under id \(id)")
    }

    /// Restores every saved machine of `kind`: id → new handle.
    public func restoreAll(kind: MachineKind) async throws -> [String: Int] {
        var out = [String: Int]()
        for id in try await storage.ids(kind: kind) { out[id] = try await restore(id: id, kind: kind) }
        return out
    }

    /// Removes a saved machine.
    public func delete(id: String, kind: MachineKind) async throws {
        try await storage.delete(id: id, kind: kind)
    }
}
