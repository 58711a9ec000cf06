// Specifications of CofferCrypto's wrappers: round trips, failures and secrecy.

import CofferCrypto
import Foundation
import Testing

@Suite("AEAD")
struct AEADTests {
    @Test("ChaCha20-Poly1305 round-trips with associated data", arguments: [AEAD.chacha20Poly1305, .xchacha20Poly1305])
    func roundTrip(_ aead: AEAD) throws {
        let key = SecretKey.random()
        let box = try aead.seal(Data("hello".utf8), key: key, associatedData: Data("ad".utf8))
        #expect(box.count == 5 + aead.overhead)
        #expect(try aead.open(box, key: key, associatedData: Data("ad".utf8)) == Data("hello".utf8))
    }

    @Test("an empty plaintext seals and opens", arguments: [AEAD.chacha20Poly1305, .xchacha20Poly1305])
    func emptyPlaintext(_ aead: AEAD) throws {
        let key = SecretKey.random()
        let box = try aead.seal(Data(), key: key)
        #expect(try aead.open(box, key: key) == Data())
    }

    @Test("a flipped byte fails authentication", arguments: [AEAD.chacha20Poly1305, .xchacha20Poly1305])
    func tamper(_ aead: AEAD) throws {
        let key = SecretKey.random()
        var box = try aead.seal(Data("secret".utf8), key: key)
        box[box.count - 3] ^= 0x01
        #expect(throws: CryptoError.authenticationFailed) { try aead.open(box, key: key) }
    }

    @Test("another key fails authentication")
    func wrongKey() throws {
        let box = try AEAD.xchacha20Poly1305.seal(Data("secret".utf8), key: SecretKey.random())
        #expect(throws: CryptoError.authenticationFailed) { try AEAD.xchacha20Poly1305.open(box, key: SecretKey.random()) }
    }

    @Test("other associated data fails authentication")
    func wrongAssociatedData() throws {
        let key = SecretKey.random()
        let box = try AEAD.chacha20Poly1305.seal(Data("x".utf8), key: key, associatedData: Data("a".utf8))
        #expect(throws: CryptoError.authenticationFailed) { try AEAD.chacha20Poly1305.open(box, key: key, associatedData: Data("b".utf8)) }
    }

    @Test("a box shorter than nonce and tag is rejected")
    func truncated() {
        #expect(throws: CryptoError.authenticationFailed) { try AEAD.chacha20Poly1305.open(Data(count: 10), key: SecretKey.random()) }
    }

    @Test("two seals of one message differ (random nonces)")
    func randomNonce() throws {
        let key = SecretKey.random()
        let a = try AEAD.chacha20Poly1305.seal(Data("m".utf8), key: key)
        let b = try AEAD.chacha20Poly1305.seal(Data("m".utf8), key: key)
        #expect(a != b)
    }

    @Test(
        "nonces stay distinct across many seals (the buffered nonce source refills without repeating)",
        arguments: [AEAD.chacha20Poly1305, .xchacha20Poly1305])
    func distinctNonces(_ aead: AEAD) throws {
        let key = SecretKey.random()
        var seen = Set<Data>()
        // 3,000 seals draw 36-72 KB of nonces: many refills of the 4 KiB buffer.
        for _ in 0..<3_000 {
            let box = try aead.seal(Data("m".utf8), key: key)
            seen.insert(box.prefix(aead.nonceByteCount))
        }
        #expect(seen.count == 3_000)
    }

    @Test("a key of the wrong length is refused")
    func keyLength() throws {
        let short = try SecretKey(copying: Data(count: 16))
        #expect(throws: CryptoError.invalidLength(what: "AEAD key", expected: 32, actual: 16)) {
            try AEAD.chacha20Poly1305.seal(Data(), key: short)
        }
    }
}

@Suite("Keys and key derivation")
struct KeyTests {
    @Test("a key never prints its bytes")
    func redacted() throws {
        let key = try SecretKey(copying: Data(repeating: 0xAB, count: 32))
        #expect(key.description == "SecretKey(32 bytes, redacted)")
        #expect(!String(reflecting: key).contains("171"))
        var dumped = ""
        dump(key, to: &dumped)
        #expect(!dumped.lowercased().contains("ab"))
    }

    @Test("an empty key is refused")
    func emptyKey() {
        #expect(throws: CryptoError.self) { try SecretKey(copying: Data()) }
    }

