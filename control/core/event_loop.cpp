#include "control/core/event_loop.hpp"

#include <pthread.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-event.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <spdlog/spdlog.h>

namespace mcgw::core {

namespace {

// What a source runs, owned by the sd_event_source (freed by its destroy
// callback, so it lives exactly as long as the source, even when a handler
// releases its own Source while it runs).
struct Callback {
  std::string name;
  std::function<void()> fn;  // timers, defer
  std::function<void(uint32_t)> io;
  std::function<void(int)> signal;
  bool periodic = false;
  uint64_t deadline_us = 0;  // periodic: the deadline the timer is armed for
  TimerStats stats;
};

void destroyCallback(void* userdata) {
  delete static_cast<Callback*>(userdata);
}

uint64_t monotonicUs() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000u + static_cast<uint64_t>(ts.tv_nsec) / 1000u;
}

// The longest handler run of the loops of this thread (a loop belongs to
// one thread; tests run several loops in turn).
thread_local EventLoop::LongestRun longest;

// The loop boundary: nothing a handler throws ends the loop or the process,
// and the source stays armed (a negative return would make sd-event turn it
// off).  Each run is timed: two clock reads (vDSO, no syscall).
template <typename F>
void guarded(const std::string& name, F&& f) {
  const uint64_t start = monotonicUs();
  try {
    f();
  } catch (const std::exception& e) {
    spdlog::error("event loop: {}: handler failed: {}", name, e.what());
  } catch (...) {
    spdlog::error("event loop: {}: handler failed with an unknown exception", name);
  }
  const auto took = std::chrono::microseconds(monotonicUs() - start);
  if (took > longest.took) {
    longest = {name, took};
  }
}

int onIoEvent(sd_event_source*, int, uint32_t revents, void* userdata) {
  auto* c = static_cast<Callback*>(userdata);
  guarded(c->name, [&] { c->io(revents); });
  return 0;
}

int onTimeEvent(sd_event_source* s, uint64_t deadline, void* userdata) {
  auto* c = static_cast<Callback*>(userdata);
  if (c->periodic) {
    const uint64_t now = monotonicUs();
    const uint64_t late = now > deadline ? now - deadline : 0;
    const uint64_t period = static_cast<uint64_t>(c->stats.period.count());
    const uint64_t missed = late / period;
    c->stats.expirations += 1 + missed;
    c->stats.missed += missed;
    c->stats.last_lateness = std::chrono::microseconds(late);
    c->stats.max_lateness = std::max(c->stats.max_lateness, c->stats.last_lateness);
    // From the deadline, not from now: no drift.  Armed before the handler
    // runs, so that the handler may release the source.
    c->deadline_us = deadline + (1 + missed) * period;
    if (int r = sd_event_source_set_time(s, c->deadline_us); r < 0) {
      spdlog::error("event loop: {}: cannot re-arm the timer: {}", c->name, std::strerror(-r));
    }
    sd_event_source_set_enabled(s, SD_EVENT_ON);
  }
  guarded(c->name, [&] { c->fn(); });
  return 0;
}

int onSignalEvent(sd_event_source*, const signalfd_siginfo* si, void* userdata) {
  auto* c = static_cast<Callback*>(userdata);
  guarded(c->name, [&] { c->signal(static_cast<int>(si->ssi_signo)); });
  return 0;
}

int onDeferEvent(sd_event_source*, void* userdata) {
  auto* c = static_cast<Callback*>(userdata);
  guarded(c->name, [&] { c->fn(); });
  return 0;
}

// Gives the new source its name, priority and callback's owner; on failure
// frees the callback and logs.
sd_event_source* adopt(int r, sd_event_source* s, Callback* c, Priority priority) {
  if (r < 0) {
    spdlog::error("event loop: cannot add {}: {}", c->name, std::strerror(-r));
    delete c;
    return nullptr;
  }
  sd_event_source_set_description(s, c->name.c_str());
  sd_event_source_set_priority(s, static_cast<int64_t>(priority));
  sd_event_source_set_destroy_callback(s, destroyCallback);
  return s;
}

}  // namespace

// ---- Source

Source& Source::operator=(Source&& other) noexcept {
  if (this != &other) {
    reset();
    src_ = other.src_;
    other.src_ = nullptr;
  }
  return *this;
}

void Source::reset() {
  if (src_) {
    src_ = sd_event_source_disable_unref(src_);
  }
}

void Source::setEnabled(bool on) {
  if (src_) {
    sd_event_source_set_enabled(src_, on ? SD_EVENT_ON : SD_EVENT_OFF);
  }
}

