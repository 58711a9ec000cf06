// The disk layer's modes: files 0600, folders 0700, set by the cache whatever the umask.

import CofferMediaCache
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `path mode` (octal) for `root` and each entry under it that is not a 0600 file or a 0700 folder.
private func wrongModes(_ root: URL) -> [String] {
    let entries = ["."] + (FileManager.default.enumerator(atPath: root.path).map { $0.compactMap { $0 as? String } } ?? [])
    return entries.compactMap { relative -> String? in
        var info = stat()
        guard lstat(relative == "." ? root.path : root.appendingPathComponent(relative).path, &info) == 0 else { return nil }
        let mode = info.st_mode & 0o777
        let wanted: mode_t = info.st_mode & mode_t(S_IFMT) == mode_t(S_IFDIR) ? 0o700 : 0o600
        return mode == wanted ? nil : "\(relative) \(String(mode, radix: 8))"
    }.sorted()
}

@Suite("Media cache: file modes")
struct MediaCacheModesTests {
    @Test("the cache's folders (parents it makes too) are 0700 and its files 0600")
    func newCacheOwnerOnly() throws {
        let parent = cacheFolder()
        let folder = parent.appendingPathComponent("media", isDirectory: true)
        let cache = try MediaCache(folder: folder)
        try cache.storeBlocking(bytes(1), for: .thumbnail("a"))
        try cache.storeBlocking(bytes(2), for: .preview("a"))
        #expect(files(folder, .thumbnail).count == 1)
        #expect(wrongModes(parent) == [])
    }

    @Test("the cache's folders and anchor found wider are restricted when it opens, its entries when it indexes them")
    func existingCacheRestricted() throws {
        let folder = cacheFolder()
        try MediaCache(folder: folder).storeBlocking(bytes(1), for: .thumbnail("a"))
        let entry = try #require(files(folder, .thumbnail).first)
        for (path, mode) in [
            (folder.path, 0o755), (folder.appendingPathComponent("thumbnail").path, 0o755),
            (folder.appendingPathComponent(".coffer-cache-anchor").path, 0o644), (entry.path, 0o644),
        ] {
            #expect(chmod(path, mode_t(mode)) == 0)
        }
        let reopened = try MediaCache(folder: folder)
        #expect(reopened.dataBlocking(for: .thumbnail("a")) == bytes(1))
        _ = reopened.statisticsBlocking() // the index is built now if the background has not yet
        #expect(wrongModes(folder) == [])
    }
}
