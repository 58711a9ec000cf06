// Async forms of every secure-storage call. A Keychain call or a sealed file's read, write and
// fsync runs on a worker thread (`offCaller`), so awaiting it from the main actor never blocks
// the actor. In async code Swift picks these forms.
import CofferSync
import Foundation

extension SecureStorage {
    /// ``save(_:for:accessibility:)`` off the caller's executor.
    public func save(_ data: Data, for name: String, accessibility: SecureAccessibility) async throws(SecureStorageError) {
        try await offCaller { () throws(SecureStorageError) in try self.save(data, for: name, accessibility: accessibility) }
    }

    /// ``load(_:)`` off the caller's executor.
    public func load(_ name: String) async throws(SecureStorageError) -> Data? {
        try await offCaller { () throws(SecureStorageError) in try self.load(name) }
    }

    /// ``delete(_:)`` off the caller's executor.
    public func delete(_ name: String) async throws(SecureStorageError) {
        try await offCaller { () throws(SecureStorageError) in try self.delete(name) }
    }

    /// ``names()`` off the caller's executor.
    public func names() async throws(SecureStorageError) -> [String] {
        try await offCaller { () throws(SecureStorageError) in try self.names() }
    }

    /// ``deleteAll()`` off the caller's executor.
    public func deleteAll() async throws(SecureStorageError) {
        try await offCaller { () throws(SecureStorageError) in try self.deleteAll() }
    }

    /// The typed ``save(_:for:accessibility:)`` off the caller's executor.
    public func save<Value>(_ value: Value, for item: SecureItem<Value>, accessibility: SecureAccessibility? = nil)
        async throws(SecureStorageError)
    {
        try await offCaller { () throws(SecureStorageError) in try self.save(value, for: item, accessibility: accessibility) }
    }

    /// The typed ``load(_:)`` off the caller's executor.
    public func load<Value>(_ item: SecureItem<Value>) async throws(SecureStorageError) -> Value? {
        try await offCaller { () throws(SecureStorageError) in try self.load(item) }
    }

    /// The typed ``delete(_:)`` off the caller's executor.
    public func delete<Value>(_ item: SecureItem<Value>) async throws(SecureStorageError) {
        try await offCaller { () throws(SecureStorageError) in try self.delete(item) }
    }
}
