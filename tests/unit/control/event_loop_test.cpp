// The control thread's event loop (control/core/event_loop.hpp): I/O, posts
// and defers, signals, the exit code, handlers that throw, Source lifetime,
// work off the loop, and periodic timers that do not drift.  No assertion on
// lateness: the machine is shared (tests/component/loop_timer_test.cpp
// measures it).
#include "control/core/event_loop.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

namespace mcgw::core {
namespace {

using namespace std::chrono_literals;

std::unique_ptr<EventLoop> makeLoop() {
  auto loop = EventLoop::create();
  EXPECT_TRUE(loop.ok()) << loop.error();
  return std::move(*loop);
}

// Iterates until done() or the deadline.
void runUntil(EventLoop& loop, const std::function<bool()>& done,
              std::chrono::seconds limit = 10s) {
  auto until = std::chrono::steady_clock::now() + limit;
  while (!done() && std::chrono::steady_clock::now() < until) {
    loop.runOnce(20ms);
  }
}

struct Pipe {
  Pipe() { EXPECT_EQ(::pipe2(fds, O_NONBLOCK | O_CLOEXEC), 0); }
  ~Pipe() {
    ::close(fds[0]);
    ::close(fds[1]);
  }
  int fds[2] = {-1, -1};
};

TEST(EventLoop, ReadableFdRunsItsHandler) {
  auto loop = makeLoop();
  Pipe p;
  std::string got;
  Source s = loop->onReadable(p.fds[0], "pipe", [&] {
    char buf[16];
    ssize_t n = ::read(p.fds[0], buf, sizeof buf);
    got.append(buf, static_cast<size_t>(std::max<ssize_t>(n, 0)));
  });
  ASSERT_TRUE(s);
  EXPECT_EQ(s.name(), "pipe");
  loop->runOnce(0us);
  EXPECT_EQ(got, "") << "nothing written yet";
  ASSERT_EQ(::write(p.fds[1], "ab", 2), 2);
  runUntil(*loop, [&] { return !got.empty(); });
  EXPECT_EQ(got, "ab");
}

TEST(EventLoop, PostsRunLaterAndInOrder) {
  auto loop = makeLoop();
  std::vector<int> order;
  loop->post([&] {
    order.push_back(1);
    loop->post([&] { order.push_back(4); });  // after the ones already posted
  });
  loop->post([&] { order.push_back(2); });
  loop->post([&] { order.push_back(3); });
  EXPECT_TRUE(order.empty()) << "post never runs the function at once";
  runUntil(*loop, [&] { return order.size() == 4; });
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3, 4}));
}

TEST(EventLoop, PostFromAnotherThreadRunsOnTheLoopThread) {
  auto loop = makeLoop();
  std::thread::id ran_on;
  std::thread other([&] { loop->post([&] { ran_on = std::this_thread::get_id(); }); });
  other.join();
  runUntil(*loop, [&] { return ran_on != std::thread::id(); });
  EXPECT_EQ(ran_on, std::this_thread::get_id());
}

TEST(EventLoop, DeferRunsOnceAndItsSourceCancelsIt) {
  auto loop = makeLoop();
  int ran = 0, cancelled = 0;
  Source once = loop->defer("once", [&] { ++ran; });
  Source never = loop->defer("never", [&] { ++cancelled; });
  never.reset();
  EXPECT_EQ(ran, 0);
  for (int i = 0; i < 5; ++i) {
    loop->runOnce(1ms);
  }
  EXPECT_EQ(ran, 1);
  EXPECT_EQ(cancelled, 0);
}

