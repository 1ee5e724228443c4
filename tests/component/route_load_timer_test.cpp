// A 10 ms timer on the control loop while a 1,000,000-route FIB is built off
// the loop (EventLoop::runOffLoop), as mcgwd builds big tables: the timer must
// keep running through the load.  Prints the timer's lateness and the
// intervals' jitter (docs/performance.md, "Control loop timers"); asserts
// that the timer ran all through the load and that the FIB holds the routes,
// never on speed (the machine is shared).
#include <gtest/gtest.h>
#include <rte_eal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "control/core/event_loop.hpp"
#include "dataplane/engine/fib.hpp"
#include "tests/support/eal.hpp"

namespace mcgw {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// The FIB's two large copies of 1M routes take about 1.2 GiB.
const auto* const kEal =
    ::testing::AddGlobalTestEnvironment(new test::EalEnvironment("route_load_timer_test", 3072));

// 1,000,000 distinct IPv4 prefixes of an Internet-like mix, one per /24
// block from 11.0.0.0 upwards: mostly the /24 itself, some longer (/25-/32
// inside it) and some shorter (/16-/23, only where the block starts a block
// of that size, so no two are equal).  Next hop = the route's index.
struct MillionRoutes {
  std::vector<engine::TenantFib::Route> routes;
  uint32_t a24 = 0;  // the index of one /24 route
};

MillionRoutes millionRoutes() {
  MillionRoutes out;
  out.routes.reserve(1'000'000);
  std::mt19937 rng(12);
  for (uint32_t i = 0; i < 1'000'000; ++i) {
    const uint32_t block = 0x0b000000u + (i << 8);
    const uint32_t r = rng() % 100;
    uint8_t len = 24;
    uint32_t a = block;
    if (r >= 70 && r < 85) {
      const unsigned room = i == 0 ? 8 : std::min(8, __builtin_ctz(i));
      if (room > 0) {
        len = static_cast<uint8_t>(24 - (1 + rng() % room));
      }
    } else if (r >= 85) {
      len = static_cast<uint8_t>(25 + rng() % 8);
      a |= (rng() & 0xffu) & ~((1u << (32 - len)) - 1);
    }
    if (len == 24 && out.a24 == 0 && i > 1000) {
      out.a24 = i;
    }
    engine::TenantFib::Route route;
    route.prefix.address.family = config::Family::V4;
    route.prefix.address.bytes = {static_cast<uint8_t>(a >> 24), static_cast<uint8_t>(a >> 16),
                                  static_cast<uint8_t>(a >> 8), static_cast<uint8_t>(a)};
    route.prefix.length = len;
    route.next_hop = i;
    out.routes.push_back(route);
  }
  return out;
}

uint64_t percentile(std::vector<uint64_t> v, double p) {
  if (v.empty()) {
    return 0;
  }
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

TEST(RouteLoadTimer, TenMillisecondTimerKeepsRunningDuringAMillionRouteLoad) {
  auto loop = core::EventLoop::create();
  ASSERT_TRUE(loop.ok()) << loop.error();
  core::EventLoop& l = **loop;

  const MillionRoutes million = millionRoutes();
  std::vector<Clock::time_point> ticks;
  ticks.reserve(10'000);
  bool loading = false;
  uint64_t ticks_while_loading = 0;
  core::Source timer = l.every(10ms, "10 ms probe", [&] {
    ticks.push_back(Clock::now());
    ticks_while_loading += loading ? 1 : 0;
  });
  ASSERT_TRUE(timer);

  std::unique_ptr<engine::TenantFib> fib;
  std::string error;
  Clock::time_point load_start, load_end;
  // Let the timer settle, then load off the loop.
  core::Source start = l.after(200ms, "start the load", [&] {
    loading = true;
    load_start = Clock::now();
    l.runOffLoop(
        [&] {
          auto built = engine::TenantFib::create("million", million.routes);
          if (built) {
            fib = std::move(*built);
          } else {
            error = built.error();
          }
        },
        [&](std::exception_ptr e) {
          loading = false;
          load_end = Clock::now();
          if (e) {
            error = "the load threw";
          }
          l.exit(0);
        });
  });
  ASSERT_EQ(l.run(), 0);
  ASSERT_TRUE(error.empty()) << error;
  ASSERT_TRUE(fib);
  EXPECT_EQ(fib->routes(), 1'000'000u);
  // An address in a /24 route's block is answered by that route (nothing
  // longer lives in its block).
  const uint32_t block = 0x0b000000u + (million.a24 << 8) + 77;
  const uint8_t dst[4] = {static_cast<uint8_t>(block >> 24), static_cast<uint8_t>(block >> 16),
                          static_cast<uint8_t>(block >> 8), static_cast<uint8_t>(block)};
  ASSERT_NE(million.a24, 0u);
  EXPECT_EQ(fib->lookup4(dst), std::optional<uint32_t>(million.a24));

  const double load_s = std::chrono::duration<double>(load_end - load_start).count();
  const uint64_t expected = static_cast<uint64_t>(load_s * 100);
  // The timer ran through the load: at least half of its deadlines saw a
  // run (a loop blocked by the load would run it once at the end).
  EXPECT_GE(ticks_while_loading, expected / 2) << "load took " << load_s << " s";

  std::vector<uint64_t> jitter_us;
  for (size_t i = 1; i < ticks.size(); ++i) {
    const auto us =
        std::chrono::duration_cast<std::chrono::microseconds>(ticks[i] - ticks[i - 1]).count();
    jitter_us.push_back(static_cast<uint64_t>(std::abs(us - 10'000)));
  }
  const core::TimerStats stats = timer.timerStats();
  std::printf(
      "1,000,000-route load off the loop: %.2f s; 10 ms timer: %llu runs (%llu during the load, "
      "%llu deadlines missed); interval jitter p50 %llu us, p99 %llu us, max %llu us; "
      "max lateness %lld us\n",
      load_s, static_cast<unsigned long long>(ticks.size()),
      static_cast<unsigned long long>(ticks_while_loading),
      static_cast<unsigned long long>(stats.missed),
      static_cast<unsigned long long>(percentile(jitter_us, 0.5)),
      static_cast<unsigned long long>(percentile(jitter_us, 0.99)),
      static_cast<unsigned long long>(percentile(jitter_us, 1.0)),
      static_cast<long long>(stats.max_lateness.count()));
  fib.reset();
}

}  // namespace
}  // namespace mcgw
