// The journey of a burst (Pipeline::process), stage by stage, as DPDK's
// l3fwd and VPP's nodes do it: each stage runs over the whole burst before
// the next, so that one packet's cache misses overlap the others' work.
//
//   stage      per packet                                       leaves the burst
//   ---------  -----------------------------------------------  ------------------------------
//   receive    port, MAC (or an active virtual MAC), EtherType;  tap → phys; kernel-bound →
//              WAN: outer checksum, decap (VTEP and (peer,VNI)   exception path; drops
//              hashes, Geneve, RFC 6040), the peer's MSS clamp
//   checkL3    IP header, trim padding, unmap a mapped range,    multicast / link-local → kernel
//              the lookup key
//   lookup     the tenant FIB for the whole burst at once        -
//              (TenantFib::find4Bulk / find6Bulk)
//   policy     tenants with rules, not to the gateway itself:    denied → drop (policy-deny)
//              the classifier for the burst (pipeline_policy.cpp)
//   route      local?, TTL, ECMP member, then either             local → kernel; TTL → ICMP;
//              tunnel: line, meter, MSS clamp, path MTU, encap    no route / tunnel / neighbour
//              → WAN                                            → drop; red → drop (rate-limit)
//              LAN: neighbour MAC, port MTU → LAN                 → drop; too big → slow path
//
// Counters of the way a burst goes (RX and TX by port kind, line and
// tunnel) are added up per burst (Run); drops and events are counted as
// they happen.  The slow paths (ICMP errors, fragmentation, packets held for
// a neighbour, mapped ranges, the MSS rewrite) are in pipeline_slow.cpp.
//
// Flow audit (flow_sample.hpp) hooks into the route stage: one branch per
// burst while it is off; on, every Nth packet is described before routing
// and its line added after (routeSampled).
#include "dataplane/engine/pipeline.hpp"

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_hash_crc.h>
#include <rte_ip.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_ring.h>
#include <rte_ring_elem.h>

#include <algorithm>
#include <cstring>

#include "dataplane/engine/decap.hpp"
#include "dataplane/proto/checksum.hpp"
#include "dataplane/proto/ipv4.hpp"
#include "dataplane/proto/ipv6.hpp"
#include "dataplane/proto/mss.hpp"
#include "dataplane/proto/tcp.hpp"

namespace mcgw::engine {

namespace {

using proto::IcmpErrorKind;
using proto::MutableBytes;

constexpr size_t kEth = 14;
// How many packets ahead the receive stage prefetches headers.
constexpr unsigned kPrefetchAhead = 3;
// Ethernet, IPv4, UDP and VXLAN or Geneve without options.
constexpr size_t kOuterVxlan4 = 14 + 20 + 8 + 8;

// The decapsulation lookups over one snapshot, through the burst's memo.
// `tenant` answers with the tunnel index (which names the tenant); the
// matched VTEP's line is kept.
struct DecapLookup {
  const ForwardingTables& t;
  DecapMemo& memo;
  mutable uint16_t line = 0;

