// LRUIndex driven by seeded random operations against a plain reference model (one array in
// recency order), compared after every step: per-kind order, counts, bytes, least recent keys,
// payloads, generations and the index's own invariant check.

import CofferDevelopment
import Testing

@testable import CofferMediaCache

/// A key of the test's choosing: a kind and a small number, so keys repeat and entries get replaced.
struct ModelKey: CacheIndexKey, CustomStringConvertible {
    let kind: MediaKind
    let id: Int
    var description: String { "\(kind.rawValue)#\(id)" }
}

/// The reference: every live entry in one array, most recently used first.
private struct ReferenceLRU {
    struct Entry {
        let key: ModelKey
        let payload: Int
        let bytes: Int
        let generation: UInt64
    }

    var entries: [Entry] = []
    /// Every generation each key has been given, to check a new one is new.
    var pastGenerations: [ModelKey: Set<UInt64>] = [:]

    func position(_ key: ModelKey) -> Int? { entries.firstIndex { $0.key == key } }
    func entry(_ key: ModelKey) -> Entry? { position(key).map { entries[$0] } }
    func keys(_ kind: MediaKind) -> [ModelKey] { entries.filter { $0.key.kind == kind }.map(\.key) }
    func count(_ kind: MediaKind) -> Int { entries.filter { $0.key.kind == kind }.count }
    func bytes(_ kind: MediaKind) -> Int { entries.filter { $0.key.kind == kind }.reduce(0) { $0 + $1.bytes } }
    var totalBytes: Int { entries.reduce(0) { $0 + $1.bytes } }

    mutating func touch(_ key: ModelKey) -> Entry? {
        guard let at = position(key) else { return nil }
        let entry = entries.remove(at: at)
        entries.insert(entry, at: 0)
        return entry
    }

    mutating func remove(_ key: ModelKey) -> Entry? {
        guard let at = position(key) else { return nil }
        return entries.remove(at: at)
    }
}

/// One seeded run of random operations, checking the index against the model after each.
private struct ModelRun {
    var index = LRUIndex<ModelKey, Int>()
    var model = ReferenceLRU()
    var rng: SplitMix64
    var step = 0
    /// What differed from the model; a run stops at the first step that has any.
    var problems: [String] = []

    init(seed: UInt64) { rng = SplitMix64(seed: seed) }

    mutating func check(_ condition: Bool, _ what: String) {
        if !condition { problems.append(what) }
    }

    mutating func randomKey() -> ModelKey {
        ModelKey(kind: MediaKind.allCases.randomElement(using: &rng)!, id: Int.random(in: 0..<40, using: &rng))
    }

    mutating func run(steps: Int) {
        for s in 0..<steps where problems.isEmpty {
            step = s
            performRandomOperation()
            compare()
        }
    }

    mutating func performRandomOperation() {
        let roll = Int.random(in: 0..<1000, using: &rng)
        switch roll {
        case 0..<330: insert(randomKey())
        case 330..<580: touch(randomKey())
        case 580..<680: peek(randomKey())
        case 680..<830: remove(randomKey())
        case 830..<910: evictKind(MediaKind.allCases.randomElement(using: &rng)!, toCount: Int.random(in: 0...25, using: &rng))
        case 910..<995: evictOverall(toBytes: Int.random(in: 0...40_000, using: &rng))
        default: removeAll()
        }
    }

    mutating func insert(_ key: ModelKey) {
        let payload = Int.random(in: 0..<1_000_000, using: &rng)
        let bytes = Int.random(in: 0...2_000, using: &rng)
        index.insert(key, payload, bytes: bytes)
        guard let generation = index.generation(key) else {
            problems.append("step \(step): \(key) has no generation right after insert")
            return
        }
        check(
            model.pastGenerations[key, default: []].contains(generation) == false, "step \(step): \(key) got generation \(generation) again"
        )
        model.pastGenerations[key, default: []].insert(generation)
        _ = model.remove(key)
        model.entries.insert(.init(key: key, payload: payload, bytes: bytes, generation: generation), at: 0)
    }

    mutating func touch(_ key: ModelKey) {
        let got = index.touch(key)
        let expected = model.touch(key)
        check(got?.payload == expected?.payload, "step \(step): touch \(key) payload")
        check(got?.generation == expected?.generation, "step \(step): touch \(key) generation")
    }

    mutating func peek(_ key: ModelKey) {
        check(index.peek(key) == model.entry(key)?.payload, "step \(step): peek \(key)")
        check(index.generation(key) == model.entry(key)?.generation, "step \(step): generation \(key)")
    }

    mutating func remove(_ key: ModelKey) {
        let got = index.remove(key)
        let expected = model.remove(key)
        check(got?.payload == expected?.payload, "step \(step): remove \(key) payload")
        check(got?.bytes == expected?.bytes, "step \(step): remove \(key) bytes")
    }

