#include "control/metrics/metrics.hpp"

#include <algorithm>
#include <stdexcept>

#include "control/lines/mss_policy.hpp"
#include "dataplane/engine/counters.hpp"
#include "dataplane/proto/tunnel.hpp"
#include "ebpf/xdp_maps.hpp"

namespace mcgw::metrics {

using nlohmann::json;
using prometheus::MetricType;

namespace {

constexpr MetricType kCounter = MetricType::Counter;
constexpr MetricType kGauge = MetricType::Gauge;

std::vector<MetricInfo> buildCatalog() {
  std::vector<MetricInfo> c = {
      // The daemon and its config.
      {"mcgw_build_info", kGauge, "version", "Always 1; the version of mcgwd"},
      {"mcgw_start_time_seconds", kGauge, "", "When mcgwd started (Unix time)"},
      {"mcgw_health_degraded", kGauge, "",
       "1 when mcgwctl status says degraded (mcgw_health_reasons says how many reasons)"},
      {"mcgw_health_reasons", kGauge, "", "How many reasons status gives for being degraded"},
      {"mcgw_config_generation", kGauge, "",
       "Configs that came into force since the start (1: the first one)"},
      {"mcgw_config_loaded_timestamp_seconds", kGauge, "",
       "When the config in force was loaded (Unix time)"},
      {"mcgw_config_reloads_total", kCounter, "result",
       "Reloads of the config file (SIGHUP, mcgwctl reload) by result: ok, failed"},
      {"mcgw_config_last_reload_success", kGauge, "",
       "0 when the last reload of the file failed (the file is not in force), else 1"},
      {"mcgw_config_last_reload_timestamp_seconds", kGauge, "",
       "When the file was last reloaded (Unix time; 0: never)"},
      {"mcgw_config_running_last_good", kGauge, "",
       "1 while mcgwd runs the last good copy because its file is invalid"},
      {"mcgw_config_file_differs", kGauge, "",
       "1 when the config file on disk differs from the config in force (edited, not reloaded)"},
      {"mcgw_tables_generation", kGauge, "", "Generation of the fast path's published tables"},
      {"mcgw_routes", kGauge, "source", "Candidate routes by source (the RIB)"},
      {"mcgw_fib_prefixes", kGauge, "", "Prefixes in the fast path's FIBs"},
      {"mcgw_metrics_stale_scrapes_total", kCounter, "",
       "Scrapes answered with the previous collection: the control loop did not answer within "
       "5 s (a long reload)"},
      // The fast path.
      {"mcgw_drops_total", kCounter, "reason", "Packets the fast path dropped, by reason"},
      {"mcgw_lan_packets_total", kCounter, "direction",
       "Packets received (rx) or sent (tx) on LAN ports"},
      {"mcgw_lan_bytes_total", kCounter, "direction",
       "Bytes received (rx) or sent (tx) on LAN ports"},
      {"mcgw_wan_packets_total", kCounter, "direction",
       "Packets received (rx) or sent (tx) on WAN ports"},
      {"mcgw_wan_bytes_total", kCounter, "direction",
       "Bytes received (rx) or sent (tx) on WAN ports"},
      {"mcgw_kernel_path_packets_total", kCounter, "direction",
       "Packets of the exception path: to_kernel, from_kernel (TAP ports)"},
      {"mcgw_kernel_path_bytes_total", kCounter, "direction",
       "Bytes of the exception path: to_kernel, from_kernel (TAP ports)"},
  };
  // The fast path's event counters (counters.hpp): mcgw_GROUP_KEY_total.
#define MCGW_EVENT_METRIC(name, group, key, help) \
  c.push_back({std::string("mcgw_") + group + "_" + key + "_total", kCounter, "", help});
  MCGW_EVENT_COUNTERS(MCGW_EVENT_METRIC)
#undef MCGW_EVENT_METRIC
  std::vector<MetricInfo> rest = {
      {"mcgw_neighbors_host_entries", kGauge, "",
       "Kernel neighbour entries mcgwd created to resolve hosts"},
      {"mcgw_neighbors_resolutions_refused_total", kCounter, "",
       "Resolutions the control plane refused (its limit of host entries)"},
      {"mcgw_xdp_packets_total", kCounter, "port, verdict",
       "Verdicts of mcgw's XDP program on af_xdp ports"},
      // Workers.
      {"mcgw_worker_rx_packets_total", kCounter, "worker, lcore", "Packets a worker received"},
      {"mcgw_worker_polls_total", kCounter, "worker, lcore", "Receive polls of a worker"},
      {"mcgw_worker_busy_polls_total", kCounter, "worker, lcore", "Polls that received packets"},
      {"mcgw_worker_busy_cycles_total", kCounter, "worker, lcore",
       "TSC cycles of the polls that received packets"},
      {"mcgw_worker_sleeps_total", kCounter, "worker, lcore", "Idle sleeps of a worker"},
      {"mcgw_worker_sleep_seconds", kGauge, "worker, lcore", "A worker's current idle sleep"},
      {"mcgw_worker_state", kGauge, "worker, lcore, state",
       "1 for the worker's state (polling, pausing, sleeping, stopped), else 0"},
      // Ports.
      {"mcgw_port_up", kGauge, "port, role", "1 when the port's link is up"},
      {"mcgw_port_mtu_bytes", kGauge, "port, role", "The port's MTU"},
  };
  c.insert(c.end(), rest.begin(), rest.end());
#define MCGW_PORT_METRIC(member, metric, help) \
  c.push_back({std::string("mcgw_port_") + metric + "_total", kCounter, "port, role", help});
  MCGW_PORT_COUNTERS(MCGW_PORT_METRIC)
#undef MCGW_PORT_METRIC
  rest = {
      // Lines and tunnels.
      {"mcgw_line_up", kGauge, "peer, line",
       "1 when the line is usable (link, BFD, admin state, next hop MAC and SLA steering)"},
      {"mcgw_line_admin_up", kGauge, "peer, line",
       "0 when mcgwctl line ... down took the line out"},
      {"mcgw_line_link_up", kGauge, "peer, line", "1 when the line's port has link"},
      {"mcgw_line_resolved", kGauge, "peer, line", "1 when the line's next hop MAC is known"},
      {"mcgw_line_packets_total", kCounter, "peer, line, direction",
       "Tunnel packets sent (tx) and received (rx) on the line"},
      {"mcgw_line_bytes_total", kCounter, "peer, line, direction",
       "Tunnel bytes sent (tx) and received (rx) on the line"},
      {"mcgw_line_mtu_bytes", kGauge, "peer, line", "The line's configured MTU"},
      {"mcgw_line_path_mtu_bytes", kGauge, "peer, line",
       "The line's path MTU in force (learned or configured)"},
      {"mcgw_line_inner_mtu_bytes", kGauge, "peer, line",
       "The largest inner IP packet the line carries (path MTU less encapsulation)"},
      {"mcgw_line_peer_responds", kGauge, "peer, line",
       "1 when the peer answers quality probes (0: the quality figures say nothing)"},
      {"mcgw_line_window_probes", kGauge, "peer, line, window",
       "Quality probes settled (answered or timed out) in the window (10s, 60s)"},
      {"mcgw_line_loss_ratio", kGauge, "peer, line, window",
       "Share of the window's quality probes that got no answer within 1 s"},
      {"mcgw_line_rtt_seconds", kGauge, "peer, line, window, stat",
       "Round-trip time of the window's answered probes: min, mean, max, last"},
      {"mcgw_line_jitter_seconds", kGauge, "peer, line, window",
       "Mean difference of consecutive round-trip times in the window"},
      {"mcgw_line_quality_probes_total", kCounter, "peer, line, result",
       "Quality probes by result: sent, answered, lost, late, duplicate, unknown"},
      {"mcgw_line_sla_ok", kGauge, "peer, line",
       "0 while the line is outside its SLA: out of use, or kept as the best of lines all outside"},
      {"mcgw_line_sla_changes_total", kCounter, "peer, line",
       "Times SLA steering took the line out of use or back"},
      {"mcgw_line_esp_keyed", kGauge, "peer, line",
       "Encrypted lines: 1 while the line has an outbound SA (0: it carries nothing)"},
      {"mcgw_line_esp_generation", kGauge, "peer, line",
       "Encrypted lines: the key generation of the outbound SA"},
      {"mcgw_line_esp_sa_age_seconds", kGauge, "peer, line, direction",
       "Encrypted lines: age of the outbound SA (out) and of the newest inbound one (in)"},
      {"mcgw_line_esp_rekeys_total", kCounter, "peer, line",
       "Encrypted lines: outbound SAs replaced by new keys since mcgwd started"},
      {"mcgw_line_esp_expired_total", kCounter, "peer, line",
       "Encrypted lines: outbound SAs dropped at the end of their lifetime without new keys"},
      {"mcgw_tunnel_packets_total", kCounter, "peer, tenant, vni, direction",
       "Packets into (tx) and out of (rx) the tunnel"},
      {"mcgw_tunnel_bytes_total", kCounter, "peer, tenant, vni, direction",
       "Bytes into (tx) and out of (rx) the tunnel"},
      {"mcgw_tunnel_mss_clamp_bytes", kGauge, "peer, tenant, vni, family",
       "The TCP MSS clamp in force for the tunnel (0: no clamp)"},
      {"mcgw_tunnel_active_lines", kGauge, "peer, tenant, vni", "Lines the tunnel sends on now"},
      {"mcgw_mapped_packets_total", kCounter, "name, tenant, direction",
       "Packets translated by a mapped range: out (source mapped), in (destination unmapped)"},
      // Tenant policy (docs/policy.md).
      {"mcgw_policy_packets_total", kCounter, "tenant, rule, action",
       "Packets a policy rule decided; rule \"(default)\": no rule matched"},
      {"mcgw_policy_isolation_packets_total", kCounter, "tenant",
       "Packets without a route whose destination belongs to another tenant only (dropped)"},
      // Usage accounting (docs/policy.md).
      {"mcgw_tenant_line_packets_total", kCounter, "tenant, peer, line, direction",
       "The tenant's tunnel packets into (tx) and out of (rx) the line; kept across reloads"},
      {"mcgw_tenant_line_bytes_total", kCounter, "tenant, peer, line, direction",
       "The tenant's tunnel bytes (on the wire) into (tx) and out of (rx) the line; kept across "
       "reloads"},
      {"mcgw_tenant_line_meter_packets_total", kCounter, "tenant, peer, line, colour",
       "Packets the tenant's meter on the line marked yellow or red"},
      {"mcgw_tenant_line_full_packets_total", kCounter, "tenant, peer, line",
       "The tenant's packets dropped because the queue of its priority on the shaped line was "
       "full; kept across reloads"},
      {"mcgw_usage_write_errors_total", kCounter, "",
       "Failed writes of usage files (retried at the next interval)"},
      {"mcgw_usage_dropped_intervals_total", kCounter, "",
       "Usage intervals dropped unwritten (too many waiting)"},
      {"mcgw_usage_pending_intervals", kGauge, "", "Usage intervals waiting to be written"},
      // Packet capture.
      {"mcgw_capture_active", kGauge, "", "1 while mcgwctl capture runs"},
      {"mcgw_capture_packets_total", kCounter, "", "Packets written to captures"},
      {"mcgw_capture_dropped_total", kCounter, "",
       "Packets a capture's filter took but lost: its ring full or no buffer"},
      // BGP, BFD and FPM (FRR).
      {"mcgw_bgp_session_up", kGauge, "neighbor, kind, site",
       "1 when the BGP session is Established (FRR's state, polled)"},
      {"mcgw_bgp_session_prefixes", kGauge, "neighbor, kind, site, direction",
       "Prefixes accepted from (received) and sent to (sent) the neighbour"},
      {"mcgw_bfd_session_up", kGauge, "peer_address, site, line", "1 when the BFD session is up"},
      {"mcgw_fpm_connected", kGauge, "", "1 while zebra's FPM connection is up"},
      {"mcgw_fpm_connections_total", kCounter, "", "FPM connections accepted"},
      {"mcgw_fpm_frames_total", kCounter, "", "FPM frames read"},
      {"mcgw_fpm_frames_refused_total", kCounter, "", "FPM frames refused (malformed)"},
      {"mcgw_fpm_messages_total", kCounter, "", "Netlink messages in FPM frames"},
      {"mcgw_fpm_messages_refused_total", kCounter, "", "Netlink messages refused"},
      {"mcgw_frr_routes", kGauge, "state",
       "FRR's routes by state: received, installed, refused, stale"},
      // VRRP.
      {"mcgw_vrrp_state", kGauge, "vrid, family, port, state",
       "1 for the group's state (initialize, backup, active), else 0"},
      {"mcgw_vrrp_priority", kGauge, "vrid, family, port",
       "The group's effective priority (tracking applied)"},
      {"mcgw_vrrp_transitions_total", kCounter, "vrid, family, port", "State changes of the group"},
      {"mcgw_vrrp_events_total", kCounter, "vrid, family, port, event",
       "The group's counters of show vrrp --json, one event label per key"},
  };
  c.insert(c.end(), rest.begin(), rest.end());
  return c;
}

double seconds(std::chrono::system_clock::time_point t) {
  return std::chrono::duration<double>(t.time_since_epoch()).count();
}

double flag(bool b) {
  return b ? 1.0 : 0.0;
}

uint16_t pathMtuNow(const api::GatewayState& s, const engine::LineEntry& l) {
  const uint16_t mtu = s.dataplane.linePathMtu(l.slot);
  return mtu ? mtu : l.mtu;
}

void daemonFamilies(FamilyBuilder& b, const api::GatewayState& s, const daemon::DaemonFacts& d,
                    const CollectExtras& x) {
  b.add("mcgw_build_info", {{"version", d.version}}, 1);
  b.add("mcgw_start_time_seconds", {}, seconds(d.started_at));
  const auto reasons = api::healthReasons(s, d, s.ports.status());
  b.add("mcgw_health_degraded", {}, flag(!reasons.empty()));
  b.add("mcgw_health_reasons", {}, static_cast<double>(reasons.size()));
  b.add("mcgw_config_generation", {}, static_cast<double>(d.generation));
  b.add("mcgw_config_loaded_timestamp_seconds", {}, seconds(d.loaded_at));
  b.add("mcgw_config_reloads_total", {{"result", "ok"}}, static_cast<double>(d.reloads_ok));
  b.add("mcgw_config_reloads_total", {{"result", "failed"}}, static_cast<double>(d.reloads_failed));
  b.add("mcgw_config_last_reload_success", {}, flag(!d.last_reload.attempted || d.last_reload.ok));
  b.add("mcgw_config_last_reload_timestamp_seconds", {},
        d.last_reload.attempted ? seconds(d.last_reload.at) : 0.0);
  b.add("mcgw_config_running_last_good", {}, flag(d.fallback.has_value()));
  if (x.file_differs) {
    b.add("mcgw_config_file_differs", {}, flag(*x.file_differs));
  }
  b.add("mcgw_tables_generation", {}, static_cast<double>(s.dataplane.tables()->generation));
  const auto by_source = s.forwarding.candidatesBySource();
  for (size_t i = 0; i < engine::kRouteSourceCount; ++i) {
    b.add("mcgw_routes", {{"source", engine::toString(static_cast<engine::RouteSource>(i))}},
          static_cast<double>(by_source[i]));
  }
  b.add("mcgw_fib_prefixes", {}, static_cast<double>(s.forwarding.routeCount()));
}

void fastPathFamilies(FamilyBuilder& b, const api::GatewayState& s,
                      const engine::CountersSnapshot& c) {
  for (size_t i = 0; i < engine::kDropReasonCount; ++i) {
    b.add("mcgw_drops_total", {{"reason", std::string(engine::kDropReasons[i].name)}},
          static_cast<double>(c.drops[i]));
  }
  auto pb = [&](const char* packets, const char* bytes, const char* dir,
                const engine::CountersSnapshot::PB& v) {
    b.add(packets, {{"direction", dir}}, static_cast<double>(v.packets));
    b.add(bytes, {{"direction", dir}}, static_cast<double>(v.bytes));
  };
  pb("mcgw_lan_packets_total", "mcgw_lan_bytes_total", "rx", c.lan_rx);
  pb("mcgw_lan_packets_total", "mcgw_lan_bytes_total", "tx", c.lan_tx);
  pb("mcgw_wan_packets_total", "mcgw_wan_bytes_total", "rx", c.wan_rx);
  pb("mcgw_wan_packets_total", "mcgw_wan_bytes_total", "tx", c.wan_tx);
  pb("mcgw_kernel_path_packets_total", "mcgw_kernel_path_bytes_total", "to_kernel", c.to_kernel);
  pb("mcgw_kernel_path_packets_total", "mcgw_kernel_path_bytes_total", "from_kernel",
     c.from_kernel);
#define MCGW_EVENT_SAMPLE(name, group, key, help) \
  b.add(std::string("mcgw_") + group + "_" + key + "_total", {}, static_cast<double>(c.name));
  MCGW_EVENT_COUNTERS(MCGW_EVENT_SAMPLE)
#undef MCGW_EVENT_SAMPLE
  b.add("mcgw_neighbors_host_entries", {}, static_cast<double>(s.neighbors.hostEntries()));
  b.add("mcgw_neighbors_resolutions_refused_total", {},
        static_cast<double>(s.neighbors.resolutionsRefused()));
  for (const auto& [port, side] : s.kernel.sides()) {
    if (!side.xdp) {
      continue;
    }
    auto xc = side.xdp->counters();
    if (!xc) {
      continue;
    }
    for (size_t i = 0; i < ebpf::kXdpVerdictCount; ++i) {
      b.add("mcgw_xdp_packets_total",
            {{"port", port}, {"verdict", std::string(ebpf::kXdpVerdicts[i].name)}},
            static_cast<double>((*xc)[i].packets));
    }
  }
  for (const auto& w : c.workers) {
    const Labels l = {{"worker", std::to_string(w.index)}, {"lcore", std::to_string(w.lcore)}};
    b.add("mcgw_worker_rx_packets_total", l, static_cast<double>(w.packets));
    b.add("mcgw_worker_polls_total", l, static_cast<double>(w.polls));
    b.add("mcgw_worker_busy_polls_total", l, static_cast<double>(w.busy_polls));
    b.add("mcgw_worker_busy_cycles_total", l, static_cast<double>(w.busy_cycles));
    b.add("mcgw_worker_sleeps_total", l, static_cast<double>(w.sleeps));
    b.add("mcgw_worker_sleep_seconds", l, w.sleep_us / 1e6);
    for (engine::WorkerState st : engine::kWorkerStates) {
      Labels with_state = l;
      with_state.emplace_back("state", engine::toString(st));
      b.add("mcgw_worker_state", with_state, flag(w.state == st));
    }
  }
}

void portFamilies(FamilyBuilder& b, const api::GatewayState& s) {
  const auto statuses = s.ports.status();
  for (size_t i = 0; i < s.ports.all().size() && i < statuses.size(); ++i) {
    const engine::PortStatus& st = statuses[i];
    const Labels l = {{"port", st.name},
                      {"role", config::toString(s.ports.all()[i]->config().role)}};
    b.add("mcgw_port_up", l, flag(st.link_up));
    b.add("mcgw_port_mtu_bytes", l, st.mtu);
#define MCGW_PORT_SAMPLE(member, metric, help) \
  b.add(std::string("mcgw_port_") + metric + "_total", l, static_cast<double>(st.member));
    MCGW_PORT_COUNTERS(MCGW_PORT_SAMPLE)
#undef MCGW_PORT_SAMPLE
  }
}

// A line's quality probes (control/pmtu/quality.hpp); figures without
// samples are left out.
void qualityFamilies(FamilyBuilder& b, const Labels& k, const pmtu::QualityView* v) {
  if (!v) {
    return;  // probing off
  }
  b.add("mcgw_line_peer_responds", k, flag(v->peer_responds));
  for (const auto& [name, w] :
       {std::pair<const char*, const pmtu::QualityWindow*>{"10s", &v->window10s},
        {"60s", &v->window60s}}) {
    Labels wl = k;
    wl.emplace_back("window", name);
    b.add("mcgw_line_window_probes", wl, w->probes);
    if (w->probes) {
      b.add("mcgw_line_loss_ratio", wl, w->loss_ratio);
    }
    if (w->rtt_samples) {
      for (const auto& [stat, ms] : {std::pair{"min", w->rtt_ms_min},
                                     {"mean", w->rtt_ms_mean},
                                     {"max", w->rtt_ms_max},
                                     {"last", w->rtt_ms_last}}) {
        Labels sl = wl;
        sl.emplace_back("stat", stat);
        b.add("mcgw_line_rtt_seconds", sl, ms / 1000);
      }
    }
    if (w->jitter_samples) {
      b.add("mcgw_line_jitter_seconds", wl, w->jitter_ms / 1000);
    }
  }
  const pmtu::QualityCounters& c = v->counters;
  for (const auto& [result, n] : {std::pair{"sent", c.sent},
                                  {"answered", c.answered},
                                  {"lost", c.lost},
                                  {"late", c.late},
                                  {"duplicate", c.duplicate},
                                  {"unknown", c.unknown}}) {
    Labels rl = k;
    rl.emplace_back("result", result);
    b.add("mcgw_line_quality_probes_total", rl, static_cast<double>(n));
  }
}

// ESP on encrypted lines (docs/encryption.md, "What you see").
void espFamilies(FamilyBuilder& b, const api::GatewayState& s, const engine::ForwardingTables& t,
                 const engine::LineEntry& l, const Labels& k) {
  auto age = [](const engine::EspSa& a) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - a.created()).count();
  };
  b.add("mcgw_line_esp_keyed", k, l.esp ? 1.0 : 0.0);
  if (l.esp) {
    b.add("mcgw_line_esp_generation", k, static_cast<double>(l.esp->generation()));
    Labels out = k;
    out.emplace_back("direction", "out");
    b.add("mcgw_line_esp_sa_age_seconds", out, age(*l.esp));
  }
  const engine::EspSa* newest = nullptr;
  for (const auto& a : t.sas) {
    if (a->inbound() && a->line() == l.peer + "/" + l.name &&
        (!newest || a->created() > newest->created())) {
      newest = a.get();
    }
  }
  if (newest) {
    Labels in = k;
    in.emplace_back("direction", "in");
    b.add("mcgw_line_esp_sa_age_seconds", in, age(*newest));
  }
  uint64_t rekeys = 0, expired = 0;
  if (s.encryption) {
    const nlohmann::json st = s.encryption->status();
    for (const auto& j : st["lines"]) {
      if (j.value("peer", "") == l.peer && j.value("line", "") == l.name) {
        rekeys = j.value("rekeys", uint64_t{0});
        expired = j.value("expired", uint64_t{0});
      }
    }
  }
  b.add("mcgw_line_esp_rekeys_total", k, static_cast<double>(rekeys));
  b.add("mcgw_line_esp_expired_total", k, static_cast<double>(expired));
}

