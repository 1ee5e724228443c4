#include "dataplane/proto/tunnel.hpp"

#include <cstring>

#include "dataplane/proto/checksum.hpp"
#include "dataplane/proto/ecn.hpp"
#include "dataplane/proto/ethernet.hpp"
#include "dataplane/proto/geneve.hpp"
#include "dataplane/proto/ipv4.hpp"
#include "dataplane/proto/ipv6.hpp"
#include "dataplane/proto/udp.hpp"
#include "dataplane/proto/vxlan.hpp"

namespace mcgw::proto {

uint8_t innerTos(Bytes inner_frame) {
  EthernetFrame f = parseEthernet(inner_frame);
  if (!f.eth.ok()) {
    return 0;
  }
  if (f.ether_type == kEtherTypeIpv4) {
    if (const auto* ip = headerAt<Ipv4Header>(f.eth.payload); ip && ip->version() == 4) {
      return ip->tos;
    }
  } else if (f.ether_type == kEtherTypeIpv6) {
    if (const auto* ip = headerAt<Ipv6Header>(f.eth.payload); ip && ip->version() == 6) {
      return ip->trafficClass();
    }
  }
  return 0;
}

size_t encodeTunnelHeaders(MutableBytes out, const TunnelHeaderTemplate& t, uint32_t vni,
                           Bytes inner_frame, uint32_t flow_hash) {
  const size_t overhead = tunnelOverhead(t.ipv6, t.encapsulation);
  const size_t ip_len = t.ipv6 ? sizeof(Ipv6Header) : sizeof(Ipv4Header);
  const size_t udp_len = sizeof(UdpHeader) + 8 + inner_frame.size();
  if (out.size() < overhead || ip_len + udp_len > 65535) {
    return 0;
  }
  auto* p = reinterpret_cast<uint8_t*>(out.data());
  const uint8_t inner_tos = innerTos(inner_frame);
  const uint8_t tos = static_cast<uint8_t>((inner_tos & 0xfc) | ecnOnEncap(inner_tos));

  auto* eth = reinterpret_cast<EthernetHeader*>(p);
  std::memcpy(eth->dst, t.dst_mac, 6);
  std::memcpy(eth->src, t.src_mac, 6);
  eth->ether_type.set(t.ipv6 ? kEtherTypeIpv6 : kEtherTypeIpv4);

  auto* udp = reinterpret_cast<UdpHeader*>(p + sizeof(EthernetHeader) + ip_len);
  udp->src_port.set(tunnelSourcePort(flow_hash));
  udp->length.set(static_cast<uint16_t>(udp_len));
  udp->checksum.set(0);
  uint8_t* tun = p + sizeof(EthernetHeader) + ip_len + sizeof(UdpHeader);
  if (t.encapsulation == Encapsulation::kVxlan) {
    udp->dst_port.set(kVxlanPort);
    auto* v = reinterpret_cast<VxlanHeader*>(tun);
    *v = VxlanHeader{kVxlanFlagVni, {0, 0, 0}, {}};
    v->setVni(vni);
  } else {
    udp->dst_port.set(kGenevePort);
    auto* g = reinterpret_cast<GeneveHeader*>(tun);
    *g = GeneveHeader{0, 0, {}, {}};
    g->protocol.set(kGeneveProtoEthernet);
    g->setVni(vni);
  }

  if (!t.ipv6) {
    auto* ip = reinterpret_cast<Ipv4Header*>(p + sizeof(EthernetHeader));
    ip->version_ihl = 0x45;
    ip->tos = tos;
    ip->total_length.set(static_cast<uint16_t>(ip_len + udp_len));
    ip->id.set(0);
    ip->frag_off.set(0x4000);  // DF
    ip->ttl = t.ttl;
    ip->protocol = kIpProtoUdp;
    ip->checksum.set(0);
    std::memcpy(ip->src, t.local, 4);
    std::memcpy(ip->dst, t.remote, 4);
    ip->checksum.set(internetChecksum(Bytes(reinterpret_cast<const std::byte*>(ip), ip_len)));
  } else {
    auto* ip = reinterpret_cast<Ipv6Header*>(p + sizeof(EthernetHeader));
    ip->ver_tc_flow.set(6u << 28 | static_cast<uint32_t>(tos) << 20 | (flow_hash & 0xfffff));
    ip->payload_length.set(static_cast<uint16_t>(udp_len));
    ip->next_header = kIpProtoUdp;
    ip->hop_limit = t.ttl;
    std::memcpy(ip->src, t.local, 16);
    std::memcpy(ip->dst, t.remote, 16);
    // UDP over IPv6 must carry a checksum (RFC 8200 §8.1).
    uint32_t sum = pseudoHeaderV6(ip->src, ip->dst, kIpProtoUdp, static_cast<uint32_t>(udp_len));
    sum = checksumAdd(Bytes(reinterpret_cast<const std::byte*>(udp), sizeof(UdpHeader) + 8), sum);
    uint16_t c = internetChecksum(inner_frame, sum);
    udp->checksum.set(c == 0 ? 0xffff : c);
  }
  return overhead;
}

}  // namespace mcgw::proto
