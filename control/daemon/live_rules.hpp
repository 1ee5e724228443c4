// A tenant's policy rules changed live through the API (`policy-rules-set`,
// `policy-rules-clear`; docs/policy.md, "Changing rules live").
//
// A live policy is an overlay on the config's: the candidate config is the
// text in force with each live policy in place of its tenant's
// (config::loadConfigTextWith), checked by the loader and the semantic
// checks like a file, and applied by the reload transaction like a reload.
// It stays over every reload of the file while its tenant exists; a reload
// whose file it does not fit is refused.  It ends with clear, with its
// tenant (a reload that removes it), or with a restart.
//
// The policy goes to the loader as JSON text laid out one rule per line;
// what the loader finds wrong in it is told by where it is in the policy
// the client sent: `policy.rules[2].source[0]`, 0-based.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/config.hpp"

namespace mcgw::daemon {

struct LiveRules {
  nlohmann::json policy;  // as the client sent it: the schema of tenants[].policy
  std::string who;        // "local socket", "HTTPS client NAME"
  std::chrono::system_clock::time_point since;
};

// A policy as the text the loader reads, and where each part of it is.
struct OverlayText {
  std::string text;
  // A span of columns (1-based, inclusive) of a line, and what it holds.
  struct Span {
    int first = 0, last = 0;
    std::string where;
  };
  struct Line {
    std::string where;        // what the line holds: "policy.rules[2]"
    std::vector<Span> spans;  // finer parts, coarse before fine
  };
  std::vector<Line> lines;

  // What is at a 1-based line and column of text: "policy.rules[2].source[0]".
  std::string locate(int line, int column) const;
};

OverlayText overlayText(const nlohmann::json& policy);

// The config text in force with the live policies over it.
struct WithLive {
  config::ConfigPtr config;  // null: refused
  // Problems in a live policy: `tenant "t1": policy.rules[2].action: ...`;
  // others as the loader words them (file:line:column: path: message).
  std::vector<std::string> errors;
  std::vector<std::string> warnings;  // those of the live policies only
};

WithLive loadWithLive(const std::string& text, const std::string& file_name,
                      const std::map<std::string, LiveRules>& live);

}  // namespace mcgw::daemon
