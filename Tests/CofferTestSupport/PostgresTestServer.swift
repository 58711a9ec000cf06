// A private PostgreSQL server for the tests: when PostgreSQL's binaries are installed (Debian's
// package `postgresql`), one cluster per test process is made in a temporary folder (`initdb`,
// trust authentication on loopback only, a free port, its Unix socket inside the folder), started
// on first use and stopped when the process exits. A watchdog process stops it if the test
// process dies without exiting (a crash, kill -9), and the next run removes clusters whose test
// process is gone, so nothing left behind breaks a later run. PostgreSQL refuses to run as root:
// as root, the cluster is made and run by the unprivileged user `postgres` (which the Debian
// package creates).

import CofferSync
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The test process's PostgreSQL server.
package enum PostgresTestServer {
    /// Where one running cluster listens.
    package struct Endpoint: Sendable {
        /// The loopback address it listens on.
        package let host: String
        /// Its TCP port.
        package let port: Int
        /// The superuser the tests connect as (trust authentication: no password).
        package let user: String
        /// The folder holding its Unix socket.
        package let socketFolder: String
        /// The cluster's data folder.
        package let dataFolder: String
        /// The folder of the `pg_ctl` it runs under.
        package let binFolder: String

        /// `postgres://user@host:port/database`.
        package func url(database: String) -> String { "postgres://\(user)@\(host):\(port)/\(database)" }
    }

    /// Why the PostgreSQL tests cannot run, or nil when they can.
    package static var unavailableReason: String? {
        guard case .failure(let error) = state else { return nil }
        return error.description
    }

    /// The running server; throws (with a message naming the Debian package) when there is none.
    package static func endpoint() throws -> Endpoint {
        try state.get()
    }

    /// Why the server is not there.
    package struct Unavailable: Error, CustomStringConvertible {
        /// What is missing and what to install.
        package let description: String
    }

    private static let prefix = "coffer-pg-run-"
    private static let user = "coffer"

    /// Made once, on first use.
    private static let state: Result<Endpoint, Unavailable> = {
        guard let bin = binFolder() else {
            return .failure(
                Unavailable(
                    description:
                        "PostgreSQL's server binaries (initdb, pg_ctl) are not installed; the PostgreSQL tests are skipped (install the Debian package `postgresql`: apt-get install -y postgresql)"
                ))
        }
        do { return .success(try start(bin: bin)) } catch let error as Unavailable { return .failure(error) } catch {
            return .failure(Unavailable(description: "the test PostgreSQL server did not start: \(error)"))
        }
    }()

    /// The folder holding `initdb` and `pg_ctl`: `$COFFER_PG_BIN`, the newest Debian
    /// `/usr/lib/postgresql/N/bin`, or the `PATH`.
    private static func binFolder() -> String? {
        func usable(_ folder: String) -> Bool {
            FileManager.default.isExecutableFile(atPath: folder + "/initdb")
                && FileManager.default.isExecutableFile(atPath: folder + "/pg_ctl")
        }
        if let given = ProcessInfo.processInfo.environment["COFFER_PG_BIN"], usable(given) { return given }
        let debian = "/usr/lib/postgresql"
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: debian)) ?? []).compactMap(Int.init).sorted(by: >)
        for version in versions where usable("\(debian)/\(version)/bin") { return "\(debian)/\(version)/bin" }
        for folder in (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map(String.init) where usable(folder) {
            return folder
        }
        return nil
    }

    /// The account the server runs as: nil for this process's own, `postgres` when this process is root.
    private static var serverAccount: String? { getuid() == 0 ? "postgres" : nil }

    /// Runs a PostgreSQL binary, as ``serverAccount`` when there is one. It runs under a shell
    /// that first closes every descriptor above standard error: the server `pg_ctl start` leaves
    /// running would otherwise keep open whatever pipe another test had open at that moment, and
    /// that test's read of it would never end.
    @discardableResult
    private static func run(_ bin: String, _ tool: String, _ arguments: [String], bound: Duration = .seconds(120)) throws -> ProcessResult {
        let command = (serverAccount.map { ["/usr/sbin/runuser", "-u", $0, "--"] } ?? []) + ["\(bin)/\(tool)"] + arguments
        let result = try runProcessBlocking(URL(fileURLWithPath: "/bin/bash"), ["-c", closingDescriptors, "bash"] + command, within: bound)
        guard result.status == 0 else {
            throw Unavailable(
                description: "\(tool) \(arguments.joined(separator: " ")) failed (\(result.status)): \(result.stderr)\(result.stdout)")
        }
        return result
    }

    /// A bash script that closes descriptors 3 and up, then runs its arguments.
    package static let closingDescriptors =
        #"for fd in /proc/$$/fd/*; do n=${fd##*/}; if [ "$n" -gt 2 ]; then eval "exec $n>&-"; fi; done 2>/dev/null; exec "$@""#

    private static func start(bin: String) throws -> Endpoint {
        let system = URL(fileURLWithPath: "/tmp")
        stopAbandonedClusters(in: system, bin: bin)
        let folder = system.appendingPathComponent("\(prefix)\(getpid())").path
        TemporaryFolders.removeTree(folder)
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        if let account = serverAccount {
            // The server's own account owns the cluster's folder (owner-only, as PostgreSQL requires).
            guard let entry = getpwnam(account) else {
                throw Unavailable(
                    description:
                        "running as root, the test server needs the unprivileged user `\(account)` (the Debian package `postgresql` creates it)"
                )
            }
            _ = chown(folder, entry.pointee.pw_uid, entry.pointee.pw_gid)
        }
        _ = chmod(folder, 0o700)
        let data = folder + "/data"
        let socket = folder
        try run(bin, "initdb", ["-D", data, "-U", user, "--auth=trust", "--encoding=UTF8", "--locale=C", "--no-sync"])
        // A free loopback port: the kernel picks one; the server takes it a moment later (a port
        // taken meanwhile makes pg_ctl fail, and the next port is tried).
        var lastError: Error?
        for _ in 0..<5 {
            let port = freeLoopbackPort()
            let options = [
                "-p \(port)", "-k \(socket)", "-c listen_addresses=127.0.0.1", "-c fsync=off",
                "-c full_page_writes=off", "-c max_connections=200", "-c shared_buffers=64MB",
            ].joined(separator: " ")
            do {
                try run(bin, "pg_ctl", ["-D", data, "-o", options, "-l", folder + "/server.log", "-w", "-t", "60", "start"])
            } catch {
                lastError = error
                continue
            }
            watch(folder: folder, data: data, bin: bin)
            atexit { PostgresTestServer.stopAtExit() }
            return Endpoint(host: "127.0.0.1", port: port, user: user, socketFolder: socket, dataFolder: data, binFolder: bin)
        }
        let log = (try? String(contentsOfFile: folder + "/server.log", encoding: .utf8)) ?? ""
        throw Unavailable(description: "the test PostgreSQL server did not start: \(lastError.map { "\($0)" } ?? "") \(log.suffix(800))")
    }

    /// Stops the server immediately and removes its folder (at this process's exit).
    private static func stopAtExit() {
        guard case .success(let endpoint) = state else { return }
        _ = try? run(endpoint.binFolder, "pg_ctl", ["-D", endpoint.dataFolder, "-m", "immediate", "-w", "stop"], bound: .seconds(30))
        TemporaryFolders.removeTree(URL(fileURLWithPath: endpoint.dataFolder).deletingLastPathComponent().path)
    }

    /// Stops the server as a test would kill it (immediately, as a crash does), for tests of a
    /// server going away mid-run.
    package static func stop() throws {
        let endpoint = try endpoint()
        try run(endpoint.binFolder, "pg_ctl", ["-D", endpoint.dataFolder, "-m", "immediate", "-w", "stop"], bound: .seconds(60))
    }

    /// Starts the server again after ``stop()``, on the same port.
    package static func restart() throws {
        let endpoint = try endpoint()
        let folder = URL(fileURLWithPath: endpoint.dataFolder).deletingLastPathComponent().path
        let options = [
            "-p \(endpoint.port)", "-k \(endpoint.socketFolder)", "-c listen_addresses=127.0.0.1", "-c fsync=off",
            "-c full_page_writes=off", "-c max_connections=200", "-c shared_buffers=64MB",
        ].joined(separator: " ")
        try run(
            endpoint.binFolder, "pg_ctl",
            ["-D", endpoint.dataFolder, "-o", options, "-l", folder + "/server.log", "-w", "-t", "60", "start"])
    }

    /// A detached shell that stops the cluster once this process is gone, however it ended.
    private static func watch(folder: String, data: String, bin: String) {
        let stop =
            serverAccount.map { "/usr/sbin/runuser -u \($0) -- \(bin)/pg_ctl" } ?? "\(bin)/pg_ctl"
        let script =
            "while kill -0 \(getpid()) 2>/dev/null; do sleep 2; done; \(stop) -D '\(data)' -m immediate stop >/dev/null 2>&1; rm -rf '\(folder)'"
        // Started in the background by a shell that exits at once, so the run that starts it ends.
        _ = try? runProcessBlocking(
            URL(fileURLWithPath: "/bin/bash"),
            ["-c", closingDescriptors, "bash", "/bin/sh", "-c", "(\(script)) </dev/null >/dev/null 2>&1 &"], within: .seconds(30))
    }

    /// Stops and removes clusters of test processes that no longer run.
    private static func stopAbandonedClusters(in folder: URL, bin: String) {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        for name in names where name.hasPrefix(prefix) {
            guard let pid = pid_t(name.dropFirst(prefix.count)), pid != getpid() else { continue }
            guard kill(pid, 0) != 0 && errno == ESRCH else { continue }
            let path = folder.appendingPathComponent(name).path
            _ = try? run(bin, "pg_ctl", ["-D", path + "/data", "-m", "immediate", "-w", "stop"], bound: .seconds(30))
            TemporaryFolders.removeTree(path)
        }
    }

    /// A socket type as `socket(2)` takes it: Darwin spells `SOCK_STREAM` as an `Int32`, Glibc as
    /// an enum (`__socket_type`) whose raw value is the number; one overload fits each, whatever
    /// `canImport` says in the Apple type-check.
    private static func socketType(_ type: Int32) -> Int32 { type }
    private static func socketType<T: RawRepresentable>(_ type: T) -> Int32 where T.RawValue: BinaryInteger {
        Int32(type.rawValue)
    }

    /// A loopback TCP port nothing listens on right now.
    package static func freeLoopbackPort() -> Int {
        let fd = socket(AF_INET, socketType(SOCK_STREAM), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// Whether something accepts TCP connections on the loopback `port` now.
    package static func accepts(port: Int) -> Bool {
        let fd = socket(AF_INET, socketType(SOCK_STREAM), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let length = socklen_t(MemoryLayout<sockaddr_in>.size)
        return withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, length) } } == 0
    }

    /// Turns TLS on (`on`) or off for new connections, with `certificate` and `key` (PEM files)
    /// copied into the cluster as its `server.crt` and `server.key` (owned by the server's
    /// account, owner-only, as PostgreSQL requires). Connections without TLS stay allowed.
    package static func setTLS(_ on: Bool, certificate: String? = nil, key: String? = nil) throws {
        let endpoint = try endpoint()
        if let certificate, let key {
            for (source, name, mode) in [(certificate, "server.crt", 0o644), (key, "server.key", 0o600)] {
                let target = endpoint.dataFolder + "/" + name
                TemporaryFolders.removeTree(target)
                try FileManager.default.copyItem(atPath: source, toPath: target)
                if let account = serverAccount, let entry = getpwnam(account) {
                    _ = chown(target, entry.pointee.pw_uid, entry.pointee.pw_gid)
                }
                _ = chmod(target, mode_t(mode))
            }
        }
        for statement in [on ? "ALTER SYSTEM SET ssl = on" : "ALTER SYSTEM RESET ssl", "SELECT pg_reload_conf()"] {
            try runProcessBlocking(
                URL(fileURLWithPath: endpoint.binFolder + "/psql"),
                ["-h", endpoint.socketFolder, "-p", "\(endpoint.port)", "-U", endpoint.user, "-d", "postgres", "-XAtc", statement],
                within: .seconds(60)
            ).checked(statement)
        }
    }

    /// Creates a database of its own for one test (so tests never share rows) and returns its name.
    package static func makeDatabase(_ label: String = "t") throws -> String {
        let endpoint = try endpoint()
        let name = "\(label.lowercased().filter { $0.isLetter || $0.isNumber }.prefix(20))_\(UUID().uuidString.prefix(8).lowercased())"
        try runProcessBlocking(
            URL(fileURLWithPath: endpoint.binFolder + "/createdb"),
            ["-h", endpoint.socketFolder, "-p", "\(endpoint.port)", "-U", endpoint.user, name],
            within: .seconds(60)
        ).checked("createdb \(name)")
        return name
    }
}

extension ProcessResult {
    fileprivate func checked(_ what: String) throws {
        guard status == 0 else { throw PostgresTestServer.Unavailable(description: "\(what) failed (\(status)): \(stderr)") }
    }
}
