// Key rotation: a new wallet key, with every record re-sealed and re-blinded in one transaction.

import CofferCrypto
import CofferSync
import Foundation
import GRDB
import Logging

extension Wallet {
    /// Replaces the key that protects the wallet and, with `rotatingKey`, the wallet's own key
    /// as well.
    ///
    /// Without rotation (the default) only the sealed wallet key is rewritten: fast at any size,
    /// but whoever holds the old passphrase and any old copy of the file (or of its sealed key)
    /// can still open records written later. With `rotatingKey: true` a new random wallet key
    /// replaces the old one and every record is opened, re-sealed and re-indexed under it in one
    /// transaction (all or nothing, also if the process is killed), for recovery after a
    /// suspected compromise: afterwards nothing in the file opens with the old wallet key. It
    /// reads one record at a time. Other calls on this wallet wait while it runs; open searches
    /// and record sequences end (their handles become invalid). Writers elsewhere — other
    /// processes, or another `Wallet` opened on the file — that opened it before the rotation
    /// committed write nothing afterwards: their next write throws ``WalletError/wrongKey(_:)``
    /// saying the key was rotated (open the wallet again with its current key), so no write that
    /// returned is lost.
    /// - Parameters:
    ///   - newKey: the key or passphrase that protects the wallet from now on.
    ///   - rotatingKey: whether to replace the wallet key and re-seal every record.
    ///   - progress: called with records re-sealed so far and the total (rotation only).
    public func rekey(
        to newKey: WalletKey, rotatingKey: Bool,
        progress: (@Sendable (BackupProgress) -> Void)? = nil
    ) async throws {
        guard rotatingKey else { return try await rekey(to: newKey) }
        let (storeKey, kdf) = try Self.makeStoreKey(newKey, parameters: configuration.passphraseParameters)
        await gate.close()
        let old = gate.current
        let new = WalletKeys(master: SecretKey.random(), tables: old.tables)
        var rotated = false
        defer {
            gate.open(with: rotated ? new : nil)
            if rotated { old.clearCaches() }
        }
        searches.closeAll()
        let sealedMaster = try Self.sealMaster(new.master, storeKey: storeKey, tables: new.tables)
        let seen = sealedKeysSeen
        let total: Int
        do {
            total = try await pool.writeWithoutTransaction { db -> Int in
                // The digest triggers hash with the new key from here on; back to the old one if
                // the transaction does not commit.
                try DigestFunction.register(on: db, keys: new)
                var count = 0
                do {
                    try db.inTransaction {
                        try Self.checkKeys(db, old)
                        try Self.checkSealedKeysUnchanged(db, old, seen: seen)
                        count = try Self.rotateRecords(db, from: old, to: new, progress: progress)
                        try db.execute(
                            sql: "UPDATE \(new.tables.meta) SET value = ? WHERE name = 'kdf'", arguments: [Data(kdf.jsonText.utf8)])
                        try db.execute(sql: "UPDATE \(new.tables.meta) SET value = ? WHERE name = 'keys'", arguments: [sealedMaster])
                        try Self.recordKeyCheck(db, new)
                        try FileIntegrity.write(db, keys: new)
                        return .commit
                    }
                } catch {
                    try? DigestFunction.register(on: db, keys: old)
                    throw error
                }
                return count
            }
        } catch { throw Self.mapError(error) }
        seen.withLock { $0 = sealedMaster }
        rotated = true
        await dropOldKeyMaterial()
        logger.info("rotated the wallet key and re-sealed \(total) records", metadata: ["kdf": "\(kdf.method)"])
    }

