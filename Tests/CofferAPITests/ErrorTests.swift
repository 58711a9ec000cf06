// Every module's one error type reads the same through `localizedDescription` as through its
// description, so an app can show any Coffer error in an alert.

import Coffer
import Foundation
import Testing

@Suite("Readable errors")
struct ErrorTests {
    @Test(
        "each module's error gives its description as localizedDescription",
        arguments: [
            WalletError.closed as any Error, CryptoError.authenticationFailed, StateMachineError.unknownHandle(7),
            DeniableError.queueFull, SettingsError.closed, DatabaseStoreError.closed, MediaCacheError.closed,
            SecureStorageError.closed, ContainerError.closed,
        ])
    func localized(_ error: any Error) {
        let described = "\(error)"
        #expect(error.localizedDescription == described)
        #expect(!described.contains("error 0") && !described.contains("operation couldn"))
    }

    @Test("JSONParseError reads as a LocalizedError: what was wrong and what to do")
    func jsonParseError() {
        do {
            _ = try JSONValue.parse("{\"a\": ")
            Issue.record("an unfinished object parsed")
        } catch {
            let text = (error as any Error).localizedDescription
            #expect(text.contains("not valid") && text.contains("offset"))
            #expect(!text.contains("operation couldn"))
        }
    }
}
