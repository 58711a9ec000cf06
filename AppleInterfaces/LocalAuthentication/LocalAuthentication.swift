// Stand-in for the one type of Apple's `LocalAuthentication` that Coffer's Apple-only code meets
// (as the type of a defaulted parameter of CryptoKit's Secure Enclave keys), for
// Scripts/typecheck-apple.sh. Declarations only: nothing here is ever run.
import Foundation

/// https://developer.apple.com/documentation/localauthentication/lacontext — `class LAContext : NSObject`.
/// Coffer never makes one (it passes the parameters' default, nil).
@available(iOS 8.0, macOS 10.10, *)
open class LAContext: NSObject {}
