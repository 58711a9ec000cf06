// `coffer settings`: the catalogue is the law — declared kinds, enum values, reserved keys,
// positive cache sizes — and `get` prints value, default and set, with mismatches reported.

import CofferTestSupport
import Foundation
import GRDB
import Testing

@Suite("coffer settings: the catalogue is the law")
struct SettingsCLITests {
    func store() async throws -> URL {
        let store = TemporaryFolders.path("coffer-settings")
        #expect(try await CLI.run(["settings", "list"], store: store).status == 0)
        return store
    }

    func object(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
    }

    @Test("an enum key refuses a value outside its cases, exit 2 listing the allowed values")
    func enumValues() async throws {
        let store = try await store()
        let r = try await CLI.run(["settings", "set", "themeMode", "purple"], store: store)
        #expect(r.status == 2)
        #expect(r.stderr.contains("system, light, dark"), "\(r.stderr)")
        #expect(try await CLI.run(["settings", "set", "themeMode", "dark"], store: store).status == 0)
    }

    @Test("a json key refuses JSON that does not decode as its type")
    func jsonType() async throws {
        let store = try await store()
        #expect(try await CLI.run(["settings", "set", "currentUser", #"{"x":1}"#], store: store).status == 2)
        let user = #"{"id":"u1","email":"a@b.c","name":"A","isAdmin":false}"#
        #expect(try await CLI.run(["settings", "set", "currentUser", user], store: store).status == 0)
    }

    @Test("a json setting nested deeper than get can print is refused at set, naming the depth; 256 levels print back as JSON")
    func jsonDepth() async throws {
        let store = try await store()
        let deep = String(repeating: "[", count: 300) + String(repeating: "]", count: 300)
        let refused = try await CLI.run(["settings", "set", "deepValue", deep, "--kind", "json"], store: store)
        #expect(refused.status == 2)
        #expect(refused.stderr.contains("nesting deeper than 256"), "\(refused.stderr)")
        #expect(try await CLI.run(["settings", "get", "deepValue"], store: store).status == 1)
        let deepest = String(repeating: "[", count: 256) + String(repeating: "]", count: 256)
        #expect(try await CLI.run(["settings", "set", "deepValue", deepest, "--kind", "json"], store: store).status == 0)
        let printed = try object(try await CLI.run(["settings", "get", "deepValue"], store: store).stdout)
        #expect(printed["value"] is [Any], "\(printed)")
    }

    @Test("a catalogue key refuses another --kind")
    func declaredKind() async throws {
        let store = try await store()
        let r = try await CLI.run(["settings", "set", "tilesPerRow", "hello", "--kind", "string"], store: store)
        #expect(r.status == 2)
        #expect(r.stderr.contains("declared as int"), "\(r.stderr)")
    }

    @Test("the reserved version key can be neither set nor removed")
    func reserved() async throws {
        let store = try await store()
        #expect(try await CLI.run(["settings", "set", "version", "99"], store: store).status == 2)
        #expect(try await CLI.run(["settings", "delete", "version"], store: store).status == 2)
        #expect(try await CLI.run(["settings", "list"], store: store).status == 0, "the store must still open")
    }

    @Test("cache sizes must be positive")
    func positiveCacheSizes() async throws {
        let store = try await store()
        for value in ["-5", "0"] {
            let r = try await CLI.run(["settings", "set", "imageCacheSize", "--", value], store: store)
            #expect(r.status == 2, "\(value)")
            #expect(r.stderr.contains("at least 1"), "\(r.stderr)")
        }
        #expect(try await CLI.run(["settings", "set", "imageCacheSize", "20"], store: store).status == 0)
    }

    @Test("get of an unset key prints its declared default")
    func unsetDefault() async throws {
        let store = try await store()
        let r = try await CLI.run(["settings", "get", "themeMode"], store: store)
        #expect(r.stdout == #"{"name":"themeMode","kind":"enum","value":"system","default":"system","set":false}"# + "\n")
    }

    @Test("booleans print as true and false")
    func booleans() async throws {
        let store = try await store()
        #expect(try await CLI.run(["settings", "set", "autoBackup", "true"], store: store).status == 0)
        let r = try await CLI.run(["settings", "get", "autoBackup"], store: store)
        #expect(r.stdout == #"{"name":"autoBackup","kind":"bool","value":true,"default":false,"set":true}"# + "\n")
    }

    @Test("a stored value of the wrong type is reported as a mismatch, not printed")
    func mismatch() async throws {
        let store = try await store()
        let queue = try DatabaseQueue(path: store.appendingPathComponent("app.sqlite").path)
        try await queue.write {
            try $0.execute(sql: "INSERT INTO coffer_settings(name, kind, value, updated_at) VALUES ('tilesPerRow', 'string', 'hello', 0)")
        }
        try queue.close()
        let r = try await CLI.run(["settings", "get", "tilesPerRow"], store: store)
        #expect(r.status == 0)
        let printed = try object(r.stdout)
        #expect(printed["value"] as? Int == 4)
        #expect((printed["mismatch"] as? String)?.contains("string") == true, "\(r.stdout)")
        #expect(!r.stdout.contains("hello"))
    }
}

@Suite("coffer secure: failures per item, a lost key")
struct SecureCLITests {
    func storeWithItems() async throws -> URL {
        let store = TemporaryFolders.path("coffer-secure-cli")
        for name in ["a", "b"] {
            let r = try await CLI.run(["secure", "set", name, "--value-env", "V"], store: store, env: ["V": "value-\(name)"])
            #expect(r.status == 0, "\(r.stderr)")
        }
        return store
    }

    @Test("list names a damaged item on stderr and still lists and reads the others")
    func damagedItem() async throws {
        let store = try await storeWithItems()
        let items = store.appendingPathComponent("secure/items")
        let files = try FileManager.default.contentsOfDirectory(atPath: items.path).sorted()
        let damaged = items.appendingPathComponent(files[0])
        var raw = try Data(contentsOf: damaged)
        raw[raw.count - 1] ^= 1
        try raw.write(to: damaged)
        let list = try await CLI.run(["secure", "list"], store: store)
        #expect(list.status == 0)
        #expect(list.stderr.contains(files[0]), "\(list.stderr)")
        let names = try #require(try JSONSerialization.jsonObject(with: Data(list.stdout.utf8)) as? [String])
        #expect(names.count == 1)
        #expect(try await CLI.run(["secure", "get", try #require(names.first)], store: store).status == 0)
    }

    @Test("a lost key file is an error naming it, exit 5, and set makes no new key")
    func lostKey() async throws {
        let store = try await storeWithItems()
        try FileManager.default.removeItem(at: store.appendingPathComponent("secure/key"))
        let get = try await CLI.run(["secure", "get", "a"], store: store)
        #expect(get.status == 5)
        #expect(get.stderr.contains("secure storage key lost"), "\(get.stderr)")
        let set = try await CLI.run(["secure", "set", "c", "--value-env", "V"], store: store, env: ["V": "x"])
        #expect(set.status == 5)
        #expect(!FileManager.default.fileExists(atPath: store.appendingPathComponent("secure/key").path))
    }
}

@Suite("settings list")
struct SettingsListTests {
    @Test("settings list prints booleans as true/false, as get does")
    func booleans() async throws {
        let store = try await CLI.newStore()
        #expect(try await CLI.run(["settings", "set", "flagged", "true", "--kind", "bool"], store: store).status == 0)
        let list = try await CLI.run(["settings", "list"], store: store)
        #expect(list.stdout.contains(#""flagged":true"#), "\(list.stdout)")
    }
}
