// Running a child process to its end from a test: its standard output and error read in full (at
// the same time, so neither pipe fills up and stalls the child), its pipes closed in every other
// child, and a bound after which it is killed and the test fails instead of hanging the suite.

import CofferSync
import Dispatch
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How a child process ended and what it printed.
package struct ProcessResult: Sendable {
    /// Its exit status (the signal's number when a signal ended it).
    package let status: Int32
    /// Its standard output, decoded as UTF-8 (invalid bytes replaced).
    package let stdout: String
    /// Its standard error, decoded as UTF-8 (invalid bytes replaced).
    package let stderr: String

    /// A result from its parts.
    package init(status: Int32, stdout: String, stderr: String) {
        self.status = status
        self.stdout = stdout
        self.stderr = stderr
    }
}

extension Pipe {
    /// A pipe whose two ends are closed in every child process that does not take them as its
    /// standard input, output or error (`FD_CLOEXEC`; `Process` gives a child its own ends with
    /// `dup2`, which clears the flag on the copy). Foundation's plain `Pipe()` ends are inherited by
    /// every process spawned meanwhile: a child paused for a kill test then held another test's
    /// write end open, and that test's `readDataToEndOfFile()` blocked a thread of the cooperative
    /// pool until the pause ran out (about 60 s), stalling the whole suite.
    package static func closedOnExec() -> Pipe {
        let pipe = Pipe()
        for handle in [pipe.fileHandleForReading, pipe.fileHandleForWriting] {
            _ = fcntl(handle.fileDescriptor, F_SETFD, fcntl(handle.fileDescriptor, F_GETFD) | FD_CLOEXEC)
        }
        return pipe
    }
}

/// Runs `executable` with `arguments` and waits for it to end.
/// - Parameters:
///   - environment: variables added to (or replacing those of) this process's environment.
///   - stdin: bytes written to its standard input, which is then closed (nil: closed at once).
///   - currentDirectory: its working folder (nil: this process's).
///   - bound: how long it may run; then it is killed (SIGKILL).
/// - Throws: ``TimedOut`` when it was still running after `bound`; what `Process.run()` throws
///   when it cannot start.
package func runProcess(
    _ executable: URL, _ arguments: [String], environment: [String: String] = [:], stdin: Data? = nil, currentDirectory: URL? = nil,
    within bound: Duration = .seconds(300)
) throws -> ProcessResult {
    let process = Process()
    process.executableURL = executable
    process.arguments = arguments
    process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
    if let currentDirectory { process.currentDirectoryURL = currentDirectory }
    let out = Pipe.closedOnExec()
    let err = Pipe.closedOnExec()
    let input = Pipe.closedOnExec()
    process.standardOutput = out
    process.standardError = err
    process.standardInput = input
    try process.run()

    // The bound: a child still running then is killed, and the run reports it.
    let pid = process.processIdentifier
    let watch = Locked((ended: false, killed: false))
    let watchdog = DispatchWorkItem {
        watch.withLock { state in
            guard !state.ended else { return }
            state.killed = true
            kill(pid, SIGKILL)
        }
    }
    let (seconds, attoseconds) = bound.components
    DispatchQueue.global().asyncAfter(
        deadline: .now() + .nanoseconds(Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000)), execute: watchdog)
    defer { watchdog.cancel() }

    // Standard error is read on a thread of its own while this one reads standard output. Not on
    // a Dispatch global queue: on Linux those share a pool as wide as the machine has cores (two
    // here), and readers blocked for a child's whole life starved every library call that goes
    // off its caller through that pool (the media cache's disk reads waited more than 30 s).
    let errorBytes = Locked(Data())
    let errorRead = DispatchSemaphore(value: 0)
    let errorHandle = err.fileHandleForReading
    Thread {
        let data = errorHandle.readDataToEndOfFile()
        errorBytes.withLock { $0 = data }
        errorRead.signal()
    }.start()
    if let stdin { input.fileHandleForWriting.write(stdin) }
    try input.fileHandleForWriting.close()
    let output = out.fileHandleForReading.readDataToEndOfFile()
    errorRead.wait()
    process.waitUntilExit()
    let killed = watch.withLock { state -> Bool in
        state.ended = true
        return state.killed
    }
    if killed {
        throw TimedOut(description: "\(executable.lastPathComponent) \(arguments.joined(separator: " ")): still running after \(bound)")
    }
    return ProcessResult(
        status: process.terminationStatus, stdout: String(decoding: output, as: UTF8.self),
        stderr: String(decoding: errorBytes.withLock { $0 }, as: UTF8.self))
}
