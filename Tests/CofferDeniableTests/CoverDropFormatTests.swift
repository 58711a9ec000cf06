// CoverDrop's wire formats, checked against CoverDrop's own published data: its test vectors, and
// real key bundles and dead drops from its integration scenarios.

import CofferCrypto
import CofferDevelopment
import Foundation
import Testing

@testable import CofferDeniable

/// `Fixtures/coverdrop/…` in the test bundle.
func coverDropFixture(_ path: String) -> URL {
    Bundle.module.resourceURL!.appendingPathComponent("Fixtures/coverdrop").appendingPathComponent(path)
}

func fixtureData(_ path: String) throws -> Data { try Data(contentsOf: coverDropFixture(path)) }

/// A copy of a vectors folder to tamper with.
func copyOfVectors(_ name: String = "vectors") throws -> URL {
    let copy = temporaryFolder("vectors").appendingPathComponent("v")
    try FileManager.default.copyItem(at: coverDropFixture(name), to: copy)
    return copy
}

@Suite("CoverDrop's published test vectors")
struct CoverDropVectorTests {
    @Test("every group of common/tests/vectors passes", arguments: ["vectors"])
    func published(_ folder: String) throws {
        let results = try CoverDropVectors.check(folder: coverDropFixture(folder))
        #expect(results.map(\.group) == CoverDropVectors.groups)
        for (group, outcome) in results { #expect(outcome == .pass, "\(group): \(outcome)") }
    }

    @Test(
        "the iOS and Android copies (other keys and messages) pass; their absent group is skipped",
        arguments: ["ios-vectors", "android-vectors"])
    func otherRuns(_ folder: String) throws {
        let results = Dictionary(
            uniqueKeysWithValues: try CoverDropVectors.check(folder: coverDropFixture(folder)).map { ($0.group, $0.outcome) })
        #expect(results["journalist_dead_drop"] == .skipped)
        for group in CoverDropVectors.groups where group != "journalist_dead_drop" { #expect(results[group] == .pass, "\(group)") }
    }

    @Test(
        "one changed byte fails its group and only its group",
        arguments: [
            ("anonymous_box", "04_anonymous_box"), ("multi_anonymous_box", "06_multi_anonymous_box"),
            ("two_party_box", "06_two_party_box"), ("signature", "04_signature"), ("certificate_data", "04_certificate_data"),
            ("journalist_dead_drop", "05_journalist_dead_drop"), ("signature", "03_message"),
        ])
    func tampered(_ group: String, _ file: String) throws {
        let copy = try copyOfVectors()
        let url = copy.appendingPathComponent(group).appendingPathComponent(file)
        var bytes = try Data(contentsOf: url)
        bytes[bytes.count / 2] ^= 0x01
        try bytes.write(to: url)
        for (g, outcome) in try CoverDropVectors.check(folder: copy) {
            if g == group {
                guard case .fail = outcome else {
                    Issue.record("\(g) passed with a changed byte in \(file)")
                    continue
                }
            } else {
                #expect(outcome == .pass, "\(g)")
            }
        }
    }

    @Test("a folder in another layout is refused, naming the groups it lacks")
    func notTheLayout() throws {
        #expect(throws: DeniableError.self) { try CoverDropVectors.check(folder: temporaryFolder()) }
        #expect(throws: DeniableError.self) { try CoverDropVectors.check(folder: coverDropFixture("vectors/README.md")) }
    }

    @Test("a missing file fails its group with the file's name")
    func missingFile() throws {
        let copy = try copyOfVectors()
        try FileManager.default.removeItem(at: copy.appendingPathComponent("two_party_box/02_sender_sk"))
        let outcome = try CoverDropVectors.check(folder: copy).first { $0.group == "two_party_box" }?.outcome
        #expect(outcome == .fail("two_party_box/02_sender_sk is missing"))
    }

    @Test("certificate data is the key and the big-endian seconds, byte for byte")
    func certificateData() throws {
        let pk = try fixtureData("vectors/certificate_data/01_pk")
        #expect(
            KeyCertificateData.bytes(publicKey: pk, notValidAfter: 1_677_245_862)
                == (try fixtureData("vectors/certificate_data/04_certificate_data")))
    }
}

@Suite("CoverDrop's real key bundles and dead drops")
struct CoverDropIntegrationTests {
    /// A scenario's clock (`"2023-10-04T19:06:51.931832834Z"`).
    func scenarioNow(_ path: String) throws -> Date {
        let text = try JSONDecoder().decode(String.self, from: fixtureData(path))
        let t = try #require(RFC3339.parse(text))
        return Date(timeIntervalSince1970: Double(t.seconds))
    }

