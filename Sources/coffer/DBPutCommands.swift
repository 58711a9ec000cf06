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
        @OptionGroup var storeOptions: StoreOptions
        @Argument(help: "The server's asset id.") var remoteId: String
        @Argument(help: "The owner's user id (stored lower-cased).") var ownerId: String
        @Argument(help: "The content checksum (unique per owner).") var checksum: String
        @Option(help: "The device's local id, when the asset also lives on the device.") var localId: String?
        @Option(help: "Creation time, seconds since 1970 (default: now).") var createdAt: Double?
        @Flag(
            name: .customLong("replace-identity"),
            help:
                "When the row matched by local id or owner+checksum has another remote or local id, overwrite it (default: refuse, exit 3)."
        )
        var replaceIdentity = false

        func run() async throws {
            guard !remoteId.isEmpty, !ownerId.isEmpty, !checksum.isEmpty else {
                throw WalletError.invalidInput("remote id, owner id and checksum must not be empty")
            }
            let app = try AppDataCLI.open(storeOptions)
            defer { try? app.close() }
            let created = createdAt.map { Date(timeIntervalSince1970: $0) } ?? Date()
            let asset = try await app.context.assets.put(
                Asset(
                    remoteId: remoteId, localId: localId, ownerId: ownerId, checksum: checksum,
                    fileName: remoteId, fileCreatedAt: created),
                onConflict: replaceIdentity ? .replaceIdentity : .refuse)
            print(
                JSONValue.object([
                    ("id", .number(String(asset.id ?? 0))), ("remoteId", .string(remoteId)),
                    ("ownerId", .string(asset.ownerId)),
                ]).jsonText)
        }
    }
}
