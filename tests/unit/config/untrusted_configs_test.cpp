// Configs as an attacker or an accident writes them: bytes that are not text,
// YAML escapes that smuggle control characters, huge values, files that are
// not mcgw configs at all, deep nesting, huge lists, alias bombs.  Each is
// refused with a located, bounded error that is safe to print, and never
// after the work it was meant to cause.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "config/loader.hpp"
#include "config/loader_detail.hpp"
#include "config/schema.hpp"
#include "config/text.hpp"
#include "config/yaml_document.hpp"

namespace mcgw::config {
namespace {

using namespace std::string_literals;
namespace fs = std::filesystem;

constexpr const char* kFile = "t.yaml";

// A valid config; the cases replace parts of it.
const std::string kValid =
    "node:\n"                            // 1
    "  name: gw-a1\n"                    // 2
    "  site: idc-a\n"                    // 3
    "  description: first gateway\n"     // 4
    "ports:\n"                           // 5
    "  - name: lan0\n"                   // 6
    "    role: lan\n"                    // 7
    "    vdev: net_null0\n"              // 8
    "    addresses: [10.1.0.1/24]\n"     // 9
    "eal:\n"                             // 10
    "  extra-args: [--iova-mode=va]\n";  // 11

std::string replaced(const std::string& from, const std::string& to) {
  std::string s = kValid;
  size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) {
    s.replace(at, from.size(), to);
  }
  return s;
}

std::string describe(const ConfigErrors& errors) {
  std::string out;
  for (const auto& e : errors) {
    out += "  " + text::escape(e.toString(), 4096) + "\n";
  }
  return out;
}

// Every error is one line of valid text, and small.
void expectPrintable(const ConfigErrors& errors, size_t max_bytes = 2048) {
  for (const auto& e : errors) {
    const std::string s = e.toString();
    EXPECT_FALSE(text::findProblem(s)) << text::escape(s, 4096);
    EXPECT_LT(s.size(), max_bytes) << text::escape(s, 4096);
  }
}

ConfigErrors errorsOf(const std::string& yaml) {
  LoadResult r = loadConfigText(yaml, kFile);
  if (r.ok()) {
    ADD_FAILURE() << "accepted:\n" << text::escape(yaml, 4096);
    return {};
  }
  expectPrintable(r.error());
  return r.error();
}

// The config is refused with exactly this one error.
void expectOnlyError(const std::string& yaml, int line, int column, const std::string& message,
                     const std::string& path = "") {
  ConfigErrors errors = errorsOf(yaml);
  ASSERT_EQ(errors.size(), 1u) << describe(errors);
  EXPECT_EQ(errors[0].file, kFile);
  EXPECT_EQ(errors[0].line, line) << describe(errors);
  EXPECT_EQ(errors[0].column, column) << describe(errors);
  EXPECT_EQ(errors[0].message, message) << describe(errors);
  EXPECT_EQ(errors[0].path, path) << describe(errors);
}

TEST(UntrustedConfigs, BaseIsValid) {
  LoadResult r = loadConfigText(kValid, kFile);
  ASSERT_TRUE(r.ok()) << describe(r.error());
}

// --- the text of the file

constexpr const char* kNotUtf8 = "not valid UTF-8 (byte 0xE9); a config file is UTF-8 text";

TEST(UntrustedConfigs, Latin1ByteInAValue) {
  expectOnlyError(replaced("first gateway", "caf\xE9"), 4, 19, kNotUtf8);
}

TEST(UntrustedConfigs, Latin1ByteInAnUnknownKey) {
  expectOnlyError(replaced("  description: first gateway", "  descr\xE9: x"), 4, 8, kNotUtf8);
}

TEST(UntrustedConfigs, Latin1ByteInAListItem) {
  expectOnlyError(replaced("[--iova-mode=va]", "[--iova-mode=va, caf\xE9]"), 11, 35, kNotUtf8);
}

TEST(UntrustedConfigs, Latin1ByteInAComment) {
  expectOnlyError(replaced("ports:\n", "# caf\xE9\nports:\n"), 5, 6, kNotUtf8);
}

TEST(UntrustedConfigs, NulByte) {
  expectOnlyError(replaced("gw-a1", "gw\0a1"s), 2, 11, "a NUL byte; a config file is text");
}

TEST(UntrustedConfigs, EscapeByte) {
  expectOnlyError(replaced("first gateway", "first \x1b[31mgateway"), 4, 22,
                  "control character U+001B; a config file is text without control characters "
                  "other than tab and line breaks");
}

TEST(UntrustedConfigs, EveryBadLineIsReported) {
  std::string yaml = replaced("gw-a1",
                              "gw\xFF"
                              "a1");
  yaml = yaml.replace(yaml.find("idc-a"), 5, "idc\x01");
  yaml = yaml.replace(yaml.find("lan0"), 4, "l\xC3n0");  // a truncated sequence
  ConfigErrors errors = errorsOf(yaml);
  ASSERT_EQ(errors.size(), 3u) << describe(errors);
  EXPECT_EQ(errors[0].line, 2);
  EXPECT_EQ(errors[0].column, 11);
  EXPECT_EQ(errors[0].message, "not valid UTF-8 (byte 0xFF); a config file is UTF-8 text");
  EXPECT_EQ(errors[1].line, 3);
  EXPECT_EQ(errors[1].column, 12);
  EXPECT_EQ(errors[1].message.rfind("control character U+0001;", 0), 0u) << describe(errors);
  EXPECT_EQ(errors[2].line, 6);
  EXPECT_EQ(errors[2].column, 12);
  EXPECT_EQ(errors[2].message, "not valid UTF-8 (byte 0xC3); a config file is UTF-8 text");
}

TEST(UntrustedConfigs, BadLinesAreReportedUpToABound) {
  std::string yaml = kValid;
  for (int i = 0; i < 25; ++i) {
    yaml += "# bad \xE9 and \xE9 again\n";  // one error per line, not per byte
  }
  ConfigErrors errors = errorsOf(yaml);
  ASSERT_EQ(errors.size(), kMaxReported + 1) << describe(errors);
  for (size_t i = 0; i < kMaxReported; ++i) {
    EXPECT_EQ(errors[i].line, 12 + static_cast<int>(i));
    EXPECT_EQ(errors[i].column, 7);
  }
  EXPECT_EQ(errors.back().line, 12 + static_cast<int>(kMaxReported));
  EXPECT_EQ(errors.back().message, "... and 5 more lines with bytes that are not text (not shown)");
}

TEST(UntrustedConfigs, ByteOrderMarkAndCrLfAreText) {
  LoadResult bom = loadConfigText("\xEF\xBB\xBF" + kValid, kFile);
  EXPECT_TRUE(bom.ok()) << describe(bom.error());
  std::string crlf;
  for (char c : kValid) {
    crlf += c == '\n' ? "\r\n" : std::string(1, c);
  }
  LoadResult r = loadConfigText(crlf, kFile);
  EXPECT_TRUE(r.ok()) << describe(r.error());
}

// --- keys and values: what YAML escapes and blocks make of them

constexpr const char* kNoControl =
    "; a value is one line of text without control characters (YAML escapes such as \\t, \\e or "
    "\\0 write them)";

TEST(UntrustedConfigs, EscapeSequenceInAValue) {
  expectOnlyError(replaced("first gateway", "\"red \\e[31m\""), 4, 16,
                  "the value \"red \\u001B[31m\" holds control character U+001B"s + kNoControl);
}

// "Trojan Source": text that a terminal shows in another order.
TEST(UntrustedConfigs, BidiOverrideInAValue) {
  expectOnlyError(
      replaced("first gateway", "\"txt\\u202Eexe\""), 4, 16,
      "the value \"txt\\u202Eexe\" holds bidirectional formatting character U+202E"s + kNoControl);
  expectOnlyError(replaced("first gateway",
                           "txt\xE2\x80\xAE"
                           "exe"),
                  4, 19,
                  "bidirectional formatting character U+202E; a config file may not hold "
                  "characters that reorder how it is shown");
}

TEST(UntrustedConfigs, NulEscapeInAListItem) {
  expectOnlyError(replaced("[--iova-mode=va]", "[--iova-mode=va, \"a\\0b\"]"), 11, 32,
                  "the value \"a\\u0000b\" holds a NUL byte"s + kNoControl);
}

TEST(UntrustedConfigs, C1ControlEscape) {
  expectOnlyError(replaced("first gateway", "\"next \\u0085 line\""), 4, 16,
                  "the value \"next \\u0085 line\" holds control character U+0085"s + kNoControl);
  expectOnlyError(replaced("first gateway", "\"next \\x85 line\""), 4, 16,
                  "the value \"next \\u0085 line\" holds control character U+0085"s + kNoControl);
}

// yaml-cpp 0.7 writes "\N" and "\_" as the bytes 0x85 and 0xA0: not UTF-8.
TEST(UntrustedConfigs, EscapeThatYamlCppWritesAsAByte) {
  const std::string hint =
      "; a value is UTF-8 text (yaml-cpp writes the escapes \\N and \\_ as one byte; write "
      "\\u00A0 for \\_)";
  expectOnlyError(replaced("first gateway", "\"next \\N line\""), 4, 16,
                  "the value \"next \\x85 line\" is not valid UTF-8 (byte 0x85)" + hint);
  expectOnlyError(replaced("first gateway", "\"no\\_break\""), 4, 16,
                  "the value \"no\\xA0break\" is not valid UTF-8 (byte 0xA0)" + hint);
  LoadResult r = loadConfigText(replaced("first gateway", "\"no\\u00A0break caf\\xE9\""), kFile);
  ASSERT_TRUE(r.ok()) << describe(r.error());
  EXPECT_EQ((*r)->node.description,
            "no\xC2\xA0"
            "break caf\xC3\xA9");
}

TEST(UntrustedConfigs, TabInAQuotedValue) {
  // A tab is fine in the file, not in a value.
  expectOnlyError(replaced("first gateway", "\"first\tgateway\""), 4, 16,
                  "the value \"first\\tgateway\" holds a tab"s + kNoControl);
}

TEST(UntrustedConfigs, EscapeInAKey) {
  expectOnlyError(replaced("  description:", "  \"descr\\eiption\":"), 4, 3,
                  "the key \"descr\\u001Biption\" holds control character U+001B"s + kNoControl);
}

TEST(UntrustedConfigs, LineBreakInABlockValue) {
  expectOnlyError(
      replaced("first gateway\n", "|\n    first\n    gateway\n"), 4, 16,
      "the value \"first\\ngateway\\n\" holds a line break; a value is one line of text "
      "(a '|' or '>' block keeps its line breaks: write it on one line, or fold it "
      "with '>-')");
  // Folded without the final line break, it is one line.
  LoadResult r = loadConfigText(replaced("first gateway\n", ">-\n    first\n    gateway\n"), kFile);
  ASSERT_TRUE(r.ok()) << describe(r.error());
  EXPECT_EQ((*r)->node.description, "first gateway");
}

TEST(UntrustedConfigs, BadValuesAreReportedUpToABound) {
  std::string items;
  for (int i = 0; i < 30; ++i) {
    items += ", \"x\\e" + std::to_string(i) + "\"";
  }
  ConfigErrors errors = errorsOf(replaced("[--iova-mode=va]", "[--iova-mode=va" + items + "]"));
  ASSERT_EQ(errors.size(), kMaxReported + 1) << describe(errors);
  EXPECT_EQ(errors.back().message,
            "... and 10 more keys or values with control characters (not shown)");
}

// Values that pass are valid text wherever they end up.
TEST(UntrustedConfigs, AcceptedStringsAreText) {
  LoadResult r =
      loadConfigText(replaced("first gateway", "\"caf\\u00e9 \\u4e2d \xF0\x9F\x98\x80\""), kFile);
  ASSERT_TRUE(r.ok()) << describe(r.error());
  EXPECT_EQ((*r)->node.description, "caf\xC3\xA9 \xE4\xB8\xAD \xF0\x9F\x98\x80");
}

// --- values quoted in errors are bounded

const std::string kMiB(1 << 20, 'a');
// As long as a value may be (text::kMaxQuoted is far below it).
const std::string kLong(4000, 'a');

// Every error is small, and the long value appears cut with its length.
void expectBounded(const std::string& yaml, const std::string& expected_part) {
  ConfigErrors errors = errorsOf(yaml);
  ASSERT_FALSE(errors.empty());
  bool found = false;
  for (const auto& e : errors) {
    found = found || e.toString().find(expected_part) != std::string::npos;
  }
  EXPECT_TRUE(found) << "no error holds " << expected_part << ":\n" << describe(errors);
}

const std::string kCut = "\"" + std::string(text::kMaxQuoted, 'a') + "\"...(4000 bytes)";
const std::string kCutInPath = std::string(text::kMaxQuoted, 'a') + "...(4000 bytes)";
const std::string kCutInPathMiB = std::string(text::kMaxQuoted, 'a') + "...(1048576 bytes)";

TEST(UntrustedConfigs, HugeValueIsQuotedCut) {
  expectBounded(replaced("name: gw-a1", "name: " + kLong), "found " + kCut);
  expectBounded(replaced("first gateway", kLong),
                "expected a string of at most 255 characters, found " + kCut);
}

TEST(UntrustedConfigs, HugeListKeyIsCutInThePath) {
  expectBounded(replaced("name: lan0", "name: " + kLong),
                "/mcgw:ports/port[name='" + kCutInPath + "']/name: expected");
}

TEST(UntrustedConfigs, HugeUnknownKeyIsQuotedCut) {
  // An explicit key ("? key"): YAML limits implicit ones to 1024 characters.
  expectBounded(replaced("  site: idc-a\n", "  site: idc-a\n  ? " + kLong + "\n  : 1\n"),
                "unknown key '" + kCutInPath + "'; 'node' accepts");
  // Twice: the duplicate is reported, bounded too.
  expectBounded(replaced("  site: idc-a\n",
                         "  site: idc-a\n  ? " + kLong + "\n  : 1\n  ? " + kLong + "\n  : 2\n"),
                "duplicate key '" + kCutInPath + "' (first given at line 4)");
}

TEST(UntrustedConfigs, HugeReferenceIsQuotedCut) {
  expectBounded(kValid +
                    "tenants:\n  - name: blue\n    vni: 1\n    routes:\n      - prefix: "
                    "10.9.0.0/16\n        peer: " +
                    kLong + "\n",
                "found " + kCut);
}

TEST(UntrustedConfigs, HugeDuplicateListItemIsCutInThePath) {
  expectBounded(replaced("[--iova-mode=va]", "[" + kLong + ", " + kLong + "]"),
                "/mcgw:eal/extra-args[.='" + kCutInPath + "']: duplicate value " + kCut);
}

TEST(UntrustedConfigs, HugeInterfaceAddressIsQuotedCut) {
  expectBounded(replaced("[10.1.0.1/24]", "[\"1" + kLong + "/24\"]"), "(4004 bytes)");
}

// --- how many bytes of keys and values the loader copies and checks

TEST(UntrustedConfigs, ValueLongerThanALeafNeedsIsRefusedUnread) {
  expectOnlyError(replaced("first gateway", kMiB), 4, 16,
                  "a key or value of 1048576 bytes; one may be at most 4096 bytes");
  expectOnlyError(replaced("first gateway", std::string(kMaxValueBytes + 1, 'd')), 4, 16,
                  "a key or value of 4097 bytes; one may be at most 4096 bytes");
}

// The review's file: one long value under an anchor, named by an alias in
// every route.  Each use would be copied and checked again (it took minutes
// and gigabytes); the bytes an alias brings count each time it is used.
TEST(UntrustedConfigs, AliasOfALongValueUsedOftenIsRefused) {
  std::string yaml = kValid + "x-long: &a \"" + std::string(4000, 'p') +
                     "\"\ntenants:\n  - name: blue\n    vni: 1\n    routes:\n";
  for (int i = 0; i < 9000; ++i) {
    yaml += "      - {prefix: 10." + std::to_string(i / 256) + "." + std::to_string(i % 256) +
            ".0/24, peer: *a}\n";
  }
  ASSERT_LT(yaml.size(), kMaxFileBytes);
  ConfigErrors errors = errorsOf(yaml);
  ASSERT_EQ(errors.size(), 1u) << describe(errors);
  EXPECT_NE(errors[0].message.find("this alias brings the keys and values to more than 33554432 "
                                   "bytes"),
            std::string::npos)
      << describe(errors);
  EXPECT_GT(errors[0].line, 16);
}

TEST(UntrustedConfigs, BoundPath) {
  using detail::boundPath;
  EXPECT_EQ(boundPath("/mcgw:ports/port[name='wan0']/mtu"), "/mcgw:ports/port[name='wan0']/mtu");
  EXPECT_EQ(boundPath("/a/b[.=\"it's\"]"), "/a/b[.=\"it's\"]");
  EXPECT_EQ(boundPath("/a/b[name='caf\xE9']/c[k='\x1b']"), "/a/b[name='caf\\xE9']/c[k='\\u001B']");
  EXPECT_EQ(boundPath("/a[k='" + kMiB + "']/b"), "/a[k='" + kCutInPathMiB + "']/b");
  // Anything else that is too long or not text is escaped and cut whole.
  std::string odd = boundPath("/" + kMiB);
  EXPECT_LT(odd.size(), detail::kMaxPath + 32);
  EXPECT_FALSE(text::findProblem(boundPath("/x\xE9[k='unterminated")));
}

TEST(UntrustedConfigs, FileNameIsEscapedWhenPrinted) {
  ConfigError e{"caf\xE9\n.yaml", 1, 2, "", "m"};
  EXPECT_EQ(e.toString(), "caf\\xE9\\n.yaml:1:2: m");
}

TEST(UntrustedConfigs, YamlCppMessagesAreEscaped) {
  using detail::yamlErrorMessage;
  EXPECT_EQ(yamlErrorMessage("unknown escape character: \xC3"),
            "unknown escape character: \"\\xC3\"");
  EXPECT_EQ(yamlErrorMessage("the referenced anchor is not defined" + kMiB),
            "an alias to an anchor that is not defined (an anchor comes before its aliases): \"" +
                std::string(text::kMaxQuoted, 'a') + "\"...(1048576 bytes)");
  EXPECT_EQ(yamlErrorMessage("end of map not found"), "end of map not found");
  // Through the loader.
  expectOnlyError(replaced("first gateway", "\"caf\\\xC3\xA9\""), 4, 22,
                  "invalid YAML: unknown escape character: \"\\xC3\"");
}

TEST(UntrustedConfigs, ErrorsAreCountedBeyondABound) {
  std::string yaml = kValid + "tenants:\n  - name: blue\n    vni: 1\n    routes:\n";
  for (int i = 0; i < 150; ++i) {
    yaml += "      - {prefix: 10." + std::to_string(i) + ".0.0/16, peer: nowhere}\n";
  }
  ConfigErrors errors = errorsOf(yaml);
  ASSERT_EQ(errors.size(), detail::ErrorSink::kMaxErrors + 1) << describe(errors);
  EXPECT_EQ(errors.back().line, 0);
  EXPECT_EQ(errors.back().message, "... and 50 more errors (the first 100 are shown)");
  EXPECT_EQ(errors.front().message, "refers to peer \"nowhere\", which is not defined (none is)");
}

// --- files that are not mcgw configs: one error that quotes none of their content

const std::string kTopKeys =
    "node, eal, ports, tenants, peers, bgp, vrrp, address-plan, fast-path, path-mtu, api, "
    "encryption, usage, metrics, flow-audit, logging, startup";

void expectNotAConfig(const std::string& content, const std::string& message,
                      const std::vector<std::string>& secrets) {
  ConfigErrors errors = errorsOf(content);
  ASSERT_EQ(errors.size(), 1u) << describe(errors);
  EXPECT_EQ(errors[0].line, 0);
  EXPECT_EQ(errors[0].toString(), std::string(kFile) + ": " + message);
  for (const auto& s : secrets) {
    EXPECT_EQ(errors[0].toString().find(s), std::string::npos) << s;
  }
}

TEST(UntrustedConfigs, PasswdFileIsNotAConfig) {
  expectNotAConfig(
      "root:x:0:0:root:/root:/bin/bash\n"
      "daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n"
      "alice:x:1000:1000:Alice Secret,,,:/home/alice:/bin/bash\n",
      "not an mcgw config: the top level is a plain text value, not a mapping of keys "
      "(" +
          kTopKeys + ")",
      {"root", "alice", "Secret", "bash"});
}

TEST(UntrustedConfigs, ShellScriptIsNotAConfig) {
  expectNotAConfig("#!/bin/sh\nexport TOKEN=s3cr3t\nexec /usr/bin/myapp \"$@\"\n",
                   "not an mcgw config: the top level is a plain text value, not a mapping of keys "
                   "(" +
                       kTopKeys + ")",
                   {"TOKEN", "s3cr3t", "myapp"});
}

TEST(UntrustedConfigs, IniFileIsNotAConfig) {
  // "[database]" reads as a list.
  expectNotAConfig(
      "[database]\npassword = hunter2\nhost = db.example\n",
      "not an mcgw config: the top level is a list, not a mapping of keys (" + kTopKeys + ")",
      {"database", "hunter2", "db.example"});
}

TEST(UntrustedConfigs, JsonOfAnotherProgramIsNotAConfig) {
  expectNotAConfig("{\"name\": \"app\", \"password\": \"hunter2\", \"servers\": [\"db1\"]}\n",
                   "not an mcgw config: none of its 3 top-level keys is one of " + kTopKeys,
                   {"password", "hunter2", "servers", "db1"});
  expectNotAConfig("{\"password\": \"hunter2\"}\n",
                   "not an mcgw config: its only top-level key is not one of " + kTopKeys,
                   {"password", "hunter2"});
  // Key: value lines (a deb822 or properties file) read as such a mapping.
  expectNotAConfig("Types: deb\nURIs: http://deb.debian.org/debian\nSuites: bookworm\n",
                   "not an mcgw config: none of its 3 top-level keys is one of " + kTopKeys,
                   {"Types", "debian", "bookworm"});
}

TEST(UntrustedConfigs, BinaryFileIsRefusedAsText) {
  std::string elf =
      "\x7f"
      "ELF\x02\x01\x01";
  elf += std::string(64, '\0') + "secret\n";
  ConfigErrors errors = errorsOf(elf);
  ASSERT_EQ(errors.size(), 1u) << describe(errors);
  EXPECT_EQ(errors[0].line, 1);
  EXPECT_EQ(errors[0].column, 1);
  EXPECT_EQ(errors[0].toString().find("secret"), std::string::npos);
}

TEST(UntrustedConfigs, ATypoInAConfigStillGetsItsSuggestion) {
  ConfigErrors errors = errorsOf(kValid + "loging:\n  level: info\n");
  ASSERT_EQ(errors.size(), 1u) << describe(errors);
  EXPECT_EQ(errors[0].line, 12);
  EXPECT_EQ(errors[0].message.rfind("unknown key 'loging' (did you mean 'logging'?)", 0), 0u)
      << describe(errors);
}

// --- nesting

TEST(UntrustedConfigs, ModelDepth) {
  // address-plan.clouds[].regions[].vpcs[].prefixes
  EXPECT_EQ(Schema::instance().yamlDepth(), 9);
  EXPECT_GT(kMaxDepth, Schema::instance().yamlDepth());
}

TEST(UntrustedConfigs, DeepFlowNesting) {
  const std::string message = "nested deeper than 32 levels; an mcgw config nests at most 9";
  // Level 1 is the top mapping; the 32nd '[' opens level 33.
  expectOnlyError(kValid + "x: " + std::string(40, '[') + std::string(40, ']') + "\n", 12, 35,
                  message);
  // Unclosed, yaml-cpp reads each '[' as a list that may be a key: two levels each.
  ConfigErrors errors = errorsOf(std::string(100000, '['));
  ASSERT_EQ(errors.size(), 1u) << describe(errors);
  EXPECT_EQ(errors[0].message, message);
  EXPECT_EQ(errors[0].line, 1);
  EXPECT_EQ(errors[0].column, 17);
}

TEST(UntrustedConfigs, DeepBlockNesting) {
  std::string yaml = kValid + "x:\n";
  for (int i = 0; i < 40; ++i) {
    yaml += std::string(2 * i + 2, ' ') + "y:\n";
  }
  // x's mapping (line 13) is level 2: level 33 is the mapping of line 44.
  expectOnlyError(yaml, 44, 65, "nested deeper than 32 levels; an mcgw config nests at most 9");
}

// yaml-cpp's own limit (500 levels, "bad file") gets the same message, at
// its mark: reached only with a limit of ours above it.
TEST(UntrustedConfigs, YamlCppDepthLimitHasTheSameMessage) {
  detail::ErrorSink sink(kFile);
  detail::YamlDocument doc;
  detail::YamlLimits limits;
  limits.max_depth = 100000;
  limits.model_depth = 9;
  EXPECT_FALSE(doc.read("x: " + std::string(1000, '[') + std::string(1000, ']'), limits, sink));
  ConfigErrors errors = sink.take();
  ASSERT_EQ(errors.size(), 1u) << describe(errors);
  EXPECT_EQ(errors[0].message, "nested deeper than 499 levels; an mcgw config nests at most 9");
  EXPECT_EQ(errors[0].line, 1);
  EXPECT_GT(errors[0].column, 400);
}

TEST(UntrustedConfigs, DeepestModelNestingLoads) {
  LoadResult r = loadConfigText(kValid +
                                    "address-plan:\n  clouds:\n    - name: aws\n      regions:\n"
                                    "        - name: r1\n          vpcs:\n            - name: v1\n"
                                    "              prefixes: [10.2.0.0/16]\n",
                                kFile);
  ASSERT_TRUE(r.ok()) << describe(r.error());
}

// --- size, lists, nodes

TEST(UntrustedConfigs, TextLargerThanTheLimit) {
  std::string big = kValid + "# " + std::string(kMaxFileBytes, 'x') + "\n";
  expectOnlyError(
      big, 0, 0,
      std::to_string(big.size()) + " bytes; a config may be at most 4194304 bytes (4 MiB)");
}

class TempFile {
 public:
  TempFile() {
    char tmpl[] = "/tmp/mcgw-untrusted-XXXXXX";
    int fd = mkstemp(tmpl);
    EXPECT_GE(fd, 0);
    close(fd);
    path_ = tmpl;
  }
  ~TempFile() { fs::remove(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST(UntrustedConfigs, FileLargerThanTheLimitIsNotRead) {
  TempFile f;
  fs::resize_file(f.path(), 50 << 20);  // sparse: reading it would take a while
  auto start = std::chrono::steady_clock::now();
  LoadResult r = loadConfigFile(f.path());
  ASSERT_FALSE(r.ok());
  ASSERT_EQ(r.error().size(), 1u) << describe(r.error());
  EXPECT_EQ(r.error()[0].toString(),
            f.path() + ": 52428800 bytes; a config may be at most 4194304 bytes (4 MiB)");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
}

TEST(UntrustedConfigs, EndlessFileIsReadUpToTheLimit) {
  auto r = readConfigFile("/dev/zero");
  ASSERT_FALSE(r.ok());
  ASSERT_EQ(r.error().size(), 1u);
  EXPECT_EQ(r.error()[0].message,
            "more than 4194304 bytes; a config may be at most 4194304 bytes (4 MiB)");
}

TEST(UntrustedConfigs, FileAtTheLimitIsRead) {
  TempFile f;
  std::string text = kValid + "# ";
  text += std::string(kMaxFileBytes - text.size() - 1, 'x') + "\n";
  ASSERT_EQ(text.size(), kMaxFileBytes);
  std::ofstream(f.path(), std::ios::binary) << text;
  LoadResult r = loadConfigFile(f.path());
  EXPECT_TRUE(r.ok()) << describe(r.error());
}

// A list over its max-elements is refused before its entries are walked:
// the only error is the count, although every entry is wrong.
TEST(UntrustedConfigs, TooManyRoutesAreRefusedBeforeTheWalk) {
  std::string yaml = kValid + "tenants:\n  - name: blue\n    vni: 1\n    routes:\n";
  for (int i = 0; i < 16385; ++i) {
    yaml += "      - {prefix: bad, peer: nowhere}\n";
  }
  expectOnlyError(yaml, 16, 7, "16385 'route' entries, more than the 16384 allowed",
                  "/mcgw:tenants/tenant[name='blue']/routes/route");
}

TEST(UntrustedConfigs, TooManyLinesPerPeer) {
  std::string yaml = kValid + "peers:\n  - name: b\n    lines:\n";
  for (int i = 0; i < 9; ++i) {
    yaml += "      - {name: l" + std::to_string(i) + "}\n";
  }
  expectOnlyError(yaml, 15, 7, "9 'line' entries, more than the 8 allowed",
                  "/mcgw:peers/peer[name='b']/lines/line");
}

TEST(UntrustedConfigs, TooManyLeafListItems) {
  std::string items;
  for (int i = 0; i < 65; ++i) {
    items += (i ? ", " : "") + std::to_string(i);
  }
  expectOnlyError(replaced("[--iova-mode=va]", "[" + items + "]"), 11, 15,
                  "65 'extra-args' items, more than the 64 allowed", "/mcgw:eal/extra-args");
}

// Every list of the model has a limit.
TEST(UntrustedConfigs, EveryListIsBounded) {
  const auto limits = Schema::instance().listLimits();
  EXPECT_GE(limits.size(), 20u);
  for (const auto& l : limits) {
    EXPECT_GT(l.max, 0u) << l.path << " has no max-elements";
  }
}

TEST(UntrustedConfigs, AliasBombIsRefusedBeforeTheWalk) {
  std::string yaml = kValid + "x0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i < 10; ++i) {
    yaml += "x" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
    for (int j = 0; j < 10; ++j) {
      yaml += (j ? ", *a" : "*a") + std::to_string(i - 1);
    }
    yaml += "]\n";
  }
  auto start = std::chrono::steady_clock::now();
  // a4 stands for 111111 nodes: x5's 8th alias of it passes 10^6.
  expectOnlyError(yaml, 17, 45,
                  "this alias brings the document to more than 1000000 nodes (an alias counts the "
                  "nodes it names each time it is used); a config may have at most 1000000");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
}

TEST(UntrustedConfigs, AliasCycle) {
  expectOnlyError(replaced("node:\n", "node: &n\n  self: *n\n"), 2, 9,
                  "an alias inside the node its anchor names (a cycle)");
}

TEST(UntrustedConfigs, AliasesWithinTheLimitWork) {
  LoadResult r = loadConfigText(
      "node: {name: gw, site: s}\n"
      "ports:\n"
      "  - {name: wan0, role: wan, vdev: net_null0, addresses: [10.1.0.1/24]}\n"
      "tenants:\n  - {name: blue, vni: 1}\n  - {name: red, vni: 2}\n"
      "peers:\n"
      "  - name: b\n"
      "    tenants: &both [blue, red]\n"
      "    lines: [{name: l1, port: wan0, local-vtep: 10.1.0.1, remote-vtep: 10.1.0.2}]\n"
      "  - name: c\n"
      "    tenants: *both\n"
      "    lines: [{name: l1, port: wan0, local-vtep: 10.1.0.1, remote-vtep: 10.1.0.3}]\n",
      kFile);
  ASSERT_TRUE(r.ok()) << describe(r.error());
  ASSERT_EQ((*r)->peers.size(), 2u);
  EXPECT_EQ((*r)->peers[1].tenants, (std::vector<std::string>{"blue", "red"}));
}

TEST(UntrustedConfigs, TooManyNodes) {
  std::string yaml = kValid + "x: [";
  for (uint64_t i = 0; i < kMaxNodes; ++i) {
    yaml += "1,";
  }
  yaml += "]\n";
  ConfigErrors errors = errorsOf(yaml);
  ASSERT_EQ(errors.size(), 1u) << describe(errors);
  EXPECT_EQ(errors[0].line, 12);
  EXPECT_EQ(errors[0].message,
            "more than 1000000 nodes (keys, values and list items); a config may have at most "
            "1000000");
}

}  // namespace
}  // namespace mcgw::config
