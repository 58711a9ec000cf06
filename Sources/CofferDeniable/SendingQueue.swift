// The private sending queue: a fixed number of fixed-size slots, real messages at the front
// where only the holder of the queue secret can count them.

import CofferCrypto
import CofferSync
import Foundation

/// The private sending queue, kept in one file of constant length (version 3). All integers
/// big-endian:
///
///     offset  bytes  field (cleartext)
///          0      8  magic "CFQUEUE3"
///          8      4  N, slots
///         12      4  item bytes
///         16      4  hint bytes (32)
///         20     16  outer salt, fresh at every write
///         36     24  outer nonce, fresh at every write
///         60      …  outer box (XChaCha20-Poly1305; key: HKDF-SHA256 of the storage key and the
///                    outer salt; associated data = bytes 0..<36) of:
///                        N×item items, head first ‖ N×32 hints, one per item
///
/// Real items carry hint = HMAC-SHA256(queue secret, item); covers carry random hints. Real
/// items always form a prefix (the fill level), so the sender needs no secret: it sends the head
/// and appends a fresh cover. A new real item goes to the front-most free slot — inserted
/// before the covers, pushing the last cover out — so the file's length and layout never change.
/// The outer layer is keyed by the storage key alone — neither the passphrase nor the secure
/// element — so a background send works on a locked phone, as CoverDrop keeps its queue off
/// the secure element. It is renewed at every write and at every app start, so a copy of the
/// file taken before and after shows every byte but the constants changed, whether a real
/// message was queued, sent, or nothing happened. Version 2 (`CFQUEUE2`, outer layer keyed by
/// the former HMAC stand-in) and version 1 (`CFQUEUE1`, no outer layer) are read and rewritten
/// in version 3.
public final class SendingQueue: @unchecked Sendable {
    // Safe to share: the slots, hints and file are only touched under `lock`; the rest is immutable.
    /// Bytes of one hint (full HMAC-SHA256 output).
    public static let hintBytes = 32
    static let magic = Array("CFQUEUE3".utf8)
    static let formerMagic = Array("CFQUEUE2".utf8)
    static let legacyMagic = Array("CFQUEUE1".utf8)
    /// Bytes of the cleartext header the outer box authenticates.
    static let headerBytes = 36
    static let legacyHeaderBytes = 20
    static let outerSaltBytes = 16
    /// Bytes the outer layer adds: header, nonce, tag.
    static let overhead = headerBytes + 24 + 16

    /// The queue's file.
    public let url: URL
    /// Number of slots.
    public let slots: Int
    /// Bytes of every item.
    public let itemBytes: Int
    private let storageKey: SecretKey
    private let former: LegacyElementKey?
    private let makeCover: @Sendable () -> Data
    // Guarded by `lock`.
    private let lock = Lock()
    private var items: [Data]
    private var hints: [Data]
    /// Whether opening found an earlier format and rewrote it.
    private(set) var converted = false

    /// The file length for `slots` items of `itemBytes`.
    public static func fileLength(slots: Int, itemBytes: Int) -> Int { overhead + slots * (itemBytes + hintBytes) }

    /// Opens the queue at `url`, creating a queue of covers when there is none.
    /// - Parameters:
    ///   - url: the queue's file.
    ///   - slots: the number of items the queue holds.
    ///   - itemBytes: the exact size of every item.
    ///   - storageKey: keys the outer layer (32 bytes).
    ///   - makeCover: makes one cover item of exactly `itemBytes` bytes.
    /// - Throws: ``DeniableError/corrupted(_:)`` when the file is not a queue of this shape or its
    ///   outer layer fails.
    public convenience init(
        url: URL, slots: Int, itemBytes: Int, storageKey: SecretKey,
        makeCover: @escaping @Sendable () -> Data
    ) throws(DeniableError) {
        try self.init(url: url, slots: slots, itemBytes: itemBytes, storageKey: storageKey, former: nil, makeCover: makeCover)
    }

    /// As the public initializer; `former` reads a version-2 file (the former stand-in's key).
    init(
        url: URL, slots: Int, itemBytes: Int, storageKey: SecretKey, former: LegacyElementKey?,
        makeCover: @escaping @Sendable () -> Data
    ) throws(DeniableError) {
        self.url = url
        self.slots = slots
        self.itemBytes = itemBytes
        self.storageKey = storageKey
        self.former = former
        self.makeCover = makeCover
        if let data = try AtomicFile.read(url) {
            let converted: Bool
            (items, hints, converted) = try Self.parse(data, slots: slots, itemBytes: itemBytes, storageKey: storageKey, former: former)
            if converted {
                try save()
                self.converted = true
            }
        } else {
            items = []
            hints = []
            for _ in 0..<slots { try appendCover() }
            try save()
        }
    }

