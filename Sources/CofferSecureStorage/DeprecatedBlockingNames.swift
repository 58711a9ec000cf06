// The blocking calls' old names (before the async form took the plain name), kept for one
// release so existing code still builds, with a warning whose fix-it writes the new name.

import Foundation

extension SecureStorage {
    /// The blocking form's old name, kept for one release: use `saveBlocking(_:for:accessibility:)`.
    @available(*, deprecated, renamed: "saveBlocking(_:for:accessibility:)")
    public func save(_ data: Data, for name: String, accessibility: SecureAccessibility) throws(SecureStorageError) {
        try saveBlocking(data, for: name, accessibility: accessibility)
    }
    /// The blocking form's old name, kept for one release: use `loadBlocking(_:)`.
    @available(*, deprecated, renamed: "loadBlocking(_:)")
    public func load(_ name: String) throws(SecureStorageError) -> Data? { try loadBlocking(name) }
    /// The blocking form's old name, kept for one release: use `deleteBlocking(_:)`.
    @available(*, deprecated, renamed: "deleteBlocking(_:)")
    public func delete(_ name: String) throws(SecureStorageError) { try deleteBlocking(name) }
    /// The blocking form's old name, kept for one release: use `namesBlocking()`.
    @available(*, deprecated, renamed: "namesBlocking()")
    public func names() throws(SecureStorageError) -> [String] { try namesBlocking() }
    /// The blocking form's old name, kept for one release: use `deleteAllBlocking()`.
    @available(*, deprecated, renamed: "deleteAllBlocking()")
    public func deleteAll() throws(SecureStorageError) { try deleteAllBlocking() }
    /// The blocking form's old name, kept for one release: use `damagedItemsBlocking()`.
    @available(*, deprecated, renamed: "damagedItemsBlocking()")
    public func damagedItems() throws(SecureStorageError) -> [(file: String, reason: String)] { try damagedItemsBlocking() }
    /// The blocking form's old name, kept for one release: use `saveBlocking(_:for:accessibility:)`.
    @available(*, deprecated, renamed: "saveBlocking(_:for:accessibility:)")
    public func save<Value>(_ value: Value, for item: SecureItem<Value>, accessibility: SecureAccessibility? = nil)
        throws(SecureStorageError)
    { try saveBlocking(value, for: item, accessibility: accessibility) }
    /// The blocking form's old name, kept for one release: use `loadBlocking(_:)`.
    @available(*, deprecated, renamed: "loadBlocking(_:)")
    public func load<Value>(_ item: SecureItem<Value>) throws(SecureStorageError) -> Value? { try loadBlocking(item) }
    /// The blocking form's old name, kept for one release: use `deleteBlocking(_:)`.
    @available(*, deprecated, renamed: "deleteBlocking(_:)")
    public func delete<Value>(_ item: SecureItem<Value>) throws(SecureStorageError) { try deleteBlocking(item) }
}

extension SSLClientCertificate {
    /// The blocking form's old name, kept for one release: use `saveBlocking(to:)`.
    @available(*, deprecated, renamed: "saveBlocking(to:)")
    public func save(to storage: any SecureStorage) throws(SecureStorageError) { try saveBlocking(to: storage) }
    /// The blocking form's old name, kept for one release: use `loadBlocking(from:)`.
    @available(*, deprecated, renamed: "loadBlocking(from:)")
    public static func load(from storage: any SecureStorage) throws(SecureStorageError) -> SSLClientCertificate? {
        try Self.loadBlocking(from: storage)
    }
    /// The blocking form's old name, kept for one release: use `deleteBlocking(from:)`.
    @available(*, deprecated, renamed: "deleteBlocking(from:)")
    public static func delete(from storage: any SecureStorage) throws(SecureStorageError) { try Self.deleteBlocking(from: storage) }
}

extension EncryptedFileSecureStorage {
    /// The blocking form's old name, kept for one release: use `accessibilityBlocking(of:)`.
    @available(*, deprecated, renamed: "accessibilityBlocking(of:)")
    public func accessibility(of name: String) throws(SecureStorageError) -> SecureAccessibility? { try accessibilityBlocking(of: name) }
}
