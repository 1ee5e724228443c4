// IPv4 (RFC 791).
//
//    0                   1                   2                   3
//    0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//   +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//   |Version|  IHL  |  DSCP     |ECN|          Total Length         |
//   |         Identification        |Flags|      Fragment Offset    |
//   |  Time to Live |    Protocol   |         Header Checksum       |
//   |                       Source Address                          |
//   |                    Destination Address                        |
//   |                    Options (IHL > 5)                          |
#pragma once

#include "dataplane/proto/bytes.hpp"

namespace mcgw::proto {

inline constexpr uint8_t kIpProtoIcmp = 1;
inline constexpr uint8_t kIpProtoTcp = 6;
inline constexpr uint8_t kIpProtoUdp = 17;
inline constexpr uint8_t kIpProtoIpv6Icmp = 58;

struct Ipv4Header {
  uint8_t version_ihl;
  uint8_t tos;  // DSCP (6) | ECN (2)
  Be16 total_length;
  Be16 id;
  Be16 frag_off;  // flags (3: reserved, DF, MF) | offset in 8-byte units (13)
  uint8_t ttl;
  uint8_t protocol;
  Be16 checksum;
  uint8_t src[4];
  uint8_t dst[4];

  uint8_t version() const { return version_ihl >> 4; }
  size_t headerLength() const { return static_cast<size_t>(version_ihl & 0x0f) * 4; }
  uint8_t dscp() const { return tos >> 2; }
  uint8_t ecn() const { return tos & 0x03; }
  bool dontFragment() const { return frag_off.get() & 0x4000; }
  bool moreFragments() const { return frag_off.get() & 0x2000; }
  uint16_t fragmentOffset() const { return frag_off.get() & 0x1fff; }  // 8-byte units
  bool isFragment() const { return moreFragments() || fragmentOffset() != 0; }
};
static_assert(sizeof(Ipv4Header) == 20);

// Checks version, IHL (options included) and total length; the payload ends
// at total length (Ethernet padding is not payload).
inline Parsed<Ipv4Header> parseIpv4(Bytes b) {
  const auto* h = headerAt<Ipv4Header>(b);
  if (!h) {
    return Parsed<Ipv4Header>::fail(ParseError::kTruncated);
  }
  if (h->version() != 4) {
    return Parsed<Ipv4Header>::fail(ParseError::kBadVersion);
  }
  size_t hl = h->headerLength();
  if (hl < sizeof(Ipv4Header) || hl > b.size()) {
    return Parsed<Ipv4Header>::fail(ParseError::kBadHeaderLength);
  }
  size_t total = h->total_length.get();
  if (total < hl || total > b.size()) {
    return Parsed<Ipv4Header>::fail(ParseError::kBadTotalLength);
  }
  return {h, hl, b.subspan(hl, total - hl), ParseError::kOk};
}

}  // namespace mcgw::proto
