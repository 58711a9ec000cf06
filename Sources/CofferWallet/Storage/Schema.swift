// The wallet file's tables, its metadata rows, and the SQL functions WQL needs.

import CofferSQLite
import Foundation
import GRDB

/// On disk (SQLite, WAL, `synchronous=FULL`):
///
///     coffer_meta(name TEXT PRIMARY KEY, value BLOB)     format, kdf (JSON), keys (sealed),
///         integrity (format 4: a MAC under the wallet key, then the schema, format and digest
///         presence it covers as JSON; see FileIntegrity)
///     coffer_digest(id = 1, value BLOB)  the records' version digest: accumulator, counter, MAC
///         (72 bytes, format 4; see DigestState), kept by three triggers on items
///     items(id INTEGER PRIMARY KEY, type INTEGER, name BLOB, value BLOB, expiry INTEGER)
///         id    = row id; walks key on it (a deleted record's id may be given to a later one:
///                 a walk past that id misses the newcomer, as it misses any record added
///                 behind its cursor, and never repeats or skips a record that stayed)
///         type  = blind(type), 8 bytes stored as one integer (see BlindColumn)
///         name  = blind(type, id), 16 bytes
///         value = sealed (id, value, tags);  expiry = Unix ms or NULL
///         UNIQUE(type, name); INDEX(type) for insertion-ordered walks
///     tags(item, name INTEGER, value) WITHOUT ROWID, PRIMARY KEY(item, name, value)
///         name  = blind(type, tag name), 8 bytes stored as one integer
///         value = blind(type, name, value), 12 bytes, or the plaintext for `~` tags
///         INDEX(name, value, item) for tag-driven walks and counts
///     tag_multi(name INTEGER) blind names of plaintext tags some record holds several values of
///         (while a tag is single-valued, ranges on it are answered from one index range)
enum Schema {
    /// The newest file format this code reads and writes. 2: blind types and tag names are
    /// integers (a Coffer that reads only format 1 would bind them as blobs, find nothing and
    /// write rows of the old form, so it must refuse these files, and does: it checks this).
    /// Files of format 1 are brought to 2 when opened. 3: the records' version digest
    /// (`coffer_digest`, kept by triggers that call a keyed function only the wallet's own
    /// connection has: an older Coffer could not write such a file, and refuses it). 4: the
    /// digest's state carries a MAC under the wallet key and each row's digest covers its row id
    /// and expiry; the schema and format are authenticated (``FileIntegrity``); the wallet key
    /// is sealed under associated data naming format 4, so a file cannot be passed off as an
    /// older one without a sealed key of that older file (see the threat model).
    static let format = 4

    /// The format a file has after the migrations up to and including `migration`.
    static func format(after migration: String) -> Int {
        switch migration {
        case firstMigration, itemsRowidMigration: return 1
        case integerBlindsMigration: return 2
        case rowDigestMigration: return 3
        default: return format
        }
    }

    /// The first file layout.
    static let firstMigration = "wallet-v1"
    /// Items without AUTOINCREMENT (same rows, same ids).
    static let itemsRowidMigration = "wallet-v1-items-rowid"
    /// Blind types and tag names stored as integers (same bits).
    static let integerBlindsMigration = "wallet-v1-integer-blinds"
    /// The records' version digest and the triggers that keep it.
    static let rowDigestMigration = "wallet-v3-row-digest"
    /// The digest of format 4 (a MAC over its state; row id and expiry in each row's input),
    /// and the authenticated record of the schema.
    static let sealedDigestMigration = "wallet-v4-sealed-digest"

    /// What the format-4 migration needs: the wallet's keys, and for a file being upgraded its
    /// wallet key sealed for format 4 (nil when a new file is created: `create` writes it).
    struct Upgrade {
        let keys: WalletKeys
        let sealedKeys: Data?
    }

