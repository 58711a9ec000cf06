// The secure storage of platforms without a Keychain: one sealed file per item, names blinded.

import CofferCrypto
import CofferSync
import Foundation
import Logging

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Secure items as files in one folder, each sealed with XChaCha20-Poly1305 under a key made on
/// first use and kept in `folder/key` (mode 0600; a wider mode is refused with
/// ``SecureStorageError/keyFile(_:)``). File names are keyed hashes of the item names, so the
/// folder shows neither names nor values. Each item is replaced atomically and durably; the
/// temporary file of a write killed before its rename is removed at the store's next first use.
///
/// Items fail one by one: a damaged item makes its own `load` throw, and ``names()`` lists the
/// others (``damagedItems()`` names the damaged files). A key file that is missing while items
/// exist is ``SecureStorageError/keyLost(_:)`` — never silently replaced by a new key, which
/// would orphan every item; ``deleteAll()`` (or a full reset) is the explicit way to start over.
/// The key is created under an exclusive lock, so processes starting together agree on one. Files
/// are mode 0600 and folders 0700 whatever the umask; the store's folders found wider are
/// restricted to their owner when the store first reads or writes.
public final class EncryptedFileSecureStorage: SecureStorage, Sendable {
    /// The store's folder.
    public let folder: URL
    /// The keys once loaded; every file operation runs holding this lock too.
    private let state = Locked(State())

    private struct State {
        var keys: (names: KeyedHash, items: SecretKey)?
        /// Whether this instance has swept its items folder of dead writes' temporary files.
        var swept = false
    }
    private static let logger = Logger(label: "coffer.secure")
    private static let format: UInt8 = 1

    /// A store in `folder` (created, 0700, on first write).
    public init(folder: URL) {
        self.folder = folder
    }

    private var itemsFolder: URL { folder.appendingPathComponent("items", isDirectory: true) }
    private var keyFile: OwnerOnlyKeyFile { OwnerOnlyKeyFile(url: folder.appendingPathComponent("key")) }

    /// Stores `data` under `name`, sealed, with its accessibility class.
    public func saveBlocking(_ data: Data, for name: String, accessibility: SecureAccessibility) throws(SecureStorageError) {
        try validateName(name)
        try state.withLock { (state) throws(SecureStorageError) -> Void in
            sweepOnce(&state)
            let (names, itemKey) = try loadKeys(create: true, &state)
            let file = fileName(name, names)
            var plain = Data()
            plain.append(UInt8(SecureAccessibility.allCases.firstIndex(of: accessibility)!))
            let nameBytes = Data(name.utf8)
            plain.append(UInt8(nameBytes.count))
            plain.append(nameBytes)
            plain.append(data)
            defer { plain.resetBytes(in: 0..<plain.count) }
            var sealed = Data([Self.format])
            do { sealed.append(try AEAD.xchacha20Poly1305.seal(plain, key: itemKey, associatedData: Data(file.utf8))) } catch {
                throw .storage("cannot seal \(name): \(error)", cause: StorageCause(error))
            }
            do throws(FileOperationError) {
                try DurableFile.ensureFolder(itemsFolder)
                try DurableFile.write(sealed, to: itemsFolder.appendingPathComponent(file), permissions: 0o600)
            } catch { throw .storage(error.message, cause: StorageCause(error)) }
        }
    }

    /// The item's bytes, or nil when there is none.
    /// - Throws: ``SecureStorageError/corrupted(_:)`` when the file fails its check.
    public func loadBlocking(_ name: String) throws(SecureStorageError) -> Data? {
        try validateName(name)
        return try state.withLock { (state) throws(SecureStorageError) -> Data? in
            sweepOnce(&state)
            guard try keyExists(state) else { return nil }
            let (names, itemKey) = try loadKeys(create: false, &state)
            let file = fileName(name, names)
            guard let item = try open(file, itemKey) else { return nil }
            guard item.name == name else { throw .corrupted("the file of \(name) holds another item") }
            return item.data
        }
    }

    /// The accessibility class an item was saved with, or nil when there is no such item.
    public func accessibilityBlocking(of name: String) throws(SecureStorageError) -> SecureAccessibility? {
        try validateName(name)
        return try state.withLock { (state) throws(SecureStorageError) -> SecureAccessibility? in
            sweepOnce(&state)
            guard try keyExists(state) else { return nil }
            let (names, itemKey) = try loadKeys(create: false, &state)
            return try open(fileName(name, names), itemKey)?.accessibility
        }
    }

    /// Removes the item (durably); a missing item is not an error.
    public func deleteBlocking(_ name: String) throws(SecureStorageError) {
        try validateName(name)
        try state.withLock { (state) throws(SecureStorageError) -> Void in
            sweepOnce(&state)
            guard try keyExists(state) else { return }
            let (names, _) = try loadKeys(create: false, &state)
            let url = itemsFolder.appendingPathComponent(fileName(name, names))
            guard try Self.exists(url) else { return }
            do throws(FileOperationError) { try DurableFile.remove(url) } catch {
                throw .storage(error.message, cause: StorageCause(error))
            }
            DurableFile.syncFolder(itemsFolder)
        }
    }

