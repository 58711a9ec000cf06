// Reading a libindy (Indy SDK / Evernym Mobile SDK) SQLite wallet.
//
// The format, as libindy's `indy-wallet` crate writes it:
// - `metadata(id, value)`: one row, JSON `{"keys": [bytes], "master_key_salt": [bytes]?}`. `keys`
//   is nonce ‖ ChaCha20-Poly1305 (IETF) of a MessagePack array of seven 32-byte keys (type, name,
//   value, item HMAC, tag name, tag value, tag HMAC) under the master key: the base58 raw key, or
//   Argon2i (MODERATE or INTERACTIVE) of the passphrase with the first 16 bytes of the salt.
// - `items(id, type, name, value, key)`: type and name sealed under the type and name keys with a
//   nonce taken from an HMAC of the plaintext (so equal plaintexts seal alike); `key` is the
//   record's own value key sealed under the value key; `value` is sealed under that record key.
// - `tags_encrypted(name, value, item_id)`: both sealed (tag name key, tag value key).
// - `tags_plaintext(name, value, item_id)`: the name sealed without its leading `~`, the value
//   as text. Coffer gives such a tag its `~` back: it is a plaintext tag here too.

import CofferCrypto
import CofferSync
import Foundation
import GRDB

/// How a libindy wallet's master key comes from the key given to it (libindy's
/// `key_derivation_method`).
public enum IndyKeyDerivation: String, Sendable, CaseIterable {
    /// The key is the master key itself, base58 (32 bytes): libindy's `RAW`.
    case raw
    /// Argon2i MODERATE of the passphrase: libindy's `ARGON2I_MOD` (its default).
    case argon2iModerate = "argon2i-mod"
    /// Argon2i INTERACTIVE of the passphrase: libindy's `ARGON2I_INT`.
    case argon2iInteractive = "argon2i-int"
}

struct IndyWalletSource: ForeignSource {
    let queue: DatabaseQueue
    let companions: ForeignCompanions
    let label: String
    /// The metadata row as read at open (the import checks it again in its snapshot).
    let metadata: Data
    let typeKey: SecretKey
    let nameKey: SecretKey
    let valueKey: SecretKey
    let tagNameKey: SecretKey
    let tagValueKey: SecretKey

    static let format = "libindy wallet"
    static let maxMetadataBytes = 64 * 1024

    /// Opens the wallet at `url` read-only and unlocks its keys with `key`.
    /// - Throws: ``WalletError/invalidInput(_:)`` when it is not a libindy wallet,
    ///   ``WalletError/wrongKey(_:)`` when the key does not open it (or is no key of that kind),
    ///   ``WalletError/corrupted(_:)`` when its metadata is damaged.
    static func open(at url: URL, key: String, derivation: IndyKeyDerivation) throws -> IndyWalletSource {
        let (queue, companions) = try ForeignDatabase.open(url, format: format)
        return try ForeignDatabase.closing(queue, companions) {
            try unlock(queue, companions, url: url, key: key, derivation: derivation)
        }
    }

    private static func unlock(
        _ queue: DatabaseQueue, _ companions: ForeignCompanions, url: URL, key: String, derivation: IndyKeyDerivation
    ) throws -> IndyWalletSource {
        let label = "the \(format) at \(url.path)"
        let metadata: Data = try ForeignDatabase.reading(label) {
            try queue.read { db in
                let tables = try ForeignDatabase.tables(db)
                let needed: Set = ["metadata", "items", "tags_encrypted", "tags_plaintext"]
                guard needed.isSubset(of: tables) else {
                    let missing = needed.subtracting(tables).sorted().joined(separator: ", ")
                    throw WalletError.invalidInput(
                        "\(url.path) is not a \(format): it has no table \(missing)"
                            + (tables.contains("profiles") ? " (it looks like an Askar store: use import-askar)" : ""))
                }
                return try metadataRow(db, label: label)
            }
        }
        let (sealedKeys, salt) = try parseMetadata(metadata, label: label)
        let master: SecretKey
        switch (derivation, salt) {
        case (.raw, nil):
            guard var bytes = Base58.decode(key.trimmingCharacters(in: .whitespacesAndNewlines)) else {
                throw WalletError.wrongKey(
                    "the source key is not a raw key (base58 of 32 bytes), as --source-kdf raw expects; for a passphrase give --source-kdf argon2i-mod or argon2i-int"
                )
            }
            defer { ForeignDatabase.wipe(&bytes) }
            guard bytes.count == 32 else {
                throw WalletError.wrongKey(
                    "the source key is not a raw key (base58 of 32 bytes), as --source-kdf raw expects; for a passphrase give --source-kdf argon2i-mod or argon2i-int"
                )
            }
            master = try SecretKey(copying: bytes)
        case (.raw, .some):
            throw WalletError.wrongKey(
                "\(label) was made with a passphrase (it keeps an Argon2i salt): give --source-kdf argon2i-mod or argon2i-int")
        case (.argon2iModerate, nil), (.argon2iInteractive, nil):
            throw WalletError.wrongKey("\(label) was made with a raw key (it keeps no Argon2i salt): give --source-kdf raw")
        case (.argon2iModerate, let salt?), (.argon2iInteractive, let salt?):
            let level: Argon2iLevel = derivation == .argon2iModerate ? .moderate : .interactive
            do { master = try Argon2i.deriveKey(passphrase: key, salt: salt, level: level) } catch {
                throw WalletError.storage("\(error)", cause: StorageCause(error))
            }
        }
        guard var packed = ForeignDatabase.open(sealedKeys, key: master) else {
            throw WalletError.wrongKey("the source key does not open \(label) (nothing was imported)")
        }
        defer { ForeignDatabase.wipe(&packed) }
        var keys: [[UInt8]]
        do { keys = try IndyKeysMessagePack.decode(packed) } catch {
            throw WalletError.corrupted("\(label): its keys opened but \(error)")
        }
        defer { for i in keys.indices { SecureMemory.wipe(&keys[i]) } }
        return IndyWalletSource(
            queue: queue, companions: companions, label: label, metadata: metadata, typeKey: try SecretKey(copying: keys[0]),
            nameKey: try SecretKey(copying: keys[1]), valueKey: try SecretKey(copying: keys[2]),
            tagNameKey: try SecretKey(copying: keys[4]), tagValueKey: try SecretKey(copying: keys[5]))
    }

