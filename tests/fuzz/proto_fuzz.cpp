// libFuzzer target: any bytes as an Ethernet frame, walked through every codec
// (Ethernet → IPv4/IPv6 → UDP/TCP/ICMP → VXLAN/Geneve → inner Ethernet).
// The parsers must never read outside the span, loop, or crash.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "dataplane/engine/decap.hpp"
#include "dataplane/proto/checksum.hpp"
#include "dataplane/proto/ethernet.hpp"
#include "dataplane/proto/geneve.hpp"
#include "dataplane/proto/icmp.hpp"
#include "dataplane/proto/ipv4.hpp"
#include "dataplane/proto/ipv6.hpp"
#include "dataplane/proto/tcp.hpp"
#include "dataplane/proto/tunnel.hpp"
#include "dataplane/proto/udp.hpp"
#include "dataplane/proto/vxlan.hpp"

using namespace mcgw::proto;

namespace {

volatile uint32_t sink;

void walk(Bytes frame, int depth);

void l4(uint8_t protocol, Bytes b, int depth) {
  if (protocol == kIpProtoUdp) {
    auto u = parseUdp(b);
    if (!u.ok()) {
      return;
    }
    uint16_t port = u.header->dst_port.get();
    if (port == kVxlanPort) {
      if (auto v = parseVxlan(u.payload); v.ok()) {
        sink = v.header->vni();
        walk(v.payload, depth + 1);
      }
    } else if (port == kGenevePort) {
      if (auto g = parseGeneve(u.payload); g.ok()) {
        sink = hasUnknownCriticalOption(g, [](uint16_t c, uint8_t t) { return c == 1 && t == 1; });
        walk(g.payload, depth + 1);
      }
    }
  } else if (protocol == kIpProtoTcp) {
    if (auto t = parseTcp(b); t.ok()) {
      ParseError e;
      auto mss = findMss(tcpOptions(t), &e);
      sink = mss ? mss->value : static_cast<uint32_t>(e);
    }
  } else if (protocol == kIpProtoIcmp || protocol == kIpProtoIpv6Icmp) {
    if (auto i = parseIcmp(b); i.ok() && isIcmpError(i.header->type)) {
      // The quoted packet is IP without Ethernet.
      if (auto q4 = parseIpv4(i.payload); q4.ok()) {
        sink = q4.header->protocol;
      } else if (auto q6 = parseIpv6(i.payload); q6.ip.ok()) {
        sink = q6.upper_protocol;
      }
    }
  }
}

void walk(Bytes frame, int depth) {
  if (depth > 3) {
    return;
  }
  sink = checksumFold(checksumAdd(frame));
  EthernetFrame f = parseEthernet(frame);
  if (!f.eth.ok()) {
    return;
  }
  if (f.ether_type == kEtherTypeIpv4) {
    if (auto ip = parseIpv4(f.eth.payload); ip.ok()) {
      sink = pseudoHeaderV4(ip.header->src, ip.header->dst, ip.header->protocol,
                            static_cast<uint16_t>(ip.payload.size()));
      if (!ip.header->isFragment() || ip.header->fragmentOffset() == 0) {
        l4(ip.header->protocol, ip.payload, depth);
      }
    }
  } else if (f.ether_type == kEtherTypeIpv6) {
    if (auto ip = parseIpv6(f.eth.payload); ip.ip.ok() && ip.first_fragment) {
      l4(ip.upper_protocol, ip.upper, depth);
    }
  }
}

}  // namespace

// Every peer and VNI is known, so that decapsulation goes as deep as it can.
struct AnyLookup {
  bool peer(bool, const uint8_t*, uint32_t* id) const {
    *id = 1;
    return true;
  }
  bool tenant(uint32_t, uint32_t, uint32_t* id) const {
    *id = 1;
    return true;
  }
  bool knownGeneveOption(uint16_t c, uint8_t) const { return c & 1; }
};

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Bytes in(reinterpret_cast<const std::byte*>(data), size);
  walk(in, 0);

  // decapsulate() writes into the packet: give it a copy, and check that
  // the inner frame it returns lies inside.
  std::vector<std::byte> copy(in.begin(), in.end());
  auto r = mcgw::engine::decapsulate(MutableBytes(copy), AnyLookup{});
  if (r.kind == mcgw::engine::DecapResult::Kind::kInner &&
      (r.inner.data() < copy.data() ||
       r.inner.data() + r.inner.size() > copy.data() + copy.size())) {
    __builtin_trap();
  }
  // Encoding in front of any inner frame.
  TunnelHeaderTemplate t;
  t.ipv6 = size & 1;
  t.encapsulation = size & 2 ? Encapsulation::kGeneve : Encapsulation::kVxlan;
  std::byte out[70];
  sink =
      static_cast<uint32_t>(encodeTunnelHeaders(MutableBytes(out), t, static_cast<uint32_t>(size),
                                                in, static_cast<uint32_t>(size * 2654435761u)));
  if (size >= 6) {
    sink = checksumUpdate16(static_cast<uint16_t>(data[0] << 8 | data[1]),
                            static_cast<uint16_t>(data[2] << 8 | data[3]),
                            static_cast<uint16_t>(data[4] << 8 | data[5]));
  }
  return 0;
}