    func userKey() throws -> X25519KeyPair {
        struct Pair: Decodable {
            let secretKey: String
            enum CodingKeys: String, CodingKey { case secretKey = "secret_key" }
        }
        let pair = try JSONDecoder().decode(Pair.self, from: fixtureData("integration/user.keypair.json"))
        return try X25519KeyPair(secretKey: SecretKey(copying: #require(Hex.decode(pair.secretKey)), expectedCount: 32))
    }

    func verified(_ scenario: String, _ step: String) throws -> (VerifiedKeys, [DeadDrop]) {
        let anchor = try TrustAnchor(json: fixtureData("integration/organization-73ee6a1a.pub.json"))
        let now = try scenarioNow("integration/\(scenario)/timestamp/\(step).json")
        let bundle = try JSONDecoder().decode(KeyBundle.self, from: fixtureData("integration/\(scenario)/published_keys/\(step).json"))
        let keys = VerifiedKeys.verify(bundle, anchor: anchor, fetchedAt: now, now: now)
        let drops = try DeadDropList.parse(fixtureData("integration/\(scenario)/user_dead_drops/\(step).json"))
        return (keys, drops)
    }

    /// Every reply in `drops` that opens with the user's key from a verified journalist key.
    func replies(_ keys: VerifiedKeys, _ drops: [DeadDrop]) throws -> [(journalist: String, message: JournalistMessage)] {
        let user = try userKey()
        var found = [(String, JournalistMessage)]()
        for drop in drops {
            for offset in stride(from: 0, to: drop.data.count, by: CoverDropProtocol.journalistToUserEncryptedBytes) {
                let slot = drop.data.subdata(in: offset..<(offset + CoverDropProtocol.journalistToUserEncryptedBytes))
                for (id, list) in keys.journalistMessagingKeys {
                    for key in list {
                        if let plain = try? TwoPartyBox.open(slot, from: key, to: user) {
                            found.append((id, try JournalistMessage.decode(plain)))
                        }
                    }
                }
            }
        }
        return found
    }

    @Test("CoverDrop's published keys verify down the hierarchy from its bundled organisation key")
    func keysVerify() throws {
        let (keys, _) = try verified("messaging_scenario", "003_journalist_replied_and_processed")
        #expect(keys.rejected == 0)
        #expect(keys.journalistMessagingKeys["static_test_journalist"]?.isEmpty == false)
        #expect(!keys.wrappingKeys.isEmpty && !keys.deadDropSigningKeys.isEmpty)
        // A year later every key has expired and nothing is used.
        let bundle = try JSONDecoder().decode(
            KeyBundle.self, from: fixtureData("integration/messaging_scenario/published_keys/003_journalist_replied_and_processed.json"))
        let anchor = try TrustAnchor(json: fixtureData("integration/organization-73ee6a1a.pub.json"))
        let later = Date(timeIntervalSince1970: 1_800_000_000)
        #expect(
            VerifiedKeys.verify(
                bundle, anchor: TrustAnchor(publicKey: anchor.publicKey, notValidAfter: later), fetchedAt: later, now: later
            ).count == 0)
    }

    @Test("the profiles' tags are the journalists' recipient tags")
    func tags() throws {
        let (keys, _) = try verified("multiple_journalists_messaging_scenario", "004_journalist_2_replied_and_processed")
        #expect(!keys.profiles.isEmpty)
        for profile in keys.profiles { #expect(profile.tag == Hex.encode(RecipientTag.of(profile.id)), "\(profile.id)") }
    }

    @Test("CoverDrop's dead drops verify under its CoverNode identity keys, and not once altered")
    func deadDropsVerify() throws {
        let (keys, drops) = try verified("messaging_scenario", "003_journalist_replied_and_processed")
        #expect(!drops.isEmpty)
        for drop in drops {
            #expect(drop.isSigned(byAnyOf: keys.deadDropSigningKeys), "dead drop \(drop.id)")
            #expect(drop.data.count % CoverDropProtocol.journalistToUserEncryptedBytes == 0)
            var altered = drop.data
            altered[0] ^= 1
            #expect(
                !DeadDrop(id: drop.id, createdAtSeconds: drop.createdAtSeconds, data: altered, signature: drop.signature).isSigned(
                    byAnyOf: keys.deadDropSigningKeys))
            #expect(
                !DeadDrop(id: drop.id, createdAtSeconds: drop.createdAtSeconds + 1, data: drop.data, signature: drop.signature).isSigned(
                    byAnyOf: keys.deadDropSigningKeys))
        }
    }

