// The forwarding tables the workers read: a snapshot of ports, tenants,
// tunnels, lines and peer VTEPs, published whole (dataplane.hpp), and the
// structures it shares with every later snapshot, which one writer changes
// in place under RCU: each tenant's FIB and next hops (routes.hpp) and the
// neighbour table.  A route or neighbour change touches only those; a
// reload, a new port or a line's next-hop MAC publishes a new (small)
// snapshot over the same FIBs.
//
// Indexes: ports by DPDK port id; lines and tunnels carry a counter slot that
// stays with their name across snapshots (SlotMap), so counters survive a
// reload that reorders them.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "config/result.hpp"
#include "dataplane/engine/esp_sa.hpp"
#include "dataplane/engine/fib.hpp"
#include "dataplane/engine/flat_index.hpp"
#include "dataplane/engine/policy_tables.hpp"
#include "dataplane/engine/routes.hpp"
#include "dataplane/policy/shaper.hpp"
#include "dataplane/proto/prefix_map.hpp"
#include "dataplane/proto/tunnel.hpp"

struct rte_hash;

namespace mcgw::engine {

inline constexpr size_t kMaxPorts = 32;      // DPDK port ids we index
inline constexpr size_t kMaxLines = 256;     // counter slots
inline constexpr size_t kMaxTunnels = 1024;  // counter slots
inline constexpr size_t kMaxLinesPerPeer = 8;
inline constexpr size_t kMaxMapped = 4096;  // counter slots: the YANG's most mapped ranges
// (tenant, line) pairs: a tunnel's line has a slot for its tenant's meter
// and usage counters (docs/policy.md).
inline constexpr size_t kMaxTenantLines = 8192;
inline constexpr uint16_t kNoTenant = 0xffff;

using Mac = std::array<uint8_t, 6>;

struct PortEntry {
  bool present = false;
  bool lan = false;
  // The exception path: a TAP port (tap = true) carries the kernel's side of
  // physical port `phys`; a physical port's `exception` is its TAP, or -1
  // when the kernel sees its traffic otherwise (af_xdp: the XDP program).
  bool tap = false;
  uint16_t phys = 0;
  int32_t exception = -1;
  uint16_t tenant = kNoTenant;  // LAN ports
  uint16_t mtu = 1500;
  Mac mac{};
  std::string name;
  // The port's own addresses (packets to them are not forwarded).
  std::vector<config::InterfaceAddress> addresses;
  // Its first address of each family: the source of ICMP errors.
  std::optional<std::array<uint8_t, 4>> icmp_source4;
  std::optional<std::array<uint8_t, 16>> icmp_source6;
};

struct LineEntry {
  uint16_t slot = 0;
  uint16_t port = 0;      // DPDK port id it leaves through
  uint16_t mtu = 1500;    // underlay IP MTU
  bool resolved = false;  // the next hop's MAC is known
  proto::TunnelHeaderTemplate header;
  // The outer headers encoded once (VNI, lengths, TOS, source port and
  // checksums are patched per packet) and the constant part of the IPv4
  // header checksum or of the IPv6 UDP pseudo-header sum.
  // With ESP they include the ESP header and IV (and the RFC 3948 UDP
  // header) between the IP and the tunnel's UDP header.
  std::array<uint8_t, 112> outer{};
  uint8_t outer_len = 0;  // the overhead a packet gains (before an ESP trailer)
  uint8_t outer_l3 = 0;   // where the outer IP header starts
  uint8_t outer_l4 = 0;   // where the tunnel's UDP header starts
  uint32_t outer_sum = 0;
  // ESP (docs/encryption.md).  An encrypted line sends tunnel packets only
  // with its outbound SA (none yet: the line is not usable) and takes them
  // only through one of its inbound SAs.
  bool encrypted = false;
  bool esp_udp = false;    // RFC 3948 UDP encapsulation
  uint8_t esp_at = 0;      // where the ESP header starts in outer
  EspSa* esp = nullptr;    // owned by the snapshot's `sas`
  std::string peer, name;  // "peer", "line"
  config::IpAddress next_hop;
  uint8_t pos = 0;  // its index among its peer's lines (and in each tunnel's `lines`)
  // With a capacity: the line's rate and each worker's queues (the
  // workers' shapers share the line's bucket); rate_bytes 0: not shaped (docs/policy.md, "Priority
  // when a line is full").
  policy::ShapeParams shape;
};

struct TunnelEntry {
  uint16_t slot = 0;
  uint16_t peer = 0;
  uint16_t tenant = 0;
  uint32_t vni = 0;
  bool ecmp = false;
  bool mss_insert = false;  // add an MSS option to SYNs without one
  uint8_t priority = 0;     // the tenant's bandwidth priority on shaped lines
  uint8_t n_lines = 0;
  std::array<uint16_t, kMaxLinesPerPeer> lines{};  // indexes into lines, in preference order
  // The (tenant, line) slot of each of those lines: its meter (the tenant's
  // rate into the line) and its usage counters.
  std::array<uint16_t, kMaxLinesPerPeer> tenant_line{};
  Mac inner_dst{};
  // The same tenant's tunnels (indexes into tunnels) to the other gateways
  // of the peer's site (peers[].site), in config order: where the traffic
  // routed to this tunnel goes while none of its lines is usable.
  uint8_t n_stand_ins = 0;
  std::array<uint16_t, config::kMaxPeersPerSite - 1> stand_ins{};
  std::string name;  // "peer/tenant"
};

// A tenant's mapped ranges that this gateway translates (those whose real
// range lives at its site): packets from the tenant's LAN into a tunnel get
// their source mapped (`out`, keyed by the real ranges), packets out of a
// tunnel their destination unmapped (`in`, keyed by the mapped ranges).
// Each rule's slot is its counter slot.  Immutable, part of a snapshot.
struct TenantMapping {
  proto::PrefixMapTable out;
  proto::PrefixMapTable in;
};

// A mapped range as status shows it.
struct MappedEntry {
  std::string name;
  std::string tenant;
  config::IpPrefix real, mapped;
  uint16_t slot = 0;
};

struct TenantEntry {
  std::string name;
  uint32_t vni = 0;
  // Changed in place by the builder (one writer, under RCU); shared by
  // every snapshot while the tenant exists.
  std::shared_ptr<const TenantFib> fib;
  // The FIB's next-hop indexes point here: local to the tenant, so that a
  // change in one tenant never touches another's.
  std::shared_ptr<const NextHopTable> next_hops;
  // Source of ICMP errors the gateway sends for this tenant: its first LAN
  // address of each family.
  std::optional<std::array<uint8_t, 4>> icmp_source4;
  std::optional<std::array<uint8_t, 16>> icmp_source6;
  // Null when the tenant has no mapped range here: the fast path pays one
  // branch per direction.
  std::shared_ptr<const TenantMapping> mapping;
  // Its policy rules (null: none, everything allowed: one branch per
  // packet), and the other tenants' destinations that tell a packet
  // without a route which was headed for another tenant (policy_tables.hpp).
  std::shared_ptr<const TenantPolicy> policy;
  std::shared_ptr<const TenantIsolation> isolation;
  uint16_t isolation_slot = 0;
  // Bandwidth: the DSCP a yellow packet gets (-1: unchanged).
  int16_t yellow_dscp = -1;
};

// A (tenant, line) pair: the tenant's traffic into and out of one line.
struct TenantLineEntry {
  std::string tenant, peer, line;
  uint16_t slot = 0;
  uint64_t capacity_bits = 0;  // the line's capacity (0: not shaped)
  uint8_t priority = 0;        // the tenant's bandwidth priority
};

// One receive queue a worker polls.
struct RxQueue {
  uint16_t port = 0;
  uint16_t queue = 0;
};

// Which candidates a listing shows: all by default.
struct RouteFilter {
  std::string tenant;                      // "" = every tenant
  std::optional<RouteSource> source;       // only this source's
  std::optional<config::IpPrefix> within;  // only prefixes inside this one (or equal)
  bool matches(const std::string& tenant_name, const config::IpPrefix& prefix,
               RouteSource s) const {
    return (tenant.empty() || tenant == tenant_name) && (!source || *source == s) &&
           (!within || (within->address.family == prefix.address.family &&
                        within->length <= prefix.length && within->contains(prefix.address)));
  }
};

// A route as `mcgwctl show routes` lists it: every candidate of every
// source, the selected one (in the FIB) first.
struct RouteView {
  std::string tenant;
  std::string prefix;
  std::string via;  // "peer X", "10.1.0.1 on lan0", "connected lan0", "local", "ecmp: ..."
  std::string source;
  unsigned distance = 0;
  bool selected = false;
};

inline constexpr uint16_t kNoTunnel = 0xffff;

// The fast path's table of neighbours: (DPDK port, address) -> MAC, an
// rte_hash with lock-free readers changed in place by one writer, shared by
// every snapshot.  A kernel neighbour event changes one entry; a removed
// entry's slot is reused only after a grace period.
class NeighborTable {
 public:
  static constexpr uint32_t kCapacity = 16384;
  using Key = std::array<uint8_t, 20>;  // port (2 bytes), v6, 0, address (16)
  static Key key(uint16_t port, bool v6, const uint8_t* address);

