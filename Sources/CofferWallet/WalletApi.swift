// The seed's Wallet API, exactly: its names and string arguments, as async functions and in the
// completion-handler form of the iOS signatures. Bridges (React Native, Flutter) call this layer.
// Written once over any wallet with search handles (`SearchHandleWallet`): a wallet file, or a
// PostgreSQL profile in a build with the trait `PostgreSQL`.

import Foundation

/// The Mobile SDK's `WalletApi` over a ``Wallet`` (a wallet file on SQLite): JSON strings in and
/// out, as the seed documents. It is ``RecordWalletApi`` over a ``Wallet``: `WalletApi(wallet:)`
/// and its ``RecordWalletApi/wallet`` (a ``Wallet``) are as they always were.
public typealias WalletApi = RecordWalletApi<Wallet>

#if PostgreSQL
/// The Mobile SDK's `WalletApi` over a `PostgresWallet` (a profile in a PostgreSQL database):
/// the same calls, JSON, errors and search handles as ``WalletApi`` over a wallet file.
public typealias PostgresWalletApi = RecordWalletApi<PostgresWallet>
#endif

/// The Mobile SDK's `WalletApi` over a wallet of either backend: JSON strings in and out, as the
/// seed documents. ``WalletApi`` is this type over a ``Wallet`` (a wallet file); in a build with
/// the package trait `PostgreSQL`, `PostgresWalletApi` is this type over a `PostgresWallet` (a
/// profile in a PostgreSQL database). Both give the same JSON for the same records, throw the
/// same ``WalletError``s, and keep search handles alike: integer handles from ``openSearch(_:_:_:)``
/// paged by ``searchNextRecords(_:_:)`` until ``closeSearch(_:)``; a closed or unknown handle is
/// ``WalletError/invalidHandle(_:)``, and closing the wallet ends every handle (see
/// ``SearchHandleWallet``). On PostgreSQL a handle holds a sealed keyset position, never a
/// connection: records other processes write meanwhile never make its pages repeat or skip one.
///
/// Every call exists twice: `async throws`, and with a completion handler called once with the
/// error or the result (`(Error?) -> Void`, `(Error?, String?) -> Void`, `(Error?, Int) -> Void`).
/// The tag and search calls also exist under the seed's iOS selector names
/// (`walletAddRecordTags:recordId:recordTags:completion:`, `walletOpenSearch:query:options:completion:`,
/// …), beside the Android names; both forms do the same thing.
///
/// Every completion handler is called **exactly once, on ``callbackQueue``**: the main queue by
/// default on Apple platforms, as the SDK's iOS callbacks are, and a global queue elsewhere (where
/// a command-line process may not run a main loop). The handlers are `@Sendable` and not
/// `@MainActor` on purpose: the queue is the caller's choice (a bridge passes its own), so the type
/// cannot promise the main actor. For Swift 6 code:
///
/// - code that can `await` uses the async forms, which keep the caller's isolation;
/// - a handler on the default main queue that touches main-actor state wraps it in
///   `MainActor.assumeIsolated { … }` (checked: it traps on any other queue instead of racing);
/// - a handler on another queue hops itself, `Task { @MainActor in … }`.
///
/// See docs/concurrency.md ("The seed's `WalletApi`") and docs/server.md for a server.
public final class RecordWalletApi<Backend: SearchHandleWallet>: Sendable {
    /// The wallet behind the API: a ``Wallet`` for ``WalletApi``, a `PostgresWallet` for
    /// `PostgresWalletApi`.
    public let wallet: Backend
    /// The queue every completion handler is called on.
    public let callbackQueue: DispatchQueue

    /// The default ``callbackQueue``: main on Apple platforms, a global queue elsewhere.
    public static var defaultCallbackQueue: DispatchQueue {
        #if canImport(Darwin)
        return .main
        #else
        return .global()
        #endif
    }

    /// The API over `wallet`, calling completion handlers on `callbackQueue`.
    public init(wallet: Backend, callbackQueue: DispatchQueue = RecordWalletApi.defaultCallbackQueue) {
        self.wallet = wallet
        self.callbackQueue = callbackQueue
    }

    // MARK: async

    /// Adds a record (`tagsJson`: optional tags object).
    public func addRecordWallet(_ recordType: String, _ recordId: String, _ recordValue: String, _ tagsJson: String? = nil) async throws {
        let tags = try tagsJson.map { try WalletTags(json: $0) } ?? WalletTags()
        try await wallet.add(type: recordType, id: recordId, value: recordValue, tags: tags, expiresAt: nil)
    }

    /// Replaces a record's value; its tags are kept.
    public func updateRecordWallet(_ recordType: String, _ recordId: String, _ recordValue: String) async throws {
        try await wallet.update(type: recordType, id: recordId, value: recordValue)
    }

