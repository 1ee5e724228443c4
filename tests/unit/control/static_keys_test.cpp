// Static key files (docs/encryption.md, "Static keys"): what is read, what is
// refused with which message, and that no message shows key material; the
// file checks (mode, owner, type, size) on real files.
#include "control/encryption/static_keys.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <fstream>
#include <string>

namespace mcgw::encryption {
namespace {

const std::string kKey1 =
    "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1fcafebabe";
const std::string kKey2 =
    "a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebfdeadbeef";

// No 8-character piece of either key (in either case) is in `error`.
void expectNoKeyMaterial(const std::string& error) {
  std::string lower = error;
  for (char& c : lower) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  for (const std::string& k : {kKey1, kKey2}) {
    for (size_t i = 0; i + 8 <= k.size(); ++i) {
      EXPECT_EQ(lower.find(k.substr(i, 8)), std::string::npos)
          << "key material " << k.substr(i, 8) << " in: " << error;
    }
  }
}

TEST(StaticKeys, ReadsBothDirectionsOfEachLine) {
  const std::string text = "# comment\n\nline1 out 0x1001 0x" + kKey1 + "  # trailing\n" +
                           "line1\tin 8193 " + kKey2 + "\n";
  auto r = parseStaticKeys(text, "k");
  ASSERT_TRUE(r) << r.error();
  ASSERT_EQ(r->size(), 1u);
  const StaticLineKeys& k = r->at("line1");
  EXPECT_EQ(k.out.spi, 0x1001u);
  EXPECT_EQ(k.in.spi, 8193u);
  EXPECT_EQ(k.out.key[0], 0x00);
  EXPECT_EQ(k.out.key[31], 0x1f);
  EXPECT_EQ(k.out.salt, (crypto::Salt{0xca, 0xfe, 0xba, 0xbe}));
  EXPECT_EQ(k.in.key[0], 0xa0);
  EXPECT_EQ(k.in.salt, (crypto::Salt{0xde, 0xad, 0xbe, 0xef}));
}

TEST(StaticKeys, RefusalsSayWhereAndShowNoKey) {
  struct Case {
    std::string text, want;
  };
  const Case cases[] = {
      {"line1 out 0x1001\n", "k:1: expected LINE out|in SPI KEY-AND-SALT, found 3 field(s)"},
      {"line1 up 0x1001 " + kKey1 + "\n",
       "k:1: the direction field (2 characters) is neither \"out\" nor \"in\""},
      {"line1 out 255 " + kKey1 + "\n", "k:1: SPI must be a number from 256"},
      {"line1 out 0x1g " + kKey1 + "\n", "k:1: SPI must be a number from 256"},
      {"line1 out 0x100000000 " + kKey1 + "\n", "k:1: SPI must be a number from 256"},
      {"line1 out 0x1001 " + kKey1.substr(2) + "\n", "k:1: the key and salt must be 72 hex"},
      {"line1 out 0x1001 " + kKey1.substr(0, 70) + "zz\n", "k:1: the key and salt must be 72 hex"},
      {"line1 out 0x1001 " + kKey1 + "\nline1 in 0x2001 " + kKey1 + "\n",
       "k:2: this key is also another SA's"},
      {"line1 out 0x1001 " + kKey1 + "\nline1 out 0x1002 " + kKey2 + "\n",
       "k:2: a second out SA for line line1"},
      {"line1 in 0x1001 " + kKey1 + "\nline2 in 0x1001 " + kKey2 + "\n",
       "k:2: SPI 4097 is already another inbound SA's"},
      {"line1 out 0x1001 " + kKey1 + "\n", "k:0: line line1 has no in SA"},
      {"-bad out 0x1001 " + kKey1 + "\n",
       "k:1: the line name field (4 characters) is not a line name"},
  };
  for (const auto& c : cases) {
    auto r = parseStaticKeys(c.text, "k");
    ASSERT_FALSE(r) << c.text;
    EXPECT_EQ(r.error().rfind(c.want, 0), 0u) << r.error();
    expectNoKeyMaterial(r.error());
  }
}

// A key pasted into the wrong column: the message says which field and how
// long it is, and shows none of it.
TEST(StaticKeys, KeyInAnotherColumnIsNotShown) {
  struct Case {
    std::string text, want;
  };
  const Case cases[] = {
      {kKey2 + " out 0x1001 " + kKey1 + "\n",
       "k:1: the line name field (72 characters) is not a line name"},
      {"0x" + kKey1 + " in 0x1001 " + kKey2 + "\n",
       "k:1: the line name field (74 characters) is not a line name"},
      {"line1 " + kKey1 + " 0x1001 " + kKey2 + "\n",
       "k:1: the direction field (72 characters) is neither \"out\" nor \"in\""},
      {"line1 out 0x1001 " + kKey1 + "\nline1 0x" + kKey2 + " 0x2001 " + kKey1 + "\n",
       "k:2: the direction field (74 characters) is neither \"out\" nor \"in\""},
      {"line1 out " + kKey1 + " " + kKey2 + "\n", "k:1: SPI must be a number from 256"},
      {kKey1 + " " + kKey2 + " 0x1001\n",
       "k:1: expected LINE out|in SPI KEY-AND-SALT, found 3 field(s)"},
  };
  for (const auto& c : cases) {
    auto r = parseStaticKeys(c.text, "k");
    ASSERT_FALSE(r) << c.text;
    EXPECT_EQ(r.error().rfind(c.want, 0), 0u) << r.error();
    expectNoKeyMaterial(r.error());
  }
}

class StaticKeyFile : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/mcgw-static-keys-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/keys";
    std::ofstream(path_) << "line1 out 0x1001 " << kKey1 << "\nline1 in 0x2001 " << kKey2 << "\n";
  }
  void TearDown() override {
    std::remove(path_.c_str());
    std::remove((dir_ + "/link").c_str());
    ::rmdir(dir_.c_str());
  }
  std::string dir_, path_;
};

