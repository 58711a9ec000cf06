// `String(validUTF8:)`, the package's UTF-8 validation (the standard library's
// `String(validating:as:)` needs iOS 18 / macOS 15): text back for valid bytes, nil for anything
// ill-formed.

import CofferSync
import Testing

@Suite("UTF-8 validation")
struct ValidUTF8Tests {
    @Test("valid UTF-8 comes back as the same text, multi-byte characters and empty input included")
    func valid() {
        for text in ["", "plain ASCII", "é ü ß", "日本語", "😀 emoji", "a\u{0}b"] {
            #expect(String(validUTF8: Array(text.utf8)) == text)
        }
    }

    @Test("ill-formed bytes give nil: stray continuation, truncated sequence, overlong form, surrogate, 0xFF")
    func invalid() {
        let cases: [[UInt8]] = [
            [0x80], // a continuation byte alone
            [0x61, 0xE6, 0x97], // a three-byte sequence cut short
            [0xC0, 0x80], // an overlong NUL
            [0xED, 0xA0, 0x80], // a UTF-16 surrogate
            [0xFF], // never valid
        ]
        for bytes in cases {
            #expect(String(validUTF8: bytes) == nil, "\(bytes)")
        }
    }
}
