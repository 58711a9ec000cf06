// `coffer demo`: a walk-through of the wallet on the default store, printing each step.

import ArgumentParser
import Coffer
import Foundation

struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Walk through the wallet (records, tags, searches) and the SDK flow (connection, credential, proof, backup).",
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
            (
                "cred-alice-degree", #"{"name":"Alice","degree":"BSc Physics","year":"2019"}"#,
                ["schema_id": "schema:degree:1.0", "issuer_did": "did:sov:university", "~issued": "2019-06-30", "~year": "2019"]
            ),
            (
                "cred-alice-license", #"{"name":"Alice","class":"B"}"#,
                ["schema_id": "schema:license:2.1", "issuer_did": "did:sov:dmv", "~issued": "2021-03-12", "~year": "2021"]
            ),
            (
                "cred-alice-employee", #"{"name":"Alice","employer":"Acme","role":"Engineer"}"#,
                [
                    "schema_id": "schema:employee:1.0", "issuer_did": "did:sov:acme", "~issued": "2023-09-01", "~year": "2023",
                    "roles": ["engineer", "reviewer"],
                ]
            ),
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

        step(
            "Search: the seed's $or object with $regex {\"$or\": {\"schema_id\": {\"$regex\": \"^schema:(degree|license)\"}, \"roles\": \"reviewer\"}}"
        )
        try await show(wallet, #"{"$or": {"schema_id": {"$regex": "^schema:(degree|license)"}, "roles": "reviewer"}}"#)

        step("Update tags: add-tags merges {\"status\": \"verified\"} into the degree")
        try await wallet.addTags(type: "credential", id: "cred-alice-degree", tags: ["status": "verified"])
        say(try await wallet.get(type: "credential", id: "cred-alice-degree", options: RecordOptions(retrieveValue: false)).json)

        step("Update tags: update-tags replaces the license's whole tag set")
        try await wallet.updateTags(
            type: "credential", id: "cred-alice-license",
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

        try await sdkFlow(wallet, folder: folder)

        step("Done")
        say("The file holds no readable type, id, value or encrypted tag: try `strings \(url.path)`.")
    }

    /// The seed's SDK flow: provision, connection, credential, proof, backup and restore.
    func sdkFlow(_ wallet: Wallet, folder: URL) async throws {
        let agent = DemoAgent(say: say)
        let machines = StateMachines(wallet: wallet, protocol: agent)
        let store = StateMachineStore(machines: machines, storage: WalletMachineStorage(wallet: wallet))

        step("SDK: provision — a key for the cloud agent and the credential master secret (made here, once), kept as wallet secrets")
        let agentKey = try await wallet.createKey(.ed25519)
        say("cloud-agent verkey \(agentKey) (its private key never leaves the wallet)")
        say("master secret created now: \(try await wallet.initializeMasterSecret())")

        step("SDK: connection — invited → requested → responded → completed (libvcx's state numbers 2 → 3 → 3 → 4)")
        let connection = machines.connectionCreate(invitation: #"{"label":"University","recipientKeys":["inviter"]}"#)
        try await show(machines.connectionSendRequest(connection))
        let inviter = try await wallet.createKey(.ed25519)
        try show(machines.connectionReceiveResponse(connection, theirVerkey: inviter))
        try await show(machines.connectionComplete(connection))
        try await store.save(connection)

        step("SDK: credential offer (3) → request sent (2); the machine is serialized, stored, released")
        let offer = CredentialOffer(
            issuerDID: "did:sov:university", schemaID: "schema:diploma:1.0",
            credentialDefinitionID: "creddef:diploma:1", attributes: ["name": "Alice", "grade": "A"])
        let credential = machines.credentialCreate(offer: offer)
        try await show(machines.credentialSendRequest(credential))
        let credentialID = try await store.save(credential)
        say("saved: \(try machines.serialize(credential))")
        try machines.release(credential)

        step("SDK: restore it into a new handle after a \"restart\", receive the credential (4), accept it (4)")
        let restored = try await store.restore(id: credentialID, kind: .credential)
        say("restored into handle \(restored) (was \(credential))")
        try await show(
            machines.credentialReceive(
                restored, credential: IssuedCredential(attributes: offer.attributes, signature: #"{"demo":"signature"}"#)))
        say(
            "signature kept as a secret on receipt: \(try await wallet.hasCredentialSignature(credentialID: credentialID)); the machine's JSON has none"
        )
        try await show(machines.credentialAccept(restored))
        try await store.save(restored)
        say("stored: \(try await wallet.get(type: "credential", id: credentialID, options: RecordOptions(retrieveValue: true)).json)")
        say("signature kept as a secret: \(try await wallet.hasCredentialSignature(credentialID: credentialID))")

        step("SDK: proof request (3) matched by WQL restrictions, presentation sent (2), acknowledged (4)")
        let request = ProofRequest(
            name: "diploma check",
            requestedAttributes: [
                "grade": .init(name: "grade", restrictions: [["schema_id": "schema:diploma:1.0"], ["issuer_did": "did:sov:other"]])
            ])
        let proof = machines.proofCreate(request: request)
        let matches = try await machines.proofMatchingCredentials(proof)
        say("matching credentials: \(DemoCommand.json(matches.mapValues { .array($0.map { .string($0) }) }).jsonText)")
        try await show(machines.proofSendPresentation(proof, credentials: ["grade": credentialID]))
        try show(machines.proofReceiveAck(proof))

        step("SDK: backup the whole wallet under its own passphrase, restore into a new wallet")
        let backup = folder.appendingPathComponent("wallet.backup")
        let restoredURL = folder.appendingPathComponent("restored.sqlite")
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: restoredURL.path + suffix) }
        let passphrase = "demo backup passphrase"
        let exported = try await wallet.exportBackup(to: backup, passphrase: passphrase)
        say("exported \(exported) records and secrets to \(backup.path)")
        let copy = try await Wallet.importBackup(
            from: backup, passphrase: passphrase, into: restoredURL, key: .raw(WalletKey.generateRawKey()))
        defer { try? copy.close() }
        say(
            "restored: \(try await copy.count(type: "credential")) credentials, signature present: \(try await copy.hasCredentialSignature(credentialID: credentialID)), keys: \(try await copy.listKeys().count)"
        )
        let restoredMachines = StateMachineStore(
            machines: StateMachines(wallet: copy, protocol: agent), storage: WalletMachineStorage(wallet: copy))
        say(
            "state machines restored from the copy: \(try await restoredMachines.restoreAll(kind: .credential).count) credential, \(try await restoredMachines.restoreAll(kind: .connection).count) connection"
        )
    }

    func show(_ t: Transition) { say("handle \(t.handle): state \(t.from) → \(t.to) (VCX numbers)\(t.mustSave ? " (save it again)" : "")") }

    func show(_ wallet: Wallet, _ query: String) async throws {
        let handle = try await wallet.openSearch(type: "credential", queryJSON: query, optionsJSON: #"{"retrieveValue": false}"#)
        let page = try await wallet.searchNext(handle, count: 100)
        try await wallet.closeSearch(handle)
        say(page.json)
    }

    func step(_ title: String) { print("\n== \(title)") }

    /// A map as a JSON object, keys sorted (never Swift's dictionary description).
    static func json(_ map: [String: JSONValue]) -> JSONValue {
        .object(map.keys.sorted().map { ($0, map[$0]!) })
    }

    /// The demo's stand-in for the network: it prints what the SDK would send.
    struct DemoAgent: AriesProtocol {
        let say: @Sendable (String) -> Void

        func send(_ message: OutboundMessage) async throws {
            switch message {
            case .connectionRequest(_, let verkey): say("→ connection request from verkey \(verkey)")
            case .connectionAck: say("→ connection ack")
            case .credentialRequest(_, let offer, let binding):
                say("→ credential request for \(offer.credentialDefinitionID), bound to the master secret (\(binding.count)-byte binding)")
            case .credentialRejection: say("→ credential rejected")
            case .presentation(_, let referents):
                say("→ presentation using \(DemoCommand.json(referents.mapValues { .string($0) }).jsonText)")
            case .proofRejection: say("→ proof request rejected")
            }
        }
    }
    func say(_ line: String) { print("   \(line)") }
}