    /// The record as JSON `{"id", "type"?, "value"?, "tags"?}`; `optionsJson` as in the seed
    /// (`retrieveType` false, `retrieveValue` true, `retrieveTags` true by default).
    public func getRecordWallet(_ recordType: String, _ recordId: String, _ optionsJson: String = "{}") async throws -> String {
        try await wallet.get(type: recordType, id: recordId, options: RecordOptions(json: optionsJson)).json
    }

    /// Deletes a record.
    public func deleteRecordWallet(_ recordType: String, _ recordId: String) async throws {
        try await wallet.delete(type: recordType, id: recordId)
    }

    /// Adds tags (`{"Tag1": "value1", …}`), overwriting those with the same names.
    public func addRecordTags(_ recordType: String, _ recordId: String, _ recordTags: String) async throws {
        try await wallet.addTags(type: recordType, id: recordId, tags: WalletTags(json: recordTags))
    }

    /// Replaces all tags with `recordTags`.
    public func updateRecordTags(_ recordType: String, _ recordId: String, _ recordTags: String) async throws {
        try await wallet.updateTags(type: recordType, id: recordId, tags: WalletTags(json: recordTags))
    }

    /// Deletes the tags named in `recordTags`, a JSON array of names (`["Tag1", "Tag2"]`).
    public func deleteRecordTags(_ recordType: String, _ recordId: String, _ recordTags: String) async throws {
        let parsed: JSONValue
        do { parsed = try JSONValue.parse(recordTags) } catch { throw WalletError.invalidInput("recordTags: \(error.message)") }
        guard case .array(let items) = parsed else {
            throw WalletError.invalidInput("recordTags must be a JSON array of tag names, got \(parsed.kindName)")
        }
        let names = try items.map { item -> String in
            guard case .string(let s) = item else {
                throw WalletError.invalidInput("recordTags: every name must be a string, found \(item.kindName)")
            }
            return s
        }
        try await wallet.deleteTags(type: recordType, id: recordId, names: names)
    }

    /// Opens a search: `query` in WQL, `options` as the seed's search options. Returns the handle.
    public func openSearch(_ recordType: String, _ query: String, _ options: String = "{}") async throws -> Int {
        try await wallet.openSearch(type: recordType, queryJSON: query, optionsJSON: options)
    }

    /// The next `count` records: `{"totalCount"?: n, "records"?: [{id, type?, value?, tags?}]}`.
    public func searchNextRecords(_ searchHandle: Int, _ count: Int) async throws -> String {
        try await wallet.searchNext(searchHandle, count: count).json
    }

    /// Closes a search.
    public func closeSearch(_ searchHandle: Int) async throws {
        try await wallet.closeSearch(searchHandle)
    }

    // MARK: completion handlers (the iOS signatures)

    private func run(_ completion: @escaping @Sendable (Error?) -> Void, _ body: @escaping @Sendable () async throws -> Void) {
        let queue = callbackQueue
        Task {
            do {
                try await body()
                queue.async { completion(nil) }
            } catch { queue.async { completion(error) } }
        }
    }

    private func run(_ completion: @escaping @Sendable (Error?, String?) -> Void, _ body: @escaping @Sendable () async throws -> String) {
        let queue = callbackQueue
        Task {
            do {
                let result = try await body()
                queue.async { completion(nil, result) }
            } catch { queue.async { completion(error, nil) } }
        }
    }

    private func run(_ completion: @escaping @Sendable (Error?, Int) -> Void, _ body: @escaping @Sendable () async throws -> Int) {
        let queue = callbackQueue
        Task {
            do {
                let result = try await body()
                queue.async { completion(nil, result) }
            } catch { queue.async { completion(error, 0) } }
        }
    }

    /// ``addRecordWallet(_:_:_:_:)`` with a completion handler.
    public func addRecordWallet(
        _ recordType: String, recordId: String, recordValue: String, completion: @escaping @Sendable (Error?) -> Void
    ) {
        run(completion) { try await self.addRecordWallet(recordType, recordId, recordValue) }
    }

    /// ``updateRecordWallet(_:_:_:)`` with a completion handler.
    public func updateRecordWallet(
        _ recordType: String, withRecordId recordId: String, withRecordValue recordValue: String,
        withCompletion completion: @escaping @Sendable (Error?) -> Void
    ) {
        run(completion) { try await self.updateRecordWallet(recordType, recordId, recordValue) }
    }

    /// ``getRecordWallet(_:_:_:)`` with a completion handler.
    public func getRecordWallet(
        _ recordType: String, recordId: String, optionsJson: String = "{}",
        completion: @escaping @Sendable (Error?, String?) -> Void
    ) {
        run(completion) { try await self.getRecordWallet(recordType, recordId, optionsJson) }
    }

