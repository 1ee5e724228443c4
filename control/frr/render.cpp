#include "control/frr/render.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

namespace mcgw::frr {

using config::Config;
using config::Family;
using config::IpPrefix;

namespace {

// dplane_fpm_nl's port when `fpm address` names none: written out it would
// not come back from `show running-config`, and frr-reload.py would see a
// difference on every reload.
constexpr uint16_t kFpmDefaultPort = 2620;
// bfdd's defaults for a profile; lines with them do not come back either.
constexpr uint16_t kBfdDefaultIntervalMs = 300;
constexpr uint8_t kBfdDefaultMultiplier = 3;
constexpr uint16_t kBgpDefaultKeepalive = 60;
constexpr uint16_t kBgpDefaultHold = 180;
// Equal-cost paths bgpd may hand to zebra: the fast path spreads a peer's
// traffic over at most 8 lines.
constexpr int kMaximumPaths = 8;
// A line's session crosses the underlay's routers, whose number the config
// does not know; the session is bound to its addresses, not to a TTL.
constexpr int kLineMultihopTtl = 255;

bool isV6(const config::IpAddress& a) {
  return a.family == Family::V6;
}

// One BFD profile per distinct (interval, multiplier): "mcgw-100x3".
std::string bfdProfile(uint16_t interval_ms, uint8_t multiplier) {
  return "mcgw-" + std::to_string(interval_ms) + "x" + std::to_string(multiplier);
}

// Names of the filters.  Site and peer names are YANG `name`s (a letter,
// then letters, digits, '_', '.', '-'; at most 63): every one is a valid FRR
// WORD and fits FRR's names, so they are used as they are.
std::string sitePrefixList(const std::string& site, bool v6) {
  return (v6 ? "MCGW-SITE6-" : "MCGW-SITE-") + site;
}
std::string inRouteMap(const std::string& site, bool v6) {
  return (v6 ? "MCGW-IN6-" : "MCGW-IN-") + site;
}
const char* announcePrefixList(bool v6) {
  return v6 ? "MCGW-ANNOUNCE6" : "MCGW-ANNOUNCE";
}
const char* outRouteMap(bool v6) {
  return v6 ? "MCGW-OUT6" : "MCGW-OUT";
}

// To LAN neighbours: the remote sites' ranges.
const char* remotePrefixList(bool v6) {
  return v6 ? "MCGW-REMOTE6" : "MCGW-REMOTE";
}
const char* lanOutRouteMap(bool v6) {
  return v6 ? "MCGW-OUT6-LAN" : "MCGW-OUT-LAN";
}

std::vector<IpPrefix> ofFamily(const std::vector<IpPrefix>& all, bool v6) {
  std::vector<IpPrefix> out;
  std::copy_if(all.begin(), all.end(), std::back_inserter(out),
               [&](const IpPrefix& p) { return isV6(p.address) == v6; });
  return out;
}

void sortUnique(std::vector<IpPrefix>& v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
}

// One prefix-list: the given permits, or a single `deny any` so that a list
// with nothing to permit refuses everything rather than being absent (a
// route-map matching an absent list would match nothing too, but FRR would
// show the reference as dangling).
void prefixList(std::ostringstream& out, bool v6, const std::string& name,
                const std::vector<std::string>& permits) {
  const char* kind = v6 ? "ipv6 prefix-list " : "ip prefix-list ";
  if (permits.empty()) {
    out << kind << name << " seq 5 deny any\n";
    return;
  }
  int seq = 5;
  for (const auto& p : permits) {
    out << kind << name << " seq " << seq << " permit " << p << "\n";
    seq += 5;
  }
}

// "P le 32": the range and everything more specific inside it (a site may
// announce its VPC's subnets one by one).
std::string withMoreSpecifics(const IpPrefix& p) {
  return p.toString() + " le " + std::to_string(p.address.bits());
}

constexpr const char* kOriginRouteMap = "MCGW-ORIGIN";
constexpr unsigned kOriginLocalPreference = 50;

// The entries of a route-map that sends or accepts what prefix_list permits.
// An out route-map carries the gateway's standing (BgpStanding): a `deny`
// entry before it with no match, which matches every route (withdraw), or
// the own AS prepended in it (prepend).  The standing is separate lines, so
// that it changes in a running FRR without touching the rest.
constexpr int kStandingDenySeq = 5;
constexpr int kOriginatedSeq = 8;
constexpr int kFilterSeq = 10;

std::string prependPath(uint32_t asn, uint8_t times) {
  std::string path;
  for (int i = 0; i < std::max<int>(times, 1); ++i) {
    path += (i ? " " : "") + std::to_string(asn);
  }
  return path;
}

void routeMap(std::ostringstream& out, const std::string& name, bool v6,
              const std::string& prefix_list, const BgpStanding* standing = nullptr,
              uint32_t asn = 0, bool originated_pass = false) {
  if (standing && standing->mode == BgpStanding::Mode::kWithdraw) {
    out << "route-map " << name << " deny " << kStandingDenySeq << "\n"
        << "exit\n!\n";
  }
  if (originated_pass) {
    // The gateway's own `network` routes carry their standing from
    // MCGW-ORIGIN (re-originated at once when it changes); the prepend
    // below is for a range's path learned from a LAN router.
    out << "route-map " << name << " permit " << kOriginatedSeq << "\n"
        << " match " << (v6 ? "ipv6" : "ip") << " address prefix-list " << prefix_list << "\n"
        << " match local-preference " << kOriginLocalPreference << "\n"
        << "exit\n!\n";
  }
  out << "route-map " << name << " permit " << kFilterSeq << "\n"
      << " match " << (v6 ? "ipv6" : "ip") << " address prefix-list " << prefix_list << "\n";
  if (standing && standing->mode == BgpStanding::Mode::kPrepend) {
    out << " set as-path prepend " << prependPath(asn, standing->prepend) << "\n";
  }
  out << "exit\n!\n";
}

// Which families have sessions, and which of those have LAN neighbours.
struct SessionFamilies {
  bool v6 = false;
  bool neighbor = false;
  bool neighbor_v6 = false;
};
SessionFamilies familiesOf(const std::vector<BgpSession>& sessions) {
  SessionFamilies f;
  for (const auto& s : sessions) {
    f.v6 = f.v6 || isV6(s.address);
    if (s.kind == BgpSession::Kind::kNeighbor) {
      f.neighbor = true;
      f.neighbor_v6 = f.neighbor_v6 || isV6(s.address);
    }
  }
  return f;
}

}  // namespace

std::vector<BgpSession> bgpSessions(const Config& config) {
  std::vector<BgpSession> out;
  if (!config.bgp.enabled) {
    return out;
  }
  const auto& bgp = config.bgp;
  for (const auto& p : config.peers) {
    if (!p.asn) {
      continue;  // no BGP to this peer: static routes only
    }
    for (const auto& l : p.lines) {
      BgpSession s;
      s.kind = BgpSession::Kind::kLine;
      s.peer = p.name;
      s.line = l.name;
      s.port = l.port;
      s.site = p.name;
      s.address = l.remote_vtep;
      s.local = l.local_vtep;
      s.asn = *p.asn;
      s.bfd = bgp.bfd_enabled;
      s.bfd_interval_ms = l.bfd_interval_ms.value_or(bgp.bfd_interval_ms);
      s.bfd_multiplier = l.bfd_multiplier.value_or(bgp.bfd_multiplier);
      s.maximum_prefix = bgp.maximum_prefix;
      out.push_back(std::move(s));
    }
  }
  for (const auto& n : bgp.neighbors) {
    BgpSession s;
    s.kind = BgpSession::Kind::kNeighbor;
    s.port = n.port;
    s.site = n.site;
    s.address = n.address;
    s.asn = n.asn;
    s.bfd = n.bfd;
    s.bfd_interval_ms = n.bfd_interval_ms.value_or(bgp.bfd_interval_ms);
    s.bfd_multiplier = n.bfd_multiplier.value_or(bgp.bfd_multiplier);
    s.maximum_prefix = n.maximum_prefix.value_or(bgp.maximum_prefix);
    out.push_back(std::move(s));
  }
  return out;
}

namespace {

using RangesBySite = std::map<std::string, std::vector<IpPrefix>, std::less<>>;

// siteRanges of every site the plan names, in one pass over the plan (a plan
// may hold tens of thousands of VPCs).
RangesBySite rangesBySite(const Config& config) {
  const auto& plan = config.address_plan;
  std::map<IpPrefix, std::vector<const config::MappedRange*>> by_real;
  for (const auto& m : plan.mapped_ranges) {
    by_real[m.real].push_back(&m);
  }
  RangesBySite out;
  for (const auto& v : plan.vpcs) {
    if (v.site.empty()) {
      continue;  // served by no site: nobody announces it
    }
    auto& ranges = out[v.site];
    for (const auto& p : v.prefixes) {
      // A mapped range stands for its real range where the real range
      // lives: at the mapping's site, or at the site of the VPC with that
      // prefix when the mapping names none.
      const config::MappedRange* mapped = nullptr;
      if (auto it = by_real.find(p); it != by_real.end()) {
        for (const config::MappedRange* m : it->second) {
          if (m->site == v.site || m->site.empty()) {
            mapped = m;
            break;
          }
        }
      }
      ranges.push_back(mapped ? mapped->mapped : p);
    }
  }
  // The real range of a legacy overlap is not a VPC of the plan (the plan
  // is overlap-free); its site is reached at the mapped range.
  for (const auto& m : plan.mapped_ranges) {
    if (!m.site.empty()) {
      out[m.site].push_back(m.mapped);
    }
  }
  for (auto& [site, ranges] : out) {
    sortUnique(ranges);
  }
  return out;
}

const std::vector<IpPrefix>& rangesOf(const RangesBySite& all, std::string_view site) {
  static const std::vector<IpPrefix> kNone;
  auto it = all.find(site);
  return it == all.end() ? kNone : it->second;
}

std::vector<IpPrefix> remoteRanges(const Config& config, const RangesBySite& all) {
  std::vector<IpPrefix> out;
  for (const auto& [site, ranges] : all) {
    if (site != config.node.site) {
      out.insert(out.end(), ranges.begin(), ranges.end());
    }
  }
  sortUnique(out);
  return out;
}

}  // namespace

std::vector<IpPrefix> siteRanges(const Config& config, std::string_view site) {
  return rangesOf(rangesBySite(config), site);
}

std::vector<IpPrefix> announcedRanges(const Config& config) {
  if (!config.address_plan.vpcs.empty()) {
    return siteRanges(config, config.node.site);
  }
  std::vector<IpPrefix> out;
  for (const auto& p : config.ports) {
    if (p.role != config::PortRole::kLan) {
      continue;
    }
    for (const auto& a : p.addresses) {
      out.push_back(a.network());
    }
  }
  sortUnique(out);
  return out;
}

std::vector<IpPrefix> remoteRanges(const Config& config) {
  return remoteRanges(config, rangesBySite(config));
}

const char* toString(BgpStanding::Mode mode) {
  switch (mode) {
    case BgpStanding::Mode::kActive:
      return "active";
    case BgpStanding::Mode::kPrepend:
      return "prepend";
    case BgpStanding::Mode::kWithdraw:
      return "withdraw";
  }
  return "?";
}

std::vector<std::string> outRouteMaps(const Config& config) {
  std::vector<std::string> out;
  if (!config.bgp.enabled) {
    return out;
  }
  const SessionFamilies f = familiesOf(bgpSessions(config));
  for (bool v6 : {false, true}) {
    if (v6 && !f.v6) {
      break;
    }
    out.push_back(outRouteMap(v6));
    if (v6 ? f.neighbor_v6 : f.neighbor) {
      out.push_back(lanOutRouteMap(v6));
    }
  }
  return out;
}

namespace {

// `router bgp ASN` with every `network P route-map MCGW-ORIGIN` line of the
// rendering (families with sessions), for vtysh in config mode.
void appendNetworks(std::vector<std::string>& out, const Config& config) {
  const std::vector<IpPrefix> announced = announcedRanges(config);
  if (announced.empty()) {
    return;
  }
  out.push_back("router bgp " + std::to_string(config.bgp.asn));
  const bool v6_sessions = familiesOf(bgpSessions(config)).v6;
  for (bool v6 : {false, true}) {
    const auto ranges = ofFamily(announced, v6);
    if (ranges.empty() || (v6 && !v6_sessions)) {
      continue;
    }
    out.push_back(std::string("address-family ") + (v6 ? "ipv6" : "ipv4") + " unicast");
    for (const auto& p : ranges) {
      out.push_back("network " + p.toString() + " route-map " + kOriginRouteMap);
    }
    out.push_back("exit-address-family");
  }
  out.push_back("exit");
}

}  // namespace

std::vector<std::string> reoriginateCommands(const Config& config) {
  if (!config.bgp.enabled || announcedRanges(config).empty()) {
    return {};
  }
  std::vector<std::string> out = {"configure terminal"};
  appendNetworks(out, config);
  out.push_back("end");
  return out;
}

std::vector<std::string> standingCommands(const Config& config, const BgpStanding& from,
                                          const BgpStanding& to) {
  using Mode = BgpStanding::Mode;
  if (from == to || !config.bgp.enabled) {
    return {};
  }
  std::vector<std::string> out = {"configure terminal"};
  const std::string filter = " permit " + std::to_string(kFilterSeq);
  const std::string deny = " deny " + std::to_string(kStandingDenySeq);
  // Per route-map: what stops or weakens an announcement is added before
  // what strengthens it is removed, so that no moment sends more than
  // either end does.
  const std::vector<IpPrefix> announced = announcedRanges(config);
  std::vector<std::string> maps = outRouteMaps(config);
  if (!announced.empty()) {
    maps.push_back(kOriginRouteMap);
  }
  for (const auto& name : maps) {
    if (to.mode == Mode::kWithdraw && from.mode != Mode::kWithdraw) {
      out.insert(out.end(), {"route-map " + name + deny, "exit"});
    }
    if (to.mode == Mode::kPrepend) {
      // Replaces a prepend of another length (one `set` of a kind per entry).
      out.insert(out.end(),
                 {"route-map " + name + filter,
                  "set as-path prepend " + prependPath(config.bgp.asn, to.prepend), "exit"});
    } else if (from.mode == Mode::kPrepend) {
      out.insert(out.end(), {"route-map " + name + filter, "no set as-path prepend", "exit"});
    }
    if (from.mode == Mode::kWithdraw && to.mode != Mode::kWithdraw) {
      out.push_back("no route-map " + name + deny);
    }
  }
  // The own ranges again: bgpd applies MCGW-ORIGIN anew and sends the
  // change now (a `network` entered again is originated again).
  appendNetworks(out, config);
  out.push_back("end");
  // Routes learned from LAN routers, and what LAN neighbours are sent:
  // through the out route-maps, after bgpd's refresh delay.
  out.push_back(std::string(kSoftRefresh) + " out");
  return out;
}

std::string renderFrrConfig(const Config& config, const BgpStanding& standing) {
  if (!config.bgp.enabled) {
    return "";
  }
  const auto& bgp = config.bgp;
  const std::vector<BgpSession> sessions = bgpSessions(config);
  const RangesBySite ranges = rangesBySite(config);
  const std::vector<IpPrefix> announced = announcedRanges(config);
  // Without a plan nothing says which ranges a site owns: every route is
  // accepted and the maximum-prefix limit is the only guard.
  const bool open_import = config.address_plan.vpcs.empty();
  // The same families outRouteMaps() finds (standingCommands changes those).
  const SessionFamilies families = familiesOf(sessions);
  const bool any_v6 = families.v6;
  const bool any_neighbor = families.neighbor, any_neighbor_v6 = families.neighbor_v6;
  const std::vector<IpPrefix> remote = remoteRanges(config, ranges);
  std::set<std::string> sites, sites_v6;
  std::set<std::pair<uint16_t, uint8_t>> profiles;
  for (const auto& s : sessions) {
    sites.insert(s.site);
    if (isV6(s.address)) {
      sites_v6.insert(s.site);
    }
    if (s.bfd) {
      profiles.insert({s.bfd_interval_ms, s.bfd_multiplier});
    }
  }

  std::ostringstream out;
  out << "frr defaults traditional\n"
      << "hostname " << config.node.name << "\n"
      << "service integrated-vtysh-config\n"
      << "!\n";
  // The gateway's kernel is a host, not a router: the fast path forwards.
  // Said explicitly because frr-reload.py switches forwarding on when the
  // file does not say (it "removes" zebra's `no ip forwarding`).
  out << "no ip forwarding\n"
      << "no ipv6 forwarding\n"
      << "!\n";
  out << "fpm address " << bgp.fpm_address.toString();
  if (bgp.fpm_port != kFpmDefaultPort) {
    out << " port " << bgp.fpm_port;
  }
  out << "\n!\n";

  if (!profiles.empty()) {
    out << "bfd\n";
    for (const auto& [interval, multiplier] : profiles) {
      out << " profile " << bfdProfile(interval, multiplier) << "\n";
      if (interval != kBfdDefaultIntervalMs) {
        out << "  receive-interval " << interval << "\n"
            << "  transmit-interval " << interval << "\n";
      }
      if (multiplier != kBfdDefaultMultiplier) {
        out << "  detect-multiplier " << int(multiplier) << "\n";
      }
      out << " exit\n !\n";
    }
    out << "exit\n!\n";
  }

  // Prefix-lists, then the route-maps that use them.
  for (bool v6 : {false, true}) {
    if (v6 && !any_v6) {
      break;
    }
    std::vector<std::string> permits;
    for (const auto& p : ofFamily(announced, v6)) {
      permits.push_back(p.toString());
    }
    prefixList(out, v6, announcePrefixList(v6), permits);
    for (const auto& site : v6 ? sites_v6 : sites) {
      permits.clear();
      if (open_import) {
        permits.push_back(v6 ? "::/0 le 128" : "0.0.0.0/0 le 32");
      } else {
        for (const auto& p : ofFamily(rangesOf(ranges, site), v6)) {
          permits.push_back(withMoreSpecifics(p));
        }
      }
      prefixList(out, v6, sitePrefixList(site, v6), permits);
    }
    if (v6 ? any_neighbor_v6 : any_neighbor) {
      permits.clear();
      if (open_import) {
        permits.push_back(v6 ? "::/0 le 128" : "0.0.0.0/0 le 32");
      } else {
        for (const auto& p : ofFamily(remote, v6)) {
          permits.push_back(withMoreSpecifics(p));
        }
      }
      prefixList(out, v6, remotePrefixList(v6), permits);
    }
    out << "!\n";
  }
  for (bool v6 : {false, true}) {
    if (v6 && !any_v6) {
      break;
    }
    for (const auto& site : v6 ? sites_v6 : sites) {
      routeMap(out, inRouteMap(site, v6), v6, sitePrefixList(site, v6));
    }
    routeMap(out, outRouteMap(v6), v6, announcePrefixList(v6), &standing, bgp.asn,
             !announced.empty());
    if (v6 ? any_neighbor_v6 : any_neighbor) {
      routeMap(out, lanOutRouteMap(v6), v6, remotePrefixList(v6), &standing, bgp.asn);
    }
  }
  // This site's ranges are originated with a lower local preference than a
  // path learned for them: a range that an IDC router on the LAN announces
  // is reached through that router (the originated path, with no next hop,
  // would win by weight and never reach zebra), and still announced to the
  // peers while the router is gone.
  // It carries the standing for them (withdraw: a deny entry first;
  // prepend: in the permit entry), so that a change re-originates them at
  // once (standingCommands) rather than after bgpd's refresh delay.
  if (!announced.empty()) {
    if (standing.mode == BgpStanding::Mode::kWithdraw) {
      out << "route-map " << kOriginRouteMap << " deny " << kStandingDenySeq << "\n"
          << "exit\n!\n";
    }
    out << "route-map " << kOriginRouteMap << " permit 10\n";
    if (standing.mode == BgpStanding::Mode::kPrepend) {
      out << " set as-path prepend " << prependPath(bgp.asn, standing.prepend) << "\n";
    }
    out << " set local-preference " << kOriginLocalPreference << "\n"
        << " set weight 0\n"
        << "exit\n!\n";
  }

  // bgpd's default (5 s) holds every route-map change back, and a standing
  // change must reach the peers at once.  With 0 bgpd applies a changed
  // route-map only to what it sends or receives afterwards: mcgwd follows
  // every change of the filters with a soft refresh (kSoftRefresh).
  out << "bgp route-map delay-timer 0\n"
      << "!\n";
  out << "router bgp " << bgp.asn << "\n"
      << " bgp router-id " << bgp.router_id.toString() << "\n"
      << " no bgp default ipv4-unicast\n"
      << " no bgp ebgp-requires-policy\n"
      << " no bgp network import-check\n";
  if (bgp.graceful_restart) {
    out << " bgp graceful-restart\n";
  }
  out << " bgp bestpath as-path multipath-relax\n";
  // bgpd's defaults (60 s, 180 s) do not come back from `show
  // running-config`; written out, frr-reload.py would see a difference.
  if (bgp.keepalive_s != kBgpDefaultKeepalive || bgp.hold_s != kBgpDefaultHold) {
    out << " timers bgp " << bgp.keepalive_s << " " << bgp.hold_s << "\n";
  }
  for (const auto& s : sessions) {
    const std::string n = " neighbor " + s.address.toString();
    out << n << " remote-as " << s.asn << "\n";
    // An update group of its own: bgpd delays an outbound refresh (a
    // changed standing) by 100 ms for a peer alone in its group and by
    // 500 ms for a group of several (BGP_ANNOUNCE_ROUTE_*DELAY_MS).
    out << n << " solo\n";
    if (s.kind == BgpSession::Kind::kLine) {
      out << n << " description " << s.peer << "/" << s.line << "\n"
          << n << " ebgp-multihop " << kLineMultihopTtl << "\n"
          << n << " update-source " << s.local->toString() << "\n";
    } else {
      out << n << " description neighbour site " << s.site << "\n";
    }
    if (isV6(s.address)) {
      out << n << " capability extended-nexthop\n";
    }
    if (s.bfd) {
      out << n << " bfd\n"
          << n << " bfd profile " << bfdProfile(s.bfd_interval_ms, s.bfd_multiplier) << "\n"
          << n << " bfd check-control-plane-failure\n";
    }
  }
  for (bool v6 : {false, true}) {
    if (v6 && !any_v6) {
      break;
    }
    out << " !\n address-family " << (v6 ? "ipv6" : "ipv4") << " unicast\n";
    for (const auto& p : ofFamily(announced, v6)) {
      out << "  network " << p.toString() << " route-map " << kOriginRouteMap << "\n";
    }
    for (const auto& s : sessions) {
      // An IPv6 session carries IPv4 routes too, with IPv6 next hops
      // (RFC 8950); an IPv4 session carries IPv4 only.
      if (v6 && !isV6(s.address)) {
        continue;
      }
      const std::string n = "  neighbor " + s.address.toString();
      // soft-reconfiguration inbound keeps what the neighbour sent before
      // the import filter: status counts what the filter refused
      // (`filtered-routes`), and a filter change needs no route refresh.
      out << n << " activate\n"
          << n << " soft-reconfiguration inbound\n"
          << n << " route-map " << inRouteMap(s.site, v6) << " in\n"
          << n << " route-map "
          << (s.kind == BgpSession::Kind::kLine ? outRouteMap(v6) : lanOutRouteMap(v6)) << " out\n"
          << n << " maximum-prefix " << s.maximum_prefix << "\n";
    }
    out << "  maximum-paths " << kMaximumPaths << "\n"
        << " exit-address-family\n";
  }
  out << "exit\n!\n";
  return out.str();
}

}  // namespace mcgw::frr