TEST(EventLoop, BlockedSignalReachesItsHandler) {
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGUSR1);
  ASSERT_EQ(::pthread_sigmask(SIG_BLOCK, &mask, nullptr), 0);
  auto loop = makeLoop();
  int got = 0;
  Source s = loop->onSignal(SIGUSR1, "SIGUSR1", [&](int signo) { got = signo; });
  ASSERT_TRUE(s);
  ASSERT_EQ(::kill(::getpid(), SIGUSR1), 0);
  runUntil(*loop, [&] { return got != 0; });
  EXPECT_EQ(got, SIGUSR1);
  s.reset();
  ::pthread_sigmask(SIG_UNBLOCK, &mask, nullptr);
}

TEST(EventLoop, UnblockedSignalIsRefused) {
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGUSR2);
  ASSERT_EQ(::pthread_sigmask(SIG_UNBLOCK, &mask, nullptr), 0);
  auto loop = makeLoop();
  Source s = loop->onSignal(SIGUSR2, "SIGUSR2", [](int) {});
  EXPECT_FALSE(s);
}

TEST(EventLoop, RunReturnsTheExitCode) {
  auto loop = makeLoop();
  loop->post([&] { loop->exit(7); });
  EXPECT_EQ(loop->run(), 7);
  EXPECT_FALSE(loop->runOnce(0us)) << "finished";
}

TEST(EventLoop, ThrowingHandlersDoNotEndTheLoop) {
  auto loop = makeLoop();
  int ticks = 0;
  Source t = loop->every(2ms, "thrower", [&] {
    if (++ticks == 3) {
      loop->exit(0);
    }
    throw std::runtime_error("boom");
  });
  loop->post([] { throw 42; });  // not even a std::exception
  EXPECT_EQ(loop->run(), 0);
  EXPECT_EQ(ticks, 3) << "the source stayed armed after each throw";
}

TEST(EventLoop, DestroyedSourceNoLongerRuns) {
  auto loop = makeLoop();
  Pipe p;
  ASSERT_EQ(::write(p.fds[1], "x", 1), 1);  // readable from the start
  int ran = 0;
  Source s = loop->onReadable(p.fds[0], "pipe", [&] { ++ran; });
  Source moved = std::move(s);
  EXPECT_FALSE(s);
  moved.reset();
  for (int i = 0; i < 5; ++i) {
    loop->runOnce(1ms);
  }
  EXPECT_EQ(ran, 0);
}

TEST(EventLoop, HandlerMayReleaseItsOwnSource) {
  auto loop = makeLoop();
  Pipe p;
  ASSERT_EQ(::write(p.fds[1], "x", 1), 1);  // stays readable: level-triggered
  int ran = 0;
  Source s;
  s = loop->onReadable(p.fds[0], "pipe", [&] {
    ++ran;
    s.reset();
  });
  for (int i = 0; i < 5; ++i) {
    loop->runOnce(1ms);
  }
  EXPECT_EQ(ran, 1);
}

TEST(EventLoop, DisabledSourceWaits) {
  auto loop = makeLoop();
  Pipe p;
  ASSERT_EQ(::write(p.fds[1], "x", 1), 1);
  int ran = 0;
  Source s = loop->onReadable(p.fds[0], "pipe", [&] { ++ran; });
  s.setEnabled(false);
  EXPECT_FALSE(s.enabled());
  loop->runOnce(1ms);
  EXPECT_EQ(ran, 0);
  s.setEnabled(true);
  loop->runOnce(1ms);
  EXPECT_EQ(ran, 1);
}

TEST(EventLoop, RunOffLoopRunsWorkElsewhereAndDoneOnTheLoopThread) {
  auto loop = makeLoop();
  std::thread::id work_on, done_on;
  bool done = false;
  loop->runOffLoop([&] { work_on = std::this_thread::get_id(); },
                   [&](std::exception_ptr error) {
                     EXPECT_FALSE(error);
                     done_on = std::this_thread::get_id();
                     done = true;
                   });
  runUntil(*loop, [&] { return done; });
  ASSERT_TRUE(done);
  EXPECT_NE(work_on, std::this_thread::get_id());
  EXPECT_NE(work_on, std::thread::id());
  EXPECT_EQ(done_on, std::this_thread::get_id());

  std::string why;
  loop->runOffLoop([] { throw std::runtime_error("no table"); },
                   [&](std::exception_ptr error) {
                     try {
                       std::rethrow_exception(error);
                     } catch (const std::exception& e) {
                       why = e.what();
                     }
                   });
  runUntil(*loop, [&] { return !why.empty(); });
  EXPECT_EQ(why, "no table");
}

