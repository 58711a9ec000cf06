// What the `coffer` command line and its benchmarks (CofferBench) share: writing to stderr.

import CofferSync
import Foundation

/// Writes to stderr (progress, notes) without touching stdout, which carries results.
package enum StandardError {
    /// Whether stderr is a terminal (a progress bar redraws in place only there).
    package static let isTerminal = isatty(STDERR_FILENO) == 1
    /// Whether a progress line is left open (a later write continues it).
    private static let lineOpen = Locked(false)

    /// Writes `s` to stderr as it is.
    package static func write(_ s: String) {
        FileHandle.standardError.write(Data(s.utf8))
    }

    /// Part of a line that a later write continues (a progress bar drawn in place).
    package static func writeOpenLine(_ s: String) {
        lineOpen.withLock { open in
            write(s)
            open = true
        }
    }

    /// Ends a progress line left open, so that what follows starts on its own line.
    package static func endProgressLine() {
        lineOpen.withLock { open in
            if open { write("\n") }
            open = false
        }
    }

    /// A note on its own line.
    package static func note(_ s: String) {
        endProgressLine()
        write(s + "\n")
    }
}
