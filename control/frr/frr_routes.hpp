// FRR's routes, as zebra sends them over FPM, turned into the fast path's
// route updates (source kFrr).  Pure: no sockets, no DPDK.
//
// A route's tenant comes from the address plan: the tenant of the VPC (or
// mapped range) that contains the prefix; with a single tenant and no VPC in
// the plan, every route is that tenant's.  A next hop that is a peer
// gateway's remote VTEP on one of its lines means "into the tunnel to that
// peer" (which line: the peer's line-mode over its healthy lines); a next
// hop on a LAN subnet of the tenant means "to that router".  Anything else
// is refused, kept with its reason, and shown (`mcgwctl status`, audit).
//
// zebra resends everything when it connects again: markStale() on a
// disconnect, and sweep() after the grace period withdraws what was not sent
// again.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "config/result.hpp"
#include "control/frr/fpm_codec.hpp"
#include "dataplane/engine/tables.hpp"

namespace mcgw::frr {

// The one kernel table FRR's default VRF uses; routes of other tables are refused.
inline constexpr uint32_t kMainTable = 254;
// zebra's protocol of the kernel's own routes: connected subnets and kernel
// routes (RTPROT_KERNEL), routes added by hand or at boot (RTPROT_BOOT).
inline constexpr uint8_t kRtprotKernel = 2;
inline constexpr uint8_t kRtprotBoot = 3;
// How many refused routes are listed (all are counted).
inline constexpr size_t kMaxRefusedListed = 1000;

// Which tenant claims a prefix, and at which site it lives: built once per
// config from the address plan.
class Tenancy {
 public:
  explicit Tenancy(const config::Config& config);
  struct Claim {
    std::string tenant;
    std::string site;  // "" when the plan does not say (no plan, a VPC without a site)
  };
  // The claim of the longest plan range that holds prefix, or why none.
  Result<Claim, std::string> claim(const config::IpPrefix& prefix) const;
  Result<std::string, std::string> tenantOf(const config::IpPrefix& prefix) const {
    auto c = claim(prefix);
    if (!c) {
      return unexpected(c.error());
    }
    return c->tenant;
  }

 private:
  std::map<config::IpPrefix, Claim> ranges_;  // VPC and mapped ranges ("" tenant = unknown)
  std::string single_;                        // the only tenant, if exactly one
  bool plan_ = false;                         // the plan has VPCs
};

// The kernel interfaces (ifindex → mcgw port) that zebra's next hops name.
using PortsByIfindex = std::map<uint32_t, std::string>;

// Where a route leads in the fast path.
struct Translation {
  std::string tenant;
  std::vector<engine::Via> vias;  // 1..kMaxEcmp
  bool operator==(const Translation&) const;
};

// A route with its next hops resolved (a next-hop group replaced by its
// members) → its translation, or why it is refused.  zebra resolves a BGP
// next hop that is not on-link (a peer's VTEP behind the underlay router)
// to the underlay next hop it leaves through: such a next hop (gateway and
// interface of a line) is a tunnel to the peer of that line whose site the
// plan gives the prefix (the import filters let a site's ranges in only
// from that site's sessions), or to the only peer behind it.
Result<Translation, std::string> translate(const config::Config& config, const Tenancy& tenancy,
                                           const FpmRoute& route, const PortsByIfindex& ports = {});
// "peer site-b", "10.1.0.254", "peer site-b + peer site-c".
std::string describe(const std::vector<engine::Via>& vias);

class FrrRoutes {
 public:
  explicit FrrRoutes(config::ConfigPtr config);
  // The kernel interfaces of the ports now (they change with reloads): used
  // by the next translations.
  void setPorts(PortsByIfindex ports) { ports_ = std::move(ports); }
  const PortsByIfindex& ports() const { return ports_; }

  // One batch of decoded messages: the route updates that make the fast
  // path follow them, in order.
  std::vector<engine::RouteUpdate> receive(const std::vector<FpmMessage>& messages);
  // A reload: every route translated again under next.
  std::vector<engine::RouteUpdate> reconfigure(config::ConfigPtr next);
  // zebra went away: every route stays, stale, until sent again.
  void markStale();
  // A new zebra session: routes stale, and the old session's next-hop
  // objects forgotten (zebra numbers them again; stale routes keep what
  // they have until sent again).
  void newSession();
  // The stale routes withdrawn.
  std::vector<engine::RouteUpdate> sweep();
  // The fast path refused an update (a full FIB, too many next hops): the
  // route is refused with that reason.  The caller withdrew it.
  void refuse(const engine::RouteUpdate& update, const std::string& reason);

  struct Entry {
    FpmRoute route;                        // as zebra sent it
    std::optional<Translation> installed;  // what the fast path has
    std::string refused;                   // why not, if not
    bool stale = false;
  };
  const std::map<config::IpPrefix, Entry>& entries() const { return entries_; }

  struct Counts {
    size_t routes = 0;     // prefixes zebra gave us
    size_t installed = 0;  // in the fast path's RIB
    size_t refused = 0;
    size_t stale = 0;
    size_t next_hop_groups = 0;
    uint64_t messages = 0;      // route and next-hop messages received
    uint64_t ignored = 0;       // the kernel's own routes (connected, kernel), not FRR's
    uint64_t other_tables = 0;  // route messages of another kernel table than 254: ignored
  };
  Counts counts() const;
  // At most kMaxRefusedListed refused routes: prefix and reason.
  std::vector<std::pair<std::string, std::string>> refusedList() const;

 private:
  // The route with its next-hop group's members as next hops, or why not.
  Result<FpmRoute, std::string> resolve(const FpmRoute& route) const;
  // Brings the fast path to entry's route: the updates go to out.
  void settle(const config::IpPrefix& prefix, Entry& entry, std::vector<engine::RouteUpdate>& out);
  void withdrawInstalled(const config::IpPrefix& prefix, Entry& entry,
                         std::vector<engine::RouteUpdate>& out);

  config::ConfigPtr config_;
  Tenancy tenancy_;
  PortsByIfindex ports_;
  std::map<config::IpPrefix, Entry> entries_;
  std::map<uint32_t, FpmNextHopObject> groups_;  // next-hop objects by id
  uint64_t messages_ = 0;
  uint64_t ignored_ = 0;
  uint64_t other_tables_ = 0;
};

}  // namespace mcgw::frr
