// A gateway follows the plan's store: a thread of its own waits for the
// store to change (Store::waitChange) and the control loop hears of every new
// revision, which the gateway applies like a reload (control/daemon).  When
// the store cannot be reached the gateway keeps the plan it has and status
// says so, until the store answers again.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "control/core/event_loop.hpp"
#include "control/core/worker.hpp"
#include "control/plan/plan.hpp"

namespace mcgw::plan {

class PlanFollower {
 public:
  // `adopted`: the snapshot the gateway starts with; `start_error`: why the
  // store did not answer at start; `cached` ("; running the cached plan
  // ..."), when adopted came from the gateway's cache, is added to the
  // store's error until the store answers.
  PlanFollower(std::unique_ptr<Store> store, Snapshot adopted,
               std::optional<std::string> start_error, std::string cached = "");
  ~PlanFollower();  // stops waiting (at most one poll interval)
  PlanFollower(const PlanFollower&) = delete;
  PlanFollower& operator=(const PlanFollower&) = delete;

  // Starts following on loop; on_change runs on the loop with each revision
  // newer than the last one seen, unless paused (then once on resume, with
  // the newest).
  void attach(core::EventLoop& loop, std::function<void(const Snapshot&)> on_change);
  void setPaused(bool paused);

  // What the gateway did with a revision on_change gave it.
  void adopted(const Snapshot& s);
  void refused(const Snapshot& s, std::vector<std::string> errors);
  // A revision newer than the adopted one that the gateway has not applied
  // (refused, or seen during a reload), to try again after a reload.
  std::optional<Snapshot> pending() const;

  const Snapshot& snapshot() const { return adopted_; }
  const Store& store() const { return *store_; }
  // Why the plan is not the store's (empty: it is).
  std::string problem() const;
  nlohmann::json status() const;

  // How long a wait for a change lasts before it is asked again, and how
  // long after a failure the store is asked again.
  static constexpr std::chrono::milliseconds kWait{5000};
  static constexpr std::chrono::milliseconds kRetry{2000};
  // A wait without news shorter than this is followed by kRetry's pause.
  static constexpr std::chrono::milliseconds kQuick{100};

 private:
  void poll();
  void retryLater();
  // quick: the wait ended well before its timeout.
  void heard(StoreResult<Snapshot> r, bool quick);

  std::unique_ptr<Store> store_;
  Snapshot adopted_;
  std::optional<Snapshot> latest_;  // the newest revision seen, when newer than adopted_
  std::vector<std::string> refused_errors_;
  uint64_t refused_revision_ = 0;
  std::string store_error_;  // empty: the last call worked
  StoreError::Kind store_error_kind_ = StoreError::Kind::kUnreachable;
  std::string cached_;  // set: the plan is the cached copy and the store has not answered
  std::chrono::system_clock::time_point store_error_since_{};
  std::chrono::system_clock::time_point last_change_{};
  core::EventLoop* loop_ = nullptr;
  std::function<void(const Snapshot&)> on_change_;
  bool paused_ = false;
  bool deliver_on_resume_ = false;
  core::Source retry_;
  std::atomic<bool> stop_{false};
  std::unique_ptr<core::Worker> worker_;  // last: joined first
};

}  // namespace mcgw::plan
