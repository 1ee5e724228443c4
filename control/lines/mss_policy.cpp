#include "control/lines/mss_policy.hpp"

#include <algorithm>

#include "dataplane/crypto/esp.hpp"

namespace mcgw::lines {

unsigned innerIpMtu(const LinePath& l) {
  // tunnelOverhead's 14 outer Ethernet bytes stand for the inner Ethernet
  // header the outer IP packet carries.
  const unsigned overhead = proto::tunnelOverhead(l.ipv6_outer, l.encapsulation);
  if (!l.esp) {
    return l.path_mtu > overhead ? l.path_mtu - overhead : 0u;
  }
  const unsigned ip = l.ipv6_outer ? 40 : 20;
  const unsigned before = ip + (l.esp_udp ? unsigned{crypto::kNatTUdpLen} : 0u);
  const unsigned tunnel = overhead - 14 - ip;  // the tunnel's UDP and VXLAN/Geneve headers
  const unsigned payload =
      l.path_mtu > before ? static_cast<unsigned>(crypto::espMaxPayload(l.path_mtu - before)) : 0u;
  return payload > tunnel + 14 ? payload - tunnel - 14 : 0u;
}

TunnelMss deriveMss(const config::MssClamp& clamp, std::span<const LinePath> lines) {
  if (clamp.mode == config::MssClamp::Mode::kOff) {
    return {};
  }
  unsigned inner = 65535;
  for (const auto& l : lines) {
    inner = std::min(inner, innerIpMtu(l));
  }
  unsigned m4 = inner > 40 ? inner - 40 : 0, m6 = inner > 60 ? inner - 60 : 0;
  if (clamp.mode == config::MssClamp::Mode::kFixed) {
    m4 = std::min<unsigned>(m4, clamp.value);
    m6 = std::min<unsigned>(m6, clamp.value - 20u);
  }
  return {static_cast<uint16_t>(std::max(m4, 536u)), static_cast<uint16_t>(std::max(m6, 1220u))};
}

}  // namespace mcgw::lines
