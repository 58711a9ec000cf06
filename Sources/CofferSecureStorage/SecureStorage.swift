// Secure storage for small secrets (tokens, client certificates, headers): one protocol, the
// Keychain behind it on Apple platforms, an encrypted file store elsewhere.

import CofferSync
import Foundation

@_exported import struct CofferSync.StorageCause

/// When a stored item may be read, as the Keychain's accessibility classes. The file store
/// records the class with the item (Linux has no device lock state to enforce it against).
public enum SecureAccessibility: String, Sendable, Codable, CaseIterable {
    /// Only while the device is unlocked.
    case whenUnlocked
    /// After the first unlock since boot, also in the background. The default: background
    /// sync and uploads need the access token while the screen is locked.
    case afterFirstUnlock
    /// ``whenUnlocked``, never migrated to another device by a backup.
    case whenUnlockedThisDeviceOnly
    /// ``afterFirstUnlock``, never migrated to another device by a backup.
    case afterFirstUnlockThisDeviceOnly
}

/// Why a secure-storage call failed.
public enum SecureStorageError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The item name is not acceptable (empty, too long, control characters).
    case invalidName(String)
    /// The stored bytes do not decode as the item's type.
    case invalidValue(String)
    /// The store's key file is missing its protections or cannot be used.
    case keyFile(String)
    /// The key file is gone while sealed items exist, or is damaged (not 32 bytes): the items
    /// cannot be opened, and no new key is made over them (restore the key, or start over with
    /// `deleteAll()` or a reset).
    case keyLost(String)
    /// An item failed its integrity check (tampered, or sealed under another key).
    case corrupted(String)
    /// The items are not readable now (e.g. the Keychain before first unlock).
    case unavailable(String)
    /// Reading or writing the store failed.
    /// `cause` keeps the system's error number or SQLite's result code underneath (nil when
    /// there was none), so a caller can tell a full disk from a refused permission.
    case storage(String, cause: StorageCause? = nil)
    /// The store's owner (a closed or reset container) no longer serves it.
    case closed

    /// The message, naming what was wrong.
    public var description: String {
        switch self {
        case .closed: return "secure storage was closed with its container; open the container again"
        case .invalidName(let m): return "invalid secure item name: \(m)"
        case .invalidValue(let m): return "invalid secure item value: \(m)"
        case .keyFile(let m): return "secure storage key: \(m)"
        case .keyLost(let m): return "secure storage key lost: \(m)"
        case .corrupted(let m): return "secure item corrupted: \(m)"
        case .unavailable(let m): return "secure storage unavailable: \(m)"
        case .storage(let m, _): return "secure storage: \(m)"
        }
    }
}

/// Named secret items: `save`, `load`, `delete`. Implementations are thread-safe; every write is
/// durable when it returns. Every call here blocks the calling thread (a Keychain call, or a
/// sealed file's read or write and fsync): from the main actor, `await` the async forms of the
/// same names, which run on a worker thread.
public protocol SecureStorage: Sendable {
    /// Stores `data` under `name` (replacing any item of that name) with an accessibility class.
    /// Blocking: from async code, `await` the plain-named async form.
    func saveBlocking(_ data: Data, for name: String, accessibility: SecureAccessibility) throws(SecureStorageError)
    /// The item's bytes, or nil when there is none.
    /// Blocking: from async code, `await` the plain-named async form.
    func loadBlocking(_ name: String) throws(SecureStorageError) -> Data?
    /// Removes the item; removing a missing item is not an error.
    /// Blocking: from async code, `await` the plain-named async form.
    func deleteBlocking(_ name: String) throws(SecureStorageError)
    /// The names of every stored item, sorted.
    /// Blocking: from async code, `await` the plain-named async form.
    func namesBlocking() throws(SecureStorageError) -> [String]
    /// Removes every item of this store.
    /// Blocking: from async code, `await` the plain-named async form.
    func deleteAllBlocking() throws(SecureStorageError)
    /// Items that exist but fail their check (named as the store can: a file or account name),
    /// with the reason; the others still read. Stores that cannot tell return none.
    func damagedItemsBlocking() throws(SecureStorageError) -> [(file: String, reason: String)]
}

