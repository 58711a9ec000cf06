// Wallet-held key use against libsodium's C calls with the key in memory: `wallet.sign` vs
// `crypto_sign_detached`, `wallet.openSealedBox` vs `crypto_box_seal_open` (target: C at most
// 1.5x faster).

import CSodium
import Coffer
import Foundation

enum HeldKeyBench {
    /// Rates (calls per second, best of `rounds`) and C/wallet ratios, in the bench's result form.
    static func run(wallet: Wallet, calls: Int, messageBytes: Int, rounds: Int = 3) async throws -> [(String, Double)] {
        let message = SecureRandom.bytes(messageBytes)
        let signer = try await wallet.createKey(.ed25519)
        let recipient = try await wallet.createKey(.x25519)
        let box = try Wallet.sealedBox(message, to: recipient, recipientKind: .x25519)

        // The C side: the same kinds of key, as raw libsodium key pairs in plain memory.
        var signPK = [UInt8](repeating: 0, count: Int(crypto_sign_PUBLICKEYBYTES))
        var signSK = [UInt8](repeating: 0, count: Int(crypto_sign_SECRETKEYBYTES))
        crypto_sign_keypair(&signPK, &signSK)
        var boxPK = [UInt8](repeating: 0, count: Int(crypto_box_PUBLICKEYBYTES))
        var boxSK = [UInt8](repeating: 0, count: Int(crypto_box_SECRETKEYBYTES))
        crypto_box_keypair(&boxPK, &boxSK)
        defer {
            sodium_memzero(&signSK, signSK.count)
            sodium_memzero(&boxSK, boxSK.count)
        }
        let bytes = [UInt8](message)
        var cBox = [UInt8](repeating: 0, count: bytes.count + crypto_box_sealbytes())
        crypto_box_seal(&cBox, bytes, UInt64(bytes.count), boxPK)
        var signature = [UInt8](repeating: 0, count: Int(crypto_sign_BYTES))
        var opened = [UInt8](repeating: 0, count: bytes.count)

        // Warm up: the wallet opens each held key once and keeps it.
        _ = try await wallet.sign(message, with: signer)
        _ = try await wallet.openSealedBox(box, with: recipient)

        var best = (cSign: 0.0, wSign: 0.0, cOpen: 0.0, wOpen: 0.0)
        var failures = 0
        for _ in 0..<rounds {
            let (_, tCSign) = await Clock.time {
                for _ in 0..<calls { _ = crypto_sign_detached(&signature, nil, bytes, UInt64(bytes.count), signSK) }
            }
            let (_, tWSign) = try await Clock.time { for _ in 0..<calls { _ = try await wallet.sign(message, with: signer) } }
            let (_, tCOpen) = await Clock.time {
                for _ in 0..<calls { failures += Int(crypto_box_seal_open(&opened, cBox, UInt64(cBox.count), boxPK, boxSK) != 0 ? 1 : 0) }
            }
            let (_, tWOpen) = try await Clock.time { for _ in 0..<calls { _ = try await wallet.openSealedBox(box, with: recipient) } }
            best = (
                max(best.cSign, Double(calls) / tCSign), max(best.wSign, Double(calls) / tWSign),
                max(best.cOpen, Double(calls) / tCOpen), max(best.wOpen, Double(calls) / tWOpen)
            )
        }
        guard failures == 0 else { throw WalletError.corrupted("the benchmark's C sealed box failed to open") }
        return [
            ("c_sign_key_in_memory_per_sec", best.cSign), ("wallet_sign_held_key_per_sec", best.wSign),
            ("wallet_sign_c_over_wallet", best.cSign / best.wSign),
            ("c_seal_open_key_in_memory_per_sec", best.cOpen), ("wallet_open_sealed_held_key_per_sec", best.wOpen),
            ("wallet_open_c_over_wallet", best.cOpen / best.wOpen),
        ]
    }
}
