// The forwarding tables the workers read: one immutable snapshot of ports,
// tenants (with their FIBs), next hops, tunnels, lines, peer VTEPs and
// neighbours.  The control plane builds a new snapshot from the config (and
// later from FRR) and publishes it; workers adopt it at their next quiescent
// point (dataplane.hpp).  Nothing in a snapshot changes once published.
//
// Indexes: ports by DPDK port id; lines and tunnels carry a counter slot that
// stays with their name across snapshots (SlotMap), so counters survive a
// reload that reorders them.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "config/result.hpp"
#include "dataplane/engine/fib.hpp"
#include "dataplane/proto/tunnel.hpp"

struct rte_hash;

namespace mcgw::engine {

inline constexpr size_t kMaxPorts = 32;      // DPDK port ids we index
inline constexpr size_t kMaxLines = 256;     // counter slots
inline constexpr size_t kMaxTunnels = 1024;  // counter slots
inline constexpr size_t kMaxLinesPerPeer = 8;
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
  std::array<uint8_t, 72> outer{};
  uint8_t outer_len = 0;
  uint32_t outer_sum = 0;
  std::string peer, name;  // "peer", "line"
  config::IpAddress next_hop;
};

struct TunnelEntry {
  uint16_t slot = 0;
  uint16_t peer = 0;
  uint16_t tenant = 0;
  uint32_t vni = 0;
  bool ecmp = false;
  bool mss_insert = false;  // add an MSS option to SYNs without one
  uint8_t n_lines = 0;
  std::array<uint16_t, kMaxLinesPerPeer> lines{};  // indexes into lines, in preference order
  Mac inner_dst{};
  std::string name;  // "peer/tenant"
};

struct NextHop {
  enum class Kind : uint8_t {
    kTunnel,     // into tunnels[tunnel]
    kGateway,    // a LAN next hop with a known (or unknown) MAC
    kConnected,  // the destination is on the LAN port's subnet: neighbour lookup
  } kind = Kind::kTunnel;
  uint16_t tunnel = 0;
  uint16_t port = 0;
  bool resolved = false;  // kGateway: mac is known
  Mac mac{};
};

struct TenantEntry {
  std::string name;
  uint32_t vni = 0;
  std::shared_ptr<const TenantFib> fib;
  // The FIB's next-hop indexes point here: local to the tenant, so that a
  // change in one tenant never shifts another's (and rebuilds its FIB).
  std::vector<NextHop> next_hops;
  std::vector<TenantFib::Route> routes;  // what the FIB was built from (to reuse it)
  // Source of ICMP errors the gateway sends for this tenant: its first LAN
  // address of each family.
  std::optional<std::array<uint8_t, 4>> icmp_source4;
  std::optional<std::array<uint8_t, 16>> icmp_source6;
};

struct PeerVtep {
  bool ipv6 = false;
  std::array<uint8_t, 16> address{};
  uint16_t peer = 0;
  uint16_t line = 0;  // index into lines
};

// One receive queue a worker polls.
struct RxQueue {
  uint16_t port = 0;
  uint16_t queue = 0;
};

// A route as `mcgwctl show routes` lists it.
struct RouteView {
  std::string tenant;
  std::string prefix;
  std::string via;  // "peer X", "10.1.0.1 on lan0", "connected lan0"
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
  std::vector<LineEntry> lines;
  std::vector<PeerVtep> vteps;
  std::vector<std::string> peer_names;
  // Per peer: (VNI, tunnel index), for decapsulation.
  std::vector<std::vector<std::pair<uint32_t, uint16_t>>> peer_vnis;
  std::vector<std::vector<RxQueue>> poll;  // per worker
  uint32_t idle_sleep_max_us = 200;
  std::vector<RouteView> route_views;
  std::vector<std::array<uint8_t, 4>> local4;
  std::vector<std::array<uint8_t, 16>> local6;

  // The MAC of a neighbour on a port, for connected destinations.
  // family_v6 selects the address length (4 or 16 bytes at `address`).
  bool neighbor(uint16_t port, bool v6, const uint8_t* address, Mac* mac) const;

  // The tunnel index for a decapsulated packet's peer and VNI.
  bool tunnelFor(uint16_t peer, uint32_t vni, uint16_t* tunnel) const {
    for (const auto& [v, t] : peer_vnis[peer]) {
      if (v == vni) {
        *tunnel = t;
        return true;
      }
    }
    return false;
  }

  // Whether address (4 or 16 bytes) is one of the gateway's own.
  bool isLocal(bool v6, const uint8_t* address) const;

 private:
  friend class TablesBuilder;
  ForwardingTables() = default;
  rte_hash* neighbors_ = nullptr;
  std::vector<Mac> neighbor_macs_;
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

class TablesBuilder {
 public:
  TablesBuilder() : line_slots_(kMaxLines), tunnel_slots_(kMaxTunnels) {}

  // Builds a snapshot from the config and the open ports (by port name) for
  // `workers` workers.  FIBs whose routes did not change are shared with
  // `previous`.  Fails with a message, leaving nothing behind.
  Result<std::unique_ptr<ForwardingTables>, std::string> build(
      const config::Config& config, const std::map<std::string, OpenPort>& ports, unsigned workers,
      const ForwardingTables* previous);

  // Slots assigned afresh by the last build (their counters restart).
  const std::vector<uint16_t>& freshLineSlots() const { return fresh_lines_; }
  const std::vector<uint16_t>& freshTunnelSlots() const { return fresh_tunnels_; }

 private:
  SlotMap line_slots_;
  SlotMap tunnel_slots_;
  std::vector<uint16_t> fresh_lines_, fresh_tunnels_;
  uint64_t generation_ = 0;
};

}  // namespace mcgw::engine
