// An app's view of Coffer: a `@MainActor` view model written from the README with nothing but
// `import Coffer` (this target depends on the `Coffer` product alone, and on the shared test
// helpers for temporary folders and bounded waits), exercising the API an app
// developer uses — async calls that leave the main actor free, Coffer's own observation types, a
// clean close, Observation models, cancellation, identity-keeping upserts and the SDK's typed API.

import Coffer
import CofferTestSupport
import Foundation
import Testing

/// Temporary store folders for one test.
func scratchLocations() -> CofferLocations {
    let root = TemporaryFolders.path("coffer-api")
    return CofferLocations(data: root.appendingPathComponent("data"), caches: root.appendingPathComponent("caches"))
}

/// Set by a loader when it starts.
actor LoaderStarted {
    var isSet = false
    func set() { isSet = true }
}

/// A view model as an iOS app writes one: main-actor state, storage calls awaited.
@MainActor
final class GalleryModel {
    let container: CofferContainer
    var assets: [Asset] = []
    var columns: Int = 0

    init(container: CofferContainer) { self.container = container }

    static func open(_ locations: CofferLocations) async throws -> GalleryModel {
        GalleryModel(container: try await CofferContainer.open(locations, secureStorage: nil))
    }

    func importAssets(_ batch: [Asset]) async throws {
        try await container.context.assets.putAll(batch)
        assets = try await container.context.assets.allForOwner("alice")
    }

    func setColumns(_ n: Int) async throws {
        try await container.settings.put(SettingsCatalog.tilesPerRow, n)
        columns = container.settings.get(SettingsCatalog.tilesPerRow)
    }
}

/// A count the main actor bumps while it is free.
@MainActor
final class Ticker {
    private(set) var ticks = 0
    private var task: Task<Void, Never>?
    func start() {
        task = Task { @MainActor in
            while !Task.isCancelled {
                ticks += 1
                await Task.yield()
            }
        }
    }
    func stop() { task?.cancel() }
}

func asset(_ i: Int, owner: String = "alice") -> Asset {
    Asset(
        remoteId: "r\(i)", localId: "l\(i)", ownerId: owner, checksum: "c\(i)", fileName: "IMG_\(i).jpg",
        fileCreatedAt: Date(timeIntervalSince1970: TimeInterval(1_700_000_000 + i)))
}

@Suite("An app's view model, through import Coffer")
@MainActor
struct ViewModelTests {
    @Test("1. awaited storage calls leave the main actor free: it keeps running while 20,000 assets are written")
    func mainActorStaysFree() async throws {
        let model = try await GalleryModel.open(scratchLocations())
        defer { model.container.close() }
        let ticker = Ticker()
        ticker.start()
        await Task.yield()
        let batch = (0..<20_000).map { asset($0) }
        let before = ticker.ticks
        try await model.container.context.assets.putAll(batch)
        let during = ticker.ticks - before
        ticker.stop()
        try await model.importAssets([])
        #expect(model.assets.count == 20_000)
        // A blocking write on the main actor leaves the ticker no turn at all until it returns
        // (0, measured); awaited, the ticker's queued turn runs while the worker writes. Other
        // main-actor tests share the actor under a parallel run, so only "some turn" is asserted.
        #expect(during > 0)
    }

    @Test("1. settings, cache, secure storage and reset each have an async form that does the work")
    func asyncForms() async throws {
        let locations = scratchLocations()
        let model = try await GalleryModel.open(locations)
        try await model.setColumns(6)
        #expect(model.columns == 6)
        try await model.container.cache.store(Data("thumb".utf8), for: .thumbnail("a1"))
        model.container.cache.clearMemory()
        #expect(await model.container.cache.data(for: .thumbnail("a1")) == Data("thumb".utf8))
        try await model.container.secure.save("token-1", for: .accessToken)
        #expect(try await model.container.secure.load(.accessToken) == "token-1")
        try await model.container.reset()
        let reopened = try await CofferContainer.open(locations)
        defer { reopened.close() }
        #expect(reopened.settings.get(SettingsCatalog.tilesPerRow) == SettingsCatalog.tilesPerRow.defaultValue)
        #expect(try await reopened.secure.load(.accessToken) == nil)
    }

