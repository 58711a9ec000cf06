// An asset put never erases an id it was not given: every combination of a stored row's ids and an
// incoming row's given, absent or different ids, and a server sync whose rows carry no device ids.

import CofferDatabase
import Foundation
import Testing

@Suite("Asset upsert keeps what it was not given")
struct UpsertIdentityTests {
    static let t0 = Date(timeIntervalSince1970: 1_600_000_000)

    /// One combination: the row stored first, the row put second, and the outcome.
    struct Case: Sendable, CustomTestStringConvertible {
        let name: String
        /// Stored row's ids (owner "o", checksum "c").
        let stored: (remote: String?, local: String?)
        /// Incoming row's ids and checksum ("c" matches the stored row by owner + checksum).
        let given: (remote: String?, local: String?, checksum: String)
        let onConflict: AssetIdentityConflict
        /// The one row's ids afterwards, or the key of the refusal (nothing written).
        let expected: Result<(remote: String?, local: String?), RefusedOn>
        var testDescription: String { name }
    }

    struct RefusedOn: Error, Equatable { let key: String }

    static let cases: [Case] = [
        // Matched by remote id.
        Case(
            name: "same remote + same local: both kept", stored: ("r1", "l1"), given: ("r1", "l1", "c"), onConflict: .refuse,
            expected: .success(("r1", "l1"))),
        Case(
            name: "same remote + absent local: local kept", stored: ("r1", "l1"), given: ("r1", nil, "c"), onConflict: .refuse,
            expected: .success(("r1", "l1"))),
        Case(
            name: "same remote + absent local, other checksum: local kept", stored: ("r1", "l1"), given: ("r1", nil, "c2"),
            onConflict: .refuse, expected: .success(("r1", "l1"))),
        Case(
            name: "same remote + different local: device re-link taken", stored: ("r1", "l1"), given: ("r1", "l2", "c"),
            onConflict: .refuse, expected: .success(("r1", "l2"))),
        Case(
            name: "same remote + new local on a row without one: filled in", stored: ("r1", nil), given: ("r1", "l1", "c"),
            onConflict: .refuse, expected: .success(("r1", "l1"))),
        // Matched by local id.
        Case(
            name: "absent remote + same local: remote kept", stored: ("r1", "l1"), given: (nil, "l1", "c"), onConflict: .refuse,
            expected: .success(("r1", "l1"))),
        Case(
            name: "absent remote + same local, other checksum: remote kept", stored: ("r1", "l1"), given: (nil, "l1", "c2"),
            onConflict: .refuse, expected: .success(("r1", "l1"))),
        Case(
            name: "new remote + same local on a row without one: filled in", stored: (nil, "l1"), given: ("r1", "l1", "c"),
            onConflict: .refuse, expected: .success(("r1", "l1"))),
        Case(
            name: "different remote + same local: refused", stored: ("r1", "l1"), given: ("r2", "l1", "c"), onConflict: .refuse,
            expected: .failure(RefusedOn(key: "localId"))),
        Case(
            name: "different remote + same local, replaceIdentity: remote replaced", stored: ("r1", "l1"), given: ("r2", "l1", "c"),
            onConflict: .replaceIdentity, expected: .success(("r2", "l1"))),
        // Matched by owner + checksum.
        Case(
            name: "neither id: both kept", stored: ("r1", "l1"), given: (nil, nil, "c"), onConflict: .refuse,
            expected: .success(("r1", "l1"))),
        Case(
            name: "neither id, replaceIdentity: both kept", stored: ("r1", "l1"), given: (nil, nil, "c"), onConflict: .replaceIdentity,
            expected: .success(("r1", "l1"))),
        Case(
            name: "neither id on a row with neither: none", stored: (nil, nil), given: (nil, nil, "c"), onConflict: .refuse,
            expected: .success((nil, nil))),
        Case(
            name: "new remote on a local-only row: filled in, local kept", stored: (nil, "l1"), given: ("r1", nil, "c"),
            onConflict: .refuse, expected: .success(("r1", "l1"))),
        Case(
            name: "new local on a remote-only row: filled in, remote kept", stored: ("r1", nil), given: (nil, "l1", "c"),
            onConflict: .refuse, expected: .success(("r1", "l1"))),
        Case(
            name: "different remote, absent local: refused", stored: ("r1", "l1"), given: ("r2", nil, "c"), onConflict: .refuse,
            expected: .failure(RefusedOn(key: "ownerId+checksum"))),
        Case(
            name: "absent remote, different local: refused", stored: ("r1", "l1"), given: (nil, "l2", "c"), onConflict: .refuse,
            expected: .failure(RefusedOn(key: "ownerId+checksum"))),
        Case(
            name: "different remote, absent local, replaceIdentity: remote replaced, local kept", stored: ("r1", "l1"),
            given: ("r2", nil, "c"), onConflict: .replaceIdentity, expected: .success(("r2", "l1"))),
        Case(
            name: "absent remote, different local, replaceIdentity: local replaced, remote kept", stored: ("r1", "l1"),
            given: (nil, "l2", "c"), onConflict: .replaceIdentity, expected: .success(("r1", "l2"))),
        Case(
            name: "both different, replaceIdentity: both replaced", stored: ("r1", "l1"), given: ("r2", "l2", "c"),
            onConflict: .replaceIdentity, expected: .success(("r2", "l2"))),
    ]

