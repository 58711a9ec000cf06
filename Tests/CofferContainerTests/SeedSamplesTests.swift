// Every code sample of the seed documents (/work/shared/seeds at the time of writing; kept here as
// the table below), compiled and run as a test, written as close to the seed's lines as Coffer's
// Swift API permits: Android's `WalletApi.x(...).get()` is `try await api.x(...)`, an iOS
// selector is the completion-handler method with the same labels, Dart/JS-like pseudo-code
// becomes the Coffer call of the same name.
//
// | seed | sample | test |
// |---|---|---|
// | 000/001 | `addRecordWallet` (Android `.get()`, iOS `addRecordWallet:recordId:recordValue:completion:`) | `addRecord`, `addRecordCompletion` |
// | 000/001 | the `type` + `id` pair is unique | `typeAndIdUnique` |
// | 000/001 | `updateRecordWallet` (Android, iOS `…withRecordId:withRecordValue:withCompletion:`) | `updateRecord`, `updateRecordCompletion` |
// | 000/001 | `getRecordWallet` (Android with `optionsJson`, iOS `(error, walletValue)`) | `getRecord`, `getRecordCompletion` |
// | 000/001 | `deleteRecordWallet` (Android, iOS completion) | `deleteRecord`, `deleteRecordCompletion` |
// | 000/001 | `addRecordTags` / `walletAddRecordTags` with `{"Tag1": "value1", "Tag2": "value2"}` | `addTags` |
// | 000/001 | update tags (the seed's Android line says `addRecordTags`; Coffer's is `updateRecordTags`) / `walletUpdateRecordTags` | `updateTags` |
// | 000/001 | `deleteRecordTags` / `walletDeleteRecordTags` with `["Tag1", "Tag2"]` | `deleteTags` |
// | 000/001 | the query literal (`$or:` unquoted, `'pattern'`, trailing commas: not JSON) | `queryLiteralRefused` |
// | 000/001 | the same query as JSON, `$or` given an object | `orAsObject` |
// | 000/001 | the options literal (prose, not JSON) as JSON: its defaults | `optionDefaults` |
// | 000/001 | `openSearch` / `walletOpenSearch` → handle | `openSearchHandle` |
// | 000/001 | `searchNextRecords` / `walletSearchNextRecords` → `{totalCount, records: [{id, type, value, tags}]}` | `searchNextShape` |
// | 000/001 | `closeSearch` / `walletCloseSearch` | `closeSearch`, `closeSearchCompletion` |
// | 000/001 | "no additional configuration … available after SDK initialization"; master secret "once on the first SDK initialization"; agent key at provisioning | `SDKInitTests` (all), `walletAfterInitialization` |
// | 002 | (prose only: no code sample) | — |
// | 003 | `protocol BrandEntityType` | `SeedThreeTests.conformances` |
// | 003 | `protocol BrandClientType`, `protocol ClientType { var brand }` | `brandClient` |
// | 003 | `extension StorageContext: BrandClientType` (`delete`, `save(_:for:)`, `getBrandByLanguage`, `clearBrandBy`) | `brandClient`, `SeedThreeTests.conformances` |
// | 003 | `let brand = Brand(...)`; `try Storage.shared.storageContext?.brand.save(brand)` | `SeedThreeTests.usageLine` |
// | 004 | `Store.get(StoreKey.themeMode, "system")`, `Store.put(…, "dark")` | `storeService` |
// | 004 | `Store.tryGet(StoreKey.accessToken)`, `Store.delete(StoreKey.accessToken)` (the token lives in secure storage) | `accessToken` |
// | 004 | `db.assets.where().remoteIdEqualTo(id).findFirst()`, `filter().ownerIdEqualTo(userId).findAll()`, `fileCreatedAtBetween(start, end)` | `assetReads` |
// | 004 | `db.writeTxn(() => db.assets.put(asset))`, `deleteAllByRemoteId(ids)`, `putAll(assets)` | `assetWrites` |
// | 004 | `SSLClientCertStoreVal`: `save()`, `load()`, `delete()` | `sslClientCertificate` |
// | 004 | the collection listings (Assets, Albums, BackupAlbum, DuplicatedAsset, ETag, AndroidDeviceAsset, IOSDeviceAsset) | `collectionsAsListed` |
// | 004 | the storage overview and cache-layer diagrams (key-value store, database, image cache, secure storage) | `ContainerTests.layout` |
// | 004 | cache invalidation by asset / album; user-setting and cache-size defaults | `CacheInvalidationTests` |

