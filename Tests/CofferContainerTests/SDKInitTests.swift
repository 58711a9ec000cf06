// Seed 000/001: the wallet is usable right after SDK initialisation with no configuration. The
// processes racing and the kill between the key and the wallet are in CofferCLITests
// (SDKInitCLITests), where real processes run `coffer sdk init`.

import Coffer
import Foundation
import Testing

/// Delivers nothing: the machines' messages are recorded only.
struct SilentAgent: AriesProtocol {
    let sent = Guarded<[OutboundMessage]>([])
    func send(_ message: OutboundMessage) async throws { sent.withLock { $0.append(message) } }
}

/// A small lock for the test's own state.
final class Guarded<Value: Sendable>: @unchecked Sendable {
    // `value` is guarded by `lock`.
    private let lock = NSLock()
    private var value: Value
    init(_ value: Value) { self.value = value }
    func withLock<R>(_ body: (inout Value) -> R) -> R {
        lock.lock()
        defer { lock.unlock() }
        return body(&value)
    }
}

@Suite("SDK initialisation: a zero-configuration wallet")
struct SDKInitTests {
    /// The secure store the container uses on Linux (the Keychain on Apple platforms).
    static func secure(_ folder: URL) -> any SecureStorage {
        PlatformSecureStorage.make(
            folder: CofferLocations(store: folder).secureFolder, service: CofferLocations(store: folder).keychainService)
    }

    static let offer = CredentialOffer(
        issuerDID: "V4SGRU86Z58d6TV7PBUe6f", schemaID: "V4SGRU86Z58d6TV7PBUe6f:2:degree:1.0",
        credentialDefinitionID: "V4SGRU86Z58d6TV7PBUe6f:3:CL:12:tag", attributes: ["name": "Alice"])

    @Test("first run: the default wallet is made with a 32-byte key in secure storage, the master secret and the agent's key")
    func firstRun() async throws {
        let folder = containerFolder()
        let sdk = try await CofferSDK.initialize(CofferLocations(store: folder))
        defer { sdk.close() }
        #expect(sdk.createdWallet)
        #expect(FileManager.default.fileExists(atPath: CofferLocations(store: folder).wallet.path))
        #expect(try await Self.secure(folder).load(CofferSDK.walletKeyItem)?.count == 32)
        #expect(try await sdk.wallet.hasMasterSecret())
        #expect(try await sdk.wallet.listKeys() == [WalletPublicKey(verkey: sdk.provisioning.agentVerkey, kind: .ed25519)])
        #expect(sdk.provisioning.createdMasterSecret && sdk.provisioning.createdAgentKey)
    }

    @Test("a credential request on a freshly initialised wallet succeeds (the master secret is there)")
    func credentialRequestAfterInit() async throws {
        let sdk = try await CofferSDK.initialize(CofferLocations(store: containerFolder()))
        defer { sdk.close() }
        let agent = SilentAgent()
        let machines = sdk.stateMachines(protocol: agent)
        let handle = machines.credentialCreate(offer: Self.offer)
        let sent = try await machines.credentialSendRequest(handle)
        #expect(sent.from == 3 && sent.to == 2)
        #expect(agent.sent.withLock { $0.count } == 1)
    }

    @Test("the agent's key signs, and only its public half is known")
    func agentKeySigns() async throws {
        let sdk = try await CofferSDK.initialize(CofferLocations(store: containerFolder()))
        defer { sdk.close() }
        let message = Data("to the cloud agent".utf8)
        let signature = try await sdk.wallet.sign(message, with: sdk.provisioning.agentVerkey)
        #expect(try Wallet.verify(signature: signature, message: message, verkey: sdk.provisioning.agentVerkey))
    }