    private static func header(magic: [UInt8], slots: Int, itemBytes: Int) -> [UInt8] {
        var w = Writer(buffer: [])
        w.bytes(magic)
        w.u32(UInt32(slots))
        w.u32(UInt32(itemBytes))
        w.u32(UInt32(hintBytes))
        return w.buffer
    }

    static func outerKey(salt: Data, storageKey: SecretKey) -> SecretKey {
        StorageKey.outerKey(storageKey, salt: salt, label: "coffer.deniable.queue.outer.v3")
    }

    static func parse(
        _ data: Data, slots: Int, itemBytes: Int, storageKey: SecretKey, former: LegacyElementKey?
    ) throws(DeniableError) -> ([Data], [Data], Bool) {
        let body = slots * (itemBytes + hintBytes)
        let fileMagic = Array(data.prefix(8))
        let legacy = fileMagic == legacyMagic
        let isFormer = fileMagic == formerMagic
        if isFormer, former == nil {
            throw .corrupted("the sending queue is in an earlier format whose device key (secure-element.key) is gone")
        }
        let expectedHeader = header(magic: legacy ? legacyMagic : (isFormer ? formerMagic : magic), slots: slots, itemBytes: itemBytes)
        let expectedLength = legacy ? legacyHeaderBytes + body : fileLength(slots: slots, itemBytes: itemBytes)
        guard data.count == expectedLength else {
            throw .corrupted("the sending queue is \(data.count) bytes; \(slots) slots of \(itemBytes) bytes need \(expectedLength)")
        }
        guard Array(data.prefix(expectedHeader.count)) == expectedHeader else {
            throw .corrupted("the sending queue's header does not match its configuration")
        }
        let plain: Data
        if legacy {
            plain = data.subdata(in: legacyHeaderBytes..<data.count)
        } else {
            let clear = data.prefix(headerBytes)
            let salt = Data(clear.suffix(outerSaltBytes))
            let key =
                isFormer
                ? former!.authenticate(Data("coffer.deniable.queue.outer.v2".utf8) + salt) : outerKey(salt: salt, storageKey: storageKey)
            do {
                plain = try AEAD.xchacha20Poly1305.open(data.subdata(in: headerBytes..<data.count), key: key, associatedData: Data(clear))
            } catch {
                throw .corrupted("the sending queue failed its integrity check (altered, or written under another storage key)")
            }
        }
        var items = [Data]()
        var hints = [Data]()
        items.reserveCapacity(slots)
        hints.reserveCapacity(slots)
        for i in 0..<slots { items.append(plain.subdata(in: (i * itemBytes)..<((i + 1) * itemBytes))) }
        let hintsStart = slots * itemBytes
        for i in 0..<slots { hints.append(plain.subdata(in: (hintsStart + i * hintBytes)..<(hintsStart + (i + 1) * hintBytes))) }
        return (items, hints, legacy || isFormer)
    }

    /// Reads the slots again from the file, which another process sharing the folder may have
    /// written since (its owner holds the folder's lock between processes around the read and
    /// the change that follows). What is in memory stays when the file is missing or does not
    /// open: the next write puts it back.
    func reload() {
        lock.withLock { () -> Void in
            guard let data = try? AtomicFile.read(url),
                let (items, hints, _) = try? Self.parse(data, slots: slots, itemBytes: itemBytes, storageKey: storageKey, former: former)
            else { return }
            self.items = items
            self.hints = hints
        }
    }

    /// Rewrites the file with a fresh outer salt and nonce and the same slots (every app start).
    public func rewrite() throws(DeniableError) {
        try lock.withLock { () throws(DeniableError) -> Void in
            try save()
        }
    }

    private func appendCover() throws(DeniableError) {
        let cover = makeCover()
        guard cover.count == itemBytes else { throw .invalidInput("a cover item must be \(itemBytes) bytes, got \(cover.count)") }
        items.append(cover)
        hints.append(SecureRandom.bytes(Self.hintBytes))
    }

    private func save() throws(DeniableError) {
        let salt = SecureRandom.bytes(Self.outerSaltBytes)
        let clear = Self.header(magic: Self.magic, slots: slots, itemBytes: itemBytes) + Array(salt)
        var plain = Data()
        plain.reserveCapacity(slots * (itemBytes + Self.hintBytes))
        for item in items { plain.append(item) }
        for hint in hints { plain.append(hint) }
        let key = Self.outerKey(salt: salt, storageKey: storageKey)
        let sealed: Data
        do { sealed = try AEAD.xchacha20Poly1305.seal(plain, key: key, associatedData: clear) } catch {
            throw .storage("sealing the sending queue failed: \(error)", cause: StorageCause(error))
        }
        var out = Data(clear)
        out.append(sealed)
        precondition(out.count == Self.fileLength(slots: slots, itemBytes: itemBytes), "queue length must be constant")
        try AtomicFile.write(out, to: url, permissions: 0o600)
    }

