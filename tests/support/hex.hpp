// Hex text and bytes, for tests and the test-only tools (one copy).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mcgw::test {

// The value of one hex digit, or -1.
constexpr int hexDigit(char c) {
  return c >= '0' && c <= '9'   ? c - '0'
         : c >= 'a' && c <= 'f' ? c - 'a' + 10
         : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                : -1;
}

// "45 00 00 1c" → bytes, for byte tables: anything but hex digits (spaces,
// '|') is skipped.
template <typename Byte = std::byte>
std::vector<Byte> hex(std::string_view s) {
  std::vector<Byte> out;
  int high = -1;
  for (char c : s) {
    const int v = hexDigit(c);
    if (v < 0) {
      continue;
    }
    if (high < 0) {
      high = v;
    } else {
      out.push_back(static_cast<Byte>(high << 4 | v));
      high = -1;
    }
  }
  return out;
}

// Strict, for input read from another program: an even number of hex
// digits and nothing else, else nullopt.
template <typename Byte = std::byte>
std::optional<std::vector<Byte>> parseHex(std::string_view s) {
  if (s.size() % 2) {
    return std::nullopt;
  }
  std::vector<Byte> out;
  out.reserve(s.size() / 2);
  for (size_t i = 0; i < s.size(); i += 2) {
    const int high = hexDigit(s[i]), low = hexDigit(s[i + 1]);
    if (high < 0 || low < 0) {
      return std::nullopt;
    }
    out.push_back(static_cast<Byte>(high << 4 | low));
  }
  return out;
}

// Bytes → "4500001c" (lower case, no separators).
template <typename Byte>
std::string toHex(const Byte* p, size_t n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string s;
  s.reserve(n * 2);
  for (size_t i = 0; i < n; ++i) {
    const auto v = static_cast<uint8_t>(p[i]);
    s += kDigits[v >> 4];
    s += kDigits[v & 15];
  }
  return s;
}

template <typename Byte>
std::string toHex(const std::vector<Byte>& v) {
  return toHex(v.data(), v.size());
}

}  // namespace mcgw::test