    /// Inside a write transaction (IMMEDIATE, so no other writer commits until it ends):
    /// refuses to write with `keys` when the file names another wallet key, that is, when a key
    /// rotation in any process (or another open ``Wallet`` on the file) committed since these
    /// keys were read. Writing with them would seal records no one can open under the current
    /// key. A file without a key check (made before it existed, and never rotated since) passes.
    static func checkKeys(_ db: Database, _ keys: WalletKeys) throws {
        let statement = try db.cachedStatement(sql: "SELECT value FROM \(keys.tables.meta) WHERE name = 'keycheck'")
        guard let stored = try Data.fetchOne(statement), stored != keys.keyCheck else { return }
        if let removed = removedProfile(db, keys.tables) { throw removed }
        throw WalletError.wrongKey(
            "the wallet's key was rotated (by another process, or another open Wallet on this file) after this one was opened, so its key no longer opens the records; nothing was written. Open the wallet again with its current key and retry"
        )
    }

    /// Inside a rekey's or rotation's write transaction: refuses to replace the sealed wallet
    /// key when it is no longer the one this wallet last saw (`seen`), that is, when a rekey in
    /// another process (or another open ``Wallet`` on the file) set another key since. The
    /// last of two rekeys would otherwise win silently, and the key the first one reported as
    /// set would open nothing. Nothing to compare with (`seen` holds nil) passes.
    static func checkSealedKeysUnchanged(_ db: Database, _ keys: WalletKeys, seen: Locked<Data?>) throws {
        guard let expected = seen.withLock({ $0 }) else { return }
        let stored = try Data.fetchOne(db, sql: "SELECT value FROM \(keys.tables.meta) WHERE name = 'keys'")
        guard stored != expected else { return }
        throw WalletError.wrongKey(
            "the wallet's key was changed (by a rekey in another process, or another open Wallet on this file) after this one was opened; nothing was changed. Open the wallet again with its current key and retry"
        )
    }

    /// Stores the key check of `keys` (see ``checkKeys(_:_:)``), in the caller's transaction.
    static func recordKeyCheck(_ db: Database, _ keys: WalletKeys) throws {
        try db.execute(
            sql:
                "INSERT INTO \(keys.tables.meta)(name, value) VALUES ('keycheck', ?) ON CONFLICT(name) DO UPDATE SET value = excluded.value",
            arguments: [keys.keyCheck])
    }

