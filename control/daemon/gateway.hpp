// The gateway's composition root: it starts the subsystems of the control
// core (ports, kernel sides, neighbours, lines, forwarding tables, FRR), runs a
// reload through their phases (subsystem.hpp) and answers the operator from
// their state (control/api/views.hpp).  SIGHUP, `mcgwctl reload` and tests
// all call Gateway::reload().
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/config.hpp"
#include "config/loader.hpp"
#include "control/api/views.hpp"
#include "control/capture/capture_service.hpp"
#include "control/core/event_loop.hpp"
#include "control/daemon/daemon_facts.hpp"
#include "control/daemon/forwarding_state.hpp"
#include "control/daemon/last_good.hpp"
#include "control/daemon/live_rules.hpp"
#include "control/daemon/subsystem.hpp"
#include "control/encryption/encryption_service.hpp"
#include "control/flows/flow_audit.hpp"
#include "control/frr/frr_routing.hpp"
#include "control/kernel/kernel_sides.hpp"
#include "control/kernel/neighbor_resolver.hpp"
#include "control/lines/underlay_lines.hpp"
#include "control/metrics/metrics_service.hpp"
#include "control/plan/plan_follower.hpp"
#include "control/policy/policy_service.hpp"
#include "control/ports/port_set.hpp"
#include "control/vrrp/vrrp_service.hpp"
#include "dataplane/engine/dataplane.hpp"
#include "dataplane/engine/eal.hpp"

namespace mcgw::daemon {

struct ReloadOutcome {
  bool ok = false;
  std::vector<std::string> errors;   // why nothing was applied
  std::vector<std::string> changes;  // what was applied (empty: nothing changed)
  // One line for the log and the API alike: "applied 2 change(s)", "no
  // changes", "refused (3 errors); the running config is unchanged".
  std::string summary;
};

struct StartOptions {
  std::string log_level_override;            // --log-level: wins over logging.level, on reloads too
  std::string state_dir = kDefaultStateDir;  // where the last good copy is kept
  std::optional<Fallback> fallback;          // set: `loaded` is the last good copy
};

// A checked config and the exact text it was loaded from.
struct LoadedConfig {
  config::ConfigPtr config;
  std::string text;
};

// Reads and checks a config file; errors carry file:line:column.
Result<LoadedConfig, config::ConfigErrors> loadConfig(const std::string& path);

class Gateway {
 public:
  // Initialises the EAL from a loaded config (see loadConfig) and opens every
  // port.  Once per process (the EAL cannot start twice).  On failure the
  // errors say why.
  static Result<std::unique_ptr<Gateway>, std::vector<std::string>> start(
      const std::string& config_path, LoadedConfig loaded, const std::string& program,
      StartOptions options);
  ~Gateway();

  // Re-reads the config file.  Invalid, needing a restart, or failing while
  // applied (a device that cannot be opened): nothing changes (what was done
  // is undone) and the errors come back.  Valid: only the difference is
  // applied, the text becomes the last good copy and a fallback ends.
  ReloadOutcome reload();
  // Applies a new revision of the address plan's store like a reload of
  // the same file: a revision that conflicts with the file's plan, or that
  // a subsystem refuses, changes nothing and status says why.
  ReloadOutcome adoptPlan(const plan::Snapshot& snapshot);
  // On the loop, after adoptPlan: the follower hears what became of the
  // revision (outcome null: adoptPlan threw; the revision is refused).
  void planApplied(const plan::Snapshot& snapshot, const ReloadOutcome* outcome);
  // Follows the address plan's store, calling on_change on the loop with
  // each new revision (main runs adoptPlan off the loop, like a reload).
  // Nothing when the config has no store to follow.
  void followPlan(std::function<void(const plan::Snapshot&)> on_change);
  // A store revision seen but not in force (refused, or seen during a
  // reload): adoptPlan again after the next reload.
  std::optional<plan::Snapshot> pendingPlan() const;
  // Set while mcgwd runs the last good copy instead of its invalid file.
  const std::optional<Fallback>& fallback() const { return fallback_; }
  // Writes the config in force as the last good copy; a failure is logged
  // and reported in status until a later save works.  mcgwd calls it once
  // the start is complete (API socket included); reload() calls it itself.
  void saveLastGood();

