// The disk layer: one sealed file per entry under a folder per kind, named by a keyed hash of the
// kind and id; the index rebuilt from a listing; the anchor file whose absence means the OS purged the
// folder; and the folder lock (an in-process lock and a `flock(2)`) every change runs under.

import CofferCrypto
import CofferFileModes
import CofferSync
import Foundation
import Logging

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `close(2)`, named apart from ``MediaCache/close()``.
func closeDescriptor(_ fd: Int32) {
    #if canImport(Glibc)
    _ = Glibc.close(fd)
    #else
    _ = Darwin.close(fd)
    #endif
}

/// A disk entry: its kind and the first 128 bits of a keyed hash (HMAC-SHA256 under a key derived
/// from the cache key) of its kind and id, which is also its file name (hex), so the index is
/// rebuilt from a directory listing alone and the name reveals nothing without the key.
struct DiskKey: CacheIndexKey {
    let kind: MediaKind
    let high: UInt64
    let low: UInt64

    init(_ key: MediaKey, names: KeyedHash) {
        let digest = names.hash(byteCount: 16) { input in
            input.add(key.kind.rawValue)
            input.add(key.id)
        }
        var high: UInt64 = 0
        var low: UInt64 = 0
        for (i, byte) in digest.prefix(16).enumerated() {
            if i < 8 { high = high << 8 | UInt64(byte) } else { low = low << 8 | UInt64(byte) }
        }
        self.kind = key.kind
        self.high = high
        self.low = low
    }

    init?(_ kind: MediaKind, fileName: String) {
        guard fileName.utf8.count == 32, let high = UInt64(fileName.prefix(16), radix: 16),
            let low = UInt64(fileName.suffix(16), radix: 16)
        else { return nil }
        self.kind = kind
        self.high = high
        self.low = low
        guard self.fileName == fileName else { return nil } // only names this type writes
    }

    var fileName: String {
        let h = String(high, radix: 16)
        let l = String(low, radix: 16)
        return String(repeating: "0", count: 16 - h.count) + h + String(repeating: "0", count: 16 - l.count) + l
    }
}

/// This instance's end of the folder lock: the open lock file and the change counter its disk
/// index matches. Kept in ``MediaCache/fileLock``, so every use holds that lock.
struct FolderLockFile {
    /// The lock file, kept open between locks (the package's one lock between processes); nil
    /// before the first lock.
    private var file: ProcessLock.KeptOpen?
    /// The open lock file; -1 when it is not open (not yet, or it could not be opened).
    var fd: Int32 { file?.fd ?? -1 }
    /// The change counter this instance's disk index matches.
    var knownChanges: UInt64 = 0

    /// Takes the lock on the folder's lock file; reopens it when the folder was purged or the
    /// file replaced (a lock on an unlinked file excludes nobody). False when the file cannot
    /// be opened or locked: the error (naming the file and what to do) is logged, and the cache
    /// goes on excluding only this process's threads (a cache may miss; it must not stop the app).
    mutating func acquire(_ folder: URL) -> Bool {
        if fd < 0 { try? MediaCache.ensureFolder(folder) }
        if file == nil { file = ProcessLock.KeptOpen(path: folder.appendingPathComponent(MediaCache.lockName).path) }
        do throws(ProcessLockError) {
            if try file!.lock() == true { knownChanges = .max } // a new file: read the folder again
            return true
        } catch {
            MediaCache.logger.warning(
                "the media cache lock file cannot be used; other processes are not excluded",
                metadata: ["reason": "\(error.message)"])
            return false
        }
    }

    /// Lets the lock taken by ``acquire(_:)`` go (the file stays open).
    func unlock() { file?.unlock() }

    /// Closes the lock file.
    mutating func close() { file?.close() }

    /// Folder lock held. The change counter kept in the lock file (0 when new).
    func readChanges() -> UInt64 {
        var value: UInt64 = 0
        let n = withUnsafeMutableBytes(of: &value) { pread(fd, $0.baseAddress!, 8, 0) }
        return n == 8 ? UInt64(littleEndian: value) : 0
    }

    /// Folder lock held (a no-op without it). Records that this process changed the folder, so
    /// the others re-read it before they evict.
    mutating func noteChange() {
        guard fd >= 0 else { return }
        let next = readChanges() &+ 1
        var bytes = next.littleEndian
        if withUnsafeBytes(of: &bytes, { pwrite(fd, $0.baseAddress!, 8, 0) }) == 8 { knownChanges = next }
    }
}

extension MediaCache {
    // MARK: The folder lock (between processes)