import Coffer
import Foundation
import Testing

/// A completion handler's value, awaited at most `seconds` (a handler never called fails the
/// test instead of hanging it).
func completion<T: Sendable>(_ what: String, seconds: Double = 120, _ start: (@escaping @Sendable (T) -> Void) -> Void) async throws -> T {
    let once = Guarded<CheckedContinuation<T, any Error>?>(nil)
    return try await withCheckedThrowingContinuation { continuation in
        once.withLock { $0 = continuation }
        let finish: @Sendable (Result<T, any Error>) -> Void = { result in
            once.withLock { held in
                held?.resume(with: result)
                held = nil
            }
        }
        DispatchQueue.global().asyncAfter(deadline: .now() + seconds) {
            finish(.failure(CompletionTimeout(what: what)))
        }
        start { finish(.success($0)) }
    }
}

/// A completion handler was not called in time.
struct CompletionTimeout: Error, CustomStringConvertible {
    let what: String
    var description: String { "the completion handler of \(what) was not called within the bound" }
}

@Suite("Seed samples, as written")
struct SeedSamplesTests {
    static func walletApi() async throws -> WalletApi {
        let folder = containerFolder()
        var configuration = Wallet.Configuration()
        configuration.passphraseParameters = .minimum
        let wallet = try await Wallet.create(
            at: folder.appendingPathComponent("wallet.sqlite"), key: .raw(WalletKey.generateRawKey()), configuration: configuration)
        return WalletApi(wallet: wallet)
    }

    let recordType = "credential"
    let recordId = "c1"
    let recordValue = "Some value"

    // MARK: Seed 000/001: the wallet API

    @Test("WalletApi.addRecordWallet(recordType, recordId, recordValue).get()")
    func addRecord() async throws {
        let api = try await Self.walletApi()
        try await api.addRecordWallet(recordType, recordId, recordValue)
        #expect(try await api.getRecordWallet(recordType, recordId) == #"{"id":"c1","value":"Some value","tags":{}}"#)
    }

    @Test("addRecordWallet:recordId:recordValue:completion: reports success, then the duplicate as an error")
    func addRecordCompletion() async throws {
        let api = try await Self.walletApi()
        let first: (any Error)? = try await completion("addRecordWallet") { done in
            api.addRecordWallet(recordType, recordId: recordId, recordValue: recordValue) { error in done(error) }
        }
        #expect(first == nil)
        let again: (any Error)? = try await completion("addRecordWallet") { done in
            api.addRecordWallet(recordType, recordId: recordId, recordValue: recordValue) { error in done(error) }
        }
        #expect(again as? WalletError == .duplicate(type: recordType, id: recordId))
    }

