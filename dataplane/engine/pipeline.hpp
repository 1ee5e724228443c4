// The per-packet work of one worker, done a burst at a time in stages
// (pipeline.cpp has the table of stages; the slow paths, ICMP errors,
// fragmentation and held packets, are in pipeline_slow.cpp):
//
//   LAN rx ─► checks ─► tenant FIB ─► local: to the kernel
//                                  └─► TTL ─► (ECMP group: a member by the flow hash)
//                                        ─► tunnel: line choice ─► encap ─► WAN tx
//                                        └─► LAN gateway / connected: neighbour ─► LAN tx
//   WAN rx ─► decap (peer VTEP, VNI, Geneve C bit, RFC 6040) ─► the same forwarding
//
// Mapped ranges (the address plan's 1:1 mappings of this site): a packet
// out of a tunnel has its destination unmapped before the tenant FIB
// lookup; a packet from the LAN (or an ICMP error the gateway made) has its
// source mapped just before encapsulation, after the MSS clamp and the path
// MTU check, so that the gateway's own ICMP errors quote the real addresses.
//
// A Pipeline belongs to one worker: it owns that worker's TX buffers (one per
// port, on the worker's own TX queue) and writes only its own counters.  No
// locks, allocation (beyond mbufs from the mempool for ICMP errors), syscalls
// or exceptions per packet.
#pragma once

#include <rte_hash_crc.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "dataplane/engine/counters.hpp"
#include "dataplane/engine/flow_sample.hpp"
#include "dataplane/engine/tables.hpp"
#include "dataplane/policy/acl.hpp"
#include "dataplane/policy/meter.hpp"
#include "dataplane/policy/shaper.hpp"
#include "dataplane/policy/verdict_cache.hpp"
#include "dataplane/proto/icmp_error.hpp"

struct rte_mbuf;
struct rte_mempool;
struct rte_eth_dev_tx_buffer;
struct rte_ring;

namespace mcgw::engine {

// The virtual MACs (VRRP, RFC 9568 7.3) each port accepts besides its own
// while a group on it is Active, by DPDK port id.  Only a unicast frame that
// is not to the port's MAC looks here: a bit per port says whether the port
// has any, then its slots are compared.  Each slot is one atomic word (the
// MAC with kVirtualMacUsed, or 0), so a worker never sees half a MAC; a set
// replaced while a worker reads may show that worker part old, part new for
// one frame, but a MAC in both sets keeps its slot and is never missing.
inline constexpr size_t kMaxVirtualMacs = 8;  // per port
inline constexpr uint64_t kVirtualMacUsed = uint64_t{1} << 63;
static_assert(kMaxPorts <= 32, "one bit per port in VirtualMacs::ports");

// A MAC as a slot holds it.
inline uint64_t virtualMacKey(const uint8_t* mac) {
  uint64_t k = kVirtualMacUsed;
  for (int i = 0; i < 6; ++i) {
    k |= uint64_t{mac[i]} << (40 - 8 * i);
  }
  return k;
}

struct VirtualMacs {
  std::atomic<uint32_t> ports{0};  // bit p: port id p has a virtual MAC
  std::array<std::array<std::atomic<uint64_t>, kMaxVirtualMacs>, kMaxPorts> slots{};

