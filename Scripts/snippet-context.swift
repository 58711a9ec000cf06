// The names the documentation's Swift blocks use without declaring them, one declaration each with
// the type the docs mean, for Scripts/check-snippets.py. Computed, so nothing runs: the blocks are
// only type-checked. A block that declares one of these names itself shadows it.

import Coffer
import Foundation

// Folders and files.
var url: URL { fatalError() }
var store: URL { fatalError() }
var container: URL { fatalError() }
var folder: URL { fatalError() }
var walletURL: URL { fatalError() }

// Opened stores.
var app: CofferContainer { fatalError() }
var db: AppDatabase { fatalError() }
var wallet: Wallet { fatalError() }

// Keys and secrets the app holds.
var key: Data { fatalError() }
var coffersKey: Data { fatalError() }
var keyFromKeychain: Data { fatalError() }
var indyKey: String { fatalError() }
var askarKey: String { fatalError() }
var token: String { fatalError() }
var p12: Data { fatalError() }
var pw: String { fatalError() }
func loadOrCreateWalletKey() throws -> Data { fatalError() }

// Data.
var json: String { fatalError() }
var message: Data { fatalError() }
var secret: Data { fatalError() }
var incoming: Data { fatalError() }
var theirX25519Key: String { fatalError() }
var myX25519Key: String { fatalError() }
var jpeg: Data { fatalError() }
var id: String { fatalError() }
var assetId: String { fatalError() }
var albumId: String { fatalError() }
var userId: String { fatalError() }
var journalistId: String { fatalError() }
var typed: String { fatalError() }
var brand: Brand { fatalError() }
var assets: [Asset] { fatalError() }
var offer: CredentialOffer { fatalError() }
var issued: IssuedCredential { fatalError() }

// What the app provides.
var myAgent: any AriesProtocol { fatalError() }
var agent: any AriesProtocol { fatalError() }
var photos: any LocalMediaLibrary { fatalError() }
var bundledAnchor: TrustAnchor { fatalError() }
var anchor: TrustAnchor { fatalError() }
var myKeyFetcher: any PublicKeySource { fatalError() }
var keyFetcher: any PublicKeySource { fatalError() }
var keys: any PublicKeySource { fatalError() }
var myDeadDropFetcher: any DeadDropSource { fatalError() }
var myPoster: any DeniableTransport { fatalError() }

/// The app's server API.
protocol SnippetServer: Sendable {
    func preview(_ id: String) async throws -> Data
    func thumbnail(_ id: String) async throws -> Data
}
var api: any SnippetServer { fatalError() }
func post(_ item: Data) async throws {}

// What the app does with values.
func apply<T>(_ value: T) {}
func render<T>(_ value: T) {}
