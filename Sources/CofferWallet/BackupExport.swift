// The backup export, written once over the storage seam: both backends' `exportBackup` run it
// in one read transaction of the profile (SQLite adds its bulk-read cache and its first-format
// type names around it). It walks the profile a page at a time in row order and writes the
// backup format (BackupFormat) batch by batch, so memory stays flat however large the profile is.

import CofferCrypto
import CofferSync
import Foundation

enum BackupExport {
    /// Items read at a time.
    static let batch = 500

    /// Writes the backup of every record of `tx`'s profile (live or expired) into `file`: `start`
    /// (the file's clear head: magic, version, KDF costs, salt, the stream's header), then, sealed
    /// by `writer`, the record count, the records in row order in batches, and the final message.
    /// A record's value is read as bytes, never into a `String`, when its type is reserved; a
    /// record sealed without its type (the first box format) takes it from `names` (blind type
    /// column to type). Returns the number of records written.
    /// - Throws: ``WalletError/corrupted(_:)`` for a row that does not open or holds columns of the
    ///   wrong kind, ``WalletError/invalidInput(_:)`` for a first-format record `names` does not name.
    static func write<T: WalletStorageTransaction>(
        _ tx: T, keys: WalletKeys, names: [Int64: String], start: Data, writer: SecretStreamWriter, file: DurableFileWriter,
        progress: (@Sendable (BackupProgress) -> Void)?
    ) async throws -> Int {
        try file.write(start)
        let total = try await tx.itemCount()
        try Wallet.writeMessage(
            writer.push(Data(JSONValue.object([("format", .number("1")), ("records", .number(String(total)))]).jsonText.utf8)), to: file)
        var batch = BackupBatch()
        var done = 0
        func flush() throws {
            guard batch.count > 0 else { return }
            try Wallet.writeMessage(batch.seal(writer), to: file)
            done += batch.count
            batch.reset()
            progress?(BackupProgress(done: done, total: total))
        }
        var after: Int64 = 0
        while true {
            let rows = try await tx.items(after: after, limit: Self.batch)
            guard let last = rows.last else { break }
            after = last.rowid
            for walked in rows {
                guard case .item(let item) = walked else {
                    throw WalletError.corrupted(
                        "row \(walked.rowid) of \(tx.tables.items) holds columns of the wrong kind (the wallet was altered)")
                }
                // A reserved secret's value goes from guarded memory into the wiped batch, never
                // through a `String`.
                let contents = try RecordCodec.open(
                    item.sealed, typeBlind: BlindColumn.blind(item.type), idBlind: item.name, expiry: item.expiry, keys: keys,
                    value: .keepingSecrets(of: names[item.type]))
                guard let type = contents.type ?? names[item.type] else {
                    throw WalletError.invalidInput(
                        "record \(WalletError.quote(contents.id)) is in the first box format, which did not keep its type, and no other record tells it; name its type (firstFormatTypes, or --first-format-type in the CLI) or update the record once"
                    )
                }
                batch.append(type: type, contents: contents, expiry: item.expiry)
                if batch.count == BackupFormat.batch || batch.byteCount >= BackupFormat.batchBytes { try flush() }
            }
        }
        try flush()
        try Wallet.writeMessage(writer.push(Data(), final: true), to: file)
        progress?(BackupProgress(done: done, total: total))
        return done
    }
}
