// Stand-in for the parts of Apple's `Security` framework (and the Core Foundation types it
// re-exports) that Coffer uses, for Scripts/typecheck-apple.sh. Declarations only: nothing here
// is ever run (a global's initial value would trap if it were read).
//
// Each declaration is the Swift form shown on its Apple documentation page (linked above it),
// with the availability listed there. Compiled in the Swift 5 language mode, as Apple's
// C-imported frameworks are not checked for Sendable either.
//
// Core Foundation: on Apple platforms `CFString`, `CFDictionary`, … are distinct types,
// toll-free bridged to `NSString`, `NSDictionary`, …, so `kSecClass as String` and
// `[String: Any]() as CFDictionary` compile. Linux has no Core Foundation bridging, so here
// each CF type is an alias of its bridged Foundation class (whose `as` conversions
// swift-corelibs-foundation provides). Consequence, not caught here: passing an `NSString` where
// a `CFString` is expected compiles here, as it would not on Apple platforms.
import Foundation

// MARK: - Core Foundation types (CoreFoundation, re-exported by Security)

/// https://developer.apple.com/documentation/corefoundation/cfstring — `class CFString`, bridged to `NSString`.
public typealias CFString = NSString
/// https://developer.apple.com/documentation/corefoundation/cfdictionary — `class CFDictionary`, bridged to `NSDictionary`.
public typealias CFDictionary = NSDictionary
/// https://developer.apple.com/documentation/corefoundation/cfdata — `class CFData`, bridged to `NSData`.
public typealias CFData = NSData
/// https://developer.apple.com/documentation/corefoundation/cfboolean — `class CFBoolean`, bridged to `NSNumber`.
public typealias CFBoolean = NSNumber
/// https://developer.apple.com/documentation/corefoundation/cftyperef — `typealias CFTypeRef = AnyObject`.
public typealias CFTypeRef = AnyObject
/// https://developer.apple.com/documentation/kernel/osstatus — `typealias OSStatus = Int32` (MacTypes.h, `SInt32`).
public typealias OSStatus = Int32

/// https://developer.apple.com/documentation/corefoundation/kcfbooleanfalse — `let kCFBooleanFalse: CFBoolean!`
public let kCFBooleanFalse: CFBoolean! = nil
/// https://developer.apple.com/documentation/corefoundation/kcfbooleantrue — `let kCFBooleanTrue: CFBoolean!`
public let kCFBooleanTrue: CFBoolean! = nil

// MARK: - Keychain items (SecItem.h)

/// https://developer.apple.com/documentation/security/secitemadd(_:_:)
@available(iOS 2.0, macOS 10.6, tvOS 9.0, watchOS 2.0, *)
public func SecItemAdd(_ attributes: CFDictionary, _ result: UnsafeMutablePointer<CFTypeRef?>?) -> OSStatus {
    fatalError("interface only")
}

/// https://developer.apple.com/documentation/security/secitemcopymatching(_:_:)
@available(iOS 2.0, macOS 10.6, tvOS 9.0, watchOS 2.0, *)
public func SecItemCopyMatching(_ query: CFDictionary, _ result: UnsafeMutablePointer<CFTypeRef?>?) -> OSStatus {
    fatalError("interface only")
}

/// https://developer.apple.com/documentation/security/secitemupdate(_:_:)
@available(iOS 2.0, macOS 10.6, tvOS 9.0, watchOS 2.0, *)
public func SecItemUpdate(_ query: CFDictionary, _ attributesToUpdate: CFDictionary) -> OSStatus {
    fatalError("interface only")
}

/// https://developer.apple.com/documentation/security/secitemdelete(_:)
@available(iOS 2.0, macOS 10.6, tvOS 9.0, watchOS 2.0, *)
public func SecItemDelete(_ query: CFDictionary) -> OSStatus {
    fatalError("interface only")
}

/// https://developer.apple.com/documentation/security/seccopyerrormessagestring(_:_:)
/// (returns an optional: nil when there is no text for the code)
@available(iOS 11.3, macOS 10.3, tvOS 11.3, watchOS 4.3, *)
public func SecCopyErrorMessageString(_ status: OSStatus, _ reserved: UnsafeMutableRawPointer?) -> CFString? {
    fatalError("interface only")
}

// Item class, attribute, search and return keys: each page shows `let NAME: CFString`.
// Availability iOS 2.0 / macOS 10.6 unless noted.

