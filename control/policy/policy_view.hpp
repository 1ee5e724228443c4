// `mcgwctl show policy --json` (schema mcgw.policy/1): each tenant's rules
// as compiled into the running tables, with the packets each rule, the
// default and the isolation check decided.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "dataplane/engine/dataplane.hpp"
#include "dataplane/engine/tables.hpp"

namespace mcgw::policyview {

// `tables` may be null (no tables yet: no tenants listed).  `tenant`: only
// that tenant ("" = all).
nlohmann::json policyView(const engine::ForwardingTables* tables,
                          const engine::CountersSnapshot& counters, const std::string& tenant);

}  // namespace mcgw::policyview
