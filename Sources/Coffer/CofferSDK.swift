// The SDK's zero-configuration wallet: one call opens the app's stores and the default wallet,
// making the wallet, its key and its SDK provisioning on first run.

import CofferSync
import Foundation
import Logging

/// The SDK initialised: the app's container and its default wallet, usable at once with no
/// configuration (seed 000/001: "It will be available after SDK initialization").
///
/// ``initialize(_:secureStorage:keychainService:walletConfiguration:)`` on first run creates the
/// default wallet (`wallet.sqlite` in the store folder) with a random 32-byte key that it keeps in
/// secure storage (the Keychain on Apple platforms, the sealed files of `secure/` elsewhere; the
/// key is never printed, logged or returned), and provisions it for the SDK: the credential master
/// secret and the cloud agent's key pair, made once (`Wallet.provisionForSDK()`). Later runs
/// open it with the stored key. ``reset()`` (or ``CofferContainer/resetBlocking()``) removes all of
/// it: the wallet file and the key. The explicit `Wallet.create(at:key:configuration:)` and
/// `Wallet.open(at:key:configuration:)` stay for apps that manage their own key.
///
/// Safe to call from many tasks and processes at once: one inter-process lock in the store
/// folder (`.sdk.lock`, removed when released) makes them take turns, so one wallet and one key
/// are made and the others open them. Safe against a kill at any moment: the key is saved before
/// the wallet is made, and the wallet is built beside its place and moved in whole, so a run
/// killed between the two finds the key and makes the wallet with it.
public final class CofferSDK: Sendable {
    /// The app's stores (settings, collections, media cache, secure storage).
    public let container: CofferContainer
    /// The default wallet, provisioned for the SDK; closed with the container.
    public let wallet: Wallet
    /// The cloud agent's key and what this initialisation made.
    public let provisioning: SDKProvisioning
    /// Whether this call created the wallet (first run, or the first after a reset).
    public let createdWallet: Bool

    /// The name of the secure item holding the default wallet's key. Reserved: the CLI's
    /// `secure` commands refuse it, and a fresh install keeps it only while the wallet is there.
    public static let walletKeyItem = "coffer.sdk.wallet-key"

    /// The key is kept for this device only: on Apple platforms it never travels in a device
    /// backup; elsewhere its sealed file in the store's `secure` folder travels with a copy of
    /// that folder, so protect such a copy like the key (a wallet
    /// restored onto another device without its key is refused as `SecureStorageError.keyLost(_:)`;
    /// move wallets with an encrypted backup instead).
    static let keyAccessibility = SecureAccessibility.afterFirstUnlockThisDeviceOnly

    init(container: CofferContainer, wallet: Wallet, provisioning: SDKProvisioning, createdWallet: Bool) {
        self.container = container
        self.wallet = wallet
        self.provisioning = provisioning
        self.createdWallet = createdWallet
    }

    /// Opens the app's container at `locations` and its default wallet, creating and provisioning
    /// the wallet and its key on first run (see the type).
    /// - Parameters:
    ///   - locations: the store's folders; by default the platform's.
    ///   - secureStorage: where the wallet's key is kept; by default the platform's secure storage
    ///     (as ``CofferContainer/openBlocking(_:secureStorage:keychainService:cacheByteLimits:appMigrations:dataMigrations:)``).
    ///   - keychainService: the Keychain service of the default secure store.
    ///   - walletConfiguration: the wallet's settings.
    /// - Throws: the container's open errors; `SecureStorageError.keyLost(_:)` when the wallet
    ///   exists but its key is not in secure storage (nothing is replaced: restore the key, or reset);
    ///   `WalletError` when the wallet does not open with the stored key or cannot be made.
    public static func initialize(
        _ locations: CofferLocations = .platformDefault(), secureStorage: (any SecureStorage)? = nil, keychainService: String? = nil,
        walletConfiguration: Wallet.Configuration = Wallet.Configuration()
    ) async throws -> CofferSDK {
        let container = try await CofferContainer.open(locations, secureStorage: secureStorage, keychainService: keychainService)
        do { return try await container.initializeSDK(walletConfiguration: walletConfiguration) } catch {
            container.close()
            throw error
        }
    }

