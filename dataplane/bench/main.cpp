// mcgw-bench: a memory-only benchmark of the fast path (docs/performance.md).
//
// One worker (the main thread) runs the real engine::Pipeline over tables
// built by the real engine::TablesBuilder.  Packets come from pre-built
// templates: before each burst the benchmark allocates 32 mbufs, writes the
// headers of the next 32 template variants (4,096 destinations) into them
// and puts them on an rte_ring behind a net_ring port.  The timed part is
// what a worker does per poll:
//
//   rte_eth_rx_burst(ring port) → Pipeline::process() → Pipeline::flush()
//                                                        → net_null TX (frees)
//
// and the "I/O floor" is the same loop with rte_eth_tx_burst() to net_null in
// place of the pipeline.  Only those TSC cycles are counted (never packet
// generation).  Before timing, each scenario's output is captured on ring
// ports and checked byte by byte; after timing, the pipeline's drop counters,
// its TX counters and the net_null TX counters must account for every packet.
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_memcpy.h>
#include <rte_mempool.h>
#include <rte_ring.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string>
#include <unordered_set>
#include <vector>

#include "config/config.hpp"
#include "dataplane/bench/harness.hpp"
#include "dataplane/bench/meter_bench.hpp"
#include "dataplane/bench/packets.hpp"
#include "dataplane/bench/pipeline_policy_bench.hpp"
#include "dataplane/bench/policy_bench.hpp"
#include "dataplane/bench/route_scale.hpp"
#include "dataplane/bench/shaper_bench.hpp"
#include "dataplane/crypto/esp.hpp"
#include "dataplane/engine/counters.hpp"
#include "dataplane/engine/esp_sa.hpp"
#include "dataplane/engine/fib.hpp"
#include "dataplane/engine/pipeline.hpp"
#include "dataplane/engine/port.hpp"
#include "dataplane/engine/tables.hpp"
#include "dataplane/proto/checksum.hpp"
#include "dataplane/proto/mss.hpp"
#include "dataplane/proto/prefix_map.hpp"

namespace mcgw::bench {
namespace {

using engine::ForwardingTables;
using engine::TenantFib;

constexpr uint16_t kBurst = engine::kBurst;
constexpr size_t kDestinations = 4096;  // a power of two
constexpr uint32_t kVni = 1001;
constexpr uint64_t kWarmupBursts = 1024;
constexpr uint64_t kVerifyBursts = 4;
// A burst that took this many times the median was interrupted (the VM's
// vCPU preempted, a host interrupt): it is left out of the average.
constexpr uint64_t kOutlierFactor = 10;
constexpr unsigned kMbufs = 8191;
// The 1M-route FIB (fib-lookup, --big-routes) and fib-load / fib-churn keep
// two copies of each family's tables: about 1.5 GiB for 1M IPv4 routes
// (docs/performance.md, "Route scale").
constexpr unsigned kMemoryMb = 4096;

// Addresses of the bench topology (see benchConfig()).
const Mac kLan0Mac{0x02, 0, 0, 0, 0x01, 0x00};
const Mac kLan1Mac{0x02, 0, 0, 0, 0x01, 0x01};
const Mac kWan0Mac{0x02, 0, 0, 0, 0x02, 0x00};
const Mac kWan1Mac{0x02, 0, 0, 0, 0x02, 0x01};
const Mac kLanHostMac{0x02, 0, 0, 0, 0x0b, 0x01};     // sender on lan0
const Mac kLanRouterMac{0x02, 0, 0, 0, 0x0a, 0xfe};   // 192.168.1.254 on lan1
const Mac kPeerAMac{0x02, 0, 0, 0, 0x0c, 0x0a};       // peer A's VTEP 203.0.113.10 on wan0
const Mac kWan1RouterMac{0x02, 0, 0, 0, 0x0c, 0xfe};  // 198.51.100.254 on wan1
const Mac kPeerBInnerMac{0x02, 0, 0, 0, 0x0d, 0x01};
const Mac kRemoteHostMac{0x02, 0, 0, 0, 0x0e, 0x01};  // inner source behind peer A
const Ip4 kPeerAVtep{203, 0, 113, 10};
const Ip4 kWan0Address{203, 0, 113, 1};
const Ip4 kWan1Address{198, 51, 100, 1};
const Ip4 kPeerBVtep{198, 51, 100, 10};
// The mapped scenario: lan0's 192.168.0.0/16 is 100.70.0.0/16 to the peers.
const Ip4 kMappedSender{100, 70, 0, 10};  // 192.168.0.10

// ---------------------------------------------------------------- scenarios

enum class Kind {
  kFloor,
  kRoute,
  kDecap,
  kEncap,
  kMapped,
  kFull,
  kFibLookup,
  kMssNonSyn,
  kMssSyn,
  kMappedStage,
  kEspEncap,
  kEspDecap
};

bool isEsp(Kind k) {
  return k == Kind::kEspEncap || k == Kind::kEspDecap;
}

// No packets through ports: measured on their own, no I/O floor.
bool standalone(Kind k) {
  return k == Kind::kFibLookup || k == Kind::kMssNonSyn || k == Kind::kMssSyn ||
         k == Kind::kMappedStage;
}

struct Scenario {
  Kind kind;
  const char* name;
  bool wan_in;      // the input arrives VXLAN-encapsulated on a WAN port
  bool tunnel_out;  // the output leaves VXLAN-encapsulated on a WAN port
  const char* what;
  std::optional<double> target;  // cycles above the I/O floor (the issue)
};

const std::vector<Scenario> kScenarios = {
    {Kind::kFloor, "io-floor", false, false, "rx burst + tx burst, no processing", {}},
    {Kind::kRoute, "route", false, false, "LAN in, IPv4 route to a LAN next hop", {}},
    {Kind::kDecap, "decap", true, false, "VXLAN in from peer A, route, LAN out", 35},
    {Kind::kEncap, "encap", false, true, "LAN in, route, VXLAN out to peer B", 45},
    // Right after encap: each round measures the two back to back.
    {Kind::kMapped,
     "mapped",
     false,
     true,
     "as encap, the source in a mapped range: mapped 1:1 (IPv4 and UDP checksums updated)",
     {}},
    {Kind::kFull, "full", true, true, "VXLAN in from peer A, route, VXLAN out to peer B", 70},
    {Kind::kFibLookup, "fib-lookup", false, false, "TenantFib::find4 alone (no packets)", {}},
    {Kind::kMssNonSyn, "mss-non-syn", false, false,
     "MSS stage (mayBeTcpSyn + clampMss) on IPv4 TCP ACKs, minus the bare loop", 5},
    {Kind::kMssSyn, "mss-syn", false, false,
     "MSS stage on IPv4 SYNs with MSS 1460 clamped to 1400, minus the bare loop", 30},
    {Kind::kMappedStage, "mapped-stage", false, false,
     "mapped-range stage (mapPacket + counter) on IPv4 TCP from a mapped range, minus the bare "
     "loop",
     15},
    // Issue 18: ESP (AES-256-GCM) on the line.  Not in all (they would
    // double the default run's time), 1 route only.
    {Kind::kEspEncap,
     "esp-encap",
     false,
     true,
     "as encap, peer-b's line encrypted: ESP (AES-256-GCM) sealed after VXLAN encap",
     {}},
    {Kind::kEspDecap,
     "esp-decap",
     true,
     false,
     "as decap, peer-a's line encrypted: ESP opened (replay window, AES-256-GCM) before decap",
     {}},
};

// ESP scenarios: Gbit/s of inner frames per core wanted at 1400 B (issue 18).
constexpr double kEspTargetGbps = 10;
constexpr size_t kEspTargetSize = 1400;
// The largest inner frame an encrypted VXLAN/IPv4 line with a 1500-byte MTU
// carries: ESP payload espMaxPayload(1500 - 20) = 1446, less UDP and VXLAN.
constexpr size_t kEspMaxFrame = crypto::espMaxPayload(1500 - 20) - 8 - 8;
static_assert(kEspMaxFrame == 1430);

// The SAs of the ESP scenarios (fixed keys: only a benchmark).  Outbound:
// what we send to peer-b on b1 (the capture checks open it as peer-b would);
// inbound: what peer-a sends us on a1 (the feeder seals with it).
constexpr uint32_t kSpiOut = 0x0b0b0001, kSpiIn = 0x0a0a0001;
const crypto::Salt kSaltOut{0x5a, 0x17, 0x00, 0x0b}, kSaltIn{0x5a, 0x17, 0x00, 0x0a};
crypto::Key espKey(uint8_t seed) {
  crypto::Key k;
  for (size_t i = 0; i < k.size(); ++i) {
    k[i] = static_cast<uint8_t>(seed + i * 37);
  }
  return k;
}
const crypto::Key kKeyOut = espKey(0x0b), kKeyIn = espKey(0x0a);

// ------------------------------------------------------------------- config

// The topology, as a Config filled by hand (no YAML, no validation):
//
//   lan0 192.168.0.1/24 (RX) ─┐                   ┌─ lan1 192.168.1.1/24 (TX)
//                             ├─ tenant "bench" ─┤    next hop 192.168.1.254
//   wan0 203.0.113.1/24 (RX) ─┘   VNI 1001        └─ wan1 198.51.100.1/24 (TX)
//     peer-a VTEP 203.0.113.10                        peer-b VTEP 198.51.100.10
//                                                     via 198.51.100.254
//
// One static route, 10.0.0.0/8, to peer-b (tunnel_out) or to the LAN next
// hop.  Both peers use VXLAN and carry the tenant.
config::Config benchConfig(bool tunnel_out) {
  using config::PortRole;
  config::Config c;
  c.node.name = "mcgw-bench";
  c.fast_path.idle_sleep_max_us = 0;
  auto lan0 = port("lan0", PortRole::kLan, "192.168.0.1/24");
  auto lan1 = port("lan1", PortRole::kLan, "192.168.1.1/24");
  lan1.neighbors = {{ip("192.168.1.254"), mac(kLanRouterMac)}};
  auto wan0 = port("wan0", PortRole::kWan, "203.0.113.1/24");
  wan0.neighbors = {{ip("203.0.113.10"), mac(kPeerAMac)}};
  auto wan1 = port("wan1", PortRole::kWan, "198.51.100.1/24");
  wan1.neighbors = {{ip("198.51.100.254"), mac(kWan1RouterMac)}};
  c.ports = {lan0, lan1, wan0, wan1};

  config::TenantConfig t;
  t.name = "bench";
  t.vni = kVni;
  config::StaticRoute r;
  r.prefix = prefix("10.0.0.0/8");
  if (tunnel_out) {
    r.peer = "peer-b";
  } else {
    r.next_hop = ip("192.168.1.254");
  }
  t.routes = {r};
  c.tenants = {t};

  config::PeerConfig a;
  a.name = "peer-a";
  config::LineConfig la;
  la.name = "a1";
  la.port = "wan0";
  la.local_vtep = ip("203.0.113.1");
  la.remote_vtep = ip("203.0.113.10");
  la.mtu = 1500;
  a.lines = {la};
  config::PeerConfig b;
  b.name = "peer-b";
  b.inner_mac = mac(kPeerBInnerMac);
  config::LineConfig lb;
  lb.name = "b1";
  lb.port = "wan1";
  lb.local_vtep = ip("198.51.100.1");
  lb.remote_vtep = ip("198.51.100.10");
  lb.next_hop = ip("198.51.100.254");
  lb.mtu = 1500;
  b.lines = {lb};
  c.peers = {a, b};
  return c;
}

// The ESP scenarios: the line the packets cross is encrypted
// (peers[].encryption {mode: esp-aes-256-gcm}, ESP straight over IPv4,
// replay window 1024): peer-b's for esp-encap, peer-a's for esp-decap.
void encryptLine(const Scenario& s, config::Config& c) {
  if (isEsp(s.kind)) {
    c.peers.at(s.kind == Kind::kEspEncap ? 1 : 0).encryption = config::EncryptionConfig{};
  }
}

// -------------------------------------------------------------------- ports

struct Ports {
  RingPort rx_lan, rx_wan;  // the benchmark feeds these
  // --workers: the RX rings of workers 1.. (worker 0 uses rx_lan, rx_wan).
  std::vector<RingPort> worker_lan, worker_wan;
  RingPort cap_lan, cap_wan;  // output captured for the checks
  std::unique_ptr<engine::Port> null_lan, null_wan;
};

// The open ports as TablesBuilder wants them: lan0/wan0 receive from the
// rings; lan1/wan1 transmit to net_null (timing) or to the capture rings.
std::map<std::string, engine::OpenPort> openPorts(const Ports& p, bool capture) {
  return {
      {"lan0", {p.rx_lan.id, kLan0Mac, 1}},
      {"wan0", {p.rx_wan.id, kWan0Mac, 1}},
      {"lan1", {capture ? p.cap_lan.id : p.null_lan->id(), kLan1Mac, 1}},
      {"wan1", {capture ? p.cap_wan.id : p.null_wan->id(), kWan1Mac, 1}},
  };
}

// ------------------------------------------------------------------ packets

// A frame in kDestinations variants that differ in their first `hdr` bytes.
struct Templates {
  std::vector<uint8_t> base;
  size_t hdr = 0;
  std::vector<uint8_t> headers;  // kDestinations × hdr
  size_t trailer = 0;            // esp-decap: the room for the ESP trailer at the end
};

InnerSpec innerSpec(bool from_wan, const Ip4& dst, size_t v, bool udp_checksum) {
  InnerSpec s;
  s.dst_mac = from_wan ? kPeerBInnerMac : kLan0Mac;  // any MAC inside a tunnel
  s.src_mac = from_wan ? kRemoteHostMac : kLanHostMac;
  s.src = from_wan ? Ip4{172, 16, 0, 10} : Ip4{192, 168, 0, 10};
  s.dst = dst;
  s.src_port = static_cast<uint16_t>(1024 + v);
  s.dst_port = 5001;
  s.ttl = 64;
  s.udp_checksum = udp_checksum;
  return s;
}

// esp: the VXLAN frames laid out as peer-a's ESP packets (espLayout), to be
// sealed by the feeder; the headers then reach to the inner UDP header too.
Templates makeTemplates(bool from_wan, size_t size, const std::vector<Ip4>& dsts,
                        bool udp_checksum = false, bool esp = false) {
  Templates t;
  proto::TunnelHeaderTemplate outer;
  std::copy(kPeerAMac.begin(), kPeerAMac.end(), outer.src_mac);
  std::copy(kWan0Mac.begin(), kWan0Mac.end(), outer.dst_mac);
  std::copy(kPeerAVtep.begin(), kPeerAVtep.end(), outer.local);
  std::copy(kWan0Address.begin(), kWan0Address.end(), outer.remote);
  outer.ttl = 64;
  outer.encapsulation = proto::Encapsulation::kVxlan;
  t.hdr = (from_wan ? kVxlanOverhead : 0) + (esp ? crypto::kEspPrefixLen : 0) + kEthLen + 20 + 8;
  t.headers.resize(kDestinations * t.hdr);
  for (size_t v = 0; v < kDestinations; ++v) {
    auto inner = innerFrame(size, innerSpec(from_wan, dsts[v], v, udp_checksum));
    auto frame =
        from_wan ? vxlanFrame(inner, outer, kVni, static_cast<uint32_t>(v * 2654435761u)) : inner;
    if (esp && !frame.empty()) {
      frame = espLayout(frame);
      t.trailer = crypto::espTrailerLen(kVxlanOverhead - kEspAt + size);
    }
    if (frame.empty()) {
      fail("cannot build the template packets");
    }
    if (v == 0) {
      t.base = frame;
    }
    std::copy_n(frame.begin(), t.hdr, t.headers.begin() + static_cast<ptrdiff_t>(v * t.hdr));
  }
  return t;
}

// What every received mbuf says the port's receive offloads did
// (--rx-checksum-good: the outer IPv4 header checksum was checked, so
// decapsulation skips its own check).
uint64_t rx_offload_flags = 0;
// --flow-sampling: the timed runs sample 1-in-N for flow audit (0: off).
uint32_t flow_sampling = 0;
uint32_t rx_packet_type = 0;  // with it: a plain IPv4 UDP packet, as such a port says

// esp-decap: the feeder seals every packet it feeds as peer-a would (SPI
// kSpiIn), each with the next sequence number of the SA, so the replay
// window sees every packet once however often the 4,096 templates come
// round.  Untimed, as the rest of the feeding.  Sealed by PeerSa (OpenSSL
// EVP, not crypto::Gcm or its engine): the pipeline's opening is checked
// against an independent implementation.
struct EspSealer {
  explicit EspSealer(const Templates& t)
      : payload_len(t.base.size() - kEspAt - crypto::kEspPrefixLen - t.trailer),
        sealed_len(t.base.size() - kEspAt) {}
  PeerSa peer{kKeyIn, kSaltIn, kSpiIn};
  uint64_t seq = 0;  // the last one sealed
  size_t payload_len, sealed_len;
};

// Puts bursts of template packets on a ring port's RX ring.
//
// Only the first `hdr` bytes of each packet are written per burst: every
// mbuf of the pool is stamped with the whole template first, and since the
// pipeline never writes past the headers, the payload stays in place across
// uses.  So packet size changes what the headers say, not how many bytes the
// generator drags through the caches (a NIC's DMA does not fill them either).
// ESP changes the payload in place: esp-encap feeds what the last use left
// (ciphertext) as the payload, which costs the same; esp-decap's sealer
// encrypts it and the pipeline decrypts it back.
class Feeder {
 public:
  // as_port: the port id the packets say they arrived on (default: the
  // ring's own port; --workers: lan0's or wan0's, whose RX queue the ring
  // stands for).
  Feeder(rte_mempool* pool, const RingPort& port, const Templates& t, int as_port = -1,
         EspSealer* seal = nullptr)
      : pool_(pool),
        port_(port),
        t_(t),
        as_port_(as_port < 0 ? port.id : static_cast<uint16_t>(as_port)),
        seal_(seal) {
    // Every mbuf of the pool, also those in another lcore's mempool cache
    // (--workers), where an allocation would not reach them.
    struct Stamp {
      const std::vector<uint8_t>* frame;
      bool fits = true;
    } stamp{&t_.base};
    rte_mempool_obj_iter(
        pool_,
        [](rte_mempool*, void* opaque, void* obj, unsigned) {
          auto* st = static_cast<Stamp*>(opaque);
          auto* m = static_cast<rte_mbuf*>(obj);
          if (m->buf_len < RTE_PKTMBUF_HEADROOM + st->frame->size()) {
            st->fits = false;
            return;
          }
          std::memcpy(static_cast<uint8_t*>(m->buf_addr) + RTE_PKTMBUF_HEADROOM, st->frame->data(),
                      st->frame->size());
        },
        &stamp);
    if (!stamp.fits) {
      fail("template larger than an mbuf");
    }
  }

