// Backup: the whole wallet (records and secrets) in one file under its own passphrase.
import CofferCrypto
import Foundation
import GRDB

/// How far a backup export or import has come.
public struct BackupProgress: Sendable, Equatable {
    /// Records written or read so far.
    public let done: Int
    /// Records in the backup.
    public let total: Int

    /// A progress report.
    public init(done: Int, total: Int) {
        self.done = done
        self.total = total
    }
}

/// The backup file format. Integers are big-endian.
///
///     offset  bytes  field
///          0      8  magic "CFBACKUP"
///          8      1  format version (1)
///          9      4  Argon2id opslimit
///         13      4  Argon2id memlimit, KiB
///         17     16  Argon2id salt
///         33     24  secretstream header (libsodium XChaCha20-Poly1305 secretstream)
///         57      …  messages, each a 4-byte length and a secretstream message:
///                    first {"format":1,"records":N}, then JSON arrays of up to 512 records
///                    {"type","id","value","tags","expiresAt"?}, then an empty final message.
///
/// The key is Argon2id of the backup passphrase with the stored costs and salt, so altering
/// those fails the first message as a wrong passphrase would. A missing final message, a
/// reordered or altered message, or a wrong passphrase is detected before any wallet is created.
enum BackupFormat {
    static let magic = Array("CFBACKUP".utf8)
    static let version: UInt8 = 1
    static let batch = 512
    static let prefixBytes = 33
}

extension Wallet {
    /// Writes every record and secret into `url` (atomically: a temporary file renamed into
    /// place; mode 0600), encrypted under `passphrase`. Returns the number of records written.
    /// - Throws: ``WalletError/invalidInput(_:)`` for an empty passphrase or bad costs.
    @discardableResult
    public func exportBackup(to url: URL, passphrase: String, parameters: Argon2idParameters = .interactive,
                             progress: (@Sendable (BackupProgress) -> Void)? = nil) async throws -> Int {
        guard !passphrase.isEmpty else { throw WalletError.invalidInput("the backup passphrase must not be empty") }
        do { try parameters.validateWithinCap() } catch { throw WalletError.invalidInput("backup key costs: \(error)") }
        let salt = SecureRandom.bytes(Argon2idParameters.saltByteCount)
        let key = try Argon2id.deriveKey(passphrase: passphrase, salt: salt, parameters: parameters)
        let writer = try SecretStreamWriter(key: key)
        var head = Data(BackupFormat.magic)
        head.append(BackupFormat.version)
        Self.appendU32(UInt32(parameters.opsLimit), to: &head)
        Self.appendU32(UInt32(parameters.memLimit / 1024), to: &head)
        head.append(salt)
        head.append(writer.header)
        let keys = self.keys
        let start = head
        // One read transaction: the backup is one consistent state of the wallet.
        let (total, file) = try await pool.read { db -> (Int, Data) in
            var file = start
            let total = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM items") ?? 0
            Self.appendMessage(writer.push(Data(JSONValue.object([("format", .number("1")), ("records", .number(String(total)))]).jsonText.utf8)), to: &file)
            var batch = [JSONValue]()
            var done = 0
            let rows = try Row.fetchCursor(db, sql: "SELECT type, name, value, expiry FROM items ORDER BY id")
            while let row = try rows.next() {
                guard let typeColumn = Int64.fromDatabaseValue(row[0]) else {
                    throw WalletError.corrupted("a record's blind type is not stored as an integer (the wallet file was altered)")
                }
                let contents = try RecordCodec.open(row[2], typeBlind: BlindColumn.blind(typeColumn), idBlind: row[1], expiry: row[3], keys: keys)
                guard let type = contents.type else {
                    throw WalletError.invalidInput("record \(WalletError.quote(contents.id)) was written by the first wallet format, which did not keep its type; update it once to export it")
                }
                var fields: [(String, JSONValue)] = [("type", .string(type)), ("id", .string(contents.id)),
                                                     ("value", .string(contents.value)), ("tags", contents.tags.jsonValue)]
                if let expiry: Int64 = row[3] { fields.append(("expiresAt", .number(String(expiry)))) }
                batch.append(.object(fields))
                if batch.count == BackupFormat.batch {
                    Self.appendMessage(writer.push(Data(JSONValue.array(batch).jsonText.utf8)), to: &file)
                    done += batch.count
                    batch.removeAll(keepingCapacity: true)
                    progress?(BackupProgress(done: done, total: total))
                }
            }
            if !batch.isEmpty {
                Self.appendMessage(writer.push(Data(JSONValue.array(batch).jsonText.utf8)), to: &file)
                done += batch.count
            }
            Self.appendMessage(writer.push(Data(), final: true), to: &file)
            progress?(BackupProgress(done: done, total: total))
            return (total, file)
        }
        // Temporary file (0600 whatever the umask), flushed, renamed into place.
        do { try DurableFile.write(file, to: url, permissions: 0o600) } catch {
            throw WalletError.storage("cannot write the backup to \(url.path): \(error.message)")
        }
        logger.info("exported a backup of \(total) records")
        return total
    }

