// Next-hop MACs from the kernel: follows the kernel neighbour table, keeps
// the next hops the config names resolved (managed entries), and asks the
// kernel to resolve the hosts the workers could not reach, within bounds.
// On the control loop (attach) it registers its own sources: the netlink
// socket of the neighbour table, and a 20 ms timer that takes the workers'
// misses.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "config/config.hpp"
#include "control/core/event_loop.hpp"
#include "control/daemon/subsystem.hpp"
#include "control/kernel/kernel_sides.hpp"
#include "control/kernel/netlink.hpp"
#include "dataplane/engine/dataplane.hpp"
#include "dataplane/engine/pipeline.hpp"
#include "dataplane/engine/tables.hpp"

namespace mcgw::kernel {

class NeighborResolver : public daemon::Subsystem {
 public:
  // dataplane: where the workers' misses come from.
  static Result<std::unique_ptr<NeighborResolver>, std::string> open(const KernelSides& sides,
                                                                     engine::Dataplane& dataplane,
                                                                     config::ConfigPtr config);
  ~NeighborResolver() override;  // removes the entries it created

  // Called on the loop after the kernel table changed (missing next hops
  // were asked for again by then): the tables take the new MACs.
  void setOnChange(std::function<void()> changed) { on_change_ = std::move(changed); }
  // Registers the netlink socket and the miss timer on loop, which must
  // outlive this resolver.  Once.
  void attach(core::EventLoop& loop);
  // Paused: neither source is dispatched (the kernel queues notifications,
  // the workers' miss ring keeps the latest), so that a reload off the loop
  // has the resolver to itself.
  void setPaused(bool paused);
  // The next hops the config names (lines' underlay next hops, static
  // routes' LAN next hops) are kept resolved by the kernel.
  void keepNextHopsResolved();
  // Hosts the workers could not reach: a bounded number per call and in all
  // (a scan of a LAN subnet from behind a tunnel must not fill the kernel's
  // neighbour table or stall the control loop).
  void resolveMisses(const std::vector<engine::NeighborMiss>& misses,
                     const engine::ForwardingTables& tables);

  // Usable entries on an interface, as the table builder takes them.
  std::vector<config::StaticNeighbor> usableOn(int ifindex) const;
  const std::map<NeighborMonitor::Key, Neighbor>& entries() const { return monitor_->entries(); }
  size_t hostEntries() const { return host_managed_.size(); }
  uint64_t resolutionsRefused() const { return resolutions_refused_; }

  // How often the workers' misses become resolution requests.
  static constexpr std::chrono::milliseconds kMissPeriod{20};
  static constexpr unsigned kMaxResolutionsPerTick = 64;
  static constexpr size_t kMaxHostResolutions = 1024;
  // A host entry that failed is made afresh on a new miss at most this often.
  static constexpr std::chrono::milliseconds kReprobe{100};

  // A reload: the next hops of the new config, once its kernel sides exist.
  std::string_view name() const override { return "neighbours"; }
  Result<bool, std::string> prepare(const daemon::ReloadPlan& plan) override;
  void apply() override;
  void abort() override { next_.reset(); }

 private:
  NeighborResolver(const KernelSides& sides, engine::Dataplane& dataplane, config::ConfigPtr config)
      : sides_(sides), dataplane_(dataplane), config_(std::move(config)) {}
  // Reads the kernel's notifications; true when the table changed (then
  // missing next hops were asked for again).
  bool receive();
  void reassert();

  using Entry = std::pair<int, config::IpAddress>;  // ifindex, address
  const KernelSides& sides_;
  engine::Dataplane& dataplane_;
  config::ConfigPtr config_;
  config::ConfigPtr next_;
  std::unique_ptr<NeighborMonitor> monitor_;
  std::set<Entry> managed_;                                          // next hops we keep resolved
  std::set<Entry> managed_own_;                                      // ... whose entries we created
  std::set<Entry> host_managed_;                                     // hosts asked for by misses
  std::map<Entry, std::chrono::steady_clock::time_point> reprobed_;  // host entries probed again
  uint64_t resolutions_refused_ = 0;
  std::function<void()> on_change_;
  // Last: they leave the loop before the monitor's socket closes.
  core::Source netlink_source_;
  core::Source miss_timer_;
};

}  // namespace mcgw::kernel
