// The sealed form of one record: id, value and tags in a compact binary layout, then AEAD.
import CofferCrypto
import Foundation

/// Plaintext layout (version 2), all lengths unsigned LEB128:
///
///     u8 version = 2
///     type:  len, UTF-8   (version 1, the first format, had no type; it still reads)
///     id:    len, UTF-8
///     value: len, UTF-8
///     tags:  count, then per tag (sorted by name):
///            u8 kind (0 single string, 1 list), name len + UTF-8,
///            [list: value count], per value: len + UTF-8
///
/// Sealed as ChaCha20-Poly1305 (random 12-byte nonce) under the per-record key, with the
/// row's blind type and id as associated data, so a box moved to another row fails.
enum RecordCodec {
    static let version: UInt8 = 2
    static let aead = AEAD.chacha20Poly1305

    struct Contents {
        /// The record's type; nil for a version-1 box, which did not hold it.
        var type: String?
        var id: String
        var value: String
        var tags: WalletTags
    }

    static func seal(_ contents: Contents, typeBlind: Data, idBlind: Data, keys: WalletKeys) -> Data {
        var out = [UInt8]()
        out.reserveCapacity(contents.value.utf8.count + contents.id.utf8.count + 64)
        out.append(version)
        appendString(contents.type ?? "", to: &out)
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
        defer { SecureMemory.wipe(&out) }
        return keys.withRecordKey(typeBlind: typeBlind, idBlind: idBlind) { key in
            out.withUnsafeBytes { message in
                withAssociatedData(typeBlind, idBlind) { ad in aead.seal(message, keyBytes: key, associatedData: ad) }
            }
        }
    }

    /// Lends the associated data of a record box — its row's blind type then blind id — from a
    /// temporary buffer (on the stack when small).
    static func withAssociatedData<R, E: Error>(_ typeBlind: Data, _ idBlind: Data,
                                                _ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        try withBytes(typeBlind) { (t) throws(E) -> R in
            try withBytes(idBlind) { (i) throws(E) -> R in try withAssociatedData(t, i, body) }
        }
    }

    static func withAssociatedData<R, E: Error>(_ typeBlind: UnsafeRawBufferPointer, _ idBlind: UnsafeRawBufferPointer,
                                                _ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        try withUnsafeTemporaryAllocation(byteCount: typeBlind.count + idBlind.count, alignment: 8) { (ad) throws(E) -> R in
            UnsafeMutableRawBufferPointer(rebasing: ad[0..<typeBlind.count]).copyMemory(from: typeBlind)
            UnsafeMutableRawBufferPointer(rebasing: ad[typeBlind.count...]).copyMemory(from: idBlind)
            return try body(UnsafeRawBufferPointer(ad))
        }
    }

    /// Opens and decodes a record box.
    /// - Throws: ``WalletError/corrupted(_:)`` when authentication or decoding fails.
    static func open(_ sealed: Data, typeBlind: Data, idBlind: Data, keys: WalletKeys) throws(WalletError) -> Contents {
        try withBytes(sealed) { (box) throws(WalletError) -> Contents in
            try withBytes(typeBlind) { (t) throws(WalletError) -> Contents in
                try withBytes(idBlind) { (i) throws(WalletError) -> Contents in try open(box, typeBlind: t, idBlind: i, keys: keys) }
            }
        }
    }

    /// Opens and decodes a record box held in memory the caller lends (a search reads rows
    /// straight from SQLite into one buffer per batch). With `withType` false the type is not
    /// read back (a search knows it already) and ``Contents/type`` is nil.
    /// - Throws: ``WalletError/corrupted(_:)`` when authentication or decoding fails.
    static func open(_ box: UnsafeRawBufferPointer, typeBlind: UnsafeRawBufferPointer, idBlind: UnsafeRawBufferPointer,
                     keys: WalletKeys, withType: Bool = true) throws(WalletError) -> Contents {
        let decoded: Contents?
        do {
            decoded = try keys.withRecordKey(typeBlind: typeBlind, idBlind: idBlind) { (key) throws(CryptoError) -> Contents? in
                // Associated data and plaintext live in temporary buffers (on the stack when
                // small), so opening a record allocates only what it returns.
                try withAssociatedData(typeBlind, idBlind) { (ad) throws(CryptoError) -> Contents? in
                    try withUnsafeTemporaryAllocation(byteCount: max(box.count - aead.overhead, 1), alignment: 8) { (plain) throws(CryptoError) -> Contents? in
                        defer { SecureMemory.wipe(plain) }
                        let n = try aead.open(box, keyBytes: key, associatedData: ad, into: plain)
                        return decode(UnsafeRawBufferPointer(rebasing: plain[0..<n]), withType: withType)
                    }
                }
            }
        } catch {
            throw .corrupted("a record failed authentication (the wallet file was altered or damaged)")
        }
        guard let decoded else { throw .corrupted("a record's sealed contents do not decode") }
        return decoded
    }

    /// Reads the plaintext layout; nil when it is malformed.
    static func decode(_ bytes: UnsafeRawBufferPointer, withType: Bool = true) -> Contents? {
        var reader = ByteReader(bytes)
        let format = reader.byte()
        var type: String?
        if format == version {
            if withType {
                guard let t = reader.string() else { return nil }
                type = t
            } else {
                guard reader.skipString() else { return nil }
            }
        } else if format != 1 {
            return nil
        }
        guard let id = reader.string(), let value = reader.string(),
              let count = reader.varint(), count <= UInt64(bytes.count)
        else { return nil }
        var tags = [ByteString: TagValue](minimumCapacity: Int(count))
        for _ in 0..<count {
            guard let kind = reader.byte(), let name = reader.string() else { return nil }
            if kind == 0 {
                guard let s = reader.string() else { return nil }
                tags[ByteString(name)] = .string(s)
            } else {
                guard let n = reader.varint(), n <= UInt64(bytes.count) else { return nil }
                var list = [String]()
                list.reserveCapacity(Int(n))
                for _ in 0..<n {
                    guard let s = reader.string() else { return nil }
                    list.append(s)
                }
                tags[ByteString(name)] = .list(list)
            }
        }
        return Contents(type: type, id: id, value: value, tags: WalletTags(entries: tags))
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
        let bytes: UnsafeRawBufferPointer
        var index = 0

        init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

        mutating func byte() -> UInt8? {
            guard index < bytes.count else { return nil }
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

        /// Steps over a length-prefixed string; false when it runs past the end.
        mutating func skipString() -> Bool {
            guard let n = varint(), n <= UInt64(bytes.count - index) else { return false }
            index += Int(n)
            return true
        }

        mutating func string() -> String? {
            guard let n = varint(), n <= UInt64(bytes.count - index) else { return nil }
            let end = index + Int(n)
            defer { index = end }
            // The box authenticated, and it was written from Swift strings: valid UTF-8.
            return String(decoding: UnsafeRawBufferPointer(rebasing: bytes[index..<end]), as: UTF8.self)
        }
    }
}
