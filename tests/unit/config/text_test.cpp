// What valid text is, and how untrusted text is escaped and cut.
#include "config/text.hpp"

#include <gtest/gtest.h>

#include <optional>
#include <string>

namespace mcgw::text {
namespace {

using namespace std::string_literals;

struct ProblemCase {
  const char* name;
  std::string text;
  Breaks breaks;
  std::optional<size_t> offset;  // nullopt: valid
  std::string message;
};

TEST(Text, FindProblem) {
  const ProblemCase cases[] = {
      {"empty", "", Breaks::kNone, std::nullopt, ""},
      {"ascii", "gw-a1 blue", Breaks::kNone, std::nullopt, ""},
      {"utf8", "caf\xC3\xA9 \xE4\xB8\xAD \xF0\x9F\x98\x80", Breaks::kNone, std::nullopt, ""},
      {"latin1 byte", "caf\xE9", Breaks::kNone, 3, "not valid UTF-8 (byte 0xE9)"},
      {"truncated sequence", "ab\xE4\xB8", Breaks::kNone, 2, "not valid UTF-8 (byte 0xE4)"},
      {"lone continuation", "\x80x", Breaks::kNone, 0, "not valid UTF-8 (byte 0x80)"},
      {"overlong slash", "a\xC0\xAF", Breaks::kNone, 1, "not valid UTF-8 (byte 0xC0)"},
      {"surrogate", "\xED\xA0\x80", Breaks::kNone, 0, "not valid UTF-8 (byte 0xED)"},
      {"above U+10FFFF", "\xF4\x90\x80\x80", Breaks::kNone, 0, "not valid UTF-8 (byte 0xF4)"},
      {"nul", "ab\0c"s, Breaks::kNone, 2, "a NUL byte"},
      {"escape", "x\x1b[31m", Breaks::kNone, 1, "control character U+001B"},
      {"del", "\x7f", Breaks::kNone, 0, "control character U+007F"},
      {"c1 control", "a\xC2\x85", Breaks::kNone, 1, "control character U+0085"},
      {"newline in a value", "a\nb", Breaks::kNone, 1, "control character U+000A"},
      {"tab in a value", "a\tb", Breaks::kNone, 1, "control character U+0009"},
      {"breaks in a file", "a:\tb\r\nc\n", Breaks::kAllowed, std::nullopt, ""},
      {"nul in a file", "a\n\0"s, Breaks::kAllowed, 2, "a NUL byte"},
      {"bell in a file", "a\n\x07", Breaks::kAllowed, 2, "control character U+0007"},
      {"right-to-left override",
       "ab\xE2\x80\xAE"
       "cd",
       Breaks::kNone, 2, "bidirectional formatting character U+202E"},
      {"isolate in a file", "a\n\xE2\x81\xA6", Breaks::kAllowed, 2,
       "bidirectional formatting character U+2066"},
      {"other formatting is text",
       "a\xE2\x80\x8B\xE2\x80\x8E"
       "b",
       Breaks::kNone, std::nullopt, ""},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    auto p = findProblem(c.text, c.breaks);
    ASSERT_EQ(p.has_value(), c.offset.has_value());
    if (p) {
      EXPECT_EQ(p->offset, *c.offset);
      EXPECT_EQ(p->message(), c.message);
    }
  }
}

TEST(Text, LineColumnCountsCharacters) {
  const std::string text = "a: 1\nb: caf\xC3\xA9\xE9\n";
  // The bad byte follows "b: caf" and a two-byte character: column 8.
  auto p = findProblem(text, Breaks::kAllowed);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->offset, 13u);
  LineColumn lc = lineColumn(text, p->offset);
  EXPECT_EQ(lc.line, 2);
  EXPECT_EQ(lc.column, 8);
  EXPECT_EQ(lineColumn(text, 0).line, 1);
  EXPECT_EQ(lineColumn(text, 0).column, 1);
  EXPECT_EQ(lineColumn(text, 1000).line, 3);  // past the end: the end
}

TEST(Text, EscapeKeepsUtf8AndEscapesTheRest) {
  EXPECT_EQ(escape("plain text"), "plain text");
  EXPECT_EQ(escape("caf\xC3\xA9"), "caf\xC3\xA9");
  EXPECT_EQ(escape("caf\xE9"), "caf\\xE9");
  EXPECT_EQ(escape("a\nb\tc\rd"), "a\\nb\\tc\\rd");
  EXPECT_EQ(escape("\x1b[2J"), "\\u001B[2J");
  EXPECT_EQ(escape("txt.\xE2\x80\xAEgpj.exe"), "txt.\\u202Egpj.exe");
  EXPECT_EQ(escape("nul\0x"s), "nul\\u0000x");
  EXPECT_EQ(escape("back\\slash"), "back\\\\slash");
  EXPECT_EQ(escape("say \"hi\""), "say \"hi\"");
  EXPECT_EQ(quote("say \"hi\""), "\"say \\\"hi\\\"\"");
  EXPECT_EQ(quote("caf\xE9"), "\"caf\\xE9\"");
  EXPECT_EQ(quote(""), "\"\"");
}

TEST(Text, LongValuesAreCutAndMarked) {
  const std::string big(1 << 20, 'a');
  EXPECT_EQ(quote(big), "\"" + std::string(kMaxQuoted, 'a') + "\"...(1048576 bytes)");
  EXPECT_EQ(escape(big, 4), "aaaa...(1048576 bytes)");
  // Exactly max bytes: nothing to mark.
  EXPECT_EQ(quote(std::string(kMaxQuoted, 'b')), "\"" + std::string(kMaxQuoted, 'b') + "\"");
  // A character that would straddle the cut is left out whole.
  EXPECT_EQ(escape("ab\xC3\xA9"
                   "cd",
                   3),
            "ab...(6 bytes)");
  // The escaped form of a cut value stays bounded: 4 bytes per input byte.
  const std::string bad(10000, '\xff');
  std::string e = escape(bad);
  EXPECT_EQ(e, [] {
    std::string s;
    for (size_t i = 0; i < kMaxQuoted; ++i) {
      s += "\\xFF";
    }
    return s + "...(10000 bytes)";
  }());
}

TEST(Text, EscapeInvalidUtf8KeepsEverythingElse) {
  EXPECT_EQ(escapeInvalidUtf8("caf\xE9\nline\t\x1b"), "caf\\xE9\nline\t\x1b");
  EXPECT_EQ(escapeInvalidUtf8("a\\b\xC3\xA9"), "a\\\\b\xC3\xA9");
  const std::string big(100000, '\xff');
  EXPECT_EQ(escapeInvalidUtf8(big).size(), 400000u);  // uncut
  EXPECT_FALSE(findProblem(escapeInvalidUtf8("\xff\xfe\x80"), Breaks::kAllowed));
}

}  // namespace
}  // namespace mcgw::text