  // Needs the EAL.
  static Result<std::unique_ptr<NeighborTable>, std::string> create();
  ~NeighborTable();
  NeighborTable(const NeighborTable&) = delete;
  NeighborTable& operator=(const NeighborTable&) = delete;

  // Workers (and control): lock-free.
  bool lookup(uint16_t port, bool v6, const uint8_t* address, Mac* mac) const;

  // Writer: makes the table hold exactly `want`, changing only what differs.
  // Returns how many entries changed; entries that do not fit are left out
  // and counted in *refused.
  size_t sync(const std::map<Key, Mac>& want, const TenantFib::Synchronize& synchronize,
              size_t* refused);
  size_t size() const { return mirror_.size(); }

 private:
  NeighborTable() = default;
  rte_hash* hash_ = nullptr;
  std::map<Key, Mac> mirror_;  // what the hash holds
};

class ForwardingTables {
 public:
  ~ForwardingTables();
  ForwardingTables(const ForwardingTables&) = delete;
  ForwardingTables& operator=(const ForwardingTables&) = delete;

  uint64_t generation = 0;
  std::array<PortEntry, kMaxPorts> ports;
  std::vector<TenantEntry> tenants;
  std::vector<TunnelEntry> tunnels;
  // Next hops name a tunnel by its counter slot (which follows its name
  // across snapshots); this finds it here.  kNoTunnel: not in this snapshot.
  std::array<uint16_t, kMaxTunnels> tunnel_of_slot;
  std::vector<LineEntry> lines;
  std::vector<std::string> peer_names;
  // Decapsulation's lookups, built with the lines and tunnels: a peer VTEP's
  // address (as in the packet) -> its peer and line; (peer, VNI) -> tunnel.
  struct VtepHit {
    uint16_t peer = 0;
    uint16_t line = 0;  // index into lines
  };
  FlatIndex<uint32_t, VtepHit> vtep4;
  FlatIndex<std::array<uint8_t, 16>, VtepHit> vtep6;
  FlatIndex<uint64_t, uint16_t> tunnel_by_vni;  // key: peer << 32 | VNI
  std::vector<std::vector<RxQueue>> poll;       // per worker
  std::vector<MappedEntry> mapped;              // every tenant's, in the input's order
  std::vector<TenantLineEntry> tenant_lines;    // every tunnel's lines
  // ESP: every SA the snapshot names (it keeps them alive), inbound SAs by
  // SPI with the index of their line, and whether any line is encrypted
  // (a WAN packet is looked at for ESP only then).
  std::vector<std::shared_ptr<EspSa>> sas;
  struct SaHit {
    EspSa* sa = nullptr;
    uint16_t line = 0;
  };
  FlatIndex<uint32_t, SaHit> esp_in;
  bool any_encrypted = false;
  bool any_policy = false;  // a tenant has policy rules: the burst stage runs
  uint32_t idle_sleep_max_us = 200;