/// Another secure store that refuses every call with ``SecureStorageError/closed`` once
/// `isClosed` says so (a container's secure storage after the container closed), and keeps its
/// reserved items out of reach: the items Coffer itself keeps in the same store (the SDK wallet's
/// key) can be neither read, written nor deleted through it, are not listed, and survive
/// ``deleteAll()``.
public struct ClosableSecureStorage: SecureStorage {
    /// The store it forwards to while open.
    public let base: any SecureStorage
    /// Names this view refuses (``SecureStorageError/invalidName(_:)``), hides from ``names()``
    /// and keeps in ``deleteAll()``.
    public let reserved: Set<String>
    private let isClosed: @Sendable () -> Bool

    /// Forwards to `base` until `isClosed()` returns true, refusing the `reserved` names.
    public init(_ base: any SecureStorage, reserved: Set<String> = [], isClosed: @escaping @Sendable () -> Bool) {
        self.base = base
        self.reserved = reserved
        self.isClosed = isClosed
    }

    private func open() throws(SecureStorageError) -> any SecureStorage {
        if isClosed() { throw .closed }
        return base
    }

    private func open(for name: String) throws(SecureStorageError) -> any SecureStorage {
        let store = try open()
        if reserved.contains(name) {
            throw .invalidName(
                "\(name.debugDescription) is reserved: Coffer keeps it itself (the SDK wallet's key) and never hands it out; reset the store to remove it"
            )
        }
        return store
    }

    /// See ``SecureStorage/save(_:for:accessibility:)``.
    public func saveBlocking(_ data: Data, for name: String, accessibility: SecureAccessibility) throws(SecureStorageError) {
        try open(for: name).saveBlocking(data, for: name, accessibility: accessibility)
    }
    /// See ``SecureStorage/load(_:)``.
    public func loadBlocking(_ name: String) throws(SecureStorageError) -> Data? { try open(for: name).loadBlocking(name) }
    /// See ``SecureStorage/delete(_:)``.
    public func deleteBlocking(_ name: String) throws(SecureStorageError) { try open(for: name).deleteBlocking(name) }
    /// See ``SecureStorage/names()``; the reserved names are not listed.
    public func namesBlocking() throws(SecureStorageError) -> [String] { try open().namesBlocking().filter { !reserved.contains($0) } }
    /// See ``SecureStorage/deleteAll()``; the reserved items stay.
    public func deleteAllBlocking() throws(SecureStorageError) {
        let store = try open()
        if reserved.isEmpty { return try store.deleteAllBlocking() }
        for name in try store.namesBlocking() where !reserved.contains(name) { try store.deleteBlocking(name) }
    }
    /// See ``SecureStorage/damagedItems()``.
    public func damagedItemsBlocking() throws(SecureStorageError) -> [(file: String, reason: String)] { try open().damagedItemsBlocking() }
}

extension SecureStorage {
    /// None: this store cannot tell a damaged item from a missing one.
    public func damagedItemsBlocking() throws(SecureStorageError) -> [(file: String, reason: String)] { [] }
}

/// Checks an item name: 1–255 UTF-8 bytes, no control characters.
func validateName(_ name: String) throws(SecureStorageError) {
    guard !name.isEmpty else { throw .invalidName("the name is empty") }
    guard name.utf8.count <= 255 else { throw .invalidName("\"\(name.prefix(32))…\" is longer than 255 bytes") }
    guard !name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
        throw .invalidName("\(name.debugDescription) contains control characters")
    }
}

// MARK: - Typed items

/// A typed secure item: its name, its default accessibility, and how its value becomes bytes.
public struct SecureItem<Value: Sendable>: Sendable {
    /// The stored name.
    public let name: String
    /// The class used when saving without one.
    public let accessibility: SecureAccessibility
    let encode: @Sendable (Value) throws -> Data
    let decode: @Sendable (Data) throws -> Value

    /// An item whose value is JSON-coded.
    public init(_ name: String, accessibility: SecureAccessibility = .afterFirstUnlock) where Value: Codable {
        self.name = name
        self.accessibility = accessibility
        encode = { value in
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            return try encoder.encode(value)
        }
        decode = { data in try JSONDecoder().decode(Value.self, from: data) }
    }

    /// An item stored as UTF-8 text.
    public init(text name: String, accessibility: SecureAccessibility = .afterFirstUnlock) where Value == String {
        self.name = name
        self.accessibility = accessibility
        encode = { Data($0.utf8) }
        decode = { data in
            guard let text = String(data: data, encoding: .utf8) else {
                throw SecureStorageError.invalidValue("\(name) is not UTF-8 text")
            }
            return text
        }
    }
}

