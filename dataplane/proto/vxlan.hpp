// VXLAN (RFC 7348), UDP port 4789.
//   |R|R|R|R|I|R|R|R|            Reserved (24)                   |
//   |                VXLAN Network Identifier (24) | Reserved (8) |
#pragma once

#include "dataplane/proto/bytes.hpp"

namespace mcgw::proto {

inline constexpr uint8_t kVxlanFlagVni = 0x08;

struct VxlanHeader {
  uint8_t flags;
  uint8_t reserved1[3];
  Be32 vni_reserved;

  uint32_t vni() const { return vni_reserved.get() >> 8; }
  void setVni(uint32_t vni) { vni_reserved.set((vni & 0xffffff) << 8); }  // 24 bits
};
static_assert(sizeof(VxlanHeader) == 8);

// The I flag must be set (the VNI is valid); the other reserved bits are
// ignored on receipt as RFC 7348 says.
inline Parsed<VxlanHeader> parseVxlan(Bytes b) {
  const auto* h = headerAt<VxlanHeader>(b);
  if (!h) {
    return Parsed<VxlanHeader>::fail(ParseError::kTruncated);
  }
  if (!(h->flags & kVxlanFlagVni)) {
    return Parsed<VxlanHeader>::fail(ParseError::kBadFlags);
  }
  return {h, sizeof(VxlanHeader), b.subspan(sizeof(VxlanHeader)), ParseError::kOk};
}

}  // namespace mcgw::proto
