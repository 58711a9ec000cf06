// Stand-in for the parts of Apple's `Darwin` module that Coffer uses and that Glibc lacks, for
// Scripts/typecheck-apple.sh. Declarations only: nothing here is ever run (every body traps).
//
// The POSIX calls Darwin and Glibc share (open, write, fsync, fcntl, stat, flock, getrusage, …)
// come from Glibc, re-exported below, so they are checked against Linux's declarations: a
// difference in integer widths between the two systems (Darwin's `mode_t` is `UInt16`, Linux's
// `UInt32`) is not caught here. Only the Darwin-only names are transcribed.
//
// How C declarations appear in Swift (the Clang importer's rules): a C function keeps its
// argument order with unlabelled parameters (`_`), a `#define` of an integer constant becomes a
// read-only global (`var NAME: Int32 { get }`), a plain C enum typedef becomes a struct with a
// raw value, `bool` becomes `Bool`, `uint64_t` becomes `UInt64`.
@_exported import Glibc

// MARK: - os/lock.h (Apple's `os` library, re-exported by Darwin)

/// https://developer.apple.com/documentation/os/os_unfair_lock_s
/// `typedef struct os_unfair_lock_s { uint32_t _os_unfair_lock_opaque; } os_unfair_lock`;
/// imported as a struct with a zero-initialising `init()` (C structs get one).
/// Availability: iOS 10.0, macOS 10.12.
@available(iOS 10.0, macOS 10.12, tvOS 10.0, watchOS 3.0, *)
public struct os_unfair_lock {
    public var _os_unfair_lock_opaque: UInt32
    public init() { fatalError("interface only") }
    public init(_os_unfair_lock_opaque: UInt32) { fatalError("interface only") }
}

/// https://developer.apple.com/documentation/os/os_unfair_lock_t
/// `typedef struct os_unfair_lock_s *os_unfair_lock_t;`
@available(iOS 10.0, macOS 10.12, tvOS 10.0, watchOS 3.0, *)
public typealias os_unfair_lock_t = UnsafeMutablePointer<os_unfair_lock>

/// https://developer.apple.com/documentation/os/os_unfair_lock_lock
/// `extern void os_unfair_lock_lock(os_unfair_lock_t lock);`
@available(iOS 10.0, macOS 10.12, tvOS 10.0, watchOS 3.0, *)
public func os_unfair_lock_lock(_ lock: os_unfair_lock_t) { fatalError("interface only") }

/// https://developer.apple.com/documentation/os/os_unfair_lock_trylock
/// `extern bool os_unfair_lock_trylock(os_unfair_lock_t lock);`
@available(iOS 10.0, macOS 10.12, tvOS 10.0, watchOS 3.0, *)
public func os_unfair_lock_trylock(_ lock: os_unfair_lock_t) -> Bool { fatalError("interface only") }

/// https://developer.apple.com/documentation/os/os_unfair_lock_unlock
/// `extern void os_unfair_lock_unlock(os_unfair_lock_t lock);`
@available(iOS 10.0, macOS 10.12, tvOS 10.0, watchOS 3.0, *)
public func os_unfair_lock_unlock(_ lock: os_unfair_lock_t) { fatalError("interface only") }

// MARK: - fcntl.h

/// fcntl(2), Apple's manual page (https://keith.github.io/xcode-man-pages/fcntl.2.html; the
/// fsync(2) page points to it): "F_FULLFSYNC: Does the same thing as fsync(2) then asks the
/// drive to flush all buffered data to the permanent storage device". `#define F_FULLFSYNC 51`
/// in <sys/fcntl.h>. `fcntl(_:_:)` itself is the Swift overlay's non-variadic wrapper, the same
/// signature in Glibc's overlay (`fcntl(_ fd: Int32, _ cmd: Int32) -> Int32`), taken from there.
public var F_FULLFSYNC: Int32 { fatalError("interface only") }

// MARK: - time.h

/// clock_gettime(3), Apple's manual page (https://manp.gs/mac/3/clock_gettime_nsec_np):
/// `clockid_t` is a C enum (`typedef enum { _CLOCK_REALTIME = 0, … } clockid_t;`), so Swift
/// imports it as a struct with a raw value; the `CLOCK_…` names are `#define`s of its cases.
/// Not verified against a page: the exact raw type (`UInt32`, as for C enums without a fixed type).
@available(iOS 10.0, macOS 10.12, tvOS 10.0, watchOS 3.0, *)
public struct clockid_t: Equatable, RawRepresentable {
    public var rawValue: UInt32
    public init(_ rawValue: UInt32) { fatalError("interface only") }
    public init(rawValue: UInt32) { fatalError("interface only") }
}

/// clock_gettime(3): "like CLOCK_UPTIME_RAW, but reads a value cached by the system at context
/// switch". `#define CLOCK_UPTIME_RAW_APPROX _CLOCK_UPTIME_RAW_APPROX`.
@available(iOS 10.0, macOS 10.12, tvOS 10.0, watchOS 3.0, *)
public var CLOCK_UPTIME_RAW_APPROX: clockid_t { fatalError("interface only") }

/// clock_gettime(3): `uint64_t clock_gettime_nsec_np(clockid_t clock_id);` — nanoseconds, 0 on
/// an invalid clock (it does not set a `timespec`, so nothing is optional).
@available(iOS 10.0, macOS 10.12, tvOS 10.0, watchOS 3.0, *)
public func clock_gettime_nsec_np(_ __clock_id: clockid_t) -> UInt64 { fatalError("interface only") }

// MARK: - sys/stat.h

extension stat {
    /// stat(2), Apple's manual page (https://keith.github.io/xcode-man-pages/stat.2.html): Darwin's
    /// `struct stat` names its times `st_atimespec`, `st_mtimespec`, `st_ctimespec`,
    /// `st_birthtimespec` (`struct timespec`), where Linux has `st_mtim`. Modelled here as a
    /// read-only property on Glibc's `stat` (on Darwin it is a stored field).
    public var st_mtimespec: timespec { fatalError("interface only") }
}

// MARK: - sys/resource.h

/// getrusage(2), Apple's manual page (https://keith.github.io/xcode-man-pages/getrusage.2.html):
/// `#define RUSAGE_SELF 0`, so an `Int32`, passed to `getrusage(_: Int32, _:)` (on Linux a
/// `__rusage_who` enum). `ru_maxrss` is in bytes on Darwin, kilobytes on Linux (not visible in
/// a type).
public var RUSAGE_SELF: Int32 { fatalError("interface only") }

// MARK: - spawn.h

/// posix_spawnattr_setflags(3), Apple's manual page
/// (https://keith.github.io/xcode-man-pages/posix_spawnattr_setflags.3.html): "POSIX_SPAWN_CLOEXEC_DEFAULT
/// (Apple Extension): If this bit is set, then only file descriptors explicitly described by the
/// file actions will be inherited by the new process; all others will be closed as if they had
/// the close-on-exec flag set". `#define POSIX_SPAWN_CLOEXEC_DEFAULT 0x4000` in <spawn.h>, so an
/// `Int32`, passed to `posix_spawnattr_setflags(_:_: Int16)` after a conversion (as on Linux).
public var POSIX_SPAWN_CLOEXEC_DEFAULT: Int32 { fatalError("interface only") }
