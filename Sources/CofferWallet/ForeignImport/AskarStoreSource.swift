// Reading an Aries Askar SQLite store (credo-ts, Bifold, ACA-Py).
//
// The format, as Askar's `askar-storage` crate writes it:
// - `config(name, value)`: `default_profile` (a profile name) and `key`, the store key's method:
//   `raw` (the key is base58 of 32 bytes), `kdf:argon2i:int|mod?salt=HEX` (also spelled
//   `kdf:argon2i:13:int|mod`; Argon2i of the passphrase with the 16-byte salt), or `none`.
// - `profiles(id, name, reference, profile_key)`: each profile's key is nonce ‖ ChaCha20-Poly1305
//   of a CBOR map of four ChaCha20-Poly1305 keys (category, name, tag name, tag value) and two
//   HMAC-SHA256 keys (items, tags) under the store key (stored as is with `none`).
// - `items(id, profile_id, kind, category, name, value, expiry)`: kind 2 is a record, kind 1 a key
//   Askar's key manager holds. Category and name are sealed with a nonce from an HMAC of the
//   plaintext; the value under HMAC(items key, len ‖ category ‖ len ‖ name) with a random nonce;
//   `expiry` is a UTC date-time text.
// - `items_tags(id, item_id, name, value, plaintext)`: names sealed (tag name key); values sealed
//   (tag value key) unless `plaintext`, whose name the API shows with a leading `~`.

import CofferCrypto
import CofferSync
import Foundation
import GRDB

struct AskarStoreSource: ForeignSource {
    let queue: DatabaseQueue
    let companions: ForeignCompanions
    let label: String
    /// The profile imported, and its row id and sealed key as read at open.
    let profile: String
    let profileID: Int64
    let sealedProfileKey: Data
    let skipKeyEntries: Bool
    let categoryKey: SecretKey
    let nameKey: SecretKey
    let itemHMAC: KeyedHash
    let tagNameKey: SecretKey
    let tagValueKey: SecretKey

    static let format = "Askar store"
    /// Longest config entry (key method, default profile name) and profile name read.
    static let maxConfigBytes = 4096
    /// Longest sealed profile key read (its CBOR is under 300 bytes).
    static let maxProfileKeyBytes = 1024
    /// Longest expiry text read (a date-time).
    static let maxExpiryBytes = 64

    /// Opens the store at `url` read-only and unlocks `profile` (the default profile when nil).
    /// - Throws: ``WalletError/invalidInput(_:)`` when it is not an Askar store, has no such
    ///   profile, or uses a key method Coffer cannot read; ``WalletError/wrongKey(_:)`` when the key
    ///   does not open it; ``WalletError/corrupted(_:)`` when its configuration or profile key is damaged.
    static func open(at url: URL, key: String, profile: String?, skipKeyEntries: Bool) throws -> AskarStoreSource {
        let (queue, companions) = try ForeignDatabase.open(url, format: format)
        return try ForeignDatabase.closing(queue, companions) {
            try unlock(queue, companions, url: url, key: key, profile: profile, skipKeyEntries: skipKeyEntries)
        }
    }

