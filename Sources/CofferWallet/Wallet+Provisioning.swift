// Provisioning a wallet for the SDK: the credential master secret and the cloud agent's key,
// made together once, and a wallet created already provisioned (built beside its place and
// moved in whole, so a kill never leaves a wallet without them).

import CofferCrypto
import CofferSync
import Foundation

/// What provisioning a wallet for the SDK left in it.
public struct SDKProvisioning: Sendable, Hashable {
    /// The public key (Base58 Ed25519 verkey) of the key pair made for the cloud agent: messages
    /// to the agent are encrypted with it. Its private half never leaves the wallet.
    public let agentVerkey: String
    /// Whether this call made the credential master secret (false: it was there).
    public let createdMasterSecret: Bool
    /// Whether this call made the agent's key (false: it was there).
    public let createdAgentKey: Bool

    /// A provisioning's result.
    public init(agentVerkey: String, createdMasterSecret: Bool, createdAgentKey: Bool) {
        self.agentVerkey = agentVerkey
        self.createdMasterSecret = createdMasterSecret
        self.createdAgentKey = createdAgentKey
    }
}

extension SecretTypes {
    /// The record naming the agent's provisioning key (its value is the verkey).
    static let agentKey = "__coffer_agent_key"
    static let agentKeyID = "default"
}

extension Wallet {
    /// Provisions the wallet for the SDK, once: the credential master secret (as
    /// ``initializeMasterSecret()``) and an Ed25519 key pair for the cloud agent, made in one
    /// transaction when missing and never replaced. Calling it again changes nothing and answers
    /// the same verkey.
    @discardableResult
    public func provisionForSDK() async throws -> SDKProvisioning {
        if let verkey = try await agentVerkey(), try await hasMasterSecret() {
            return SDKProvisioning(agentVerkey: verkey, createdMasterSecret: false, createdAgentKey: false)
        }
        let secret = SecretKey.random(byteCount: 32)
        let opened = try OpenedKey(kind: .ed25519, secret: secret)
        guard case .ed25519(let pair, _) = opened else { throw WalletError.invalidInput("an Ed25519 key did not open as one") }
        let newVerkey = Base58.encode(pair.publicKey)
        let noValue = RecordOptions(retrieveValue: false, retrieveTags: false)
        let result = try await secretWrite { store -> SDKProvisioning in
            var createdMaster = false
            if try store.get(type: SecretTypes.masterSecret, id: SecretTypes.masterSecretID, options: noValue) == nil {
                try store.add(
                    type: SecretTypes.masterSecret, id: SecretTypes.masterSecretID, value: "", tags: [:], expiresAt: nil,
                    secret: SecretKey.random(byteCount: 32))
                createdMaster = true
            }
            if let existing = try store.get(
                type: SecretTypes.agentKey, id: SecretTypes.agentKeyID, options: RecordOptions(retrieveValue: true, retrieveTags: false)
            )?.value {
                return SDKProvisioning(agentVerkey: existing, createdMasterSecret: createdMaster, createdAgentKey: false)
            }
            try store.add(
                type: SecretTypes.key, id: newVerkey, value: "", tags: ["kind": .string(WalletKeyKind.ed25519.rawValue)], expiresAt: nil,
                secret: secret)
            try store.add(type: SecretTypes.agentKey, id: SecretTypes.agentKeyID, value: newVerkey, tags: [:], expiresAt: nil)
            return SDKProvisioning(agentVerkey: newVerkey, createdMasterSecret: createdMaster, createdAgentKey: true)
        }
        if result.createdAgentKey { heldKeys.put(newVerkey, opened) }
        return result
    }

    /// The verkey of the cloud agent's key ``provisionForSDK()`` made; nil before provisioning.
    public func agentVerkey() async throws -> String? {
        try await secretRead { store in
            try store.get(
                type: SecretTypes.agentKey, id: SecretTypes.agentKeyID, options: RecordOptions(retrieveValue: true, retrieveTags: false))?
                .value
        }
    }

    /// Creates a new wallet at `url` already provisioned for the SDK (see ``provisionForSDK()``).
    /// It is built beside its place (`.NAME.restoring`, as a restore builds), closed, flushed and
    /// linked into place: a process killed at any moment leaves either no wallet at `url` or a
    /// provisioned one, never a half-made file; the next create clears what was left. Creates and
    /// restores of one wallet run one at a time, in any process.
    /// - Throws: ``WalletError/walletExists(path:)`` when a wallet is at `url` (also one another
    ///   process made meanwhile), and ``create(at:key:configuration:)``'s errors.
    public static func createProvisioned(at url: URL, key: WalletKey, configuration: Configuration = Configuration()) async throws
        -> Wallet
    {
        do { try DurableFile.refuseNonRegularFiles(url) } catch { throw WalletError.storage(error.message, cause: StorageCause(error)) }
        if walletFileExists(url.path) { throw WalletError.walletExists(path: url.path) }
        let lock = try await creationLock(for: url)
        defer { lock.release() }
        if walletFileExists(url.path) { throw WalletError.walletExists(path: url.path) }
        let temporary = restoringURL(for: url)
        removeWalletFiles(at: temporary)
        do {
            let wallet = try await Wallet.create(at: temporary, key: key, configuration: configuration, schemaUpTo: nil, locking: false)
            TestPause.at("provisioned-building") // debug builds only: lets tests kill a create whose temporary exists
            do {
                try await wallet.provisionForSDK()
                // Closing the last connection checkpoints the WAL into the main file and removes it.
                try wallet.close()
            } catch {
                try? wallet.close()
                throw error
            }
            try moveRestoredWallet(from: temporary, to: url)
        } catch {
            removeWalletFiles(at: temporary)
            throw translate(error)
        }
        lock.release()
        return try await Wallet.open(at: url, key: key, configuration: configuration)
    }
}
