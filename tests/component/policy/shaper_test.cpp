// The line shaper (dataplane/policy/shaper.hpp): a DPDK ring per priority
// and a token bucket.  On a controlled clock (2 GHz, the test's own): what
// leaves over a span is the rate's worth plus the bucket, within a frame;
// strict priority (a backlogged higher priority leaves nothing to a lower
// one; a light one gets all it offers and the lower one exactly the rest;
// a head packet the bucket cannot pay for holds back the lower priorities);
// admission stops at the queue size and every admitted packet leaves, in
// priority order; freeing a shaper frees what it holds; the real TSC; the
// parameter checks and queuePackets.
#include "dataplane/policy/shaper.hpp"

#include <gtest/gtest.h>
#include <rte_cycles.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include <algorithm>
#include <array>
#include <functional>
#include <string>
#include <vector>

#include "tests/support/eal.hpp"

namespace mcgw::policy {
namespace {

const auto* const kEal =
    ::testing::AddGlobalTestEnvironment(new test::EalEnvironment("shaper_test", 128));

constexpr uint64_t kHz = 2'000'000'000;  // the test's clock
constexpr uint32_t kFrame = 1000;        // bytes per test packet
constexpr double kOff = -1;              // a priority that offers nothing

class ShaperTest : public ::testing::Test {
 protected:
  void SetUp() override {
    pool_ = rte_pktmbuf_pool_create(("shp" + std::to_string(++n_)).c_str(), 16383, 256, 0,
                                    RTE_MBUF_DEFAULT_BUF_SIZE, 0);
    ASSERT_NE(pool_, nullptr);
  }
  void TearDown() override { rte_mempool_free(pool_); }

  rte_mbuf* packet(uint8_t priority, uint32_t len = kFrame) {
    rte_mbuf* m = rte_pktmbuf_alloc(pool_);
    EXPECT_NE(m, nullptr);
    if (m) {
      EXPECT_NE(rte_pktmbuf_append(m, static_cast<uint16_t>(len)), nullptr);
      *rte_pktmbuf_mtod(m, uint8_t*) = priority;  // which priority it was queued for
    }
    return m;
  }

  // `seconds` of the test clock in steps of 10 us: each step every priority
  // with offered[p] >= 0 is topped up (0: as much as fits; else what that
  // many bytes/s allow so far), then up to 32 packets leave.  The bytes
  // that left, per priority.
  std::array<uint64_t, kPriorities> run(Shaper& s, double seconds,
                                        const std::array<double, kPriorities>& offered) {
    std::array<uint64_t, kPriorities> out{};
    std::array<double, kPriorities> in{};
    const uint64_t step = kHz / 100'000;
    const uint64_t end = clock_ + static_cast<uint64_t>(seconds * kHz);
    const uint64_t start = clock_;
    for (; clock_ < end; clock_ += step) {
      const double elapsed = static_cast<double>(clock_ - start) / kHz;
      for (uint8_t p = 0; p < kPriorities; ++p) {
        while (offered[p] >= 0 && s.room(p) &&
               (offered[p] == 0 || in[p] + kFrame <= offered[p] * elapsed + kFrame)) {
          rte_mbuf* m = packet(p);
          if (!m || !s.enqueue(m, p)) {
            ADD_FAILURE() << "room() but enqueue refused";
            rte_pktmbuf_free(m);
            return out;
          }
          in[p] += kFrame;
        }
      }
      rte_mbuf* pkts[32];
      for (unsigned n; (n = s.dequeue(pkts, 32, clock_)) != 0;) {
        for (unsigned i = 0; i < n; ++i) {
          out[*rte_pktmbuf_mtod(pkts[i], uint8_t*)] += pkts[i]->pkt_len;
          rte_pktmbuf_free(pkts[i]);
        }
      }
    }
    return out;
  }

  static std::array<double, kPriorities> offering(
      std::initializer_list<std::pair<uint8_t, double>> l) {
    std::array<double, kPriorities> o;
    o.fill(kOff);
    for (auto [p, v] : l) {
      o[p] = v;
    }
    return o;
  }