  // The MAC of a neighbour on a port (4 or 16 bytes at `address`).
  bool neighbor(uint16_t port, bool v6, const uint8_t* address, Mac* mac) const {
    return neighbors_ && neighbors_->lookup(port, v6, address, mac);
  }

  // The peer VTEP at `address` (4 or 16 bytes as in the packet), or null.
  const VtepHit* vtep(bool v6, const uint8_t* address) const {
    if (!v6) {
      uint32_t a;
      std::memcpy(&a, address, 4);
      return vtep4.find(a);
    }
    std::array<uint8_t, 16> a;
    std::memcpy(a.data(), address, 16);
    return vtep6.find(a);
  }
  // The tunnel index for a decapsulated packet's peer and VNI.
  bool tunnelFor(uint16_t peer, uint32_t vni, uint16_t* tunnel) const {
    const uint16_t* t = tunnel_by_vni.find(uint64_t{peer} << 32 | vni);
    if (t) {
      *tunnel = *t;
    }
    return t != nullptr;
  }

 private:
  friend class TablesBuilder;
  ForwardingTables() { tunnel_of_slot.fill(kNoTunnel); }
  std::shared_ptr<const NeighborTable> neighbors_;
};

// Counter slots by name: a line or tunnel keeps its slot while it exists.
class SlotMap {
 public:
  explicit SlotMap(size_t capacity) : capacity_(capacity) {}
  // The slot of name (assigned if new); nullopt when all are taken.
  // fresh is set when the slot was newly assigned (its counters restart).
  std::optional<uint16_t> assign(const std::string& name, bool* fresh);
  // Frees every slot whose name is not in keep.
  void retain(const std::vector<std::string>& keep);
  const std::map<std::string, uint16_t>& slots() const { return slots_; }

