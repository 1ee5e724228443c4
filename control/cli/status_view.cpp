#include "control/cli/status_view.hpp"

#include <cstdio>
#include <sstream>

#include "control/vrrp/vrrp_cli.hpp"

namespace mcgw::cli {

using nlohmann::json;

namespace {

std::string duration(int64_t s) {
  char buf[64];
  if (s >= 86400) {
    std::snprintf(buf, sizeof buf, "%lldd %02lldh %02lldm", static_cast<long long>(s / 86400),
                  static_cast<long long>(s % 86400 / 3600), static_cast<long long>(s % 3600 / 60));
  } else {
    std::snprintf(buf, sizeof buf, "%02lld:%02lld:%02lld", static_cast<long long>(s / 3600),
                  static_cast<long long>(s % 3600 / 60), static_cast<long long>(s % 60));
  }
  return buf;
}

std::string str(const json& j, const char* key) {
  return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : "-";
}

// A number of a JSON object, 0 when absent or not a number.
int64_t num(const json& j, const char* key) {
  return j.contains(key) && j[key].is_number() ? j[key].get<int64_t>() : 0;
}

// A number with `decimals` places, "-" when null or absent.
std::string fixed(const json& j, const char* key, int decimals) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_number()) {
    return "-";
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, j[key].get<double>());
  return buf;
}

// A loss ratio as a percentage, "-" when null (no probe settled yet).
std::string percent(const json& w, const char* key = "loss_ratio") {
  if (!w.is_object() || !w.contains(key) || !w[key].is_number()) {
    return "-";
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f%%", w[key].get<double>() * 100);
  return buf;
}

// A line's quality over one window in a few words (show tunnels).
std::string qualityWords(const json& q, const char* window) {
  if (!q.is_object() || !q.contains(window) || !q[window].is_object()) {
    return "-";
  }
  const json& w = q[window];
  const std::string loss = "loss " + percent(w) + " of " + std::to_string(num(w, "probes"));
  if (num(w, "rtt_samples") == 0) {
    return "no reply, " + loss;
  }
  return "rtt " + fixed(w, "rtt_ms_mean", 3) + " ms (" + fixed(w, "rtt_ms_min", 3) + "-" +
         fixed(w, "rtt_ms_max", 3) + "), jitter " + fixed(w, "jitter_ms", 3) + " ms, " + loss;
}

// BGP through FRR: config, FPM, routes, neighbours, BFD.
void renderBgp(std::ostringstream& o, json& b) {
  // A field this mcgwctl expects may be absent (another mcgwd version):
  // objects default to empty ones.
  for (const char* key : {"frr_config", "routes", "bfd"}) {
    if (!b[key].is_object()) {
      b[key] = json::object();
    }
  }
  for (const char* key : {"refused", "neighbors"}) {
    if (!b[key].is_array()) {
      b[key] = json::array();
    }
  }
  if (!b["bfd"]["sessions"].is_array()) {
    b["bfd"]["sessions"] = json::array();
  }
  json& fc = b["frr_config"];
  o << "\nBGP      AS " << b.value("asn", 0u) << ", router-id " << str(b, "router_id")
    << "; FRR config " << str(fc, "state") << " (" << str(fc, "file") << ")\n";
  // What the announcements say about the VRRP standing (docs/routing.md
  // "BGP follows VRRP"); absent from an mcgwd without it.
  if (b["standing"].is_object() && b["standing"]["apply"].is_object()) {
    json& st = b["standing"];
    json& ap = st["apply"];
    o << "  standing " << str(st, "mode");
    if (st["prepend"].is_number()) {
      o << " " << num(st, "prepend");
    }
    if (st["since"].is_string()) {
      o << " since " << str(st, "since");
    }
    o << ": " << str(ap, "state");
    if (ap["via"].is_string()) {
      o << " with " << str(ap, "via");
    }
    if (ap["took_ms"].is_number()) {
      o << " in " << num(ap, "took_ms") << " ms";
    }
    if (ap["error"].is_string()) {
      o << ": " << str(ap, "error");
    }
    o << "\n";
  }
  if (b["fpm"].is_object()) {
    json& f = b["fpm"];
    o << "  FPM "
      << (f.value("connected", false) ? "connected from " + str(f, "peer")
                                      : std::string("NOT CONNECTED"))
      << " (listening " << str(f, "listening") << "), " << f.value("frames", uint64_t{0})
      << " frames, " << f.value("frames_refused", uint64_t{0}) << " refused\n";
  }
  json& r = b["routes"];
  o << "  routes from FRR: " << r.value("received", uint64_t{0}) << " received, "
    << r.value("installed", uint64_t{0}) << " installed, " << r.value("refused", uint64_t{0})
    << " refused, " << r.value("stale", uint64_t{0}) << " stale\n";
  for (auto& x : b["refused"]) {
    o << "    refused " << str(x, "prefix") << ": " << str(x, "reason") << "\n";
  }
  char line[512];
  std::snprintf(line, sizeof line, "  %-40s %-12s %-12s %10s %8s %8s\n", "NEIGHBOUR", "AS", "STATE",
                "UP", "ACCEPTED", "REFUSED");
  o << line;
  for (auto& n : b["neighbors"]) {
    std::string who =
        n.contains("peer") ? str(n, "peer") + "/" + str(n, "line") : "site " + str(n, "site");
    who = str(n, "address") + " (" + who + ")";
    std::string refused = n.contains("prefixes_refused") && n["prefixes_refused"].is_number()
                              ? std::to_string(n["prefixes_refused"].get<int64_t>())
                              : "-";
    std::snprintf(line, sizeof line, "  %-40s %-12u %-12s %10s %8lld %8s\n", who.c_str(),
                  n.value("asn", 0u), str(n, "state").c_str(),
                  n.contains("uptime_s") ? duration(n.value("uptime_s", int64_t{0})).c_str() : "-",
                  static_cast<long long>(num(n, "prefixes_accepted")), refused.c_str());
    o << line;
  }
  json& bfd = b["bfd"];
  o << "  BFD (" << str(bfd, "socket")
    << "): " << (bfd.value("connected", false) ? "connected" : "NOT CONNECTED") << "\n";
  for (auto& x : bfd["sessions"]) {
    std::string where =
        x.contains("line") ? " (" + str(x, "peer_site") + "/" + str(x, "line") + ")" : "";
    o << "    " << str(x, "peer") << where << " " << str(x, "state") << "\n";
  }
}

}  // namespace

