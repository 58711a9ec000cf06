// A storage error keeps the system's error underneath: a caller tells "the system refused" from
// "a folder on the way is missing" by the cause, while the message reads as before.

import CofferMediaCache
import Foundation
import Testing

@Suite("Storage errors keep their cause")
struct MediaCacheStorageCauseTests {
    /// A folder the system refuses to create: under a read-only folder (mode 0500) for a user,
    /// under `/sys` for root (whom modes do not stop).
    static func refusedFolder() throws -> URL {
        if geteuid() == 0 { return URL(fileURLWithPath: "/sys/coffer-cache-\(UUID().uuidString)", isDirectory: true) }
        let parent = cacheFolder()
        try FileManager.default.createDirectory(at: parent, withIntermediateDirectories: true)
        #expect(chmod(parent.path, 0o500) == 0)
        return parent.appendingPathComponent("cache", isDirectory: true)
    }

    static func openError(_ folder: URL) -> MediaCacheError? {
        do {
            _ = try MediaCache(folder: folder)
            return nil
        } catch { return error }
    }

    @Test("a folder the system refuses: the cause says permission denied (EACCES or EPERM), not missing, not full")
    func permissionDenied() throws {
        let error = try #require(Self.openError(try Self.refusedFolder()))
        guard case .storage(let message, let cause) = error else {
            Issue.record("not a storage error: \(error)")
            return
        }
        let found = try #require(cause, "the storage error lost its cause: \(message)")
        #expect(found.isPermissionDenied)
        #expect(!found.isNotFound)
        #expect(!found.isNoSpace)
        #expect(found.posix == .EACCES || found.posix == .EPERM)
        #expect(error.description == "media cache storage: \(message)")
    }

    @Test("a folder below a regular file: the cause says not found (ENOTDIR), not permission denied")
    func notFound() throws {
        let parent = cacheFolder()
        try FileManager.default.createDirectory(at: parent, withIntermediateDirectories: true)
        let file = parent.appendingPathComponent("file")
        try Data("x".utf8).write(to: file)
        let error = try #require(Self.openError(file.appendingPathComponent("cache", isDirectory: true)))
        guard case .storage(let message, let cause) = error else {
            Issue.record("not a storage error: \(error)")
            return
        }
        let found = try #require(cause, "the storage error lost its cause: \(message)")
        #expect(found.isNotFound)
        #expect(!found.isPermissionDenied)
        #expect(found.posix == .ENOTDIR)
    }
}
