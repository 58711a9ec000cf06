// Profiles beyond create and open: the schema a new profile gets, and restoring a backup into a
// new profile of a store (one transaction: the profile exists with every record, or not at all).

import CofferCrypto
import CofferSync
import Foundation
import GRDB

extension Wallet {
    /// Adds profile `name` to the catalogue and makes its tables, digest, sealed key and key
    /// check, inside the caller's write transaction. Registers the digest function under the
    /// new profile's keys on `db` (its triggers need it for the records written next).
    /// - Throws: ``WalletError/walletExists(path:)`` when the store has the profile already.
    static func makeProfile(
        _ db: Database, name: String, path: String, master: SecretKey, storeKey: SecretKey, kdf: KDFRecord
    ) throws -> (keys: WalletKeys, sealedKeys: Data) {
        if try ProfileCatalogue.resolve(db, name: name) != nil {
            throw WalletError.walletExists(path: ProfileCatalogue.label(path: path, profile: name))
        }
        let tables = try ProfileCatalogue.add(db, name: name)
        let keys = WalletKeys(master: master, tables: tables)
        try DigestFunction.register(on: db, keys: keys)
        try db.execute(sql: tables.creationSQL)
        let zero = [UInt8](repeating: 0, count: DigestState.accumulatorCount)
        try db.execute(
            sql: "INSERT INTO \(tables.digest)(id, value) VALUES (1, ?)",
            arguments: [DigestState.seal(zero, counter: 0, keys: keys)])
        let sealed = try sealMaster(master, storeKey: storeKey, tables: tables)
        try db.execute(
            sql: "INSERT INTO \(tables.meta)(name, value) VALUES ('format', ?), ('kdf', ?), ('keys', ?)",
            arguments: [Data(String(Schema.format).utf8), Data(kdf.jsonText.utf8), sealed])
        try recordKeyCheck(db, keys)
        try FileIntegrity.write(db, keys: keys)
        return (keys, sealed)
    }

    /// Restores the backup at `backupURL` as profile `profile` of the store at `walletURL`,
    /// protected by its own `key`; the store is made when there is none. The profile's tables
    /// and every record are written in one transaction: if anything fails (a wrong passphrase is
    /// found before anything is written; a damaged or truncated backup, a kill at any moment)
    /// the store is as it was, without the profile, and every other profile is untouched.
    /// `"default"` restores as ``importBackup(from:passphrase:into:key:configuration:progress:)``
    /// does (a new store file). The returned wallet is the profile, opened anew.
    /// - Throws: ``WalletError/walletExists(path:)`` when the store has the profile already,
    ///   ``WalletError/wrongKey(_:)`` for a wrong backup passphrase,
    ///   ``WalletError/corrupted(_:)`` for a damaged backup or a file that is not a Coffer store,
    ///   ``WalletError/invalidInput(_:)`` for a malformed profile name or a backup that cannot be read.
    public static func importBackup(
        from backupURL: URL, passphrase: String, into walletURL: URL, key: WalletKey, profile: String,
        configuration: Configuration = Configuration(),
        progress: (@Sendable (BackupProgress) -> Void)? = nil
    ) async throws -> Wallet {
        try ProfileCatalogue.validate(profile)
        if profile == ProfileCatalogue.defaultName {
            return try await importBackup(
                from: backupURL, passphrase: passphrase, into: walletURL, key: key, configuration: configuration, progress: progress)
        }
        let path = walletURL.path
        do { try DurableFile.refuseNonRegularFiles(walletURL) } catch {
            throw WalletError.storage(error.message, cause: StorageCause(error))
        }
        let backup = try openBackup(backupURL, passphrase: passphrase)
        defer { try? backup.handle.close() }
        let (storeKey, kdf) = try makeStoreKey(key, parameters: configuration.passphraseParameters)
        let lock = try await creationLock(for: walletURL)
        defer { lock.release() }
        let madeFile = !walletFileExists(path)
        if madeFile {
            removeWalletFiles(at: restoringURL(for: walletURL))
        } else {
            try checkIsWallet(path: path)
        }
        let opened = try openPool(path: path)
        let master = SecretKey.random()
        do {
            try await opened.pool.writeWithoutTransaction { db in
                try Self.beginBulk(db, cacheKiB: Self.importCacheKiB)
                defer { Self.endBulk(db, cacheKiB: Schema.writerCacheKiB) }
                try db.inTransaction {
                    let keys = try makeProfile(db, name: profile, path: path, master: master, storeKey: storeKey, kdf: kdf).keys
                    // Debug builds only: lets a test kill the restore with the profile made, uncommitted.
                    TestPause.at("restore-profile-building")
                    try Self.restoreRecords(of: backup, into: RecordStore(db: db, keys: keys, allowReserved: true), progress: progress)
                    return .commit
                }
            }
        } catch {
            closePool(opened)
            // A store this call made holds nothing when the transaction rolled back: no file is left.
            if madeFile { removeWalletFiles(at: walletURL) }
            throw mapError(error)
        }
        closePool(opened)
        lock.release()
        return try await open(at: walletURL, key: key, profile: profile, configuration: configuration)
    }
}
