// Secure storage fails per item, never silently replaces a lost key, and makes one key when
// several writers start together.

import CofferSecureStorage
import Foundation
import Testing

@Suite("Secure storage: per-item failures and a lost key")
struct SecureStorageDegradationTests {
    /// A store with items a, b, c where b's file is tampered with.
    func storeWithDamagedB() throws -> (EncryptedFileSecureStorage, String) {
        let folder = secureFolder()
        let writer = EncryptedFileSecureStorage(folder: folder)
        try writer.saveBlocking(Data("a".utf8), for: "a", accessibility: .whenUnlocked)
        let items = folder.appendingPathComponent("items")
        let before = Set(try FileManager.default.contentsOfDirectory(atPath: items.path))
        try writer.saveBlocking(Data("b".utf8), for: "b", accessibility: .whenUnlocked)
        let bFile = try #require(Set(try FileManager.default.contentsOfDirectory(atPath: items.path)).subtracting(before).first)
        try writer.saveBlocking(Data("c".utf8), for: "c", accessibility: .whenUnlocked)
        let url = items.appendingPathComponent(bFile)
        var raw = try Data(contentsOf: url)
        raw[raw.count - 1] ^= 1
        try raw.write(to: url)
        return (EncryptedFileSecureStorage(folder: folder), bFile)
    }

    @Test("a damaged item fails alone: the others list and read")
    func damagedItemAlone() throws {
        let (store, _) = try storeWithDamagedB()
        #expect(try store.namesBlocking() == ["a", "c"])
        #expect(try store.loadBlocking("a") == Data("a".utf8))
        #expect(try store.loadBlocking("c") == Data("c".utf8))
        #expect(throws: SecureStorageError.self) { try store.loadBlocking("b") }
    }

    @Test("the damaged item is named by its file")
    func damagedItemNamed() throws {
        let (store, file) = try storeWithDamagedB()
        let damaged = try store.damagedItemsBlocking()
        #expect(damaged.map(\.file) == [file])
        #expect(damaged.first?.reason.contains("integrity") == true)
    }

    @Test("saving over a damaged item repairs it")
    func damagedItemReplaced() throws {
        let (store, _) = try storeWithDamagedB()
        try store.saveBlocking(Data("b2".utf8), for: "b", accessibility: .whenUnlocked)
        #expect(try store.loadBlocking("b") == Data("b2".utf8))
        #expect(try store.damagedItemsBlocking().isEmpty)
    }

    @Test("a missing key file while items exist is an error, and no new key is made")
    func keyLost() throws {
        let folder = secureFolder()
        try EncryptedFileSecureStorage(folder: folder).saveBlocking(Data("t".utf8), for: "token", accessibility: .whenUnlocked)
        let key = folder.appendingPathComponent("key")
        try FileManager.default.removeItem(at: key)
        let store = EncryptedFileSecureStorage(folder: folder)
        #expect(throws: SecureStorageError.self) { try store.saveBlocking(Data("u".utf8), for: "other", accessibility: .whenUnlocked) }
        #expect(!FileManager.default.fileExists(atPath: key.path), "a new key must not be made over the items")
        do {
            _ = try store.loadBlocking("token")
            Issue.record("load should fail while the key is lost")
        } catch {
            guard case .keyLost = error else {
                Issue.record("expected keyLost, got \(error)")
                return
            }
            #expect(error.description.hasPrefix("secure storage key lost"))
        }
        #expect(throws: SecureStorageError.self) { try store.namesBlocking() }
    }

    @Test("deleteAll after a lost key starts over with a new key")
    func explicitStartOver() throws {
        let folder = secureFolder()
        try EncryptedFileSecureStorage(folder: folder).saveBlocking(Data("t".utf8), for: "token", accessibility: .whenUnlocked)
        try FileManager.default.removeItem(at: folder.appendingPathComponent("key"))
        let store = EncryptedFileSecureStorage(folder: folder)
        try store.deleteAllBlocking()
        try store.saveBlocking(Data("new".utf8), for: "token", accessibility: .whenUnlocked)
        #expect(try EncryptedFileSecureStorage(folder: folder).loadBlocking("token") == Data("new".utf8))
    }

    @Test("writers starting together on an empty store make one key between them")
    func oneKeyForConcurrentWriters() async throws {
        let folder = secureFolder()
        await withTaskGroup(of: Void.self) { group in
            for i in 0..<16 {
                group.addTask {
                    try? EncryptedFileSecureStorage(folder: folder).saveBlocking(
                        Data("\(i)".utf8), for: "item\(i)", accessibility: .whenUnlocked)
                }
            }
        }
        let reader = EncryptedFileSecureStorage(folder: folder)
        #expect(try await reader.names().count == 16)
        #expect(try await reader.damagedItems().isEmpty)
    }
}
