// Encoding the outer headers of an overlay packet: Ethernet, IPv4 or IPv6,
// UDP, VXLAN or Geneve, in front of an inner Ethernet frame.
//
// Policy (docs/architecture.md): outer DSCP copied from the inner IP header,
// ECN per RFC 6040 normal mode, TTL / hop limit from the line, IPv4 DF set
// (VTEPs never fragment outer packets, RFC 7348 §4.3), UDP source port from the
// inner flow hash in 49152..65535 (and the IPv6 flow label from its low 20
// bits), UDP checksum 0 over IPv4 and computed over IPv6.
#pragma once

#include <cstdint>

#include "dataplane/proto/bytes.hpp"

namespace mcgw::proto {

enum class Encapsulation : uint8_t { kVxlan, kGeneve };

struct TunnelHeaderTemplate {
  bool ipv6 = false;
  uint8_t src_mac[6] = {};
  uint8_t dst_mac[6] = {};
  uint8_t local[16] = {};  // IPv4 uses the first 4 bytes
  uint8_t remote[16] = {};
  uint8_t ttl = 64;
  Encapsulation encapsulation = Encapsulation::kVxlan;
};

// Bytes of outer headers (outer Ethernet included) for a template.
constexpr size_t tunnelOverhead(bool ipv6, Encapsulation) {
  return 14 + (ipv6 ? 40 : 20) + 8 + 8;  // Geneve without options is 8 bytes, as VXLAN
}

// The inner frame's DSCP and ECN (0 when it carries neither IPv4 nor IPv6).
uint8_t innerTos(Bytes inner_frame);

// Writes the outer headers into out[0, tunnelOverhead()) for `inner_frame`,
// which the caller places right after them.  Returns the bytes written, or 0
// if out is too small or the packet would exceed 65535 bytes.
size_t encodeTunnelHeaders(MutableBytes out, const TunnelHeaderTemplate& t, uint32_t vni,
                           Bytes inner_frame, uint32_t flow_hash);

// The UDP source port for a flow hash: 49152..65535 (RFC 7348 §5).
constexpr uint16_t tunnelSourcePort(uint32_t flow_hash) {
  return static_cast<uint16_t>(49152 + ((flow_hash ^ (flow_hash >> 16)) & 0x3fff));
}

}  // namespace mcgw::proto
