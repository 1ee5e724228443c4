#include "control/metrics/metrics_service.hpp"

#include <sys/stat.h>

#include <deque>
#include <exception>

#include <prometheus/collectable.h>
#include <prometheus/exposer.h>
#include <spdlog/spdlog.h>

#include "config/loader.hpp"
#include "config/text.hpp"
#include "control/metrics/metrics.hpp"

namespace mcgw::metrics {

using prometheus::MetricFamily;
using Clock = std::chrono::steady_clock;

bool ConfigFileWatch::differs(const std::string& path, const std::string& checksum) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    stamp_.reset();
    return true;  // gone or unreadable: not the config in force
  }
  const Stamp now{static_cast<uint64_t>(st.st_ino), static_cast<uint64_t>(st.st_size),
                  static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec};
  if (!stamp_ || !(*stamp_ == now)) {
    auto text = config::readConfigFile(path);
    file_checksum_ = text ? config::sha256Hex(*text) : "";
    stamp_ = now;
  }
  return file_checksum_.empty() || file_checksum_ != checksum;
}

// What the scrape threads and the loop share.  The mutex guards everything
// but `service` and `deferred`, which belong to the loop thread.
struct MetricsService::Shared {
  struct Request {
    bool done = false;
    std::vector<MetricFamily> families;
  };

  std::mutex mutex;
  std::condition_variable cv;
  bool closed = false;
  std::vector<MetricFamily> last;  // the previous collection
  Clock::time_point last_at{};
  uint64_t scrapes = 0, stale = 0;
  uint64_t epoch = 0;  // a change releases the scrapes that wait
  std::chrono::milliseconds min_interval{kMinInterval};

  // Loop thread only.
  MetricsService* service = nullptr;  // null once the service is gone
  bool paused = false;
  std::deque<std::shared_ptr<Request>> deferred;
  Collect collect;

  // On the loop: collects for `r` (and keeps it for the next scrapes).
  void serve(const std::shared_ptr<Request>& r) {
    if (service && paused) {
      deferred.push_back(r);
      return;
    }
    std::vector<MetricFamily> families;
    bool ok = false;
    if (service) {
      try {
        families = collect();
        ok = true;
      } catch (const std::exception& e) {
        spdlog::error("metrics: collecting failed: {}", text::escape(e.what(), 300));
      }
    }
    std::lock_guard lock(mutex);
    if (ok) {
      last = families;
      last_at = Clock::now();
    } else {
      families = last;
    }
    r->families = std::move(families);
    r->done = true;
    cv.notify_all();
  }
};

class MetricsService::Collector : public prometheus::Collectable {
 public:
  Collector(core::EventLoop* loop, std::shared_ptr<Shared> shared)
      : loop_(loop), shared_(std::move(shared)) {}

  // On one of civetweb's threads.
  std::vector<MetricFamily> Collect() const override {
    auto r = std::make_shared<Shared::Request>();
    uint64_t epoch = 0;
    {
      std::lock_guard lock(shared_->mutex);
      if (shared_->closed) {
        return {};
      }
      ++shared_->scrapes;
      if (!shared_->last.empty() && Clock::now() - shared_->last_at < shared_->min_interval) {
        return withOwn(shared_->last);
      }
      epoch = shared_->epoch;
    }
    loop_->post([s = shared_, r] { s->serve(r); });
    std::unique_lock lock(shared_->mutex);
    if (!shared_->cv.wait_for(
            lock, kCollectTimeout,
            [&] { return r->done || shared_->closed || shared_->epoch != epoch; }) ||
        !r->done) {
      ++shared_->stale;
      return withOwn(shared_->last);
    }
    return withOwn(r->families);
  }

 private:
  // The families plus the endpoint's own (mutex held).
  std::vector<MetricFamily> withOwn(std::vector<MetricFamily> families) const {
    static const MetricInfo* info = findMetric("mcgw_metrics_stale_scrapes_total");
    MetricFamily stale{info->name, info->help, info->type, {}};
    prometheus::ClientMetric m;
    m.counter.value = static_cast<double>(shared_->stale);
    stale.metric.push_back(m);
    families.push_back(std::move(stale));
    return families;
  }

  core::EventLoop* loop_;
  std::shared_ptr<Shared> shared_;
};

MetricsService::MetricsService(config::ConfigPtr config, Collect collect,
                               std::chrono::milliseconds min_interval)
    : config_(std::move(config)), shared_(std::make_shared<Shared>()) {
  shared_->min_interval = min_interval;
  shared_->service = this;
  shared_->collect = std::move(collect);
}

