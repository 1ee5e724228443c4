// mcgwctl's text for VRRP: `mcgwctl show vrrp` and the VRRP lines of
// `mcgwctl status`, from the JSON the daemon sends (vrrp_view.cpp).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace mcgw::vrrp {

// One line per group (state, priority, Active, timers, last transition)
// and its tracked objects; "" when there are no groups.
std::string renderVrrp(const nlohmann::json& vrrp);

}  // namespace mcgw::vrrp
