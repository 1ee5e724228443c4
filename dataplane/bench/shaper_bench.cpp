#include "dataplane/bench/shaper_bench.hpp"

#include <rte_cycles.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_ring.h>
#include <rte_sched.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "dataplane/policy/shaper.hpp"

namespace mcgw::bench {
namespace {

constexpr unsigned kBurst = 32;
constexpr uint32_t kFrame = 64;
constexpr uint64_t kRateBytes = 25'000'000'000;  // 200 Gbit/s: nothing waits

[[noreturn]] void failShaper(const std::string& what) {
  std::fprintf(stderr, "mcgw-bench shaper: %s\n", what.c_str());
  std::exit(1);
}

// DPDK's hierarchical scheduler with the smallest tree the shaper would
// need: one subport and one pipe at the line's rate, a traffic class per
// priority (7..1 → 0..6, 0 → best effort).  The port runs far faster than
// the line (rte_sched earns credits for every byte it sends at the port's
// rate) and best-effort oversubscription is off.
class RteSched {
 public:
  explicit RteSched(uint64_t rate_bytes) {
    rte_sched_subport_profile_params sp{};
    sp.tb_rate = rate_bytes;
    sp.tb_size = rate_bytes / 200;
    sp.tc_period = 10;
    for (auto& r : sp.tc_rate) {
      r = rate_bytes;
    }
    rte_sched_pipe_params pipe{};
    pipe.tb_rate = rate_bytes;
    pipe.tb_size = rate_bytes / 200;
    pipe.tc_period = 10;
    pipe.tc_ov_weight = 1;
    for (auto& w : pipe.wrr_weights) {
      w = 1;
    }
    rte_sched_subport_params sub{};
    sub.n_pipes_per_subport_enabled = 1;
    for (uint8_t p = 0; p < policy::kPriorities; ++p) {
      sub.qsize[tc(p)] = 1024;
      pipe.tc_rate[tc(p)] = rate_bytes;
    }
    sub.pipe_profiles = &pipe;
    sub.n_pipe_profiles = sub.n_max_pipe_profiles = 1;
    rte_sched_port_params port{};
    port.name = "mcgw_bench_sched";
    port.socket = 0;
    port.rate = std::max<uint64_t>(rte_get_tsc_hz() * 16, 2 * rate_bytes);
    port.mtu = 1518;
    port.n_subports_per_port = 1;
    port.subport_profiles = &sp;
    port.n_subport_profiles = port.n_max_subport_profiles = 1;
    port.n_pipes_per_subport = 1;
    port_ = rte_sched_port_config(&port);
    if (!port_ || rte_sched_subport_config(port_, 0, &sub, 0) != 0 ||
        rte_sched_subport_tc_ov_config(port_, 0, false) != 0 ||
        rte_sched_pipe_config(port_, 0, 0, 0) != 0) {
      failShaper("rte_sched refused the configuration");
    }
  }
  ~RteSched() { rte_sched_port_free(port_); }
  static uint8_t tc(uint8_t p) {
    return p == 0 ? RTE_SCHED_TRAFFIC_CLASS_BE : static_cast<uint8_t>(policy::kPriorities - 1 - p);
  }
  void stamp(rte_mbuf* m, uint8_t p) { rte_mbuf_sched_set(m, tc(p), tc(p), RTE_COLOR_GREEN); }
  unsigned enqueue(rte_mbuf** pkts, unsigned n) {
    const int took = rte_sched_port_enqueue(port_, pkts, n);
    return took < 0 ? 0 : static_cast<unsigned>(took);
  }
  unsigned dequeue(rte_mbuf** pkts, unsigned n) {
    const int got = rte_sched_port_dequeue(port_, pkts, n);
    return got < 0 ? 0 : static_cast<unsigned>(got);
  }

 private:
  rte_sched_port* port_ = nullptr;
};

std::string range(const std::vector<double>& v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.1f..%.1f", *std::min_element(v.begin(), v.end()),
                *std::max_element(v.begin(), v.end()));
  return buf;
}

}  // namespace

