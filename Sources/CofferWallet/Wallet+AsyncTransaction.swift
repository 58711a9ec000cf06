// Transactions and sessions whose bodies may `await`: the same one transaction as the
// synchronous forms, with each call of the body run on the transaction's connection thread.

import Foundation

extension Wallet {
    /// Runs `body` in one write transaction: everything it does commits together when it
    /// returns, or, when it throws, nothing does. Unlike the synchronous `transaction(_:)`'s body, this
    /// one may `await` between its calls (other work of the app, a network reply); the
    /// transaction, and with it every other write to the wallet, waits meanwhile, so keep what
    /// it awaits short.
    ///
    /// Inside `body`, use only `tx`: a call of the wallet itself (`wallet.add`, …) throws
    /// ``WalletError/invalidInput(_:)`` rather than waiting for this transaction to end.
    /// `tx` is valid only until `body` returns.
    ///
    /// ```swift
    /// try await wallet.transaction { (tx: AsyncWalletTransaction) in
    ///     let offer = try await tx.get(type: "offer", id: id)
    ///     let signed = try await signer.sign(offer.value ?? "")
    ///     try await tx.add(type: "signed", id: id, value: signed)
    /// }
    /// ```
    public func transaction<T: Sendable>(_ body: @escaping @Sendable (AsyncWalletTransaction) async throws -> T) async throws -> T {
        let wallet = ObjectIdentifier(self)
        return try await gated { keys in
            try await servedWrite(keys: keys) { mailbox in
                try await Wallet.$asyncTransactionOf.withValue(wallet) { try await body(AsyncWalletTransaction(mailbox: mailbox)) }
            }
        }
    }

    /// Runs `body` in one read transaction: every read in it sees one consistent state, whatever
    /// commits meanwhile, and `body` may `await` between its reads. It holds one of the wallet's
    /// reader connections until it returns. `reader` is valid only until `body` returns.
    public func session<T: Sendable>(_ body: @escaping @Sendable (AsyncWalletReader) async throws -> T) async throws -> T {
        try await gated { keys in
            try await servedRead(keys: keys) { mailbox in try await body(AsyncWalletReader(mailbox: mailbox)) }
        }
    }

    /// The wallet whose async transaction body the current task runs, if any.
    @TaskLocal static var asyncTransactionOf: ObjectIdentifier?

    /// Refuses a call of this wallet from inside its own async transaction's body, which would
    /// wait for that transaction forever.
    func refuseInsideAsyncTransaction() throws(WalletError) {
        if Self.asyncTransactionOf == ObjectIdentifier(self) {
            throw .invalidInput(
                "a wallet call was made inside one of its own transactions' bodies; use the transaction's calls (tx.add, tx.get, …) there")
        }
    }
}

/// Writes and reads inside one `Wallet.transaction(_:)` whose body may
/// `await`: all commit together or not at all, and each call is atomic on its own too (as
/// ``WalletTransaction``'s). Valid only inside the closure; a call after it returned throws
/// ``WalletError/invalidInput(_:)``.
public struct AsyncWalletTransaction: Sendable {
    let mailbox: ConnectionMailbox<WalletTransaction>

    /// Adds a record; see ``Wallet/add(type:id:value:tags:expiresAt:)``.
    public func add(type: String, id: String, value: String, tags: WalletTags = [:], expiresAt: Date? = nil) async throws {
        try await mailbox.perform { try $0.add(type: type, id: id, value: value, tags: tags, expiresAt: expiresAt) }
    }

    /// Replaces a record's value, keeping its tags.
    public func update(type: String, id: String, value: String) async throws {
        try await mailbox.perform { try $0.update(type: type, id: id, value: value) }
    }

    /// Replaces value and the whole tag set.
    public func replace(type: String, id: String, value: String, tags: WalletTags) async throws {
        try await mailbox.perform { try $0.replace(type: type, id: id, value: value, tags: tags) }
    }

    /// Deletes a record.
    public func delete(type: String, id: String) async throws {
        try await mailbox.perform { try $0.delete(type: type, id: id) }
    }