/// https://developer.apple.com/documentation/security/ksecclass
public let kSecClass: CFString = _interfaceOnly()
/// https://developer.apple.com/documentation/security/ksecclassgenericpassword
public let kSecClassGenericPassword: CFString = _interfaceOnly()
/// https://developer.apple.com/documentation/security/ksecattrservice
public let kSecAttrService: CFString = _interfaceOnly()
/// https://developer.apple.com/documentation/security/ksecattraccount
public let kSecAttrAccount: CFString = _interfaceOnly()
/// https://developer.apple.com/documentation/security/ksecattraccessgroup (iOS 3.0, macOS 10.9)
@available(iOS 3.0, macOS 10.9, *)
public let kSecAttrAccessGroup: CFString = _interfaceOnly()
/// https://developer.apple.com/documentation/security/ksecattrsynchronizable (iOS 7.0, macOS 10.9)
@available(iOS 7.0, macOS 10.9, *)
public let kSecAttrSynchronizable: CFString = _interfaceOnly()
/// https://developer.apple.com/documentation/security/ksecusedataprotectionkeychain (iOS 13.0, macOS 10.15)
@available(iOS 13.0, macOS 10.15, tvOS 13.0, watchOS 6.0, *)
public let kSecUseDataProtectionKeychain: CFString = _interfaceOnly()
/// https://developer.apple.com/documentation/security/ksecvaluedata
public let kSecValueData: CFString = _interfaceOnly()
/// https://developer.apple.com/documentation/security/ksecattraccessible (iOS 4.0, macOS 10.9)
@available(iOS 4.0, macOS 10.9, *)
public let kSecAttrAccessible: CFString = _interfaceOnly()
/// https://developer.apple.com/documentation/security/ksecattraccessiblewhenunlocked (iOS 4.0, macOS 10.9)
@available(iOS 4.0, macOS 10.9, *)
public let kSecAttrAccessibleWhenUnlocked: CFString = _interfaceOnly()
/// https://developer.apple.com/documentation/security/ksecattraccessibleafterfirstunlock (iOS 4.0, macOS 10.9)
@available(iOS 4.0, macOS 10.9, *)
public let kSecAttrAccessibleAfterFirstUnlock: CFString = _interfaceOnly()
/// https://developer.apple.com/documentation/security/ksecattraccessiblewhenunlockedthisdeviceonly (iOS 4.0, macOS 10.9)
@available(iOS 4.0, macOS 10.9, *)
public let kSecAttrAccessibleWhenUnlockedThisDeviceOnly: CFString = _interfaceOnly()
/// https://developer.apple.com/documentation/security/ksecattraccessibleafterfirstunlockthisdeviceonly (iOS 4.0, macOS 10.9)
@available(iOS 4.0, macOS 10.9, *)
public let kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly: CFString = _interfaceOnly()
/// https://developer.apple.com/documentation/security/ksecreturndata
public let kSecReturnData: CFString = _interfaceOnly()
/// https://developer.apple.com/documentation/security/ksecreturnattributes
public let kSecReturnAttributes: CFString = _interfaceOnly()
/// https://developer.apple.com/documentation/security/ksecmatchlimit
public let kSecMatchLimit: CFString = _interfaceOnly()
/// https://developer.apple.com/documentation/security/ksecmatchlimitone
public let kSecMatchLimitOne: CFString = _interfaceOnly()
/// https://developer.apple.com/documentation/security/ksecmatchlimitall
public let kSecMatchLimitAll: CFString = _interfaceOnly()

// MARK: - Result codes (SecBase.h)

// Each page shows `var NAME: OSStatus { get }` (cases of a C enum of `OSStatus`).

/// https://developer.apple.com/documentation/security/errsecsuccess
public var errSecSuccess: OSStatus { fatalError("interface only") }
/// https://developer.apple.com/documentation/security/errsecitemnotfound
public var errSecItemNotFound: OSStatus { fatalError("interface only") }
/// https://developer.apple.com/documentation/security/errsecinteractionnotallowed
public var errSecInteractionNotAllowed: OSStatus { fatalError("interface only") }
/// https://developer.apple.com/documentation/security/errsecmissingentitlement
public var errSecMissingEntitlement: OSStatus { fatalError("interface only") }
/// https://developer.apple.com/documentation/security/errsecduplicateitem
public var errSecDuplicateItem: OSStatus { fatalError("interface only") }

/// The initial value of every constant above: never evaluated (a global is initialised on
/// first read, and nothing here is ever run).
func _interfaceOnly<T>() -> T { fatalError("interface only") }

// MARK: - Access control (SecAccessControl.h), for CryptoKit's Secure Enclave keys

/// https://developer.apple.com/documentation/corefoundation/cfallocator — `class CFAllocator`.
/// Coffer only passes nil (the default allocator).
public final class CFAllocator {}
/// https://developer.apple.com/documentation/corefoundation/cferror — `class CFError`, bridged to `NSError`.
public typealias CFError = NSError

/// https://developer.apple.com/documentation/security/secaccesscontrol — `class SecAccessControl`.
public final class SecAccessControl {}

/// https://developer.apple.com/documentation/security/secaccesscontrolcreateflags —
/// `struct SecAccessControlCreateFlags` (an `OptionSet` of `CFOptionFlags`, `UInt` on 64-bit).
@available(iOS 8.0, macOS 10.10, *)
public struct SecAccessControlCreateFlags: OptionSet {
    public let rawValue: UInt
    public init(rawValue: UInt) { self.rawValue = rawValue }
    /// https://developer.apple.com/documentation/security/secaccesscontrolcreateflags/privatekeyusage —
    /// `static var privateKeyUsage: SecAccessControlCreateFlags { get }` (iOS 9.0+, macOS 10.12.1+).
    @available(iOS 9.0, macOS 10.12.1, *)
    public static var privateKeyUsage: SecAccessControlCreateFlags { fatalError("interface only") }
}

/// https://developer.apple.com/documentation/security/secaccesscontrolcreatewithflags(_:_:_:_:)
/// — `func SecAccessControlCreateWithFlags(_ allocator: CFAllocator?, _ protection: CFTypeRef,
/// _ flags: SecAccessControlCreateFlags, _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?) -> SecAccessControl?`
@available(iOS 8.0, macOS 10.10, *)
public func SecAccessControlCreateWithFlags(
    _ allocator: CFAllocator?, _ protection: CFTypeRef, _ flags: SecAccessControlCreateFlags,
    _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?
) -> SecAccessControl? {
    fatalError("interface only")
}