    @Test("later runs open the same wallet with the stored key: records stay, nothing is made again")
    func laterRunOpens() async throws {
        let folder = containerFolder()
        let first = try await CofferSDK.initialize(CofferLocations(store: folder))
        try await first.wallet.add(type: "app", id: "a", value: "kept")
        let verkey = first.provisioning.agentVerkey
        let key = try await Self.secure(folder).load(CofferSDK.walletKeyItem)
        first.close()
        let second = try await CofferSDK.initialize(CofferLocations(store: folder))
        defer { second.close() }
        #expect(!second.createdWallet)
        #expect(second.provisioning == SDKProvisioning(agentVerkey: verkey, createdMasterSecret: false, createdAgentKey: false))
        #expect(try await second.wallet.get(type: "app", id: "a").value == "kept")
        #expect(try await Self.secure(folder).load(CofferSDK.walletKeyItem) == key)
        #expect(try await second.wallet.listKeys().count == 1)
    }

    @Test("reset removes the wallet and its key; the next initialisation is a first run with new keys")
    func resetRemovesAll() async throws {
        let folder = containerFolder()
        let first = try await CofferSDK.initialize(CofferLocations(store: folder))
        let verkey = first.provisioning.agentVerkey
        try await first.reset()
        #expect(!FileManager.default.fileExists(atPath: CofferLocations(store: folder).wallet.path))
        #expect(try await Self.secure(folder).load(CofferSDK.walletKeyItem) == nil)
        let again = try await CofferSDK.initialize(CofferLocations(store: folder))
        defer { again.close() }
        #expect(again.createdWallet && again.provisioning.agentVerkey != verkey)
    }

