#include "config/diff.hpp"

#include <map>
#include <set>
#include <utility>

namespace mcgw::config {

std::string ConfigChange::toString() const {
  std::string s = section;
  if (!name.empty()) {
    s += " " + name;
  }
  switch (kind) {
    case Kind::kAdded:
      s += ": added";
      break;
    case Kind::kRemoved:
      s += ": removed";
      break;
    case Kind::kChanged:
      s += ": changed";
      break;
  }
  if (!detail.empty()) {
    s += " (" + detail + ")";
  }
  if (needs_restart) {
    s += " [needs restart]";
  }
  return s;
}

namespace {

using Kind = ConfigChange::Kind;

template <typename T, typename Key, typename Detail>
void diffKeyed(std::vector<ConfigChange>& out, const char* section, const std::vector<T>& a,
               const std::vector<T>& b, Key key, Detail detail) {
  std::map<std::string, const T*> before;
  for (const auto& x : a) {
    before[key(x)] = &x;
  }
  std::map<std::string, const T*> after;
  for (const auto& x : b) {
    after[key(x)] = &x;
  }
  for (const auto& [k, x] : before) {
    if (!after.count(k)) {
      out.push_back({section, k, Kind::kRemoved, "", false});
    } else if (!(*x == *after[k])) {
      out.push_back({section, k, Kind::kChanged, detail(*x, *after[k]), false});
    }
  }
  for (const auto& [k, x] : after) {
    if (!before.count(k)) {
      out.push_back({section, k, Kind::kAdded, "", false});
    }
  }
}

template <typename V>
void field(std::string& d, const char* name, const V& a, const V& b) {
  if (!(a == b)) {
    if (!d.empty()) {
      d += ", ";
    }
    if constexpr (std::is_same_v<V, bool>) {
      d += std::string(name) + (a ? " true -> false" : " false -> true");
    } else if constexpr (std::is_arithmetic_v<V>) {
      d += std::string(name) + " " + std::to_string(a) + " -> " + std::to_string(b);
    } else {
      d += name;
    }
  }
}

// "name a -> b" for a text field ("none" when empty).
void textField(std::string& d, const char* name, const std::string& a, const std::string& b) {
  if (a != b) {
    d += std::string(d.empty() ? "" : ", ") + name + " " + (a.empty() ? "none" : a) + " -> " +
         (b.empty() ? "none" : b);
  }
}

std::string portDetail(const PortConfig& a, const PortConfig& b) {
  std::string d;
  field(d, "role", a.role, b.role);
  field(d, "device", a.pci + a.vdev, b.pci + b.vdev);
  field(d, "mtu", a.mtu, b.mtu);
  field(d, "rx-queues", a.rx_queues, b.rx_queues);
  field(d, "rx-descriptors", a.rx_descriptors, b.rx_descriptors);
  field(d, "tx-descriptors", a.tx_descriptors, b.tx_descriptors);
  field(d, "addresses", a.addresses, b.addresses);
  textField(d, "tenant", a.tenant, b.tenant);
  field(d, "neighbors", a.neighbors, b.neighbors);
  return d;
}

std::string tenantDetail(const TenantConfig& a, const TenantConfig& b) {
  std::string d;
  field(d, "vni", a.vni, b.vni);
  field(d, "routes", a.routes, b.routes);
  field(d, "policy", a.policy, b.policy);
  return d;
}

std::string peerDetail(const PeerConfig& a, const PeerConfig& b) {
  std::string d;
  field(d, "asn", a.asn, b.asn);
  textField(d, "site", a.siteName(), b.siteName());
  field(d, "encapsulation", a.encapsulation, b.encapsulation);
  field(d, "mss-clamp", a.mss_clamp, b.mss_clamp);
  field(d, "mss-insert", a.mss_insert, b.mss_insert);
  field(d, "line-mode", a.line_mode, b.line_mode);
  field(d, "tenants", a.tenants, b.tenants);
  field(d, "lines", a.lines, b.lines);
  textField(d, "inner-mac", a.inner_mac.toString(), b.inner_mac.toString());
  field(d, "sla", a.sla, b.sla);
  return d;
}

std::string bgpDetail(const BgpConfig& a, const BgpConfig& b) {
  std::string d;
  field(d, "enabled", a.enabled, b.enabled);
  field(d, "asn", a.asn, b.asn);
  field(d, "router-id", a.router_id, b.router_id);
  field(d, "keepalive", a.keepalive_s, b.keepalive_s);
  field(d, "hold", a.hold_s, b.hold_s);
  field(d, "bfd.enabled", a.bfd_enabled, b.bfd_enabled);
  field(d, "bfd.interval-ms", a.bfd_interval_ms, b.bfd_interval_ms);
  field(d, "bfd.multiplier", a.bfd_multiplier, b.bfd_multiplier);
  field(d, "maximum-prefix", a.maximum_prefix, b.maximum_prefix);
  field(d, "graceful-restart", a.graceful_restart, b.graceful_restart);
  field(d, "neighbors", a.neighbors, b.neighbors);
  field(d, "fpm", std::make_pair(a.fpm_address, a.fpm_port),
        std::make_pair(b.fpm_address, b.fpm_port));
  field(d, "fpm.stale-time", a.fpm_stale_time_s, b.fpm_stale_time_s);
  textField(d, "frr.config-dir", a.frr_config_dir, b.frr_config_dir);
  textField(d, "frr.run-dir", a.frr_run_dir, b.frr_run_dir);
  return d;
}

}  // namespace

std::vector<ConfigChange> diffConfigs(const Config& a, const Config& b) {
  std::vector<ConfigChange> out;
  if (!(a.node == b.node)) {
    out.push_back({"node", "", Kind::kChanged, "", false});
  }
  if (!(a.eal == b.eal)) {
    out.push_back({"eal", "", Kind::kChanged, "DPDK EAL settings", true});
  }
  diffKeyed(
      out, "port", a.ports, b.ports, [](const PortConfig& p) { return p.name; }, portDetail);
  // The EAL allow-lists PCI devices when it starts: a PCI device the running
  // config did not have cannot be attached by a reload.
  std::set<std::string> pci_before;
  for (const auto& p : a.ports) {
    if (!p.pci.empty()) {
      pci_before.insert(p.deviceName());
    }
  }
  for (auto& c : out) {
    const PortConfig* p = c.section == "port" ? b.findPort(c.name) : nullptr;
    if (p && !p->pci.empty() && !pci_before.count(p->deviceName())) {
      c.detail += std::string(c.detail.empty() ? "" : ", ") + "new PCI device " + p->deviceName();
      c.needs_restart = true;
    }
  }
  diffKeyed(
      out, "tenant", a.tenants, b.tenants, [](const TenantConfig& t) { return t.name; },
      tenantDetail);
  diffKeyed(
      out, "peer", a.peers, b.peers, [](const PeerConfig& p) { return p.name; }, peerDetail);
  // FRR applies BGP changes in place (frr-reload.py): none needs a restart
  // of mcgwd, not even the FPM address or FRR's directories.
  if (!(a.bgp == b.bgp)) {
    out.push_back({"bgp", "", Kind::kChanged, bgpDetail(a.bgp, b.bgp), false});
  }
  diffKeyed(
      out, "vrrp group", a.vrrp_groups, b.vrrp_groups,
      [](const VrrpGroupConfig& g) { return std::to_string(g.vrid); },
      [](const VrrpGroupConfig&, const VrrpGroupConfig&) { return std::string(); });
  if (!(a.address_plan == b.address_plan)) {
    out.push_back({"address-plan", "", Kind::kChanged, "", false});
  }
  if (!(a.fast_path == b.fast_path)) {
    std::string d;
    field(d, "idle-sleep-max-us", a.fast_path.idle_sleep_max_us, b.fast_path.idle_sleep_max_us);
    out.push_back({"fast-path", "", Kind::kChanged, d, false});
  }
  if (!(a.path_mtu == b.path_mtu)) {
    std::string d;
    field(d, "probe", a.path_mtu.probe, b.path_mtu.probe);
    field(d, "probe-interval", a.path_mtu.probe_interval_s, b.path_mtu.probe_interval_s);
    field(d, "probe-timeout-ms", a.path_mtu.probe_timeout_ms, b.path_mtu.probe_timeout_ms);
    field(d, "aging", a.path_mtu.aging_s, b.path_mtu.aging_s);
    field(d, "probe-port", a.path_mtu.probe_port, b.path_mtu.probe_port);
    field(d, "quality-interval-ms", a.path_mtu.quality_interval_ms, b.path_mtu.quality_interval_ms);
    out.push_back({"path-mtu", "", Kind::kChanged, d, false});
  }
  if (a.api.socket != b.api.socket || a.api.group != b.api.group) {
    out.push_back({"api", "", Kind::kChanged, "API socket", true});
  }
  if (!(a.api.https == b.api.https)) {
    auto shown = [](const std::string& l) { return l.empty() ? std::string("off") : l; };
    out.push_back({"api", "https", Kind::kChanged,
                   "listen " + shown(a.api.https.listen) + " -> " + shown(b.api.https.listen),
                   false});
  }
  if (!(a.usage == b.usage)) {
    out.push_back({"usage", "", Kind::kChanged,
                   "every " + std::to_string(a.usage.interval_s) + " s -> " +
                       std::to_string(b.usage.interval_s) + " s, keep " +
                       std::to_string(a.usage.retention_days) + " -> " +
                       std::to_string(b.usage.retention_days) + " days, directory " +
                       (a.usage.directory.empty() ? "default" : a.usage.directory) + " -> " +
                       (b.usage.directory.empty() ? "default" : b.usage.directory),
                   false});
  }
  if (!(a.metrics == b.metrics)) {
    auto shown = [](const std::string& l) { return l.empty() ? std::string("off") : l; };
    out.push_back({"metrics", "", Kind::kChanged,
                   "listen " + shown(a.metrics.listen) + " -> " + shown(b.metrics.listen), false});
  }
  if (!(a.flow_audit == b.flow_audit)) {
    auto shown = [](const FlowAuditConfig& f) {
      if (!f.enabled()) {
        return std::string("off");
      }
      std::string s = "1-in-" + std::to_string(f.sampling) + " to";
      for (const auto& c : f.collectors) {
        s += " " + c.address.toString() + ":" + std::to_string(c.port);
      }
      return s + ", active " + std::to_string(f.active_timeout_s) + " s, idle " +
             std::to_string(f.idle_timeout_s) + " s, templates every " +
             std::to_string(f.template_refresh_s) + " s";
    };
    out.push_back({"flow-audit", "", Kind::kChanged,
                   shown(a.flow_audit) + " -> " + shown(b.flow_audit), false});
  }
  if (!(a.logging == b.logging)) {
    out.push_back({"logging", "", Kind::kChanged,
                   "level " + a.logging.level + " -> " + b.logging.level, false});
  }
  if (!(a.startup == b.startup)) {
    out.push_back({"startup", "", Kind::kChanged,
                   std::string("use-last-good ") + (a.startup.use_last_good ? "true" : "false") +
                       " -> " + (b.startup.use_last_good ? "true" : "false"),
                   false});
  }

  return out;
}

}  // namespace mcgw::config