std::string renderStatus(json s) {
  std::ostringstream o;
  json& health = s["health"];
  bool healthy = health.value("state", "") == "healthy";
  o << "mcgw " << str(s["node"], "name") << " (site " << str(s["node"], "site")
    << "): " << (healthy ? "HEALTHY" : "DEGRADED") << "\n";
  for (const auto& r : health["reasons"]) {
    o << "  ! " << r.get<std::string>() << "\n";
  }

  json& c = s["config"];
  o << "\nConfig   " << str(c, "file") << "\n"
    << "         sha256 " << str(c, "checksum") << "\n"
    << "         loaded " << str(c, "loaded_at") << "\n";
  if (c.contains("last_reload") && c["last_reload"].is_object()) {
    json& r = c["last_reload"];
    o << "         last reload " << str(r, "at") << ": "
      << (r.value("ok", false) ? "applied" : "REFUSED") << "\n";
    for (const auto& e : r["errors"]) {
      o << "           " << e.get<std::string>() << "\n";
    }
  }
  json& d = s["daemon"];
  o << "Daemon   mcgwd " << str(d, "version") << ", pid " << d.value("pid", 0) << ", up "
    << duration(d.value("uptime_s", int64_t{0})) << " (since " << str(d, "started_at") << ")\n";
  if (s.contains("metrics") && s["metrics"].is_object()) {
    json& m = s["metrics"];
    o << "Metrics  ";
    if (!m["listen"].is_string()) {
      o << "off\n";
    } else {
      o << "http://" << str(m, "listen") << "/metrics "
        << (m.value("listening", false) ? "listening" : "NOT LISTENING") << ", "
        << m.value("scrapes", uint64_t{0}) << " scrapes\n";
    }
  }
  if (s.contains("flow_audit") && s["flow_audit"].is_object()) {  // docs/monitoring.md
    json& f = s["flow_audit"];
    o << "Flows    ";
    if (!f.value("enabled", false)) {
      o << "flow audit off\n";
    } else {
      o << "IPFIX 1-in-" << f.value("sampling", uint64_t{0}) << " to "
        << f.value("collectors", json::array()).size()
        << " collector(s): " << f.value("flows_active", uint64_t{0}) << " flows, "
        << f.value("records_exported", uint64_t{0}) << " records exported, "
        << f.value("samples", uint64_t{0}) << " samples, " << f.value("ring_full", uint64_t{0})
        << " ring full, " << f.value("export_errors", uint64_t{0}) << " export errors\n";
    }
  }

  o << "\nPorts\n";
  char line[256];
  std::snprintf(line, sizeof line, "  %-10s %-4s %-5s %7s %5s %-16s %12s %12s %10s %8s\n", "NAME",
                "ROLE", "LINK", "SPEED", "MTU", "DRIVER", "RX PKTS", "TX PKTS", "RX MISSED",
                "ERRORS");
  o << line;
  for (auto& p : s["ports"]) {
    json& k = p["counters"];
    uint64_t errors = k.value("rx_errors", uint64_t{0}) + k.value("tx_errors", uint64_t{0}) +
                      k.value("rx_nombuf", uint64_t{0});
    uint32_t speed = p["link"].value("speed_mbps", 0u);
    std::string speed_s =
        speed ? std::to_string(speed >= 1000 ? speed / 1000 : speed) + (speed >= 1000 ? "G" : "M")
              : "-";
    std::snprintf(line, sizeof line, "  %-10s %-4s %-5s %7s %5u %-16s %12llu %12llu %10llu %8llu\n",
                  str(p, "name").c_str(), str(p, "role").c_str(),
                  p["link"].value("up", false) ? "up" : "DOWN", speed_s.c_str(), p.value("mtu", 0u),
                  str(p, "driver").c_str(),
                  static_cast<unsigned long long>(k.value("rx_packets", uint64_t{0})),
                  static_cast<unsigned long long>(k.value("tx_packets", uint64_t{0})),
                  static_cast<unsigned long long>(k.value("rx_missed", uint64_t{0})),
                  static_cast<unsigned long long>(errors));
    o << line;
  }
  if (s.contains("fast_path") && s["fast_path"].is_object()) {
    json& f = s["fast_path"];
    o << "\nFast path  " << f.value("tunnels", 0) << " tunnels, " << f.value("lines_usable", 0)
      << "/" << f.value("lines", 0) << " lines usable, " << f.value("routes", 0)
      << " routes, tables generation " << f.value("tables_generation", 0) << ", "
      << f.value("drops_total", uint64_t{0}) << " drops (mcgwctl show counters)\n";
    for (auto& w : f["workers"]) {
      int lcore = w.value("lcore", -1);
      o << "  worker " << w.value("index", 0) << " ("
        << (lcore < 0 ? std::string("thread") : "lcore " + std::to_string(lcore))
        << "): " << str(w, "state");
      if (str(w, "state") == "sleeping") {
        o << " " << w.value("sleep_us", 0) << " us (max " << f.value("idle_sleep_max_us", 0) << ")";
      }
      o << ", " << w.value("rx_packets", uint64_t{0}) << " packets received\n";
    }
  }
  if (s.contains("path_mtu") && s["path_mtu"].is_object()) {
    json& pm = s["path_mtu"];
    o << "\nPath MTU  probing " << (pm.value("probe", false) ? "on" : "off") << " (UDP port "
      << pm.value("probe_port", 0) << ")";
    if (pm.contains("icmp")) {
      o << ", ICMP too-big " << pm["icmp"].value("matched", uint64_t{0}) << " matched / "
        << pm["icmp"].value("received", uint64_t{0}) << " received, probes "
        << pm["probes"].value("replies", uint64_t{0}) << " answered, "
        << pm["icmp"].value("refused", uint64_t{0}) << " refused / "
        << pm["probes"].value("sent", uint64_t{0}) << " sent";
    }
    o << "\n";
    std::snprintf(line, sizeof line, "  %-24s %5s %5s %-10s %-9s %s\n", "LINE", "PMTU", "MTU",
                  "SOURCE", "PROBE", "SINCE");
    o << line;
    for (auto& l : pm["lines"]) {
      const std::string name = str(l, "peer") + "/" + str(l, "line");
      const std::string since = l.contains("path_mtu_age_s")
                                    ? duration(l.value("path_mtu_age_s", int64_t{0})) + " ago"
                                    : "-";
      std::snprintf(line, sizeof line, "  %-24s %5d %5d %-10s %-9s %s\n", name.c_str(),
                    l.value("path_mtu", 0), l.value("configured_mtu", 0),
                    str(l, "path_mtu_source").c_str(), str(l, "probe").c_str(), since.c_str());
      o << line;
    }
    for (const auto& e : pm["errors"]) {
      o << "  ! " << e.get<std::string>() << "\n";
    }
    // Line quality (control/pmtu/quality.hpp): the 10 s window, and the
    // 60 s window's loss.
    if (pm.value("quality_interval_ms", 0) == 0) {
      o << "\nLine quality  off (path-mtu quality-interval-ms 0)\n";
    } else {
      o << "\nLine quality  a probe every " << pm.value("quality_interval_ms", 0)
        << " ms per line; 10 s window (60 s: mcgwctl show tunnels --json)\n";
      std::snprintf(line, sizeof line, "  %-24s %-9s %8s %-31s %9s %8s\n", "LINE", "STATE", "LOSS",
                    "RTT ms last/min/mean/max", "JITTER ms", "LOSS 60s");
      o << line;
      for (auto& l : pm["lines"]) {
        const std::string name = str(l, "peer") + "/" + str(l, "line");
        const json q = l.contains("quality") ? l["quality"] : json::object();
        const json w = q.contains("window_10s") ? q["window_10s"] : json::object();
        const json w60 = q.contains("window_60s") ? q["window_60s"] : json::object();
        const std::string rtt = fixed(w, "rtt_ms_last", 3) + "/" + fixed(w, "rtt_ms_min", 3) + "/" +
                                fixed(w, "rtt_ms_mean", 3) + "/" + fixed(w, "rtt_ms_max", 3);
        std::snprintf(line, sizeof line, "  %-24s %-9s %8s %-31s %9s %8s\n", name.c_str(),
                      str(q, "state").c_str(), percent(w).c_str(), rtt.c_str(),
                      fixed(w, "jitter_ms", 3).c_str(), percent(w60).c_str());
        o << line;
      }
    }
  }
  if (s.contains("routes") && s["routes"].is_object()) {
    o << "\nRoutes   " << s["routes"].value("prefixes", uint64_t{0}) << " prefixes;";
    for (auto& [source, n] : s["routes"]["by_source"].items()) {
      o << " " << source << " " << n.get<uint64_t>();
    }
    o << "\n";
  }
  if (s.contains("bgp") && s["bgp"].is_object() && s["bgp"].value("enabled", false)) {
    renderBgp(o, s["bgp"]);
  }
  if (s.contains("vrrp")) {
    if (std::string v = vrrp::renderVrrp(s["vrrp"]); !v.empty()) {
      o << "\nVRRP\n" << v;
    }
  }
  if (s.contains("encryption") && s["encryption"].is_object() &&
      !s["encryption"].value("lines", json::array()).empty()) {  // docs/encryption.md
    o << "\nEncryption (ESP AES-256-GCM, engine " << str(s["encryption"], "engine") << ")\n";
    for (auto& l : s["encryption"]["lines"]) {
      o << "  " << str(l, "peer") << "/" << str(l, "line") << ": keys " << str(l, "keys");
      if (l.contains("agreement") && l["agreement"].is_object()) {
        json& a = l["agreement"];
        o << " (" << str(a, "state");
        if (a.contains("role")) {
          o << ", " << str(a, "role");
        }
        o << ")";
      }
      if (l["outbound"].is_object()) {
        json& out = l["outbound"];
        char spi[16];
        std::snprintf(spi, sizeof spi, "0x%08x", out.value("spi", 0u));
        o << ", out SPI " << spi << " generation " << out.value("generation", uint64_t{0})
          << ", age " << duration(out.value("age_s", int64_t{0}));
        if (out.contains("next_rekey_s")) {
          o << ", rekey in " << duration(static_cast<int64_t>(out.value("next_rekey_s", 0.0)));
        }
        o << ", " << l["inbound"].size() << " inbound SA(s)\n";
      } else {
        o << ", NO OUTBOUND SA: " << str(l, "problem");
        if (l.contains("agreement") && l["agreement"].is_object() &&
            !str(l["agreement"], "last_error").empty()) {
          o << " (" << str(l["agreement"], "last_error") << ")";
        }
        o << "\n";
      }
    }
  }
  if (s.contains("address_plan") && s["address_plan"].is_object()) {
    json& ap = s["address_plan"];
    o << "\nAddress plan  " << ap.value("vpcs", uint64_t{0}) << " VPCs, "
      << ap.value("mapped_ranges", uint64_t{0}) << " mapped ranges, "
      << ap.value("pools", uint64_t{0}) << " pools";
    if (ap.contains("store") && ap["store"].is_object()) {
      json& st = ap["store"];
      o << "; store " << str(st, "store") << ": " << str(st, "state") << ", revision "
        << st.value("revision", uint64_t{0}) << " (" << st.value("stored_vpcs", uint64_t{0})
        << " stored VPCs)";
      if (st.contains("error")) {
        o << "\n  ! " << str(st, "state") << " since " << str(st, "since") << ": "
          << str(st, "error");
      }
      if (st.contains("refused") && st["refused"].is_object()) {
        o << "\n  ! revision " << st["refused"].value("revision", uint64_t{0}) << " refused:";
        for (const auto& e : st["refused"]["errors"]) {
          o << "\n      " << (e.is_string() ? e.get<std::string>() : e.dump());
        }
      }
    } else {
      o << "; no store followed";
    }
    o << "\n";
  }
  return o.str();
}

