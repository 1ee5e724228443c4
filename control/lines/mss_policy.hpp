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
  bool esp = false;      // encrypted (docs/encryption.md, "Overhead")
  bool esp_udp = false;  // with RFC 3948 UDP encapsulation
};

// The largest inner IP packet a line carries at its path MTU: the outer
// IP, UDP and tunnel headers and the inner Ethernet header taken off, and
// with ESP its header, IV, ICV, pad length, next header and the padding that
// aligns them (espMaxPayload).
unsigned innerIpMtu(const LinePath& line);

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
