// The bandwidth meters (dataplane/policy/meter.hpp) on DPDK's rte_meter: the
// share of green/yellow/red bytes over 1 s of a controlled clock at several
// offered rates, packet sizes and profiles, against RFC 2698's token-bucket
// arithmetic worked out here; live rate changes (tokens kept, buckets
// clamped); rates shared by workers; the token-bucket profile against
// DPDK's rte_meter_trtcm_profile_config (EAL --no-huge: DPDK takes the TSC
// rate from the EAL); parseRate / parseSize / Rate::make; DSCP remarking.
#include "dataplane/policy/meter.hpp"

#include <gtest/gtest.h>
#include <rte_cycles.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "dataplane/proto/checksum.hpp"
#include "tests/support/eal.hpp"

namespace mcgw::policy {
namespace {

const auto* const kEal =
    ::testing::AddGlobalTestEnvironment(new test::EalEnvironment("meter_test", 64));

constexpr uint64_t kFakeHz = 2'000'000'000;  // a fixed "TSC" of 2 GHz

Rate rate(uint64_t cir_bits, uint64_t pir_bits, uint64_t cbs, uint64_t pbs) {
  auto r = Rate::fromBits(cir_bits, pir_bits, cbs, pbs);
  EXPECT_TRUE(r.ok()) << r.error();
  return *r;
}

// ---------------------------------------------------------------- RFC 2698 shares

// RFC 2698, colour-blind, for a stream of `total` bytes over `seconds`
// starting with full buckets: a packet is red when the P bucket lacks its
// size, else yellow when the C bucket lacks it, else green (both buckets
// pay); red packets take no tokens and yellow ones only P's.  So the P
// bucket lets through at most PBS + PIR x t bytes, and of those the C bucket
// at most CBS + CIR x t (the non-red bytes arrive at least as fast as CIR
// whenever the offered rate is above CIR, so C's tokens are always used).
struct Bytes3 {
  double green = 0, yellow = 0, red = 0;
};
Bytes3 expectedBytes(const Rate& r, double total, double seconds) {
  Bytes3 e;
  const double passed = std::min(total, static_cast<double>(r.pbs) + r.pir * seconds);
  e.green = std::min(passed, static_cast<double>(r.cbs) + r.cir * seconds);
  e.yellow = passed - e.green;
  e.red = total - passed;
  return e;
}

struct Stream {
  uint64_t offered_bits = 0;  // per second
  uint32_t size = 0;          // bytes per packet
  unsigned burst = 1;         // packets sharing one TSC reading (a worker's burst)
};

// Feeds `seconds` of a constant-rate stream through the slot, packets dealt
// round-robin to the workers; returns the bytes of each colour.
Bytes3 feed(std::vector<WorkerMeters*>& workers, uint32_t slot, const Stream& s, uint64_t hz,
            uint64_t start_tsc, double seconds) {
  const double bytes_per_s = static_cast<double>(s.offered_bits) / 8;
  const uint64_t packets = static_cast<uint64_t>(bytes_per_s * seconds / s.size);
  const double cycles_per_packet =
      static_cast<double>(s.size) * static_cast<double>(hz) / bytes_per_s;
  std::array<uint64_t, 3> bytes{};
  for (uint64_t i = 0; i < packets; ++i) {
    const uint64_t first = i - i % s.burst;
    const uint64_t tsc =
        start_tsc + static_cast<uint64_t>(static_cast<double>(first) * cycles_per_packet);
    const Colour c = workers[i % workers.size()]->check(slot, tsc, s.size);
    bytes[static_cast<size_t>(c)] += s.size;
  }
  return {static_cast<double>(bytes[0]), static_cast<double>(bytes[1]),
          static_cast<double>(bytes[2])};
}

struct ShareCase {
  const char* name;
  Rate rate;
  std::vector<uint64_t> offered_bits;
  std::vector<uint32_t> sizes;
};

std::vector<ShareCase> shareCases() {
  return {
      // The lab's 50 Mbit/s tenant.
      {"50M",
       rate(50'000'000, 100'000'000, 64'000, 128'000),
       {25'000'000, 75'000'000, 200'000'000},
       {64, 1500}},
      {"1G",
       rate(1'000'000'000, 2'000'000'000, 1'000'000, 2'000'000),
       {500'000'000, 1'500'000'000, 3'000'000'000},
       {64, 1500}},
      {"40G",
       rate(40'000'000'000, 50'000'000'000, 8'000'000, 16'000'000),
       {20'000'000'000, 45'000'000'000, 75'000'000'000},
       {1500, 9000}},
  };
}

// Runs every case at `hz` on `n_workers` workers, each burst of `burst`
// packets with one TSC reading; every colour's share of the offered bytes
// within 1 % (absolute) of the arithmetic.
void checkShares(uint64_t hz, unsigned n_workers, unsigned burst) {
  double worst = 0;
  for (const ShareCase& c : shareCases()) {
    for (uint64_t offered : c.offered_bits) {
      for (uint32_t size : c.sizes) {
        MeterTable table(n_workers, hz, [] {});
        ASSERT_TRUE(table.set(7, c.rate).ok());
        std::vector<std::unique_ptr<WorkerMeters>> owned;
        std::vector<WorkerMeters*> workers;
        for (unsigned w = 0; w < n_workers; ++w) {
          owned.push_back(std::make_unique<WorkerMeters>(table, w));
          workers.push_back(owned.back().get());
        }
        const Stream s{offered, size, burst};
        const Bytes3 got = feed(workers, 7, s, hz, 1'000'000'007, 1.0);
        const double total = got.green + got.yellow + got.red;
        const Bytes3 want = expectedBytes(c.rate, total, 1.0);
        const double dg = std::abs(got.green - want.green) / total;
        const double dy = std::abs(got.yellow - want.yellow) / total;
        const double dr = std::abs(got.red - want.red) / total;
        worst = std::max({worst, dg, dy, dr});
        const std::string what = std::string(c.name) + " profile, offered " + formatRate(offered) +
                                 "bit/s of " + std::to_string(size) + "-byte packets";
        EXPECT_LE(dg, 0.01) << what << ": green " << got.green / total << ", expected "
                            << want.green / total;
        EXPECT_LE(dy, 0.01) << what << ": yellow " << got.yellow / total << ", expected "
                            << want.yellow / total;
        EXPECT_LE(dr, 0.01) << what << ": red " << got.red / total << ", expected "
                            << want.red / total;
        // Each case is one of below CIR, between CIR and PIR, above PIR.
        if (offered / 8 < c.rate.cir) {
          EXPECT_EQ(got.yellow + got.red, 0) << what;
        }
      }
    }
  }
  std::printf("hz %llu, %u worker(s), bursts of %u: largest share difference %.4f %%\n",
              static_cast<unsigned long long>(hz), n_workers, burst, worst * 100);
}

TEST(MeterShares, WithinOnePercentOfRfc2698AtAFixedClock) {
  checkShares(kFakeHz, 1, 1);
}

TEST(MeterShares, WithinOnePercentOfRfc2698AtTheTscRate) {
  checkShares(rte_get_tsc_hz(), 1, 1);
}

TEST(MeterShares, BurstsOfOneTimestampGiveTheSameShares) {
  checkShares(rte_get_tsc_hz(), 1, 32);
}

// Two workers, the traffic dealt evenly: each meters half with half the
// rate and buckets, and together they give the slot's shares.
TEST(MeterShares, TwoWorkersSharingTheRateEvenly) {
  checkShares(kFakeHz, 2, 32);
}

// A stream that only one of two workers carries gets half the rate: the
// documented cost of per-worker buckets; weights give it back.
TEST(MeterShares, OneFlowOnOneWorkerGetsItsShareAndWeightsMoveIt) {
  const Rate r = rate(100'000'000, 100'000'000, 100'000, 100'000);
  MeterTable table(2, kFakeHz, [] {});
  ASSERT_TRUE(table.set(1, r).ok());
  WorkerMeters w0(table, 0);
  std::vector<WorkerMeters*> only0{&w0};
  const Stream s{200'000'000, 1000, 1};
  Bytes3 got = feed(only0, 1, s, kFakeHz, 0, 1.0);
  double total = got.green + got.yellow + got.red;
  EXPECT_NEAR(got.green / total, (r.cbs / 2 + r.cir / 2.0) / total, 0.01);

  const MeterTable::Change all_to_0{1, r, {1, 0}};
  ASSERT_TRUE(table.apply({&all_to_0, 1}).ok());
  EXPECT_EQ(table.workerRate(1, 0)->cir, r.cir);
  EXPECT_EQ(table.workerRate(1, 1)->cir, 1u);
  WorkerMeters fresh(table, 0);
  std::vector<WorkerMeters*> only_fresh{&fresh};
  got = feed(only_fresh, 1, s, kFakeHz, 0, 1.0);
  total = got.green + got.yellow + got.red;
  EXPECT_NEAR(got.green / total, expectedBytes(r, total, 1.0).green / total, 0.01);

  const MeterTable::Change three_to_one{1, r, {3, 1}};
  ASSERT_TRUE(table.apply({&three_to_one, 1}).ok());
  EXPECT_EQ(table.workerRate(1, 0)->cir, r.cir * 3 / 4);
  EXPECT_EQ(table.workerRate(1, 1)->cir, r.cir / 4);
  EXPECT_EQ(table.workerRate(1, 0)->cbs, r.cbs * 3 / 4);
}

// ---------------------------------------------------------------- live changes

// At 1 GHz: rates of 1e6 bytes/s fill 4 bytes every 4,000 cycles exactly.
constexpr uint64_t kGHz = 1'000'000'000;

TEST(MeterLive, RaisingTheRateTakesEffectOnTheNextPacket) {
  MeterTable table(1, kGHz, [] {});
  WorkerMeters w(table, 0);
  ASSERT_TRUE(table.set(3, *Rate::make(1'000, 1'000, 2'000, 2'000)).ok());
  uint64_t t = 5'000'000;
  EXPECT_EQ(w.check(3, t, 2'000), Colour::kGreen);  // both buckets now empty
  t += 1'000'000;                                   // 1 ms: 1 byte at 1,000 bytes/s
  EXPECT_EQ(w.check(3, t, 1'000), Colour::kRed);
  const Rate fast = *Rate::make(1'000'000, 1'000'000, 2'000, 2'000);
  ASSERT_TRUE(table.set(3, fast).ok());
  // The tokens were not refilled by the change...
  EXPECT_EQ(w.check(3, t, 1'000), Colour::kRed);
  // ...and the whole update periods that make 1,000 bytes at the new rate
  // (about 1 ms; at the old rate it would take 1 s) bring them.
  const rte_meter_trtcm_profile profile = makeTrtcmProfile(fast, kGHz);
  const uint64_t periods =
      (1'000 + profile.cir_bytes_per_period - 1) / profile.cir_bytes_per_period;
  ASSERT_LE(periods * profile.cir_period, 1'100'000u);
  t += periods * profile.cir_period;
  const uint32_t tokens = static_cast<uint32_t>(1 + periods * profile.cir_bytes_per_period);
  EXPECT_EQ(w.check(3, t, 1'000), Colour::kGreen);
  EXPECT_EQ(w.check(3, t, tokens - 1'000 + 1), Colour::kRed);
  EXPECT_EQ(w.check(3, t, tokens - 1'000), Colour::kGreen);
}

TEST(MeterLive, BiggerBucketsAreNotFilledByTheChange) {
  MeterTable table(1, kGHz, [] {});
  WorkerMeters w(table, 0);
  ASSERT_TRUE(table.set(0, *Rate::make(1'000'000, 2'000'000, 10'000, 20'000)).ok());
  const uint64_t t = 1'000;
  EXPECT_EQ(w.check(0, t, 10'000), Colour::kGreen);   // C empty
  EXPECT_EQ(w.check(0, t, 10'000), Colour::kYellow);  // P empty
  EXPECT_EQ(w.check(0, t, 1'518), Colour::kRed);
  ASSERT_TRUE(table.set(0, *Rate::make(1'000'000, 2'000'000, 1'000'000, 2'000'000)).ok());
  EXPECT_EQ(w.check(0, t, 1'518), Colour::kRed);  // a reset would make it green
  EXPECT_EQ(table.rate(0)->cbs, 1'000'000u);
  // Cleared, then set: a new meter, full buckets.
  ASSERT_TRUE(table.clear(0).ok());
  EXPECT_EQ(w.check(0, t, 1'000'000), Colour::kGreen);  // unmetered
  EXPECT_FALSE(table.rate(0));
  ASSERT_TRUE(table.set(0, *Rate::make(1'000'000, 2'000'000, 10'000, 20'000)).ok());
  EXPECT_EQ(w.check(0, t, 10'000), Colour::kGreen);
  EXPECT_EQ(w.check(0, t, 10'000), Colour::kYellow);
}

TEST(MeterLive, SmallerBucketsClampTheTokens) {
  MeterTable table(1, kGHz, [] {});
  WorkerMeters w(table, 0);
  ASSERT_TRUE(table.set(9, *Rate::make(1'000'000, 1'000'000, 1'000'000, 1'000'000)).ok());
  EXPECT_EQ(w.check(9, 0, 100), Colour::kGreen);  // full: 999,900 left
  ASSERT_TRUE(table.set(9, *Rate::make(1'000'000, 2'000'000, 3'000, 5'000)).ok());
  EXPECT_EQ(w.check(9, 0, 1'500), Colour::kGreen);   // C clamped to 3,000, P to 5,000
  EXPECT_EQ(w.check(9, 0, 1'500), Colour::kGreen);   // C 0, P 2,000
  EXPECT_EQ(w.check(9, 0, 1'500), Colour::kYellow);  // P 500
  EXPECT_EQ(w.check(9, 0, 1'500), Colour::kRed);
}

// 1 s at four times CIR: the rate raised at 0.5 s.  Before, green flows at
// the old CIR; in the first 10 ms after, at the new one; over the second
// half, at the new CIR with no extra burst (the C bucket was empty at the
// change, so green = CIR2 x 0.5 s, not CBS2 + CIR2 x 0.5 s).
TEST(MeterLive, RaisedMidStreamGreenFollowsTheNewRateWithoutABurst) {
  const uint64_t hz = rte_get_tsc_hz();
  const Rate low = rate(100'000'000, 200'000'000, 100'000, 100'000);
  const Rate high = rate(300'000'000, 400'000'000, 5'000'000, 5'000'000);
  MeterTable table(1, hz, [] {});
  WorkerMeters w(table, 0);
  std::vector<WorkerMeters*> ws{&w};
  ASSERT_TRUE(table.set(2, low).ok());
  const Stream s{1'000'000'000, 1250, 1};
  const Bytes3 first = feed(ws, 2, s, hz, 0, 0.5);
  EXPECT_NEAR(first.green, low.cbs + low.cir * 0.5, 0.01 * low.cir * 0.5);
  ASSERT_TRUE(table.set(2, high).ok());
  const Bytes3 soon = feed(ws, 2, s, hz, hz / 2, 0.01);
  EXPECT_NEAR(soon.green, high.cir * 0.01, 0.02 * high.cir * 0.01);
  const Bytes3 rest = feed(ws, 2, s, hz, hz / 2 + hz / 100, 0.49);
  EXPECT_NEAR(soon.green + rest.green, high.cir * 0.5, 0.01 * high.cir * 0.5);
  // Lowered again: green falls back to the low CIR at once (the C bucket
  // was empty: no burst either).
  ASSERT_TRUE(table.set(2, low).ok());
  const Bytes3 after = feed(ws, 2, s, hz, hz, 0.5);
  EXPECT_NEAR(after.green, low.cir * 0.5, 0.01 * low.cir * 0.5);
}

TEST(MeterTable, UnmeteredSlotsAreGreenAndGracePeriodsFreeOldProfiles) {
  int grace_periods = 0;
  MeterTable table(4, kFakeHz, [&] { ++grace_periods; });
  WorkerMeters w(table, 3);
  for (uint32_t slot : {0u, 1u, MeterTable::kMaxMeters - 1}) {
    EXPECT_EQ(w.check(slot, 123, 9000), Colour::kGreen);
  }
  const Rate r = rate(50'000'000, 100'000'000, 0, 0);
  EXPECT_EQ(r.cbs, Rate::defaultBurst(r.cir));
  ASSERT_TRUE(table.set(5, r).ok());
  EXPECT_EQ(grace_periods, 0);  // nothing replaced, nothing to wait for
  ASSERT_TRUE(table.set(5, r).ok());
  EXPECT_EQ(grace_periods, 1);
  std::vector<MeterTable::Change> batch{{5, std::nullopt, {}}, {6, r, {}}, {7, r, {1, 2, 3, 4}}};
  ASSERT_TRUE(table.apply(batch).ok());
  EXPECT_EQ(grace_periods, 2);  // one for the whole batch
  EXPECT_FALSE(table.rate(5));
  EXPECT_EQ(*table.rate(7), r);
  EXPECT_EQ(table.workerRate(7, 3)->cir, r.cir * 4 / 10);

  // Refused changes change nothing.
  std::vector<MeterTable::Change> bad{{8, r, {}}, {MeterTable::kMaxMeters, r, {}}};
  auto e = table.apply(bad);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.error(), "meter slot " + std::to_string(MeterTable::kMaxMeters) +
                           ": out of range (at most " + std::to_string(MeterTable::kMaxMeters - 1) +
                           ")");
  EXPECT_FALSE(table.rate(8));
  bad = {{8, r, {1, 2}}};
  EXPECT_EQ(table.apply(bad).error(), "meter slot 8: 2 weights for 4 workers");
  bad = {{8, r, {0, 0, 0, 0}}};
  EXPECT_EQ(table.apply(bad).error(), "meter slot 8: every weight is 0");
  bad = {{8, Rate{100, 50, 2000, 2000}, {}}};
  EXPECT_EQ(table.apply(bad).error(),
            "meter slot 8: pir (50 bytes/s) must be at least cir (100 bytes/s)");
  EXPECT_EQ(grace_periods, 2);
}

// An idle slot's buckets refill to full however long it idled (and the
// token arithmetic does not overflow).
TEST(MeterTable, LongIdleRefillsToFull) {
  MeterTable table(1, kGHz, [] {});
  WorkerMeters w(table, 0);
  const Rate r = *Rate::make(1'250'000'000'000, 1'250'000'000'000, 10'000, 20'000);
  ASSERT_TRUE(table.set(0, r).ok());
  EXPECT_EQ(w.check(0, 0, 10'000), Colour::kGreen);
  EXPECT_EQ(w.check(0, 0, 10'000), Colour::kYellow);
  const uint64_t years = uint64_t{kGHz} * 3600 * 24 * 365 * 100;  // 100 years at 1 GHz
  EXPECT_EQ(w.check(0, years, 10'000), Colour::kGreen);
  EXPECT_EQ(w.check(0, years, 10'000), Colour::kYellow);
  EXPECT_EQ(w.check(0, years, 1), Colour::kRed);
}

// check() skips rte_meter's divisions when no update period has passed for
// either bucket; it must colour exactly as DPDK's own function does, on the
// same profile, including across live profile changes.
TEST(MeterTable, ColoursExactlyAsRteMeterDoes) {
  std::mt19937_64 rng(42);
  const std::array<Rate, 3> rates = {*Rate::make(1'000'000, 3'000'000, 20'000, 40'000),
                                     *Rate::make(5'000'000, 5'000'000, 3'000, 9'000),
                                     *Rate::make(700'000'000, 900'000'000, 200'000, 400'000)};
  MeterTable table(1, kFakeHz, [] {});
  WorkerMeters w(table, 0);
  ASSERT_TRUE(table.set(11, rates[0]).ok());
  rte_meter_trtcm_profile profile = makeTrtcmProfile(rates[0], kFakeHz);
  uint64_t tsc = 77'777;
  rte_meter_trtcm ref{tsc, tsc, rates[0].cbs, rates[0].pbs};
  std::array<uint64_t, 3> colours{};
  for (int i = 0; i < 2'000'000; ++i) {
    if (i % 100'000 == 99'999) {  // a live change
      const Rate& r = rates[static_cast<size_t>(i / 100'000) % rates.size()];
      ASSERT_TRUE(table.set(11, r).ok());
      profile = makeTrtcmProfile(r, kFakeHz);
    }
    // Mostly within a period (same burst: 0), sometimes a few periods on.
    const uint64_t step = rng() % 4 == 0 ? rng() % (3 * profile.cir_period) : rng() % 64;
    tsc += step * (rng() % 2);
    const auto bytes = static_cast<uint32_t>(40 + rng() % 1500);
    const Colour got = w.check(11, tsc, bytes);
    const auto want =
        static_cast<Colour>(rte_meter_trtcm_color_blind_check(&ref, &profile, tsc, bytes));
    ASSERT_EQ(got, want) << "packet " << i;
    ++colours[static_cast<size_t>(got)];
  }
  // Every colour was exercised.
  EXPECT_GT(colours[0], 1000u);
  EXPECT_GT(colours[1], 1000u);
  EXPECT_GT(colours[2], 1000u);
}

// ---------------------------------------------------------------- the profile

// Our profile and DPDK's (rte_meter_trtcm_profile_config, at the EAL's TSC
// rate) fill the buckets at the same rate within DPDK's own 1 %; ours within
// 0.025 % of the configured rate.
TEST(MeterProfile, AgreesWithDpdksProfileConfig) {
  const uint64_t hz = rte_get_tsc_hz();
  ASSERT_GT(hz, 0u);
  auto effective = [&](uint64_t period, uint64_t bytes) {
    return static_cast<double>(hz) * static_cast<double>(bytes) / static_cast<double>(period);
  };
  for (uint64_t bits : {8'000ull, 1'000'000ull, 50'000'000ull, 123'456'789ull, 1'000'000'000ull,
                        40'000'000'000ull, 100'000'000'000ull, 400'000'000'000ull}) {
    const Rate r = rate(bits, bits * 2, 0, 0);
    rte_meter_trtcm_params params{r.cir, r.pir, r.cbs, r.pbs};
    rte_meter_trtcm_profile dpdk{};
    ASSERT_EQ(rte_meter_trtcm_profile_config(&dpdk, &params), 0);
    const rte_meter_trtcm_profile ours = makeTrtcmProfile(r, hz);
    EXPECT_EQ(ours.cbs, dpdk.cbs);
    EXPECT_EQ(ours.pbs, dpdk.pbs);
    const double dpdk_cir = effective(dpdk.cir_period, dpdk.cir_bytes_per_period);
    const double ours_cir = effective(ours.cir_period, ours.cir_bytes_per_period);
    const double ours_pir = effective(ours.pir_period, ours.pir_bytes_per_period);
    EXPECT_NEAR(ours_cir / dpdk_cir, 1.0, 0.01) << bits;
    EXPECT_NEAR(ours_cir / r.cir, 1.0, 0.00025) << bits;
    EXPECT_NEAR(ours_pir / r.pir, 1.0, 0.00025) << bits;
    // An update is at most a quarter of the bucket.
    EXPECT_LE(ours.cir_bytes_per_period, r.cbs / 4);
  }
}

// ---------------------------------------------------------------- parsing

TEST(MeterParse, RateTable) {
  const struct {
    const char* text;
    uint64_t bits;
  } good[] = {
      {"50M", 50'000'000},
      {"40G", 40'000'000'000},
      {"2.5G", 2'500'000'000},
      {"100k", 100'000},
      {"100K", 100'000},
      {"8000", 8'000},
      {"8.5k", 8'500},
      {"10Gbps", 10'000'000'000},
      {"200Mbit/s", 200'000'000},
      {"10T", 10'000'000'000'000},
      {"0.000000008T", 8'000},
      {"1.000000001G", 1'000'000'001},
      {"64000bps", 64'000},
  };
  for (const auto& g : good) {
    auto r = parseRate(g.text);
    ASSERT_TRUE(r.ok()) << g.text << ": " << r.error();
    EXPECT_EQ(*r, g.bits) << g.text;
    auto back = parseRate(formatRate(*r));
    ASSERT_TRUE(back.ok()) << formatRate(*r);
    EXPECT_EQ(*back, *r);
  }
  const struct {
    const char* text;
    const char* error;
  } bad[] = {
      {"", "rate \"\": expected a number such as 50M or 40G"},
      {"M", "rate \"M\": expected a number such as 50M or 40G"},
      {"-5M", "rate \"-5M\": expected a number such as 50M or 40G"},
      {" 5M", "rate \" 5M\": expected a number such as 50M or 40G"},
      {"40X", "rate \"40X\": unknown unit \"X\" (k, M, G or T, then optionally bit/s or bps)"},
      {"40 G", "rate \"40 G\": unknown unit \" G\" (k, M, G or T, then optionally bit/s or bps)"},
      {"40g", "rate \"40g\": unknown unit \"g\" (k, M, G or T, then optionally bit/s or bps)"},
      {"5.G", "rate \"5.G\": expected digits after the point"},
      {"1.0000000001G", "rate \"1.0000000001G\": at most 9 digits after the point"},
      {"8000.5", "rate \"8000.5\": not a whole number of bits per second"},
      {"7999", "rate \"7999\": below the minimum 8k"},
      {"0", "rate \"0\": below the minimum 8k"},
      {"10.000000001T", "rate \"10.000000001T\": above the maximum 10T"},
      {"11T", "rate \"11T\": above the maximum 10T"},
      {"18446744073709551616", "rate \"18446744073709551616\": too large"},
      {"18446744073709551615", "rate \"18446744073709551615\": above the maximum 10T"},
      {"18446744073709552k", "rate \"18446744073709552k\": too large"},
  };
  for (const auto& b : bad) {
    auto r = parseRate(b.text);
    ASSERT_FALSE(r.ok()) << b.text << " gave " << *r;
    EXPECT_EQ(r.error(), b.error);
  }
}

TEST(MeterParse, FormatRateShortestForm) {
  EXPECT_EQ(formatRate(40'000'000'000), "40G");
  EXPECT_EQ(formatRate(2'500'000'000), "2.5G");
  EXPECT_EQ(formatRate(1234), "1234");
  EXPECT_EQ(formatRate(1'000'001), "1000001");
  EXPECT_EQ(formatRate(12'000'000'000'000), "12T");
  EXPECT_EQ(formatRate(0), "0");
}

TEST(MeterParse, SizeTable) {
  const struct {
    const char* text;
    uint64_t bytes;
  } good[] = {
      {"1500", 1500},
      {"64k", 64'000},
      {"64K", 64'000},
      {"1.5M", 1'500'000},
      {"256KiB", 262'144},
      {"1MiB", 1'048'576},
      {"1Mi", 1'048'576},
      {"2G", 2'000'000'000},
      {"4Gi", 1ull << 32},
      {"4GiB", 1ull << 32},
      {"1500B", 1500},
      {"0.5Ki", 512},
      {"1", 1},
      {"1.5k", 1500},
      {"9000B", 9000},
  };
  for (const auto& g : good) {
    auto r = parseSize(g.text);
    ASSERT_TRUE(r.ok()) << g.text << ": " << r.error();
    EXPECT_EQ(*r, g.bytes) << g.text;
  }
  const struct {
    const char* text;
    const char* error;
  } bad[] = {
      {"", "size \"\": expected a number such as 1500 or 64k"},
      {"k", "size \"k\": expected a number such as 1500 or 64k"},
      {"0", "size \"0\": must be more than 0"},
      {"0k", "size \"0k\": must be more than 0"},
      {"1.5", "size \"1.5\": not a whole number of bytes"},
      {"0.3Ki", "size \"0.3Ki\": not a whole number of bytes"},
      {"64kb", "size \"64kb\": unknown unit \"kb\" (k, M, G, Ki, Mi or Gi, then optionally B)"},
      {"1Ti", "size \"1Ti\": unknown unit \"Ti\" (k, M, G, Ki, Mi or Gi, then optionally B)"},
      {"4.5Gi", "size \"4.5Gi\": above the maximum 4GiB"},
      {"5G", "size \"5G\": above the maximum 4GiB"},
      {"99999999999999999999", "size \"99999999999999999999\": too large"},
      {"18446744073709551615Gi", "size \"18446744073709551615Gi\": too large"},
  };
  for (const auto& b : bad) {
    auto r = parseSize(b.text);
    ASSERT_FALSE(r.ok()) << b.text << " gave " << *r;
    EXPECT_EQ(r.error(), b.error);
  }
}

TEST(MeterRate, Validation) {
  EXPECT_TRUE(Rate::make(1, 1, 1518, 1518).ok());
  const struct {
    Rate r;
    const char* error;
  } bad[] = {
      {{0, 10, 2000, 2000}, "cir must be more than 0 bytes/s"},
      {{10, 9, 2000, 2000}, "pir (9 bytes/s) must be at least cir (10 bytes/s)"},
      {{10, 1'250'000'000'001, 2000, 2000},
       "pir (1250000000001 bytes/s) is above the maximum 1250000000000 bytes/s (10Tbit/s)"},
      {{10, 10, 1517, 2000}, "cbs (1517 bytes) must hold one maximum-size frame (1518 bytes)"},
      {{10, 10, 2000, 0}, "pbs (0 bytes) must hold one maximum-size frame (1518 bytes)"},
      {{10, 10, 2000, (1ull << 32) + 1},
       "pbs (4294967297 bytes) is above the maximum 4294967296 bytes"},
  };
  for (const auto& b : bad) {
    auto r = Rate::make(b.r.cir, b.r.pir, b.r.cbs, b.r.pbs);
    ASSERT_FALSE(r.ok()) << b.error;
    EXPECT_EQ(r.error(), b.error);
  }
  // From bits: rounded down to bytes, default bursts of 80 ms.
  auto r = Rate::fromBits(*parseRate("50M"), *parseRate("100M"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, (Rate{6'250'000, 12'500'000, 500'000, 1'000'000}));
  // A committed burst alone widens the peak bucket to it (not below the
  // peak rate's default).
  r = Rate::fromBits(*parseRate("50M"), *parseRate("50M"), 2'000'000);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, (Rate{6'250'000, 6'250'000, 2'000'000, 2'000'000}));
  r = Rate::fromBits(*parseRate("50M"), *parseRate("100M"), 100'000);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, (Rate{6'250'000, 12'500'000, 100'000, 1'000'000}));
  r = Rate::fromBits(8'000, 8'000);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, (Rate{1'000, 1'000, 1518, 1518}));
  EXPECT_EQ(Rate::fromBits(8'000, 7'999).error(),
            "pir (999 bytes/s) must be at least cir (1000 bytes/s)");
}

// ---------------------------------------------------------------- DSCP remarking

// A textbook IPv4 header (UDP, 192.168.0.1 -> 192.168.0.199), checksum b861.
constexpr std::array<uint8_t, 20> kIpv4 = {0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40,
                                           0x00, 0x40, 0x11, 0xb8, 0x61, 0xc0, 0xa8,
                                           0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7};

bool checksumValid(const std::array<uint8_t, 20>& h) {
  return proto::ipv4HeaderChecksumOk(h.data(), h.size());
}

TEST(MeterRemarkDscp, Ipv4ByteTable) {
  const struct {
    uint8_t tos_before;
    uint8_t checksum_before[2];
    uint8_t dscp;
    uint8_t tos_after;
    uint8_t checksum_after[2];
  } rows[] = {
      {0x00, {0xb8, 0x61}, 46, 0xb8, {0xb7, 0xa9}},  // EF, Not-ECT
      {0x03, {0xb8, 0x5e}, 46, 0xbb, {0xb7, 0xa6}},  // EF, CE kept
      {0x02, {0xb8, 0x5f}, 10, 0x2a, {0xb8, 0x37}},  // AF11, ECT(0) kept
      {0xb9, {0xb7, 0xa8}, 0, 0x01, {0xb8, 0x60}},   // EF -> best effort, ECT(1) kept
      {0x28, {0xb8, 0x39}, 10, 0x28, {0xb8, 0x39}},  // already AF11: unchanged
  };
  for (const auto& r : rows) {
    auto h = kIpv4;
    h[1] = r.tos_before;
    h[10] = r.checksum_before[0];
    h[11] = r.checksum_before[1];
    ASSERT_TRUE(checksumValid(h)) << int(r.tos_before);
    remarkDscp4(h.data(), r.dscp);
    auto want = kIpv4;
    want[1] = r.tos_after;
    want[10] = r.checksum_after[0];
    want[11] = r.checksum_after[1];
    EXPECT_EQ(h, want) << "tos " << int(r.tos_before) << " -> dscp " << int(r.dscp);
    EXPECT_TRUE(checksumValid(h));
  }
}

// Every DSCP from every TOS, over headers whose checksums cover the edge
// values: the result always equals a full recomputation.
TEST(MeterRemarkDscp, Ipv4EveryCodepointKeepsEcnAndChecksum) {
  for (uint16_t id : {0x0000, 0x1c46, 0xffff, 0x4ae2, 0xb861}) {
    for (unsigned tos = 0; tos < 256; ++tos) {
      for (uint8_t dscp = 0; dscp < 64; ++dscp) {
        auto h = kIpv4;
        h[1] = static_cast<uint8_t>(tos);
        h[4] = static_cast<uint8_t>(id >> 8);
        h[5] = static_cast<uint8_t>(id);
        h[10] = h[11] = 0;
        const uint16_t c = proto::internetChecksum(std::as_bytes(std::span(h)));
        h[10] = static_cast<uint8_t>(c >> 8);
        h[11] = static_cast<uint8_t>(c);
        remarkDscp4(h.data(), dscp);
        ASSERT_EQ(h[1] >> 2, dscp);
        ASSERT_EQ(h[1] & 3, tos & 3);
        ASSERT_TRUE(checksumValid(h)) << "id " << id << " tos " << tos << " dscp " << int(dscp);
        auto again = h;
        again[10] = again[11] = 0;
        const uint16_t full = proto::internetChecksum(std::as_bytes(std::span(again)));
        // The incremental update never yields 0x0000 where the full sum gives 0xffff
        // (RFC 1624 eqn. 3); both are valid, so compare the sums, not the bytes.
        ASSERT_TRUE(full == (h[10] << 8 | h[11]) || (full == 0xffff && h[10] == 0 && h[11] == 0) ||
                    (full == 0 && h[10] == 0xff && h[11] == 0xff));
      }
    }
  }
}

TEST(MeterRemarkDscp, Ipv6TrafficClass) {
  const struct {
    std::array<uint8_t, 4> before;
    uint8_t dscp;
    std::array<uint8_t, 4> after;
  } rows[] = {
      // TC 0x01 (ECT(1)), flow label 0x12345 -> TC 0xb9 (EF, ECT(1)).
      {{0x60, 0x11, 0x23, 0x45}, 46, {0x6b, 0x91, 0x23, 0x45}},
      // TC 0xbb (EF, CE), flow label 0xfffff -> TC 0x2b (AF11, CE).
      {{0x6b, 0xbf, 0xff, 0xff}, 10, {0x62, 0xbf, 0xff, 0xff}},
      // TC 0xfe, no flow label -> TC 0x02 (best effort, ECT(0)).
      {{0x6f, 0xe0, 0x00, 0x00}, 0, {0x60, 0x20, 0x00, 0x00}},
      // DSCP 63, TC 0x00 -> 0xfc.
      {{0x60, 0x00, 0x00, 0x01}, 63, {0x6f, 0xc0, 0x00, 0x01}},
  };
  for (const auto& r : rows) {
    std::array<uint8_t, 40> h{};
    std::memcpy(h.data(), r.before.data(), 4);
    for (size_t i = 4; i < h.size(); ++i) {
      h[i] = static_cast<uint8_t>(i);
    }
    auto want = h;
    std::memcpy(want.data(), r.after.data(), 4);
    remarkDscp6(h.data(), r.dscp);
    EXPECT_EQ(h, want) << "dscp " << int(r.dscp);
  }
}

}  // namespace
}  // namespace mcgw::policy
