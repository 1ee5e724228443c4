#include "dataplane/engine/pipeline.hpp"

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_hash_crc.h>
#include <rte_ip.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_ring_elem.h>

#include <algorithm>
#include <cstring>

#include "dataplane/engine/decap.hpp"
#include "dataplane/proto/checksum.hpp"
#include "dataplane/proto/fragment.hpp"
#include "dataplane/proto/icmp.hpp"
#include "dataplane/proto/ipv4.hpp"
#include "dataplane/proto/ipv6.hpp"
#include "dataplane/proto/mss.hpp"
#include "dataplane/proto/prefix_map.hpp"
#include "dataplane/proto/tcp.hpp"
#include "dataplane/proto/tunnel.hpp"

namespace mcgw::engine {

namespace {

using proto::Bytes;
using proto::IcmpErrorKind;
using proto::MutableBytes;

constexpr size_t kEth = 14;
// ICMP errors: at most kIcmpRate per second per worker, bursts of
// kIcmpBurst; to one source at most kIcmpSourceRate, bursts of
// kIcmpSourceBurst.
constexpr uint64_t kIcmpRate = 1000;
constexpr uint64_t kIcmpBurst = 100;
constexpr uint64_t kIcmpSourceRate = 100;
constexpr uint64_t kIcmpSourceBurst = 20;
// A packet needing more fragments than this is dropped (too-big).
constexpr size_t kMaxFragments = 64;

// The decapsulation lookups over one snapshot.  `tenant` answers with the
// tunnel index (which names the tenant); the matched VTEP's line is kept.
struct DecapLookup {
  const ForwardingTables& t;
  mutable uint16_t line = 0;

