// FRR as seen through vtysh: the neighbour poll behind `mcgwctl status`
// and the audit of FRR's RIB against the fast path (`mcgwctl audit`).  Part
// of FrrRouting (frr_routing.hpp); the vtysh runs happen on its worker.
#include <spdlog/spdlog.h>

#include <set>
#include <sstream>

#include "config/text.hpp"
#include "control/core/process.hpp"
#include "control/frr/frr_routing.hpp"

namespace mcgw::frr {

using nlohmann::json;

namespace {

const char* kindName(BgpSession::Kind k) {
  return k == BgpSession::Kind::kLine ? "line" : "neighbor";
}

template <typename T>
T field(const json& j, const char* key, T fallback) {
  auto it = j.find(key);
  if (it == j.end()) {
    return fallback;
  }
  try {
    return it->get<T>();
  } catch (const json::exception&) {
    return fallback;
  }
}

}  // namespace

namespace {

// Every JSON value vtysh printed, in order (one per -c command); a value
// that does not parse ends the list.
std::vector<json> jsonSequence(const std::string& text) {
  std::vector<json> out;
  std::istringstream in(text);
  while (true) {
    in >> std::ws;
    if (in.peek() == std::char_traits<char>::eof()) {
      break;
    }
    json j;
    try {
      in >> j;
    } catch (const json::exception&) {
      break;
    }
    out.push_back(std::move(j));
  }
  return out;
}

// How many routes a `... neighbors X filtered-routes json` answer lists.
int64_t filteredCount(const json& j) {
  if (!j.is_object()) {
    return -1;
  }
  if (j.contains("totalPrefixCounter") && j["totalPrefixCounter"].is_number_integer()) {
    return j["totalPrefixCounter"].get<int64_t>();
  }
  for (const auto& [key, value] : j.items()) {
    if (value.is_object() && key.find("Routes") != std::string::npos) {
      return static_cast<int64_t>(value.size());
    }
  }
  return j.empty() ? 0 : -1;
}

}  // namespace

void FrrRouting::poll() {
  if (polling_ || paused_ || worker_ == nullptr) {
    return;
  }
  if (fpm_ && !fpm_->stats().listening) {
    // The FPM address could not be bound at start (or after a reload): again.
    if (auto r = fpm_->listen(config_->bgp.fpm_address, config_->bgp.fpm_port); r) {
      spdlog::info("FPM: listening on {}", fpm_->stats().address);
    }
  }
  polling_ = true;
  // One vtysh for the summary, one for what each session's import filter
  // refused (kept by soft-reconfiguration inbound): ipv4, and ipv6 on an
  // IPv6 session.
  std::vector<std::string> filtered;
  for (const auto& s : sessions_) {
    const bool v6 = s.address.family == config::Family::V6;
    for (const char* family : {"ipv4", "ipv6"}) {
      if (std::string(family) == "ipv6" && !v6) {
        continue;
      }
      filtered.push_back(std::string("show bgp ") + family + " unicast neighbors " +
                         s.address.toString() + " filtered-routes json");
    }
  }
  auto summary_out = std::make_shared<core::ProcessResult>();
  auto filtered_out = std::make_shared<core::ProcessResult>();
  const FrrPaths paths = FrrPaths::of(*config_);
  auto sessions = std::make_shared<std::vector<BgpSession>>(sessions_);
  worker_->run(
      [summary_out, filtered_out, paths, filtered] {
        *summary_out = core::runProcess(vtyshCommand(paths, {"show bgp summary json"}),
                                        kVtyshTimeout, 16u << 20);
        if (summary_out->ok() && !filtered.empty()) {
          *filtered_out = core::runProcess(vtyshCommand(paths, filtered), kVtyshTimeout, 64u << 20);
        }
      },
      [this, summary_out, filtered_out, sessions] {
        whenRunning([=, this] {
          polling_ = false;
          polled_at_ = std::chrono::system_clock::now();
          json summary;
          if (!summary_out->ok()) {
            poll_error_ = text::escape(summary_out->describe(), 300);
          } else {
            summary = json::parse(summary_out->out, nullptr, false);
            poll_error_ = summary.is_discarded() ? "vtysh answered no JSON" : "";
          }
          const std::vector<json> refused = jsonSequence(filtered_out->out);
          size_t next_refused = 0;
          json out = json::array();
          // The sessions the commands were made for (a reload may have come since).
          for (const auto& s : *sessions) {
            json n = {{"kind", kindName(s.kind)},
                      {"address", s.address.toString()},
                      {"asn", s.asn},
                      {"site", s.site},
                      {"port", s.port},
                      {"bfd", s.bfd}};
            if (s.kind == BgpSession::Kind::kLine) {
              n["peer"] = s.peer;
              n["line"] = s.line;
            }
            const bool v6 = s.address.family == config::Family::V6;
            // Counted over the families the session carries.
            int64_t accepted = 0, sent = 0, filtered_n = 0;
            bool known = false, filtered_known = true;
            for (const char* family : {"ipv4Unicast", "ipv6Unicast"}) {
              if (std::string(family) == "ipv6Unicast" && !v6) {
                continue;
              }
              const json* p = nullptr;
              if (poll_error_.empty()) {
                auto af = summary.find(family);
                if (af != summary.end() && af->is_object() && af->contains("peers") &&
                    (*af)["peers"].is_object() && (*af)["peers"].contains(s.address.toString())) {
                  p = &(*af)["peers"][s.address.toString()];
                }
              }
              if (p != nullptr && p->is_object()) {
                if (!known) {
                  n["state"] = text::escape(field<std::string>(*p, "state", "?"), 64);
                  n["uptime_s"] = field<int64_t>(*p, "peerUptimeMsec", 0) / 1000;
                }
                known = true;
                accepted += field<int64_t>(*p, "pfxRcd", 0);
                sent += field<int64_t>(*p, "pfxSnt", 0);
              }
              const int64_t f =
                  next_refused < refused.size() ? filteredCount(refused[next_refused]) : -1;
              ++next_refused;
              if (f < 0) {
                filtered_known = false;
              } else {
                filtered_n += f;
              }
            }
            if (known) {
              n["prefixes_accepted"] = accepted;
              n["prefixes_sent"] = sent;
              // What the import filter (the plan's ranges of the session's
              // site) refused.
              n["prefixes_refused"] = filtered_known ? json(filtered_n) : json(nullptr);
              n["prefixes_received"] = filtered_known ? json(accepted + filtered_n) : json(nullptr);
            } else {
              n["state"] = poll_error_.empty() ? "not configured in FRR" : "unknown";
            }
            out.push_back(std::move(n));
          }
          neighbors_ = std::move(out);
          // A session FRR does not know: FRR restarted without our config
          // (daemons started by hand), or someone changed it.  Apply it again
          // (frr-reload.py changes nothing when nothing differs).
          bool missing = false;
          for (const auto& n : neighbors_) {
            missing |= n["state"] == "not configured in FRR";
          }
          if (missing && config_state_ == "applied" && !pushing_) {
            spdlog::warn("FRR lacks sessions of its rendered config: applying it again");
            applied_.clear();
            scheduleConfig();
          }
        });
      });
}

namespace {

// FRR's selected, installed routes of one `show ip[v6] route json` answer,
// as zebra would send them over FPM.  Connected, kernel and local routes
// are not sent over FPM (system routes): left out.
void frrFib(const json& rib, std::map<config::IpPrefix, FpmRoute>& out) {
  if (!rib.is_object()) {
    return;
  }
  for (const auto& [key, entries] : rib.items()) {
    auto prefix = config::IpPrefix::parse(key);
    if (!prefix || !entries.is_array()) {
      continue;
    }
    for (const auto& e : entries) {
      const std::string proto = field<std::string>(e, "protocol", "");
      if (!field<bool>(e, "selected", false) || proto == "connected" || proto == "kernel" ||
          proto == "local") {
        continue;
      }
      FpmRoute r;
      r.prefix = prefix->network();
      r.table = field<uint32_t>(e, "table", kMainTable);
      // What zebra installs (and sends over FPM): the next hops marked fib,
      // a recursive one's resolved next hops rather than the BGP next hop.
      for (const auto& nh : e.value("nexthops", json::array())) {
        if (!field<bool>(nh, "fib", false)) {
          continue;
        }
        if (field<bool>(nh, "unreachable", false) ||
            field<std::string>(nh, "blackhole", "") != "") {
          r.type = 6;
        }
        FpmNextHop h;
        if (auto ip = config::IpAddress::parse(field<std::string>(nh, "ip", ""))) {
          h.gateway = *ip;
        }
        h.ifindex = field<uint32_t>(nh, "interfaceIndex", 0);
        r.next_hops.push_back(h);
      }
      out[r.prefix] = std::move(r);
    }
  }
}

}  // namespace

void FrrRouting::audit(std::function<void(json)> reply) {
  if (!config_->bgp.enabled || worker_ == nullptr) {
    reply(json{{"ok", false}, {"error", "audit: BGP is not configured (no bgp section)"}});
    return;
  }
  const FrrPaths paths = FrrPaths::of(*config_);
  // vtysh and the parsing of its (large) answers off the loop; only the
  // comparison with the fast path's routes on it.
  auto frr = std::make_shared<std::map<config::IpPrefix, FpmRoute>>();
  auto error = std::make_shared<std::string>();
  worker_->run(
      [frr, error, paths] {
        for (const char* command : {"show ip route json", "show ipv6 route json"}) {
          auto r = core::runProcess(vtyshCommand(paths, {command}), kReloadTimeout, 512u << 20);
          if (!r.ok()) {
            *error = "audit: vtysh: " + text::escape(r.describe(), 300);
            return;
          }
          json rib = json::parse(r.out, nullptr, false);
          if (rib.is_discarded()) {
            *error = "audit: vtysh answered no JSON";
            return;
          }
          frrFib(rib, *frr);
        }
      },
      [this, frr, error, reply] {
        whenRunning([=, this] {
          if (!error->empty()) {
            reply(json{{"ok", false}, {"error", *error}});
          } else {
            reply(json{{"ok", true}, {"result", compare(*frr)}});
          }
        });
      });
}

json FrrRouting::compare(const std::map<config::IpPrefix, FpmRoute>& frr) const {
  json diffs = json::array();
  auto add = [&](const config::IpPrefix& p, std::string what) {
    diffs.push_back({{"prefix", p.toString()}, {"difference", std::move(what)}});
  };
  const Tenancy tenancy(*config_);
  const auto& mine = routes_.entries();
  size_t fast_path = 0;
  for (const auto& [prefix, e] : mine) {
    fast_path += e.installed ? 1 : 0;
  }
  for (const auto& [prefix, route] : frr) {
    auto want = translate(*config_, tenancy, route, routes_.ports());
    auto it = mine.find(prefix);
    if (it == mine.end()) {
      add(prefix, "in FRR's FIB, never received over FPM");
      continue;
    }
    const auto& e = it->second;
    if (!want) {
      add(prefix, "in FRR's FIB, refused by mcgw: " + want.error());
      continue;
    }
    if (!e.installed) {
      add(prefix, "in FRR's FIB via " + describe(want->vias) + ", not in the fast path" +
                      (e.refused.empty() ? "" : ": " + e.refused));
      continue;
    }
    if (!(*e.installed == *want)) {
      add(prefix, "FRR: " + want->tenant + " via " + describe(want->vias) + "; fast path: " +
                      e.installed->tenant + " via " + describe(e.installed->vias));
    }
    if (e.stale) {
      add(prefix, "stale in the fast path (not sent again since zebra reconnected)");
    }
  }
  for (const auto& [prefix, e] : mine) {
    if (e.installed && !frr.count(prefix)) {
      add(prefix, "in the fast path via " + describe(e.installed->vias) + ", not in FRR's FIB" +
                      (e.stale ? " (stale)" : ""));
    }
  }
  // What FRR's route source holds must be what the fast path's RIB has from
  // it: the same prefixes, tenant by tenant.
  if (list_frr_routes_) {
    std::set<std::pair<std::string, config::IpPrefix>> rib;
    for (const auto& r : list_frr_routes_()) {
      if (auto p = config::IpPrefix::parse(r.prefix)) {
        rib.insert({r.tenant, *p});
      }
    }
    for (const auto& [prefix, e] : mine) {
      if (e.installed && !rib.erase({e.installed->tenant, prefix})) {
        add(prefix, "received from FRR for tenant " + e.installed->tenant +
                        " but missing from the fast path's RIB");
      }
    }
    for (const auto& [tenant, prefix] : rib) {
      add(prefix, "in the fast path's RIB as an FRR route of tenant " + tenant +
                      " that FRR's route source does not hold");
    }
  }
  const size_t shown = std::min<size_t>(diffs.size(), 10000);
  json listed = json::array();
  for (size_t i = 0; i < shown; ++i) {
    listed.push_back(diffs[i]);
  }
  return {{"schema", "mcgw.audit/1"},
          {"frr_routes", frr.size()},
          {"fast_path_routes", fast_path},
          {"difference_count", diffs.size()},
          {"differences", listed}};
}

}  // namespace mcgw::frr
