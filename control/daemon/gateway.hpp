// The gateway's control core: the running config, the DPDK ports it owns,
// reload as a transaction, and the status every front-end reads.  SIGHUP,
// `mcgwctl reload` and tests all call Gateway::reload().
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/config.hpp"
#include "config/diff.hpp"
#include "config/loader.hpp"
#include "dataplane/engine/eal.hpp"
#include "dataplane/engine/port.hpp"

namespace mcgw::daemon {

struct ReloadOutcome {
  bool ok = false;
  std::vector<std::string> errors;   // why nothing was applied
  std::vector<std::string> changes;  // what was applied
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
  // port.  Once per process (the EAL cannot start twice).  log_level_override
  // is --log-level: when set, it wins over logging.level, on reloads too.
  // On failure the errors say why.
  static Result<std::unique_ptr<Gateway>, std::vector<std::string>> start(
      const std::string& config_path, LoadedConfig loaded, const std::string& program,
      const std::string& log_level_override);
  ~Gateway();

  // Re-reads the config file.  Invalid, needing a restart, or failing while
  // applied (a device that cannot be opened): nothing changes (what was done
  // is undone) and the errors come back.  Valid: only the difference is
  // applied.
  ReloadOutcome reload();

  config::ConfigPtr config() const { return config_; }
  const std::string& configText() const { return config_text_; }
  nlohmann::json status() const;
  bool healthy() const;
  // A one-line summary for systemd's STATUS=.
  std::string summary() const;

 private:
  Gateway() = default;
  engine::Port* findPort(const std::string& name) const;
  std::vector<engine::PortStatus> portStatus() const;
  void sortPorts(const config::Config& order);
  std::vector<std::string> healthReasons(const std::vector<engine::PortStatus>& ports) const;

  std::string path_;
  std::string log_level_override_;
  config::ConfigPtr config_;
  std::string config_text_;
  std::unique_ptr<engine::Eal> eal_;
  std::vector<std::unique_ptr<engine::Port>> ports_;
  std::chrono::system_clock::time_point started_at_;
  std::chrono::steady_clock::time_point started_;
  std::chrono::system_clock::time_point loaded_at_;
  struct LastReload {
    bool attempted = false;
    bool ok = true;
    std::chrono::system_clock::time_point at;
    std::vector<std::string> errors;
    std::vector<std::string> changes;
  } last_reload_;
};

}  // namespace mcgw::daemon
