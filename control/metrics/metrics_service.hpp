// The /metrics endpoint (metrics.listen): prometheus-cpp's Exposer (civetweb)
// serves HTTP on its own threads; a scrape hands the collection to the
// control loop (EventLoop::post), where the subsystems' state may be read,
// and waits for it.  While a reload runs off the loop (the gateway paused),
// scrapes wait until it ends; one that waits longer than kCollectTimeout
// gets the previous collection (counted, mcgw_metrics_stale_scrapes_total).
// Collections closer together than kMinInterval share one: scrapes cannot
// make the loop, or the workers' counter blocks, busier than that.
//
// A reload may change metrics.listen: prepare() opens the new listener,
// apply() swaps it in, abort() closes it.  A listener that cannot open at
// start is logged and shown in status (degraded), never fatal: the gateway
// forwards without its metrics; the next reload tries again.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <prometheus/metric_family.h>

#include "config/config.hpp"
#include "control/core/event_loop.hpp"
#include "control/daemon/daemon_facts.hpp"
#include "control/daemon/subsystem.hpp"

namespace prometheus {
class Exposer;
}

namespace mcgw::metrics {

inline constexpr std::chrono::milliseconds kCollectTimeout{5000};
inline constexpr std::chrono::milliseconds kMinInterval{500};
// civetweb: threads serving requests, and how long a client may take.
inline constexpr int kHttpThreads = 2;
inline constexpr int kRequestTimeoutMs = 10000;

// Whether the config file on disk still holds the config in force: its
// sha256 against Config::checksum, read again only when the file's size,
// inode or modification time changed (at most kMaxFileBytes, as the loader).
class ConfigFileWatch {
 public:
  bool differs(const std::string& path, const std::string& checksum);

 private:
  struct Stamp {
    uint64_t ino = 0, size = 0;
    int64_t mtime_ns = 0;
    bool operator==(const Stamp&) const = default;
  };
  std::optional<Stamp> stamp_;
  std::string file_checksum_;  // of the file at stamp_ ("": unreadable)
};

class MetricsService : public daemon::Subsystem {
 public:
  using Collect = std::function<std::vector<prometheus::MetricFamily>()>;
  // min_interval: collections closer together are shared (tests change it).
  MetricsService(config::ConfigPtr config, Collect collect,
                 std::chrono::milliseconds min_interval = kMinInterval);
  ~MetricsService() override;
  MetricsService(const MetricsService&) = delete;
  MetricsService& operator=(const MetricsService&) = delete;

  // Opens the configured listener (a failure is logged and kept for status).
  // Once, on the loop thread, which must outlive the service.
  void attach(core::EventLoop& loop);
  // Paused (a reload off the loop): scrapes wait for the resume.
  void setPaused(bool paused);

  std::string_view name() const override { return "metrics"; }
  Result<bool, std::string> prepare(const daemon::ReloadPlan& plan) override;
  void apply() override;
  void abort() override;

  daemon::MetricsFacts facts() const;

 private:
  struct Shared;
  class Collector;

  // The listener for `listen` ("": none), or why it cannot be opened.
  Result<std::unique_ptr<prometheus::Exposer>, std::string> open(const std::string& listen);
  void releaseWaiters();

  config::ConfigPtr config_;
  core::EventLoop* loop_ = nullptr;
  std::shared_ptr<Shared> shared_;
  std::shared_ptr<Collector> collector_;
  std::unique_ptr<prometheus::Exposer> exposer_;
  std::string error_;  // why the configured listener is not open
  // prepare()'s result, for apply() or abort().
  struct Pending {
    config::ConfigPtr next;
    std::unique_ptr<prometheus::Exposer> exposer;
    bool reopen_in_apply = false;  // same port: the old one closes first
    std::string error;             // the same listen still cannot open: kept for status
  };
  std::optional<Pending> pending_;
};

}  // namespace mcgw::metrics
