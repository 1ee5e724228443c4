// The human view of `mcgwctl status`: health first, then config, daemon, ports.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace mcgw::cli {

std::string renderStatus(const nlohmann::json& status);

}  // namespace mcgw::cli