  // Replaces the port's whole set (duplicates count once; empty: none).
  // More than kMaxVirtualMacs, or a port id >= kMaxPorts, is refused and
  // changes nothing.  One writer at a time (the control thread).
  bool set(uint16_t port, std::span<const Mac> macs);
  std::vector<Mac> get(uint16_t port) const;
  // Workers, per frame: whether `dst` is one of the port's virtual MACs.
  bool accepts(uint16_t port, const uint8_t* dst) const {
    if (!((ports.load(std::memory_order_relaxed) >> port) & 1)) {
      return false;
    }
    const uint64_t key = virtualMacKey(dst);
    for (const auto& s : slots[port]) {
      if (s.load(std::memory_order_relaxed) == key) {
        return true;
      }
    }
    return false;
  }
};

// What the control plane changes between table publications and workers
// read per packet (relaxed): line health (link state now, BFD later) and the
// path MTU by line slot; the MSS clamp by tunnel slot; each port's virtual
// MACs.
struct LiveState {
  std::array<std::atomic<bool>, kMaxLines> up{};
  // The line's current underlay path MTU (configured, then learned from
  // ICMP or probes); 0 = the table's configured line MTU.
  std::array<std::atomic<uint16_t>, kMaxLines> path_mtu{};
  // The largest MSS a SYN through the tunnel may carry, IPv4 and IPv6
  // inner; 0 = no clamping.
  std::array<std::atomic<uint16_t>, kMaxTunnels> mss4{}, mss6{};
  VirtualMacs virtual_macs;
  // Flow audit: every Nth packet a worker routes is sampled into its flow
  // ring (flow_sample.hpp); 0: off.
  std::atomic<uint32_t> flow_sampling{0};
};

inline constexpr uint16_t kBurst = 32;

// A tunnel's (tenant, line) slot indexes the meters too.
static_assert(kMaxTenantLines <= policy::MeterTable::kMaxMeters);

// A destination whose MAC the fast path does not know: the worker tells the
// control plane (a ring per worker), which asks the kernel to resolve it.
struct NeighborMiss {
  uint16_t port = 0;  // DPDK port id
  uint8_t v6 = 0;
  uint8_t pad = 0;
  uint8_t address[16] = {};
};
static_assert(sizeof(NeighborMiss) == 20);

// Packets held while their neighbour resolves: at most this many per worker,
// each for at most kHoldMs.
inline constexpr unsigned kHoldPackets = 64;
inline constexpr uint64_t kHoldMs = 1000;

// The flow hash of a packet whose port gave an RSS hash (docs/architecture.md,
// "The flow hash").
inline uint32_t rssFlowHash(uint32_t rss) {
  return rte_hash_crc_4byte(rss, 0x6d2b79f5u);
}

// The last decapsulation lookups of a burst (a burst mostly comes from one
// peer VTEP with one VNI): valid for one burst only, the quiescent point
// between bursts being where tables change.
struct DecapMemo {
  bool vtep_valid = false;
  bool tunnel_valid = false;
  uint32_t vtep4 = 0;  // an IPv4 VTEP as in the packet
  ForwardingTables::VtepHit vtep{};
  uint64_t tunnel_key = 0;  // peer << 32 | VNI
  uint16_t tunnel = 0;
};

class Pipeline {
 public:
  // tx_queue: the TX queue this worker owns on every port.
  // misses: where unresolved neighbours are reported (may be null).
  // flows: where flow-audit samples go (null: with sampling on, each
  // sample counts as ring full).
  // meters: the worker's token buckets of the tenants' meters (null: no
  // metering).
  // line_buckets: the shaped lines' buckets that all workers share, by
  // line slot (kMaxLines; null: each shaper has its own, as with one worker).
  Pipeline(uint16_t tx_queue, rte_mempool* pool, WorkerCounters* counters, const LiveState* health,
           rte_ring* misses = nullptr, rte_ring* flows = nullptr,
           policy::WorkerMeters* meters = nullptr, policy::LineBucket* line_buckets = nullptr);
  ~Pipeline();  // frees whatever is still buffered
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;

  // Processes packets received on rx_port; every mbuf is either buffered
  // for TX or freed and counted as a drop.  The mbufs' `port` is neither
  // read nor written (not every driver sets it: net_ring does not).
  void process(const ForwardingTables& t, uint16_t rx_port, rte_mbuf** pkts, uint16_t n);
  // The same for packets whose mbuf `port` names their RX port.
  void process(const ForwardingTables& t, rte_mbuf** pkts, uint16_t n);

  // Sends what the TX buffers hold (the drain timer, and before a quiescent
  // point that adopts new tables).
  void flush();
  bool pending() const { return pending_mask_ != 0; }

  // Sends held packets whose neighbour the tables now know, and drops
  // (no-neighbor) those held too long.  The worker calls it when tables
  // change and now and then.
  void retryHeld(const ForwardingTables& t);
  unsigned held() const { return n_held_; }

  // Shaped lines (pipeline_shaper.cpp, docs/policy.md "Priority when a line
  // is full").  adoptShapers: when tables change, a shaper for each line
  // with a capacity (a changed one gets a new shaper; the old one sends
  // what it holds first).  serviceShapers: every poll, sends the queued
  // packets whose time has come.  While shaping() the worker must keep
  // polling (never sleep).
  void adoptShapers(const ForwardingTables& t);
  void serviceShapers(const ForwardingTables& t);
  bool shaping() const { return shaped_queued_; }

