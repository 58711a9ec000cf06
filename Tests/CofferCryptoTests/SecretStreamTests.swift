// SecretStreamWriter and SecretStreamReader (libsodium crypto_secretstream_xchacha20poly1305).
//
// These checks are behavioural: libsodium publishes no secretstream test vectors, and the writer
// draws its header (the stream's nonce) at random, so no ciphertext can be compared byte for byte.
// Each test writes a stream and checks what a reader accepts, rejects and reports.

import CofferCrypto
import Foundation
import Testing

/// A stream of `messages` under `key`; the last one carries the final tag.
private func writeStream(_ messages: [Data], key: SecretKey) throws -> (header: Data, ciphertexts: [Data]) {
    let writer = try SecretStreamWriter(key: key)
    let ciphertexts = messages.enumerated().map { i, m in writer.push(m, final: i == messages.count - 1) }
    return (writer.header, ciphertexts)
}

private let messages = [Data("first".utf8), Data(), Data(repeating: 0xAB, count: 1000), Data("last".utf8)]

@Suite("SecretStream")
struct SecretStreamTests {
    @Test("several messages, an empty one included, read back in order with only the last marked final")
    func roundTrip() throws {
        let key = SecretKey.random()
        let (header, ciphertexts) = try writeStream(messages, key: key)
        #expect(header.count == SecretStreamReader.headerByteCount)
        #expect(ciphertexts.map(\.count) == messages.map { $0.count + SecretStreamWriter.overhead })
        let reader = try SecretStreamReader(key: key, header: header)
        let read = try ciphertexts.map { try reader.pull($0) }
        #expect(read.map(\.message) == messages)
        #expect(read.map(\.final) == [false, false, false, true])
    }

    @Test("the same message pushed twice encrypts differently each time")
    func noRepeatedCiphertext() throws {
        let writer = try SecretStreamWriter(key: SecretKey.random())
        #expect(writer.push(Data("same".utf8)) != writer.push(Data("same".utf8)))
    }

    @Test("two writers under one key start different streams")
    func freshHeaders() throws {
        let key = SecretKey.random()
        #expect(try SecretStreamWriter(key: key).header != SecretStreamWriter(key: key).header)
    }

    @Test("a stream cut before its final message reads without error but never reports final")
    func truncationVisible() throws {
        let key = SecretKey.random()
        let (header, ciphertexts) = try writeStream(messages, key: key)
        let reader = try SecretStreamReader(key: key, header: header)
        let read = try ciphertexts.dropLast().map { try reader.pull($0) }
        #expect(read.map(\.message) == Array(messages.dropLast()))
        #expect(!read.contains { $0.final })
    }

    @Test("a final message cut short fails authentication")
    func truncatedCiphertext() throws {
        let key = SecretKey.random()
        let (header, ciphertexts) = try writeStream(messages, key: key)
        let reader = try SecretStreamReader(key: key, header: header)
        for c in ciphertexts.dropLast() { _ = try reader.pull(c) }
        #expect(throws: CryptoError.authenticationFailed) { try reader.pull(ciphertexts.last!.dropLast()) }
    }

    @Test("a ciphertext shorter than the overhead fails authentication")
    func tooShort() throws {
        let key = SecretKey.random()
        let (header, _) = try writeStream(messages, key: key)
        let reader = try SecretStreamReader(key: key, header: header)
        #expect(throws: CryptoError.authenticationFailed) { try reader.pull(Data(count: SecretStreamWriter.overhead - 1)) }
        #expect(throws: CryptoError.authenticationFailed) { try reader.pull(Data()) }
    }

    @Test("a message read out of order fails authentication")
    func reorderDetected() throws {
        let key = SecretKey.random()
        let (header, ciphertexts) = try writeStream(messages, key: key)
        let reader = try SecretStreamReader(key: key, header: header)
        #expect(throws: CryptoError.authenticationFailed) { try reader.pull(ciphertexts[1]) }
    }

    @Test("a dropped message in the middle makes the next one fail authentication")
    func dropDetected() throws {
        let key = SecretKey.random()
        let (header, ciphertexts) = try writeStream(messages, key: key)
        let reader = try SecretStreamReader(key: key, header: header)
        _ = try reader.pull(ciphertexts[0])
        #expect(throws: CryptoError.authenticationFailed) { try reader.pull(ciphertexts[2]) }
    }

    @Test("a message repeated fails authentication the second time")
    func replayDetected() throws {
        let key = SecretKey.random()
        let (header, ciphertexts) = try writeStream(messages, key: key)
        let reader = try SecretStreamReader(key: key, header: header)
        _ = try reader.pull(ciphertexts[0])
        #expect(throws: CryptoError.authenticationFailed) { try reader.pull(ciphertexts[0]) }
    }

    @Test("a flipped bit anywhere in a message fails authentication")
    func flippedBitDetected() throws {
        let key = SecretKey.random()
        let (header, ciphertexts) = try writeStream([Data("tamper me".utf8)], key: key)
        let original = ciphertexts[0]
        for position in original.indices {
            var altered = original
            altered[position] ^= 0x01
            let reader = try SecretStreamReader(key: key, header: header)
            #expect(throws: CryptoError.authenticationFailed, "byte \(position)") { try reader.pull(altered) }
        }
        #expect(try SecretStreamReader(key: key, header: header).pull(original).message == Data("tamper me".utf8))
    }

    @Test("a message from another stream under the same key fails authentication")
    func foreignMessage() throws {
        let key = SecretKey.random()
        let (header, _) = try writeStream(messages, key: key)
        let (_, other) = try writeStream(messages, key: key)
        let reader = try SecretStreamReader(key: key, header: header)
        #expect(throws: CryptoError.authenticationFailed) { try reader.pull(other[0]) }
    }

    @Test("another key fails authentication on the first message")
    func wrongKeyRejected() throws {
        let (header, ciphertexts) = try writeStream(messages, key: SecretKey.random())
        #expect(throws: CryptoError.authenticationFailed) {
            let reader = try SecretStreamReader(key: SecretKey.random(), header: header)
            return try reader.pull(ciphertexts[0])
        }
    }

    @Test("a flipped bit anywhere in the header fails authentication by the first message")
    func headerTamperRejected() throws {
        let key = SecretKey.random()
        let (header, ciphertexts) = try writeStream(messages, key: key)
        for position in header.indices {
            var altered = header
            altered[position] ^= 0x80
            // The header is the stream's nonce, which libsodium cannot check on its own: a bad
            // one may be refused at once, and must be by the first message at the latest.
            #expect(throws: CryptoError.authenticationFailed, "byte \(position)") {
                let reader = try SecretStreamReader(key: key, header: altered)
                return try reader.pull(ciphertexts[0])
            }
        }
    }

    @Test("a header or key of the wrong length is refused before any message")
    func wrongLengths() throws {
        let key = SecretKey.random()
        let (header, _) = try writeStream(messages, key: key)
        #expect(throws: CryptoError.self) { try SecretStreamReader(key: key, header: header.dropLast()) }
        #expect(throws: CryptoError.self) { try SecretStreamReader(key: key, header: header + Data([0])) }
        #expect(throws: CryptoError.self) { try SecretStreamReader(key: SecretKey.random(byteCount: 16), header: header) }
        #expect(throws: CryptoError.self) { try SecretStreamWriter(key: SecretKey.random(byteCount: 31)) }
    }
}
