// CoverDrop's user-side wire formats (guardian/coverdrop, the commit in
// `CoverDropProtocol.referenceCommit`), written from its documentation, code layouts and test
// vectors:
//
//   padded compressed string (512)  u16 BE length ‖ gzip of the UTF-8 text ‖ random fill
//   user → journalist (545 → 593)   reply key (32) ‖ reserved 0x00 ‖ padded text, in an
//                                   AnonymousBox to the journalist's newest messaging key
//   user → CoverNode (597 → 773)    recipient tag (4) ‖ that box (covers: zero tag ‖ 593 random
//                                   bytes), in a MultiAnonymousBox to two CoverNode messaging keys
//   journalist → user (513 → 553)   flag (0x00 text, 0x01 handover) ‖ 512 bytes, in a TwoPartyBox
//                                   from a journalist's messaging key to the user's key

import CZlib
import CofferCrypto
import Foundation

/// CoverDrop's message sizes and the version of CoverDrop the formats follow.
public enum CoverDropProtocol {
    /// The `guardian/coverdrop` commit whose formats and test vectors Coffer follows.
    public static let referenceCommit = "a43016fcc363b29049c3c2da12797a5b8d0919e2"
    /// Bytes of a padded compressed string.
    public static let paddedTextBytes = 512
    /// Bytes of a recipient tag.
    public static let recipientTagBytes = 4
    /// Bytes of a user-to-journalist message before encryption.
    public static let userToJournalistBytes = 545
    /// Bytes of a user-to-journalist message in its AnonymousBox.
    public static let userToJournalistEncryptedBytes = 593
    /// Bytes of a user-to-CoverNode message before encryption.
    public static let userToCoverNodeBytes = 597
    /// Bytes of a user-to-CoverNode message in its MultiAnonymousBox: one sending-queue item.
    public static let userToCoverNodeEncryptedBytes = 773
    /// Bytes of a journalist-to-user message before encryption.
    public static let journalistToUserBytes = 513
    /// Bytes of a journalist-to-user message in its TwoPartyBox: one dead-drop slot.
    public static let journalistToUserEncryptedBytes = 553
    /// CoverNode keys every user-to-CoverNode message is wrapped for.
    public static let coverNodeWrappingKeyCount = 2
    /// The longest journalist identity, in bytes.
    public static let maxJournalistIDBytes = 128
    /// A decompressed text may be at most this many times its compressed length (a larger
    /// ratio is refused as a decompression bomb).
    public static let maxDecompressionRatio = 100
}

/// CoverDrop's padded compressed string: a text gzipped and padded with random bytes to 512.
public enum PaddedCompressedString {
    /// Bytes available to the gzip data (512 minus the 2-byte length).
    public static let capacity = CoverDropProtocol.paddedTextBytes - 2

    /// Encodes `text` (gzip level 6, as CoverDrop's clients).
    /// - Throws: ``DeniableError/invalidInput(_:)`` naming the limit when the compressed text
    ///   does not fit in 510 bytes, or when it inflates more than
    ///   ``CoverDropProtocol/maxDecompressionRatio`` times (the receiving side, ``decode(_:)``
    ///   included, refuses that as a decompression bomb, so it could never be read).
    public static func encode(_ text: String) throws(DeniableError) -> Data {
        let plain = Data(text.utf8)
        let compressed = try Gzip.compress(plain)
        guard compressed.count <= capacity else {
            throw .invalidInput(
                "the message compresses to \(compressed.count) bytes, over CoverDrop's limit of \(capacity) bytes "
                    + "(a 512-byte padded message); shorten it")
        }
        guard plain.count / compressed.count <= CoverDropProtocol.maxDecompressionRatio else {
            throw .invalidInput(
                "the message's \(plain.count) bytes compress to \(compressed.count), more than CoverDrop's limit of "
                    + "\(CoverDropProtocol.maxDecompressionRatio) times, which the receiver refuses as a decompression bomb; shorten it or make it less repetitive"
            )
        }
        var out = Data(capacity: CoverDropProtocol.paddedTextBytes)
        out.append(UInt8(compressed.count >> 8))
        out.append(UInt8(compressed.count & 0xFF))
        out.append(compressed)
        out.append(SecureRandom.bytes(CoverDropProtocol.paddedTextBytes - out.count))
        return out
    }

    /// How full a message of `text` would be, 0…1 (more than 1 does not fit).
    public static func fillLevel(_ text: String) throws(DeniableError) -> Double {
        Double(try Gzip.compress(Data(text.utf8)).count) / Double(capacity)
    }

