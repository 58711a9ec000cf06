// `coffer bench wallet --concurrent-profiles P`: P tasks at once, each on its own profile of one
// store, mixing reads and writes; throughput and latency percentiles. askar_bench.py runs the
// same workload (--concurrent-profiles) with one Askar profile session per task.

import Coffer
import CofferCLISupport
import CofferDevelopment
import Foundation

/// The two operations the concurrent workload runs, so one runner drives a wallet on SQLite
/// (``Wallet``) and one on PostgreSQL (`PostgresWallet`, in a build with the trait).
protocol ConcurrentBenchWallet: Sendable {
    /// Replaces the value and tags of record `id` of `type`, in one transaction (Askar's
    /// `session.replace` with the record's tags passed again).
    func benchReplace(type: String, id: String, value: String, tags: WalletTags) async throws
    /// Whether record `id` of `type` exists and its value was read.
    func benchFetch(type: String, id: String) async throws -> Bool
    /// Closes the wallet (errors ignored: the run is over).
    func benchClose()
}

extension Wallet: ConcurrentBenchWallet {
    func benchReplace(type: String, id: String, value: String, tags: WalletTags) async throws {
        try await replace(type: type, id: id, value: value, tags: tags)
    }
    func benchFetch(type: String, id: String) async throws -> Bool { try await fetch(type: type, id: id)?.value != nil }
    func benchClose() { try? close() }
}

struct ConcurrentProfilesRunner {
    let workload: BenchWorkload
    /// Profiles, one task each.
    let profiles: Int
    /// Operations each task runs: every fifth replaces a record's value (one transaction), the
    /// others fetch a record by id; both pick a random record of the task's own profile.
    let opsPerTask: Int
    /// Creates profile `name` and adds the first `count` workload records to it in one call.
    let makeProfile: @Sendable (_ name: String, _ count: Int) async throws -> any ConcurrentBenchWallet
    /// Run once the profiles are filled, before the clock starts: on PostgreSQL, waits until the
    /// pool holds its `min_connections` open (see ``PostgresWorkloadRunner``), as each of
    /// askar_bench.py's tasks holds its session's connection before it times an operation.
    let beforeTimer: @Sendable (_ wallets: [any ConcurrentBenchWallet]) async throws -> Void

    /// The runner on SQLite: profiles of one store at `location`, each filled in one transaction.
    init(workload: BenchWorkload, profiles: Int, opsPerTask: Int, location: WalletLocation) {
        self.init(workload: workload, profiles: profiles, opsPerTask: opsPerTask) { name, count in
            let wallet = try await location.create(key: .raw(WalletKey.generateRawKey()), profile: name)
            try await wallet.transaction { txn in
                for i in 0..<count {
                    try txn.add(type: BenchWorkload.category, id: workload.names[i], value: workload.values[i], tags: workload.tags[i])
                }
            }
            return wallet
        }
    }

    init(
        workload: BenchWorkload, profiles: Int, opsPerTask: Int,
        beforeTimer: @escaping @Sendable (_ wallets: [any ConcurrentBenchWallet]) async throws -> Void = { _ in },
        makeProfile: @escaping @Sendable (_ name: String, _ count: Int) async throws -> any ConcurrentBenchWallet
    ) {
        self.workload = workload
        self.profiles = profiles
        self.opsPerTask = opsPerTask
        self.beforeTimer = beforeTimer
        self.makeProfile = makeProfile
    }

    /// The profile name of task `t`.
    static func profileName(_ t: Int) -> String { "p\(t)" }

    /// What one task measured.
    struct TaskResult: Sendable {
        var reads = [Double]()
        var writes = [Double]()
    }

    func run() async throws -> [(String, BenchValue)] {
        let w = workload
        let cat = BenchWorkload.category
        // Each profile gets an equal share of the N records, in one transaction.
        let share = max(1, w.n / profiles)
        StandardError.write("coffer: concurrent: \(profiles) profiles × \(share) records, \(opsPerTask) ops per task …\n")
        var wallets = [any ConcurrentBenchWallet]()
        defer { for wallet in wallets { wallet.benchClose() } }
        for t in 0..<profiles { wallets.append(try await makeProfile(Self.profileName(t), share)) }
        try await beforeTimer(wallets)

        let ops = opsPerTask
        let (results, seconds) = try await Clock.time {
            try await withThrowingTaskGroup(of: TaskResult.self) { group in
                for (t, wallet) in wallets.enumerated() {
                    group.addTask {
                        var rng = SplitMix64(seed: UInt64(t + 1))
                        var result = TaskResult()
                        result.reads.reserveCapacity(ops)
                        for j in 0..<ops {
                            let i = Int(rng.next() % UInt64(share))
                            let start = Clock.now()
                            if j % 5 == 0 {
                                try await wallet.benchReplace(
                                    type: cat, id: w.names[i], value: j % 10 == 0 ? w.newValues[i] : w.values[i], tags: w.tags[i])
                                result.writes.append(Clock.now() - start)
                            } else {
                                guard try await wallet.benchFetch(type: cat, id: w.names[i]) else {
                                    throw WalletError.notFound(type: cat, id: w.names[i])
                                }
                                result.reads.append(Clock.now() - start)
                            }
                        }
                        return result
                    }
                }
                var all = [TaskResult]()
                for try await result in group { all.append(result) }
                return all
            }
        }
        let reads = results.flatMap(\.reads)
        let writes = results.flatMap(\.writes)
        let both = reads + writes
        let us = { (xs: [Double], p: Double) in xs.isEmpty ? 0 : (percentile(xs, p) * 1e7).rounded() / 10 }
        return [
            (
                "concurrent_profiles_mixed",
                .rate(
                    ops: both.count, seconds: seconds,
                    extra: [
                        ("profiles", Double(profiles)), ("records_per_profile", Double(share)), ("reads", Double(reads.count)),
                        ("writes", Double(writes.count)), ("p50_us", us(both, 50)), ("p99_us", us(both, 99)),
                        ("read_p99_us", us(reads, 99)), ("write_p99_us", us(writes, 99)),
                    ])
            )
        ]
    }
}
