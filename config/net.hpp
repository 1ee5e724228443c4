// IP addresses and prefixes as the config holds them.
#pragma once

#include <array>
#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace mcgw::config {

enum class Family : uint8_t { V4 = 4, V6 = 6 };

// An IPv4 or IPv6 address in network byte order (IPv4 uses the first 4 bytes).
struct IpAddress {
  Family family = Family::V4;
  std::array<uint8_t, 16> bytes{};

  // Parses "192.0.2.1" or "2001:db8::1" (no zone); nullopt if it is neither.
  static std::optional<IpAddress> parse(std::string_view text);
  std::string toString() const;
  unsigned bits() const { return family == Family::V4 ? 32 : 128; }
  auto operator<=>(const IpAddress&) const = default;
};

// A prefix: address and length.  As a route or VPC range it has no host bits;
// as an interface address (InterfaceAddress) the address keeps them.
struct IpPrefix {
  IpAddress address;
  uint8_t length = 0;

  // Parses "10.1.0.0/16"; nullopt if malformed or the length is out of range.
  static std::optional<IpPrefix> parse(std::string_view text);
  std::string toString() const;
  // The same prefix with host bits cleared.
  IpPrefix network() const;
  bool hasHostBits() const { return network().address != address; }
  bool contains(const IpAddress& a) const;
  bool overlaps(const IpPrefix& other) const;
  auto operator<=>(const IpPrefix&) const = default;
};

using InterfaceAddress = IpPrefix;

// An Ethernet MAC address, "02:00:00:00:00:01".
struct MacAddress {
  std::array<uint8_t, 6> bytes{};

  // Parses six colon-separated hex octets; nullopt otherwise.
  static std::optional<MacAddress> parse(std::string_view text);
  std::string toString() const;
  bool isUnicast() const { return (bytes[0] & 1) == 0 && bytes != std::array<uint8_t, 6>{}; }
  auto operator<=>(const MacAddress&) const = default;
};

}  // namespace mcgw::config
