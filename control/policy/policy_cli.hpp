// mcgwctl's text for `show policy`, from the JSON mcgwd sends
// (policy_view.hpp).  Robust to missing or mistyped fields.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace mcgw::policyview {

std::string renderPolicy(const nlohmann::json& view);

// `mcgwctl policy rules set --file`: the YAML (or JSON) of a tenant's
// policy, with the schema of a config's tenants[].policy, as the JSON the
// request carries.  Every scalar becomes a string (mcgwd reads the policy
// as it reads a config file, where "10" and 10 are the same); an empty
// value is null.  Refused: text that does not parse, a key that is not a
// scalar or appears twice in a mapping, more than 32 levels or 100,000
// nodes.  "" with out set, or why not.
std::string policyFromYaml(const std::string& text, nlohmann::json& out);

}  // namespace mcgw::policyview
