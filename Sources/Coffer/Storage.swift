// Seed 003's entry point: `Storage.shared.storageContext?.brand.save(brand)`, over the default container.

import CofferDatabase
import CofferSync
import Foundation

/// The app's storage as seed 003 reaches it: one shared instance whose ``storageContext`` is the
/// collections of a ``CofferContainer`` opened at first use (at ``CofferLocations/platformDefault(environment:)``,
/// or at the locations given to ``use(_:)`` before).
public final class Storage: Sendable {
    /// The shared instance.
    public static let shared = Storage()

    private let state = Locked<(locations: CofferLocations?, container: CofferContainer?)>((nil, nil))

    private init() {}

    /// Opens (at first use) the default container and answers its collections; nil when it
    /// cannot be opened (``container()`` throws the reason).
    public var storageContext: StorageContext? { try? container().context }

    /// The container behind ``storageContext``, opened at first use.
    /// - Throws: the container's open error.
    public func container() throws -> CofferContainer {
        try state.withLock { state in
            if let open = state.container { return open }
            let opened = try CofferContainer.openBlocking(state.locations ?? .platformDefault())
            state.container = opened
            return opened
        }
    }

    /// Makes ``storageContext`` use the container at `locations`, closing the one open before.
    public func use(_ locations: CofferLocations) {
        let previous = state.withLock { state -> CofferContainer? in
            defer { state = (locations, nil) }
            return state.container
        }
        previous?.close()
    }
}
