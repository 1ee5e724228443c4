// libyang data tree (validated, defaults filled in) → the typed Config.
#include <libyang/libyang.h>

#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "config/loader_detail.hpp"

namespace mcgw::config::detail {

namespace {

class TreeReader {
 public:
  explicit TreeReader(lyd_node* tree) : tree_(tree) {}

  // The top-level container named name, or nullptr.
  lyd_node* top(const char* name) const {
    for (lyd_node* n = tree_; n; n = n->next) {
      if (std::strcmp(n->schema->name, name) == 0) {
        return n;
      }
    }
    return nullptr;
  }
  static lyd_node* child(const lyd_node* parent, const char* name) {
    if (!parent) {
      return nullptr;
    }
    for (lyd_node* n = lyd_child(parent); n; n = n->next) {
      if (std::strcmp(n->schema->name, name) == 0) {
        return n;
      }
    }
    return nullptr;
  }
  static std::vector<lyd_node*> children(const lyd_node* parent, const char* name) {
    std::vector<lyd_node*> out;
    if (!parent) {
      return out;
    }
    for (lyd_node* n = lyd_child(parent); n; n = n->next) {
      if (std::strcmp(n->schema->name, name) == 0) {
        out.push_back(n);
      }
    }
    return out;
  }
  static std::string str(const lyd_node* parent, const char* name, std::string dflt = "") {
    lyd_node* n = child(parent, name);
    return n ? lyd_get_value(n) : dflt;
  }
  static std::vector<std::string> strs(const lyd_node* parent, const char* name) {
    std::vector<std::string> out;
    for (lyd_node* n : children(parent, name)) {
      out.push_back(lyd_get_value(n));
    }
    return out;
  }
  template <typename T>
  static T num(const lyd_node* parent, const char* name, T dflt = 0) {
    lyd_node* n = child(parent, name);
    return n ? static_cast<T>(std::stoull(lyd_get_value(n))) : dflt;
  }
  static bool flag(const lyd_node* parent, const char* name, bool dflt) {
    lyd_node* n = child(parent, name);
    return n ? std::strcmp(lyd_get_value(n), "true") == 0 : dflt;
  }
  // Values the model has already checked; a parse failure here is a bug.
  static IpAddress addr(const std::string& s) { return IpAddress::parse(s).value_or(IpAddress{}); }
  static IpPrefix prefix(const std::string& s) { return IpPrefix::parse(s).value_or(IpPrefix{}); }
  static MacAddress mac(const std::string& s) {
    return MacAddress::parse(s).value_or(MacAddress{});
  }

