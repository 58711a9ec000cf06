// The encrypted file store's modes: files 0600, folders 0700, whatever the umask.

import CofferSecureStorage
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The permission bits of `url` in octal, or "missing".
private func octalMode(_ url: URL) -> String {
    var info = stat()
    guard lstat(url.path, &info) == 0 else { return "missing" }
    return String(info.st_mode & 0o777, radix: 8)
}

@Suite("Secure storage: file modes")
struct SecureStorageModesTests {
    @Test("the key and item files are 0600, the store's folders (parents it makes too) 0700")
    func newStoreOwnerOnly() throws {
        let parent = secureFolder()
        let folder = parent.appendingPathComponent("secure", isDirectory: true)
        try EncryptedFileSecureStorage(folder: folder).saveBlocking(Data("t".utf8), for: "token", accessibility: .afterFirstUnlock)
        let items = folder.appendingPathComponent("items", isDirectory: true)
        let itemFiles = try FileManager.default.contentsOfDirectory(at: items, includingPropertiesForKeys: nil)
        #expect(itemFiles.count == 1)
        #expect([parent, folder, items].map(octalMode) == ["700", "700", "700"])
        #expect((itemFiles + [folder.appendingPathComponent("key")]).map(octalMode) == ["600", "600"])
    }

    @Test("the store's folder and items folder found 0755 are 0700 after the next read")
    func existingFoldersRestricted() throws {
        let folder = secureFolder()
        try EncryptedFileSecureStorage(folder: folder).saveBlocking(Data("t".utf8), for: "token", accessibility: .afterFirstUnlock)
        let items = folder.appendingPathComponent("items", isDirectory: true)
        #expect(chmod(folder.path, 0o755) == 0)
        #expect(chmod(items.path, 0o755) == 0)
        #expect(try EncryptedFileSecureStorage(folder: folder).loadBlocking("token") == Data("t".utf8))
        #expect([folder, items].map(octalMode) == ["700", "700"])
    }
}