/// An SSL client certificate for mutual TLS: the PKCS#12 bytes and the password that opens them.
/// Printing one shows neither.
public struct SSLClientCertificate: Codable, Sendable, Equatable, CustomStringConvertible {
    /// The certificate bundle (PKCS#12), base64 in the stored JSON.
    public var data: Data
    /// The password that decrypts `data`.
    public var password: String

    /// A certificate with its password.
    public init(data: Data, password: String) {
        self.data = data
        self.password = password
    }

    /// The size only: neither bytes nor password are printed.
    public var description: String { "SSLClientCertificate(\(data.count) bytes, password: <redacted>)" }
}

extension SecureItem where Value == String {
    /// The server access token (seed: "Access Token — Authentication").
    public static let accessToken = SecureItem(text: "accessToken")
}

extension SecureItem where Value == SSLClientCertificate {
    /// The SSL client certificate and its password (seed: `SSLClientCertStoreVal`).
    public static let sslClientCertificate = SecureItem("sslClientCertificate")
}

extension SecureItem where Value == [String: String] {
    /// Custom HTTP headers sent to the server (proxy authentication).
    public static let customHeaders = SecureItem("customHeaders")
}

extension SecureStorage {
    /// Stores a typed item under its name and default (or the given) accessibility.
    /// Blocking: from async code, `await` the plain-named async form.
    public func saveBlocking<Value>(_ value: Value, for item: SecureItem<Value>, accessibility: SecureAccessibility? = nil)
        throws(SecureStorageError)
    {
        let data: Data
        do { data = try item.encode(value) } catch { throw .invalidValue("\(item.name): \(error)") }
        try saveBlocking(data, for: item.name, accessibility: accessibility ?? item.accessibility)
    }

    /// A typed item's value, or nil when it is not stored.
    /// - Throws: ``SecureStorageError/invalidValue(_:)`` when the stored bytes are not a `Value`.
    /// Blocking: from async code, `await` the plain-named async form.
    public func loadBlocking<Value>(_ item: SecureItem<Value>) throws(SecureStorageError) -> Value? {
        guard let data = try loadBlocking(item.name) else { return nil }
        do { return try item.decode(data) } catch { throw .invalidValue("\(item.name) does not hold a \(Value.self)") }
    }

    /// Removes a typed item.
    /// Blocking: from async code, `await` the plain-named async form.
    public func deleteBlocking<Value>(_ item: SecureItem<Value>) throws(SecureStorageError) {
        try deleteBlocking(item.name)
    }
}

extension SSLClientCertificate {
    /// Saves this certificate to `storage` (seed: `save()`). Blocks like the store's own calls:
    /// from async code, `await` ``save(to:)``.
    public func saveBlocking(to storage: any SecureStorage) throws(SecureStorageError) {
        try storage.saveBlocking(self, for: .sslClientCertificate)
    }

    /// The stored certificate, if any (seed: `load()`). Blocks like the store's own calls: from
    /// async code, `await` ``load(from:)``.
    public static func loadBlocking(from storage: any SecureStorage) throws(SecureStorageError) -> SSLClientCertificate? {
        try storage.loadBlocking(.sslClientCertificate)
    }

    /// Removes the stored certificate (seed: `delete()`). Blocks like the store's own calls: from
    /// async code, `await` ``delete(from:)``.
    public static func deleteBlocking(from storage: any SecureStorage) throws(SecureStorageError) {
        try storage.deleteBlocking(.sslClientCertificate)
    }
}

/// The platform's secure storage: the Keychain on Apple platforms, an encrypted file store in
/// `folder` elsewhere.
public enum PlatformSecureStorage {
    /// The default store for an app: Keychain items under `service` on Apple platforms; on other
    /// platforms files in `folder` sealed under a key kept in `folder/key` (0600).
    public static func make(folder: URL, service: String) -> any SecureStorage {
        #if canImport(Security)
        return KeychainSecureStorage(service: service)
        #else
        return EncryptedFileSecureStorage(folder: folder)
        #endif
    }
}

extension SecureStorageError: LocalizedError {
    /// The same text as `description`: what went wrong and what to do (for
    /// `localizedDescription`, alerts and logs).
    public var errorDescription: String? { description }
}