void lineFamilies(FamilyBuilder& b, const api::GatewayState& s, const engine::ForwardingTables& t,
                  const engine::CountersSnapshot& c) {
  for (const auto& l : t.lines) {
    const Labels k = {{"peer", l.peer}, {"line", l.name}};
    if (l.encrypted) {
      espFamilies(b, s, t, l, k);
    }
    const bool up = s.dataplane.lineUp(l.slot);
    b.add("mcgw_line_up", k, flag(up && l.resolved));
    b.add("mcgw_line_admin_up", k, flag(!s.lines.adminDown(l.peer, l.name)));
    b.add("mcgw_line_link_up", k, flag(s.lines.linkUp(l.port)));
    b.add("mcgw_line_resolved", k, flag(l.resolved));
    for (const auto& [dir, v] : {std::pair{"tx", c.line_tx[l.slot]}, {"rx", c.line_rx[l.slot]}}) {
      Labels d = k;
      d.emplace_back("direction", dir);
      b.add("mcgw_line_packets_total", d, static_cast<double>(v.packets));
      b.add("mcgw_line_bytes_total", d, static_cast<double>(v.bytes));
    }
    const unsigned path_mtu = pathMtuNow(s, l);
    b.add("mcgw_line_mtu_bytes", k, l.mtu);
    b.add("mcgw_line_path_mtu_bytes", k, path_mtu);
    b.add("mcgw_line_inner_mtu_bytes", k,
          lines::innerIpMtu(
              {path_mtu, l.header.ipv6, l.header.encapsulation, l.encrypted, l.esp_udp}));
    qualityFamilies(b, k, s.lines.pathMtu().quality().view(l.peer + "/" + l.name));
    if (const config::PeerConfig* peer = s.config.findPeer(l.peer); peer && peer->sla) {
      const lines::SlaLineState* st = s.lines.sla().state(l.peer, l.name);
      b.add("mcgw_line_sla_ok", k, flag(!st || !st->outside));
      b.add("mcgw_line_sla_changes_total", k, st ? static_cast<double>(st->changes) : 0.0);
    }
  }
  for (const auto& tu : t.tunnels) {
    const Labels k = {{"peer", t.peer_names[tu.peer]},
                      {"tenant", t.tenants[tu.tenant].name},
                      {"vni", std::to_string(tu.vni)}};
    for (const auto& [dir, v] :
         {std::pair{"tx", c.tunnel_tx[tu.slot]}, {"rx", c.tunnel_rx[tu.slot]}}) {
      Labels d = k;
      d.emplace_back("direction", dir);
      b.add("mcgw_tunnel_packets_total", d, static_cast<double>(v.packets));
      b.add("mcgw_tunnel_bytes_total", d, static_cast<double>(v.bytes));
    }
    for (const auto& [family, mss] : {std::pair{"ipv4", s.dataplane.tunnelMss4(tu.slot)},
                                      {"ipv6", s.dataplane.tunnelMss6(tu.slot)}}) {
      Labels f = k;
      f.emplace_back("family", family);
      b.add("mcgw_tunnel_mss_clamp_bytes", f, mss);
    }
    unsigned active = 0;
    for (unsigned i = 0; i < tu.n_lines; ++i) {
      const engine::LineEntry& l = t.lines[tu.lines[i]];
      if (s.dataplane.lineUp(l.slot) && l.resolved && (tu.ecmp || active == 0)) {
        ++active;
      }
    }
    b.add("mcgw_tunnel_active_lines", k, active);
  }
  for (const auto& te : t.tenants) {
    if (te.policy) {
      for (const auto& r : te.policy->rules) {
        b.add("mcgw_policy_packets_total",
              {{"tenant", te.name}, {"rule", r.name}, {"action", r.deny ? "deny" : "allow"}},
              static_cast<double>(c.policy[r.slot]));
      }
      b.add("mcgw_policy_packets_total",
            {{"tenant", te.name},
             {"rule", "(default)"},
             {"action", te.policy->default_deny ? "deny" : "allow"}},
            static_cast<double>(c.policy[te.policy->default_slot]));
    }
    b.add("mcgw_policy_isolation_packets_total", {{"tenant", te.name}},
          static_cast<double>(c.policy[te.isolation_slot]));
  }
  for (const auto& m : t.mapped) {
    for (const auto& [dir, v] :
         {std::pair{"out", c.mapped_out[m.slot]}, {"in", c.mapped_in[m.slot]}}) {
      b.add("mcgw_mapped_packets_total",
            {{"name", m.name}, {"tenant", m.tenant}, {"direction", dir}}, static_cast<double>(v));
    }
  }
}

