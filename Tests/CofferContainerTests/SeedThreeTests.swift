import Coffer
import Foundation
import Testing

@Suite("Seed 003 surface")
struct SeedThreeTests {
    @Test("the seed's usage line compiles and runs as written, over the default container")
    func usageLine() throws {
        Storage.shared.use(CofferLocations(store: containerFolder()))
        let brand = Brand(brandId: "b1", image: "https://x/b1.png", keywords: "shoes", name: "Acme")
        try Storage.shared.storageContext?.brand.saveBlocking(brand)
        #expect(try Storage.shared.container().context.getBrandByLanguageBlocking("")?.map(\.brandId) == ["b1"])
    }

    @Test("save without a namespace inserts: a second brand with the same id is an error and nothing changes")
    func insertSemantics() throws {
        let c = try CofferContainer.openBlocking(CofferLocations(store: containerFolder()))
        defer { c.close() }
        try c.context.brand.saveBlocking(Brand(brandId: "b1", image: "i", keywords: "k", name: "First"))
        #expect(throws: DatabaseStoreError.self) {
            try c.context.brand.saveBlocking(Brand(brandId: "b1", image: "i", keywords: "k", name: "Second"))
        }
        #expect(try c.context.getBrandByLanguageBlocking("")?.map(\.name) == ["First"])
    }

    @Test("the context itself is a BrandClientType, and Brand a BrandEntityType")
    func conformances() throws {
        let c = try CofferContainer.openBlocking(CofferLocations(store: containerFolder()))
        defer { c.close() }
        let client: any BrandClientType = c.context
        var entity: any BrandEntityType = Brand(brandId: "b2", image: "i", keywords: "k", name: "N")
        entity.name = "Renamed"
        try client.saveBlocking(try #require(entity as? Brand), for: "en")
        #expect(try client.getBrandByLanguageBlocking("en")?.first?.name == "Renamed")
        #expect(try client.deleteBlocking("b2") == 1)
        try client.saveBlocking(Brand(brandId: "b3", image: "i", keywords: "k", name: "N", language: "de"))
        try client.clearBrandByBlocking("de")
        #expect(try client.getBrandByLanguageBlocking("de") == nil)
    }
}
