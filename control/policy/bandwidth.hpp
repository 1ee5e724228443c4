// Tenant bandwidth on the control side (docs/policy.md, "Bandwidth"): which
// rates each (tenant, line) meter has, from the config's limits, its daily
// windows and the live changes of `mcgwctl policy set` / the API, and
// publishing them to the fast path's meter table.
//
// Per (tenant, peer, line) the rates in force are the first of:
//   1. a live change for PEER/LINE, then one for PEER;
//   2. a window of the config for PEER/LINE, then PEER, whose time (UTC) it is;
//   3. a limit of the config for PEER/LINE, then PEER;
// none: the pair is not metered.  Live changes stay across reloads (while
// the tenant and the line exist) and end with a restart or `policy clear`.
//
// Pure logic over the tables' (tenant, line) pairs and a clock the caller
// passes; the meter table is the only side effect (apply).  Control side
// only; one mutex keeps a live change from racing a reload's apply.
#pragma once

#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/config.hpp"
#include "config/result.hpp"
#include "dataplane/engine/dataplane.hpp"
#include "dataplane/engine/tables.hpp"
#include "dataplane/policy/meter.hpp"

namespace mcgw::policyview {

class Bandwidth {
 public:
  using Clock = std::chrono::system_clock;

  explicit Bandwidth(config::ConfigPtr config) : config_(std::move(config)) {}

  // The config in force (after a reload's apply): live changes whose
  // tenant or line it no longer has are dropped (and logged).
  void setConfig(config::ConfigPtr config);

  // A live change: `line` is PEER/LINE or PEER; `rates` nullopt clears it
  // (back to the config).  Checked against the config in force (tenant,
  // peer carrying it, line) and the rates parsed (policy::Rate); `who`
  // (the client) is logged and shown.  Returns what is now in force for
  // the message.  Call apply() after it.
  Result<std::string, std::string> set(const std::string& tenant, const std::string& line,
                                       const std::optional<config::MeterRates>& rates,
                                       const std::string& who, Clock::time_point now);

  // Publishes to `meters` what is in force at `now` for every pair of
  // `tables`, changing only the slots whose rate differs (a slot no pair
  // has any more is cleared): `pairs` is the tables' tenant_lines.  Errors (never expected: the
  // rates were checked) are logged and leave that slot as it was.
  // `demand` (with several workers): per worker, per slot (kMaxTenantLines
  // entries) the packets offered to the meter so far (Dataplane::
  // meterDemand); each metered slot's shares then follow what each worker
  // offered since the last apply (shareWeights), changed when a share
  // moved by more than 2 %.
  void apply(const std::vector<engine::TenantLineEntry>& pairs, policy::MeterTable& meters,
             Clock::time_point now, const std::vector<std::vector<uint64_t>>* demand = nullptr);
  // The workers' weights a slot's rate is shared by now (empty: equal).
  std::vector<uint32_t> weights(uint16_t slot) const;

  // The rates a pair has at `now` and where they come from
  // ("live by controller.example.net", "window 01:00-06:00", "config"), or
  // nullopt: unmetered.
  struct InForce {
    policy::Rate rate;
    config::MeterRates text;
    std::string source;
  };
  std::optional<InForce> inForce(const std::string& tenant, const std::string& peer,
                                 const std::string& line, Clock::time_point now) const;

  // `bandwidth` of one tenant in `show policy`: per pair of the tenant its
  // rates in force and source, and the yellow and red packets.
  nlohmann::json view(const std::vector<engine::TenantLineEntry>& pairs,
                      const engine::CountersSnapshot& counters, const std::string& tenant,
                      Clock::time_point now) const;

  // config::MeterRates → policy::Rate (defaults filled in).
  static Result<policy::Rate, std::string> toRate(const config::MeterRates& r);

 private:
  struct Live {
    config::MeterRates rates;
    std::string who;
    Clock::time_point since;
  };
  std::optional<InForce> inForceLocked(const std::string& tenant, const std::string& peer,
                                       const std::string& line, Clock::time_point now) const;

  mutable std::mutex mutex_;
  config::ConfigPtr config_;
  std::map<std::pair<std::string, std::string>, Live> live_;  // (tenant, PEER[/LINE])
  // slot -> what the meters have: the rate and the workers' weights (empty:
  // equal shares).
  struct Applied {
    policy::Rate rate;
    std::vector<uint32_t> weights;
  };
  std::map<uint16_t, Applied> applied_;
  // slot -> each worker's demand counter at the last apply (weighing).
  std::map<uint16_t, std::vector<uint64_t>> last_demand_;
};

// The workers' shares of a metered rate from what each offered the meter
// since the last time (`delta`, packets per worker; docs/policy.md,
// "Several workers"): in proportion to the demand, each worker also getting
// a floor of a quarter of an equal share's worth of demand so that one that
// was idle can still start; weights summing to kShareScale.  Empty (equal
// shares) with one worker or fewer than kMinShareSample packets in all.
inline constexpr uint32_t kShareScale = 1000;
inline constexpr uint64_t kMinShareSample = 64;
std::vector<uint32_t> shareWeights(const std::vector<uint64_t>& delta);

}  // namespace mcgw::policyview
