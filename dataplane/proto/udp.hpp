// UDP (RFC 768).   | Source Port (2) | Dest Port (2) | Length (2) | Checksum (2) |
#pragma once

#include "dataplane/proto/bytes.hpp"

namespace mcgw::proto {

inline constexpr uint16_t kVxlanPort = 4789;
inline constexpr uint16_t kGenevePort = 6081;

struct UdpHeader {
  Be16 src_port;
  Be16 dst_port;
  Be16 length;
  Be16 checksum;
};
static_assert(sizeof(UdpHeader) == 8);

// The payload ends at the UDP length, which must fit the span.
inline Parsed<UdpHeader> parseUdp(Bytes b) {
  const auto* h = headerAt<UdpHeader>(b);
  if (!h) {
    return Parsed<UdpHeader>::fail(ParseError::kTruncated);
  }
  size_t len = h->length.get();
  if (len < sizeof(UdpHeader) || len > b.size()) {
    return Parsed<UdpHeader>::fail(ParseError::kBadTotalLength);
  }
  return {h, sizeof(UdpHeader), b.subspan(sizeof(UdpHeader), len - sizeof(UdpHeader)),
          ParseError::kOk};
}

}  // namespace mcgw::proto
