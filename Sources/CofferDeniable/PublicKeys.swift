// Public keys in CoverDrop's shape: the bundle its API serves (`GET /v1/public-keys`), verified
// down the hierarchy organisation → provisioning → identity → messaging from the organisation key
// the app bundles, each key by its parent's Ed25519 signature of its certificate data and by its
// expiry. Fetched without user action, cached on disk with the fetch time, verified on every load.

import CofferCrypto
import CofferSync
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The organisation key the app bundles: the root every published key must chain to.
public struct TrustAnchor: Sendable, Hashable {
    /// The organisation's Ed25519 public key (32 bytes).
    public let publicKey: Data
    /// After this moment nothing is trusted through it.
    public let notValidAfter: Date

    /// An anchor from its public key and expiry.
    public init(publicKey: Data, notValidAfter: Date) {
        self.publicKey = publicKey
        self.notValidAfter = notValidAfter
    }

    /// An anchor from CoverDrop's organisation key file (`{"key", "certificate",
    /// "not_valid_after"}`, as in its apps' `organization_keys/…/*.pub.json`).
    /// - Throws: ``DeniableError/invalidInput(_:)`` when it does not parse or its self-signature
    ///   does not verify.
    public init(json: Data) throws(DeniableError) {
        let key: SignedPublicKey
        do { key = try JSONDecoder().decode(SignedPublicKey.self, from: json) } catch {
            throw .invalidInput("the organisation key file does not parse: \(error)")
        }
        guard key.isSigned(by: key.key) else { throw .invalidInput("the organisation key's self-signature does not verify") }
        self.init(publicKey: key.key, notValidAfter: key.notValidAfter)
    }

    /// Every organisation key file (`*.pub.json`) in `folder`, in name order — as CoverDrop's
    /// apps bundle several (two production keys during an organisation-key rotation).
    /// - Throws: ``DeniableError/invalidInput(_:)`` naming a file that does not parse or verify,
    ///   or when the folder holds none; ``DeniableError/storage(_:cause:)`` when it cannot be read.
    public static func load(folder: URL) throws(DeniableError) -> [TrustAnchor] {
        let names: [String]
        do { names = try FileManager.default.contentsOfDirectory(atPath: folder.path) } catch {
            throw .storage("cannot list \(folder.path): \(error.localizedDescription)", cause: StorageCause(error))
        }
        var anchors = [TrustAnchor]()
        for name in names.sorted() where name.hasSuffix(".pub.json") {
            guard let data = try AtomicFile.read(folder.appendingPathComponent(name)) else { continue }
            do throws(DeniableError) { anchors.append(try TrustAnchor(json: data)) } catch {
                throw .invalidInput("\(name): \(error.description)")
            }
        }
        guard !anchors.isEmpty else { throw .invalidInput("\(folder.path) holds no organisation key file (*.pub.json)") }
        return anchors
    }
}

/// A public key as CoverDrop publishes it: the key, its parent's Ed25519 signature of
/// `KeyCertificateData` (CofferCrypto) (key ‖ not-valid-after seconds), and its expiry.
public struct SignedPublicKey: Sendable, Hashable, Codable {
    /// The key (32 bytes: Ed25519 for organisation, provisioning and identity keys, X25519 for
    /// messaging keys).
    public let key: Data
    /// The parent's signature of the certificate data (64 bytes).
    public let certificate: Data
    /// The end of its validity, in whole Unix seconds (what is signed).
    public let notValidAfterSeconds: Int64

    /// The end of its validity.
    public var notValidAfter: Date { Date(timeIntervalSince1970: Double(notValidAfterSeconds)) }

    /// A key with its certificate.
    public init(key: Data, certificate: Data, notValidAfterSeconds: Int64) {
        self.key = key
        self.certificate = certificate
        self.notValidAfterSeconds = notValidAfterSeconds
    }

    /// `key` certified by `signer` until `notValidAfterSeconds`.
    public static func certify(_ key: Data, until notValidAfterSeconds: Int64, by signer: Ed25519KeyPair) -> SignedPublicKey {
        let data = KeyCertificateData.bytes(publicKey: key, notValidAfter: notValidAfterSeconds)
        return SignedPublicKey(key: key, certificate: signer.sign(data), notValidAfterSeconds: notValidAfterSeconds)
    }

