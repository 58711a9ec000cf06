// The sealed form of one record: id, value and tags in a compact binary layout, then AEAD.

import CofferCrypto
import CofferSync
import Foundation

/// Plaintext layout (version 3), all lengths unsigned LEB128:
///
///     u8 version = 3
///     type:  len, UTF-8   (version 1, the first format, had no type; it still reads)
///     id:    len, UTF-8
///     value: len, UTF-8
///     tags:  count, then per tag (sorted by name):
///            u8 kind (0 single string, 1 list), name len + UTF-8,
///            [list: value count], per value: len + UTF-8
///
/// Sealed as ChaCha20-Poly1305 (random 12-byte nonce) under the per-record key. The associated
/// data binds the box to its row: the blind type, the blind id and (from version 3) the row's
/// expiry — `0x00` for none, or `0x01` and the Unix milliseconds as 8 bytes big-endian. A box
/// moved to another row, or a row whose expiry was changed, extended or removed, fails to open.
/// Versions 1 and 2 were sealed with the blind type and id alone: they still open (their AD is
/// tried when the newer one fails, and they must then decode as version 1 or 2), and the
/// record's next write seals it as version 3.
enum RecordCodec {
    static let version: UInt8 = 3
    static let aead = AEAD.chacha20Poly1305

    struct Contents {
        /// The record's type; nil for a version-1 box, which did not hold it.
        var type: String?
        var id: String
        var value: String
        var tags: WalletTags
        /// The plaintext layout version the box was sealed with (set when opened).
        var format: UInt8 = RecordCodec.version
        /// A secret to seal as the value instead of ``value`` (its base64 text, written straight
        /// from the key's storage into the plaintext buffer, which is wiped: no `String` copy).
        var secretValue: SecretKey? = nil
        /// The value's own UTF-8 bytes in guarded memory instead of ``value`` (which is then
        /// empty): a reserved secret's value as rotation and backup export carry it, sealed or
        /// written from these bytes, never made into a `String`.
        var valueBytes: SecretKey? = nil
    }

    /// How ``open(_:typeBlind:idBlind:expiry:keys:expectedType:value:)`` reads a record's value.
    enum ValueMode {
        /// As a `String` in ``Contents/value`` (the record API's own records).
        case text
        /// Not at all: ``Contents/value`` is empty (checks, listings, counts, presence checks).
        case skipped
        /// Into ``Contents/valueBytes`` (guarded memory, wiped on release), never a `String`:
        /// for records of reserved types, whose values are the wallet's secrets.
        case bytes
        /// ``bytes`` when `type` is reserved (see `Validate.reservedTypePrefix`), else ``text``.
        static func keepingSecrets(of type: String?) -> ValueMode {
            guard let type, RecordCodec.isReserved(type) else { return .text }
            return .bytes
        }
    }

    /// Whether records of `type` hold the wallet's secrets (keys, the master secret, signatures).
    static func isReserved(_ type: String) -> Bool { type.hasPrefix(Validate.reservedTypePrefix) }

    static func seal(_ contents: Contents, typeBlind: Data, idBlind: Data, expiry: Int64?, keys: WalletKeys) -> Data {
        var out = [UInt8]()
        // Room for everything up front, so the buffer (wiped below) is never reallocated and no
        // copy of the plaintext is left in freed memory.
        var capacity = contents.value.utf8.count + contents.id.utf8.count + (contents.type?.utf8.count ?? 0) + 64
        for (name, value) in contents.tags.entries {
            capacity += name.string.utf8.count + 16
            switch value {
            case .string(let s): capacity += s.utf8.count + 10
            case .list(let list): capacity += list.reduce(0) { $0 + $1.utf8.count + 10 }
            }
        }
        if let secret = contents.secretValue { capacity += secret.base64ByteCount + 10 }
        if let bytes = contents.valueBytes { capacity += bytes.byteCount + 10 }
        out.reserveCapacity(capacity)
        out.append(version)
        appendString(contents.type ?? "", to: &out)
        appendString(contents.id, to: &out)
        if let secret = contents.secretValue {
            appendVarint(UInt64(secret.base64ByteCount), to: &out)
            secret.appendBase64(to: &out)
        } else if let bytes = contents.valueBytes {
            appendVarint(UInt64(bytes.byteCount), to: &out)
            bytes.withUnsafeBytes { out.append(contentsOf: $0) }
        } else {
            appendString(contents.value, to: &out)
        }
        let tags = contents.tags.effective
        appendVarint(UInt64(tags.count), to: &out)
        for (name, value) in tags {
            switch value {
            case .string(let s):
                out.append(0)
                appendString(name, to: &out)
                appendString(s, to: &out)
            case .list(let values):
                out.append(1)
                appendString(name, to: &out)
                appendVarint(UInt64(values.count), to: &out)
                for v in values { appendString(v, to: &out) }
            }
        }
        defer { SecureMemory.wipe(&out) }
        return keys.withRecordKey(typeBlind: typeBlind, idBlind: idBlind) { key in
            out.withUnsafeBytes { message in
                withBytes(typeBlind) { t in
                    withBytes(idBlind) { i in
                        withAssociatedData(t, i, expiry: .bound(expiry)) { ad in aead.seal(message, keyBytes: key, associatedData: ad) }
                    }
                }
            }
        }
    }

