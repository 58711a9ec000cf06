// The Keychain behind the secure-storage protocol on Apple platforms (generic-password items).
//
// This file cannot be compiled on the Linux machines that build and test Coffer. It was reviewed
// line by line against Apple's Keychain Services documentation (SecItemAdd, SecItemUpdate,
// SecItemCopyMatching, SecItemDelete, kSecClassGenericPassword, kSecAttrService,
// kSecUseDataProtectionKeychain):
// - A generic password's composite primary key is access group + account + service +
//   synchronizable (the access group counts on macOS only in the data-protection keychain, which
//   `query` selects). One service per store (`CofferLocations.keychainService`) therefore gives
//   every store its own space: `deleteAll()` (class + service, no account) removes that store's
//   items and no other's. SecItemDelete removes every match by default.
// - SecItemUpdate's second dictionary holds only real attributes (value data, accessibility),
//   never search keys; SecItemAdd gets the query merged with them.
// - SecItemCopyMatching returns CFData for kSecReturnData + kSecMatchLimitOne, and an array of
//   attribute dictionaries for kSecReturnAttributes + kSecMatchLimitAll (`names()` never asks
//   for data with MatchLimitAll).
// - kSecAttrSynchronizable = false in every query keeps items off iCloud and matches only such items.
// Items saved under the single service "coffer" of earlier releases are not migrated: such a
// store's user signs in again once.
#if canImport(Security)
import Foundation
import Security

/// Secure items as Keychain generic passwords of one service (and optional access group); give
/// each store its own service (`CofferLocations.keychainService` in the `Coffer` module).
/// Items are never synchronised to iCloud. The Keychain keeps items across app reinstalls;
/// `CofferContainer` removes them when it sees a fresh install.
public final class KeychainSecureStorage: SecureStorage, @unchecked Sendable {
    // Safe to share: its properties are immutable strings and the Keychain calls are thread-safe (Keychain Services documentation); `@unchecked` only because Security types are not annotated.
    /// The `kSecAttrService` of every item.
    public let service: String
    /// The `kSecAttrAccessGroup` (team-prefixed), or nil for the app's default group.
    public let accessGroup: String?

    /// A store for `service`, optionally in a shared access group.
    public init(service: String, accessGroup: String? = nil) {
        self.service = service
        self.accessGroup = accessGroup
    }

    private func query(_ name: String?) -> [String: Any] {
        var query: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword,
            kSecAttrService as String: service,
            kSecAttrSynchronizable as String: kCFBooleanFalse as Any,
        ]
        if let name { query[kSecAttrAccount as String] = name }
        if let accessGroup { query[kSecAttrAccessGroup as String] = accessGroup }
        #if os(macOS)
        query[kSecUseDataProtectionKeychain as String] = true
        #endif
        return query
    }

    private static func attribute(_ accessibility: SecureAccessibility) -> CFString {
        switch accessibility {
        case .whenUnlocked: return kSecAttrAccessibleWhenUnlocked
        case .afterFirstUnlock: return kSecAttrAccessibleAfterFirstUnlock
        case .whenUnlockedThisDeviceOnly: return kSecAttrAccessibleWhenUnlockedThisDeviceOnly
        case .afterFirstUnlockThisDeviceOnly: return kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly
        }
    }

    private static func failure(_ status: OSStatus, _ what: String) -> SecureStorageError {
        let text = (SecCopyErrorMessageString(status, nil) as String?) ?? "OSStatus \(status)"
        switch status {
        case errSecInteractionNotAllowed:
            return .unavailable("\(what): the device is locked or not yet unlocked since boot (\(text))")
        case errSecMissingEntitlement:
            return .unavailable("\(what): missing keychain entitlement for the access group (\(text))")
        default:
            return .storage("\(what): \(text)")
        }
    }

    /// Adds or replaces the item with the given accessibility class.
    public func saveBlocking(_ data: Data, for name: String, accessibility: SecureAccessibility) throws(SecureStorageError) {
        try validateName(name)
        let attributes: [String: Any] = [
            kSecValueData as String: data,
            kSecAttrAccessible as String: Self.attribute(accessibility),
        ]
        var status = SecItemUpdate(query(name) as CFDictionary, attributes as CFDictionary)
        if status == errSecItemNotFound {
            var add = query(name)
            add.merge(attributes) { _, new in new }
            status = SecItemAdd(add as CFDictionary, nil)
        }
        guard status == errSecSuccess else { throw Self.failure(status, "cannot save \(name)") }
    }

    /// The item's bytes, or nil when there is none.
    public func loadBlocking(_ name: String) throws(SecureStorageError) -> Data? {
        try validateName(name)
        var q = query(name)
        q[kSecReturnData as String] = true
        q[kSecMatchLimit as String] = kSecMatchLimitOne
        var result: AnyObject?
        let status = SecItemCopyMatching(q as CFDictionary, &result)
        if status == errSecItemNotFound { return nil }
        guard status == errSecSuccess else { throw Self.failure(status, "cannot read \(name)") }
        guard let data = result as? Data else { throw .corrupted("\(name) did not come back as bytes") }
        return data
    }

    /// Removes the item; a missing item is not an error.
    public func deleteBlocking(_ name: String) throws(SecureStorageError) {
        try validateName(name)
        let status = SecItemDelete(query(name) as CFDictionary)
        guard status == errSecSuccess || status == errSecItemNotFound else { throw Self.failure(status, "cannot delete \(name)") }
    }

    /// Every item name of the service, sorted.
    public func namesBlocking() throws(SecureStorageError) -> [String] {
        var q = query(nil)
        q[kSecReturnAttributes as String] = true
        q[kSecMatchLimit as String] = kSecMatchLimitAll
        var result: AnyObject?
        let status = SecItemCopyMatching(q as CFDictionary, &result)
        if status == errSecItemNotFound { return [] }
        guard status == errSecSuccess else { throw Self.failure(status, "cannot list items") }
        let items = (result as? [[String: Any]]) ?? []
        return items.compactMap { $0[kSecAttrAccount as String] as? String }.sorted()
    }

    /// Removes every item of the service.
    public func deleteAllBlocking() throws(SecureStorageError) {
        let status = SecItemDelete(query(nil) as CFDictionary)
        guard status == errSecSuccess || status == errSecItemNotFound else { throw Self.failure(status, "cannot delete all items") }
    }
}
#endif
