import CofferTestSupport
import CofferWallet
import Foundation
import Testing

@Suite("WalletApi (the seed's API)")
struct WalletApiTests {
    @Test("the async calls take and give the seed's strings")
    func asyncCalls() async throws {
        let (wallet, _) = try await TestWallets.make()
        let api = WalletApi(wallet: wallet)
        try await api.addRecordWallet("credential", "c1", "value-1")
        try await api.addRecordTags("credential", "c1", #"{"Tag1": "value1", "~n": "5"}"#)
        try await api.updateRecordWallet("credential", "c1", "value-2")
        #expect(
            try await api.getRecordWallet("credential", "c1", #"{"retrieveType": true}"#)
                == #"{"id":"c1","type":"credential","value":"value-2","tags":{"Tag1":"value1","~n":"5"}}"#)
        try await api.deleteRecordTags("credential", "c1", #"["~n"]"#)
        try await api.updateRecordTags("credential", "c1", #"{"Tag2": "x"}"#)
        #expect(try await api.getRecordWallet("credential", "c1") == #"{"id":"c1","value":"value-2","tags":{"Tag2":"x"}}"#)
        try await api.deleteRecordWallet("credential", "c1")
        await #expect(throws: WalletError.self) { _ = try await api.getRecordWallet("credential", "c1") }
    }

    @Test("a search gives the seed's {totalCount, records} string page by page")
    func searchShape() async throws {
        let (wallet, _) = try await TestWallets.make()
        let api = WalletApi(wallet: wallet)
        for i in 0..<3 { try await api.addRecordWallet("t", "r\(i)", "v\(i)", #"{"k": "a"}"#) }
        let h = try await api.openSearch("t", #"{"k": "a"}"#, #"{"retrieveTotalCount": true, "retrieveTags": false}"#)
        #expect(try await api.searchNextRecords(h, 2) == #"{"totalCount":3,"records":[{"id":"r0","value":"v0"},{"id":"r1","value":"v1"}]}"#)
        #expect(try await api.searchNextRecords(h, 2) == #"{"totalCount":3,"records":[{"id":"r2","value":"v2"}]}"#)
        try await api.closeSearch(h)
        await #expect(throws: WalletError.self) { _ = try await api.searchNextRecords(h, 1) }
    }

    @Test("the completion-handler forms report results and errors")
    func completions() async throws {
        let (wallet, _) = try await TestWallets.make()
        let api = WalletApi(wallet: wallet)
        let added: (any Error)? = await withCheckedContinuation { c in
            api.addRecordWallet("t", recordId: "a", recordValue: "v") { c.resume(returning: $0) }
        }
        #expect(added == nil)
        let duplicate: (any Error)? = await withCheckedContinuation { c in
            api.addRecordWallet("t", recordId: "a", recordValue: "v") { c.resume(returning: $0) }
        }
        #expect(duplicate is WalletError)
        let got: String? = await withCheckedContinuation { c in
            api.getRecordWallet("t", recordId: "a") { _, value in c.resume(returning: value) }
        }
        #expect(got == #"{"id":"a","value":"v","tags":{}}"#)
        let handle: Int = await withCheckedContinuation { c in
            api.openSearch("t", query: "{}") { _, h in c.resume(returning: h) }
        }
        let page: String? = await withCheckedContinuation { c in
            api.searchNextRecords(handle, count: 10) { _, s in c.resume(returning: s) }
        }
        #expect(page == #"{"records":[{"id":"a","value":"v","tags":{}}]}"#)
    }

    @Test("completion handlers run on the API's callback queue")
    func completionQueue() async throws {
        let (wallet, _) = try await TestWallets.make()
        defer { try? wallet.close() }
        let key = DispatchSpecificKey<String>()
        let queue = DispatchQueue(label: "coffer.tests.callbacks")
        queue.setSpecific(key: key, value: "callbacks")
        let api = WalletApi(wallet: wallet, callbackQueue: queue)
        let onQueue: String? = await withCheckedContinuation { c in
            api.addRecordWallet("t", recordId: "a", recordValue: "v") { _ in c.resume(returning: DispatchQueue.getSpecific(key: key)) }
        }
        #expect(onQueue == "callbacks")
        let onQueueAfterError: String? = await withCheckedContinuation { c in
            api.openSearch("t", query: "not json") { _, _ in c.resume(returning: DispatchQueue.getSpecific(key: key)) }
        }
        #expect(onQueueAfterError == "callbacks")
    }

    @Test("each completion handler is called exactly once, for a result and for an error")
    func completionOnce() async throws {
        let (wallet, _) = try await TestWallets.make()
        defer { try? wallet.close() }
        let queue = DispatchQueue(label: "coffer.tests.callbacks-once")
        let api = WalletApi(wallet: wallet, callbackQueue: queue)
        let (stream, calls) = AsyncStream<String>.makeStream()
        let updates = Updates(stream)
        defer { updates.cancel() }
        api.addRecordWallet("t", recordId: "a", recordValue: "v") { error in calls.yield(error == nil ? "added" : "add failed") }
        #expect(try await updates.next(within: .seconds(30)) == "added")
        // The next call starts only now, on the same serial queue: a second call of the first
        // handler would have been queued before this one's.
        api.openSearch("t", query: "not json") { error, handle in calls.yield(error != nil && handle == 0 ? "refused" : "opened") }
        #expect(try await updates.next(within: .seconds(30)) == "refused")
        api.deleteRecordWallet("t", recordId: "a") { error in calls.yield(error == nil ? "deleted" : "delete failed") }
        #expect(try await updates.next(within: .seconds(30)) == "deleted")
    }

    @Test("on the main queue, a handler reaches main-actor state through MainActor.assumeIsolated (the documented Swift 6 pattern)")
    func mainQueueHandler() async throws {
        let (wallet, _) = try await TestWallets.make()
        defer { try? wallet.close() }
        let model = StatusModel()
        let api = WalletApi(wallet: wallet, callbackQueue: .main)
        let (stream, done) = AsyncStream<Void>.makeStream()
        let updates = Updates(stream)
        defer { updates.cancel() }
        api.addRecordWallet("t", recordId: "m", recordValue: "v") { error in
            MainActor.assumeIsolated { model.status = error == nil ? "saved" : "failed" }
            done.yield()
        }
        #expect(try await updates.next(within: .seconds(30)) != nil)
        #expect(await model.status == "saved")
    }
}

/// Main-actor state a completion handler updates (a view model's).
@MainActor
private final class StatusModel {
    var status = ""
}