    /// ``deleteRecordWallet(_:_:)`` with a completion handler.
    public func deleteRecordWallet(_ recordType: String, recordId: String, completion: @escaping @Sendable (Error?) -> Void) {
        run(completion) { try await self.deleteRecordWallet(recordType, recordId) }
    }

    /// ``addRecordTags(_:_:_:)`` with a completion handler.
    public func addRecordTags(_ recordType: String, recordId: String, recordTags: String, completion: @escaping @Sendable (Error?) -> Void)
    {
        run(completion) { try await self.addRecordTags(recordType, recordId, recordTags) }
    }

    /// ``updateRecordTags(_:_:_:)`` with a completion handler.
    public func updateRecordTags(
        _ recordType: String, recordId: String, recordTags: String, completion: @escaping @Sendable (Error?) -> Void
    ) {
        run(completion) { try await self.updateRecordTags(recordType, recordId, recordTags) }
    }

    /// ``deleteRecordTags(_:_:_:)`` with a completion handler.
    public func deleteRecordTags(
        _ recordType: String, recordId: String, recordTags: String, completion: @escaping @Sendable (Error?) -> Void
    ) {
        run(completion) { try await self.deleteRecordTags(recordType, recordId, recordTags) }
    }

    /// ``openSearch(_:_:_:)`` with a completion handler (`(Error?, Int)`; the handle is 0 on error).
    public func openSearch(
        _ recordType: String, query: String, options: String = "{}", completion: @escaping @Sendable (Error?, Int) -> Void
    ) {
        run(completion) { try await self.openSearch(recordType, query, options) }
    }

    /// ``searchNextRecords(_:_:)`` with a completion handler.
    public func searchNextRecords(_ searchHandle: Int, count: Int, completion: @escaping @Sendable (Error?, String?) -> Void) {
        run(completion) { try await self.searchNextRecords(searchHandle, count) }
    }

    /// ``closeSearch(_:)`` with a completion handler.
    public func closeSearch(_ searchHandle: Int, completion: @escaping @Sendable (Error?) -> Void) {
        run(completion) { try await self.closeSearch(searchHandle) }
    }

    // MARK: the seed's iOS names (completion handlers)

    /// The seed's iOS `walletAddRecordTags:recordId:recordTags:completion:`: adds tags
    /// (`{"Tag1": "value1", …}`), overwriting those with the same names. Same as ``addRecordTags(_:_:_:)``.
    public func walletAddRecordTags(
        _ recordType: String, recordId: String, recordTags: String,
        completion: @escaping @Sendable (Error?) -> Void
    ) {
        run(completion) { try await self.addRecordTags(recordType, recordId, recordTags) }
    }

    /// The seed's iOS `walletUpdateRecordTags:recordId:recordTags:completion:`: replaces all tags
    /// with `recordTags`. Same as ``updateRecordTags(_:_:_:)``.
    public func walletUpdateRecordTags(
        _ recordType: String, recordId: String, recordTags: String,
        completion: @escaping @Sendable (Error?) -> Void
    ) {
        run(completion) { try await self.updateRecordTags(recordType, recordId, recordTags) }
    }

    /// The seed's iOS `walletDeleteRecordTags:recordId:recordTags:completion:`: deletes the tags
    /// named in `recordTags`, a JSON array (`["Tag1", "Tag2"]`). Same as ``deleteRecordTags(_:_:_:)``.
    public func walletDeleteRecordTags(
        _ recordType: String, recordId: String, recordTags: String,
        completion: @escaping @Sendable (Error?) -> Void
    ) {
        run(completion) { try await self.deleteRecordTags(recordType, recordId, recordTags) }
    }

    /// The seed's iOS `walletOpenSearch:query:options:completion:`: opens a search over `type`
    /// (WQL `query`, the seed's search `options`); the handle is 0 on error. Same as ``openSearch(_:_:_:)``.
    public func walletOpenSearch(
        _ type: String, query: String, options: String,
        completion: @escaping @Sendable (Error?, Int) -> Void
    ) {
        run(completion) { try await self.openSearch(type, query, options) }
    }

    /// The seed's iOS `walletSearchNextRecords:count:completion:`: the next `count` records as
    /// `{"totalCount"?: n, "records"?: […]}`. Same as ``searchNextRecords(_:_:)``.
    public func walletSearchNextRecords(
        _ searchHandle: Int, count: Int,
        completion: @escaping @Sendable (Error?, String?) -> Void
    ) {
        run(completion) { try await self.searchNextRecords(searchHandle, count) }
    }

    /// The seed's iOS `walletCloseSearch:completion:`: closes a search. Same as ``closeSearch(_:)``.
    public func walletCloseSearch(_ searchHandle: Int, completion: @escaping @Sendable (Error?) -> Void) {
        run(completion) { try await self.closeSearch(searchHandle) }
    }
}
