// The readers of libindy's MessagePack keys and Askar's CBOR profile key: the shapes their
// writers produce decode; truncated, oversized, trailing and random bytes are refused, never
// read past their end.

import Foundation
import Testing

@testable import CofferWallet

@Suite("Foreign key blobs")
struct ForeignKeyFormatTests {
    static let keys = (0..<7).map { i in [UInt8](repeating: UInt8(i + 1), count: 32) }

    /// libindy's `rmp_serde` output: a fixarray of seven `bin 8` keys.
    static var indyArray: Data { Data([0x97] + keys.flatMap { [0xc4, 32] + $0 }) }

    /// Askar's `ciborium` output: {"ver": "1", "ick": bytes(32), …}.
    static var askarMap: Data {
        var out: [UInt8] = [0xa7, 0x63] + Array("ver".utf8) + [0x61, 0x31]
        for (i, name) in AskarProfileKeyCBOR.fieldNames.enumerated() { out += [0x63] + Array(name.utf8) + [0x58, 32] + keys[i] }
        return Data(out)
    }

    @Test("libindy's seven keys decode in order, as an array, a map or a sequence of integers")
    func indyShapes() throws {
        #expect(try IndyKeysMessagePack.decode(Self.indyArray) == Self.keys)
        var map: [UInt8] = [0x87]
        for (i, name) in IndyKeysMessagePack.fieldNames.enumerated().reversed() {
            map += [0xa0 | UInt8(name.utf8.count)] + Array(name.utf8) + [0xc4, 32] + Self.keys[i]
        }
        #expect(try IndyKeysMessagePack.decode(Data(map)) == Self.keys)
        let integers: [UInt8] =
            [0x97] + Self.keys.flatMap { key -> [UInt8] in [0xdc, 0, 32] + key.flatMap { $0 < 0x80 ? [$0] : [0xcc, $0] } }
        #expect(try IndyKeysMessagePack.decode(Data(integers)) == Self.keys)
    }

    @Test("Askar's profile key decodes by field name")
    func askarShape() throws {
        let decoded = try AskarProfileKeyCBOR.decode(Self.askarMap)
        for (i, name) in AskarProfileKeyCBOR.fieldNames.enumerated() { #expect(decoded[name] == Self.keys[i]) }
    }

    @Test("every truncation, a trailing byte, a 31- or 33-byte key and another version are refused")
    func malformedRefused() {
        for blob in [Self.indyArray, Self.askarMap] {
            for cut in 0..<blob.count {
                #expect(throws: FormatFault.self) { try decodeEither(blob.prefix(cut), like: blob) }
            }
            #expect(throws: FormatFault.self) { try decodeEither(blob + [0], like: blob) }
        }
        var short = [UInt8](Self.indyArray)
        short[2] = 31
        #expect(throws: FormatFault.self) { try IndyKeysMessagePack.decode(Data(short)) }
        var long = [UInt8](Self.askarMap)
        let at = long.firstIndex(of: 0x58)! + 1
        long[at] = 33
        #expect(throws: FormatFault.self) { try AskarProfileKeyCBOR.decode(Data(long)) }
        var version = [UInt8](Self.askarMap)
        version[6] = 0x32 // "2"
        #expect(throws: FormatFault.self) { try AskarProfileKeyCBOR.decode(Data(version)) }
    }

    @Test("random bytes and huge claimed lengths are refused without reading past the end")
    func randomRefused() {
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<5_000 {
            let count = Int.random(in: 0...300, using: &rng)
            var bytes = (0..<count).map { _ in UInt8.random(in: 0...255, using: &rng) }
            if !bytes.isEmpty, Bool.random(using: &rng) { bytes[0] = [0x97, 0x87, 0xdc, 0xa7][Int.random(in: 0..<4, using: &rng)] }
            _ = try? IndyKeysMessagePack.decode(Data(bytes))
            _ = try? AskarProfileKeyCBOR.decode(Data(bytes))
        }
        #expect(throws: FormatFault.self) { try IndyKeysMessagePack.decode(Data([0x97, 0xc6, 0xff, 0xff, 0xff, 0xff])) }
        #expect(throws: FormatFault.self) { try AskarProfileKeyCBOR.decode(Data([0xa7, 0x7a, 0xff, 0xff, 0xff, 0xff])) }
    }

    private func decodeEither(_ data: Data, like original: Data) throws {
        if original == Self.indyArray { _ = try IndyKeysMessagePack.decode(data) } else { _ = try AskarProfileKeyCBOR.decode(data) }
    }
}
