import CofferSecureStorage
import CofferTestSupport
import Foundation
import Testing

func secureFolder() -> URL {
    TemporaryFolders.path("coffer-secure")
}

/// Every byte of every file under `folder`.
func allBytes(_ folder: URL) -> Data {
    var out = Data()
    if let walker = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: nil) {
        for case let url as URL in walker {
            if let data = try? Data(contentsOf: url) { out.append(data) }
        }
    }
    return out
}

@Suite("Secure storage: encrypted files")
struct EncryptedFileSecureStorageTests {
    @Test("a saved item loads back; a missing one is nil")
    func roundTrip() throws {
        let store = EncryptedFileSecureStorage(folder: secureFolder())
        try store.saveBlocking(Data("s3cret".utf8), for: "token", accessibility: .afterFirstUnlock)
        #expect(try store.loadBlocking("token") == Data("s3cret".utf8))
        #expect(try store.loadBlocking("other") == nil)
    }

    @Test("saving again replaces the item")
    func replace() throws {
        let store = EncryptedFileSecureStorage(folder: secureFolder())
        try store.saveBlocking(Data("one".utf8), for: "token", accessibility: .whenUnlocked)
        try store.saveBlocking(Data("two".utf8), for: "token", accessibility: .whenUnlocked)
        #expect(try store.loadBlocking("token") == Data("two".utf8))
        #expect(try store.namesBlocking() == ["token"])
    }

    @Test("delete removes the item; deleting a missing item is fine")
    func delete() throws {
        let store = EncryptedFileSecureStorage(folder: secureFolder())
        try store.saveBlocking(Data("x".utf8), for: "token", accessibility: .whenUnlocked)
        try store.deleteBlocking("token")
        try store.deleteBlocking("token")
        #expect(try store.loadBlocking("token") == nil)
    }

    @Test("a new instance on the same folder reads what the first wrote")
    func persists() throws {
        let folder = secureFolder()
        try EncryptedFileSecureStorage(folder: folder).saveBlocking(Data("x".utf8), for: "token", accessibility: .whenUnlocked)
        #expect(try EncryptedFileSecureStorage(folder: folder).loadBlocking("token") == Data("x".utf8))
    }

    @Test("the folder holds neither item names nor values in the clear")
    func noPlaintext() throws {
        let folder = secureFolder()
        let store = EncryptedFileSecureStorage(folder: folder)
        try store.saveBlocking(Data("VALUE-visible-marker".utf8), for: "NAME-visible-marker", accessibility: .whenUnlocked)
        let raw = allBytes(folder)
        #expect(raw.range(of: Data("VALUE-visible-marker".utf8)) == nil)
        #expect(raw.range(of: Data("NAME-visible-marker".utf8)) == nil)
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.appendingPathComponent("items").path)
        #expect(!names.contains { $0.contains("NAME") })
    }

    @Test("the key file is created with mode 0600")
    func keyFileMode() throws {
        let folder = secureFolder()
        try EncryptedFileSecureStorage(folder: folder).saveBlocking(Data("x".utf8), for: "a", accessibility: .whenUnlocked)
        let attributes = try FileManager.default.attributesOfItem(atPath: folder.appendingPathComponent("key").path)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
    }

    @Test("a key file readable by others is refused with a clear error")
    func widerKeyFileRefused() throws {
        let folder = secureFolder()
        try EncryptedFileSecureStorage(folder: folder).saveBlocking(Data("x".utf8), for: "a", accessibility: .whenUnlocked)
        let key = folder.appendingPathComponent("key")
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: key.path)
        let error = #expect(throws: SecureStorageError.self) { try EncryptedFileSecureStorage(folder: folder).loadBlocking("a") }
        guard case .keyFile(let message) = error else {
            Issue.record("expected keyFile, got \(String(describing: error))")
            return
        }
        #expect(message.contains("0600"))
        #expect(message.contains("644"))
    }

    @Test("a tampered item reads as corrupted")
    func tampered() throws {
        let folder = secureFolder()
        let store = EncryptedFileSecureStorage(folder: folder)
        try store.saveBlocking(Data("x".utf8), for: "a", accessibility: .whenUnlocked)
        let items = folder.appendingPathComponent("items")
        let file = items.appendingPathComponent(try #require(FileManager.default.contentsOfDirectory(atPath: items.path).first))
        var raw = try Data(contentsOf: file)
        raw[raw.count - 1] ^= 1
        try raw.write(to: file)
        #expect(throws: SecureStorageError.self) { try store.loadBlocking("a") }
    }

    @Test("items sealed under another store's key do not open")
    func otherKey() throws {
        let a = secureFolder()
        let b = secureFolder()
        try EncryptedFileSecureStorage(folder: a).saveBlocking(Data("x".utf8), for: "t", accessibility: .whenUnlocked)
        try EncryptedFileSecureStorage(folder: b).saveBlocking(Data("y".utf8), for: "u", accessibility: .whenUnlocked)
        let fm = FileManager.default
        try fm.removeItem(at: b.appendingPathComponent("key"))
        try fm.copyItem(at: a.appendingPathComponent("key"), to: b.appendingPathComponent("key"))
        #expect(throws: SecureStorageError.self) { try EncryptedFileSecureStorage(folder: b).namesBlocking() }
    }

    @Test("the accessibility class is kept with the item")
    func accessibilityKept() throws {
        let store = EncryptedFileSecureStorage(folder: secureFolder())
        try store.saveBlocking(Data("x".utf8), for: "a", accessibility: .whenUnlockedThisDeviceOnly)
        #expect(try store.accessibilityBlocking(of: "a") == .whenUnlockedThisDeviceOnly)
    }

    @Test("names lists every item; deleteAll removes them all")
    func namesAndDeleteAll() throws {
        let store = EncryptedFileSecureStorage(folder: secureFolder())
        for name in ["b", "a", "c"] { try store.saveBlocking(Data(name.utf8), for: name, accessibility: .whenUnlocked) }
        #expect(try store.namesBlocking() == ["a", "b", "c"])
        try store.deleteAllBlocking()
        #expect(try store.namesBlocking().isEmpty)
    }

    @Test("bad names are refused by name")
    func badNames() throws {
        let store = EncryptedFileSecureStorage(folder: secureFolder())
        #expect(throws: SecureStorageError.invalidName("the name is empty")) {
            try store.saveBlocking(Data(), for: "", accessibility: .whenUnlocked)
        }
        #expect(throws: SecureStorageError.self) { try store.loadBlocking(String(repeating: "n", count: 300)) }
        #expect(throws: SecureStorageError.self) { try store.deleteBlocking("a\nb") }
    }
}

