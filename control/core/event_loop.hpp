// The control thread's one event loop: a thin owner of an sd_event (systemd's
// event loop, libsystemd) with RAII sources.  Everything the control plane
// waits for (signals, the API socket and its clients, netlink, path MTU
// sockets, periodic ticks, the systemd watchdog) registers here, and the loop
// dispatches one ready source per iteration, higher priorities first, so a
// timer never waits behind more than one slow handler.
//
// Threads: the loop, and every Source, belong to the thread that created the
// EventLoop.  The only calls allowed from other threads are post() and what
// runOffLoop()'s work does on its worker thread.
//
// Handlers never end the process: an exception escaping one is caught at the
// loop boundary, logged with the source's name, and the source stays armed.
#pragma once

#include <sched.h>
#include <signal.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "config/result.hpp"

struct sd_event;
struct sd_event_source;

namespace mcgw::core {

// Who goes first when several sources are ready in the same iteration.
enum class Priority : int64_t {
  kTime = -100,  // signals, periodic timers: keep their time
  kNormal = 0,   // I/O
  kBackground = 100,
};

// A timer's record, to show and measure jitter.  Lateness is how long after
// its deadline a timer's handler started (now - deadline).
struct TimerStats {
  std::chrono::microseconds period{0};
  uint64_t expirations = 0;  // deadlines passed, missed ones included
  uint64_t missed = 0;       // deadlines passed while an earlier one waited
  std::chrono::microseconds last_lateness{0};
  std::chrono::microseconds max_lateness{0};
};

class EventLoop;

// One registration on the loop.  Movable; destroying (or reset()) disables
// and releases it, so a handler never runs after its Source is gone.  A
// handler may destroy its own Source.
class Source {
 public:
  Source() = default;
  Source(Source&& other) noexcept : src_(other.src_) { other.src_ = nullptr; }
  Source& operator=(Source&& other) noexcept;
  Source(const Source&) = delete;
  Source& operator=(const Source&) = delete;
  ~Source() { reset(); }

  void reset();
  explicit operator bool() const { return src_ != nullptr; }
  // Off: the source stays registered but is not dispatched.
  void setEnabled(bool on);
  bool enabled() const;
  // I/O sources: the epoll events to wait for (EPOLLIN, EPOLLOUT, ...).
  void setIoEvents(uint32_t events);
  // Periodic timers (EventLoop::every) only; zeros otherwise.
  TimerStats timerStats() const;
  std::string name() const;

 private:
  friend class EventLoop;
  explicit Source(sd_event_source* s) : src_(s) {}
  sd_event_source* src_ = nullptr;
};

class EventLoop {
 public:
  // A new loop owned by the calling thread.
  static Result<std::unique_ptr<EventLoop>, std::string> create();
  ~EventLoop();
  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;

  // fd ready for `events` (EPOLLIN, EPOLLOUT, ...); the handler gets what is
  // ready (EPOLLHUP and EPOLLERR are always reported).  fd stays the
  // caller's: it must outlive the Source (close it after reset()), or epoll
  // could lose track of a new descriptor given the same number.
  Source onIo(int fd, uint32_t events, std::string name, std::function<void(uint32_t)> handler,
              Priority priority = Priority::kNormal);
  Source onReadable(int fd, std::string name, std::function<void()> handler,
                    Priority priority = Priority::kNormal);

  // Every `period` on CLOCK_MONOTONIC, with an accuracy of 1 us (no
  // coalescing).  The next deadline follows from the previous deadline, not
  // from when the handler ran, so the timer does not drift; when the loop was
  // held up past several deadlines the handler runs once and the deadlines
  // it missed are counted (TimerStats::missed).  The first run is one period
  // from now.
  Source every(std::chrono::microseconds period, std::string name, std::function<void()> handler,
               Priority priority = Priority::kTime);
  // Once, `delay` from now.
  Source after(std::chrono::microseconds delay, std::string name, std::function<void()> handler,
               Priority priority = Priority::kNormal);

  // signo delivered to the process.  sd-event takes signals through a
  // signalfd, so signo must be blocked in every thread first
  // (pthread_sigmask/sigprocmask before any thread starts, so that threads
  // inherit the mask); an unblocked signal is refused (an empty Source and
  // an error logged).
  Source onSignal(int signo, std::string name, std::function<void(int signo)> handler);

  // Runs fn once, on a later iteration; the Source cancels it.
  Source defer(std::string name, std::function<void()> fn);
  // Runs fn on the loop thread on a later iteration, in the order posted.
  // The one call that any thread may make (a mutex and an eventfd).
  void post(std::function<void()> fn);

  // Runs work on the loop's background thread (one, created on first use;
  // works run one at a time, in order) and then done on the loop thread, with
  // the exception work threw or nullptr.  The thread may run on the CPUs the
  // process had when the loop was created (before the EAL pins the main
  // thread to its lcore), so that long work does not take the loop's core.  For long work (big
  // table builds, slow parts of a reload) so timers keep their time: work must not touch what the
  // loop's handlers touch.
  void runOffLoop(std::function<void()> work, std::function<void(std::exception_ptr)> done);
  // Waits until the background thread has no work left (their done
  // callbacks are posted, not run).  For a stop that cannot wait for done.
  void finishOffLoop();

  // sd-event sends WATCHDOG=1 itself, at about half of WATCHDOG_USEC, on the
  // loop's iterations.  False when systemd asked for no watchdog.
  bool enableWatchdog();
  // The watchdog period systemd asked for (0: none).
  std::chrono::microseconds watchdogPeriod() const;

  // Dispatches until exit(); returns exit's code, or a negative errno when
  // the loop itself failed.
  int run();
  // One iteration: waits up to timeout, dispatches at most one source.
  // Returns false once exit() was called (or on failure).  For tests.
  bool runOnce(std::chrono::microseconds timeout);
  void exit(int code);
  // CLOCK_MONOTONIC when the current iteration woke up.
  std::chrono::steady_clock::time_point now() const;

  // The longest any handler ran on this loop, and its source's name: what
  // the loop itself can add to a timer's lateness (the rest is scheduling).
  struct LongestRun {
    std::string name;
    std::chrono::microseconds took{0};
  };
  static LongestRun longestRun();

  sd_event* raw() const { return event_; }

 private:
  EventLoop() = default;
  void drainPosted();
  void backgroundMain();

  sd_event* event_ = nullptr;
  std::thread::id owner_;
  cpu_set_t cpus_{};  // the creating thread's CPUs, for the background thread
  bool have_cpus_ = false;
  // post(): a queue any thread fills, drained by a defer source (posts from
  // the loop thread) or an eventfd source (posts from other threads).
  std::mutex posted_mutex_;
  std::deque<std::function<void()>> posted_;
  int posted_fd_ = -1;
  Source posted_io_;
  Source posted_defer_;
  // runOffLoop's worker.
  std::mutex work_mutex_;
  std::condition_variable work_cv_;
  std::deque<std::function<void()>> work_;
  std::condition_variable idle_cv_;
  bool busy_ = false;
  bool stopping_ = false;
  std::thread worker_;
};

}  // namespace mcgw::core