namespace {

unsigned long long u(const json& j, const char* key) {
  return static_cast<unsigned long long>(j.value(key, uint64_t{0}));
}

}  // namespace

std::string renderTunnels(json t) {
  std::ostringstream o;
  char line[320];
  for (auto& tu : t["tunnels"]) {
    std::string active;
    for (const auto& a : tu["active_lines"]) {
      active += (active.empty() ? "" : ",") + a.get<std::string>();
    }
    o << "tunnel " << str(tu, "peer") << "/" << str(tu, "tenant") << "  vni " << tu.value("vni", 0)
      << "  " << str(tu, "encapsulation") << "  " << str(tu, "line_mode")
      << "  active: " << (active.empty() ? "NONE" : active) << "\n";
    json& k = tu["counters"];
    o << "  tx " << u(k, "tx_packets") << " pkts / " << u(k, "tx_bytes") << " B, rx "
      << u(k, "rx_packets") << " pkts / " << u(k, "rx_bytes") << " B\n";
    if (tu.contains("mss4")) {
      const unsigned m4 = tu.value("mss4", 0u), m6 = tu.value("mss6", 0u);
      o << "  mss clamp "
        << (m4 ? std::to_string(m4) + " (IPv4) / " + std::to_string(m6) + " (IPv6)"
               : std::string("off"))
        << "\n";
    }
    std::snprintf(line, sizeof line,
                  "  %-10s %-6s %-6s %-24s %-24s %5s %5s %-10s %-9s %5s %12s %12s\n", "LINE",
                  "PORT", "STATE", "LOCAL VTEP", "REMOTE VTEP", "MTU", "PMTU", "SOURCE", "PROBE",
                  "INNER", "TX PKTS", "RX PKTS");
    o << line;
    for (auto& l : tu["lines"]) {
      std::string state = l.value("up", false)          ? "up"
                          : !l.value("admin_up", true)  ? "admin"
                          : !l.value("link_up", false)  ? "down"
                          : !l.value("resolved", false) ? "no-mac"
                                                        : "down";
      std::snprintf(line, sizeof line,
                    "  %-10s %-6s %-6s %-24s %-24s %5d %5d %-10s %-9s %5d %12llu %12llu\n",
                    str(l, "name").c_str(), str(l, "port").c_str(), state.c_str(),
                    str(l, "local_vtep").c_str(), str(l, "remote_vtep").c_str(), l.value("mtu", 0),
                    l.value("path_mtu", l.value("mtu", 0)), str(l, "path_mtu_source").c_str(),
                    str(l, "probe").c_str(), l.value("inner_mtu", 0),
                    u(l["counters"], "tx_packets"), u(l["counters"], "rx_packets"));
      o << line;
      if (l.value("path_mtu_source", "configured") != "configured") {
        o << "             path MTU since " << str(l, "path_mtu_since") << ": "
          << str(l, "path_mtu_reason") << "\n";
      }
      if (l.contains("quality") && l["quality"].is_object()) {
        const json& q = l["quality"];
        o << "             quality " << str(q, "state");
        if (q.contains("peer_responds") && !q.value("peer_responds", false)) {
          o << " (no responder seen at the peer)";
        }
        if (q.contains("window_10s")) {
          o << ": 10 s " << qualityWords(q, "window_10s") << "; 60 s "
            << qualityWords(q, "window_60s");
        }
        o << "\n";
      }
      if (l.contains("sla") && l["sla"].is_object()) {
        const json& s = l["sla"];
        o << "             SLA " << str(s, "state");
        if (s["reason"].is_string() && str(s, "state") != "within") {
          o << " (" << str(s, "reason") << ")";
        }
        if (s.contains("within_for_s")) {
          o << ", within it for " << s.value("within_for_s", 0) << " of " << s.value("hold_s", 0)
            << " s";
        }
        o << ", since " << str(s, "since") << "\n";
      }
    }
  }
  if (t["tunnels"].empty()) {
    o << "no tunnels (no peers in the config)\n";
  }
  return o.str();
}

