// Child processes for tests, started with posix_spawn (Foundation's `Process` crashed now and
// then on Linux, and reaped its children one at a time). Each child gets two threads of its own:
// one reads its standard output and error (and writes its standard input) through poll(2), so
// neither pipe fills up and stalls it whatever it prints; one waits for it with waitpid(2). Tests
// await its end, or something it printed, through continuations those threads resume: no thread
// of the cooperative pool is held while a child runs. Every wait has a bound; a child still
// running then is killed and the wait fails with a message naming the command.

import CofferSync
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How long a child may run by default before a wait kills it: a bound against a hang, generous
/// because the full suite runs many children at once on two cores.
package let defaultProcessBound: Duration = .seconds(300)

/// How a child process ended.
package enum Termination: Sendable, Equatable, CustomStringConvertible {
    /// It exited with this status.
    case exited(Int32)
    /// A signal (this number) ended it.
    case signalled(Int32)

    /// `exit N` or `signal N`.
    package var description: String {
        switch self {
        case .exited(let status): "exit \(status)"
        case .signalled(let signal): "signal \(signal)"
        }
    }
}

/// How a child process ended and what it printed.
package struct ProcessResult: Sendable {
    /// How it ended.
    package let termination: Termination
    /// Its standard output, as it wrote it.
    package let stdoutBytes: Data
    /// Its standard error, as it wrote it.
    package let stderrBytes: Data

    /// A result from its parts.
    package init(termination: Termination, stdoutBytes: Data, stderrBytes: Data) {
        self.termination = termination
        self.stdoutBytes = stdoutBytes
        self.stderrBytes = stderrBytes
    }

    /// Its exit status, or the signal's number when a signal ended it.
    package var status: Int32 {
        switch termination {
        case .exited(let status), .signalled(let status): status
        }
    }

    /// Whether a signal ended it (rather than an exit).
    package var wasSignalled: Bool {
        if case .signalled = termination { return true }
        return false
    }

    /// Its standard output, decoded as UTF-8 (invalid bytes replaced).
    package var stdout: String { String(decoding: stdoutBytes, as: UTF8.self) }
    /// Its standard error, decoded as UTF-8 (invalid bytes replaced).
    package var stderr: String { String(decoding: stderrBytes, as: UTF8.self) }
}

/// Why a child could not be started.
package struct SpawnFailed: Error, CustomStringConvertible {
    /// The command and the system's reason.
    package let description: String
}

