// The seed's iOS selectors (seed 000/001): walletAddRecordTags, walletUpdateRecordTags,
// walletDeleteRecordTags, walletOpenSearch, walletSearchNextRecords, walletCloseSearch, each
// called with the seed's labels and checked against the seed's argument and result shapes.

import CofferWallet
import Foundation
import Testing

/// Bridges the completion handlers into async results (each handler must be called exactly once,
/// or the checked continuation traps).
extension WalletApi {
    func addTags(_ type: String, _ id: String, _ tags: String) async -> (any Error)? {
        await withCheckedContinuation { c in walletAddRecordTags(type, recordId: id, recordTags: tags) { c.resume(returning: $0) } }
    }

    func updateTags(_ type: String, _ id: String, _ tags: String) async -> (any Error)? {
        await withCheckedContinuation { c in walletUpdateRecordTags(type, recordId: id, recordTags: tags) { c.resume(returning: $0) } }
    }

    func deleteTags(_ type: String, _ id: String, _ names: String) async -> (any Error)? {
        await withCheckedContinuation { c in walletDeleteRecordTags(type, recordId: id, recordTags: names) { c.resume(returning: $0) } }
    }

    func open(_ type: String, _ query: String, _ options: String) async -> (error: (any Error)?, handle: Int) {
        await withCheckedContinuation { c in walletOpenSearch(type, query: query, options: options) { c.resume(returning: ($0, $1)) } }
    }

    func next(_ handle: Int, _ count: Int) async -> (error: (any Error)?, records: String?) {
        await withCheckedContinuation { c in walletSearchNextRecords(handle, count: count) { c.resume(returning: ($0, $1)) } }
    }

    func close(_ handle: Int) async -> (any Error)? {
        await withCheckedContinuation { c in walletCloseSearch(handle) { c.resume(returning: $0) } }
    }

    func tagsJSON(_ type: String, _ id: String) async throws -> String {
        try await getRecordWallet(type, id, #"{"retrieveValue": false}"#)
    }
}

@Suite("WalletApi: the seed's iOS names")
struct WalletApiIOSNamesTests {
    func api() async throws -> WalletApi {
        let (wallet, _) = try await TestWallets.make()
        let api = WalletApi(wallet: wallet)
        try await api.addRecordWallet("credential", "c1", "value", #"{"Tag0": "zero"}"#)
        return api
    }

    @Test("walletAddRecordTags adds the seed's {\"Tag1\": \"value1\", \"Tag2\": \"value2\"} to the record's tags")
    func addTags() async throws {
        let api = try await api()
        #expect(await api.addTags("credential", "c1", #"{"Tag1": "value1", "Tag2": "value2"}"#) == nil)
        #expect(try await api.tagsJSON("credential", "c1") == #"{"id":"c1","tags":{"Tag0":"zero","Tag1":"value1","Tag2":"value2"}}"#)
    }

    @Test("walletUpdateRecordTags replaces the record's tags with the seed's object")
    func updateTags() async throws {
        let api = try await api()
        #expect(await api.updateTags("credential", "c1", #"{"Tag1": "value1", "Tag2": "value2"}"#) == nil)
        #expect(try await api.tagsJSON("credential", "c1") == #"{"id":"c1","tags":{"Tag1":"value1","Tag2":"value2"}}"#)
    }

    @Test("walletDeleteRecordTags removes the tags named in the seed's JSON array [\"Tag1\", \"Tag2\"]")
    func deleteTags() async throws {
        let api = try await api()
        _ = await api.addTags("credential", "c1", #"{"Tag1": "value1", "Tag2": "value2"}"#)
        #expect(await api.deleteTags("credential", "c1", #"["Tag1", "Tag2"]"#) == nil)
        #expect(try await api.tagsJSON("credential", "c1") == #"{"id":"c1","tags":{"Tag0":"zero"}}"#)
    }

    @Test("walletDeleteRecordTags given an object instead of the seed's array reports an invalid-input error")
    func deleteTagsNeedsArray() async throws {
        let api = try await api()
        let error = await api.deleteTags("credential", "c1", #"{"Tag0": "zero"}"#)
        guard case .invalidInput? = error as? WalletError else {
            Issue.record("expected invalidInput, got \(String(describing: error))")
            return
        }
    }

    @Test("a tag call on a missing record reports not found through the completion")
    func tagsOnMissingRecord() async throws {
        let api = try await api()
        #expect(await api.addTags("credential", "nope", #"{"Tag1": "v"}"#) as? WalletError == .notFound(type: "credential", id: "nope"))
    }

    @Test("walletOpenSearch takes the seed's query and options and gives a search handle")
    func openSearch() async throws {
        let api = try await api()
        let opened = await api.open("credential", #"{"Tag0": "zero"}"#, #"{"retrieveRecords": true, "retrieveTotalCount": true}"#)
        #expect(opened.error == nil && opened.handle > 0)
    }

    @Test("walletOpenSearch with a malformed query reports the error and handle 0")
    func openSearchError() async throws {
        let api = try await api()
        let opened = await api.open("credential", #"{"$or": 5}"#, "{}")
        #expect(opened.error is WalletError && opened.handle == 0)
    }

    @Test("walletSearchNextRecords gives the seed's {totalCount, records: [{id, type, value, tags}]} string")
    func searchNextShape() async throws {
        let api = try await api()
        let opened = await api.open("credential", "{}", #"{"retrieveTotalCount": true, "retrieveType": true}"#)
        let page = await api.next(opened.handle, 10)
        #expect(page.error == nil)
        #expect(page.records == #"{"totalCount":1,"records":[{"id":"c1","type":"credential","value":"value","tags":{"Tag0":"zero"}}]}"#)
    }

    @Test("walletSearchNextRecords with retrieveRecords false gives only the count")
    func searchNextCountOnly() async throws {
        let api = try await api()
        let opened = await api.open("credential", "{}", #"{"retrieveRecords": false, "retrieveTotalCount": true}"#)
        #expect(await api.next(opened.handle, 10).records == #"{"totalCount":1}"#)
    }

    @Test("walletCloseSearch closes the search: the next fetch reports an invalid handle and no records")
    func closeSearch() async throws {
        let api = try await api()
        let opened = await api.open("credential", "{}", "{}")
        #expect(await api.close(opened.handle) == nil)
        let after = await api.next(opened.handle, 1)
        #expect(after.error as? WalletError == .invalidHandle(opened.handle) && after.records == nil)
    }
}
