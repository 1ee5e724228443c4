// The line shaper (dataplane/policy/shaper.hpp): a DPDK ring per priority
// and a token bucket.  On a controlled clock (2 GHz, the test's own): what
// leaves over a span is the rate's worth plus the bucket, within a frame;
// strict priority (a backlogged higher priority leaves nothing to a lower
// one; a light one gets all it offers and the lower one exactly the rest;
// a head packet the bucket cannot pay for holds back the lower priorities);
// admission stops at the queue size and every admitted packet leaves, in
// priority order; freeing a shaper frees what it holds; the real TSC; the
// parameter checks and queuePackets.  The shapers of one line in several
// workers (a shared LineBucket): together the line's rate, shared about
// evenly at one priority; a higher priority in another shaper takes the
// line (and gives it back when freed); a light one gets all it offers; two
// threads on the real TSC stay within the rate.
#include "dataplane/policy/shaper.hpp"

#include <gtest/gtest.h>
#include <rte_cycles.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include <algorithm>
#include <array>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tests/support/eal.hpp"

namespace mcgw::policy {
namespace {

const auto* const kEal =
    ::testing::AddGlobalTestEnvironment(new test::EalEnvironment("shaper_test", 128));

constexpr uint64_t kHz = 2'000'000'000;  // the test's clock
constexpr uint32_t kFrame = 1000;        // bytes per test packet
constexpr double kOff = -1;              // a priority that offers nothing

constexpr uint64_t kLine = 100'000'000 / 8;  // 100 Mbit/s

// Two shapers of a 100 Mbit/s line (two workers'), sharing `line`.
std::pair<std::unique_ptr<Shaper>, std::unique_ptr<Shaper>> twoOn(LineBucket& line) {
  return {Shaper::create({kLine, 1024, 1518}, 0, nullptr, kHz, &line),
          Shaper::create({kLine, 1024, 1518}, 0, nullptr, kHz, &line)};
}

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

  // A shaper and what it is offered, by priority (kOff: nothing).
  struct Offer {
    Shaper* shaper;
    std::array<double, kPriorities> offered;
  };
  using Sent = std::array<uint64_t, kPriorities>;  // bytes that left, by priority