  static inline unsigned n_ = 0;
  rte_mempool* pool_ = nullptr;
  uint64_t clock_ = 0;
};

TEST_F(ShaperTest, SendsTheRatePlusTheBucketWithinAFrame) {
  for (const uint64_t bits : {2'000'000ull, 100'000'000ull, 10'000'000'000ull}) {
    SCOPED_TRACE(bits);
    clock_ = 0;
    std::string error;
    auto s = Shaper::create({bits / 8, 4096, 1518}, 0, &error, kHz);
    ASSERT_TRUE(s) << error;
    const double rate = static_cast<double>(bits) / 8;
    const double bucket = std::max(rate / 200, 2.0 * (1518 + 128));  // the default: 5 ms
    const double seconds = 0.2;
    const auto out = run(*s, seconds, offering({{0, 0}}));
    const double want = rate * seconds + bucket;
    EXPECT_LE(static_cast<double>(out[0]), want);
    EXPECT_GE(static_cast<double>(out[0]), want - 2 * kFrame - rate * 10e-6);
  }
}

TEST_F(ShaperTest, BackloggedHigherPriorityLeavesNothingToALowerOne) {
  auto s = Shaper::create({100'000'000 / 8, 1024, 1518}, 0, nullptr, kHz);
  ASSERT_TRUE(s);
  const auto out = run(*s, 0.2, offering({{7, 0}, {0, 0}, {3, 0}}));
  EXPECT_GT(out[7], 2'500'000u);  // 0.2 s at 12.5 MB/s
  EXPECT_EQ(out[3], 0u);
  EXPECT_EQ(out[0], 0u);
  EXPECT_EQ(s->queued(0), 1024u);
}

TEST_F(ShaperTest, LightHigherPriorityGetsAllItOffersAndALowerOneTheRest) {
  const double rate = 100'000'000.0 / 8;
  auto s = Shaper::create({100'000'000 / 8, 1024, 1518}, 0, nullptr, kHz);
  ASSERT_TRUE(s);
  const double seconds = 0.2;
  const auto out = run(*s, seconds, offering({{6, 0.3 * rate}, {2, 0}}));
  const double high = static_cast<double>(out[6]), low = static_cast<double>(out[2]);
  EXPECT_NEAR(high, 0.3 * rate * seconds, 2 * kFrame);  // everything it offered
  const double bucket = rate / 200;
  EXPECT_NEAR(high + low, rate * seconds + bucket, 3 * kFrame);  // the line is full
}

TEST_F(ShaperTest, AHeadPacketTheBucketCannotPayForHoldsBackLowerPriorities) {
  // The bucket: its floor, two frames of 1518 + 128 bytes = 3,292 bytes,
  // full at the start.  A 1,400-byte packet of priority 5 leaves; the
  // 1,900-byte one behind it does not fit the 1,892 left; the 100-byte one
  // of priority 1 would, but waits behind it.
  auto s = Shaper::create({1'000'000, 64, 1518, 1}, 0, nullptr, kHz);  // 1 MB/s
  ASSERT_TRUE(s);
  ASSERT_TRUE(s->enqueue(packet(5, 1400), 5));
  ASSERT_TRUE(s->enqueue(packet(5, 1900), 5));
  ASSERT_TRUE(s->enqueue(packet(1, 100), 1));
  rte_mbuf* out[8];
  ASSERT_EQ(s->dequeue(out, 8, 0), 1u);
  EXPECT_EQ(out[0]->pkt_len, 1400u);
  rte_pktmbuf_free(out[0]);
  EXPECT_EQ(s->dequeue(out, 8, kHz / 1'000'000 * 5), 0u);  // 5 us: 5 more bytes, 1,897
  EXPECT_EQ(s->queued(), 2u);
  // At 3 ms the bucket is full again: 3,292 bytes pay for the 1,900 and the 100.
  ASSERT_EQ(s->dequeue(out, 8, 3 * kHz / 1000), 2u);
  EXPECT_EQ(out[0]->pkt_len, 1900u);
  EXPECT_EQ(out[1]->pkt_len, 100u);
  rte_pktmbuf_free_bulk(out, 2);
  EXPECT_EQ(s->queued(), 0u);
}

TEST_F(ShaperTest, AdmitsExactlyTheQueueAndEveryPacketLeavesInPriorityOrder) {
  auto s = Shaper::create({1'000'000'000 / 8, 64, 1518, 1'000'000}, 0, nullptr, kHz);
  ASSERT_TRUE(s);
  const unsigned free_at_start = rte_mempool_avail_count(pool_);
  for (uint8_t p : {uint8_t{0}, uint8_t{7}, uint8_t{3}}) {
    unsigned admitted = 0;
    while (s->room(p)) {
      ASSERT_TRUE(s->enqueue(packet(p), p));
      ++admitted;
    }
    EXPECT_EQ(admitted, 64u);
    rte_mbuf* extra = packet(p);
    EXPECT_FALSE(s->enqueue(extra, p));
    rte_pktmbuf_free(extra);
    EXPECT_EQ(s->queued(p), 64u);
  }
  EXPECT_EQ(s->queued(), 3u * 64);
  std::vector<uint8_t> order;
  rte_mbuf* pkts[32];
  for (unsigned n; (n = s->dequeue(pkts, 32, 1)) != 0;) {
    for (unsigned i = 0; i < n; ++i) {
      order.push_back(*rte_pktmbuf_mtod(pkts[i], uint8_t*));
      rte_pktmbuf_free(pkts[i]);
    }
  }
  ASSERT_EQ(order.size(), 3u * 64);
  EXPECT_TRUE(std::is_sorted(order.begin(), order.end(), std::greater<>()));
  EXPECT_EQ(rte_mempool_avail_count(pool_), free_at_start);
  EXPECT_TRUE(s->room(0));
}

TEST_F(ShaperTest, FreeingAShaperFreesWhatItHolds) {
  const unsigned free_at_start = rte_mempool_avail_count(pool_);
  {
    auto s = Shaper::create({125'000, 256, 1518}, 0, nullptr, kHz);  // 1 Mbit/s: holds them
    ASSERT_TRUE(s);
    for (int i = 0; i < 200; ++i) {
      ASSERT_TRUE(s->enqueue(packet(static_cast<uint8_t>(i % 8)), static_cast<uint8_t>(i % 8)));
    }
    rte_mbuf* out[32];
    const unsigned n = s->dequeue(out, 32, 1);  // the bucket's worth; one waits as a head packet
    EXPECT_GT(n, 0u);
    rte_pktmbuf_free_bulk(out, n);
    EXPECT_EQ(s->dequeue(out, 32, 1), 0u);
    EXPECT_LT(rte_mempool_avail_count(pool_), free_at_start);
  }
  EXPECT_EQ(rte_mempool_avail_count(pool_), free_at_start);
}

TEST_F(ShaperTest, OnTheRealTscNeverMoreThanTheRateAndTheBucket) {
  const uint64_t rate = 100'000'000 / 8;
  auto s = Shaper::create({rate, 1024, 1518}, 0, nullptr);
  ASSERT_TRUE(s);
  const uint64_t hz = rte_get_tsc_hz();
  const uint64_t start = rte_rdtsc();
  uint64_t out = 0;
  for (uint64_t now = start; now - start < hz / 5; now = rte_rdtsc()) {
    while (s->room(0)) {
      ASSERT_TRUE(s->enqueue(packet(0), 0));
    }
    rte_mbuf* pkts[32];
    const unsigned n = s->dequeue(pkts, 32, now);
    for (unsigned i = 0; i < n; ++i) {
      out += pkts[i]->pkt_len;
    }
    rte_pktmbuf_free_bulk(pkts, n);
  }
  const double elapsed = static_cast<double>(rte_rdtsc() - start) / static_cast<double>(hz);
  EXPECT_LE(static_cast<double>(out), static_cast<double>(rate) * (elapsed + 0.005) + kFrame);
  EXPECT_GT(out, 0u);
}

TEST(ShaperParams, QueuePacketsAndChecks) {
  EXPECT_EQ(queuePackets(100'000'000, 50), 512u);           // 416 packets of 1500 bytes
  EXPECT_EQ(queuePackets(1'000'000, 50), kMinQueue);        // 4 packets: the floor
  EXPECT_EQ(queuePackets(100'000'000'000, 50), kMaxQueue);  // 416,666: the ceiling
  EXPECT_EQ(queuePackets(1'000'000'000, 12), 1024u);        // exactly 1000 → 1024
  std::string error;
  EXPECT_FALSE(Shaper::create({0, 64, 1518}, 0, &error, kHz));
  EXPECT_NE(error.find("rate"), std::string::npos) << error;
  EXPECT_FALSE(Shaper::create({kMaxShapeRateBytes + 1, 64, 1518}, 0, &error, kHz));
  EXPECT_FALSE(Shaper::create({1000, 100, 1518}, 0, &error, kHz));  // not a power of two
  EXPECT_NE(error.find("queue 100"), std::string::npos) << error;
  EXPECT_FALSE(Shaper::create({1000, 8, 1518}, 0, &error, kHz));      // below kMinQueue
  EXPECT_FALSE(Shaper::create({1000, 32768, 1518}, 0, &error, kHz));  // above kMaxQueue
  EXPECT_TRUE(Shaper::create({kMaxShapeRateBytes, kMaxQueue, 9216}, 0, &error, 8'000'000'000))
      << error;
}

}  // namespace
}  // namespace mcgw::policy