  bool peer(bool ipv6, const uint8_t* src, uint32_t* peer_id) const {
    if (!ipv6) {
      uint32_t a;
      std::memcpy(&a, src, 4);
      if (!memo.vtep_valid || memo.vtep4 != a) {
        const ForwardingTables::VtepHit* hit = t.vtep4.find(a);
        if (!hit) {
          return false;
        }
        memo.vtep_valid = true;
        memo.vtep4 = a;
        memo.vtep = *hit;
      }
      *peer_id = memo.vtep.peer;
      line = memo.vtep.line;
      return true;
    }
    const ForwardingTables::VtepHit* hit = t.vtep(true, src);
    if (!hit) {
      return false;
    }
    *peer_id = hit->peer;
    line = hit->line;
    return true;
  }
  bool tenant(uint32_t peer_id, uint32_t vni, uint32_t* tunnel) const {
    const uint64_t key = uint64_t{peer_id} << 32 | vni;
    if (!memo.tunnel_valid || memo.tunnel_key != key) {
      uint16_t idx = 0;
      if (!t.tunnelFor(static_cast<uint16_t>(peer_id), vni, &idx)) {
        return false;
      }
      memo.tunnel_valid = true;
      memo.tunnel_key = key;
      memo.tunnel = idx;
    }
    *tunnel = memo.tunnel;
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

void put16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v >> 8);
  p[1] = static_cast<uint8_t>(v);
}

// The largest inner Ethernet frame a line carries at path MTU `mtu` (an
// IP MTU): what is left after the outer IP, UDP and tunnel headers, or with
// ESP the largest payload espMaxPayload allows less the tunnel's headers.
inline size_t maxInnerFrame(const LineEntry& line, size_t mtu) {
  if (!line.esp) [[likely]] {
    const size_t outer = line.outer_len - line.outer_l3;  // outer IP and up
    return mtu > outer ? mtu - outer : 0;
  }
  const size_t before = line.esp_at - line.outer_l3;     // IP (and the RFC 3948 UDP header)
  const size_t tunnel = line.outer_len - line.outer_l4;  // the tunnel's UDP and VXLAN/Geneve
  const size_t payload = mtu > before ? crypto::espMaxPayload(mtu - before) : 0;
  return payload > tunnel ? payload - tunnel : 0;
}

}  // namespace

Pipeline::Pipeline(uint16_t tx_queue, rte_mempool* pool, WorkerCounters* counters,
                   const LiveState* health, rte_ring* misses, rte_ring* flows,
                   policy::WorkerMeters* meters, policy::LineBucket* line_buckets)
    : line_buckets_(line_buckets),
      tx_queue_(tx_queue),
      pool_(pool),
      counters_(counters),
      health_(health),
      misses_(misses),
      flows_(flows),
      meters_(meters) {
  for (auto& b : tx_) {
    b = static_cast<rte_eth_dev_tx_buffer*>(
        rte_zmalloc("mcgw_txbuf", RTE_ETH_TX_BUFFER_SIZE(kBurst), RTE_CACHE_LINE_SIZE));
    if (b) {
      rte_eth_tx_buffer_init(b, kBurst);
      rte_eth_tx_buffer_set_err_callback(b, txErrorCallback, counters_);
    }
  }
  startIcmpBuckets();
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
  flushRuns();
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
  runs_[kRunTx].add(t.ports[port].lan ? counters_->lan_tx : counters_->wan_tx, m->pkt_len);
  pending_mask_ |= 1u << port;
  rte_eth_tx_buffer(port, tx_queue_, tx_[port], m);
}

// The RX port is passed along, not written into the mbufs: a 16-bit store
// into the mbuf's rearm word, read back whole by the mbuf code, cost about
// 9 cycles a packet (docs/performance.md, "What each step gave").
void Pipeline::process(const ForwardingTables& t, uint16_t rx_port, rte_mbuf** pkts, uint16_t n) {
  processAll(t, pkts, n, rx_port);
}

void Pipeline::process(const ForwardingTables& t, rte_mbuf** pkts, uint16_t n) {
  processAll(t, pkts, n, kPortOfMbuf);
}

void Pipeline::processAll(const ForwardingTables& t, rte_mbuf** pkts, uint16_t n, int32_t rx_port) {
  for (uint16_t done = 0; done < n;) {
    const uint16_t chunk = std::min<uint16_t>(kBurst, static_cast<uint16_t>(n - done));
    processBurst(t, pkts + done, chunk, rx_port);
    done = static_cast<uint16_t>(done + chunk);
  }
  flushRuns();
}

// At most kBurst packets through the stages.
void Pipeline::processBurst(const ForwardingTables& t, rte_mbuf** pkts, uint16_t n,
                            int32_t rx_port) {
  gateway_nh_ = nullptr;
  decap_memo_.vtep_valid = decap_memo_.tunnel_valid = false;
  burst_tsc_ = rte_rdtsc();                 // the meters' clock for the burst
  std::array<Packet, kBurst>& ps = burst_;  // every field is written before it is read
  unsigned k = 0;
  for (unsigned i = 0; i < kPrefetchAhead && i < n; ++i) {
    rte_prefetch0(rte_pktmbuf_mtod(pkts[i], void*));
  }
  for (unsigned i = 0; i < n; ++i) {
    if (i + kPrefetchAhead < n) {
      rte_prefetch0(rte_pktmbuf_mtod(pkts[i + kPrefetchAhead], void*));
    }
    Packet& p = ps[k];
    rte_mbuf* m = pkts[i];
    if (receive(t, m, rx_port == kPortOfMbuf ? m->port : static_cast<uint16_t>(rx_port), p) &&
        checkL3(t, p)) {
      ++k;
    }
  }
  lookup(t, ps.data(), k);
  // Flow audit off: the branch below is all it costs per burst (the
  // policy stage looks at `every` only in a burst with a denied packet).
  // On, a burst without a sample (at 1-in-1000, 31 in 32) only counts down.
  const uint32_t every = health_->flow_sampling.load(std::memory_order_relaxed);
  if (t.any_policy) {
    k = policy(t, ps.data(), k, every);
  }
  if (every != 0) [[unlikely]] {
    sample_left_ = std::min(sample_left_, every);
    if (sample_left_ <= k) {
      routeSampled(t, ps.data(), k, every);
      return;
    }
    sample_left_ -= k;
  }
  for (unsigned i = 0; i < k; ++i) {
    route(t, ps[i]);
  }
}

// Stage route for a burst with a flow-audit sample: every `every`th packet
// (a countdown per worker) is described before it is routed (afterwards it
// may be gone) and its line filled in after; packets that neither came out
// of a tunnel nor went into one (LAN to LAN, dropped before a line was
// chosen) leave no sample, unless route() dropped them as isolation or red
// (last_drop_).  The record is built in flow_sample.cpp.
void Pipeline::routeSampled(const ForwardingTables& t, Packet* ps, unsigned n, uint32_t every) {
  uint64_t now = 0;  // the TSC, read for the burst's first sample
  for (unsigned i = 0; i < n; ++i) {
    Packet& p = ps[i];
    if (--sample_left_ != 0) {
      route(t, p);
      continue;
    }
    sample_left_ = every;
    if (now == 0) {
      now = rte_rdtsc();
    }
    FlowSample s{};
    s.tsc = now;
    s.tenant = p.tenant;
    s.vni = t.tenants[p.tenant].vni;
    fillFlowSample(s, rte_pktmbuf_mtod(p.m, const uint8_t*) + kEth, p.l3_len, p.v6);
    last_hop_ = kNoHop;
    last_drop_ = 0;
    route(t, p);
    const bool from_tunnel = p.origin == Origin::kTunnel;
    const uint32_t hop = from_tunnel ? p.hop : last_hop_;
    if (hop == kNoHop && last_drop_ == 0) {
      continue;
    }
    if (last_drop_ != 0) {
      s.status = static_cast<uint8_t>(last_drop_ >> 16);
      s.rule = static_cast<uint16_t>(last_drop_);
    }
    s.direction =
        static_cast<uint8_t>(from_tunnel ? FlowDirection::kFromTunnel : FlowDirection::kToTunnel);
    s.peer = static_cast<uint16_t>(hop >> 16);
    s.line = static_cast<uint16_t>(hop);
    if (flows_ && rte_ring_sp_enqueue_elem(flows_, &s, sizeof(s)) == 0) {
      counters_->flow_samples.add();
    } else {
      counters_->flow_ring_full.add();
    }
  }
}

// Stage receive: what arrived where, decapsulated when it came out of a
// tunnel.
[[gnu::always_inline]] inline bool Pipeline::receive(const ForwardingTables& t, rte_mbuf* m,
                                                     uint16_t port, Packet& p) {
  if (port >= kMaxPorts || !t.ports[port].present) {
    drop(m, DropReason::kNO_TENANT);
    return false;
  }
  const PortEntry& pe = t.ports[port];
  if (pe.tap) {  // the kernel's packets (ARP, ND, BGP, ...) leave as they are
    counters_->from_kernel.add(m->pkt_len);
    transmit(t, pe.phys, m);
    return false;
  }
  runs_[kRunRx].add(pe.lan ? counters_->lan_rx : counters_->wan_rx, m->pkt_len);
  if (!rte_pktmbuf_is_contiguous(m)) {
    drop(m, DropReason::kSEGMENTED);
    return false;
  }
  auto* data = rte_pktmbuf_mtod(m, uint8_t*);
  if (m->data_len < kEth) {
    drop(m, DropReason::kMALFORMED);
    return false;
  }
  if (!sameMac(data, pe.mac)) [[unlikely]] {
    if (data[0] & 1) {  // broadcast, multicast: ARP, ND, ... for the kernel
      toKernel(t, pe, m, DropReason::kOTHER_HOST);
      return false;
    }
    // Another host's, unless it is one of the port's virtual MACs (a VRRP
    // group here is Active): then it is handled as if to the port's MAC.
    if (!health_->virtual_macs.accepts(port, data)) {
      drop(m, DropReason::kOTHER_HOST);
      return false;
    }
    counters_->virtual_mac.add();
    // As if to the port's MAC, literally: the kernel (accept mode, ARP to
    // the virtual MAC) takes only its own MAC as addressed to it.
    std::memcpy(data, pe.mac.data(), 6);
    if (virtualMacToKernel(data, m->data_len)) {
      toKernel(t, pe, m, DropReason::kLOCAL);
      return false;
    }
  }
  p.m = m;
  p.rx_port = port;
  if (pe.lan) {
    const uint16_t type = static_cast<uint16_t>(data[12] << 8 | data[13]);
    if (type != proto::kEtherTypeIpv4 && type != proto::kEtherTypeIpv6) {
      toKernel(t, pe, m, DropReason::kNOT_IP);
      return false;
    }
    if (pe.tenant == kNoTenant) {
      drop(m, DropReason::kNO_TENANT);
      return false;
    }
    p.tenant = pe.tenant;
    p.origin = Origin::kPort;
    p.v6 = type == proto::kEtherTypeIpv6;
    // The NIC's RSS hash of the packet, when it gives one, mixed once, is
    // its flow hash (docs/architecture.md, "The flow hash"): unmixed, the
    // low bits that chose the RX queue (and so the worker) would also
    // choose the line.
    p.hashed = (m->ol_flags & RTE_MBUF_F_RX_RSS_HASH) != 0;
    p.flow_hash = m->hash.rss;  // mixed when a tunnel or an ECMP group needs it
    return true;
  }
  // The outer IPv4 header checksum: decapsulate() checks it for tunnel
  // packets unless the port says it checked it and that the packet is a
  // plain IPv4 packet.  A NIC that parses VXLAN reports the inner header's
  // checksum in RTE_MBUF_F_RX_IP_CKSUM_* and the outer one only as
  // RTE_MBUF_F_RX_OUTER_IP_CKSUM_BAD.
  if (m->ol_flags & RTE_MBUF_F_RX_OUTER_IP_CKSUM_BAD) [[unlikely]] {
    drop(m, DropReason::kBAD_CHECKSUM);
    return false;
  }
  bool verify = (m->ol_flags & RTE_MBUF_F_RX_IP_CKSUM_MASK) != RTE_MBUF_F_RX_IP_CKSUM_GOOD ||
                (m->packet_type & RTE_PTYPE_TUNNEL_MASK) != 0 ||
                !RTE_ETH_IS_IPV4_HDR(m->packet_type);
  // ESP (pipeline_esp.cpp): opened in place into the plain tunnel packet,
  // which then goes through decapsulation like any other; its outer header
  // was not authenticated, but the SA's line must be the one its source
  // address names.
  int32_t esp_line = -1;
  if (t.any_encrypted) [[unlikely]] {
    const EspVerdict v = openEsp(t, m, &esp_line);
    if (v == EspVerdict::kDropped) {
      return false;
    }
    if (v == EspVerdict::kOpened) {
      data = rte_pktmbuf_mtod(m, uint8_t*);
      verify = false;
    }
  }
  DecapLookup decap{t, decap_memo_};
  DecapResult r;
  decapsulateInto(MutableBytes(reinterpret_cast<std::byte*>(data), m->data_len), decap, verify, r);
  if (r.kind == DecapResult::Kind::kNotTunnel) {
    toKernel(t, pe, m, DropReason::kNOT_OVERLAY);  // BGP, BFD, SSH, ping, ARP
    return false;
  }
  if (r.kind == DecapResult::Kind::kDrop) {
    drop(m, r.reason);
    return false;
  }
  if (t.any_encrypted) [[unlikely]] {
    if (esp_line >= 0 ? decap.line != esp_line : t.lines[decap.line].encrypted) {
      drop(m, esp_line >= 0 ? DropReason::kESP_UNKNOWN_SPI : DropReason::kCLEAR_TEXT);
      return false;
    }
  }
  const TunnelEntry& tunnel = t.tunnels[r.tenant];
  const LineEntry& rx_line = t.lines[decap.line];
  runs_[kRunLineRx].add(counters_->line_rx[rx_line.slot], m->pkt_len);
  runs_[kRunUsageRx].add(counters_->usage_rx[tunnel.tenant_line[rx_line.pos]], m->pkt_len);
  rte_pktmbuf_adj(m, static_cast<uint16_t>(r.inner_offset));
  if (m->data_len > r.inner.size()) {  // bytes past the outer UDP datagram
    rte_pktmbuf_trim(m, static_cast<uint16_t>(m->data_len - r.inner.size()));
  }
  runs_[kRunTunnelRx].add(counters_->tunnel_rx[tunnel.slot], m->pkt_len);
  data = rte_pktmbuf_mtod(m, uint8_t*);
  const uint16_t type = static_cast<uint16_t>(data[12] << 8 | data[13]);
  if (type != proto::kEtherTypeIpv4 && type != proto::kEtherTypeIpv6) {
    drop(m, DropReason::kNOT_IP);
    return false;
  }
  clampSyn(m, tunnel);  // the other direction's SYN-ACK (or SYN) from the peer's side
  p.tenant = tunnel.tenant;
  p.origin = Origin::kTunnel;
  p.v6 = type == proto::kEtherTypeIpv6;
  p.hashed = false;  // the NIC hashed the outer headers
  p.hop = uint32_t{tunnel.peer} << 16 | rx_line.slot;
  return true;
}

// Stage checkL3: a well-formed IP packet, its Ethernet padding trimmed and
// (out of a tunnel) its destination unmapped; multicast, broadcast and
// link-local destinations are never routed.
[[gnu::always_inline]] inline bool Pipeline::checkL3(const ForwardingTables& t, Packet& p) {
  using namespace proto;
  rte_mbuf* m = p.m;
  auto* data = rte_pktmbuf_mtod(m, uint8_t*);
  const size_t len = m->data_len;
  const TenantEntry& te = t.tenants[p.tenant];
  size_t total = 0;
  if (!p.v6) {
    auto* ip = reinterpret_cast<Ipv4Header*>(data + kEth);
    if (len < kEth + sizeof(Ipv4Header)) {
      drop(m, DropReason::kMALFORMED);
      return false;
    }
    const size_t hl = ip->headerLength();
    total = ip->total_length.get();
    if (ip->version() != 4 || hl < sizeof(Ipv4Header) || total < hl || total > len - kEth) {
      drop(m, DropReason::kMALFORMED);
      return false;
    }
  } else {
    auto* ip = reinterpret_cast<Ipv6Header*>(data + kEth);
    if (len < kEth + sizeof(Ipv6Header)) {
      drop(m, DropReason::kMALFORMED);
      return false;
    }
    total = sizeof(Ipv6Header) + ip->payload_length.get();
    if (ip->version() != 6 || total > len - kEth) {
      drop(m, DropReason::kMALFORMED);
      return false;
    }
  }
  if (total < len - kEth) {  // Ethernet padding stays behind
    rte_pktmbuf_trim(m, static_cast<uint16_t>(len - kEth - total));
  }
  if (te.mapping && p.origin == Origin::kTunnel) [[unlikely]] {
    unmapDestination(data + kEth, total, p.v6, *te.mapping);
  }
  p.l3_len = static_cast<uint32_t>(total);
  if (!p.v6) {
    const uint8_t* dst = data + kEth + 16;
    if (dst[0] >= 224) {  // multicast, broadcast
      localPacket(t, m, p.rx_port, p.origin);
      return false;
    }
    uint32_t be;
    std::memcpy(&be, dst, 4);
    p.dst4 = rte_be_to_cpu_32(be);
    p.dst = dst;
  } else {
    const uint8_t* dst = data + kEth + 24;
    if (dst[0] == 0xff || (dst[0] == 0xfe && (dst[1] & 0xc0) == 0x80)) {
      localPacket(t, m, p.rx_port, p.origin);
      return false;
    }
    p.dst = dst;
  }
  return true;
}

// Stage lookup: the burst's destinations by tenant and family, each group
// in one bulk lookup (a burst is usually one group).
void Pipeline::lookup(const ForwardingTables& t, Packet* ps, unsigned n) {
  if (n == 0) {
    return;
  }
  // The common burst, one tenant and IPv4: straight through.
  bool uniform = !ps[0].v6;
  for (unsigned i = 1; i < n && uniform; ++i) {
    uniform = ps[i].tenant == ps[0].tenant && !ps[i].v6;
  }
  if (uniform) {
    uint32_t keys[kBurst], nh[kBurst];
    for (unsigned i = 0; i < n; ++i) {
      keys[i] = ps[i].dst4;
    }
    t.tenants[ps[0].tenant].fib->find4Bulk(keys, nh, n);
    for (unsigned i = 0; i < n; ++i) {
      ps[i].nh = nh[i];
    }
    return;
  }
  uint32_t pending = n >= 32 ? 0xffffffffu : (1u << n) - 1;
  static_assert(kBurst <= 32, "one bit per packet of a burst");
  while (pending) {
    const unsigned first = static_cast<unsigned>(__builtin_ctz(pending));
    const uint16_t tenant = ps[first].tenant;
    const bool v6 = ps[first].v6;
    unsigned idx[kBurst];
    unsigned k = 0;
    for (uint32_t rest = pending; rest; rest &= rest - 1) {
      const unsigned i = static_cast<unsigned>(__builtin_ctz(rest));
      if (ps[i].tenant == tenant && ps[i].v6 == v6) {
        idx[k++] = i;
        pending &= ~(1u << i);
      }
    }
    const TenantFib& fib = *t.tenants[tenant].fib;
    uint32_t nh[kBurst];
    if (!v6) {
      uint32_t keys[kBurst];
      for (unsigned j = 0; j < k; ++j) {
        keys[j] = ps[idx[j]].dst4;
      }
      fib.find4Bulk(keys, nh, k);
    } else {
      uint8_t keys[kBurst][16];
      for (unsigned j = 0; j < k; ++j) {
        std::memcpy(keys[j], ps[idx[j]].dst, 16);
      }
      fib.find6Bulk(keys, nh, k);
    }
    for (unsigned j = 0; j < k; ++j) {
      ps[idx[j]].nh = nh[j];
    }
  }
}

// The stages for one packet the gateway made (an ICMP error).
void Pipeline::forward(const ForwardingTables& t, rte_mbuf* m, uint16_t tenant, uint16_t rx_port,
                       Origin origin) {
  Packet p;
  p.m = m;
  p.tenant = tenant;
  p.rx_port = rx_port;
  p.origin = origin;
  const auto* data = rte_pktmbuf_mtod(m, const uint8_t*);
  p.v6 = data[12] == 0x86 && data[13] == 0xdd;
  p.hashed = false;
  if (!checkL3(t, p)) {
    return;
  }
  const TenantFib& fib = *t.tenants[tenant].fib;
  p.nh = p.v6 ? fib.find6(p.dst) : fib.find4(p.dst);
  route(t, p);
}

// Stage route: what the FIB said, done.
inline void Pipeline::route(const ForwardingTables& t, Packet& p) {
  using namespace proto;
  rte_mbuf* m = p.m;
  const bool originated = p.origin == Origin::kGateway;
  auto* l3 = rte_pktmbuf_mtod(m, uint8_t*) + kEth;
  const TenantEntry& te = t.tenants[p.tenant];
  const uint32_t nh_index = p.nh;
  if (nh_index != TenantFib::kNoRoute &&
      te.next_hops->at(nh_index).kind == NextHop::Kind::kLocal) {  // ours
    localPacket(t, m, p.rx_port, p.origin);
    return;
  }
  uint8_t& ttl =
      p.v6 ? reinterpret_cast<Ipv6Header*>(l3)->hop_limit : reinterpret_cast<Ipv4Header*>(l3)->ttl;
  if (ttl <= 1 && !originated) {
    icmpError(t, m, IcmpErrorKind::kTimeExceeded, 0, p.tenant, p.rx_port, p.origin);
    drop(m, DropReason::kTTL_EXPIRED);
    return;
  }
  if (nh_index == TenantFib::kNoRoute) {
    if (te.isolation && isolated(te, l3, p.l3_len, p.v6)) [[unlikely]] {
      counters_->policy[te.isolation_slot].add();
      if (!originated) {  // for flow audit (routeSampled)
        last_drop_ =
            uint32_t{static_cast<uint8_t>(FlowStatus::kIsolation)} << 16 | te.isolation_slot;
      }
      drop(m, DropReason::kTENANT_ISOLATION);
      return;
    }
    drop(m, DropReason::kNO_ROUTE);
    return;
  }
  if (!originated) {
    if (!p.v6) {
      auto* ip = reinterpret_cast<Ipv4Header*>(l3);
      const uint16_t old_word = static_cast<uint16_t>(ip->ttl << 8 | ip->protocol);
      --ip->ttl;
      ip->checksum.set(checksumUpdate16(ip->checksum.get(), old_word,
                                        static_cast<uint16_t>(ip->ttl << 8 | ip->protocol)));
    } else {
      --ttl;
    }
  }
  // The inner flow hash: only tunnels (line choice, UDP source port) and
  // ECMP groups need it.
  auto flowHash = [&] {
    if (p.hashed) {
      return rssFlowHash(p.flow_hash);
    }
    if (!p.v6) {
      const auto* ip = reinterpret_cast<const Ipv4Header*>(l3);
      return flowHash4(ip, l3 + ip->headerLength(), p.l3_len - ip->headerLength());
    }
    return flowHash6(reinterpret_cast<const Ipv6Header*>(l3), l3 + sizeof(Ipv6Header),
                     p.l3_len - sizeof(Ipv6Header));
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
      const TunnelEntry* tun = &t.tunnels[tunnel];
      if (tun->n_stand_ins != 0 && !tunnelUsable(t, tun->slot)) {
        tun = standIn(t, *tun);
      }
      encapsulate(t, m, *tun, hashed ? flow_hash : flowHash(), p.tenant, p.rx_port, p.origin);
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
  if (p.l3_len > mtu) [[unlikely]] {
    Fragments frags;
    const size_t n = tooBig(t, m, mtu, p.tenant, p.rx_port, p.origin, frags);
    for (size_t i = 0; i < n; ++i) {
      toLan(t, frags[i], *nh, p.v6);
    }
    return;
  }
  toLan(t, m, *nh, p.v6);
}

[[gnu::always_inline]] inline void Pipeline::toLan(const ForwardingTables& t, rte_mbuf* m,
                                                   const NextHop& nh, bool v6) {
  auto* data = rte_pktmbuf_mtod(m, uint8_t*);
  if (nh.kind == NextHop::Kind::kGateway) {
    // The router's MAC at this moment: a neighbour change needs no route
    // change.  Unknown: dropped, the kernel keeps configured next hops
    // resolved.  Looked up once per burst and next hop.
    if (&nh != gateway_nh_) {
      if (!t.neighbor(nh.port, nh.v6, nh.address.data(), &gateway_mac_)) {
        drop(m, DropReason::kNO_NEIGHBOR);
        return;
      }
      gateway_nh_ = &nh;
    }
    std::memcpy(data, gateway_mac_.data(), 6);
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

// TCP SYN and SYN-ACK through a tunnel: the MSS option lowered to the
// tunnel's clamp (0: off).  Other packets pay the inline pre-check only.
inline void Pipeline::clampSyn(rte_mbuf* m, const TunnelEntry& tunnel) {
  const auto* data = rte_pktmbuf_mtod(m, const uint8_t*);
  const bool v6 = data[12] == 0x86 && data[13] == 0xdd;
  if (proto::mayBeTcpSyn(data + kEth, m->data_len - kEth, v6)) {
    clampSynSlow(m, tunnel, v6);
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

bool Pipeline::lineUsable(const ForwardingTables& t, uint16_t line) const {
  const LineEntry& l = t.lines[line];
  return l.resolved && health_->up[l.slot].load(std::memory_order_relaxed) &&
         (!l.encrypted || l.esp != nullptr);
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

[[gnu::always_inline]] inline void Pipeline::encapsulate(const ForwardingTables& t, rte_mbuf* m,
                                                         const TunnelEntry& tunnel,
                                                         uint32_t flow_hash, uint16_t tenant,
                                                         uint16_t rx_port, Origin origin) {
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
  } else if (tunnel.n_lines > 0 && usable(tunnel.lines[0])) {
    chosen = &t.lines[tunnel.lines[0]];
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
  const uint16_t tenant_line = tunnel.tenant_line[line.pos];
  // The tenant's meter on the line (RFC 2698, colour-blind, on the inner
  // IP packet): red is dropped, yellow remarked.  An unmetered slot costs a
  // load and a branch.  Not for the gateway's own ICMP errors.
  if (meters_ && origin != Origin::kGateway) {
    auto* inner = rte_pktmbuf_mtod(m, uint8_t*);
    const auto colour =
        meters_->check(tenant_line, burst_tsc_, static_cast<uint32_t>(m->data_len - kEth));
    if (colour != policy::Colour::kGreen) [[unlikely]] {
      if (colour == policy::Colour::kRed) {
        counters_->meter_red[tenant_line].add();
        // For flow audit (routeSampled): the line and why.
        last_hop_ = uint32_t{tunnel.peer} << 16 | line.slot;
        last_drop_ = uint32_t{static_cast<uint8_t>(FlowStatus::kRateLimit)} << 16 | kNoRule;
        drop(m, DropReason::kRATE_LIMIT);
        return;
      }
      counters_->meter_yellow[tenant_line].add();
      if (const int16_t dscp = t.tenants[tenant].yellow_dscp; dscp >= 0) {
        if (inner[12] == 0x08) {
          policy::remarkDscp4(inner + kEth, static_cast<uint8_t>(dscp));
        } else {
          policy::remarkDscp6(inner + kEth, static_cast<uint8_t>(dscp));
        }
      }
    }
  }
  // For flow audit: not for a packet the gateway made (an ICMP error about
  // a LAN-to-LAN packet would make its sample look like one into a tunnel).
  if (origin != Origin::kGateway) {
    last_hop_ = uint32_t{tunnel.peer} << 16 | line.slot;
  }
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
  const uint16_t path_mtu = health_->path_mtu[line.slot].load(std::memory_order_relaxed);
  const size_t mtu = path_mtu ? path_mtu : line.mtu;
  const size_t max_frame = maxInnerFrame(line, mtu);  // the inner Ethernet frame
  if (m->data_len > max_frame) [[unlikely]] {
    const uint32_t inner_mtu = max_frame > kEth ? static_cast<uint32_t>(max_frame - kEth) : 0;
    Fragments frags;
    const size_t n = tooBig(t, m, inner_mtu, tenant, rx_port, origin, frags);
    for (size_t i = 0; i < n; ++i) {
      encapsulateOn(t, frags[i], tunnel, line, flow_hash, mapping, tenant_line);
    }
    return;
  }
  encapsulateOn(t, m, tunnel, line, flow_hash, mapping, tenant_line);
}

// The line's outer headers (encoded once with the tables) copied in front
// of the inner frame; per packet only lengths, TOS / traffic class, the UDP
// source port, the VNI and the checksums are written, at the offsets the
// line's entry gives.
[[gnu::always_inline]] inline void Pipeline::encapsulateOn(
    const ForwardingTables& t, rte_mbuf* m, const TunnelEntry& tunnel, const LineEntry& line,
    uint32_t flow_hash, const TenantMapping* mapping, uint16_t tenant_line) {
  if (mapping) [[unlikely]] {
    mapSource(m, *mapping);
  }
  const size_t overhead = line.outer_len;
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
  // A copy of a length the compiler knows is a few vector moves; the
  // common one is VXLAN or Geneve without options over IPv4.
  if (overhead == kOuterVxlan4) [[likely]] {
    std::memcpy(out, line.outer.data(), kOuterVxlan4);
  } else {
    std::memcpy(out, line.outer.data(), overhead);
  }
  uint8_t* ip = out + line.outer_l3;
  uint8_t* udp = out + line.outer_l4;
  const uint16_t udp_len = static_cast<uint16_t>(overhead - line.outer_l4 + inner_len);
  // ESP: the trailer (padding, pad length, next header, ICV) counts in the
  // outer IP length; the packet is sealed once the tunnel headers are in.
  const size_t trailer = line.esp ? crypto::espTrailerLen(udp_len) : 0;
  put16(udp, proto::tunnelSourcePort(flow_hash));
  put16(udp + 4, udp_len);
  // The VNI: bytes 4..6 of the VXLAN and of the Geneve header.
  udp[8 + 4] = static_cast<uint8_t>(tunnel.vni >> 16);
  udp[8 + 5] = static_cast<uint8_t>(tunnel.vni >> 8);
  udp[8 + 6] = static_cast<uint8_t>(tunnel.vni);
  if (!line.header.ipv6) {
    ip[1] = tos;
    const uint16_t total = static_cast<uint16_t>(overhead - line.outer_l3 + inner_len + trailer);
    put16(ip + 2, total);
    put16(ip + 10, static_cast<uint16_t>(~proto::checksumFold(line.outer_sum + total + tos)));
  } else {
    const uint32_t vtf = 6u << 28 | static_cast<uint32_t>(tos) << 20 | (flow_hash & 0xfffff);
    put16(ip, static_cast<uint16_t>(vtf >> 16));
    put16(ip + 2, static_cast<uint16_t>(vtf));
    put16(ip + 4, static_cast<uint16_t>(overhead - line.outer_l3 - 40 + inner_len + trailer));
    // UDP over IPv6 carries a checksum (RFC 8200 8.1): the pseudo-header's
    // constant part, its length, and the datagram.
    // rte_raw_cksum sums native-order words: swapped, it is the sum of the
    // big-endian words the other terms are.
    udp[6] = udp[7] = 0;
    uint32_t sum = line.outer_sum + udp_len + rte_be_to_cpu_16(rte_raw_cksum(udp, udp_len));
    uint16_t c = static_cast<uint16_t>(~proto::checksumFold(sum));
    put16(udp + 6, c == 0 ? 0xffff : c);
  }
  // A line with a capacity (and a shaper: shaping.failed otherwise): the
  // packet waits in its priority's queue (pipeline_shaper.cpp), counted as
  // sent when it is queued; on an encrypted line it is sealed when it
  // leaves the queue.
  ShapedLine* shaped = line.shape.rate_bytes ? shaper_of_slot_[line.slot] : nullptr;
  if (line.esp) {
    if (!(shaped ? appendEspTrailer(m, udp_len) : sealEsp(m, line, out, udp_len))) [[unlikely]] {
      return;
    }
  }
  if (shaped && shape(*shaped, tunnel.priority, tenant_line, m) == Shaping::kDropped) {
    return;
  }
  runs_[kRunTunnelTx].add(counters_->tunnel_tx[tunnel.slot], inner_len);
  runs_[kRunLineTx].add(counters_->line_tx[line.slot], m->pkt_len);
  runs_[kRunUsageTx].add(counters_->usage_tx[tenant_line], m->pkt_len);
  if (!shaped) [[likely]] {
    transmit(t, line.port, m);
  }
}

}  // namespace mcgw::engine
