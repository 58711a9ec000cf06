// What the vault holds — the user's key pair, the sending-queue secret and the mailbox — and
// its fixed-size binary form.

import CofferCrypto
import CofferSync
import Foundation

/// One message of the mailbox.
public struct MailboxMessage: Sendable, Hashable, Identifiable {
    /// Whether the user sent the message or received it.
    public enum Direction: UInt8, Sendable, Hashable, Codable {
        /// Written by the user and put in the sending queue.
        case sent = 0
        /// Found for the user in a dead drop.
        case received = 1
    }

    /// A random identifier.
    public let id: UUID
    /// Sent or received.
    public let direction: Direction
    /// The other side: the recipient of a sent message, the sender of a received one.
    public let peer: String
    /// The message text.
    public let text: String
    /// When it was queued (sent) or when its dead drop was published (received); expiry counts from here.
    public let date: Date
    /// For a sent message, the hint that marks it in the sending queue while it waits there.
    public let queueHint: Data?
    /// For a received message, the dead drop it came in.
    public let deadDropID: Int64?
    /// For a received handover (CoverDrop's flag 0x01), the journalist the conversation moved
    /// to; its `text` is empty. Replies from that journalist are collected from then on.
    public let handoverTo: String?

    /// A message as stored in the mailbox.
    public init(
        id: UUID = UUID(), direction: Direction, peer: String, text: String, date: Date,
        queueHint: Data? = nil, deadDropID: Int64? = nil, handoverTo: String? = nil
    ) {
        self.id = id
        self.direction = direction
        self.peer = peer
        self.text = text
        self.date = date
        self.queueHint = queueHint
        self.deadDropID = deadDropID
        self.handoverTo = handoverTo
    }
}

/// Milliseconds since 1970, rounded (held at the ends of Int64 for a date beyond them).
func unixMillis(_ date: Date) -> Int64 {
    Int64(saturating: date.timeIntervalSince1970 * 1000, rounding: .toNearestOrAwayFromZero)
}

/// The secrets and messages kept inside the vault while a session is unlocked.
struct VaultContents: Sendable {
    var userKey: X25519KeyPair
    var queueSecret: SecretKey
    var messages: [MailboxMessage]

    /// 2 adds each message's handover target; version 1 contents still read.
    static let version: UInt8 = 2
    static let queueSecretBytes = 16

    /// A fresh state: a new key pair, a new queue secret, an empty mailbox.
    static func fresh() -> VaultContents {
        VaultContents(userKey: .generate(), queueSecret: .random(byteCount: queueSecretBytes), messages: [])
    }

    /// The padded plaintext of exactly `size` bytes: a 4-byte big-endian payload length, the
    /// payload, zeros. When the mailbox does not fit, the oldest messages are dropped first;
    /// `messages` is updated to what was kept.
    /// - Throws: ``DeniableError/invalidInput(_:)`` when even an empty mailbox does not fit.
    mutating func padded(size: Int) throws(DeniableError) -> [UInt8] {
        let headBytes = 1 + X25519KeyPair.keyByteCount + Self.queueSecretBytes
        var total = 4 + headBytes + 4
        guard total <= size else { throw .invalidInput("a vault of \(size) bytes cannot hold even its keys") }
        // Newest first; the kept messages are a prefix of this order. Sizes are computed, not
        // encoded, so the work before writing is the same small sort whatever the messages hold.
        let byAge = messages.indices.sorted { a, b in
            messages[a].date != messages[b].date ? messages[a].date > messages[b].date : a > b
        }
        var kept = 0
        for i in byAge {
            let n = Self.encodedSize(messages[i])
            if total + n > size { break }
            total += n
            kept += 1
        }
        if kept < messages.count {
            let keep = Set(byAge.prefix(kept))
            messages = messages.indices.filter { keep.contains($0) }.map { messages[$0] }
        }
        var w = Writer(buffer: [UInt8](repeating: 0, count: size))
        w.u32(UInt32(total - 4))
        w.u8(Self.version)
        userKey.exportSecretKey().withUnsafeBytes { w.put($0) }
        queueSecret.withUnsafeBytes { w.put($0) }
        w.u32(UInt32(kept))
        for m in messages { Self.encode(m, into: &w) }
        return w.buffer
    }

    /// Reads a padded plaintext.
    /// - Throws: ``DeniableError/corrupted(_:)`` when it does not parse.
    static func decode(_ plain: UnsafeRawBufferPointer) throws(DeniableError) -> VaultContents {
        var r = Reader(bytes: plain)
        guard let length = r.u32(), Int(length) <= plain.count - 4,
            let version = r.u8(), version == 1 || version == Self.version,
            let secret = r.take(X25519KeyPair.keyByteCount),
            let queue = r.take(queueSecretBytes),
            let count = r.u32()
        else { throw .corrupted("the vault's contents do not parse") }
        let userKey: X25519KeyPair
        let queueSecret: SecretKey
        do {
            userKey = try X25519KeyPair(secretKey: SecretKey(copying: secret))
            queueSecret = try SecretKey(copying: queue)
        } catch { throw .corrupted("the vault's keys do not parse") }
        var messages = [MailboxMessage]()
        for _ in 0..<count {
            guard let m = decodeMessage(&r, version: version) else { throw .corrupted("a mailbox message does not parse") }
            messages.append(m)
        }
        return VaultContents(userKey: userKey, queueSecret: queueSecret, messages: messages)
    }