    private static func unlock(
        _ queue: DatabaseQueue, _ companions: ForeignCompanions, url: URL, key: String, profile: String?, skipKeyEntries: Bool
    ) throws -> AskarStoreSource {
        let storeLabel = "the \(format) at \(url.path)"
        let (method, name, profileID, sealed) = try ForeignDatabase.reading(storeLabel) {
            try queue.read { db -> (String, String, Int64, Data) in
                let tables = try ForeignDatabase.tables(db)
                let needed: Set = ["config", "profiles", "items", "items_tags"]
                guard needed.isSubset(of: tables) else {
                    let missing = needed.subtracting(tables).sorted().joined(separator: ", ")
                    throw WalletError.invalidInput(
                        "\(url.path) is not an \(format): it has no table \(missing)"
                            + (tables.contains("metadata") ? " (it looks like a libindy wallet: use import-indy)" : ""))
                }
                // Every field is read with its length first (ForeignDatabase.capped): an over-long
                // one is refused without being loaded.
                func config(_ entry: String) throws -> String? {
                    let sql = "SELECT \(ForeignDatabase.capped("value", maxConfigBytes)) FROM config WHERE name = ?"
                    guard let row = try Row.fetchOne(db, sql: sql, arguments: [entry]) else { return nil }
                    guard let data = ForeignDatabase.field(row, 0, limit: maxConfigBytes).data, let text = ForeignDatabase.text(data) else {
                        throw WalletError.corrupted(
                            "\(storeLabel): its config entry \"\(entry)\" is empty, not UTF-8 or longer than \(maxConfigBytes) bytes")
                    }
                    return text
                }
                guard let method = try config("key") else {
                    throw WalletError.corrupted("\(storeLabel): its config has no \"key\" entry")
                }
                let name: String
                if let profile {
                    name = profile
                } else if let defaultProfile = try config("default_profile") {
                    name = defaultProfile
                } else {
                    throw WalletError.corrupted("\(storeLabel): its config names no default profile (give --profile NAME)")
                }
                guard
                    let row = try Row.fetchOne(
                        db, sql: "SELECT id, \(ForeignDatabase.capped("profile_key", maxProfileKeyBytes)) FROM profiles WHERE name = ?",
                        arguments: [name])
                else {
                    let names = try Data.fetchAll(
                        db, sql: "SELECT CAST(name AS BLOB) FROM profiles WHERE length(name) <= \(maxConfigBytes) ORDER BY id LIMIT 20"
                    ).map { WalletError.quote(String(decoding: $0, as: UTF8.self)) }
                    throw WalletError.invalidInput(
                        "\(storeLabel) has no profile \(WalletError.quote(name)) (its profiles: \(names.joined(separator: ", ")))")
                }
                guard let sealed = ForeignDatabase.field(row, 1, limit: maxProfileKeyBytes).data else {
                    throw WalletError.corrupted("\(storeLabel): profile \(WalletError.quote(name)) has no key, or one too long")
                }
                guard let id = Int64.fromDatabaseValue(row[0]) else {
                    throw WalletError.corrupted("\(storeLabel): profile \(WalletError.quote(name)) has no integer id")
                }
                return (method, name, id, sealed)
            }
        }
        let label = "profile \(WalletError.quote(name)) of \(storeLabel)"
        let storeKey = try storeKey(method: method, key: key, label: storeLabel)
        var packed: Data
        if let storeKey {
            guard let opened = ForeignDatabase.open(sealed, key: storeKey) else {
                throw WalletError.wrongKey("the source key does not open \(label) (nothing was imported)")
            }
            packed = opened
        } else {
            packed = sealed
        }
        defer { ForeignDatabase.wipe(&packed) }
        var keys: [String: [UInt8]]
        do { keys = try AskarProfileKeyCBOR.decode(packed) } catch {
            throw WalletError.corrupted("\(label): its profile key \(error)")
        }
        defer { for name in keys.keys { SecureMemory.wipe(&keys[name]!) } }
        return AskarStoreSource(
            queue: queue, companions: companions, label: label, profile: name, profileID: profileID, sealedProfileKey: sealed,
            skipKeyEntries: skipKeyEntries,
            categoryKey: try SecretKey(copying: keys["ick"]!), nameKey: try SecretKey(copying: keys["ink"]!),
            itemHMAC: KeyedHash(key: try SecretKey(copying: keys["ihk"]!)), tagNameKey: try SecretKey(copying: keys["tnk"]!),
            tagValueKey: try SecretKey(copying: keys["tvk"]!))
    }

    /// The store key the `key` config entry says to make from `key`; nil for `none`.
    static func storeKey(method: String, key: String, label: String) throws -> SecretKey? {
        if method == "none" { return nil }
        if method == "raw" {
            guard var bytes = Base58.decode(key.trimmingCharacters(in: .whitespacesAndNewlines)) else {
                throw WalletError.wrongKey("\(label) uses a raw key, and the source key is not one (base58 of 32 bytes)")
            }
            defer { ForeignDatabase.wipe(&bytes) }
            guard bytes.count == 32 else {
                throw WalletError.wrongKey("\(label) uses a raw key, and the source key is not one (base58 of 32 bytes)")
            }
            return try SecretKey(copying: bytes)
        }
        // kdf:argon2i:LEVEL?salt=HEX, LEVEL one of int, mod, 13:int, 13:mod.
        let parts = method.split(separator: "?", maxSplits: 1).map(String.init)
        let level: Argon2iLevel
        switch parts[0] {
        case "kdf:argon2i:int", "kdf:argon2i:13:int": level = .interactive
        case "kdf:argon2i:mod", "kdf:argon2i:13:mod", "kdf:argon2i": level = .moderate
        default:
            throw WalletError.invalidInput("\(label) uses the store key method \(WalletError.quote(parts[0])), which Coffer cannot read")
        }
        var salt: Data?
        if parts.count == 2 {
            for pair in parts[1].split(separator: "&") where pair.hasPrefix("salt=") {
                salt = hexBytes(String(pair.dropFirst(5)))
            }
        }
        guard let salt, salt.count == Argon2i.saltByteCount else {
            throw WalletError.corrupted("\(label): its key entry has no 16-byte hex salt")
        }
        do { return try Argon2i.deriveKey(passphrase: key, salt: salt, level: level) } catch {
            throw WalletError.storage("\(error)", cause: StorageCause(error))
        }
    }