    @Test("eight initialisations at once in one process make one wallet and one key; all answer the same agent key")
    func concurrentInitialisations() async throws {
        let folder = containerFolder()
        // The container's first open is made once (its own races are tested elsewhere).
        try await CofferContainer.open(CofferLocations(store: folder)).close()
        let results = try await withThrowingTaskGroup(of: (Bool, String).self) { group in
            for _ in 0..<8 {
                group.addTask {
                    let sdk = try await CofferSDK.initialize(CofferLocations(store: folder))
                    defer { sdk.close() }
                    return (sdk.createdWallet, sdk.provisioning.agentVerkey)
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(results.filter(\.0).count == 1)
        #expect(Set(results.map(\.1)).count == 1)
        let sdk = try await CofferSDK.initialize(CofferLocations(store: folder))
        defer { sdk.close() }
        #expect(try await sdk.wallet.listKeys().count == 1)
    }

    @Test("a wallet whose key is not in secure storage is refused as keyLost and left as it was")
    func walletWithoutKey() async throws {
        let folder = containerFolder()
        try await CofferSDK.initialize(CofferLocations(store: folder)).close()
        try await Self.secure(folder).delete(CofferSDK.walletKeyItem)
        let wallet = CofferLocations(store: folder).wallet
        let before = try Data(contentsOf: wallet)
        await #expect(throws: SecureStorageError.self) { try await CofferSDK.initialize(CofferLocations(store: folder)).close() }
        #expect(try Data(contentsOf: wallet) == before)
        #expect(try await Self.secure(folder).load(CofferSDK.walletKeyItem) == nil)
    }

    @Test("a fresh install keeps the SDK key while its wallet is there, and clears it when the wallet is gone too")
    func freshInstallClearing() async throws {
        let folder = containerFolder()
        let locations = CofferLocations(store: folder)
        let first = try await CofferSDK.initialize(locations)
        try await first.container.secure.save(Data("t".utf8), for: "accessToken", accessibility: .afterFirstUnlock)
        let verkey = first.provisioning.agentVerkey
        first.close()
        // The app database alone is gone (a fresh install as the container sees it): the key stays
        // with its wallet, the other items go.
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: locations.appDatabase.path + suffix) }
        let second = try await CofferSDK.initialize(locations)
        #expect(!second.createdWallet && second.provisioning.agentVerkey == verkey)
        #expect(try await second.container.secure.names().isEmpty)
        #expect(try await Self.secure(folder).names() == [CofferSDK.walletKeyItem])
        second.close()
        for suffix in ["", "-wal", "-shm"] {
            try? FileManager.default.removeItem(atPath: locations.appDatabase.path + suffix)
            try? FileManager.default.removeItem(atPath: locations.wallet.path + suffix)
        }
        try await CofferContainer.open(locations).close()
        #expect(try await Self.secure(folder).names().isEmpty)
    }

    @Test("a wallet made by hand at the default place with the stored key is provisioned at initialisation")
    func handMadeWalletIsProvisioned() async throws {
        let folder = containerFolder()
        let locations = CofferLocations(store: folder)
        try await CofferContainer.open(locations).close()
        let key = WalletKey.generateRawKey()
        try await Self.secure(folder).save(key, for: CofferSDK.walletKeyItem, accessibility: .afterFirstUnlockThisDeviceOnly)
        let handMade = try await Wallet.create(at: locations.wallet, key: .raw(key))
        #expect(try await handMade.hasMasterSecret() == false)
        try handMade.close()
        let sdk = try await CofferSDK.initialize(locations)
        defer { sdk.close() }
        #expect(!sdk.createdWallet && sdk.provisioning.createdMasterSecret && sdk.provisioning.createdAgentKey)
    }

    @Test("an encrypted backup carries the provisioning: the restored wallet has the master secret and the same agent key")
    func backupCarriesProvisioning() async throws {
        let folder = containerFolder()
        let sdk = try await CofferSDK.initialize(CofferLocations(store: folder))
        defer { sdk.close() }
        let backup = folder.appendingPathComponent("sdk.backup")
        _ = try await sdk.wallet.exportBackup(to: backup, passphrase: "backup passphrase")
        let restored = try await Wallet.importBackup(
            from: backup, passphrase: "backup passphrase", into: folder.appendingPathComponent("restored.sqlite"),
            key: .raw(WalletKey.generateRawKey()))
        defer { try? restored.close() }
        #expect(try await restored.agentVerkey() == sdk.provisioning.agentVerkey)
        #expect(try await restored.hasMasterSecret())
        let again = try await restored.provisionForSDK()
        #expect(!again.createdAgentKey && !again.createdMasterSecret)
        let message = Data("m".utf8)
        let signature = try await restored.sign(message, with: sdk.provisioning.agentVerkey)
        #expect(try Wallet.verify(signature: signature, message: message, verkey: sdk.provisioning.agentVerkey))
    }

    @Test("the container closes the SDK's wallet")
    func containerClosesWallet() async throws {
        let sdk = try await CofferSDK.initialize(CofferLocations(store: containerFolder()))
        sdk.close()
        await #expect(throws: WalletError.self) { try await sdk.wallet.add(type: "t", id: "x", value: "v") }
    }
}

@Suite("SDK initialisation: the wallet key is out of the app's reach")
struct SDKKeyReservedTests {
    @Test("the container's secure storage refuses to read, write or delete the SDK wallet's key, and does not list it")
    func keyRefused() async throws {
        let folder = containerFolder()
        let sdk = try await CofferSDK.initialize(CofferLocations(store: folder))
        defer { sdk.close() }
        let secure = sdk.container.secure
        await #expect(throws: SecureStorageError.self) { try await secure.load(CofferSDK.walletKeyItem) }
        await #expect(throws: SecureStorageError.self) {
            try await secure.save(Data(count: 32), for: CofferSDK.walletKeyItem, accessibility: .afterFirstUnlock)
        }
        await #expect(throws: SecureStorageError.self) { try await secure.delete(CofferSDK.walletKeyItem) }
        #expect(try await !secure.names().contains(CofferSDK.walletKeyItem))
        #expect(try await SDKInitTests.secure(folder).load(CofferSDK.walletKeyItem)?.count == 32)
    }

    @Test("deleteAll at logout removes the app's items and keeps the SDK wallet's key: the next initialisation opens the wallet")
    func deleteAllKeepsKey() async throws {
        let folder = containerFolder()
        let first = try await CofferSDK.initialize(CofferLocations(store: folder))
        try await first.container.secure.save(Data([1]), for: "token", accessibility: .afterFirstUnlock)
        try await first.container.secure.deleteAll()
        #expect(try await first.container.secure.names().isEmpty)
        first.close()
        let again = try await CofferSDK.initialize(CofferLocations(store: folder))
        defer { again.close() }
        #expect(!again.createdWallet)
        #expect(again.provisioning.agentVerkey == first.provisioning.agentVerkey)
    }
}
