// The human view of `mcgwctl status`: health first, then config, daemon, ports.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace mcgw::cli {

// Takes a mcgw.status/1 document (a copy: missing sections read as empty).
std::string renderStatus(nlohmann::json status);

}  // namespace mcgw::cli
