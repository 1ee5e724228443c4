// The burst stages of the fast path (engine::Pipeline: receive, checkL3,
// lookup, route) with bursts that mix every kind of packet, so that a
// verdict or a piece of per-packet context (tenant, family, length, lookup
// key, next hop, the per-burst gateway MAC) can never leak from one packet
// to its neighbour.  The real Pipeline over tables from the real
// TablesBuilder, on net_ring ports (EAL --no-huge).
//
// Every packet kind has its outcome worked out here, independently of the
// pipeline: the exact bytes it leaves as (outer headers, VNI, UDP source
// port from the flow hash, TTL lowered and checksums, next hop MAC,
// fragments, a clamped MSS; ICMP errors built byte for byte) and on which
// port, or the drop reason, and every counter it moves.  Each packet
// carries a tag (its IPv4 ID, IPv6 flow label, or in ARP the target
// hardware address) by which an output is matched to the packet that caused
// it.  Bursts: each kind alone, every ordered pair of kinds (a b, b a b),
// all kinds at once, gateway next hops interleaved, and 3000 seeded random
// mixes of 1..32 packets and of up to 120 (process() cuts them into
// bursts of 32); after each process() call every output must be its
// packet's expected one and every counter must have moved by exactly the
// sum of the packets' expected amounts.
//
// Kinds: IPv4 / IPv6 LAN -> tunnel (t1 and t2: two VNIs, two lookup
// groups), IPv4 / IPv6 tunnel -> LAN, LAN -> LAN gateways (two of t1, the
// same address in t2 with another MAC), Ethernet padding, local (to the
// TAP; t2 without one: dropped), multicast MAC and IP, ARP (TAP; t2:
// not-ip), TTL 1 from the LAN (IPv4, IPv6) and from the tunnel (ICMP back
// into it), DF too big into the tunnel (ICMP frag-needed, Packet Too Big),
// too big for the LAN from the tunnel (fragmented; DF and IPv6: ICMP into
// the tunnel), no route (IPv4, IPv6), malformed total length (LAN, inner),
// other host, a virtual MAC, SYN with MSS clamp (t1) and without (t2),
// unknown VTEP, unknown VNI, bad outer checksum (and one the port's offload
// said good), inner multicast / gateway address / ARP out of the tunnel,
// non-overlay on the WAN.  ICMP errors are kept under the rate limits (a
// fresh Pipeline when the worker's bucket would run low, a sender address
// per tag) so that every one is expected.
//
//   lan0 (t1) 10.1.0.1/24, 2001:db8:1::1/64, MTU 1400, its kernel side on a
//     TAP ring
//     host 10.1.0.10 / 2001:db8:1::10, routers 10.1.0.254 (10.9/16),
//     10.1.0.253 (10.8/16) and 2001:db8:1::fe (2001:db8:9::/48)
//   lan1 (t2) 10.1.0.2/24, no TAP
//     host 10.1.0.10 and router 10.1.0.254 (10.9/16): other MACs than lan0's
//   wan0 203.0.113.1/24 ── site-b 203.0.113.10 (VXLAN: t1 VNI 5001, t2 VNI 5002)
//     t1: 10.2/16 and 2001:db8:2::/48 to site-b; t2: 10.2/16 to site-b
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <rte_errno.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_hash_crc.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_ring.h>
#include <rte_ring_elem.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "config/loader.hpp"
#include "dataplane/engine/counters.hpp"
#include "dataplane/engine/drop_reason.hpp"
#include "dataplane/engine/pipeline.hpp"
#include "dataplane/engine/tables.hpp"
#include "dataplane/proto/tunnel.hpp"
#include "tests/support/eal.hpp"
#include "tests/support/ring_port.hpp"