  bool peer(bool ipv6, const uint8_t* src, uint32_t* peer_id) const {
    for (const auto& v : t.vteps) {
      if (v.ipv6 == ipv6 && (ipv6 ? std::memcmp(v.address.data(), src, 16) == 0
                                  : std::memcmp(v.address.data(), src, 4) == 0)) {
        *peer_id = v.peer;
        line = v.line;
        return true;
      }
    }
    return false;
  }
  bool tenant(uint32_t peer_id, uint32_t vni, uint32_t* tunnel) const {
    uint16_t idx = 0;
    if (!t.tunnelFor(static_cast<uint16_t>(peer_id), vni, &idx)) {
      return false;
    }
    *tunnel = idx;
    return true;
  }
  // No Geneve option is understood yet: every critical one drops the packet.
  bool knownGeneveOption(uint16_t, uint8_t) const { return false; }
};

void txErrorCallback(rte_mbuf** pkts, uint16_t unsent, void* userdata) {
  auto* c = static_cast<WorkerCounters*>(userdata);
  c->drops[static_cast<size_t>(DropReason::kTX_FULL)].add(unsent);
  rte_pktmbuf_free_bulk(pkts, unsent);
}

bool sameMac(const uint8_t* a, const Mac& b) {
  return std::memcmp(a, b.data(), 6) == 0;
}

// The inner flow hash: addresses, protocol and (when present) ports.
uint32_t flowHash4(const proto::Ipv4Header* ip, const uint8_t* l4, size_t l4_len) {
  uint32_t h = rte_hash_crc(ip->src, 8, ip->protocol);
  if (!ip->isFragment() && l4_len >= 4 &&
      (ip->protocol == proto::kIpProtoTcp || ip->protocol == proto::kIpProtoUdp)) {
    h = rte_hash_crc(l4, 4, h);
  }
  return h;
}

uint32_t flowHash6(const proto::Ipv6Header* ip, const uint8_t* l4, size_t l4_len) {
  uint32_t h = rte_hash_crc(ip->src, 32, ip->next_header);
  if (l4_len >= 4 &&
      (ip->next_header == proto::kIpProtoTcp || ip->next_header == proto::kIpProtoUdp)) {
    h = rte_hash_crc(l4, 4, h);
  }
  return h;
}

// Another view of the flow hash for the choice of an ECMP member.
inline uint32_t ecmpMix(uint32_t flow_hash) {
  return rte_hash_crc_4byte(flow_hash, 0x9e3779b9u);
}

}  // namespace

Pipeline::Pipeline(uint16_t tx_queue, rte_mempool* pool, WorkerCounters* counters,
                   const LiveState* health, rte_ring* misses)
    : tx_queue_(tx_queue), pool_(pool), counters_(counters), health_(health), misses_(misses) {
  for (auto& b : tx_) {
    b = static_cast<rte_eth_dev_tx_buffer*>(
        rte_zmalloc("mcgw_txbuf", RTE_ETH_TX_BUFFER_SIZE(kBurst), RTE_CACHE_LINE_SIZE));
    if (b) {
      rte_eth_tx_buffer_init(b, kBurst);
      rte_eth_tx_buffer_set_err_callback(b, txErrorCallback, counters_);
    }
  }
  tsc_hz_ = rte_get_tsc_hz();
  icmp_worker_.tokens = kIcmpBurst;
  icmp_worker_.last_tsc = rte_rdtsc();
}

Pipeline::~Pipeline() {
  for (unsigned i = 0; i < n_held_; ++i) {
    rte_pktmbuf_free(held_[i].m);
  }
  for (auto& b : tx_) {
    if (b) {
      rte_pktmbuf_free_bulk(b->pkts, b->length);
      rte_free(b);
    }
  }
}

void Pipeline::flush() {
  uint32_t mask = pending_mask_;
  pending_mask_ = 0;
  while (mask) {
    const unsigned port = static_cast<unsigned>(__builtin_ctz(mask));
    mask &= mask - 1;
    rte_eth_tx_buffer_flush(static_cast<uint16_t>(port), tx_queue_, tx_[port]);
  }
}

void Pipeline::drop(rte_mbuf* m, DropReason why) {
  counters_->drops[static_cast<size_t>(why)].add();
  rte_pktmbuf_free(m);
}

void Pipeline::transmit(const ForwardingTables& t, uint16_t port, rte_mbuf* m) {
  if (port >= kMaxPorts || !t.ports[port].present || !tx_[port]) {
    drop(m, DropReason::kNO_ROUTE);
    return;
  }
  (t.ports[port].lan ? counters_->lan_tx : counters_->wan_tx).add(m->pkt_len);
  pending_mask_ |= 1u << port;
  rte_eth_tx_buffer(port, tx_queue_, tx_[port], m);
}

void Pipeline::process(const ForwardingTables& t, uint16_t rx_port, rte_mbuf** pkts, uint16_t n) {
  for (uint16_t i = 0; i < n; ++i) {
    pkts[i]->port = rx_port;
  }
  process(t, pkts, n);
}

void Pipeline::process(const ForwardingTables& t, rte_mbuf** pkts, uint16_t n) {
  for (uint16_t i = 0; i < n; ++i) {
    if (i + 1 < n) {
      rte_prefetch0(rte_pktmbuf_mtod(pkts[i + 1], void*));
    }
    handle(t, pkts[i]);
  }
}

bool VirtualMacs::set(uint16_t port, std::span<const Mac> macs) {
  if (port >= kMaxPorts) {
    return false;
  }
  std::vector<uint64_t> want;
  for (const Mac& mac : macs) {
    const uint64_t k = virtualMacKey(mac.data());
    if (std::find(want.begin(), want.end(), k) == want.end()) {
      want.push_back(k);
    }
  }
  if (want.size() > kMaxVirtualMacs) {
    return false;
  }
  auto& row = slots[port];
  // MACs that stay keep their slot; those that go free theirs before new
  // ones take a free slot.
  for (auto& s : row) {
    const uint64_t k = s.load(std::memory_order_relaxed);
    if (k != 0 && std::find(want.begin(), want.end(), k) == want.end()) {
      s.store(0, std::memory_order_relaxed);
    }
  }
  for (const uint64_t k : want) {
    if (std::any_of(row.begin(), row.end(),
                    [&](const auto& s) { return s.load(std::memory_order_relaxed) == k; })) {
      continue;
    }
    for (auto& s : row) {
      if (s.load(std::memory_order_relaxed) == 0) {
        s.store(k, std::memory_order_relaxed);
        break;
      }
    }
  }
  const uint32_t bit = uint32_t{1} << port;
  if (want.empty()) {
    ports.fetch_and(~bit, std::memory_order_relaxed);
  } else {
    ports.fetch_or(bit, std::memory_order_relaxed);
  }
  return true;
}

std::vector<Mac> VirtualMacs::get(uint16_t port) const {
  std::vector<Mac> out;
  if (port >= kMaxPorts) {
    return out;
  }
  for (const auto& s : slots[port]) {
    if (const uint64_t k = s.load(std::memory_order_relaxed); k != 0) {
      Mac mac;
      for (int i = 0; i < 6; ++i) {
        mac[static_cast<size_t>(i)] = static_cast<uint8_t>(k >> (40 - 8 * i));
      }
      out.push_back(mac);
    }
  }
  return out;
}

// A frame accepted through a virtual MAC that the port's kernel side must
// see rather than the FIB: IPv6 neighbour discovery right behind the IPv6
// header (a host's unicast NS probing the virtual address, RFC 4861 7.3.3).
// mcgwd answers those for the virtual addresses on the kernel side; routed,
// they would go back out of the LAN port.  The XDP program passes the same
// to the kernel on af_xdp ports (pass-nd).  ARP needs nothing: it is not IP
// and goes to the kernel anyway.
bool Pipeline::virtualMacToKernel(const uint8_t* data, size_t len) {
  return len >= kEth + sizeof(proto::Ipv6Header) + 1 && data[12] == 0x86 && data[13] == 0xdd &&
         data[kEth + 6] == proto::kIpProtoIpv6Icmp && data[kEth + 40] >= 133 &&
         data[kEth + 40] <= 137;
}

void Pipeline::handle(const ForwardingTables& t, rte_mbuf* m) {
  const uint16_t port = m->port;
  if (port >= kMaxPorts || !t.ports[port].present) {
    drop(m, DropReason::kNO_TENANT);
    return;
  }
  const PortEntry& pe = t.ports[port];
  if (pe.tap) {  // the kernel's packets (ARP, ND, BGP, ...) leave as they are
    counters_->from_kernel.add(m->pkt_len);
    transmit(t, pe.phys, m);
    return;
  }
  (pe.lan ? counters_->lan_rx : counters_->wan_rx).add(m->pkt_len);
  if (!rte_pktmbuf_is_contiguous(m)) {
    drop(m, DropReason::kSEGMENTED);
    return;
  }
  auto* data = rte_pktmbuf_mtod(m, uint8_t*);
  if (m->data_len < kEth) {
    drop(m, DropReason::kMALFORMED);
    return;
  }
  if (!sameMac(data, pe.mac)) {
    if (data[0] & 1) {  // broadcast, multicast: ARP, ND, ... for the kernel
      toKernel(t, pe, m, DropReason::kOTHER_HOST);
      return;
    }
    // Another host's, unless it is one of the port's virtual MACs (a VRRP
    // group here is Active): then it is handled as if to the port's MAC.
    if (!health_->virtual_macs.accepts(port, data)) {
      drop(m, DropReason::kOTHER_HOST);
      return;
    }
    counters_->virtual_mac.add();
    // As if to the port's MAC, literally: the kernel (accept mode, ARP to
    // the virtual MAC) takes only its own MAC as addressed to it.
    std::memcpy(data, pe.mac.data(), 6);
    if (virtualMacToKernel(data, m->data_len)) {
      toKernel(t, pe, m, DropReason::kLOCAL);
      return;
    }
  }
  if (pe.lan) {
    const uint16_t type = static_cast<uint16_t>(data[12] << 8 | data[13]);
    if (type != proto::kEtherTypeIpv4 && type != proto::kEtherTypeIpv6) {
      toKernel(t, pe, m, DropReason::kNOT_IP);
      return;
    }
    if (pe.tenant == kNoTenant) {
      drop(m, DropReason::kNO_TENANT);
      return;
    }
    forward(t, m, pe.tenant, port);
    return;
  }
  DecapLookup lookup{t};
  DecapResult r =
      decapsulate(MutableBytes(reinterpret_cast<std::byte*>(data), m->data_len), lookup);
  if (r.kind == DecapResult::Kind::kNotTunnel) {
    toKernel(t, pe, m, DropReason::kNOT_OVERLAY);  // BGP, BFD, SSH, ping, ARP
    return;
  }
  if (r.kind == DecapResult::Kind::kDrop) {
    drop(m, r.reason);
    return;
  }
  const TunnelEntry& tunnel = t.tunnels[r.tenant];
  counters_->line_rx[t.lines[lookup.line].slot].add(m->pkt_len);
  rte_pktmbuf_adj(m, static_cast<uint16_t>(r.inner_offset));
  if (m->data_len > r.inner.size()) {  // bytes past the outer UDP datagram
    rte_pktmbuf_trim(m, static_cast<uint16_t>(m->data_len - r.inner.size()));
  }
  counters_->tunnel_rx[tunnel.slot].add(m->pkt_len);
  data = rte_pktmbuf_mtod(m, uint8_t*);
  const uint16_t type = static_cast<uint16_t>(data[12] << 8 | data[13]);
  if (type != proto::kEtherTypeIpv4 && type != proto::kEtherTypeIpv6) {
    drop(m, DropReason::kNOT_IP);
    return;
  }
  clampSyn(m, tunnel);  // the other direction's SYN-ACK (or SYN) from the peer's side
  forward(t, m, tunnel.tenant, port, Origin::kTunnel);
}

void Pipeline::forward(const ForwardingTables& t, rte_mbuf* m, uint16_t tenant, uint16_t rx_port,
                       Origin origin) {
  const bool originated = origin == Origin::kGateway;
  using namespace proto;
  auto* data = rte_pktmbuf_mtod(m, uint8_t*);
  const size_t len = m->data_len;
  const bool v6 = data[12] == 0x86 && data[13] == 0xdd;
  const TenantEntry& te = t.tenants[tenant];
  uint32_t nh_index = TenantFib::kNoRoute;
  size_t l3_len = 0;  // the IP packet's length, for the flow hash
  const uint8_t* dst = nullptr;
  if (!v6) {
    if (len < kEth + sizeof(Ipv4Header)) {
      drop(m, DropReason::kMALFORMED);
      return;
    }
    auto* ip = reinterpret_cast<Ipv4Header*>(data + kEth);
    const size_t hl = ip->headerLength();
    const size_t total = ip->total_length.get();
    if (ip->version() != 4 || hl < sizeof(Ipv4Header) || total < hl || total > len - kEth) {
      drop(m, DropReason::kMALFORMED);
      return;
    }
    if (total < len - kEth) {  // Ethernet padding stays behind
      rte_pktmbuf_trim(m, static_cast<uint16_t>(len - kEth - total));
    }
    if (te.mapping && origin == Origin::kTunnel) [[unlikely]] {
      unmapDestination(data + kEth, total, false, *te.mapping);
    }
    dst = ip->dst;
    if (dst[0] >= 224) {  // multicast, broadcast
      localPacket(t, m, rx_port, origin);
      return;
    }
    nh_index = te.fib->find4(dst);
    if (nh_index != TenantFib::kNoRoute &&
        te.next_hops->at(nh_index).kind == NextHop::Kind::kLocal) {  // ours
      localPacket(t, m, rx_port, origin);
      return;
    }
    if (ip->ttl <= 1 && !originated) {
      icmpError(t, m, IcmpErrorKind::kTimeExceeded, 0, tenant, rx_port, origin);
      drop(m, DropReason::kTTL_EXPIRED);
      return;
    }
    if (nh_index == TenantFib::kNoRoute) {
      drop(m, DropReason::kNO_ROUTE);
      return;
    }
    if (!originated) {
      const uint16_t old_word = static_cast<uint16_t>(ip->ttl << 8 | ip->protocol);
      --ip->ttl;
      ip->checksum.set(checksumUpdate16(ip->checksum.get(), old_word,
                                        static_cast<uint16_t>(ip->ttl << 8 | ip->protocol)));
    }
    l3_len = total;
  } else {
    if (len < kEth + sizeof(Ipv6Header)) {
      drop(m, DropReason::kMALFORMED);
      return;
    }
    auto* ip = reinterpret_cast<Ipv6Header*>(data + kEth);
    const size_t total = sizeof(Ipv6Header) + ip->payload_length.get();
    if (ip->version() != 6 || total > len - kEth) {
      drop(m, DropReason::kMALFORMED);
      return;
    }
    if (total < len - kEth) {
      rte_pktmbuf_trim(m, static_cast<uint16_t>(len - kEth - total));
    }
    if (te.mapping && origin == Origin::kTunnel) [[unlikely]] {
      unmapDestination(data + kEth, total, true, *te.mapping);
    }
    dst = ip->dst;
    // Multicast and link-local destinations are never routed.
    if (dst[0] == 0xff || (dst[0] == 0xfe && (dst[1] & 0xc0) == 0x80)) {
      localPacket(t, m, rx_port, origin);
      return;
    }
    nh_index = te.fib->find6(dst);
    if (nh_index != TenantFib::kNoRoute &&
        te.next_hops->at(nh_index).kind == NextHop::Kind::kLocal) {  // ours
      localPacket(t, m, rx_port, origin);
      return;
    }
    if (ip->hop_limit <= 1 && !originated) {
      icmpError(t, m, IcmpErrorKind::kTimeExceeded, 0, tenant, rx_port, origin);
      drop(m, DropReason::kTTL_EXPIRED);
      return;
    }
    if (nh_index == TenantFib::kNoRoute) {
      drop(m, DropReason::kNO_ROUTE);
      return;
    }
    if (!originated) {
      --ip->hop_limit;
    }
    l3_len = total;
  }
  // The inner flow hash: only tunnels (line choice, UDP source port) and
  // ECMP groups need it.
  auto flowHash = [&] {
    const uint8_t* l3 = data + kEth;
    if (!v6) {
      const auto* ip = reinterpret_cast<const Ipv4Header*>(l3);
      return flowHash4(ip, l3 + ip->headerLength(), l3_len - ip->headerLength());
    }
    return flowHash6(reinterpret_cast<const Ipv6Header*>(l3), l3 + sizeof(Ipv6Header),
                     l3_len - sizeof(Ipv6Header));
  };
  const NextHop* nh = &te.next_hops->at(nh_index);
  uint32_t flow_hash = 0;
  bool hashed = false;
  if (nh->kind == NextHop::Kind::kEcmp) {
    // The member by a mix of the hash: the line choice inside a tunnel uses
    // the hash itself, and the two choices must not follow each other.
    flow_hash = flowHash();
    hashed = true;
    // A member whose tunnel has no usable line (a remote gateway dead:
    // BFD took its lines down while BGP graceful restart keeps its routes)
    // is passed over for the next one that has; the flows of the other
    // members stay where they are.  None usable: the flow's own, dropped
    // below as before.
    const NextHop& group = *nh;
    const unsigned first = ecmpMix(flow_hash) % group.n_members;
    nh = &te.next_hops->at(group.members[first]);
    if (nh->kind == NextHop::Kind::kTunnel && !tunnelUsable(t, nh->tunnel)) {
      for (unsigned i = 1; i < group.n_members; ++i) {
        const NextHop* next = &te.next_hops->at(group.members[(first + i) % group.n_members]);
        if (next->kind != NextHop::Kind::kTunnel || tunnelUsable(t, next->tunnel)) {
          nh = next;
          break;
        }
      }
    }
  }
  switch (nh->kind) {
    case NextHop::Kind::kTunnel: {
      const uint16_t tunnel = t.tunnel_of_slot[nh->tunnel];
      if (tunnel == kNoTunnel) {  // a route to a tunnel this snapshot does not have (yet)
        drop(m, DropReason::kNO_TUNNEL);
        return;
      }
      const TunnelEntry* te = &t.tunnels[tunnel];
      if (te->n_stand_ins != 0 && !tunnelUsable(t, te->slot)) {
        te = standIn(t, *te);
      }
      encapsulate(t, m, *te, hashed ? flow_hash : flowHash(), tenant, rx_port, origin);
      return;
    }
    case NextHop::Kind::kGateway:
    case NextHop::Kind::kConnected:
      break;
    case NextHop::Kind::kLocal:  // never an ECMP member
    case NextHop::Kind::kEcmp:
      drop(m, DropReason::kNO_ROUTE);
      return;
  }
  if (nh->port >= kMaxPorts || !t.ports[nh->port].present) {
    drop(m, DropReason::kNO_NEIGHBOR);  // its port is not open
    return;
  }
  const uint16_t mtu = t.ports[nh->port].mtu;
  if (l3_len > mtu) {
    tooBig(t, m, mtu, tenant, rx_port, origin, [&](rte_mbuf* f) { toLan(t, f, *nh, v6); });
    return;
  }
  toLan(t, m, *nh, v6);
}

[[gnu::always_inline]] inline void Pipeline::toLan(const ForwardingTables& t, rte_mbuf* m,
                                                   const NextHop& nh, bool v6) {
  auto* data = rte_pktmbuf_mtod(m, uint8_t*);
  if (nh.kind == NextHop::Kind::kGateway) {
    // The router's MAC at this moment: a neighbour change needs no route
    // change.  Unknown: dropped, the kernel keeps configured next hops
    // resolved.
    Mac mac;
    if (!t.neighbor(nh.port, nh.v6, nh.address.data(), &mac)) {
      drop(m, DropReason::kNO_NEIGHBOR);
      return;
    }
    std::memcpy(data, mac.data(), 6);
  } else {
    const uint8_t* dst = data + kEth + (v6 ? 24 : 16);
    Mac mac;
    if (!t.neighbor(nh.port, v6, dst, &mac)) {
      hold(t, m, nh.port, v6, dst);
      return;
    }
    std::memcpy(data, mac.data(), 6);
  }
  std::memcpy(data + 6, t.ports[nh.port].mac.data(), 6);
  transmit(t, nh.port, m);
}

template <typename Emit>
void Pipeline::tooBig(const ForwardingTables& t, rte_mbuf* m, uint32_t mtu, uint16_t tenant,
                      uint16_t rx_port, Origin origin, Emit&& emit) {
  auto* data = rte_pktmbuf_mtod(m, uint8_t*);
  const bool v6 = data[12] == 0x86 && data[13] == 0xdd;
  const proto::Bytes packet(reinterpret_cast<const std::byte*>(data + kEth), m->data_len - kEth);
  const bool df = v6 || (data[kEth + 6] & 0x40);
  if (df) {
    // IPv6 links carry at least 1280 (RFC 8200 5): a lower tunnel MTU is
    // reported as 1280 and such packets stay too big.
    icmpError(t, m, IcmpErrorKind::kTooBig, v6 ? std::max<uint32_t>(mtu, 1280) : mtu, tenant,
              rx_port, origin);
    drop(m, DropReason::kTOO_BIG);
    return;
  }
  // IPv4 without DF: fragmented here, all fragments or none.
  const size_t n = proto::ipv4FragmentCount(packet, mtu);
  std::array<rte_mbuf*, kMaxFragments> frags;
  if (n == 0 || n > kMaxFragments) {
    drop(m, DropReason::kTOO_BIG);
    return;
  }
  if (rte_pktmbuf_alloc_bulk(pool_, frags.data(), static_cast<unsigned>(n)) != 0) {
    drop(m, DropReason::kNO_BUFFER);
    return;
  }
  for (size_t i = 0; i < n; ++i) {
    rte_mbuf* f = frags[i];
    auto* out = rte_pktmbuf_mtod(f, uint8_t*);
    const size_t room = rte_pktmbuf_tailroom(f);
    const size_t len =
        room > kEth
            ? proto::writeIpv4Fragment(
                  packet, mtu, i,
                  proto::MutableBytes(reinterpret_cast<std::byte*>(out + kEth), room - kEth))
            : 0;
    if (len == 0) {
      rte_pktmbuf_free_bulk(frags.data(), static_cast<unsigned>(n));
      drop(m, DropReason::kTOO_BIG);
      return;
    }
    std::memcpy(out, data, kEth);
    rte_pktmbuf_append(f, static_cast<uint16_t>(kEth + len));
    f->port = m->port;
  }
  counters_->fragmented.add();
  counters_->fragments.add(n);
  rte_pktmbuf_free(m);
  for (size_t i = 0; i < n; ++i) {
    emit(frags[i]);
  }
}

// TCP SYN and SYN-ACK through a tunnel: the MSS option lowered to the
// tunnel's clamp (0: off).  Other packets pay the inline pre-check only.
inline void Pipeline::clampSyn(rte_mbuf* m, const TunnelEntry& tunnel) {
  const auto* data = rte_pktmbuf_mtod(m, const uint8_t*);
  const bool v6 = data[12] == 0x86 && data[13] == 0xdd;
  if (proto::mayBeTcpSyn(data + kEth, m->data_len - kEth, v6)) {
    clampSynSlow(m, tunnel, v6);
  }
}

[[gnu::noinline]] void Pipeline::clampSynSlow(rte_mbuf* m, const TunnelEntry& tunnel, bool v6) {
  uint8_t* ip = rte_pktmbuf_mtod(m, uint8_t*) + kEth;
  size_t len = m->data_len - kEth;
  const uint16_t mss =
      (v6 ? health_->mss6 : health_->mss4)[tunnel.slot].load(std::memory_order_relaxed);
  if (mss == 0) {
    return;
  }
  // The IP packet without any Ethernet padding behind it.
  const size_t ip_len = v6 ? 40u + (ip[4] << 8 | ip[5]) : static_cast<size_t>(ip[2] << 8 | ip[3]);
  if (ip_len < len) {
    rte_pktmbuf_trim(m, static_cast<uint16_t>(len - ip_len));
    len = ip_len;
  }
  size_t new_len = len;
  switch (
      proto::clampMss(ip, &new_len, len + rte_pktmbuf_tailroom(m), v6, mss, tunnel.mss_insert)) {
    case proto::MssVerdict::kNone:
      break;
    case proto::MssVerdict::kClamped:
      counters_->mss_clamped.add();
      break;
    case proto::MssVerdict::kAlreadyBelow:
      counters_->mss_below.add();
      break;
    case proto::MssVerdict::kNoOption:
      counters_->mss_no_option.add();
      break;
    case proto::MssVerdict::kInserted:
      rte_pktmbuf_append(m, static_cast<uint16_t>(new_len - len));
      counters_->mss_inserted.add();
      break;
    case proto::MssVerdict::kMalformed:
      counters_->mss_malformed.add();
      break;
  }
}

// A packet for the kernel: to the port's TAP when it has one, else dropped
// under `otherwise` (af_xdp ports: the XDP program passes such packets to
// the kernel before DPDK sees them).
void Pipeline::toKernel(const ForwardingTables& t, const PortEntry& pe, rte_mbuf* m,
                        DropReason otherwise) {
  if (pe.exception < 0) {
    drop(m, otherwise);
    return;
  }
  counters_->to_kernel.add(m->pkt_len);
  transmit(t, static_cast<uint16_t>(pe.exception), m);
}

// Addressed to the gateway itself (or multicast / link-local): the kernel's,
// when it arrived straight on a port; a packet from a tunnel to the
// gateway's address is not forwarded.
void Pipeline::localPacket(const ForwardingTables& t, rte_mbuf* m, uint16_t rx_port,
                           Origin origin) {
  const PortEntry& pe = t.ports[rx_port];
  if (origin != Origin::kPort || pe.tap) {
    drop(m, DropReason::kLOCAL);
    return;
  }
  toKernel(t, pe, m, DropReason::kLOCAL);
}

void Pipeline::hold(const ForwardingTables& t, rte_mbuf* m, uint16_t port, bool v6,
                    const uint8_t* address) {
  const size_t n = v6 ? 16 : 4;
  if (n_held_ == kHoldPackets) {
    drop(m, DropReason::kNO_NEIGHBOR);
    return;
  }
  bool asked = false;
  for (unsigned i = 0; i < n_held_ && !asked; ++i) {
    asked = held_[i].port == port && held_[i].v6 == v6 &&
            std::memcmp(held_[i].address, address, n) == 0;
  }
  Held& h = held_[n_held_++];
  h = Held{};
  h.m = m;
  h.port = port;
  h.v6 = v6;
  std::memcpy(h.address, address, n);
  h.since = rte_rdtsc();
  h.port_mac = t.ports[port].mac;
  counters_->held.add();
  if (!asked && misses_) {
    NeighborMiss miss;
    miss.port = port;
    miss.v6 = v6;
    std::memcpy(miss.address, address, n);
    if (rte_ring_sp_enqueue_elem(misses_, &miss, sizeof miss) == 0) {
      counters_->neighbor_misses.add();
    }
  }
}

void Pipeline::retryHeld(const ForwardingTables& t) {
  const uint64_t now = rte_rdtsc();
  const uint64_t limit = tsc_hz_ / 1000 * kHoldMs;
  unsigned kept = 0;
  for (unsigned i = 0; i < n_held_; ++i) {
    Held& h = held_[i];
    Mac mac;
    if (!t.ports[h.port].present || t.ports[h.port].mac != h.port_mac) {
      drop(h.m, DropReason::kNO_NEIGHBOR);  // its port went away with a reload
    } else if (t.neighbor(h.port, h.v6, h.address, &mac)) {
      auto* data = rte_pktmbuf_mtod(h.m, uint8_t*);
      std::memcpy(data, mac.data(), 6);
      std::memcpy(data + 6, t.ports[h.port].mac.data(), 6);
      if (h.m->data_len - kEth > t.ports[h.port].mtu) {
        drop(h.m, DropReason::kTOO_BIG);
      } else {
        transmit(t, h.port, h.m);
      }
    } else if (now - h.since > limit) {
      drop(h.m, DropReason::kNO_NEIGHBOR);
    } else {
      held_[kept++] = h;
    }
  }
  n_held_ = kept;
}

bool Pipeline::lineUsable(const ForwardingTables& t, uint16_t line) const {
  const LineEntry& l = t.lines[line];
  return l.resolved && health_->up[l.slot].load(std::memory_order_relaxed);
}

bool Pipeline::tunnelUsable(const ForwardingTables& t, uint16_t slot) const {
  const uint16_t tunnel = t.tunnel_of_slot[slot];
  if (tunnel == kNoTunnel) {
    return false;
  }
  const TunnelEntry& te = t.tunnels[tunnel];
  for (unsigned i = 0; i < te.n_lines; ++i) {
    if (lineUsable(t, te.lines[i])) {
      return true;
    }
  }
  return false;
}

// A remote gateway whose lines are all down (dead, or cut off): another
// gateway of its site with a usable line takes the traffic routed to it,
// before BGP has moved the routes (docs/failover.md, "The return path").
// None usable: the tunnel itself, whose line choice then drops.
const TunnelEntry* Pipeline::standIn(const ForwardingTables& t, const TunnelEntry& tunnel) {
  for (unsigned i = 0; i < tunnel.n_stand_ins; ++i) {
    const TunnelEntry& other = t.tunnels[tunnel.stand_ins[i]];
    if (tunnelUsable(t, other.slot)) {
      counters_->stand_in.add();
      return &other;
    }
  }
  return &tunnel;
}

void Pipeline::encapsulate(const ForwardingTables& t, rte_mbuf* m, const TunnelEntry& tunnel,
                           uint32_t flow_hash, uint16_t tenant, uint16_t rx_port, Origin origin) {
  if (origin != Origin::kGateway) {
    clampSyn(m, tunnel);
  }
  // The line.  active-backup: the first usable one.  ECMP: the flow's own
  // line (hash over all lines) while it is usable, so flows on lines that
  // stay up never move; the flows of a line that is not usable are spread
  // over the usable ones by another part of the hash.
  auto usable = [&](uint16_t i) { return lineUsable(t, i); };
  const LineEntry* chosen = nullptr;
  if (tunnel.ecmp && tunnel.n_lines > 0) {
    const uint16_t own = tunnel.lines[flow_hash % tunnel.n_lines];
    if (usable(own)) {
      chosen = &t.lines[own];
    }
  }
  if (!chosen) {
    std::array<uint16_t, kMaxLinesPerPeer> healthy;
    unsigned n = 0;
    for (unsigned i = 0; i < tunnel.n_lines; ++i) {
      if (usable(tunnel.lines[i])) {
        healthy[n++] = tunnel.lines[i];
        if (!tunnel.ecmp) {
          break;
        }
      }
    }
    if (n == 0) {
      drop(m, DropReason::kNO_TUNNEL);
      return;
    }
    chosen = &t.lines[healthy[n == 1 ? 0 : (flow_hash >> 16) % n]];
  }
  const LineEntry& line = *chosen;
  // Sources are mapped on the way in from the tenant's side only: a packet
  // out of another tunnel (a hub's transit) comes from another site, whose
  // addresses may well be the same real range.
  const TenantMapping* mapping = t.tenants[tenant].mapping.get();
  if (mapping && origin == Origin::kTunnel) [[unlikely]] {
    mapping = nullptr;
  }
  // The outer IP packet must fit the line's path MTU: the gateway never
  // fragments outer packets (RFC 7348 4.3).  The inner packet is
  // fragmented (IPv4 without DF) or answered with ICMP instead.
  const size_t outer = proto::tunnelOverhead(line.header.ipv6, line.header.encapsulation) - kEth;
  const uint16_t path_mtu = health_->path_mtu[line.slot].load(std::memory_order_relaxed);
  const size_t mtu = path_mtu ? path_mtu : line.mtu;
  if (m->data_len + outer > mtu) {
    const uint32_t inner_mtu = mtu > outer + kEth ? static_cast<uint32_t>(mtu - outer - kEth) : 0;
    tooBig(t, m, inner_mtu, tenant, rx_port, origin,
           [&](rte_mbuf* f) { encapsulateOn(t, f, tunnel, line, flow_hash, mapping); });
    return;
  }
  encapsulateOn(t, m, tunnel, line, flow_hash, mapping);
}

// A packet from the tenant's side into a tunnel: its source in a real range
// of the site becomes the mapped one (and, in an ICMP error, the quoted
// destination).  Done last, on each fragment, so that everything before
// (ICMP errors included) saw the real addresses.
[[gnu::noinline]] void Pipeline::mapSource(rte_mbuf* m, const TenantMapping& mapping) {
  auto* data = rte_pktmbuf_mtod(m, uint8_t*);
  const bool v6 = data[12] == 0x86 && data[13] == 0xdd;
  const proto::MapResult r = proto::mapPacket(data + kEth, m->data_len - kEth, v6,
                                              proto::AddressField::kSource, mapping.out);
  if (r.outer) {
    counters_->mapped_out[r.outer->slot].add();
  }
}

// A packet out of a tunnel: its destination in a mapped range of the site
// becomes the real one (and, in an ICMP error, the quoted source), before
// the FIB lookup routes the real address.
[[gnu::noinline]] void Pipeline::unmapDestination(uint8_t* ip, size_t len, bool v6,
                                                  const TenantMapping& mapping) {
  const proto::MapResult r =
      proto::mapPacket(ip, len, v6, proto::AddressField::kDestination, mapping.in);
  if (r.outer) {
    counters_->mapped_in[r.outer->slot].add();
  }
}

[[gnu::always_inline]] inline void Pipeline::encapsulateOn(const ForwardingTables& t, rte_mbuf* m,
                                                           const TunnelEntry& tunnel,
                                                           const LineEntry& line,
                                                           uint32_t flow_hash,
                                                           const TenantMapping* mapping) {
  if (mapping) [[unlikely]] {
    mapSource(m, *mapping);
  }
  const size_t overhead = proto::tunnelOverhead(line.header.ipv6, line.header.encapsulation);
  const size_t inner_len = m->data_len;
  auto* inner = rte_pktmbuf_mtod(m, uint8_t*);
  std::memcpy(inner, tunnel.inner_dst.data(), 6);
  std::memcpy(inner + 6, line.header.src_mac, 6);
  // The inner IP header's TOS / traffic class: DSCP and ECN copied whole
  // (RFC 6040 normal mode: the outer ECN field is the inner one).
  const uint8_t tos =
      inner[12] == 0x08 ? inner[15] : static_cast<uint8_t>((inner[14] << 4) | (inner[15] >> 4));
  auto* out = rte_pktmbuf_mtod(m, uint8_t*) - overhead;
  if (rte_pktmbuf_prepend(m, static_cast<uint16_t>(overhead)) == nullptr) {
    drop(m, DropReason::kNO_BUFFER);
    return;
  }
  const uint16_t udp_len = static_cast<uint16_t>(16 + inner_len);
  const uint16_t sport = proto::tunnelSourcePort(flow_hash);
  auto put16 = [](uint8_t* p, uint16_t v) {
    p[0] = static_cast<uint8_t>(v >> 8);
    p[1] = static_cast<uint8_t>(v);
  };
  if (!line.header.ipv6) {
    std::memcpy(out, line.outer.data(), 50);
    out[15] = tos;
    const uint16_t total = static_cast<uint16_t>(20 + udp_len);
    put16(out + 16, total);
    put16(out + 24, static_cast<uint16_t>(~proto::checksumFold(line.outer_sum + total + tos)));
    put16(out + 34, sport);
    put16(out + 38, udp_len);
    out[46] = static_cast<uint8_t>(tunnel.vni >> 16);
    out[47] = static_cast<uint8_t>(tunnel.vni >> 8);
    out[48] = static_cast<uint8_t>(tunnel.vni);
  } else {
    std::memcpy(out, line.outer.data(), 70);
    const uint32_t vtf = 6u << 28 | static_cast<uint32_t>(tos) << 20 | (flow_hash & 0xfffff);
    put16(out + 14, static_cast<uint16_t>(vtf >> 16));
    put16(out + 16, static_cast<uint16_t>(vtf));
    put16(out + 18, udp_len);
    put16(out + 54, sport);
    put16(out + 58, udp_len);
    out[60] = out[61] = 0;
    out[66] = static_cast<uint8_t>(tunnel.vni >> 16);
    out[67] = static_cast<uint8_t>(tunnel.vni >> 8);
    out[68] = static_cast<uint8_t>(tunnel.vni);
    // UDP over IPv6 carries a checksum (RFC 8200 8.1): the pseudo-header's
    // constant part, its length, and the datagram.
    // rte_raw_cksum sums native-order words: swapped, it is the sum of the
    // big-endian words the other terms are.
    uint32_t sum = line.outer_sum + udp_len + rte_be_to_cpu_16(rte_raw_cksum(out + 54, udp_len));
    uint16_t c = static_cast<uint16_t>(~proto::checksumFold(sum));
    put16(out + 60, c == 0 ? 0xffff : c);
  }
  counters_->tunnel_tx[tunnel.slot].add(inner_len);
  counters_->line_tx[line.slot].add(m->pkt_len);
  transmit(t, line.port, m);
}

bool Pipeline::take(TokenBucket& b, uint64_t now, uint64_t rate, uint64_t burst) {
  // At most a second's worth: no overflow after a long quiet time.
  const uint64_t elapsed = std::min(now - b.last_tsc, tsc_hz_);
  const uint64_t earned = elapsed * rate / tsc_hz_;
  if (earned > 0) {
    b.tokens = std::min(burst, b.tokens + earned);
    // Keep the remainder of the interval: the rate stays exact.
    b.last_tsc = now - b.last_tsc >= tsc_hz_ ? now : b.last_tsc + earned * tsc_hz_ / rate;
  }
  if (b.tokens == 0) {
    return false;
  }
  --b.tokens;
  return true;
}

bool Pipeline::icmpAllowed(bool v6, const uint8_t* source) {
  const uint64_t now = rte_rdtsc();
  const uint32_t key = rte_hash_crc(source, v6 ? 16 : 4, v6);
  TokenBucket& b = icmp_sources_[key % kIcmpSources];
  if (b.key != key || b.last_tsc == 0) {
    b = TokenBucket{kIcmpSourceBurst, now, key};
  }
  return take(b, now, kIcmpSourceRate, kIcmpSourceBurst) &&
         take(icmp_worker_, now, kIcmpRate, kIcmpBurst);
}

// ICMP errors (time exceeded, frag-needed, Packet Too Big) about a packet
// the gateway drops: from the gateway's address on the side it arrived from
// (the LAN port's, or for a packet out of a tunnel the tenant's first LAN
// address: routable back to the sender), quoting the packet as the sender
// sent it, routed like any packet.  Never about an ICMP error, a later
// fragment or a multicast / broadcast packet (proto::mayAnswer); per-source
// and per-worker token buckets.
void Pipeline::icmpError(const ForwardingTables& t, const rte_mbuf* m, proto::IcmpErrorKind kind,
                         uint32_t mtu, uint16_t tenant, uint16_t rx_port, Origin origin) {
  using namespace proto;
  const auto* data = rte_pktmbuf_mtod(m, const uint8_t*);
  const bool v6 = data[12] == 0x86 && data[13] == 0xdd;
  const Bytes packet(reinterpret_cast<const std::byte*>(data + kEth), m->data_len - kEth);
  if (origin == Origin::kGateway || !mayAnswer(packet, v6)) {
    counters_->icmp_not_allowed.add();
    return;
  }
  const TenantEntry& te = t.tenants[tenant];
  const PortEntry& rx = t.ports[rx_port];
  const uint8_t* source = nullptr;
  if (!v6) {
    source = rx.lan && rx.icmp_source4 ? rx.icmp_source4->data()
             : te.icmp_source4         ? te.icmp_source4->data()
                                       : nullptr;
  } else {
    source = rx.lan && rx.icmp_source6 ? rx.icmp_source6->data()
             : te.icmp_source6         ? te.icmp_source6->data()
                                       : nullptr;
  }
  if (!source) {
    counters_->icmp_suppressed.add();
    return;
  }
  const uint8_t* sender = data + kEth + (v6 ? 8 : 12);
  if (!icmpAllowed(v6, sender)) {
    counters_->icmp_rate_limited.add();
    return;
  }
  rte_mbuf* e = rte_pktmbuf_alloc(pool_);
  if (!e) {
    counters_->icmp_suppressed.add();
    return;
  }
  auto* out = rte_pktmbuf_mtod(e, uint8_t*);
  const size_t room = rte_pktmbuf_tailroom(e);
  // The TTL the sender set: forwarding decremented it before the packet
  // turned out too big (not before time exceeded).
  const uint8_t ttl_restore = kind == IcmpErrorKind::kTooBig ? 1 : 0;
  const size_t len =
      room > kEth
          ? buildIcmpError(MutableBytes(reinterpret_cast<std::byte*>(out + kEth), room - kEth),
                           packet, v6, kind, mtu, source, ttl_restore)
          : 0;
  if (len == 0) {
    rte_pktmbuf_free(e);
    counters_->icmp_suppressed.add();
    return;
  }
  std::memcpy(out, data + 6, 6);  // rewritten when forwarded
  std::memcpy(out + 6, data, 6);
  out[12] = data[12];
  out[13] = data[13];
  rte_pktmbuf_append(e, static_cast<uint16_t>(kEth + len));
  e->port = rx_port;
  counters_->icmp_sent.add();
  if (kind == IcmpErrorKind::kTimeExceeded) {
    counters_->icmp_time_exceeded.add();
  } else {
    (v6 ? counters_->icmp_packet_too_big : counters_->icmp_frag_needed).add();
  }
  forward(t, e, tenant, rx_port, Origin::kGateway);
}

}  // namespace mcgw::engine
