// FRR's integrated configuration (frr.conf) rendered from mcgw's config: a
// pure function of the config, so the same config always gives the same
// bytes and a reload that changes nothing FRR sees changes no line.
// docs/routing.md, "What mcgwd renders for FRR", gives each rule its reason.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.hpp"

namespace mcgw::frr {

// One BGP session FRR runs for the gateway.
struct BgpSession {
  enum class Kind { kLine, kNeighbor };
  Kind kind = Kind::kLine;
  std::string peer, line;  // kLine: the peer site and the line
  std::string port;  // the mcgw port the session runs through (line's port / neighbour's port)
  std::string site;  // whose plan ranges it may announce: peer name (= its site) for lines,
                     // neighbour's site
  config::IpAddress address;  // the remote end: line's remote-vtep, neighbour's address
  std::optional<config::IpAddress> local;  // update-source: line's local-vtep; none for neighbours
  uint32_t asn = 0;
  bool bfd = true;
  uint16_t bfd_interval_ms = 100;
  uint8_t bfd_multiplier = 3;
  uint32_t maximum_prefix = 10000;
  bool operator==(const BgpSession&) const = default;
};

// The sessions in config order: the lines of each peer, then the neighbours.
// Empty when bgp is absent.
std::vector<BgpSession> bgpSessions(const config::Config& config);

// The plan's ranges of a site: the prefixes of its VPCs (address-plan
// clouds/regions/vpcs with that site), each VPC prefix that is the `real` of
// a mapped range of that site (or of none) replaced by the mapped range, and
// the mapped ranges of that site.  Sorted, unique.
std::vector<config::IpPrefix> siteRanges(const config::Config& config, std::string_view site);

// What this gateway announces: siteRanges(node.site); with no VPC in the plan
// at all, the subnets of its LAN ports.  Sorted, unique.
std::vector<config::IpPrefix> announcedRanges(const config::Config& config);

// What LAN neighbours are sent: the plan's ranges of every site but this one
// (siteRanges of each), so that a router behind the gateway learns the
// remote VPCs; routes to them come from the peers and pass with their
// more-specifics.  Sorted, unique; empty with no VPC in the plan (then
// everything passes).
std::vector<config::IpPrefix> remoteRanges(const config::Config& config);

// What the gateway's announcements say about its VRRP standing (issue 14,
// docs/routing.md "BGP follows VRRP"): while it is a Backup of a group with
// `bgp-backup` prepend or withdraw, the routes it sends (the site's ranges to
// the peers' lines, the remote ranges to LAN neighbours) carry its own AS
// prepended `prepend` times, or are not sent at all, so that the peers and
// the LAN routers prefer the Active gateway.  The daemon's VRRP subsystem
// decides it; the rendering only says it.
struct BgpStanding {
  enum class Mode { kActive, kPrepend, kWithdraw };
  Mode mode = Mode::kActive;
  uint8_t prepend = 3;  // kPrepend: how many times the own AS is prepended (at least 1)
  // Equal when they render the same (prepend counts only in kPrepend).
  bool operator==(const BgpStanding& o) const {
    return mode == o.mode && (mode != Mode::kPrepend || prepend == o.prepend);
  }
};
// "active", "prepend", "withdraw".
const char* toString(BgpStanding::Mode mode);

// FRR's integrated config (frr.conf) for zebra (FPM), bgpd, bfdd, staticd,
// with the standing in its out route-maps.  Empty string when bgp is absent.
std::string renderFrrConfig(const config::Config& config, const BgpStanding& standing = {});

// The names of the out route-maps renderFrrConfig(config) has (those the
// standing changes): MCGW-OUT, MCGW-OUT-LAN, MCGW-OUT6, MCGW-OUT6-LAN, each
// when some session uses it.
std::vector<std::string> outRouteMaps(const config::Config& config);

// bgpd re-sends what every session is sent and filters again what it was sent
// (soft: the sessions stay up; `soft-reconfiguration inbound` keeps what came
// in).  Needed after each change of FRR's filters: the rendering sets
// `bgp route-map delay-timer 0`, with which bgpd applies a changed route-map
// only to routes it sends or receives afterwards.
inline constexpr const char* kSoftRefresh = "clear bgp * soft";

// The vtysh commands (for `vtysh -c ... -c ...`) that take a running FRR from
// renderFrrConfig(config, from) to renderFrrConfig(config, to): only the
// standing lines of the out route-maps and MCGW-ORIGIN, the own ranges
// originated again (reoriginateCommands: sent at once), then an outbound
// soft refresh (kSoftRefresh limited to `out`: the rest, after bgpd's
// refresh delay).  Empty when from and to render the same.
std::vector<std::string> standingCommands(const config::Config& config, const BgpStanding& from,
                                          const BgpStanding& to);

// The gateway's own ranges originated again (`network P route-map
// MCGW-ORIGIN` entered again, in config mode): bgpd applies MCGW-ORIGIN (the
// standing) anew and sends a change at once.  With `bgp route-map
// delay-timer 0` a changed MCGW-ORIGIN is applied to them only so (after
// frr-reload.py too).  Empty when nothing is announced.
std::vector<std::string> reoriginateCommands(const config::Config& config);

}  // namespace mcgw::frr