 private:
  static bool virtualMacToKernel(const uint8_t* data, size_t len);
  // Where a packet to route comes from: straight from a port, out of a
  // tunnel, or made by the gateway (an ICMP error: no TTL check or decrement).
  enum class Origin : uint8_t { kPort, kTunnel, kGateway };
  // What the stages know of a packet on its way through a burst.
  struct Packet {
    rte_mbuf* m = nullptr;
    uint16_t tenant = 0;
    uint16_t rx_port = 0;
    Origin origin = Origin::kPort;
    bool v6 = false;
    bool hashed = false;           // flow_hash holds the port's RSS hash
    uint32_t flow_hash = 0;        //
    uint32_t l3_len = 0;           // the IP packet's length (Ethernet padding trimmed)
    uint32_t dst4 = 0;             // IPv4: the destination in host byte order (the lookup key)
    const uint8_t* dst = nullptr;  // the destination address in the packet
    uint32_t nh = 0;               // the tenant FIB's answer
    uint32_t hop = 0;              // out of a tunnel: its peer << 16 | the line's slot
  };
  static constexpr int32_t kPortOfMbuf = -1;  // rx_port: each mbuf's `port`
  void processAll(const ForwardingTables& t, rte_mbuf** pkts, uint16_t n, int32_t rx_port);
  void processBurst(const ForwardingTables& t, rte_mbuf** pkts, uint16_t n, int32_t rx_port);
  // The stages (pipeline.cpp).  receive and checkL3 return false when they
  // have disposed of the packet (sent it to the kernel, dropped it).
  bool receive(const ForwardingTables& t, rte_mbuf* m, uint16_t rx_port, Packet& p);
  bool checkL3(const ForwardingTables& t, Packet& p);
  void lookup(const ForwardingTables& t, Packet* ps, unsigned n);
  // Tenant policy (pipeline_policy.cpp): the burst's packets of tenants
  // with rules classified, denied ones dropped; returns how many remain
  // (compacted in place).  every: flow audit's sampling rate (0: off); on,
  // the denied packets count down with the routed ones (sampleDenied).
  unsigned policy(const ForwardingTables& t, Packet* ps, unsigned n, uint32_t every);
  // Flow audit of the packets the policy stage denied (state 2), each with
  // its rule's slot (rules[i]), before they are dropped.
  void sampleDenied(const ForwardingTables& t, const Packet* ps, unsigned n, const uint8_t* state,
                    const uint16_t* rules, uint32_t every);
  // A packet without a route: whether it was headed for another tenant.
  bool isolated(const TenantEntry& te, const uint8_t* l3, uint32_t len, bool v6);
  void route(const ForwardingTables& t, Packet& p);
  // route() for a burst while flow audit samples 1-in-every (flow_sample.hpp).
  void routeSampled(const ForwardingTables& t, Packet* ps, unsigned n, uint32_t every);
  // The stages for one packet (an ICMP error the gateway made).
  void forward(const ForwardingTables& t, rte_mbuf* m, uint16_t tenant, uint16_t rx_port,
               Origin origin);
  // A line is usable while its next hop is resolved and its health says up;
  // a tunnel (by slot) while one of its lines is.
  bool lineUsable(const ForwardingTables& t, uint16_t line) const;
  bool tunnelUsable(const ForwardingTables& t, uint16_t slot) const;
  const TunnelEntry* standIn(const ForwardingTables& t, const TunnelEntry& tunnel);
  void encapsulate(const ForwardingTables& t, rte_mbuf* m, const TunnelEntry& tunnel,
                   uint32_t flow_hash, uint16_t tenant, uint16_t rx_port, Origin origin);
  // mapping: the tenant's mapped ranges when the packet's source is to be
  // mapped (it did not come out of a tunnel), else null.
  void encapsulateOn(const ForwardingTables& t, rte_mbuf* m, const TunnelEntry& tunnel,
                     const LineEntry& line, uint32_t flow_hash, const TenantMapping* mapping,
                     uint16_t tenant_line);
  // The 1:1 translations of the mapped ranges (proto/prefix_map.hpp).
  void mapSource(rte_mbuf* m, const TenantMapping& mapping);
  void unmapDestination(uint8_t* ip, size_t len, bool v6, const TenantMapping& mapping);
  // Towards a LAN next hop: the neighbour's MAC, then TX (or held).
  void toLan(const ForwardingTables& t, rte_mbuf* m, const NextHop& nh, bool v6);
  // An IP packet larger than `mtu` (an IP MTU) on its way out: IPv4 without
  // DF is fragmented into `frags` (the count returned, m freed); anything
  // else is dropped (too-big) with ICMP frag-needed / Packet Too Big, and 0
  // returned.
  static constexpr size_t kMaxFragments = 64;
  using Fragments = std::array<rte_mbuf*, kMaxFragments>;
  size_t tooBig(const ForwardingTables& t, rte_mbuf* m, uint32_t mtu, uint16_t tenant,
                uint16_t rx_port, Origin origin, Fragments& frags);
  // Sends an ICMP error about m (which the caller then drops) from the
  // gateway's address on the side m arrived from, if the rules and the rate
  // limits allow.
  void icmpError(const ForwardingTables& t, const rte_mbuf* m, proto::IcmpErrorKind kind,
                 uint32_t mtu, uint16_t tenant, uint16_t rx_port, Origin origin);
  // Clamps the MSS of a SYN / SYN-ACK through tunnel (both directions):
  // an inline pre-check, the rest out of line.
  void clampSyn(rte_mbuf* m, const TunnelEntry& tunnel);
  void clampSynSlow(rte_mbuf* m, const TunnelEntry& tunnel, bool v6);
  // ESP (pipeline_esp.cpp, docs/encryption.md).  openEsp: a WAN packet
  // that is ESP (IP protocol 50, or UDP to 4500 without the non-ESP marker)
  // is opened in place into the plain tunnel packet (eth, outer IP, the
  // tunnel's UDP datagram) and *line set to its SA's line; dropped (and
  // counted) when refused.  sealEsp: the packet's tunnel datagram
  // (payload_len bytes at out + line.outer_l4) protected with the line's
  // outbound SA, the trailer appended; false when dropped.  On a shaped
  // line the two happen apart: appendEspTrailer when the packet is queued
  // (so that the shaper counts its full size), sealAppended when it leaves
  // the queue (so that ESP numbers packets in the order they leave).
  enum class EspVerdict : uint8_t { kNotEsp, kOpened, kDropped };
  EspVerdict openEsp(const ForwardingTables& t, rte_mbuf* m, int32_t* line);
  bool sealEsp(rte_mbuf* m, const LineEntry& line, uint8_t* out, size_t payload_len);
  bool appendEspTrailer(rte_mbuf* m, size_t payload_len);
  bool sealAppended(rte_mbuf* m, EspSa& sa, uint8_t esp_at, bool esp_udp, uint8_t* out,
                    size_t payload_len);
  void transmit(const ForwardingTables& t, uint16_t port, rte_mbuf* m);
  void drop(rte_mbuf* m, DropReason why);
  void toKernel(const ForwardingTables& t, const PortEntry& pe, rte_mbuf* m, DropReason otherwise);
  void hold(const ForwardingTables& t, rte_mbuf* m, uint16_t port, bool v6, const uint8_t* address);
  void localPacket(const ForwardingTables& t, rte_mbuf* m, uint16_t rx_port, Origin origin);
  struct TokenBucket {
    uint64_t tokens = 0;
    uint64_t last_tsc = 0;
    uint32_t key = 0;  // per-source buckets: the source's hash
  };
  bool take(TokenBucket& b, uint64_t now, uint64_t rate, uint64_t burst);
  void startIcmpBuckets();
  bool icmpAllowed(bool v6, const uint8_t* source);

