// Stand-in for the parts of Apple's `CryptoKit` that Coffer uses and swift-crypto lacks — the
// Secure Enclave keys — for Scripts/typecheck-apple.sh. Declarations only: nothing here is ever
// run (every body traps).
//
// On Apple platforms swift-crypto's `Crypto` module re-exports CryptoKit, so `P256`,
// `SharedSecret`, … are CryptoKit's own types there; this stand-in re-exports swift-crypto's
// (same names, same API) and adds `SecureEnclave`, whose keys take and return those types.
// Each declaration is the Swift form shown on its Apple documentation page (linked above it),
// with the availability listed there.
@_exported import Crypto
import Foundation
import LocalAuthentication
import Security

/// https://developer.apple.com/documentation/cryptokit/secureenclave — `enum SecureEnclave`.
@available(iOS 13.0, macOS 10.15, tvOS 13.0, watchOS 6.0, *)
public enum SecureEnclave {
    /// https://developer.apple.com/documentation/cryptokit/secureenclave/isavailable —
    /// `static var isAvailable: Bool { get }`.
    public static var isAvailable: Bool { fatalError("interface only") }

    /// https://developer.apple.com/documentation/cryptokit/secureenclave/p256 — `enum P256`.
    public enum P256 {
        /// https://developer.apple.com/documentation/cryptokit/secureenclave/p256/keyagreement —
        /// `enum KeyAgreement` (conforms to `Sendable`).
        public enum KeyAgreement: Sendable {
            /// https://developer.apple.com/documentation/cryptokit/secureenclave/p256/keyagreement/privatekey —
            /// `struct PrivateKey`. Not verified: whether it conforms to `Sendable` (the page
            /// lists no conformance); Coffer keeps it behind a lock and does not rely on it.
            public struct PrivateKey {
                /// https://developer.apple.com/documentation/cryptokit/secureenclave/p256/keyagreement/privatekey/init(compactrepresentable:accesscontrol:authenticationcontext:)
                /// — `init(compactRepresentable: Bool = true, accessControl: SecAccessControl = …,
                /// authenticationContext: LAContext? = nil) throws` (the default access control,
                /// `SecAccessControlCreateWithFlags(nil, kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly, [], nil)!`,
                /// is not transcribed: Coffer always passes its own).
                public init(compactRepresentable: Bool = true, accessControl: SecAccessControl, authenticationContext: LAContext? = nil) throws {
                    fatalError("interface only")
                }

                /// https://developer.apple.com/documentation/cryptokit/secureenclave/p256/keyagreement/privatekey/init(datarepresentation:authenticationcontext:)
                /// — `init(dataRepresentation: Data, authenticationContext: LAContext? = nil) throws`.
                public init(dataRepresentation: Data, authenticationContext: LAContext? = nil) throws { fatalError("interface only") }

                /// https://developer.apple.com/documentation/cryptokit/secureenclave/p256/keyagreement/privatekey/datarepresentation
                /// — `let dataRepresentation: Data`.
                public var dataRepresentation: Data { fatalError("interface only") }

                /// https://developer.apple.com/documentation/cryptokit/secureenclave/p256/keyagreement/privatekey/publickey
                /// — `let publicKey: P256.KeyAgreement.PublicKey`.
                public var publicKey: Crypto.P256.KeyAgreement.PublicKey { fatalError("interface only") }

                /// https://developer.apple.com/documentation/cryptokit/secureenclave/p256/keyagreement/privatekey/sharedsecretfromkeyagreement(with:)
                /// — `func sharedSecretFromKeyAgreement(with publicKeyShare: P256.KeyAgreement.PublicKey) throws -> SharedSecret`.
                public func sharedSecretFromKeyAgreement(with publicKeyShare: Crypto.P256.KeyAgreement.PublicKey) throws -> SharedSecret {
                    fatalError("interface only")
                }
            }
        }
    }
}