 private:
  size_t capacity_;
  std::map<std::string, uint16_t> slots_;
};

// What the builder needs to know of an open port.
struct OpenPort {
  OpenPort() = default;
  OpenPort(uint16_t id, const Mac& m, uint16_t rxq) : port_id(id), mac(m), rx_queues(rxq) {}
  uint16_t port_id = 0;
  Mac mac{};
  uint16_t rx_queues = 1;
  // Neighbours the kernel resolved on the port's kernel interface (used
  // before the static ones in the config).
  std::vector<config::StaticNeighbor> neighbors;
  // The port's TAP (exception path), if it has one.
  std::optional<uint16_t> tap_port_id;
};

// Where a route leads, by name: what a source says.
struct Via {
  enum class Kind : uint8_t { kTunnel, kGateway, kConnected, kLocal };
  Kind kind = Kind::kTunnel;
  std::string peer;           // kTunnel: the peer (the tunnel is the peer's for the tenant)
  std::string port;           // kConnected; kGateway: empty = the LAN port whose subnet has it
  config::IpAddress address;  // kGateway
};

// A route from a source: one via, or 2..8 (an ECMP group).
struct RouteSpec {
  config::IpPrefix prefix;
  std::vector<Via> vias;
  uint8_t distance = 1;
};

// A change from a source, applied in place (TablesBuilder::apply).
struct RouteUpdate {
  std::string tenant;
  RouteSource source = RouteSource::kStatic;
  config::IpPrefix prefix;
  bool withdraw = false;
  std::vector<Via> vias;  // unless withdraw
  uint8_t distance = 1;
};

// A mapped range this gateway translates (TablesInput::mapped).
struct MappedRangeSpec {
  std::string name;
  config::IpPrefix real, mapped;  // same family and length
};

// Everything a build reads: the structure from the config (ports, tenants,
// peers, lines, fast-path settings; its tenants' routes are NOT read from
// it), the open ports, and per tenant the routes of the sources given here,
// each in full: a source named for a tenant gets exactly these routes; a
// source not named keeps what it has (FRR's routes survive a reload).
struct TablesInput {
  const config::Config* config = nullptr;
  std::map<std::string, OpenPort> ports;
  unsigned workers = 1;
  std::map<std::string, std::map<RouteSource, std::vector<RouteSpec>>> routes;  // by tenant
  // By tenant: the address plan's mapped ranges whose real range lives at
  // this gateway's site (the control plane picks them: which site, which
  // tenant); not filled by fromConfig.  Real ranges of one tenant must not
  // overlap, nor mapped ranges.
  std::map<std::string, std::vector<MappedRangeSpec>> mapped;
  // By line ("peer/line"): the ESP SAs of encrypted lines (the control
  // plane's key agreement); not filled by fromConfig.  A line that is
  // encrypted and has none carries no tunnel packet.
  std::map<std::string, LineSas> sas;

  // The config's sources: its static routes (distance 1), the open LAN
  // ports' subnets (connected, 0) and every open port's addresses as /32
  // and /128 routes of kind local in every tenant (0).
  static TablesInput fromConfig(const config::Config& config, std::map<std::string, OpenPort> ports,
                                unsigned workers);
};

// Builds the forwarding tables and keeps them: the RIB of each tenant, its
// FIB and next hops, the neighbour table, the counter slots of lines and
// tunnels.  One writer at a time, on any thread that is not a worker (a big
// initial load may run off the control thread); `synchronize` is the fast
// path's grace period (Dataplane::synchronize).  A second writer while one
// runs is refused, not waited for.
class TablesBuilder {
 public:
  TablesBuilder();
  ~TablesBuilder();
  TablesBuilder(const TablesBuilder&) = delete;
  TablesBuilder& operator=(const TablesBuilder&) = delete;

