// The private sending queue: a fixed number of fixed-size slots, real messages at the front
// where only the holder of the queue secret can count them.
import CofferCrypto
import Foundation

/// The private sending queue, kept in one file of constant length. All integers big-endian:
///
///     offset  bytes  field
///          0      8  magic "CFQUEUE1"
///          8      4  N, slots
///         12      4  item bytes
///         16      4  hint bytes (32)
///         20  N×item items, head first
///          …  N×32   hints, one per item
///
/// Real items carry hint = HMAC-SHA256(queue secret, item); covers carry random hints. Real
/// items always form a prefix (the fill level), so the sender needs no secret: it sends the head
/// and appends a fresh cover. A new real item goes to the front-most free slot — inserted
/// before the covers, pushing the last cover out — so the file's length and layout never change.
public final class SendingQueue: @unchecked Sendable {
    /// Bytes of one hint (full HMAC-SHA256 output).
    public static let hintBytes = 32
    static let magic = Array("CFQUEUE1".utf8)
    static let headerBytes = 20

    /// The queue's file.
    public let url: URL
    /// Number of slots.
    public let slots: Int
    /// Bytes of every item.
    public let itemBytes: Int
    private let makeCover: @Sendable () -> Data
    // Guarded by `lock`.
    private let lock = NSLock()
    private var items: [Data]
    private var hints: [Data]

    /// The file length for `slots` items of `itemBytes`.
    public static func fileLength(slots: Int, itemBytes: Int) -> Int { headerBytes + slots * (itemBytes + hintBytes) }

    /// Opens the queue at `url`, creating a queue of covers when there is none.
    /// - Parameter makeCover: makes one cover item of exactly `itemBytes` bytes.
    /// - Throws: ``DeniableError/corrupted(_:)`` when the file is not a queue of this shape.
    public init(url: URL, slots: Int, itemBytes: Int, makeCover: @escaping @Sendable () -> Data) throws(DeniableError) {
        self.url = url
        self.slots = slots
        self.itemBytes = itemBytes
        self.makeCover = makeCover
        if let data = try AtomicFile.read(url) {
            (items, hints) = try Self.parse(data, slots: slots, itemBytes: itemBytes)
        } else {
            items = []
            hints = []
            for _ in 0..<slots { try appendCover() }
            try save()
        }
    }

    static func parse(_ data: Data, slots: Int, itemBytes: Int) throws(DeniableError) -> ([Data], [Data]) {
        guard data.count == fileLength(slots: slots, itemBytes: itemBytes) else {
            throw .corrupted("the sending queue is \(data.count) bytes; \(slots) slots of \(itemBytes) bytes need \(fileLength(slots: slots, itemBytes: itemBytes))")
        }
        return try withBytes(data) { (raw) throws(DeniableError) -> ([Data], [Data]) in
            var r = Reader(bytes: raw)
            guard let m = r.take(8), Array(m) == magic, r.u32() == UInt32(slots), r.u32() == UInt32(itemBytes),
                  r.u32() == UInt32(hintBytes)
            else { throw .corrupted("the sending queue's header does not match its configuration") }
            var items = [Data](), hints = [Data]()
            for _ in 0..<slots { items.append(Data(r.take(itemBytes)!)) }
            for _ in 0..<slots { hints.append(Data(r.take(hintBytes)!)) }
            return (items, hints)
        }
    }

    private func appendCover() throws(DeniableError) {
        let cover = makeCover()
        guard cover.count == itemBytes else { throw .invalidInput("a cover item must be \(itemBytes) bytes, got \(cover.count)") }
        items.append(cover)
        hints.append(SecureRandom.bytes(Self.hintBytes))
    }

    private func save() throws(DeniableError) {
        var w = Writer(buffer: [])
        w.bytes(Self.magic)
        w.u32(UInt32(slots))
        w.u32(UInt32(itemBytes))
        w.u32(UInt32(Self.hintBytes))
        var out = Data(w.buffer)
        out.reserveCapacity(Self.fileLength(slots: slots, itemBytes: itemBytes))
        for item in items { out.append(item) }
        for hint in hints { out.append(hint) }
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
        lock.lock()
        defer { lock.unlock() }
        return fillLevelLocked(secret)
    }

    /// Puts a real item in the front-most free slot and returns its hint.
    /// - Throws: ``DeniableError/invalidInput(_:)`` for an item of the wrong size,
    ///   ``DeniableError/queueFull`` when every slot holds a real item.
    @discardableResult
    public func enqueue(_ item: Data, secret: SecretKey) throws(DeniableError) -> Data {
        guard item.count == itemBytes else { throw .invalidInput("a queue item must be \(itemBytes) bytes, got \(item.count)") }
        lock.lock()
        defer { lock.unlock() }
        let level = fillLevelLocked(secret)
        guard level < slots else { throw .queueFull }
        let hint = Self.hint(item, secret: secret)
        let (oldItems, oldHints) = (items, hints)
        items.insert(item, at: level)
        hints.insert(hint, at: level)
        items.removeLast()
        hints.removeLast()
        do { try save() } catch {
            (items, hints) = (oldItems, oldHints)
            throw error
        }
        return hint
    }

    /// The item at the head (what the sender sends next).
    public func peek() -> Data {
        lock.lock()
        defer { lock.unlock() }
        return items[0]
    }

    /// Removes the head and appends a fresh cover; returns the removed item. Needs no secret.
    @discardableResult
    public func dequeue() throws(DeniableError) -> Data {
        lock.lock()
        defer { lock.unlock() }
        return try removeLocked(items[0])
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
        lock.lock()
        defer { lock.unlock() }
        _ = try removeLocked(item)
    }

    /// Whether a message with this hint still waits in the queue.
    public func contains(hint: Data) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        return hints.contains { constantTimeEqual($0, hint) }
    }

    /// Replaces every slot with a fresh cover (the vault was reset: its real items must go too).
    public func wipe() throws(DeniableError) {
        lock.lock()
        defer { lock.unlock() }
        let (oldItems, oldHints) = (items, hints)
        items = []
        hints = []
        do {
            for _ in 0..<slots { try appendCover() }
            try save()
        } catch {
            (items, hints) = (oldItems, oldHints)
            throw error
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
