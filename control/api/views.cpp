#include "control/api/views.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "control/api/protocol.hpp"
#include "control/encryption/encryption_service.hpp"
#include "control/lines/mss_policy.hpp"
#include "dataplane/engine/counters.hpp"
#include "dataplane/proto/tunnel.hpp"

namespace mcgw::api {

using daemon::isoTime;
using nlohmann::json;

namespace {

// A port's device counters, as status and show counters list them.
json portCounters(const engine::PortStatus& s) {
  json out = json::object();
#define MCGW_JSON_PORT_COUNTER(member, ...) out[#member] = s.member;
  MCGW_PORT_COUNTERS(MCGW_JSON_PORT_COUNTER)
#undef MCGW_JSON_PORT_COUNTER
  return out;
}

std::string macText(const uint8_t* m) {
  char buf[18];
  std::snprintf(buf, sizeof buf, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4],
                m[5]);
  return buf;
}

json pb(const engine::CountersSnapshot::PB& tx, const engine::CountersSnapshot::PB& rx) {
  return {{"tx_packets", tx.packets},
          {"tx_bytes", tx.bytes},
          {"rx_packets", rx.packets},
          {"rx_bytes", rx.bytes}};
}

// A steady-clock time as ISO-8601 UTC.
std::string isoTime(pmtu::TimePoint t) {
  return daemon::isoTime(
      std::chrono::system_clock::now() -
      std::chrono::duration_cast<std::chrono::system_clock::duration>(pmtu::Clock::now() - t));
}

int64_t ageSeconds(pmtu::TimePoint t) {
  return std::chrono::duration_cast<std::chrono::seconds>(pmtu::Clock::now() - t).count();
}

// A line's ESP SAs (docs/encryption.md): the outbound one and those it
// accepts, as the tables in force hold them.
json lineEncryption(const engine::ForwardingTables& t, const engine::LineEntry& l) {
  if (!l.encrypted) {
    return {{"mode", "none"}};
  }
  const std::string key = l.peer + "/" + l.name;
  auto sa = [](const engine::EspSa& a) { return encryption::espSaView(a); };
  json inbound = json::array();
  for (const auto& a : t.sas) {
    if (a->inbound() && a->line() == key) {
      inbound.push_back(sa(*a));
    }
  }
  return {{"mode", "esp-aes-256-gcm"},
          {"udp_encapsulation", l.esp_udp},
          {"outbound", l.esp ? sa(*l.esp) : json(nullptr)},
          {"inbound", inbound}};
}

json pathMtuCounters(const pmtu::Counters& c) {
  return {{"icmp_accepted", c.icmp_accepted},
          {"icmp_ignored", c.icmp_ignored},
          {"probes_sent", c.probes_sent},
          {"probes_answered", c.probes_answered},
          {"probes_lost", c.probes_lost},
          {"probes_refused", c.probes_refused},
          {"searches", c.searches}};
}

// A line's quality (control/pmtu/quality.hpp): RTT, jitter and loss over
// 10 s and 60 s; figures without samples are null.
json qualityWindow(const pmtu::QualityWindow& w) {
  auto ms = [](double v) { return std::round(v * 1000) / 1000; };  // microseconds
  const bool rtt = w.rtt_samples > 0;
  return {{"probes", w.probes},
          {"lost", w.lost},
          {"loss_ratio", w.probes ? json(std::round(w.loss_ratio * 10000) / 10000) : json(nullptr)},
          {"rtt_samples", w.rtt_samples},
          {"rtt_ms_last", rtt ? json(ms(w.rtt_ms_last)) : json(nullptr)},
          {"rtt_ms_min", rtt ? json(ms(w.rtt_ms_min)) : json(nullptr)},
          {"rtt_ms_mean", rtt ? json(ms(w.rtt_ms_mean)) : json(nullptr)},
          {"rtt_ms_max", rtt ? json(ms(w.rtt_ms_max)) : json(nullptr)},
          {"jitter_ms", w.jitter_samples ? json(ms(w.jitter_ms)) : json(nullptr)}};
}

// SLA steering's judgement of a line (control/lines/sla.hpp); null when
// its peer has no sla.
json lineSla(const GatewayState& s, const config::PeerConfig& peer, const engine::LineEntry& l) {
  if (!peer.sla) {
    return nullptr;
  }
  const lines::SlaLineState* st = s.lines.sla().state(l.peer, l.name);
  json j = {{"state", !st || !st->outside ? "within"
                      : st->kept_best     ? "outside, kept as the best"
                                          : "outside"},
            {"reason", st && !st->reason.empty() ? json(st->reason) : json(nullptr)},
            {"since", st ? json(isoTime(st->since)) : json(nullptr)},
            {"changes", st ? st->changes : 0},
            {"hold_s", peer.sla->hold_s}};
  if (st && st->outside && st->within_since) {
    j["within_for_s"] = ageSeconds(*st->within_since);
  }
  return j;
}

json lineQuality(const GatewayState& s, const engine::LineEntry& l) {
  const pmtu::QualityView* v = s.lines.pathMtu().quality().view(l.peer + "/" + l.name);
  if (!v) {
    return {{"state", "off"}};
  }
  const auto& c = v->counters;
  return {{"state", pmtu::toString(v->state)},
          {"peer_responds", v->peer_responds},
          {"interval_ms", v->interval.count()},
          {"window_10s", qualityWindow(v->window10s)},
          {"window_60s", qualityWindow(v->window60s)},
          {"counters",
           {{"sent", c.sent},
            {"answered", c.answered},
            {"lost", c.lost},
            {"late", c.late},
            {"duplicate", c.duplicate},
            {"unknown", c.unknown}}}};
}

const pmtu::LineView* pathMtuOf(const GatewayState& s, const engine::LineEntry& l) {
  return s.lines.pathMtu().tracker().view(l.peer + "/" + l.name);
}

uint16_t pathMtuNow(const GatewayState& s, const engine::LineEntry& l) {
  const uint16_t mtu = s.dataplane.linePathMtu(l.slot);
  return mtu ? mtu : l.mtu;
}

json fastPathStatus(const GatewayState& s) {
  const engine::CountersSnapshot c = s.dataplane.counters();
  const engine::ForwardingTables* t = s.dataplane.tables();
  uint64_t drops = 0;
  for (uint64_t d : c.drops) {
    drops += d;
  }
  json workers = json::array();
  for (const auto& w : c.workers) {
    workers.push_back({{"index", w.index},
                       {"lcore", w.lcore},
                       {"state", engine::toString(w.state)},
                       {"sleep_us", w.sleep_us},
                       {"rx_packets", w.packets}});
  }
  size_t usable = 0;
  for (const auto& l : t->lines) {
    usable += s.dataplane.lineUp(l.slot) && l.resolved;
  }
  return {{"workers", workers},
          {"idle_sleep_max_us", t->idle_sleep_max_us},
          {"tables_generation", t->generation},
          {"tunnels", t->tunnels.size()},
          {"lines", t->lines.size()},
          {"lines_usable", usable},
          {"routes", s.forwarding.routeCount()},
          {"drops_total", drops}};
}

json pathMtuStatus(const GatewayState& s) {
  const engine::ForwardingTables* t = s.dataplane.tables();
  json lines = json::array();
  for (const auto& l : t->lines) {
    const pmtu::LineView* v = pathMtuOf(s, l);
    json line = {{"peer", l.peer},
                 {"line", l.name},
                 {"configured_mtu", l.mtu},
                 {"path_mtu", pathMtuNow(s, l)},
                 {"path_mtu_source", v ? pmtu::toString(v->source) : "configured"},
                 {"probe", v ? pmtu::toString(v->probe) : "off"},
                 {"quality", lineQuality(s, l)}};
    if (v) {
      line["path_mtu_since"] = isoTime(v->since);
      line["path_mtu_age_s"] = ageSeconds(v->since);
    }
    lines.push_back(std::move(line));
  }
  const pmtu::PathMtuService& service = s.lines.pathMtu();
  const auto& i = service.listener().counters();
  const auto& p = service.prober().counters();
  return {{"probe", s.config.path_mtu.probe},
          {"probe_port", s.config.path_mtu.probe_port},
          {"quality_interval_ms", s.config.path_mtu.quality_interval_ms},
          {"lines", lines},
          {"icmp",
           {{"received", i.received},
            {"matched", i.matched},
            {"not_ours", i.not_ours},
            {"malformed", i.malformed},
            {"refused", i.refused}}},
          {"probes",
           {{"sent", p.sent},
            {"send_errors", p.send_errors},
            {"replies", p.replies},
            {"replies_unmatched", p.replies_unmatched},
            {"requests_answered", p.requests_answered},
            {"requests_refused", p.requests_refused},
            {"malformed", p.malformed}}},
          {"quality_probes",
           {{"sent", p.quality_sent},
            {"send_errors", p.quality_send_errors},
            {"replies", p.quality_replies},
            {"replies_unmatched", p.quality_replies_unmatched},
            {"requests_answered", p.quality_requests_answered}}},
          {"errors", service.errors()}};
}

// mcgw's XDP program's verdicts per af_xdp port (only those that occurred).
json xdpCounters(const GatewayState& s) {
  json out = json::object();
  for (const auto& [name, side] : s.kernel.sides()) {
    if (!side.xdp) {
      continue;
    }
    auto c = side.xdp->counters();
    if (!c) {
      continue;
    }
    json verdicts = json::object();
    for (size_t i = 0; i < ebpf::kXdpVerdictCount; ++i) {
      if ((*c)[i].packets > 0) {
        verdicts[std::string(ebpf::kXdpVerdicts[i].name)] = (*c)[i].packets;
      }
    }
    out[name] = verdicts;
  }
  return out;
}

// The exception path's packet and byte counters: counters.kernel.
struct PathCounter {
  const char* name;  // to_kernel: to_kernel_packets, to_kernel_bytes
  engine::CountersSnapshot::PB engine::CountersSnapshot::*member;
};
constexpr PathCounter kKernelCounters[] = {{"to_kernel", &engine::CountersSnapshot::to_kernel},
                                           {"from_kernel", &engine::CountersSnapshot::from_kernel}};

}  // namespace

