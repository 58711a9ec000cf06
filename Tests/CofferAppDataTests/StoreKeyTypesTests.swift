// Settings keys for Int64, Float and optionals: each round-trips through the disk, and stores its
// value under the kind the docs name.

import CofferDatabase
import CofferSettings
import Foundation
import Testing

@Suite("StoreKey for Int64, Float and optionals")
struct StoreKeyTypesTests {
    static let bytesUsed = StoreKey<Int64>("bytesUsed", default: 0)
    static let scale = StoreKey<Float>("scale", default: 1)
    static let lastTab = StoreKey<Int?>(optional: "lastTab", .int)
    static let nickname = StoreKey<String?>(optional: "nickname", .string, default: "anonymous")

    @Test("an Int64 key keeps values beyond 32 bits, stored as kind int (an Int key reads it)")
    func int64() throws {
        let folder = appFolder()
        let app = try openApp(folder)
        try app.settings.putBlocking(Self.bytesUsed, 5_000_000_000)
        try app.close()
        let again = try openApp(folder)
        defer { try? again.close() }
        #expect(again.settings.get(Self.bytesUsed) == 5_000_000_000)
        #expect(again.settings.storedNames()["bytesUsed"] == "int")
        #expect(again.settings.get(StoreKey("bytesUsed", default: 0)) == 5_000_000_000)
    }

    @Test("a Float key round-trips, stored as kind double")
    func float() throws {
        let folder = appFolder()
        let app = try openApp(folder)
        #expect(app.settings.get(Self.scale) == 1)
        try app.settings.putBlocking(Self.scale, 0.1)
        try app.close()
        let again = try openApp(folder)
        defer { try? again.close() }
        #expect(again.settings.get(Self.scale) == Float(0.1))
        #expect(again.settings.storedNames()["scale"] == "double")
    }

    @Test("an optional key gives its default while unset, and keeps a stored nil apart from unset")
    func optional() throws {
        let folder = appFolder()
        let app = try openApp(folder)
        #expect(app.settings.get(Self.lastTab) == nil)
        #expect(app.settings.get(Self.nickname) == "anonymous")
        try app.settings.putBlocking(Self.lastTab, 3)
        try app.settings.putBlocking(Self.nickname, nil)
        try app.close()
        let again = try openApp(folder)
        defer { try? again.close() }
        #expect(again.settings.get(Self.lastTab) == 3)
        #expect(again.settings.get(Self.nickname) == nil, "a stored nil, not the default")
        #expect(again.settings.storedNames()["nickname"] == "string")
        try again.settings.putBlocking(Self.lastTab, nil)
        #expect(again.settings.get(Self.lastTab) == nil)
        try again.settings.deleteBlocking(Self.nickname)
        #expect(again.settings.get(Self.nickname) == "anonymous")
    }
}
