#include "dataplane/bench/meter_bench.hpp"

#include <rte_cycles.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "dataplane/policy/meter.hpp"
#include "dataplane/proto/checksum.hpp"

namespace mcgw::bench {
namespace {

using policy::Colour;

[[noreturn]] void failMeter(const std::string& what) {
  std::fprintf(stderr, "mcgw-bench meter: %s\n", what.c_str());
  std::exit(1);
}

constexpr unsigned kBurst = 32;
constexpr size_t kPackets = 1024;                      // cycled: 32 bursts
constexpr uint64_t kOfferedBits = 100'000'000'000ull;  // all slots together

struct Packet {
  uint8_t* ip;
  uint32_t slot;
  uint32_t bytes;
  bool v6;
};

struct Round {
  uint64_t cycles = 0;
  std::array<uint64_t, 3> packets{};
  std::array<uint64_t, 3> bytes{};
};

enum class Mode { kNone, kOff, kOn };

// The timed loop.  `clock` is the simulated TSC, advanced per burst by the
// time its bytes take at the offered rate.
// runs: every packet of a burst goes to one slot (the next one each burst),
// as an RX burst of one big flow would, instead of each packet's own slot.
template <Mode mode, bool runs = false>
Round run(policy::WorkerMeters& meters, std::span<const Packet> pkts,
          std::span<const uint64_t> advance, uint64_t bursts, uint64_t& clock, uint32_t slots = 1) {
  Round r;
  const size_t n_bursts = pkts.size() / kBurst;
  const uint64_t start = rte_rdtsc_precise();
  for (uint64_t b = 0; b < bursts; ++b) {
    const size_t k = b % n_bursts;
    const Packet* burst = &pkts[k * kBurst];
    clock += advance[k];
    // Alternate the yellow DSCP on each pass over the packets, so that a
    // remark always writes.
    const uint8_t dscp = (b / n_bursts) & 1 ? 10 : 12;
    for (unsigned i = 0; i < kBurst; ++i) {
      const Packet& p = burst[i];
      Colour c = Colour::kGreen;
      if constexpr (mode != Mode::kNone) {
        c = meters.check(runs ? static_cast<uint32_t>(b % slots) : p.slot, clock, p.bytes);
      }
      if (c == Colour::kYellow) {
        if (p.v6) {
          policy::remarkDscp6(p.ip, dscp);
        } else {
          policy::remarkDscp4(p.ip, dscp);
        }
      }
      ++r.packets[static_cast<size_t>(c)];
      r.bytes[static_cast<size_t>(c)] += p.bytes;
    }
  }
  r.cycles = rte_rdtsc_precise() - start;
  return r;
}

std::string range(const std::vector<double>& v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.1f..%.1f", *std::min_element(v.begin(), v.end()),
                *std::max_element(v.begin(), v.end()));
  return buf;
}

}  // namespace

