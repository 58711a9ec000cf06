// The two small binary formats foreign stores keep their keys in: libindy's MessagePack array of
// seven keys, and Aries Askar's CBOR profile key. Strict readers of exactly those shapes: every
// length is checked against the bytes left, nothing else is accepted, nothing trails.

import CofferCrypto
import Foundation

/// Reads bytes front to back; each read checks the bytes left first. Its copy of the bytes
/// holds key material: the decoders ``wipe()`` it when done.
struct ByteReader {
    private(set) var bytes: [UInt8]
    private(set) var offset = 0

    init(_ data: Data) { bytes = [UInt8](data) }

    /// Overwrites the reader's copy of the bytes with zeros.
    mutating func wipe() { SecureMemory.wipe(&bytes) }

    var isAtEnd: Bool { offset == bytes.count }

    mutating func byte() throws(FormatFault) -> UInt8 {
        guard offset < bytes.count else { throw FormatFault("ends early at byte \(offset)") }
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func uint(_ count: Int) throws(FormatFault) -> Int {
        var value = 0
        for _ in 0..<count { value = value << 8 | Int(try byte()) }
        return value
    }

    mutating func take(_ count: Int) throws(FormatFault) -> [UInt8] {
        guard count >= 0, count <= bytes.count - offset else {
            throw FormatFault("claims \(count) bytes at byte \(offset), \(bytes.count - offset) left")
        }
        defer { offset += count }
        return Array(bytes[offset..<offset + count])
    }
}

/// What is wrong with a key blob (never holds key bytes).
struct FormatFault: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// libindy's `Keys`, as `rmp_serde` writes it: an array of seven 32-byte keys in the order type,
/// name, value, item HMAC, tag name, tag value, tag HMAC (each a MessagePack `bin`, or an array
/// of 32 small integers); a map keyed by those field names is read too.
enum IndyKeysMessagePack {
    static let fieldNames = [
        "type_key", "name_key", "value_key", "item_hmac_key", "tag_name_key", "tag_value_key", "tags_hmac_key",
    ]

    /// The seven keys' bytes, in the order of ``fieldNames``.
    static func decode(_ data: Data) throws(FormatFault) -> [[UInt8]] {
        var r = ByteReader(data)
        defer { r.wipe() }
        let head = try r.byte()
        var keys: [[UInt8]]
        switch head {
        case 0x97: // fixarray of 7
            keys = []
            for _ in 0..<7 { keys.append(try key(&r)) }
        case 0xdc: // array 16
            guard try r.uint(2) == 7 else { throw FormatFault("is an array of other than seven keys") }
            keys = []
            for _ in 0..<7 { keys.append(try key(&r)) }
        case 0x87: // fixmap of 7
            var byName = [String: [UInt8]]()
            for _ in 0..<7 {
                let name = try string(&r)
                guard fieldNames.contains(name), byName[name] == nil else { throw FormatFault("has an unexpected field") }
                byName[name] = try key(&r)
            }
            keys = fieldNames.map { byName[$0]! }
        default:
            throw FormatFault("does not start with a seven-key array (first byte 0x\(String(head, radix: 16)))")
        }
        guard r.isAtEnd else { throw FormatFault("has bytes after the seven keys") }
        return keys
    }

    private static func key(_ r: inout ByteReader) throws(FormatFault) -> [UInt8] {
        let head = try r.byte()
        let count: Int
        switch head {
        case 0xc4: count = try r.uint(1)
        case 0xc5: count = try r.uint(2)
        case 0xc6: count = try r.uint(4)
        case 0xdc: // a sequence of integers
            guard try r.uint(2) == 32 else { throw FormatFault("holds a key that is not 32 bytes") }
            return try integers(&r)
        default: throw FormatFault("holds a key that is not a byte string")
        }
        guard count == 32 else { throw FormatFault("holds a key of \(count) bytes, not 32") }
        return try r.take(32)
    }

    private static func integers(_ r: inout ByteReader) throws(FormatFault) -> [UInt8] {
        var out = [UInt8]()
        for _ in 0..<32 {
            let b = try r.byte()
            switch b {
            case 0x00...0x7f: out.append(b)
            case 0xcc: out.append(UInt8(try r.uint(1)))
            default: throw FormatFault("holds a key byte that is not an integer 0…255")
            }
        }
        return out
    }

    private static func string(_ r: inout ByteReader) throws(FormatFault) -> String {
        let head = try r.byte()
        let count: Int
        switch head {
        case 0xa0...0xbf: count = Int(head & 0x1f)
        case 0xd9: count = try r.uint(1)
        default: throw FormatFault("has a field name that is not a short string")
        }
        return String(decoding: try r.take(count), as: UTF8.self)
    }
}

/// Aries Askar's profile key as `ciborium` writes it: a CBOR map `{"ver": "1", "ick", "ink",
/// "ihk", "tnk", "tvk", "thk"}`, each key a 32-byte byte string.
enum AskarProfileKeyCBOR {
    static let fieldNames = ["ick", "ink", "ihk", "tnk", "tvk", "thk"]

    /// The six keys by field name.
    static func decode(_ data: Data) throws(FormatFault) -> [String: [UInt8]] {
        var r = ByteReader(data)
        defer { r.wipe() }
        let (major, count) = try head(&r)
        guard major == 5, count == 7 else { throw FormatFault("is not a map of seven entries") }
        var out = [String: [UInt8]]()
        var version: String?
        for _ in 0..<7 {
            let name = try text(&r, max: 8)
            if name == "ver" {
                guard version == nil else { throw FormatFault("repeats \"ver\"") }
                version = try text(&r, max: 8)
                continue
            }
            guard fieldNames.contains(name), out[name] == nil else { throw FormatFault("has an unexpected or repeated field") }
            let (m, n) = try head(&r)
            guard m == 2 else { throw FormatFault("holds a key that is not a byte string") }
            guard n == 32 else { throw FormatFault("holds a key of \(n) bytes, not 32") }
            out[name] = try r.take(32)
        }
        guard version == "1" else { throw FormatFault("has version \(version ?? "none"), not 1") }
        guard r.isAtEnd else { throw FormatFault("has bytes after the profile key") }
        return out
    }

    /// A definite-length CBOR head: major type and argument.
    private static func head(_ r: inout ByteReader) throws(FormatFault) -> (UInt8, Int) {
        let b = try r.byte()
        let major = b >> 5
        let info = b & 0x1f
        switch info {
        case 0..<24: return (major, Int(info))
        case 24: return (major, try r.uint(1))
        case 25: return (major, try r.uint(2))
        case 26: return (major, try r.uint(4))
        default: throw FormatFault("uses a CBOR length form this reader does not take")
        }
    }

    private static func text(_ r: inout ByteReader, max: Int) throws(FormatFault) -> String {
        let (m, n) = try head(&r)
        guard m == 3, n <= max else { throw FormatFault("has a field that is not a short text string") }
        return String(decoding: try r.take(n), as: UTF8.self)
    }
}