/// A child process started by ``spawn(_:_:environment:stdin:currentDirectory:)``: running until
/// it ends, its output collected as it comes.
package final class ChildProcess: Sendable {
    /// Its process id (valid as long as it has not been waited for, which this object does).
    package let pid: pid_t
    /// The program it runs.
    package let executable: URL
    /// Its arguments (without the program).
    package let arguments: [String]

    private struct Waiter {
        let id: UInt64
        /// Whether the child's state now satisfies the waiter.
        let isSatisfied: @Sendable (Snapshot) -> Bool
        let resume: @Sendable (Result<Snapshot, any Error>) -> Void
    }

    /// What a child has printed so far, and how it ended when it has.
    package struct Snapshot: Sendable {
        /// Its standard output so far.
        package var stdout = Data()
        /// Its standard error so far.
        package var stderr = Data()
        /// How it ended; nil while it runs (or while no thread has seen it end yet).
        package var termination: Termination?
        /// Whether its output pipes are read to their end (or abandoned after it ended).
        package var outputComplete = false

        /// Its end and its complete output are known.
        package var isFinished: Bool { termination != nil && outputComplete }
    }

    private struct State {
        var snapshot = Snapshot()
        var waiters: [Waiter] = []
        var lastWaiter: UInt64 = 0
        /// The waiting thread is freeing the child's pid.
        var reaping = false
        /// Waits given an id that have not registered their waiter yet.
        var unregistered: Set<UInt64> = []
        /// Waits that failed (their bound passed, their task was cancelled) before they were
        /// registered: each is resumed with its error as it registers.
        var failedEarly: [UInt64: any Error] = [:]
    }

    private let state = Locked(State())

    private init(pid: pid_t, executable: URL, arguments: [String]) {
        self.pid = pid
        self.executable = executable
        self.arguments = arguments
    }

    /// The command line, for messages.
    package var commandLine: String { ([executable.lastPathComponent] + arguments).joined(separator: " ") }

    // MARK: Starting

    /// Starts `executable` with `arguments` and returns at once.
    /// - Parameters:
    ///   - environment: variables added to (or replacing those of) this process's environment.
    ///   - stdin: bytes written to its standard input, which is then closed (nil: closed at once).
    ///   - currentDirectory: its working folder (nil: this process's).
    /// - Throws: ``SpawnFailed`` when it cannot be started (no such program, …).
    package static func spawn(
        _ executable: URL, _ arguments: [String], environment: [String: String] = [:], stdin: Data? = nil, currentDirectory: URL? = nil
    ) throws -> ChildProcess {
        let (pid, output, errors, input) = try Spawner.spawn(
            executable.path, arguments, environment: ProcessInfo.processInfo.environment.merging(environment) { $1 },
            currentDirectory: currentDirectory?.path)
        let child = ChildProcess(pid: pid, executable: executable, arguments: arguments)
        let stdinBytes = stdin ?? Data()
        Thread { child.pump(output: output, errors: errors, input: input, stdin: stdinBytes) }.start()
        Thread { child.reap() }.start()
        return child
    }

    // MARK: Looking at it

    /// What it has printed so far, and how it ended if it has.
    package var snapshot: Snapshot { state.withLock { $0.snapshot } }

    /// Whether it is still running (as far as its waiting thread has seen; not yet reaped).
    package var isRunning: Bool { state.withLock { $0.snapshot.termination == nil } }

    /// Its standard output so far, decoded as UTF-8.
    package var stdoutSoFar: String { String(decoding: state.withLock { $0.snapshot.stdout }, as: UTF8.self) }

    /// Its standard error so far, decoded as UTF-8.
    package var stderrSoFar: String { String(decoding: state.withLock { $0.snapshot.stderr }, as: UTF8.self) }

    /// Sends `signal` (SIGKILL by default) unless it has already been reaped (its pid could be
    /// another process's by then). Returns whether it was sent to a process that was still
    /// running, as far as its waiting thread had seen.
    @discardableResult
    package func kill(_ signal: Int32 = SIGKILL) -> Bool {
        // Under the lock: the waiting thread marks the child `reaping` under it before it frees
        // the pid (see `reap`), so until then the pid is the child's (running or a zombie).
        state.withLock { state -> Bool in
            guard !state.reaping else { return false }
            return sendSignal(pid, signal) == 0 && state.snapshot.termination == nil
        }
    }

    // MARK: Waiting

    /// Waits until `condition` holds for what it printed and how it ended (checked each time
    /// either changes), without holding a thread of the cooperative pool.
    /// - Throws: ``TimedOut`` (naming `what` and the command) when it did not hold within `bound`;
    ///   the child is left running.
    @discardableResult
    package func waitUntil(
        _ what: String, within bound: Duration = defaultWaitBound, _ condition: @escaping @Sendable (Snapshot) -> Bool
    ) async throws -> Snapshot {
        let id = newWaiterID()
        let timer = Task { [weak self] in
            try? await Task.sleep(for: bound)
            guard !Task.isCancelled, let self else { return }
            self.fail(waiter: id, TimedOut(description: "\(self.commandLine): \(what) not within \(bound)\(self.tail)"))
        }
        defer { timer.cancel() }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Snapshot, any Error>) in
                register(Waiter(id: id, isSatisfied: condition, resume: { continuation.resume(with: $0) }))
            }
        } onCancel: {
            self.fail(waiter: id, CancellationError())
        }
    }

    /// Waits until its standard error contains `text` (a test pause's marker, a progress line…).
    /// - Throws: ``TimedOut`` when it did not come within `bound`, or the child ended without it.
    package func waitForStderr(containing text: String, within bound: Duration = defaultWaitBound) async throws {
        let snapshot = try await waitUntil("\"\(text)\" on stderr", within: bound) {
            $0.termination != nil || String(decoding: $0.stderr, as: UTF8.self).contains(text)
        }
        guard String(decoding: snapshot.stderr, as: UTF8.self).contains(text) else {
            throw TimedOut(description: "\(commandLine): ended (\(snapshot.termination!)) without \"\(text)\" on stderr\(tail)")
        }
    }

    /// Waits for it to end and for its whole output, without holding a thread of the cooperative
    /// pool.
    /// - Throws: ``TimedOut`` when it was still running after `bound`: it is then killed (SIGKILL).
    package func wait(within bound: Duration = defaultProcessBound) async throws -> ProcessResult {
        do {
            return Self.result(try await waitUntil("end", within: bound) { $0.isFinished })
        } catch let error as TimedOut {
            try await killAfterTimeout()
            throw error
        }
    }

    /// Kills it (SIGKILL, see ``kill(_:)``) and waits for it to end: a kill test's last step.
    /// Its result's ``ProcessResult/wasSignalled`` tells whether the kill ended it (false when it
    /// had already exited).
    package func killAndWait(within bound: Duration = defaultWaitBound) async throws -> ProcessResult {
        kill()
        return try await wait(within: bound)
    }

    /// Waits for it to end and for its whole output, blocking the calling thread: for code that
    /// cannot await (a static initialiser, an exit handler). Async code uses ``wait(within:)``.
    /// - Throws: ``TimedOut`` when it was still running after `bound`: it is then killed (SIGKILL).
    package func waitBlocking(within bound: Duration = defaultProcessBound) throws -> ProcessResult {
        do {
            return Self.result(try waitUntilBlocking("end", within: bound) { $0.isFinished })
        } catch let error as TimedOut {
            kill()
            _ = try? waitUntilBlocking("end after SIGKILL", within: .seconds(30)) { $0.isFinished }
            throw error
        }
    }

    /// ``waitUntil(_:within:_:)`` blocking the calling thread: for a timing-sensitive section of a
    /// test run on a thread of its own (``onOwnThread(_:)``), where a child's marker must be acted
    /// on before a short pause ends, which an awaiting task resumed by a busy pool may miss.
    @discardableResult
    package func waitUntilBlocking(
        _ what: String, within bound: Duration = defaultWaitBound, _ condition: @escaping @Sendable (Snapshot) -> Bool
    ) throws -> Snapshot {
        let done = DispatchSemaphore(value: 0)
        let outcome = Locked<Result<Snapshot, any Error>?>(nil)
        let id = newWaiterID()
        register(
            Waiter(
                id: id, isSatisfied: condition,
                resume: { result in
                    outcome.withLock { $0 = result }
                    done.signal()
                }))
        if done.wait(timeout: .now() + .nanoseconds(Self.nanoseconds(bound))) == .timedOut {
            fail(waiter: id, TimedOut(description: "\(commandLine): \(what) not within \(bound)\(tail)"))
            done.wait()
        }
        return try outcome.withLock { $0 }!.get()
    }

    /// Kills a child a wait gave up on, and waits (briefly, bounded) until it is gone.
    private func killAfterTimeout() async throws {
        kill()
        _ = try? await waitUntil("end after SIGKILL", within: .seconds(30)) { $0.isFinished }
    }

    // MARK: Internals

    /// The last lines it wrote to standard error, for a timeout's message.
    private var tail: String {
        let text = stderrSoFar
        return text.isEmpty ? "" : "; its stderr ends: \(text.suffix(600))"
    }

    private static func result(_ snapshot: Snapshot) -> ProcessResult {
        ProcessResult(termination: snapshot.termination!, stdoutBytes: snapshot.stdout, stderrBytes: snapshot.stderr)
    }

    private static func nanoseconds(_ duration: Duration) -> Int {
        let (seconds, attoseconds) = duration.components
        return Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000)
    }

    /// A new wait's id (its waiter registers with it).
    private func newWaiterID() -> UInt64 {
        state.withLock { state -> UInt64 in
            state.lastWaiter += 1
            state.unregistered.insert(state.lastWaiter)
            return state.lastWaiter
        }
    }

    /// Adds a waiter, or resumes it at once when the state already satisfies it (or its wait
    /// already failed).
    private func register(_ waiter: Waiter) {
        let ready = state.withLock { state -> Result<Snapshot, any Error>? in
            state.unregistered.remove(waiter.id)
            if let error = state.failedEarly.removeValue(forKey: waiter.id) { return .failure(error) }
            if waiter.isSatisfied(state.snapshot) { return .success(state.snapshot) }
            state.waiters.append(waiter)
            return nil
        }
        if let ready { waiter.resume(ready) }
    }

    /// Resumes waiter `id` with `error` when it is waiting; when it has not registered yet, it
    /// is resumed with `error` as it registers.
    private func fail(waiter id: UInt64, _ error: any Error) {
        let waiter = state.withLock { state -> Waiter? in
            guard let index = state.waiters.firstIndex(where: { $0.id == id }) else {
                if state.unregistered.remove(id) != nil { state.failedEarly[id] = error }
                return nil
            }
            return state.waiters.remove(at: index)
        }
        waiter?.resume(.failure(error))
    }

    /// Changes the state and resumes every waiter the new state satisfies.
    private func update(_ change: (inout Snapshot) -> Void) {
        let (ready, snapshot) = state.withLock { state -> ([Waiter], Snapshot) in
            change(&state.snapshot)
            let snapshot = state.snapshot
            var ready: [Waiter] = []
            state.waiters.removeAll { waiter in
                guard waiter.isSatisfied(snapshot) else { return false }
                ready.append(waiter)
                return true
            }
            return (ready, snapshot)
        }
        for waiter in ready { waiter.resume(.success(snapshot)) }
    }

    /// The waiting thread: waits for the child to end, then reaps it and records how it ended.
    private func reap() {
        // First a wait that leaves the child a zombie (WNOWAIT), then, with `reaping` set under
        // the lock, the wait that frees its pid: `kill` never signals a process that took the
        // pid over.
        var info = siginfo_t()
        while waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) < 0 && errno == EINTR {}
        state.withLock { $0.reaping = true }
        var status: Int32 = 0
        var reaped: pid_t
        repeat { reaped = waitpid(pid, &status, 0) } while reaped < 0 && errno == EINTR
        // The wait status: the low 7 bits are the signal that ended it (0 for an exit), the
        // next 8 the exit status (what the C macros WIFSIGNALED, WTERMSIG, WEXITSTATUS read).
        let termination: Termination =
            reaped < 0 ? .exited(-1) : (status & 0x7f == 0 ? .exited((status >> 8) & 0xff) : .signalled(status & 0x7f))
        update { $0.termination = termination }
    }

    /// The I/O thread: writes `stdin` to `input` (then closes it) and reads `output` and `errors`
    /// to their ends. After the child has ended, whatever is still buffered is read and the pipes
    /// are closed even if a grandchild still holds them open.
    private func pump(output: Int32, errors: Int32, input: Int32, stdin: Data) {
        var open: [Int32] = [output, errors]
        var inputOpen = true
        var written = 0
        for fd in [output, errors, input] { _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) }
        var buffer = [UInt8](repeating: 0, count: 65_536)
        if stdin.isEmpty {
            close(input)
            inputOpen = false
        }
        while !open.isEmpty || inputOpen {
            let ended = state.withLock { $0.snapshot.termination != nil }
            var fds = open.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            if inputOpen { fds.append(pollfd(fd: input, events: Int16(POLLOUT), revents: 0)) }
            let ready = poll(&fds, nfds_t(fds.count), ended ? 0 : 100)
            if ready < 0 {
                if errno == EINTR { continue }
                break
            }
            if ready == 0 {
                // Nothing more to read and the child is gone: a grandchild may hold the pipes.
                if ended { break }
                continue
            }
            for entry in fds where entry.revents != 0 {
                if entry.fd == input {
                    let count = stdin.withUnsafeBytes { bytes in
                        write(input, bytes.baseAddress! + written, min(bytes.count - written, 65_536))
                    }
                    if count > 0 { written += count }
                    if (count < 0 && errno != EAGAIN && errno != EINTR) || written == stdin.count {
                        close(input)
                        inputOpen = false
                    }
                    continue
                }
                let count = read(entry.fd, &buffer, buffer.count)
                if count > 0 {
                    let bytes = Data(buffer[0..<count])
                    let isOutput = entry.fd == output
                    update { snapshot in
                        if isOutput { snapshot.stdout.append(bytes) } else { snapshot.stderr.append(bytes) }
                    }
                } else if count == 0 || (errno != EAGAIN && errno != EINTR) {
                    close(entry.fd)
                    open.removeAll { $0 == entry.fd }
                }
            }
        }
        for fd in open { close(fd) }
        if inputOpen { close(input) }
        update { $0.outputComplete = true }
    }
}