    /// Whether `signer` signed this key's certificate data.
    public func isSigned(by signer: Data) -> Bool {
        key.count == 32
            && Ed25519KeyPair.verify(
                signature: certificate, message: KeyCertificateData.bytes(publicKey: key, notValidAfter: notValidAfterSeconds),
                publicKey: signer)
    }

    /// Whether it is still valid at `now` (valid through its last second).
    public func isValid(at now: Date) -> Bool { Int64(saturating: now.timeIntervalSince1970, rounding: .down) <= notValidAfterSeconds }

    enum CodingKeys: String, CodingKey {
        case key, certificate
        case notValidAfter = "not_valid_after"
    }

    /// Decodes `{"key": hex, "certificate": hex, "not_valid_after": RFC 3339}`.
    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        guard let k = Hex.decode(try c.decode(String.self, forKey: .key)),
            let s = Hex.decode(try c.decode(String.self, forKey: .certificate))
        else { throw DecodingError.dataCorruptedError(forKey: .key, in: c, debugDescription: "key and certificate must be hex") }
        let text = try c.decode(String.self, forKey: .notValidAfter)
        guard let time = RFC3339.parse(text) else {
            throw DecodingError.dataCorruptedError(forKey: .notValidAfter, in: c, debugDescription: "not an RFC 3339 time: \(text)")
        }
        key = k
        certificate = s
        notValidAfterSeconds = time.seconds
    }

    /// Encodes as ``init(from:)`` reads (times in whole seconds, `Z`).
    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(Hex.encode(key), forKey: .key)
        try c.encode(Hex.encode(certificate), forKey: .certificate)
        try c.encode(RFC3339.format(seconds: notValidAfterSeconds), forKey: .notValidAfter)
    }
}

/// The public key bundle in the shape CoverDrop's API serves it (`GET /v1/public-keys`). Fields
/// Coffer does not use (`max_epoch`, `backup`) are ignored.
public struct KeyBundle: Sendable, Hashable, Codable {
    /// A journalist or desk as the service describes it.
    public struct Profile: Sendable, Hashable, Codable {
        /// The journalist's id (messages are addressed by it).
        public var id: String
        /// The name shown.
        public var displayName: String
        /// The name sorted by.
        public var sortName: String
        /// A description.
        public var description: String
        /// Whether it is a desk rather than a person.
        public var isDesk: Bool
        /// The recipient tag, 8 hex characters.
        public var tag: String
        /// `VISIBLE`, `HIDDEN_FROM_UI` or `HIDDEN_FROM_RESPONSE`.
        public var status: String?

        enum CodingKeys: String, CodingKey {
            case id, description, tag, status
            case displayName = "display_name"
            case sortName = "sort_name"
            case isDesk = "is_desk"
        }

        /// A profile.
        public init(id: String, displayName: String, sortName: String, description: String, isDesk: Bool, tag: String, status: String?) {
            self.id = id
            self.displayName = displayName
            self.sortName = sortName
            self.description = description
            self.isDesk = isDesk
            self.tag = tag
            self.status = status
        }
    }

    /// One identity key and the messaging keys it certified.
    public struct IdentityFamily: Sendable, Hashable, Codable {
        /// The identity key (Ed25519), certified by the provisioning key.
        public var idPK: SignedPublicKey
        /// The messaging keys (X25519), certified by the identity key.
        public var msgPKs: [SignedPublicKey]

        enum CodingKeys: String, CodingKey {
            case idPK = "id_pk"
            case msgPKs = "msg_pks"
        }

        /// A family.
        public init(idPK: SignedPublicKey, msgPKs: [SignedPublicKey]) {
            self.idPK = idPK
            self.msgPKs = msgPKs
        }
    }

    /// A CoverNode provisioning key and the CoverNodes it certified.
    public struct CoverNodeBranch: Sendable, Hashable, Codable {
        /// The provisioning key, certified by the organisation key.
        public var provisioningPK: SignedPublicKey
        /// CoverNode id → its identity families.
        public var covernodes: [String: [IdentityFamily]]

        enum CodingKeys: String, CodingKey {
            case covernodes
            case provisioningPK = "provisioning_pk"
        }

        /// A branch.
        public init(provisioningPK: SignedPublicKey, covernodes: [String: [IdentityFamily]]) {
            self.provisioningPK = provisioningPK
            self.covernodes = covernodes
        }
    }

