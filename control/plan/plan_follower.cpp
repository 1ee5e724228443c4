#include "control/plan/plan_follower.hpp"

#include <spdlog/spdlog.h>

#include "config/text.hpp"
#include "control/core/iso_time.hpp"

namespace mcgw::plan {

using core::isoTime;

namespace {

// What a failed call says about the store, for status and the log.
const char* stateName(StoreError::Kind kind) {
  switch (kind) {
    case StoreError::Kind::kRefused:
      return "refusing us";
    case StoreError::Kind::kCorrupt:
      return "corrupt";
    default:
      return "unreachable";
  }
}

// status's address_plan.store.state when a call failed.
const char* stateStatus(StoreError::Kind kind) {
  switch (kind) {
    case StoreError::Kind::kRefused:
      return "refused";
    case StoreError::Kind::kCorrupt:
      return "corrupt";
    default:
      return "unreachable";
  }
}

}  // namespace

PlanFollower::PlanFollower(std::unique_ptr<Store> store, Snapshot adopted,
                           std::optional<std::string> start_error, std::string cached)
    : store_(std::move(store)), adopted_(std::move(adopted)), cached_(std::move(cached)) {
  if (start_error) {
    store_error_ = *start_error + cached_;
    store_error_since_ = std::chrono::system_clock::now();
  }
}

PlanFollower::~PlanFollower() {
  stop_ = true;
  retry_.reset();
  worker_.reset();  // waits for a waitChange under way: it sees stop_ within its poll
}

void PlanFollower::attach(core::EventLoop& loop, std::function<void(const Snapshot&)> on_change) {
  loop_ = &loop;
  on_change_ = std::move(on_change);
  worker_ = std::make_unique<core::Worker>(loop, "address plan store");
  poll();
}

void PlanFollower::poll() {
  if (stop_) {
    return;
  }
  // The store is asked from the newest revision seen, so that a revision
  // refused or held during a reload is not delivered twice.
  const uint64_t after = latest_ ? latest_->revision : adopted_.revision;
  auto result = std::make_shared<std::optional<StoreResult<Snapshot>>>();
  auto started = std::make_shared<std::chrono::steady_clock::time_point>();
  worker_->run(
      [this, after, result, started] {
        // The store is only touched from the worker's thread (and at start).
        *started = std::chrono::steady_clock::now();
        *result = store_->waitChange(after, kWait, stop_);
      },
      [this, result, started] {
        if (!*result) {
          retryLater();  // waitChange threw (logged by the worker)
          return;
        }
        // A wait that ends at once without news is not asked again at once:
        // a store that keeps doing so must not make this a busy loop.
        const bool quick = std::chrono::steady_clock::now() - *started < kQuick;
        heard(std::move(**result), quick);
      });
}

void PlanFollower::retryLater() {
  retry_ = loop_->after(kRetry, "address plan retry", [this] {
    retry_.reset();
    poll();
  });
}

void PlanFollower::heard(StoreResult<Snapshot> r, bool quick) {
  if (!r) {
    const std::string why = r.error().message + cached_;
    if (store_error_.empty()) {
      store_error_since_ = std::chrono::system_clock::now();
      spdlog::error("address plan: {} is {}: {}; forwarding goes on with plan revision {}",
                    store_->describe(), stateName(r.error().kind), text::escape(why, 512),
                    adopted_.revision);
    } else if (store_error_ != why) {
      spdlog::warn("address plan: {}: {}", store_->describe(), text::escape(why, 512));
    }
    store_error_ = why;
    store_error_kind_ = r.error().kind;
    retryLater();
    return;
  }
  if (!store_error_.empty()) {
    spdlog::info("address plan: {} answers again (revision {})", store_->describe(), r->revision);
    store_error_.clear();
  }
  cached_.clear();
  const uint64_t seen = latest_ ? latest_->revision : adopted_.revision;
  // A revision below the one seen is a store restored or replaced (a new
  // etcd, a recreated file): its content is the plan now.
  if (r->revision != seen) {
    if (r->revision < seen) {
      spdlog::warn("address plan: {} went back from revision {} to {}: taking its content",
                   store_->describe(), seen, r->revision);
    }
    latest_ = std::move(*r);
    last_change_ = std::chrono::system_clock::now();
    if (paused_) {
      deliver_on_resume_ = true;
    } else if (on_change_) {
      on_change_(*latest_);
    }
    poll();
    return;
  }
  if (quick) {
    retryLater();
  } else {
    poll();
  }
}

void PlanFollower::setPaused(bool paused) {
  paused_ = paused;
  if (!paused && deliver_on_resume_) {
    deliver_on_resume_ = false;
    if (latest_ && on_change_) {
      on_change_(*latest_);
    }
  }
}

void PlanFollower::adopted(const Snapshot& s) {
  adopted_ = s;
  if (latest_ && latest_->revision <= s.revision) {
    latest_.reset();
  }
  refused_errors_.clear();
  refused_revision_ = 0;
}

void PlanFollower::refused(const Snapshot& s, std::vector<std::string> errors) {
  refused_revision_ = s.revision;
  refused_errors_ = std::move(errors);
}

std::optional<Snapshot> PlanFollower::pending() const {
  return latest_;
}

std::string PlanFollower::problem() const {
  if (!store_error_.empty()) {
    return "address plan store " + store_->describe() + " " + stateName(store_error_kind_) +
           " since " + isoTime(store_error_since_) + ": " + text::escape(store_error_, 256) +
           "; running plan revision " + std::to_string(adopted_.revision);
  }
  if (refused_revision_ != 0) {
    return "address plan revision " + std::to_string(refused_revision_) +
           " refused (see status address_plan.refused); running revision " +
           std::to_string(adopted_.revision);
  }
  return "";
}

nlohmann::json PlanFollower::status() const {
  nlohmann::json j = {{"store", store_->describe()},
                      {"state", store_error_.empty() ? "ok" : stateStatus(store_error_kind_)},
                      {"revision", adopted_.revision},
                      {"stored_vpcs", adopted_.vpcs.size()}};
  if (!store_error_.empty()) {
    j["error"] = text::escape(store_error_, 1024);
    j["since"] = isoTime(store_error_since_);
  }
  if (last_change_ != std::chrono::system_clock::time_point{}) {
    j["last_change"] = isoTime(last_change_);
  }
  if (refused_revision_ != 0) {
    nlohmann::json errors = nlohmann::json::array();
    for (const auto& e : refused_errors_) {
      errors.push_back(text::escape(e, 1024));
    }
    j["refused"] = {{"revision", refused_revision_}, {"errors", errors}};
  }
  return j;
}

}  // namespace mcgw::plan
