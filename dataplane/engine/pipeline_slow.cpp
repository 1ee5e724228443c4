// The pipeline's slow paths, out of the burst loop's file: ICMP errors and
// their rate limits, fragmentation of packets too big, packets held for a
// neighbour, the mapped ranges' translations, the MSS clamp's rewrite, and
// the virtual MACs' slots.  Each runs for a few packets (or, for the MSS
// clamp and the mapped ranges, only when a cheap inline check said so).
#include <rte_cycles.h>
#include <rte_hash_crc.h>
#include <rte_mbuf.h>
#include <rte_ring_elem.h>

#include <algorithm>
#include <cstring>

#include "dataplane/engine/pipeline.hpp"
#include "dataplane/proto/fragment.hpp"
#include "dataplane/proto/icmp.hpp"
#include "dataplane/proto/mss.hpp"
#include "dataplane/proto/prefix_map.hpp"

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

}  // namespace

void Pipeline::startIcmpBuckets() {
  tsc_hz_ = rte_get_tsc_hz();
  icmp_worker_.tokens = kIcmpBurst;
  icmp_worker_.last_tsc = rte_rdtsc();
}

size_t Pipeline::tooBig(const ForwardingTables& t, rte_mbuf* m, uint32_t mtu, uint16_t tenant,
                        uint16_t rx_port, Origin origin, Fragments& frags) {
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
    return 0;
  }
  // IPv4 without DF: fragmented here, all fragments or none.
  const size_t n = proto::ipv4FragmentCount(packet, mtu);
  if (n == 0 || n > kMaxFragments) {
    drop(m, DropReason::kTOO_BIG);
    return 0;
  }
  if (rte_pktmbuf_alloc_bulk(pool_, frags.data(), static_cast<unsigned>(n)) != 0) {
    drop(m, DropReason::kNO_BUFFER);
    return 0;
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
      return 0;
    }
    std::memcpy(out, data, kEth);
    rte_pktmbuf_append(f, static_cast<uint16_t>(kEth + len));
  }
  counters_->fragmented.add();
  counters_->fragments.add(n);
  rte_pktmbuf_free(m);
  return n;
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
  flushRuns();
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
  counters_->icmp_sent.add();
  if (kind == IcmpErrorKind::kTimeExceeded) {
    counters_->icmp_time_exceeded.add();
  } else {
    (v6 ? counters_->icmp_packet_too_big : counters_->icmp_frag_needed).add();
  }
  forward(t, e, tenant, rx_port, Origin::kGateway);
}

}  // namespace mcgw::engine