  void fill() {
    rte_mbuf* m[kBurst];
    if (rte_pktmbuf_alloc_bulk(pool_, m, kBurst) != 0) {
      fail("the mempool ran dry: mbufs are leaking");
    }
    const size_t len = t_.base.size();
    for (unsigned i = 0; i < kBurst; ++i) {
      rte_memcpy(rte_pktmbuf_mtod(m[i], uint8_t*), t_.headers.data() + next_ * t_.hdr, t_.hdr);
      m[i]->data_len = static_cast<uint16_t>(len);
      m[i]->pkt_len = static_cast<uint32_t>(len);
      m[i]->port = as_port_;  // net_ring does not set it
      m[i]->ol_flags = rx_offload_flags;
      m[i]->packet_type = rx_packet_type;
      if (seal_) {
        if (rx_packet_type) {
          m[i]->packet_type = RTE_PTYPE_L2_ETHER | RTE_PTYPE_L3_IPV4;  // ESP: no L4 the port knows
        }
        if (seal_->peer.seal(++seal_->seq, proto::kIpProtoUdp,
                             rte_pktmbuf_mtod(m[i], uint8_t*) + kEspAt,
                             seal_->payload_len) != seal_->sealed_len) {
          fail("esp-decap: the feeder could not seal a packet");
        }
      }
      next_ = (next_ + 1) & (kDestinations - 1);
    }
    if (rte_ring_enqueue_bulk(port_.ring, reinterpret_cast<void**>(m), kBurst, nullptr) != kBurst) {
      fail("the RX ring is full");
    }
    fed_ += kBurst;
  }
  uint64_t fed() const { return fed_; }

