// The integrity check, written once over the storage seam: both backends' `checkIntegrity`
// run it in one read transaction of the profile (SQLite adds its schema and file checks around
// it). It walks the profile a page at a time in row order, so memory stays flat however large
// the profile is, and changes nothing.

import Foundation

enum IntegrityCheck {
    /// Items read at a time (and their tag rows with them).
    static let batch = 500

    /// Checks every row of `tx`'s profile under `keys` and adds what is wrong to `report`: every
    /// record (live or expired) opens, sits under the blind type and id of what is sealed in it,
    /// and its tag rows are exactly those its sealed tags give (both ways); a plaintext tag
    /// holding several values is marked so; no tag row belongs to no record; no two rows share a
    /// type and id; and, where the backend keeps one (`digest`), the records match the version
    /// digest stored under the key. Sets the report's record and tag-row counts.
    /// - Parameter progress: called with records checked so far and the total, every thousand
    ///   records and once at the end.
    static func run<T: WalletStorageTransaction>(
        _ tx: T, keys: WalletKeys, digest keeping: DigestKeeping, into report: inout IntegrityReport,
        progress: (@Sendable (BackupProgress) -> Void)?
    ) async throws {
        report.tagRows = try await tx.tagRowCount()
        let total = try await tx.itemCount()
        var multiValued = [Int64: Bool]()
        var digest = [UInt8](repeating: 0, count: DigestState.accumulatorCount)
        var done = 0
        var after: Int64 = 0
        while true {
            let rows = try await tx.items(after: after, limit: batch)
            guard let last = rows.last else { break }
            after = last.rowid
            let stored = try await tx.tags(items: rows.map(\.rowid))
            for walked in rows {
                done += 1
                report.records += 1
                if done % 1_000 == 0 { progress?(BackupProgress(done: done, total: total)) }
                guard case .item(let item) = walked else {
                    report.add("record", type: nil, id: nil, "row \(walked.rowid) has columns of the wrong kind")
                    continue
                }
                if keeping == .backend {
                    let rowDigest = keys.rowDigestV4(
                        rowid: item.rowid, type: item.type, expiry: item.expiry, idBlind: item.name, sealed: item.sealed)
                    for i in 0..<DigestState.accumulatorCount { digest[i] ^= rowDigest[i] }
                }
                let typeBlind = BlindColumn.blind(item.type)
                let contents: RecordCodec.Contents
                // The check reads no value: none, a secret's above all, is made into a `String`.
                do {
                    contents = try RecordCodec.open(
                        item.sealed, typeBlind: typeBlind, idBlind: item.name, expiry: item.expiry, keys: keys, value: .skipped)
                } catch {
                    report.add("record", type: nil, id: nil, "row \(item.rowid) does not open: \(error)")
                    continue
                }
                let type = contents.type
                if let type, keys.typeBlind(type) != typeBlind || keys.idBlind(typeBlind: typeBlind, id: contents.id) != item.name {
                    report.add(
                        "record", type: type, id: contents.id, "row \(item.rowid)'s blind type or id does not match its sealed type and id")
                }
                // The index rows the sealed tags call for, against the rows that are there.
                let (wanted, multi) = RecordStore.sealedTagRows(keys: keys, typeBlind: typeBlind, tags: contents.tags)
                let expected = Set(wanted.map(tx.storedForm))
                var found = Set<StoredTag>()
                for row in stored[item.rowid] ?? [] {
                    guard let row else {
                        report.add("extraTagRow", type: type, id: contents.id, "a tag row's name is not a blind index")
                        continue
                    }
                    found.insert(row)
                }
                for _ in expected.subtracting(found) {
                    report.add(
                        "missingTagRow", type: type, id: contents.id, "a sealed tag has no row in the tag index (searches skip this record)"
                    )
                }
                for _ in found.subtracting(expected) {
                    report.add(
                        "extraTagRow", type: type, id: contents.id, "the tag index holds a row that is not among the record's sealed tags")
                }
                for name in multi {
                    let marked: Bool
                    if let known = multiValued[name] {
                        marked = known
                    } else {
                        marked = try await tx.isMultiValued(name: name)
                        multiValued[name] = marked
                    }
                    if !marked {
                        report.add(
                            "multiValuedUnmarked", type: type, id: contents.id,
                            "a plaintext tag holds several values but is not marked multi-valued")
                    }
                }
            }
        }
        if keeping == .backend {
            let stored = try await tx.digest()
            let state = stored.flatMap { DigestState.open($0, keys: keys) }
            if stored == nil {
                report.add("digest", type: nil, id: nil, "the records' version digest is missing")
            } else if state == nil {
                report.add(
                    "digest", type: nil, id: nil,
                    "the stored records' version digest does not verify under the wallet key: it was written without the key")
            } else if state?.accumulator != digest {
                report.add(
                    "digest", type: nil, id: nil,
                    "the records differ from the versions this wallet last wrote: a record was rolled back to an older version, re-inserted after its deletion, or removed with its tag rows"
                )
            }
        }
        for duplicate in try await tx.duplicateItems(limit: IntegrityReport.maxListedProblems) {
            let named = try await recordName(tx, rowid: duplicate.rowid, keys: keys)
            report.add(
                "duplicate", type: named?.type, id: named?.id,
                "\(duplicate.count) rows hold the same type and id (the unique index was removed or replaced)")
        }
        let orphans = try await tx.orphanTagRowCount()
        if orphans > 0 { report.add("orphanTagRow", type: nil, id: nil, "\(orphans) tag rows belong to no record") }
        progress?(BackupProgress(done: done, total: total))
    }

    /// The type and id sealed in the record at `rowid`, when it opens.
    static func recordName<T: WalletStorageTransaction>(_ tx: T, rowid: Int64, keys: WalletKeys) async throws -> (
        type: String?, id: String
    )? {
        guard let item = try await tx.item(rowid: rowid),
            let contents = try? RecordCodec.open(
                item.sealed, typeBlind: BlindColumn.blind(item.type), idBlind: item.name, expiry: item.expiry, keys: keys, value: .skipped)
        else { return nil }
        return (contents.type, contents.id)
    }
}