    @Test("the combination of type and id values must be unique; the same id under another type is another record")
    func typeAndIdUnique() async throws {
        let api = try await Self.walletApi()
        try await api.addRecordWallet(recordType, recordId, recordValue)
        try await api.addRecordWallet("other", recordId, "other value")
        await #expect(throws: WalletError.duplicate(type: recordType, id: recordId)) {
            try await api.addRecordWallet(recordType, recordId, "again")
        }
    }

    @Test("WalletApi.updateRecordWallet(recordType, recordId, recordValue).get()")
    func updateRecord() async throws {
        let api = try await Self.walletApi()
        try await api.addRecordWallet(recordType, recordId, "first")
        try await api.updateRecordWallet(recordType, recordId, recordValue)
        #expect(try await api.getRecordWallet(recordType, recordId) == #"{"id":"c1","value":"Some value","tags":{}}"#)
    }

    @Test("updateRecordWallet:withRecordId:withRecordValue:withCompletion: changes the value; a missing record is an error")
    func updateRecordCompletion() async throws {
        let api = try await Self.walletApi()
        try await api.addRecordWallet(recordType, recordId, "first")
        let updated: (any Error)? = try await completion("updateRecordWallet") { done in
            api.updateRecordWallet(recordType, withRecordId: recordId, withRecordValue: recordValue) { error in done(error) }
        }
        #expect(updated == nil)
        #expect(try await api.getRecordWallet(recordType, recordId) == #"{"id":"c1","value":"Some value","tags":{}}"#)
        let missing: (any Error)? = try await completion("updateRecordWallet") { done in
            api.updateRecordWallet(recordType, withRecordId: "nope", withRecordValue: recordValue) { error in done(error) }
        }
        #expect(missing as? WalletError == .notFound(type: recordType, id: "nope"))
    }

    @Test("WalletApi.getRecordWallet(recordType, recordId, optionsJson).get()")
    func getRecord() async throws {
        let api = try await Self.walletApi()
        try await api.addRecordWallet(recordType, recordId, recordValue, #"{"tagName1": "x"}"#)
        let optionsJson = #"{"retrieveType": true, "retrieveValue": true, "retrieveTags": true}"#
        #expect(
            try await api.getRecordWallet(recordType, recordId, optionsJson)
                == #"{"id":"c1","type":"credential","value":"Some value","tags":{"tagName1":"x"}}"#)
    }

    @Test("getRecordWallet:recordId:completion: gives (error, walletValue)")
    func getRecordCompletion() async throws {
        let api = try await Self.walletApi()
        try await api.addRecordWallet(recordType, recordId, recordValue)
        let (error, walletValue): ((any Error)?, String?) = try await completion("getRecordWallet") { done in
            api.getRecordWallet(recordType, recordId: recordId) { error, walletValue in done((error, walletValue)) }
        }
        #expect(error == nil && walletValue == #"{"id":"c1","value":"Some value","tags":{}}"#)
    }

    @Test("WalletApi.deleteRecordWallet(recordType, recordId).get()")
    func deleteRecord() async throws {
        let api = try await Self.walletApi()
        try await api.addRecordWallet(recordType, recordId, recordValue)
        try await api.deleteRecordWallet(recordType, recordId)
        await #expect(throws: WalletError.notFound(type: recordType, id: recordId)) {
            _ = try await api.getRecordWallet(recordType, recordId)
        }
    }

    @Test("deleteRecordWallet:recordId:completion: removes the record; deleting it again is a not-found error")
    func deleteRecordCompletion() async throws {
        let api = try await Self.walletApi()
        try await api.addRecordWallet(recordType, recordId, recordValue)
        let deleted: (any Error)? = try await completion("deleteRecordWallet") { done in
            api.deleteRecordWallet(recordType, recordId: recordId) { error in done(error) }
        }
        #expect(deleted == nil)
        await #expect(throws: WalletError.self) { _ = try await api.getRecordWallet(recordType, recordId) }
        let again: (any Error)? = try await completion("deleteRecordWallet") { done in
            api.deleteRecordWallet(recordType, recordId: recordId) { error in done(error) }
        }
        #expect(again as? WalletError == .notFound(type: recordType, id: recordId))
    }

    @Test("WalletApi.addRecordTags(recordType, recordId, recordTags).get() and walletAddRecordTags with the seed's tags")
    func addTags() async throws {
        let api = try await Self.walletApi()
        try await api.addRecordWallet(recordType, recordId, recordValue)
        let recordTags = #"{"Tag1": "value1", "Tag2": "value2"}"#
        try await api.addRecordTags(recordType, recordId, recordTags)
        try await api.addRecordWallet(recordType, "c2", recordValue)
        let added: (any Error)? = try await completion("walletAddRecordTags") { done in
            api.walletAddRecordTags(recordType, recordId: "c2", recordTags: recordTags) { error in done(error) }
        }
        #expect(added == nil)
        for id in [recordId, "c2"] {
            #expect(
                try await api.getRecordWallet(recordType, id, #"{"retrieveValue": false}"#)
                    == #"{"id":"\#(id)","tags":{"Tag1":"value1","Tag2":"value2"}}"#)
        }
    }

    @Test("updating tags replaces them with the seed's object (updateRecordTags and walletUpdateRecordTags)")
    func updateTags() async throws {
        let api = try await Self.walletApi()
        try await api.addRecordWallet(recordType, recordId, recordValue, #"{"Old": "x"}"#)
        let recordTags = #"{"Tag1": "value1", "Tag2": "value2"}"#
        try await api.updateRecordTags(recordType, recordId, recordTags)
        #expect(
            try await api.getRecordWallet(recordType, recordId, #"{"retrieveValue": false}"#)
                == #"{"id":"c1","tags":{"Tag1":"value1","Tag2":"value2"}}"#)
        let updated: (any Error)? = try await completion("walletUpdateRecordTags") { done in
            api.walletUpdateRecordTags(recordType, recordId: recordId, recordTags: #"{"Tag3": "value3"}"#) { error in done(error) }
        }
        #expect(updated == nil)
        #expect(
            try await api.getRecordWallet(recordType, recordId, #"{"retrieveValue": false}"#) == #"{"id":"c1","tags":{"Tag3":"value3"}}"#)
    }

    @Test("WalletApi.deleteRecordTags(recordType, recordId, recordTags).get() with the seed's [\"Tag1\", \"Tag2\"]")
    func deleteTags() async throws {
        let api = try await Self.walletApi()
        try await api.addRecordWallet(recordType, recordId, recordValue, #"{"Tag1": "value1", "Tag2": "value2", "Tag3": "v"}"#)
        try await api.deleteRecordTags(recordType, recordId, #"["Tag1", "Tag2"]"#)
        #expect(try await api.getRecordWallet(recordType, recordId, #"{"retrieveValue": false}"#) == #"{"id":"c1","tags":{"Tag3":"v"}}"#)
        let deleted: (any Error)? = try await completion("walletDeleteRecordTags") { done in
            api.walletDeleteRecordTags(recordType, recordId: recordId, recordTags: #"["Tag3"]"#) { error in done(error) }
        }
        #expect(deleted == nil)
        #expect(try await api.getRecordWallet(recordType, recordId, #"{"retrieveValue": false}"#) == #"{"id":"c1","tags":{}}"#)
    }

    /// The seed's query, character for character: `$or` unquoted, `'pattern'`, trailing commas.
    static let seedQueryLiteral = """
          {
            "tagName": "tagValue",
            $or: {
              "tagName2": { $regex: 'pattern' },
              "tagName3": { $gte: 123 },
            },
          }
        """

    /// The same query as JSON: `$or` given an object, as the seed writes it.
    static let seedQueryJSON = #"{"tagName": "tagValue", "$or": {"tagName2": {"$regex": "pattern"}, "tagName3": {"$gte": 123}}}"#

    @Test("the seed's query literal is not JSON: refused with a message that says so, nothing opened")
    func queryLiteralRefused() async throws {
        let api = try await Self.walletApi()
        await #expect {
            _ = try await api.openSearch(recordType, Self.seedQueryLiteral, "{}")
        } throws: { error in
            guard case .invalidQuery(let message) = error as? WalletError else { return false }
            return message.contains("invalid JSON")
        }
        let (error, handle): ((any Error)?, Int) = try await completion("walletOpenSearch") { done in
            api.walletOpenSearch(recordType, query: Self.seedQueryLiteral, options: "{}") { error, searchHandle in
                done((error, searchHandle))
            }
        }
        #expect(handle == 0 && "\(error.map { "\($0)" } ?? "")".contains("invalid JSON"))
    }

    @Test("the seed's query as JSON ($or given an object) matches tagName and any one of the $or's pairs")
    func orAsObject() async throws {
        let api = try await Self.walletApi()
        try await api.addRecordWallet(recordType, "regex", "v", #"{"tagName": "tagValue", "tagName2": "a pattern inside"}"#)
        try await api.addRecordWallet(recordType, "gte", "v", #"{"tagName": "tagValue", "tagName3": "200"}"#)
        try await api.addRecordWallet(recordType, "equal", "v", #"{"tagName": "tagValue", "tagName3": "123"}"#)
        try await api.addRecordWallet(recordType, "neither", "v", #"{"tagName": "tagValue", "tagName2": "other", "tagName3": "50"}"#)
        try await api.addRecordWallet(recordType, "wrongTag", "v", #"{"tagName": "other", "tagName2": "pattern", "tagName3": "999"}"#)
        let handle = try await api.openSearch(
            recordType, Self.seedQueryJSON, #"{"retrieveTotalCount": true, "retrieveValue": false, "retrieveTags": false}"#)
        #expect(try await api.searchNextRecords(handle, 10) == #"{"totalCount":3,"records":[{"id":"regex"},{"id":"gte"},{"id":"equal"}]}"#)
        try await api.closeSearch(handle)
    }

    @Test("the seed's options as JSON: retrieveRecords, retrieveValue and retrieveTags default to true, the others to false")
    func optionDefaults() async throws {
        let api = try await Self.walletApi()
        try await api.addRecordWallet(recordType, recordId, recordValue, #"{"tagName1": "x"}"#)
        let defaults = try await api.openSearch(recordType, "{}", "{}")
        #expect(try await api.searchNextRecords(defaults, 10) == #"{"records":[{"id":"c1","value":"Some value","tags":{"tagName1":"x"}}]}"#)
        let options = #"""
            {"retrieveRecords": true, "retrieveTotalCount": false, "retrieveType": false, "retrieveValue": true, "retrieveTags": true}
            """#
        let explicit = try await api.openSearch(recordType, "{}", options)
        #expect(try await api.searchNextRecords(explicit, 10) == #"{"records":[{"id":"c1","value":"Some value","tags":{"tagName1":"x"}}]}"#)
        let countsOnly = try await api.openSearch(recordType, "{}", #"{"retrieveRecords": false, "retrieveTotalCount": true}"#)
        #expect(try await api.searchNextRecords(countsOnly, 10) == #"{"totalCount":1}"#)
    }

    @Test("int handle = WalletApi.openSearch(recordType, query, options).get(), and walletOpenSearch's (error, searchHandle)")
    func openSearchHandle() async throws {
        let api = try await Self.walletApi()
        let handle = try await api.openSearch(recordType, #"{"tagName": "tagValue"}"#, "{}")
        #expect(handle > 0)
        let (error, searchHandle): ((any Error)?, Int) = try await completion("walletOpenSearch") { done in
            api.walletOpenSearch(recordType, query: #"{"tagName": "tagValue"}"#, options: "{}") { error, searchHandle in
                done((error, searchHandle))
            }
        }
        #expect(error == nil && searchHandle > 0 && searchHandle != handle)
    }

    @Test(
        "String records = WalletApi.searchNextRecords(searchHandle, count).get(): the seed's {totalCount, records: [{id, type, value, tags}]}"
    )
    func searchNextShape() async throws {
        let api = try await Self.walletApi()
        try await api.addRecordWallet(recordType, "Some id", recordValue, #"{"tagName1": "s"}"#)
        let options = #"{"retrieveTotalCount": true, "retrieveType": true}"#
        let searchHandle = try await api.openSearch(recordType, "{}", options)
        let count = 10
        let records = try await api.searchNextRecords(searchHandle, count)
        #expect(
            records == #"{"totalCount":1,"records":[{"id":"Some id","type":"credential","value":"Some value","tags":{"tagName1":"s"}}]}"#)
        let again = try await api.openSearch(recordType, "{}", options)
        let (error, page): ((any Error)?, String?) = try await completion("walletSearchNextRecords") { done in
            api.walletSearchNextRecords(again, count: count) { error, records in done((error, records)) }
        }
        #expect(error == nil && page == records)
    }

    @Test("WalletApi.closeSearch(searchHandle).get(): the handle is gone afterwards")
    func closeSearch() async throws {
        let api = try await Self.walletApi()
        let searchHandle = try await api.openSearch(recordType, "{}", "{}")
        try await api.closeSearch(searchHandle)
        await #expect(throws: WalletError.invalidHandle(searchHandle)) { _ = try await api.searchNextRecords(searchHandle, 1) }
    }

    @Test("closeSearch(_:completion:) and walletCloseSearch: report success, then an unknown handle as an error")
    func closeSearchCompletion() async throws {
        let api = try await Self.walletApi()
        let first = try await api.openSearch(recordType, "{}", "{}")
        let closed: (any Error)? = try await completion("closeSearch") { done in api.closeSearch(first) { error in done(error) } }
        #expect(closed == nil)
        await #expect(throws: WalletError.invalidHandle(first)) { _ = try await api.searchNextRecords(first, 1) }
        let second = try await api.openSearch(recordType, "{}", "{}")
        let closedToo: (any Error)? = try await completion("walletCloseSearch") { done in
            api.walletCloseSearch(second) { error in done(error) }
        }
        #expect(closedToo == nil)
        let again: (any Error)? = try await completion("walletCloseSearch") { done in api.walletCloseSearch(second) { error in done(error) }
        }
        #expect(again as? WalletError == .invalidHandle(second))
    }

    @Test("the wallet is there right after SDK initialisation, with no configuration: the seed's record calls work on it")
    func walletAfterInitialization() async throws {
        let sdk = try await CofferSDK.initialize(CofferLocations(store: containerFolder()))
        defer { sdk.close() }
        let api = WalletApi(wallet: sdk.wallet)
        try await api.addRecordWallet(recordType, recordId, recordValue)
        #expect(try await api.getRecordWallet(recordType, recordId) == #"{"id":"c1","value":"Some value","tags":{}}"#)
    }

    // MARK: Seed 003: the brand client

    @Test(
        "ClientType.brand is a BrandClientType whose save(_:for:), getBrandByLanguage, clearBrandBy and delete run as the seed's extension")
    func brandClient() throws {
        let c = try CofferContainer.openBlocking(CofferLocations(store: containerFolder()))
        defer { c.close() }
        let clients: any ClientType = c.context
        let brand = Brand(brandId: "b1", image: "https://x/b1.png", keywords: "shoes", name: "Acme", language: "en")
        try clients.brand.saveBlocking(brand, for: "en")
        try clients.brand.saveBlocking(Brand(brandId: "b2", image: "i", keywords: "k", name: "Zed", language: "de"), for: "de")
        #expect(try clients.brand.getBrandByLanguageBlocking("en")?.map(\.brandId) == ["b1"])
        #expect(try clients.brand.deleteBlocking("b1") == 1)
        #expect(try clients.brand.deleteBlocking("b1") == 0)
        try clients.brand.clearBrandByBlocking("de")
        #expect(try clients.brand.getBrandByLanguageBlocking("de") == nil)
    }

    // MARK: Seed 004: the store service, the collections, secure storage

    @Test("value = Store.get(StoreKey.themeMode, \"system\"); Store.put(StoreKey.themeMode, \"dark\")")
    func storeService() throws {
        let c = try CofferContainer.openBlocking(CofferLocations(store: containerFolder()))
        defer { c.close() }
        let store = c.settings
        var value = store.get(SettingsCatalog.themeMode, .system)
        #expect(value == .system)
        try store.putBlocking(SettingsCatalog.themeMode, .dark)
        value = store.get(SettingsCatalog.themeMode, .system)
        #expect(value == .dark)
    }

    @Test("value = Store.tryGet(StoreKey.accessToken); Store.delete(StoreKey.accessToken): the token is a secure item in Coffer")
    func accessToken() throws {
        let c = try CofferContainer.openBlocking(CofferLocations(store: containerFolder()))
        defer { c.close() }
        var value = try c.secure.loadBlocking(.accessToken)
        #expect(value == nil)
        try c.secure.saveBlocking("tok-1", for: .accessToken)
        value = try c.secure.loadBlocking(.accessToken)
        #expect(value == "tok-1")
        try c.secure.deleteBlocking(.accessToken)
        #expect(try c.secure.loadBlocking(.accessToken) == nil)
        // A nullable store key reads the same way.
        #expect(c.settings.tryGet(SettingsCatalog.backupFailedSince) == nil)
    }

    @Test("db.assets.where().remoteIdEqualTo(id).findFirst(), filter().ownerIdEqualTo(userId).findAll(), fileCreatedAtBetween(start, end)")
    func assetReads() throws {
        let c = try CofferContainer.openBlocking(CofferLocations(store: containerFolder()))
        defer { c.close() }
        let media = containerFolder()
        let old = try backedUp(c, media, 1, days: 40, withFile: false)
        let recent = try backedUp(c, media, 2, days: 2, withFile: false)
        let db = c.context
        let id = "r1"
        let userId = "u1"
        var asset = try db.assets.findByRemoteIdBlocking(id)
        #expect(asset?.id == old.id)
        let assets = try db.assets.allForOwnerBlocking(userId)
        #expect(Set(assets.map(\.id)) == [old.id, recent.id])
        let (start, end) = (daysAgo(10), daysAgo(0))
        #expect(try db.assets.createdBetweenBlocking(start, end).map(\.id) == [recent.id])
        asset = try db.assets.findByRemoteIdBlocking("none")
        #expect(asset == nil)
    }

    @Test("db.writeTxn(() => db.assets.put(asset)), deleteAllByRemoteId(ids), putAll(assets)")
    func assetWrites() throws {
        let c = try CofferContainer.openBlocking(CofferLocations(store: containerFolder()))
        defer { c.close() }
        let db = c.context
        func asset(_ n: Int) -> Asset {
            Asset(
                remoteId: "r\(n)", localId: "l\(n).jpg", ownerId: "u1", checksum: "c\(n)", fileName: "IMG_\(n).jpg", type: .image,
                fileCreatedAt: daysAgo(n))
        }
        try db.assets.putBlocking(asset(1))
        var renamed = asset(1)
        renamed.fileName = "renamed.jpg"
        try db.assets.putBlocking(renamed)
        #expect(try db.assets.findByRemoteIdBlocking("r1")?.fileName == "renamed.jpg")
        let assets = (2...4).map(asset)
        try db.assets.putAllBlocking(assets)
        #expect(try db.assets.countBlocking() == 4)
        let ids = ["r1", "r3"]
        #expect(try db.assets.deleteAllByRemoteIdBlocking(ids) == 2)
        #expect(try db.assets.allForOwnerBlocking("u1").compactMap(\.remoteId).sorted() == ["r2", "r4"])
    }

    @Test("the seed's collections hold the fields it lists; ownerId + checksum is unique; remoteId and localId find an asset")
    func collectionsAsListed() throws {
        let c = try CofferContainer.openBlocking(CofferLocations(store: containerFolder()))
        defer { c.close() }
        let db = c.context
        // Assets: id auto-increment, remoteId, localId, ownerId + checksum composite unique.
        let asset = try db.assets.putBlocking(
            Asset(
                remoteId: "r1", localId: "l1", ownerId: "u1", checksum: "c1", fileName: "a.jpg", type: .image,
                fileCreatedAt: daysAgo(1)))
        #expect(asset.id != nil)
        #expect(try db.assets.findByRemoteIdBlocking("r1")?.id == asset.id && db.assets.findByLocalIdBlocking("l1")?.id == asset.id)
        // A second put with the same owner and checksum never makes a second row.
        _ = try? db.assets.putBlocking(
            Asset(
                remoteId: "r2", localId: "l2", ownerId: "u1", checksum: "c1", fileName: "b.jpg", type: .image, fileCreatedAt: daysAgo(1)))
        #expect(try db.assets.countBlocking() == 1)
        // Albums: id auto-increment, remoteId, name, dates, ownership; links to assets and users.
        let album = try db.albums.putBlocking(Album(remoteId: "al1", name: "Trip", createdAt: daysAgo(3), ownerId: "u1"))
        try db.albums.linkBlocking(albumId: try #require(album.id), assetIds: [try #require(asset.id)])
        try db.albums.shareBlocking(albumId: try #require(album.id), userIds: ["u2"])
        #expect(try db.albums.assetsBlocking(albumId: try #require(album.id)).map(\.id) == [asset.id])
        // BackupAlbum, DuplicatedAsset, ETag, AndroidDeviceAsset, IOSDeviceAsset.
        let sync = db.sync
        let lastBackup = daysAgo(2)
        try sync.putBackupAlbumBlocking(BackupAlbum(id: "device-album", name: "Camera", selection: .include, lastBackup: lastBackup))
        #expect(
            try sync.backupAlbumsBlocking(.include) == [
                BackupAlbum(id: "device-album", name: "Camera", selection: .include, lastBackup: lastBackup)
            ])
        try sync.putDuplicatedBlocking(["device-asset"])
        #expect(try sync.isDuplicatedBlocking("device-asset"))
        try sync.putETagBlocking(ETag(id: "u1", assetCount: 1, time: lastBackup))
        #expect(try sync.etagBlocking("u1") == ETag(id: "u1", assetCount: 1, time: lastBackup))
        try sync.putAndroidAssetsBlocking([AndroidDeviceAsset(id: "a1", hash: Data([1, 2]))])
        #expect(try sync.androidAssetBlocking("a1")?.hash == Data([1, 2]))
        try sync.putIOSAssetsBlocking([IOSDeviceAsset(id: "i1", hash: Data([3]), modifiedTime: lastBackup)])
        #expect(try sync.iosAssetBlocking("i1") == IOSDeviceAsset(id: "i1", hash: Data([3]), modifiedTime: lastBackup))
    }

    @Test("SSLClientCertStoreVal: save() persists to secure storage, load() retrieves, delete() removes")
    func sslClientCertificate() throws {
        let c = try CofferContainer.openBlocking(CofferLocations(store: containerFolder()))
        defer { c.close() }
        let cert = SSLClientCertificate(data: Data("p12 bytes".utf8), password: "certificate password")
        try cert.saveBlocking(to: c.secure)
        #expect(try SSLClientCertificate.loadBlocking(from: c.secure) == cert)
        try SSLClientCertificate.deleteBlocking(from: c.secure)
        #expect(try SSLClientCertificate.loadBlocking(from: c.secure) == nil)
    }
}