 private:
  rte_mempool* pool_;
  RingPort port_;
  const Templates& t_;
  uint16_t as_port_;
  EspSealer* seal_;
  size_t next_ = 0;
  uint64_t fed_ = 0;
};

// ---------------------------------------------------------------- measuring

struct Measured {
  double cycles_per_packet = 0;
  uint64_t packets = 0;   // in the average
  uint64_t outliers = 0;  // bursts left out
};

Measured summarize(std::vector<uint64_t>& samples, unsigned per_sample) {
  std::vector<uint64_t> sorted = samples;
  std::nth_element(sorted.begin(), sorted.begin() + static_cast<ptrdiff_t>(sorted.size() / 2),
                   sorted.end());
  const uint64_t limit = sorted[sorted.size() / 2] * kOutlierFactor;
  uint64_t sum = 0, kept = 0;
  for (uint64_t s : samples) {
    if (s <= limit) {
      sum += s;
      ++kept;
    }
  }
  Measured m;
  m.packets = kept * per_sample;
  m.outliers = samples.size() - kept;
  m.cycles_per_packet = static_cast<double>(sum) / static_cast<double>(m.packets);
  return m;
}

// Feeds warm-up plus `bursts` bursts; times rx_burst + body per burst.
template <typename Body>
Measured measure(Feeder& feed, uint16_t rx_port, uint64_t bursts, Body&& body) {
  std::vector<uint64_t> samples;
  samples.reserve(bursts);
  rte_mbuf* pkts[kBurst];
  for (uint64_t b = 0; b < kWarmupBursts + bursts; ++b) {
    feed.fill();
    const uint64_t t0 = rte_rdtsc();
    const uint16_t n = rte_eth_rx_burst(rx_port, 0, pkts, kBurst);
    body(pkts, n);
    const uint64_t t1 = rte_rdtsc();
    if (n != kBurst) {
      fail("rx burst returned " + std::to_string(n) + " packets, not " + std::to_string(kBurst));
    }
    if (b >= kWarmupBursts) {
      samples.push_back(t1 - t0);
    }
  }
  return summarize(samples, kBurst);
}

// ------------------------------------------------------------------- routes

struct BigRoutes {
  std::vector<std::pair<uint32_t, uint8_t>> prefixes;  // host order, in 10.0.0.0/8
};

// `n` distinct random prefixes of length 24..32 in 10.0.0.0/8 and
// kDestinations random addresses, each inside one of them (or anywhere in
// 10.0.0.0/8 when n is 0).
void randomRoutes(size_t n, uint64_t seed, BigRoutes* routes, std::vector<Ip4>* dsts) {
  std::mt19937_64 rng(seed);
  std::unordered_set<uint64_t> seen;
  seen.reserve(n * 2);
  routes->prefixes.reserve(n);
  while (routes->prefixes.size() < n) {
    const uint8_t len = static_cast<uint8_t>(24 + rng() % 9);
    const uint32_t mask = len == 32 ? 0xffffffffu : ~(0xffffffffu >> len);
    const uint32_t addr = (0x0a000000u | static_cast<uint32_t>(rng() & 0x00ffffff)) & mask;
    if (seen.insert(static_cast<uint64_t>(addr) << 8 | len).second) {
      routes->prefixes.emplace_back(addr, len);
    }
  }
  dsts->clear();
  for (size_t i = 0; i < kDestinations; ++i) {
    uint32_t a = 0x0a000000u | static_cast<uint32_t>(rng() & 0x00ffffff);
    if (n > 0) {
      const auto& [p, len] = routes->prefixes[rng() % n];
      const uint32_t mask = len == 32 ? 0xffffffffu : ~(0xffffffffu >> len);
      a = p | (static_cast<uint32_t>(rng()) & ~mask);
    }
    dsts->push_back({static_cast<uint8_t>(a >> 24), static_cast<uint8_t>(a >> 16),
                     static_cast<uint8_t>(a >> 8), static_cast<uint8_t>(a)});
  }
}

size_t heapBytes() {
  rte_malloc_socket_stats s{};
  rte_malloc_get_socket_stats(static_cast<int>(rte_socket_id()), &s);
  return s.heap_allocsz_bytes;
}

bool sameRoutes(const std::vector<TenantFib::Route>& a, const std::vector<TenantFib::Route>& b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](const auto& x, const auto& y) {
           return x.prefix == y.prefix && x.next_hop == y.next_hop;
         });
}

// ---------------------------------------------------------------- the bench