    private static func hint(_ item: Data, secret: SecretKey) -> Data {
        KeyedHash(key: secret).raw(item)
    }

    private func fillLevelLocked(_ secret: SecretKey) -> Int {
        let hasher = KeyedHash(key: secret)
        var level = 0
        while level < items.count, constantTimeEqual(hasher.raw(items[level]), hints[level]) { level += 1 }
        return level
    }

    /// How many real messages wait at the front (needs the secret).
    public func fillLevel(secret: SecretKey) -> Int {
        return lock.withLock { () -> Int in
            return fillLevelLocked(secret)
        }
    }

    /// Puts a real item in the front-most free slot and returns its hint.
    /// - Throws: ``DeniableError/invalidInput(_:)`` for an item of the wrong size,
    ///   ``DeniableError/queueFull`` when every slot holds a real item.
    @discardableResult
    public func enqueue(_ item: Data, secret: SecretKey) throws(DeniableError) -> Data {
        guard item.count == itemBytes else { throw .invalidInput("a queue item must be \(itemBytes) bytes, got \(item.count)") }
        return try lock.withLock { () throws(DeniableError) -> Data in
            let level = fillLevelLocked(secret)
            guard level < slots else { throw .queueFull }
            let hint = Self.hint(item, secret: secret)
            let (oldItems, oldHints) = (items, hints)
            items.insert(item, at: level)
            hints.insert(hint, at: level)
            items.removeLast()
            hints.removeLast()
            do throws(DeniableError) { try save() } catch {
                (items, hints) = (oldItems, oldHints)
                throw error
            }
            return hint
        }
    }

    /// The item at the head (what the sender sends next).
    public func peek() -> Data {
        return lock.withLock { () -> Data in
            return items[0]
        }
    }

    /// Removes the head and appends a fresh cover; returns the removed item. Needs no secret.
    @discardableResult
    public func dequeue() throws(DeniableError) -> Data {
        return try lock.withLock { () throws(DeniableError) -> Data in
            return try removeLocked(items[0])
        }
    }

    /// Sends the head through `send`, then removes exactly that item (wherever an enqueue made
    /// meanwhile has moved it) and appends a cover. When `send` fails nothing changes, so the
    /// item is sent again next time. A real item enqueued during the send is never removed in
    /// its place.
    @discardableResult
    public func sendHead(_ send: (Data) async throws -> Void) async throws -> Data {
        let head = peek()
        try await send(head)
        return try lock.withLock { try removeLocked(head) }
    }

    private func removeLocked(_ item: Data) throws(DeniableError) -> Data {
        // A cover pushed out of the last slot by enqueues is already gone.
        guard let at = items.firstIndex(of: item) else { return item }
        let (oldItems, oldHints) = (items, hints)
        items.remove(at: at)
        hints.remove(at: at)
        do {
            try appendCover()
            try save()
        } catch {
            (items, hints) = (oldItems, oldHints)
            throw error
        }
        return item
    }

    /// Takes a just-enqueued item back out (its caller could not record it), appending a cover.
    func withdraw(_ item: Data) throws(DeniableError) {
        try lock.withLock { () throws(DeniableError) -> Void in
            _ = try removeLocked(item)
        }
    }

    /// Whether a message with this hint still waits in the queue.
    public func contains(hint: Data) -> Bool {
        return lock.withLock { () -> Bool in
            return hints.contains { constantTimeEqual($0, hint) }
        }
    }

    /// Replaces every slot with a fresh cover (the vault was reset: its real items must go too).
    public func wipe() throws(DeniableError) {
        try lock.withLock { () throws(DeniableError) -> Void in
            let (oldItems, oldHints) = (items, hints)
            items = []
            hints = []
            do throws(DeniableError) {
                for _ in 0..<slots { try appendCover() }
                try save()
            } catch {
                (items, hints) = (oldItems, oldHints)
                throw error
            }
        }
    }
}

/// Compares two byte strings in time that depends only on their length.
func constantTimeEqual(_ a: Data, _ b: Data) -> Bool {
    guard a.count == b.count else { return false }
    var diff: UInt8 = 0
    for (x, y) in zip(a, b) { diff |= x ^ y }
    return diff == 0
}