    @Test("a CoverDrop journalist's reply opens with the user's key and reads as CoverDrop's text message")
    func realReply() throws {
        let (keys, drops) = try verified("messaging_scenario", "003_journalist_replied_and_processed")
        let found = try replies(keys, drops)
        #expect(found.count == 1)
        #expect(found.first?.journalist == "static_test_journalist")
        #expect(found.first?.message == .text("This is a test message from the journalist to the user"))
    }

    @Test("replies from two of CoverDrop's journalists are both found")
    func twoJournalists() throws {
        let (keys, drops) = try verified("multiple_journalists_messaging_scenario", "004_journalist_2_replied_and_processed")
        let found = try replies(keys, drops)
        #expect(Set(found.map(\.journalist)).count == 2)
        for (_, message) in found {
            guard case .text(let text) = message else {
                Issue.record("a handover where a text was expected")
                continue
            }
            #expect(!text.isEmpty)
        }
    }

    @Test("the bundled organisation key file parses, and one with a broken self-signature is refused")
    func organisationKeyFile() throws {
        let data = try fixtureData("integration/organization-73ee6a1a.pub.json")
        let anchor = try TrustAnchor(json: data)
        #expect(Hex.encode(anchor.publicKey).hasPrefix("73ee6a1a"))
        var text = String(decoding: data, as: UTF8.self)
        let certificate = try #require(text.range(of: #""certificate": ""#)?.upperBound ?? text.range(of: #""certificate":""#)?.upperBound)
        let flipped = text[certificate] == "0" ? "1" : "0"
        text.replaceSubrange(certificate...certificate, with: flipped)
        #expect(throws: DeniableError.self) { try TrustAnchor(json: Data(text.utf8)) }
    }
}

@Suite("CoverDrop's messages")
struct CoverDropMessageTests {
    @Test("a padded compressed string is 512 bytes and reads back")
    func paddedRoundTrip() throws {
        for text in ["hi", "こんにちは", String(repeating: "a long but compressible message ", count: 40)] {
            let padded = try PaddedCompressedString.encode(text)
            #expect(padded.count == 512)
            #expect(try PaddedCompressedString.decode(padded) == text)
        }
    }

    @Test("a text that does not compress into 510 bytes is refused, naming the limit")
    func tooLong() throws {
        let random = SecureRandom.bytes(600).base64EncodedString()
        do {
            _ = try PaddedCompressedString.encode(random)
            Issue.record("an over-long text was accepted")
        } catch {
            guard case .invalidInput(let message) = error else { throw error }
            #expect(message.contains("510"))
        }
    }

    @Test("a text so repetitive that it inflates more than 100 times is refused at encoding, naming the limit; one under it reads back")
    func overRatioRefused() throws {
        let fits = String(repeating: "a", count: 3_000)
        #expect(try PaddedCompressedString.decode(PaddedCompressedString.encode(fits)) == fits)
        do {
            _ = try PaddedCompressedString.encode(String(repeating: "a", count: 6_000))
            Issue.record("a text the receiver refuses as a decompression bomb was accepted")
        } catch {
            guard case .invalidInput(let message) = error else { throw error }
            #expect(message.contains("100 times"), "\(message)")
        }
    }