TEST(EventLoop, FinishOffLoopWaitsForTheWork) {
  auto loop = makeLoop();
  std::atomic<bool> finished{false};
  loop->runOffLoop(
      [&] {
        std::this_thread::sleep_for(100ms);
        finished = true;
      },
      [](std::exception_ptr) {});
  loop->finishOffLoop();
  EXPECT_TRUE(finished);
}

TEST(EventLoop, TimersKeepRunningWhileWorkRunsOffTheLoop) {
  auto loop = makeLoop();
  int ticks_during_work = 0;
  std::atomic<bool> working{false};
  bool done = false;
  Source t = loop->every(5ms, "tick", [&] { ticks_during_work += working ? 1 : 0; });
  loop->runOffLoop(
      [&] {
        working = true;
        std::this_thread::sleep_for(300ms);
        working = false;
      },
      [&](std::exception_ptr) { done = true; });
  runUntil(*loop, [&] { return done; });
  EXPECT_GT(ticks_during_work, 0);
}

TEST(EventLoop, PeriodicTimerDoesNotDrift) {
  auto loop = makeLoop();
  const auto start = std::chrono::steady_clock::now();
  uint64_t handled = 0;
  Source t = loop->every(10ms, "10 ms", [&] { ++handled; });
  std::chrono::steady_clock::time_point end;
  Source stop = loop->after(2s, "stop", [&] {
    end = std::chrono::steady_clock::now();
    loop->exit(0);
  });
  EXPECT_EQ(loop->run(), 0);
  const TimerStats st = t.timerStats();
  // Deadlines at start + k * 10 ms: as many as fit in the time that passed,
  // however late each handler ran.
  const auto expected = (end - start) / 10ms;
  EXPECT_GE(static_cast<int64_t>(st.expirations), expected - 1);
  EXPECT_LE(static_cast<int64_t>(st.expirations), expected + 1);
  EXPECT_EQ(st.expirations, handled + st.missed);
  EXPECT_EQ(st.period, 10ms);
  EXPECT_GE(st.max_lateness, st.last_lateness);
  std::printf("10 ms timer over %.3f s: %llu expirations, %llu missed, max lateness %lld us\n",
              std::chrono::duration<double>(end - start).count(),
              static_cast<unsigned long long>(st.expirations),
              static_cast<unsigned long long>(st.missed),
              static_cast<long long>(st.max_lateness.count()));
}

TEST(EventLoop, MissedDeadlinesAreCountedAndRunOnce) {
  auto loop = makeLoop();
  int handled = 0;
  Source t = loop->every(10ms, "10 ms", [&] {
    if (++handled == 1) {
      std::this_thread::sleep_for(55ms);  // holds the loop past 5 deadlines
    }
  });
  runUntil(*loop, [&] { return handled == 2; });
  const TimerStats st = t.timerStats();
  EXPECT_EQ(handled, 2);
  EXPECT_GE(st.missed, 4u);
  EXPECT_GE(st.last_lateness, 40ms);
  EXPECT_EQ(st.expirations, 2 + st.missed);
}

TEST(EventLoop, OnlyPeriodicTimersHaveStats) {
  auto loop = makeLoop();
  Source once = loop->after(1s, "once", [] {});
  EXPECT_EQ(once.timerStats().expirations, 0u);
  EXPECT_EQ(once.timerStats().period, 0us);
  EXPECT_EQ(Source().timerStats().expirations, 0u);
}

}  // namespace
}  // namespace mcgw::core
