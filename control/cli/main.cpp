// mcgwctl: the operator CLI.  A thin client of mcgwd's API, plus offline
// config checking and the address plan (`plan ...`, which works on the
// config file and its store, control/plan/plan_cli.hpp).  Results go to
// stdout, diagnostics to stderr.
//
// Exit codes: status: 0 healthy, 1 degraded, 2 daemon unreachable;
// check-config: 0 valid, 1 invalid; plan: 0 done, 1 refused, 2 store
// unreachable; other commands: 0 done, 1 refused, 2 daemon unreachable; a
// bad command line: 64.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <limits>

#include "config/loader.hpp"
#include "config/text.hpp"
#include "control/api/client.hpp"
#include "control/api/json_text.hpp"
#include "control/api/protocol.hpp"
#include "control/capture/capture_cli.hpp"
#include "control/cli/status_view.hpp"
#include "control/flows/flows_cli.hpp"
#include "control/plan/plan_cli.hpp"
#include "control/policy/policy_cli.hpp"
#include "control/policy/usage_cli.hpp"
#include "control/vrrp/vrrp_cli.hpp"

using nlohmann::json;

namespace {

constexpr int kOk = 0;
constexpr int kFailed = 1;
constexpr int kUnreachable = 2;
constexpr int kUsage = 64;  // EX_USAGE: bad command line

// Text for the terminal: lines holding control characters (a carriage
// return, an escape sequence) or bytes that are not UTF-8 are written
// escaped, so that nothing the daemon relays can rewrite the operator's screen.
std::string forTerminal(const std::string& text) {
  std::string out;
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    std::string_view line(text.data() + start,
                          (nl == std::string::npos ? text.size() : nl) - start);
    if (mcgw::text::findProblem(line, mcgw::text::Breaks::kAllowed) ||
        line.find('\r') != std::string_view::npos) {
      out += mcgw::text::escape(line, std::numeric_limits<size_t>::max());
    } else {
      out += line;
    }
    if (nl == std::string::npos) {
      break;
    }
    out += '\n';
    start = nl + 1;
  }
  return out;
}

void printError(const json& response) {
  json e = response.value("error", json::object());
  std::string message = e.is_object() && e.contains("message") && e["message"].is_string()
                            ? e["message"].get<std::string>()
                            : std::string("request failed");
  std::fprintf(stderr, "mcgwctl: %s\n", forTerminal(message).c_str());
  if (e.is_object() && e.contains("details") && e["details"].is_array()) {
    for (const auto& d : e["details"]) {
      std::string line = d.is_string() ? d.get<std::string>() : mcgw::api::dump(d);
      std::fprintf(stderr, "  %s\n", forTerminal(line).c_str());
    }
  }
}

// Calls mcgwd.  On a transport failure or a refusal, prints why to stderr,
// sets rc and returns nullopt; otherwise returns the whole response.
std::optional<json> request(const std::string& socket, const std::string& command, int& rc,
                            const json& args = json::object()) {
  auto r = mcgw::api::call(socket, command, args);
  if (!r) {
    std::fprintf(stderr, "mcgwctl: %s\n", forTerminal(r.error().message).c_str());
    rc = r.error().unreachable ? kUnreachable : kFailed;
    return std::nullopt;
  }
  if (!r->value("ok", false)) {
    printError(*r);
    rc = kFailed;
    return std::nullopt;
  }
  if (!r->contains("result") || !(*r)["result"].is_object()) {
    std::fprintf(stderr, "mcgwctl: mcgwd's response has no result\n");
    rc = kFailed;
    return std::nullopt;
  }
  return *r;
}

int checkConfig(const std::string& file) {
  auto r = mcgw::config::loadConfigFile(file);
  if (!r) {
    for (const auto& e : r.error()) {
      std::fprintf(stderr, "%s\n", forTerminal(e.toString()).c_str());
    }
    std::fprintf(stderr, "%s: invalid (%zu error%s)\n", forTerminal(file).c_str(), r.error().size(),
                 r.error().size() == 1 ? "" : "s");
    return kFailed;
  }
  const auto& c = **r;
  // Doubtful but not wrong: said, and the file is still valid.
  for (auto w : c.warnings) {
    w.message = "warning: " + w.message;
    std::fprintf(stderr, "%s\n", forTerminal(w.toString()).c_str());
  }
  // Not a count: past 100 warnings the last entry stands for the rest.
  const std::string warned = c.warnings.empty() ? "" : ", with warnings";
  std::printf("%s: valid (node %s, %zu ports, %zu tenants, %zu peers, sha256 %s%s)\n",
              forTerminal(file).c_str(), forTerminal(c.node.name).c_str(), c.ports.size(),
              c.tenants.size(), c.peers.size(), c.checksum.substr(0, 12).c_str(), warned.c_str());
  return kOk;
}

}  // namespace

