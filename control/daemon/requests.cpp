#include "control/daemon/requests.hpp"

#include <algorithm>

#include "config/text.hpp"
#include "control/api/server.hpp"
#include "control/policy/usage_cli.hpp"

namespace mcgw::daemon {

using nlohmann::json;

namespace {

json ok(json result) {
  return {{"ok", true}, {"result", std::move(result)}};
}

// A string argument: its value, or why not.
Result<std::string, std::string> stringArg(const json& args, const char* command,
                                           const char* name) {
  if (!args.contains(name)) {
    return unexpected(std::string(command) + ": argument \"" + name + "\" is missing");
  }
  if (!args[name].is_string()) {
    return unexpected(std::string(command) + ": argument \"" + name + "\" must be a string");
  }
  return args[name].get<std::string>();
}

// What a command may need besides its arguments.
struct Context {
  const std::function<ReloadOutcome()>& reload;
  const std::string& who;
};

struct Command {
  const char* name;
  std::vector<std::string> args;  // the arguments it takes
  std::function<json(Gateway&, const json&, const Context&)> run;
};

// An argument the command does not take, or "".
std::string unexpectedArg(const json& args, const Command& c) {
  for (const auto& [key, value] : args.items()) {
    if (std::find(c.args.begin(), c.args.end(), key) == c.args.end()) {
      return std::string(c.name) +
             (c.args.empty() ? " takes no arguments; got " : ": unknown argument ") +
             text::quote(key);
    }
  }
  return "";
}

json setLine(Gateway& gw, const json& args) {
  auto peer = stringArg(args, "set-line", "peer");
  auto line = stringArg(args, "set-line", "line");
  auto state = stringArg(args, "set-line", "state");
  for (const auto* r : {&peer, &line, &state}) {
    if (!*r) {
      return api::errorResponse(r->error() +
                                " (set-line takes {\"peer\": NAME, \"line\": NAME, "
                                "\"state\": \"up\"|\"down\"})");
    }
  }
  if (*state != "up" && *state != "down") {
    return api::errorResponse("set-line: \"state\" must be \"up\" or \"down\", not " +
                              text::quote(*state));
  }
  auto r = gw.setLineAdmin(*peer, *line, *state == "up");
  if (!r) {
    return api::errorResponse(r.error());
  }
  return ok({{"message", *r}});
}

// `mcgwctl sa rekey PEER LINE`: a new SA pair for an encrypted line now.
json rekeySa(Gateway& gw, const json& args) {
  auto peer = stringArg(args, "sa-rekey", "peer");
  auto line = stringArg(args, "sa-rekey", "line");
  for (const auto* r : {&peer, &line}) {
    if (!*r) {
      return api::errorResponse(r->error() + " (sa-rekey takes {\"peer\": NAME, \"line\": NAME})");
    }
  }
  auto r = gw.rekeySa(*peer, *line);
  if (!r) {
    return api::errorResponse(r.error());
  }
  return ok({{"message", *r}});
}

// `policy-set`: a tenant's live rate on a line (or each line of a peer),
// or with "clear": true back to the config's.  Strings of at most 128
// bytes; the rates are parsed by the bandwidth code (docs/policy.md).
json policySet(Gateway& gw, const json& args, const std::string& who) {
  constexpr const char* kUsage =
      " (policy-set takes {\"tenant\": NAME, \"line\": \"PEER/LINE\"|\"PEER\", \"rate\": "
      "\"40G\", \"peak_rate\", \"burst\", \"peak_burst\"} or {\"tenant\", \"line\", \"clear\": "
      "true})";
  auto tenant = stringArg(args, "policy-set", "tenant");
  auto line = stringArg(args, "policy-set", "line");
  for (const auto* r : {&tenant, &line}) {
    if (!*r) {
      return api::errorResponse(r->error() + kUsage);
    }
  }
  std::optional<config::MeterRates> rates;
  const bool clear = args.contains("clear");
  if (clear && (!args["clear"].is_boolean() || !args["clear"].get<bool>())) {
    return api::errorResponse(std::string("policy-set: \"clear\" must be true") + kUsage);
  }
  if (!clear) {
    config::MeterRates r;
    for (auto [key, out] : {std::pair{"rate", &r.rate}, std::pair{"peak_rate", &r.peak_rate},
                            std::pair{"burst", &r.burst}, std::pair{"peak_burst", &r.peak_burst}}) {
      if (!args.contains(key)) {
        continue;
      }
      auto v = stringArg(args, "policy-set", key);
      if (!v) {
        return api::errorResponse(v.error() + kUsage);
      }
      *out = *v;
    }
    if (r.rate.empty()) {
      return api::errorResponse(std::string("policy-set: argument \"rate\" is missing") + kUsage);
    }
    rates = r;
  } else if (args.contains("rate") || args.contains("peak_rate") || args.contains("burst") ||
             args.contains("peak_burst")) {
    return api::errorResponse(std::string("policy-set: \"clear\" takes no rates") + kUsage);
  }
  for (const std::string* s :
       {&*tenant, &*line, rates ? &rates->rate : &*line, rates ? &rates->peak_rate : &*line,
        rates ? &rates->burst : &*line, rates ? &rates->peak_burst : &*line}) {
    if (s->size() > 128) {
      return api::errorResponse("policy-set: an argument is longer than 128 bytes");
    }
  }
  auto r = gw.setRate(*tenant, *line, rates, who);
  if (!r) {
    return api::errorResponse("policy-set: " + r.error());
  }
  return ok({{"message", *r}});
}

// `policy-rules-set` / `policy-rules-clear`: a tenant's rules replaced
// live (policy: the schema of a config's tenants[].policy), or back to the
// config's (docs/policy.md, "Changing rules live").
json policyRules(Gateway& gw, const json& args, const std::string& who, bool clear) {
  const char* command = clear ? "policy-rules-clear" : "policy-rules-set";
  const std::string usage = clear ? " (policy-rules-clear takes {\"tenant\": NAME})"
                                  : " (policy-rules-set takes {\"tenant\": NAME, \"policy\": "
                                    "{\"default\": \"allow\"|\"deny\", \"rules\": [...]}})";
  auto tenant = stringArg(args, command, "tenant");
  if (!tenant) {
    return api::errorResponse(tenant.error() + usage);
  }
  if (tenant->size() > 128) {
    return api::errorResponse(std::string(command) + ": the tenant is longer than 128 bytes");
  }
  if (!clear && !args.contains("policy")) {
    return api::errorResponse(std::string(command) + ": argument \"policy\" is missing" + usage);
  }
  // A null or empty policy (a failed pipe into mcgwctl) would open the
  // tenant to everything: refused; {} written out is default allow.
  if (!clear && (!args["policy"].is_object() || args["policy"].empty())) {
    return api::errorResponse(std::string(command) +
                              ": \"policy\" must be an object with \"default\" and/or \"rules\"" +
                              usage);
  }
  auto r = clear ? gw.clearLiveRules(*tenant, who) : gw.setLiveRules(*tenant, args["policy"], who);
  if (!r) {
    const auto& errors = r.error();
    std::string message = std::string(command) + ": " + (errors.empty() ? "refused" : errors[0]);
    if (errors.size() > 1) {
      message += " (and " + std::to_string(errors.size() - 1) + " more)";
    }
    return api::errorResponse(message + "; nothing changed", errors);
  }
  return ok({{"message", *r}});
}

// `show usage`: totals since mcgwd started, or since a time (RFC 3339, or
// an age such as 1h), optionally one tenant's (a removed tenant's usage
// may still be asked for).
json showUsage(Gateway& gw, const json& args) {
  std::optional<std::chrono::sys_seconds> since;
  std::string tenant;
  for (const char* name : {"since", "tenant"}) {
    if (args.contains(name) &&
        (!args[name].is_string() || args[name].get<std::string>().size() > 128)) {
      return api::errorResponse(std::string("show-usage: argument \"") + name +
                                "\" must be a string of at most 128 bytes");
    }
  }
  if (args.contains("since")) {
    auto s = usage::parseSince(args["since"].get<std::string>(), std::chrono::system_clock::now());
    if (!s) {
      return api::errorResponse("show-usage: " + s.error());
    }
    since = *s;
  }
  if (args.contains("tenant")) {
    tenant = args["tenant"].get<std::string>();
  }
  return ok(gw.usage().usageView(since, tenant));
}

// `show flows`: flow audit's records, optionally one tenant's or the
// denied ones only, at most `limit`.
json showFlows(Gateway& gw, const json& args) {
  auto f = flows::flowsFilter(args);
  if (!f) {
    return api::errorResponse(f.error());
  }
  return ok(gw.flows(*f));
}

// `show policy`, optionally only one tenant's (which must exist).
json showPolicy(Gateway& gw, const json& args) {
  std::string tenant;
  if (args.contains("tenant")) {
    if (!args["tenant"].is_string()) {
      return api::errorResponse("show-policy: argument \"tenant\" must be a string");
    }
    tenant = args["tenant"].get<std::string>();
    if (!gw.config()->findTenant(tenant)) {
      return api::errorResponse("show-policy: no tenant " + text::quote(tenant));
    }
  }
  return ok(gw.policy(tenant));
}

// `show routes`, optionally only one tenant's, one source's, or the
// prefixes inside one.
json showRoutes(Gateway& gw, const json& args) {
  engine::RouteFilter filter;
  for (const char* name : {"tenant", "source", "prefix"}) {
    if (args.contains(name) && !args[name].is_string()) {
      return api::errorResponse(std::string("show-routes: argument \"") + name +
                                "\" must be a string");
    }
  }
  if (args.contains("tenant")) {
    filter.tenant = args["tenant"].get<std::string>();
  }
  if (args.contains("source")) {
    const auto want = args["source"].get<std::string>();
    std::string known;
    for (size_t i = 0; i < engine::kRouteSourceCount; ++i) {
      auto src = static_cast<engine::RouteSource>(i);
      known += std::string(known.empty() ? "" : ", ") + engine::toString(src);
      if (want == engine::toString(src)) {
        filter.source = src;
      }
    }
    if (!filter.source) {
      return api::errorResponse("show-routes: unknown source " + text::quote(want) +
                                "; known: " + known);
    }
  }
  if (args.contains("prefix")) {
    const auto text = args["prefix"].get<std::string>();
    auto p = config::IpPrefix::parse(text);
    if (!p) {
      return api::errorResponse("show-routes: " + text::quote(text) +
                                " is not a prefix such as 10.2.0.0/16");
    }
    filter.within = p->network();
  }
  return ok(gw.routes(filter));
}

// The commands that take no arguments, and what answers them.
template <json (Gateway::*View)() const>
Command view(const char* name) {
  return {name, {}, [](Gateway& gw, const json&, const auto&) { return ok((gw.*View)()); }};
}

const std::vector<Command>& commands() {
  static const std::vector<Command> kCommands = {
      view<&Gateway::status>("status"),
      {"show-config",
       {},
       [](Gateway& gw, const json&, const auto&) {
         auto c = gw.config();
         return ok({{"file", c->source}, {"checksum", c->checksum}, {"text", gw.configText()}});
       }},
      view<&Gateway::tunnels>("show-tunnels"),
      {"show-routes",
       {"tenant", "source", "prefix"},
       [](Gateway& gw, const json& args, const auto&) { return showRoutes(gw, args); }},
      view<&Gateway::counters>("show-counters"),
      {"policy-set",
       {"tenant", "line", "rate", "peak_rate", "burst", "peak_burst", "clear"},
       [](Gateway& gw, const json& args, const Context& ctx) {
         return policySet(gw, args, ctx.who);
       }},
      {"policy-rules-set",
       {"tenant", "policy"},
       [](Gateway& gw, const json& args, const Context& ctx) {
         return policyRules(gw, args, ctx.who, false);
       }},
      {"policy-rules-clear",
       {"tenant"},
       [](Gateway& gw, const json& args, const Context& ctx) {
         return policyRules(gw, args, ctx.who, true);
       }},
      {"show-usage",
       {"since", "tenant"},
       [](Gateway& gw, const json& args, const auto&) { return showUsage(gw, args); }},
      {"show-flows",
       {"tenant", "denied", "limit"},
       [](Gateway& gw, const json& args, const auto&) { return showFlows(gw, args); }},
      {"show-policy",
       {"tenant"},
       [](Gateway& gw, const json& args, const auto&) { return showPolicy(gw, args); }},
      view<&Gateway::neighbors>("show-neighbors"),
      view<&Gateway::vrrp>("show-vrrp"),
      {"reload",
       {},
       [](Gateway&, const json&, const Context& ctx) {
         ReloadOutcome outcome = ctx.reload();
         if (!outcome.ok) {
           return api::errorResponse("reload " + outcome.summary, outcome.errors);
         }
         return ok({{"changes", outcome.changes}, {"summary", outcome.summary}});
       }},
      {"set-line",
       {"peer", "line", "state"},
       [](Gateway& gw, const json& args, const auto&) { return setLine(gw, args); }},
      {"sa-rekey",
       {"peer", "line"},
       [](Gateway& gw, const json& args, const auto&) { return rekeySa(gw, args); }},
  };
  return kCommands;
}

// The commands handleRequest knows, for the unknown-command message.
const std::vector<std::string>& requestCommands() {
  static const std::vector<std::string> kNames = [] {
    std::vector<std::string> names;
    for (const auto& c : commands()) {
      names.push_back(c.name);
    }
    return names;
  }();
  return kNames;
}

}  // namespace

json handleRequest(Gateway& gw, const std::string& command, const json& args,
                   const std::function<ReloadOutcome()>& reload, const std::string& who) {
  for (const auto& c : commands()) {
    if (command != c.name) {
      continue;
    }
    if (auto e = unexpectedArg(args, c); !e.empty()) {
      return api::errorResponse(e);
    }
    return c.run(gw, args, Context{reload, who});
  }
  std::string known;
  for (const auto& n : requestCommands()) {
    known += (known.empty() ? "" : ", ") + n;
  }
  return api::errorResponse("unknown command " + text::quote(command) + "; known: " + known);
}

}  // namespace mcgw::daemon