    @Test("hostile padded strings are refused: zero length, length past 510, not gzip, a decompression bomb, wrong size")
    func hostilePadded() throws {
        var zero = try PaddedCompressedString.encode("x")
        zero[0] = 0
        zero[1] = 0
        #expect(throws: DeniableError.self) { try PaddedCompressedString.decode(zero) }
        var long = zero
        long[0] = 0x01
        long[1] = 0xFF
        #expect(throws: DeniableError.self) { try PaddedCompressedString.decode(long) }
        var garbage = Data([0, 20])
        garbage.append(SecureRandom.bytes(510))
        #expect(throws: DeniableError.self) { try PaddedCompressedString.decode(garbage) }
        // 100 KiB of zeros gzips to ~130 bytes: a ratio far over 100.
        let bomb = try Gzip.compress(Data(count: 100 * 1024))
        var bombed = Data([UInt8(bomb.count >> 8), UInt8(bomb.count & 0xFF)])
        bombed.append(bomb)
        bombed.append(Data(count: 512 - bombed.count))
        #expect(throws: DeniableError.self) { try PaddedCompressedString.decode(bombed) }
        #expect(throws: DeniableError.self) { try PaddedCompressedString.decode(Data(count: 511)) }
    }

    @Test("a recipient tag is SHA-256's first 4 bytes of the id (CoverDrop's static test journalist: 6a139e67)")
    func recipientTag() {
        #expect(Hex.encode(RecipientTag.of("static_test_journalist")) == "6a139e67")
    }

    @Test("a handover names the new journalist and reads back; a bad flag or id is refused")
    func handover() throws {
        let plain = try JournalistMessage.handover("bob").encoded()
        #expect(plain.count == 513 && plain[0] == 1)
        #expect(try JournalistMessage.decode(plain) == .handover("bob"))
        var flagged = plain
        flagged[0] = 7
        #expect(throws: DeniableError.self) { try JournalistMessage.decode(flagged) }
        #expect(throws: DeniableError.self) { try JournalistMessage.handover("a/b").encoded() }
        #expect(throws: DeniableError.self) { try JournalistMessage.handover(String(repeating: "x", count: 129)).encoded() }
    }

    @Test("RFC 3339 times keep their whole seconds exactly, whatever the fraction")
    func times() {
        #expect(RFC3339.parse("2023-02-24T13:37:42+00:00")?.seconds == 1_677_245_862)
        #expect(RFC3339.parse("2023-10-04T19:06:51.999999999Z")?.seconds == 1_696_446_411)
        #expect(RFC3339.parse("2023-10-04T19:06:51.999999999Z")?.nanoseconds == 999_999_999)
        #expect(RFC3339.parse("2023-10-04T21:06:51+02:00")?.seconds == 1_696_446_411)
        for bad in ["", "2023-10-04", "2023-10-04T19:06:51", "2023-13-04T19:06:51Z", "2023-10-04T19:06:51.Z", "2023-10-04T19:06:51Zjunk"] {
            #expect(RFC3339.parse(bad) == nil, "\(bad)")
        }
    }

    @Test("a dead-drop list reads with or without base64 padding and fractional times; a bad field is refused by name")
    func deadDropList() throws {
        let signer = Ed25519KeyPair.generate()
        let drop = DeadDrop.signed(id: 3, createdAtSeconds: 1_700_000_000, data: SecureRandom.bytes(553), by: signer)
        let json = DeadDropList.json([drop])
        #expect(try DeadDropList.parse(json) == [drop])
        let padded =
            #"{"dead_drops":[{"id":3,"created_at":"2023-11-14T22:13:20.5Z","data":"\#(drop.data.base64EncodedString())","signature":"\#(Hex.encode(drop.signature))","cert":"ignored"}]}"#
        #expect(try DeadDropList.parse(Data(padded.utf8)) == [drop])
        do {
            _ = try DeadDropList.parse(Data(padded.replacingOccurrences(of: "2023-11-14T22", with: "yesterday").utf8))
            Issue.record("a bad created_at was accepted")
        } catch {
            #expect("\(error)".contains("created_at"))
        }
    }
}