// j[key] when it is an array (or object), else an empty one.
const json& arrayAt(const json& j, const char* key) {
  static const json kEmpty = json::array();
  auto it = j.find(key);
  return it != j.end() && it->is_array() ? *it : kEmpty;
}

const json& objectAt(const json& j, const char* key) {
  static const json kEmpty = json::object();
  auto it = j.find(key);
  return it != j.end() && it->is_object() ? *it : kEmpty;
}

std::string str(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

double num(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : 0.0;
}

// From FRR's status (frr_routing.cpp), the JSON `status` shows.
void frrFamilies(FamilyBuilder& b, const api::GatewayState& s) {
  if (!s.frr) {
    return;
  }
  const json st = s.frr->status();
  if (!st.is_object() || !st.value("enabled", false)) {
    return;
  }
  for (const auto& n : arrayAt(st, "neighbors")) {
    const Labels k = {
        {"neighbor", str(n, "address")}, {"kind", str(n, "kind")}, {"site", str(n, "site")}};
    b.add("mcgw_bgp_session_up", k, flag(str(n, "state") == "Established"));
    for (const auto& [dir, key] : {std::pair{"received", "accepted"}, {"sent", "sent"}}) {
      if (n.contains(key) && n[key].is_number()) {
        Labels d = k;
        d.emplace_back("direction", dir);
        b.add("mcgw_bgp_session_prefixes", d, num(n, key));
      }
    }
  }
  for (const auto& p : arrayAt(objectAt(st, "bfd"), "sessions")) {
    b.add(
        "mcgw_bfd_session_up",
        {{"peer_address", str(p, "peer")}, {"site", str(p, "peer_site")}, {"line", str(p, "line")}},
        flag(str(p, "state") == "up"));
  }
  if (const auto fpm = st.find("fpm"); fpm != st.end() && fpm->is_object()) {
    b.add("mcgw_fpm_connected", {}, flag(fpm->value("connected", false)));
    b.add("mcgw_fpm_connections_total", {}, num(*fpm, "connections"));
    b.add("mcgw_fpm_frames_total", {}, num(*fpm, "frames"));
    b.add("mcgw_fpm_frames_refused_total", {}, num(*fpm, "frames_refused"));
    b.add("mcgw_fpm_messages_total", {}, num(*fpm, "messages"));
    b.add("mcgw_fpm_messages_refused_total", {}, num(*fpm, "messages_refused"));
  }
  if (const auto r = st.find("routes"); r != st.end() && r->is_object()) {
    for (const char* state : {"received", "installed", "refused", "stale"}) {
      b.add("mcgw_frr_routes", {{"state", state}}, num(*r, state));
    }
  }
}

void vrrpFamilies(FamilyBuilder& b, const api::GatewayState& s) {
  if (!s.vrrp) {
    return;
  }
  const json v = s.vrrp->view();
  for (const auto& g : arrayAt(v, "groups")) {
    const Labels k = {{"vrid", std::to_string(g.value("vrid", 0))},
                      {"family", str(g, "family")},
                      {"port", str(g, "port")}};
    const std::string state = str(g, "state");
    for (const char* st : {"initialize", "backup", "active"}) {
      Labels l = k;
      l.emplace_back("state", st);
      b.add("mcgw_vrrp_state", l, flag(state == st));
    }
    b.add("mcgw_vrrp_priority", k, num(objectAt(g, "priority"), "effective"));
    b.add("mcgw_vrrp_transitions_total", k, num(g, "transitions"));
    for (const auto& [event, n] : objectAt(g, "counters").items()) {
      if (n.is_number()) {
        Labels l = k;
        l.emplace_back("event", event);
        b.add("mcgw_vrrp_events_total", l, n.get<double>());
      }
    }
  }
}

}  // namespace