    /// State machines over the default wallet, sending through `messenger` (the app's agent).
    public func stateMachines(protocol messenger: any AriesProtocol, storesCredentials: Bool = true) -> StateMachines {
        StateMachines(wallet: wallet, protocol: messenger, storesCredentials: storesCredentials)
    }

    /// Closes the wallet and the container. Idempotent.
    public func close() { container.close() }

    /// Full reset (``CofferContainer/resetBlocking()``): the wallet, its key in secure storage and
    /// every other store are removed; the next ``initialize(_:secureStorage:keychainService:walletConfiguration:)``
    /// is a first run.
    public func reset() async throws { try await container.reset() }
}

extension CofferContainer {
    /// The path of the lock SDK initialisation (and a fresh install's clearing of secure items)
    /// holds: `.sdk.lock` in the data folder.
    var sdkLockPath: String { locations.data.appendingPathComponent(".sdk.lock").path }

    /// The container-level form of ``CofferSDK/initialize(_:secureStorage:keychainService:walletConfiguration:)``:
    /// opens this container's default wallet, creating it, its key in ``secure`` and its SDK
    /// provisioning on first run. The wallet is closed with the container. ``CofferSDK/close()``
    /// on the result closes this container.
    public func initializeSDK(walletConfiguration: Wallet.Configuration = Wallet.Configuration()) async throws -> CofferSDK {
        TestPause.at("sdk-starting") // debug builds only: lets tests line processes up before the lock
        let held: ProcessLock.Held
        do { held = try await ProcessLock.acquire(at: sdkLockPath, removeWhenDone: true) } catch {
            throw ContainerError.storage(error.message, cause: StorageCause(error))
        }
        defer { held.release() }
        let walletURL = locations.wallet
        let walletExists = Wallet.walletFileExists(walletURL.path)
        var stored = try await sdkKeyStore.load(CofferSDK.walletKeyItem)
        if let data = stored, data.count != 32 {
            throw SecureStorageError.corrupted(
                "the secure item \(CofferSDK.walletKeyItem) holds \(data.count) bytes, not a 32-byte wallet key; reset the store to start over"
            )
        }
        if stored == nil {
            if walletExists {
                throw SecureStorageError.keyLost(
                    "the default wallet \(walletURL.path) exists but its key (secure item \(CofferSDK.walletKeyItem)) is not in secure storage; no new key is made over it: restore the key or a backup, or reset the store"
                )
            }
            // First run: the key is saved before the wallet is made, so a kill between the two
            // leaves a key and no wallet, and the next run makes the wallet with that key.
            let fresh = WalletKey.generateRawKey()
            try await sdkKeyStore.save(fresh, for: CofferSDK.walletKeyItem, accessibility: CofferSDK.keyAccessibility)
            TestPause.at("sdk-key-saved") // debug builds only: lets tests kill between the key and the wallet
            stored = fresh
        }
        let key = WalletKey.raw(stored!)
        let wallet: Wallet
        if walletExists {
            wallet = try await Wallet.open(at: walletURL, key: key, configuration: walletConfiguration)
        } else {
            wallet = try await Wallet.createProvisioned(at: walletURL, key: key, configuration: walletConfiguration)
        }
        do {
            // The key must still be the stored one (nothing removed it while the wallet opened).
            guard try await sdkKeyStore.load(CofferSDK.walletKeyItem) == stored else {
                throw SecureStorageError.keyLost(
                    "the secure item \(CofferSDK.walletKeyItem) was removed or replaced while the default wallet \(walletURL.path) was opened; initialise again (or reset the store)"
                )
            }
            // A wallet made by hand (or by an older release) at this place is provisioned now.
            var provisioning = try await wallet.provisionForSDK()
            if !walletExists {
                // Made with the wallet, before it was moved into place.
                provisioning = SDKProvisioning(agentVerkey: provisioning.agentVerkey, createdMasterSecret: true, createdAgentKey: true)
            }
            try adopt(wallet)
            return CofferSDK(container: self, wallet: wallet, provisioning: provisioning, createdWallet: !walletExists)
        } catch {
            try? wallet.close()
            throw error
        }
    }
}
