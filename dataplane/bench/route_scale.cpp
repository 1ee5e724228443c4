// Route-scale scenarios (see route_scale.hpp).
//
// The prefix mix imitates a full Internet table (shares of the routes):
//   IPv4: /24 60 %, /22–/23 18 %, /16–/21 15 %, /8–/15 1 %, /25–/32 6 %,
//         addresses uniform in 1.0.0.0–223.255.255.255;
//   IPv6: /48 45 %, /33–/47 (mostly /36, /40, /44) 27 %, /32 12 %,
//         /29–/31 3 %, /56–/64 10 %, /128 3 %; each route lies inside one
//         of 40,000 random /32 "allocations" in 2000::/3, as real /48s
//         cluster inside their holder's block.
// Next hops are random below 4,096; host routes (/32, /128) answer their
// own next hop, which is what the load check looks up.
#include "dataplane/bench/route_scale.hpp"

#include <rte_cycles.h>
#include <rte_malloc.h>
#include <rte_rcu_qsbr.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "dataplane/engine/fib.hpp"

namespace mcgw::bench {

namespace {

using engine::TenantFib;
using Clock = std::chrono::steady_clock;

[[noreturn]] void die(const std::string& message) {
  std::fprintf(stderr, "mcgw-bench: FAILED: %s\n", message.c_str());
  std::fflush(stderr);
  std::_Exit(1);
}

double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

size_t heapBytes() {
  rte_malloc_socket_stats s{};
  size_t total = 0;
  for (int socket = 0; socket < RTE_MAX_NUMA_NODES; ++socket) {
    if (rte_malloc_get_socket_stats(socket, &s) == 0) {
      total += s.heap_allocsz_bytes;
    }
  }
  return total;
}

uint8_t pick(std::mt19937_64& rng, std::initializer_list<std::pair<int, uint8_t>> shares) {
  int r = static_cast<int>(rng() % 1000);
  for (const auto& [per_mille, len] : shares) {
    if (r < per_mille) {
      return len;
    }
    r -= per_mille;
  }
  return shares.begin()->second;
}

config::IpPrefix v4Prefix(std::mt19937_64& rng) {
  const uint8_t bucket = pick(rng, {{600, 24}, {180, 22}, {150, 16}, {10, 8}, {60, 25}});
  uint8_t len = bucket;
  if (bucket == 22) {
    len = static_cast<uint8_t>(22 + rng() % 2);
  } else if (bucket == 16) {
    len = static_cast<uint8_t>(16 + rng() % 6);
  } else if (bucket == 8) {
    len = static_cast<uint8_t>(8 + rng() % 8);
  } else if (bucket == 25) {
    len = static_cast<uint8_t>(25 + rng() % 8);
  }
  const uint32_t a = 0x01000000u + static_cast<uint32_t>(rng() % (0xe0000000u - 0x01000000u));
  config::IpPrefix p;
  p.address.family = config::Family::V4;
  p.address.bytes = {static_cast<uint8_t>(a >> 24), static_cast<uint8_t>(a >> 16),
                     static_cast<uint8_t>(a >> 8), static_cast<uint8_t>(a)};
  p.length = len;
  return p.network();
}

config::IpPrefix v6Prefix(std::mt19937_64& rng, const std::vector<uint32_t>& blocks) {
  const uint8_t bucket =
      pick(rng, {{450, 48}, {270, 33}, {120, 32}, {30, 29}, {100, 56}, {30, 128}});
  uint8_t len = bucket;
  if (bucket == 33) {
    static const uint8_t kLens[] = {36, 40, 44, 44, 40, 36, 34, 38, 42, 46, 47, 35};
    len = kLens[rng() % std::size(kLens)];
  } else if (bucket == 29) {
    len = static_cast<uint8_t>(29 + rng() % 3);
  } else if (bucket == 56) {
    len = rng() % 2 ? 56 : static_cast<uint8_t>(57 + rng() % 8);
  }
  config::IpPrefix p;
  p.address.family = config::Family::V6;
  const uint32_t block = blocks[rng() % blocks.size()];
  p.address.bytes[0] = static_cast<uint8_t>(block >> 24);
  p.address.bytes[1] = static_cast<uint8_t>(block >> 16);
  p.address.bytes[2] = static_cast<uint8_t>(block >> 8);
  p.address.bytes[3] = static_cast<uint8_t>(block);
  // Within the block: a few hundred /48s per holder at most.
  p.address.bytes[4] = static_cast<uint8_t>(rng() % 4);
  p.address.bytes[5] = static_cast<uint8_t>(rng() % 64);
  for (unsigned i = 6; i < 16; ++i) {
    p.address.bytes[i] = static_cast<uint8_t>(rng());
  }
  p.length = len;
  return p.network();
}

// n4 + n6 distinct routes of the mix.
std::vector<TenantFib::Route> makeRoutes(size_t n4, size_t n6, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint32_t> blocks;
  for (int i = 0; i < 40'000; ++i) {
    blocks.push_back(0x20000000u + static_cast<uint32_t>(rng() % 0x1fffffffu));
  }
  std::set<config::IpPrefix> seen;
  std::vector<TenantFib::Route> routes;
  routes.reserve(n4 + n6);
  while (routes.size() < n4) {
    const auto p = v4Prefix(rng);
    if (seen.insert(p).second) {
      routes.push_back({p, static_cast<uint32_t>(rng() % 4096)});
    }
  }
  while (routes.size() < n4 + n6) {
    const auto p = v6Prefix(rng, blocks);
    if (seen.insert(p).second) {
      routes.push_back({p, static_cast<uint32_t>(rng() % 4096)});
    }
  }
  return routes;
}

uint32_t find(const TenantFib& fib, const config::IpAddress& a) {
  return a.family == config::Family::V4 ? fib.find4(a.bytes.data()) : fib.find6(a.bytes.data());
}

// Host routes are the most specific: each must answer its own next hop.
void checkHostRoutes(const TenantFib& fib, const std::vector<TenantFib::Route>& routes,
                     const char* what) {
  size_t checked = 0;
  for (const auto& r : routes) {
    if (r.prefix.length == r.prefix.address.bits()) {
      ++checked;
      if (find(fib, r.prefix.address) != r.next_hop) {
        die(std::string(what) + ": " + r.prefix.toString() + " does not answer its next hop");
      }
    }
  }
  if (checked == 0) {
    die(std::string(what) + ": no host routes to check");
  }
}

std::unique_ptr<TenantFib> load(const std::vector<TenantFib::Route>& routes) {
  auto fib = TenantFib::create("bench-scale", routes);
  if (!fib) {
    die("fib-load: " + fib.error());
  }
  return std::move(*fib);
}

// TSC cycles per find4/find6 over destinations inside the routes (each
// route's first address, shuffled), on a tenant of n routes per family.
void smallLookups(uint64_t seed) {
  std::printf("lookups by table size (TSC cycles per lookup, destinations inside the routes):\n");
  std::printf("  %7s  %-22s  %-22s\n", "routes", "IPv4 array / DIR-24-8", "IPv6 array / TRIE");
  for (size_t n : {16, 256, 4096}) {
    const auto routes = makeRoutes(n, n, seed);
    std::vector<config::IpAddress> dsts;
    for (const auto& r : routes) {
      dsts.push_back(r.prefix.address);
    }
    std::shuffle(dsts.begin(), dsts.end(), std::mt19937_64(seed));
    double cycles[2][2];  // [large][family]
    for (int large = 0; large < 2; ++large) {
      TenantFib::Sizing sizing;
      sizing.small_routes = large ? 0 : n;
      auto fib = TenantFib::create("bench-small", routes, sizing);
      if (!fib) {
        die("lookups: " + fib.error());
      }
      for (int family = 0; family < 2; ++family) {
        std::vector<config::IpAddress> d;
        for (const auto& a : dsts) {
          if ((a.family == config::Family::V6) == (family == 1)) {
            d.push_back(a);
          }
        }
        constexpr size_t kLookups = 4'000'000;
        uint64_t sink = 0;
        const uint64_t t0 = rte_rdtsc();
        for (size_t i = 0; i < kLookups; ++i) {
          sink += find(**fib, d[i % d.size()]);
        }
        cycles[large][family] = static_cast<double>(rte_rdtsc() - t0) / kLookups;
        if (sink == 42) {
          std::fprintf(stderr, " ");
        }
      }
    }
    std::printf("  %7zu  %6.1f / %-13.1f  %6.1f / %-13.1f\n", n, cycles[0][0], cycles[1][0],
                cycles[0][1], cycles[1][1]);
  }
}

}  // namespace

void fibLoad(const RouteScaleOptions& o) {
  smallLookups(o.seed);
  std::fprintf(stderr, "generating %zu IPv4 + %zu IPv6 routes ...\n", o.routes4, o.routes6);
  const auto routes = makeRoutes(o.routes4, o.routes6, o.seed);

  // 1. One create() with every route.
  size_t heap0 = heapBytes();
  auto t0 = Clock::now();
  auto fib = load(routes);
  const double create_s = since(t0);
  const size_t create_heap = heapBytes() - heap0;
  const size_t create_est = fib->memoryBytes();
  checkHostRoutes(*fib, routes, "fib-load (create)");
  const bool large4 = fib->large4(), large6 = fib->large6();
  fib.reset();

  // 2. An empty tenant filled by apply() in batches, as routes arrive.
  heap0 = heapBytes();
  auto empty = TenantFib::create("bench-scale", {});
  if (!empty) {
    die("fib-load: " + empty.error());
  }
  fib = std::move(*empty);
  constexpr size_t kBatch = 50'000;
  std::vector<TenantFib::Change> changes;
  changes.reserve(routes.size());
  for (const auto& r : routes) {
    changes.push_back({r.prefix, r.next_hop, false});
  }
  t0 = Clock::now();
  for (size_t at = 0; at < changes.size(); at += kBatch) {
    const size_t n = std::min(kBatch, changes.size() - at);
    auto r = fib->apply(std::span<const TenantFib::Change>(changes).subspan(at, n), [] {});
    if (!r) {
      die("fib-load (apply): " + r.error());
    }
  }
  const double apply_s = since(t0);
  const size_t apply_heap = heapBytes() - heap0;
  const size_t apply_est = fib->memoryBytes();
  checkHostRoutes(*fib, routes, "fib-load (apply)");
  fib.reset();

  std::printf("fib-load: %zu IPv4 + %zu IPv6 routes, one tenant (IPv4 %s, IPv6 %s)\n", o.routes4,
              o.routes6, large4 ? "DIR-24-8" : "ranges", large6 ? "TRIE" : "ranges");
  std::printf("  create():                  %5.2f s, %5.0f MiB DPDK heap (memoryBytes %4.0f MiB)\n",
              create_s, create_heap / 1048576.0, create_est / 1048576.0);
  std::printf(
      "  apply(), %zu-route batches: %5.2f s, %5.0f MiB DPDK heap (memoryBytes %4.0f MiB)\n",
      kBatch, apply_s, apply_heap / 1048576.0, apply_est / 1048576.0);
}

void fibChurn(const RouteScaleOptions& o) {
  std::fprintf(stderr, "generating %zu IPv4 + %zu IPv6 routes ...\n", o.routes4, o.routes6);
  auto routes = makeRoutes(o.routes4, o.routes6, o.seed);
  // Half the routes are loaded; the churn withdraws loaded ones and adds
  // the others, and changes next hops, so the count stays put.
  std::mt19937_64 rng(o.seed + 1);
  std::shuffle(routes.begin(), routes.end(), rng);
  const size_t half = routes.size() / 2;
  std::vector<TenantFib::Route> loaded(routes.begin(), routes.begin() + static_cast<long>(half));
  std::vector<TenantFib::Route> spare(routes.begin() + static_cast<long>(half), routes.end());
  auto fib = load(loaded);
  std::vector<config::IpAddress> probes;
  for (size_t i = 0; i < 4096; ++i) {
    probes.push_back(routes[rng() % routes.size()].prefix.address);
  }

  const size_t qsbr_size = rte_rcu_qsbr_get_memsize(1);
  auto* qsbr = static_cast<rte_rcu_qsbr*>(rte_zmalloc("bench_qsbr", qsbr_size, 64));
  if (!qsbr || rte_rcu_qsbr_init(qsbr, 1) != 0) {
    die("fib-churn: cannot set up RCU");
  }
  std::atomic<int> phase{0};  // 0 idle lookups, 1 during churn, 2 stop
  std::atomic<uint64_t> idle_lookups{0}, churn_lookups{0};
  std::atomic<double> idle_s{0}, churn_s{0};
  std::thread reader([&] {
    rte_rcu_qsbr_thread_register(qsbr, 0);
    rte_rcu_qsbr_thread_online(qsbr, 0);
    uint64_t n = 0, sink = 0;
    int seen = 0;
    auto t0 = Clock::now();
    for (;;) {
      const int p = phase.load(std::memory_order_relaxed);
      if (p != seen) {
        (seen == 0 ? idle_lookups : churn_lookups) = n;
        (seen == 0 ? idle_s : churn_s) = since(t0);
        if (p == 2) {
          break;
        }
        seen = p;
        n = 0;
        t0 = Clock::now();
      }
      for (size_t i = 0; i < 64; ++i) {
        sink += find(*fib, probes[(n + i) & 4095]);
      }
      n += 64;
      rte_rcu_qsbr_quiescent(qsbr, 0);
    }
    rte_rcu_qsbr_thread_offline(qsbr, 0);
    rte_rcu_qsbr_thread_unregister(qsbr, 0);
    if (sink == 42) {
      std::fprintf(stderr, " ");  // keeps the lookups from being optimised away
    }
  });
  std::this_thread::sleep_for(std::chrono::seconds(1));
  phase = 1;

  double sync_s = 0;  // time apply() spent waiting for the reader's grace period
  auto synchronize = [qsbr, &sync_s] {
    const auto t = Clock::now();
    rte_rcu_qsbr_synchronize(qsbr, RTE_QSBR_THRID_INVALID);
    sync_s += since(t);
  };
  size_t changes = 0, batches = 0;
  std::vector<TenantFib::Change> batch;
  const auto t0 = Clock::now();
  double elapsed = 0;
  while ((elapsed = since(t0)) < o.churn_seconds) {
    batch.clear();
    for (size_t i = 0; i < o.batch; ++i) {
      const size_t li = rng() % loaded.size();
      switch (rng() % 3) {
        case 0: {  // next hop change
          loaded[li].next_hop = static_cast<uint32_t>(rng() % 4096);
          batch.push_back({loaded[li].prefix, loaded[li].next_hop, false});
          break;
        }
        default: {  // withdraw one, add a spare one
          const size_t si = rng() % spare.size();
          batch.push_back({loaded[li].prefix, 0, true});
          batch.push_back({spare[si].prefix, spare[si].next_hop, false});
          std::swap(loaded[li], spare[si]);
          ++i;
        }
      }
    }
    auto r = fib->apply(batch, synchronize);
    if (!r) {
      die("fib-churn: " + r.error());
    }
    changes += batch.size();
    ++batches;
  }
  phase = 2;
  reader.join();
  rte_free(qsbr);
  checkHostRoutes(*fib, loaded, "fib-churn");

  std::printf("fib-churn: %zu routes loaded (%zu IPv4 + %zu IPv6 drawn), %zu-change batches\n",
              loaded.size(), o.routes4, o.routes6, o.batch);
  std::printf("  %zu changes in %zu batches in %.2f s: %.0f changes/s (%zu table copies rebuilt)\n",
              changes, batches, elapsed, changes / elapsed, fib->rebuilds());
  std::printf("  of which %.2f s waiting for grace periods (%.0f changes/s without them)\n", sync_s,
              changes / (elapsed - sync_s));
  std::printf("  lookups on the reader thread: %.1f M/s idle, %.1f M/s during churn\n",
              idle_lookups / idle_s / 1e6, churn_lookups / churn_s / 1e6);
}

}  // namespace mcgw::bench
