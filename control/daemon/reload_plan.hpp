// What a reload must do, worked out from the running config and the next
// one alone (no device, kernel or fast-path state): the changes to log, the
// ones that need a restart, and which ports, lines, tunnels and routes the
// subsystems touch.  Pure, so every kind of change is unit-tested.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "config/diff.hpp"

namespace mcgw::daemon {

struct ReloadPlan {
  // Every difference, in diffConfigs order (logged and returned by reload).
  std::vector<config::ConfigChange> changes;
  // One error per change that needs a restart; non-empty: the reload is
  // refused before any subsystem prepares.
  std::vector<std::string> restart_required;

  // Ports, by name.  close: running ports that go (removed, or changed in a
  // way only a new device configuration can carry: device, queues,
  // descriptors).  open: ports of the next config to open (added, or closed
  // above for a new configuration).  reopen: the names in both.  adjust:
  // ports changed in place (MTU, addresses, role, tenant, neighbours).
  std::vector<std::string> close;
  std::vector<std::string> open;
  std::vector<std::string> reopen;
  std::vector<std::string> adjust;

  // Lines ("peer/line"), tunnels ("peer/tenant") and tenants whose static
  // routes differ; each list sorted.
  std::vector<std::string> lines_added, lines_removed, lines_changed;
  std::vector<std::string> tunnels_added, tunnels_removed, tunnels_changed;
  std::vector<std::string> routes_changed;

  bool path_mtu_changed = false;
  std::optional<std::string> log_level;  // set: logging.level changes to this

  // The config the reload moves to.  planReload sees plain configs, so the
  // caller sets it; subsystems keep it when they apply.
  config::ConfigPtr next;

  bool portsChange() const { return !close.empty() || !open.empty() || !adjust.empty(); }
};

// Port changes that need the device reopened rather than adjusted.
bool needsReopen(const config::PortConfig& running, const config::PortConfig& next);

ReloadPlan planReload(const config::Config& running, const config::Config& next);

}  // namespace mcgw::daemon