@Suite("Secure storage: the seed's items")
struct SeedItemTests {
    @Test("the access token round-trips as text")
    func accessToken() throws {
        let store = EncryptedFileSecureStorage(folder: secureFolder())
        try store.saveBlocking("tok-123", for: .accessToken)
        #expect(try store.loadBlocking(.accessToken) == "tok-123")
        try store.deleteBlocking(.accessToken)
        #expect(try store.loadBlocking(.accessToken) == nil)
    }

    @Test("an SSL client certificate saves, loads and deletes with its password")
    func certificate() throws {
        let store = EncryptedFileSecureStorage(folder: secureFolder())
        let cert = SSLClientCertificate(data: Data([0x30, 0x82, 0x01, 0x00]), password: "p12-pass")
        try cert.saveBlocking(to: store)
        #expect(try SSLClientCertificate.loadBlocking(from: store) == cert)
        try SSLClientCertificate.deleteBlocking(from: store)
        #expect(try SSLClientCertificate.loadBlocking(from: store) == nil)
    }

    @Test("printing a certificate shows neither its bytes nor its password")
    func certificateRedacted() {
        let cert = SSLClientCertificate(data: Data([1, 2, 3]), password: "hunter2")
        #expect(!"\(cert)".contains("hunter2"))
    }

    @Test("custom headers round-trip")
    func headers() throws {
        let store = EncryptedFileSecureStorage(folder: secureFolder())
        try store.saveBlocking(["Proxy-Authorization": "Basic abc", "X-Team": "t"], for: .customHeaders)
        #expect(try store.loadBlocking(.customHeaders) == ["Proxy-Authorization": "Basic abc", "X-Team": "t"])
    }

    @Test("an item of the wrong type is a clear error, not garbage")
    func wrongType() throws {
        let store = EncryptedFileSecureStorage(folder: secureFolder())
        try store.saveBlocking(Data("not json".utf8), for: "customHeaders", accessibility: .afterFirstUnlock)
        #expect(throws: SecureStorageError.self) { try store.loadBlocking(.customHeaders) }
    }

    @Test("the seed items default to after-first-unlock (background work needs them)")
    func defaultAccessibility() throws {
        let store = EncryptedFileSecureStorage(folder: secureFolder())
        try store.saveBlocking("t", for: .accessToken)
        #expect(try store.accessibilityBlocking(of: "accessToken") == .afterFirstUnlock)
    }
}
