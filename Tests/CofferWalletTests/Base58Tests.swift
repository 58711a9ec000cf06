// Base58 (Bitcoin alphabet, CofferCrypto) against Bitcoin Core's test vectors
// (src/test/data/base58_encode_decode.json), characters outside the alphabet, and round trips of
// seeded random data with leading zero bytes.

import CofferCrypto
import CofferDevelopment
import Foundation
import Testing

/// One of Bitcoin Core's vectors: the bytes in hex and their Base58 text.
struct Base58Vector: Sendable, CustomTestStringConvertible {
    let hex: String
    let text: String
    var testDescription: String { "\(hex.prefix(24)) ↔ \(text.prefix(24))" }

    var bytes: Data {
        let digits = Array(hex.utf8)
        return Data(
            stride(from: 0, to: digits.count, by: 2).map {
                UInt8(String(decoding: digits[$0..<$0 + 2], as: UTF8.self), radix: 16)!
            })
    }
}

private let bitcoinVectors: [Base58Vector] = [
    .init(hex: "", text: ""),
    .init(hex: "61", text: "2g"),
    .init(hex: "626262", text: "a3gV"),
    .init(hex: "636363", text: "aPEr"),
    .init(hex: "73696d706c792061206c6f6e6720737472696e67", text: "2cFupjhnEsSn59qHXstmK2ffpLv2"),
    .init(hex: "00eb15231dfceb60925886b67d065299925915aeb172c06647", text: "1NS17iag9jJgTHD1VXjvLCEnZuQ3rJDE9L"),
    .init(hex: "516b6fcd0f", text: "ABnLTmg"),
    .init(hex: "bf4f89001e670274dd", text: "3SEo3LWLoPntC"),
    .init(hex: "572e4794", text: "3EFU7m"),
    .init(hex: "ecac89cad93923c02321", text: "EJDM8drfXA6uyA"),
    .init(hex: "10c8511e", text: "Rt5zm"),
    .init(hex: "00000000000000000000", text: "1111111111"),
    .init(hex: String(repeating: "00", count: 40), text: String(repeating: "1", count: 40)),
    .init(hex: String(repeating: "00", count: 39) + "01", text: String(repeating: "1", count: 39) + "2"),
    .init(
        hex: String(repeating: "00", count: 86) + "ec39d04c37e71e5d591881f6",
        text: String(repeating: "1", count: 86) + "5TYzLYH1udmLdzCLM"),
    .init(
        hex: "000111d38e5fc9071ffcd20b4a763cc9ae4f252bb4e48fd66a835e252ada93ff480d6dd43dc62a641155a5",
        text: "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"),
    .init(
        hex: (0...255).map { String(format: "%02x", $0) }.joined(),
        text:
            "1cWB5HCBdLjAuqGGReWE3R3CguuwSjw6RHn39s2yuDRTS5NsBgNiFpWgAnEx6VQi8csexkgYw3mdYrMHr8x9i7aEwP8kZ7vccXWqKDvGv3u1GxFKPuAkn8JCPPGDMf3vMMnbzm6Nh9zh1gcNsMvH3ZNLmP5fSG6DGbbi2tuwMWPthr4boWwCxf7ewSgNQeacyozhKDDQQ1qL5fQFUW52QKUZDZ5fw3KXNQJMcNTcaB723LchjeKun7MuGW5qyCBZYzA1KjofN1gYBV3NqyhQJ3Ns746GNuf9N2pQPmHz4xpnSrrfCvy6TVVz5d4PdrjeshsWQwpZsZGzvbdAdN8MKV5QsBDY"
    ),
    .init(hex: "271F359E", text: "zzzzy"),
    .init(hex: "271F359F", text: "zzzzz"),
    .init(hex: "271F35A0", text: "211111"),
    .init(hex: "271F35A1", text: "211112"),
]

@Suite("Base58")
struct Base58Tests {
    @Test("encoding Bitcoin's vector bytes gives Bitcoin's text", arguments: bitcoinVectors)
    func encodesVector(_ vector: Base58Vector) {
        #expect(Base58.encode(vector.bytes) == vector.text)
    }

    @Test("decoding Bitcoin's vector text gives Bitcoin's bytes", arguments: bitcoinVectors)
    func decodesVector(_ vector: Base58Vector) {
        #expect(Base58.decode(vector.text) == vector.bytes)
    }

    @Test("the four look-alike characters 0, O, I and l are outside the alphabet", arguments: ["0", "O", "I", "l"])
    func lookAlikesRejected(_ character: String) {
        #expect(Base58.decode(character) == nil)
        #expect(Base58.decode("2g" + character) == nil)
        #expect(Base58.decode(character + "2g") == nil)
        #expect(Base58.decode("11" + character) == nil)
    }

    @Test(
        "whitespace, punctuation and non-ASCII characters are outside the alphabet",
        arguments: [" 2g", "2g ", "2 g", "2g\n", "+", "/", "=", "2g-", "\u{E9}", "2\u{1D7D0}", "\u{FF12}g"])
    func otherCharactersRejected(_ text: String) {
        #expect(Base58.decode(text) == nil)
    }

    @Test("every character of the alphabet decodes, and to its own value")
    func alphabetValues() {
        let alphabet = Array("123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz")
        for (value, character) in alphabet.enumerated() {
            // Prefix "2" (value 1) so a "1" is a digit, not a leading zero byte: 58 + value.
            #expect(Base58.decode("2" + String(character)) == Data([UInt8(58 + value)]))
        }
    }

    @Test("each leading zero byte is one leading '1', and each leading '1' one zero byte")
    func leadingZeros() {
        for zeros in 0...5 {
            let data = Data(repeating: 0, count: zeros) + Data([0x61])
            #expect(Base58.encode(data) == String(repeating: "1", count: zeros) + "2g")
            #expect(Base58.decode(String(repeating: "1", count: zeros) + "2g") == data)
            #expect(Base58.decode(String(repeating: "1", count: zeros)) == Data(repeating: 0, count: zeros))
        }
    }

    @Test("seeded random data with leading zero bytes round-trips, and its text is canonical")
    func randomRoundTrips() {
        var rng = SplitMix64(seed: 0xC0FF_EE58)
        var failures: [String] = []
        for _ in 0..<2000 {
            let zeros = Int.random(in: 0...4, using: &rng)
            let rest = Int.random(in: 0...40, using: &rng)
            var data = Data(repeating: 0, count: zeros)
            data.append(contentsOf: (0..<rest).map { _ in UInt8.random(in: 0...255, using: &rng) })
            let text = Base58.encode(data)
            let leadingOnes = text.prefix { $0 == "1" }.count
            if Base58.decode(text) != data || leadingOnes != data.prefix(while: { $0 == 0 }).count {
                failures.append("\(data.map { String(format: "%02x", $0) }.joined()) → \(text)")
            }
        }
        #expect(failures.isEmpty, "\(failures.count) failed, first: \(failures.first ?? "")")
    }
}
