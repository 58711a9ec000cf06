// Checks a folder laid out like CoverDrop's `common/tests/vectors/` through Coffer's
// implementation: boxes opened with the given secret keys and compared with the message,
// signatures verified and reproduced (Ed25519 is deterministic), certificate data rebuilt, the
// journalist dead drop opened as a CoverNode-to-journalist message and then as the user's message.

import CofferCrypto
import CofferDeniable
import Foundation

/// CoverDrop's cross-platform test vectors, checked group by group.
public enum CoverDropVectors {
    /// The groups, in the order they are reported.
    public static let groups = [
        "anonymous_box", "multi_anonymous_box", "two_party_box", "signature", "certificate_data", "journalist_dead_drop",
    ]

    /// One group's outcome.
    public enum Outcome: Sendable, Equatable, CustomStringConvertible {
        /// Every check of the group held.
        case pass
        /// A check failed (the message says which).
        case fail(String)
        /// The group's folder is absent.
        case skipped

        /// `pass`, `fail: …` or `skipped (absent)`.
        public var description: String {
            switch self {
            case .pass: return "pass"
            case .fail(let why): return "fail: \(why)"
            case .skipped: return "skipped (absent)"
            }
        }
    }

    /// Checks every group present in `folder`.
    /// - Throws: ``DeniableError/invalidInput(_:)`` when `folder` is not a folder or holds none of
    ///   the groups (not CoverDrop's layout).
    public static func check(folder: URL) throws(DeniableError) -> [(group: String, outcome: Outcome)] {
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: folder.path, isDirectory: &isFolder), isFolder.boolValue else {
            throw .invalidInput("\(folder.path) is not a folder of CoverDrop test vectors")
        }
        let present = groups.filter { FileManager.default.fileExists(atPath: folder.appendingPathComponent($0).path) }
        guard !present.isEmpty else {
            throw .invalidInput(
                "\(folder.path) holds none of CoverDrop's vector groups (\(groups.joined(separator: ", "))); "
                    + "point it at a copy of common/tests/vectors")
        }
        return groups.map { group in
            guard present.contains(group) else { return (group, .skipped) }
            do {
                try check(group, in: folder.appendingPathComponent(group))
                return (group, .pass)
            } catch let failure as Failure {
                return (group, .fail(failure.message))
            } catch {
                return (group, .fail("\(error)"))
            }
        }
    }

    struct Failure: Error {
        let message: String
        init(_ message: String) { self.message = message }
    }

    private static func check(_ group: String, in dir: URL) throws(Failure) {
        func file(_ name: String) throws(Failure) -> Data {
            guard let data = FileManager.default.contents(atPath: dir.appendingPathComponent(name).path) else {
                throw Failure("\(group)/\(name) is missing")
            }
            return data
        }
        func x25519(_ name: String) throws(Failure) -> X25519KeyPair {
            do { return try X25519KeyPair(secretKey: SecretKey(copying: file(name), expectedCount: 32)) } catch let f as Failure {
                throw f
            } catch {
                throw Failure("\(group)/\(name) is not an X25519 secret key")
            }
        }
        func expect(_ condition: Bool, _ what: String) throws(Failure) { if !condition { throw Failure(what) } }
        switch group {
        case "anonymous_box":
            let recipient = try x25519("02_recipient_sk")
            try expect(recipient.publicKey == file("01_recipient_pk"), "02_recipient_sk does not match 01_recipient_pk")
            let opened = try? AnonymousBox.open(try file("04_anonymous_box"), with: recipient)
            try expect(opened == (try file("03_message")), "04_anonymous_box does not open to 03_message")
        case "multi_anonymous_box":
            let box = try file("06_multi_anonymous_box")
            let message = try file("05_message")
            for (pk, sk) in [("01_recipient_1_pk", "02_recipient_1_sk"), ("03_recipient_2_pk", "04_recipient_2_sk")] {
                let recipient = try x25519(sk)
                try expect(recipient.publicKey == file(pk), "\(sk) does not match \(pk)")
                let opened = try? MultiAnonymousBox.open(box, recipients: 2, with: recipient)
                try expect(opened == message, "06_multi_anonymous_box does not open to 05_message with \(sk)")
            }
        case "two_party_box":
            let recipient = try x25519("04_recipient_sk")
            try expect(recipient.publicKey == file("03_recipient_pk"), "04_recipient_sk does not match 03_recipient_pk")
            let sender = try x25519("02_sender_sk")
            try expect(sender.publicKey == file("01_sender_pk"), "02_sender_sk does not match 01_sender_pk")
            let opened = try? TwoPartyBox.open(try file("06_two_party_box"), from: try file("01_sender_pk"), to: recipient)
            try expect(opened == (try file("05_message")), "06_two_party_box does not open to 05_message")
        case "signature":
            let pk = try file("01_pk")
            let message = try file("03_message")
            let signature = try file("04_signature")
            try expect(Ed25519KeyPair.verify(signature: signature, message: message, publicKey: pk), "04_signature does not verify")
            let pair: Ed25519KeyPair
            do { pair = try Ed25519KeyPair(seed: SecretKey(copying: file("02_sk"), expectedCount: 32)) } catch let f as Failure {
                throw f
            } catch {
                throw Failure("02_sk is not a 32-byte Ed25519 secret key")
            }
            try expect(pair.publicKey == pk, "02_sk does not match 01_pk")
            try expect(pair.sign(message) == signature, "signing 03_message with 02_sk does not reproduce 04_signature")
        case "certificate_data":
            let text = String(decoding: try file("02_not_valid_after"), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            guard let time = RFC3339.parse(text) else { throw Failure("02_not_valid_after is not an RFC 3339 time") }
            try expect(withUnsafeBytes(of: time.seconds.bigEndian) { Data($0) } == file("03_timestamp_bytes"), "03_timestamp_bytes differ")
            try expect(
                KeyCertificateData.bytes(publicKey: try file("01_pk"), notValidAfter: time.seconds) == file("04_certificate_data"),
                "the rebuilt certificate data differs from 04_certificate_data")
        case "journalist_dead_drop":
            try checkJournalistDeadDrop(file: file, x25519: x25519)
        default:
            throw Failure("unknown group")
        }
    }

    /// The CoverNode-to-journalist dead drop: 633-byte TwoPartyBoxes from the CoverNode's
    /// messaging key to the journalist's, each wrapping a user's 593-byte AnonymousBox. Every slot
    /// must open as the CoverNode's; those sealed to this journalist must hold a user-to-journalist
    /// message with 03_user_pk as the reply key, the reserved byte 0 and a valid padded text.
    private static func checkJournalistDeadDrop(
        file: (String) throws(Failure) -> Data, x25519: (String) throws(Failure) -> X25519KeyPair
    ) throws(Failure) {
        let journalist = try x25519("02_journalist_sk")
        guard journalist.publicKey == (try file("01_journalist_pk")) else {
            throw Failure("02_journalist_sk does not match 01_journalist_pk")
        }
        let userKey = try file("03_user_pk")
        let coverNode = try file("04_covernode_pk")
        let data = try file("05_journalist_dead_drop")
        let slot = CoverDropProtocol.userToJournalistEncryptedBytes + TwoPartyBox.overhead
        guard !data.isEmpty, data.count % slot == 0 else {
            throw Failure("05_journalist_dead_drop is not a whole number of \(slot)-byte messages")
        }
        let opener: TwoPartyBox.Opener
        do { opener = try TwoPartyBox.Opener(senderPublicKey: coverNode, recipient: journalist) } catch {
            throw Failure("04_covernode_pk is not an X25519 key")
        }
        var mine = 0
        for offset in stride(from: 0, to: data.count, by: slot) {
            guard let outer = try? opener.open(data.subdata(in: offset..<(offset + slot))) else {
                throw Failure("message \(offset / slot) does not open from the CoverNode to the journalist")
            }
            guard let inner = try? AnonymousBox.open(outer, with: journalist) else { continue }
            let plain = Data(inner)
            guard plain.count == CoverDropProtocol.userToJournalistBytes, plain.prefix(32) == userKey, plain[plain.startIndex + 32] == 0,
                (try? PaddedCompressedString.decode(plain.suffix(CoverDropProtocol.paddedTextBytes))) != nil
            else { throw Failure("message \(offset / slot) is not a user-to-journalist message with 03_user_pk as its reply key") }
            mine += 1
        }
        guard mine > 0 else { throw Failure("no message opens for the journalist") }
    }
}
