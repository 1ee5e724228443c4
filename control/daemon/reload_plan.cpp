#include "control/daemon/reload_plan.hpp"

#include <algorithm>
#include <map>
#include <set>

namespace mcgw::daemon {

bool needsReopen(const config::PortConfig& a, const config::PortConfig& b) {
  return a.pci != b.pci || a.vdev != b.vdev || a.rx_queues != b.rx_queues ||
         a.rx_descriptors != b.rx_descriptors || a.tx_descriptors != b.tx_descriptors;
}

namespace {

// Keyed entries of both configs: added, removed and changed keys, sorted.
template <typename T>
void compare(const std::map<std::string, T>& before, const std::map<std::string, T>& after,
             std::vector<std::string>& added, std::vector<std::string>& removed,
             std::vector<std::string>& changed) {
  for (const auto& [key, value] : before) {
    auto it = after.find(key);
    if (it == after.end()) {
      removed.push_back(key);
    } else if (!(it->second == value)) {
      changed.push_back(key);
    }
  }
  for (const auto& [key, value] : after) {
    if (!before.count(key)) {
      added.push_back(key);
    }
  }
}

std::map<std::string, config::LineConfig> linesOf(const config::Config& c) {
  std::map<std::string, config::LineConfig> out;
  for (const auto& p : c.peers) {
    for (const auto& l : p.lines) {
      out[p.name + "/" + l.name] = l;
    }
  }
  return out;
}

// A tunnel per peer and tenant it carries (all tenants when it names none);
// it changes with its peer's or its tenant's settings.
struct TunnelKey {
  const config::PeerConfig* peer;
  const config::TenantConfig* tenant;
  bool operator==(const TunnelKey& o) const { return *peer == *o.peer && *tenant == *o.tenant; }
};

std::map<std::string, TunnelKey> tunnelsOf(const config::Config& c) {
  std::map<std::string, TunnelKey> out;
  for (const auto& p : c.peers) {
    for (const auto& t : c.tenants) {
      if (p.tenants.empty() ||
          std::find(p.tenants.begin(), p.tenants.end(), t.name) != p.tenants.end()) {
        out.emplace(p.name + "/" + t.name, TunnelKey{&p, &t});
      }
    }
  }
  return out;
}

std::map<std::string, std::vector<config::StaticRoute>> routesOf(const config::Config& c) {
  std::map<std::string, std::vector<config::StaticRoute>> out;
  for (const auto& t : c.tenants) {
    out[t.name] = t.routes;
  }
  return out;
}

}  // namespace

ReloadPlan planReload(const config::Config& running, const config::Config& next) {
  ReloadPlan plan;
  plan.changes = config::diffConfigs(running, next);
  for (const auto& c : plan.changes) {
    if (c.needs_restart) {
      plan.restart_required.push_back(c.toString() +
                                      ": this needs a restart (systemctl restart mcgw)");
    }
  }

  for (const auto& c : plan.changes) {
    if (c.section != "port") {
      continue;
    }
    const config::PortConfig* before = running.findPort(c.name);
    const config::PortConfig* after = next.findPort(c.name);
    if (c.kind == config::ConfigChange::Kind::kChanged && before && after &&
        !needsReopen(*before, *after)) {
      plan.adjust.push_back(c.name);
      continue;
    }
    if (before) {
      plan.close.push_back(c.name);
    }
    if (after) {
      plan.open.push_back(c.name);
    }
    if (before && after) {
      plan.reopen.push_back(c.name);
    }
  }

  compare(linesOf(running), linesOf(next), plan.lines_added, plan.lines_removed,
          plan.lines_changed);
  compare(tunnelsOf(running), tunnelsOf(next), plan.tunnels_added, plan.tunnels_removed,
          plan.tunnels_changed);
  std::vector<std::string> tenants_added, tenants_removed;
  compare(routesOf(running), routesOf(next), tenants_added, tenants_removed, plan.routes_changed);
  for (const auto* list : {&tenants_added, &tenants_removed}) {
    for (const auto& t : *list) {
      const config::Config& c = list == &tenants_added ? next : running;
      const auto it = std::find_if(c.tenants.begin(), c.tenants.end(),
                                   [&](const auto& x) { return x.name == t; });
      if (it != c.tenants.end() && !it->routes.empty()) {
        plan.routes_changed.push_back(t);
      }
    }
  }
  std::sort(plan.routes_changed.begin(), plan.routes_changed.end());

  plan.path_mtu_changed = !(running.path_mtu == next.path_mtu);
  if (running.logging.level != next.logging.level) {
    plan.log_level = next.logging.level;
  }
  return plan;
}

}  // namespace mcgw::daemon
