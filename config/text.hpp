// Untrusted text: every string that enters mcgwd (config file, API request,
// netlink, later FRR and etcd) is either refused where it enters, with its
// location, or escaped wherever it is written (error messages, logs, JSON,
// the CLI's terminal output).  This header is the one place that says what
// "valid" and "escaped" mean; every front-end uses it.
//
// Valid text is UTF-8 (RFC 3629: no overlong forms, no surrogates, nothing
// above U+10FFFF) without control characters (C0, DEL, C1) other than the
// line breaks and tabs a caller allows, and without the bidirectional
// embeddings, overrides and isolates (U+202A..U+202E, U+2066..U+2069), which
// make a terminal show text in another order than it is.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace mcgw::text {

// How much of a value an error message or a log line quotes: longer values
// are cut at a character boundary and marked (see quote()).
inline constexpr size_t kMaxQuoted = 64;

// What is wrong with a piece of text, and where.
struct TextProblem {
  size_t offset = 0;  // byte offset of the first bad byte
  uint32_t byte = 0;  // that byte (invalid UTF-8), or the code point (a control character)
  bool invalid_utf8 = false;
  // "not valid UTF-8 (byte 0xE9)", "a NUL byte", "control character U+001B",
  // "bidirectional formatting character U+202E"
  std::string message() const;
};

enum class Breaks : uint8_t {
  kNone,     // a single-line value: no tab, LF or CR
  kAllowed,  // a text file: tab, LF and CR are fine
};

// The first problem in text, or nullopt when it is valid.
std::optional<TextProblem> findProblem(std::string_view text, Breaks breaks = Breaks::kNone);

// 1-based line and column (in characters) of a byte offset in text.
struct LineColumn {
  int line = 1;
  int column = 1;
};
LineColumn lineColumn(std::string_view text, size_t offset);

// text made safe to print on one line: valid printable UTF-8 is kept, a
// backslash is doubled, \n \r \t are written so, other control characters
// and bidirectional formatting characters as \uXXXX and bytes that are not
// UTF-8 as \xXX.  Never longer than 4 * max
// bytes plus the marker: text longer than max bytes is cut at a character
// boundary and ends in "...(N bytes)" (N: its full length).
std::string escape(std::string_view text, size_t max = kMaxQuoted);

// escape() between double quotes (a double quote inside is written \"):
// "caf\xE9", "aaaa"...(1048576 bytes).
std::string quote(std::string_view text, size_t max = kMaxQuoted);

// text with only what is not UTF-8 escaped: such bytes become \xXX and a
// backslash is doubled; line breaks and other characters stay as they are.
// Uncut.  For JSON, which escapes control characters itself.
std::string escapeInvalidUtf8(std::string_view text);

}  // namespace mcgw::text