    /// The migrations; `upgrade` is needed only to run the format-4 one.
    static func migrator(upgrade: Upgrade? = nil) -> DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration(Schema.firstMigration) { db in
            try db.execute(
                sql: """
                    CREATE TABLE coffer_meta(name TEXT PRIMARY KEY NOT NULL, value BLOB NOT NULL);
                    CREATE TABLE items(
                        id INTEGER PRIMARY KEY AUTOINCREMENT,
                        type BLOB NOT NULL,
                        name BLOB NOT NULL,
                        value BLOB NOT NULL,
                        expiry INTEGER
                    );
                    CREATE UNIQUE INDEX items_type_name ON items(type, name);
                    CREATE INDEX items_type ON items(type);
                    CREATE INDEX items_expiry ON items(expiry) WHERE expiry IS NOT NULL;
                    CREATE TABLE tags(
                        item INTEGER NOT NULL,
                        name BLOB NOT NULL,
                        value NOT NULL,
                        PRIMARY KEY(item, name, value)
                    ) WITHOUT ROWID;
                    CREATE INDEX tags_lookup ON tags(name, value, item);
                    CREATE TABLE tag_multi(name BLOB PRIMARY KEY NOT NULL) WITHOUT ROWID;
                    """)
        }
        // v1 numbered items with AUTOINCREMENT, which keeps a counter row in sqlite_sequence
        // and updates it on every insert (about 5% of a batched insert). Row ids are used only
        // as keyset cursors and to join tag rows, neither of which needs ids never reused, so
        // the table is rebuilt without it. The rows and their ids are copied as they are.
        migrator.registerMigration(Schema.itemsRowidMigration) { db in
            try db.execute(
                sql: """
                    CREATE TABLE items_rowid(
                        id INTEGER PRIMARY KEY,
                        type BLOB NOT NULL,
                        name BLOB NOT NULL,
                        value BLOB NOT NULL,
                        expiry INTEGER
                    );
                    INSERT INTO items_rowid(id, type, name, value, expiry) SELECT id, type, name, value, expiry FROM items;
                    DROP TABLE items;
                    ALTER TABLE items_rowid RENAME TO items;
                    CREATE UNIQUE INDEX items_type_name ON items(type, name);
                    CREATE INDEX items_type ON items(type);
                    CREATE INDEX items_expiry ON items(expiry) WHERE expiry IS NOT NULL;
                    """)
        }
        // Blind types and tag names were 8-byte blobs; they lead the keys of both item indexes
        // and of the tag index, where SQLite compares blobs field by field through memcmp but
        // integers inline. The same 64 bits as an integer made a batched insert about 15% and
        // a batched remove about 7% faster in a plain-SQLite test of this layout. The columns
        // keep their declared type (an ALTER cannot change it); nothing depends on it.
        migrator.registerMigration(Schema.integerBlindsMigration) { db in
            try db.execute(
                sql: """
                    UPDATE items SET type = coffer_blind_int(type);
                    UPDATE tags SET name = coffer_blind_int(name);
                    UPDATE tag_multi SET name = coffer_blind_int(name);
                    UPDATE coffer_meta SET value = CAST('2' AS BLOB) WHERE name = 'format';
                    """)
        }
        // A keyed digest of every record's current version: the XOR of a keyed BLAKE2b of each
        // row's (type, id blind, sealed box). Triggers keep it in the same statement as every
        // write, so a rolled-back transaction rolls it back too. Whoever writes the file without
        // the key cannot bring it in line with a record they rolled back or re-inserted, and
        // `checkIntegrity()` recomputes it. Needs `coffer_digest_step` (``DigestFunction``,
        // registered on the writer once the key is known) to run.
        migrator.registerMigration(Schema.rowDigestMigration) { db in
            var digest = [UInt8](repeating: 0, count: RowDigest.byteCount)
            let rows = try Data.fetchCursor(db, sql: "SELECT coffer_digest_step(zeroblob(32), type, name, value) FROM items")
            while let d = try rows.next() { RowDigest.xor(&digest, d) }
            try db.execute(
                sql: """
                    CREATE TABLE coffer_digest(id INTEGER PRIMARY KEY CHECK (id = 1), value BLOB NOT NULL);
                    INSERT INTO coffer_digest(id, value) VALUES (1, ?);
                    CREATE TRIGGER coffer_digest_insert AFTER INSERT ON items BEGIN
                        UPDATE coffer_digest SET value = coffer_digest_step(value, NEW.type, NEW.name, NEW.value) WHERE id = 1;
                    END;
                    CREATE TRIGGER coffer_digest_delete AFTER DELETE ON items BEGIN
                        UPDATE coffer_digest SET value = coffer_digest_step(value, OLD.type, OLD.name, OLD.value) WHERE id = 1;
                    END;
                    CREATE TRIGGER coffer_digest_update AFTER UPDATE ON items BEGIN
                        UPDATE coffer_digest SET value = coffer_digest_step(coffer_digest_step(value, OLD.type, OLD.name, OLD.value),
                                                                            NEW.type, NEW.name, NEW.value) WHERE id = 1;
                    END;
                    UPDATE coffer_meta SET value = CAST('3' AS BLOB) WHERE name = 'format';
                    """, arguments: [Data(digest)])
        }
        // Format 4. A file of format 3 is upgraded only when its digest matches its rows (the
        // old digest is checked, never silently recomputed over rows someone changed); then the
        // digest is rebuilt in its new form, the wallet key re-sealed for format 4 and the
        // schema record written, all in this one transaction.
        migrator.registerMigration(Schema.sealedDigestMigration) { db in
            guard let upgrade else { throw WalletError.storage("the format-4 upgrade needs the wallet's keys") }
            let keys = upgrade.keys
            if try db.tableExists("coffer_digest") {
                var legacy = [UInt8](repeating: 0, count: RowDigest.byteCount)
                let rows = try Row.fetchCursor(db, sql: "SELECT type, name, value FROM items")
                while let row = try rows.next() {
                    guard let type = Int64.fromDatabaseValue(row[0]), let name = Data.fromDatabaseValue(row[1]),
                        let value = Data.fromDatabaseValue(row[2])
                    else { throw WalletError.corrupted("a record row has columns of the wrong kind; the wallet was not upgraded") }
                    RowDigest.xor(&legacy, keys.rowDigest(type: type, idBlind: name, sealed: value))
                }
                guard try Data.fetchOne(db, sql: "SELECT value FROM coffer_digest WHERE id = 1") == Data(legacy) else {
                    throw WalletError.corrupted(
                        "the records differ from the versions this wallet last wrote (its format-3 digest does not match them); it was not upgraded and was left as it was (restore a backup)"
                    )
                }
                try db.execute(
                    sql: """
                        DROP TRIGGER IF EXISTS coffer_digest_insert;
                        DROP TRIGGER IF EXISTS coffer_digest_delete;
                        DROP TRIGGER IF EXISTS coffer_digest_update;
                        DROP TABLE coffer_digest;
                        """)
            }
            let state = DigestState.seal(try DigestState.accumulate(db, keys: keys), counter: 0, keys: keys)
            try db.execute(
                sql: """
                    CREATE TABLE coffer_digest(id INTEGER PRIMARY KEY CHECK (id = 1), value BLOB NOT NULL);
                    INSERT INTO coffer_digest(id, value) VALUES (1, ?);
                    CREATE TRIGGER coffer_digest_insert AFTER INSERT ON items BEGIN
                        UPDATE coffer_digest SET value = coffer_digest_v4(value, NEW.id, NEW.type, NEW.name, NEW.value, NEW.expiry)
                        WHERE id = 1;
                    END;
                    CREATE TRIGGER coffer_digest_delete AFTER DELETE ON items BEGIN
                        UPDATE coffer_digest SET value = coffer_digest_v4(value, OLD.id, OLD.type, OLD.name, OLD.value, OLD.expiry)
                        WHERE id = 1;
                    END;
                    CREATE TRIGGER coffer_digest_update AFTER UPDATE ON items BEGIN
                        UPDATE coffer_digest SET value = coffer_digest_v4(value, OLD.id, OLD.type, OLD.name, OLD.value, OLD.expiry,
                                                                          NEW.id, NEW.type, NEW.name, NEW.value, NEW.expiry)
                        WHERE id = 1;
                    END;
                    UPDATE coffer_meta SET value = CAST('4' AS BLOB) WHERE name = 'format';
                    """, arguments: [state])
            if let sealed = upgrade.sealedKeys {
                try db.execute(sql: "UPDATE coffer_meta SET value = ? WHERE name = 'keys'", arguments: [sealed])
                try FileIntegrity.write(db, keys: keys)
            }
        }
        return migrator
    }

    /// `coffer_num(text)`: the value as a number when it is written as one, else NULL.
    static let numberFunction = DatabaseFunction("coffer_num", argumentCount: 1, pure: true) { values in
        guard let s = String.fromDatabaseValue(values[0]) else { return nil }
        return NumericTag.parse(s)
    }

    /// `coffer_blind_int(x)`: an 8-byte blind index as the integer that stores it (see
    /// ``BlindColumn``); any other value unchanged. Used by the migration that converts old files.
    static let blindIntegerFunction = DatabaseFunction("coffer_blind_int", argumentCount: 1, pure: true) { values in
        guard let blob = Data.fromDatabaseValue(values[0]), blob.count == 8 else { return values[0] }
        return BlindColumn.value(blob)
    }

    /// `coffer_like(pattern, text)`: whether `text` matches the `$like` pattern (``LikePattern``).
    /// Called with blobs (the UTF-8 bytes) where U+0000 is involved, which SQLite's `LIKE` does not
    /// handle (see ``QueryCompiler/Context/like(_:)``).
    static let likeFunction = DatabaseFunction("coffer_like", argumentCount: 2, pure: true) { values in
        guard let pattern = String.fromDatabaseValue(values[0]), let s = String.fromDatabaseValue(values[1]) else { return false }
        return LikePattern.matches(Array(s.unicodeScalars), Array(pattern.unicodeScalars))
    }

    /// `coffer_regexp(pattern, text)`: whether `text` contains a match of `pattern`. Called with
    /// blobs (the UTF-8 bytes): GRDB reads a text argument only up to its first U+0000.
    static let regexFunction = DatabaseFunction("coffer_regexp", argumentCount: 2, pure: true) { values in
        guard let pattern = String.fromDatabaseValue(values[0]),
            let s = String.fromDatabaseValue(values[1]),
            let re = RegexCache.shared.regex(pattern)
        else { return false }
        return re.containsMatch(s)
    }

    /// Bytes of the file SQLite may memory-map for reads.
    static let mmapBytes = 256 << 20

    /// KiB of page cache per reading connection (SQLite's default is 2,000 KiB). Readers get
    /// most pages through the memory map.
    static let cacheKiB = 16 * 1024

    /// KiB of page cache the writer may grow to. A write transaction over a large wallet touches
    /// pages all over its indexes (blind indexes are random keys); when they no longer fit, each
    /// record's write evicts and re-reads pages, and dirty ones spill to the WAL early. At
    /// N = 100,000 (a 73 MB file) a batched remove ran 19k/s with 16 MiB, 27k/s with 64 MiB and
    /// 30k/s with 128 MiB. SQLite allocates pages only as they are used, so a small wallet never
    /// comes near this; GRDB releases the memory on an iOS memory warning.
    static let writerCacheKiB = 128 * 1024

    /// Sets `synchronous = FULL` and `secure_delete = FAST` on the pool's writer (and its larger
    /// page cache). It must come after the pool is open: `DatabasePool` switches its writer to WAL with
    /// `synchronous = NORMAL` after `prepareDatabase` runs, which would let a commit return before
    /// the WAL reaches the disk.
    static func makeDurable(_ pool: DatabasePool) throws {
        try pool.writeWithoutTransaction { db in
            // secure_delete: a deleted or overwritten record (or sealed wallet key) is zeroed in
            // its page, so old key material does not stay in the file's free space. FAST zeroes
            // within the pages a write touches anyway (no extra I/O: ON cost batched writes about
            // 10 % in `coffer bench wallet`); pages moved to the freelist keep their old bytes.
            // temp_store: inside a transaction, SQLite keeps a statement journal (the pages a
            // statement changes, as they were before it) for a statement that has a trigger and
            // may fail part way, as every write of the items table does (the version digest's
            // trigger). With temporary files on disk it moves that journal into a file in the
            // system's temporary folder once it passes 64 KiB, and from then on every statement
            // of the transaction writes its pages there: at N = 100,000 a batched insert made
            // 620,000 `pwrite`s to it, about half the writer's time. Each of the wallet's record
            // statements changes a few pages, and the journal is emptied when the statement
            // ends, so in memory it stays small. An open savepoint would keep it until the
            // savepoint ends, so the wallet's writes use none (see WalletTransaction.removeAll).
            // What changes much of the file in one statement (migrations, VACUUM) runs with the
            // temporary store on disk instead (``SQLiteFootprint/withTempStoreOnDisk(_:_:)``).
            try db.execute(sql: "PRAGMA synchronous = FULL; PRAGMA cache_size = -\(Schema.writerCacheKiB)")
            try db.execute(sql: "PRAGMA secure_delete = FAST; PRAGMA temp_store = MEMORY")
            try SQLiteFootprint.limitWAL(db)
        }
    }

    static func configuration(label: String, readonly: Bool = false) -> Configuration {
        var config = Configuration()
        config.label = label
        config.busyMode = .timeout(10)
        config.readonly = readonly
        config.prepareDatabase { db in
            // A new file gives free pages back incrementally: this must come before its first
            // page is written (GRDB writes one setting up WAL). Existing files are converted once
            // on open (see `Wallet.open`); for them this is a no-op.
            if !db.configuration.readonly { try SQLiteFootprint.makeIncremental(db) }
            // Durable by default: a commit returns only once the WAL is on disk (set again on the
            // writer once the pool is open; see makeDurable).
            try db.execute(sql: "PRAGMA synchronous = FULL")
            // Read pages through a memory map instead of copying them with pread; writes still
            // go through the WAL, so durability is unchanged.
            try db.execute(sql: "PRAGMA mmap_size = \(Schema.mmapBytes)")
            // Blind indexes are random keys: inserts land on pages all over the index, so a
            // page cache smaller than the index turns every large write into cache misses.
            try db.execute(sql: "PRAGMA cache_size = -\(Schema.cacheKiB)")
            db.add(function: Schema.numberFunction)
            db.add(function: Schema.regexFunction)
            db.add(function: Schema.likeFunction)
            db.add(function: Schema.blindIntegerFunction)
        }
        return config
    }
}