/// `kill(2)` (the method named `kill` hides the C function inside ``ChildProcess``).
private func sendSignal(_ pid: pid_t, _ signal: Int32) -> Int32 { kill(pid, signal) }

/// posix_spawn with pipes for the three standard streams, every other descriptor closed in the
/// child, and the signal mask and dispositions reset.
private enum Spawner {
    /// Held while pipes are made and a child is started, so no child of a concurrent spawn
    /// inherits this one's pipe ends (they are close-on-exec, but set so only after `pipe`).
    private static let lock = Lock()

    /// Writing to a pipe whose reader ended must fail with EPIPE, not kill the test process.
    private static let ignoreSIGPIPE: Void = { _ = signal(SIGPIPE, SIG_IGN) }()

    /// A block of options of the type `initialise` makes, made by it.
    private static func made<T>(by initialise: (UnsafeMutablePointer<T>) -> Int32, _ path: String) throws -> UnsafeMutablePointer<T> {
        let block = UnsafeMutablePointer<T>.allocate(capacity: 1)
        guard initialise(block) == 0 else {
            block.deallocate()
            throw SpawnFailed(description: "\(path): not started (no spawn options)")
        }
        return block
    }

    /// The same, for an init function whose parameter is imported as optional.
    private static func made<T>(by initialise: (UnsafeMutablePointer<T>?) -> Int32, _ path: String) throws -> UnsafeMutablePointer<T> {
        try made(by: { (block: UnsafeMutablePointer<T>) in initialise(block) }, path)
    }