void meterBench(const MeterBenchOptions& o) {
  const uint64_t hz = rte_get_tsc_hz();
  if (hz == 0) {
    failMeter("no TSC rate (the EAL is not initialised)");
  }
  std::mt19937_64 rng(o.seed);
  // The headers, 64 bytes apart.
  std::vector<uint8_t> memory(kPackets * 64);
  std::vector<Packet> pkts(kPackets);
  for (size_t i = 0; i < kPackets; ++i) {
    uint8_t* ip = &memory[i * 64];
    const bool v6 = rng() & 1;
    const auto bytes = static_cast<uint32_t>(64 + rng() % (1500 - 64 + 1));
    const auto tos = static_cast<uint8_t>(rng());
    if (v6) {
      ip[0] = static_cast<uint8_t>(0x60 | tos >> 4);
      ip[1] = static_cast<uint8_t>(tos << 4 | (rng() & 0x0f));
      ip[6] = 17;
      ip[7] = 64;
    } else {
      const uint8_t h[20] = {0x45,
                             tos,
                             static_cast<uint8_t>(bytes >> 8),
                             static_cast<uint8_t>(bytes),
                             static_cast<uint8_t>(rng()),
                             static_cast<uint8_t>(rng()),
                             0x40,
                             0,
                             64,
                             17,
                             0,
                             0,
                             10,
                             0,
                             0,
                             static_cast<uint8_t>(rng()),
                             10,
                             1,
                             0,
                             static_cast<uint8_t>(rng())};
      std::copy(std::begin(h), std::end(h), ip);
      const uint16_t c = proto::internetChecksum(std::as_bytes(std::span(ip, 20)));
      ip[10] = static_cast<uint8_t>(c >> 8);
      ip[11] = static_cast<uint8_t>(c);
    }
    pkts[i] = {ip, static_cast<uint32_t>(rng() % o.slots), bytes, v6};
  }
  // Each burst's arrival time at the offered rate.
  std::vector<uint64_t> advance(kPackets / kBurst);
  for (size_t k = 0; k < advance.size(); ++k) {
    uint64_t burst_bytes = 0;
    for (unsigned i = 0; i < kBurst; ++i) {
      burst_bytes += pkts[k * kBurst + i].bytes;
    }
    advance[k] = static_cast<uint64_t>(static_cast<double>(burst_bytes) * 8 *
                                       static_cast<double>(hz) / kOfferedBits);
  }
  // Per slot: CIR a third and PIR two thirds of what the slot is offered, so
  // about a third of the bytes takes each colour.
  const uint64_t slot_bytes = kOfferedBits / 8 / o.slots;
  const auto rate = policy::Rate::make(slot_bytes / 3, slot_bytes * 2 / 3, 64'000, 64'000);
  if (!rate) {
    failMeter(rate.error());
  }
  policy::MeterTable off(1, hz, [] {});
  policy::MeterTable on(1, hz, [] {});
  for (uint32_t s = 0; s < o.slots; ++s) {
    if (auto r = on.set(s, *rate); !r) {
      failMeter(r.error());
    }
  }
  // The same slots metered far above what they are offered: all green.
  policy::MeterTable all_green(1, hz, [] {});
  const auto fast = policy::Rate::make(policy::kMaxRateBits / 8, policy::kMaxRateBits / 8,
                                       policy::kMaxSizeBytes, policy::kMaxSizeBytes);
  for (uint32_t s = 0; s < o.slots; ++s) {
    if (auto r = all_green.set(s, *fast); !r) {
      failMeter(r.error());
    }
  }
  policy::WorkerMeters off_meters(off, 0), on_meters(on, 0), green_meters(all_green, 0),
      runs_meters(on, 0);

  const uint64_t bursts = std::max<uint64_t>(1, o.packets / kBurst);
  const double packets = static_cast<double>(bursts * kBurst);
  uint64_t clock = 1'000'000;
  // Warm-up: caches, branch predictors, the meters' buckets drained.
  run<Mode::kOn>(on_meters, pkts, advance, bursts / 4 + 1, clock);
  run<Mode::kOff>(off_meters, pkts, advance, bursts / 4 + 1, clock);
  run<Mode::kNone>(off_meters, pkts, advance, bursts / 4 + 1, clock);
  run<Mode::kOn>(green_meters, pkts, advance, bursts / 4 + 1, clock);
  run<Mode::kOn, true>(runs_meters, pkts, advance, bursts / 4 + 1, clock, o.slots);

  std::vector<double> none_c, off_c, on_c, green_c, runs_c, added, added_green, added_runs;
  std::array<uint64_t, 3> runs_bytes{};
  std::array<uint64_t, 3> colour_bytes{};
  for (unsigned round = 0; round < o.rounds; ++round) {
    const Round n = run<Mode::kNone>(off_meters, pkts, advance, bursts, clock);
    const Round f = run<Mode::kOff>(off_meters, pkts, advance, bursts, clock);
    const Round m = run<Mode::kOn>(on_meters, pkts, advance, bursts, clock);
    const Round g = run<Mode::kOn>(green_meters, pkts, advance, bursts, clock);
    const Round u = run<Mode::kOn, true>(runs_meters, pkts, advance, bursts, clock, o.slots);
    if (g.packets[0] != bursts * kBurst) {
      failMeter("meter-green: a packet was not green");
    }
    if (f.packets[0] != bursts * kBurst || n.packets[0] != bursts * kBurst) {
      failMeter("an unmetered slot gave a colour other than green");
    }
    none_c.push_back(static_cast<double>(n.cycles) / packets);
    off_c.push_back(static_cast<double>(f.cycles) / packets);
    on_c.push_back(static_cast<double>(m.cycles) / packets);
    green_c.push_back(static_cast<double>(g.cycles) / packets);
    runs_c.push_back(static_cast<double>(u.cycles) / packets);
    added_runs.push_back(runs_c.back() - off_c.back());
    added.push_back(on_c.back() - off_c.back());
    added_green.push_back(green_c.back() - off_c.back());
    for (size_t c = 0; c < 3; ++c) {
      colour_bytes[c] += m.bytes[c];
      runs_bytes[c] += u.bytes[c];
    }
  }
  // Check what was measured: about a third of the bytes per colour, every
  // IPv4 header checksum still right after the remarks.
  const double total = static_cast<double>(colour_bytes[0] + colour_bytes[1] + colour_bytes[2]);
  std::array<double, 3> share{};
  for (size_t c = 0; c < 3; ++c) {
    share[c] = static_cast<double>(colour_bytes[c]) / total;
    if (share[c] < 0.25 || share[c] > 0.42) {
      failMeter("colour shares far from a third each: " + std::to_string(share[0]) + " " +
                std::to_string(share[1]) + " " + std::to_string(share[2]));
    }
  }
  for (const Packet& p : pkts) {
    if (!p.v6 && !proto::ipv4HeaderChecksumOk(p.ip, 20)) {
      failMeter("a remarked IPv4 header has a wrong checksum");
    }
  }
  std::sort(added.begin(), added.end());
  std::printf(
      "mcgw-bench meter: %u slots, %u interleaved rounds of %.0f packets in bursts of 32, TSC "
      "%.2f GHz\n",
      o.slots, o.rounds, packets, static_cast<double>(hz) / 1e9);
  std::printf("%-11s %22s  %s\n", "scenario", "cycles/pkt (min..max)", "what");
  std::printf("%-11s %22s  %s\n", "meter-none", range(none_c).c_str(), "the loop alone (no check)");
  std::printf("%-11s %22s  %s\n", "meter-off", range(off_c).c_str(),
              "check() on unmetered slots (green)");
  std::printf("%-11s %22s  green %.1f %% yellow %.1f %% (remarked) red %.1f %% of bytes\n", "meter",
              range(on_c).c_str(), share[0] * 100, share[1] * 100, share[2] * 100);
  const double runs_total = static_cast<double>(runs_bytes[0] + runs_bytes[1] + runs_bytes[2]);
  std::printf(
      "%-11s %22s  the same, each burst one slot's: green %.1f %% yellow %.1f %% red %.1f %%\n",
      "meter-runs", range(runs_c).c_str(), 100.0 * runs_bytes[0] / runs_total,
      100.0 * runs_bytes[1] / runs_total, 100.0 * runs_bytes[2] / runs_total);
  std::printf("%-11s %22s  %s\n", "meter-green", range(green_c).c_str(),
              "the same slots metered far above their traffic: all green");
  std::printf("meter - meter-off: %s cycles/packet (per round, min..max); target <= +10\n",
              range(added).c_str());
  std::printf("meter-green - meter-off: %s cycles/packet (per round, min..max)\n",
              range(added_green).c_str());
  std::printf("meter-runs - meter-off: %s cycles/packet (per round, min..max)\n",
              range(added_runs).c_str());
}

}  // namespace mcgw::bench
