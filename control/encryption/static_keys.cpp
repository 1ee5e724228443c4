#include "control/encryption/static_keys.hpp"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <set>
#include <sstream>
#include <vector>

#include "config/text.hpp"
#include "control/core/fd.hpp"

namespace mcgw::encryption {

namespace {

int hexDigit(char c) {
  if (c >= '0' && c <= '9') {
    return c - '0';
  }
  c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

// "0x..." or plain hex of exactly n bytes into out.
bool parseHex(std::string_view s, uint8_t* out, size_t n) {
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    s.remove_prefix(2);
  }
  if (s.size() != 2 * n) {
    return false;
  }
  for (size_t i = 0; i < n; ++i) {
    const int hi = hexDigit(s[2 * i]), lo = hexDigit(s[2 * i + 1]);
    if (hi < 0 || lo < 0) {
      return false;
    }
    out[i] = static_cast<uint8_t>(hi << 4 | lo);
  }
  return true;
}

// What the YANG model's `name` type allows.
bool isLineName(const std::string& s) {
  if (s.empty() || s.size() > 63 || !std::isalpha(static_cast<unsigned char>(s[0]))) {
    return false;
  }
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') {
      return false;
    }
  }
  return true;
}

bool parseSpi(std::string_view s, uint32_t* spi) {
  int base = 10;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    s.remove_prefix(2);
    base = 16;
  }
  if (s.empty() || s.size() > 10) {
    return false;
  }
  uint64_t v = 0;
  for (char c : s) {
    const int d = hexDigit(c);
    if (d < 0 || d >= base) {
      return false;
    }
    v = v * static_cast<uint64_t>(base) + static_cast<uint64_t>(d);
  }
  if (v > 0xffffffffu) {
    return false;
  }
  *spi = static_cast<uint32_t>(v);
  return true;
}

}  // namespace

Result<std::map<std::string, StaticLineKeys>, std::string> parseStaticKeys(
    std::string_view text, const std::string& where) {
  struct Seen {
    bool out = false, in = false;
  };
  std::map<std::string, StaticLineKeys> keys;
  std::map<std::string, Seen> seen;
  std::set<uint32_t> spis;
  std::vector<std::array<uint8_t, 36>> materials;
  size_t line_no = 0;
  auto fail = [&](const std::string& why) {
    OPENSSL_cleanse(materials.data(), materials.size() * sizeof(materials[0]));
    return unexpected(where + ":" + std::to_string(line_no) + ": " + why);
  };
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) {
      end = text.size();
    }
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (size_t hash = line.find('#'); hash != std::string_view::npos) {
      line = line.substr(0, hash);
    }
    std::vector<std::string_view> words;
    for (size_t i = 0; i < line.size();) {
      while (i < line.size() && std::isspace(static_cast<unsigned char>(line[i]))) {
        ++i;
      }
      size_t j = i;
      while (j < line.size() && !std::isspace(static_cast<unsigned char>(line[j]))) {
        ++j;
      }
      if (j > i) {
        words.push_back(line.substr(i, j - i));
      }
      i = j;
    }
    if (words.empty()) {
      continue;
    }
    if (words.size() != 4) {
      return fail("expected LINE out|in SPI KEY-AND-SALT, found " + std::to_string(words.size()) +
                  " field(s)");
    }
    // A field that is not what its column expects may be a key pasted into
    // the wrong column: the messages give its length, never its text.
    const std::string name(words[0]);
    if (!isLineName(name)) {
      return fail("the line name field (" + std::to_string(name.size()) +
                  " characters) is not a line name (a letter, then at most 62 letters, digits, "
                  "'-', '_' or '.')");
    }
    const bool out = words[1] == "out";
    if (!out && words[1] != "in") {
      return fail("the direction field (" + std::to_string(words[1].size()) +
                  " characters) is neither \"out\" nor \"in\"");
    }
    uint32_t spi = 0;
    if (!parseSpi(words[2], &spi) || spi < 256) {
      return fail("SPI must be a number from 256 to 4294967295 (0x100 to 0xffffffff)");
    }
    std::array<uint8_t, 36> material{};
    if (!parseHex(words[3], material.data(), material.size())) {
      OPENSSL_cleanse(material.data(), material.size());
      return fail("the key and salt must be 72 hex digits (36 bytes: key 32, salt 4)");
    }
    for (const auto& m : materials) {
      if (CRYPTO_memcmp(m.data(), material.data(), 32) == 0) {
        OPENSSL_cleanse(material.data(), material.size());
        return fail("this key is also another SA's: every SA needs its own key");
      }
    }
    materials.push_back(material);
    OPENSSL_cleanse(material.data(), material.size());
    Seen& s = seen[name];
    if (out ? s.out : s.in) {
      return fail("a second " + std::string(out ? "out" : "in") + " SA for line " + name);
    }
    (out ? s.out : s.in) = true;
    if (out) {
      // Outbound SPIs are the peer's to choose; inbound ones must differ
      // from each other (they index this gateway's SAs).
    } else if (!spis.insert(spi).second) {
      return fail("SPI " + std::to_string(spi) + " is already another inbound SA's");
    }
    engine::SaMaterial& sa = out ? keys[name].out : keys[name].in;
    sa.generation = 1;
    sa.spi = spi;
    std::copy_n(materials.back().begin(), 32, sa.key.begin());
    std::copy_n(materials.back().begin() + 32, 4, sa.salt.begin());
  }
  for (const auto& [name, s] : seen) {
    if (!s.out || !s.in) {
      line_no = 0;
      return fail("line " + name + " has no " + (s.out ? "in" : "out") + " SA");
    }
  }
  OPENSSL_cleanse(materials.data(), materials.size() * sizeof(materials[0]));
  return keys;
}

Result<std::map<std::string, StaticLineKeys>, std::string> readStaticKeys(const std::string& path) {
  core::Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  if (!fd) {
    return unexpected("cannot open static key file " + text::quote(path) + ": " +
                      std::strerror(errno));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) {
    return unexpected("cannot stat static key file " + text::quote(path) + ": " +
                      std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode)) {
    return unexpected("static key file " + text::quote(path) + " is not a regular file");
  }
  if (st.st_uid != ::geteuid()) {
    return unexpected("static key file " + text::quote(path) + " is owned by uid " +
                      std::to_string(st.st_uid) + ", not by the user mcgwd runs as (" +
                      std::to_string(::geteuid()) + ")");
  }
  if ((st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return unexpected("static key file " + text::quote(path) + " has mode " + mode +
                      ": keys must be readable by their owner only (chmod 0600)");
  }
  if (st.st_size > static_cast<off_t>(kMaxKeyFileBytes)) {
    return unexpected("static key file " + text::quote(path) + " is larger than " +
                      std::to_string(kMaxKeyFileBytes) + " bytes");
  }
  std::string buf(static_cast<size_t>(st.st_size), '\0');
  if (core::readFully(fd.get(), buf.data(), buf.size()) != 0) {
    OPENSSL_cleanse(buf.data(), buf.size());
    return unexpected("cannot read static key file " + text::quote(path));
  }
  auto r = parseStaticKeys(buf, path);
  OPENSSL_cleanse(buf.data(), buf.size());
  return r;
}

}  // namespace mcgw::encryption
