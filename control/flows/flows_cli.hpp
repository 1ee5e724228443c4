// mcgwctl's text for `show flows` (docs/monitoring.md, "Flow audit (IPFIX)"),
// from the JSON mcgwd sends (schema mcgw.flows/1, FlowAudit::flows).  No
// DPDK; robust to missing or mistyped fields.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace mcgw::flows {

// A heading (how many records, the sampling), then one row per record:
// tenant, protocol, source and destination (address:port), direction, the
// line, packets, bytes, the status and the rule that denied it.
std::string renderFlows(const nlohmann::json& view);

}  // namespace mcgw::flows
