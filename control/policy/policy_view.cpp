#include "control/policy/policy_view.hpp"

namespace mcgw::policyview {

using nlohmann::json;

json policyView(const engine::ForwardingTables* t, const engine::CountersSnapshot& c,
                const std::string& tenant) {
  json tenants = json::array();
  for (size_t i = 0; t && i < t->tenants.size(); ++i) {
    const engine::TenantEntry& te = t->tenants[i];
    if (!tenant.empty() && te.name != tenant) {
      continue;
    }
    json out = {{"name", te.name}, {"vni", te.vni}};
    json rules = json::array();
    if (te.policy) {
      const engine::TenantPolicy& p = *te.policy;
      out["default"] = p.default_deny ? "deny" : "allow";
      out["default_packets"] = c.policy[p.default_slot];
      out["build_seconds"] = p.build_seconds;
      for (const auto& r : p.rules) {
        json rule = {{"name", r.name},
                     {"action", r.deny ? "deny" : "allow"},
                     {"match", r.match},
                     {"entries", r.entries},
                     {"packets", c.policy[r.slot]}};
        if (!r.note.empty()) {
          rule["note"] = r.note;
        }
        rules.push_back(std::move(rule));
      }
    } else {
      out["default"] = "allow";
    }
    out["rules"] = std::move(rules);
    out["isolation"] = {{"prefixes", te.isolation ? te.isolation->prefixes : 0},
                        {"packets", c.policy[te.isolation_slot]}};
    tenants.push_back(std::move(out));
  }
  return {{"schema", "mcgw.policy/1"}, {"tenants", std::move(tenants)}};
}

}  // namespace mcgw::policyview
