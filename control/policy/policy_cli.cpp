#include "control/policy/policy_cli.hpp"

#include <yaml-cpp/yaml.h>

#include <cstdio>

namespace mcgw::policyview {

using nlohmann::json;

namespace {

std::string str(const json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : "?";
}

uint64_t num(const json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_number_unsigned() ? j[key].get<uint64_t>()
                                                                         : 0;
}

// node as JSON (policyFromYaml); "" or why not.
std::string toJson(const YAML::Node& node, int depth, size_t& nodes, json& out) {
  if (++nodes > 100000) {
    return "more than 100000 values";
  }
  if (depth > 32) {
    return "nested more than 32 levels";
  }
  const std::string where = "line " + std::to_string(node.Mark().line + 1) + ": ";
  switch (node.Type()) {
    case YAML::NodeType::Undefined:
    case YAML::NodeType::Null:
      out = nullptr;
      return "";
    case YAML::NodeType::Scalar:
      out = node.Scalar();
      return "";
    case YAML::NodeType::Sequence:
      out = json::array();
      for (const auto& item : node) {
        json v;
        if (auto e = toJson(item, depth + 1, nodes, v); !e.empty()) {
          return e;
        }
        out.push_back(std::move(v));
      }
      return "";
    case YAML::NodeType::Map:
      out = json::object();
      for (const auto& kv : node) {
        if (!kv.first.IsScalar()) {
          return where + "a key that is not a name";
        }
        const std::string key = kv.first.Scalar();
        if (out.contains(key)) {
          return "line " + std::to_string(kv.first.Mark().line + 1) + ": key \"" + key +
                 "\" appears twice";
        }
        json v;
        if (auto e = toJson(kv.second, depth + 1, nodes, v); !e.empty()) {
          return e;
        }
        out[key] = std::move(v);
      }
      return "";
  }
  return where + "an unknown YAML node";
}

}  // namespace

std::string policyFromYaml(const std::string& text, json& out) {
  try {
    YAML::Node root = YAML::Load(text);
    // An empty file (a failed pipe) would read as "no rules, allow": refused.
    if (!root.IsMap() || root.size() == 0) {
      return "the policy must be a mapping with default and/or rules (the file is " +
             std::string(root.IsNull() || !root.IsDefined() ? "empty" : "not a mapping") + ")";
    }
    size_t nodes = 0;
    return toJson(root, 0, nodes, out);
  } catch (const YAML::Exception& e) {
    return "line " + std::to_string(e.mark.line + 1) + ": " + e.msg;
  }
}

// tenant blue (VNI 100): default deny, 2 rules
//   #  rule         action  packets  match
//   1  web          allow   1200     tcp any -> 10.2.0.0/16 dport 443
//   2  no-ssh       deny    3        tcp any -> any dport 22
//      (default)    deny    17
//      isolation: 4 prefixes of other tenants, 2 packets denied
std::string renderPolicy(const json& view) {
  std::string out;
  const json& tenants =
      view.is_object() && view.contains("tenants") ? view["tenants"] : json::array();
  if (!tenants.is_array() || tenants.empty()) {
    return "no tenants\n";
  }
  char line[512];
  for (const json& t : tenants) {
    const json& rules =
        t.is_object() && t.contains("rules") && t["rules"].is_array() ? t["rules"] : json::array();
    std::snprintf(line, sizeof line, "tenant %s (VNI %llu): default %s, %zu rule%s",
                  str(t, "name").c_str(), static_cast<unsigned long long>(num(t, "vni")),
                  str(t, "default").c_str(), rules.size(), rules.size() == 1 ? "" : "s");
    out += line;
    // Where the rules come from: "config", or "live by WHO since TIME".
    if (t.is_object() && t.contains("rules_source") && t["rules_source"].is_string()) {
      const std::string source = t["rules_source"].get<std::string>();
      out += source == "config" ? " from the config" : " " + source;
    }
    out += "\n";
    if (!rules.empty()) {
      std::snprintf(line, sizeof line, "  %-5s %-24s %-6s %12s  %s\n", "#", "rule", "action",
                    "packets", "match");
      out += line;
    }
    size_t i = 0;
    for (const json& r : rules) {
      std::snprintf(line, sizeof line, "  %-5zu %-24s %-6s %12llu  %s\n", ++i,
                    str(r, "name").c_str(), str(r, "action").c_str(),
                    static_cast<unsigned long long>(num(r, "packets")), str(r, "match").c_str());
      out += line;
      if (r.is_object() && r.contains("note") && r["note"].is_string()) {
        out += "        note: " + r["note"].get<std::string>() + "\n";
      }
    }
    if (t.is_object() && t.contains("default_packets")) {
      std::snprintf(line, sizeof line, "  %-5s %-24s %-6s %12llu\n", "", "(default)",
                    str(t, "default").c_str(),
                    static_cast<unsigned long long>(num(t, "default_packets")));
      out += line;
    }
    const json& bw = t.is_object() && t.contains("bandwidth") && t["bandwidth"].is_array()
                         ? t["bandwidth"]
                         : json::array();
    for (const json& b : bw) {
      std::string where = str(b, "peer") + "/" + str(b, "line");
      if (b.is_object() && b.contains("rate")) {
        std::snprintf(
            line, sizeof line, "  bandwidth %-20s rate %s peak %s (%s): %llu yellow, %llu red\n",
            where.c_str(), str(b, "rate").c_str(), str(b, "peak_rate").c_str(),
            str(b, "source").c_str(), static_cast<unsigned long long>(num(b, "yellow_packets")),
            static_cast<unsigned long long>(num(b, "red_packets")));
      } else {
        std::snprintf(line, sizeof line, "  bandwidth %-20s unmetered\n", where.c_str());
      }
      out += line;
      if (b.is_object() && b.contains("line_capacity")) {
        std::snprintf(line, sizeof line,
                      "  shaped    %-20s capacity %s, priority %llu: %llu dropped (line-full)\n",
                      where.c_str(), str(b, "line_capacity").c_str(),
                      static_cast<unsigned long long>(num(b, "priority")),
                      static_cast<unsigned long long>(num(b, "line_full_packets")));
        out += line;
      }
    }
    const json& iso = t.is_object() && t.contains("isolation") ? t["isolation"] : json::object();
    std::snprintf(
        line, sizeof line, "  isolation: %llu prefix%s of other tenants, %llu packet%s dropped\n",
        static_cast<unsigned long long>(num(iso, "prefixes")),
        num(iso, "prefixes") == 1 ? "" : "es", static_cast<unsigned long long>(num(iso, "packets")),
        num(iso, "packets") == 1 ? "" : "s");
    out += line;
  }
  return out;
}

}  // namespace mcgw::policyview