  // Packets and bytes added to one counter while a burst goes one way,
  // written to it when the packets go another way and at the end of the
  // burst (flushRuns): a counter's cache line once per burst, not per
  // packet.
  struct Run {
    PacketsBytes* counter = nullptr;
    uint64_t packets = 0;
    uint64_t bytes = 0;
    void add(PacketsBytes& to, uint64_t len) {
      if (&to != counter) {
        flush();
        counter = &to;
      }
      ++packets;
      bytes += len;
    }
    void flush() {
      if (packets != 0) {
        counter->packets.add(packets);
        counter->bytes.add(bytes);
        packets = bytes = 0;
      }
    }
  };
  enum RunKind : uint8_t {
    kRunRx,
    kRunLineRx,
    kRunTunnelRx,
    kRunTunnelTx,
    kRunLineTx,
    kRunTx,
    kRunUsageRx,
    kRunUsageTx
  };
  std::array<Run, 8> runs_;
  void flushRuns() {
    for (Run& r : runs_) {
      r.flush();
    }
  }
  // A LAN gateway's MAC as the burst looked it up (valid for one burst: the
  // quiescent point between bursts is where tables change).
  const NextHop* gateway_nh_ = nullptr;
  Mac gateway_mac_{};
  DecapMemo decap_memo_;
  std::array<Packet, kBurst> burst_;  // the stages' context, reused burst after burst
  // The policy stage's keys and answers, by position in the burst.
  struct PolicyScratch {
    std::array<policy::Key4, kBurst> key4;
    std::array<policy::Key6, kBurst> key6;
    std::array<const uint8_t*, kBurst> keys;
    std::array<uint32_t, kBurst> ids;
    std::array<uint8_t, kBurst> at;  // the packet of keys[i]
    policy::VerdictCache verdicts;   // this worker's answers by policy serial and key
  };
  PolicyScratch policy_scratch_;

