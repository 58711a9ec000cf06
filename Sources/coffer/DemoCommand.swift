// `coffer demo`: a walk-through of the wallet on the default store, printing each step.
import ArgumentParser
import Coffer
import Foundation

struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Walk through the wallet: create, add credentials with tags, search, update tags.",
        discussion: """
            The demo wallet lives in <store>/demo/wallet.sqlite and is made anew on every run under a \
            random key that only this process holds, so it never touches the store's real wallet.
            """)

    @OptionGroup var storeOptions: StoreOptions

    func run() async throws {
        let folder = storeOptions.storeDirectory.appendingPathComponent("demo", isDirectory: true)
        let url = StoreLocation.walletFile(in: folder)
        for suffix in ["", "-wal", "-shm"] {
            try? FileManager.default.removeItem(atPath: url.path + suffix)
        }
        step("Create a wallet at \(url.path)")
        say("key: a fresh random 32-byte raw key, held in memory only")
        let wallet = try await Wallet.create(at: url, key: .raw(WalletKey.generateRawKey()))
        defer { try? wallet.close() }

        step("Add three credentials with tags (plain names are encrypted tags; ~names are plaintext tags)")
        let credentials: [(String, String, WalletTags)] = [
            ("cred-alice-degree", #"{"name":"Alice","degree":"BSc Physics","year":"2019"}"#,
             ["schema_id": "schema:degree:1.0", "issuer_did": "did:sov:university", "~issued": "2019-06-30", "~year": "2019"]),
            ("cred-alice-license", #"{"name":"Alice","class":"B"}"#,
             ["schema_id": "schema:license:2.1", "issuer_did": "did:sov:dmv", "~issued": "2021-03-12", "~year": "2021"]),
            ("cred-alice-employee", #"{"name":"Alice","employer":"Acme","role":"Engineer"}"#,
             ["schema_id": "schema:employee:1.0", "issuer_did": "did:sov:acme", "~issued": "2023-09-01", "~year": "2023",
              "roles": ["engineer", "reviewer"]]),
        ]
        for (id, value, tags) in credentials {
            try await wallet.add(type: "credential", id: id, value: value, tags: tags)
            say("add credential \(id) tags=\(tags.json)")
        }

        step("Get one record (type, value and tags)")
        let one = try await wallet.get(type: "credential", id: "cred-alice-license", options: RecordOptions(retrieveType: true))
        say(one.json)

        step("Search: encrypted tag equality {\"issuer_did\": \"did:sov:university\"}")
        try await show(wallet, #"{"issuer_did": "did:sov:university"}"#)

        step("Search: plaintext range, the seed's numeric form {\"~year\": {\"$gte\": 2020}}")
        try await show(wallet, #"{"~year": {"$gte": 2020}}"#)

        step("Search: the seed's $or object with $regex {\"$or\": {\"schema_id\": {\"$regex\": \"^schema:(degree|license)\"}, \"roles\": \"reviewer\"}}")
        try await show(wallet, #"{"$or": {"schema_id": {"$regex": "^schema:(degree|license)"}, "roles": "reviewer"}}"#)

        step("Update tags: add-tags merges {\"status\": \"verified\"} into the degree")
        try await wallet.addTags(type: "credential", id: "cred-alice-degree", tags: ["status": "verified"])
        say(try await wallet.get(type: "credential", id: "cred-alice-degree", options: RecordOptions(retrieveValue: false)).json)

        step("Update tags: update-tags replaces the license's whole tag set")
        try await wallet.updateTags(type: "credential", id: "cred-alice-license",
                                    tags: ["schema_id": "schema:license:2.1", "status": "expired", "~year": "2021"])
        say(try await wallet.get(type: "credential", id: "cred-alice-license", options: RecordOptions(retrieveValue: false)).json)

        step("Update tags: delete-tags removes [\"roles\"] from the employee credential")
        try await wallet.deleteTags(type: "credential", id: "cred-alice-employee", names: ["roles"])
        say(try await wallet.get(type: "credential", id: "cred-alice-employee", options: RecordOptions(retrieveValue: false)).json)

        step("Search after the updates: {\"status\": {\"$in\": [\"verified\", \"expired\"]}} with a total count, two per page")
        let handle = try await wallet.openSearch(
            type: "credential", queryJSON: #"{"status": {"$in": ["verified", "expired"]}}"#,
            optionsJSON: #"{"retrieveTotalCount": true, "retrieveValue": false}"#)
        var page = 1
        while true {
            let next = try await wallet.searchNext(handle, count: 2)
            guard let records = next.records, !records.isEmpty else { break }
            say("page \(page): \(next.json)")
            page += 1
        }
        try await wallet.closeSearch(handle)

        step("Count every credential")
        say("count = \(try await wallet.count(type: "credential"))")

        step("Done")
        say("The file holds no readable type, id, value or encrypted tag: try `strings \(url.path)`.")
    }

    func show(_ wallet: Wallet, _ query: String) async throws {
        let handle = try await wallet.openSearch(type: "credential", queryJSON: query, optionsJSON: #"{"retrieveValue": false}"#)
        let page = try await wallet.searchNext(handle, count: 100)
        try await wallet.closeSearch(handle)
        say(page.json)
    }

    func step(_ title: String) { print("\n== \(title)") }
    func say(_ line: String) { print("   \(line)") }
}