std::string fmt(const char* f, double v) {
  char b[32];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

struct Row {
  std::string scenario;
  size_t packet_size = 0;
  size_t routes = 0;
  double cycles = 0;  // the median of the repetitions
  double min = 0, max = 0;
  double above = 0;
  double mpps = 0;
  std::vector<double> repetitions;  // cycles per packet of each
  uint64_t outliers = 0;            // interrupted bursts left out, all repetitions
  std::optional<double> target;
};

class Bench {
 public:
  Bench(rte_mempool* pool, Ports& ports, uint64_t bursts, size_t big_routes, uint64_t seed)
      : pool_(pool), ports_(ports), bursts_(bursts), big_n_(big_routes) {
    for (auto& up : health_.up) {
      up.store(true);
    }
    randomRoutes(big_n_, seed, &big_, &dsts_);
    pool_size_ = rte_mempool_avail_count(pool_);
  }

  double bigBuildSeconds() const { return big_build_s_; }
  size_t bigFibBytes() const { return big_bytes_; }
  size_t builderFibBytes() const { return builder_bytes_; }

  // Scale out (--workers): `workers` lcores at once (the main one and the
  // next ones), each with its own RX ring, feeder, Pipeline (its own TX
  // queue on the net_null ports) and counters, over one snapshot of the
  // scenario's tables (one route).  Each worker is timed as one worker is
  // (rx burst, process, flush per burst; feeding untimed); the answer is
  // each worker's cycles per packet.  Checked as a single run is: no drop,
  // every packet out, every mbuf back.
  std::vector<Measured> scaleOnce(const Scenario& s, size_t size, unsigned workers) {
    const std::string label = std::string(s.name) + "/" + std::to_string(size) + "B/" +
                              std::to_string(workers) + " workers";
    config::Config c = benchConfig(s.tunnel_out);
    engine::TablesBuilder builder;
    auto built = builder.build(input(s, c, openPorts(ports_, false)), {});
    if (!built) {
      fail(label + ": TablesBuilder: " + built.error());
    }
    const std::unique_ptr<ForwardingTables> tables = std::move(*built);
    Templates t = makeTemplates(s.wan_in, size, dsts_, s.kind == Kind::kMapped);
    const uint16_t tx = s.tunnel_out ? ports_.null_wan->id() : ports_.null_lan->id();
    rte_eth_stats_reset(tx);
    struct Worker {
      Bench* bench = nullptr;
      const ForwardingTables* tables = nullptr;
      const RingPort* rx = nullptr;
      uint16_t port = 0;  // the port the tables know
      unsigned queue = 0;
      std::unique_ptr<Feeder> feed;
      std::unique_ptr<engine::WorkerCounters> counters;
      Measured result;
    };
    std::vector<Worker> ws(workers);
    for (unsigned w = 0; w < workers; ++w) {  // feeders stamp the whole pool: one at a time
      Worker& k = ws[w];
      k.bench = this;
      k.tables = tables.get();
      k.rx = w == 0 ? (s.wan_in ? &ports_.rx_wan : &ports_.rx_lan)
                    : (s.wan_in ? &ports_.worker_wan.at(w - 1) : &ports_.worker_lan.at(w - 1));
      k.port = s.wan_in ? ports_.rx_wan.id : ports_.rx_lan.id;
      k.queue = w;
      // Worker w's ring stands for RX queue w of lan0 / wan0: its packets
      // say they arrived there.
      k.feed = std::make_unique<Feeder>(pool_, *k.rx, t, k.port);
      k.counters = std::make_unique<engine::WorkerCounters>();
    }
    auto run = [](void* arg) -> int {
      auto* k = static_cast<Worker*>(arg);
      engine::Pipeline p(static_cast<uint16_t>(k->queue), k->bench->pool_, k->counters.get(),
                         &k->bench->health_);
      k->result = measure(*k->feed, k->rx->id, k->bench->bursts_, [&](rte_mbuf** pkts, uint16_t n) {
        p.process(*k->tables, pkts, n);
        p.flush();
      });
      return 0;
    };
    unsigned w = 1;
    unsigned lcore = 0;
    RTE_LCORE_FOREACH_WORKER(lcore) {
      if (w == workers) {
        break;
      }
      if (rte_eal_remote_launch(run, &ws[w], lcore) != 0) {
        fail(label + ": cannot start a worker on lcore " + std::to_string(lcore));
      }
      ++w;
    }
    if (w != workers) {
      fail(label + ": only " + std::to_string(w) + " lcores for " + std::to_string(workers) +
           " workers");
    }
    run(&ws[0]);
    rte_eal_mp_wait_lcore();
    uint64_t fed = 0;
    std::vector<Measured> out;
    for (Worker& k : ws) {
      checkCounters(label + " worker " + std::to_string(k.queue), *k.counters, s, k.feed->fed());
      fed += k.feed->fed();
      out.push_back(k.result);
    }
    if (txPackets(tx) != fed) {
      fail(label + ": net_null sent " + std::to_string(txPackets(tx)) + " of " +
           std::to_string(fed) + " packets");
    }
    checkMempool(label);
    return out;
  }

  // One timed run of each kind (fresh tables, fresh counters).
  Measured once(const Scenario& s, size_t size, bool big) {
    switch (s.kind) {
      case Kind::kFloor:
        return floorOnce(size);
      case Kind::kFibLookup:
        return fibLookupOnce(big);
      case Kind::kMssNonSyn:
        return mssOnce(false);
      case Kind::kMssSyn:
        return mssOnce(true);
      case Kind::kMappedStage:
        return mappedStageOnce();
      default:
        return pipelineOnce(s, size, big);
    }
  }

 private:
  Measured floorOnce(size_t size) {
    Templates t = makeTemplates(false, size, dsts_);
    Feeder feed(pool_, ports_.rx_lan, t);
    const uint16_t tx = ports_.null_lan->id();
    rte_eth_stats_reset(tx);
    Measured m = measure(feed, ports_.rx_lan.id, bursts_, [&](rte_mbuf** pkts, uint16_t n) {
      if (rte_eth_tx_burst(tx, 0, pkts, n) != n) {
        fail("net_null refused packets");
      }
    });
    if (txPackets(tx) != feed.fed()) {
      fail("io-floor: net_null sent " + std::to_string(txPackets(tx)) + " of " +
           std::to_string(feed.fed()) + " packets");
    }
    checkMempool("io-floor");
    return m;
  }

  Measured pipelineOnce(const Scenario& s, size_t size, bool big) {
    const size_t routes = big ? big_n_ : 1;
    const std::string label = std::string(s.name) + "/" + std::to_string(size) + "B/" +
                              std::to_string(routes) + " routes";
    config::Config c = benchConfig(s.tunnel_out);
    encryptLine(s, c);
    const size_t heap_before = heapBytes();
    // A builder per snapshot: builders change their FIBs in place, and the
    // timed and the capture tables must not share one.
    engine::TablesBuilder builder, capture_builder;
    EspLine esp;  // the timed snapshot's SAs (ESP scenarios)
    auto built = builder.build(input(s, c, openPorts(ports_, false), &esp), {});
    if (!built) {
      fail(label + ": TablesBuilder: " + built.error());
    }
    std::unique_ptr<ForwardingTables> tables = std::move(*built);
    if (!builder_bytes_) {
      builder_bytes_ = heapBytes() - heap_before;
    }
    if (big) {
      // The big FIB is built once here (not per scenario by the builder)
      // and put in place of the one the builder made, over the same next
      // hops.
      auto& te = tables->tenants.at(0);
      const auto routes = builder.rib(te.name)->installed();
      bigFib(routes);
      if (!sameRoutes(routes, big_base_)) {
        fail(label + ": the builder's routes changed between scenarios");
      }
      te.fib = big_fib_;
    }
    EspLine capture_esp;
    auto vbuilt = capture_builder.build(input(s, c, openPorts(ports_, true), &capture_esp), {});
    if (!vbuilt) {
      fail(label + ": TablesBuilder (capture): " + vbuilt.error());
    }
    std::unique_ptr<ForwardingTables> capture = std::move(*vbuilt);
    capture->tenants.at(0).fib = tables->tenants.at(0).fib;

    Templates t =
        makeTemplates(s.wan_in, size, dsts_, s.kind == Kind::kMapped, s.kind == Kind::kEspDecap);
    const RingPort& rx = s.wan_in ? ports_.rx_wan : ports_.rx_lan;
    verify(s, size, label, *capture, t, rx);

    // Timed run on net_null.
    const uint16_t tx = s.tunnel_out ? ports_.null_wan->id() : ports_.null_lan->id();
    rte_eth_stats_reset(tx);
    auto counters = std::make_unique<engine::WorkerCounters>();
    std::unique_ptr<EspSealer> sealer;
    if (s.kind == Kind::kEspDecap) {
      sealer = std::make_unique<EspSealer>(t);
    }
    Feeder feed(pool_, rx, t, -1, sealer.get());
    Measured m;
    // Flow audit: a ring that holds every sample of the run (the control
    // plane drains it in mcgwd; here nothing does), emptied afterwards.
    rte_ring* flows = nullptr;
    if (flow_sampling) {
      // The timed packets and the warm-up, with room to spare.
      const uint64_t samples = (uint64_t{bursts_} * kBurst + (1 << 16)) / flow_sampling + 1024;
      flows = rte_ring_create_elem(
          "bench_flows", sizeof(engine::FlowSample),
          static_cast<unsigned>(rte_align64pow2(std::min<uint64_t>(samples, 1 << 22))),
          SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ | RING_F_EXACT_SZ);
      if (!flows) {
        fail(label + ": cannot create the flow-audit ring");
      }
      health_.flow_sampling.store(flow_sampling);
    }
    {
      engine::Pipeline p(0, pool_, counters.get(), &health_, nullptr, flows);
      m = measure(feed, rx.id, bursts_, [&](rte_mbuf** pkts, uint16_t n) {
        p.process(*tables, pkts, n);
        p.flush();
      });
    }
    if (flows) {
      health_.flow_sampling.store(0);
      const uint64_t taken = counters->flow_samples.get(), full = counters->flow_ring_full.get();
      const bool crosses = s.tunnel_out || s.wan_in;  // only packets into or out of a tunnel
      const uint64_t expected = feed.fed() / flow_sampling;
      if (full != 0 || (crosses ? taken < expected || taken > expected + 1 : taken != 0)) {
        fail(label + ": flow audit took " + std::to_string(taken) + " samples (" +
             std::to_string(full) + " ring full) of " + std::to_string(feed.fed()) +
             " packets at 1-in-" + std::to_string(flow_sampling));
      }
      rte_ring_free(flows);
    }
    checkCounters(label, *counters, s, feed.fed());
    if (txPackets(tx) != feed.fed()) {
      fail(label + ": net_null sent " + std::to_string(txPackets(tx)) + " of " +
           std::to_string(feed.fed()) + " packets");
    }
    // Every packet went through the SA: sealed with its own sequence number
    // (esp-encap), or opened and marked in the replay window (esp-decap).
    if (s.kind == Kind::kEspEncap &&
        (esp.out->lastSeq() != feed.fed() || esp.out->packets() != feed.fed())) {
      fail(label + ": the outbound SA sealed " + std::to_string(esp.out->packets()) + " of " +
           std::to_string(feed.fed()) + " packets");
    }
    if (s.kind == Kind::kEspDecap &&
        (esp.in->packets() != feed.fed() || esp.in->window()->highest() != feed.fed())) {
      fail(label + ": the inbound SA opened " + std::to_string(esp.in->packets()) + " of " +
           std::to_string(feed.fed()) + " packets");
    }
    checkMempool(label);
    return m;
  }

  // The ESP scenarios' SAs of one snapshot.
  struct EspLine {
    std::shared_ptr<engine::EspSa> out, in;
  };

  // The builder's input: the mapped scenario maps lan0's 192.168.0.0/16 to
  // 100.70.0.0/16 (as the daemon's tablesInput() would for a range of this
  // site).  The ESP scenarios' encrypted line gets fresh SAs for every
  // snapshot (no sequence number or replay window carries over from another
  // run), as the key agreement hands them over: outbound kSpiOut, inbound
  // kSpiIn; *esp keeps them for the checks.
  static engine::TablesInput input(const Scenario& s, const config::Config& c,
                                   std::map<std::string, engine::OpenPort> ports,
                                   EspLine* esp = nullptr) {
    auto in = engine::TablesInput::fromConfig(c, std::move(ports), 1);
    if (s.kind == Kind::kMapped) {
      in.mapped["bench"] = {{"bench-lan", prefix("192.168.0.0/16"), prefix("100.70.0.0/16")}};
    }
    if (isEsp(s.kind)) {
      using engine::EspSa;
      const std::string line = s.kind == Kind::kEspEncap ? "peer-b/b1" : "peer-a/a1";
      const uint32_t window = config::EncryptionConfig{}.replay_window;
      engine::LineSas sas;
      sas.outbound =
          std::make_shared<EspSa>(EspSa::Direction::kOutbound, line,
                                  engine::SaMaterial{1, kSpiOut, kKeyOut, kSaltOut}, 1, window);
      sas.inbound.push_back(std::make_shared<EspSa>(EspSa::Direction::kInbound, line,
                                                    engine::SaMaterial{1, kSpiIn, kKeyIn, kSaltIn},
                                                    1, window));
      if (esp) {
        *esp = {sas.outbound, sas.inbound.front()};
      }
      in.sas[line] = sas;
    }
    return in;
  }

  Measured fibLookupOnce(bool big) {
    std::shared_ptr<const TenantFib> fib;
    uint32_t expect = 0;
    if (big) {
      if (!big_fib_) {
        // No pipeline scenario built it: the builder's routes for the bench
        // config are needed for its next hops.
        engine::TablesBuilder builder;
        const config::Config c = benchConfig(true);
        auto built =
            builder.build(engine::TablesInput::fromConfig(c, openPorts(ports_, false), 1), {});
        if (!built) {
          fail("fib-lookup: TablesBuilder: " + built.error());
        }
        bigFib(builder.rib((*built)->tenants.at(0).name)->installed());
      }
      fib = big_fib_;
      expect = big_nh_;
    } else {
      auto f = TenantFib::create("bench-1", {{prefix("10.0.0.0/8"), 0}});
      if (!f) {
        fail("fib-lookup: " + f.error());
      }
      fib = std::move(*f);
    }
    std::vector<uint64_t> samples;
    samples.reserve(bursts_);
    size_t next = 0;
    uint64_t misses = 0;
    for (uint64_t b = 0; b < kWarmupBursts + bursts_; ++b) {
      const uint64_t t0 = rte_rdtsc();
      for (unsigned i = 0; i < kBurst; ++i) {
        const uint32_t nh = fib->find4(dsts_[next].data());
        misses += nh != expect;
        next = (next + 1) & (kDestinations - 1);
      }
      const uint64_t t1 = rte_rdtsc();
      if (b >= kWarmupBursts) {
        samples.push_back(t1 - t0);
      }
    }
    if (misses) {
      fail("fib-lookup: " + std::to_string(misses) + " lookups missed or gave a wrong next hop");
    }
    return summarize(samples, kBurst);
  }

  // The MSS clamp stage alone, as the pipeline will run it per packet:
  //   if (mayBeTcpSyn(ip, len, false)) clampMss(ip, &len, capacity, false, 1400, false);
  // over bursts of 32 prepared IPv4 TCP packets (4,096 variants: addresses,
  // ports, sequence numbers), each in its own 128-byte slot.  Before each
  // burst (untimed) the next 32 variants are copied into the slots, so every
  // SYN is clamped afresh; then the bare loop (read each packet's length and
  // first byte) and the same loop with the stage are timed, each between two
  // rdtsc, on the same now-cached packets.  The figure is the difference of
  // their means per packet (bursts > 10x the median left out).
  Measured mssOnce(bool syn) {
    constexpr size_t kSlot = 128;
    constexpr uint16_t kClamp = 1400;
    const char* label = syn ? "mss-syn" : "mss-non-syn";
    std::vector<uint8_t> templates(kDestinations * kSlot);
    std::vector<uint16_t> lengths(kDestinations);
    for (size_t v = 0; v < kDestinations; ++v) {
      lengths[v] = static_cast<uint16_t>(mssPacket(syn, v, &templates[v * kSlot]));
    }
    alignas(64) uint8_t slots[kBurst][kSlot];
    size_t len[kBurst];
    size_t next = 0;
    auto fill = [&] {
      for (unsigned i = 0; i < kBurst; ++i) {
        std::memcpy(slots[i], &templates[next * kSlot], kSlot);
        len[i] = lengths[next];
        next = (next + 1) & (kDestinations - 1);
      }
    };
    // Check first: every ACK passes the pre-check untouched, every SYN comes
    // out clamped with a TCP checksum that verifies from scratch.
    for (size_t b = 0; b < kDestinations / kBurst; ++b) {
      fill();
      for (unsigned i = 0; i < kBurst; ++i) {
        const bool may = proto::mayBeTcpSyn(slots[i], len[i], false);
        if (may != syn) {
          fail(std::string(label) + ": the pre-check said " + (may ? "yes" : "no"));
        }
        if (may && (proto::clampMss(slots[i], &len[i], kSlot, false, kClamp, false) !=
                        proto::MssVerdict::kClamped ||
                    !mssChecksumsOk(slots[i], len[i], kClamp))) {
          fail(std::string(label) + ": a SYN was not clamped right");
        }
      }
    }
    std::vector<uint64_t> base, stage;
    base.reserve(bursts_);
    stage.reserve(bursts_);
    uint64_t sink = 0, clamped = 0;
    for (uint64_t b = 0; b < kWarmupBursts + bursts_; ++b) {
      fill();
      const uint64_t t0 = rte_rdtsc();
      for (unsigned i = 0; i < kBurst; ++i) {
        sink += len[i] + slots[i][0];
        asm volatile("" : "+r"(sink));
      }
      const uint64_t t1 = rte_rdtsc();
      for (unsigned i = 0; i < kBurst; ++i) {
        sink += len[i] + slots[i][0];
        if (proto::mayBeTcpSyn(slots[i], len[i], false)) {
          clamped += proto::clampMss(slots[i], &len[i], kSlot, false, kClamp, false) ==
                     proto::MssVerdict::kClamped;
        }
        asm volatile("" : "+r"(sink));
      }
      const uint64_t t2 = rte_rdtsc();
      if (b >= kWarmupBursts) {
        base.push_back(t1 - t0);
        stage.push_back(t2 - t1);
      }
    }
    if (clamped != (syn ? (kWarmupBursts + bursts_) * kBurst : 0)) {
      fail(std::string(label) + ": " + std::to_string(clamped) + " packets clamped");
    }
    mss_sink_ += sink;
    const Measured mb = summarize(base, kBurst);
    Measured m = summarize(stage, kBurst);
    m.cycles_per_packet -= mb.cycles_per_packet;
    m.outliers += mb.outliers;
    return m;
  }

  // The mapped-range stage alone, as the pipeline runs it per packet into a
  // tunnel: mapPacket() on the source, the range's counter.  Over bursts of
  // 32 IPv4 TCP ACKs from 192.168.0.0/26 (mapped to 100.70.0.0/16; 4,096
  // variants), copied into their slots before each burst (untimed) so that
  // every packet is mapped afresh; the bare loop and the loop with the stage
  // are timed on the same cached packets, as for mss-*.
  Measured mappedStageOnce() {
    constexpr size_t kSlot = 128;
    std::vector<uint8_t> templates(kDestinations * kSlot);
    std::vector<uint16_t> lengths(kDestinations);
    for (size_t v = 0; v < kDestinations; ++v) {
      lengths[v] = static_cast<uint16_t>(mssPacket(false, v, &templates[v * kSlot]));
    }
    engine::TenantMapping mapping;
    const auto real = prefix("192.168.0.0/16"), mapped = prefix("100.70.0.0/16");
    if (!mapping.out.assign({proto::PrefixRule::make(false, real.address.bytes.data(),
                                                     mapped.address.bytes.data(), 16, 0)})) {
      fail("mapped-stage: the table");
    }
    auto counters = std::make_unique<engine::WorkerCounters>();
    alignas(64) uint8_t slots[kBurst][kSlot];
    size_t len[kBurst];
    size_t next = 0;
    auto fill = [&] {
      for (unsigned i = 0; i < kBurst; ++i) {
        std::memcpy(slots[i], &templates[next * kSlot], kSlot);
        len[i] = lengths[next];
        next = (next + 1) & (kDestinations - 1);
      }
    };
    // Check first: every packet comes out from 100.70.0.x with a TCP
    // checksum that verifies from scratch.
    for (size_t b = 0; b < kDestinations / kBurst; ++b) {
      fill();
      for (unsigned i = 0; i < kBurst; ++i) {
        const auto r =
            proto::mapPacket(slots[i], len[i], false, proto::AddressField::kSource, mapping.out);
        const uint8_t* p = slots[i];
        const uint32_t sum = proto::checksumAdd(
            proto::Bytes(reinterpret_cast<const std::byte*>(p + 20), len[i] - 20),
            proto::pseudoHeaderV4(p + 12, p + 16, proto::kIpProtoTcp,
                                  static_cast<uint16_t>(len[i] - 20)));
        if (!r.outer || p[12] != 100 || p[13] != 70 || proto::checksumFold(sum) != 0xffff ||
            proto::internetChecksum(proto::Bytes(reinterpret_cast<const std::byte*>(p), 20)) != 0) {
          fail("mapped-stage: a packet was not mapped right");
        }
      }
    }
    std::vector<uint64_t> base, stage;
    base.reserve(bursts_);
    stage.reserve(bursts_);
    uint64_t sink = 0;
    for (uint64_t b = 0; b < kWarmupBursts + bursts_; ++b) {
      fill();
      const uint64_t t0 = rte_rdtsc();
      for (unsigned i = 0; i < kBurst; ++i) {
        sink += len[i] + slots[i][0];
        asm volatile("" : "+r"(sink));
      }
      const uint64_t t1 = rte_rdtsc();
      for (unsigned i = 0; i < kBurst; ++i) {
        sink += len[i] + slots[i][0];
        const auto r =
            proto::mapPacket(slots[i], len[i], false, proto::AddressField::kSource, mapping.out);
        if (r.outer) {
          counters->mapped_out[r.outer->slot].add();
        }
        asm volatile("" : "+r"(sink));
      }
      const uint64_t t2 = rte_rdtsc();
      if (b >= kWarmupBursts) {
        base.push_back(t1 - t0);
        stage.push_back(t2 - t1);
      }
    }
    if (counters->mapped_out[0].get() != (kWarmupBursts + bursts_) * kBurst) {
      fail("mapped-stage: " + std::to_string(counters->mapped_out[0].get()) + " packets mapped");
    }
    mss_sink_ += sink;
    const Measured mb = summarize(base, kBurst);
    Measured m = summarize(stage, kBurst);
    m.cycles_per_packet -= mb.cycles_per_packet;
    m.outliers += mb.outliers;
    return m;
  }

  // An IPv4 TCP packet (variant v) at p: a SYN with Linux's options (MSS
  // 1460, SACK permitted, timestamps, NOP, window scale), or an ACK with
  // NOP NOP timestamps and 12 bytes of data.  Checksums computed.  Returns
  // its length.
  static size_t mssPacket(bool syn, size_t v, uint8_t* p) {
    static const uint8_t kSynOptions[] = {2, 4, 0x05, 0xb4, 4, 2, 8, 10, 0, 0,
                                          0, 1, 0,    0,    0, 0, 1, 3,  3, 7};
    static const uint8_t kAckOptions[] = {1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2};
    const uint8_t* options = syn ? kSynOptions : kAckOptions;
    const size_t olen = syn ? sizeof kSynOptions : sizeof kAckOptions;
    const size_t data = syn ? 0 : 12;
    const size_t tcp_len = 20 + olen + data;
    const size_t total = 20 + tcp_len;
    std::memset(p, 0, total);
    p[0] = 0x45;
    p[2] = static_cast<uint8_t>(total >> 8);
    p[3] = static_cast<uint8_t>(total);
    p[6] = 0x40;  // DF
    p[8] = 64;
    p[9] = proto::kIpProtoTcp;
    const uint8_t src[4] = {192, 168, 0, static_cast<uint8_t>(10 + (v & 0x3f))};
    const uint8_t dst[4] = {10, static_cast<uint8_t>(v >> 8), static_cast<uint8_t>(v), 1};
    std::memcpy(p + 12, src, 4);
    std::memcpy(p + 16, dst, 4);
    const uint16_t ipck =
        proto::internetChecksum(proto::Bytes(reinterpret_cast<const std::byte*>(p), 20));
    p[10] = static_cast<uint8_t>(ipck >> 8);
    p[11] = static_cast<uint8_t>(ipck);
    uint8_t* t = p + 20;
    t[0] = static_cast<uint8_t>((1024 + v) >> 8);
    t[1] = static_cast<uint8_t>(1024 + v);
    t[2] = 0x01;  // 443
    t[3] = 0xbb;
    t[4] = static_cast<uint8_t>(v * 2654435761u >> 24);
    t[5] = static_cast<uint8_t>(v * 40503u);
    t[12] = static_cast<uint8_t>((20 + olen) / 4 << 4);
    t[13] = syn ? proto::kTcpSyn : proto::kTcpAck;
    t[14] = 0xfa;
    t[15] = 0xf0;
    std::memcpy(t + 20, options, olen);
    for (size_t i = 0; i < data; ++i) {
      t[20 + olen + i] = static_cast<uint8_t>(v + i);
    }
    const uint16_t ck = proto::internetChecksum(
        proto::Bytes(reinterpret_cast<const std::byte*>(t), tcp_len),
        proto::pseudoHeaderV4(src, dst, proto::kIpProtoTcp, static_cast<uint16_t>(tcp_len)));
    t[16] = static_cast<uint8_t>(ck >> 8);
    t[17] = static_cast<uint8_t>(ck);
    return total;
  }

  // The clamped SYN: MSS mss and a TCP checksum that verifies from scratch.
  static bool mssChecksumsOk(const uint8_t* p, size_t len, uint16_t mss) {
    const uint8_t* t = p + 20;
    const size_t tcp_len = len - 20;
    const uint32_t sum = proto::checksumAdd(
        proto::Bytes(reinterpret_cast<const std::byte*>(t), tcp_len),
        proto::pseudoHeaderV4(p + 12, p + 16, proto::kIpProtoTcp, static_cast<uint16_t>(tcp_len)));
    return proto::checksumFold(sum) == 0xffff && (t[22] << 8 | t[23]) == mss;
  }

  void bigFib(const std::vector<TenantFib::Route>& base) {
    if (big_fib_) {
      return;
    }
    // Every random prefix goes where 10.0.0.0/8 goes.
    const auto wide = prefix("10.0.0.0/8");
    auto it =
        std::find_if(base.begin(), base.end(), [&](const auto& r) { return r.prefix == wide; });
    if (it == base.end()) {
      fail("the builder's routes lack 10.0.0.0/8");
    }
    big_nh_ = it->next_hop;
    big_base_ = base;
    std::vector<TenantFib::Route> routes = base;
    routes.reserve(base.size() + big_.prefixes.size());
    for (const auto& [a, len] : big_.prefixes) {
      TenantFib::Route r;
      r.prefix.address.family = config::Family::V4;
      r.prefix.address.bytes = {static_cast<uint8_t>(a >> 24), static_cast<uint8_t>(a >> 16),
                                static_cast<uint8_t>(a >> 8), static_cast<uint8_t>(a)};
      r.prefix.length = len;
      r.next_hop = big_nh_;
      routes.push_back(r);
    }
    note("building the " + std::to_string(routes.size()) + "-route FIB ...");
    const size_t before = heapBytes();
    const auto t0 = std::chrono::steady_clock::now();
    auto fib = TenantFib::create("bench-big", routes);
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!fib) {
      fail("big FIB: " + fib.error());
    }
    big_fib_ = std::move(*fib);
    big_build_s_ = secs;
    big_bytes_ = heapBytes() - before;
    char buf[160];
    std::snprintf(buf, sizeof buf, "  built in %.1f s, %.0f MiB", secs,
                  static_cast<double>(big_bytes_) / (1 << 20));
    note(buf);
  }

  void verify(const Scenario& s, size_t size, const std::string& label, const ForwardingTables& t,
              const Templates& tpl, const RingPort& rx) {
    auto counters = std::make_unique<engine::WorkerCounters>();
    std::unique_ptr<EspSealer> sealer;
    if (s.kind == Kind::kEspDecap) {
      sealer = std::make_unique<EspSealer>(tpl);
    }
    Feeder feed(pool_, rx, tpl, -1, sealer.get());
    {
      engine::Pipeline p(0, pool_, counters.get(), &health_);
      rte_mbuf* pkts[kBurst];
      for (uint64_t b = 0; b < kVerifyBursts; ++b) {
        feed.fill();
        const uint16_t n = rte_eth_rx_burst(rx.id, 0, pkts, kBurst);
        p.process(t, pkts, n);
        p.flush();
      }
    }
    checkCounters(label + " (capture)", *counters, s, feed.fed());
    const RingPort& out = s.tunnel_out ? ports_.cap_wan : ports_.cap_lan;
    const RingPort& other = s.tunnel_out ? ports_.cap_lan : ports_.cap_wan;
    if (rte_ring_count(other.ring) != 0) {
      fail(label + ": packets left through the wrong port");
    }
    std::vector<rte_mbuf*> got(kVerifyBursts * kBurst + 1);
    const unsigned n = rte_ring_dequeue_burst(out.ring, reinterpret_cast<void**>(got.data()),
                                              static_cast<unsigned>(got.size()), nullptr);
    if (n != kVerifyBursts * kBurst) {
      rte_pktmbuf_free_bulk(got.data(), n);
      fail(label + ": " + std::to_string(n) + " packets came out of " +
           std::to_string(kVerifyBursts * kBurst));
    }
    ExpectTunnel et;
    et.dst_mac = kWan1RouterMac;
    et.src_mac = kWan1Mac;
    et.local = kWan1Address;
    et.remote = kPeerBVtep;
    et.ttl = 64;
    et.vni = kVni;
    et.inner_dst = kPeerBInnerMac;
    et.inner_src = kWan1Mac;
    ExpectLan el{kLanRouterMac, kLan1Mac};
    // esp-encap: peer-b's side of our outbound SA, to open what we sent it.
    std::unique_ptr<PeerSa> peer;
    if (s.kind == Kind::kEspEncap) {
      peer = std::make_unique<PeerSa>(kKeyOut, kSaltOut, kSpiOut);
    }
    std::vector<uint8_t> plain;
    for (unsigned i = 0; i < n; ++i) {
      rte_mbuf* m = got[i];
      const auto* f = rte_pktmbuf_mtod(m, const uint8_t*);
      size_t len = m->data_len;
      std::string err = rte_pktmbuf_is_contiguous(m) ? "" : "segmented output";
      if (err.empty() && s.kind == Kind::kEspEncap) {
        // ESP to peer-b with sequence numbers 1, 2, ...: checked and opened
        // into the VXLAN frame it carries, which is checked as encap's are.
        err = openEspFrame(f, len, *peer, i + 1, et, &plain);
        f = plain.data();
        len = plain.size();
      }
      if (err.empty()) {
        err = s.tunnel_out ? checkTunnel(f, len, size, dsts_[i % kDestinations], et)
                           : checkLan(f, len, size, dsts_[i % kDestinations], el);
      }
      if (err.empty() && s.kind == Kind::kMapped) {
        err = checkSourceAndUdpChecksum(f, len, kVxlanOverhead, kMappedSender);
      }
      // The payload (what follows the inner UDP header) arrives unchanged.
      const size_t payload = tpl.base.size() - tpl.hdr - tpl.trailer;
      if (err.empty() && (len < payload || std::memcmp(f + len - payload, tpl.base.data() + tpl.hdr,
                                                       payload) != 0)) {
        err = "payload damaged";
      }
      if (!err.empty()) {
        rte_pktmbuf_free_bulk(got.data(), n);
        fail(label + ": output packet " + std::to_string(i) + ": " + err);
      }
    }
    rte_pktmbuf_free_bulk(got.data(), n);
    checkMempool(label + " (capture)");
  }

  void checkCounters(const std::string& label, const engine::WorkerCounters& c, const Scenario& s,
                     uint64_t fed) {
    for (size_t i = 0; i < engine::kDropReasonCount; ++i) {
      if (uint64_t d = c.drops[i].get(); d != 0) {
        fail(label + ": the pipeline dropped " + std::to_string(d) + " of " + std::to_string(fed) +
             " packets as " + std::string(engine::kDropReasons[i].name));
      }
    }
    const auto& rx = s.wan_in ? c.wan_rx : c.lan_rx;
    const auto& tx = s.tunnel_out ? c.wan_tx : c.lan_tx;
    if (rx.packets.get() != fed || tx.packets.get() != fed) {
      fail(label + ": the pipeline received " + std::to_string(rx.packets.get()) + " and sent " +
           std::to_string(tx.packets.get()) + " of " + std::to_string(fed) + " packets");
    }
    const uint64_t mapped = c.mapped_out[0].get();
    if (mapped != (s.kind == Kind::kMapped ? fed : 0)) {
      fail(label + ": " + std::to_string(mapped) + " of " + std::to_string(fed) +
           " packets counted as mapped");
    }
  }

  void checkMempool(const std::string& label) {
    if (unsigned n = rte_mempool_avail_count(pool_); n != pool_size_) {
      fail(label + ": " + std::to_string(pool_size_ - n) + " mbufs were not returned");
    }
  }

  rte_mempool* pool_;
  Ports& ports_;
  uint64_t bursts_;
  size_t big_n_;
  unsigned pool_size_ = 0;
  engine::LiveState health_;
  BigRoutes big_;
  std::vector<Ip4> dsts_;
  std::shared_ptr<const TenantFib> big_fib_;
  std::vector<TenantFib::Route> big_base_;
  uint32_t big_nh_ = 0;
  double big_build_s_ = 0;
  size_t big_bytes_ = 0;
  size_t builder_bytes_ = 0;
  uint64_t mss_sink_ = 0;  // keeps the timed loops' results alive
};

