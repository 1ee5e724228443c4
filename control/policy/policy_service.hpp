// The tenant-policy subsystem of mcgwd (docs/policy.md): it keeps the
// meters of the tenants' bandwidth in step with the config, its time
// windows and the live changes, and joins reloads after the forwarding
// tables (whose (tenant, line) slots it meters).  The rules themselves are
// compiled with the tables (dataplane/engine/policy_tables.hpp).
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "config/config.hpp"
#include "control/core/event_loop.hpp"
#include "control/daemon/subsystem.hpp"
#include "control/policy/bandwidth.hpp"
#include "control/policy/usage.hpp"
#include "dataplane/engine/dataplane.hpp"

namespace mcgw::policyview {

class PolicyService : public daemon::Subsystem {
 public:
  // state_dir: where the usage files go unless usage.directory says.
  PolicyService(config::ConfigPtr config, engine::Dataplane& dataplane, std::string state_dir);
  ~PolicyService() override;

  // The timer that follows the time windows (every second).  Once, on the
  // loop thread, which must outlive the service.
  void attach(core::EventLoop& loop);
  void setPaused(bool paused);

  std::string_view name() const override { return "policy"; }
  std::vector<std::string> validate(const config::Config& next) const override;
  Result<bool, std::string> prepare(const daemon::ReloadPlan& plan) override;
  void apply() override;
  void abort() override;

  // `policy-set`: a live rate (or, rates null, back to the config's) for a
  // tenant on PEER/LINE or PEER, in force when this returns.
  Result<std::string, std::string> setRate(const std::string& tenant, const std::string& line,
                                           const std::optional<config::MeterRates>& rates,
                                           const std::string& who);
  // The `bandwidth` array of a tenant in `show policy`.
  nlohmann::json bandwidthView(const engine::CountersSnapshot& counters,
                               const std::string& tenant) const;
  // Meters to the rates in force now (also after tables are published).
  void refresh();
  // Usage accounting: the counters read into the ledger now (the timer,
  // and just before tables are published), and its last records written
  // when mcgwd stops.
  void sampleUsage();
  void closeUsage();
  const usage::UsageLedger& usage() const { return *usage_; }

 private:
  config::ConfigPtr config_, pending_;
  engine::Dataplane& dp_;
  Bandwidth bandwidth_;
  std::string state_dir_;
  std::unique_ptr<usage::UsageLedger> usage_;
  core::EventLoop* loop_ = nullptr;
  core::Source timer_;
  core::Source usage_timer_;
  bool paused_ = false;
  // The usage timer: every second at most, and 5 ms after each interval
  // boundary (the ledger closes intervals when it samples).
  void scheduleUsage();
};

}  // namespace mcgw::policyview