    /// Bytes ``encode(_:into:)`` writes for `m`.
    private static func encodedSize(_ m: MailboxMessage) -> Int {
        1 + 16 + 8 + 4 + m.peer.utf8.count + 4 + m.text.utf8.count + 1 + min(m.queueHint?.count ?? 0, 255) + 1 + 8 + 4
            + (m.handoverTo?.utf8.count ?? 0)
    }

    private static func encode(_ m: MailboxMessage, into w: inout Writer) {
        w.u8(m.direction.rawValue)
        withUnsafeBytes(of: m.id.uuid) { w.put($0) }
        w.u64(UInt64(bitPattern: unixMillis(m.date)))
        w.string(m.peer)
        w.string(m.text)
        let hint = (m.queueHint ?? Data()).prefix(255)
        w.u8(UInt8(hint.count))
        hint.withUnsafeBytes { w.put($0) }
        w.u8(m.deadDropID == nil ? 0 : 1)
        w.u64(UInt64(bitPattern: m.deadDropID ?? 0))
        w.string(m.handoverTo ?? "")
    }

    private static func decodeMessage(_ r: inout Reader, version: UInt8) -> MailboxMessage? {
        guard let kind = r.u8(), let direction = MailboxMessage.Direction(rawValue: kind),
            let idBytes = r.take(16), let millis = r.u64(),
            let peer = r.string(), let text = r.string(),
            let hintCount = r.u8(), let hint = r.take(Int(hintCount)),
            let hasDrop = r.u8(), let drop = r.u64()
        else { return nil }
        var handoverTo: String?
        if version >= 2 {
            guard let target = r.string() else { return nil }
            handoverTo = target.isEmpty ? nil : target
        }
        var uuid: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &uuid) { $0.copyBytes(from: idBytes) }
        return MailboxMessage(
            id: UUID(uuid: uuid), direction: direction, peer: peer, text: text,
            date: Date(timeIntervalSince1970: Double(Int64(bitPattern: millis)) / 1000),
            queueHint: hintCount == 0 ? nil : Data(hint),
            deadDropID: hasDrop == 1 ? Int64(bitPattern: drop) : nil, handoverTo: handoverTo)
    }
}

/// Big-endian writer over a byte array: it overwrites a preallocated buffer from the start, and
/// grows it past its end. Bytes are copied in blocks, so encoding costs little beside sealing.
struct Writer {
    var buffer: [UInt8]
    var position = 0

    init(buffer: [UInt8]) { self.buffer = buffer }

    mutating func put(_ bytes: UnsafeRawBufferPointer) {
        let n = bytes.count
        let inPlace = min(n, buffer.count - position)
        if inPlace > 0 {
            buffer.withUnsafeMutableBytes { out in
                out.baseAddress!.advanced(by: position).copyMemory(from: bytes.baseAddress!, byteCount: inPlace)
            }
        }
        if inPlace < n { buffer.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[inPlace...])) }
        position += n
    }

    mutating func u8(_ v: UInt8) { withUnsafeBytes(of: v) { put($0) } }
    mutating func u16(_ v: UInt16) { withUnsafeBytes(of: v.bigEndian) { put($0) } }
    mutating func u32(_ v: UInt32) { withUnsafeBytes(of: v.bigEndian) { put($0) } }
    mutating func u64(_ v: UInt64) { withUnsafeBytes(of: v.bigEndian) { put($0) } }
    mutating func bytes(_ b: [UInt8]) { b.withUnsafeBytes { put($0) } }
    mutating func string(_ s: String) {
        var s = s
        s.withUTF8 { utf8 in
            u32(UInt32(utf8.count))
            put(UnsafeRawBufferPointer(utf8))
        }
    }
}

/// Big-endian reader over raw bytes; every read returns nil past the end.
struct Reader {
    let bytes: UnsafeRawBufferPointer
    var position = 0

    mutating func take(_ n: Int) -> UnsafeRawBufferPointer? {
        guard n >= 0, position + n <= bytes.count else { return nil }
        defer { position += n }
        return UnsafeRawBufferPointer(rebasing: bytes[position..<(position + n)])
    }

    mutating func u8() -> UInt8? { take(1).map { $0[0] } }
    mutating func u16() -> UInt16? { take(2).map { UInt16($0[0]) << 8 | UInt16($0[1]) } }
    mutating func u32() -> UInt32? { take(4).map { $0.reduce(0) { $0 << 8 | UInt32($1) } } }
    mutating func u64() -> UInt64? { take(8).map { $0.reduce(0) { $0 << 8 | UInt64($1) } } }
    mutating func string() -> String? {
        guard let n = u32(), let raw = take(Int(n)) else { return nil }
        return String(validUTF8: raw)
    }
}
