// The DPDK ports the gateway owns, in config order: opened at start, and on
// a reload opened, closed, reopened or adjusted with every step undoable.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "control/daemon/subsystem.hpp"
#include "dataplane/engine/port.hpp"

struct rte_mempool;

namespace mcgw::ports {

class PortSet : public daemon::Subsystem {
 public:
  // What a reload's port steps need from the rest of the gateway.
  struct Hooks {
    // Publishes tables without the `closing` ports, so that workers stop
    // using them (RCU) before they close.
    std::function<Result<bool, std::string>(const std::set<std::string>& closing)> withdraw;
    // A port is about to close: what hangs on it (its TAP) goes first.
    std::function<void(const std::string& name)> closing;
  };

  // Opens every port of `config`; tx_queues: one per worker.
  static Result<std::unique_ptr<PortSet>, std::string> open(config::ConfigPtr config,
                                                            rte_mempool* pool, uint16_t tx_queues);
  ~PortSet() override = default;
  void setHooks(Hooks hooks) { hooks_ = std::move(hooks); }

  engine::Port* find(const std::string& name) const;
  const std::vector<std::unique_ptr<engine::Port>>& all() const { return ports_; }
  std::vector<engine::PortStatus> status() const;
  // Ports a reload opened and has not yet made live (tables are built over
  // them before they are).
  const std::map<std::string, std::unique_ptr<engine::Port>>& prepared() const { return opened_; }
  rte_mempool* pool() const { return pool_; }
  uint16_t txQueues() const { return tx_queues_; }
  // Closes every port (before the EAL goes).
  void clear() { ports_.clear(); }

  // A reload.  prepare() opens the devices no running port holds (held
  // aside: nothing forwards differently).  Ports that close (removed,
  // renamed, a new device or queue layout) are the exception traffic sees:
  // they are withdrawn from the tables, closed, and the devices they held
  // opened for their new owners; MTUs change in place.  abort() undoes
  // every step, newest first (closed ports reopen as they were); a failing
  // prepare() undoes its own steps.
  std::string_view name() const override { return "ports"; }
  Result<bool, std::string> prepare(const daemon::ReloadPlan& plan) override;
  void apply() override;
  void abort() override;

 private:
  PortSet() = default;
  Result<bool, std::string> prepareSteps(const daemon::ReloadPlan& plan);
  Result<bool, std::string> openPrepared(const config::PortConfig& pc);
  void sortBy(const config::Config& order);

  config::ConfigPtr config_;  // the order of ports_
  config::ConfigPtr next_;
  rte_mempool* pool_ = nullptr;
  uint16_t tx_queues_ = 1;
  std::vector<std::unique_ptr<engine::Port>> ports_;
  Hooks hooks_;
  std::map<std::string, std::unique_ptr<engine::Port>> opened_;
  std::vector<std::function<void()>> undo_;
};

}  // namespace mcgw::ports
