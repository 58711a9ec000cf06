// The package's one seeded random generator, for benchmarks that must make the same workload
// every run and randomized tests that must replay a failure from its seed. Not for secrets:
// those come from libsodium (`SecureRandom`). Development code: in no library product.

/// SplitMix64: a small, fast, seeded generator (the same seed gives the same sequence).
package struct SplitMix64: RandomNumberGenerator, Sendable {
    /// The state; the next value is derived from it.
    package var state: UInt64

    /// A generator starting from `seed`.
    package init(seed: UInt64) { state = seed }

    /// The next 64 random bits.
    package mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
