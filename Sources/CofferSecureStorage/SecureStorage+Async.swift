// Async forms of every secure-storage call. A Keychain call or a sealed file's read, write and
// fsync runs on a worker thread (`offCaller`), so awaiting it from the main actor never blocks
// the actor. In async code Swift picks these forms. A task cancelled before the call gets
// `CancellationError` and nothing is read or written (docs/concurrency.md); otherwise the
// errors are the blocking form's `SecureStorageError`.

import CofferSync
import Foundation

extension SecureStorage {
    /// ``save(_:for:accessibility:)`` off the caller's executor.
    public func save(_ data: Data, for name: String, accessibility: SecureAccessibility) async throws {
        try await offCallerUnlessCancelled { try self.save(data, for: name, accessibility: accessibility) }
    }

    /// ``load(_:)`` off the caller's executor.
    public func load(_ name: String) async throws -> Data? {
        try await offCallerUnlessCancelled { try self.load(name) }
    }

    /// ``delete(_:)`` off the caller's executor.
    public func delete(_ name: String) async throws {
        try await offCallerUnlessCancelled { try self.delete(name) }
    }

    /// ``names()`` off the caller's executor.
    public func names() async throws -> [String] {
        try await offCallerUnlessCancelled { try self.names() }
    }

    /// ``deleteAll()`` off the caller's executor.
    public func deleteAll() async throws {
        try await offCallerUnlessCancelled { try self.deleteAll() }
    }

    /// The typed ``save(_:for:accessibility:)`` off the caller's executor.
    public func save<Value>(_ value: Value, for item: SecureItem<Value>, accessibility: SecureAccessibility? = nil)
        async throws
    {
        try await offCallerUnlessCancelled { try self.save(value, for: item, accessibility: accessibility) }
    }

    /// The typed ``load(_:)`` off the caller's executor.
    public func load<Value>(_ item: SecureItem<Value>) async throws -> Value? {
        try await offCallerUnlessCancelled { try self.load(item) }
    }

    /// The typed ``delete(_:)`` off the caller's executor.
    public func delete<Value>(_ item: SecureItem<Value>) async throws {
        try await offCallerUnlessCancelled { try self.delete(item) }
    }
}

extension SSLClientCertificate {
    /// ``save(to:)`` off the caller's executor.
    /// - Throws: `CancellationError` when the task was cancelled before the call (nothing is
    ///   written), else the ``SecureStorageError`` of the blocking form.
    public func save(to storage: any SecureStorage) async throws {
        try await offCallerUnlessCancelled { try self.save(to: storage) }
    }

    /// ``load(from:)`` off the caller's executor.
    /// - Throws: `CancellationError` when the task was cancelled before the call, else the
    ///   ``SecureStorageError`` of the blocking form.
    public static func load(from storage: any SecureStorage) async throws -> SSLClientCertificate? {
        try await offCallerUnlessCancelled { try load(from: storage) }
    }
}