    /// A journalist provisioning key and the journalists it certified.
    public struct JournalistBranch: Sendable, Hashable, Codable {
        /// The provisioning key, certified by the organisation key.
        public var provisioningPK: SignedPublicKey
        /// Journalist id → identity families.
        public var journalists: [String: [IdentityFamily]]

        enum CodingKeys: String, CodingKey {
            case journalists
            case provisioningPK = "provisioning_pk"
        }

        /// A branch.
        public init(provisioningPK: SignedPublicKey, journalists: [String: [IdentityFamily]]) {
            self.provisioningPK = provisioningPK
            self.journalists = journalists
        }
    }

    /// One organisation key's hierarchy.
    public struct Hierarchy: Sendable, Hashable, Codable {
        /// The organisation key (self-signed; it must be the bundled trust anchor).
        public var orgPK: SignedPublicKey
        /// CoverNode branches.
        public var covernodes: [CoverNodeBranch]
        /// Journalist branches.
        public var journalists: [JournalistBranch]

        enum CodingKeys: String, CodingKey {
            case covernodes, journalists
            case orgPK = "org_pk"
        }

        /// A hierarchy.
        public init(orgPK: SignedPublicKey, covernodes: [CoverNodeBranch], journalists: [JournalistBranch]) {
            self.orgPK = orgPK
            self.covernodes = covernodes
            self.journalists = journalists
        }
    }

    /// Journalists and desks.
    public var journalistProfiles: [Profile]
    /// The journalist a new conversation goes to by default, if any.
    public var defaultJournalistID: String?
    /// One hierarchy per organisation key.
    public var keys: [Hierarchy]

    enum CodingKeys: String, CodingKey {
        case keys
        case journalistProfiles = "journalist_profiles"
        case defaultJournalistID = "default_journalist_id"
    }

    /// A bundle.
    public init(journalistProfiles: [Profile], defaultJournalistID: String?, keys: [Hierarchy]) {
        self.journalistProfiles = journalistProfiles
        self.defaultJournalistID = defaultJournalistID
        self.keys = keys
    }
}

/// Fetches the public key bundle (network access is the app's business): the body of CoverDrop's
/// `GET /v1/public-keys`.
public protocol PublicKeySource: Sendable {
    /// The bundle's JSON.
    func fetchKeyBundle() async throws -> Data
}

/// The keys that passed verification at one moment.
public struct VerifiedKeys: Sendable, Hashable {
    /// When the cached bundle was fetched.
    public let fetchedAt: Date
    /// CoverNode id → its verified identity keys (Ed25519; they sign dead drops).
    public let coverNodeIdentityKeys: [String: [Data]]
    /// CoverNode id → its verified messaging keys (X25519), newest first.
    public let coverNodeMessagingKeys: [String: [Data]]
    /// Journalist id → verified messaging keys (X25519), newest first.
    public let journalistMessagingKeys: [String: [Data]]
    /// The journalists and desks the service lists.
    public let profiles: [KeyBundle.Profile]
    /// Keys dropped: a signature that failed, an expired key, or a parent that was dropped.
    public let rejected: Int

    /// The keys a user-to-CoverNode message is wrapped for: each CoverNode's newest messaging
    /// key, by CoverNode id.
    public var wrappingKeys: [Data] { coverNodeMessagingKeys.keys.sorted().compactMap { coverNodeMessagingKeys[$0]?.first } }
    /// Every verified CoverNode identity key (a dead drop's signature must verify under one).
    public var deadDropSigningKeys: [Data] { coverNodeIdentityKeys.keys.sorted().flatMap { coverNodeIdentityKeys[$0] ?? [] } }
    /// Verified keys in all.
    public var count: Int {
        [coverNodeIdentityKeys, coverNodeMessagingKeys, journalistMessagingKeys].reduce(0) { $0 + $1.values.reduce(0) { $0 + $1.count } }
    }

    /// Verifies `bundle` at `now` from `anchor`, as CoverDrop's clients do: the organisation key
    /// must be the anchor (same key, valid self-signature, unexpired, anchor unexpired); each
    /// provisioning key is signed by it, each identity key by its provisioning key, each
    /// messaging key by its identity key, and all must be unexpired. A key that fails is dropped
    /// with everything below it.
    public static func verify(_ bundle: KeyBundle, anchor: TrustAnchor, fetchedAt: Date, now: Date) -> VerifiedKeys {
        verify(bundle, anchors: [anchor], fetchedAt: fetchedAt, now: now)
    }

