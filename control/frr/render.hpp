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

// What LAN neighbours are sent: the plan's ranges of every site but this one
// (siteRanges of each), so that a router behind the gateway learns the
// remote VPCs; routes to them come from the peers and pass with their
// more-specifics.  Sorted, unique; empty with no VPC in the plan (then
// everything passes).
std::vector<config::IpPrefix> remoteRanges(const config::Config& config);

// FRR's integrated config (frr.conf) for zebra (FPM), bgpd, bfdd, staticd.
// Empty string when bgp is absent.
std::string renderFrrConfig(const config::Config& config);

}  // namespace mcgw::frr
