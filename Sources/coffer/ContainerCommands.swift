// `coffer cache …`, `coffer cleanup`, `coffer reset`, `coffer secure …`: the app container of a store.

import ArgumentParser
import Coffer
import CofferCLISupport
import Foundation

extension MediaKind: ExpressibleByArgument {}
extension KeepMediaType: ExpressibleByArgument {}
extension SecureAccessibility: ExpressibleByArgument {}

enum ContainerCLI {
    /// The bytes of `cache put`'s FILE: a regular file, or a pipe (`/dev/stdin` fed by a pipe, a
    /// shell's process substitution), at most `limit` bytes (the disk layer's default limit: a
    /// larger entry could not be stored). A folder, a device or a socket is refused by name; a
    /// file over the limit is refused before it is read, a pipe once it has delivered more.
    static func readImage(_ file: String, limit: Int) throws -> Data {
        try BoundedInput(limit: limit, limitName: "the cache's limit", fileKind: "an image file").bytes(atPath: file)
    }

    /// The SDK wallet's key is never printed, replaced or removed by hand (a reset removes it).
    static func refuseSDKKey(_ name: String) throws {
        if name == CofferSDK.walletKeyItem {
            throw WalletError.invalidInput(
                "\(name) holds the SDK wallet's key, which the secure commands never print, replace or remove (coffer reset --yes removes it with the wallet)"
            )
        }
    }

    static func statistics(_ cache: MediaCache) -> JSONValue {
        let stats = cache.statisticsBlocking()
        let limits = cache.currentLimits
        let kinds = MediaKind.allCases.map { kind -> (String, JSONValue) in
            let s = stats.kinds[kind]!
            return (
                kind.rawValue,
                .object([
                    ("entries", .number(String(s.diskEntries))), ("bytes", .number(String(s.diskBytes))),
                    ("limit", .number(String(limits.entries[kind] ?? 0))),
                    ("hits", .number(String(s.hits))), ("misses", .number(String(s.misses))),
                    ("expirations", .number(String(s.expirations))),
                ])
            )
        }
        return .object([
            ("kinds", .object(kinds)), ("bytes", .number(String(stats.diskBytes))),
            ("byteLimit", .number(String(limits.diskBytes))), ("folder", .string(cache.folder.path)),
        ])
    }
}

struct CacheCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cache",
        abstract: "The media cache (thumbnails, previews, album covers) of a store.",
        subcommands: [Stats.self, Clear.self, Put.self, Get.self])

    @OptionGroup var storeOptions: StoreOptions

    struct Stats: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Print {\"kinds\": {KIND: {\"entries\", \"bytes\", \"limit\", \"hits\", \"misses\", \"expirations\"}}, \"bytes\", \"byteLimit\", \"folder\"} (disk layer; hits, misses and expirations of every process since the cache folder was made)."
        )
        @OptionGroup var storeOptions: StoreOptions

        func run() async throws {
            print(try await storeOptions.withContainer { ContainerCLI.statistics($0.cache) }.jsonText)
        }
    }

    struct Clear: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Remove cached images (every kind, or one with --kind); synced data is untouched. Prints {\"cleared\", \"bytes\"}.")
        @Option(help: "Only this kind (default: every kind).") var kind: MediaKind?
        @OptionGroup var storeOptions: StoreOptions

        func run() async throws {
            let freed = try await storeOptions.withContainer { container in
                let before = await container.cache.statistics().diskBytes
                try await container.clearCache(kind)
                return before - (await container.cache.statistics().diskBytes)
            }
            print(JSONValue.object([("cleared", .string(kind?.rawValue ?? "all")), ("bytes", .number(String(freed)))]).jsonText)
        }
    }

    struct Put: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Store FILE's bytes as the KIND image of ID; prints {\"stored\": {\"kind\", \"id\", \"bytes\"}}.")
        @Argument(help: "The image's kind.") var kind: MediaKind
        @Argument(help: "Asset id (album id for albumThumbnail).") var id: String
        @Argument(help: ArgumentHelp("The image file to store.", valueName: "file")) var file: String
        @Option(help: "Seconds until the entry expires (default: never).") var ttl: Double?
        @OptionGroup var storeOptions: StoreOptions

        func validate() throws {
            if let ttl, !(ttl > 0 && ttl.isFinite) { throw ValidationError("--ttl must be a positive number of seconds") }
        }

        func run() async throws {
            let data = try ContainerCLI.readImage(file, limit: MediaCacheLimits.default.diskBytes)
            let key = MediaKey(kind, id)
            try await storeOptions.withContainer { try await $0.cache.store(data, for: key, ttl: ttl) }
            print(
                JSONValue.object([
                    ("stored", .object([("kind", .string(kind.rawValue)), ("id", .string(id)), ("bytes", .number(String(data.count)))]))
                ]).jsonText)
        }
    }

    struct Get: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Write the cached KIND image of ID to stdout (exit 1 when not cached).")
        @Argument(help: "The image's kind.") var kind: MediaKind
        @Argument(help: "Asset id (album id for albumThumbnail).") var id: String
        @OptionGroup var storeOptions: StoreOptions

        func run() async throws {
            let key = MediaKey(kind, id)
            guard let data = try await storeOptions.withContainer({ await $0.cache.data(for: key) }) else {
                throw WalletError.notFound(type: "cached \(kind.rawValue)", id: id)
            }
            FileHandle.standardOutput.write(data)
        }
    }
}

