// What an app does at launch and in its first screen, through `import Coffer` alone: open the
// container, read and write settings, keep and search records in the wallet, cache an image.

import Coffer
import Foundation

/// The launch, as an app's first `.task` runs it: async code, so the plain names are the async
/// forms (top-level code in `main.swift` would pick the deprecated blocking ones instead).
@MainActor
func launch() async throws {
    // The store lives in a temporary folder here; an app uses `CofferLocations.platformDefault()`.
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("coffer-example-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: folder) }

    let app = try await CofferContainer.open(CofferLocations(store: folder))

    // Settings: typed keys, reads from memory, durable writes.
    try await app.settings.put(SettingsCatalog.themeMode, .dark)
    print("theme:", app.settings.get(SettingsCatalog.themeMode), "tiles per row:", app.settings.get(SettingsCatalog.tilesPerRow))

    // The wallet: a raw key an app would keep in the Keychain (here: a fresh one).
    let wallet = try await app.openWallet(.raw(WalletKey.generateRawKey()))
    for (id, year) in [("degree", "2019"), ("licence", "2021"), ("passport", "2015")] {
        try await wallet.add(type: "credential", id: id, value: #"{"id":"\#(id)"}"#, tags: ["kind": "document", "~year": .string(year)])
    }
    let recent = try await wallet.fetchAll(type: "credential", matching: WalletQuery(json: #"{"~year": {"$gte": 2018}}"#))
    print("issued since 2018:", recent.map(\.id).sorted())

    // The media cache: the loader runs once, later reads come from memory.
    let thumbnail = try await app.cache.data(for: .thumbnail("asset-1")) { Data(repeating: 0xFF, count: 1_024) }
    print("thumbnail bytes:", thumbnail.count, "cached:", app.cache.memoryData(for: .thumbnail("asset-1")) != nil)

    app.close()
}

try await launch()
