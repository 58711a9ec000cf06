// A live wallet query as an `@Observable` model for SwiftUI, beside the app database's
// `ObservedQuery`.

import CofferSync
import Foundation
import Observation

/// The records of a type matching a query, observable: SwiftUI views that read ``records`` update
/// after every commit that changes them (this process's or another's), through
/// ``Wallet/observe(type:matching:options:interval:expiryCheck:)``; records are decrypted off the
/// main actor.
///
/// ```swift
/// @State private var credentials = ObservedWalletQuery(wallet, type: "credential")
/// List(credentials.records ?? [], id: \.id) { … }
/// ```
///
/// ``records`` is nil until the first result. Closing the wallet ends the observation and sets
/// ``error`` to ``WalletError/closed`` (``records`` keeps the last result); so does a failed read.
@available(macOS 14.0, iOS 17.0, tvOS 17.0, watchOS 10.0, visionOS 1.0, *)
@MainActor
@Observable
public final class ObservedWalletQuery {
    /// The latest matching records, nil before the first result.
    public private(set) var records: [WalletRecord]?
    /// Why the observation ended (``WalletError/closed`` after the wallet closed); nil while it runs.
    public private(set) var error: (any Error)?

    @ObservationIgnored private let follower = WalletQueryFollower()

    /// Observes the records of `type` matching `query` from now on (until the wallet closes or
    /// this model goes).
    public init(_ wallet: Wallet, type: String, matching query: WalletQuery = .all, options: RecordOptions = RecordOptions()) {
        let observation = wallet.observe(type: type, matching: query, options: options)
        follower.start(
            Task { [weak self] in
                do {
                    for try await records in observation {
                        guard let self else { return }
                        self.records = records
                    }
                } catch {
                    self?.error = error
                }
            })
    }

    deinit { follower.cancel() }
}

/// The task that follows a wallet query for an ``ObservedWalletQuery``, cancellable from its deinit.
private final class WalletQueryFollower: Sendable {
    private let task = Locked<Task<Void, Never>?>(nil)
    func start(_ task: Task<Void, Never>) { self.task.withLock { $0 = task } }
    func cancel() { task.withLock { $0 }?.cancel() }
}
