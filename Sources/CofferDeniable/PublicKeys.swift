// Public keys: fetched without user action, cached on disk with their fetch time, verified
// against a trust anchor bundled with the app on every load.
import CofferCrypto
import Foundation

/// The key the app ships with: it signs every published key. Keys it signed are trusted only
/// while both it and they are within their validity.
public struct TrustAnchor: Sendable, Hashable {
    /// Ed25519 public key (32 bytes).
    public let publicKey: Data
    /// After this moment nothing it signed is trusted.
    public let notValidAfter: Date

    /// An anchor from its public key and expiry.
    public init(publicKey: Data, notValidAfter: Date) {
        self.publicKey = publicKey
        self.notValidAfter = notValidAfter
    }
}

/// One key published by the service, signed by the trust anchor.
public struct PublishedKey: Sendable, Hashable, Codable {
    /// What a key is for.
    public enum Role: String, Sendable, Hashable, Codable {
        /// X25519: messages in the sending queue are sealed to it.
        case coverNodeMessaging = "covernode-messaging"
        /// Ed25519: it signs dead drops.
        case coverNodeSigning = "covernode-signing"
    }

    /// What the key is for.
    public let role: Role
    /// Who holds it (e.g. a CoverNode's name).
    public let id: String
    /// The public key bytes (32).
    public let key: Data
    /// End of its validity.
    public let notValidAfter: Date
    /// The trust anchor's Ed25519 signature of the key's signed bytes (its id, key and validity).
    public let signature: Data

    /// A published key.
    public init(role: Role, id: String, key: Data, notValidAfter: Date, signature: Data) {
        self.role = role
        self.id = id
        self.key = key
        self.notValidAfter = notValidAfter
        self.signature = signature
    }

    /// What the anchor signs: a label, role, id, key and expiry (whole seconds, big-endian).
    public static func signedBytes(role: Role, id: String, key: Data, notValidAfter: Date) -> Data {
        var w = Writer(buffer: [])
        w.bytes(Array("coffer.deniable.key.v1".utf8))
        w.string(role.rawValue)
        w.string(id)
        w.bytes(Array(key))
        w.u64(UInt64(bitPattern: Int64(notValidAfter.timeIntervalSince1970.rounded(.down))))
        return Data(w.buffer)
    }

    enum CodingKeys: String, CodingKey { case role, id, key, notValidAfter, signature }

    /// Decodes `{"role","id","key" (base64),"notValidAfter" (Unix seconds),"signature" (base64)}`.
    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        role = try c.decode(Role.self, forKey: .role)
        id = try c.decode(String.self, forKey: .id)
        guard let k = Data(base64Encoded: try c.decode(String.self, forKey: .key)),
            let s = Data(base64Encoded: try c.decode(String.self, forKey: .signature))
        else { throw DecodingError.dataCorruptedError(forKey: .key, in: c, debugDescription: "key and signature must be base64") }
        key = k
        signature = s
        notValidAfter = Date(timeIntervalSince1970: try c.decode(Double.self, forKey: .notValidAfter))
    }

    /// Encodes as ``init(from:)`` reads.
    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(role, forKey: .role)
        try c.encode(id, forKey: .id)
        try c.encode(key.base64EncodedString(), forKey: .key)
        try c.encode(notValidAfter.timeIntervalSince1970.rounded(.down), forKey: .notValidAfter)
        try c.encode(signature.base64EncodedString(), forKey: .signature)
    }
}

/// What the service publishes: `{"keys": [PublishedKey, …]}`.
public struct KeyBundle: Sendable, Hashable, Codable {
    /// Every published key.
    public var keys: [PublishedKey]

    /// A bundle of keys.
    public init(keys: [PublishedKey]) { self.keys = keys }
}

/// Fetches the published key bundle (network access is the app's business).
public protocol PublicKeySource: Sendable {
    /// The bundle's JSON.
    func fetchKeyBundle() async throws -> Data
}

/// The keys that passed verification at one moment.
public struct VerifiedKeys: Sendable, Hashable {
    /// When the cached bundle was fetched.
    public let fetchedAt: Date
    /// X25519 keys for sealing queue items, newest expiry first.
    public let messaging: [PublishedKey]
    /// Ed25519 keys that sign dead drops.
    public let signing: [PublishedKey]
    /// Keys dropped because their signature failed or they expired.
    public let rejected: Int
}

/// The on-disk cache of the key bundle (`public-keys.json`: the bundle and its fetch time).
struct PublicKeyCache {
    let url: URL
    let anchor: TrustAnchor

    struct Stored: Codable {
        var fetchedAt: Double
        var bundle: KeyBundle
    }

    /// The cached bundle verified at `now`; nil when nothing is cached.
    func load(now: Date) throws(DeniableError) -> VerifiedKeys? {
        guard let data = try AtomicFile.read(url) else { return nil }
        let stored: Stored
        do { stored = try JSONDecoder().decode(Stored.self, from: data) } catch {
            throw .corrupted("the public key cache does not parse: \(error)")
        }
        return verify(stored.bundle, fetchedAt: Date(timeIntervalSince1970: stored.fetchedAt), now: now)
    }

    /// Keeps the keys whose anchor signature verifies and which, like the anchor, are still valid.
    func verify(_ bundle: KeyBundle, fetchedAt: Date, now: Date) -> VerifiedKeys {
        var messaging = [PublishedKey]()
        var signing = [PublishedKey]()
        var rejected = 0
        let anchorValid = now <= anchor.notValidAfter
        for key in bundle.keys {
            let signed = PublishedKey.signedBytes(role: key.role, id: key.id, key: key.key, notValidAfter: key.notValidAfter)
            guard anchorValid, now <= key.notValidAfter, key.key.count == 32,
                Ed25519KeyPair.verify(signature: key.signature, message: signed, publicKey: anchor.publicKey)
            else {
                rejected += 1
                continue
            }
            switch key.role {
            case .coverNodeMessaging: messaging.append(key)
            case .coverNodeSigning: signing.append(key)
            }
        }
        messaging.sort { $0.notValidAfter > $1.notValidAfter }
        signing.sort { $0.notValidAfter > $1.notValidAfter }
        return VerifiedKeys(fetchedAt: fetchedAt, messaging: messaging, signing: signing, rejected: rejected)
    }

    /// Stores a freshly fetched bundle (atomically) after checking that it parses.
    func store(_ json: Data, fetchedAt: Date) throws(DeniableError) {
        let bundle: KeyBundle
        do { bundle = try JSONDecoder().decode(KeyBundle.self, from: json) } catch {
            throw .invalidInput("the fetched key bundle does not parse: \(error)")
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let data: Data
        // Whole seconds: the file's length must not depend on the fetch time's fraction (every
        // install of a service stores the same bundle, and an adversary compares file sizes).
        do { data = try encoder.encode(Stored(fetchedAt: fetchedAt.timeIntervalSince1970.rounded(.down), bundle: bundle)) } catch {
            throw .storage("cannot encode the key cache: \(error)")
        }
        try AtomicFile.write(data, to: url, permissions: 0o600)
    }
}