    static func hexBytes(_ text: String) -> Data? {
        let digits = Array(text.utf8)
        guard digits.count % 2 == 0, digits.count <= 128 else { return nil }
        var out = Data(capacity: digits.count / 2)
        var i = 0
        while i < digits.count {
            guard let hi = hexDigit(digits[i]), let lo = hexDigit(digits[i + 1]) else { return nil }
            out.append(hi << 4 | lo)
            i += 2
        }
        return out
    }

    static func hexDigit(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
        default: return nil
        }
    }

    func checkUnchanged(_ db: Database) throws {
        let row = try Row.fetchOne(
            db, sql: "SELECT \(ForeignDatabase.capped("profile_key", Self.maxProfileKeyBytes)) FROM profiles WHERE id = ?",
            arguments: [profileID])
        guard let row, ForeignDatabase.field(row, 0, limit: Self.maxProfileKeyBytes).data == sealedProfileKey else {
            throw WalletError.storage("\(label) was rekeyed or removed while the import started: run it again")
        }
    }

    func rowCount(_ db: Database) throws -> Int {
        try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM items WHERE profile_id = ?", arguments: [profileID]) ?? 0
    }

    /// The value key of a record: HMAC-SHA256(items key, be32(len c) ‖ c ‖ be32(len n) ‖ n).
    func valueKey(category: Data, name: Data) throws -> SecretKey {
        var mac = itemHMAC.hash { input in
            for part in [category, name] {
                var length = UInt32(part.count).bigEndian
                withUnsafeBytes(of: &length) { input.raw($0) }
                part.withUnsafeBytes { input.raw($0) }
            }
        }
        defer { ForeignDatabase.wipe(&mac) }
        return try SecretKey(copying: mac)
    }

    func forEachRecord(_ db: Database, now: Int64, visited: (ForeignSkip?) throws -> Void, _ body: (ForeignRecord) throws -> Void) throws {
        let limits = WalletLimitsForSource()
        // Every field is selected with its length and read only when within its limit
        // (ForeignDatabase.capped): an over-long field is refused without being loaded.
        let tagQuery = try db.makeStatement(
            sql: """
                SELECT \(ForeignDatabase.capped("name", limits.tagName)), \(ForeignDatabase.capped("value", limits.tagValue)), plaintext
                FROM items_tags WHERE item_id = ? ORDER BY id LIMIT ?
                """)
        // The expiry as Unix milliseconds, computed by SQLite from Askar's date-time text.
        let rows = try Row.fetchCursor(
            db,
            sql: """
                SELECT id, kind, \(ForeignDatabase.capped("category", limits.type)), \(ForeignDatabase.capped("name", limits.id)),
                       \(ForeignDatabase.capped("value", limits.value)), length(expiry),
                       CASE WHEN length(expiry) <= \(Self.maxExpiryBytes)
                            THEN CAST(round((julianday(expiry) - 2440587.5) * 86400000.0) AS INTEGER) END
                FROM items WHERE profile_id = ? ORDER BY id
                """, arguments: [profileID])
        while let row = try rows.next() {
            switch try record(row, now: now, tagQuery: tagQuery) {
            case .record(let record):
                try body(record)
                try visited(nil)
            case .skipped(let why): try visited(why)
            }
        }
    }

    /// The record of one `items` row, or why it is not imported.
    private func record(_ row: Row, now: Int64, tagQuery: Statement) throws -> ForeignRow {
        let limits = WalletLimitsForSource()
        guard let rowid = Int64.fromDatabaseValue(row[0]) else {
            throw WalletError.corrupted("\(label): an items row has no integer id (nothing was imported)")
        }
        let at = "\(label), items row \(rowid)"
        func damaged(_ what: String) -> WalletError { .corrupted("\(at): \(what) (nothing was imported)") }
        // Read by storage class: SQLite would give 0 for a text kind, and the message would say 0.
        let kind: Int64?
        let kindText: String
        switch (row[1] as DatabaseValue).storage {
        case .null: (kind, kindText) = (nil, "NULL")
        case .int64(let number): (kind, kindText) = (number, String(number))
        case .double(let number): (kind, kindText) = (-1, "the real number \(number)")
        case .string: (kind, kindText) = (-1, "text")
        case .blob: (kind, kindText) = (-1, "a blob")
        }
        let categoryField = ForeignDatabase.field(row, 2, limit: limits.type)
        let nameField = ForeignDatabase.field(row, 4, limit: limits.id)
        let valueField = ForeignDatabase.field(row, 6, limit: limits.value)
        guard let kind else { throw damaged("a column is NULL") }
        for case .null in [categoryField, nameField, valueField] { throw damaged("a column is NULL") }
        guard kind == 1 || kind == 2 else { throw damaged("its kind is \(kindText), neither 1 (key) nor 2 (record)") }
        for case .tooLong in [categoryField, nameField] {
            throw WalletError.invalidInput("\(at): its category or name is longer than Coffer allows (nothing was imported)")
        }
        if case .tooLong = valueField {
            throw WalletError.invalidInput(
                "\(at): its value is longer than Coffer's \(WalletLimits.maxValueBytes) bytes (nothing was imported)")
        }
        guard let sealedCategory = categoryField.data, let category = ForeignDatabase.open(sealedCategory, key: categoryKey)
        else { throw damaged("its category does not decrypt") }
        guard let sealedName = nameField.data, let name = ForeignDatabase.open(sealedName, key: nameKey) else {
            throw damaged("its name does not decrypt")
        }
        guard let type = ForeignDatabase.text(category), let id = ForeignDatabase.text(name) else {
            throw damaged("its category or name is not UTF-8")
        }
        let named = "\(label), items row \(rowid) (category \(WalletError.quote(type)), name \(WalletError.quote(id)))"
        if kind == 1 {
            if skipKeyEntries { return .skipped(.keyEntry) }
            throw WalletError.invalidInput(
                "\(named) is a key held by Askar's key manager, which Coffer's records cannot hold (its value is CBOR, not text); nothing was imported. Import without key entries (--skip-keys) and create or import the keys in Coffer's wallet"
            )
        }
        var expiry: Int64?
        if !row.hasNull(atIndex: 8) {
            guard let ms: Int64 = row[9] else { throw damaged("its expiry is not a date") }
            if ms <= now { return .skipped(.expired) } // expired: Askar no longer returns it, Coffer does not import it
            expiry = ms
        }
        guard let sealedValue = valueField.data,
            let valueBytes = ForeignDatabase.open(sealedValue, key: try valueKey(category: category, name: name))
        else {
            throw WalletError.corrupted("\(named): its value does not decrypt (nothing was imported)")
        }
        guard let value = ForeignDatabase.text(valueBytes) else {
            throw WalletError.invalidInput(
                "\(named): its value is not UTF-8 text, which Coffer's records hold (nothing was imported)")
        }
        var pairs = [(String, String)]()
        let tagRows = try Row.fetchCursor(tagQuery, arguments: [rowid, ForeignDatabase.maxTagsPerRecord + 1])
        while let tag = try tagRows.next() {
            guard pairs.count < ForeignDatabase.maxTagsPerRecord else {
                throw WalletError.invalidInput("\(named) has more than \(ForeignDatabase.maxTagsPerRecord) tags (nothing was imported)")
            }
            guard let sealedTagName = ForeignDatabase.field(tag, 0, limit: limits.tagName).data,
                let nameBytes = ForeignDatabase.open(sealedTagName, key: tagNameKey), let tagName = ForeignDatabase.text(nameBytes)
            else {
                throw WalletError.corrupted("\(named): a tag name does not decrypt (nothing was imported)")
            }
            let plain: Bool? = tag[4]
            guard let stored = ForeignDatabase.field(tag, 2, limit: limits.tagValue).data, let plain else {
                throw WalletError.corrupted(
                    "\(named): tag \(WalletError.quote(tagName)) has no value or one too long (nothing was imported)")
            }
            if plain {
                guard let text = ForeignDatabase.text(stored) else {
                    throw WalletError.corrupted("\(named): plaintext tag \(WalletError.quote(tagName)) is not UTF-8 (nothing was imported)")
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
        return .record(ForeignRecord(row: rowid, type: type, id: id, value: value, tags: ForeignDatabase.tags(pairs), expiry: expiry))
    }
}
