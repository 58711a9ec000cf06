// Backup: the whole wallet (records and secrets) in one file under its own passphrase.

import CofferCrypto
import CofferSync
import Foundation
import GRDB
import Logging

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
///                    (or about 1 MiB of JSON)
///                    {"type","id","value","tags","expiresAt"?}, then an empty final message.
///
/// The key is Argon2id of the backup passphrase with the stored costs and salt, so altering
/// those fails the first message as a wrong passphrase would. A wrong passphrase is detected
/// before any wallet is created; a missing final message, a reordered or altered message
/// before the restored wallet is moved into place (it is then removed).
enum BackupFormat {
    static let magic = Array("CFBACKUP".utf8)
    static let version: UInt8 = 1
    static let batch = 512
    /// Plaintext bytes after which a batch is sealed even if it holds fewer records.
    static let batchBytes = 1 << 20
    static let prefixBytes = 33
}

/// A backup's key: Argon2id of the backup passphrase under a fresh salt, derived ahead of an
/// export (see ``Wallet/exportBackup(to:key:firstFormatTypes:progress:)``). Its bytes are a
/// `SecretKey`; it prints nothing of them.
public struct BackupKey: Sendable {
    let key: SecretKey
    let salt: Data
    let parameters: Argon2idParameters

    /// The least a new backup's key may cost: libsodium's INTERACTIVE preset (2 passes, 64 MiB).
    /// A backup file leaves the device, so its passphrase must withstand offline guessing;
    /// cheaper costs are refused on export (a restore still reads an older, cheaper file).
    public static let floor = Argon2idParameters.interactive

    /// Derives the key of a new backup from `passphrase` with `parameters`: by default
    /// libsodium's MODERATE preset (3 passes, 256 MiB), never less than ``floor`` in passes or
    /// memory, and at most `Argon2idParameters.cap`.
    /// - Throws: ``WalletError/invalidInput(_:)`` for an empty passphrase, or costs below the
    ///   floor or over the cap.
    public static func derive(passphrase: String, parameters: Argon2idParameters = .moderate) throws -> BackupKey {
        guard !passphrase.isEmpty else { throw WalletError.invalidInput("the backup passphrase must not be empty") }
        guard parameters.opsLimit >= floor.opsLimit, parameters.memLimit >= floor.memLimit else {
            throw WalletError.invalidInput(
                "backup key costs \(parameters) are below the floor \(floor) (libsodium's INTERACTIVE); use at least that, or the default MODERATE"
            )
        }
        do { try parameters.validateWithinCap() } catch { throw WalletError.invalidInput("backup key costs: \(error)") }
        let salt = SecureRandom.bytes(Argon2idParameters.saltByteCount)
        do {
            return BackupKey(
                key: try Argon2id.deriveKey(passphrase: passphrase, salt: salt, parameters: parameters), salt: salt, parameters: parameters)
        } catch { throw WalletError.invalidInput("backup key costs: \(error)") }
    }
}

extension Wallet {
    /// Writes every record and secret into `url`, encrypted under `passphrase`, and returns the
    /// number of records written. It streams: one consistent read of the wallet, records
    /// opened, written as JSON and encrypted a batch at a time (at most 512 records or about
    /// 1 MiB of plaintext, wiped after use), so memory stays flat at any size. The file is built
    /// under a hidden name beside `url` (`.NAME.partial`, mode 0600), flushed, and renamed into
    /// place; a failed or killed export leaves nothing at `url` (an older file there stays), and
    /// the next export removes the partial file.
    ///
    /// Records sealed in the first box format did not keep their type (only its keyed blind
    /// index): they are exported under the type that another record of the same blind type, a
    /// reserved type, or one of `firstFormatTypes` turns out to have. The restored wallet seals
    /// them in today's format.
    /// - Parameters:
    ///   - url: the backup file to write.
    ///   - passphrase: the backup passphrase (Argon2id derives the key).
    ///   - parameters: the Argon2id costs for the backup key: MODERATE by default, at least
    ///     ``BackupKey/floor`` (INTERACTIVE).
    ///   - firstFormatTypes: types that first-format records may have, for wallets in which no
    ///     newer record of that type tells it (each is checked against the blind; a wrong guess
    ///     matches nothing).
    ///   - progress: called as records are written.
    /// - Throws: ``WalletError/invalidInput(_:)`` for an empty passphrase, costs below the floor
    ///   or over the cap, or a first-format record whose type nothing tells.
    @discardableResult
    public func exportBackup(
        to url: URL, passphrase: String, parameters: Argon2idParameters = .moderate,
        firstFormatTypes: [String] = [],
        progress: (@Sendable (BackupProgress) -> Void)? = nil
    ) async throws -> Int {
        try await exportBackup(
            to: url, key: BackupKey.derive(passphrase: passphrase, parameters: parameters),
            firstFormatTypes: firstFormatTypes, progress: progress)
    }

