// Line shaping with several workers (docs/policy.md, "Priority when a line
// is full", "Several workers"), on shaper_pipeline_fixture.hpp's two
// tenants and line: two Pipelines sharing the line buckets, as the
// Dataplane's workers do, and two worker threads of a real Dataplane.  The
// line's rate holds for both together; priority holds across them.
#include <gtest/gtest.h>

#include "tests/component/policy/shaper_pipeline_fixture.hpp"
#include "tests/support/eal.hpp"

namespace mcgw::engine::shaping_test {
namespace {

const auto* const kEal =
    ::testing::AddGlobalTestEnvironment(new test::EalEnvironment("shaper_workers_test", 1024));

// Two workers (two pipelines sharing the line buckets, as the Dataplane's
// do), tables for two: bulk's packets queue in one worker, train's in the
// other.  The line's rate holds for both together; bulk's worker polls
// first and finds the bucket full (5 frames), then train's worker holds
// priority 6 and everything of train's leaves before the rest of bulk's.
TEST_F(ShaperPipelineTest, TwoWorkersShareTheLineAndItsPriorities) {
  const ForwardingTables& t = build(kShaped8M, 2);
  auto buckets = std::make_unique<std::array<policy::LineBucket, kMaxLines>>();
  for (auto& b : *buckets) {
    b.tat = rte_rdtsc() << 8;
  }
  WorkerCounters bulk_counters;
  pipeline_ = std::make_unique<Pipeline>(0, pool_, counters_.get(), &health_, nullptr, nullptr,
                                         nullptr, buckets->data());
  auto bulk_worker = std::make_unique<Pipeline>(0, pool_, &bulk_counters, &health_, nullptr,
                                                nullptr, nullptr, buckets->data());
  pipeline_->adoptShapers(t);
  bulk_worker->adoptShapers(t);
  const uint64_t start = rte_get_tsc_cycles();
  sendRun(t, kBulk, 0x200, 16, bulk_worker.get());
  sendRun(t, kTrain, 0x100, 16);
  std::vector<Out> out;
  uint64_t bytes = 0;
  const uint64_t hz = rte_get_tsc_hz();
  while ((pipeline_->shaping() || bulk_worker->shaping()) &&
         rte_get_tsc_cycles() - start < 5 * hz) {
    bulk_worker->serviceShapers(t);
    bulk_worker->flush();
    service(t);
    for (const Out& o : sent()) {
      out.push_back(o);
      bytes += o.size;
    }
    const double allowed =
        double(kRate8M) * double(rte_get_tsc_cycles() - start) / double(hz) + kBucket8M + kFrame;
    ASSERT_LE(double(bytes), allowed) << "the two workers together above the line's rate";
  }
  ASSERT_EQ(out.size(), 32u);
  // Bulk's first frames (the full bucket), then all of train's, then bulk's.
  size_t first_train = 0;
  while (first_train < out.size() && out[first_train].vni == kBulkVni) {
    ++first_train;
  }
  EXPECT_GE(first_train, 4u);
  EXPECT_LE(first_train, 6u) << "bulk took more than the bucket it found";
  std::vector<uint32_t> want(first_train, kBulkVni);
  want.resize(first_train + 16, kTrainVni);
  want.resize(32, kBulkVni);
  EXPECT_EQ(vnis(out), want);
  EXPECT_EQ(buckets->at(line(t).slot).backlog.load(), 0u);  // nothing held: nothing published
  bulk_worker.reset();
}

// The same with a real Dataplane: two worker threads, ports on rte_rings
// (an RX ring the test fills; a TX ring per port that both workers' TX
// queues share).  Receive queues go to the workers round-robin: lan0
// (train) to worker 0, lan1 (bulk) to worker 1, so the tenants' packets
// are queued by different workers into the one shaped line (8M, queues
// of 512).  Train's 200 frames, then, once train's first has left, bulk's
// 200: all of train's leave before any of bulk's, and the two together
// stay within the line's rate.
TEST_F(ShaperPipelineTest, TwoWorkerThreadsOfADataplaneKeepThePriorityAcrossThem) {
  using Port = test::RingPair;
  constexpr unsigned kWorkers = 2, kEach = 200;
  std::vector<Port> dp_ports;
  for (const char* name : {"dpw_lan0", "dpw_lan1", "dpw_wan0"}) {
    dp_ports.push_back(test::ringPair(name, pool_, kWorkers));
    ASSERT_TRUE(dp_ports.back().rx && dp_ports.back().tx);
  }
  const Port &lan0 = dp_ports[0], &lan1 = dp_ports[1], &wan0 = dp_ports[2];
  config::ConfigPtr c =
      loadConfig(configText("        capacity: 8M\n        queue-ms: 1000\n", kWorkers));
  ASSERT_TRUE(c);
  const std::map<std::string, OpenPort> open = {{"lan0", {lan0.id, kLanMac[0], 1}},
                                                {"lan1", {lan1.id, kLanMac[1], 1}},
                                                {"wan0", {wan0.id, kWanMac, 1}}};
  auto dp = Dataplane::start({}, pool_, kWorkers);
  ASSERT_TRUE(dp.ok()) << dp.error();
  ASSERT_EQ((*dp)->workers(), kWorkers);
  auto built = builder_->build(TablesInput::fromConfig(*c, open, kWorkers),
                               [d = dp->get()] { d->synchronize(); });
  ASSERT_TRUE(built.ok()) << built.error();
  ASSERT_EQ(line(**built).shape.queue, 512u);
  ASSERT_EQ((*built)->poll[0].front().port, lan0.id);  // train: worker 0
  ASSERT_EQ((*built)->poll[1].front().port, lan1.id);  // bulk: worker 1
  (*dp)->setLineUp(line(**built).slot, true);

  // Train's frames first, the tables published; once the first of them
  // has left (train's worker then holds the rest, which the line knows),
  // bulk's frames.  (Both at once, the two workers' first batches may
  // overlap: each may find the bucket full at the same instant.)
  auto feed = [&](int lan, rte_ring* ring) {
    for (unsigned i = 0; i < kEach; ++i) {
      const Bytes f = lanFrame(lan, static_cast<uint16_t>(i));
      rte_mbuf* m = rte_pktmbuf_alloc(pool_);
      ASSERT_NE(m, nullptr);
      std::memcpy(rte_pktmbuf_append(m, static_cast<uint16_t>(f.size())), f.data(), f.size());
      ASSERT_EQ(rte_ring_enqueue(ring, m), 0);
    }
  };
  ASSERT_NO_FATAL_FAILURE(feed(kTrain, lan0.rx));
  const uint64_t hz = rte_get_tsc_hz(), start = rte_get_tsc_cycles();
  (*dp)->publish(std::move(*built));
  std::vector<Out> out;
  uint64_t bytes = 0;
  bool bulk_fed = false;
  while (out.size() < 2 * kEach && rte_get_tsc_cycles() - start < 10 * hz) {
    void* objs[64];
    const unsigned n = rte_ring_dequeue_burst(wan0.tx, objs, 64, nullptr);
    for (unsigned i = 0; i < n; ++i) {
      bytes += static_cast<rte_mbuf*>(objs[i])->pkt_len;
      take(static_cast<rte_mbuf*>(objs[i]), wan0.id, true, out);
    }
    if (!out.empty() && !bulk_fed) {
      ASSERT_NO_FATAL_FAILURE(feed(kBulk, lan1.rx));
      bulk_fed = true;
    }
    // The rate, the bucket, and a frame each worker may take beyond it.
    const double allowed = double(kRate8M) * double(rte_get_tsc_cycles() - start) / double(hz) +
                           kBucket8M + kWorkers * kFrame;
    ASSERT_LE(double(bytes), allowed) << "the two workers together above the line's rate";
    rte_delay_us_sleep(200);
  }
  dp->reset();  // stops the workers; whatever a shaper still held is freed
  for (const Port& p : dp_ports) {
    void* objs[64];
    unsigned n;
    while ((n = rte_ring_dequeue_burst(p.tx, objs, 64, nullptr)) > 0) {
      for (unsigned i = 0; i < n; ++i) {
        ADD_FAILURE() << "port " << p.id << " sent more";
        rte_pktmbuf_free(static_cast<rte_mbuf*>(objs[i]));
      }
    }
    EXPECT_EQ(rte_ring_count(p.rx), 0u);
    rte_eth_dev_stop(p.id);
    rte_eth_dev_close(p.id);
    rte_ring_free(p.rx);
    rte_ring_free(p.tx);
  }
  ASSERT_EQ(out.size(), 2 * kEach) << "not all frames left the line within 10 s";
  // All of train's (priority 6, worker 0), then bulk's (priority 0, worker
  // 1), each in its order.
  std::vector<uint32_t> want(kEach, kTrainVni);
  want.resize(2 * kEach, kBulkVni);
  EXPECT_EQ(vnis(out), want);
  const std::vector<uint16_t> each = range(0, kEach);
  std::vector<uint16_t> want_tags = each;
  want_tags.insert(want_tags.end(), each.begin(), each.end());
  EXPECT_EQ(tags(out), want_tags);
}

}  // namespace
}  // namespace mcgw::engine::shaping_test