    /// Every readable item's name, sorted (each file is opened to read it). A damaged item is
    /// left out (and logged; see ``damagedItems()``).
    /// - Throws: ``SecureStorageError/corrupted(_:)`` when items exist and not one of them opens
    ///   (the key file does not match them); ``SecureStorageError/keyLost(_:)``.
    public func namesBlocking() throws(SecureStorageError) -> [String] {
        let (found, damaged) = try inventory()
        // An item that could not be read (not a regular file, no permission) says nothing about
        // the key: that is the error, not "the key does not match".
        if found.isEmpty, let unreadable = damaged.first(where: { $0.unreadable != nil })?.unreadable { throw unreadable }
        if found.isEmpty, let first = damaged.first {
            throw .corrupted(
                "none of the \(damaged.count) secure items opens under \(keyFile.url.path) (\(first.reason)); the key does not match them — restore the key file, or start over with a reset"
            )
        }
        return found
    }

    /// The item files that fail their check, with the reason (their names are sealed inside them).
    public func damagedItemsBlocking() throws(SecureStorageError) -> [(file: String, reason: String)] {
        try inventory().damaged.map { ($0.file, $0.reason) }
    }

    /// An item file that failed: why, and the storage error when it could not even be read.
    private typealias Failed = (file: String, reason: String, unreadable: SecureStorageError?)

    private func inventory() throws(SecureStorageError) -> (names: [String], damaged: [Failed]) {
        return try state.withLock { (state) throws(SecureStorageError) -> (names: [String], damaged: [Failed]) in
            sweepOnce(&state)
            guard try keyExists(state) else { return ([], []) }
            let (_, itemKey) = try loadKeys(create: false, &state)
            var found: [String] = []
            var damaged: [Failed] = []
            for file in try itemFiles() {
                do throws(SecureStorageError) {
                    if let item = try open(file, itemKey) { found.append(item.name) }
                } catch {
                    let unreadable: SecureStorageError? = if case .storage = error { error } else { nil }
                    damaged.append((file, error.description, unreadable))
                }
            }
            return (found.sorted(), damaged)
        }
    }

    /// Removes every item; the key stays.
    public func deleteAllBlocking() throws(SecureStorageError) {
        try state.withLock { (state) throws(SecureStorageError) -> Void in
            sweepOnce(&state)
            for file in try itemFiles() {
                do throws(FileOperationError) { try DurableFile.remove(itemsFolder.appendingPathComponent(file)) } catch {
                    throw .storage(error.message, cause: StorageCause(error))
                }
            }
            DurableFile.syncFolder(itemsFolder)
        }
    }

    // MARK: - Internals

    /// Loads the key, or makes it when there is none and no item exists, holding an exclusive
    /// `flock(2)` on `folder/.key-lock` so concurrent processes make one key between them.
    private func createOrLoadKey() throws -> SecretKey {
        // The package's one lock between processes: a lock file that cannot be opened or locked
        // is an error naming it (the store never goes on unlocked, which could make two keys).
        let lockPath = folder.appendingPathComponent(".key-lock").path
        let failure = { (e: ProcessLockError) -> any Error in SecureStorageError.storage(e.message, cause: StorageCause(e)) }
        return try ProcessLock.withLock(at: lockPath, failure: failure) { () throws(any Error) -> SecretKey in
            if try Self.exists(keyFile.url) { return try keyFile.load() }
            let count = try itemFiles().count
            guard count == 0 else { throw SecureStorageError.keyLost(lostKeyMessage(count)) }
            return try keyFile.loadOrCreate()
        }
    }

    /// Lock held. Removes, once per instance (at its first use), the temporary files of item
    /// (and key) writes whose process died before the rename: sealed copies of a value that no name leads
    /// to, which would otherwise outlive a `delete` of the item. Writes in progress (this or
    /// another process) hold a lock on theirs and are left alone.
    private func sweepOnce(_ state: inout State) {
        guard !state.swept else { return }
        state.swept = true
        let removed = DurableFile.sweepTemporaries(in: itemsFolder) + DurableFile.sweepTemporaries(in: folder)
        if !removed.isEmpty {
            Self.logger.debug("removed temporary files of interrupted writes", metadata: ["count": "\(removed.count)"])
        }
    }

    /// The item files' names; none when the items folder does not exist.
    /// - Throws: ``SecureStorageError/storage(_:cause:)`` naming the folder when it (or the store's
    ///   folder) exists but cannot be read: an unreadable folder is not an empty one.
    private func itemFiles() throws(SecureStorageError) -> [String] {
        guard try Self.exists(folder), try Self.exists(itemsFolder) else { return [] }
        do { return try FileManager.default.contentsOfDirectory(atPath: itemsFolder.path).filter { !$0.hasPrefix(".") } } catch {
            throw .storage(Self.unreadable(itemsFolder.path, reason: error.localizedDescription), cause: StorageCause(error))
        }
    }