    static func asset(_ remote: String?, _ local: String?, checksum: String = "c", favorite: Bool = false) -> Asset {
        Asset(
            remoteId: remote, localId: local, ownerId: "o", checksum: checksum, fileName: "f.jpg", fileCreatedAt: t0,
            isFavorite: favorite)
    }

    @Test("a put keeps every id it was not given", arguments: cases)
    func combination(_ c: Case) throws {
        let app = try openApp()
        defer { try? app.close() }
        let assets = app.context.assets
        let stored = try assets.putBlocking(Self.asset(c.stored.remote, c.stored.local))
        let incoming = Self.asset(c.given.remote, c.given.local, checksum: c.given.checksum, favorite: true)
        switch c.expected {
        case .success(let ids):
            let returned = try assets.putBlocking(incoming, onConflict: c.onConflict)
            let rows = try assets.allForOwnerBlocking("o")
            #expect(rows.count == 1)
            let row = try #require(rows.first)
            #expect(row.id == stored.id)
            #expect(row.remoteId == ids.remote)
            #expect(row.localId == ids.local)
            #expect(row.isFavorite, "the rest of the row is updated")
            #expect(returned == row, "the returned asset is the stored row")
        case .failure(let refused):
            #expect(throws: DatabaseStoreError.uniqueViolation(key: refused.key, table: "assets")) {
                try assets.putBlocking(incoming, onConflict: c.onConflict)
            }
            #expect(try assets.allForOwnerBlocking("o") == [stored], "nothing written")
        }
    }

    @Test("a server sync (rows without device ids) keeps every local link, and cleanup still finds them")
    func serverSyncKeepsLocalLinks() throws {
        let app = try openApp()
        defer { try? app.close() }
        let assets = app.context.assets
        // The device's library, backed up: every asset has both ids.
        try assets.putAllBlocking((0..<50).map { Self.asset("r\($0)", "l\($0)", checksum: "c\($0)") })
        // The server's view, as its JSON gives it: remote ids only, some metadata changed.
        let fromServer = (0..<50).map { Self.asset("r\($0)", nil, checksum: "c\($0)", favorite: $0 % 2 == 0) }
        try assets.putAllBlocking(fromServer)
        let rows = try assets.allForOwnerBlocking("o")
        #expect(rows.count == 50)
        #expect(rows.allSatisfy { $0.localId == "l" + $0.remoteId!.dropFirst() })
        #expect(rows.filter(\.isFavorite).count == 25)
        let candidates = try AssetCleanup(database: app).candidatesBlocking(CleanupOptions(keepFavorites: false, cutoffDaysAgo: 0))
        #expect(candidates.count == 50)
    }

    @Test("clearLocalId is the explicit way to unlink a device id; the remote id stays")
    func clearLocalId() async throws {
        let app = try openApp()
        defer { try? app.close() }
        let assets = app.context.assets
        try await assets.put(Self.asset("r1", "l1"))
        #expect(try await assets.clearLocalId("l1"))
        #expect(try await assets.clearLocalId("l1") == false)
        let row = try #require(try await assets.findByRemoteId("r1"))
        #expect(row.localId == nil)
        // A later put without a local id has none to keep.
        try await assets.put(Self.asset("r1", nil))
        #expect(try await assets.findByRemoteId("r1")?.localId == nil)
        #expect(try await assets.clearRemoteId("r1"))
        #expect(try await assets.allForOwner("o").map(\.remoteId) == [nil])
        #expect(try await assets.count() == 1)
    }
}