// The core clock relative to the TSC: a chain of dependent adds takes one
// core cycle per add.  On a shared VM this moves with the host's load (an
// SMT sibling, frequency), which is why rounds are repeated.
double coreSpeed() {
#if defined(__x86_64__)
  constexpr uint64_t kIterations = 2'000'000;  // about 3 ms
  uint64_t x = 0;
  const uint64_t t0 = rte_rdtsc();
  for (uint64_t i = 0; i < kIterations; ++i) {
    asm volatile("add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0" : "+r"(x));
  }
  const uint64_t t1 = rte_rdtsc();
  return 4.0 * static_cast<double>(kIterations) / static_cast<double>(t1 - t0);
#else
  return 0;
#endif
}

// Every measurement once per round, rounds repeated: a slow minute on the
// shared host then hits every scenario alike.  Each row is the median of its
// repetitions; "above floor" subtracts the median I/O floor of its size.
struct Job {
  const Scenario* scenario;
  size_t size;  // 0: no packets (fib-lookup)
  bool big;
  Row row;
};

std::vector<Row> runRounds(Bench& bench, std::vector<Job>& jobs, unsigned repeat, size_t big_n,
                           std::vector<double>* speeds) {
  for (Job& j : jobs) {
    j.row.scenario = j.scenario->name;
    j.row.packet_size = j.size;
    const Kind k = j.scenario->kind;
    j.row.routes =
        k == Kind::kFloor || k == Kind::kMssNonSyn || k == Kind::kMssSyn || k == Kind::kMappedStage
            ? 0
        : j.big ? big_n
                : 1;
    j.row.target = j.scenario->target;
  }
  for (int i = 0; i < 50; ++i) {
    coreSpeed();  // about 0.15 s to bring the core's clock up
  }
  for (unsigned round = 0; round < repeat; ++round) {
    std::string line;
    speeds->push_back(coreSpeed());
    for (Job& j : jobs) {
      Measured m = bench.once(*j.scenario, j.size, j.big);
      j.row.repetitions.push_back(m.cycles_per_packet);
      j.row.outliers += m.outliers;
      line += " " + fmt("%.0f", m.cycles_per_packet);
    }
    speeds->push_back(coreSpeed());
    note("round " + std::to_string(round + 1) + "/" + std::to_string(repeat) + " (core clock " +
         fmt("%.2f", speeds->at(speeds->size() - 2)) + ".." + fmt("%.2f", speeds->back()) +
         " x TSC):" + line);
  }
  const uint64_t hz = rte_get_tsc_hz();
  std::map<size_t, double> floor;
  std::vector<Row> rows;
  for (Job& j : jobs) {
    std::vector<double> sorted = j.row.repetitions;
    std::sort(sorted.begin(), sorted.end());
    j.row.cycles = sorted[sorted.size() / 2];
    j.row.min = sorted.front();
    j.row.max = sorted.back();
    j.row.mpps = static_cast<double>(hz) / j.row.cycles / 1e6;
    if (j.scenario->kind == Kind::kFloor) {
      floor[j.size] = j.row.cycles;
    }
  }
  for (Job& j : jobs) {
    switch (j.scenario->kind) {
      case Kind::kFloor:
        j.row.above = 0;
        break;
      case Kind::kFibLookup:
      case Kind::kMssNonSyn:
      case Kind::kMssSyn:
      case Kind::kMappedStage:
        j.row.above = j.row.cycles;  // no I/O: the floor is 0
        break;
      default:
        j.row.above = j.row.cycles - floor.at(j.size);
    }
    rows.push_back(j.row);
  }
  return rows;
}