std::string renderRoutes(json r) {
  std::ostringstream o;
  char line[256];
  // Every candidate of every source; '*' marks the one in the fast path.
  std::snprintf(line, sizeof line, "  %-12s %-44s %-10s %4s  %s\n", "TENANT", "PREFIX", "SOURCE",
                "DIST", "VIA");
  o << line;
  for (auto& x : r["routes"]) {
    const bool selected =
        !x.contains("selected") || (x["selected"].is_boolean() && x["selected"].get<bool>());
    std::snprintf(line, sizeof line, "%c %-12s %-44s %-10s %4llu  %s\n", selected ? '*' : ' ',
                  str(x, "tenant").c_str(), str(x, "prefix").c_str(), str(x, "source").c_str(),
                  u(x, "distance"), str(x, "via").c_str());
    o << line;
  }
  if (r.value("truncated", false)) {
    o << "  (the first " << r["routes"].size() << " of " << u(r, "total")
      << " routes; mcgwd lists no more)\n";
  }
  return o.str();
}

std::string renderCounters(json c) {
  std::ostringstream o;
  char line[256];
  o << "Traffic            packets          bytes\n";
  for (const char* side : {"lan", "wan"}) {
    json& k = c[side];
    std::snprintf(line, sizeof line, "  %s rx  %14llu %14llu\n  %s tx  %14llu %14llu\n", side,
                  u(k, "rx_packets"), u(k, "rx_bytes"), side, u(k, "tx_packets"), u(k, "tx_bytes"));
    o << line;
  }
  o << "\nDrops (" << u(c, "drops_total") << ")\n";
  for (const auto& [name, v] : c["drops"].items()) {
    if (v.get<uint64_t>() > 0) {
      std::snprintf(line, sizeof line, "  %-18s %12llu\n", name.c_str(),
                    static_cast<unsigned long long>(v.get<uint64_t>()));
      o << line;
    }
  }
  o << "\nICMP errors sent " << u(c["icmp"], "sent") << " (time exceeded "
    << u(c["icmp"], "time_exceeded") << ", frag-needed " << u(c["icmp"], "frag_needed")
    << ", packet too big " << u(c["icmp"], "packet_too_big") << "), not sent: rate limit "
    << u(c["icmp"], "rate_limited") << ", not allowed " << u(c["icmp"], "not_allowed")
    << ", no source/buffer " << u(c["icmp"], "suppressed") << "\n";
  if (c.contains("mss")) {
    o << "MSS clamp: " << u(c["mss"], "clamped") << " clamped, " << u(c["mss"], "already_below")
      << " already below, " << u(c["mss"], "no_option") << " without option, "
      << u(c["mss"], "inserted") << " inserted, " << u(c["mss"], "malformed") << " malformed\n";
  }
  if (c.contains("fragmentation")) {
    o << "Fragmented: " << u(c["fragmentation"], "packets") << " packets into "
      << u(c["fragmentation"], "fragments") << " fragments\n";
  }
  if (c.contains("kernel")) {
    o << "Kernel path: " << u(c["kernel"], "to_kernel_packets") << " packets to the kernel, "
      << u(c["kernel"], "from_kernel_packets") << " from it\n";
  }
  if (c.contains("neighbors")) {
    o << "Neighbours: " << u(c["neighbors"], "held_packets") << " packets held while resolving, "
      << u(c["neighbors"], "resolutions_asked") << " resolutions asked\n";
  }
  if (c.contains("vrrp")) {
    o << "Virtual MACs (VRRP): " << u(c["vrrp"], "virtual_mac_frames")
      << " frames accepted while Active\n";
  }
  if (c.contains("sites")) {
    o << "Stand-ins: " << u(c["sites"], "stand_in")
      << " packets sent to another gateway of a peer's site\n";
  }
  if (c.contains("xdp") && c["xdp"].is_object() && !c["xdp"].empty()) {
    o << "\nXDP program (af_xdp ports)\n";
    for (auto& [port, verdicts] : c["xdp"].items()) {
      for (auto& [verdict, n] : verdicts.items()) {
        std::snprintf(line, sizeof line, "  %-8s %-30s %12llu\n", port.c_str(), verdict.c_str(),
                      static_cast<unsigned long long>(n.is_number() ? n.get<uint64_t>() : 0));
        o << line;
      }
    }
  }
  o << "\nLines                           tx pkts      rx pkts\n";
  for (auto& l : c["lines"]) {
    std::snprintf(line, sizeof line, "  %-28s %12llu %12llu %s\n",
                  (str(l, "peer") + "/" + str(l, "line")).c_str(), u(l["counters"], "tx_packets"),
                  u(l["counters"], "rx_packets"), l.value("up", false) ? "" : "(down)");
    o << line;
  }
  o << "\nTunnels                         tx pkts      rx pkts\n";
  for (auto& t : c["tunnels"]) {
    std::snprintf(line, sizeof line, "  %-28s %12llu %12llu\n",
                  (str(t, "peer") + "/" + str(t, "tenant")).c_str(), u(t["counters"], "tx_packets"),
                  u(t["counters"], "rx_packets"));
    o << line;
  }
  if (c.contains("mapped") && c["mapped"].is_array() && !c["mapped"].empty()) {
    o << "\nMapped ranges                   out pkts      in pkts\n";
    for (auto& m : c["mapped"]) {
      std::snprintf(line, sizeof line, "  %-28s %12llu %12llu  %s as %s\n", str(m, "name").c_str(),
                    u(m, "out"), u(m, "in"), str(m, "real").c_str(), str(m, "mapped").c_str());
      o << line;
    }
  }
  o << "\nWorkers     state      polls    busy polls   busy cycles   rx pkts\n";
  for (auto& w : c["workers"]) {
    std::snprintf(line, sizeof line, "  %-8d %-9s %10llu %12llu %13llu %9llu\n",
                  w.value("index", 0), str(w, "state").c_str(), u(w, "polls"), u(w, "busy_polls"),
                  u(w, "busy_cycles"), u(w, "rx_packets"));
    o << line;
  }
  return o.str();
}

