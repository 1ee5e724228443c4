// What the daemon knows about itself (as opposed to its subsystems) and
// shows in status: when it started, the config in force, the last reload,
// the last good copy and a fallback to it.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "control/core/iso_time.hpp"

namespace mcgw::daemon {

// mcgwd runs the last good copy of its config because the file is invalid.
struct Fallback {
  std::string copy;                                // the copy's path
  std::chrono::system_clock::time_point saved_at;  // when it was last written
  std::vector<std::string> file_errors;            // why the file was not used
};

struct ReloadRecord {
  bool attempted = false;
  bool ok = true;
  std::chrono::system_clock::time_point at;
  std::vector<std::string> errors;
  std::vector<std::string> changes;
};

// The /metrics endpoint (control/metrics).
struct MetricsFacts {
  std::string listen;  // "": off
  bool listening = false;
  std::string error;  // why it does not listen as configured
  uint64_t scrapes = 0, stale_scrapes = 0;
};

struct DaemonFacts {
  std::string version;
  std::string config_file;
  std::chrono::system_clock::time_point started_at;
  std::chrono::steady_clock::time_point started;
  std::chrono::system_clock::time_point loaded_at;
  ReloadRecord last_reload;
  std::string last_good_file;
  std::optional<std::chrono::system_clock::time_point> last_good_saved_at;
  std::string last_good_error;  // empty: the last save worked
  std::optional<Fallback> fallback;
  // Configs that came into force (the first one: 1): a reload of the file
  // or a revision of the address plan's store that applied.
  uint64_t generation = 1;
  // Reloads of the file (SIGHUP, mcgwctl reload), by outcome.
  uint64_t reloads_ok = 0;
  uint64_t reloads_failed = 0;
  MetricsFacts metrics;
  // The HTTPS API (api.https): why it is not serving although configured
  // ("" = serving, or off).
  std::string https_problem;
};

using core::isoTime;

}  // namespace mcgw::daemon
