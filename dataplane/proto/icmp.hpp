// ICMP (RFC 792) and ICMPv6 (RFC 4443): the common 8-byte head.
//   | Type (1) | Code (1) | Checksum (2) | rest of header (4): id/seq, MTU, pointer |
#pragma once

#include "dataplane/proto/bytes.hpp"

namespace mcgw::proto {

inline constexpr uint8_t kIcmpEchoReply = 0;
inline constexpr uint8_t kIcmpDestUnreachable = 3;
inline constexpr uint8_t kIcmpPortUnreachableCode = 3;
inline constexpr uint8_t kIcmpFragNeededCode = 4;
inline constexpr uint8_t kIcmpEchoRequest = 8;
inline constexpr uint8_t kIcmpTimeExceeded = 11;

inline constexpr uint8_t kIcmp6DestUnreachable = 1;
inline constexpr uint8_t kIcmp6PortUnreachableCode = 4;
inline constexpr uint8_t kIcmp6PacketTooBig = 2;
inline constexpr uint8_t kIcmp6TimeExceeded = 3;
inline constexpr uint8_t kIcmp6EchoRequest = 128;
inline constexpr uint8_t kIcmp6EchoReply = 129;
inline constexpr uint8_t kIcmp6NeighborSolicit = 135;
inline constexpr uint8_t kIcmp6NeighborAdvert = 136;

struct IcmpHeader {
  uint8_t type;
  uint8_t code;
  Be16 checksum;
  Be32 rest;  // echo: id | seq; frag-needed: unused | next-hop MTU; PTB: MTU

  // ICMPv4 frag-needed's next-hop MTU (RFC 1191: the low 16 bits).
  uint16_t mtu4() const { return static_cast<uint16_t>(rest.get() & 0xffff); }
  // ICMPv6 Packet Too Big's MTU (32 bits).
  uint32_t mtu6() const { return rest.get(); }
};
static_assert(sizeof(IcmpHeader) == 8);

// ICMP errors carry the offending packet; informational messages do not.
constexpr bool isIcmpError(uint8_t type) {
  return type == kIcmpDestUnreachable || type == kIcmpTimeExceeded || type == 4 /*quench*/ ||
         type == 5 /*redirect*/ || type == 12 /*parameter problem*/;
}
constexpr bool isIcmp6Error(uint8_t type) {
  return type < 128;
}

inline Parsed<IcmpHeader> parseIcmp(Bytes b) {
  const auto* h = headerAt<IcmpHeader>(b);
  if (!h) {
    return Parsed<IcmpHeader>::fail(ParseError::kTruncated);
  }
  return {h, sizeof(IcmpHeader), b.subspan(sizeof(IcmpHeader)), ParseError::kOk};
}

}  // namespace mcgw::proto