    /// A C function of the system library, looked up by name at run time: the two file actions
    /// below are extensions (`_np`) that Swift's Glibc module does not declare.
    private static func systemFunction<F>(_ name: String, as type: F.Type) -> F? {
        guard let handle = dlopen(nil, RTLD_NOW), let symbol = dlsym(handle, name) else { return nil }
        return unsafeBitCast(symbol, to: type)
    }

    /// `posix_spawn_file_actions_addclosefrom_np(actions, lowest)` (glibc 2.34).
    private static let closeFrom = systemFunction(
        "posix_spawn_file_actions_addclosefrom_np", as: (@convention(c) (UnsafeMutableRawPointer?, Int32) -> Int32).self)

    /// `posix_spawn_file_actions_addchdir_np(actions, path)` (glibc 2.29, macOS 10.15).
    private static let changeDirectory = systemFunction(
        "posix_spawn_file_actions_addchdir_np", as: (@convention(c) (UnsafeMutableRawPointer?, UnsafePointer<CChar>?) -> Int32).self)

    /// Starts the child; returns its pid and this side's ends: its stdout, its stderr, its stdin.
    static func spawn(
        _ path: String, _ arguments: [String], environment: [String: String], currentDirectory: String?
    ) throws -> (pid_t, Int32, Int32, Int32) {
        _ = ignoreSIGPIPE
        return try lock.withLock { () throws -> (pid_t, Int32, Int32, Int32) in
            var output: [Int32] = [-1, -1]
            var errors: [Int32] = [-1, -1]
            var input: [Int32] = [-1, -1]
            guard pipe(&output) == 0, pipe(&errors) == 0, pipe(&input) == 0 else {
                let reason = String(cString: strerror(errno))
                for fd in output + errors + input where fd >= 0 { close(fd) }
                throw SpawnFailed(description: "\(path): no pipe for its output (\(reason))")
            }
            for fd in output + errors + input { _ = fcntl(fd, F_SETFD, fcntl(fd, F_GETFD) | FD_CLOEXEC) }
            defer {
                // The child's ends, which it has its own copies of now.
                close(output[1])
                close(errors[1])
                close(input[0])
            }

            // The two option blocks, made by their init functions: Glibc's are structs, Darwin's
            // pointers (`posix_spawn_file_actions_t?`); `made(by:)` takes its type from the call.
            let actions = try made(by: posix_spawn_file_actions_init, path)
            defer {
                posix_spawn_file_actions_destroy(actions)
                actions.deallocate()
            }
            let attributes = try made(by: posix_spawnattr_init, path)
            defer {
                posix_spawnattr_destroy(attributes)
                attributes.deallocate()
            }

            posix_spawn_file_actions_adddup2(actions, input[0], 0)
            posix_spawn_file_actions_adddup2(actions, output[1], 1)
            posix_spawn_file_actions_adddup2(actions, errors[1], 2)
            var flags = Int32(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF)
            // Every descriptor above standard error closed, whoever opened it without
            // close-on-exec (a server a child starts would otherwise hold another test's pipe).
            #if canImport(Darwin)
            flags |= Int32(POSIX_SPAWN_CLOEXEC_DEFAULT)
            #else
            _ = closeFrom.map { $0(UnsafeMutableRawPointer(actions), 3) }
            #endif
            if let currentDirectory {
                guard let changeDirectory, changeDirectory(UnsafeMutableRawPointer(actions), currentDirectory) == 0 else {
                    throw SpawnFailed(
                        description: "\(path): cannot be started in \(currentDirectory) (no posix_spawn_file_actions_addchdir_np)")
                }
            }
            var noSignals = sigset_t()
            sigemptyset(&noSignals)
            posix_spawnattr_setsigmask(attributes, &noSignals)
            // SIGPIPE back to its default (this process ignores it) and the others with it.
            var defaults = sigset_t()
            sigfillset(&defaults)
            sigdelset(&defaults, SIGKILL)
            sigdelset(&defaults, SIGSTOP)
            posix_spawnattr_setsigdefault(attributes, &defaults)
            posix_spawnattr_setflags(attributes, Int16(flags))

            let argv = ([path] + arguments).map { strdup($0) } + [nil]
            let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
            defer { for pointer in argv + envp { free(pointer) } }
            var pid: pid_t = 0
            let failure = posix_spawn(&pid, path, actions, attributes, argv, envp)
            guard failure == 0 else {
                close(output[0])
                close(errors[0])
                close(input[1])
                throw SpawnFailed(
                    description: "\(path) \(arguments.joined(separator: " ")): not started (\(String(cString: strerror(failure))))")
            }
            return (pid, output[0], errors[0], input[1])
        }
    }
}

