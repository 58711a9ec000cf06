// The one error type of CofferWallet: each case says what went wrong and carries what a caller needs.

import CofferSync
import Foundation

@_exported import struct CofferSync.StorageCause

/// Errors from a ``Wallet``. A call that throws has changed nothing.
public enum WalletError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A record with this type and id already exists.
    case duplicate(type: String, id: String)
    /// No record with this type and id (or it has expired).
    case notFound(type: String, id: String)
    /// An argument is malformed: the message names the argument and the rule it broke.
    case invalidInput(String)
    /// A WQL query is malformed: the message names the offending part.
    case invalidQuery(String)
    /// The key or passphrase does not open this wallet.
    case wrongKey(String)
    /// Stored bytes failed authentication or do not decode: the wallet file was altered or damaged.
    case corrupted(String)
    /// A search handle that was never opened, was closed, or was reclaimed after going idle.
    case invalidHandle(Int)
    /// `create` found a wallet already there.
    case walletExists(path: String)
    /// `open` found no wallet there.
    case walletMissing(path: String)
    /// SQLite or the file system failed (disk full, permissions, locked too long, …).
    /// `cause` keeps the system's error number or SQLite's result code underneath (nil when
    /// there was none), so a caller can tell a full disk from a refused permission.
    case storage(String, cause: StorageCause? = nil)
    /// The wallet was closed (``Wallet/close()``, or its container's `close()` or `reset()`);
    /// open it again to use it.
    case closed

    /// The message: what went wrong, naming the record, argument or query part.
    public var description: String {
        switch self {
        case .duplicate(let type, let id):
            return "duplicate: a record of type \(Self.quote(type)) with id \(Self.quote(id)) already exists"
        case .notFound(let type, let id):
            return "not found: no record of type \(Self.quote(type)) with id \(Self.quote(id))"
        case .invalidInput(let message):
            return "invalid input: \(message)"
        case .invalidQuery(let message):
            return "invalid query: \(message)"
        case .wrongKey(let message):
            return "wrong key: \(message)"
        case .corrupted(let message):
            return "corrupted: \(message)"
        case .invalidHandle(let handle):
            return "invalid input: search handle \(handle) is not open (never opened, closed, or reclaimed after idling)"
        case .walletExists(let path):
            return "duplicate: a wallet already exists at \(path)"
        case .walletMissing(let path):
            return "not found: no wallet at \(path) (create one first)"
        case .storage(let message, _):
            return "storage: \(message)"
        case .closed:
            return "closed: the wallet was closed; open it again to use it"
        }
    }

    /// The kind of failure without any record type, id, tag or query text: for logs that must
    /// not carry the caller's data (``description`` names them, to help the caller act).
    public var redactedDescription: String {
        switch self {
        case .duplicate: return "duplicate record"
        case .notFound: return "record not found"
        case .invalidInput: return "invalid input"
        case .invalidQuery: return "invalid query"
        case .wrongKey: return "wrong key"
        case .corrupted: return "corrupted wallet data"
        case .invalidHandle(let handle): return "search handle \(handle) is not open"
        case .walletExists: return "a wallet already exists there"
        case .walletMissing: return "no wallet there"
        case .storage: return "storage failure"
        case .closed: return "wallet closed"
        }
    }

    static func quote(_ s: String) -> String {
        var out = ""
        JSONValue.writeString(s, to: &out)
        return out
    }
}

extension WalletError: LocalizedError {
    /// The same text as `description`: what went wrong and what to do (for
    /// `localizedDescription`, alerts and logs).
    public var errorDescription: String? { description }
}