  config::ConfigPtr config() const { return config_; }
  // The config file reload() reads (not the last good copy a fallback runs).
  const std::string& configPath() const { return path_; }
  const std::string& configText() const { return config_text_; }
  nlohmann::json status() const;
  bool healthy() const;
  // A one-line summary for systemd's STATUS=.
  std::string summary() const;

  // Registers the subsystems' own sources (the kernel neighbour socket and
  // the miss timer, path MTU discovery's sockets and poll, the line refresh)
  // on loop, which must outlive the gateway.  Once, on the loop's thread.
  void attach(core::EventLoop& loop);
  // Stops (true) or resumes (false) every source attach() registered, so
  // that a reload may run off the loop with the gateway to itself.  Loop
  // thread only.
  void setPaused(bool paused);
  // `mcgwctl line PEER LINE up|down`: administratively takes a line out of
  // (or back into) use.  Not persisted: a restart brings every line back.
  Result<std::string, std::string> setLineAdmin(const std::string& peer, const std::string& line,
                                                bool up);
  nlohmann::json tunnels() const;
  nlohmann::json routes(const engine::RouteFilter& filter = {}) const;
  nlohmann::json counters() const;
  // Tenant policy rules and their counters ("" = every tenant).
  nlohmann::json policy(const std::string& tenant) const;
  // `show flows`: flow audit's records (schema mcgw.flows/1).
  nlohmann::json flows(const flows::FlowsFilter& filter) const {
    return flows_ ? flows_->flows(filter)
                  : nlohmann::json{{"schema", "mcgw.flows/1"}, {"enabled", false}};
  }
  // `policy-set`: a tenant's live rate on PEER/LINE or PEER (rates null:
  // back to the config's); `who` is logged.
  Result<std::string, std::string> setRate(const std::string& tenant, const std::string& line,
                                           const std::optional<config::MeterRates>& rates,
                                           const std::string& who) {
    return policy_->setRate(tenant, line, rates, who);
  }
  const usage::UsageLedger& usage() const { return policy_->usage(); }
  // `policy-rules-set`: the tenant's rules (policy: the schema of a
  // tenants[].policy) replaced live, through the reload transaction, and
  // kept over reloads while the tenant exists (live_rules.hpp).  In force
  // when it returns; refused (each problem located in the policy, or a
  // subsystem's error): nothing changed.  `who` is logged.
  Result<std::string, std::vector<std::string>> setLiveRules(const std::string& tenant,
                                                             const nlohmann::json& policy,
                                                             const std::string& who);
  // `policy-rules-clear`: the config's rules again.
  Result<std::string, std::vector<std::string>> clearLiveRules(const std::string& tenant,
                                                               const std::string& who);
  // Where a tenant's rules come from: "config", or "live by WHO since TIME".
  std::string rulesSource(const std::string& tenant) const;
  // Why the HTTPS API (served by mcgwd's main, not a subsystem) is not
  // serving although configured; "" = fine.  Status turns degraded.
  void setHttpsProblem(std::string problem) { https_problem_ = std::move(problem); }
  nlohmann::json neighbors() const;
  nlohmann::json vrrp() const { return vrrp_->view(); }
  // `mcgwctl capture`: the request checked and resolved (or why not), then
  // started on the client's connection (capture_service.hpp).
  Result<capture::Planned, std::string> planCapture(const nlohmann::json& args) const {
    return capture_->plan(args);
  }
  void startCapture(capture::Planned p, int fd, const std::string& ok_line,
                    const std::function<std::string(const std::string&)>& error_line) {
    capture_->start(std::move(p), fd, ok_line, error_line);
  }
  // An orderly stop, before the loop's sources go: each VRRP Active sends
  // priority 0 (its Backup takes over after Skew_Time) and gives up the
  // virtual MAC; FRR withdraws the gateway's BGP announcements (its fast
  // path stops with it).
  void stop();
  // `mcgwctl audit`: FRR's RIB against the fast path's; answered later, on
  // the loop thread.
  void audit(std::function<void(nlohmann::json)> reply) { frr_->audit(std::move(reply)); }
  // `mcgwctl sa rekey PEER LINE`.
  Result<std::string, std::string> rekeySa(const std::string& peer, const std::string& line) {
    return encryption_->rekey(peer, line);
  }