namespace {
std::string showVrrpText(json v) {
  std::string text = mcgw::vrrp::renderVrrp(v);
  return text.empty() ? "no VRRP groups\n" : text;
}
}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"mcgwctl: operate the mcgw gateway daemon (mcgwd)"};
  app.require_subcommand(1);
  app.fallthrough();  // --socket may follow the subcommand
  std::string socket = mcgw::api::kDefaultSocket;
  if (const char* env = std::getenv("MCGW_SOCKET")) {
    socket = env;
  }
  app.add_option("-s,--socket", socket, "mcgwd API socket (env MCGW_SOCKET)")
      ->capture_default_str();
  bool as_json = false;

  auto* status = app.add_subcommand(
      "status", "Health summary, config, ports (exit 0 healthy, 1 degraded, 2 unreachable)");
  status->add_flag("--json", as_json, "Print the versioned JSON document (schema mcgw.status/1)");

  auto* show = app.add_subcommand("show", "Show running state");
  show->require_subcommand(1);
  auto* show_config = show->add_subcommand("config", "The config text in force");
  show_config->add_flag("--json", as_json, "JSON with file, checksum and text");
  auto* show_tunnels =
      show->add_subcommand("tunnels", "Tunnels per peer and tenant, their lines and state");
  show_tunnels->add_flag("--json", as_json, "JSON (schema mcgw.tunnels/1)");
  auto* show_routes = show->add_subcommand("routes", "The fast path's routes per tenant");
  show_routes->add_flag("--json", as_json, "JSON (schema mcgw.routes/1)");
  std::string route_tenant, route_source, route_prefix;
  show_routes->add_option("--tenant", route_tenant, "Only this tenant's routes");
  show_routes->add_option("--source", route_source,
                          "Only routes of this source (local, connected, static, frr, plan)");
  show_routes->add_option("--prefix", route_prefix, "Only prefixes inside this one");
  auto* show_policy =
      show->add_subcommand("policy", "Tenant policy rules and the packets each allowed or denied");
  show_policy->add_flag("--json", as_json, "JSON (schema mcgw.policy/1)");
  std::string policy_tenant;
  show_policy->add_option("--tenant", policy_tenant, "Only this tenant's policy");
  auto* show_usage = show->add_subcommand(
      "usage", "Bytes and packets per tenant per line and direction (usage accounting)");
  show_usage->add_flag("--json", as_json, "JSON (schema mcgw.usage/1)");
  std::string usage_since, usage_tenant;
  show_usage->add_option("--since", usage_since,
                         "From this time on: 2026-12-05T01:00:00Z, or an age: 30m, 1h, 2d");
  show_usage->add_option("--tenant", usage_tenant, "Only this tenant's lines");
  auto* show_flows = show->add_subcommand(
      "flows",
      "Flow audit's records: per flow packets, bytes, forwarded or denied and by which rule");
  show_flows->add_flag("--json", as_json, "JSON (schema mcgw.flows/1)");
  std::string flows_tenant;
  bool flows_denied = false;
  size_t flows_limit = 100;
  show_flows->add_option("--tenant", flows_tenant, "Only this tenant's records");
  show_flows->add_flag(
      "--denied", flows_denied,
      "Only records of dropped packets (policy-deny, tenant-isolation, rate-limit)");
  show_flows->add_option("--limit", flows_limit, "At most this many, most recently seen first")
      ->check(CLI::Range(1, 10000))
      ->capture_default_str();
  auto* show_neighbors = show->add_subcommand(
      "neighbors", "Next-hop MACs the fast path uses (kernel-resolved and static)");
  show_neighbors->add_flag("--json", as_json, "JSON (schema mcgw.neighbors/1)");
  auto* show_vrrp = show->add_subcommand(
      "vrrp", "VRRP groups: state, priorities, the Active, timers, transitions, tracking");
  show_vrrp->add_flag("--json", as_json, "JSON (the \"vrrp\" block of status --json)");
  auto* show_counters =
      show->add_subcommand("counters", "Fast-path counters: traffic, drops by reason, workers");
  show_counters->add_flag("--json", as_json, "JSON (schema mcgw.counters/1)");

  std::string line_peer, line_name, line_state;
  auto* line_cmd = app.add_subcommand(
      "line", "Take an underlay line out of use (down) or back (up); not kept across restarts");
  line_cmd->add_option("PEER", line_peer, "Peer site")->required();
  line_cmd->add_option("LINE", line_name, "Line of the peer")->required();
  line_cmd->add_option("STATE", line_state, "up or down")
      ->required()
      ->check(CLI::IsMember({"up", "down"}));

  auto* policy_cmd = app.add_subcommand(
      "policy",
      "Tenant bandwidth and rules changed live (not kept across restarts; docs/policy.md)");
  policy_cmd->require_subcommand(1);
  std::string pol_tenant, pol_line, pol_rate, pol_peak, pol_burst, pol_peak_burst;
  auto* policy_set = policy_cmd->add_subcommand(
      "set", "Give a tenant a rate into a line (PEER/LINE) or each line of a peer (PEER) now");
  policy_set->add_option("TENANT", pol_tenant, "Tenant")->required();
  policy_set->add_option("--line", pol_line, "PEER/LINE, or PEER for each of its lines")
      ->required();
  policy_set->add_option("--rate", pol_rate, "Committed rate in bit/s: 50M, 2.5G, 40G")->required();
  policy_set->add_option("--peak-rate", pol_peak, "Peak rate (default: the rate)");
  policy_set->add_option("--burst", pol_burst, "Committed burst in bytes: 64k, 1MiB");
  policy_set->add_option("--peak-burst", pol_peak_burst, "Peak burst in bytes");
  auto* policy_clear = policy_cmd->add_subcommand(
      "clear", "End a live rate: the tenant's config rates for that line apply again");
  policy_clear->add_option("TENANT", pol_tenant, "Tenant")->required();
  policy_clear->add_option("--line", pol_line, "PEER/LINE or PEER, as it was set")->required();
  auto* policy_rules = policy_cmd->add_subcommand(
      "rules", "Replace a tenant's policy rules live, over the config's (kept across reloads)");
  policy_rules->require_subcommand(1);
  std::string rules_file;
  auto* rules_set = policy_rules->add_subcommand(
      "set", "Give a tenant the policy in a file (YAML or JSON, as tenants[].policy) now");
  rules_set->add_option("TENANT", pol_tenant, "Tenant")->required();
  rules_set
      ->add_option("--file", rules_file,
                   "The policy: default and rules, as under tenants[].policy; - for stdin")
      ->required();
  auto* rules_clear = policy_rules->add_subcommand(
      "clear", "End a tenant's live rules: the config's rules apply again");
  rules_clear->add_option("TENANT", pol_tenant, "Tenant")->required();

  std::string sa_peer, sa_line;
  auto* sa_cmd = app.add_subcommand("sa", "ESP security associations of encrypted lines");
  auto* sa_rekey = sa_cmd->add_subcommand(
      "rekey", "Agree new keys for a line now (make-before-break: nothing is lost)");
  sa_rekey->add_option("PEER", sa_peer, "Peer site")->required();
  sa_rekey->add_option("LINE", sa_line, "Line of the peer")->required();
  sa_cmd->require_subcommand(1);

  auto* audit = app.add_subcommand(
      "audit", "Compare FRR's RIB with the fast path's routes from FRR (exit 1 on a difference)");
  audit->add_flag("--json", as_json, "JSON (schema mcgw.audit/1)");

  auto* reload = app.add_subcommand(
      "reload", "Re-read the config file; an invalid file is refused and changes nothing");
  reload->add_flag("--json", as_json, "Print the JSON response");

  mcgw::capture::CaptureRequest cap;
  auto* capture = app.add_subcommand(
      "capture", "Capture packets of a port, a line (PEER/LINE) or a tenant's LAN ports as pcapng");
  capture->add_option("TARGET", cap.target, "A port, a line (PEER/LINE, or LINE) or a tenant")
      ->required();
  capture->add_option("--filter", cap.filter, "A tcpdump (libpcap) filter expression");
  capture->add_option("--count", cap.count, "Stop after N packets (default: until Ctrl-C)");
  capture->add_option("--snaplen", cap.snaplen, "Bytes kept of each packet (64-9216; 1600)")
      ->check(CLI::Range(64, 9216));
  capture->add_option("-w", cap.output, "Write pcapng to FILE, or - for stdout")->required();

  std::string file;
  auto* check = app.add_subcommand("check-config", "Validate a config file offline (exit 0/1)");
  check->add_option("FILE", file, "Config file")->required();

  mcgw::plan::PlanCommands plan(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? kOk : kUsage;  // --help exits 0
  }

  if (*check) {
    return checkConfig(file);
  }
  if (*capture) {
    return mcgw::capture::runCapture(socket, cap);
  }
  if (plan.chosen()) {
    return plan.run([](const std::string& t) { std::cout << forTerminal(t) << std::flush; },
                    [](const std::string& t) { std::cerr << forTerminal(t) << std::flush; });
  }

  int rc = kOk;
  try {
    if (*status) {
      auto r = request(socket, "status", rc);
      if (!r) {
        return rc;
      }
      const json& s = (*r)["result"];
      std::cout << (as_json ? mcgw::api::dump(s, 2) + "\n"
                            : forTerminal(mcgw::cli::renderStatus(s)));
      return s.value("/health/state"_json_pointer, "") == "healthy" ? kOk : kFailed;
    }
    if (*show_config) {
      auto r = request(socket, "show-config", rc);
      if (!r) {
        return rc;
      }
      const json& c = (*r)["result"];
      if (as_json) {
        std::cout << mcgw::api::dump(c, 2) << "\n";
      } else {
        std::cout << forTerminal("# " + c.value("file", "") + " (sha256 " +
                                 c.value("checksum", "") + ")\n" + c.value("text", ""));
      }
      return kOk;
    }
    struct View {
      CLI::App* cmd;
      const char* request;
      std::string (*render)(json);
    };
    if (*show_usage) {
      json args = json::object();
      if (!usage_since.empty()) {
        if (auto s = mcgw::usage::parseSince(usage_since, std::chrono::system_clock::now()); !s) {
          std::fprintf(stderr, "mcgwctl: %s\n", forTerminal(s.error()).c_str());
          return kUsage;
        }
        args["since"] = usage_since;  // mcgwd parses it again against its own clock
      }
      if (!usage_tenant.empty()) {
        args["tenant"] = usage_tenant;
      }
      auto r = request(socket, "show-usage", rc, args);
      if (!r) {
        return rc;
      }
      const json& res = (*r)["result"];
      std::cout << (as_json ? mcgw::api::dump(res, 2) + "\n"
                            : forTerminal(mcgw::usage::renderUsage(res)));
      return kOk;
    }
    if (*show_flows) {
      json args = {{"limit", flows_limit}};
      if (!flows_tenant.empty()) {
        args["tenant"] = flows_tenant;
      }
      if (flows_denied) {
        args["denied"] = true;
      }
      auto r = request(socket, "show-flows", rc, args);
      if (!r) {
        return rc;
      }
      const json& res = (*r)["result"];
      std::cout << (as_json ? mcgw::api::dump(res, 2) + "\n"
                            : forTerminal(mcgw::flows::renderFlows(res)));
      return kOk;
    }
    if (*show_policy) {
      json args = json::object();
      if (!policy_tenant.empty()) {
        args["tenant"] = policy_tenant;
      }
      auto r = request(socket, "show-policy", rc, args);
      if (!r) {
        return rc;
      }
      const json& res = (*r)["result"];
      std::cout << (as_json ? mcgw::api::dump(res, 2) + "\n"
                            : forTerminal(mcgw::policyview::renderPolicy(res)));
      return kOk;
    }
    if (*show_routes) {
      json args = json::object();
      for (const auto& [key, value] :
           {std::pair<const char*, std::string*>{"tenant", &route_tenant},
            {"source", &route_source},
            {"prefix", &route_prefix}}) {
        if (!value->empty()) {
          args[key] = *value;
        }
      }
      auto r = request(socket, "show-routes", rc, args);
      if (!r) {
        return rc;
      }
      const json& res = (*r)["result"];
      std::cout << (as_json ? mcgw::api::dump(res, 2) + "\n"
                            : forTerminal(mcgw::cli::renderRoutes(res)));
      return kOk;
    }
    if (*audit) {
      auto r = request(socket, "audit", rc);
      if (!r) {
        return rc;
      }
      const json& res = (*r)["result"];
      std::cout << (as_json ? mcgw::api::dump(res, 2) + "\n"
                            : forTerminal(mcgw::cli::renderAudit(res)));
      return res.is_object() && res.contains("differences") && res["differences"].is_array() &&
                     res["differences"].empty()
                 ? kOk
                 : kFailed;
    }
    for (const View& v : {View{show_tunnels, "show-tunnels", mcgw::cli::renderTunnels},
                          View{show_counters, "show-counters", mcgw::cli::renderCounters},
                          View{show_neighbors, "show-neighbors", mcgw::cli::renderNeighbors},
                          View{show_vrrp, "show-vrrp", showVrrpText}}) {
      if (*v.cmd) {
        auto r = request(socket, v.request, rc);
        if (!r) {
          return rc;
        }
        const json& res = (*r)["result"];
        std::cout << (as_json ? mcgw::api::dump(res, 2) + "\n" : forTerminal(v.render(res)));
        return kOk;
      }
    }
    if (*policy_set || *policy_clear) {
      json args = {{"tenant", pol_tenant}, {"line", pol_line}};
      if (*policy_clear) {
        args["clear"] = true;
      } else {
        args["rate"] = pol_rate;
        for (const auto& [key, value] :
             {std::pair<const char*, std::string*>{"peak_rate", &pol_peak},
              {"burst", &pol_burst},
              {"peak_burst", &pol_peak_burst}}) {
          if (!value->empty()) {
            args[key] = *value;
          }
        }
      }
      auto r = request(socket, "policy-set", rc, args);
      if (!r) {
        return rc;
      }
      std::cout << forTerminal((*r)["result"].value("message", "")) << "\n";
      return kOk;
    }
    if (*rules_set || *rules_clear) {
      json args = {{"tenant", pol_tenant}};
      if (*rules_set) {
        std::string text;
        if (rules_file == "-") {
          text.assign(std::istreambuf_iterator<char>(std::cin), {});
        } else {
          std::ifstream in(rules_file, std::ios::binary);
          if (!in) {
            std::fprintf(stderr, "mcgwctl: cannot read %s\n", forTerminal(rules_file).c_str());
            return kFailed;
          }
          text.assign(std::istreambuf_iterator<char>(in), {});
        }
        json policy;
        if (auto e = mcgw::policyview::policyFromYaml(text, policy); !e.empty()) {
          std::fprintf(stderr, "mcgwctl: %s: %s\n", forTerminal(rules_file).c_str(),
                       forTerminal(e).c_str());
          return kFailed;
        }
        args["policy"] = std::move(policy);
        const size_t size = mcgw::api::dump(args).size();
        if (size + 64 > mcgw::api::kMaxRequestBytes) {
          std::fprintf(stderr,
                       "mcgwctl: %s: the policy is %zu bytes as JSON; a request carries at most "
                       "%zu: put a policy this large in the config file\n",
                       forTerminal(rules_file).c_str(), size, mcgw::api::kMaxRequestBytes);
          return kFailed;
        }
      }
      auto r = request(socket, *rules_set ? "policy-rules-set" : "policy-rules-clear", rc, args);
      if (!r) {
        return rc;
      }
      std::cout << forTerminal((*r)["result"].value("message", "")) << "\n";
      return kOk;
    }
    if (*sa_rekey) {
      auto r = request(socket, "sa-rekey", rc, {{"peer", sa_peer}, {"line", sa_line}});
      if (!r) {
        return rc;
      }
      std::cout << forTerminal((*r)["result"].value("message", "")) << "\n";
      return kOk;
    }
    if (*line_cmd) {
      auto r = request(socket, "set-line", rc,
                       {{"peer", line_peer}, {"line", line_name}, {"state", line_state}});
      if (!r) {
        return rc;
      }
      std::cout << forTerminal((*r)["result"].value("message", "")) << "\n";
      return kOk;
    }
    if (*reload) {
      auto r = request(socket, "reload", rc);
      if (!r) {
        return rc;
      }
      if (as_json) {
        std::cout << mcgw::api::dump(*r, 2) << "\n";
      } else {
        const json& res = (*r)["result"];
        std::string out = "reloaded: " + res.value("summary", std::string("done")) + "\n";
        for (const auto& ch : res.value("changes", json::array())) {
          out += "  " + (ch.is_string() ? ch.get<std::string>() : mcgw::api::dump(ch)) + "\n";
        }
        std::cout << forTerminal(out);
      }
      return kOk;
    }
  } catch (const json::exception& e) {
    std::fprintf(stderr, "mcgwctl: mcgwd sent a response this mcgwctl cannot read: %s\n", e.what());
    return kFailed;
  }
  return kOk;
}
