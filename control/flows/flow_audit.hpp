// Flow audit (docs/monitoring.md, "Flow audit (IPFIX)"), the control-plane
// side: a subsystem of the control core that sets the workers' sampling
// rate (flow-audit.sampling), drains their flow rings every kDrainPeriod on
// the loop, aggregates the samples (flow_table.hpp), ends records on their
// idle and active timeouts, and exports the ended ones over IPFIX to every
// configured collector (ipfix_exporter.hpp), templates again every
// flow-audit.template-refresh.
//
// A reload may change everything: prepare() opens exporters for new
// collectors, apply() keeps the exporters of collectors that stay (their
// sequence numbers go on) and, when the sampling rate changes, ends every
// record first (forced end), exported with the rate it was counted at.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/config.hpp"
#include "control/core/event_loop.hpp"
#include "control/daemon/subsystem.hpp"
#include "control/flows/flow_table.hpp"
#include "control/flows/ipfix_exporter.hpp"
#include "dataplane/engine/dataplane.hpp"

namespace mcgw::flows {

// How often the workers' rings are drained: a ring of engine::kFlowRingSize
// samples lasts this long at 1.6 M samples/s per worker.
inline constexpr std::chrono::milliseconds kDrainPeriod{5};
// How often records are checked for their timeouts.
inline constexpr uint64_t kExpireEveryMs = 1000;

// Which records `mcgwctl show flows` lists.
struct FlowsFilter {
  std::string tenant;   // "" = every tenant
  bool denied = false;  // only records of dropped packets
  size_t limit = 100;   // at most this many, most recently seen first
};
inline constexpr size_t kMaxFlowsShown = 10000;
// The `show-flows` request's arguments (tenant, denied, limit), or why not.
Result<FlowsFilter, std::string> flowsFilter(const nlohmann::json& args);

class FlowAudit : public daemon::Subsystem {
 public:
  FlowAudit(config::ConfigPtr config, engine::Dataplane& dataplane);
  // Ends and exports every record (forced end) and stops the sampling.
  ~FlowAudit() override;
  FlowAudit(const FlowAudit&) = delete;
  FlowAudit& operator=(const FlowAudit&) = delete;

  // Starts sampling and the drain timer (when flow-audit.sampling is set).
  // Once, on the loop thread, which must outlive the subsystem.
  void attach(core::EventLoop& loop);
  void setPaused(bool paused);

  std::string_view name() const override { return "flow-audit"; }
  Result<bool, std::string> prepare(const daemon::ReloadPlan& plan) override;
  void apply() override;
  void abort() override;

  // One pass of the timer: drain, aggregate, expire, export.
  void poll();
  // The `flow_audit` object of `mcgwctl status --json`.
  nlohmann::json status() const;
  // `mcgwctl show flows` (schema mcgw.flows/1): the records being
  // aggregated, each with its status and, for a deny, its rule.
  nlohmann::json flows(const FlowsFilter& filter) const;

 private:
  // A fresh (TSC, CLOCK_REALTIME) pair: every poll, before the drain.
  void anchorClock();
  // The wall-clock time of the latest pair (ms since the epoch).
  uint64_t nowMs() const;
  uint64_t sampleMs(uint64_t tsc) const;
  void drain();
  // The rule name of a policy counter slot in the tables in force ("" when
  // none has it); the names are read again when the tables change.
  const std::string& ruleName(uint16_t slot);
  void exportEnded();
  void updateTimer();
  // The exporters for `next` (those of collectors already exported to are
  // reused); errors: a collector whose exporter cannot be made.
  Result<std::vector<std::unique_ptr<IpfixExporter>>, std::string> exportersFor(
      const config::FlowAuditConfig& next);

  config::ConfigPtr config_;
  engine::Dataplane& dp_;
  core::EventLoop* loop_ = nullptr;
  core::Source timer_;
  bool paused_ = false;
  FlowTable table_;
  std::vector<std::unique_ptr<IpfixExporter>> exporters_;
  std::vector<engine::FlowSample> samples_;  // reused by every drain
  std::vector<FlowRecord> ended_;            // records ended, to export
  // ruleName()'s names by slot, of the tables of this generation.
  std::vector<std::string> rule_names_;
  const engine::ForwardingTables* names_tables_ = nullptr;
  uint64_t names_generation_ = 0;
  // The clock: TSC to milliseconds since the epoch, anchored every poll.
  uint64_t tsc0_ = 0, tsc_hz_ = 1, wall0_ms_ = 0;
  uint64_t last_expire_ms_ = 0, last_templates_ms_ = 0;
  uint64_t drained_ = 0;
  // Records ended and handed to the collectors (each collector's own
  // records / records_lost say which got them).
  uint64_t records_exported_ = 0;
  // Export errors and lost records of collectors a reload removed.
  uint64_t removed_errors_ = 0, removed_lost_ = 0;
  struct Pending {
    config::ConfigPtr next;
    std::vector<std::unique_ptr<IpfixExporter>> exporters;
  };
  std::optional<Pending> pending_;
};

// status()'s object, or {"enabled": false} without the subsystem.
inline nlohmann::json statusOf(const FlowAudit* f) {
  return f ? f->status() : nlohmann::json{{"enabled", false}};
}

}  // namespace mcgw::flows