    /// ``exportBackup(to:passphrase:parameters:firstFormatTypes:progress:)`` with a backup key
    /// derived beforehand (``BackupKey/derive(passphrase:parameters:)``): a process that derives
    /// it before opening the wallet does not hold the key derivation's memory (256 MiB for
    /// MODERATE) and the wallet's at the same time. A key serves one export.
    @discardableResult
    public func exportBackup(
        to url: URL, key backupKey: BackupKey, firstFormatTypes: [String] = [],
        progress: (@Sendable (BackupProgress) -> Void)? = nil
    ) async throws -> Int {
        let key = backupKey.key
        let salt = backupKey.salt
        let parameters = backupKey.parameters
        let handoff = Handoff(try SecretStreamWriter(key: key))
        let writer = handoff.value
        var head = Data(BackupFormat.magic)
        head.append(BackupFormat.version)
        Self.appendU32(UInt32(parameters.opsLimit), to: &head)
        Self.appendU32(UInt32(parameters.memLimit / 1024), to: &head)
        head.append(salt)
        head.append(writer.header)
        let file: DurableFileWriter
        do { file = try DurableFileWriter(target: url) } catch {
            throw WalletError.storage("cannot write the backup to \(url.path): \(error.message)", cause: StorageCause(error))
        }
        let start = head
        let handedFile = Handoff(file)
        let total: Int
        do {
            // One read transaction: the backup is one consistent state of the wallet.
            total = try await gated { keys in
                try await SQLiteWalletStorage(pool: pool, path: path).read(keys.tables) { tx -> Int in
                    // The wallet file's own steps around the export both backends share: a larger
                    // page cache for the walk, and the names of first-format records' types.
                    // Under another process's rotation every record would fail to open: say so.
                    try await tx.withDatabase { db in try Self.checkKeysBeforeWalk(db, keys) }
                    try await tx.withDatabase { db in try Self.beginBulk(db, cacheKiB: Self.exportCacheKiB) }
                    do {
                        let names = try await tx.withDatabase { db in try Self.typeNames(db, keys: keys, candidates: firstFormatTypes) }
                        let written = try await BackupExport.write(
                            tx, keys: keys, names: names, start: start, writer: handoff.value, file: handedFile.value, progress: progress)
                        try await tx.withDatabase { db in Self.endBulk(db, cacheKiB: Schema.cacheKiB) }
                        return written
                    } catch {
                        _ = try? await tx.withDatabase { db in Self.endBulk(db, cacheKiB: Schema.cacheKiB) }
                        throw error
                    }
                }
            }
            try file.commit()
        } catch {
            file.abandon()
            if let e = error as? FileOperationError {
                throw WalletError.storage("cannot write the backup to \(url.path): \(e.message)", cause: StorageCause(e))
            }
            throw Self.translate(error)
        }
        logger.info("exported a backup of \(total) records")
        return total
    }

    static func writeMessage(_ message: Data, to file: DurableFileWriter) throws(FileOperationError) {
        var length = Data()
        appendU32(UInt32(message.count), to: &length)
        try file.write(length)
        try file.write(message)
    }