    /// Decodes a 512-byte padded compressed string.
    /// - Throws: ``DeniableError/corrupted(_:)`` for a wrong size, a length of 0 or over 510,
    ///   gzip data that does not inflate, a decompression ratio over 100, or text that is not UTF-8.
    public static func decode(_ data: Data) throws(DeniableError) -> String {
        guard data.count == CoverDropProtocol.paddedTextBytes else {
            throw .corrupted("a padded compressed string is \(CoverDropProtocol.paddedTextBytes) bytes, got \(data.count)")
        }
        let bytes = [UInt8](data)
        let length = Int(bytes[0]) << 8 | Int(bytes[1])
        guard length > 0, length <= capacity else { throw .corrupted("a padded compressed string holds \(length) bytes of gzip data") }
        let limit = length * (CoverDropProtocol.maxDecompressionRatio + 1)
        let plain = try Gzip.decompress(Data(bytes[2..<(2 + length)]), limit: limit)
        guard plain.count / length <= CoverDropProtocol.maxDecompressionRatio else {
            throw .corrupted("a padded compressed string inflates more than \(CoverDropProtocol.maxDecompressionRatio) times")
        }
        guard let text = String(bytes: plain, encoding: .utf8) else { throw .corrupted("a padded compressed string is not UTF-8") }
        return text
    }
}

/// gzip (RFC 1952) through zlib.
enum Gzip {
    static func compress(_ input: Data) throws(DeniableError) -> Data {
        var stream = z_stream()
        let rc = deflateInit2_(
            &stream, 6, Z_DEFLATED, MAX_WBITS + 16, 8, Z_DEFAULT_STRATEGY, zlibVersion(), Int32(MemoryLayout<z_stream>.size))
        guard rc == Z_OK else { throw .storage("zlib deflateInit2 failed (\(rc))") }
        defer { deflateEnd(&stream) }
        let capacity = Int(deflateBound(&stream, UInt(input.count))) + 32
        let (end, output) = finish(&stream, input, capacity: capacity) { deflate(&$0, Z_FINISH) }
        guard end == Z_STREAM_END else { throw .storage("zlib deflate failed (\(end))") }
        return Data(output)
    }

    /// Inflates one gzip member, refusing output longer than `limit` bytes.
    static func decompress(_ input: Data, limit: Int) throws(DeniableError) -> [UInt8] {
        var stream = z_stream()
        let rc = inflateInit2_(&stream, MAX_WBITS + 16, zlibVersion(), Int32(MemoryLayout<z_stream>.size))
        guard rc == Z_OK else { throw .storage("zlib inflateInit2 failed (\(rc))") }
        defer { inflateEnd(&stream) }
        let (end, output) = finish(&stream, input, capacity: limit + 1) { inflate(&$0, Z_FINISH) }
        guard end == Z_STREAM_END else {
            if output.count > limit { throw .corrupted("a padded compressed string inflates past \(limit) bytes") }
            throw .corrupted("a padded compressed string's gzip data does not inflate (zlib \(end))")
        }
        return output
    }

    /// Runs one `Z_FINISH` step of an initialised stream over all of `input` into a buffer of
    /// `capacity` bytes; the step's result and the bytes it produced.
    private static func finish(
        _ stream: inout z_stream, _ input: Data, capacity: Int, _ step: (inout z_stream) -> Int32
    ) -> (Int32, [UInt8]) {
        var input = [UInt8](input)
        var output = [UInt8](repeating: 0, count: capacity)
        var rc: Int32 = Z_OK
        let produced: Int = input.withUnsafeMutableBufferPointer { inp in
            output.withUnsafeMutableBufferPointer { out in
                stream.next_in = inp.baseAddress
                stream.avail_in = UInt32(inp.count)
                stream.next_out = out.baseAddress
                stream.avail_out = UInt32(out.count)
                rc = step(&stream)
                return out.count - Int(stream.avail_out)
            }
        }
        return (rc, Array(output[0..<produced]))
    }
}

/// A journalist's recipient tag: the first 4 bytes of SHA-256 of the journalist's id (covers
/// carry the all-zero tag).
public enum RecipientTag {
    /// The cover tag, 00 00 00 00.
    public static let cover = Data(count: CoverDropProtocol.recipientTagBytes)

    /// The tag of `journalistID`.
    public static func of(_ journalistID: String) -> Data {
        Data(SHA256Digest.hash(Data(journalistID.utf8)).prefix(CoverDropProtocol.recipientTagBytes))
    }
}

/// The user's messages toward a journalist, as CoverDrop's clients make them.
public enum UserMessage {
    /// The 545-byte user-to-journalist plaintext: reply key ‖ 0x00 ‖ padded text.
    public static func userToJournalist(replyKey: Data, text: String) throws(DeniableError) -> Data {
        guard replyKey.count == X25519KeyPair.keyByteCount else { throw .invalidInput("a reply key is 32 bytes, got \(replyKey.count)") }
        var out = replyKey
        out.append(0)
        out.append(try PaddedCompressedString.encode(text))
        return out
    }

    /// Reads a 545-byte user-to-journalist plaintext.
    /// - Throws: ``DeniableError/corrupted(_:)`` for a wrong size or text that does not decode.
    public static func readUserToJournalist(_ plain: Data) throws(DeniableError) -> (replyKey: Data, text: String) {
        guard plain.count == CoverDropProtocol.userToJournalistBytes else {
            throw .corrupted("a user-to-journalist message is \(CoverDropProtocol.userToJournalistBytes) bytes, got \(plain.count)")
        }
        let bytes = Data(plain)
        return (bytes.prefix(32), try PaddedCompressedString.decode(bytes.suffix(CoverDropProtocol.paddedTextBytes)))
    }

