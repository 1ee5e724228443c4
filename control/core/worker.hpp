// A background thread of its own for slow blocking work (external
// programs: vtysh, frr-reload.py, nft), so that it never queues in front of
// the loop's runOffLoop work (a reload) and a reload never waits behind it.
// Work runs in order; each done callback is posted to the loop and runs
// there, unless the Worker is gone by then.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "control/core/event_loop.hpp"

namespace mcgw::core {

class Worker {
 public:
  Worker(EventLoop& loop, std::string name);
  // Waits for the work that runs now (not for the queued work, dropped).
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // work on the worker's thread (it must not touch what the loop's handlers
  // touch), then done on the loop's thread.  Exceptions of work are caught
  // and logged; done still runs.
  void run(std::function<void()> work, std::function<void()> done);
  // Waits until nothing runs and nothing is queued, but not past `deadline`
  // (for a stop, after the loop ended: the done callbacks of what ran then
  // are not run).  True when idle.
  bool waitIdle(std::chrono::steady_clock::time_point deadline);

 private:
  void main();
  EventLoop& loop_;
  std::string name_;
  std::shared_ptr<int> alive_ = std::make_shared<int>(0);
  std::mutex mutex_;
  std::condition_variable cv_;
  std::condition_variable idle_cv_;
  bool busy_ = false;  // a job's work runs
  std::deque<std::pair<std::function<void()>, std::function<void()>>> queue_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace mcgw::core
