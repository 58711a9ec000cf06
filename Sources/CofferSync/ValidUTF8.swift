// UTF-8 validation that the package's minimum platforms have: `String(validating:as:)` exists only
// from iOS 18 / macOS 15 (the standard library marks it so), and Coffer supports iOS 16 / macOS 13.

extension String {
    /// The text of `bytes` when they are valid UTF-8 (no ill-formed, overlong or surrogate
    /// sequence), nil otherwise; what `String(validating: bytes, as: UTF8.self)` returns.
    package init?<Bytes: Collection>(validUTF8 bytes: Bytes) where Bytes.Element == UInt8 {
        // Decoding replaces every ill-formed sequence by U+FFFD, so the text's bytes equal the
        // input exactly when the input was valid.
        let text = String(decoding: bytes, as: UTF8.self)
        guard text.utf8.elementsEqual(bytes) else { return nil }
        self = text
    }
}