TEST_F(StaticKeyFile, Mode0600And0400AreRead) {
  for (mode_t m : {0600, 0400}) {
    ASSERT_EQ(::chmod(path_.c_str(), m), 0);
    auto r = readStaticKeys(path_);
    ASSERT_TRUE(r) << r.error();
    EXPECT_EQ(r->at("line1").in.spi, 0x2001u);
  }
}

TEST_F(StaticKeyFile, GroupOrOtherBitsAreRefused) {
  for (mode_t m : {0640, 0604, 0644, 0660}) {
    ASSERT_EQ(::chmod(path_.c_str(), m), 0);
    auto r = readStaticKeys(path_);
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().find("chmod 0600"), std::string::npos) << r.error();
  }
}

TEST_F(StaticKeyFile, SymlinksDirectoriesAndMissingFilesAreRefused) {
  ASSERT_EQ(::chmod(path_.c_str(), 0600), 0);
  ASSERT_EQ(::symlink(path_.c_str(), (dir_ + "/link").c_str()), 0);
  EXPECT_FALSE(readStaticKeys(dir_ + "/link"));
  auto d = readStaticKeys(dir_);
  ASSERT_FALSE(d);
  EXPECT_NE(d.error().find("not a regular file"), std::string::npos) << d.error();
  auto m = readStaticKeys(dir_ + "/none");
  ASSERT_FALSE(m);
  EXPECT_NE(m.error().find("cannot open"), std::string::npos) << m.error();
}

TEST_F(StaticKeyFile, KeyInTheNameOrDirectionColumnIsNotShown) {
  for (const std::string& text :
       {kKey1 + " out 0x1001 " + kKey2 + "\n", "line1 " + kKey2 + " 0x1001 " + kKey1 + "\n"}) {
    std::ofstream(path_) << text;
    ASSERT_EQ(::chmod(path_.c_str(), 0600), 0);
    auto r = readStaticKeys(path_);
    ASSERT_FALSE(r) << text;
    EXPECT_EQ(r.error().rfind(path_ + ":1: the ", 0), 0u) << r.error();
    EXPECT_NE(r.error().find("(72 characters)"), std::string::npos) << r.error();
    expectNoKeyMaterial(r.error());
  }
}

TEST_F(StaticKeyFile, LargerThanTheBoundIsRefused) {
  std::ofstream(path_) << std::string(kMaxKeyFileBytes + 1, '#');
  ASSERT_EQ(::chmod(path_.c_str(), 0600), 0);
  auto r = readStaticKeys(path_);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().find("larger than 65536 bytes"), std::string::npos) << r.error();
}

}  // namespace
}  // namespace mcgw::encryption
