// Timers on mcgwd's control loop under load: a 10 ms timer
// (mcgwd --measure-timer-ms 10) while the loop is idle, while a client
// hammers the API with requests, and while reloads run as well.  Prints the
// lateness figures (docs/performance.md, "Control loop timers"); asserts only
// that the measurement happened: tests never assert on speed.
#include <gtest/gtest.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <regex>
#include <thread>

#include "control/api/client.hpp"
#include "tests/support/daemon.hpp"

namespace mcgw::test {
namespace {

using namespace std::chrono_literals;

struct Figures {
  uint64_t expirations = 0, missed = 0, p50 = 0, p99 = 0, p999 = 0, max = 0;
};

class LoopTimerTest : public DaemonTest {
 protected:
  // Starts mcgwd with the probe, runs load for `how_long`, stops it and
  // returns what the probe logged.
  // fifo: the loop thread (mcgwd's main thread) at SCHED_FIFO 10, to tell
  // the loop's own delays from the scheduler's on a shared machine.
  Figures measure(const char* what, bool api, bool reloads, bool fifo = false,
                  std::chrono::seconds how_long = 4s) {
    writeFile(config_, nullConfig(socket_, prefix_));
    // (The fixture runs mcgwd at --log-level debug: a log line per request.)
    start({}, {"--measure-timer-ms", "10"});
    if (fifo) {
      sched_param sp{};
      sp.sched_priority = 10;
      if (::sched_setscheduler(daemon_->pid(), SCHED_FIFO, &sp) != 0) {
        std::printf("%-22s skipped: SCHED_FIFO refused (%s)\n", what, std::strerror(errno));
        daemon_->signal(SIGTERM);
        daemon_->wait(30s);
        return Figures{1, 0, 0, 0, 0, 0};
      }
    }
    std::atomic<bool> stop{false};
    std::atomic<uint64_t> requests{0}, reloaded{0}, reload_us{0}, reload_max_us{0};
    std::thread client, reloader;
    if (api) {
      client = std::thread([&] {
        while (!stop) {
          if (api::call(socket_, "status", {}, 5000).ok()) {
            ++requests;
          }
        }
      });
    }
    if (reloads) {
      reloader = std::thread([&] {
        while (!stop) {
          auto t0 = std::chrono::steady_clock::now();
          auto r = api::call(socket_, "reload", {}, 10000);
          auto us = std::chrono::duration_cast<std::chrono::microseconds>(
                        std::chrono::steady_clock::now() - t0)
                        .count();
          if (r.ok()) {
            ++reloaded;
            reload_us += static_cast<uint64_t>(us);
            reload_max_us = std::max<uint64_t>(reload_max_us, static_cast<uint64_t>(us));
          }
          std::this_thread::sleep_for(100ms);
        }
      });
    }
    std::this_thread::sleep_for(how_long);
    stop = true;
    if (client.joinable()) {
      client.join();
    }
    if (reloader.joinable()) {
      reloader.join();
    }
    daemon_->signal(SIGTERM);
    EXPECT_EQ(daemon_->wait(30s), 0) << log();
    Figures f;
    std::smatch m;
    const std::string text = log();
    static const std::regex line(
        R"(timer probe: every 10000 us, (\d+) expirations \((\d+) missed\), lateness us: p50 (\d+) p99 (\d+) p99\.9 (\d+) max (\d+))");
    EXPECT_TRUE(std::regex_search(text, m, line)) << text;
    if (!m.empty()) {
      f = {std::stoull(m[1]), std::stoull(m[2]), std::stoull(m[3]),
           std::stoull(m[4]), std::stoull(m[5]), std::stoull(m[6])};
    }
    static const std::regex longest_line(R"(longest handler run (\d+) us \(([^)]*)\))");
    std::smatch lm;
    const bool have_longest = std::regex_search(text, lm, longest_line);
    EXPECT_TRUE(have_longest) << text;
    std::printf(
        "%-22s %llu expirations (%llu missed); lateness us p50 %llu p99 %llu p99.9 %llu max %llu; "
        "%llu status requests, %llu reloads (mean %llu us, max %llu us as the client saw them)\n",
        what, static_cast<unsigned long long>(f.expirations),
        static_cast<unsigned long long>(f.missed), static_cast<unsigned long long>(f.p50),
        static_cast<unsigned long long>(f.p99), static_cast<unsigned long long>(f.p999),
        static_cast<unsigned long long>(f.max), static_cast<unsigned long long>(requests.load()),
        static_cast<unsigned long long>(reloaded.load()),
        static_cast<unsigned long long>(reloaded ? reload_us / reloaded : 0),
        static_cast<unsigned long long>(reload_max_us.load()));
    std::printf("%-22s longest handler on the loop: %s us (%s)\n", "",
                have_longest ? lm[1].str().c_str() : "?", have_longest ? lm[2].str().c_str() : "?");
    RecordProperty(std::string(what) + "_p99_us", std::to_string(f.p99));
    RecordProperty(std::string(what) + "_max_us", std::to_string(f.max));
    if (api) {
      EXPECT_GT(requests, 0u);
    }
    if (reloads) {
      EXPECT_GT(reloaded, 0u);
    }
    return f;
  }
};

TEST_F(LoopTimerTest, TenMillisecondTimerUnderLoad) {
  EXPECT_GT(measure("idle", false, false).expirations, 0u);
  EXPECT_GT(measure("api", true, false).expirations, 0u);
  EXPECT_GT(measure("api+reload", true, true).expirations, 0u);
  EXPECT_GT(measure("api+reload, FIFO loop", true, true, true).expirations, 0u);
}

// A reload runs off the loop: a SIGTERM that arrives while it runs waits for
// it (the gateway cannot stop under it), and the reload is announced whole
// (RELOADING=1, then READY=1) before STOPPING=1.
TEST_F(LoopTimerTest, StopDuringAReloadWaitsForIt) {
  for (int round = 0; round < 5; ++round) {
    writeFile(config_, nullConfig(socket_, prefix_));
    start();
    size_t seen = notify_->messages().size();
    std::thread reloader([&] { (void)api::call(socket_, "reload", {}, 10000); });
    int reloading = notify_->waitFor("RELOADING=1", 10s, seen);
    daemon_->signal(SIGTERM);
    reloader.join();
    EXPECT_EQ(daemon_->wait(30s), 0) << log();
    ASSERT_GE(reloading, 0) << log();
    int ready = notify_->waitFor("READY=1", 1s, static_cast<size_t>(reloading));
    int stopping = notify_->waitFor("STOPPING=1", 1s, static_cast<size_t>(reloading));
    ASSERT_GE(ready, 0) << log();
    EXPECT_GT(stopping, ready) << log();
    // Whether this round's SIGTERM came while the reload ran (timing decides).
    const std::string text = log();
    const size_t term = text.find(": stopping"), done = text.find("reload of ");
    std::printf("round %d: SIGTERM %s the reload finished\n", round,
                term < done ? "before" : "after");
  }
}

}  // namespace
}  // namespace mcgw::test