 private:
  Gateway() = default;
  api::GatewayState state() const;
  static vrrp::Hooks vrrpHooks(Gateway* g);
  DaemonFacts facts() const;
  // The subsystems in reload order: each may use the prepared state of
  // those before it (tables are built over the ports opened before them).
  std::vector<Subsystem*> subsystems() const;
  // After an aborted reload: kernel sides and tables over the ports as
  // they are again.
  void restoreAfterAbort();
  // Logs the outcome; a reload of the file (store_revision null) is also
  // status's last reload.
  // live: the outcome is a live rules change's, logged as that and not
  // status's last reload.
  ReloadOutcome finish(ReloadOutcome outcome, const plan::Snapshot* store_revision = nullptr,
                       const std::string& live = "");
  // The file's config and text with the store's VPCs: a reload.  file_read:
  // the file was read again (a valid file ends a fallback).  live: a live
  // rules change (what it is, for the log).
  ReloadOutcome reloadWith(LoadedConfig file, const plan::Snapshot& snapshot, bool file_read,
                           const std::string& live = "");
  // A reload's new file with the live rules over it (loaded.config
  // replaced); false with errors when they do not fit it.  ended: tenants
  // the file no longer has (their live rules end if the reload is applied).
  bool liveRulesOver(LoadedConfig& loaded, std::vector<std::string>& errors,
                     std::vector<std::string>& ended) const;
  void liveRulesEnded(const std::vector<std::string>& tenants);
  // The text in force with live as the live rules, through the reload
  // transaction; live_rules_ becomes live when it is applied.  The result:
  // the live policies' warnings ("" or lines starting with a line break).
  Result<std::string, std::vector<std::string>> applyLiveRules(
      std::map<std::string, LiveRules> live, const std::string& what);
  // Keeps the plan in force where the gateway finds it when the store is
  // down at the next start.
  void cachePlan(const plan::Snapshot& snapshot);

  std::string path_;
  std::string log_level_override_;
  std::unique_ptr<LastGoodStore> last_good_;
  std::optional<Fallback> fallback_;
  std::string last_good_error_;
  config::ConfigPtr config_;       // the file's config with the store's VPCs: what runs
  config::ConfigPtr file_config_;  // the file's alone
  std::string config_text_;
  std::string state_dir_;
  std::unique_ptr<engine::Eal> eal_;
  std::unique_ptr<engine::Dataplane> dataplane_;
  std::unique_ptr<ports::PortSet> ports_;
  std::unique_ptr<kernel::KernelSides> kernel_;
  std::unique_ptr<kernel::NeighborResolver> neighbors_;
  std::unique_ptr<lines::UnderlayLines> lines_;
  std::unique_ptr<ForwardingState> forwarding_;
  std::unique_ptr<frr::FrrRouting> frr_;
  std::unique_ptr<vrrp::VrrpService> vrrp_;
  std::unique_ptr<plan::PlanFollower> plan_;  // null: no store to follow
  std::unique_ptr<metrics::MetricsService> metrics_;
  std::unique_ptr<capture::CaptureService> capture_;
  std::unique_ptr<flows::FlowAudit> flows_;
  std::unique_ptr<policyview::PolicyService> policy_;
  std::map<std::string, LiveRules> live_rules_;  // by tenant: over the config's policy
  std::string https_problem_;
  std::unique_ptr<encryption::EncryptionService> encryption_;
  metrics::ConfigFileWatch file_watch_;  // mcgw_config_file_differs
  core::EventLoop* loop_ = nullptr;
  std::chrono::system_clock::time_point started_at_;
  std::chrono::steady_clock::time_point started_;
  std::chrono::system_clock::time_point loaded_at_;
  ReloadRecord last_reload_;
  uint64_t generation_ = 1;  // DaemonFacts::generation
  uint64_t reloads_ok_ = 0, reloads_failed_ = 0;
};

}  // namespace mcgw::daemon