// ------------------------------------------------------------------ output

bool isEspRow(const Row& r) {
  return r.scenario.rfind("esp-", 0) == 0;
}

void printTable(const std::vector<Row>& rows, uint64_t tsc_hz, uint64_t packets, unsigned repeat,
                bool huge, const std::vector<double>& speeds) {
  std::printf(
      "mcgw-bench: median of %u rounds x %llu timed packets per row, bursts of %u, TSC %.3f GHz, "
      "%s\n",
      repeat, static_cast<unsigned long long>(packets), kBurst, static_cast<double>(tsc_hz) / 1e9,
      huge ? "hugepages" : "--no-huge (4 KiB pages)");
  if (!speeds.empty() && speeds.front() > 0) {
    auto [lo, hi] = std::minmax_element(speeds.begin(), speeds.end());
    std::printf("core clock during the rounds: %.2f..%.2f x TSC\n", *lo, *hi);
    if (*lo < 0.8 * *hi) {
      std::printf(
          "WARNING: the core clock moved by more than 20%% during the run (a loaded host?): "
          "rerun on a quiet machine before comparing figures\n");
    }
  }
  std::printf("%-11s %5s %8s %10s %13s %12s %7s  %s\n", "scenario", "size", "routes", "cycles/pkt",
              "(min..max)", "above floor", "Mpps", "target (above floor)");
  for (const Row& r : rows) {
    std::string target = "-";
    if (r.target) {
      target = "<= " + fmt("%.0f", *r.target) + (r.above <= *r.target ? "  met" : "  missed");
    }
    const std::string range = fmt("%.0f", r.min) + ".." + fmt("%.0f", r.max);
    std::printf("%-11s %5s %8s %10.1f %13s %12s %7.2f  %s\n", r.scenario.c_str(),
                r.packet_size ? std::to_string(r.packet_size).c_str() : "-",
                r.routes ? std::to_string(r.routes).c_str() : "-", r.cycles, range.c_str(),
                r.scenario == "io-floor" ? "-" : fmt("%.1f", r.above).c_str(), r.mpps,
                target.c_str());
  }
}

// mapped against encap, round by round (the two run back to back in each
// round): the cost of the mapped-range stage (issue 15: <= 15 cycles/packet).
void printMappedCost(const std::vector<Row>& rows) {
  for (const Row& m : rows) {
    if (m.scenario != "mapped") {
      continue;
    }
    for (const Row& e : rows) {
      if (e.scenario != "encap" || e.packet_size != m.packet_size || e.routes != m.routes ||
          e.repetitions.size() != m.repetitions.size()) {
        continue;
      }
      std::vector<double> d;
      for (size_t i = 0; i < m.repetitions.size(); ++i) {
        d.push_back(m.repetitions[i] - e.repetitions[i]);
      }
      std::sort(d.begin(), d.end());
      const double median = d[d.size() / 2];
      std::printf(
          "mapped - encap, %zu B, %zu route(s): %+.1f cycles/packet (median of %zu rounds, "
          "%+.1f..%+.1f), target <= 15  %s\n",
          m.packet_size, m.routes, median, d.size(), d.front(), d.back(),
          median <= 15 ? "met" : "missed");
    }
  }
}

// ESP (issue 18): what one core carries through an encrypted line, and
// what ESP adds to the plain scenario of the same size, round by round
// (when both ran).
double gbitPerSecond(size_t frame, double cycles, uint64_t tsc_hz) {
  return static_cast<double>(frame) * 8 * static_cast<double>(tsc_hz) / cycles / 1e9;
}

