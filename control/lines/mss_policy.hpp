// The TCP MSS a tunnel clamps SYNs to, from its peer's mss-clamp and the
// path MTU of its lines.  Pure: no fast-path or config state.
#pragma once

#include <cstdint>
#include <span>

#include "config/config.hpp"
#include "dataplane/proto/tunnel.hpp"

namespace mcgw::lines {

// One line of the tunnel as the MSS sees it.
struct LinePath {
  unsigned path_mtu = 1500;  // the underlay IP MTU now in force
  bool ipv6_outer = false;
  proto::Encapsulation encapsulation = proto::Encapsulation::kVxlan;
};

struct TunnelMss {
  uint16_t mss4 = 0;  // 0: no clamp (mss-clamp off)
  uint16_t mss6 = 0;
  bool operator==(const TunnelMss&) const = default;
};

// The lowest line decides (a flow may move to any of them).  The outer IP
// packet carries the inner Ethernet header too (1500 over VXLAN/IPv4: inner
// IP 1450, MSS 1410).  fixed lowers the derived value (IPv6: value - 20);
// neither goes below what every TCP must accept (536 / 1220, RFC 9293 /
// RFC 8200).
TunnelMss deriveMss(const config::MssClamp& clamp, std::span<const LinePath> lines);

}  // namespace mcgw::lines
