// Ethernet II, with up to two 802.1Q / 802.1ad tags.
//
//   +-------------------+-------------------+-----------+------------
//   | destination (6)   | source (6)        | type (2)  | payload
//   +-------------------+-------------------+-----------+------------
//   a VLAN tag inserts   | TPID 0x8100/0x88a8 (2) | TCI (2) |  before type
#pragma once

#include "dataplane/proto/bytes.hpp"

namespace mcgw::proto {

inline constexpr uint16_t kEtherTypeIpv4 = 0x0800;
inline constexpr uint16_t kEtherTypeArp = 0x0806;
inline constexpr uint16_t kEtherTypeIpv6 = 0x86dd;
inline constexpr uint16_t kEtherTypeVlan = 0x8100;
inline constexpr uint16_t kEtherTypeQinQ = 0x88a8;

struct EthernetHeader {
  uint8_t dst[6];
  uint8_t src[6];
  Be16 ether_type;
};
static_assert(sizeof(EthernetHeader) == 14);

struct EthernetFrame {
  Parsed<EthernetHeader> eth;
  uint16_t ether_type = 0;  // after the VLAN tags
  uint16_t vlan = 0;        // outermost VLAN ID, 0 if untagged
};

inline EthernetFrame parseEthernet(Bytes b) {
  EthernetFrame f;
  const auto* h = headerAt<EthernetHeader>(b);
  if (!h) {
    f.eth.error = ParseError::kTruncated;
    return f;
  }
  size_t off = sizeof(EthernetHeader);
  uint16_t type = h->ether_type.get();
  for (int tags = 0; (type == kEtherTypeVlan || type == kEtherTypeQinQ) && tags < 2; ++tags) {
    if (b.size() < off + 4) {
      f.eth.error = ParseError::kTruncated;
      return f;
    }
    const auto* p = reinterpret_cast<const uint8_t*>(b.data()) + off - 2;
    if (tags == 0) {
      f.vlan = static_cast<uint16_t>((p[2] << 8 | p[3]) & 0x0fff);
    }
    type = static_cast<uint16_t>(p[4] << 8 | p[5]);
    off += 4;
  }
  f.eth.header = h;
  f.eth.header_length = off;
  f.eth.payload = b.subspan(off);
  f.ether_type = type;
  return f;
}

}  // namespace mcgw::proto