std::vector<std::string> healthReasons(const GatewayState& s, const daemon::DaemonFacts& d,
                                       const std::vector<engine::PortStatus>& ports) {
  std::vector<std::string> reasons;
  for (const auto& pc : s.config.ports) {
    auto it =
        std::find_if(ports.begin(), ports.end(), [&](const auto& p) { return p.name == pc.name; });
    if (it == ports.end()) {
      reasons.push_back("port " + pc.name + " is configured but not open (see the log)");
    } else if (!it->link_up) {
      reasons.push_back("port " + pc.name + " link is down");
    }
  }
  if (const engine::ForwardingTables* t = s.dataplane.tables()) {
    for (size_t pi = 0; pi < t->peer_names.size(); ++pi) {
      std::vector<std::string> why;
      bool usable = false;
      for (const auto& l : t->lines) {
        if (l.peer != t->peer_names[pi]) {
          continue;
        }
        if (s.dataplane.lineUp(l.slot) && l.resolved) {
          usable = true;
        } else {
          std::string bfd = s.frr ? s.frr->lineDownReason(l.peer, l.name) : "";
          why.push_back(l.name + ": " +
                        (!l.resolved                         ? "next-hop MAC unknown"
                         : s.lines.adminDown(l.peer, l.name) ? "administratively down"
                         : !bfd.empty()                      ? bfd
                                                             : "link down"));
        }
      }
      if (!usable) {
        std::string text = "peer " + t->peer_names[pi] + " has no usable line";
        for (size_t i = 0; i < why.size(); ++i) {
          text += (i ? ", " : " (") + why[i] + (i + 1 == why.size() ? ")" : "");
        }
        reasons.push_back(text);
      }
    }
  }
  if (s.encryption) {
    for (auto& p : s.encryption->problems()) {
      reasons.push_back(std::move(p));
    }
  }
  for (const auto& e : s.kernel.errors()) {
    reasons.push_back(e);
  }
  if (s.frr) {
    for (auto& p : s.frr->problems()) {
      reasons.push_back(std::move(p));
    }
  }
  if (s.vrrp) {
    for (auto& p : s.vrrp->problems()) {
      reasons.push_back(std::move(p));
    }
  }
  if (s.plan) {
    if (std::string p = s.plan->problem(); !p.empty()) {
      reasons.push_back(std::move(p));
    }
  }
  if (d.fallback) {
    const auto& errors = d.fallback->file_errors;
    std::string why = errors.empty() ? "" : ": " + errors.front();
    if (errors.size() > 1) {
      why += " (and " + std::to_string(errors.size() - 1) + " more; mcgwctl status --json)";
    }
    reasons.push_back("running the last good config from " + isoTime(d.fallback->saved_at) + "; " +
                      d.config_file + " is invalid" + why);
  }
  if (d.last_reload.attempted && !d.last_reload.ok) {
    reasons.push_back("last reload failed at " + isoTime(d.last_reload.at) +
                      "; the file on disk is not in force");
  }
  if (!d.https_problem.empty()) {
    reasons.push_back("HTTPS API (api.https) not serving: " + d.https_problem);
  }
  if (!d.last_good_error.empty()) {
    reasons.push_back("cannot keep the last good copy of the config: " + d.last_good_error);
  }
  if (!d.metrics.error.empty()) {
    reasons.push_back(d.metrics.error);
  }
  return reasons;
}

