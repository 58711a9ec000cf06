// The sealed form of one record: id, value and tags in a compact binary layout, then AEAD.
import CofferCrypto
import Foundation

/// Plaintext layout (version 1), all lengths unsigned LEB128:
///
///     u8 version = 1
///     id:    len, UTF-8
///     value: len, UTF-8
///     tags:  count, then per tag (sorted by name):
///            u8 kind (0 single string, 1 list), name len + UTF-8,
///            [list: value count], per value: len + UTF-8
///
/// Sealed as ChaCha20-Poly1305 (random 12-byte nonce) under the per-record key, with the
/// row's blind type and id as associated data, so a box moved to another row fails.
enum RecordCodec {
    static let version: UInt8 = 1
    static let aead = AEAD.chacha20Poly1305

    struct Contents {
        var id: String
        var value: String
        var tags: WalletTags
    }

    static func seal(_ contents: Contents, typeBlind: Data, idBlind: Data, keys: WalletKeys) -> Data {
        var out = [UInt8]()
        out.reserveCapacity(contents.value.utf8.count + contents.id.utf8.count + 64)
        out.append(version)
        appendString(contents.id, to: &out)
        appendString(contents.value, to: &out)
        let tags = contents.tags.effective
        appendVarint(UInt64(tags.count), to: &out)
        for (name, value) in tags {
            switch value {
            case let .string(s):
                out.append(0)
                appendString(name, to: &out)
                appendString(s, to: &out)
            case let .list(values):
                out.append(1)
                appendString(name, to: &out)
                appendVarint(UInt64(values.count), to: &out)
                for v in values { appendString(v, to: &out) }
            }
        }
        let key = keys.recordKey(typeBlind: typeBlind, idBlind: idBlind)
        // Lengths are checked before sealing; a 32-byte derived key always fits.
        return try! aead.seal(out, key: key, associatedData: typeBlind + idBlind)
    }

    /// Opens and decodes a record box.
    /// - Throws: ``WalletError/corrupted(_:)`` when authentication or decoding fails.
    static func open(_ sealed: Data, typeBlind: Data, idBlind: Data, keys: WalletKeys, decodeTags: Bool = true) throws(WalletError) -> Contents {
        let key = keys.recordKey(typeBlind: typeBlind, idBlind: idBlind)
        let plain: Data
        do { plain = try aead.open(sealed, key: key, associatedData: typeBlind + idBlind) } catch {
            throw .corrupted("a record failed authentication (the wallet file was altered or damaged)")
        }
        var reader = ByteReader(plain)
        guard let v = reader.byte(), v == version,
              let id = reader.string(), let value = reader.string()
        else { throw .corrupted("a record's sealed contents do not decode") }
        var tags = [String: TagValue]()
        if decodeTags {
            guard let count = reader.varint() else { throw .corrupted("a record's tags do not decode") }
            for _ in 0..<count {
                guard let kind = reader.byte(), let name = reader.string() else { throw .corrupted("a record's tags do not decode") }
                if kind == 0 {
                    guard let s = reader.string() else { throw .corrupted("a record's tags do not decode") }
                    tags[name] = .string(s)
                } else {
                    guard let n = reader.varint(), n <= UInt64(plain.count) else { throw .corrupted("a record's tags do not decode") }
                    var list = [String]()
                    list.reserveCapacity(Int(n))
                    for _ in 0..<n {
                        guard let s = reader.string() else { throw .corrupted("a record's tags do not decode") }
                        list.append(s)
                    }
                    tags[name] = .list(list)
                }
            }
        }
        return Contents(id: id, value: value, tags: WalletTags(tags))
    }

    static func appendVarint(_ value: UInt64, to out: inout [UInt8]) {
        var v = value
        while v >= 0x80 {
            out.append(UInt8(v & 0x7F) | 0x80)
            v >>= 7
        }
        out.append(UInt8(v))
    }

    static func appendString(_ s: String, to out: inout [UInt8]) {
        let utf8 = s.utf8
        appendVarint(UInt64(utf8.count), to: &out)
        out.append(contentsOf: utf8)
    }

    struct ByteReader {
        let bytes: Data
        var index: Data.Index

        init(_ bytes: Data) {
            self.bytes = bytes
            index = bytes.startIndex
        }

        mutating func byte() -> UInt8? {
            guard index < bytes.endIndex else { return nil }
            defer { index += 1 }
            return bytes[index]
        }

        mutating func varint() -> UInt64? {
            var result: UInt64 = 0
            var shift: UInt64 = 0
            while let b = byte() {
                result |= UInt64(b & 0x7F) << shift
                if b & 0x80 == 0 { return result }
                shift += 7
                if shift > 63 { return nil }
            }
            return nil
        }

        mutating func string() -> String? {
            guard let n = varint(), n <= UInt64(bytes.endIndex - index) else { return nil }
            let end = index + Int(n)
            defer { index = end }
            return String(validating: bytes[index..<end], as: UTF8.self)
        }
    }
}
