// RFC 8259 edge cases of the wallet's hand-written JSON reader (JSONValue.parse): \u escapes and
// surrogate pairs, the nesting limit, duplicate keys, number text, control characters, text
// around the value, empty input and a byte order mark.

import CofferWallet
import Testing

/// The Unicode scalar values of `s` (JSONValue's `==` compares strings by canonical equivalence,
/// so the exact scalars are checked this way).
private func scalars(_ s: String) -> [UInt32] { s.unicodeScalars.map(\.value) }

/// The string a document that is one JSON string parses to.
private func parsedString(_ text: String) throws -> String {
    guard case .string(let s) = try JSONValue.parse(text) else {
        Issue.record("\(text) did not parse to a string")
        return ""
    }
    return s
}

/// The members of a document that is one JSON object.
private func parsedMembers(_ text: String) throws -> [(String, JSONValue)] {
    guard case .object(let members) = try JSONValue.parse(text) else {
        Issue.record("\(text) did not parse to an object")
        return []
    }
    return members
}

/// How deeply arrays and objects nest in `value` (a scalar is 0).
private func depth(_ value: JSONValue) -> Int {
    switch value {
    case .array(let items): return 1 + (items.map(depth).max() ?? 0)
    case .object(let members): return 1 + (members.map { depth($0.1) }.max() ?? 0)
    default: return 0
    }
}

@Suite("JSON strings and \\u escapes")
struct JSONStringTests {
    @Test("a surrogate pair in \\u escapes decodes to the one scalar it encodes")
    func surrogatePair() throws {
        #expect(scalars(try parsedString(#""\ud83d\ude00""#)) == [0x1F600])
        #expect(scalars(try parsedString(#""\uD834\uDD1E""#)) == [0x1D11E])
        #expect(scalars(try parsedString(#""\uDBFF\uDFFF""#)) == [0x10FFFF])
        #expect(scalars(try parsedString(#""\uD800\uDC00""#)) == [0x10000])
    }

    @Test("a surrogate pair between other characters keeps them in order")
    func surrogatePairInContext() throws {
        #expect(scalars(try parsedString(#""a\ud83d\ude00b""#)) == [0x61, 0x1F600, 0x62])
    }