const std::vector<MetricInfo>& catalog() {
  static const std::vector<MetricInfo> c = buildCatalog();
  return c;
}

const MetricInfo* findMetric(std::string_view name) {
  static const std::unordered_map<std::string_view, const MetricInfo*> index = [] {
    std::unordered_map<std::string_view, const MetricInfo*> m;
    for (const auto& i : catalog()) {
      m.emplace(i.name, &i);
    }
    return m;
  }();
  auto it = index.find(name);
  return it == index.end() ? nullptr : it->second;
}

void FamilyBuilder::add(std::string_view name, const Labels& labels, double value) {
  auto it = index_.find(name);
  if (it == index_.end()) {
    const MetricInfo* info = findMetric(name);
    if (!info) {
      throw std::logic_error("metric " + std::string(name) + " is not in the catalog");
    }
    families_.push_back({info->name, info->help, info->type, {}});
    it = index_.emplace(info->name, families_.size() - 1).first;
  }
  prometheus::MetricFamily& f = families_[it->second];
  prometheus::ClientMetric m;
  for (const auto& [k, v] : labels) {
    m.label.push_back({k, v});
  }
  if (f.type == MetricType::Counter) {
    m.counter.value = value;
  } else {
    m.gauge.value = value;
  }
  f.metric.push_back(std::move(m));
}

std::vector<prometheus::MetricFamily> FamilyBuilder::take() {
  index_.clear();
  return std::move(families_);
}

std::vector<prometheus::MetricFamily> collect(const api::GatewayState& s,
                                              const daemon::DaemonFacts& d,
                                              const CollectExtras& extras) {
  FamilyBuilder b;
  const engine::CountersSnapshot c = s.dataplane.counters();  // the one read of the workers' blocks
  const engine::ForwardingTables* t = s.dataplane.tables();
  daemonFamilies(b, s, d, extras);
  fastPathFamilies(b, s, c);
  portFamilies(b, s);
  if (t) {
    lineFamilies(b, s, *t, c);
  }
  if (s.capture) {
    const json v = s.capture->view();
    b.add("mcgw_capture_active", {}, flag(v.value("active", false)));
    b.add("mcgw_capture_packets_total", {}, num(v, "written"));
    b.add("mcgw_capture_dropped_total", {}, num(v, "dropped"));
  }
  if (s.usage) {
    for (const auto& m : s.usage->metricSamples()) {
      b.add(m.name, m.labels, m.value);
    }
  }
  frrFamilies(b, s);
  vrrpFamilies(b, s);
  return b.take();
}

}  // namespace mcgw::metrics