void printEsp(const std::vector<Row>& rows, uint64_t tsc_hz) {
  if (std::none_of(rows.begin(), rows.end(), [](const Row& r) { return isEspRow(r); })) {
    return;
  }
  std::printf(
      "ESP (issue 18), AES-256-GCM through crypto::Gcm, engine %s; Gbit/s per core = inner "
      "frame bytes (the size column: Ethernet header, no FCS) x 8 x TSC Hz / cycles per packet\n",
      crypto::engineName());
  std::printf("%-11s %5s %10s %12s %22s %22s  %s\n", "scenario", "size", "cycles/pkt",
              "above floor", "ESP - plain (min..max)", "Gbit/s (min..max)", "target");
  for (const Row& r : rows) {
    if (!isEspRow(r)) {
      continue;
    }
    std::string cost = "-";
    for (const Row& p : rows) {
      if (p.scenario != r.scenario.substr(4) || p.packet_size != r.packet_size ||
          p.routes != r.routes || p.repetitions.size() != r.repetitions.size()) {
        continue;
      }
      std::vector<double> d;
      for (size_t i = 0; i < r.repetitions.size(); ++i) {
        d.push_back(r.repetitions[i] - p.repetitions[i]);
      }
      std::sort(d.begin(), d.end());
      cost = fmt("%+.0f", d[d.size() / 2]) + " (" + fmt("%+.0f", d.front()) + ".." +
             fmt("%+.0f", d.back()) + ")";
    }
    const double gbps = gbitPerSecond(r.packet_size, r.cycles, tsc_hz);
    const std::string range = fmt("%.2f", gbps) + " (" +
                              fmt("%.2f", gbitPerSecond(r.packet_size, r.max, tsc_hz)) + ".." +
                              fmt("%.2f", gbitPerSecond(r.packet_size, r.min, tsc_hz)) + ")";
    std::string target = "-";
    if (r.packet_size == kEspTargetSize) {
      target =
          ">= " + fmt("%.0f", kEspTargetGbps) + (gbps >= kEspTargetGbps ? "  met" : "  missed");
    }
    std::printf("%-11s %5zu %10.1f %12.1f %22s %22s  %s\n", r.scenario.c_str(), r.packet_size,
                r.cycles, r.above, cost.c_str(), range.c_str(), target.c_str());
  }
}

// The large table against one route, round by round (issue 16: at most
// +25 cycles/packet with 1,000,000 routes and 4,096 random destinations).
void printRouteScaleCost(const std::vector<Row>& rows) {
  for (const Row& big : rows) {
    if (big.routes <= 1 || big.scenario == "fib-lookup") {
      continue;
    }
    for (const Row& one : rows) {
      if (one.scenario != big.scenario || one.packet_size != big.packet_size || one.routes != 1 ||
          one.repetitions.size() != big.repetitions.size()) {
        continue;
      }
      std::vector<double> d;
      for (size_t i = 0; i < big.repetitions.size(); ++i) {
        d.push_back(big.repetitions[i] - one.repetitions[i]);
      }
      std::sort(d.begin(), d.end());
      const double median = d[d.size() / 2];
      std::printf(
          "%s, %zu B: %zu routes - 1 route: %+.1f cycles/packet (median of %zu rounds, "
          "%+.1f..%+.1f), target <= 25  %s\n",
          big.scenario.c_str(), big.packet_size, big.routes, median, d.size(), d.front(), d.back(),
          median <= 25 ? "met" : "missed");
    }
  }
}

// --workers: per scenario and worker count, the rounds' figures.
struct ScaleRow {
  std::string scenario;
  size_t packet_size = 0;
  unsigned workers = 0;
  std::vector<double> mean_cycles;  // per round: the mean over workers of cycles per packet
  std::vector<double> mpps;         // per round: the sum over workers of TSC Hz / cycles
};

template <typename Selected>
std::vector<ScaleRow> runScale(Bench& bench, const Selected& selected, size_t size,
                               unsigned workers, unsigned repeat) {
  std::vector<ScaleRow> rows;
  for (const auto& s : kScenarios) {
    if ((s.kind != Kind::kRoute && s.kind != Kind::kDecap && s.kind != Kind::kEncap &&
         s.kind != Kind::kFull) ||
        !selected(s)) {
      continue;
    }
    for (unsigned w = 1; w <= workers; ++w) {
      rows.push_back({s.name, size, w, {}, {}});
    }
  }
  const double hz = static_cast<double>(rte_get_tsc_hz());
  for (unsigned round = 0; round < repeat; ++round) {
    std::string line;
    for (ScaleRow& r : rows) {
      const Scenario* s = nullptr;
      for (const auto& sc : kScenarios) {
        if (r.scenario == sc.name) {
          s = &sc;
        }
      }
      const std::vector<Measured> m = bench.scaleOnce(*s, r.packet_size, r.workers);
      double sum = 0, mpps = 0;
      for (const Measured& x : m) {
        sum += x.cycles_per_packet;
        mpps += hz / x.cycles_per_packet / 1e6;
      }
      r.mean_cycles.push_back(sum / static_cast<double>(m.size()));
      r.mpps.push_back(mpps);
      line += " " + fmt("%.1f", mpps);
    }
    note("scale round " + std::to_string(round + 1) + "/" + std::to_string(repeat) +
         " (Mpps):" + line);
  }
  return rows;
}

void printScale(const std::vector<ScaleRow>& rows, uint64_t tsc_hz) {
  if (rows.empty()) {
    return;
  }
  std::printf(
      "scale-out: workers on lcores 0..N-1 at once, each timed as one worker (busy cycles); "
      "Mpps = sum over workers of TSC Hz (%.3f GHz) / cycles per packet; median of rounds\n",
      static_cast<double>(tsc_hz) / 1e9);
  std::printf("%-11s %5s %8s %14s %18s %8s\n", "scenario", "size", "workers", "cycles/pkt",
              "Mpps (min..max)", "x 1");
  std::map<std::string, double> one;
  for (const ScaleRow& r : rows) {
    auto median = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      return v[v.size() / 2];
    };
    const double mpps = median(r.mpps);
    if (r.workers == 1) {
      one[r.scenario] = mpps;
    }
    auto [lo, hi] = std::minmax_element(r.mpps.begin(), r.mpps.end());
    const std::string range =
        fmt("%.1f", mpps) + " (" + fmt("%.1f", *lo) + ".." + fmt("%.1f", *hi) + ")";
    std::printf("%-11s %5zu %8u %14.1f %18s %8.2f\n", r.scenario.c_str(), r.packet_size, r.workers,
                median(r.mean_cycles), range.c_str(),
                one[r.scenario] > 0 ? mpps / one[r.scenario] : 0);
  }
}

void printJson(const std::vector<Row>& rows, uint64_t tsc_hz) {
  auto round1 = [](double v) {
    return static_cast<double>(static_cast<int64_t>(v * 10 + (v < 0 ? -0.5 : 0.5))) / 10;
  };
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const Row& r : rows) {
    out.push_back(
        {{"scenario", r.scenario},
         {"packet_size", r.packet_size},
         {"routes", r.routes},
         {"cycles_per_packet", round1(r.cycles)},
         {"cycles_above_floor", round1(r.above)},
         {"mpps", static_cast<double>(static_cast<int64_t>(r.mpps * 1000 + 0.5)) / 1000}});
    if (isEspRow(r)) {  // issue 18: inner frame bytes x 8 per second, one core
      out.back()["gbit_per_s"] = round1(gbitPerSecond(r.packet_size, r.cycles, tsc_hz) * 10) / 10;
    }
  }
  std::printf("%s\n", out.dump(2).c_str());
}

bool hugepagesAvailable(unsigned mb) {
  std::ifstream in("/proc/meminfo");
  std::string key;
  uint64_t free_pages = 0, page_kb = 0;
  while (in >> key) {
    uint64_t v = 0;
    in >> v;
    if (key == "HugePages_Free:") {
      free_pages = v;
    } else if (key == "Hugepagesize:") {
      page_kb = v;
    }
    in.ignore(256, '\n');
  }
  return free_pages * page_kb >= static_cast<uint64_t>(mb) * 1024;
}

}  // namespace
}  // namespace mcgw::bench

