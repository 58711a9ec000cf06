// `coffer db put-asset`: writes one asset row, for scripts and the multi-process tests.

import ArgumentParser
import Coffer
import Foundation

extension DBCommand {
    struct PutAsset: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "put-asset",
            abstract:
                "Insert or update one asset (matched by remote id, local id or owner+checksum); prints {\"id\", \"remoteId\", \"ownerId\"}."
        )
        @Argument(help: "The server's asset id.") var remoteId: String
        @Argument(help: "The owner's user id (stored lower-cased).") var ownerId: String
        @Argument(help: "The content checksum (unique per owner).") var checksum: String
        @Option(help: ArgumentHelp("The device's local id, when the asset also lives on the device.", valueName: "id")) var localId: String?
        // `.unconditional`: a time before 1970 (`--created-at -86400`) is a value, not an option.
        @Option(
            parsing: .unconditional,
            help: ArgumentHelp(
                "Creation time, seconds since 1970, at least -62135596800 (0001-01-01) and less than 253402300800 (10000-01-01) (default: now).",
                valueName: "seconds"))
        var createdAt: Double?
        @Flag(
            name: .customLong("replace-identity"),
            help:
                "When the row matched by local id or owner+checksum has another remote or local id, overwrite it (default: refuse, exit 3)."
        )
        var replaceIdentity = false
        @OptionGroup var storeOptions: StoreOptions

        /// 0001-01-01 00:00:00 UTC, the earliest date the app database's date format holds.
        static let earliestCreatedAt: Double = -62_135_596_800
        /// 10000-01-01 00:00:00 UTC, the first date it cannot hold (five digits of year).
        static let createdAtLimit: Double = 253_402_300_800

        func validate() throws {
            // The app database stores dates as "yyyy-MM-dd HH:mm:ss.SSS", rounded to the
            // millisecond: years 0001 to 9999 only (253402300799.9999 would be stored as 10000).
            if let createdAt, !(Self.earliestCreatedAt..<Self.createdAtLimit).contains((createdAt * 1000).rounded() / 1000) {
                throw ValidationError(
                    "--created-at must be a finite number of seconds since 1970, at least \(Int64(Self.earliestCreatedAt)) (0001-01-01) "
                        + "and less than \(Int64(Self.createdAtLimit)) (10000-01-01) once rounded to the millisecond: "
                        + "the years 0001 to 9999 the app database holds; "
                        + "got \(createdAt)")
            }
        }

        func run() async throws {
            guard !remoteId.isEmpty, !ownerId.isEmpty, !checksum.isEmpty else {
                throw WalletError.invalidInput("remote id, owner id and checksum must not be empty")
            }
            if localId?.isEmpty == true {
                throw WalletError.invalidInput("--local-id must not be empty: give the device's id of the asset, or leave --local-id out")
            }
            let created = createdAt.map { Date(timeIntervalSince1970: $0) } ?? Date()
            let asset = Asset(
                remoteId: remoteId, localId: localId, ownerId: ownerId, checksum: checksum, fileName: remoteId, fileCreatedAt: created)
            let conflict: AssetIdentityConflict = replaceIdentity ? .replaceIdentity : .refuse
            let stored = try await storeOptions.withAppDatabase { try await $0.context.assets.put(asset, onConflict: conflict) }
            print(
                JSONValue.object([
                    ("id", .number(String(stored.id ?? 0))), ("remoteId", .string(remoteId)),
                    ("ownerId", .string(stored.ownerId)),
                ]).jsonText)
        }
    }
}