    static func metadataRow(_ db: Database, label: String) throws -> Data {
        let rows = try Row.fetchAll(db, sql: "SELECT \(ForeignDatabase.capped("value", maxMetadataBytes)) FROM metadata LIMIT 2")
        guard rows.count == 1 else {
            throw WalletError.corrupted("\(label): its metadata table has \(rows.isEmpty ? "no row" : "more than one row"), not one")
        }
        guard let data = ForeignDatabase.field(rows[0], 0, limit: maxMetadataBytes).data else {
            throw WalletError.corrupted("\(label): its metadata row is missing or longer than \(maxMetadataBytes) bytes")
        }
        return data
    }

    /// The sealed keys and the salt (16 bytes, or nil for a raw-key wallet) from the metadata JSON.
    static func parseMetadata(_ data: Data, label: String) throws -> (Data, Data?) {
        func damaged(_ what: String) -> WalletError { .corrupted("\(label): its metadata row \(what)") }
        guard let text = ForeignDatabase.text(data), case .object(let members)? = try? JSONValue.parse(text) else {
            throw damaged("is not a JSON object")
        }
        func bytes(_ name: String) throws -> Data? {
            guard let value = members.last(where: { $0.0 == name })?.1 else { return nil }
            guard case .array(let items) = value else { throw damaged("has \"\(name)\" that is not an array of bytes") }
            var out = Data(capacity: items.count)
            for item in items {
                guard case .number(let n) = item, let b = UInt8(n) else { throw damaged("has \"\(name)\" that is not an array of bytes") }
                out.append(b)
            }
            return out
        }
        guard let keys = try bytes("keys") else { throw damaged("has no \"keys\"") }
        let salt = try bytes("master_key_salt")
        if let salt, salt.count < Argon2i.saltByteCount { throw damaged("has a salt shorter than 16 bytes") }
        return (keys, salt.map { Data($0.prefix(Argon2i.saltByteCount)) })
    }

    func checkUnchanged(_ db: Database) throws {
        guard try Self.metadataRow(db, label: label) == metadata else {
            throw WalletError.storage("\(label) was rekeyed while the import started: run it again")
        }
    }

    func rowCount(_ db: Database) throws -> Int {
        try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM items") ?? 0
    }

