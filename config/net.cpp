#include "config/net.hpp"

#include <arpa/inet.h>

#include <charconv>

namespace mcgw::config {

std::optional<IpAddress> IpAddress::parse(std::string_view text) {
  std::string s(text);
  IpAddress a;
  if (inet_pton(AF_INET, s.c_str(), a.bytes.data()) == 1) {
    a.family = Family::V4;
    return a;
  }
  if (inet_pton(AF_INET6, s.c_str(), a.bytes.data()) == 1) {
    a.family = Family::V6;
    return a;
  }
  return std::nullopt;
}

std::string IpAddress::toString() const {
  char buf[INET6_ADDRSTRLEN];
  inet_ntop(family == Family::V4 ? AF_INET : AF_INET6, bytes.data(), buf, sizeof buf);
  return buf;
}

std::optional<IpPrefix> IpPrefix::parse(std::string_view text) {
  auto slash = text.find('/');
  if (slash == std::string_view::npos) {
    return std::nullopt;
  }
  auto addr = IpAddress::parse(text.substr(0, slash));
  if (!addr) {
    return std::nullopt;
  }
  auto len_text = text.substr(slash + 1);
  unsigned len = 0;
  auto [ptr, ec] = std::from_chars(len_text.data(), len_text.data() + len_text.size(), len);
  if (ec != std::errc() || ptr != len_text.data() + len_text.size() || len_text.empty() ||
      len > addr->bits()) {
    return std::nullopt;
  }
  return IpPrefix{*addr, static_cast<uint8_t>(len)};
}

std::string IpPrefix::toString() const {
  return address.toString() + "/" + std::to_string(length);
}

IpPrefix IpPrefix::network() const {
  IpPrefix p = *this;
  unsigned total = address.bits() / 8;
  for (unsigned i = 0; i < total; ++i) {
    unsigned first_bit = i * 8;
    if (first_bit >= length) {
      p.address.bytes[i] = 0;
    } else if (first_bit + 8 > length) {
      p.address.bytes[i] &= static_cast<uint8_t>(0xff << (8 - (length - first_bit)));
    }
  }
  return p;
}

bool IpPrefix::contains(const IpAddress& a) const {
  if (a.family != address.family) {
    return false;
  }
  return IpPrefix{a, length}.network() == network();
}

bool IpPrefix::overlaps(const IpPrefix& other) const {
  if (other.address.family != address.family) {
    return false;
  }
  const IpPrefix& shorter = length <= other.length ? *this : other;
  const IpPrefix& longer = length <= other.length ? other : *this;
  return shorter.contains(longer.address);
}

std::optional<MacAddress> MacAddress::parse(std::string_view text) {
  // "xx:xx:xx:xx:xx:xx": 17 characters, a ':' after every octet but the last.
  if (text.size() != 17) {
    return std::nullopt;
  }
  auto nibble = [](char ch) -> int {
    if (ch >= '0' && ch <= '9') {
      return ch - '0';
    }
    if (ch >= 'a' && ch <= 'f') {
      return ch - 'a' + 10;
    }
    if (ch >= 'A' && ch <= 'F') {
      return ch - 'A' + 10;
    }
    return -1;
  };
  MacAddress m;
  for (size_t i = 0; i < m.bytes.size(); ++i) {
    size_t at = i * 3;
    int hi = nibble(text[at]);
    int lo = nibble(text[at + 1]);
    if (hi < 0 || lo < 0 || (i + 1 < m.bytes.size() && text[at + 2] != ':')) {
      return std::nullopt;
    }
    m.bytes[i] = static_cast<uint8_t>(hi << 4 | lo);
  }
  return m;
}

std::string MacAddress::toString() const {
  static constexpr const char* kHex = "0123456789abcdef";
  std::string out;
  out.reserve(17);
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (i > 0) {
      out += ':';
    }
    out += kHex[bytes[i] >> 4];
    out += kHex[bytes[i] & 15];
  }
  return out;
}

}  // namespace mcgw::config