/// Runs `executable` with `arguments` to its end and returns what it printed, without holding a
/// thread of the cooperative pool while it runs.
/// - Parameters:
///   - environment: variables added to (or replacing those of) this process's environment.
///   - stdin: bytes written to its standard input, which is then closed (nil: closed at once).
///   - currentDirectory: its working folder (nil: this process's).
///   - bound: how long it may run; then it is killed (SIGKILL).
/// - Throws: ``TimedOut`` when it was still running after `bound`; ``SpawnFailed`` when it
///   could not start.
package func runProcess(
    _ executable: URL, _ arguments: [String], environment: [String: String] = [:], stdin: Data? = nil, currentDirectory: URL? = nil,
    within bound: Duration = defaultProcessBound
) async throws -> ProcessResult {
    try await ChildProcess.spawn(executable, arguments, environment: environment, stdin: stdin, currentDirectory: currentDirectory)
        .wait(within: bound)
}

/// ``runProcess(_:_:environment:stdin:currentDirectory:within:)`` blocking the calling thread,
/// for code that cannot await (a static initialiser, an exit handler). Async code, tests
/// included, uses the async form.
package func runProcessBlocking(
    _ executable: URL, _ arguments: [String], environment: [String: String] = [:], stdin: Data? = nil, currentDirectory: URL? = nil,
    within bound: Duration = defaultProcessBound
) throws -> ProcessResult {
    try ChildProcess.spawn(executable, arguments, environment: environment, stdin: stdin, currentDirectory: currentDirectory)
        .waitBlocking(within: bound)
}