  // A line's shaper in this worker.
  struct ShapedLine {
    std::unique_ptr<policy::Shaper> shaper;
    uint16_t slot = 0;      // the line's counter slot
    uint16_t port = 0;      // the WAN port it leaves through
    bool draining = false;  // replaced or gone: sends what it holds, takes nothing
    // An encrypted line: its packets wait unsealed (trailer appended) and
    // are sealed as they leave, with the line's outbound SA of the newest
    // tables that kept this shaper (held here: a draining shaper outlives
    // the tables it came with; so the last reference to a retired SA may be
    // dropped here, on the worker, once per table change).  The layout is
    // the line's when the shaper was made; a line whose layout changes gets
    // a new shaper.
    bool esp_line = false;
    bool esp_udp = false;
    uint8_t esp_at = 0;
    uint8_t outer_l4 = 0;
    std::shared_ptr<EspSa> esp;
  };
  enum class Shaping : uint8_t { kQueued, kDropped };
  Shaping shape(ShapedLine& s, uint8_t priority, uint16_t tenant_line, rte_mbuf* m);
  bool sealQueued(ShapedLine& s, rte_mbuf* m);
  std::vector<std::unique_ptr<ShapedLine>> shaped_;
  std::array<ShapedLine*, kMaxLines> shaper_of_slot_{};  // null: none (or its creation failed)
  bool shaped_queued_ = false;                           // a shaper holds packets
  policy::LineBucket* line_buckets_;                     // by slot; null: own buckets

  uint16_t tx_queue_;
  rte_mempool* pool_;
  WorkerCounters* counters_;
  const LiveState* health_;
  std::array<rte_eth_dev_tx_buffer*, kMaxPorts> tx_{};
  uint32_t pending_mask_ = 0;  // ports whose buffer holds packets
  rte_ring* misses_ = nullptr;
  // Flow audit: the ring, the packets left until the next sample, and the
  // peer << 16 | line slot that the last encapsulation used.
  static constexpr uint32_t kNoHop = 0xffffffffu;
  rte_ring* flows_ = nullptr;
  // Tenant bandwidth (docs/policy.md): this worker's meters, and the TSC
  // read once per burst that they are checked at.
  policy::WorkerMeters* meters_ = nullptr;
  uint64_t burst_tsc_ = 0;
  uint32_t sample_left_ = 1;
  uint32_t last_hop_ = kNoHop;
  // Flow audit: why route() dropped the packet it routed, when that is for
  // the flow records (isolation, a red meter): FlowStatus << 16 | the
  // policy slot (kNoRule: none); 0: not.  Written only on those drops.
  uint32_t last_drop_ = 0;
  struct Held {
    rte_mbuf* m = nullptr;
    uint16_t port = 0;
    bool v6 = false;
    uint8_t address[16] = {};
    uint64_t since = 0;  // TSC
    Mac port_mac{};      // the port's MAC when held: another port with the id is not it
  };
  std::array<Held, kHoldPackets> held_{};
  unsigned n_held_ = 0;
  // ICMP error token buckets: one per worker, and per source address of
  // the offending packet (hashed into kIcmpSources buckets; a bucket taken
  // over by another source starts full).
  static constexpr size_t kIcmpSources = 256;
  TokenBucket icmp_worker_;
  std::array<TokenBucket, kIcmpSources> icmp_sources_{};
  uint64_t tsc_hz_ = 0;
};

}  // namespace mcgw::engine