// Candidate routes per source, and prefixes in the FIBs.
json routeCounts(const GatewayState& s) {
  json by_source = json::object();
  const auto counts = s.forwarding.candidatesBySource();
  for (size_t i = 0; i < engine::kRouteSourceCount; ++i) {
    by_source[engine::toString(static_cast<engine::RouteSource>(i))] = counts[i];
  }
  return {{"prefixes", s.forwarding.routeCount()}, {"by_source", by_source}};
}

// The plan in force: the file's VPCs and mapped ranges, and the store's.
json addressPlanStatus(const GatewayState& s) {
  const auto& plan = s.config.address_plan;
  json j = {{"vpcs", plan.vpcs.size()},
            {"mapped_ranges", plan.mapped_ranges.size()},
            {"pools", plan.pools.size()}};
  if (s.plan) {
    j["store"] = s.plan->status();
  } else {
    j["store"] = nullptr;  // nothing to follow: no pools, no etcd
  }
  return j;
}

json statusView(const GatewayState& s, const daemon::DaemonFacts& d) {
  auto statuses = s.ports.status();
  auto reasons = healthReasons(s, d, statuses);
  json ports = json::array();
  for (size_t i = 0; i < s.ports.all().size(); ++i) {
    const auto& p = s.ports.all()[i];
    const engine::PortStatus& st = statuses[i];
    ports.push_back(
        {{"name", st.name},
         {"role", config::toString(p->config().role)},
         {"device", st.device},
         {"driver", st.driver},
         {"port_id", st.port_id},
         {"link",
          {{"up", st.link_up}, {"speed_mbps", st.speed_mbps}, {"full_duplex", st.full_duplex}}},
         {"mtu", st.mtu},
         {"configured_mtu", p->config().mtu},
         {"mac", st.mac},
         {"rx_queues", st.rx_queues},
         {"counters", portCounters(st)}});
  }
  json last = nullptr;
  if (d.last_reload.attempted) {
    last = {{"at", isoTime(d.last_reload.at)},
            {"ok", d.last_reload.ok},
            {"errors", d.last_reload.errors},
            {"changes", d.last_reload.changes}};
  }
  auto uptime =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - d.started)
          .count();
  json last_good = {
      {"file", d.last_good_file},
      {"saved_at", d.last_good_saved_at ? json(isoTime(*d.last_good_saved_at)) : json(nullptr)},
      {"error", d.last_good_error.empty() ? json(nullptr) : json(d.last_good_error)}};
  json fallback = nullptr;
  if (d.fallback) {
    fallback = {{"copy", d.fallback->copy},
                {"saved_at", isoTime(d.fallback->saved_at)},
                {"file_errors", d.fallback->file_errors}};
  }
  return {{"schema", kStatusSchema},
          {"health", {{"state", reasons.empty() ? "healthy" : "degraded"}, {"reasons", reasons}}},
          {"node", {{"name", s.config.node.name}, {"site", s.config.node.site}}},
          {"daemon",
           {{"version", d.version},
            {"pid", ::getpid()},
            {"started_at", isoTime(d.started_at)},
            {"uptime_s", uptime}}},
          {"config",
           {{"file", d.config_file},
            {"checksum", s.config.checksum},
            {"loaded_at", isoTime(d.loaded_at)},
            {"last_reload", last},
            {"last_good", last_good},
            {"running_last_good", fallback}}},
          {"metrics",
           {{"listen", d.metrics.listen.empty() ? json(nullptr) : json(d.metrics.listen)},
            {"listening", d.metrics.listening},
            {"error", d.metrics.error.empty() ? json(nullptr) : json(d.metrics.error)},
            {"scrapes", d.metrics.scrapes},
            {"stale_scrapes", d.metrics.stale_scrapes}}},
          {"ports", ports},
          {"fast_path", fastPathStatus(s)},
          {"path_mtu", pathMtuStatus(s)},
          {"bgp", s.frr ? s.frr->status() : json({{"enabled", false}})},
          {"address_plan", addressPlanStatus(s)},
          {"vrrp", s.vrrp ? s.vrrp->view() : json({{"groups", json::array()}})},
          {"flow_audit", flows::statusOf(s.flows)},
          {"encryption", s.encryption ? s.encryption->status() : json({{"lines", json::array()}})},
          {"routes", routeCounts(s)}};
}