    /// Merges tags into a record.
    public func addTags(type: String, id: String, tags: WalletTags) async throws {
        try await mailbox.perform { try $0.addTags(type: type, id: id, tags: tags) }
    }

    /// Replaces a record's tag set.
    public func updateTags(type: String, id: String, tags: WalletTags) async throws {
        try await mailbox.perform { try $0.updateTags(type: type, id: id, tags: tags) }
    }

    /// Deletes named tags from a record.
    public func deleteTags(type: String, id: String, names: [String]) async throws {
        try await mailbox.perform { try $0.deleteTags(type: type, id: id, names: names) }
    }

    /// Deletes every matching record; returns the count (see
    /// ``WalletTransaction/removeAll(type:matching:)``: a failure part way leaves the records
    /// removed before it removed in this transaction).
    @discardableResult
    public func removeAll(type: String, matching query: WalletQuery = .all) async throws -> Int {
        try await mailbox.perform { try $0.removeAll(type: type, matching: query) }
    }

    /// Reads a record as this transaction sees it (its own writes included), or `nil`.
    public func fetch(type: String, id: String, options: RecordOptions = RecordOptions()) async throws -> WalletRecord? {
        try await mailbox.perform { try $0.reader.fetch(type: type, id: id, options: options) }
    }

    /// Reads a record or throws ``WalletError/notFound(type:id:)``.
    public func get(type: String, id: String, options: RecordOptions = RecordOptions()) async throws -> WalletRecord {
        try await mailbox.perform { try $0.reader.get(type: type, id: id, options: options) }
    }

    /// Counts matching records as this transaction sees them.
    public func count(type: String, matching query: WalletQuery = .all) async throws -> Int {
        try await mailbox.perform { try $0.reader.count(type: type, matching: query) }
    }

    /// Every matching record as this transaction sees them; see ``WalletReader/fetchAll(type:matching:options:offset:limit:newestFirst:)``.
    public func fetchAll(
        type: String, matching query: WalletQuery = .all, options: RecordOptions = RecordOptions(),
        offset: Int = 0, limit: Int? = nil, newestFirst: Bool = false
    ) async throws -> [WalletRecord] {
        try await mailbox.perform {
            try $0.reader.fetchAll(type: type, matching: query, options: options, offset: offset, limit: limit, newestFirst: newestFirst)
        }
    }
}

/// Reads inside one `Wallet.session(_:)` whose body may `await`: every read
/// sees the same state. Valid only inside the closure; a call after it returned throws
/// ``WalletError/invalidInput(_:)``.
public struct AsyncWalletReader: Sendable {
    let mailbox: ConnectionMailbox<WalletReader>

    /// Reads a record, or `nil`.
    public func fetch(type: String, id: String, options: RecordOptions = RecordOptions()) async throws -> WalletRecord? {
        try await mailbox.perform { try $0.fetch(type: type, id: id, options: options) }
    }

    /// Reads a record or throws ``WalletError/notFound(type:id:)``.
    public func get(type: String, id: String, options: RecordOptions = RecordOptions()) async throws -> WalletRecord {
        try await mailbox.perform { try $0.get(type: type, id: id, options: options) }
    }

    /// Counts matching records.
    public func count(type: String, matching query: WalletQuery = .all) async throws -> Int {
        try await mailbox.perform { try $0.count(type: type, matching: query) }
    }

    /// One search page; see ``WalletReader/search(type:matching:options:count:)``.
    public func search(type: String, matching query: WalletQuery, options: SearchOptions = SearchOptions(), count: Int? = nil)
        async throws -> SearchPage
    {
        try await mailbox.perform { try $0.search(type: type, matching: query, options: options, count: count) }
    }

    /// Every matching record; see ``WalletReader/fetchAll(type:matching:options:offset:limit:newestFirst:)``.
    public func fetchAll(
        type: String, matching query: WalletQuery = .all, options: RecordOptions = RecordOptions(),
        offset: Int = 0, limit: Int? = nil, newestFirst: Bool = false
    ) async throws -> [WalletRecord] {
        try await mailbox.perform {
            try $0.fetchAll(type: type, matching: query, options: options, offset: offset, limit: limit, newestFirst: newestFirst)
        }
    }
}