    /// One 773-byte sending-queue item carrying `text` for `journalistID`: the text in an
    /// AnonymousBox to the journalist's messaging key, behind the journalist's recipient tag, in
    /// a MultiAnonymousBox to the CoverNode messaging keys.
    public static func realItem(
        text: String, replyKey: Data, journalistID: String, journalistKey: Data, coverNodeKeys: [Data]
    ) throws(DeniableError) -> Data {
        let inner = try userToJournalist(replyKey: replyKey, text: text)
        let box: Data
        do { box = try AnonymousBox.seal(inner, to: journalistKey) } catch { throw .invalidInput("the journalist's key: \(error)") }
        var plain = RecipientTag.of(journalistID)
        plain.append(box)
        return try wrap(plain, for: coverNodeKeys)
    }

    /// One 773-byte cover item, as CoverDrop's mobile clients make it: the zero tag and 593
    /// random bytes in a MultiAnonymousBox to the CoverNode keys (to throwaway keys when none is
    /// verified yet), so covers and real items differ only to a CoverNode.
    public static func coverItem(coverNodeKeys: [Data]) -> Data {
        var plain = RecipientTag.cover
        plain.append(SecureRandom.bytes(CoverDropProtocol.userToJournalistEncryptedBytes))
        let keys = coverNodeKeys.isEmpty ? [X25519KeyPair.generate().publicKey] : coverNodeKeys
        return (try? wrap(plain, for: keys)) ?? SecureRandom.bytes(CoverDropProtocol.userToCoverNodeEncryptedBytes)
    }

    /// The two wrapping keys: the given CoverNode keys in order, the first repeated when only one
    /// CoverNode is known (as CoverDrop's reference client does).
    static func wrap(_ plain: Data, for coverNodeKeys: [Data]) throws(DeniableError) -> Data {
        guard !coverNodeKeys.isEmpty else { throw .noVerifiedKeys("no verified CoverNode messaging key") }
        let count = CoverDropProtocol.coverNodeWrappingKeyCount
        let keys = (0..<count).map { coverNodeKeys[$0 % coverNodeKeys.count] }
        do { return try MultiAnonymousBox.seal(plain, to: keys) } catch { throw .invalidInput("a CoverNode key: \(error)") }
    }
}

/// A journalist's message to the user (a dead-drop slot's plaintext).
public enum JournalistMessage: Sendable, Equatable {
    /// A text reply (flag 0x00).
    case text(String)
    /// The conversation moves to another journalist (flag 0x01), named by id.
    case handover(String)

    /// The 513-byte plaintext.
    /// - Throws: ``DeniableError/invalidInput(_:)`` for a text that does not fit or an id that
    ///   is empty, longer than 128 bytes or not ASCII.
    public func encoded() throws(DeniableError) -> Data {
        switch self {
        case .text(let text):
            var out = Data([0])
            out.append(try PaddedCompressedString.encode(text))
            return out
        case .handover(let id):
            try Self.checkID(id)
            var out = Data([1])
            out.append(Data(id.utf8))
            out.append(Data(count: CoverDropProtocol.paddedTextBytes - id.utf8.count))
            return out
        }
    }

    /// Reads a 513-byte plaintext.
    /// - Throws: ``DeniableError/corrupted(_:)`` for a wrong size, an unknown flag, or a body
    ///   that does not decode.
    public static func decode(_ plain: Data) throws(DeniableError) -> JournalistMessage {
        guard plain.count == CoverDropProtocol.journalistToUserBytes else {
            throw .corrupted("a journalist-to-user message is \(CoverDropProtocol.journalistToUserBytes) bytes, got \(plain.count)")
        }
        let bytes = [UInt8](plain)
        switch bytes[0] {
        case 0: return .text(try PaddedCompressedString.decode(Data(bytes[1...])))
        case 1:
            let body = bytes[1...]
            let end = body.firstIndex(of: 0) ?? body.endIndex
            guard let id = String(bytes: body[body.startIndex..<end], encoding: .utf8) else {
                throw .corrupted("a handover id is not UTF-8")
            }
            do { try checkID(id) } catch { throw .corrupted("a handover names an invalid journalist id") }
            return .handover(id)
        default: throw .corrupted("a journalist-to-user message has the unknown flag \(bytes[0])")
        }
    }

    package static func checkID(_ id: String) throws(DeniableError) {
        let bytes = Array(id.utf8)
        guard !bytes.isEmpty, bytes.count <= CoverDropProtocol.maxJournalistIDBytes, bytes.allSatisfy({ $0 > 0 && $0 < 0x80 }),
            !id.contains("/"), !id.contains("\\")
        else { throw .invalidInput("a journalist id is 1…128 ASCII bytes without / or \\, got \(bytes.count) bytes") }
    }
}
