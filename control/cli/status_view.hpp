// The human view of `mcgwctl status`: health first, then config, daemon, ports.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace mcgw::cli {

// Takes a mcgw.status/1 document (a copy: missing sections read as empty).
std::string renderStatus(nlohmann::json status);
// `mcgwctl show tunnels|routes|counters` as tables (schemas mcgw.tunnels/1,
// mcgw.routes/1, mcgw.counters/1).
std::string renderTunnels(nlohmann::json tunnels);
std::string renderRoutes(nlohmann::json routes);
std::string renderCounters(nlohmann::json counters);
std::string renderNeighbors(nlohmann::json neighbors);
// `mcgwctl audit`: FRR's RIB against the fast path's routes from FRR.
std::string renderAudit(nlohmann::json audit);

}  // namespace mcgw::cli