    /// Creates a new wallet at `walletURL` (protected by `key`) holding everything in the backup
    /// at `backupURL`. The backup is checked whole first; the new wallet is then built under a
    /// hidden name beside the target (`.NAME.restoring`), written in one transaction, flushed, and
    /// renamed into place. On any error — or if the process is killed at any moment — there is
    /// no wallet at `walletURL`, and the next restore clears what an interrupted one left. The
    /// returned wallet is opened anew at `walletURL` (with a passphrase key that costs one more
    /// key derivation).
    /// - Throws: ``WalletError/wrongKey(_:)`` for a wrong backup passphrase,
    ///   ``WalletError/corrupted(_:)`` for a damaged file, ``WalletError/walletExists(path:)``.
    public static func importBackup(from backupURL: URL, passphrase: String, into walletURL: URL, key: WalletKey,
                                    configuration: Configuration = Configuration(),
                                    progress: (@Sendable (BackupProgress) -> Void)? = nil) async throws -> Wallet {
        let file: Data
        do { file = try Data(contentsOf: backupURL) } catch {
            throw WalletError.storage("cannot read the backup \(backupURL.path): \(error.localizedDescription)")
        }
        var reader = BackupReader(file: file)
        let stream = try reader.open(passphrase: passphrase)
        // Decrypt and parse everything before creating anything.
        guard let first = try reader.next(stream), !first.final, case let .object(head)? = try? JSONValue.parse(String(decoding: first.message, as: UTF8.self)),
              head.first(where: { $0.0 == "format" })?.1 == .number("1"),
              case let .number(countText)? = head.first(where: { $0.0 == "records" })?.1, let total = Int(countText)
        else { throw WalletError.corrupted("the backup's first message is not a Coffer backup header") }
        var records = [(type: String, id: String, value: String, tags: WalletTags, expiry: Int64?)]()
        records.reserveCapacity(total)
        var sawFinal = false
        while let chunk = try reader.next(stream) {
            if chunk.final {
                guard chunk.message.isEmpty else { throw WalletError.corrupted("the backup's final message is not empty") }
                sawFinal = true
                break
            }
            guard case let .array(items)? = try? JSONValue.parse(String(decoding: chunk.message, as: UTF8.self)) else {
                throw WalletError.corrupted("a backup message is not a list of records")
            }
            for item in items { records.append(try Self.backupRecord(item)) }
            progress?(BackupProgress(done: records.count, total: total))
        }
        guard sawFinal, reader.atEnd else { throw WalletError.corrupted("the backup is truncated or has bytes after its end") }
        guard records.count == total else { throw WalletError.corrupted("the backup holds \(records.count) records; its header says \(total)") }

        // Built beside the target under a fixed temporary name and moved into place only once its
        // last commit is on disk: a restore killed at any moment leaves no wallet at the target
        // (the next restore removes what it left and starts again).
        if FileManager.default.fileExists(atPath: walletURL.path) { throw WalletError.walletExists(path: walletURL.path) }
        let temporary = restoringURL(for: walletURL)
        removeWalletFiles(at: temporary)
        do {
            let wallet = try await Wallet.create(at: temporary, key: key, configuration: configuration)
            do {
                let keys = wallet.keys
                let batch = records
                try await wallet.pool.write { db in
                    let store = RecordStore(db: db, keys: keys, allowReserved: true)
                    for r in batch {
                        try store.add(type: r.type, id: r.id, value: r.value, tags: r.tags,
                                      expiresAt: r.expiry.map { Date(timeIntervalSince1970: Double($0) / 1000) })
                    }
                }
                // Closing the last connection checkpoints the WAL into the main file and removes it.
                try wallet.close()
            } catch {
                try? wallet.close()
                throw error
            }
            try moveRestoredWallet(from: temporary, to: walletURL)
        } catch {
            removeWalletFiles(at: temporary)
            throw Self.translate(error)
        }
        progress?(BackupProgress(done: total, total: total))
        return try await Wallet.open(at: walletURL, key: key, configuration: configuration)
    }

    /// Where a restore into `walletURL` builds the new wallet: a fixed hidden name beside it, so
    /// that a restore killed half-way is found and cleared by the next one.
    static func restoringURL(for walletURL: URL) -> URL {
        walletURL.deletingLastPathComponent().appendingPathComponent(".\(walletURL.lastPathComponent).restoring")
    }

    /// Removes a wallet file and its WAL and shared-memory files, if present.
    static func removeWalletFiles(at url: URL) {
        for suffix in ["", "-wal", "-shm", "-journal"] { try? FileManager.default.removeItem(atPath: url.path + suffix) }
    }