struct CleanupCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cleanup",
        abstract: "Free up space: remove local copies of backed-up assets older than the cutoff.",
        discussion: """
            Options default to the settings (cleanupCutoffDaysAgo, cleanupKeepFavorites, cleanupKeepMediaType, \
            cleanupKeepAlbumIds). Local files live in --media-dir (the local id is the path inside it); only \
            assets whose file was actually deleted, or is no longer there (alreadyGone: say, an earlier cleanup \
            was stopped before it updated the records), lose their local copy in the records. Prints \
            {"dryRun", "count", "bytes", "assets": [{"remoteId", "localId", "fileName", "bytes"}], "notDeleted": [...], \
            "alreadyGone": [...]}.
            """)

    @Flag(help: "List what would be removed, with bytes; delete nothing.") var dryRun = false
    // `.unconditional`: `--cutoff-days -3` reaches validate() (and its message) instead of reading as an option.
    @Option(
        parsing: .unconditional,
        help: ArgumentHelp(
            "Only assets created at least this many days ago, 0 or more (default: the cleanupCutoffDaysAgo setting).", valueName: "days"))
    var cutoffDays: Int?
    @Option(help: ArgumentHelp("Keep favourites: true or false.", valueName: "bool")) var keepFavorites: Bool?
    @Option(help: ArgumentHelp("Keep this media type.", valueName: "type")) var keepMediaType: KeepMediaType?
    @Option(help: ArgumentHelp("Keep assets in this album (server id; repeatable).", valueName: "id")) var keepAlbum: [String] = []
    @Option(help: ArgumentHelp("The folder of the device's local media files (required unless --dry-run).", valueName: "dir"))
    var mediaDir: String?
    @OptionGroup var storeOptions: StoreOptions

    func validate() throws {
        if let cutoffDays, cutoffDays < 0 { throw ValidationError("--cutoff-days must be at least 0, got \(cutoffDays)") }
        // An empty path would mean the current folder: its files would be deleted as local copies.
        if let mediaDir, mediaDir.isEmpty {
            throw ValidationError("--media-dir needs a folder; an empty path is refused (it would mean the current folder)")
        }
    }

    func run() async throws {
        if !dryRun, mediaDir == nil { throw WalletError.invalidInput("give --media-dir (where the local files are) or --dry-run") }
        if !dryRun, let mediaDir {
            // Anything but a folder would make every candidate "not deleted" (or, once gone, forgotten).
            var isFolder: ObjCBool = false
            guard FileManager.default.fileExists(atPath: mediaDir, isDirectory: &isFolder), isFolder.boolValue else {
                throw WalletError.invalidInput("--media-dir \(mediaDir) is not a folder; give the folder of the device's local media files")
            }
        }
        let library = DirectoryMediaLibrary(root: URL(fileURLWithPath: mediaDir ?? "/nonexistent", isDirectory: true))
        let result = try await storeOptions.withContainer { container in
            var options = CleanupOptions(settings: container.settings)
            if let cutoffDays { options.cutoffDaysAgo = cutoffDays }
            if let keepFavorites { options.keepFavorites = keepFavorites }
            if let keepMediaType { options.keepMediaType = keepMediaType }
            if !keepAlbum.isEmpty { options.keepAlbumIds = keepAlbum }
            return try await container.freeUpSpace(options, library: library, dryRun: dryRun)
        }
        func list(_ items: [CleanupCandidate]) -> JSONValue {
            .array(
                items.map {
                    .object([
                        ("remoteId", .string($0.remoteId)), ("localId", .string($0.localId)),
                        ("fileName", .string($0.fileName)), ("bytes", .number(String($0.bytes))),
                    ])
                })
        }
        print(
            JSONValue.object([
                ("dryRun", .bool(dryRun)), ("count", .number(String(result.removed.count))),
                ("bytes", .number(String(result.bytes))), ("assets", list(result.removed)),
                ("notDeleted", list(result.notDeleted)), ("alreadyGone", list(result.alreadyGone)),
            ]).jsonText)
    }
}

