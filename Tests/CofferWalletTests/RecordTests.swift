// Record-level behaviour: the Askar record cases and the seed's operations.
import CofferWallet
import Foundation
import Testing

@Suite("Records")
struct RecordTests {
    @Test("add then get returns value and tags, not the type, by default")
    func addGet() async throws {
        let (w, _) = try await TestWallets.make()
        defer { try? w.close() }
        try await w.add(type: "cred", id: "1", value: "v", tags: ["a": "1", "~b": ["x", "y"]])
        let r = try await w.get(type: "cred", id: "1")
        #expect(r == WalletRecord(id: "1", type: nil, value: "v", tags: ["a": "1", "~b": ["x", "y"]]))
    }

    @Test("get options choose the fields")
    func getOptions() async throws {
        let (w, _) = try await TestWallets.make()
        defer { try? w.close() }
        try await w.add(type: "cred", id: "1", value: "v", tags: ["a": "1"])
        let r = try await w.get(type: "cred", id: "1", options: RecordOptions(json: #"{"retrieveType": true, "retrieveValue": false, "retrieveTags": false}"#))
        #expect(r == WalletRecord(id: "1", type: "cred"))
    }

    @Test("unknown get options are an invalid input")
    func badOptions() {
        #expect(throws: WalletError.self) { try RecordOptions(json: #"{"retrieveEverything": true}"#) }
        #expect(throws: WalletError.self) { try RecordOptions(json: #"{"retrieveType": 1}"#) }
    }

    @Test("a duplicate (type, id) is refused and the first record kept")
    func duplicate() async throws {
        let (w, _) = try await TestWallets.make()
        defer { try? w.close() }
        try await w.add(type: "cred", id: "1", value: "first")
        await #expect(throws: WalletError.duplicate(type: "cred", id: "1")) { try await w.add(type: "cred", id: "1", value: "second") }
        #expect(try await w.get(type: "cred", id: "1").value == "first")
    }

    @Test("the same id in another type is a different record")
    func sameIdOtherType() async throws {
        let (w, _) = try await TestWallets.make()
        defer { try? w.close() }
        try await w.add(type: "a", id: "1", value: "x")
        try await w.add(type: "b", id: "1", value: "y")
        #expect(try await w.get(type: "b", id: "1").value == "y")
    }

    @Test("empty type, id, value and tag values are allowed")
    func empties() async throws {
        let (w, _) = try await TestWallets.make()
        defer { try? w.close() }
        try await w.add(type: "", id: "", value: "", tags: ["a": "", "~b": "", "~": "x"])
        let r = try await w.get(type: "", id: "")
        #expect(r.value == "")
        #expect(r.tags == ["a": "", "~b": "", "~": "x"])
    }

    @Test("an empty tag list stores no tag")
    func emptyList() async throws {
        let (w, _) = try await TestWallets.make()
        defer { try? w.close() }
        try await w.add(type: "t", id: "1", value: "v", tags: WalletTags(json: #"{"a": []}"#))
        #expect(try await w.get(type: "t", id: "1").tags == WalletTags())
        #expect(try await w.count(type: "t", matching: WalletQuery(json: #"{"$exist": "a"}"#)) == 0)
    }

    @Test("tag values that are not strings or lists of strings are refused", arguments: [
        #"{"a": 1}"#, #"{"a": true}"#, #"{"a": null}"#, #"{"a": ["x", 1]}"#, #"{"a": {"b": "c"}}"#, #"{"": "x"}"#, #"[]"#, #"{"a": "#,
    ])
    func badTags(_ json: String) {
        #expect(throws: WalletError.self) { try WalletTags(json: json) }
    }

    @Test("update replaces the value and keeps the tags")
    func updateKeepsTags() async throws {
        let (w, _) = try await TestWallets.make()
        defer { try? w.close() }
        try await w.add(type: "t", id: "1", value: "v1", tags: ["a": "1"])
        try await w.update(type: "t", id: "1", value: "v2")
        #expect(try await w.get(type: "t", id: "1") == WalletRecord(id: "1", value: "v2", tags: ["a": "1"]))
        #expect(try await w.count(type: "t", matching: WalletQuery(json: #"{"a": "1"}"#)) == 1)
    }

    @Test("replace without tags clears the tags (Askar's replace)")
    func replaceClearsTags() async throws {
        let (w, _) = try await TestWallets.make()
        defer { try? w.close() }
        try await w.add(type: "t", id: "1", value: "v1", tags: ["a": "1"])
        try await w.replace(type: "t", id: "1", value: "v2", tags: [:])
        #expect(try await w.get(type: "t", id: "1") == WalletRecord(id: "1", value: "v2", tags: [:]))
    }

    @Test("update, replace, delete and tag calls on a missing record are not found")
    func missing() async throws {
        let (w, _) = try await TestWallets.make()
        defer { try? w.close() }
        let nf = WalletError.notFound(type: "t", id: "nope")
        await #expect(throws: nf) { try await w.update(type: "t", id: "nope", value: "v") }
        await #expect(throws: nf) { try await w.replace(type: "t", id: "nope", value: "v", tags: [:]) }
        await #expect(throws: nf) { try await w.delete(type: "t", id: "nope") }
        await #expect(throws: nf) { try await w.get(type: "t", id: "nope") }
        await #expect(throws: nf) { try await w.addTags(type: "t", id: "nope", tags: ["a": "b"]) }
        await #expect(throws: nf) { try await w.updateTags(type: "t", id: "nope", tags: ["a": "b"]) }
        await #expect(throws: nf) { try await w.deleteTags(type: "t", id: "nope", names: ["a"]) }
    }

    @Test("fetch of a missing record returns nil")
    func fetchMissing() async throws {
        let (w, _) = try await TestWallets.make()
        defer { try? w.close() }
        #expect(try await w.fetch(type: "t", id: "nope") == nil)
    }

    @Test("delete removes the record and its tags")
    func delete() async throws {
        let (w, _) = try await TestWallets.make()
        defer { try? w.close() }
        try await w.add(type: "t", id: "1", value: "v", tags: ["a": "1", "~b": "2"])
        try await w.delete(type: "t", id: "1")
        #expect(try await w.fetch(type: "t", id: "1") == nil)
        #expect(try await w.count(type: "t", matching: WalletQuery(json: #"{"$or": [{"a": "1"}, {"~b": "2"}]}"#)) == 0)
        try await w.add(type: "t", id: "1", value: "again")
        #expect(try await w.get(type: "t", id: "1").tags == [:])
    }

    @Test("add-tags merges, overwriting the given names")
    func addTags() async throws {
        let (w, _) = try await TestWallets.make()
        defer { try? w.close() }
        try await w.add(type: "t", id: "1", value: "v", tags: ["a": "1", "b": "2"])
        try await w.addTags(type: "t", id: "1", tags: ["b": "3", "~c": "4"])
        #expect(try await w.get(type: "t", id: "1").tags == ["a": "1", "b": "3", "~c": "4"])
        #expect(try await w.count(type: "t", matching: WalletQuery(json: #"{"b": "2"}"#)) == 0)
        #expect(try await w.count(type: "t", matching: WalletQuery(json: #"{"b": "3"}"#)) == 1)
    }

    @Test("update-tags replaces the whole set")
    func updateTags() async throws {
        let (w, _) = try await TestWallets.make()
        defer { try? w.close() }
        try await w.add(type: "t", id: "1", value: "v", tags: ["a": "1", "b": "2"])
        try await w.updateTags(type: "t", id: "1", tags: ["c": "3"])
        #expect(try await w.get(type: "t", id: "1").tags == ["c": "3"])
        #expect(try await w.count(type: "t", matching: WalletQuery(json: #"{"$exist": "a"}"#)) == 0)
    }

    @Test("delete-tags removes the named tags only")
    func deleteTags() async throws {
        let (w, _) = try await TestWallets.make()
        defer { try? w.close() }
        try await w.add(type: "t", id: "1", value: "v", tags: ["a": "1", "b": "2", "~c": "3"])
        try await w.deleteTags(type: "t", id: "1", names: ["a", "~c", "absent"])
        #expect(try await w.get(type: "t", id: "1").tags == ["b": "2"])
        #expect(try await w.count(type: "t", matching: WalletQuery(json: #"{"~c": "3"}"#)) == 0)
    }

    @Test("a failed call changes nothing: bad tags on add-tags leave the record as it was")
    func failedCallChangesNothing() async throws {
        let (w, _) = try await TestWallets.make()
        defer { try? w.close() }
        try await w.add(type: "t", id: "1", value: "v", tags: ["a": "1"])
        await #expect(throws: WalletError.self) { try await w.addTags(type: "t", id: "1", tags: ["": "x"]) }
        #expect(try await w.get(type: "t", id: "1").tags == ["a": "1"])
    }

    @Test("a transaction that throws leaves nothing")
    func rollback() async throws {
        struct Stop: Error {}
        let (w, _) = try await TestWallets.make()
        defer { try? w.close() }
        await #expect(throws: WalletError.self) {
            try await w.transaction { txn in
                try txn.add(type: "t", id: "1", value: "v")
                try txn.add(type: "t", id: "2", value: "v")
                throw Stop()
            }
        }
        #expect(try await w.count(type: "t") == 0)
    }

    @Test("a duplicate inside a transaction rolls back the whole transaction")
    func transactionDuplicate() async throws {
        let (w, _) = try await TestWallets.make()
        defer { try? w.close() }
        await #expect(throws: WalletError.duplicate(type: "t", id: "1")) {
            try await w.transaction { txn in
                try txn.add(type: "t", id: "1", value: "v")
                try txn.add(type: "t", id: "1", value: "v")
            }
        }
        #expect(try await w.count(type: "t") == 0)
    }

    @Test("removeAll with a tag filter removes only the matches")
    func removeAll() async throws {
        let (w, _) = try await TestWallets.make()
        defer { try? w.close() }
        for i in 0..<5 { try await w.add(type: "t", id: "o\(i)", value: "v", tags: ["k": i < 2 ? "x" : "y"]) }
        #expect(try await w.removeAll(type: "t", matching: WalletQuery(json: #"{"k": "x"}"#)) == 2)
        #expect(try await w.count(type: "t") == 3)
    }

    @Test("fetchAll orders by insertion, ascending or newest first, with limit and offset")
    func fetchAllOrder() async throws {
        let (w, _) = try await TestWallets.make()
        defer { try? w.close() }
        for i in 0..<5 { try await w.add(type: "t", id: "o\(i)", value: "v") }
        #expect(try await w.fetchAll(type: "t", limit: 2).map(\.id) == ["o0", "o1"])
        #expect(try await w.fetchAll(type: "t", limit: 2, newestFirst: true).map(\.id) == ["o4", "o3"])
        #expect(try await w.fetchAll(type: "t", offset: 1, limit: 3).map(\.id) == ["o1", "o2", "o3"])
    }

    @Test("an expired record reads as absent and is not counted")
    func expiry() async throws {
        let (w, _) = try await TestWallets.make()
        defer { try? w.close() }
        try await w.add(type: "t", id: "gone", value: "v", tags: ["a": "1"], expiresAt: Date(timeIntervalSinceNow: -1))
        try await w.add(type: "t", id: "kept", value: "v", tags: ["a": "1"], expiresAt: Date(timeIntervalSinceNow: 3600))
        #expect(try await w.fetch(type: "t", id: "gone") == nil)
        #expect(try await w.count(type: "t") == 1)
        #expect(try await w.fetchAll(type: "t", matching: WalletQuery(json: #"{"a": "1"}"#)).map(\.id) == ["kept"])
        try await w.add(type: "t", id: "gone", value: "new")
        #expect(try await w.get(type: "t", id: "gone").value == "new")
    }

    @Test("oversized fields are refused with a message naming the field")
    func limits() async throws {
        let (w, _) = try await TestWallets.make()
        defer { try? w.close() }
        do {
            try await w.add(type: String(repeating: "t", count: WalletLimits.maxTypeBytes + 1), id: "1", value: "v")
            Issue.record("no error")
        } catch {
            #expect("\(error)".contains("record type"))
        }
    }
}

@Suite("Records after errors")
struct RecordsAfterErrorsTests {
    @Test("a duplicate does not disturb later adds on the same connection")
    func addAfterDuplicate() async throws {
        let (w, _) = try await TestWallets.make()
        defer { try? w.close() }
        try await w.add(type: "t", id: "1", value: "v", tags: ["a": "1"])
        for _ in 0..<3 {
            await #expect(throws: WalletError.duplicate(type: "t", id: "1")) { try await w.add(type: "t", id: "1", value: "v") }
        }
        try await w.add(type: "t", id: "2", value: "v2", tags: ["a": "2"])
        #expect(try await w.get(type: "t", id: "2").value == "v2")
        #expect(try await w.count(type: "t") == 2)
    }
}