    /// Runs `body` holding this instance's `fileLock` and an exclusive `flock(2)` on the folder's
    /// lock file; first brings the disk index up to date when another process changed the folder
    /// since this instance last looked. Without a lock file (it cannot be created) the body runs
    /// under `fileLock` alone, as a single-process cache. `body` gets the lock file, for
    /// ``FolderLockFile/noteChange()``.
    func withFolderLock<R, E: Error>(sync: Bool = true, _ body: (inout FolderLockFile) throws(E) -> sending R) throws(E) -> sending R {
        try fileLock.withLock { (lockFile) throws(E) -> sending R in
            let locked = lockFile.acquire(folder)
            defer { if locked { lockFile.unlock() } }
            if sync {
                let indexed = state.withLock { $0.diskIndexed }
                if locked {
                    let changes = lockFile.readChanges()
                    if changes != lockFile.knownChanges || !indexed {
                        // Not built yet, or another process stored, evicted or removed files: read
                        // the folder (names and times only) so eviction counts what is really there.
                        loadIndex()
                        lockFile.knownChanges = changes
                    }
                } else if !indexed {
                    loadIndex()
                }
                if !indexed {
                    // The first index of this instance: what a lower limit no longer allows goes now,
                    // whichever call built it.
                    let evicted = state.withLock { enforceLimits(&$0) }
                    if evicted, locked { lockFile.noteChange() }
                }
            }
            return try body(&lockFile)
        }
    }

    /// Folder lock held.
    func noticePurge() {
        state.withLock { state in
            state.removeAllDisk()
            state.diskIndexed = true // an empty folder, known to be empty
            state.mutations &+= 1
            state.purges += 1
        }
        Self.logger.notice("the media cache folder was purged; starting an empty disk layer", metadata: ["folder": "\(folder.path)"])
        try? prepareFolder()
    }

    func kindFolder(_ kind: MediaKind) -> URL { folder.appendingPathComponent(kind.rawValue, isDirectory: true) }

    func fileURL(_ key: DiskKey) -> URL {
        kindFolder(key.kind).appendingPathComponent(key.fileName)
    }

    /// Makes the folder, its kind folders and the anchor file, all owner-only whatever the
    /// umask: new folders 0700 (parents too), the anchor 0600; the cache's own folders and anchor
    /// that exist with a wider mode are restricted to their owner.
    func prepareFolder() throws(MediaCacheError) {
        let anchor = folder.appendingPathComponent(Self.anchorName)
        let fm = FileManager.default
        // No anchor, or one written under another key (or by a release that wrote plaintext).
        let fresh = Self.isLink(anchor.path) || !anchorMatches(anchor.path)
        for kind in MediaKind.allCases {
            let dir = kindFolder(kind)
            // A kind folder is the cache's own: a symbolic link there (to a folder elsewhere,
            // whose files the index would delete and whose mode it would change) is removed, never
            // followed, and a real folder made in its place.
            if Self.isLink(dir.path), unlink(dir.path) != 0, errno != ENOENT {
                throw .storage(
                    "cannot prepare \(folder.path): cannot remove the link \(dir.path): \(Self.errnoText())",
                    cause: StorageCause(errno: errno))
            }
            // Without our anchor, whatever is left is not ours to trust (nor readable): start empty.
            if fresh, fm.fileExists(atPath: dir.path) {
                do { try fm.removeItem(at: dir) } catch {
                    throw .storage("cannot prepare \(folder.path): \(error.localizedDescription)", cause: StorageCause(error))
                }
            }
            try Self.ensureFolder(dir)
        }
        for owned in [folder] + MediaKind.allCases.map(kindFolder) {
            Self.restrictToOwner(owned.path)
            // At every open: Apple's docs say common file operations reset the backup exclusion.
            Self.protectFolder(owned)
        }
        if fresh {
            // Never written through a link: the anchor is the cache's own file.
            if Self.isLink(anchor.path) { unlink(anchor.path) }
            let fd = open(anchor.path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0o600)
            guard fd >= 0 else {
                throw .storage(
                    "cannot prepare \(folder.path): cannot create \(anchor.path): \(Self.errnoText())", cause: StorageCause(errno: errno))
            }
            defer { closeDescriptor(fd) }
            let text = Array(anchorText.utf8)
            guard fchmod(fd, 0o600) == 0, text.withUnsafeBytes({ write(fd, $0.baseAddress!, $0.count) }) == text.count else {
                throw .storage(
                    "cannot prepare \(folder.path): cannot write \(anchor.path): \(Self.errnoText())", cause: StorageCause(errno: errno))
            }
        } else {
            Self.restrictToOwner(anchor.path)
        }
    }

