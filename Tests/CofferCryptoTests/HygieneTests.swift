// Randomness per seal and where secret bytes live.

import CofferCrypto
import Foundation
import Testing

@Suite("Crypto hygiene")
struct HygieneTests {
    @Test("every seal draws its own nonce: 10,000 seals of one message under one key share none, for both constructions")
    func distinctNonces() throws {
        let key = SecretKey.random()
        for aead in [AEAD.chacha20Poly1305, .xchacha20Poly1305] {
            var seen = Set<Data>()
            for _ in 0..<10_000 {
                let box = try aead.seal(Data("same".utf8), key: key)
                seen.insert(box.prefix(aead.nonceByteCount))
            }
            #expect(seen.count == 10_000)
        }
    }

    /// Kilobytes of locked memory this process holds (`VmLck` in /proc/self/status).
    static func lockedKilobytes() -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return nil }
        for line in status.split(separator: "\n") where line.hasPrefix("VmLck:") {
            return Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "")
        }
        return nil
    }

    @Test(
        "key bytes live in locked pages while the key is held, and the pages go with it",
        .enabled(if: HygieneTests.lockedKilobytes() != nil && HygieneTests.canLockPages()))
    func keysAreLocked() throws {
        // VmLck is the whole process's, and other tests run meanwhile (their wallets lock and
        // free a few key pages), so 256 keys (a page each) must move it by at least 3/4 of that.
        let count = 256
        let before = Self.lockedKilobytes()!
        var keys: [SecretKey]? = (0..<count).map { _ in SecretKey.random() }
        let held = Self.lockedKilobytes()!
        #expect(held - before >= count * 4 * 3 / 4, "\(count) keys should lock about \(count) pages; VmLck went \(before) → \(held) kB")
        #expect(keys?.count == count)
        keys = nil
        let after = Self.lockedKilobytes()!
        #expect(held - after >= count * 4 * 3 / 4, "dropping the keys should unlock their pages; VmLck went \(held) → \(after) kB")
    }

    /// Whether this process may lock another two megabytes ("Max locked memory" in /proc/self/limits).
    static func canLockPages() -> Bool {
        guard let limits = try? String(contentsOfFile: "/proc/self/limits", encoding: .utf8),
            let line = limits.split(separator: "\n").first(where: { $0.hasPrefix("Max locked memory") })
        else { return false }
        let soft = line.dropFirst("Max locked memory".count).split(separator: " ").first.map(String.init) ?? ""
        if soft == "unlimited" { return true }
        guard let bytes = Int(soft) else { return false }
        return bytes >= (2 << 20) + (lockedKilobytes() ?? 0) * 1024
    }

    @Test("the blind indexes' HMAC states and derived keys live in sodium_malloc memory")
    func guardedMemory() {
        let master = SecretKey.random()
        #expect(master.isGuarded)
        #expect(KeyedHash(key: master).isGuarded)
        #expect(KeyedHash(hkdfFrom: master, info: "coffer.test").isGuarded)
        #expect(KeyDerivation.hkdf(from: master, info: "coffer.secure.items").isGuarded)
    }
}