/// How the wallet stores its 8-byte blind indexes of types and tag names: as the SQLite integer
/// with the same 64 bits (little-endian). Those columns lead the keys of the item and tag
/// indexes, and SQLite compares integer keys inline where blobs go through `memcmp` field by
/// field. The bytes themselves stay what is hashed and authenticated (a record box's associated
/// data is the blind type's bytes).
/// The per-row digests the records' version digest is the XOR of.
enum RowDigest {
    static let byteCount = 32

    static func xor(_ into: inout [UInt8], _ other: Data) {
        precondition(other.count == into.count, "row digests are \(byteCount) bytes")
        for (i, byte) in other.enumerated() { into[i] ^= byte }
    }
}

enum BlindColumn {
    /// The stored integer of an 8-byte blind index.
    static func value(_ blind: Data) -> Int64 {
        precondition(blind.count == 8, "blind type and tag-name indexes are 8 bytes")
        var bits: UInt64 = 0
        withUnsafeMutableBytes(of: &bits) { $0.copyBytes(from: blind) }
        return Int64(bitPattern: UInt64(littleEndian: bits))
    }

    /// The 8 bytes of a stored blind index.
    static func blind(_ value: Int64) -> Data {
        var bits = UInt64(bitPattern: value).littleEndian
        return withUnsafeBytes(of: &bits) { Data($0) }
    }
}
