// The blind-index caches give exactly what computing the blind index gives.

import CofferCrypto
import Foundation
import Testing

@testable import CofferWallet

@Suite("Blind-index caches")
struct BlindCacheTests {
    @Test("a cached tag-value blind equals the one computed after the cache was emptied and refilled")
    func cachedEqualsComputed() {
        let keys = WalletKeys(master: SecretKey.random())
        let type = keys.typeBlind("credential")
        let first = keys.tagValueBlind(typeBlind: type, name: "schema_id", value: "schema:1")
        #expect(keys.tagValueBlind(typeBlind: type, name: "schema_id", value: "schema:1") == first)
        // More distinct values than the cache holds: it empties at least once.
        for i in 0...WalletKeys.tagValueCacheEntries { _ = keys.tagValueBlind(typeBlind: type, name: "n", value: "v\(i)") }
        #expect(keys.tagValueBlind(typeBlind: type, name: "schema_id", value: "schema:1") == first)
    }

    @Test("the cache tells apart types, tag names and byte-different values")
    func keysAreExact() {
        let keys = WalletKeys(master: SecretKey.random())
        let a = keys.typeBlind("a")
        let b = keys.typeBlind("b")
        let blinds = [
            keys.tagValueBlind(typeBlind: a, name: "n", value: "é"),
            keys.tagValueBlind(typeBlind: b, name: "n", value: "é"),
            keys.tagValueBlind(typeBlind: a, name: "m", value: "é"),
            keys.tagValueBlind(typeBlind: a, name: "n", value: "e\u{301}"),
        ]
        #expect(Set(blinds).count == 4)
        // Asked again (now from the cache), each is what it was.
        #expect(keys.tagValueBlind(typeBlind: a, name: "n", value: "e\u{301}") == blinds[3])
        #expect(keys.tagValueBlind(typeBlind: b, name: "n", value: "é") == blinds[1])
    }

    @Test("closing the wallet empties its blind-index caches")
    func closeEmptiesCaches() async throws {
        let (w, _) = try await TestWallets.make()
        try await w.add(type: "t", id: "1", value: "v", tags: ["name": "value"])
        #expect(w.keys.cachedEntryCount > 0)
        try w.close()
        #expect(w.keys.cachedEntryCount == 0)
    }

    @Test("a value too long to cache still gives the same blind every time")
    func longValue() {
        let keys = WalletKeys(master: SecretKey.random())
        let type = keys.typeBlind("t")
        let long = String(repeating: "x", count: WalletKeys.cachedTagValueBytes + 1)
        #expect(keys.tagValueBlind(typeBlind: type, name: "n", value: long) == keys.tagValueBlind(typeBlind: type, name: "n", value: long))
    }
}