    /// Creates a new wallet at `walletURL` (protected by `key`) holding everything in the backup
    /// at `backupURL`. It streams: the file is read, decrypted, parsed and inserted one message
    /// at a time (decrypted plaintext wiped after use), so memory stays flat at any size, and
    /// `progress` moves as records are inserted. A wrong passphrase is found at the first message,
    /// before anything is created. The new wallet is built beside the target under a hidden
    /// name (`.NAME.restoring`) in one transaction, flushed, and linked into place (never over a
    /// wallet) only after the backup's final message checked out. On any error — a damaged,
    /// truncated or reordered backup included — or if the process is killed at any moment, there
    /// is no wallet at `walletURL`, and the next open, create or restore of it clears what an
    /// interrupted one left.
    /// Restores and creates of one wallet run one at a time, in any process (a lock file beside
    /// it): of several at once one succeeds and the others throw `walletExists`. The
    /// returned wallet is opened anew at `walletURL` (with a passphrase key that costs one more
    /// key derivation).
    /// - Throws: ``WalletError/wrongKey(_:)`` for a wrong backup passphrase,
    ///   ``WalletError/corrupted(_:)`` for a damaged file, ``WalletError/walletExists(path:)``
    ///   when a wallet is at `walletURL` (also one another restore made meanwhile),
    ///   ``WalletError/invalidInput(_:)`` when the backup file is missing or cannot be opened.
    public static func importBackup(
        from backupURL: URL, passphrase: String, into walletURL: URL, key: WalletKey,
        configuration: Configuration = Configuration(),
        progress: (@Sendable (BackupProgress) -> Void)? = nil
    ) async throws -> Wallet {
        let backup = try openBackup(backupURL, passphrase: passphrase)
        defer { try? backup.handle.close() }

        // Built beside the target under a fixed temporary name and moved into place only once its
        // last commit is on disk: a restore killed at any moment leaves no wallet at the target
        // (the next restore removes what it left and starts again). One restore or create of the
        // target at a time, in any process: the others wait for the wallet lock and then find
        // the wallet there (or, when this one failed, go ahead themselves).
        if walletFileExists(walletURL.path) { throw WalletError.walletExists(path: walletURL.path) }
        TestPause.at("restore-starting")
        let lock = try await creationLock(for: walletURL)
        defer { lock.release() }
        if walletFileExists(walletURL.path) { throw WalletError.walletExists(path: walletURL.path) }
        let temporary = restoringURL(for: walletURL)
        removeWalletFiles(at: temporary)
        do {
            let wallet = try await Wallet.create(at: temporary, key: key, configuration: configuration, schemaUpTo: nil, locking: false)
            TestPause.at("restore-building") // debug builds only: lets tests kill a restore whose temporary exists
            do {
                try await wallet.gated { keys in
                    try await wallet.pool.writeWithoutTransaction { db in
                        try Self.beginBulk(db, cacheKiB: Self.importCacheKiB)
                        defer { Self.endBulk(db, cacheKiB: Schema.writerCacheKiB) }
                        try db.inTransaction {
                            try Self.restoreRecords(
                                of: backup, into: RecordStore(db: db, keys: keys, allowReserved: true), progress: progress)
                            return .commit
                        }
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
        lock.release()
        return try await Wallet.open(at: walletURL, key: key, configuration: configuration)
    }

    /// A backup opened for reading: its file, its reader and decrypting stream (handed to the
    /// write closure that reads them), and the number of records its header announces.
    struct OpenedBackup: Sendable {
        let handle: FileHandle
        let reader: Handoff<BackupReader>
        let stream: Handoff<SecretStreamReader>
        let total: Int
    }

    /// Opens the input file at `url` for reading. One that cannot be opened, or a folder, is
    /// bad input (the caller named the wrong path), named as `what` with its path.
    static func openInput(_ url: URL, naming what: String) throws -> FileHandle {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory), isDirectory.boolValue {
            throw WalletError.invalidInput("cannot read \(what) \(url.path): it is a folder; give the path of the file")
        }
        do { return try FileHandle(forReadingFrom: url) } catch {
            throw WalletError.invalidInput("cannot read \(what) \(url.path): \(error.localizedDescription)")
        }
    }

    /// Opens the backup at `backupURL`, derives its key from `passphrase` and reads its header
    /// message. A wrong passphrase is found here, before anything is written.
    static func openBackup(_ backupURL: URL, passphrase: String) throws -> OpenedBackup {
        let handle = try openInput(backupURL, naming: "the backup")
        do {
            let reader = BackupReader(handle: handle)
            let stream = try reader.open(passphrase: passphrase)
            guard let first = try reader.next(stream), !first.final,
                case .object(let head)? = try? JSONValue.parse(String(decoding: first.message, as: UTF8.self)),
                head.first(where: { $0.0 == "format" })?.1 == .number("1"),
                case .number(let countText)? = head.first(where: { $0.0 == "records" })?.1, let total = Int(countText), total >= 0
            else { throw WalletError.corrupted("the backup's first message is not a Coffer backup header") }
            return OpenedBackup(handle: handle, reader: Handoff(reader), stream: Handoff(stream), total: total)
        } catch {
            try? handle.close()
            throw error
        }
    }

    /// Adds every record of `backup` through `store` (inside the caller's transaction), checking
    /// the stream's end and the header's count; wipes each decrypted message after use.
    static func restoreRecords(
        of backup: OpenedBackup, into store: RecordStore, progress: (@Sendable (BackupProgress) -> Void)?
    ) throws {
        try forEachBackupRecord(of: backup, progress: progress) { r in
            try store.add(
                type: r.type, id: r.id, value: r.value, tags: r.tags,
                expiresAt: r.expiry.map { Date(timeIntervalSince1970: Double($0) / 1000) })
        }
    }

    /// Calls `body` with every record of `backup` in order, checking the stream's end and the
    /// header's count; wipes each decrypted message after use.
    static func forEachBackupRecord(
        of backup: OpenedBackup, progress: (@Sendable (BackupProgress) -> Void)?,
        _ body: ((type: String, id: String, value: String, tags: WalletTags, expiry: Int64?)) throws -> Void
    ) throws {
        let total = backup.total
        let reader = backup.reader.value
        var done = 0
        var sawFinal = false
        progress?(BackupProgress(done: 0, total: total))
        while var chunk = try reader.next(backup.stream.value) {
            defer { chunk.message.resetBytes(in: 0..<chunk.message.count) }
            if chunk.final {
                guard chunk.message.isEmpty else { throw WalletError.corrupted("the backup's final message is not empty") }
                sawFinal = true
                break
            }
            guard case .array(let items)? = try? JSONValue.parse(String(decoding: chunk.message, as: UTF8.self)) else {
                throw WalletError.corrupted("a backup message is not a list of records")
            }
            for item in items {
                let r = try Self.backupRecord(item)
                done += 1
                guard done <= total else { throw WalletError.corrupted("the backup holds more records than its header says (\(total))") }
                try body(r)
            }
            progress?(BackupProgress(done: done, total: total))
        }
        guard sawFinal, try reader.atEnd() else { throw WalletError.corrupted("the backup is truncated or has bytes after its end") }
        guard done == total else { throw WalletError.corrupted("the backup holds \(done) records; its header says \(total)") }
    }

    /// The lock one create or restore of the wallet at `walletURL` holds, in any process:
    /// `.NAME.lock` beside it, removed when released (see `ProcessLock`). Makes the folder first.
    static func creationLock(for walletURL: URL) async throws -> ProcessLock.Held {
        let folder = walletURL.deletingLastPathComponent()
        do { try DurableFile.ensureFolder(folder) } catch {
            throw WalletError.storage("cannot create folder for \(walletURL.path): \(error.message)", cause: StorageCause(error))
        }
        do { return try await ProcessLock.acquire(at: creationLockPath(for: walletURL), removeWhenDone: true) } catch {
            throw WalletError.storage(error.message, cause: StorageCause(error))
        }
    }

    /// The path of the creation lock's file: `.NAME.lock` beside the wallet.
    static func creationLockPath(for walletURL: URL) -> String {
        walletURL.deletingLastPathComponent().appendingPathComponent(".\(walletURL.lastPathComponent).lock").path
    }

    /// Removes what a restore killed part-way left beside the wallet (`.NAME.restoring` and its
    /// companions), so that no copy of a half-made wallet outlives it. Only while holding the
    /// wallet's creation lock, which a live restore holds from before it makes its temporary
    /// until after it has removed it, taken without waiting: when another process holds it (a
    /// restore or create in progress), the files are left for a later open. Costs a few `stat`s
    /// when there is nothing to remove. Failures are ignored (the next open tries again).
    static func sweepInterruptedRestore(of walletURL: URL) {
        let temporary = restoringURL(for: walletURL)
        guard walletFileSuffixes.contains(where: { FileManager.default.fileExists(atPath: temporary.path + $0) }) else { return }
        let remove = { () throws(ProcessLockError) in removeWalletFiles(at: temporary) }
        _ = try? ProcessLock.withLockIfAvailable(at: creationLockPath(for: walletURL), removeWhenDone: true, failure: { $0 }, remove)
    }

    /// A wallet file's own name and those of SQLite's companion files beside it.
    static let walletFileSuffixes = ["", "-wal", "-shm", "-journal"]

    /// Where a restore into `walletURL` builds the new wallet: a fixed hidden name beside it, so
    /// that a restore killed half-way is found and cleared by the next one.
    static func restoringURL(for walletURL: URL) -> URL {
        walletURL.deletingLastPathComponent().appendingPathComponent(".\(walletURL.lastPathComponent).restoring")
    }

    /// Removes a wallet file and its WAL and shared-memory files, if present.
    static func removeWalletFiles(at url: URL) {
        for suffix in walletFileSuffixes { try? FileManager.default.removeItem(atPath: url.path + suffix) }
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
            throw WalletError.storage(
                "cannot flush the restored wallet at \(temporary.path): \(error.localizedDescription)", cause: StorageCause(error))
        }
        // An empty file that a killed create left at the target is no wallet (see
        // walletFileExists): it goes first. (Every caller holds the wallet's creation lock.)
        if FileManager.default.fileExists(atPath: target.path), !walletFileExists(target.path) { removeWalletFiles(at: target) }
        // link(2) makes the second name only if none is there (a rename would replace a wallet
        // made meanwhile); the temporary name is removed after.
        if link(temporary.path, target.path) != 0 {
            let code = errno
            if code == EEXIST { throw WalletError.walletExists(path: target.path) }
            throw WalletError.storage(
                "cannot move the restored wallet into place at \(target.path): \(String(cString: strerror(code)))")
        }
        removeWalletFiles(at: temporary)
        DurableFile.syncFolder(target.deletingLastPathComponent())
    }

    static func backupRecord(_ item: JSONValue) throws -> (type: String, id: String, value: String, tags: WalletTags, expiry: Int64?) {
        guard case .object(let fields) = item else { throw WalletError.corrupted("a backup record is not an object") }
        func field(_ name: String) -> JSONValue? { fields.last(where: { $0.0 == name })?.1 }
        guard case .string(let type)? = field("type"), case .string(let id)? = field("id"), case .string(let value)? = field("value"),
            let tagsValue = field("tags")
        else { throw WalletError.corrupted("a backup record lacks type, id, value or tags") }
        let tags: WalletTags
        do { tags = try WalletTags(jsonValue: tagsValue) } catch { throw WalletError.corrupted("a backup record's tags: \(error)") }
        var expiry: Int64?
        if case .number(let n)? = field("expiresAt") { expiry = Int64(n) }
        return (type, id, value, tags, expiry)
    }

    static func appendU32(_ v: UInt32, to data: inout Data) {
        withUnsafeBytes(of: v.bigEndian) { data.append(contentsOf: $0) }
    }

}

/// Reads a backup file's header and length-prefixed messages from a file handle, one message
/// at a time. Not `Sendable`: one task at a time owns it (the restore hands it to its write
/// closure as a `Handoff` and reads it sequentially there).
final class BackupReader {
    let handle: FileHandle
    private var first = true

    /// Longest message accepted: a batch of about 1 MiB plus one record as large as the wallet
    /// allows, JSON-escaped; a longer length field is damage, not a reason to allocate.
    static let maxMessageBytes = 160 << 20

    init(handle: FileHandle) { self.handle = handle }

    /// Exactly `count` bytes, or fewer at the end of the file.
    private func read(_ count: Int) throws -> Data {
        var out = Data()
        while out.count < count {
            guard let piece = try handle.read(upToCount: count - out.count), !piece.isEmpty else { break }
            out.append(piece)
        }
        return out
    }

    /// Whether the file has nothing after the messages read so far.
    func atEnd() throws -> Bool { try read(1).isEmpty }

    func open(passphrase: String) throws -> SecretStreamReader {
        let headerEnd = BackupFormat.prefixBytes + SecretStreamReader.headerByteCount
        let header: Data
        do { header = try read(headerEnd) } catch {
            throw WalletError.storage("cannot read the backup: \(error.localizedDescription)", cause: StorageCause(error))
        }
        guard header.count == headerEnd, Array(header.prefix(8)) == BackupFormat.magic else {
            throw WalletError.corrupted("not a Coffer backup file (bad magic or too short)")
        }
        guard header[8] == BackupFormat.version else {
            throw WalletError.invalidInput("backup format \(header[8]) is newer than this Coffer reads (\(BackupFormat.version))")
        }
        let ops = Self.u32(header, at: 9)
        let memKiB = Self.u32(header, at: 13)
        let parameters = Argon2idParameters(opsLimit: UInt64(ops), memLimit: Int(memKiB) * 1024)
        // Refuse costs over Coffer's cap (which export also enforces) before any key work, so an
        // altered header cannot make a restore take minutes or exhaust memory.
        do { try parameters.validateWithinCap() } catch { throw WalletError.corrupted("the backup's key costs are refused: \(error)") }
        let salt = header.subdata(in: 17..<33)
        let key: SecretKey
        do { key = try Argon2id.deriveKey(passphrase: passphrase, salt: salt, parameters: parameters) } catch {
            throw WalletError.corrupted("the backup's key costs are invalid: \(error)")
        }
        do { return try SecretStreamReader(key: key, header: header.subdata(in: BackupFormat.prefixBytes..<headerEnd)) } catch {
            throw WalletError.corrupted("the backup's stream header is invalid")
        }
    }

    static func u32(_ data: Data, at i: Int) -> UInt32 {
        data[(data.startIndex + i)..<(data.startIndex + i + 4)].reduce(0) { $0 << 8 | UInt32($1) }
    }

    /// The next decrypted message; nil at the end of the file.
    func next(_ stream: SecretStreamReader) throws -> (message: Data, final: Bool)? {
        let lengthBytes = try read(4)
        if lengthBytes.isEmpty { return nil }
        guard lengthBytes.count == 4 else { throw WalletError.corrupted("the backup ends inside a message length") }
        let length = Int(Self.u32(lengthBytes, at: 0))
        guard length <= Self.maxMessageBytes else {
            throw WalletError.corrupted("a backup message claims \(length) bytes, more than a backup writes")
        }
        let ciphertext = try read(length)
        guard ciphertext.count == length else { throw WalletError.corrupted("the backup is truncated inside a message") }
        let wasFirst = first
        first = false
        do { return try stream.pull(ciphertext) } catch {
            // The first message fails only under a wrong passphrase (or a damaged start).
            if wasFirst { throw WalletError.wrongKey("the backup passphrase is wrong (or the backup is damaged)") }
            throw WalletError.corrupted("a backup message failed authentication (altered or reordered)")
        }
    }
}

/// One message of records being exported: JSON written straight into bytes that are wiped once
/// sealed (no `String` copy of the plaintext is made).
struct BackupBatch {
    private(set) var bytes: [UInt8]
    private(set) var count = 0

    /// A batch with room reserved up front for a full batch, so appending never reallocates
    /// (which would leave an unwiped copy of the plaintext in freed memory) unless one record
    /// is larger than that; then ``ensureRoom(_:)`` copies into a larger buffer and wipes the old.
    init() {
        bytes = []
        bytes.reserveCapacity(BackupFormat.batchBytes + 64 * 1024)
        bytes.append(UInt8(ascii: "["))
    }

    var byteCount: Int { bytes.count }

    /// Makes room for `extra` more bytes without a reallocation that leaves plaintext behind.
    private mutating func ensureRoom(_ extra: Int) {
        let needed = bytes.count + extra
        guard needed > bytes.capacity else { return }
        var larger = [UInt8]()
        larger.reserveCapacity(Swift.max(needed, bytes.capacity * 2))
        larger.append(contentsOf: bytes)
        SecureMemory.wipe(&bytes)
        bytes = larger
    }

    /// The most bytes one record can take in the batch (every string byte escaped as `\u00XX`).
    static func worstCaseBytes(type: String, contents: RecordCodec.Contents) -> Int {
        var strings = type.utf8.count + contents.id.utf8.count + contents.value.utf8.count + (contents.valueBytes?.byteCount ?? 0)
        var pieces = 3
        for (name, value) in contents.tags.effective {
            strings += name.utf8.count
            pieces += 1
            switch value {
            case .string(let v):
                strings += v.utf8.count
                pieces += 1
            case .list(let list):
                for v in list { strings += v.utf8.count }
                pieces += list.count + 1
            }
        }
        return 6 * strings + 4 * pieces + 96
    }

    mutating func append(type: String, contents: RecordCodec.Contents, expiry: Int64?) {
        ensureRoom(Self.worstCaseBytes(type: type, contents: contents))
        if count > 0 { bytes.append(UInt8(ascii: ",")) }
        count += 1
        bytes.append(contentsOf: #"{"type":"#.utf8)
        Self.appendString(type, to: &bytes)
        bytes.append(contentsOf: #","id":"#.utf8)
        Self.appendString(contents.id, to: &bytes)
        bytes.append(contentsOf: #","value":"#.utf8)
        if let valueBytes = contents.valueBytes {
            valueBytes.withUnsafeBytes { Self.appendString(bytes: $0, to: &bytes) }
        } else {
            Self.appendString(contents.value, to: &bytes)
        }
        bytes.append(contentsOf: #","tags":{"#.utf8)
        for (i, (name, value)) in contents.tags.effective.enumerated() {
            if i > 0 { bytes.append(UInt8(ascii: ",")) }
            Self.appendString(name, to: &bytes)
            bytes.append(UInt8(ascii: ":"))
            switch value {
            case .string(let v): Self.appendString(v, to: &bytes)
            case .list(let list):
                bytes.append(UInt8(ascii: "["))
                for (j, v) in list.enumerated() {
                    if j > 0 { bytes.append(UInt8(ascii: ",")) }
                    Self.appendString(v, to: &bytes)
                }
                bytes.append(UInt8(ascii: "]"))
            }
        }
        bytes.append(UInt8(ascii: "}"))
        if let expiry { bytes.append(contentsOf: #","expiresAt":\#(expiry)"#.utf8) }
        bytes.append(UInt8(ascii: "}"))
    }

    /// Encrypts the batch as one stream message.
    mutating func seal(_ writer: SecretStreamWriter) -> Data {
        ensureRoom(1)
        bytes.append(UInt8(ascii: "]"))
        var plain = Data(bytes)
        defer { plain.resetBytes(in: 0..<plain.count) }
        return writer.push(plain)
    }

    /// Wipes the plaintext and starts a new batch.
    mutating func reset() {
        SecureMemory.wipe(&bytes)
        bytes.removeAll(keepingCapacity: true)
        bytes.append(UInt8(ascii: "["))
        count = 0
    }

    /// A JSON string: quotes, backslashes and control characters escaped, other UTF-8 as is.
    static func appendString(_ s: String, to out: inout [UInt8]) { appendString(bytes: s.utf8, to: &out) }

    /// A JSON string of UTF-8 bytes (a secret's, lent from guarded memory), escaped as above.
    static func appendString<Bytes: Sequence<UInt8>>(bytes: Bytes, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        let hex = Array("0123456789abcdef".utf8)
        for b in bytes {
            switch b {
            case UInt8(ascii: "\""): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
            case UInt8(ascii: "\\"): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
            case 0..<0x20:
                out.append(contentsOf: [
                    UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"), hex[Int(b >> 4)], hex[Int(b & 15)],
                ])
            default: out.append(b)
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}
