// The one place the forwarding tables are built and published: over the
// open ports (with their TAPs and the kernel's neighbours) from a config.
// The table builder's input changes (routes from sources) land here alone.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <span>
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

// What the table builder gets for a config: the config's own route sources
// (engine::TablesInput::fromConfig) and the address plan's mapped ranges
// that this gateway translates (those whose real range lives at its site,
// each under the tenant the plan gives it).  Mapped ranges of this site that
// no tenant claims are left out, each with why in *not_translated.
engine::TablesInput tablesInput(const config::Config& config,
                                std::map<std::string, engine::OpenPort> ports, unsigned workers,
                                std::vector<std::string>* not_translated = nullptr);

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
  // The kernel's neighbours changed: the fast path's neighbour table is
  // brought to them in place; only a line's next hop (its MAC is in the
  // line's outer headers) needs new tables, which share the FIBs.
  Result<bool, std::string> updateNeighbors(const config::Config& config);
  // Routes from a source (FRR, the address plan), changed in place in the
  // FIBs: no tables to publish.  All or nothing; one writer at a time.
  Result<bool, std::string> applyRoutes(std::span<const engine::RouteUpdate> updates) {
    return builder_.apply(updates, [this] { dataplane_.synchronize(); });
  }
  // VRRP accept mode: virtual addresses the gateway takes as its own now,
  // local routes (to the kernel) in every tenant, kept by later builds.
  // All or nothing, as applyRoutes.
  Result<bool, std::string> setAccepted(const config::Config& config,
                                        const std::vector<config::IpAddress>& addresses);
  // Where the tables' ESP SAs come from (the encryption subsystem); none:
  // no SAs (an encrypted line carries nothing).
  // Called just before every publication (usage accounting reads the
  // counters of slots that a new table may give afresh).
  void setBeforePublish(std::function<void()> f) { before_publish_ = std::move(f); }
  void setSaSource(std::function<std::map<std::string, engine::LineSas>()> source) {
    sa_source_ = std::move(source);
  }
  // Drops the FIBs and the neighbour table (DPDK memory) before the EAL goes.
  void clear() { builder_.clear(); }
  const engine::ForwardingTables* tables() const { return dataplane_.tables(); }
  // Every candidate route of every source (the RIB, `show routes`), how
  // many prefixes the RIBs hold, and the tables' generation.
  std::vector<engine::RouteView> routes(size_t limit = SIZE_MAX,
                                        const engine::RouteFilter& filter = {}) const {
    return builder_.routes(limit, filter);
  }
  std::array<size_t, engine::kRouteSourceCount> candidatesBySource() const {
    return builder_.candidatesBySource();
  }
  size_t candidateCount(const engine::RouteFilter& filter) const {
    return builder_.candidateCount(filter);
  }
  size_t routeCount() const { return builder_.routeCount(); }
  size_t candidateCount() const { return builder_.candidateCount(); }
  uint64_t generation() const { return tables()->generation; }

  // A reload: the new tables over the running and the prepared ports are
  // built (the last step of a reload that can fail) and published at apply.
  // The FIBs of tenants that stay change in place when prepare succeeds
  // (TablesBuilder::build): an abort after it publishes the running
  // config's tables again (Gateway::restoreAfterAbort).
  std::string_view name() const override { return "forwarding tables"; }
  Result<bool, std::string> prepare(const ReloadPlan& plan) override;
  void apply() override;
  void abort() override { prepared_.reset(); }

 private:
  // tablesInput() for config over ports; what it could not translate logged
  // when that changes.
  engine::TablesInput input(const config::Config& config,
                            const std::map<std::string, engine::OpenPort>& ports);
  // Fresh counter slots reset, line state set, then the tables go live.
  void makeLive(std::unique_ptr<engine::ForwardingTables> tables);

  engine::Dataplane& dataplane_;
  const ports::PortSet& ports_;
  const kernel::KernelSides& kernel_;
  const kernel::NeighborResolver& neighbors_;
  lines::UnderlayLines& lines_;
  engine::TablesBuilder builder_;
  std::unique_ptr<engine::ForwardingTables> prepared_;
  size_t neighbors_left_out_ = 0;            // last logged
  std::vector<std::string> not_translated_;  // last logged
  std::vector<config::IpAddress> accepted_;  // setAccepted
  std::function<std::map<std::string, engine::LineSas>()> sa_source_;
  std::function<void()> before_publish_;
};

}  // namespace mcgw::daemon