    @Test("2. observations are Coffer's own type: an owner's assets, then each committed change")
    func observationType() async throws {
        let model = try await GalleryModel.open(scratchLocations())
        defer { model.container.close() }
        let observation: QueryObservation<[Asset]> = model.container.context.assets.observeOwner("alice")
        var iterator = observation.makeAsyncIterator()
        #expect(try await iterator.next()?.count == 0)
        try await model.container.context.assets.put(asset(1))
        #expect(try await iterator.next()?.map(\.remoteId) == ["r1"])
    }

    @Test("3. close ends every observation and stream, and every later call throws its closed error")
    func lifecycle() async throws {
        let locations = scratchLocations()
        let model = try await GalleryModel.open(locations)
        let container = model.container
        let wallet = try await container.openWallet(.raw(Data(repeating: 7, count: 32)))
        let firstValues = AsyncStream<Void>.makeStream()
        let observing = Task { () -> Int in
            var seen = 0
            do {
                for try await _ in container.context.assets.observeOwner("alice") {
                    seen += 1
                    firstValues.continuation.yield()
                }
            } catch DatabaseStoreError.closed {
                return seen
            }
            return -1 // ended without saying why
        }
        let settingsStream = Task { () -> Int in
            var seen = 0
            do {
                for try await _ in container.settings.changes(SettingsCatalog.tilesPerRow, initial: true) {
                    seen += 1
                    firstValues.continuation.yield()
                }
            } catch SettingsError.closed {
                return seen
            }
            return -1 // ended without saying why
        }
        // Close once both loops are running (each has had its first value).
        var started = 0
        for await _ in firstValues.stream {
            started += 1
            if started == 2 { break }
        }
        container.close()
        // Both loops end on their own (a leaked loop would hang this test).
        #expect(try await observing.value >= 1)
        #expect(try await settingsStream.value >= 1)
        await #expect(throws: DatabaseStoreError.closed) { _ = try await container.context.assets.count() }
        await #expect(throws: DatabaseStoreError.closed) {
            for try await _ in container.context.assets.observeOwner("alice") {}
        }
        await #expect(throws: SettingsError.closed) { try await container.settings.put(SettingsCatalog.tilesPerRow, 2) }
        await #expect(throws: MediaCacheError.closed) { try await container.cache.store(Data("x".utf8), for: .preview("p")) }
        await #expect(throws: SecureStorageError.closed) { try await container.secure.save("t", for: .accessToken) }
        await #expect(throws: WalletError.closed) { try await wallet.add(type: "t", id: "i", value: "v") }
        await #expect(throws: ContainerError.closed) { try await container.reset() }
    }

    @Test("4. ObservedSetting and ObservedQuery follow writes; changes(initial:) starts at the current value, once per value")
    func observationModels() async throws {
        guard #available(macOS 14.0, iOS 17.0, *) else { return }
        let model = try await GalleryModel.open(scratchLocations())
        defer { model.container.close() }
        let settings = model.container.settings
        let columns = ObservedSetting(SettingsCatalog.tilesPerRow, in: settings)
        columns.value = 5
        #expect(settings.get(SettingsCatalog.tilesPerRow) == 5)
        let context = model.container.context
        let count = ObservedQuery(context) { try context.assets.countBlocking() }
        try await context.assets.putAll([asset(1), asset(2)])
        for _ in 0..<400 where count.value != 2 { try await Task.sleep(for: .milliseconds(5)) }
        #expect(count.value == 2)

        var changes = settings.changes(SettingsCatalog.tilesPerRow, initial: true).makeAsyncIterator()
        #expect(try await changes.next() == 5)
        try await settings.put(SettingsCatalog.tilesPerRow, 5) // the same value: not given again
        try await settings.put(SettingsCatalog.tilesPerRow, 7)
        #expect(try await changes.next() == 7)
    }

    @Test("4. an enum with integer raw values is a setting")
    func intEnumSetting() async throws {
        enum Quality: Int, Sendable {
            case low = 1
            case high = 2
        }
        let key = StoreKey(enum: "apiQuality", default: Quality.low)
        let model = try await GalleryModel.open(scratchLocations())
        defer { model.container.close() }
        try await model.container.settings.put(key, .high)
        #expect(model.container.settings.get(key) == .high)
    }

    @Test("5. a cancelled cache load returns CancellationError at once and caches nothing")
    func cancellation() async throws {
        let model = try await GalleryModel.open(scratchLocations())
        defer { model.container.close() }
        let cache = model.container.cache
        let started = LoaderStarted()
        let load = Task {
            try await cache.data(for: .preview("slow")) {
                await started.set()
                try? await Task.sleep(for: .seconds(30)) // a loader that ignores cancellation
                return Data("late".utf8)
            }
        }
        try await eventually("the loader started") { await started.isSet }
        load.cancel()
        await #expect(throws: CancellationError.self) { _ = try await load.value }
        #expect(await cache.data(for: .preview("slow")) == nil)
    }

    @Test("6. an upsert that would change an asset's remote id is refused unless asked")
    func identityKept() async throws {
        let model = try await GalleryModel.open(scratchLocations())
        defer { model.container.close() }
        let assets = model.container.context.assets
        try await assets.put(asset(1))
        var moved = asset(1)
        moved.remoteId = "other"
        moved.localId = nil
        await #expect(throws: DatabaseStoreError.uniqueViolation(key: "ownerId+checksum", table: "assets")) {
            try await assets.put(moved)
        }
        #expect(try await assets.findByRemoteId("r1") != nil)
        try await assets.put(moved, onConflict: .replaceIdentity)
        #expect(try await assets.findByRemoteId("other") != nil)
    }

    @Test("7. one try for records(…), typed states, restore by id alone, transport errors kept, callbacks on a stated queue")
    func sdkSmallOnes() async throws {
        let model = try await GalleryModel.open(scratchLocations())
        defer { model.container.close() }
        let wallet = try await model.container.openWallet(.raw(Data(repeating: 9, count: 32)))
        try await wallet.add(type: "credential", id: "degree", value: "{}", tags: ["status": "verified"])
        var ids: [String] = []
        for try await record in wallet.records(type: "credential", matching: try WalletQuery(json: #"{"status": "verified"}"#)) {
            ids.append(record.id)
        }
        #expect(ids == ["degree"])

        struct Offline: Error {}
        struct Transport: AriesProtocol {
            func send(_ message: OutboundMessage) async throws { throw Offline() }
        }
        let sdk = StateMachines(wallet: wallet, protocol: Transport())
        let h = sdk.connectionCreate(invitation: "invite")
        #expect(try sdk.connectionState(h) == .invited)
        do {
            _ = try await sdk.connectionSendRequest(h)
            Issue.record("the transport's failure was not reported")
        } catch let StateMachineError.transportFailed(failure) {
            #expect(failure.underlying is Offline)
        }
        let store = StateMachineStore(machines: sdk, storage: WalletMachineStorage(wallet: wallet))
        let id = try await store.save(h)
        let restored = try await store.restore(id: id)
        #expect(try sdk.connectionState(restored) == .invited)

        let queue = DispatchQueue(label: "app.callbacks")
        let key = DispatchSpecificKey<Bool>()
        queue.setSpecific(key: key, value: true)
        let api = WalletApi(wallet: wallet, callbackQueue: queue)
        let onQueue = await withCheckedContinuation { (done: CheckedContinuation<Bool, Never>) in
            api.addRecordWallet("note", recordId: "n1", recordValue: "v") { _ in
                done.resume(returning: DispatchQueue.getSpecific(key: key) == true)
            }
        }
        #expect(onQueue)
    }
}