    /// The media cache's per-kind entry limit: drop the kind's least recent entries.
    mutating func evictKind(_ kind: MediaKind, toCount limit: Int) {
        while index.counts[kind.index] > limit, let key = index.leastRecent(kind) {
            check(key == model.keys(kind).last, "step \(step): \(kind) eviction victim")
            guard index.remove(key) != nil, model.remove(key) != nil else {
                problems.append("step \(step): \(kind) eviction victim \(key) is not an entry")
                return
            }
        }
        check(model.count(kind) <= limit, "step \(step): \(kind) still over \(limit)")
    }

    /// The media cache's byte limit: drop the least recent entries of any kind.
    mutating func evictOverall(toBytes limit: Int) {
        while index.totalBytes > limit, let key = index.leastRecentOverall() {
            check(key == model.entries.last?.key, "step \(step): overall eviction victim")
            guard index.remove(key) != nil, model.remove(key) != nil else {
                problems.append("step \(step): eviction victim \(key) is not an entry")
                return
            }
        }
        check(model.totalBytes <= limit, "step \(step): still over \(limit) bytes")
    }

    mutating func removeAll() {
        index.removeAll()
        model.entries.removeAll()
    }

    mutating func compare() {
        if let problem = index.checkInvariants() { problems.append("step \(step): \(problem)") }
        check(index.count == model.entries.count, "step \(step): count")
        check(index.totalBytes == model.totalBytes, "step \(step): total bytes")
        check(index.leastRecentOverall() == model.entries.last?.key, "step \(step): least recent overall")
        for kind in MediaKind.allCases {
            check(index.keysByRecency(kind) == model.keys(kind), "step \(step): \(kind) order")
            check(index.counts[kind.index] == model.count(kind), "step \(step): \(kind) count")
            check(index.kindBytes[kind.index] == model.bytes(kind), "step \(step): \(kind) bytes")
            check(index.leastRecent(kind) == model.keys(kind).last, "step \(step): \(kind) least recent")
            check(Set(index.keys(kind)) == Set(model.keys(kind)), "step \(step): \(kind) keys")
        }
        check(Set(index.keys()) == Set(model.entries.map(\.key)), "step \(step): all keys")
    }
}

@Suite("LRUIndex against a reference model")
struct LRUIndexModelTests {
    @Test("thousands of seeded random operations leave the index equal to the model after every step", arguments: [1, 2, 3] as [UInt64])
    func randomOperations(_ seed: UInt64) {
        var run = ModelRun(seed: seed)
        run.run(steps: 3_000)
        #expect(run.problems.isEmpty, "seed \(seed): \(run.problems.prefix(5).joined(separator: "; "))")
    }

    @Test("an empty index is consistent and has no least recent key")
    func empty() {
        let index = LRUIndex<ModelKey, Int>()
        #expect(index.checkInvariants() == nil)
        #expect(index.leastRecentOverall() == nil)
        #expect(MediaKind.allCases.allSatisfy { index.leastRecent($0) == nil && index.keysByRecency($0).isEmpty })
    }

    @Test("touching an entry makes it the most recent of its kind and leaves other kinds alone")
    func touchReorders() {
        var index = LRUIndex<ModelKey, Int>()
        let a = ModelKey(kind: .thumbnail, id: 1)
        let b = ModelKey(kind: .thumbnail, id: 2)
        let p = ModelKey(kind: .preview, id: 1)
        index.insert(a, 10, bytes: 1)
        index.insert(p, 30, bytes: 3)
        index.insert(b, 20, bytes: 2)
        #expect(index.keysByRecency(.thumbnail) == [b, a])
        #expect(index.leastRecentOverall() == a)
        _ = index.touch(a)
        #expect(index.keysByRecency(.thumbnail) == [a, b])
        #expect(index.keysByRecency(.preview) == [p])
        #expect(index.leastRecentOverall() == p)
        #expect(index.checkInvariants() == nil)
    }

    @Test("a key inserted again after removeAll gets a generation it never had before")
    func generationAfterRemoveAll() {
        var index = LRUIndex<ModelKey, Int>()
        let key = ModelKey(kind: .preview, id: 7)
        index.insert(key, 1, bytes: 10)
        let before = index.generation(key)
        index.removeAll()
        #expect(index.generation(key) == nil)
        index.insert(key, 2, bytes: 10)
        #expect(index.generation(key) != nil)
        #expect(index.generation(key) != before)
    }

    @Test("replacing an entry changes its generation and bytes, and keeps one entry")
    func replaceEntry() {
        var index = LRUIndex<ModelKey, Int>()
        let key = ModelKey(kind: .albumThumbnail, id: 1)
        index.insert(key, 1, bytes: 100)
        let first = index.generation(key)
        index.insert(key, 2, bytes: 40)
        #expect(index.generation(key) != first)
        #expect(index.count == 1)
        #expect(index.totalBytes == 40)
        #expect(index.peek(key) == 2)
        #expect(index.checkInvariants() == nil)
    }
}