json tunnelsView(const GatewayState& s) {
  const engine::ForwardingTables* t = s.dataplane.tables();
  const engine::CountersSnapshot c = s.dataplane.counters();
  json out = json::array();
  for (const auto& tu : t->tunnels) {
    const config::PeerConfig* peer = s.config.findPeer(t->peer_names[tu.peer]);
    json lines = json::array();
    json active = json::array();
    for (unsigned i = 0; i < tu.n_lines; ++i) {
      const engine::LineEntry& l = t->lines[tu.lines[i]];
      const bool up = s.dataplane.lineUp(l.slot);
      const pmtu::LineView* v = pathMtuOf(s, l);
      const unsigned path_mtu = pathMtuNow(s, l);
      const unsigned inner_mtu = lines::innerIpMtu(
          {path_mtu, l.header.ipv6, l.header.encapsulation, l.encrypted, l.esp_udp});
      const config::LineConfig* lc = nullptr;
      for (const auto& x : peer->lines) {
        if (x.name == l.name) {
          lc = &x;
        }
      }
      json line = {{"name", l.name},
                   {"port", s.config.findPort(lc->port) ? lc->port : ""},
                   {"local_vtep", lc->local_vtep.toString()},
                   {"remote_vtep", lc->remote_vtep.toString()},
                   {"next_hop", l.next_hop.toString()},
                   {"next_hop_mac", l.resolved ? macText(l.header.dst_mac) : ""},
                   {"mtu", l.mtu},
                   {"path_mtu", path_mtu},
                   {"path_mtu_source", v ? pmtu::toString(v->source) : "configured"},
                   {"path_mtu_since", v ? json(isoTime(v->since)) : json(nullptr)},
                   {"path_mtu_age_s", v ? json(ageSeconds(v->since)) : json(nullptr)},
                   {"path_mtu_reason", v ? v->reason : "configured"},
                   {"probe", v ? pmtu::toString(v->probe) : "off"},
                   {"path_mtu_counters", pathMtuCounters(v ? v->counters : pmtu::Counters{})},
                   {"quality", lineQuality(s, l)},
                   {"sla", lineSla(s, *peer, l)},
                   // The largest inner IP packet: the path MTU less the encapsulation
                   // and, on an encrypted line, ESP (lines::innerIpMtu).
                   {"inner_mtu", inner_mtu},
                   {"encryption", lineEncryption(*t, l)},
                   {"mss4", s.dataplane.tunnelMss4(tu.slot)},
                   {"mss6", s.dataplane.tunnelMss6(tu.slot)},
                   {"up", up && l.resolved},
                   {"admin_up", !s.lines.adminDown(l.peer, l.name)},
                   {"link_up", s.lines.linkUp(l.port)},
                   {"resolved", l.resolved},
                   {"counters", pb(c.line_tx[l.slot], c.line_rx[l.slot])}};
      if (up && l.resolved && (tu.ecmp || active.empty())) {
        active.push_back(l.name);
      }
      lines.push_back(line);
    }
    out.push_back({{"peer", t->peer_names[tu.peer]},
                   {"tenant", t->tenants[tu.tenant].name},
                   {"vni", tu.vni},
                   {"encapsulation", config::toString(peer->encapsulation)},
                   {"line_mode", config::toString(peer->line_mode)},
                   {"inner_mac", macText(tu.inner_dst.data())},
                   {"active_lines", active},
                   {"mss4", s.dataplane.tunnelMss4(tu.slot)},
                   {"mss6", s.dataplane.tunnelMss6(tu.slot)},
                   {"lines", lines},
                   {"counters", pb(c.tunnel_tx[tu.slot], c.tunnel_rx[tu.slot])}});
  }
  return {{"schema", "mcgw.tunnels/1"}, {"tunnels", out}};
}