    /// Re-seals and re-indexes every row under `new`, then rebuilds the records' version digest
    /// under it; returns the number of records. Runs inside the caller's transaction. The old
    /// digest is checked first: its state must verify under `old` and match the rows as they
    /// were read, or nothing is rotated (a rotation never blesses rows someone changed).
    static func rotateRecords(
        _ db: Database, from old: WalletKeys, to new: WalletKeys,
        progress: (@Sendable (BackupProgress) -> Void)?
    ) throws -> Int {
        let total = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM \(new.tables.items)") ?? 0
        let before = try DigestState.read(db, keys: old)
        // The triggers fold each re-sealed row in under `new` from here; the state they start
        // from is rebuilt below, so it only has to verify.
        try db.execute(
            sql: "UPDATE \(new.tables.digest) SET value = ? WHERE id = 1",
            arguments: [DigestState.seal(before.accumulator, counter: before.counter, keys: new)])
        var oldAccumulator = [UInt8](repeating: 0, count: DigestState.accumulatorCount)
        let names = try typeNames(db, keys: old)
        try db.execute(sql: "DELETE FROM \(new.tables.tagMulti)")
        let store = RecordStore(db: db, keys: new, allowReserved: true)
        let select = try db.makeStatement(
            sql: "SELECT id, type, name, value, expiry FROM \(new.tables.items) WHERE id > ? ORDER BY id LIMIT 256")
        let update = try db.makeStatement(sql: "UPDATE \(new.tables.items) SET type = ?, name = ?, value = ? WHERE id = ?")
        let dropTags = try db.makeStatement(sql: "DELETE FROM \(new.tables.tags) WHERE item = ?")
        var after = Int64.min
        var done = 0
        while true {
            let rows = try Row.fetchAll(select, arguments: [after])
            guard let last = rows.last else { break }
            after = last[0]
            for row in rows {
                // The same reading of a row as every other walk over the records (SQLiteRows).
                guard let item = SQLiteRows.walked(row) else {
                    throw WalletError.corrupted("row \(row[0] as DatabaseValue) has columns of the wrong kind; run the wallet check")
                }
                let (rowid, typeColumn, idBlind, sealed, expiry) = (item.rowid, item.type, item.name, item.sealed, item.expiry)
                let rowDigest = old.rowDigestV4(rowid: rowid, type: typeColumn, expiry: expiry, idBlind: idBlind, sealed: sealed)
                for i in 0..<DigestState.accumulatorCount { oldAccumulator[i] ^= rowDigest[i] }
                // A reserved secret's value is carried as bytes in guarded memory, never a `String`.
                var contents = try RecordCodec.open(
                    sealed, typeBlind: BlindColumn.blind(typeColumn), idBlind: idBlind, expiry: expiry, keys: old,
                    value: .keepingSecrets(of: names[typeColumn]))
                guard let type = contents.type ?? names[typeColumn] else {
                    throw WalletError.invalidInput(
                        "record \(WalletError.quote(contents.id)) is in the first box format, which did not keep its type, and no other record tells it; update it once, then rotate"
                    )
                }
                contents.type = type
                let tb = new.typeBlind(type)
                let ib = new.idBlind(typeBlind: tb, id: contents.id)
                let resealed = RecordCodec.seal(contents, typeBlind: tb, idBlind: ib, expiry: expiry, keys: new)
                try update.execute(arguments: [BlindColumn.value(tb), ib, resealed, rowid])
                try dropTags.execute(arguments: [rowid])
                try store.insertTags(item: rowid, typeBlind: tb, tags: contents.tags)
                done += 1
                if done % 1_000 == 0 { progress?(BackupProgress(done: done, total: total)) }
            }
        }
        guard oldAccumulator == before.accumulator else {
            throw WalletError.corrupted(
                "the records differ from the versions this wallet last wrote (the digest does not match them); nothing was rotated (run the wallet check)"
            )
        }
        // The triggers mixed old rows into the digest under the new key: compute it afresh.
        try db.execute(
            sql: "UPDATE \(new.tables.digest) SET value = ? WHERE id = 1",
            arguments: [DigestState.seal(try DigestState.accumulate(db, keys: new), counter: before.counter &+ 1, keys: new)])
        progress?(BackupProgress(done: done, total: total))
        return done
    }

    /// The type of every blind type in the file, for boxes of the first format (which did not
    /// seal their type): learnt from another record of the same blind type, or from the
    /// wallet's reserved types or from `candidates`. A blind type none of them names is missing
    /// from the result.
    static func typeNames(_ db: Database, keys: WalletKeys, candidates: [String] = []) throws -> [Int64: String] {
        var names = [Int64: String]()
        for reserved in [
            SecretTypes.key, SecretTypes.masterSecret, SecretTypes.credentialSignature, SecretTypes.credential, SecretTypes.agentKey,
        ] + candidates {
            names[BlindColumn.value(keys.typeBlind(reserved))] = reserved
        }
        // Only blind types some first-format box uses need a name: most wallets have none, and
        // this reads each type's rows only until one of a later format names it.
        for typeColumn in try Int64.fetchAll(db, sql: "SELECT DISTINCT type FROM \(keys.tables.items)") where names[typeColumn] == nil {
            let rows = try Row.fetchCursor(
                db, sql: "SELECT name, value, expiry FROM \(keys.tables.items) WHERE type = ? ORDER BY id", arguments: [typeColumn])
            while let row = try rows.next() {
                guard let idBlind = Data.fromDatabaseValue(row[0]), let sealed = Data.fromDatabaseValue(row[1]) else { continue }
                if let type = try? RecordCodec.open(
                    sealed, typeBlind: BlindColumn.blind(typeColumn), idBlind: idBlind, expiry: row[2], keys: keys, value: .skipped
                ).type {
                    names[typeColumn] = type
                    break
                }
            }
        }
        return names
    }
}
