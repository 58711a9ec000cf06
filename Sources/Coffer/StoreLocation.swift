// Where Coffer keeps its files by default on each platform.

import Foundation

/// Default folders of a Coffer store.
public enum StoreLocation {
    /// The folder of the default store: `$COFFER_HOME` when set, else the platform's
    /// application-data folder (`$XDG_DATA_HOME/coffer` or `~/.local/share/coffer` on Linux,
    /// `~/Library/Application Support/Coffer` on Apple platforms).
    public static func defaultStoreDirectory(environment: [String: String] = ProcessInfo.processInfo.environment) -> URL {
        if let home = environment["COFFER_HOME"], !home.isEmpty {
            return URL(fileURLWithPath: home, isDirectory: true)
        }
        #if canImport(Darwin)
        let base =
            FileManager.default.urls(for: .applicationSupportDirectory, in: .userDomainMask).first
            ?? URL(fileURLWithPath: NSHomeDirectory()).appendingPathComponent("Library/Application Support")
        return base.appendingPathComponent("Coffer", isDirectory: true)
        #else
        if let xdg = environment["XDG_DATA_HOME"], !xdg.isEmpty {
            return URL(fileURLWithPath: xdg, isDirectory: true).appendingPathComponent("coffer", isDirectory: true)
        }
        let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
        return URL(fileURLWithPath: home, isDirectory: true).appendingPathComponent(".local/share/coffer", isDirectory: true)
        #endif
    }

    /// The folder of the default store's caches (the OS may purge it): `STORE/caches` when
    /// `$COFFER_HOME` is set, else `$XDG_CACHE_HOME/coffer` or `~/.cache/coffer` on Linux, and
    /// `~/Library/Caches/Coffer` on Apple platforms.
    public static func defaultCachesDirectory(environment: [String: String] = ProcessInfo.processInfo.environment) -> URL {
        if let home = environment["COFFER_HOME"], !home.isEmpty {
            return URL(fileURLWithPath: home, isDirectory: true).appendingPathComponent("caches", isDirectory: true)
        }
        #if canImport(Darwin)
        let base =
            FileManager.default.urls(for: .cachesDirectory, in: .userDomainMask).first
            ?? URL(fileURLWithPath: NSHomeDirectory()).appendingPathComponent("Library/Caches")
        return base.appendingPathComponent("Coffer", isDirectory: true)
        #else
        if let xdg = environment["XDG_CACHE_HOME"], !xdg.isEmpty {
            return URL(fileURLWithPath: xdg, isDirectory: true).appendingPathComponent("coffer", isDirectory: true)
        }
        let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
        return URL(fileURLWithPath: home, isDirectory: true).appendingPathComponent(".cache/coffer", isDirectory: true)
        #endif
    }

    /// The wallet file inside a store folder.
    public static func walletFile(in store: URL) -> URL {
        store.appendingPathComponent("wallet.sqlite")
    }

    /// The app database (settings and collections) of a store.
    public static func appDatabaseFile(in store: URL) -> URL {
        store.appendingPathComponent("app.sqlite")
    }
}