// Every candidate route of every source (the RIB); `selected` marks the one
// in the FIB.  At most kMaxRoutesShown (one answer stays a few MB and the
// loop is not held for long with a full FRR table); `total` says how many
// there are.
json routesView(const GatewayState& s, const engine::RouteFilter& filter) {
  json out = json::array();
  for (const auto& r : s.forwarding.routes(kMaxRoutesShown, filter)) {
    out.push_back({{"tenant", r.tenant},
                   {"prefix", r.prefix},
                   {"via", r.via},
                   {"source", r.source},
                   {"distance", r.distance},
                   {"selected", r.selected}});
  }
  const size_t total = s.forwarding.candidateCount(filter);
  return {{"schema", "mcgw.routes/1"},
          {"generation", s.forwarding.generation()},
          {"total", total},
          {"truncated", total > out.size()},
          {"routes", out}};
}

json countersView(const GatewayState& s) {
  const engine::CountersSnapshot c = s.dataplane.counters();
  const engine::ForwardingTables* t = s.dataplane.tables();
  json out = {{"schema", "mcgw.counters/1"}};
  json drops = json::object();
  uint64_t total = 0;
  for (size_t i = 0; i < engine::kDropReasonCount; ++i) {
    drops[std::string(engine::kDropReasons[i].name)] = c.drops[i];
    total += c.drops[i];
  }
  out["drops"] = drops;
  out["drops_total"] = total;
  out["lan"] = pb(c.lan_tx, c.lan_rx);
  out["wan"] = pb(c.wan_tx, c.wan_rx);
  // The event counters, each at counters[group][key] (counters.hpp).
#define MCGW_JSON_COUNTER(name, group, key, ...) out[group][key] = c.name;
  MCGW_EVENT_COUNTERS(MCGW_JSON_COUNTER)
#undef MCGW_JSON_COUNTER
  for (const auto& k : kKernelCounters) {
    const engine::CountersSnapshot::PB& v = c.*k.member;
    out["kernel"][std::string(k.name) + "_packets"] = v.packets;
    out["kernel"][std::string(k.name) + "_bytes"] = v.bytes;
  }
  // The control plane's side of neighbour resolution.
  out["neighbors"]["host_entries"] = s.neighbors.hostEntries();
  out["neighbors"]["resolutions_refused"] = s.neighbors.resolutionsRefused();
  out["xdp"] = xdpCounters(s);
  if (s.capture) {
    out["capture"] = s.capture->view();
  }

  json workers = json::array();
  for (const auto& w : c.workers) {
    json queues = json::array();
    for (const auto& q : w.queues) {
      queues.push_back(t->ports[q.port].name + ":" + std::to_string(q.queue));
    }
    workers.push_back({{"index", w.index},
                       {"lcore", w.lcore},
                       {"state", engine::toString(w.state)},
                       {"sleep_us", w.sleep_us},
                       {"idle_sleep_max_us", t->idle_sleep_max_us},
                       {"polls", w.polls},
                       {"busy_polls", w.busy_polls},
                       {"busy_cycles", w.busy_cycles},
                       {"sleeps", w.sleeps},
                       {"rx_packets", w.packets},
                       {"queues", queues}});
  }
  json lines = json::array();
  for (const auto& l : t->lines) {
    lines.push_back({{"peer", l.peer},
                     {"line", l.name},
                     {"up", s.dataplane.lineUp(l.slot) && l.resolved},
                     {"counters", pb(c.line_tx[l.slot], c.line_rx[l.slot])}});
  }
  json tunnels = json::array();
  for (const auto& tu : t->tunnels) {
    tunnels.push_back({{"peer", t->peer_names[tu.peer]},
                       {"tenant", t->tenants[tu.tenant].name},
                       {"vni", tu.vni},
                       {"counters", pb(c.tunnel_tx[tu.slot], c.tunnel_rx[tu.slot])}});
  }
  // The mapped ranges this gateway translates: packets whose source was
  // mapped (out, into a tunnel) and whose destination was unmapped (in).
  json mapped = json::array();
  for (const auto& m : t->mapped) {
    mapped.push_back({{"name", m.name},
                      {"tenant", m.tenant},
                      {"real", m.real.toString()},
                      {"mapped", m.mapped.toString()},
                      {"out", c.mapped_out[m.slot]},
                      {"in", c.mapped_in[m.slot]}});
  }
  json ports = json::array();
  for (const auto& p : s.ports.all()) {
    auto st = p->status();
    json entry = portCounters(st);
    entry["name"] = st.name;
    ports.push_back(std::move(entry));
  }
  out["ports"] = ports;
  out["lines"] = lines;
  out["tunnels"] = tunnels;
  out["mapped"] = mapped;
  out["workers"] = workers;
  return out;
}