    @Test(
        "a high surrogate that no low surrogate escape follows is rejected",
        arguments: [#""\ud800""#, #""\ud800x""#, #""\ud83d\u0041""#, #""\ud800\ud800""#, #""\ud800\n""#, #""\ud800\uE000""#])
    func loneHighSurrogate(_ text: String) {
        #expect(throws: JSONParseError.self) { try JSONValue.parse(text) }
    }

    @Test(
        "a low surrogate without a high surrogate before it is rejected",
        arguments: [#""\udc00""#, #""\uDFFF""#, #""\ude00\ud83d""#, #""a\udc00b""#])
    func loneLowSurrogate(_ text: String) {
        #expect(throws: JSONParseError.self) { try JSONValue.parse(text) }
    }

    @Test("the code units next to the surrogate range decode as themselves")
    func surrogateRangeBoundaries() throws {
        #expect(scalars(try parsedString(#""\ud7ff""#)) == [0xD7FF])
        #expect(scalars(try parsedString(#""\ue000""#)) == [0xE000])
        #expect(scalars(try parsedString(#""\uffff""#)) == [0xFFFF])
    }

    @Test("\\u0000 decodes to a NUL character inside the string")
    func escapedNul() throws {
        #expect(scalars(try parsedString(#""a\u0000b""#)) == [0x61, 0, 0x62])
    }

    @Test("each two-character escape decodes to its character")
    func shortEscapes() throws {
        #expect(try parsedString(#""\"\\\/\b\f\n\r\t""#) == "\"\\/\u{08}\u{0C}\n\r\t")
    }

    @Test("an escape JSON does not define is rejected", arguments: [#""\a""#, #""\x41""#, #""\U0041""#, #""\'""#, #""\0""#])
    func unknownEscape(_ text: String) {
        #expect(throws: JSONParseError.self) { try JSONValue.parse(text) }
    }

    @Test("a \\u escape without four hex digits is rejected", arguments: [#""\u""#, #""\u12""#, #""\u12G4""#, #""\u 123""#, #""\u123"#])
    func shortUnicodeEscape(_ text: String) {
        #expect(throws: JSONParseError.self) { try JSONValue.parse(text) }
    }

    @Test("every raw control character (U+0000 to U+001F) inside a string is rejected", arguments: 0..<0x20)
    func rawControlCharacter(_ code: Int) {
        let text = "\"a" + String(Unicode.Scalar(UInt8(code))) + "b\""
        #expect(throws: JSONParseError.self) { try JSONValue.parse(text) }
    }

    @Test("DEL, non-ASCII and astral characters are accepted raw inside a string")
    func rawNonControlCharacters() throws {
        #expect(scalars(try parsedString("\"\u{7F}\u{E9}\u{2028}\u{1F600}\"")) == [0x7F, 0xE9, 0x2028, 0x1F600])
    }

    @Test("an unterminated string is rejected", arguments: [#"""#, #""abc"#, #""abc\""#, #""abc\"#])
    func unterminatedString(_ text: String) {
        #expect(throws: JSONParseError.self) { try JSONValue.parse(text) }
    }

    @Test("a string written by jsonText, control characters and surrogates included, reads back to the same scalars")
    func writerRoundTrip() throws {
        var original = String.UnicodeScalarView()
        for code in 0..<0x20 { original.append(Unicode.Scalar(UInt8(code))) }
        original.append(contentsOf: "\"\\/\u{7F}\u{1F600}\u{FEFF}".unicodeScalars)
        let s = String(original)
        let text = JSONValue.string(s).jsonText
        #expect(scalars(try parsedString(text)) == scalars(s))
    }
}

@Suite("JSON nesting depth")
struct JSONDepthTests {
    @Test("arrays nested 256 deep, the limit, parse")
    func arraysAtLimit() throws {
        let text = String(repeating: "[", count: 256) + String(repeating: "]", count: 256)
        #expect(depth(try JSONValue.parse(text)) == 256)
    }

    @Test("objects and arrays mixed 256 deep parse")
    func mixedAtLimit() throws {
        let text = String(repeating: #"{"a":["#, count: 128) + "1" + String(repeating: "]}", count: 128)
        #expect(depth(try JSONValue.parse(text)) == 256)
    }

    @Test(
        "nesting one level past the limit is an error that names the limit",
        arguments: [
            String(repeating: "[", count: 257) + String(repeating: "]", count: 257),
            String(repeating: #"{"a":"#, count: 257) + "1" + String(repeating: "}", count: 257),
            "[" + String(repeating: #"{"a":["#, count: 128) + String(repeating: "]}", count: 128) + "]",
        ])
    func pastLimit(_ text: String) {
        let error = #expect(throws: JSONParseError.self) { try JSONValue.parse(text) }
        #expect(error?.message.contains("nesting deeper than 256") == true)
    }

    @Test("nesting a hundred thousand deep is an error, not a stack overflow", arguments: ["[", #"{"k":"#])
    func farPastLimit(_ opener: String) {
        let text = String(repeating: opener, count: 100_000)
        let error = #expect(throws: JSONParseError.self) { try JSONValue.parse(text) }
        #expect(error?.message.contains("nesting deeper than 256") == true)
    }

    @Test("depth counts nesting, not containers: many siblings each near the limit parse")
    func siblingsDoNotAccumulate() throws {
        let deep = String(repeating: "[", count: 255) + String(repeating: "]", count: 255)
        let text = "[" + Array(repeating: deep, count: 300).joined(separator: ",") + "]"
        guard case .array(let items) = try JSONValue.parse(text) else {
            Issue.record("not an array")
            return
        }
        #expect(items.count == 300)
        #expect(depth(.array(items)) == 256)
    }
}

@Suite("JSON objects and duplicate keys")
struct JSONObjectTests {
    @Test("a later duplicate key replaces the value and keeps the first key's position")
    func lastDuplicateWins() throws {
        let members = try parsedMembers(#"{"a":1,"b":2,"a":3}"#)
        #expect(members.map(\.0) == ["a", "b"])
        #expect(members.map(\.1) == [.number("3"), .number("2")])
    }

    @Test("of three duplicates the last one wins, whatever its kind")
    func lastOfThree() throws {
        let members = try parsedMembers(#"{"k":"x","k":[1],"k":null}"#)
        #expect(members.count == 1)
        #expect(members.first?.1 == .null)
    }

    @Test("keys spelled differently with escapes are the same key")
    func escapedDuplicate() throws {
        let members = try parsedMembers(#"{"a":1,"\u0061":2}"#)
        #expect(members.count == 1)
        #expect(members.first?.1 == .number("2"))
    }

    @Test("keys that are canonically equivalent but differ in scalars are different keys")
    func keysCompareByScalars() throws {
        let members = try parsedMembers(#"{"\u00e9":1,"e\u0301":2}"#)
        #expect(members.map { scalars($0.0) } == [[0xE9], [0x65, 0x301]])
        #expect(members.map(\.1) == [.number("1"), .number("2")])
    }

    @Test("duplicates are resolved within each object, not across nested objects")
    func duplicatesPerObject() throws {
        let members = try parsedMembers(#"{"o":{"x":1,"x":2},"p":{"x":3}}"#)
        #expect(members.map(\.0) == ["o", "p"])
        #expect(members[0].1 == .object([("x", .number("2"))]))
        #expect(members[1].1 == .object([("x", .number("3"))]))
    }

    @Test("members keep the order they are written in")
    func memberOrder() throws {
        #expect(try JSONValue.parse(#"{"b":1,"a":2}"#) == .object([("b", .number("1")), ("a", .number("2"))]))
        #expect(try JSONValue.parse(#"{"b":1,"a":2}"#) != .object([("a", .number("2")), ("b", .number("1"))]))
    }

    @Test(
        "an object that is not string keys, colons and commas is rejected",
        arguments: [#"{a:1}"#, #"{1:1}"#, #"{"a" 1}"#, #"{"a":}"#, #"{"a":1,}"#, #"{,}"#, #"{"a":1"#, #"{"a":1 "b":2}"#, #"{"#])
    func malformedObject(_ text: String) {
        #expect(throws: JSONParseError.self) { try JSONValue.parse(text) }
    }

    @Test(
        "an array with a missing or extra comma, or no closing bracket, is rejected",
        arguments: ["[1,]", "[,1]", "[1 2]", "[1,,2]", "[", "[1"])
    func malformedArray(_ text: String) {
        #expect(throws: JSONParseError.self) { try JSONValue.parse(text) }
    }
}

@Suite("JSON numbers")
struct JSONNumberTests {
    @Test(
        "a valid number is kept as its literal text",
        arguments: ["0", "-0", "7", "-1", "10", "1.5", "-0.25", "0.0", "1e5", "1E5", "1e+5", "1e-5", "1.5E-10", "0e0", "-0E+00"])
    func validNumber(_ text: String) throws {
        #expect(try JSONValue.parse(text) == .number(text))
    }

    @Test(
        "numbers beyond any machine type are kept digit for digit",
        arguments: [
            "18446744073709551616", "-9223372036854775809", "123456789012345678901234567890123456789012345678901234567890",
            "1e999999", "-1E-999999", "0.000000000000000000000000000000000000000000000000000001",
            "3.14159265358979323846264338327950288419716939937510582097494459",
        ])
    func hugeNumber(_ text: String) throws {
        #expect(try JSONValue.parse(text) == .number(text))
        #expect(try JSONValue.parse("[\(text)]").jsonText == "[\(text)]")
    }

    @Test(
        "malformed number text is rejected",
        arguments: [
            "-", "01", "-01", "00", "1.", ".5", "-.5", "+1", "1e", "1e+", "1E-", "1.e5", "0x10", "1.2.3", "--1", "- 1", "1e5.5",
            "Infinity", "-Infinity", "NaN", "[01]", "[1.]", "[-]",
        ])
    func malformedNumber(_ text: String) {
        #expect(throws: JSONParseError.self) { try JSONValue.parse(text) }
    }

    @Test("a number ends at the delimiter that follows it")
    func numberEndsAtDelimiter() throws {
        #expect(try JSONValue.parse("[1,-2.5e3,0]") == .array([.number("1"), .number("-2.5e3"), .number("0")]))
        #expect(try JSONValue.parse(#"{"n":-0}"#) == .object([("n", .number("-0"))]))
    }
}

@Suite("JSON documents")
struct JSONDocumentTests {
    @Test("empty and whitespace-only input is an error", arguments: ["", " ", "\n\t\r "])
    func emptyInput(_ text: String) {
        let error = #expect(throws: JSONParseError.self) { try JSONValue.parse(text) }
        #expect(error?.message.contains("empty text") == true)
    }

    @Test(
        "text after the value is rejected",
        arguments: ["{} {}", "1 2", "[]]", "{}}", "nullx", "truefalse", #""a""b""#, "{},", "0 1", "[] x", "1\u{0}"])
    func trailingText(_ text: String) {
        #expect(throws: JSONParseError.self) { try JSONValue.parse(text) }
    }

    @Test("space, tab, line feed and carriage return around the value are skipped")
    func jsonWhitespace() throws {
        #expect(try JSONValue.parse(" \t\n\r{ \"a\" :\t[ 1 ,\n2 ] }\r\n\t ") == .object([("a", .array([.number("1"), .number("2")]))]))
    }

    @Test(
        "other whitespace characters around the value are rejected",
        arguments: ["\u{0C}{}", "{}\u{0B}", "\u{A0}1", "1\u{2028}", "\u{3000}[]"])
    func otherWhitespace(_ text: String) {
        #expect(throws: JSONParseError.self) { try JSONValue.parse(text) }
    }

    @Test("a leading byte order mark is rejected, as documented")
    func byteOrderMark() {
        #expect(throws: JSONParseError.self) { try JSONValue.parse("\u{FEFF}{}") }
        #expect(throws: JSONParseError.self) { try JSONValue.parse("\u{FEFF}") }
    }

    @Test("an unexpected character is named whole, with its code point; a byte order mark by name")
    func unexpectedCharacterNamed() {
        func message(_ text: String) -> String {
            do throws(JSONParseError) {
                _ = try JSONValue.parse(text)
                return "parsed"
            } catch { return error.message }
        }
        #expect(message("\u{FEFF}{}").contains("UTF-8 byte-order mark (EF BB BF)"), "\(message("\u{FEFF}{}"))")
        #expect(message("é").hasSuffix("unexpected character 'é' (U+00E9)"), "\(message("é"))")
        #expect(message("[1, 😀]").hasSuffix("unexpected character '😀' (U+1F600)"), "\(message("[1, 😀]"))")
        #expect(message("\u{1}").hasSuffix("unexpected character (U+0001)"), "\(message("\u{1}"))")
        #expect(message("[1, \u{FEFF}2]").hasSuffix("unexpected character (U+FEFF)"), "\(message("[1, \u{FEFF}2]"))")
        #expect(message("\u{202E}").hasSuffix("unexpected character (U+202E)"), "\(message("\u{202E}"))")
        #expect(message(#""a\é""#).hasSuffix("a backslash before the character 'é' (U+00E9)"), "\(message(#""a\é""#))")
    }

    @Test("a byte order mark inside a string is kept as a character")
    func byteOrderMarkInString() throws {
        #expect(scalars(try parsedString("\"\u{FEFF}x\"")) == [0xFEFF, 0x78])
    }

    @Test("a scalar on its own is a whole document")
    func topLevelScalars() throws {
        #expect(try JSONValue.parse("true") == .bool(true))
        #expect(try JSONValue.parse("false") == .bool(false))
        #expect(try JSONValue.parse("null") == .null)
        #expect(try JSONValue.parse(#""s""#) == .string("s"))
        #expect(try JSONValue.parse(" 42 ") == .number("42"))
    }

    @Test("misspelt or truncated literals are rejected", arguments: ["tru", "nul", "fals", "True", "NULL", "nil", "undefined", "t"])
    func badLiterals(_ text: String) {
        #expect(throws: JSONParseError.self) { try JSONValue.parse(text) }
    }

    @Test("an error names the byte offset where the text went wrong")
    func errorOffset() {
        let error = #expect(throws: JSONParseError.self) { try JSONValue.parse("[1,x]") }
        #expect(error?.message.contains("byte 3") == true)
        #expect(error?.description == error?.message)
    }
}