int main(int argc, char** argv) {
  using namespace mcgw::bench;
  CLI::App app{"mcgw-bench: memory-only benchmark of the mcgw fast path (see docs/performance.md)"};
  uint64_t packets = 500'000;
  unsigned repeat = 5;
  std::vector<std::string> scenarios{"all"};
  std::vector<size_t> sizes = {64, 1400};
  bool json = false;
  bool hugepages = false;
  size_t big_routes = 1'000'000;
  uint64_t seed = 1;
  unsigned workers = 1;
  std::vector<std::string> names{"all", "mss", "fib-load", "fib-churn", "meter", "shaper"};
  for (const auto& p : mcgw::bench::policyScenarioNames()) {
    names.push_back(p);
  }
  for (const auto& p : mcgw::bench::pipelinePolicyScenarioNames()) {
    names.push_back(p);
  }
  RouteScaleOptions scale;
  std::vector<ScaleRow> scale_rows;
  for (const auto& s : kScenarios) {
    names.push_back(s.name);
  }
  app.add_option("--packets", packets,
                 "timed packets per repetition of a measurement (after a 32Ki-packet warm-up)")
      ->check(CLI::Range(uint64_t{kBurst}, uint64_t{1} << 40))
      ->capture_default_str();
  app.add_option("--repeat", repeat, "repetitions of each measurement; the median is reported")
      ->check(CLI::Range(1u, 101u))
      ->capture_default_str();
  std::string help =
      "scenarios (repeat the option or separate them by commas): all, mss (both mss-*), or any "
      "of these (io-floor always runs; mapped runs encap too):";
  for (const auto& s : kScenarios) {
    help += std::string("\n  ") + s.name + ": " + s.what;
  }
  help +=
      "\n  fib-load: 1M IPv4 + 200k IPv6 routes into one tenant (create, then apply): s and MiB"
      "\n  fib-churn: route changes per second applied while a second thread looks up"
      "\n  meter: tenant bandwidth metering and DSCP remarking per packet against meter-off "
      "(runs alone)"
      "\n  shaper: a packet through a shaped line's priority queues, rte_sched against a ring "
      "per priority with a token bucket (runs alone)"
      "\n  policy-0, policy-1k, policy-10k: fillKey4 alone, and with classify4 over 1,000 and "
      "10,000 policy rules (rte_acl), bursts of 32, --repeat rounds interleaved (run without "
      "the other scenarios)"
      "\n  policy-cache-1k, policy-cache-10k: the same through a warm per-worker verdict cache "
      "(4,096 flows again and again)"
      "\n  policy-miss-1k, policy-miss-10k: through the verdict cache, every packet a new flow "
      "(rte_acl + the cache's own cost)"
      "\n  pipeline-policy-0, pipeline-policy-1k, pipeline-policy-10k, pipeline-meter, "
      "pipeline-meter-red: the encap scenario through the whole pipeline with no policy (always "
      "runs), 1,000 or 10,000 rules, a meter all green, a meter a third red; --repeat rounds "
      "interleaved, --sizes (run without the other scenarios)"
      "\n  (fib-load and fib-churn run alone, not in all; esp-encap and esp-decap run only when "
      "named, with 1 route)";
  app.add_option("--scenario", scenarios, help)
      ->delimiter(',')
      ->check(CLI::IsMember(names))
      ->capture_default_str();
  app.add_option("--sizes", sizes, "inner frame sizes in bytes (Ethernet header, no FCS)")
      ->delimiter(',')
      ->check(CLI::Range(size_t{64}, size_t{1450}))
      ->capture_default_str();
  app.add_flag("--json", json, "print the results as JSON (progress goes to stderr)");
  app.add_option("--workers", workers,
                 "also run route, decap, encap and full (first size, 1 route) on 1..N workers at "
                 "once, one lcore each, and print how packets per second grow")
      ->check(CLI::Range(1u, 16u))
      ->capture_default_str();
  app.add_flag("--hugepages", hugepages, "use hugepages if enough are free (else --no-huge)");
  bool checksum_good = false;
  app.add_flag("--rx-checksum-good", checksum_good,
               "mark every received packet's IPv4 header checksum as checked by the port (decap "
               "then skips its own check)");
  app.add_option("--big-routes", big_routes,
                 "routes of the large table (random /24../32 in 10.0.0.0/8); 0: skip it")
      ->check(CLI::Range(size_t{0}, size_t{4'000'000}))
      ->capture_default_str();
  app.add_option("--seed", seed, "random seed of routes and destinations")->capture_default_str();
  app.add_option("--routes4", scale.routes4, "fib-load/fib-churn: IPv4 routes")
      ->capture_default_str();
  app.add_option("--routes6", scale.routes6, "fib-load/fib-churn: IPv6 routes")
      ->capture_default_str();
  app.add_option("--churn-batch", scale.batch, "fib-churn: changes per apply()")
      ->check(CLI::Range(size_t{1}, size_t{1'000'000}))
      ->capture_default_str();
  app.add_option("--churn-seconds", scale.churn_seconds, "fib-churn: how long to change routes")
      ->capture_default_str();
  app.add_option("--flow-sampling", flow_sampling,
                 "flow audit: the timed runs sample 1 packet in N into a ring (0: off), as "
                 "flow-audit.sampling does in mcgwd")
      ->check(CLI::Range(0u, 1000000u))
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  if (checksum_good) {
    rx_offload_flags = RTE_MBUF_F_RX_IP_CKSUM_GOOD;
    rx_packet_type = RTE_PTYPE_L2_ETHER | RTE_PTYPE_L3_IPV4 | RTE_PTYPE_L4_UDP;
  }
  scale.seed = seed;
  auto has = [&](const std::string& name) {
    return std::find(scenarios.begin(), scenarios.end(), name) != scenarios.end();
  };
  const bool route_scale = has("fib-load") || has("fib-churn");
  if (has("meter") && scenarios.size() != 1) {
    std::fprintf(stderr, "mcgw-bench: meter runs alone\n");
    return 2;
  }
  if (has("shaper") && scenarios.size() != 1) {
    std::fprintf(stderr, "mcgw-bench: shaper runs alone\n");
    return 2;
  }
  const bool policy = std::any_of(scenarios.begin(), scenarios.end(), isPolicyScenario);
  if (policy && !std::all_of(scenarios.begin(), scenarios.end(), isPolicyScenario)) {
    std::fprintf(stderr, "mcgw-bench: the policy scenarios run without the others\n");
    return 2;
  }
  const bool pipeline_policy =
      std::any_of(scenarios.begin(), scenarios.end(), isPipelinePolicyScenario);
  if (pipeline_policy &&
      !std::all_of(scenarios.begin(), scenarios.end(), isPipelinePolicyScenario)) {
    std::fprintf(stderr, "mcgw-bench: the pipeline-policy scenarios run without the others\n");
    return 2;
  }
  if (route_scale && scenarios.size() != 1) {
    std::fprintf(stderr, "mcgw-bench: fib-load and fib-churn run alone\n");
    return 2;
  }
  const std::string& scenario = scenarios.front();
  const unsigned memory_mb = kMemoryMb;

  if (hugepages && !hugepagesAvailable(memory_mb)) {
    note("mcgw-bench: fewer than " + std::to_string(memory_mb) +
         " MiB of free hugepages: running with --no-huge");
    hugepages = false;
  }
  std::vector<std::string> eal{"mcgw-bench",
                               "-l",
                               workers == 1 ? "0" : "0-" + std::to_string(workers - 1),
                               "-m",
                               std::to_string(memory_mb),
                               "--no-pci",
                               "--no-telemetry",
                               "--vdev",
                               "net_null0",
                               "--vdev",
                               "net_null1",
                               "--log-level=*:warning",
                               "--file-prefix",
                               "mcgw-bench-" + std::to_string(getpid())};
  if (hugepages) {
    eal.push_back("--in-memory");
  } else {
    eal.insert(eal.end(), {"--no-huge", "--no-shconf"});
  }
  std::vector<char*> eal_argv;
  for (auto& a : eal) {
    eal_argv.push_back(a.data());
  }
  eal_argv.push_back(nullptr);
  if (rte_eal_init(static_cast<int>(eal.size()), eal_argv.data()) < 0) {
    fail(std::string("EAL initialisation failed: ") + rte_strerror(rte_errno));
  }
  // The ESP scenarios measure the AES-GCM engine the daemon's workers use:
  // chosen as Eal::init does (MCGW_CRYPTO_ENGINE picks one).
  const bool esp_selected = has("esp-encap") || has("esp-decap");
  if (esp_selected && !route_scale) {
    const mcgw::crypto::EngineChoice choice = mcgw::crypto::initEngine();
    note(std::string("mcgw-bench: AES-GCM engine ") + mcgw::crypto::engineName() +
         (choice.reason.empty() ? "" : " (" + choice.reason + ")"));
  }
  if (policy) {
    policyBench({scenarios, packets, repeat, seed});
    rte_eal_cleanup();
    return 0;
  }
  if (pipeline_policy) {
    pipelinePolicyBench({scenarios, packets, repeat, sizes, seed});
    rte_eal_cleanup();
    return 0;
  }
  if (has("shaper")) {
    shaperBench({packets, repeat});
    rte_eal_cleanup();
    return 0;
  }
  if (has("meter")) {
    MeterBenchOptions mo;
    mo.packets = packets;
    mo.rounds = repeat;
    mo.seed = seed;
    meterBench(mo);
    rte_eal_cleanup();
    return 0;
  }
  if (route_scale) {
    std::printf("mcgw-bench %s: EAL -m %u, %s\n", scenario.c_str(), memory_mb,
                hugepages ? "hugepages" : "--no-huge (4 KiB pages)");
    (scenario == "fib-load" ? fibLoad : fibChurn)(scale);
    rte_eal_cleanup();
    return 0;
  }
  rte_mempool* pool = rte_pktmbuf_pool_create(
      "bench_mbufs", kMbufs, 256, 0, RTE_MBUF_DEFAULT_BUF_SIZE, static_cast<int>(rte_socket_id()));
  if (!pool) {
    fail(std::string("cannot create the mempool: ") + rte_strerror(rte_errno));
  }
  std::vector<Row> rows;
  std::vector<double> speeds;
  double big_build_s = 0;
  size_t big_bytes = 0, builder_bytes = 0;
  const auto started = std::chrono::steady_clock::now();
  {
    Ports ports;
    ports.rx_lan = ringPort("bench_rx_lan", pool);
    ports.rx_wan = ringPort("bench_rx_wan", pool);
    ports.cap_lan = ringPort("bench_cap_lan", pool);
    ports.cap_wan = ringPort("bench_cap_wan", pool);
    auto openNull = [&](const char* name, mcgw::config::PortRole role, const char* dev) {
      mcgw::config::PortConfig pc;
      pc.name = name;
      pc.role = role;
      pc.vdev = dev;
      pc.mtu = 1500;
      auto p = mcgw::engine::Port::open(pc, pool, static_cast<uint16_t>(workers));
      if (!p) {
        fail(p.error());
      }
      return std::move(*p);
    };
    ports.null_lan = openNull("lan1", mcgw::config::PortRole::kLan, "net_null0");
    ports.null_wan = openNull("wan1", mcgw::config::PortRole::kWan, "net_null1");
    for (unsigned w = 1; w < workers; ++w) {
      ports.worker_lan.push_back(ringPort(("bench_rx_lan" + std::to_string(w)).c_str(), pool));
      ports.worker_wan.push_back(ringPort(("bench_rx_wan" + std::to_string(w)).c_str(), pool));
    }

    const uint64_t bursts = (packets + kBurst - 1) / kBurst;
    packets = bursts * kBurst;
    Bench bench(pool, ports, bursts, big_routes, seed);
    auto selected = [&](const Scenario& s) {
      return (has("all") && !isEsp(s.kind)) || has(s.name) || s.kind == Kind::kFloor ||
             (has("mapped") && (s.kind == Kind::kEncap || s.kind == Kind::kMappedStage)) ||
             (has("mss") && (s.kind == Kind::kMssNonSyn || s.kind == Kind::kMssSyn));
    };
    for (const auto& s : kScenarios) {
      for (size_t size : sizes) {
        if (selected(s) && isEsp(s.kind) && size > kEspMaxFrame) {
          fail(std::string(s.name) + ": a " + std::to_string(size) +
               "-byte frame does not fit an encrypted VXLAN line with a 1500-byte MTU (at most " +
               std::to_string(kEspMaxFrame) + ")");
        }
      }
    }
    std::vector<bool> bigs{false};
    if (big_routes > 0) {
      bigs.push_back(true);
    }
    std::vector<Job> jobs;
    for (const auto& s : kScenarios) {
      if (!selected(s)) {
        continue;
      }
      if (s.kind == Kind::kFloor) {
        for (size_t size : sizes) {
          jobs.push_back({&s, size, false, {}});
        }
      }
    }
    for (bool big : bigs) {
      for (const auto& s : kScenarios) {
        if (!selected(s) || s.kind == Kind::kFloor || standalone(s.kind) ||
            s.kind == Kind::kMapped || (big && isEsp(s.kind))) {
          continue;
        }
        for (size_t size : sizes) {
          jobs.push_back({&s, size, big, {}});
          // mapped right after encap of the same size: an A/B pair in every round.
          for (const auto& m : kScenarios) {
            if (s.kind == Kind::kEncap && m.kind == Kind::kMapped && selected(m)) {
              jobs.push_back({&m, size, big, {}});
            }
          }
        }
      }
    }
    for (const auto& s : kScenarios) {
      if (selected(s) && s.kind == Kind::kFibLookup) {
        for (bool big : bigs) {
          jobs.push_back({&s, 0, big, {}});
        }
      }
      if (selected(s) &&
          (s.kind == Kind::kMssNonSyn || s.kind == Kind::kMssSyn || s.kind == Kind::kMappedStage)) {
        jobs.push_back({&s, 0, false, {}});
      }
    }
    rows = runRounds(bench, jobs, repeat, big_routes, &speeds);
    if (workers > 1) {
      scale_rows = runScale(bench, selected, sizes.front(), workers, repeat);
    }
    big_build_s = bench.bigBuildSeconds();
    big_bytes = bench.bigFibBytes();
    builder_bytes = bench.builderFibBytes();
  }
  const double total_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (json) {
    printJson(rows, rte_get_tsc_hz());
  } else {
    printTable(rows, rte_get_tsc_hz(), packets, repeat, hugepages, speeds);
    printMappedCost(rows);
    printEsp(rows, rte_get_tsc_hz());
    printRouteScaleCost(rows);
    printScale(scale_rows, rte_get_tsc_hz());
    if (builder_bytes) {
      std::printf("tables for 1 route (TablesBuilder, one tenant): %.0f MiB of DPDK memory\n",
                  static_cast<double>(builder_bytes) / (1 << 20));
    }
    if (big_bytes) {
      std::printf("the %zu-route FIB: built in %.1f s, %.0f MiB of DPDK memory\n", big_routes,
                  big_build_s, static_cast<double>(big_bytes) / (1 << 20));
    }
    std::printf("total run time %.0f s\n", total_s);
  }
  rte_mempool_free(pool);
  if (esp_selected && !route_scale && !mcgw::crypto::shutdownEngine()) {
    fail("the AES-GCM engine still holds sessions: a Gcm leaked");
  }
  rte_eal_cleanup();
  return 0;
}
