import CofferCrypto
import Foundation
import GRDB
import Testing

@testable import CofferWallet

@Suite("Registering the records' version digest functions")
struct DigestFunctionTests {
    @Test("SQLite refusing the digest function (a statement of the connection is running) is a storage error, not ignored")
    func refusalThrows() throws {
        let queue = try DatabaseQueue()
        let keys = WalletKeys(master: SecretKey.random())
        try queue.inDatabase { db in
            try DigestFunction.register(on: db, keys: keys)
            // SQLite refuses to replace a function while a statement of its connection runs (SQLITE_BUSY).
            let running = try Int.fetchCursor(db, sql: "SELECT 1 UNION ALL SELECT 2")
            #expect(try running.next() == 1)
            do {
                try DigestFunction.register(on: db, keys: keys)
                Issue.record("registering over a running statement did not throw")
            } catch let WalletError.storage(message, _) {
                #expect(message.contains("SQLite refused"), "\(message)")
            }
            #expect(try running.next() == 2)
        }
    }
}