    func forEachRecord(_ db: Database, now: Int64, visited: (ForeignSkip?) throws -> Void, _ body: (ForeignRecord) throws -> Void) throws {
        let limits = WalletLimitsForSource()
        // Every field is selected with its length and read only when within its limit
        // (ForeignDatabase.capped): an over-long field is refused without being loaded.
        let tagColumns = "\(ForeignDatabase.capped("name", limits.tagName)), \(ForeignDatabase.capped("value", limits.tagValue))"
        let encrypted = try db.makeStatement(sql: "SELECT \(tagColumns) FROM tags_encrypted WHERE item_id = ? LIMIT ?")
        let plaintext = try db.makeStatement(sql: "SELECT \(tagColumns) FROM tags_plaintext WHERE item_id = ? LIMIT ?")
        let rows = try Row.fetchCursor(
            db,
            sql: """
                SELECT id, \(ForeignDatabase.capped("type", limits.type)), \(ForeignDatabase.capped("name", limits.id)),
                       \(ForeignDatabase.capped("value", limits.value)), \(ForeignDatabase.capped("key", limits.recordKey))
                FROM items ORDER BY id
                """)
        while let row = try rows.next() {
            guard let rowid = Int64.fromDatabaseValue(row[0]) else {
                throw WalletError.corrupted("\(label): an items row has no integer id (nothing was imported)")
            }
            let at = "\(label), items row \(rowid)"
            func damaged(_ what: String) -> WalletError { .corrupted("\(at): \(what) (nothing was imported)") }
            let typeField = ForeignDatabase.field(row, 1, limit: limits.type)
            let nameField = ForeignDatabase.field(row, 3, limit: limits.id)
            let valueField = ForeignDatabase.field(row, 5, limit: limits.value)
            let keyField = ForeignDatabase.field(row, 7, limit: limits.recordKey)
            for case .null in [typeField, nameField, valueField, keyField] { throw damaged("a column is NULL") }
            for case .tooLong in [typeField, nameField, keyField] {
                throw WalletError.invalidInput("\(at): its type or id is longer than Coffer allows (nothing was imported)")
            }
            if case .tooLong = valueField {
                throw WalletError.invalidInput(
                    "\(at): its value is longer than Coffer's \(WalletLimits.maxValueBytes) bytes (nothing was imported)")
            }
            guard let sealedType = typeField.data, let typeBytes = ForeignDatabase.open(sealedType, key: typeKey) else {
                throw damaged("its type does not decrypt")
            }
            guard let sealedName = nameField.data, let nameBytes = ForeignDatabase.open(sealedName, key: nameKey) else {
                throw damaged("its id does not decrypt")
            }
            guard let type = ForeignDatabase.text(typeBytes), let id = ForeignDatabase.text(nameBytes) else {
                throw damaged("its type or id is not UTF-8")
            }
            let named = "\(label), items row \(rowid) (type \(WalletError.quote(type)), id \(WalletError.quote(id)))"
            guard let sealedKey = keyField.data, var recordKeyBytes = ForeignDatabase.open(sealedKey, key: valueKey) else {
                throw WalletError.corrupted("\(named): its value key does not decrypt (nothing was imported)")
            }
            defer { ForeignDatabase.wipe(&recordKeyBytes) }
            guard recordKeyBytes.count == 32 else {
                throw WalletError.corrupted("\(named): its value key does not decrypt (nothing was imported)")
            }
            let recordKey = try SecretKey(copying: recordKeyBytes)
            guard let sealedValue = valueField.data, let valueBytes = ForeignDatabase.open(sealedValue, key: recordKey) else {
                throw WalletError.corrupted("\(named): its value does not decrypt (nothing was imported)")
            }
            guard let value = ForeignDatabase.text(valueBytes) else {
                throw WalletError.corrupted("\(named): its value is not UTF-8, which libindy never writes (nothing was imported)")
            }
            var pairs = [(String, String)]()
            for (statement, isPlain) in [(encrypted, false), (plaintext, true)] {
                let tagRows = try Row.fetchCursor(statement, arguments: [rowid, ForeignDatabase.maxTagsPerRecord + 1])
                while let tag = try tagRows.next() {
                    guard pairs.count < ForeignDatabase.maxTagsPerRecord else {
                        throw WalletError.invalidInput(
                            "\(named) has more than \(ForeignDatabase.maxTagsPerRecord) tags (nothing was imported)")
                    }
                    guard let sealedTagName = ForeignDatabase.field(tag, 0, limit: limits.tagName).data,
                        let nameBytes = ForeignDatabase.open(sealedTagName, key: tagNameKey), let tagName = ForeignDatabase.text(nameBytes)
                    else {
                        throw WalletError.corrupted("\(named): a tag name does not decrypt (nothing was imported)")
                    }
                    guard let stored = ForeignDatabase.field(tag, 2, limit: limits.tagValue).data else {
                        throw WalletError.corrupted(
                            "\(named): tag \(WalletError.quote(tagName)) has no value or one too long (nothing was imported)")
                    }
                    if isPlain {
                        guard let text = ForeignDatabase.text(stored) else {
                            throw WalletError.corrupted(
                                "\(named): plaintext tag \(WalletError.quote(tagName)) is not UTF-8 (nothing was imported)")
                        }
                        pairs.append(("~" + tagName, text))
                    } else {
                        guard let opened = ForeignDatabase.open(stored, key: tagValueKey), let text = ForeignDatabase.text(opened) else {
                            throw WalletError.corrupted(
                                "\(named): the value of tag \(WalletError.quote(tagName)) does not decrypt (nothing was imported)")
                        }
                        pairs.append((tagName, text))
                    }
                }
            }
            try body(ForeignRecord(row: rowid, type: type, id: id, value: value, tags: ForeignDatabase.tags(pairs), expiry: nil))
            try visited(nil)
        }
    }
}

/// The longest sealed field a source may hold that could still open to something Coffer keeps:
/// Coffer's limits plus a seal's nonce and tag. Longer fields are refused without being read
/// (``ForeignDatabase/capped(_:_:)`` selects them as NULL).
struct WalletLimitsForSource {
    let type = WalletLimits.maxTypeBytes + ForeignDatabase.sealOverhead
    let id = WalletLimits.maxIdBytes + ForeignDatabase.sealOverhead
    let value = WalletLimits.maxValueBytes + ForeignDatabase.sealOverhead
    let tagName = WalletLimits.maxTagNameBytes + ForeignDatabase.sealOverhead + 1
    let tagValue = WalletLimits.maxTagValueBytes + ForeignDatabase.sealOverhead
    /// A libindy record's sealed value key (32 bytes and a seal), with room to spare.
    let recordKey = 128
}
