// Ed25519KeyPair against RFC 8032 §7.1 (tests 1 and 2) and X25519KeyPair against RFC 7748 §6.1.

import CofferCrypto
import Foundation
import Testing

extension Data {
    /// The bytes of a hex string (test vectors only: traps on malformed hex).
    fileprivate init(vectorHex hex: String) {
        let digits = Array(hex.utf8)
        self.init(
            stride(from: 0, to: digits.count, by: 2).map {
                UInt8(String(decoding: digits[$0..<$0 + 2], as: UTF8.self), radix: 16)!
            })
    }
}

/// One RFC 8032 Ed25519 test: secret key (the seed), public key, message and signature.
struct Ed25519Vector: Sendable, CustomTestStringConvertible {
    let name: String
    let seed: Data
    let publicKey: Data
    let message: Data
    let signature: Data
    var testDescription: String { name }
}

private let rfc8032Vectors = [
    Ed25519Vector(
        name: "RFC 8032 test 1 (empty message)",
        seed: Data(vectorHex: "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60"),
        publicKey: Data(vectorHex: "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"),
        message: Data(),
        signature: Data(
            vectorHex:
                "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"
        )),
    Ed25519Vector(
        name: "RFC 8032 test 2 (message 0x72)",
        seed: Data(vectorHex: "4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb"),
        publicKey: Data(vectorHex: "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c"),
        message: Data([0x72]),
        signature: Data(
            vectorHex:
                "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00"
        )),
]

@Suite("Ed25519 RFC 8032 vectors")
struct Ed25519VectorTests {
    @Test("the seed gives the RFC's public key", arguments: rfc8032Vectors)
    func publicKey(_ vector: Ed25519Vector) throws {
        let pair = try Ed25519KeyPair(seed: SecretKey(copying: vector.seed))
        #expect(pair.publicKey == vector.publicKey)
    }

    @Test("signing the RFC's message gives the RFC's signature", arguments: rfc8032Vectors)
    func signature(_ vector: Ed25519Vector) throws {
        let pair = try Ed25519KeyPair(seed: SecretKey(copying: vector.seed))
        #expect(pair.sign(vector.message) == vector.signature)
    }

    @Test("the RFC's signature verifies under the RFC's public key", arguments: rfc8032Vectors)
    func verifies(_ vector: Ed25519Vector) {
        #expect(Ed25519KeyPair.verify(signature: vector.signature, message: vector.message, publicKey: vector.publicKey))
    }

    @Test("the RFC's signature with any one bit flipped does not verify", arguments: rfc8032Vectors)
    func flippedSignatureBit(_ vector: Ed25519Vector) {
        for bit in 0..<(vector.signature.count * 8) {
            var altered = vector.signature
            altered[bit / 8] ^= UInt8(1 << (bit % 8))
            #expect(
                !Ed25519KeyPair.verify(signature: altered, message: vector.message, publicKey: vector.publicKey), "bit \(bit)")
        }
    }

    @Test("the RFC's signature does not verify for another message or under another public key", arguments: rfc8032Vectors)
    func otherMessageOrKey(_ vector: Ed25519Vector) {
        #expect(!Ed25519KeyPair.verify(signature: vector.signature, message: vector.message + Data([0]), publicKey: vector.publicKey))
        let otherKey = rfc8032Vectors.first { $0.name != vector.name }!.publicKey
        #expect(!Ed25519KeyPair.verify(signature: vector.signature, message: vector.message, publicKey: otherKey))
    }

    @Test("the exported seed is the RFC's secret key")
    func exportedSeed() throws {
        let vector = rfc8032Vectors[0]
        let exported = try Ed25519KeyPair(seed: SecretKey(copying: vector.seed)).exportSeed()
        #expect(exported.withUnsafeBytes { Data($0) } == vector.seed)
    }

    // Not an RFC vector: the X25519 public key of RFC 8032 test 1's key, computed independently
    // of libsodium (Python's `cryptography`: X25519 of SHA-512(seed)[0..<32], and the map
    // u = (1 + y) / (1 - y) mod 2^255 - 19 of the Ed25519 public key; both gave this value).
    @Test("RFC 8032 test 1's key converts to the X25519 key the birational map gives, from either half")
    func keyAgreementConversion() throws {
        let vector = rfc8032Vectors[0]
        let expected = Data(vectorHex: "d85e07ec22b0ad881537c2f44d662d1a143cf830c57aca4305d85c7a90f6b62e")
        let pair = try Ed25519KeyPair(seed: SecretKey(copying: vector.seed))
        #expect(pair.keyAgreementKeyPair().publicKey == expected)
        #expect(try Ed25519KeyPair.keyAgreementPublicKey(of: vector.publicKey) == expected)
    }
}

@Suite("X25519 RFC 7748 vectors")
struct X25519VectorTests {
    @Test("Alice's private key gives Alice's public key (RFC 7748 §6.1)")
    func alice() throws {
        let secret = try SecretKey(copying: Data(vectorHex: "77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a"))
        let expected = Data(vectorHex: "8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a")
        #expect(try X25519KeyPair(secretKey: secret).publicKey == expected)
    }

    @Test("Bob's private key gives Bob's public key (RFC 7748 §6.1)")
    func bob() throws {
        let secret = try SecretKey(copying: Data(vectorHex: "5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb"))
        let expected = Data(vectorHex: "de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f")
        #expect(try X25519KeyPair(secretKey: secret).publicKey == expected)
    }

    @Test("a box sealed to Alice's vector public key opens with her vector private key")
    func sealedBoxToVectorKey() throws {
        let secret = try SecretKey(copying: Data(vectorHex: "77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a"))
        let alicePublic = Data(vectorHex: "8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a")
        let box = try SealedBox.seal(Data("to Alice".utf8), to: alicePublic)
        #expect(try X25519KeyPair(secretKey: secret).openSealed(box) == Data("to Alice".utf8))
    }
}