json neighborsView(const GatewayState& s) {
  json out = json::array();
  for (const auto& [name, op] : s.forwarding.openPorts()) {
    for (const auto& n : op.neighbors) {
      engine::Mac mac{};
      const bool in_fast_path = s.dataplane.tables()->neighbor(
          op.port_id, n.address.family == config::Family::V6, n.address.bytes.data(), &mac);
      out.push_back({{"port", name},
                     {"address", n.address.toString()},
                     {"mac", n.mac.toString()},
                     {"source", "kernel"},
                     {"in_fast_path", in_fast_path}});
    }
    if (const config::PortConfig* pc = s.config.findPort(name)) {
      for (const auto& n : pc->neighbors) {
        out.push_back({{"port", name},
                       {"address", n.address.toString()},
                       {"mac", n.mac.toString()},
                       {"source", "config"}});
      }
    }
  }
  json kernel = json::array();
  for (const auto& [key, n] : s.neighbors.entries()) {
    kernel.push_back({{"ifindex", n.ifindex},
                      {"address", n.address.toString()},
                      {"state", n.state},
                      {"managed", n.managed},
                      {"usable", n.usable()}});
  }
  return {{"schema", "mcgw.neighbors/1"}, {"neighbors", out}, {"kernel_table", kernel}};
}

}  // namespace mcgw::api
