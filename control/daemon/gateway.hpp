// The gateway's control core: the running config, the DPDK ports it owns,
// reload as a transaction, and the status every front-end reads.  SIGHUP,
// `mcgwctl reload` and tests all call Gateway::reload().
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
#include "config/diff.hpp"
#include "config/loader.hpp"
#include "control/daemon/last_good.hpp"
#include "control/kernel/netlink.hpp"
#include "control/pmtu/service.hpp"
#include "dataplane/engine/dataplane.hpp"
#include "dataplane/engine/eal.hpp"
#include "dataplane/engine/port.hpp"
#include "ebpf/xdp_maps.hpp"

namespace mcgw::daemon {

struct ReloadOutcome {
  bool ok = false;
  std::vector<std::string> errors;   // why nothing was applied
  std::vector<std::string> changes;  // what was applied (empty: nothing changed)
  // One line for the log and the API alike: "applied 2 change(s)", "no
  // changes", "refused (3 errors); the running config is unchanged".
  std::string summary;
};

// mcgwd runs the last good copy of its config because the file is invalid.
struct Fallback {
  std::string copy;                                // the copy's path
  std::chrono::system_clock::time_point saved_at;  // when it was last written
  std::vector<std::string> file_errors;            // why the file was not used
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

// A time as status and logs write it: 2026-12-03T08:00:00Z (UTC).
std::string isoTime(std::chrono::system_clock::time_point t);

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

  // Periodic work of the control loop (every 20 ms): neighbour misses from
  // the workers become resolution requests to the kernel; every 100 ms line
  // health from the ports' link state and the operator's admin state.
  void tick();
  // The kernel neighbour table's notifications (fd to poll, and the handler).
  int neighborFd() const { return neighbors_ ? neighbors_->fd() : -1; }
  void onNeighborEvents();
  // Path MTU discovery's sockets (ICMP listener, probers) to poll, and the
  // handler for a readable one.
  std::vector<int> pathMtuFds() const;
  void onPathMtuReadable(int fd);
  // `mcgwctl line PEER LINE up|down`: administratively takes a line out of
  // (or back into) use.  Not persisted: a restart brings every line back.
  Result<std::string, std::string> setLineAdmin(const std::string& peer, const std::string& line,
                                                bool up);
  nlohmann::json tunnels() const;
  nlohmann::json routes() const;
  nlohmann::json counters() const;
  nlohmann::json neighbors() const;

 private:
  Gateway() = default;
  engine::Port* findPort(const std::string& name) const;
  std::vector<engine::PortStatus> portStatus() const;
  void sortPorts(const config::Config& order);
  std::vector<std::string> healthReasons(const std::vector<engine::PortStatus>& ports) const;
  // The running ports (less `without`) as the table builder sees them.
  std::map<std::string, engine::OpenPort> openPorts(
      const std::set<std::string>& without = {}) const;
  // Builds tables for `config` over the open ports and publishes them.
  Result<bool, std::string> publish(const config::Config& config,
                                    const std::map<std::string, engine::OpenPort>& ports);
  nlohmann::json fastPathStatus() const;
  nlohmann::json xdpCounters() const;
  void refreshLiveState(const engine::ForwardingTables& tables);
  void refreshMss(const engine::ForwardingTables& tables);
  // Path MTU discovery follows the lines of `tables` (state of lines that
  // stay is kept); applyPathMtu pushes its changes into the fast path.
  void configurePathMtu(const engine::ForwardingTables& tables);
  void applyPathMtu(const engine::ForwardingTables& tables);
  nlohmann::json pathMtuStatus() const;
  uint16_t txQueues() const { return static_cast<uint16_t>(dataplane_->workers()); }

  std::string path_;
  std::string log_level_override_;
  std::unique_ptr<LastGoodStore> last_good_;
  std::optional<Fallback> fallback_;
  std::string last_good_error_;
  config::ConfigPtr config_;
  std::string config_text_;
  std::unique_ptr<engine::Eal> eal_;
  std::vector<std::unique_ptr<engine::Port>> ports_;
  std::unique_ptr<engine::Dataplane> dataplane_;
  engine::TablesBuilder builder_;
  std::set<std::string> admin_down_;    // "peer/line"
  std::map<uint16_t, bool> port_link_;  // DPDK port id -> link up (tick)

  // The kernel side of a port: the interface that carries its addresses and
  // where its neighbours are resolved (the af_xdp interface itself, or a TAP
  // mcgwd creates for af_packet and PCI ports).
  struct KernelSide {
    std::string ifname;
    int ifindex = 0;
    std::unique_ptr<engine::Port> tap;
    std::optional<ebpf::XdpMaps> xdp;  // af_xdp: mcgw's XDP program's maps
  };
  std::map<std::string, KernelSide> kernel_;  // by port name
  std::unique_ptr<kernel::NeighborMonitor> neighbors_;
  std::set<std::pair<int, config::IpAddress>> managed_;       // next hops we keep resolved
  std::set<std::pair<int, config::IpAddress>> managed_own_;   // ... whose entries we created
  std::set<std::pair<int, config::IpAddress>> host_managed_;  // hosts asked for by misses
  std::unique_ptr<pmtu::PathMtuService> pmtu_;
  std::vector<std::string> pmtu_errors_;  // logged once each
  unsigned ticks_ = 0;
  unsigned tap_serial_ = 0;
  std::vector<std::string> kernel_errors_;  // for health
  void setUpKernelSides();
  void keepNextHopsResolved();
  void updateXdpMaps();
  void reassertNeighbors();
  static constexpr unsigned kMaxResolutionsPerTick = 64;
  static constexpr size_t kMaxHostResolutions = 1024;
  uint64_t resolutions_refused_ = 0;
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