std::string renderNeighbors(json n) {
  std::ostringstream o;
  char line[256];
  std::snprintf(line, sizeof line, "%-10s %-40s %-18s %-7s %s\n", "PORT", "ADDRESS", "MAC",
                "SOURCE", "IN FAST PATH");
  o << line;
  for (auto& x : n["neighbors"]) {
    std::snprintf(line, sizeof line, "%-10s %-40s %-18s %-7s %s\n", str(x, "port").c_str(),
                  str(x, "address").c_str(), str(x, "mac").c_str(), str(x, "source").c_str(),
                  x.value("in_fast_path", true) ? "yes" : "no");
    o << line;
  }
  return o.str();
}

std::string renderAudit(json a) {
  std::ostringstream o;
  if (!a.is_object() || !a["differences"].is_array()) {
    return "mcgwd sent an audit this mcgwctl cannot read\n";
  }
  const auto& diffs = a["differences"];
  o << "FRR RIB " << a.value("frr_routes", uint64_t{0}) << " routes, fast path "
    << a.value("fast_path_routes", uint64_t{0}) << " routes from FRR: ";
  if (diffs.empty()) {
    o << "no difference\n";
    return o.str();
  }
  o << diffs.size() << " difference(s)\n";
  for (auto& d : diffs) {
    o << "  " << str(d, "prefix") << ": " << str(d, "difference") << "\n";
  }
  return o.str();
}

}  // namespace mcgw::cli
