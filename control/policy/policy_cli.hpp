// mcgwctl's text for `show policy`, from the JSON mcgwd sends
// (policy_view.hpp).  Robust to missing or mistyped fields.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace mcgw::policyview {

std::string renderPolicy(const nlohmann::json& view);

}  // namespace mcgw::policyview