struct ResetCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reset",
        abstract: "Full reset: remove the database, settings, wallet, deniable vault, media cache and secure items of the store.")

    @Flag(help: "Confirm: nothing is removed without it.") var yes = false
    @OptionGroup var storeOptions: StoreOptions

    func run() async throws {
        guard yes else { throw WalletError.invalidInput("reset removes every local store: confirm with --yes") }
        // Nothing is opened: a store written by a newer version, or damaged, is reset all the same.
        let locations = storeOptions.locations
        try await CofferContainer.reset(locations)
        StandardError.write("reset: \(locations.data.path) is back to a fresh install\n")
        print(
            JSONValue.object([("reset", .object([("data", .string(locations.data.path)), ("caches", .string(locations.caches.path))]))])
                .jsonText)
    }
}

struct SecureCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "secure",
        abstract:
            "Secure items (access token, client certificate, custom headers): Keychain on Apple platforms, sealed files in STORE/secure elsewhere.",
        subcommands: [Get.self, Set.self, Delete.self, List.self])

    @OptionGroup var storeOptions: StoreOptions

    struct Get: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Write the item's value to stdout (exit 1 when there is none).")
        @Argument(help: "The item's name.") var name: String
        @Flag(help: "Print the value as base64 (for binary items).") var base64 = false
        @OptionGroup var storeOptions: StoreOptions

        func run() async throws {
            try ContainerCLI.refuseSDKKey(name)
            guard let data = try await storeOptions.withContainer({ try await $0.secure.load(name) }) else {
                throw WalletError.notFound(type: "secure item", id: name)
            }
            if base64 { print(data.base64EncodedString()) } else { FileHandle.standardOutput.write(data) }
        }
    }

    struct Set: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Store an item; the value comes from --value-env VAR, else from stdin (never from the command line). Prints {\"set\": {\"name\", \"accessibility\"}} (never the value)."
        )
        @Argument(help: "The item's name.") var name: String
        @Option(help: ArgumentHelp("Name of an environment variable holding the value.", valueName: "var")) var valueEnv: String?
        @Option(help: "When the item may be read (the Keychain's accessibility; kept with the item elsewhere).")
        var accessibility: SecureAccessibility = .afterFirstUnlock
        @OptionGroup var storeOptions: StoreOptions

        func run() async throws {
            try ContainerCLI.refuseSDKKey(name)
            let value: Data
            if let valueEnv {
                guard let text = ProcessInfo.processInfo.environment[valueEnv] else {
                    throw WalletError.invalidInput("--value-env: environment variable \(valueEnv) is not set")
                }
                value = Data(text.utf8)
            } else {
                value = try BoundedInput(limit: CLIInput.maxTextBytes, limitName: "the limit for a secure item", fileKind: "a file")
                    .bytesOfStandardInput(prefix: "secure set: ")
            }
            guard !value.isEmpty else { throw WalletError.invalidInput("the value of \(name) is empty") }
            try await storeOptions.withContainer { try await $0.secure.save(value, for: name, accessibility: accessibility) }
            print(
                JSONValue.object([("set", .object([("name", .string(name)), ("accessibility", .string(accessibility.rawValue))]))]).jsonText
            )
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Remove an item (removing a missing item is not an error); prints {\"deleted\": {\"name\"}}.")
        @Argument(help: "The item's name.") var name: String
        @OptionGroup var storeOptions: StoreOptions

        func run() async throws {
            try ContainerCLI.refuseSDKKey(name)
            try await storeOptions.withContainer { try await $0.secure.delete(name) }
            print(JSONValue.object([("deleted", .object([("name", .string(name))]))]).jsonText)
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print the readable item names as a JSON array (values are never listed).",
            discussion:
                "A damaged item is left out and named on stderr (by its file: item names are sealed inside); the others list and read as usual."
        )
        @OptionGroup var storeOptions: StoreOptions

        func run() async throws {
            let names = try await storeOptions.withContainer { container in
                let names = try await container.secure.names()
                for damaged in try await container.secure.damagedItems() {
                    StandardError.write(
                        "warning: damaged secure item \(damaged.file): \(damaged.reason); set the item again, or delete it by name\n")
                }
                return names
            }
            print(JSONValue.array(names.map { .string($0) }).jsonText)
        }
    }
}