    /// Whether the anchor and every kind folder exist (then restricted to their owner, as
    /// ``prepareFolder()`` would), so opening needs no lock and no change.
    func isPrepared() -> Bool {
        let anchor = folder.appendingPathComponent(Self.anchorName).path
        var info = stat()
        // lstat: a symbolic link at the anchor or at a kind folder is not prepared (prepareFolder
        // replaces it).
        guard lstat(anchor, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, anchorMatches(anchor) else { return false }
        for kind in MediaKind.allCases {
            var dir = stat()
            guard lstat(kindFolder(kind).path, &dir) == 0, (dir.st_mode & S_IFMT) == S_IFDIR else { return false }
        }
        for owned in [folder] + MediaKind.allCases.map(kindFolder) { Self.restrictToOwner(owned.path) }
        Self.restrictToOwner(anchor, mode: info.st_mode)
        return true
    }

    /// Creates `folder` and any missing parents, each new folder 0700 whatever the umask.
    static func ensureFolder(_ folder: URL) throws(MediaCacheError) {
        do { try OwnerOnlyFiles.ensureFolder(folder) } catch { throw .storage(error.message, cause: StorageCause(error)) }
    }

    /// Takes group and other permissions away from one of the cache's own files or folders
    /// (0644 becomes 0600, 0755 becomes 0700); best effort, a failure is logged.
    private static func restrictToOwner(_ path: String) {
        do { try OwnerOnlyFiles.restrictToOwner(path) } catch {
            logger.warning("a cache file or folder stays readable by others", metadata: ["path": "\(path)", "reason": "\(error)"])
        }
    }

    /// ``restrictToOwner(_:)`` for a path whose mode was just read.
    private static func restrictToOwner(_ path: String, mode: mode_t) {
        do { try OwnerOnlyFiles.restrictToOwner(path, mode: mode) } catch {
            logger.warning("a cache file or folder stays readable by others", metadata: ["path": "\(path)", "reason": "\(error)"])
        }
    }

    static func errnoText() -> String { String(cString: strerror(errno)) }

    /// Whether `path` is a symbolic link (dangling or not).
    static func isLink(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFLNK
    }

    /// Indexes the files on disk, oldest access first (so recency survives a restart). Only names
    /// and file times are read; contents are checked when an entry is read.
    private func loadIndex() {
        var found: [(key: DiskKey, bytes: Int, time: Double, deadline: UInt64)] = []
        for kind in MediaKind.allCases {
            let dir = kindFolder(kind)
            for name in (try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? [] {
                let path = dir.appendingPathComponent(name).path
                var info = stat()
                // lstat: an entry is a regular file; a link (to a file elsewhere, whose mode the
                // restriction below would change) is a stranger, removed without being followed.
                guard let key = DiskKey(kind, fileName: name), lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG,
                    info.st_size >= Self.minimumFileSize, let deadline = Self.readDeadline(path, kind: kind)
                else {
                    unlink(path) // a temporary file of an interrupted write, or a stranger
                    continue
                }
                Self.restrictToOwner(path, mode: info.st_mode) // written by an older release under a wide umask
                #if canImport(Darwin)
                let time = Double(info.st_mtimespec.tv_sec) + Double(info.st_mtimespec.tv_nsec) / 1e9
                #else
                let time = Double(info.st_mtim.tv_sec) + Double(info.st_mtim.tv_nsec) / 1e9
                #endif
                found.append((key, Int(info.st_size), time, deadline))
            }
        }
        found.sort { $0.time < $1.time }
        state.withLock { state in
            state.removeAllDisk()
            for entry in found { state.insertDisk(entry.key, deadline: entry.deadline, bytes: entry.bytes) }
            state.diskIndexed = true
            state.scans += 1
        }
    }

    // MARK: File format
    //
    // Header (16 bytes, in the clear and authenticated): magic "CFMC" (4) · format 2 (1) · kind (1)
    // · 0 (2) · deadline in milliseconds since 1970, little-endian (8; 0: never expires). Then the
    // XChaCha20-Poly1305 box: nonce (24) · sealed data · tag (16). The associated data is the header
    // followed by the id, so a file renamed to another entry's name, of another kind or with a
    // changed deadline fails to open. Format 1 (plaintext with a SHA-256) is no longer read.

    static let headerSize = 16
    private static let boxPrefix = 16 + 24
    static let minimumFileSize = boxPrefix + AEAD.tagByteCount + 1
    private static let magic: [UInt8] = Array("CFMC".utf8)
    private static let format: UInt8 = 2

    func encode(_ data: Data, key: MediaKey, deadline: UInt64) -> Data {
        var header = Self.magic + [Self.format, UInt8(key.kind.index), 0, 0]
        withUnsafeBytes(of: deadline.littleEndian) { header.append(contentsOf: $0) }
        let associated = header + Array(key.id.utf8)
        let box = data.withUnsafeBytes { message in
            associated.withUnsafeBytes { ad in
                keys.seal.withUnsafeBytes { k in AEAD.xchacha20Poly1305.seal(message, keyBytes: k, associatedData: ad) }
            }
        }
        var file = Data(capacity: header.count + box.count)
        file.append(contentsOf: header)
        file.append(box)
        return file
    }

    enum ReadResult {
        case hit(Data, deadline: UInt64)
        case missing, damaged, expired
    }

    /// The deadline in a sealed file's header of `kind`; nil when the header is not one (a
    /// foreign file, or one of an earlier format).
    static func readDeadline(_ path: String, kind: MediaKind) -> UInt64? {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK)
        guard fd >= 0 else { return nil }
        defer { closeDescriptor(fd) }
        var header = [UInt8](repeating: 0, count: headerSize)
        guard readFully(fd, &header, offset: 0) else { return nil }
        return deadline(header, kind: kind)
    }

    private static func deadline(_ header: [UInt8], kind: MediaKind) -> UInt64? {
        guard header[0..<4].elementsEqual(magic), header[4] == format, header[5] == UInt8(kind.index) else { return nil }
        var deadline: UInt64 = 0
        for i in 0..<8 { deadline |= UInt64(header[8 + i]) << (8 * UInt64(i)) }
        return deadline
    }

    func readFile(_ key: MediaKey, _ diskKey: DiskKey) -> ReadResult {
        let fd = open(fileURL(diskKey).path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK)
        guard fd >= 0 else { return errno == ENOENT ? .missing : .damaged }
        defer { closeDescriptor(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG, Int(info.st_size) >= Self.minimumFileSize else { return .damaged }
        var prefix = [UInt8](repeating: 0, count: Self.boxPrefix)
        guard Self.readFully(fd, &prefix, offset: 0), let deadline = Self.deadline(prefix, kind: key.kind) else { return .damaged }
        if deadline != 0, deadline <= nowMillis() { return .expired }
        var data = Data(count: Int(info.st_size) - Self.boxPrefix)
        guard data.withUnsafeMutableBytes({ Self.readFully(fd, $0, offset: Self.boxPrefix) }) else { return .damaged }
        let associated = Array(prefix[0..<Self.headerSize]) + Array(key.id.utf8)
        let opened: Int? = data.withUnsafeMutableBytes { buffer in
            prefix.withUnsafeBytes { prefixBytes in
                associated.withUnsafeBytes { ad in
                    keys.seal.withUnsafeBytes { k in
                        try? AEAD.xchacha20Poly1305.openInPlace(
                            nonce: UnsafeRawBufferPointer(rebasing: prefixBytes[Self.headerSize...]), buffer, keyBytes: k,
                            associatedData: ad)
                    }
                }
            }
        }
        guard let count = opened else { return .damaged } // another key, another entry's file, or altered bytes
        data.count = count
        _ = futimens(fd, nil) // recency that survives a restart
        return .hit(data, deadline: deadline)
    }

    private static func readFully(_ fd: Int32, _ bytes: inout [UInt8], offset: Int) -> Bool {
        bytes.withUnsafeMutableBytes { readFully(fd, $0, offset: offset) }
    }

    private static func readFully(_ fd: Int32, _ buffer: UnsafeMutableRawBufferPointer, offset: Int) -> Bool {
        var done = 0
        while done < buffer.count {
            let n = pread(fd, buffer.baseAddress! + done, buffer.count - done, off_t(offset + done))
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { return false }
            done += n
        }
        return true
    }

    func writeTemporary(_ file: Data, beside final: URL) throws(MediaCacheError) -> URL {
        let temporary = final.deletingLastPathComponent().appendingPathComponent(".\(UUID().uuidString).tmp")
        var fd = open(temporary.path, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        if fd < 0, errno == ENOENT {
            noticePurge()
            fd = open(temporary.path, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        }
        guard fd >= 0 else {
            throw .storage("cannot create \(temporary.path): \(String(cString: strerror(errno)))", cause: StorageCause(errno: errno))
        }
        defer { closeDescriptor(fd) }
        // open(2)'s mode passes through the umask; set it exactly.
        guard fchmod(fd, 0o600) == 0 else {
            let (reason, code) = (Self.errnoText(), errno)
            unlink(temporary.path)
            throw .storage("cannot set the mode of \(temporary.path): \(reason)", cause: StorageCause(errno: code))
        }
        let written = file.withUnsafeBytes { raw -> Bool in
            var done = 0
            while done < raw.count {
                let n = write(fd, raw.baseAddress! + done, raw.count - done)
                if n < 0, errno == EINTR { continue }
                guard n > 0 else { return false }
                done += n
            }
            return true
        }
        guard written else {
            let (reason, code) = (String(cString: strerror(errno)), errno)
            unlink(temporary.path)
            throw .storage("cannot write \(temporary.path): \(reason)", cause: StorageCause(errno: code))
        }
        Self.protectFile(temporary.path)
        return temporary
    }
}
