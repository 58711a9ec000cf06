// The secure store makes its key under the package's one lock between processes. A lock file
// that cannot be opened stops the key's creation with an error naming the file and what to do:
// going on unlocked could let two processes make two keys.

import CofferSecureStorage
import Foundation
import Testing

@Suite("Secure storage: the key lock")
struct KeyLockTests {
    @Test("a lock file that cannot be opened: save throws a storage error naming it, and no key is made")
    func unopenableLockFile() throws {
        let folder = secureFolder()
        // A folder where the lock file should be: open(2) refuses it (EISDIR), even for root.
        try FileManager.default.createDirectory(at: folder.appendingPathComponent(".key-lock"), withIntermediateDirectories: true)
        let store = EncryptedFileSecureStorage(folder: folder)
        do {
            try store.saveBlocking(Data("s3cret".utf8), for: "token", accessibility: .afterFirstUnlock)
            Issue.record("save went on without the key lock")
        } catch {
            guard case .storage(let message, let cause) = error else {
                Issue.record("not a storage error: \(error)")
                return
            }
            #expect(message.contains(folder.appendingPathComponent(".key-lock").path))
            #expect(message.contains("chmod"))
            #expect(cause?.posix == .EISDIR)
        }
        #expect(!FileManager.default.fileExists(atPath: folder.appendingPathComponent("key").path))
    }
}