MetricsService::~MetricsService() {
  {
    std::lock_guard lock(shared_->mutex);
    shared_->closed = true;
    shared_->cv.notify_all();  // waiting scrapes return at once
  }
  shared_->service = nullptr;
  pending_.reset();
  exposer_.reset();  // joins civetweb's threads
  for (auto& r : shared_->deferred) {
    shared_->serve(r);
  }
  shared_->deferred.clear();
}

Result<std::unique_ptr<prometheus::Exposer>, std::string> MetricsService::open(
    const std::string& listen) {
  if (listen.empty()) {
    return std::unique_ptr<prometheus::Exposer>();
  }
  try {
    auto e = std::make_unique<prometheus::Exposer>(std::vector<std::string>{
        "listening_ports", listen, "num_threads", std::to_string(kHttpThreads),
        "request_timeout_ms", std::to_string(kRequestTimeoutMs)});
    e->RegisterCollectable(collector_, "/metrics");
    return e;
  } catch (const std::exception& e) {
    return unexpected("metrics: cannot listen on " + listen + ": " + text::escape(e.what(), 200) +
                      " (the address in use, or not on this host?)");
  }
}

void MetricsService::attach(core::EventLoop& loop) {
  loop_ = &loop;
  collector_ = std::make_shared<Collector>(loop_, shared_);
  auto r = open(config_->metrics.listen);
  if (!r) {
    error_ = r.error();
    spdlog::error("{}", error_);
    return;
  }
  exposer_ = std::move(*r);
  if (exposer_) {
    spdlog::info("metrics on http://{}/metrics", config_->metrics.listen);
  }
}

void MetricsService::setPaused(bool paused) {
  shared_->paused = paused;
  if (!paused) {
    auto waiting = std::move(shared_->deferred);
    shared_->deferred.clear();
    for (auto& r : waiting) {
      shared_->serve(r);
    }
  }
}

Result<bool, std::string> MetricsService::prepare(const daemon::ReloadPlan& plan) {
  const std::string& next = plan.next->metrics.listen;
  pending_.emplace();
  pending_->next = plan.next;
  const bool same = next == config_->metrics.listen;
  if (!loop_ || (same && (exposer_ || next.empty()))) {
    return true;  // nothing to open (before attach: attach opens it)
  }
  auto r = open(next);
  if (r) {
    pending_->exposer = std::move(*r);
    return true;
  }
  if (same) {
    // Still not possible (it failed at start, or at the last reload): the
    // gateway goes on without metrics, as at start; status keeps saying why.
    spdlog::error("{}", r.error());
    pending_->error = r.error();
    return true;
  }
  // The old listener may hold the port (only the address changes): it
  // closes first, in apply.
  const auto a = config::parseListen(config_->metrics.listen);
  const auto b = config::parseListen(next);
  if (exposer_ && a && b && a->port == b->port) {
    pending_->reopen_in_apply = true;
    return true;
  }
  pending_.reset();
  return unexpected(r.error());
}

void MetricsService::apply() {
  if (!pending_) {
    return;
  }
  const std::string& next = pending_->next->metrics.listen;
  const bool changed = next != config_->metrics.listen;
  config_ = pending_->next;
  if (!pending_->error.empty()) {
    error_ = pending_->error;
  }
  if (pending_->exposer || changed || pending_->reopen_in_apply) {
    releaseWaiters();
    exposer_.reset();
    exposer_ = std::move(pending_->exposer);
    error_.clear();
    if (pending_->reopen_in_apply) {
      auto r = open(next);
      if (r) {
        exposer_ = std::move(*r);
      } else {
        error_ = r.error();
        spdlog::error("{}", error_);
      }
    }
    if (exposer_) {
      spdlog::info("metrics on http://{}/metrics", next);
    } else if (next.empty()) {
      spdlog::info("metrics: off");
    }
  }
  pending_.reset();
}

void MetricsService::abort() {
  if (pending_ && pending_->exposer) {
    releaseWaiters();
  }
  pending_.reset();
}

// Scrapes waiting for the loop (paused by the reload that closes their
// listener) answer with the previous collection at once, so that closing
// the listener does not wait for them.
void MetricsService::releaseWaiters() {
  std::lock_guard lock(shared_->mutex);
  ++shared_->epoch;
  shared_->cv.notify_all();
}

daemon::MetricsFacts MetricsService::facts() const {
  daemon::MetricsFacts f;
  f.listen = config_->metrics.listen;
  f.listening = exposer_ != nullptr;
  f.error = error_;
  std::lock_guard lock(shared_->mutex);
  f.scrapes = shared_->scrapes;
  f.stale_scrapes = shared_->stale;
  return f;
}

}  // namespace mcgw::metrics
