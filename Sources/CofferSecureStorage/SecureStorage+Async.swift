// Async forms of every secure-storage call. A Keychain call or a sealed file's read, write and
// fsync runs on a worker thread (`offCaller`), so awaiting it from the main actor never blocks
// the actor. In async code Swift picks these forms. A task cancelled before the call gets
// `CancellationError` and nothing is read or written (docs/concurrency.md); otherwise the
// errors are the blocking form's `SecureStorageError`.

import CofferSync
import Foundation

extension SecureStorage {
    /// ``saveBlocking(_:for:accessibility:)`` off the caller's executor.
    public func save(_ data: Data, for name: String, accessibility: SecureAccessibility) async throws {
        try await offCallerUnlessCancelled { try self.saveBlocking(data, for: name, accessibility: accessibility) }
    }

    /// ``loadBlocking(_:)`` off the caller's executor.
    public func load(_ name: String) async throws -> Data? {
        try await offCallerUnlessCancelled { try self.loadBlocking(name) }
    }

    /// ``deleteBlocking(_:)`` off the caller's executor.
    public func delete(_ name: String) async throws {
        try await offCallerUnlessCancelled { try self.deleteBlocking(name) }
    }

    /// ``namesBlocking()`` off the caller's executor.
    public func names() async throws -> [String] {
        try await offCallerUnlessCancelled { try self.namesBlocking() }
    }

    /// ``deleteAllBlocking()`` off the caller's executor.
    public func deleteAll() async throws {
        try await offCallerUnlessCancelled { try self.deleteAllBlocking() }
    }

    /// ``damagedItemsBlocking()`` off the caller's executor.
    public func damagedItems() async throws -> [(file: String, reason: String)] {
        let found = try await offCallerUnlessCancelled {
            try self.damagedItemsBlocking().map { DamagedItem(file: $0.file, reason: $0.reason) }
        }
        return found.map { (file: $0.file, reason: $0.reason) }
    }

    /// The typed ``saveBlocking(_:for:accessibility:)`` off the caller's executor.
    public func save<Value>(_ value: Value, for item: SecureItem<Value>, accessibility: SecureAccessibility? = nil)
        async throws
    {
        try await offCallerUnlessCancelled { try self.saveBlocking(value, for: item, accessibility: accessibility) }
    }

    /// The typed ``loadBlocking(_:)`` off the caller's executor.
    public func load<Value>(_ item: SecureItem<Value>) async throws -> Value? {
        try await offCallerUnlessCancelled { try self.loadBlocking(item) }
    }

    /// The typed ``deleteBlocking(_:)`` off the caller's executor.
    public func delete<Value>(_ item: SecureItem<Value>) async throws {
        try await offCallerUnlessCancelled { try self.deleteBlocking(item) }
    }
}

extension SSLClientCertificate {
    /// ``saveBlocking(to:)`` off the caller's executor.
    /// - Throws: `CancellationError` when the task was cancelled before the call (nothing is
    ///   written), else the ``SecureStorageError`` of the blocking form.
    public func save(to storage: any SecureStorage) async throws {
        try await offCallerUnlessCancelled { try self.saveBlocking(to: storage) }
    }

    /// ``loadBlocking(from:)`` off the caller's executor.
    /// - Throws: `CancellationError` when the task was cancelled before the call, else the
    ///   ``SecureStorageError`` of the blocking form.
    public static func load(from storage: any SecureStorage) async throws -> SSLClientCertificate? {
        try await offCallerUnlessCancelled { try loadBlocking(from: storage) }
    }

    /// ``deleteBlocking(from:)`` off the caller's executor.
    /// - Throws: `CancellationError` when the task was cancelled before the call (nothing is
    ///   removed), else the ``SecureStorageError`` of the blocking form.
    public static func delete(from storage: any SecureStorage) async throws {
        try await offCallerUnlessCancelled { try deleteBlocking(from: storage) }
    }
}

extension EncryptedFileSecureStorage {
    /// ``accessibilityBlocking(of:)`` off the caller's executor.
    public func accessibility(of name: String) async throws -> SecureAccessibility? {
        try await offCallerUnlessCancelled { try self.accessibilityBlocking(of: name) }
    }
}

/// A damaged item's name and reason (a `Sendable` carrier for ``SecureStorage/damagedItems()``).
private struct DamagedItem: Sendable {
    let file: String
    let reason: String
}