    /// What a box's associated data says of the row's expiry.
    enum ExpiryBinding {
        /// Version 3: the expiry (nil: none) is bound.
        case bound(Int64?)
        /// Versions 1 and 2: the expiry was not bound.
        case legacy
    }

    /// Lends the associated data of a record box — its row's blind type, blind id and (version
    /// 3) expiry — from a temporary buffer (on the stack when small).
    static func withAssociatedData<R, E: Error>(
        _ typeBlind: UnsafeRawBufferPointer, _ idBlind: UnsafeRawBufferPointer, expiry: ExpiryBinding,
        _ body: (UnsafeRawBufferPointer) throws(E) -> R
    ) throws(E) -> R {
        let tail: Int
        switch expiry {
        case .legacy: tail = 0
        case .bound(nil): tail = 1
        case .bound(.some): tail = 9
        }
        return try withUnsafeTemporaryAllocation(byteCount: typeBlind.count + idBlind.count + tail, alignment: 8) { (ad) throws(E) -> R in
            UnsafeMutableRawBufferPointer(rebasing: ad[0..<typeBlind.count]).copyMemory(from: typeBlind)
            UnsafeMutableRawBufferPointer(rebasing: ad[typeBlind.count..<(typeBlind.count + idBlind.count)]).copyMemory(from: idBlind)
            let at = typeBlind.count + idBlind.count
            if case .bound(let value) = expiry {
                ad[at] = value == nil ? 0 : 1
                if let value {
                    var bigEndian = UInt64(bitPattern: value).bigEndian
                    withUnsafeBytes(of: &bigEndian) { UnsafeMutableRawBufferPointer(rebasing: ad[(at + 1)...]).copyMemory(from: $0) }
                }
            }
            return try body(UnsafeRawBufferPointer(ad))
        }
    }

    /// Opens and decodes a record box, reading its value as `value` says (as text by default).
    /// - Throws: ``WalletError/corrupted(_:)`` when authentication or decoding fails.
    static func open(
        _ sealed: Data, typeBlind: Data, idBlind: Data, expiry: Int64?, keys: WalletKeys,
        expectedType: String? = nil, value mode: ValueMode = .text
    ) throws(WalletError) -> Contents {
        var kept: SecretKey?
        let secretValue: ((UnsafeRawBufferPointer) -> Void)?
        switch mode {
        case .text: secretValue = nil
        case .skipped: secretValue = { _ in }
        // An empty value needs no bytes (and a `SecretKey` cannot be empty): it reads as "".
        case .bytes: secretValue = { raw in kept = raw.isEmpty ? nil : try? SecretKey(copying: raw) }
        }
        var contents = try withBytes(sealed) { (box) throws(WalletError) -> Contents in
            try withBytes(typeBlind) { (t) throws(WalletError) -> Contents in
                try withBytes(idBlind) { (i) throws(WalletError) -> Contents in
                    try open(
                        box, typeBlind: t, idBlind: i, expiry: expiry, keys: keys, expectedType: expectedType, secretValue: secretValue)
                }
            }
        }
        contents.valueBytes = kept
        return contents
    }

    /// Opens and decodes a record box held in memory the caller lends (a search reads rows
    /// straight from SQLite into one buffer per batch). `expiry` is the row's expiry column.
    /// With `expectedType` given, the sealed type is compared with it and not read back (a
    /// search knows it already; ``Contents/type`` is then nil): a box of another type whose blind
    /// type collided is `corrupted`, never returned.
    /// - Throws: ``WalletError/corrupted(_:)`` when authentication or decoding fails.
    /// With `secretValue` given, the value's bytes are handed to it instead of being made into
    /// ``Contents/value`` (which is then empty).
    static func open(
        _ box: UnsafeRawBufferPointer, typeBlind: UnsafeRawBufferPointer, idBlind: UnsafeRawBufferPointer,
        expiry: Int64?, keys: WalletKeys, expectedType: String? = nil,
        secretValue: ((UnsafeRawBufferPointer) -> Void)? = nil
    ) throws(WalletError) -> Contents {
        let decoded: Contents?
        do {
            decoded = try keys.withRecordKey(typeBlind: typeBlind, idBlind: idBlind) { (key) throws(CryptoError) -> Contents? in
                // Associated data and plaintext live in temporary buffers (on the stack when
                // small), so opening a record allocates only what it returns.
                try withUnsafeTemporaryAllocation(byteCount: max(box.count - aead.overhead, 1), alignment: 8) {
                    (plain) throws(CryptoError) -> Contents? in
                    defer { SecureMemory.wipe(plain) }
                    let n: Int
                    let legacy: Bool
                    do {
                        n = try withAssociatedData(typeBlind, idBlind, expiry: .bound(expiry)) { (ad) throws(CryptoError) -> Int in
                            try aead.open(box, keyBytes: key, associatedData: ad, into: plain)
                        }
                        legacy = false
                    } catch {
                        // A box sealed before expiry was bound (format 1 or 2).
                        n = try withAssociatedData(typeBlind, idBlind, expiry: .legacy) { (ad) throws(CryptoError) -> Int in
                            try aead.open(box, keyBytes: key, associatedData: ad, into: plain)
                        }
                        legacy = true
                    }
                    let bytes = UnsafeRawBufferPointer(rebasing: plain[0..<n])
                    // The AD that opened the box must be the one its version is sealed with.
                    guard let format = bytes.first, legacy ? format < version : format == version else { return nil }
                    let contents = decode(bytes, expectedType: expectedType, secretValue: secretValue)
                    #if DEBUG
                    if secretValue == nil, let type = expectedType ?? contents?.type, isReserved(type) {
                        Self.noteReservedValueText(typeBlind: typeBlind)
                    }
                    #endif
                    return contents
                }
            }
        } catch {
            throw .corrupted(
                "a record failed authentication (the wallet file was altered or damaged: its box, blind type, blind id or expiry)")
        }
        guard let decoded else { throw .corrupted("a record's sealed contents do not decode, or its sealed type differs from its index") }
        return decoded
    }