  // `seconds` of the test clock in steps of 10 us: each step every priority
  // with offered[p] >= 0 is topped up (0: as much as fits; else what that
  // many bytes/s allow so far), then the shapers, in an order drawn anew
  // each step (several workers poll at no fixed phase), send what they
  // may.  The bytes that left, per shaper and priority.
  std::vector<Sent> runAll(double seconds, const std::vector<Offer>& offers) {
    std::vector<Sent> out(offers.size());
    std::vector<std::array<double, kPriorities>> in(offers.size());
    std::vector<size_t> order(offers.size());
    for (size_t i = 0; i < order.size(); ++i) {
      order[i] = i;
    }
    const uint64_t step = kHz / 100'000;
    const uint64_t end = clock_ + static_cast<uint64_t>(seconds * kHz);
    const uint64_t start = clock_;
    for (; clock_ < end; clock_ += step) {
      const double elapsed = static_cast<double>(clock_ - start) / kHz;
      for (size_t i = 0; i < offers.size(); ++i) {
        Shaper& s = *offers[i].shaper;
        const auto& offered = offers[i].offered;
        for (uint8_t p = 0; p < kPriorities; ++p) {
          while (offered[p] >= 0 && s.room(p) &&
                 (offered[p] == 0 || in[i][p] + kFrame <= offered[p] * elapsed + kFrame)) {
            rte_mbuf* m = packet(p);
            if (!m || !s.enqueue(m, p)) {
              ADD_FAILURE() << "room() but enqueue refused";
              rte_pktmbuf_free(m);
              return out;
            }
            in[i][p] += kFrame;
          }
        }
      }
      std::shuffle(order.begin(), order.end(), random_);
      for (size_t i : order) {
        rte_mbuf* pkts[32];
        for (unsigned n; (n = offers[i].shaper->dequeue(pkts, 32, clock_)) != 0;) {
          for (unsigned k = 0; k < n; ++k) {
            out[i][*rte_pktmbuf_mtod(pkts[k], uint8_t*)] += pkts[k]->pkt_len;
            rte_pktmbuf_free(pkts[k]);
          }
        }
      }
    }
    return out;
  }
  Sent run(Shaper& s, double seconds, const std::array<double, kPriorities>& offered) {
    return runAll(seconds, {{&s, offered}})[0];
  }
  static uint64_t total(const Sent& s) {
    uint64_t n = 0;
    for (uint64_t b : s) {
      n += b;
    }
    return n;
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
  std::mt19937 random_{19};
};

TEST_F(ShaperTest, SendsTheRatePlusTheBucketWithinAPacket) {
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
    EXPECT_LE(static_cast<double>(out[0]), want + kFrame);  // less than one packet more
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

TEST_F(ShaperTest, AHeadPacketWaitsUntilTheLineIsBusyForLessThanTheBucket) {
  // The bucket: its floor, two frames of 1518 + 128 bytes = 3,292 bytes,
  // full at the start.  GCRA: a packet goes when the line is busy for less
  // than the bucket, whatever its size.  The 1,400- and the first 1,900-byte
  // packet of priority 5 leave (busy 0, then 1,400); the second 1,900 does
  // not (busy 3,300); the 100-byte one of priority 1 waits behind it.
  auto s = Shaper::create({1'000'000, 64, 1518, 1}, 0, nullptr, kHz);  // 1 MB/s
  ASSERT_TRUE(s);
  ASSERT_TRUE(s->enqueue(packet(5, 1400), 5));
  ASSERT_TRUE(s->enqueue(packet(5, 1900), 5));
  ASSERT_TRUE(s->enqueue(packet(5, 1900), 5));
  ASSERT_TRUE(s->enqueue(packet(1, 100), 1));
  rte_mbuf* out[8];
  ASSERT_EQ(s->dequeue(out, 8, 0), 2u);
  EXPECT_EQ(out[0]->pkt_len, 1400u);
  EXPECT_EQ(out[1]->pkt_len, 1900u);
  rte_pktmbuf_free_bulk(out, 2);
  const uint64_t us = kHz / 1'000'000;        // 1 byte at 1 MB/s
  EXPECT_EQ(s->dequeue(out, 8, 5 * us), 0u);  // busy 3,295 bytes: not less than 3,292
  EXPECT_EQ(s->queued(), 2u);
  // At 10 us (busy 3,290) the 1,900-byte head goes, alone: then busy 5,190.
  ASSERT_EQ(s->dequeue(out, 8, 10 * us), 1u);
  EXPECT_EQ(out[0]->pkt_len, 1900u);
  rte_pktmbuf_free(out[0]);
  EXPECT_EQ(s->dequeue(out, 8, 1000 * us), 0u);  // busy 4,200
  ASSERT_EQ(s->dequeue(out, 8, 3000 * us), 1u);  // busy 2,200
  EXPECT_EQ(out[0]->pkt_len, 100u);
  rte_pktmbuf_free(out[0]);
  EXPECT_EQ(s->queued(), 0u);
}

// A line's tat compared in wrapping arithmetic: a line idle for 1.5 x 2^55
// cycles (wrapped: it would look busy for 2^54 cycles) is reset and sends
// at once, as does one kept near the clock by refreshLineBucket.
TEST_F(ShaperTest, ALineIdleLongEnoughToWrapSendsAtOnce) {
  for (const bool refreshed : {false, true}) {
    SCOPED_TRACE(refreshed);
    LineBucket line;
    auto s = Shaper::create({1'000'000, 64, 1518}, 0, nullptr, kHz, &line);
    ASSERT_TRUE(s);
    rte_mbuf* out[8];
    ASSERT_TRUE(s->enqueue(packet(0), 0));
    ASSERT_EQ(s->dequeue(out, 8, 0), 1u);
    rte_pktmbuf_free(out[0]);
    // 1.5 x 2^55 cycles: tat - now, in 1/256 cycles, wraps to +2^62.
    const uint64_t later = (uint64_t{3} << 54) + 12345;
    if (refreshed) {
      for (uint64_t t = kHz; t < later; t += later / 64) {  // as if every ~2^50 cycles
        refreshLineBucket(line, t);
      }
      refreshLineBucket(line, later);
      EXPECT_EQ(line.tat.load(), later << 8) << "refreshLineBucket moved tat up to the clock";
    }
    ASSERT_TRUE(s->enqueue(packet(0), 0));
    ASSERT_TRUE(s->enqueue(packet(0), 0));
    EXPECT_EQ(s->dequeue(out, 8, later), 2u);
    rte_pktmbuf_free_bulk(out, 2);
  }
}

// Equal priorities in two shapers, one with 1,500-byte packets, the other
// with 64-byte ones: the large packets are not kept waiting for ever (a
// packet conforms whatever its size).
TEST_F(ShaperTest, SmallPacketsElsewhereDoNotStarveLargeOnes) {
  LineBucket line;
  auto [large, small] = twoOn(line);
  ASSERT_TRUE(large && small);
  std::array<uint64_t, 2> sent{};
  const uint64_t step = kHz / 1'000'000;  // polls 1 us apart
  for (uint64_t clock = 0; clock < kHz / 5; clock += step) {
    while (large->room(5)) {
      ASSERT_TRUE(large->enqueue(packet(5, 1500), 5));
    }
    while (small->room(5)) {
      ASSERT_TRUE(small->enqueue(packet(5, 64), 5));
    }
    Shaper* order[2] = {large.get(), small.get()};
    if (random_() & 1) {
      std::swap(order[0], order[1]);
    }
    for (Shaper* s : order) {
      rte_mbuf* pkts[32];
      const unsigned n = s->dequeue(pkts, 32, clock);
      for (unsigned i = 0; i < n; ++i) {
        sent[s == large.get() ? 0 : 1] += pkts[i]->pkt_len;
      }
      rte_pktmbuf_free_bulk(pkts, n);
    }
  }
  const double total = static_cast<double>(sent[0] + sent[1]);
  EXPECT_NEAR(total, kLine * 0.2 + kLine / 200.0, 2 * 1500.0);
  EXPECT_GT(static_cast<double>(sent[0]), 0.25 * total) << "the large packets starved";
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

// The line's shapers in several workers share its bucket (LineBucket).

TEST_F(ShaperTest, ShapersOfOneLineTogetherSendItsRateAndShareIt) {
  const double rate = kLine;
  LineBucket line;
  auto [a, b] = twoOn(line);
  ASSERT_TRUE(a && b);
  const double seconds = 0.2;
  const auto out = runAll(seconds, {{a.get(), offering({{3, 0}})}, {b.get(), offering({{3, 0}})}});
  const double sa = static_cast<double>(out[0][3]), sb = static_cast<double>(out[1][3]);
  // Not twice the rate (each its own), not half of it (capacity / N).
  EXPECT_NEAR(sa + sb, rate * seconds + rate / 200, 3 * kFrame);
  // Equal priorities share it as the workers find room: about evenly.
  EXPECT_GT(sa, 0.35 * (sa + sb));
  EXPECT_GT(sb, 0.35 * (sa + sb));
}

TEST_F(ShaperTest, AHigherPriorityInAnotherShaperTakesTheLineUntilItGoes) {
  const double rate = kLine;
  const double bucket = rate / 200;
  LineBucket line;
  auto [bulk, train] = twoOn(line);
  ASSERT_TRUE(bulk && train);
  const double seconds = 0.2;
  auto out = runAll(seconds, {{bulk.get(), offering({{0, 0}})}, {train.get(), offering({{6, 0}})}});
  // The bulk shaper gets at most the bucket it found full before the train
  // shaper first queued (that shaper's backlog is known from its first
  // dequeue on), then nothing.
  EXPECT_LE(static_cast<double>(out[0][0]), bucket + kFrame);
  EXPECT_GE(static_cast<double>(out[1][6]), rate * seconds - 3 * kFrame);
  EXPECT_NEAR(static_cast<double>(out[0][0] + out[1][6]), rate * seconds + bucket, 3 * kFrame);
  EXPECT_EQ(line.backlog.load(), (1ull << 0) | (1ull << 48));  // both hold packets

  // The train shaper freed (its line changed, its worker stopped): its
  // backlog goes with it, and the bulk one gets the whole line.
  train.reset();
  EXPECT_EQ(line.backlog.load(), 1ull);
  out = runAll(seconds, {{bulk.get(), offering({{0, 0}})}});
  EXPECT_NEAR(static_cast<double>(out[0][0]), rate * seconds, 3 * kFrame);
}

TEST_F(ShaperTest, ALightHigherPriorityInAnotherShaperGetsAllItOffers) {
  const double rate = kLine;
  LineBucket line;
  auto [bulk, train] = twoOn(line);
  ASSERT_TRUE(bulk && train);
  const double seconds = 0.2;
  const auto out = runAll(
      seconds, {{bulk.get(), offering({{2, 0}})}, {train.get(), offering({{6, 0.3 * rate}})}});
  const double high = static_cast<double>(out[1][6]), low = static_cast<double>(out[0][2]);
  EXPECT_NEAR(high, 0.3 * rate * seconds, 2 * kFrame);               // everything it offered
  EXPECT_NEAR(high + low, rate * seconds + rate / 200, 3 * kFrame);  // the line is full
  EXPECT_EQ(total(out[0]), out[0][2]);
}

// A replaced shaper draining what it holds (its line changed) sends even
// below another shaper's priority, and tells the line nothing of its own:
// it must empty before the line's new shaper in its worker may send.
TEST_F(ShaperTest, ADrainingShaperNeitherYieldsNorHoldsOthersBack) {
  LineBucket line;
  auto [old, other] = twoOn(line);
  ASSERT_TRUE(old && other);
  rte_mbuf* out[32];
  for (int i = 0; i < 200; ++i) {
    ASSERT_TRUE(other->enqueue(packet(3), 3));
  }
  const unsigned n = other->dequeue(out, 32, 0);  // the bucket's worth; it still holds some
  rte_pktmbuf_free_bulk(out, n);
  EXPECT_EQ(line.backlog.load(), uint64_t{1} << 24);
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(old->enqueue(packet(0), 0));
  }
  const uint64_t later = kHz / 10;              // the bucket full again
  EXPECT_EQ(old->dequeue(out, 32, later), 0u);  // not draining: yields to priority 3
  EXPECT_EQ(line.backlog.load(), (uint64_t{1} << 24) | 1);
  EXPECT_EQ(old->dequeue(out, 32, later, true), 4u);  // draining: sends, withdraws its backlog
  rte_pktmbuf_free_bulk(out, 4);
  EXPECT_EQ(line.backlog.load(), uint64_t{1} << 24);
}

// Two threads (two workers) on the real TSC, each with its shaper of one
// line, backlogged at one priority: together never more than the rate, the
// bucket and the one batch (32 packets) each may take at the same instant
// as the other; both sent.
TEST_F(ShaperTest, WorkersOnTheRealTscTogetherNeverMoreThanTheRate) {
  const uint64_t rate = 100'000'000 / 8;
  LineBucket line;
  line.tat = rte_rdtsc() << 8;
  constexpr unsigned kWorkers = 2, kHeld = 256;
  std::array<std::unique_ptr<Shaper>, kWorkers> shapers;
  std::array<std::vector<rte_mbuf*>, kWorkers> mbufs;
  for (unsigned w = 0; w < kWorkers; ++w) {
    shapers[w] = Shaper::create({rate, 1024, 1518}, 0, nullptr, 0, &line);
    ASSERT_TRUE(shapers[w]);
    for (unsigned i = 0; i < kHeld; ++i) {
      mbufs[w].push_back(packet(static_cast<uint8_t>(w)));
      ASSERT_NE(mbufs[w].back(), nullptr);
    }
  }
  const uint64_t hz = rte_get_tsc_hz();
  const uint64_t start = rte_rdtsc();
  std::array<uint64_t, kWorkers> sent{};
  std::array<uint64_t, kWorkers> ended{};
  std::vector<std::thread> threads;
  for (unsigned w = 0; w < kWorkers; ++w) {
    threads.emplace_back([&, w] {
      Shaper& s = *shapers[w];
      // One priority: both take tokens all along (the compare-and-swap
      // races); a higher one would leave the other little.
      const uint8_t prio = 2;
      for (rte_mbuf* m : mbufs[w]) {
        s.enqueue(m, prio);
      }
      uint64_t now = start;
      for (; now - start < hz / 5; now = rte_rdtsc()) {
        rte_mbuf* pkts[32];
        const unsigned n = s.dequeue(pkts, 32, now);
        for (unsigned i = 0; i < n; ++i) {
          sent[w] += pkts[i]->pkt_len;
          s.enqueue(pkts[i], prio);  // the same packets again: always backlogged
        }
      }
      ended[w] = now;
    });
  }
  for (auto& t : threads) {
    t.join();
  }
  const double elapsed =
      static_cast<double>(std::max(ended[0], ended[1]) - start) / static_cast<double>(hz);
  const double bound = static_cast<double>(rate) * (elapsed + 0.005) + kWorkers * 32.0 * kFrame;
  EXPECT_LE(static_cast<double>(sent[0] + sent[1]), bound);
  EXPECT_GT(sent[0], 0u);
  EXPECT_GT(sent[1], 0u);
  shapers = {};  // frees the packets they hold
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