 private:
  lyd_node* tree_;
};

}  // namespace

Config buildConfig(lyd_node* tree) {
  using R = TreeReader;
  R r(tree);
  Config c;
  lyd_node* node = r.top("node");
  c.node = {R::str(node, "name"), R::str(node, "site"), R::str(node, "description")};

  lyd_node* eal = r.top("eal");
  c.eal.main_lcore = R::num<uint16_t>(eal, "main-lcore");
  for (const auto& w : R::strs(eal, "workers")) {
    c.eal.workers.push_back(static_cast<uint16_t>(std::stoul(w)));
  }
  c.eal.hugepages = R::flag(eal, "hugepages", true);
  c.eal.memory_mb = R::num<uint32_t>(eal, "memory-mb");
  c.eal.file_prefix = R::str(eal, "file-prefix");
  c.eal.mbufs = R::num<uint32_t>(eal, "mbufs");
  c.eal.extra_args = R::strs(eal, "extra-args");

  for (lyd_node* p : R::children(r.top("ports"), "port")) {
    PortConfig pc;
    pc.name = R::str(p, "name");
    pc.role = R::str(p, "role") == "wan" ? PortRole::kWan : PortRole::kLan;
    pc.pci = R::str(p, "pci");
    pc.vdev = R::str(p, "vdev");
    pc.mtu = R::num<uint16_t>(p, "mtu");
    pc.rx_queues = R::num<uint16_t>(p, "rx-queues");
    pc.rx_descriptors = R::num<uint16_t>(p, "rx-descriptors");
    pc.tx_descriptors = R::num<uint16_t>(p, "tx-descriptors");
    for (const auto& a : R::strs(p, "addresses")) {
      pc.addresses.push_back(R::prefix(a));
    }
    pc.tenant = R::str(p, "tenant");
    for (lyd_node* n : R::children(R::child(p, "neighbors"), "neighbor")) {
      pc.neighbors.push_back({R::addr(R::str(n, "address")), R::mac(R::str(n, "mac"))});
    }
    c.ports.push_back(std::move(pc));
  }

  for (lyd_node* t : R::children(r.top("tenants"), "tenant")) {
    TenantConfig tc{R::str(t, "name"), R::num<uint32_t>(t, "vni"), {}, {}, {}};
    for (lyd_node* rt : R::children(R::child(t, "routes"), "route")) {
      StaticRoute sr;
      sr.prefix = R::prefix(R::str(rt, "prefix"));
      sr.peer = R::str(rt, "peer");
      if (auto nh = R::str(rt, "next-hop"); !nh.empty()) {
        sr.next_hop = R::addr(nh);
      }
      tc.routes.push_back(std::move(sr));
    }
    lyd_node* pol = R::child(t, "policy");
    tc.policy.default_deny = R::str(pol, "default", "allow") == "deny";
    for (lyd_node* ru : R::children(R::child(pol, "rules"), "rule")) {
      PolicyRule pr;
      pr.name = R::str(ru, "name");
      pr.deny = R::str(ru, "action") == "deny";
      pr.source = R::strs(ru, "source");
      pr.destination = R::strs(ru, "destination");
      pr.protocol = protocolNumber(R::str(ru, "protocol", "any"));
      std::tie(pr.sport_lo, pr.sport_hi) = portRange(R::str(ru, "source-ports"));
      std::tie(pr.dport_lo, pr.dport_hi) = portRange(R::str(ru, "destination-ports"));
      if (R::child(ru, "dscp")) {
        pr.dscp = R::num<uint8_t>(ru, "dscp");
      }
      tc.policy.rules.push_back(std::move(pr));
    }
    lyd_node* bw = R::child(t, "bandwidth");
    if (R::child(bw, "yellow-dscp")) {
      tc.bandwidth.yellow_dscp = R::num<uint8_t>(bw, "yellow-dscp");
    }
    tc.bandwidth.priority = R::num<uint8_t>(bw, "priority", 0);
    auto rates = [](lyd_node* n) {
      return MeterRates{R::str(n, "rate"), R::str(n, "peak-rate"), R::str(n, "burst"),
                        R::str(n, "peak-burst")};
    };
    auto minute = [](const std::string& hhmm) {
      return hhmm.size() == 5 ? static_cast<uint16_t>(std::stoi(hhmm.substr(0, 2)) * 60 +
                                                      std::stoi(hhmm.substr(3, 2)))
                              : uint16_t{0};
    };
    for (lyd_node* l : R::children(R::child(bw, "limits"), "limit")) {
      tc.bandwidth.limits.push_back({R::str(l, "line"), rates(l)});
    }
    for (lyd_node* w : R::children(R::child(bw, "windows"), "window")) {
      tc.bandwidth.windows.push_back({R::str(w, "name"), R::str(w, "line"),
                                      minute(R::str(w, "start")), minute(R::str(w, "end")),
                                      rates(w)});
    }
    c.tenants.push_back(std::move(tc));
  }
  // A LAN port carries the only tenant there is unless it names one.
  if (c.tenants.size() == 1) {
    for (auto& p : c.ports) {
      if (p.role == PortRole::kLan && p.tenant.empty()) {
        p.tenant = c.tenants[0].name;
      }
    }
  }

  for (lyd_node* p : R::children(r.top("peers"), "peer")) {
    PeerConfig pc;
    pc.name = R::str(p, "name");
    if (R::child(p, "asn")) {
      pc.asn = R::num<uint32_t>(p, "asn");
    }
    pc.site = R::str(p, "site");
    if (pc.site == pc.name) {
      pc.site.clear();  // the default spelled out: the same config
    }
    pc.encapsulation =
        R::str(p, "encapsulation") == "geneve" ? Encapsulation::kGeneve : Encapsulation::kVxlan;
    std::string mss = R::str(p, "mss-clamp", "auto");
    if (mss == "auto") {
      pc.mss_clamp = {MssClamp::Mode::kAuto, 0};
    } else if (mss == "off") {
      pc.mss_clamp = {MssClamp::Mode::kOff, 0};
    } else {
      pc.mss_clamp = {MssClamp::Mode::kFixed, static_cast<uint16_t>(std::stoul(mss))};
    }
    pc.mss_insert = R::str(p, "mss-insert", "false") == "true";
    pc.line_mode = R::str(p, "line-mode") == "ecmp" ? LineMode::kEcmp : LineMode::kActiveBackup;
    if (lyd_node* sla = R::child(p, "sla")) {
      SlaConfig s;
      if (std::string loss = R::str(sla, "max-loss"); !loss.empty()) {
        s.max_loss = std::stod(loss.substr(0, loss.size() - 1)) / 100;  // "1.5%"
      }
      if (R::child(sla, "max-rtt-ms")) {
        s.max_rtt_ms = R::num<uint32_t>(sla, "max-rtt-ms");
      }
      if (R::child(sla, "max-jitter-ms")) {
        s.max_jitter_ms = R::num<uint32_t>(sla, "max-jitter-ms");
      }
      s.hold_s = R::num<uint32_t>(sla, "hold-s", s.hold_s);
      pc.sla = s;
    }
    if (lyd_node* enc = R::child(p, "encryption")) {
      EncryptionConfig e;
      e.udp_encapsulation = R::str(enc, "udp-encapsulation", "false") == "true";
      e.replay_window = R::num<uint32_t>(enc, "replay-window", e.replay_window);
      e.lifetime_s = R::num<uint32_t>(enc, "lifetime-s", e.lifetime_s);
      e.lifetime_bytes = R::num<uint64_t>(enc, "lifetime-bytes", e.lifetime_bytes);
      e.static_keys = R::str(enc, "static-keys");
      pc.encryption = e;
    }
    pc.tenants = R::strs(p, "tenants");
    for (lyd_node* l : R::children(R::child(p, "lines"), "line")) {
      std::string port = R::str(l, "port");
      const PortConfig* pc_port = c.findPort(port);
      uint16_t port_mtu = pc_port ? pc_port->mtu : 1500;
      LineConfig lc{R::str(l, "name"),
                    port,
                    R::addr(R::str(l, "local-vtep")),
                    R::addr(R::str(l, "remote-vtep")),
                    R::num<uint16_t>(l, "mtu", port_mtu),
                    R::num<uint8_t>(l, "outer-ttl"),
                    std::nullopt,
                    std::nullopt,
                    std::nullopt,
                    false,
                    "",
                    50};
      if (auto nh = R::str(l, "next-hop"); !nh.empty()) {
        lc.next_hop = R::addr(nh);
      }
      if (R::child(l, "bfd-interval-ms")) {
        lc.bfd_interval_ms = R::num<uint16_t>(l, "bfd-interval-ms");
      }
      if (R::child(l, "bfd-multiplier")) {
        lc.bfd_multiplier = R::num<uint8_t>(l, "bfd-multiplier");
      }
      lc.clear_text = R::str(l, "encryption", "peer") == "none";
      lc.capacity = R::str(l, "capacity");
      lc.queue_ms = R::num<uint16_t>(l, "queue-ms", lc.queue_ms);
      pc.lines.push_back(std::move(lc));
    }
    pc.inner_mac = R::mac(R::str(p, "inner-mac", "02:00:00:00:00:01"));
    c.peers.push_back(std::move(pc));
  }

  if (lyd_node* b = r.top("bgp")) {
    c.bgp.enabled = true;
    c.bgp.asn = R::num<uint32_t>(b, "asn");
    c.bgp.router_id = R::addr(R::str(b, "router-id"));
    lyd_node* timers = R::child(b, "timers");
    c.bgp.keepalive_s = R::num<uint16_t>(timers, "keepalive");
    c.bgp.hold_s = R::num<uint16_t>(timers, "hold");
    lyd_node* bfd = R::child(b, "bfd");
    c.bgp.bfd_enabled = R::flag(bfd, "enabled", true);
    c.bgp.bfd_interval_ms = R::num<uint16_t>(bfd, "interval-ms");
    c.bgp.bfd_multiplier = R::num<uint8_t>(bfd, "multiplier");
    c.bgp.maximum_prefix = R::num<uint32_t>(b, "maximum-prefix");
    c.bgp.graceful_restart = R::flag(b, "graceful-restart", true);
    for (lyd_node* n : R::children(R::child(b, "neighbors"), "neighbor")) {
      BgpNeighbor bn;
      bn.address = R::addr(R::str(n, "address"));
      bn.asn = R::num<uint32_t>(n, "asn");
      bn.port = R::str(n, "port");
      // A neighbour on this site's LAN announces this site's ranges unless
      // it is said to stand for another site.
      bn.site = R::str(n, "site", c.node.site);
      bn.bfd = R::flag(n, "bfd", true);
      if (R::child(n, "bfd-interval-ms")) {
        bn.bfd_interval_ms = R::num<uint16_t>(n, "bfd-interval-ms");
      }
      if (R::child(n, "bfd-multiplier")) {
        bn.bfd_multiplier = R::num<uint8_t>(n, "bfd-multiplier");
      }
      if (R::child(n, "maximum-prefix")) {
        bn.maximum_prefix = R::num<uint32_t>(n, "maximum-prefix");
      }
      c.bgp.neighbors.push_back(std::move(bn));
    }
    lyd_node* fpm = R::child(b, "fpm");
    c.bgp.fpm_address = R::addr(R::str(fpm, "address"));
    c.bgp.fpm_port = R::num<uint16_t>(fpm, "port");
    c.bgp.fpm_stale_time_s = R::num<uint32_t>(fpm, "stale-time");
    lyd_node* frr = R::child(b, "frr");
    c.bgp.frr_config_dir = R::str(frr, "config-dir", "/etc/frr");
    c.bgp.frr_run_dir = R::str(frr, "run-dir", "/var/run/frr");
  }

  for (lyd_node* g : R::children(r.top("vrrp"), "group")) {
    VrrpGroupConfig vg;
    vg.vrid = R::num<uint8_t>(g, "vrid");
    vg.port = R::str(g, "port");
    vg.priority = R::num<uint8_t>(g, "priority");
    vg.advert_interval_ms = R::num<uint16_t>(g, "advert-interval-ms");
    vg.preempt = R::flag(g, "preempt", true);
    for (const auto& a : R::strs(g, "virtual-addresses")) {
      vg.virtual_addresses.push_back(R::addr(a));
    }
    for (const auto& a : R::strs(g, "unicast-peers")) {
      vg.unicast_peers.push_back(R::addr(a));
    }
    if (lyd_node* src = R::child(g, "source-address")) {
      vg.source_address = R::addr(lyd_get_value(src));
    }
    vg.preempt_delay_ms = R::num<uint32_t>(g, "preempt-delay-ms");
    vg.accept_mode = R::flag(g, "accept-mode", false);
    vg.announce_interval_ms = R::num<uint32_t>(g, "announce-interval-ms");
    for (lyd_node* t : R::children(g, "track")) {
      VrrpTrack tr;
      tr.object = R::str(t, "object");
      tr.weight = R::num<uint8_t>(t, "weight");
      const auto space = tr.object.find(' ');
      const std::string kind = tr.object.substr(0, space);
      tr.name = space == std::string::npos ? "" : tr.object.substr(space + 1);
      tr.kind = kind == "port"   ? VrrpTrack::Kind::kPort
                : kind == "peer" ? VrrpTrack::Kind::kPeer
                : kind == "bgp"  ? VrrpTrack::Kind::kBgp
                                 : VrrpTrack::Kind::kFpm;
      vg.track.push_back(std::move(tr));
    }
    vg.notify = R::str(g, "notify");
    vg.notify_timeout_ms = R::num<uint32_t>(g, "notify-timeout-ms");
    vg.active_command = R::str(g, "active-command");
    vg.active_command_interval_ms = R::num<uint32_t>(g, "active-command-interval-ms");
    const std::string backup = R::str(g, "bgp-backup", "prepend");
    vg.bgp_backup = backup == "withdraw" ? VrrpBgpBackup::kWithdraw
                    : backup == "none"   ? VrrpBgpBackup::kNone
                                         : VrrpBgpBackup::kPrepend;
    vg.bgp_prepend = R::num<uint8_t>(g, "bgp-prepend");
    c.vrrp_groups.push_back(std::move(vg));
  }

  lyd_node* plan = r.top("address-plan");
  lyd_node* store = R::child(plan, "store");
  c.address_plan.store = R::str(store, "type") == "etcd" ? AddressPlanConfig::Store::kEtcd
                                                         : AddressPlanConfig::Store::kFile;
  c.address_plan.store_path = R::str(store, "path");
  c.address_plan.etcd_endpoints = R::strs(store, "endpoints");
  c.address_plan.etcd_ca_file = R::str(store, "ca-file");
  c.address_plan.etcd_cert_file = R::str(store, "cert-file");
  c.address_plan.etcd_key_file = R::str(store, "key-file");
  c.address_plan.etcd_prefix = R::str(store, "prefix");
  for (lyd_node* p : R::children(R::child(plan, "pools"), "pool")) {
    PoolConfig pc{
        R::str(p, "name"), {}, R::num<uint8_t>(p, "allocation-length"), R::strs(p, "clouds")};
    for (const auto& s : R::strs(p, "prefixes")) {
      pc.prefixes.push_back(R::prefix(s));
    }
    c.address_plan.pools.push_back(std::move(pc));
  }
  for (lyd_node* cl : R::children(R::child(plan, "clouds"), "cloud")) {
    for (lyd_node* rg : R::children(R::child(cl, "regions"), "region")) {
      for (lyd_node* v : R::children(R::child(rg, "vpcs"), "vpc")) {
        VpcConfig vc{R::str(cl, "name"),  R::str(rg, "name"), R::str(v, "name"), {},
                     R::str(v, "tenant"), R::str(v, "site")};
        for (const auto& s : R::strs(v, "prefixes")) {
          vc.prefixes.push_back(R::prefix(s));
        }
        c.address_plan.vpcs.push_back(std::move(vc));
      }
    }
  }
  for (lyd_node* m : R::children(R::child(plan, "mapped-ranges"), "mapped-range")) {
    c.address_plan.mapped_ranges.push_back({R::str(m, "name"), R::prefix(R::str(m, "real")),
                                            R::prefix(R::str(m, "mapped")), R::str(m, "site")});
  }
  for (lyd_node* rr : R::children(R::child(plan, "reserved"), "range")) {
    c.address_plan.reserved.push_back({R::str(rr, "name"), R::prefix(R::str(rr, "prefix"))});
  }

  c.fast_path.idle_sleep_max_us =
      R::num<uint32_t>(r.top("fast-path"), "idle-sleep-max-us", FastPathConfig{}.idle_sleep_max_us);

  {
    lyd_node* pm = r.top("path-mtu");
    const PathMtuConfig d;
    c.path_mtu.probe = R::str(pm, "probe", d.probe ? "true" : "false") == "true";
    c.path_mtu.probe_interval_s = R::num<uint32_t>(pm, "probe-interval", d.probe_interval_s);
    c.path_mtu.probe_timeout_ms = R::num<uint32_t>(pm, "probe-timeout-ms", d.probe_timeout_ms);
    c.path_mtu.aging_s = R::num<uint32_t>(pm, "aging", d.aging_s);
    c.path_mtu.probe_port = R::num<uint16_t>(pm, "probe-port", d.probe_port);
    c.path_mtu.quality_interval_ms =
        R::num<uint32_t>(pm, "quality-interval-ms", d.quality_interval_ms);
  }

  lyd_node* api = r.top("api");
  c.api.socket = R::str(api, "socket");
  c.api.group = R::str(api, "group");
  if (lyd_node* h = R::child(api, "https")) {
    c.api.https.listen = R::str(h, "listen");
    c.api.https.ca = R::str(h, "ca", "/etc/mcgw/tls/api-ca.pem");
    c.api.https.certificate = R::str(h, "certificate", "/etc/mcgw/tls/api.pem");
    c.api.https.private_key = R::str(h, "private-key", "/etc/mcgw/tls/api.key");
    c.api.https.allowed_clients = R::strs(h, "allowed-clients");
  }
  c.metrics.listen = R::str(r.top("metrics"), "listen");
  if (lyd_node* u = r.top("usage")) {
    c.usage.directory = R::str(u, "directory");
    c.usage.interval_s = R::num<uint16_t>(u, "interval-s", 60);
    c.usage.retention_days = R::num<uint16_t>(u, "retention-days", 31);
  }
  {
    lyd_node* e = r.top("encryption");
    const KeyAgreementConfig d;
    c.encryption.ca = R::str(e, "ca", d.ca);
    c.encryption.certificate = R::str(e, "certificate", d.certificate);
    c.encryption.private_key = R::str(e, "private-key", d.private_key);
    c.encryption.port = R::num<uint16_t>(e, "port", d.port);
  }
  {
    lyd_node* fa = r.top("flow-audit");
    const FlowAuditConfig d;
    c.flow_audit.sampling = R::num<uint32_t>(fa, "sampling", d.sampling);
    for (lyd_node* n : R::children(R::child(fa, "collectors"), "collector")) {
      c.flow_audit.collectors.push_back(
          {R::addr(R::str(n, "address")), R::num<uint16_t>(n, "port", FlowCollector{}.port)});
    }
    c.flow_audit.active_timeout_s = R::num<uint32_t>(fa, "active-timeout", d.active_timeout_s);
    c.flow_audit.idle_timeout_s = R::num<uint32_t>(fa, "idle-timeout", d.idle_timeout_s);
    c.flow_audit.template_refresh_s =
        R::num<uint32_t>(fa, "template-refresh", d.template_refresh_s);
  }
  c.logging.level = R::str(r.top("logging"), "level");
  c.startup.use_last_good = R::flag(r.top("startup"), "use-last-good", true);
  return c;
}

}  // namespace mcgw::config::detail