    @Test("a key of an unexpected length is refused")
    func expectedLength() {
        #expect(throws: CryptoError.invalidLength(what: "key", expected: 32, actual: 31)) {
            try SecretKey(copying: Data(count: 31), expectedCount: 32)
        }
    }

    @Test("Argon2id is deterministic for passphrase, salt and costs")
    func argon2Deterministic() throws {
        let salt = Data(repeating: 7, count: 16)
        let a = try Argon2id.deriveKey(passphrase: "correct horse", salt: salt, parameters: .minimum)
        let b = try Argon2id.deriveKey(passphrase: "correct horse", salt: salt, parameters: .minimum)
        let c = try Argon2id.deriveKey(passphrase: "correct horsf", salt: salt, parameters: .minimum)
        #expect(a.constantTimeEquals(b))
        #expect(!a.constantTimeEquals(c))
    }

    @Test("Argon2id matches PyNaCl for the same inputs")
    func argon2KnownAnswer() throws {
        // Reference: PyNaCl argon2id.kdf(32, b"password", b"somesaltsomesalt", opslimit=2, memlimit=8 MiB).
        let key = try Argon2id.deriveKey(
            passphrase: "password", salt: Data("somesaltsomesalt".utf8),
            parameters: Argon2idParameters(opsLimit: 2, memLimit: 8 << 20))
        #expect(key.exportBytes().map { String(format: "%02x", $0) }.joined() == Self.argonReference)
    }

    static let argonReference = "fd7e44552d83db6b9c2bc9dbd6d88fe0facd11df4654ac21fe8013fd7a05ebc3"

    @Test("Argon2id refuses a salt that is not 16 bytes")
    func argon2Salt() {
        #expect(throws: CryptoError.invalidLength(what: "Argon2id salt", expected: 16, actual: 8)) {
            try Argon2id.deriveKey(passphrase: "p", salt: Data(count: 8), parameters: .minimum)
        }
    }

    @Test("Argon2id refuses costs below libsodium's minimum")
    func argon2Costs() {
        #expect(throws: CryptoError.self) {
            try Argon2id.deriveKey(passphrase: "p", salt: Data(count: 16), parameters: Argon2idParameters(opsLimit: 0, memLimit: 1024))
        }
    }

    @Test("HMAC blind indexes are deterministic and keyed")
    func keyedHash() throws {
        let k1 = KeyedHash(key: SecretKey.random())
        let k2 = KeyedHash(key: SecretKey.random())
        let a = k1.hash([Data("type".utf8), Data("id".utf8)], byteCount: 16)
        #expect(a == k1.hash([Data("type".utf8), Data("id".utf8)], byteCount: 16))
        #expect(a != k2.hash([Data("type".utf8), Data("id".utf8)], byteCount: 16))
        #expect(a.count == 16)
    }

    @Test("length prefixes keep part boundaries apart")
    func keyedHashBoundaries() {
        let k = KeyedHash(key: SecretKey.random())
        #expect(k.hash([Data("ab".utf8), Data("c".utf8)]) != k.hash([Data("a".utf8), Data("bc".utf8)]))
    }

    @Test("HMAC-SHA256 matches RFC 4231 test case 2")
    func hmacVector() throws {
        // Key "Jefe", data "what do ya want for nothing?" → 5bdcc146…
        let key = try SecretKey(copying: Data("Jefe".utf8))
        let mac = KeyedHash(key: key).raw(Data("what do ya want for nothing?".utf8))
        #expect(mac.map { String(format: "%02x", $0) }.joined() == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
    }

    @Test("HKDF subkeys differ by label")
    func hkdf() {
        let master = SecretKey.random()
        let a = KeyDerivation.hkdf(from: master, info: "a")
        let b = KeyDerivation.hkdf(from: master, info: "b")
        #expect(!a.constantTimeEquals(b))
        #expect(a.constantTimeEquals(KeyDerivation.hkdf(from: master, info: "a")))
    }
}

@Suite("SecretKey base64")
struct SecretKeyBase64Tests {
    @Test("base64 written from a key decodes into an equal key")
    func roundTrip() throws {
        let key = SecretKey.random(byteCount: 32)
        let again = try SecretKey(base64: key.base64EncodedString(), expectedCount: 32)
        #expect(again.constantTimeEquals(key))
    }

    @Test("the encoding is standard base64, as Foundation writes it")
    func standardAlphabet() throws {
        let key = try SecretKey(copying: Data((0..<32).map { UInt8($0 * 7 & 0xff) }))
        #expect(key.base64EncodedString() == key.exportBytes().base64EncodedString())
    }

    @Test("text that is not base64 is refused without quoting it")
    func notBase64() {
        #expect(throws: CryptoError.invalidParameter("the stored key is not valid base64")) {
            try SecretKey(base64: "not*base64!", expectedCount: 32)
        }
    }

    @Test("base64 of another length is refused with both lengths")
    func wrongLength() {
        let text = Data(repeating: 1, count: 16).base64EncodedString()
        #expect(throws: CryptoError.invalidLength(what: "key", expected: 32, actual: 16)) { try SecretKey(base64: text, expectedCount: 32) }
    }
}