    /// Verifies `bundle` at `now` from several anchors (an app bundling its organisation's keys
    /// during a rotation): each hierarchy is verified under the anchor its organisation key is,
    /// and one that matches no unexpired anchor is dropped.
    public static func verify(_ bundle: KeyBundle, anchors: [TrustAnchor], fetchedAt: Date, now: Date) -> VerifiedKeys {
        var rejected = 0
        var coverNodeIDs = [String: [Data]]()
        var coverNodeMsg = [String: [SignedPublicKey]]()
        var journalistMsg = [String: [SignedPublicKey]]()
        func ok(_ key: SignedPublicKey, signer: Data) -> Bool {
            let good = key.isValid(at: now) && key.isSigned(by: signer)
            if !good { rejected += 1 }
            return good
        }
        /// Verifies one id's identity families under `provisioning`; the identity keys and the
        /// messaging keys that pass.
        func verified(_ families: [KeyBundle.IdentityFamily], provisioning: Data) -> (ids: [Data], msgs: [SignedPublicKey]) {
            var ids = [Data]()
            var msgs = [SignedPublicKey]()
            for family in families {
                guard ok(family.idPK, signer: provisioning) else {
                    rejected += family.msgPKs.count
                    continue
                }
                ids.append(family.idPK.key)
                msgs += family.msgPKs.filter { ok($0, signer: family.idPK.key) }
            }
            return (ids, msgs)
        }
        for hierarchy in bundle.keys {
            guard let anchor = anchors.first(where: { $0.publicKey == hierarchy.orgPK.key && now <= $0.notValidAfter }) else {
                rejected += 1
                continue
            }
            guard ok(hierarchy.orgPK, signer: anchor.publicKey) else { continue }
            let org = hierarchy.orgPK.key
            for branch in hierarchy.covernodes where ok(branch.provisioningPK, signer: org) {
                for (id, list) in branch.covernodes {
                    let (ids, msgs) = verified(list, provisioning: branch.provisioningPK.key)
                    coverNodeIDs[id, default: []] += ids
                    coverNodeMsg[id, default: []] += msgs
                }
            }
            for branch in hierarchy.journalists where ok(branch.provisioningPK, signer: org) {
                for (id, list) in branch.journalists {
                    journalistMsg[id, default: []] += verified(list, provisioning: branch.provisioningPK.key).msgs
                }
            }
        }
        func newestFirst(_ keys: [String: [SignedPublicKey]]) -> [String: [Data]] {
            keys.mapValues { $0.sorted { $0.notValidAfterSeconds > $1.notValidAfterSeconds }.map(\.key) }
        }
        return VerifiedKeys(
            fetchedAt: fetchedAt, coverNodeIdentityKeys: coverNodeIDs, coverNodeMessagingKeys: newestFirst(coverNodeMsg),
            journalistMessagingKeys: newestFirst(journalistMsg), profiles: bundle.journalistProfiles, rejected: rejected)
    }
}

/// The on-disk cache of the key bundle (`public-keys.json`: `{"fetched_at": seconds, "bundle":
/// the bundle as fetched}`). A cache in an older layout does not parse and is replaced.
struct PublicKeyCache {
    let url: URL
    let anchors: [TrustAnchor]

    struct Stored: Decodable {
        var fetchedAt: Int64
        var bundle: KeyBundle
        enum CodingKeys: String, CodingKey {
            case bundle
            case fetchedAt = "fetched_at"
        }
    }

    /// The cached bundle verified at `now`; nil when nothing is cached.
    func load(now: Date) throws(DeniableError) -> VerifiedKeys? {
        guard let data = try AtomicFile.read(url) else { return nil }
        let stored: Stored
        do { stored = try JSONDecoder().decode(Stored.self, from: data) } catch {
            throw .corrupted("the public key cache does not parse: \(error)")
        }
        return VerifiedKeys.verify(
            stored.bundle, anchors: anchors, fetchedAt: Date(timeIntervalSince1970: Double(stored.fetchedAt)), now: now)
    }

