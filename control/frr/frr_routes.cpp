#include "control/frr/frr_routes.hpp"

#include <algorithm>
#include <set>

namespace mcgw::frr {

using config::IpAddress;
using config::IpPrefix;
using engine::Via;

namespace {

bool sameVia(const Via& a, const Via& b) {
  return a.kind == b.kind && a.peer == b.peer && a.port == b.port &&
         (a.kind != Via::Kind::kGateway || a.address == b.address);
}

IpPrefix truncated(const IpPrefix& p, uint8_t length) {
  IpPrefix q{p.address, length};
  return q.network();
}

const char* typeName(uint8_t type) {
  switch (type) {
    case 6:
      return "blackhole";
    case 7:
      return "unreachable";
    case 8:
      return "prohibit";
    default:
      return "non-unicast";
  }
}

// Where one next hop of a route of `claim.tenant` leads, or why nowhere.
Result<Via, std::string> viaOf(const config::Config& config, const Tenancy::Claim& claim,
                               const FpmNextHop& nh, const PortsByIfindex& ports) {
  if (!nh.gateway) {
    return unexpected(std::string("a next hop without an address (an interface route)"));
  }
  const std::string& tenant = claim.tenant;
  const IpAddress& gw = *nh.gateway;
  auto carries = [&](const config::PeerConfig& peer) {
    return peer.tenants.empty() ||
           std::find(peer.tenants.begin(), peer.tenants.end(), tenant) != peer.tenants.end();
  };
  auto tunnel = [](const std::string& peer) {
    Via via;
    via.kind = Via::Kind::kTunnel;
    via.peer = peer;
    return via;
  };
  // A peer's VTEP itself (on-link, or an IPv6 next hop of an IPv4 route).
  for (const auto& peer : config.peers) {
    for (const auto& line : peer.lines) {
      if (line.remote_vtep != gw) {
        continue;
      }
      if (!carries(peer)) {
        return unexpected("next hop " + gw.toString() + " is peer " + peer.name +
                          ", which does not carry tenant " + tenant);
      }
      return tunnel(peer.name);
    }
  }
  // A router on the tenant's LAN.
  for (const auto& port : config.ports) {
    if (port.role != config::PortRole::kLan || port.tenant != tenant) {
      continue;
    }
    for (const auto& a : port.addresses) {
      if (a.contains(gw)) {
        Via via;
        via.kind = Via::Kind::kGateway;
        via.address = gw;
        via.port = port.name;
        return via;
      }
    }
  }
  // The underlay next hop of lines (zebra resolved the peer's VTEP through
  // it): the peers with such a line on that interface.
  auto port = ports.find(nh.ifindex);
  std::vector<std::string> behind;
  for (const auto& peer : config.peers) {
    for (const auto& line : peer.lines) {
      const IpAddress hop = line.next_hop.value_or(line.remote_vtep);
      if (hop == gw && (port == ports.end() || port->second == line.port)) {
        behind.push_back(peer.name);
        break;
      }
    }
  }
  if (behind.empty()) {
    return unexpected("next hop " + gw.toString() +
                      " is neither a peer gateway's VTEP, nor the underlay next hop of a line, "
                      "nor on a LAN subnet of tenant " +
                      tenant);
  }
  std::string chosen;
  if (!claim.site.empty() && std::find(behind.begin(), behind.end(), claim.site) != behind.end()) {
    chosen = claim.site;
  } else if (behind.size() == 1) {
    chosen = behind.front();
  } else {
    std::string names;
    for (const auto& b : behind) {
      names += (names.empty() ? "" : ", ") + b;
    }
    return unexpected("next hop " + gw.toString() + " leads to several peers (" + names +
                      ") and the plan gives the prefix no site among them");
  }
  const config::PeerConfig* peer = config.findPeer(chosen);
  if (!carries(*peer)) {
    return unexpected("next hop " + gw.toString() + " leads to peer " + chosen +
                      ", which does not carry tenant " + tenant);
  }
  return tunnel(chosen);
}

}  // namespace

bool Translation::operator==(const Translation& o) const {
  return tenant == o.tenant && vias.size() == o.vias.size() &&
         std::equal(vias.begin(), vias.end(), o.vias.begin(), sameVia);
}

Tenancy::Tenancy(const config::Config& config) {
  if (config.tenants.size() == 1) {
    single_ = config.tenants.front().name;
  }
  const auto& plan = config.address_plan;
  plan_ = !plan.vpcs.empty();
  // A legacy VPC's prefix that is the real range of a mapped range at its
  // site is reached at the mapped range (below), never at the real one:
  // another site may use the same range (docs/address-plan.md).
  std::set<std::pair<IpPrefix, std::string>> behind_mapping;
  for (const auto& m : plan.mapped_ranges) {
    behind_mapping.emplace(m.real.network(), config::siteOf(config, m));
  }
  for (const auto& vpc : plan.vpcs) {
    Claim c{vpc.tenant.empty() ? single_ : vpc.tenant, vpc.site};
    for (const auto& p : vpc.prefixes) {
      const IpPrefix net = p.network();
      if (behind_mapping.count({net, vpc.site})) {
        continue;
      }
      ranges_[net] = c;
    }
  }
  // A mapped range belongs to the tenant of the VPC at its site whose range
  // holds the real one (VPCs never overlap within a site's view: the plan
  // refuses it); without one, to the single tenant.  It lives at its site.
  for (const auto& m : plan.mapped_ranges) {
    const std::string site = config::siteOf(config, m);
    Claim c{single_, site};
    for (const auto& vpc : plan.vpcs) {
      if (vpc.site != site || vpc.tenant.empty()) {
        continue;
      }
      for (const auto& p : vpc.prefixes) {
        if (p.length <= m.real.length && p.contains(m.real.address)) {
          c.tenant = vpc.tenant;
        }
      }
    }
    ranges_.try_emplace(m.mapped.network(), c);
  }
}

Result<Tenancy::Claim, std::string> Tenancy::claim(const IpPrefix& prefix) const {
  if (!plan_) {
    if (!single_.empty()) {
      return Claim{single_, ""};
    }
    return unexpected(std::string(
        "no tenant claims it: the address plan has no VPC and there are several tenants"));
  }
  // The longest plan range that holds the prefix: at most one lookup per
  // prefix length.
  for (int len = prefix.length; len >= 0; --len) {
    auto it = ranges_.find(truncated(prefix, static_cast<uint8_t>(len)));
    if (it == ranges_.end()) {
      continue;
    }
    if (it->second.tenant.empty()) {
      return unexpected("no tenant claims it: plan range " + it->first.toString() +
                        " has no tenant and there are several tenants");
    }
    return it->second;
  }
  return unexpected(
      std::string("no tenant claims it: outside every VPC and mapped range of the plan"));
}

Result<Translation, std::string> translate(const config::Config& config, const Tenancy& tenancy,
                                           const FpmRoute& route, const PortsByIfindex& ports) {
  if (route.table != kMainTable) {
    return unexpected("kernel table " + std::to_string(route.table) +
                      ": mcgw takes the default VRF (table 254) only");
  }
  if (route.type != 1) {
    return unexpected(std::string(typeName(route.type)) +
                      " route: the fast path forwards unicast routes only");
  }
  auto claim = tenancy.claim(route.prefix);
  if (!claim) {
    return unexpected(claim.error());
  }
  if (config.findTenant(claim->tenant) == nullptr) {
    return unexpected("tenant " + claim->tenant + " of the plan is not configured here");
  }
  Translation out{claim->tenant, {}};
  std::string problem;
  for (const auto& nh : route.next_hops) {
    auto via = viaOf(config, *claim, nh, ports);
    if (!via) {
      if (problem.empty()) {
        problem = via.error();
      }
      continue;
    }
    bool dup = std::any_of(out.vias.begin(), out.vias.end(),
                           [&](const Via& v) { return sameVia(v, *via); });
    if (!dup && out.vias.size() < engine::kMaxEcmp) {
      out.vias.push_back(std::move(*via));
    }
  }
  // Usable paths win over unusable ones (as zebra would skip an inactive
  // next hop); a route with none is refused with the first reason.
  if (out.vias.empty()) {
    return unexpected(problem.empty() ? std::string("no next hop") : problem);
  }
  return out;
}

std::string describe(const std::vector<Via>& vias) {
  std::string s;
  for (const auto& v : vias) {
    s += s.empty() ? "" : " + ";
    switch (v.kind) {
      case Via::Kind::kTunnel:
        s += "peer " + v.peer;
        break;
      case Via::Kind::kGateway:
        s += v.address.toString() + (v.port.empty() ? "" : " on " + v.port);
        break;
      case Via::Kind::kConnected:
        s += "connected " + v.port;
        break;
      case Via::Kind::kLocal:
        s += "local";
        break;
    }
  }
  return s;
}

FrrRoutes::FrrRoutes(config::ConfigPtr config) : config_(std::move(config)), tenancy_(*config_) {}

Result<FpmRoute, std::string> FrrRoutes::resolve(const FpmRoute& route) const {
  if (!route.nh_id) {
    return route;
  }
  auto it = groups_.find(*route.nh_id);
  if (it == groups_.end()) {
    return unexpected("next-hop object " + std::to_string(*route.nh_id) + " is unknown");
  }
  FpmRoute r = route;
  r.next_hops.clear();
  const FpmNextHopObject& obj = it->second;
  if (obj.blackhole) {
    r.type = 6;
  }
  if (obj.next_hop) {
    r.next_hops.push_back(*obj.next_hop);
  }
  for (const auto& [id, weight] : obj.group) {
    auto m = groups_.find(id);
    if (m == groups_.end() || !m->second.next_hop) {
      return unexpected("next-hop group " + std::to_string(obj.id) + " member " +
                        std::to_string(id) + " is unknown");
    }
    FpmNextHop nh = *m->second.next_hop;
    nh.weight = static_cast<uint16_t>(weight + 1);
    r.next_hops.push_back(nh);
  }
  return r;
}

void FrrRoutes::withdrawInstalled(const IpPrefix& prefix, Entry& e,
                                  std::vector<engine::RouteUpdate>& out) {
  if (!e.installed) {
    return;
  }
  engine::RouteUpdate u;
  u.tenant = e.installed->tenant;
  u.source = engine::RouteSource::kFrr;
  u.prefix = prefix;
  u.withdraw = true;
  out.push_back(std::move(u));
  e.installed.reset();
}

void FrrRoutes::settle(const IpPrefix& prefix, Entry& e, std::vector<engine::RouteUpdate>& out) {
  Result<Translation, std::string> t = unexpected(std::string());
  if (auto resolved = resolve(e.route); resolved) {
    t = translate(*config_, tenancy_, *resolved, ports_);
  } else {
    t = unexpected(resolved.error());
  }
  if (!t) {
    e.refused = t.error();
    withdrawInstalled(prefix, e, out);
    return;
  }
  e.refused.clear();
  if (e.installed && *e.installed == *t) {
    return;
  }
  if (e.installed && e.installed->tenant != t->tenant) {
    withdrawInstalled(prefix, e, out);
  }
  engine::RouteUpdate u;
  u.tenant = t->tenant;
  u.source = engine::RouteSource::kFrr;
  u.prefix = prefix;
  u.vias = t->vias;
  u.distance = engine::defaultDistance(engine::RouteSource::kFrr);
  out.push_back(std::move(u));
  e.installed = std::move(*t);
}

std::vector<engine::RouteUpdate> FrrRoutes::receive(const std::vector<FpmMessage>& messages) {
  std::vector<engine::RouteUpdate> out;
  for (const auto& m : messages) {
    ++messages_;
    if (const auto* obj = std::get_if<FpmNextHopObject>(&m)) {
      auto known = groups_.find(obj->id);
      if (obj->withdraw) {
        if (known == groups_.end()) {
          continue;
        }
        groups_.erase(known);
      } else {
        if (known != groups_.end() && known->second == *obj) {
          continue;  // sent again after a reconnect, unchanged
        }
        groups_[obj->id] = *obj;
      }
      // Routes that use it, or a group holding it, follow it: zebra does not
      // send them again.
      std::set<uint32_t> affected{obj->id};
      for (const auto& [id, g] : groups_) {
        for (const auto& member : g.group) {
          if (member.first == obj->id) {
            affected.insert(id);
          }
        }
      }
      for (auto& [prefix, e] : entries_) {
        if (!e.stale && e.route.nh_id && affected.count(*e.route.nh_id)) {
          settle(prefix, e, out);
        }
      }
      continue;
    }
    const auto& r = std::get<FpmRoute>(m);
    // The kernel's own routes that zebra passes on (connected subnets,
    // routes added with ip route): the fast path has them from the config.
    if (r.protocol == kRtprotKernel || r.protocol == kRtprotBoot) {
      ++ignored_;
      continue;
    }
    // One VRF: routes of other kernel tables are not ours (and must not
    // touch the main table's entry of the same prefix).
    if (r.table != kMainTable) {
      ++other_tables_;
      continue;
    }
    const IpPrefix prefix = r.prefix.network();
    if (r.withdraw) {
      auto it = entries_.find(prefix);
      if (it != entries_.end()) {
        withdrawInstalled(prefix, it->second, out);
        entries_.erase(it);
      }
      continue;
    }
    Entry& e = entries_[prefix];
    e.route = r;
    e.stale = false;
    settle(prefix, e, out);
  }
  return out;
}

std::vector<engine::RouteUpdate> FrrRoutes::reconfigure(config::ConfigPtr next) {
  config_ = std::move(next);
  tenancy_ = Tenancy(*config_);
  std::vector<engine::RouteUpdate> out;
  for (auto& [prefix, e] : entries_) {
    settle(prefix, e, out);
  }
  return out;
}

void FrrRoutes::newSession() {
  markStale();
  groups_.clear();
}

void FrrRoutes::markStale() {
  for (auto& [prefix, e] : entries_) {
    e.stale = true;
  }
}

std::vector<engine::RouteUpdate> FrrRoutes::sweep() {
  std::vector<engine::RouteUpdate> out;
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (it->second.stale) {
      withdrawInstalled(it->first, it->second, out);
      it = entries_.erase(it);
    } else {
      ++it;
    }
  }
  return out;
}

void FrrRoutes::refuse(const engine::RouteUpdate& update, const std::string& reason) {
  auto it = entries_.find(update.prefix);
  if (it == entries_.end()) {
    return;
  }
  it->second.installed.reset();
  it->second.refused = reason;
}

FrrRoutes::Counts FrrRoutes::counts() const {
  Counts c;
  c.routes = entries_.size();
  c.next_hop_groups = groups_.size();
  c.messages = messages_;
  c.ignored = ignored_;
  c.other_tables = other_tables_;
  for (const auto& [prefix, e] : entries_) {
    c.installed += e.installed ? 1 : 0;
    c.refused += e.refused.empty() ? 0 : 1;
    c.stale += e.stale ? 1 : 0;
  }
  return c;
}

std::vector<std::pair<std::string, std::string>> FrrRoutes::refusedList() const {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [prefix, e] : entries_) {
    if (!e.refused.empty()) {
      out.emplace_back(prefix.toString(), e.refused);
      if (out.size() == kMaxRefusedListed) {
        break;
      }
    }
  }
  return out;
}

}  // namespace mcgw::frr