/// Runs `body` on a thread of its own and awaits its result: for a blocking section of a test
/// (a tight polling loop that times a kill) that must not hold a thread of the cooperative pool.
package func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try body() }) }.start()
    }
}

/// The `coffer` binary built beside the test bundle (`.build/debug/coffer` when none is found).
package let cofferBinary: URL = {
    var folder = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    for _ in 0..<4 {
        let candidate = folder.appendingPathComponent("coffer")
        if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        folder = folder.deletingLastPathComponent()
    }
    return URL(fileURLWithPath: ".build/debug/coffer")
}()

/// Runs the built `coffer` with `arguments` (`--store STORE` first when `store` is given) to its
/// end, without holding a thread of the cooperative pool; see
/// ``runProcess(_:_:environment:stdin:currentDirectory:within:)``.
package func runCoffer(
    _ arguments: [String], store: URL? = nil, environment: [String: String] = [:], stdin: Data? = nil, currentDirectory: URL? = nil,
    within bound: Duration = defaultProcessBound
) async throws -> ProcessResult {
    try await runProcess(
        cofferBinary, (store.map { ["--store", $0.path] } ?? []) + arguments, environment: environment, stdin: stdin,
        currentDirectory: currentDirectory, within: bound)
}

/// Starts the built `coffer` with `arguments` (`--store STORE` first when `store` is given) and
/// returns at once: for tests that kill it, or await what it prints, while it runs.
package func startCoffer(
    _ arguments: [String], store: URL? = nil, environment: [String: String] = [:], stdin: Data? = nil
) throws -> ChildProcess {
    try ChildProcess.spawn(cofferBinary, (store.map { ["--store", $0.path] } ?? []) + arguments, environment: environment, stdin: stdin)
}