  // Builds a snapshot for the input.  FIBs of tenants that stay are changed
  // in place (only the routes that differ); a new tenant's FIB is built once
  // with all its routes.  The FIB changes are visible to the workers when
  // this returns: publish the snapshot next (before any other change).  Fails
  // with a message, leaving nothing behind: RIBs, FIBs, next hops, counter
  // slots and the neighbour table as they were.
  Result<std::unique_ptr<ForwardingTables>, std::string> build(
      const TablesInput& input, const TenantFib::Synchronize& synchronize);

  // Route changes from a source, applied in place to the FIBs of the last
  // build's tenants (no snapshot to publish).  All or nothing.
  Result<bool, std::string> apply(std::span<const RouteUpdate> updates,
                                  const TenantFib::Synchronize& synchronize);

  // Brings the neighbour table to the input's neighbours in place.  True
  // when a line's next-hop MAC changed: its outer headers are in the
  // snapshot, so build and publish a new one (it shares the FIBs).
  Result<bool, std::string> updateNeighbors(const TablesInput& input,
                                            const TenantFib::Synchronize& synchronize);

  // Neighbours the last updateNeighbors could not add (the table is full).
  size_t neighborsLeftOut() const { return neighbors_left_out_; }

  // Drops every table it keeps (FIBs and the neighbour table are DPDK
  // memory: before the EAL goes).  The next build starts afresh.
  void clear();

  // Slots assigned afresh by the last build (their counters restart).
  const std::vector<uint16_t>& freshLineSlots() const { return fresh_lines_; }
  const std::vector<uint16_t>& freshTunnelSlots() const { return fresh_tunnels_; }
  const std::vector<uint16_t>& freshMappedSlots() const { return fresh_mapped_; }
  const std::vector<uint16_t>& freshPolicySlots() const { return policy_->freshSlots(); }
  const std::vector<uint16_t>& freshTenantLineSlots() const { return fresh_tenant_lines_; }
  const SlotMap& tenantLineSlots() const { return tenant_line_slots_; }

  // For `show routes`, status and tests (the writer's side: not while a
  // build runs on another thread).
  // At most `limit` candidates, in tenant and prefix order.
  std::vector<RouteView> routes(size_t limit = SIZE_MAX, const RouteFilter& filter = {}) const;
  // How many candidates match filter (all of them: not limited).
  size_t candidateCount(const RouteFilter& filter) const;
  // Candidates per source (RouteSource order), in one walk.
  std::array<size_t, kRouteSourceCount> candidatesBySource() const;
  size_t routeCount() const;      // prefixes
  size_t candidateCount() const;  // candidates of every source
  const TenantRib* rib(const std::string& tenant) const;
  std::shared_ptr<const TenantFib> fib(const std::string& tenant) const;
  const SlotMap& lineSlots() const { return line_slots_; }
  const SlotMap& tunnelSlots() const { return tunnel_slots_; }

  struct Topology;
  struct Tenant;

 private:
  SlotMap line_slots_;
  SlotMap tunnel_slots_;
  SlotMap mapped_slots_;       // mapped ranges by name
  SlotMap tenant_line_slots_;  // "tenant/peer/line"
  std::vector<uint16_t> fresh_tenant_lines_;
  std::unique_ptr<PolicyBuilder> policy_;
  std::vector<uint16_t> fresh_lines_, fresh_tunnels_, fresh_mapped_;
  uint64_t generation_ = 0;
  std::map<std::string, std::unique_ptr<Tenant>> tenants_;
  std::vector<std::string> tenant_order_;  // as the config lists them
  std::unique_ptr<Topology> topology_;     // what the last build resolved names against
  std::shared_ptr<NeighborTable> neighbors_;
  std::map<std::string, std::optional<Mac>> line_macs_;  // "peer/line" -> next hop's MAC
  // What each source gave, by name (peer, port, address), per tenant: a
  // build re-resolves the sources its input does not name (FRR, the plan)
  // against the new topology, so that none keeps a tunnel slot or a DPDK
  // port id that a reload freed and handed to something else.
  std::map<std::string, std::map<RouteSource, std::map<config::IpPrefix, RouteSpec>>> specs_;
  std::atomic<bool> writing_{false};
  size_t neighbors_left_out_ = 0;
};

}  // namespace mcgw::engine
