// The operator's JSON views (status, tunnels, routes, counters, neighbours,
// path MTU), built from the subsystems' read-only state.  Keys are the API:
// fields are only added within a schema version.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/config.hpp"
#include "control/capture/capture_service.hpp"
#include "control/daemon/daemon_facts.hpp"
#include "control/daemon/forwarding_state.hpp"
#include "control/encryption/encryption_service.hpp"
#include "control/flows/flow_audit.hpp"
#include "control/frr/frr_routing.hpp"
#include "control/kernel/kernel_sides.hpp"
#include "control/kernel/neighbor_resolver.hpp"
#include "control/lines/underlay_lines.hpp"
#include "control/plan/plan_follower.hpp"
#include "control/policy/usage.hpp"
#include "control/ports/port_set.hpp"
#include "control/vrrp/vrrp_service.hpp"
#include "dataplane/engine/dataplane.hpp"
#include "dataplane/engine/tables.hpp"

namespace mcgw::api {

// The subsystems a view reads.
struct GatewayState {
  const config::Config& config;
  const engine::Dataplane& dataplane;
  const ports::PortSet& ports;
  const kernel::KernelSides& kernel;
  const kernel::NeighborResolver& neighbors;
  const lines::UnderlayLines& lines;
  const daemon::ForwardingState& forwarding;
  const frr::FrrRouting* frr = nullptr;      // BGP through FRR
  const plan::PlanFollower* plan = nullptr;  // the address plan's store, when followed
  const vrrp::VrrpService* vrrp = nullptr;
  const capture::CaptureService* capture = nullptr;
  const flows::FlowAudit* flows = nullptr;  // flow audit (IPFIX)
  const encryption::EncryptionService* encryption = nullptr;
  const usage::UsageLedger* usage = nullptr;  // usage accounting (docs/policy.md)
};

// Why the gateway is degraded (empty: healthy); `ports` is ports.status().
std::vector<std::string> healthReasons(const GatewayState& s, const daemon::DaemonFacts& d,
                                       const std::vector<engine::PortStatus>& ports);
nlohmann::json statusView(const GatewayState& s, const daemon::DaemonFacts& d);
nlohmann::json tunnelsView(const GatewayState& s);
// `show routes` lists at most this many candidate routes (and says so).
inline constexpr size_t kMaxRoutesShown = 100000;
nlohmann::json routesView(const GatewayState& s, const engine::RouteFilter& filter = {});
nlohmann::json countersView(const GatewayState& s);
nlohmann::json neighborsView(const GatewayState& s);

}  // namespace mcgw::api