bool Source::enabled() const {
  return src_ && sd_event_source_get_enabled(src_, nullptr) > 0;
}

void Source::setIoEvents(uint32_t events) {
  if (src_) {
    if (int r = sd_event_source_set_io_events(src_, events); r < 0) {
      spdlog::error("event loop: {}: cannot change the events: {}", name(), std::strerror(-r));
    }
  }
}

TimerStats Source::timerStats() const {
  if (!src_) {
    return {};
  }
  auto* c = static_cast<Callback*>(sd_event_source_get_userdata(src_));
  return c && c->periodic ? c->stats : TimerStats{};
}

std::string Source::name() const {
  const char* d = nullptr;
  if (src_ && sd_event_source_get_description(src_, &d) >= 0 && d) {
    return d;
  }
  return {};
}

// ---- EventLoop

Result<std::unique_ptr<EventLoop>, std::string> EventLoop::create() {
  std::unique_ptr<EventLoop> loop(new EventLoop());
  loop->owner_ = std::this_thread::get_id();
  loop->have_cpus_ = ::sched_getaffinity(0, sizeof loop->cpus_, &loop->cpus_) == 0;
  if (int r = sd_event_new(&loop->event_); r < 0) {
    return unexpected(std::string("sd_event_new: ") + std::strerror(-r));
  }
  loop->posted_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (loop->posted_fd_ < 0) {
    return unexpected(std::string("eventfd: ") + std::strerror(errno));
  }
  EventLoop* self = loop.get();
  loop->posted_io_ = loop->onReadable(
      loop->posted_fd_, "posted from other threads",
      [self] {
        uint64_t n = 0;
        while (::read(self->posted_fd_, &n, sizeof n) == sizeof n) {
        }
        self->drainPosted();
      },
      Priority::kTime);
  loop->posted_defer_ = loop->defer("posted", [self] { self->drainPosted(); });
  if (!loop->posted_io_ || !loop->posted_defer_) {
    return unexpected(std::string("event loop: cannot add its own sources"));
  }
  loop->posted_defer_.setEnabled(false);
  return loop;
}

EventLoop::~EventLoop() {
  {
    std::lock_guard lock(work_mutex_);
    stopping_ = true;
  }
  work_cv_.notify_all();
  if (worker_.joinable()) {
    worker_.join();  // the work under way finishes; what waits is dropped
  }
  posted_io_.reset();
  posted_defer_.reset();
  if (posted_fd_ >= 0) {
    ::close(posted_fd_);
  }
  if (event_) {
    sd_event_unref(event_);
  }
}

Source EventLoop::onIo(int fd, uint32_t events, std::string name,
                       std::function<void(uint32_t)> handler, Priority priority) {
  auto* c = new Callback{std::move(name), {}, std::move(handler), {}, false, 0, {}};
  sd_event_source* s = nullptr;
  int r = sd_event_add_io(event_, &s, fd, events, onIoEvent, c);
  return Source(adopt(r, s, c, priority));
}

Source EventLoop::onReadable(int fd, std::string name, std::function<void()> handler,
                             Priority priority) {
  return onIo(
      fd, EPOLLIN, std::move(name), [h = std::move(handler)](uint32_t) { h(); }, priority);
}

Source EventLoop::every(std::chrono::microseconds period, std::string name,
                        std::function<void()> handler, Priority priority) {
  if (period.count() <= 0) {
    spdlog::error("event loop: {}: a period must be positive", name);
    return {};
  }
  auto* c = new Callback{std::move(name), std::move(handler), {}, {}, true, 0, {}};
  c->stats.period = period;
  c->deadline_us = monotonicUs() + static_cast<uint64_t>(period.count());
  sd_event_source* s = nullptr;
  // Accuracy 1 us: sd-event would otherwise move the wake-up by up to 250 ms
  // to coalesce it with others.
  int r = sd_event_add_time(event_, &s, CLOCK_MONOTONIC, c->deadline_us, 1, onTimeEvent, c);
  Source out(adopt(r, s, c, priority));
  if (out) {
    sd_event_source_set_enabled(out.src_, SD_EVENT_ON);
  }
  return out;
}

Source EventLoop::after(std::chrono::microseconds delay, std::string name,
                        std::function<void()> handler, Priority priority) {
  auto* c = new Callback{std::move(name), std::move(handler), {}, {}, false, 0, {}};
  sd_event_source* s = nullptr;
  const uint64_t at = monotonicUs() + static_cast<uint64_t>(std::max<int64_t>(delay.count(), 0));
  int r = sd_event_add_time(event_, &s, CLOCK_MONOTONIC, at, 1, onTimeEvent, c);
  return Source(adopt(r, s, c, priority));
}