void shaperBench(const ShaperBenchOptions& o) {
  rte_mempool* pool =
      rte_pktmbuf_pool_create("mcgw_shaper_bench", 4095, 256, 0, RTE_MBUF_DEFAULT_BUF_SIZE, 0);
  if (!pool) {
    failShaper("no mempool");
  }
  // The packets in flight: one set for the single runs and each of the
  // two workers of the shared run.
  auto frames = [&] {
    std::vector<rte_mbuf*> v(kBurst * 4);
    for (auto& m : v) {
      m = rte_pktmbuf_alloc(pool);
      if (!m || !rte_pktmbuf_append(m, kFrame)) {
        failShaper("no mbuf");
      }
    }
    return v;
  };
  const std::vector<rte_mbuf*> pkts = frames();
  const std::array<std::vector<rte_mbuf*>, 2> worker_pkts = {frames(), frames()};
  std::vector<uint8_t> prio(pkts.size());
  for (size_t i = 0; i < pkts.size(); ++i) {
    prio[i] = (i * 7 % 3 == 0) ? 6 : 0;  // a third of priority 6
  }
  std::string error;
  auto shaper = policy::Shaper::create({kRateBytes, 1024, 1518}, 0, &error);
  if (!shaper) {
    failShaper(error);
  }
  RteSched sched(kRateBytes);
  const uint64_t bursts = std::max<uint64_t>(1, o.packets / kBurst);

  // One timed run: bursts of the packets in flight go in, whatever leaves
  // is the next input.  `queue` puts a burst in, `take` gets up to 32 out.
  auto timed = [&](const std::vector<rte_mbuf*>& packets, uint64_t n_bursts, auto queue,
                   auto take) {
    std::vector<rte_mbuf*> in(packets), next;
    size_t at = 0;
    uint64_t out_total = 0, inside = 0;
    const uint64_t start = rte_rdtsc_precise();
    for (uint64_t b = 0; b < n_bursts; ++b) {
      const unsigned n = static_cast<unsigned>(std::min<size_t>(kBurst, in.size() - at));
      if (queue(&in[at], n) != n) {
        failShaper("a packet was refused");
      }
      inside += n;
      at += n;
      rte_mbuf* out[kBurst];
      const unsigned got = take(out);
      inside -= got;
      out_total += got;
      next.insert(next.end(), out, out + got);
      if (at == in.size()) {
        in.swap(next);
        next.clear();
        at = 0;
      }
    }
    const uint64_t cycles = rte_rdtsc_precise() - start;
    // Drain: the next run starts with every packet out of the scheduler.
    for (uint64_t deadline = rte_rdtsc() + rte_get_tsc_hz(); inside && rte_rdtsc() < deadline;) {
      rte_mbuf* out[kBurst];
      inside -= take(out);
    }
    if (inside) {
      failShaper("packets stuck in a scheduler");
    }
    return std::make_pair(cycles, out_total);
  };
  auto runOn = [&](policy::Shaper& s, const std::vector<rte_mbuf*>& packets, uint64_t n_bursts) {
    return timed(
        packets, n_bursts,
        [&](rte_mbuf** b, unsigned n) {
          unsigned k = 0;
          for (; k < n && s.enqueue(b[k], prio[k % prio.size()]); ++k) {
          }
          return k;
        },
        [&](rte_mbuf** out) { return s.dequeue(out, kBurst, rte_rdtsc()); });
  };
  auto runShaper = [&](uint64_t n_bursts) { return runOn(*shaper, pkts, n_bursts); };
  // Two workers (threads) at once, each its own shaper of one line whose
  // bucket they share (250 Gbit/s, above what both offer), or (shared
  // false) each with a bucket of its own: the cycles per packet of the
  // slower one.
  auto runTwo = [&](uint64_t n_bursts, bool shared) {
    policy::LineBucket line;
    line.tat = rte_rdtsc() << 8;
    std::array<std::unique_ptr<policy::Shaper>, 2> shapers;
    for (auto& s : shapers) {
      s = policy::Shaper::create({policy::kMaxShapeRateBytes, 1024, 1518}, 0, &error, 0,
                                 shared ? &line : nullptr);
      if (!s) {
        failShaper(error);
      }
    }
    std::array<std::pair<uint64_t, uint64_t>, 2> got{};
    std::array<std::thread, 2> threads;
    for (unsigned w = 0; w < 2; ++w) {
      threads[w] = std::thread([&, w] { got[w] = runOn(*shapers[w], worker_pkts[w], n_bursts); });
    }
    for (auto& t : threads) {
      t.join();
    }
    if (got[0].second == 0 || got[1].second == 0) {
      failShaper("nothing left a shared line");
    }
    return std::max(static_cast<double>(got[0].first) / static_cast<double>(got[0].second),
                    static_cast<double>(got[1].first) / static_cast<double>(got[1].second));
  };
  auto runSched = [&](uint64_t n_bursts) {
    return timed(
        pkts, n_bursts,
        [&](rte_mbuf** b, unsigned n) {
          for (unsigned k = 0; k < n; ++k) {
            sched.stamp(b[k], prio[k % prio.size()]);
          }
          return sched.enqueue(b, n);
        },
        [&](rte_mbuf** out) { return sched.dequeue(out, kBurst); });
  };

  runShaper(bursts / 4 + 1);
  runSched(bursts / 4 + 1);
  std::vector<double> shaper_c, sp_c, shared_c, own_c;
  for (unsigned r = 0; r < o.rounds; ++r) {
    shared_c.push_back(runTwo(bursts, true));
    own_c.push_back(runTwo(bursts, false));
    const auto [sc, so] = runShaper(bursts);
    const auto [pc, po] = runSched(bursts);
    if (so == 0 || po == 0) {
      failShaper("nothing left a scheduler");
    }
    shaper_c.push_back(static_cast<double>(sc) / static_cast<double>(so));
    sp_c.push_back(static_cast<double>(pc) / static_cast<double>(po));
  }
  std::printf(
      "mcgw-bench shaper: %u rounds of %llu bursts of %u (64-byte frames, priorities 6 and 0, "
      "rate 200 Gbit/s: nothing waits)\n",
      o.rounds, static_cast<unsigned long long>(bursts), kBurst);
  std::printf(
      "  %-10s %s cycles per packet out (mcgw's: a ring per priority, a TSC token bucket)\n",
      "shaper", range(shaper_c).c_str());
  std::printf(
      "  %-10s %s cycles per packet out (two threads at once into one line, their shapers "
      "sharing its bucket: the slower thread)\n",
      "shaper x2", range(shared_c).c_str());
  std::printf("  %-10s %s cycles per packet out (the same, each thread a bucket of its own)\n",
              "x2 own", range(own_c).c_str());
  std::printf("  %-10s %s cycles per packet out (stamp, enqueue, dequeue)\n", "rte_sched",
              range(sp_c).c_str());
  rte_mempool_free(pool);  // the packets with it
}

}  // namespace mcgw::bench
