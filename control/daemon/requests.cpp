#include "control/daemon/requests.hpp"

#include <algorithm>

#include "config/text.hpp"
#include "control/api/server.hpp"

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

struct Command {
  const char* name;
  std::vector<std::string> args;  // the arguments it takes
  std::function<json(Gateway&, const json&, const std::function<ReloadOutcome()>&)> run;
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
      view<&Gateway::neighbors>("show-neighbors"),
      view<&Gateway::vrrp>("show-vrrp"),
      {"reload",
       {},
       [](Gateway&, const json&, const std::function<ReloadOutcome()>& reload) {
         ReloadOutcome outcome = reload();
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
                   const std::function<ReloadOutcome()>& reload) {
  for (const auto& c : commands()) {
    if (command != c.name) {
      continue;
    }
    if (auto e = unexpectedArg(args, c); !e.empty()) {
      return api::errorResponse(e);
    }
    return c.run(gw, args, reload);
  }
  std::string known;
  for (const auto& n : requestCommands()) {
    known += (known.empty() ? "" : ", ") + n;
  }
  return api::errorResponse("unknown command " + text::quote(command) + "; known: " + known);
}

}  // namespace mcgw::daemon