    #if DEBUG
    /// Debug builds only (read by tests): how many times a reserved record's value was
    /// decoded into a `String`, by blind type (so each wallet's count is its own). Only the
    /// record API's reading of a credential signature (a `String` by its API) should add to it.
    static let reservedValueTexts = Locked([Data: Int]())

    static func noteReservedValueText(typeBlind: UnsafeRawBufferPointer) {
        reservedValueTexts.withLock { $0[Data(typeBlind), default: 0] += 1 }
    }
    #endif

    /// Opens a record box whose value is a secret's base64 text and decodes that text straight
    /// into a ``SecretKey`` of `byteCount` bytes: the plaintext lives only in a wiped buffer, and
    /// no `String` of the value is made. The secret is nil when the value does not decode to
    /// that length; the contents carry the id and tags (their value is empty).
    /// - Throws: ``WalletError/corrupted(_:)`` when authentication or decoding fails.
    static func openSecret(
        _ sealed: Data, typeBlind: Data, idBlind: Data, expiry: Int64?, keys: WalletKeys,
        expectedType: String, byteCount: Int
    ) throws(WalletError) -> (SecretKey?, Contents) {
        var secret: SecretKey?
        let contents = try withBytes(sealed) { (box) throws(WalletError) -> Contents in
            try withBytes(typeBlind) { (t) throws(WalletError) -> Contents in
                try withBytes(idBlind) { (i) throws(WalletError) -> Contents in
                    try open(box, typeBlind: t, idBlind: i, expiry: expiry, keys: keys, expectedType: expectedType) { value in
                        secret = try? SecretKey(base64Bytes: value, expectedCount: byteCount)
                    }
                }
            }
        }
        return (secret, contents)
    }

    /// Reads the plaintext layout; nil when it is malformed, or when `expectedType` is given and
    /// the sealed type (versions 2 and 3) differs from it.
    static func decode(
        _ bytes: UnsafeRawBufferPointer, expectedType: String? = nil,
        secretValue: ((UnsafeRawBufferPointer) -> Void)? = nil
    ) -> Contents? {
        var reader = ByteReader(bytes)
        guard let format = reader.byte() else { return nil }
        var type: String?
        if format == version || format == 2 {
            if let expectedType {
                guard reader.skipString(matching: expectedType) else { return nil }
            } else {
                guard let t = reader.string() else { return nil }
                type = t
            }
        } else if format != 1 {
            return nil
        }
        guard let id = reader.string() else { return nil }
        let value: String
        if let secretValue {
            guard let raw = reader.field() else { return nil }
            secretValue(raw)
            value = ""
        } else {
            guard let v = reader.string() else { return nil }
            value = v
        }
        guard let count = reader.varint(), count <= UInt64(bytes.count) else { return nil }
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
        return Contents(type: type, id: id, value: value, tags: WalletTags(entries: tags), format: format)
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

        /// Steps over a length-prefixed string that must equal `expected` byte for byte; false
        /// when it differs or runs past the end.
        mutating func skipString(matching expected: String) -> Bool {
            guard let n = varint(), n <= UInt64(bytes.count - index) else { return false }
            let start = index
            index += Int(n)
            var expected = expected
            return expected.withUTF8 { e in
                e.count == Int(n) && (n == 0 || memcmp(e.baseAddress!, bytes.baseAddress! + start, Int(n)) == 0)
            }
        }

        /// A length-prefixed field's bytes, lent from the buffer being read.
        mutating func field() -> UnsafeRawBufferPointer? {
            guard let n = varint(), n <= UInt64(bytes.count - index) else { return nil }
            let start = index
            index += Int(n)
            return UnsafeRawBufferPointer(rebasing: bytes[start..<index])
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

extension RecordCodec {
    /// Throws ``WalletError/corrupted(_:)`` unless the id sealed in a record is the one its index
    /// row was found under (a box copied onto another row opens, but names another id).
    static func checkSealedID(_ sealed: String, _ expected: String) throws {
        guard sealed == expected else { throw WalletError.corrupted("a record's sealed id does not match its index") }
    }
}