    /// Flushes the finished wallet, renames it to `target` (refusing if something appeared
    /// there meanwhile), and flushes the folder so the rename survives a crash.
    static func moveRestoredWallet(from temporary: URL, to target: URL) throws {
        guard !FileManager.default.fileExists(atPath: temporary.path + "-wal") else {
            throw WalletError.storage("the restored wallet's WAL was not checkpointed; nothing was moved into place")
        }
        do {
            let handle = try FileHandle(forUpdating: temporary)
            defer { try? handle.close() }
            try handle.synchronize()
        } catch {
            throw WalletError.storage("cannot flush the restored wallet at \(temporary.path): \(error.localizedDescription)")
        }
        guard !FileManager.default.fileExists(atPath: target.path) else { throw WalletError.walletExists(path: target.path) }
        // moveItem renames within one folder and refuses an existing destination.
        do { try FileManager.default.moveItem(at: temporary, to: target) } catch {
            throw WalletError.storage("cannot move the restored wallet into place at \(target.path): \(error.localizedDescription)")
        }
        removeWalletFiles(at: temporary)
        DurableFile.syncFolder(target.deletingLastPathComponent())
    }

    static func backupRecord(_ item: JSONValue) throws -> (type: String, id: String, value: String, tags: WalletTags, expiry: Int64?) {
        guard case let .object(fields) = item else { throw WalletError.corrupted("a backup record is not an object") }
        func field(_ name: String) -> JSONValue? { fields.last(where: { $0.0 == name })?.1 }
        guard case let .string(type)? = field("type"), case let .string(id)? = field("id"), case let .string(value)? = field("value"),
              let tagsValue = field("tags")
        else { throw WalletError.corrupted("a backup record lacks type, id, value or tags") }
        let tags: WalletTags
        do { tags = try WalletTags(jsonValue: tagsValue) } catch { throw WalletError.corrupted("a backup record's tags: \(error)") }
        var expiry: Int64?
        if case let .number(n)? = field("expiresAt") { expiry = Int64(n) }
        return (type, id, value, tags, expiry)
    }

    static func appendU32(_ v: UInt32, to data: inout Data) {
        withUnsafeBytes(of: v.bigEndian) { data.append(contentsOf: $0) }
    }

    static func appendMessage(_ message: Data, to data: inout Data) {
        appendU32(UInt32(message.count), to: &data)
        data.append(message)
    }
}

/// Walks a backup file's header and length-prefixed messages.
struct BackupReader {
    let file: Data
    var offset = 0

    var atEnd: Bool { offset == file.count }

    mutating func open(passphrase: String) throws -> SecretStreamReader {
        let headerEnd = BackupFormat.prefixBytes + SecretStreamReader.headerByteCount
        guard file.count >= headerEnd, Array(file.prefix(8)) == BackupFormat.magic else {
            throw WalletError.corrupted("not a Coffer backup file (bad magic or too short)")
        }
        guard file[file.startIndex + 8] == BackupFormat.version else {
            throw WalletError.invalidInput("backup format \(file[file.startIndex + 8]) is newer than this Coffer reads (\(BackupFormat.version))")
        }
        let ops = u32(at: 9), memKiB = u32(at: 13)
        let parameters = Argon2idParameters(opsLimit: UInt64(ops), memLimit: Int(memKiB) * 1024)
        // Refuse costs over Coffer's cap (which export also enforces) before any key work, so an
        // altered header cannot make a restore take minutes or exhaust memory.
        do { try parameters.validateWithinCap() } catch { throw WalletError.corrupted("the backup's key costs are refused: \(error)") }
        let salt = file.subdata(in: 17..<33)
        let key: SecretKey
        do { key = try Argon2id.deriveKey(passphrase: passphrase, salt: salt, parameters: parameters) } catch {
            throw WalletError.corrupted("the backup's key costs are invalid: \(error)")
        }
        offset = headerEnd
        do { return try SecretStreamReader(key: key, header: file.subdata(in: BackupFormat.prefixBytes..<headerEnd)) } catch {
            throw WalletError.corrupted("the backup's stream header is invalid")
        }
    }

    func u32(at i: Int) -> UInt32 {
        file[(file.startIndex + i)..<(file.startIndex + i + 4)].reduce(0) { $0 << 8 | UInt32($1) }
    }

    /// The next decrypted message; nil at the end of the file.
    mutating func next(_ stream: SecretStreamReader) throws -> (message: Data, final: Bool)? {
        guard offset < file.count else { return nil }
        guard offset + 4 <= file.count else { throw WalletError.corrupted("the backup ends inside a message length") }
        let length = Int(u32(at: offset))
        guard offset + 4 + length <= file.count else { throw WalletError.corrupted("the backup is truncated inside a message") }
        let ciphertext = file.subdata(in: (offset + 4)..<(offset + 4 + length))
        let first = offset == BackupFormat.prefixBytes + SecretStreamReader.headerByteCount
        offset += 4 + length
        do { return try stream.pull(ciphertext) } catch {
            // The first message fails only under a wrong passphrase (or a damaged start).
            if first { throw WalletError.wrongKey("the backup passphrase is wrong (or the backup is damaged)") }
            throw WalletError.corrupted("a backup message failed authentication (altered or reordered)")
        }
    }
}