    /// Stores a freshly fetched bundle (atomically), as fetched, after checking that it parses.
    func store(_ json: Data, fetchedAt: Date) throws(DeniableError) {
        do { _ = try JSONDecoder().decode(KeyBundle.self, from: json) } catch {
            throw .invalidInput("the fetched key bundle is not CoverDrop's public-keys shape: \(error)")
        }
        // Whole seconds: the file's length must not depend on the fetch time's fraction (every
        // install of a service stores the same bundle, and an adversary compares file sizes).
        var data = Data(#"{"fetched_at":"#.utf8)
        data.append(Data(String(Int64(fetchedAt.timeIntervalSince1970.rounded(.down))).utf8))
        data.append(Data(#","bundle":"#.utf8))
        data.append(json)
        data.append(Data("}".utf8))
        try AtomicFile.write(data, to: url, permissions: 0o600)
    }
}

/// Lower-case hexadecimal, as CoverDrop's API writes keys and signatures.
package enum Hex {
    package static func encode(_ data: Data) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(data.count * 2)
        for b in data {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 15)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    package static func decode(_ text: String) -> Data? {
        let chars = Array(text.utf8)
        guard chars.count % 2 == 0 else { return nil }
        func value(_ c: UInt8) -> UInt8? {
            switch c {
            case 48...57: return c - 48
            case 97...102: return c - 87
            case 65...70: return c - 55
            default: return nil
            }
        }
        var out = Data(capacity: chars.count / 2)
        var i = 0
        while i < chars.count {
            guard let hi = value(chars[i]), let lo = value(chars[i + 1]) else { return nil }
            out.append(hi << 4 | lo)
            i += 2
        }
        return out
    }
}

/// RFC 3339 times as CoverDrop's API writes them (`2023-10-04T19:06:46.887921Z`,
/// `2023-02-24T13:37:42+00:00`): whole seconds parsed exactly (they are what is signed), the
/// fraction (0–9 digits) kept apart.
package enum RFC3339 {
    package static func parse(_ text: String) -> (seconds: Int64, nanoseconds: Int)? {
        let c = Array(text.utf8)
        func number(_ at: Int, _ n: Int) -> Int? {
            guard at + n <= c.count else { return nil }
            var v = 0
            for i in at..<(at + n) {
                guard c[i] >= 48, c[i] <= 57 else { return nil }
                v = v * 10 + Int(c[i] - 48)
            }
            return v
        }
        guard c.count >= 20, let year = number(0, 4), c[4] == 45, let month = number(5, 2), c[7] == 45, let day = number(8, 2),
            c[10] == 84 || c[10] == 116 || c[10] == 32, let hour = number(11, 2), c[13] == 58, let minute = number(14, 2),
            c[16] == 58, let second = number(17, 2), (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60,
            second < 61
        else { return nil }
        var i = 19
        var nanos = 0
        if i < c.count, c[i] == 46 {
            i += 1
            var digits = 0
            while i < c.count, c[i] >= 48, c[i] <= 57 {
                if digits < 9 { nanos = nanos * 10 + Int(c[i] - 48) }
                digits += 1
                i += 1
            }
            guard digits >= 1, digits <= 9 else { return nil }
            for _ in digits..<9 { nanos *= 10 }
        }
        var offset = 0
        if i < c.count, c[i] == 90 || c[i] == 122 {
            i += 1
        } else if i + 6 == c.count, c[i] == 43 || c[i] == 45, let oh = number(i + 1, 2), c[i + 3] == 58, let om = number(i + 4, 2) {
            offset = (oh * 3600 + om * 60) * (c[i] == 43 ? 1 : -1)
            i += 6
        } else {
            return nil
        }
        guard i == c.count else { return nil }
        var fields = tm()
        fields.tm_year = Int32(year - 1900)
        fields.tm_mon = Int32(month - 1)
        fields.tm_mday = Int32(day)
        fields.tm_hour = Int32(hour)
        fields.tm_min = Int32(minute)
        fields.tm_sec = Int32(second)
        return (Int64(timegm(&fields)) - Int64(offset), nanos)
    }

    /// `seconds` as `YYYY-MM-DDTHH:MM:SSZ`.
    static func format(seconds: Int64) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.string(from: Date(timeIntervalSince1970: Double(seconds)))
    }
}