    /// Whether something is at `url`; a folder on the way that cannot be searched, or a folder
    /// at `url` that cannot be read, is a storage error naming it (not "missing").
    private static func exists(_ url: URL) throws(SecureStorageError) -> Bool {
        var info = stat()
        guard lstat(url.path, &info) == 0 else {
            if errno == ENOENT || errno == ENOTDIR { return false }
            let (reason, code) = (String(cString: strerror(errno)), errno)
            let parent = url.deletingLastPathComponent().path
            throw .storage(
                Self.unreadable(access(parent, R_OK | X_OK) == 0 ? url.path : parent, reason: reason), cause: StorageCause(errno: code))
        }
        if info.st_mode & mode_t(S_IFMT) == mode_t(S_IFDIR), access(url.path, R_OK | X_OK) != 0 {
            throw .storage(Self.unreadable(url.path, reason: String(cString: strerror(errno))), cause: StorageCause(errno: errno))
        }
        return true
    }

    private static func unreadable(_ path: String, reason: String) -> String {
        "cannot read \(path) (\(reason)); give its owner read and search permission again (chmod u+rwx), or start over with a reset"
    }

    /// Lock held. Whether the key file exists; a missing key while item files exist is an error.
    private func keyExists(_ state: State) throws(SecureStorageError) -> Bool {
        if state.keys != nil { return true }
        guard try Self.exists(folder) else { return false }
        if try Self.exists(keyFile.url) { return true }
        let count = try itemFiles().count
        guard count == 0 else { throw .keyLost(lostKeyMessage(count)) }
        return false
    }

    private func lostKeyMessage(_ items: Int) -> String {
        "\(keyFile.url.path) is missing while \(items) sealed items exist in \(itemsFolder.path); they cannot be opened. "
            + "Restore the key file, or start over explicitly (deleteAll(), or coffer reset --yes) — no new key is made over them"
    }

    private func loadKeys(create: Bool, _ state: inout State) throws(SecureStorageError) -> (KeyedHash, SecretKey) {
        if let keys = state.keys { return keys }
        restrictFolders()
        let master: SecretKey
        do {
            if create {
                try DurableFile.ensureFolder(folder)
                master = try createOrLoadKey()
            } else {
                master = try keyFile.load()
            }
        } catch let error as SecureStorageError {
            throw error
        } catch let error as FileOperationError where error.damaged {
            throw .keyLost(error.message)
        } catch { throw .keyFile("\(error)") }
        let loaded = (
            names: KeyedHash(key: KeyDerivation.hkdf(from: master, info: "coffer.secure.names")),
            items: KeyDerivation.hkdf(from: master, info: "coffer.secure.items")
        )
        state.keys = loaded
        return loaded
    }

    /// Takes group and other permissions away from the store's folder and its `items` folder
    /// (0755 becomes 0700) when an earlier release or another tool left them wider; best effort,
    /// a failure is logged. New folders are made 0700 by ``DurableFile/ensureFolder(_:)``.
    private func restrictFolders() {
        for owned in [folder, itemsFolder] {
            do { try DurableFile.restrictToOwner(owned) } catch {
                Self.logger.warning("a secure storage folder stays readable by others", metadata: ["reason": "\(error.message)"])
            }
        }
    }

    private func fileName(_ name: String, _ names: KeyedHash) -> String {
        names.hash(domain: 1, Data(name.utf8), byteCount: 16).map { String(format: "%02x", $0) }.joined()
    }

    private func open(_ file: String, _ itemKey: SecretKey) throws(SecureStorageError)
        -> (name: String, accessibility: SecureAccessibility, data: Data)?
    {
        let url = itemsFolder.appendingPathComponent(file)
        let sealed: Data
        guard try Self.exists(url) else { return nil }
        do {
            guard let read = try DurableFile.read(url) else { return nil }
            sealed = read
        } catch { throw .storage(error.message, cause: StorageCause(error)) }
        guard sealed.first == Self.format else { throw .corrupted("\(url.path) has an unknown format") }
        var plain: Data
        do { plain = try AEAD.xchacha20Poly1305.open(sealed.dropFirst(), key: itemKey, associatedData: Data(file.utf8)) } catch {
            Self.logger.warning("a secure item failed its integrity check", metadata: ["file": "\(file)"])
            throw .corrupted("\(url.path) failed its integrity check")
        }
        defer { plain.resetBytes(in: 0..<plain.count) }
        let bytes = [UInt8](plain.prefix(2))
        guard bytes.count == 2, Int(bytes[0]) < SecureAccessibility.allCases.count, plain.count >= 2 + Int(bytes[1]),
            let name = String(data: plain.dropFirst(2).prefix(Int(bytes[1])), encoding: .utf8)
        else {
            throw .corrupted("\(url.path) does not hold an item")
        }
        return (name, SecureAccessibility.allCases[Int(bytes[0])], Data(plain.dropFirst(2 + Int(bytes[1]))))
    }
}
