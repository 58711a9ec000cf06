// One-time libsodium initialisation shared by every primitive in this module.

import CSodium

enum Sodium {
    /// `sodium_init()` is idempotent and thread-safe; a static let runs it once.
    static let ready: Bool = {
        sodium_init() >= 0
    }()

    /// Call before any libsodium primitive.
    @inline(__always)
    static func ensureReady() {
        precondition(ready, "libsodium failed to initialise (sodium_init() < 0)")
    }
}
