// A private PgBouncer in front of the tests' private PostgreSQL server, in transaction pooling
// (each transaction may run on any of its server connections, as behind PgBouncer and RDS Proxy
// in production): when PgBouncer is installed (Debian's package `pgbouncer`), one per test
// process, on a free loopback port, trust authentication, its files in a temporary folder;
// stopped when the process exits, or by a watchdog when the process dies without exiting.
// PgBouncer refuses to run as root: as root it runs as `postgres`, as the server does.

import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The test process's PgBouncer.
package enum PgBouncerTestServer {
    /// Where it listens, and the databases it serves.
    package struct Endpoint: Sendable {
        /// The loopback address it listens on.
        package let host: String
        /// Its TCP port.
        package let port: Int
        /// The user the tests connect as (trusted, no password).
        package let user: String
        /// A database served through exactly one server connection (`pool_size = 1`): every
        /// client's transactions take turns on one server session, so anything a client leaves
        /// on "its" connection is met by the next client.
        package let singleConnectionDatabase: String

        /// `postgres://user@host:port/database`.
        package func url(database: String) -> String { "postgres://\(user)@\(host):\(port)/\(database)" }
    }

    /// Why the PgBouncer tests cannot run, or nil when they can.
    package static var unavailableReason: String? {
        guard case .failure(let error) = state else { return nil }
        return error.description
    }

    /// The running PgBouncer; throws (naming the Debian package) when there is none.
    package static func endpoint() throws -> Endpoint {
        try state.get()
    }

    private static let prefix = "coffer-pgbouncer-run-"

    private static let state: Result<Endpoint, PostgresTestServer.Unavailable> = {
        guard let binary = binary() else {
            return .failure(
                PostgresTestServer.Unavailable(
                    description:
                        "PgBouncer is not installed; the PgBouncer tests are skipped (install the Debian package `pgbouncer`: apt-get install -y pgbouncer)"
                ))
        }
        do { return .success(try start(binary: binary)) } catch let error as PostgresTestServer.Unavailable {
            return .failure(error)
        } catch {
            return .failure(PostgresTestServer.Unavailable(description: "the test PgBouncer did not start: \(error)"))
        }
    }()

    /// `$COFFER_PGBOUNCER`, Debian's `/usr/sbin/pgbouncer`, or one on the `PATH`.
    private static func binary() -> String? {
        let environment = ProcessInfo.processInfo.environment
        let candidates =
            [environment["COFFER_PGBOUNCER"], "/usr/sbin/pgbouncer"].compactMap { $0 }
            + (environment["PATH"] ?? "").split(separator: ":").map { "\($0)/pgbouncer" }
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// The account PgBouncer runs as: nil for this process's own, `postgres` when this process is root.
    private static var account: String? { getuid() == 0 ? "postgres" : nil }

    private static func start(binary: String) throws -> Endpoint {
        let server = try PostgresTestServer.endpoint()
        let single = try PostgresTestServer.makeDatabase("pgbone")
        removeAbandoned()
        let folder = "/tmp/\(prefix)\(getpid())"
        TemporaryFolders.removeTree(folder)
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        // PgBouncer 1.21 and later can carry prepared statements (by default from 1.24): the
        // tests are of a pooler that does not, so it is turned off where it exists.
        let carries = try version(binary).map { $0.lexicographicallyPrecedes([1, 21]) == false } ?? false
        var lastError = ""
        for _ in 0..<5 {
            let port = PostgresTestServer.freeLoopbackPort()
            let config = """
                [databases]
                \(single) = host=\(server.host) port=\(server.port) dbname=\(single) pool_size=1
                * = host=\(server.host) port=\(server.port)
                [pgbouncer]
                listen_addr = 127.0.0.1
                listen_port = \(port)
                unix_socket_dir =
                auth_type = trust
                auth_file = \(folder)/users.txt
                pool_mode = transaction
                default_pool_size = 2
                max_client_conn = 500
                logfile = \(folder)/pgbouncer.log
                pidfile = \(folder)/pgbouncer.pid
                \(carries ? "max_prepared_statements = 0" : "")

                """
            try Data(config.utf8).write(to: URL(fileURLWithPath: folder + "/pgbouncer.ini"))
            try Data("\"\(server.user)\" \"\"\n".utf8).write(to: URL(fileURLWithPath: folder + "/users.txt"))
            if let account, let entry = getpwnam(account) {
                for path in [folder, folder + "/pgbouncer.ini", folder + "/users.txt"] {
                    _ = chown(path, entry.pointee.pw_uid, entry.pointee.pw_gid)
                }
            }
            let command = (account.map { ["/usr/sbin/runuser", "-u", $0, "--"] } ?? []) + [binary, "-d", folder + "/pgbouncer.ini"]
            let result = try runProcessBlocking(
                URL(fileURLWithPath: "/bin/bash"), ["-c", PostgresTestServer.closingDescriptors, "bash"] + command, within: .seconds(60))
            guard result.status == 0, let pid = waitForPID(folder: folder, port: port) else {
                lastError =
                    "\(result.stderr)\(result.stdout) \(((try? String(contentsOfFile: folder + "/pgbouncer.log", encoding: .utf8)) ?? "").suffix(600))"
                // A daemon that started but did not come up in time is stopped before the next try.
                stop(folder: folder)
                TemporaryFolders.removeTree(folder + "/pgbouncer.pid")
                continue
            }
            watch(pid: pid, folder: folder)
            atexit { PgBouncerTestServer.stopAtExit() }
            return Endpoint(host: "127.0.0.1", port: port, user: server.user, singleConnectionDatabase: single)
        }
        throw PostgresTestServer.Unavailable(description: "the test PgBouncer did not start: \(lastError)")
    }

    /// `pgbouncer --version`'s version numbers (`PgBouncer 1.18.0` gives `[1, 18, 0]`), or nil.
    private static func version(_ binary: String) throws -> [Int]? {
        let result = try runProcessBlocking(URL(fileURLWithPath: binary), ["--version"], within: .seconds(30))
        guard let line = result.stdout.split(separator: "\n").first, line.hasPrefix("PgBouncer ") else { return nil }
        let numbers = line.dropFirst("PgBouncer ".count).split(separator: ".").map { Int($0.prefix { $0.isNumber }) }
        return numbers.contains(nil) ? nil : numbers.compactMap { $0 }
    }

    /// The daemon's process id once it accepts connections on `port` (at most 30 s, less when
    /// it exits), or nil.
    private static func waitForPID(folder: String, port: Int) -> pid_t? {
        let deadline = Date().addingTimeInterval(30)
        var seen = false
        while Date() < deadline {
            if let pid = daemon(folder: folder) {
                seen = true
                if PostgresTestServer.accepts(port: port) { return pid }
            } else if seen {
                return nil // it ran and is gone: it failed (its log says why)
            }
            usleep(50_000)
        }
        return nil
    }

    /// The process id in `folder`'s pid file when that process is a PgBouncer of `folder` (its
    /// command line names the folder's configuration: a reused process id is someone else's).
    private static func daemon(folder: String) -> pid_t? {
        guard let text = try? String(contentsOfFile: folder + "/pgbouncer.pid", encoding: .utf8),
            let pid = pid_t(text.trimmingCharacters(in: .whitespacesAndNewlines)), pid > 0,
            let command = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline")
        else { return nil }
        return String(decoding: command, as: UTF8.self).contains(folder + "/pgbouncer.ini") ? pid : nil
    }

    /// Kills the PgBouncer of `folder`, if one runs.
    private static func stop(folder: String) {
        if let pid = daemon(folder: folder) { kill(pid, SIGKILL) }
    }

    private static func stopAtExit() {
        let folder = "/tmp/\(prefix)\(getpid())"
        stop(folder: folder)
        TemporaryFolders.removeTree(folder)
    }

    /// A detached shell that stops the daemon once this process is gone, however it ended.
    private static func watch(pid: pid_t, folder: String) {
        let script =
            "while kill -0 \(getpid()) 2>/dev/null; do sleep 2; done; grep -qaF '\(folder)/pgbouncer.ini' /proc/\(pid)/cmdline 2>/dev/null && kill -9 \(pid); rm -rf '\(folder)'"
        _ = try? runProcessBlocking(
            URL(fileURLWithPath: "/bin/bash"),
            ["-c", PostgresTestServer.closingDescriptors, "bash", "/bin/sh", "-c", "(\(script)) </dev/null >/dev/null 2>&1 &"],
            within: .seconds(30))
    }

    /// Stops the daemons of test processes that no longer run and removes their folders.
    private static func removeAbandoned() {
        for name in (try? FileManager.default.contentsOfDirectory(atPath: "/tmp")) ?? [] where name.hasPrefix(prefix) {
            guard let owner = pid_t(name.dropFirst(prefix.count)), owner != getpid() else { continue }
            guard kill(owner, 0) != 0 && errno == ESRCH else { continue }
            let folder = "/tmp/\(name)"
            stop(folder: folder)
            TemporaryFolders.removeTree(folder)
        }
    }
}
