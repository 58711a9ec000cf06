// What the `coffer` command line and its benchmarks (CofferBench) share: writing to stderr.

import CofferSync
import Foundation

/// Writes to stderr (progress, notes) without touching stdout, which carries results.
package enum StandardError {
    /// Whether stderr is a terminal (a progress bar redraws in place only there).
    package static let isTerminal = isatty(STDERR_FILENO) == 1
    private static let lock = Lock()
    nonisolated(unsafe) private static var lineOpen = false

    /// Writes `s` to stderr as it is.
    package static func write(_ s: String) {
        FileHandle.standardError.write(Data(s.utf8))
    }

    /// Part of a line that a later write continues (a progress bar drawn in place).
    package static func writeOpenLine(_ s: String) {
        lock.withLock {
            write(s)
            lineOpen = true
        }
    }

    /// Ends a progress line left open, so that what follows starts on its own line.
    package static func endProgressLine() {
        lock.withLock {
            if lineOpen { write("\n") }
            lineOpen = false
        }
    }

    /// A note on its own line.
    package static func note(_ s: String) {
        endProgressLine()
        write(s + "\n")
    }
}