namespace mcgw::engine {
namespace {

const auto* const kEal =
    ::testing::AddGlobalTestEnvironment(new test::EalEnvironment("pipeline_burst_test", 1024));

using Bytes = std::vector<uint8_t>;
using Ip4 = std::array<uint8_t, 4>;
using Ip6 = std::array<uint8_t, 16>;

constexpr size_t kEth = 14;
constexpr uint32_t kVni1 = 5001;
constexpr uint32_t kVni2 = 5002;

const Mac kLan0Mac = {0x02, 0, 0, 0, 0x01, 0x01};
const Mac kLan1Mac = {0x02, 0, 0, 0, 0x03, 0x01};
const Mac kWanMac = {0x02, 0, 0, 0, 0x02, 0x01};
const Mac kHostMac = {0x02, 0, 0, 0, 0x01, 0x10};     // lan0 10.1.0.10, 2001:db8:1::10
const Mac kRouter1Mac = {0x02, 0, 0, 0, 0x01, 0xfe};  // lan0 10.1.0.254
const Mac kRouter3Mac = {0x02, 0, 0, 0, 0x01, 0xfd};  // lan0 10.1.0.253
const Mac kHost2Mac = {0x02, 0, 0, 0, 0x03, 0x10};    // lan1 10.1.0.10
const Mac kRouter2Mac = {0x02, 0, 0, 0, 0x03, 0xfe};  // lan1 10.1.0.254
const Mac kPeerVtepMac = {0x02, 0, 0, 0, 0x02, 0x10};
const Mac kInnerMacB = {0x02, 0, 0, 0, 0x0b, 0x01};  // site-b's inner MAC
const Mac kInnerMacC = {0x02, 0, 0, 0, 0x0c, 0x01};  // site-c's
const Mac kOtherMac = {0x02, 0, 0, 0, 0x99, 0x99};
const Mac kVirtualMac = {0x00, 0x00, 0x5e, 0x00, 0x01, 0x0a};  // VRID 10, active on lan0

constexpr Ip4 kLan0Address = {10, 1, 0, 1};
constexpr Ip4 kLan1Address = {10, 1, 0, 2};
constexpr Ip4 kHost = {10, 1, 0, 10};
constexpr Ip4 kRemote = {10, 2, 0, 5};
constexpr Ip4 kLocalVtep = {203, 0, 113, 1};
constexpr Ip4 kPeerVtep = {203, 0, 113, 10};
constexpr Ip4 kPeerVtepC = {203, 0, 113, 20};

const char* const kConfig = R"(node:
  name: gw-a
  site: site-a
eal:
  hugepages: false
ports:
  - name: lan0
    role: lan
    vdev: net_ring0
    mtu: 1400
    addresses: [10.1.0.1/24, 2001:db8:1::1/64]
    tenant: t1
    neighbors:
      - address: 10.1.0.10
        mac: 02:00:00:00:01:10
      - address: 10.1.0.254
        mac: 02:00:00:00:01:fe
      - address: 10.1.0.253
        mac: 02:00:00:00:01:fd
      - address: 2001:db8:1::10
        mac: 02:00:00:00:01:10
      - address: 2001:db8:1::fe
        mac: 02:00:00:00:01:fe
  - name: lan1
    role: lan
    vdev: net_ring1
    addresses: [10.1.0.2/24]
    tenant: t2
    neighbors:
      - address: 10.1.0.10
        mac: 02:00:00:00:03:10
      - address: 10.1.0.254
        mac: 02:00:00:00:03:fe
  - name: wan0
    role: wan
    vdev: net_ring2
    addresses: [203.0.113.1/24]
    neighbors:
      - address: 203.0.113.10
        mac: 02:00:00:00:02:10
      - address: 203.0.113.20
        mac: 02:00:00:00:02:20
tenants:
  - name: t1
    vni: 5001
    routes:
      - prefix: 10.2.0.0/16
        peer: site-b
      - prefix: 2001:db8:2::/48
        peer: site-b
      - prefix: 10.9.0.0/16
        next-hop: 10.1.0.254
      - prefix: 10.8.0.0/16
        next-hop: 10.1.0.253
      - prefix: 2001:db8:9::/48
        next-hop: 2001:db8:1::fe
  - name: t2
    vni: 5002
    routes:
      - prefix: 10.2.0.0/16
        peer: site-b
      - prefix: 10.9.0.0/16
        next-hop: 10.1.0.254
peers:
  - name: site-b
    inner-mac: 02:00:00:00:0b:01
    lines:
      - name: l1
        port: wan0
        local-vtep: 203.0.113.1
        remote-vtep: 203.0.113.10
  - name: site-c
    inner-mac: 02:00:00:00:0c:01
    tenants: [t1]
    lines:
      - name: l1
        port: wan0
        local-vtep: 203.0.113.1
        remote-vtep: 203.0.113.20
)";

// ------------------------------------------------------------------ ports

using test::RingPort;
using test::ringPort;

// ------------------------------------------------- packets, written out here

void put16(Bytes& b, size_t at, uint16_t v) {
  b[at] = static_cast<uint8_t>(v >> 8);
  b[at + 1] = static_cast<uint8_t>(v);
}
uint16_t get16(const Bytes& b, size_t at) {
  return static_cast<uint16_t>(b[at] << 8 | b[at + 1]);
}
void append(Bytes& b, const Bytes& more) {
  b.insert(b.end(), more.begin(), more.end());
}
template <size_t N>
void append(Bytes& b, const std::array<uint8_t, N>& more) {
  b.insert(b.end(), more.begin(), more.end());
}

// The Internet checksum (RFC 1071) of b[from, from + len), with `sum` added.
uint16_t checksum(const Bytes& b, size_t from, size_t len, uint32_t sum = 0) {
  for (size_t i = 0; i + 1 < len; i += 2) {
    sum += static_cast<uint32_t>(b[from + i] << 8 | b[from + i + 1]);
  }
  if (len & 1) {
    sum += static_cast<uint32_t>(b[from + len - 1] << 8);
  }
  while (sum >> 16) {
    sum = (sum & 0xffff) + (sum >> 16);
  }
  return static_cast<uint16_t>(~sum);
}

Ip6 ip6(const char* text) {
  Ip6 a{};
  EXPECT_EQ(inet_pton(AF_INET6, text, a.data()), 1) << text;
  return a;
}

Bytes eth(const Mac& dst, const Mac& src, uint16_t type, const Bytes& l3) {
  Bytes f(dst.begin(), dst.end());
  append(f, src);
  f.push_back(static_cast<uint8_t>(type >> 8));
  f.push_back(static_cast<uint8_t>(type));
  append(f, l3);
  return f;
}

// An IPv4 packet; total_length 0: the real one.
Bytes ipv4(const Ip4& src, const Ip4& dst, uint8_t ttl, uint8_t proto, uint16_t id, bool df,
           const Bytes& l4, uint16_t total_length = 0) {
  Bytes ip = {0x45, 0, 0, 0, 0, 0, static_cast<uint8_t>(df ? 0x40 : 0), 0, ttl, proto, 0, 0};
  append(ip, src);
  append(ip, dst);
  put16(ip, 2, total_length ? total_length : static_cast<uint16_t>(20 + l4.size()));
  put16(ip, 4, id);
  put16(ip, 10, checksum(ip, 0, 20));
  append(ip, l4);
  return ip;
}

Bytes ipv6(const Ip6& src, const Ip6& dst, uint8_t hop_limit, uint8_t next, uint32_t flow,
           const Bytes& l4) {
  Bytes ip = {0x60,
              static_cast<uint8_t>(flow >> 16 & 0x0f),
              static_cast<uint8_t>(flow >> 8),
              static_cast<uint8_t>(flow),
              0,
              0,
              next,
              hop_limit};
  put16(ip, 4, static_cast<uint16_t>(l4.size()));
  append(ip, src);
  append(ip, dst);
  append(ip, l4);
  return ip;
}

// UDP (checksum 0: nothing on the way checks it) with `len` bytes of
// payload that start with the tag.
Bytes udp(uint16_t sport, uint16_t dport, uint16_t tag, size_t len = 16) {
  Bytes u = {
      0, 0, 0, 0, 0, 0, 0, 0, 'B', static_cast<uint8_t>(tag >> 8), static_cast<uint8_t>(tag)};
  put16(u, 0, sport);
  put16(u, 2, dport);
  for (size_t i = 3; i < len; ++i) {
    u.push_back(static_cast<uint8_t>(i * 7 + tag));
  }
  put16(u, 4, static_cast<uint16_t>(u.size()));
  return u;
}

// A TCP SYN with an MSS option, its checksum right (RFC 793 pseudo-header).
Bytes tcpSyn4(const Ip4& src, const Ip4& dst, uint16_t sport, uint16_t mss) {
  Bytes t = {0,
             0,
             0x01,
             0xbb,
             0x11,
             0x22,
             0x33,
             0x44,
             0,
             0,
             0,
             0,
             0x60,
             0x02,
             0xfa,
             0xf0,
             0,
             0,
             0,
             0,
             2,
             4,
             static_cast<uint8_t>(mss >> 8),
             static_cast<uint8_t>(mss)};
  put16(t, 0, sport);
  uint32_t sum = 6 + static_cast<uint32_t>(t.size());
  for (int i = 0; i < 4; i += 2) {
    sum += static_cast<uint32_t>(src[i] << 8 | src[i + 1]) +
           static_cast<uint32_t>(dst[i] << 8 | dst[i + 1]);
  }
  put16(t, 16, checksum(t, 0, t.size(), sum));
  return t;
}

// A VXLAN frame from `vtep` to the gateway's wan0.
Bytes vxlan(const Ip4& vtep, uint32_t vni, const Bytes& inner, bool bad_checksum = false) {
  Bytes u = {0xc3, 0x50, 0x12, 0xb5, 0, 0, 0, 0};  // 50000 -> 4789
  put16(u, 4, static_cast<uint16_t>(8 + 8 + inner.size()));
  append(u, Bytes{0x08, 0, 0, 0, static_cast<uint8_t>(vni >> 16), static_cast<uint8_t>(vni >> 8),
                  static_cast<uint8_t>(vni), 0});
  append(u, inner);
  Bytes ip = ipv4(vtep, kLocalVtep, 64, 17, 0, true, u);
  if (bad_checksum) {
    ip[10] ^= 0x5a;
  }
  return eth(kWanMac, kPeerVtepMac, 0x0800, ip);
}

// The flow hash the gateway takes of an inner IP packet (addresses,
// protocol, UDP/TCP ports), as docs/architecture.md describes it.
uint32_t flowHash(const Bytes& ip) {
  const bool v6 = (ip[0] >> 4) == 6;
  const uint8_t proto = v6 ? ip[6] : ip[9];
  const size_t hl = v6 ? 40 : static_cast<size_t>((ip[0] & 0x0f) * 4);
  // An IPv4 fragment (MF or an offset): addresses and protocol only.
  const bool fragment = !v6 && ((ip[6] & 0x3f) != 0 || ip[7] != 0);
  uint32_t h = v6 ? rte_hash_crc(ip.data() + 8, 32, proto) : rte_hash_crc(ip.data() + 12, 8, proto);
  if (!fragment && (proto == 6 || proto == 17) && ip.size() >= hl + 4) {
    h = rte_hash_crc(ip.data() + hl, 4, h);
  }
  return h;
}

// The frame that leaves wan0 for site-b with `inner` (an inner frame as it
// is once routed) in tenant `vni`: VXLAN over IPv4, DF, TTL 64, ID 0, UDP
// checksum 0, the source port from the inner flow hash.
// rss: the port's RSS hash, which is then the flow hash.
Bytes encapsulated(uint32_t vni, const Bytes& inner, std::optional<uint32_t> rss = {}) {
  const Bytes inner_ip(inner.begin() + kEth, inner.end());
  const uint16_t sport =
      proto::tunnelSourcePort(rss ? engine::rssFlowHash(*rss) : flowHash(inner_ip));
  Bytes u = {0, 0, 0x12, 0xb5, 0, 0, 0, 0};
  put16(u, 0, sport);
  put16(u, 4, static_cast<uint16_t>(8 + 8 + inner.size()));
  append(u, Bytes{0x08, 0, 0, 0, static_cast<uint8_t>(vni >> 16), static_cast<uint8_t>(vni >> 8),
                  static_cast<uint8_t>(vni), 0});
  append(u, inner);
  return eth(kPeerVtepMac, kWanMac, 0x0800, ipv4(kLocalVtep, kPeerVtep, 64, 17, 0, true, u));
}

// A frame routed on: new MACs, the TTL / hop limit one lower (the IPv4
// header checksum recomputed), Ethernet padding gone.
Bytes routed(Bytes f, const Mac& dst, const Mac& src) {
  std::copy(dst.begin(), dst.end(), f.begin());
  std::copy(src.begin(), src.end(), f.begin() + 6);
  if (f[12] == 0x08) {
    f.resize(kEth + get16(f, kEth + 2));
    --f[kEth + 8];
    put16(f, kEth + 10, 0);
    put16(f, kEth + 10, checksum(f, kEth, 20));
  } else {
    f.resize(kEth + 40 + get16(f, kEth + 4));
    --f[kEth + 7];
  }
  return f;
}

// Bytes [from, from + len) of the IPv4 packet `ip`'s data as a fragment
// (RFC 791): the header copied, DF clear, MF as given, the offset in 8-byte
// units, total length and checksum new.
Bytes fragment(const Bytes& ip, size_t from, size_t len, bool more) {
  Bytes f(ip.begin(), ip.begin() + 20);
  put16(f, 2, static_cast<uint16_t>(20 + len));
  put16(f, 6, static_cast<uint16_t>((more ? 0x2000 : 0) | from / 8));
  put16(f, 10, 0);
  put16(f, 10, checksum(f, 0, 20));
  f.insert(f.end(), ip.begin() + 20 + static_cast<long>(from),
           ip.begin() + 20 + static_cast<long>(from + len));
  return f;
}

// An ICMP error (RFC 792 / 1191) from `src` about the IPv4 packet
// `offending`, as RFC 1812 4.3.2.3 has it: as much of it as fits in 576
// bytes, TTL 64, ID 0, no DF.
Bytes icmp4Error(const Ip4& src, uint8_t type, uint8_t code, uint16_t mtu, const Bytes& offending) {
  Bytes icmp = {type, code, 0, 0, 0, 0, 0, 0};
  put16(icmp, 6, mtu);
  const size_t quote = std::min<size_t>(offending.size(), 576 - 28);
  icmp.insert(icmp.end(), offending.begin(), offending.begin() + static_cast<long>(quote));
  put16(icmp, 2, checksum(icmp, 0, icmp.size()));
  Ip4 sender;
  std::copy(offending.begin() + 12, offending.begin() + 16, sender.begin());
  return ipv4(src, sender, 64, 1, 0, false, icmp);
}

// An ICMPv6 error (RFC 4443) from `src` about the IPv6 packet `offending`:
// as much of it as fits in 1280 bytes, hop limit 64, traffic class and flow
// label 0.
Bytes icmp6Error(const Ip6& src, uint8_t type, uint32_t mtu, const Bytes& offending) {
  Bytes icmp = {type,
                0,
                0,
                0,
                static_cast<uint8_t>(mtu >> 24),
                static_cast<uint8_t>(mtu >> 16),
                static_cast<uint8_t>(mtu >> 8),
                static_cast<uint8_t>(mtu)};
  const size_t quote = std::min<size_t>(offending.size(), 1280 - 48);
  icmp.insert(icmp.end(), offending.begin(), offending.begin() + static_cast<long>(quote));
  Ip6 sender;
  std::copy(offending.begin() + 8, offending.begin() + 24, sender.begin());
  Bytes pseudo;
  append(pseudo, src);
  append(pseudo, sender);
  uint32_t sum = 0;
  for (size_t i = 0; i < 32; i += 2) {
    sum += static_cast<uint32_t>(pseudo[i] << 8 | pseudo[i + 1]);
  }
  sum += static_cast<uint32_t>(icmp.size()) + 58;
  put16(icmp, 2, checksum(icmp, 0, icmp.size(), sum));
  return ipv6(src, sender, 64, 58, 0, icmp);
}

// ------------------------------------------------------------ expectations

// Counter name -> how much it moves.
using Deltas = std::map<std::string, uint64_t>;

struct Case {
  std::string kind;
  uint16_t rx_port = 0;
  Bytes frame;
  uint64_t ol_flags = 0;     // what the port's receive offloads said
  uint32_t packet_type = 0;  // and what it parsed the packet as
  uint32_t rss = 0;          // the RSS hash, with RTE_MBUF_F_RX_RSS_HASH
  // What it leaves as, exactly, and where (by DPDK port id); none:
  // dropped.  More than one: fragments.
  std::vector<std::pair<uint16_t, Bytes>> outs;
  Deltas deltas;
  unsigned icmp_errors = 0;  // ICMP errors it makes (the rate limit's budget)
};

struct Ids {
  uint16_t lan0, lan1, wan0, tap0;
  uint16_t line_slot, tunnel1, tunnel2;  // counter slots (site-b)
  uint16_t line_c, tunnel_c;             // site-c's line and t1 tunnel
};

std::string slotKey(const char* what, uint16_t slot) {
  return std::string(what) + "[" + std::to_string(slot) + "]";
}

void add(Deltas& d, const std::string& key, uint64_t n) {
  d[key] += n;
}
void addPb(Deltas& d, const std::string& name, uint64_t len) {
  add(d, name + ".packets", 1);
  add(d, name + ".bytes", len);
}
void addDrop(Deltas& d, DropReason r) {
  add(d, "drops." + std::string(toString(r)), 1);
}

// The tag of an output frame: the IPv4 ID / IPv6 flow label of the packet
// it carries or, in an ICMP error, quotes; ARP: the first two bytes of the
// target hardware address.  Frames from wan0 are VXLAN: the inner frame's.
std::optional<uint16_t> tagOf(const Bytes& f, bool from_wan) {
  if (from_wan) {
    if (f.size() < 50 + kEth) {
      return std::nullopt;
    }
    return tagOf(Bytes(f.begin() + 50, f.end()), false);
  }
  if (f.size() < kEth + 28) {
    return std::nullopt;
  }
  const uint16_t type = get16(f, 12);
  if (type == 0x0806) {
    return get16(f, kEth + 18);
  }
  if (type == 0x0800) {
    size_t ip = kEth;
    if (f[ip + 9] == 1 && (f[ip + 20] == 3 || f[ip + 20] == 11)) {
      ip += 28;
      if (f.size() < ip + 20) {
        return std::nullopt;
      }
    }
    return get16(f, ip + 4);
  }
  if (type == 0x86dd && f.size() >= kEth + 40) {
    if (f[kEth + 6] == 58 && f.size() >= kEth + 48 + 40 && f[kEth + 40] < 128) {
      return get16(f, kEth + 48 + 2);  // an ICMPv6 error: the quoted packet's
    }
    return get16(f, kEth + 2);
  }
  return std::nullopt;
}

// At most the first 160 bytes, and the length.
std::string hex(const Bytes& b) {
  std::string s;
  char buf[4];
  const size_t n = std::min<size_t>(b.size(), 160);
  for (size_t i = 0; i < n; ++i) {
    std::snprintf(buf, sizeof buf, "%02x", b[i]);
    s += buf;
    if (i % 2 == 1 && i + 1 < n) {
      s += ' ';
    }
  }
  return s + (b.size() > n ? " ..." : "") + " (" + std::to_string(b.size()) + " bytes)";
}

// ------------------------------------------------------------------ fixture

class PipelineBurstTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    pool_ = rte_pktmbuf_pool_create("burst_pool", 4095, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
                                    static_cast<int>(rte_socket_id()));
    ASSERT_NE(pool_, nullptr) << rte_strerror(rte_errno);
    lan0_ = ringPort("burst_lan0", pool_);
    lan1_ = ringPort("burst_lan1", pool_);
    wan0_ = ringPort("burst_wan0", pool_);
    tap0_ = ringPort("burst_tap0", pool_);
    auto c = config::loadConfigText(kConfig, "pipeline_burst_test.yaml");
    ASSERT_TRUE(c.ok());
    config_ = *c;
    OpenPort lan0{lan0_.id, kLan0Mac, 1};
    lan0.tap_port_id = tap0_.id;
    std::map<std::string, OpenPort> ports = {
        {"lan0", lan0}, {"lan1", {lan1_.id, kLan1Mac, 1}}, {"wan0", {wan0_.id, kWanMac, 1}}};
    builder_ = std::make_unique<TablesBuilder>();
    auto built = builder_->build(TablesInput::fromConfig(*config_, ports, 1), {});
    ASSERT_TRUE(built) << built.error();
    tables_ = std::move(*built);
    const ForwardingTables& t = *tables_;
    ids_ = {lan0_.id, lan1_.id, wan0_.id, tap0_.id, 0, 0, 0, 0, 0};
    ASSERT_EQ(t.lines.size(), 2u);
    ids_.line_slot = t.lines[0].slot;
    ids_.line_c = t.lines[1].slot;
    ASSERT_EQ(t.lines[1].peer, "site-c");
    bool t1 = false, t2 = false, tc = false;
    for (const TunnelEntry& te : t.tunnels) {
      if (t.peer_names[te.peer] == "site-c") {
        ids_.tunnel_c = te.slot;
        tc = true;
      } else if (te.vni == kVni1) {
        ids_.tunnel1 = te.slot;
        t1 = true;
      } else if (te.vni == kVni2) {
        ids_.tunnel2 = te.slot;
        t2 = true;
      }
    }
    ASSERT_TRUE(t1 && t2 && tc);
    ASSERT_NE(ids_.tunnel1, ids_.tunnel2);
    ASSERT_TRUE(t.ports[tap0_.id].tap);
    ASSERT_TRUE(t.ports[tap0_.id].lan);  // its TX counts as lan_tx
  }
  static void TearDownTestSuite() {
    tables_.reset();
    builder_->clear();
    builder_.reset();
    for (RingPort* p : {&lan0_, &lan1_, &wan0_, &tap0_}) {
      rte_eth_dev_stop(p->id);
      rte_eth_dev_close(p->id);
      rte_ring_free(p->ring);
    }
    rte_mempool_free(pool_);
  }

  void SetUp() override {
    counters_ = std::make_unique<WorkerCounters>();
    for (auto& up : health_.up) {
      up.store(true);
    }
    // lan0 is a VRRP group's Active; t1's tunnel clamps the MSS of IPv4
    // SYNs, t2's does not.
    ASSERT_TRUE(health_.virtual_macs.set(lan0_.id, std::vector<Mac>{kVirtualMac}));
    health_.mss4[ids_.tunnel1].store(1360);
    newPipeline();
  }
  void TearDown() override {
    pipeline_.reset();
    for (const RingPort* p : {&lan0_, &lan1_, &wan0_, &tap0_}) {
      EXPECT_EQ(rte_ring_count(p->ring), 0u);
    }
    EXPECT_EQ(rte_mempool_in_use_count(pool_), 0u) << "mbufs leaked";
  }

  // A fresh pipeline: its ICMP token buckets full again (100 errors at
  // once per worker; the test keeps below that so none is rate limited).
  void newPipeline() {
    pipeline_.reset();
    pipeline_ = std::make_unique<Pipeline>(0, pool_, counters_.get(), &health_, nullptr, flows_);
    icmp_budget_ = 90;
  }

  // Every counter the pipeline may move, by name.
  Deltas snapshot() const {
    const WorkerCounters& c = *counters_;
    Deltas s;
    for (size_t i = 0; i < kDropReasonCount; ++i) {
      s["drops." + std::string(kDropReasons[i].name)] = c.drops[i].get();
    }
    auto pb = [&](const std::string& name, const PacketsBytes& v) {
      s[name + ".packets"] = v.packets.get();
      s[name + ".bytes"] = v.bytes.get();
    };
    pb("lan_rx", c.lan_rx);
    pb("lan_tx", c.lan_tx);
    pb("wan_rx", c.wan_rx);
    pb("wan_tx", c.wan_tx);
    pb("to_kernel", c.to_kernel);
    pb("from_kernel", c.from_kernel);
    // The slots of this config by name, and every slot summed (a count in
    // any other slot shows there).
    auto slots = [&](const char* what, const auto& arr, std::initializer_list<uint16_t> named) {
      uint64_t p = 0, b = 0;
      for (const PacketsBytes& v : arr) {
        p += v.packets.get();
        b += v.bytes.get();
      }
      s[std::string(what) + "[*].packets"] = p;
      s[std::string(what) + "[*].bytes"] = b;
      for (uint16_t slot : named) {
        s[slotKey(what, slot) + ".packets"] = arr[slot].packets.get();
        s[slotKey(what, slot) + ".bytes"] = arr[slot].bytes.get();
      }
    };
    slots("line_tx", c.line_tx, {ids_.line_slot, ids_.line_c});
    slots("line_rx", c.line_rx, {ids_.line_slot, ids_.line_c});
    slots("tunnel_tx", c.tunnel_tx, {ids_.tunnel1, ids_.tunnel2, ids_.tunnel_c});
    slots("tunnel_rx", c.tunnel_rx, {ids_.tunnel1, ids_.tunnel2, ids_.tunnel_c});
    uint64_t mapped = 0;
    for (size_t i = 0; i < kMaxMapped; ++i) {
      mapped += c.mapped_out[i].get() + c.mapped_in[i].get();
    }
    s["mapped"] = mapped;
#define MCGW_SNAP(name, ...) s[#name] = c.name.get();
    MCGW_EVENT_COUNTERS(MCGW_SNAP)
#undef MCGW_SNAP
    return s;
  }

  // ---------------------------------------------------------- the kinds

  void rxLan(Case& c) const {
    addPb(c.deltas, "lan_rx", c.frame.size());
  }
  void rxWan(Case& c) const {
    addPb(c.deltas, "wan_rx", c.frame.size());
  }
  // An output, exactly `out`, on `port`.
  void leaves(Case& c, uint16_t port, Bytes out) const {
    addPb(c.deltas, port == ids_.wan0 ? "wan_tx" : "lan_tx", out.size());
    if (port == ids_.tap0) {
      addPb(c.deltas, "to_kernel", out.size());
    }
    c.outs.emplace_back(port, std::move(out));
  }
  // Encapsulated towards site-b in the tunnel of `slot`.
  void tunnels(Case& c, uint16_t slot, uint32_t vni, const Bytes& inner) const {
    // The port's RSS hash counts only for packets from a LAN port (on a WAN
    // port the NIC hashed the outer headers).
    const bool rss = (c.ol_flags & RTE_MBUF_F_RX_RSS_HASH) && c.rx_port != ids_.wan0;
    const Bytes out = encapsulated(vni, inner, rss ? std::optional(c.rss) : std::nullopt);
    addPb(c.deltas, slotKey("tunnel_tx", slot), inner.size());
    addPb(c.deltas, "tunnel_tx[*]", inner.size());
    addPb(c.deltas, slotKey("line_tx", ids_.line_slot), out.size());
    addPb(c.deltas, "line_tx[*]", out.size());
    leaves(c, ids_.wan0, out);
  }
  // Decapsulated out of the tunnel of `slot`: inner frame `inner`.
  void detunnels(Case& c, uint16_t slot, const Bytes& inner) const {
    rxWan(c);
    addPb(c.deltas, slotKey("line_rx", ids_.line_slot), c.frame.size());
    addPb(c.deltas, "line_rx[*]", c.frame.size());
    addPb(c.deltas, slotKey("tunnel_rx", slot), inner.size());
    addPb(c.deltas, "tunnel_rx[*]", inner.size());
  }
  void icmpSent(Case& c, const char* kind) const {
    c.icmp_errors = 1;
    add(c.deltas, "icmp_sent", 1);
    add(c.deltas, kind, 1);
  }

  // 10.9.<tag>: a sender behind lan0's router 10.1.0.254, one per tag (the
  // per-source ICMP limit never bites).
  static Ip4 senderBehindRouter(uint16_t tag) {
    return {10, 9, static_cast<uint8_t>(tag >> 8), static_cast<uint8_t>(tag)};
  }

  using Make = std::function<Case(uint16_t tag)>;
  std::vector<std::pair<std::string, Make>> kinds() const {
    std::vector<std::pair<std::string, Make>> k;
    auto lan0 = [&](const char* kind, Bytes frame) {
      Case c;
      c.kind = kind;
      c.rx_port = ids_.lan0;
      c.frame = std::move(frame);
      rxLan(c);
      return c;
    };
    auto lan1 = [&](const char* kind, Bytes frame) {
      Case c = lan0(kind, std::move(frame));
      c.rx_port = ids_.lan1;
      return c;
    };
    auto wan0 = [&](const char* kind, Bytes frame) {
      Case c;
      c.kind = kind;
      c.rx_port = ids_.wan0;
      c.frame = std::move(frame);
      return c;
    };
    auto dropped = [](Case c, DropReason r) {
      addDrop(c.deltas, r);
      return c;
    };

    k.emplace_back("lan-to-tunnel-v4", [=, this](uint16_t tag) {
      Case c = lan0("lan-to-tunnel-v4",
                    eth(kLan0Mac, kHostMac, 0x0800,
                        ipv4(kHost, kRemote, 64, 17, tag, true, udp(40000 + tag % 7, 5001, tag))));
      tunnels(c, ids_.tunnel1, kVni1, routed(c.frame, kInnerMacB, kWanMac));
      return c;
    });
    k.emplace_back("lan-to-tunnel-rss", [=, this](uint16_t tag) {
      // The port gave an RSS hash: it is the flow hash (the outer UDP
      // source port shows it), not the software hash of the packet.
      Case c = lan0("lan-to-tunnel-rss",
                    eth(kLan0Mac, kHostMac, 0x0800,
                        ipv4(kHost, kRemote, 64, 17, tag, true, udp(40100 + tag % 5, 5001, tag))));
      c.ol_flags = RTE_MBUF_F_RX_RSS_HASH;
      c.rss = 0x5a5a0000u ^ (uint32_t{tag} * 2654435761u);
      tunnels(c, ids_.tunnel1, kVni1, routed(c.frame, kInnerMacB, kWanMac));
      return c;
    });
    k.emplace_back("virtual-mac-to-tunnel", [=, this](uint16_t tag) {
      Case c = lan0("virtual-mac-to-tunnel",
                    eth(kVirtualMac, kHostMac, 0x0800,
                        ipv4(kHost, kRemote, 64, 17, tag, true, udp(40015, 5001, tag))));
      // As if to the port's MAC: forwarded the same.
      Bytes as_port = c.frame;
      std::copy(kLan0Mac.begin(), kLan0Mac.end(), as_port.begin());
      tunnels(c, ids_.tunnel1, kVni1, routed(as_port, kInnerMacB, kWanMac));
      add(c.deltas, "virtual_mac", 1);
      return c;
    });
    k.emplace_back("syn-clamped", [=, this](uint16_t tag) {
      Case c =
          lan0("syn-clamped",
               eth(kLan0Mac, kHostMac, 0x0800,
                   ipv4(kHost, kRemote, 64, 6, tag, true, tcpSyn4(kHost, kRemote, 40016, 1460))));
      Bytes clamped =
          eth(kLan0Mac, kHostMac, 0x0800,
              ipv4(kHost, kRemote, 64, 6, tag, true, tcpSyn4(kHost, kRemote, 40016, 1360)));
      tunnels(c, ids_.tunnel1, kVni1, routed(clamped, kInnerMacB, kWanMac));
      add(c.deltas, "mss_clamped", 1);
      return c;
    });
    k.emplace_back("t2-syn-not-clamped", [=, this](uint16_t tag) {
      Case c =
          lan1("t2-syn-not-clamped",
               eth(kLan1Mac, kHost2Mac, 0x0800,
                   ipv4(kHost, kRemote, 64, 6, tag, true, tcpSyn4(kHost, kRemote, 40017, 1460))));
      tunnels(c, ids_.tunnel2, kVni2, routed(c.frame, kInnerMacB, kWanMac));
      return c;
    });
    k.emplace_back("lan-to-tunnel-v6", [=, this](uint16_t tag) {
      Case c = lan0("lan-to-tunnel-v6", eth(kLan0Mac, kHostMac, 0x86dd,
                                            ipv6(ip6("2001:db8:1::10"), ip6("2001:db8:2::5"), 64,
                                                 17, tag, udp(41000, 5001 + tag % 5, tag, 24))));
      tunnels(c, ids_.tunnel1, kVni1, routed(c.frame, kInnerMacB, kWanMac));
      return c;
    });
    k.emplace_back("site-c-transit-to-site-b-rss", [=, this](uint16_t tag) {
      // Out of site-c's tunnel into site-b's (a hub's transit), with an RSS
      // hash the NIC took of the outer headers: the flow hash is the inner
      // packet's own.
      const Bytes inner =
          eth(kLan0Mac, kInnerMacC, 0x0800,
              ipv4({10, 3, 0, 7}, kRemote, 60, 17, tag, false, udp(7000, 5001, tag)));
      Case c = wan0("site-c-transit-to-site-b-rss", vxlan(kPeerVtepC, kVni1, inner));
      c.ol_flags = RTE_MBUF_F_RX_RSS_HASH;
      c.rss = 0x12345678u ^ tag;
      rxWan(c);
      addPb(c.deltas, slotKey("line_rx", ids_.line_c), c.frame.size());
      addPb(c.deltas, "line_rx[*]", c.frame.size());
      addPb(c.deltas, slotKey("tunnel_rx", ids_.tunnel_c), inner.size());
      addPb(c.deltas, "tunnel_rx[*]", inner.size());
      tunnels(c, ids_.tunnel1, kVni1, routed(inner, kInnerMacB, kWanMac));
      return c;
    });
    k.emplace_back("lan-to-tunnel-fragment", [=, this](uint16_t tag) {
      // The first fragment of a UDP datagram: hashed by addresses and
      // protocol only, so all its fragments take one line.
      Bytes f = eth(kLan0Mac, kHostMac, 0x0800,
                    ipv4(kHost, kRemote, 64, 17, tag, false, udp(40200 + tag % 3, 5001, tag)));
      f[kEth + 6] |= 0x20;  // MF
      f[kEth + 10] = f[kEth + 11] = 0;
      put16(f, kEth + 10, checksum(f, kEth, 20));
      Case c = lan0("lan-to-tunnel-fragment", f);
      tunnels(c, ids_.tunnel1, kVni1, routed(c.frame, kInnerMacB, kWanMac));
      return c;
    });
    k.emplace_back("site-c-tunnel-to-lan-v4", [=, this](uint16_t tag) {
      // From the other peer's VTEP: a burst switches between VTEPs.
      const Bytes inner = eth(kLan0Mac, kInnerMacC, 0x0800,
                              ipv4(kRemote, kHost, 60, 17, tag, false, udp(5002, 40000, tag, 20)));
      Case c = wan0("site-c-tunnel-to-lan-v4", vxlan(kPeerVtepC, kVni1, inner));
      rxWan(c);
      addPb(c.deltas, slotKey("line_rx", ids_.line_c), c.frame.size());
      addPb(c.deltas, "line_rx[*]", c.frame.size());
      addPb(c.deltas, slotKey("tunnel_rx", ids_.tunnel_c), inner.size());
      addPb(c.deltas, "tunnel_rx[*]", inner.size());
      leaves(c, ids_.lan0, routed(inner, kHostMac, kLan0Mac));
      return c;
    });
    k.emplace_back("tunnel-to-lan-v4", [=, this](uint16_t tag) {
      const Bytes inner = eth(kLan0Mac, kInnerMacB, 0x0800,
                              ipv4(kRemote, kHost, 60, 17, tag, false, udp(5001, 40000, tag, 20)));
      Case c = wan0("tunnel-to-lan-v4", vxlan(kPeerVtep, kVni1, inner));
      detunnels(c, ids_.tunnel1, inner);
      leaves(c, ids_.lan0, routed(inner, kHostMac, kLan0Mac));
      return c;
    });
    k.emplace_back("tunnel-to-lan-v6", [=, this](uint16_t tag) {
      const Bytes inner = eth(kLan0Mac, kInnerMacB, 0x86dd,
                              ipv6(ip6("2001:db8:2::5"), ip6("2001:db8:1::10"), 33, 17, tag,
                                   udp(5001, 40000, tag, 12)));
      Case c = wan0("tunnel-to-lan-v6", vxlan(kPeerVtep, kVni1, inner));
      detunnels(c, ids_.tunnel1, inner);
      leaves(c, ids_.lan0, routed(inner, kHostMac, kLan0Mac));
      return c;
    });
    k.emplace_back("lan-gateway-254", [=, this](uint16_t tag) {
      Case c = lan0("lan-gateway-254",
                    eth(kLan0Mac, kHostMac, 0x0800,
                        ipv4(kHost, {10, 9, 0, 5}, 64, 17, tag, true, udp(40001, 53, tag, 30))));
      leaves(c, ids_.lan0, routed(c.frame, kRouter1Mac, kLan0Mac));
      return c;
    });
    k.emplace_back("lan-gateway-253", [=, this](uint16_t tag) {
      Case c = lan0("lan-gateway-253",
                    eth(kLan0Mac, kHostMac, 0x0800,
                        ipv4(kHost, {10, 8, 1, 5}, 17, 17, tag, false, udp(40002, 80, tag, 40))));
      leaves(c, ids_.lan0, routed(c.frame, kRouter3Mac, kLan0Mac));
      return c;
    });
    k.emplace_back("lan-gateway-padded", [=, this](uint16_t tag) {
      Bytes f = eth(kLan0Mac, kHostMac, 0x0800,
                    ipv4(kHost, {10, 9, 3, 3}, 9, 17, tag, false, udp(40003, 9, tag, 4)));
      f.resize(60, 0xee);  // Ethernet padding
      Case c = lan0("lan-gateway-padded", f);
      leaves(c, ids_.lan0, routed(c.frame, kRouter1Mac, kLan0Mac));
      return c;
    });
    k.emplace_back("local", [=, this](uint16_t tag) {
      Case c =
          lan0("local", eth(kLan0Mac, kHostMac, 0x0800,
                            ipv4(kHost, kLan0Address, 64, 17, tag, true, udp(40004, 22, tag))));
      leaves(c, ids_.tap0, c.frame);
      return c;
    });
    k.emplace_back("multicast-mac", [=, this](uint16_t tag) {
      Case c = lan0("multicast-mac",
                    eth({0x01, 0, 0x5e, 0, 0, 5}, kHostMac, 0x0800,
                        ipv4(kHost, {224, 0, 0, 5}, 1, 89, tag, false, Bytes(24, 0x11))));
      leaves(c, ids_.tap0, c.frame);
      return c;
    });
    k.emplace_back("multicast-ip", [=, this](uint16_t tag) {
      Case c = lan0("multicast-ip",
                    eth(kLan0Mac, kHostMac, 0x0800,
                        ipv4(kHost, {239, 1, 1, 1}, 8, 17, tag, false, udp(40005, 5353, tag))));
      leaves(c, ids_.tap0, c.frame);
      return c;
    });
    k.emplace_back("arp", [=, this](uint16_t tag) {
      Bytes arp = {0, 1, 0x08, 0, 6, 4, 0, 1};
      append(arp, kHostMac);
      append(arp, kHost);
      append(arp, Bytes{static_cast<uint8_t>(tag >> 8), static_cast<uint8_t>(tag), 0, 0, 0, 0});
      append(arp, kLan0Address);
      Case c = lan0("arp", eth({0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, kHostMac, 0x0806, arp));
      leaves(c, ids_.tap0, c.frame);
      return c;
    });
    k.emplace_back("ttl-expired-lan", [=, this](uint16_t tag) {
      const Bytes ip =
          ipv4(senderBehindRouter(tag), kRemote, 1, 17, tag, false, udp(40006, 33434, tag));
      Case c = dropped(lan0("ttl-expired-lan", eth(kLan0Mac, kRouter1Mac, 0x0800, ip)),
                       DropReason::kTTL_EXPIRED);
      leaves(c, ids_.lan0,
             eth(kRouter1Mac, kLan0Mac, 0x0800, icmp4Error(kLan0Address, 11, 0, 0, ip)));
      icmpSent(c, "icmp_time_exceeded");
      return c;
    });
    k.emplace_back("ttl-expired-tunnel", [=, this](uint16_t tag) {
      const Ip4 sender = {10, 2, static_cast<uint8_t>(tag >> 8), static_cast<uint8_t>(tag)};
      const Bytes ip = ipv4(sender, kHost, 1, 17, tag, false, udp(40007, 33434, tag));
      const Bytes inner = eth(kLan0Mac, kInnerMacB, 0x0800, ip);
      Case c = dropped(wan0("ttl-expired-tunnel", vxlan(kPeerVtep, kVni1, inner)),
                       DropReason::kTTL_EXPIRED);
      detunnels(c, ids_.tunnel1, inner);
      // From the tenant's first LAN address, back into the tunnel.
      tunnels(c, ids_.tunnel1, kVni1,
              eth(kInnerMacB, kWanMac, 0x0800, icmp4Error(kLan0Address, 11, 0, 0, ip)));
      icmpSent(c, "icmp_time_exceeded");
      return c;
    });
    k.emplace_back("too-big-df", [=, this](uint16_t tag) {
      // 1480 bytes of IP, DF, into a tunnel of 1500 - 50 = 1450.
      const Bytes ip = ipv4(senderBehindRouter(tag), kRemote, 64, 17, tag, true,
                            udp(40008, 5001, tag, 1480 - 28));
      Case c =
          dropped(lan0("too-big-df", eth(kLan0Mac, kRouter1Mac, 0x0800, ip)), DropReason::kTOO_BIG);
      leaves(c, ids_.lan0,
             eth(kRouter1Mac, kLan0Mac, 0x0800, icmp4Error(kLan0Address, 3, 4, 1450, ip)));
      icmpSent(c, "icmp_frag_needed");
      return c;
    });
    k.emplace_back("ttl-expired-v6", [=, this](uint16_t tag) {
      Ip6 sender = ip6("2001:db8:9::");
      sender[14] = static_cast<uint8_t>(tag >> 8);
      sender[15] = static_cast<uint8_t>(tag);
      const Bytes ip = ipv6(sender, ip6("2001:db8:2::5"), 1, 17, tag, udp(40013, 33434, tag));
      Case c = dropped(lan0("ttl-expired-v6", eth(kLan0Mac, kRouter1Mac, 0x86dd, ip)),
                       DropReason::kTTL_EXPIRED);
      leaves(c, ids_.lan0,
             eth(kRouter1Mac, kLan0Mac, 0x86dd, icmp6Error(ip6("2001:db8:1::1"), 3, 0, ip)));
      icmpSent(c, "icmp_time_exceeded");
      return c;
    });
    k.emplace_back("too-big-v6", [=, this](uint16_t tag) {
      Ip6 sender = ip6("2001:db8:9::");
      sender[14] = static_cast<uint8_t>(tag >> 8);
      sender[15] = static_cast<uint8_t>(tag);
      const Bytes ip =
          ipv6(sender, ip6("2001:db8:2::5"), 64, 17, tag, udp(40014, 5001, tag, 1480 - 48));
      Case c =
          dropped(lan0("too-big-v6", eth(kLan0Mac, kRouter1Mac, 0x86dd, ip)), DropReason::kTOO_BIG);
      leaves(c, ids_.lan0,
             eth(kRouter1Mac, kLan0Mac, 0x86dd, icmp6Error(ip6("2001:db8:1::1"), 2, 1450, ip)));
      icmpSent(c, "icmp_packet_too_big");
      return c;
    });
    k.emplace_back("tunnel-to-lan-fragmented", [=, this](uint16_t tag) {
      // 1420 bytes of IP without DF to lan0 (MTU 1400): 20 + 1376, 20 + 24.
      const Bytes inner =
          eth(kLan0Mac, kInnerMacB, 0x0800,
              ipv4(kRemote, kHost, 60, 17, tag, false, udp(5001, 40000, tag, 1420 - 28)));
      Case c = wan0("tunnel-to-lan-fragmented", vxlan(kPeerVtep, kVni1, inner));
      detunnels(c, ids_.tunnel1, inner);
      const Bytes r = routed(inner, kHostMac, kLan0Mac);
      const Bytes ip(r.begin() + kEth, r.end());
      const Bytes head(r.begin(), r.begin() + kEth);
      Bytes f1 = head, f2 = head;
      append(f1, fragment(ip, 0, 1376, true));
      append(f2, fragment(ip, 1376, 24, false));
      leaves(c, ids_.lan0, f1);
      leaves(c, ids_.lan0, f2);
      add(c.deltas, "fragmented", 1);
      add(c.deltas, "fragments", 2);
      return c;
    });
    k.emplace_back("tunnel-to-lan-too-big-df", [=, this](uint16_t tag) {
      const Ip4 sender = {10, 2, static_cast<uint8_t>(tag >> 8), static_cast<uint8_t>(tag)};
      const Bytes ip = ipv4(sender, kHost, 60, 17, tag, true, udp(5001, 40000, tag, 1420 - 28));
      const Bytes inner = eth(kLan0Mac, kInnerMacB, 0x0800, ip);
      Case c = dropped(wan0("tunnel-to-lan-too-big-df", vxlan(kPeerVtep, kVni1, inner)),
                       DropReason::kTOO_BIG);
      detunnels(c, ids_.tunnel1, inner);
      tunnels(c, ids_.tunnel1, kVni1,
              eth(kInnerMacB, kWanMac, 0x0800, icmp4Error(kLan0Address, 3, 4, 1400, ip)));
      icmpSent(c, "icmp_frag_needed");
      return c;
    });
    k.emplace_back("tunnel-to-lan-too-big-v6", [=, this](uint16_t tag) {
      Ip6 sender = ip6("2001:db8:2::");
      sender[14] = static_cast<uint8_t>(tag >> 8);
      sender[15] = static_cast<uint8_t>(tag);
      const Bytes ip =
          ipv6(sender, ip6("2001:db8:1::10"), 50, 17, tag, udp(5001, 40000, tag, 1420 - 48));
      const Bytes inner = eth(kLan0Mac, kInnerMacB, 0x86dd, ip);
      Case c = dropped(wan0("tunnel-to-lan-too-big-v6", vxlan(kPeerVtep, kVni1, inner)),
                       DropReason::kTOO_BIG);
      detunnels(c, ids_.tunnel1, inner);
      tunnels(c, ids_.tunnel1, kVni1,
              eth(kInnerMacB, kWanMac, 0x86dd, icmp6Error(ip6("2001:db8:1::1"), 2, 1400, ip)));
      icmpSent(c, "icmp_packet_too_big");
      return c;
    });
    k.emplace_back("tunnel-inner-malformed", [=, this](uint16_t tag) {
      const Bytes inner = eth(kLan0Mac, kInnerMacB, 0x0800,
                              ipv4(kRemote, kHost, 60, 17, tag, false, udp(5001, 40000, tag), 400));
      Case c = dropped(wan0("tunnel-inner-malformed", vxlan(kPeerVtep, kVni1, inner)),
                       DropReason::kMALFORMED);
      detunnels(c, ids_.tunnel1, inner);
      return c;
    });
    k.emplace_back("tunnel-to-multicast", [=, this](uint16_t tag) {
      const Bytes inner = eth({0x01, 0, 0x5e, 0, 0, 9}, kInnerMacB, 0x0800,
                              ipv4(kRemote, {224, 0, 0, 9}, 1, 17, tag, false, udp(520, 520, tag)));
      Case c = dropped(wan0("tunnel-to-multicast", vxlan(kPeerVtep, kVni1, inner)),
                       DropReason::kLOCAL);  // never to the kernel from a tunnel
      detunnels(c, ids_.tunnel1, inner);
      return c;
    });
    k.emplace_back("tunnel-to-gateway", [=, this](uint16_t tag) {
      const Bytes inner = eth(kLan0Mac, kInnerMacB, 0x0800,
                              ipv4(kRemote, kLan0Address, 60, 17, tag, false, udp(5001, 22, tag)));
      Case c =
          dropped(wan0("tunnel-to-gateway", vxlan(kPeerVtep, kVni1, inner)), DropReason::kLOCAL);
      detunnels(c, ids_.tunnel1, inner);
      return c;
    });
    k.emplace_back("tunnel-inner-arp", [=, this](uint16_t tag) {
      Bytes arp = {0, 1, 0x08, 0, 6, 4, 0, 1};
      append(arp, kInnerMacB);
      append(arp, kRemote);
      append(arp, Bytes{static_cast<uint8_t>(tag >> 8), static_cast<uint8_t>(tag), 0, 0, 0, 0});
      append(arp, kHost);
      const Bytes inner = eth({0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, kInnerMacB, 0x0806, arp);
      Case c =
          dropped(wan0("tunnel-inner-arp", vxlan(kPeerVtep, kVni1, inner)), DropReason::kNOT_IP);
      detunnels(c, ids_.tunnel1, inner);
      return c;
    });
    k.emplace_back("no-route-v4", [=](uint16_t tag) {
      return dropped(lan0("no-route-v4", eth(kLan0Mac, kHostMac, 0x0800,
                                             ipv4(kHost, {172, 16, 0, 1}, 64, 17, tag, true,
                                                  udp(40009, 53, tag)))),
                     DropReason::kNO_ROUTE);
    });
    k.emplace_back("no-route-v6", [=](uint16_t tag) {
      return dropped(lan0("no-route-v6", eth(kLan0Mac, kHostMac, 0x86dd,
                                             ipv6(ip6("2001:db8:1::10"), ip6("2001:db8:99::1"), 64,
                                                  17, tag, udp(40010, 53, tag)))),
                     DropReason::kNO_ROUTE);
    });
    k.emplace_back("malformed-total-length", [=](uint16_t tag) {
      return dropped(lan0("malformed-total-length",
                          eth(kLan0Mac, kHostMac, 0x0800,
                              ipv4(kHost, kRemote, 64, 17, tag, false, udp(40011, 53, tag), 400))),
                     DropReason::kMALFORMED);
    });
    k.emplace_back("other-host", [=](uint16_t tag) {
      return dropped(
          lan0("other-host", eth(kOtherMac, kHostMac, 0x0800,
                                 ipv4(kHost, kRemote, 64, 17, tag, false, udp(40012, 53, tag)))),
          DropReason::kOTHER_HOST);
    });
    k.emplace_back("unknown-vtep", [=, this](uint16_t tag) {
      const Bytes inner = eth(kLan0Mac, kInnerMacB, 0x0800,
                              ipv4(kRemote, kHost, 60, 17, tag, false, udp(5001, 40000, tag)));
      Case c = dropped(wan0("unknown-vtep", vxlan({203, 0, 113, 99}, kVni1, inner)),
                       DropReason::kUNKNOWN_VTEP);
      rxWan(c);
      return c;
    });
    k.emplace_back("unknown-vni", [=, this](uint16_t tag) {
      const Bytes inner = eth(kLan0Mac, kInnerMacB, 0x0800,
                              ipv4(kRemote, kHost, 60, 17, tag, false, udp(5001, 40000, tag)));
      Case c =
          dropped(wan0("unknown-vni", vxlan(kPeerVtep, 7777, inner)), DropReason::kUNKNOWN_VNI);
      rxWan(c);
      return c;
    });
    k.emplace_back("bad-outer-checksum", [=, this](uint16_t tag) {
      const Bytes inner = eth(kLan0Mac, kInnerMacB, 0x0800,
                              ipv4(kRemote, kHost, 60, 17, tag, false, udp(5001, 40000, tag)));
      Case c = dropped(wan0("bad-outer-checksum", vxlan(kPeerVtep, kVni1, inner, true)),
                       DropReason::kBAD_CHECKSUM);
      rxWan(c);
      return c;
    });
    k.emplace_back("bad-outer-checksum-offload-good", [=, this](uint16_t tag) {
      // The port checked the outer header (said good): not checked again.
      const Bytes inner = eth(kLan0Mac, kInnerMacB, 0x0800,
                              ipv4(kRemote, kHost, 60, 17, tag, false, udp(5001, 40000, tag, 20)));
      Case c = wan0("bad-outer-checksum-offload-good", vxlan(kPeerVtep, kVni1, inner, true));
      c.ol_flags = RTE_MBUF_F_RX_IP_CKSUM_GOOD;
      c.packet_type = RTE_PTYPE_L2_ETHER | RTE_PTYPE_L3_IPV4 | RTE_PTYPE_L4_UDP;
      detunnels(c, ids_.tunnel1, inner);
      leaves(c, ids_.lan0, routed(inner, kHostMac, kLan0Mac));
      return c;
    });
    k.emplace_back("bad-outer-checksum-inner-good", [=, this](uint16_t tag) {
      // A NIC that parsed the VXLAN packet: its "good" is the inner
      // header's, so the outer header is still checked.
      const Bytes inner = eth(kLan0Mac, kInnerMacB, 0x0800,
                              ipv4(kRemote, kHost, 60, 17, tag, false, udp(5001, 40000, tag)));
      Case c = dropped(wan0("bad-outer-checksum-inner-good", vxlan(kPeerVtep, kVni1, inner, true)),
                       DropReason::kBAD_CHECKSUM);
      c.ol_flags = RTE_MBUF_F_RX_IP_CKSUM_GOOD;
      c.packet_type = RTE_PTYPE_L2_ETHER | RTE_PTYPE_L3_IPV4 | RTE_PTYPE_L4_UDP |
                      RTE_PTYPE_TUNNEL_VXLAN | RTE_PTYPE_INNER_L3_IPV4;
      rxWan(c);
      return c;
    });
    k.emplace_back("bad-outer-checksum-good-no-ptype", [=, this](uint16_t tag) {
      // "Good" from a port that gives no packet type: not trusted.
      const Bytes inner = eth(kLan0Mac, kInnerMacB, 0x0800,
                              ipv4(kRemote, kHost, 60, 17, tag, false, udp(5001, 40000, tag)));
      Case c =
          dropped(wan0("bad-outer-checksum-good-no-ptype", vxlan(kPeerVtep, kVni1, inner, true)),
                  DropReason::kBAD_CHECKSUM);
      c.ol_flags = RTE_MBUF_F_RX_IP_CKSUM_GOOD;
      rxWan(c);
      return c;
    });
    k.emplace_back("outer-checksum-flagged-bad", [=, this](uint16_t tag) {
      // The port says the outer header's checksum is bad: dropped even
      // though it is right.
      const Bytes inner = eth(kLan0Mac, kInnerMacB, 0x0800,
                              ipv4(kRemote, kHost, 60, 17, tag, false, udp(5001, 40000, tag)));
      Case c = dropped(wan0("outer-checksum-flagged-bad", vxlan(kPeerVtep, kVni1, inner)),
                       DropReason::kBAD_CHECKSUM);
      c.ol_flags = RTE_MBUF_F_RX_OUTER_IP_CKSUM_BAD;
      rxWan(c);
      return c;
    });
    k.emplace_back("wan-not-overlay", [=, this](uint16_t tag) {
      Case c =
          dropped(wan0("wan-not-overlay",
                       eth(kWanMac, kPeerVtepMac, 0x0800,
                           ipv4(kPeerVtep, kLocalVtep, 64, 17, tag, false, udp(3784, 3784, tag)))),
                  DropReason::kNOT_OVERLAY);  // wan0 has no TAP
      rxWan(c);
      return c;
    });
    k.emplace_back("t2-lan-to-tunnel", [=, this](uint16_t tag) {
      Case c = lan1("t2-lan-to-tunnel",
                    eth(kLan1Mac, kHost2Mac, 0x0800,
                        ipv4(kHost, kRemote, 64, 17, tag, true, udp(40000 + tag % 7, 5001, tag))));
      tunnels(c, ids_.tunnel2, kVni2, routed(c.frame, kInnerMacB, kWanMac));
      return c;
    });
    k.emplace_back("t2-lan-gateway-254", [=, this](uint16_t tag) {
      Case c = lan1("t2-lan-gateway-254",
                    eth(kLan1Mac, kHost2Mac, 0x0800,
                        ipv4(kHost, {10, 9, 0, 5}, 64, 17, tag, true, udp(40001, 53, tag, 30))));
      leaves(c, ids_.lan1, routed(c.frame, kRouter2Mac, kLan1Mac));
      return c;
    });
    k.emplace_back("t2-tunnel-to-lan", [=, this](uint16_t tag) {
      const Bytes inner = eth(kLan1Mac, kInnerMacB, 0x0800,
                              ipv4(kRemote, kHost, 60, 17, tag, false, udp(5001, 40000, tag, 20)));
      Case c = wan0("t2-tunnel-to-lan", vxlan(kPeerVtep, kVni2, inner));
      detunnels(c, ids_.tunnel2, inner);
      leaves(c, ids_.lan1, routed(inner, kHost2Mac, kLan1Mac));
      return c;
    });
    k.emplace_back("t2-local", [=](uint16_t tag) {
      return dropped(
          lan1("t2-local", eth(kLan1Mac, kHost2Mac, 0x0800,
                               ipv4(kHost, kLan1Address, 64, 17, tag, true, udp(40004, 22, tag)))),
          DropReason::kLOCAL);  // lan1 has no TAP
    });
    k.emplace_back("t2-arp", [=](uint16_t tag) {
      Bytes arp = {0, 1, 0x08, 0, 6, 4, 0, 1};
      append(arp, kHost2Mac);
      append(arp, kHost);
      append(arp, Bytes{static_cast<uint8_t>(tag >> 8), static_cast<uint8_t>(tag), 0, 0, 0, 0});
      append(arp, kLan1Address);
      return dropped(lan1("t2-arp", eth(kLan1Mac, kHost2Mac, 0x0806, arp)),
                     DropReason::kNOT_IP);  // unicast to the port, no TAP
    });
    return k;
  }

  // ------------------------------------------------------------- bursts

  // Every frame a port sent.
  static std::vector<Bytes> sent(const RingPort& port) {
    std::vector<Bytes> out;
    void* objs[64];
    unsigned n;
    while ((n = rte_ring_dequeue_burst(port.ring, objs, 64, nullptr)) > 0) {
      for (unsigned i = 0; i < n; ++i) {
        auto* m = static_cast<rte_mbuf*>(objs[i]);
        EXPECT_TRUE(rte_pktmbuf_is_contiguous(m));
        const auto* d = rte_pktmbuf_mtod(m, const uint8_t*);
        out.emplace_back(d, d + m->data_len);
        EXPECT_EQ(m->pkt_len, m->data_len);
        rte_pktmbuf_free(m);
      }
    }
    return out;
  }

  static std::string describe(const std::vector<Case>& burst) {
    std::ostringstream s;
    for (size_t i = 0; i < burst.size(); ++i) {
      s << (i ? ", " : "") << i << ":" << burst[i].kind;
    }
    return s.str();
  }

  // The cases as one process() call (each mbuf's `port` its RX port, or
  // the rx_port argument when the whole burst came from one port), then
  // flushed; every output and counter checked.  Returns false on the first
  // mismatch, reported.
  bool run(const std::vector<Case>& burst, const std::vector<uint16_t>& tags) {
    unsigned icmp = 0;
    for (const Case& c : burst) {
      icmp += c.icmp_errors;
    }
    if (icmp > icmp_budget_) {
      newPipeline();
    }
    icmp_budget_ -= icmp;
    std::vector<rte_mbuf*> mbufs;
    bool one_port = true;
    for (const Case& c : burst) {
      rte_mbuf* m = rte_pktmbuf_alloc(pool_);
      if (!m) {
        ADD_FAILURE() << "no mbuf";
        rte_pktmbuf_free_bulk(mbufs.data(), static_cast<unsigned>(mbufs.size()));
        return false;
      }
      std::memcpy(rte_pktmbuf_append(m, static_cast<uint16_t>(c.frame.size())), c.frame.data(),
                  c.frame.size());
      m->port = c.rx_port;
      m->ol_flags = c.ol_flags;
      m->packet_type = c.packet_type;
      m->hash.rss = c.rss;
      mbufs.push_back(m);
      one_port = one_port && c.rx_port == burst.front().rx_port;
    }
    const Deltas before = snapshot();
    if (one_port && (mbufs.size() & 1)) {
      for (rte_mbuf* m : mbufs) {
        m->port = 31;  // the argument must win (net_ring does not set it)
      }
      pipeline_->process(*tables_, burst.front().rx_port, mbufs.data(),
                         static_cast<uint16_t>(mbufs.size()));
    } else {
      pipeline_->process(*tables_, mbufs.data(), static_cast<uint16_t>(mbufs.size()));
    }
    // The burst's counters are all written when process() returns: only
    // the TX buffers wait for flush().
    const Deltas after_process = snapshot();
    pipeline_->flush();
    std::ostringstream errors;
    if (snapshot() != after_process) {
      errors << "counters moved in flush()\n";
    }
    if (pipeline_->held() != 0) {
      errors << "packets held: " << pipeline_->held() << "\n";
    }
    Deltas want;
    for (const Case& c : burst) {
      for (const auto& [k, v] : c.deltas) {
        want[k] += v;
      }
    }
    for (const auto& [k, v] : after_process) {
      const uint64_t moved = v - before.at(k);
      const uint64_t expected = want.count(k) ? want.at(k) : 0;
      if (moved != expected) {
        errors << "counter " << k << ": moved " << moved << ", expected " << expected << "\n";
      }
    }
    for (const auto& [k, v] : want) {
      if (!after_process.count(k)) {
        errors << "test bug: no counter " << k << "\n";
      }
    }
    // Outputs, matched to their packets by tag.
    std::map<uint16_t, size_t> by_tag;
    for (size_t i = 0; i < burst.size(); ++i) {
      by_tag[tags[i]] = i;
    }
    std::vector<std::vector<bool>> seen(burst.size());
    for (size_t i = 0; i < burst.size(); ++i) {
      seen[i].assign(burst[i].outs.size(), false);
    }
    auto wanted = [&](const Case& c) {
      std::string w;
      for (const auto& [port, bytes] : c.outs) {
        w += "\n  want port " + std::to_string(port) + ": " + hex(bytes);
      }
      return w.empty() ? std::string("\n  want: dropped") : w;
    };
    for (const RingPort* port : {&lan0_, &lan1_, &wan0_, &tap0_}) {
      // What the route stage sends leaves each port in the order the
      // packets came (the TAP also gets what earlier stages send there; a
      // case arriving on the TAP, sent on in the receive stage, would need
      // the same exception for the physical port).
      size_t last = 0;
      for (const Bytes& f : sent(*port)) {
        const auto tag = tagOf(f, port == &wan0_);
        auto it = tag ? by_tag.find(*tag) : by_tag.end();
        if (it == by_tag.end()) {
          errors << "port " << port->id << " sent a frame of no packet: " << hex(f) << "\n";
          continue;
        }
        const size_t i = it->second;
        if (port != &tap0_ && i < last) {
          errors << "port " << port->id << " sent packet " << i << " after packet " << last
                 << ": reordered\n";
        }
        last = std::max(last, i);
        const Case& c = burst[i];
        bool matched = false;
        for (size_t j = 0; j < c.outs.size() && !matched; ++j) {
          if (!seen[i][j] && c.outs[j].first == port->id && c.outs[j].second == f) {
            seen[i][j] = matched = true;
          }
        }
        if (!matched) {
          errors << "packet " << i << " (" << c.kind << ", tag " << tags[i]
                 << ")\n  in:   " << hex(c.frame) << "\n  left port " << port->id << ": " << hex(f)
                 << wanted(c) << "\n";
        }
      }
    }
    for (size_t i = 0; i < burst.size(); ++i) {
      for (size_t j = 0; j < burst[i].outs.size(); ++j) {
        if (!seen[i][j]) {
          errors << "packet " << i << " (" << burst[i].kind << ", tag " << tags[i]
                 << ") did not leave as its output " << j << ":" << wanted(burst[i]) << "\n";
        }
      }
    }
    if (!errors.str().empty()) {
      ADD_FAILURE() << "burst of " << burst.size() << " [" << describe(burst) << "]\n"
                    << errors.str();
      return false;
    }
    ++bursts_;
    packets_ += burst.size();
    return true;
  }

  // A burst of the kinds by index, each with a fresh tag.
  bool runKinds(const std::vector<std::pair<std::string, Make>>& all,
                const std::vector<size_t>& which) {
    std::vector<Case> burst;
    std::vector<uint16_t> tags;
    for (size_t k : which) {
      const uint16_t tag = next_tag_++;
      tags.push_back(tag);
      burst.push_back(all[k].second(tag));
    }
    return run(burst, tags);
  }

  static rte_mempool* pool_;
  static RingPort lan0_, lan1_, wan0_, tap0_;
  static config::ConfigPtr config_;
  static std::unique_ptr<TablesBuilder> builder_;
  static std::unique_ptr<ForwardingTables> tables_;
  static Ids ids_;
  LiveState health_;
  std::unique_ptr<WorkerCounters> counters_;
  std::unique_ptr<Pipeline> pipeline_;
  rte_ring* flows_ = nullptr;  // flow-audit samples (FlowAuditSamples)
  unsigned icmp_budget_ = 0;
  // Tags start where no packet's IPv4 ID is 0 and grow: unique in a burst.
  uint16_t next_tag_ = 0x0101;
  unsigned bursts_ = 0;
  size_t packets_ = 0;
};

rte_mempool* PipelineBurstTest::pool_ = nullptr;
RingPort PipelineBurstTest::lan0_, PipelineBurstTest::lan1_, PipelineBurstTest::wan0_,
    PipelineBurstTest::tap0_;
config::ConfigPtr PipelineBurstTest::config_;
std::unique_ptr<TablesBuilder> PipelineBurstTest::builder_;
std::unique_ptr<ForwardingTables> PipelineBurstTest::tables_;
Ids PipelineBurstTest::ids_;

// Each kind alone: its outcome as the test worked it out.
TEST_F(PipelineBurstTest, EachKindAlone) {
  const auto all = kinds();
  for (size_t k = 0; k < all.size(); ++k) {
    SCOPED_TRACE(all[k].first);
    EXPECT_TRUE(runKinds(all, {k}));
  }
}

// Every ordered pair of kinds next to each other, and each kind between two
// of every other.
TEST_F(PipelineBurstTest, EveryPairOfNeighbours) {
  const auto all = kinds();
  for (size_t a = 0; a < all.size(); ++a) {
    for (size_t b = 0; b < all.size(); ++b) {
      ASSERT_TRUE(runKinds(all, {a, b}));
      ASSERT_TRUE(runKinds(all, {b, a, b}));
    }
  }
  std::printf("pairs: %u bursts, %zu packets\n", bursts_, packets_);
}

// One burst of every kind, in order and reversed, and twice over: more
// than 32 packets, bursts of one process() call.
TEST_F(PipelineBurstTest, AllKindsInOneBurst) {
  const auto all = kinds();
  std::vector<size_t> order(all.size());
  for (size_t k = 0; k < all.size(); ++k) {
    order[k] = k;
  }
  auto upTo32 = [](std::vector<size_t> v) {
    v.resize(std::min<size_t>(v.size(), kBurst));
    return v;
  };
  ASSERT_TRUE(runKinds(all, upTo32(order)));
  ASSERT_TRUE(runKinds(all, order));
  std::reverse(order.begin(), order.end());
  ASSERT_TRUE(runKinds(all, upTo32(order)));
  std::vector<size_t> twice = order;
  twice.insert(twice.end(), order.begin(), order.end());
  ASSERT_GT(twice.size(), kBurst);
  ASSERT_TRUE(runKinds(all, twice));
}

// The per-burst gateway MAC: the same gateway address (10.1.0.254) in two
// tenants on two ports (other MACs), another gateway of the same port, and
// ICMP errors routed to the gateway in between, interleaved in one burst.
TEST_F(PipelineBurstTest, GatewayNextHopsInterleaved) {
  const auto all = kinds();
  auto index = [&](const std::string& name) {
    for (size_t k = 0; k < all.size(); ++k) {
      if (all[k].first == name) {
        return k;
      }
    }
    ADD_FAILURE() << "no kind " << name;
    return size_t{0};
  };
  const size_t g1 = index("lan-gateway-254"), g2 = index("t2-lan-gateway-254"),
               g3 = index("lan-gateway-253"), ttl = index("ttl-expired-lan"),
               pad = index("lan-gateway-padded"), t2in = index("t2-tunnel-to-lan"),
               in = index("tunnel-to-lan-v4");
  ASSERT_TRUE(runKinds(all, {g1, g2, g1, g2, g3, g1, ttl, g2, g3, g3, g2, pad, g1}));
  ASSERT_TRUE(runKinds(all, {g2, g1, ttl, g2, in, t2in, g2, g1, in, t2in, g3}));
  // Over a burst boundary: packets 31 and 32 (0-based) are in two bursts.
  std::vector<size_t> long_burst;
  for (unsigned i = 0; i < 70; ++i) {
    long_burst.push_back(std::array<size_t, 5>{g1, g2, g3, t2in, in}[i % 5]);
  }
  ASSERT_TRUE(runKinds(all, long_burst));
}

// Seeded random mixes: bursts of 1..32, and of 33..120 packets cut into
// bursts by process().
TEST_F(PipelineBurstTest, RandomMixes) {
  const auto all = kinds();
  std::mt19937 rng(20261205);
  const auto start = std::chrono::steady_clock::now();
  std::uniform_int_distribution<size_t> kind(0, all.size() - 1);
  std::vector<bool> icmp(all.size());
  for (size_t k = 0; k < all.size(); ++k) {
    icmp[k] = all[k].second(0x0101).icmp_errors != 0;
  }
  for (unsigned round = 0; round < 3000; ++round) {
    std::uniform_int_distribution<size_t> size(1, round % 4 == 3 ? 120 : 32);
    const size_t n = size(rng);
    std::vector<size_t> which;
    // Some bursts draw from a few kinds only: long runs of the same verdict
    // with a stray neighbour.
    std::vector<size_t> pool;
    if (round % 3 == 1) {
      for (int i = 0; i < 3; ++i) {
        pool.push_back(kind(rng));
      }
    }
    unsigned errors = 0;
    while (which.size() < n) {
      const size_t k = pool.empty() ? kind(rng) : pool[rng() % pool.size()];
      // At most 80 ICMP errors in one call: under the worker's token
      // bucket (100 at once), so that none is rate limited.
      if (icmp[k] && errors == 80) {
        if (std::all_of(pool.begin(), pool.end(), [&](size_t p) { return icmp[p]; }) &&
            !pool.empty()) {
          break;
        }
        continue;
      }
      errors += icmp[k];
      which.push_back(k);
    }
    ASSERT_TRUE(runKinds(all, which)) << "round " << round;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("random: %u bursts, %zu packets in %.2f s\n", bursts_, packets_, seconds);
}

// Flow audit at 1-in-1 (docs/monitoring.md, "Flow audit (IPFIX)"): every
// kind's outputs and counters are as without sampling, and it leaves one
// sample exactly when it came out of a tunnel and reached the route stage
// (from-tunnel, the line it came in on) or went into a tunnel (to-tunnel,
// the line chosen, also when the packet then proved too big), with its
// tenant, family and ports; no other kind leaves one.
TEST_F(PipelineBurstTest, FlowAuditSamplesWhatCrossesATunnel) {
  flows_ = rte_ring_create_elem("pbt_flows", sizeof(FlowSample), 4096, SOCKET_ID_ANY,
                                RING_F_SP_ENQ | RING_F_SC_DEQ);
  ASSERT_NE(flows_, nullptr);
  health_.flow_sampling.store(1);
  newPipeline();
  using Dir = FlowDirection;
  struct Want {
    Dir dir;
    uint16_t line;
  };
  const std::map<std::string, Want> sampled = {
      {"lan-to-tunnel-v4", {Dir::kToTunnel, ids_.line_slot}},
      {"lan-to-tunnel-rss", {Dir::kToTunnel, ids_.line_slot}},
      {"virtual-mac-to-tunnel", {Dir::kToTunnel, ids_.line_slot}},
      {"syn-clamped", {Dir::kToTunnel, ids_.line_slot}},
      {"t2-syn-not-clamped", {Dir::kToTunnel, ids_.line_slot}},
      {"lan-to-tunnel-v6", {Dir::kToTunnel, ids_.line_slot}},
      {"lan-to-tunnel-fragment", {Dir::kToTunnel, ids_.line_slot}},
      {"too-big-df", {Dir::kToTunnel, ids_.line_slot}},
      {"too-big-v6", {Dir::kToTunnel, ids_.line_slot}},
      {"t2-lan-to-tunnel", {Dir::kToTunnel, ids_.line_slot}},
      {"site-c-transit-to-site-b-rss", {Dir::kFromTunnel, ids_.line_c}},
      {"site-c-tunnel-to-lan-v4", {Dir::kFromTunnel, ids_.line_c}},
      {"tunnel-to-lan-v4", {Dir::kFromTunnel, ids_.line_slot}},
      {"tunnel-to-lan-v6", {Dir::kFromTunnel, ids_.line_slot}},
      {"ttl-expired-tunnel", {Dir::kFromTunnel, ids_.line_slot}},
      {"tunnel-to-lan-fragmented", {Dir::kFromTunnel, ids_.line_slot}},
      {"tunnel-to-lan-too-big-df", {Dir::kFromTunnel, ids_.line_slot}},
      {"tunnel-to-lan-too-big-v6", {Dir::kFromTunnel, ids_.line_slot}},
      {"tunnel-to-gateway", {Dir::kFromTunnel, ids_.line_slot}},
      {"t2-tunnel-to-lan", {Dir::kFromTunnel, ids_.line_slot}},
      // The port said the outer checksum was good: forwarded as such.
      {"bad-outer-checksum-offload-good", {Dir::kFromTunnel, ids_.line_slot}},
  };
  // Every kind with the sample it leaves among its counters.
  auto all = kinds();
  size_t found = 0;
  for (auto& [name, make] : all) {
    const bool yes = sampled.count(name) != 0;
    found += yes;
    make = [make = make, yes](uint16_t tag) {
      Case c = make(tag);
      c.deltas["flow_samples"] += yes ? 1 : 0;
      return c;
    };
  }
  ASSERT_EQ(found, sampled.size()) << "a kind of the table is not among kinds()";
  for (size_t k = 0; k < all.size(); ++k) {
    SCOPED_TRACE(all[k].first);
    ASSERT_TRUE(runKinds(all, {k}));
    FlowSample got[2];
    const unsigned n = rte_ring_sc_dequeue_burst_elem(flows_, got, sizeof(FlowSample), 2, nullptr);
    auto want = sampled.find(all[k].first);
    if (want == sampled.end()) {
      EXPECT_EQ(n, 0u);
      continue;
    }
    ASSERT_EQ(n, 1u);
    const FlowSample& f = got[0];
    EXPECT_EQ(f.direction, static_cast<uint8_t>(want->second.dir));
    EXPECT_EQ(f.line, want->second.line);
    EXPECT_EQ(tables_->tenants.at(f.tenant).name, all[k].first.rfind("t2-", 0) == 0 ? "t2" : "t1");
    EXPECT_EQ(f.ip_version, all[k].first.find("v6") != std::string::npos ? 6 : 4);
    EXPECT_NE(f.tsc, 0u);
    EXPECT_GT(f.ip_len, 20u);
  }
  // All kinds in one burst, and twice over: the outputs as without sampling,
  // one sample per tunnel-crossing packet.
  std::vector<size_t> order(all.size());
  for (size_t k = 0; k < all.size(); ++k) {
    order[k] = k;
  }
  std::vector<size_t> twice = order;
  twice.insert(twice.end(), order.begin(), order.end());
  ASSERT_TRUE(runKinds(all, twice));
  EXPECT_EQ(rte_ring_count(flows_), 2 * sampled.size());
  health_.flow_sampling.store(0);
  pipeline_.reset();
  rte_ring_free(flows_);
  flows_ = nullptr;
}

}  // namespace
}  // namespace mcgw::engine
