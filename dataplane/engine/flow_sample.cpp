// The packet part of a flow-audit sample (flow_sample.hpp).
#include "dataplane/engine/flow_sample.hpp"

#include <cstring>

namespace mcgw::engine {

namespace {

constexpr uint8_t kTcp = 6, kUdp = 17, kSctp = 132;

uint16_t get16(const uint8_t* p) {
  return static_cast<uint16_t>(p[0] << 8 | p[1]);
}

// Ports and TCP flags of the transport header at l4 (l4_len bytes).
void transport(FlowSample& s, const uint8_t* l4, uint32_t l4_len) {
  if ((s.protocol != kTcp && s.protocol != kUdp && s.protocol != kSctp) || l4_len < 4) {
    return;
  }
  s.src_port = get16(l4);
  s.dst_port = get16(l4 + 2);
  if (s.protocol == kTcp && l4_len >= 14) {
    s.tcp_flags = l4[13];
  }
}

}  // namespace

void fillFlowSample(FlowSample& s, const uint8_t* l3, uint32_t l3_len, bool v6) {
  s.ip_len = static_cast<uint16_t>(l3_len > 0xffff ? 0xffff : l3_len);
  if (!v6) {
    s.ip_version = 4;
    const uint32_t hl = (l3[0] & 0x0fu) * 4u;
    s.protocol = l3[9];
    std::memcpy(s.src, l3 + 12, 4);
    std::memcpy(s.dst, l3 + 16, 4);
    const bool later_fragment = (get16(l3 + 6) & 0x1fff) != 0;
    if (!later_fragment && l3_len > hl) {
      transport(s, l3 + hl, l3_len - hl);
    }
    return;
  }
  s.ip_version = 6;
  s.protocol = l3[6];
  std::memcpy(s.src, l3 + 8, 16);
  std::memcpy(s.dst, l3 + 24, 16);
  if (l3_len > 40) {
    transport(s, l3 + 40, l3_len - 40);
  }
}

}  // namespace mcgw::engine
