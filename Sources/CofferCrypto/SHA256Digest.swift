// SHA-256 (swift-crypto), unkeyed, for the formats that name it: CoverDrop's recipient tags and
// the digest its CoverNodes sign for a dead drop. Other modules call it here, so this module
// stays the one that calls crypto primitives.

import Crypto
import Foundation

/// SHA-256 digests (32 bytes).
package enum SHA256Digest {
    /// The digest of `parts`, hashed in order as one input.
    package static func hash(_ parts: Data...) -> Data {
        var hasher = SHA256()
        for part in parts { hasher.update(data: part) }
        return Data(hasher.finalize())
    }
}
