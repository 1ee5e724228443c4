// The one place the forwarding tables are built and published: over the
// open ports (with their TAPs and the kernel's neighbours) from a config.
// The table builder's input changes (routes from sources) land here alone.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "control/daemon/subsystem.hpp"
#include "control/kernel/kernel_sides.hpp"
#include "control/kernel/neighbor_resolver.hpp"
#include "control/lines/underlay_lines.hpp"
#include "control/ports/port_set.hpp"
#include "dataplane/engine/dataplane.hpp"
#include "dataplane/engine/tables.hpp"

namespace mcgw::daemon {

class ForwardingState : public Subsystem {
 public:
  ForwardingState(engine::Dataplane& dataplane, const ports::PortSet& ports,
                  const kernel::KernelSides& kernel, const kernel::NeighborResolver& neighbors,
                  lines::UnderlayLines& lines)
      : dataplane_(dataplane),
        ports_(ports),
        kernel_(kernel),
        neighbors_(neighbors),
        lines_(lines) {}

  // The running ports (less `without`) as the table builder sees them.
  std::map<std::string, engine::OpenPort> openPorts(
      const std::set<std::string>& without = {}) const;
  // Builds tables for `config` over `ports` and publishes them.
  Result<bool, std::string> publish(const config::Config& config,
                                    const std::map<std::string, engine::OpenPort>& ports);
  Result<bool, std::string> publish(const config::Config& config) {
    return publish(config, openPorts());
  }
  const engine::ForwardingTables* tables() const { return dataplane_.tables(); }
  // The routes in force as the operator sees them, and the tables' generation.
  const std::vector<engine::RouteView>& routes() const { return tables()->route_views; }
  uint64_t generation() const { return tables()->generation; }

  // A reload: the new tables over the running and the prepared ports are
  // built aside (the last step of a reload that can fail), and published.
  std::string_view name() const override { return "forwarding tables"; }
  Result<bool, std::string> prepare(const ReloadPlan& plan) override;
  void apply() override;
  void abort() override { prepared_.reset(); }

 private:
  // Fresh counter slots reset, line state set, then the tables go live.
  void makeLive(std::unique_ptr<engine::ForwardingTables> tables);

  engine::Dataplane& dataplane_;
  const ports::PortSet& ports_;
  const kernel::KernelSides& kernel_;
  const kernel::NeighborResolver& neighbors_;
  lines::UnderlayLines& lines_;
  engine::TablesBuilder builder_;
  std::unique_ptr<engine::ForwardingTables> prepared_;
};

}  // namespace mcgw::daemon