Source EventLoop::onSignal(int signo, std::string name, std::function<void(int)> handler) {
  auto* c = new Callback{std::move(name), {}, {}, std::move(handler), false, 0, {}};
  sd_event_source* s = nullptr;
  // -EBUSY: the signal is not blocked (see the header).
  int r = sd_event_add_signal(event_, &s, signo, onSignalEvent, c);
  return Source(adopt(r, s, c, Priority::kTime));
}

Source EventLoop::defer(std::string name, std::function<void()> fn) {
  auto* c = new Callback{std::move(name), std::move(fn), {}, {}, false, 0, {}};
  sd_event_source* s = nullptr;
  int r = sd_event_add_defer(event_, &s, onDeferEvent, c);
  return Source(adopt(r, s, c, Priority::kNormal));
}

void EventLoop::post(std::function<void()> fn) {
  {
    std::lock_guard lock(posted_mutex_);
    posted_.push_back(std::move(fn));
  }
  if (std::this_thread::get_id() == owner_) {
    sd_event_source_set_enabled(posted_defer_.src_, SD_EVENT_ONESHOT);
  } else {
    const uint64_t one = 1;
    // Only fails when the counter is about to overflow: it is readable then.
    (void)!::write(posted_fd_, &one, sizeof one);
  }
}

void EventLoop::drainPosted() {
  std::deque<std::function<void()>> now;
  {
    std::lock_guard lock(posted_mutex_);
    now.swap(posted_);
  }
  // What these post in turn runs on the next iteration.
  for (auto& fn : now) {
    guarded("posted", fn);
  }
}

void EventLoop::runOffLoop(std::function<void()> work,
                           std::function<void(std::exception_ptr)> done) {
  std::lock_guard lock(work_mutex_);
  if (!worker_.joinable()) {
    worker_ = std::thread([this] {
      if (have_cpus_) {
        ::pthread_setaffinity_np(::pthread_self(), sizeof cpus_, &cpus_);
      }
      backgroundMain();
    });
  }
  work_.push_back([this, work = std::move(work), done = std::move(done)]() mutable {
    std::exception_ptr error;
    try {
      work();
    } catch (...) {
      error = std::current_exception();
    }
    post([done = std::move(done), error] { done(error); });
  });
  work_cv_.notify_one();
}

void EventLoop::backgroundMain() {
  std::unique_lock lock(work_mutex_);
  while (true) {
    work_cv_.wait(lock, [this] { return stopping_ || !work_.empty(); });
    if (stopping_) {
      return;
    }
    auto job = std::move(work_.front());
    work_.pop_front();
    busy_ = true;
    lock.unlock();
    job();
    lock.lock();
    busy_ = false;
    idle_cv_.notify_all();
  }
}

void EventLoop::finishOffLoop() {
  std::unique_lock lock(work_mutex_);
  idle_cv_.wait(lock, [this] { return stopping_ || (work_.empty() && !busy_); });
}

bool EventLoop::enableWatchdog() {
  int r = sd_event_set_watchdog(event_, 1);
  if (r < 0) {
    spdlog::error("event loop: systemd watchdog: {}", std::strerror(-r));
  }
  return r > 0;
}

std::chrono::microseconds EventLoop::watchdogPeriod() const {
  uint64_t usec = 0;
  return sd_watchdog_enabled(0, &usec) > 0 ? std::chrono::microseconds(usec)
                                           : std::chrono::microseconds(0);
}

EventLoop::LongestRun EventLoop::longestRun() {
  return longest;
}

int EventLoop::run() {
  return sd_event_loop(event_);
}

bool EventLoop::runOnce(std::chrono::microseconds timeout) {
  if (sd_event_get_state(event_) == SD_EVENT_FINISHED) {
    return false;
  }
  int r = sd_event_run(event_, static_cast<uint64_t>(std::max<int64_t>(timeout.count(), 0)));
  return r >= 0 && sd_event_get_state(event_) != SD_EVENT_FINISHED;
}

void EventLoop::exit(int code) {
  sd_event_exit(event_, code);
}

std::chrono::steady_clock::time_point EventLoop::now() const {
  uint64_t usec = 0;
  if (sd_event_now(event_, CLOCK_MONOTONIC, &usec) < 0) {
    usec = monotonicUs();
  }
  return std::chrono::steady_clock::time_point(std::chrono::microseconds(usec));
}

}  // namespace mcgw::core
