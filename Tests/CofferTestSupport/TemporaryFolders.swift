// Temporary folders for tests: each one lives under a root folder of this test process, and the
// root is removed when the process exits, so a run leaves nothing behind in the system's
// temporary folder. Roots left by test processes that were killed are removed by the next run.

import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The test process's temporary folders.
package enum TemporaryFolders {
    private static let prefix = "coffer-test-run-"

    /// This process's root (`coffer-test-run-PID` in the system's temporary folder), made on first use,
    /// removed at exit; readable by every user, as the tests that run `coffer` unprivileged need.
    package static let root: URL = {
        let system = FileManager.default.temporaryDirectory
        removeAbandonedRoots(in: system)
        let root = system.appendingPathComponent("\(prefix)\(getpid())", isDirectory: true)
        try? FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        _ = chmod(root.path, 0o755)
        atexit { TemporaryFolders.removeTree(TemporaryFolders.root.path) }
        return root
    }()

    /// A fresh path under the root, nothing there yet (for a store the code under test creates).
    /// `label` names it, so a folder left by a failing test is recognisable.
    package static func path(_ label: String = "folder") -> URL {
        let name = label.filter { $0.isLetter || $0.isNumber || $0 == "-" }.prefix(40)
        return root.appendingPathComponent("\(name)-\(UUID().uuidString)", isDirectory: true)
    }

    /// A fresh, empty folder under the root.
    package static func make(_ label: String = "folder") -> URL {
        let url = path(label)
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// Removes the roots of test processes that no longer run (killed before their exit handler).
    private static func removeAbandonedRoots(in folder: URL) {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        for name in names where name.hasPrefix(prefix) {
            guard let pid = pid_t(name.dropFirst(prefix.count)), pid != getpid() else { continue }
            if kill(pid, 0) != 0 && errno == ESRCH { removeTree(folder.appendingPathComponent(name).path) }
        }
    }

    /// Removes `path` and everything under it, first giving its owner back the folders a test
    /// made unreadable (mode 000), which a plain removal cannot enter.
    static func removeTree(_ path: String) {
        var info = stat()
        guard lstat(path, &info) == 0 else { return }
        if info.st_mode & S_IFMT == S_IFDIR {
            _ = chmod(path, 0o700)
            for name in (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? [] { removeTree(path + "/" + name) }
            _ = rmdir(path)
        } else {
            _ = unlink(path)
        }
    }
}