extension Array where Element == ChildProcess {
    /// Waits for every child to end (see ``ChildProcess/wait(within:)``); their results in order.
    package func wait(within bound: Duration = defaultProcessBound) async throws -> [ProcessResult] {
        var results: [ProcessResult] = []
        for child in self { results.append(try await child.wait(within: bound)) }
        return results
    }

    /// ``waitForStderr(containingOrEnded:within:)`` blocking the calling thread (see
    /// ``ChildProcess/waitUntilBlocking(_:within:_:)``).
    package func waitForStderrBlocking(containingOrEnded text: String, within bound: Duration = defaultWaitBound) throws {
        for child in self {
            try child.waitUntilBlocking("\"\(text)\" on stderr, or its end", within: bound) {
                $0.termination != nil || String(decoding: $0.stderr, as: UTF8.self).contains(text)
            }
        }
    }

    /// Waits until every child has written `text` to its standard error or has ended (a test
    /// pause's marker, which a child that failed early never writes: the test then checks).
    /// - Throws: ``TimedOut`` when one of them did neither within `bound`.
    package func waitForStderr(containingOrEnded text: String, within bound: Duration = defaultWaitBound) async throws {
        for child in self {
            try await child.waitUntil("\"\(text)\" on stderr, or its end", within: bound) {
                $0.termination != nil || String(decoding: $0.stderr, as: UTF8.self).contains(text)
            }
        }
    }
}
