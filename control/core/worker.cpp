#include "control/core/worker.hpp"

#include <spdlog/spdlog.h>

namespace mcgw::core {

Worker::Worker(EventLoop& loop, std::string name)
    : loop_(loop), name_(std::move(name)), thread_([this] { main(); }) {}

Worker::~Worker() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    queue_.clear();
  }
  cv_.notify_all();
  alive_.reset();  // done callbacks still queued on the loop will not run
  thread_.join();
}

void Worker::run(std::function<void()> work, std::function<void()> done) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.emplace_back(std::move(work), std::move(done));
  }
  cv_.notify_one();
}

bool Worker::waitIdle(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(mutex_);
  return idle_cv_.wait_until(lock, deadline, [this] { return !busy_ && queue_.empty(); });
}

void Worker::main() {
  std::weak_ptr<int> alive = alive_;
  while (true) {
    std::pair<std::function<void()>, std::function<void()>> job;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (stopping_) {
        return;
      }
      job = std::move(queue_.front());
      queue_.pop_front();
      busy_ = true;
    }
    try {
      job.first();
    } catch (const std::exception& e) {
      spdlog::error("{}: {}", name_, e.what());
    } catch (...) {
      spdlog::error("{}: an unknown exception", name_);
    }
    loop_.post([alive, done = std::move(job.second)] {
      if (alive.lock() && done) {
        done();
      }
    });
    {
      std::lock_guard<std::mutex> lock(mutex_);
      busy_ = false;
    }
    idle_cv_.notify_all();
  }
}

}  // namespace mcgw::core
