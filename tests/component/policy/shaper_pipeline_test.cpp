// Line shaping in the fast path with one worker (docs/policy.md, "Priority
// when a line is full"), on shaper_pipeline_fixture.hpp's two tenants and
// line.
//
// What the tables carry (ShapeParams per worker, priorities); a line left
// unshaped until the worker adopts shapers; nothing leaves a shaped line
// before serviceShapers(), then never more than the rate allows and
// everything admitted within a deadline; strict priority; a full class
// queue drops its own tenant's packets only (line-full); usage and line
// counters count admitted packets only; a changed capacity keeps the
// line's packets in order (also across two quick changes) and frees the
// old shaper; a removed capacity; a pipeline destroyed with packets queued
// gives every mbuf back.  (Several workers: shaper_workers_test.cpp.)
#include <gtest/gtest.h>

#include "tests/component/policy/shaper_pipeline_fixture.hpp"
#include "tests/support/eal.hpp"

namespace mcgw::engine::shaping_test {
namespace {

const auto* const kEal =
    ::testing::AddGlobalTestEnvironment(new test::EalEnvironment("shaper_pipeline_test", 1024));

// The tables: the line's capacity in bytes/s, each worker's queue for
// queue-ms at its share, the frame it sizes the bucket by; the
// tenants' priorities in their tunnels and pairs; the pairs' capacity.
TEST_F(ShaperPipelineTest, TablesCarryTheShapeAndThePriorities) {
  const ForwardingTables& t2 = build("        capacity: 100M\n        queue-ms: 200\n", 2);
  const LineEntry& l = line(t2);
  EXPECT_EQ(l.shape.rate_bytes, 100'000'000u / 8);  // the line's: the workers share its bucket
  // Each worker's queues: 200 ms at 50 Mbit/s in 1500-byte packets: 833,
  // rounded up to 1024.
  EXPECT_EQ(l.shape.queue, 1024u);
  EXPECT_EQ(l.shape.queue, policy::queuePackets(50'000'000, 200));
  EXPECT_EQ(l.shape.mtu, 1518u);
  EXPECT_EQ(l.shape.bucket, 0u);
  ASSERT_EQ(t2.tunnels.size(), 2u);
  for (const TunnelEntry& tu : t2.tunnels) {
    SCOPED_TRACE(tu.vni);
    EXPECT_EQ(tu.priority, tu.vni == kTrainVni ? 6 : 0);
  }
  ASSERT_EQ(t2.tenant_lines.size(), 2u);
  for (const TenantLineEntry& e : t2.tenant_lines) {
    SCOPED_TRACE(e.tenant);
    EXPECT_EQ(e.capacity_bits, 100'000'000u);
    EXPECT_EQ(e.priority, e.tenant == "train" ? 6 : 0);
  }

  // One worker, the default queue-ms (50): 50 ms at 8M is 33 packets, 64.
  const ForwardingTables& t1 = build("        capacity: 8M\n", 1);
  EXPECT_EQ(line(t1).shape.rate_bytes, kRate8M);
  EXPECT_EQ(line(t1).shape.queue, 64u);
  // The shaped test line: 16 packets per class.
  EXPECT_EQ(line(build(kShaped8M)).shape.queue, 16u);

  // No capacity: not shaped; the pairs say so, the priority stays.
  const ForwardingTables& t0 = build("");
  EXPECT_EQ(line(t0).shape, policy::ShapeParams{});
  for (const TenantLineEntry& e : t0.tenant_lines) {
    EXPECT_EQ(e.capacity_bits, 0u);
    EXPECT_EQ(e.priority, e.tenant == "train" ? 6 : 0);
  }
}

// Shaped tables but no adoptShapers(): the worker has no shaper for the
// line, so its packets leave at once, none queued.
TEST_F(ShaperPipelineTest, WithoutAdoptingTheLineIsNotShaped) {
  const ForwardingTables& t = build(kShaped8M);
  sendRun(t, kBulk, 0x100, 20);
  EXPECT_FALSE(pipeline_->shaping());
  const auto out = sent();
  EXPECT_EQ(tags(out), range(0x100, 20));
  EXPECT_EQ(counters_->shaped.get(), 0u);
  EXPECT_EQ(allDrops(), 0u);
}

// Adopted: process() sends nothing into the line; serviceShapers() sends
// at most the bucket at first, more as time passes, never above the rate,
// and everything admitted within a deadline, in order.
TEST_F(ShaperPipelineTest, NothingLeavesBeforeServiceThenOnlyTheRate) {
  const ForwardingTables& t = build(kShaped8M);
  const uint64_t start = rte_get_tsc_cycles();
  pipeline_->adoptShapers(t);
  EXPECT_FALSE(pipeline_->shaping());
  sendRun(t, kBulk, 0x100, 16);
  EXPECT_TRUE(pipeline_->shaping());
  EXPECT_TRUE(sent().empty()) << "a shaped packet left before serviceShapers()";
  // Counted as the line's when queued.
  const uint16_t slot = pairSlot(t, "bulk");
  EXPECT_EQ(counters_->usage_tx[slot].packets.get(), 16u);
  EXPECT_EQ(counters_->line_tx[line(t).slot].packets.get(), 16u);

  service(t);
  const auto first = sent();
  EXPECT_EQ(counters_->shaped.get(), 16u);
  // The bucket (5000 bytes) holds five 1000-byte frames and starts full
  // (the line was idle): five leave at once, however late this poll is.
  EXPECT_EQ(first.size(), kBucket8M / kFrame);
  // 20 ms later (or more, on a busy machine) the bucket is full again, and
  // never fuller: five more.
  rte_delay_us_block(20'000);
  service(t);
  const auto second = sent();
  EXPECT_EQ(second.size(), kBucket8M / kFrame);
  const auto rest =
      drain(t, 5.0, kRate8M, kBucket8M, start, (first.size() + second.size()) * kFrame);
  std::vector<Out> all = first;
  all.insert(all.end(), second.begin(), second.end());
  all.insert(all.end(), rest.begin(), rest.end());
  EXPECT_EQ(tags(all), range(0x100, 16));
  for (const Out& o : all) {
    EXPECT_EQ(o.size, kFrame);
  }
  EXPECT_EQ(allDrops(), 0u);
}

// A larger backlog over a longer span: the bytes out never exceed
// rate x time + bucket at any point, and all of it leaves.
TEST_F(ShaperPipelineTest, BacklogLeavesAtTheRate) {
  const ForwardingTables& t = build("        capacity: 8M\n");  // 64 per class
  const uint64_t start = rte_get_tsc_cycles();
  pipeline_->adoptShapers(t);
  sendRun(t, kBulk, 0x100, 30);
  sendRun(t, kBulk, 0x200, 30);
  ASSERT_TRUE(sent().empty());
  const auto out = drain(t, 5.0, kRate8M, kBucket8M, start);
  std::vector<uint16_t> want = range(0x100, 30);
  const auto more = range(0x200, 30);
  want.insert(want.end(), more.begin(), more.end());
  EXPECT_EQ(tags(out), want);
  // 60,000 bytes at 1,000,000 bytes/s from a full bucket (5000 bytes): at
  // least 55 ms.
  const double took = double(rte_get_tsc_cycles() - start) / double(rte_get_tsc_hz());
  EXPECT_GE(took, 0.054) << "60 kB left an 8 Mbit/s line in " << took * 1000 << " ms";
}

// Bulk's packets first in the burst, train's after: train (priority 6)
// leaves first, each tenant in its own order.
TEST_F(ShaperPipelineTest, HigherPriorityLeavesFirst) {
  const ForwardingTables& t = build(kShaped8M);
  pipeline_->adoptShapers(t);
  std::vector<std::pair<int, uint16_t>> burst;
  for (uint16_t i = 0; i < 12; ++i) {
    burst.emplace_back(kBulk, static_cast<uint16_t>(0x200 + i));
  }
  for (uint16_t i = 0; i < 8; ++i) {
    burst.emplace_back(kTrain, static_cast<uint16_t>(0x100 + i));
  }
  send(t, burst);
  const auto out = drain(t, 5.0);
  std::vector<uint32_t> want(8, kTrainVni);
  want.resize(20, kBulkVni);
  EXPECT_EQ(vnis(out), want);
  std::vector<uint16_t> want_tags = range(0x100, 8);
  const auto bulk = range(0x200, 12);
  want_tags.insert(want_tags.end(), bulk.begin(), bulk.end());
  EXPECT_EQ(tags(out), want_tags);
}

// Bulk offers 20 packets to its 16-packet queue: 4 dropped as line-full,
// counted in bulk's pair; train's 5 all admitted.  Usage and line counters
// count the admitted packets only, and those all leave.
TEST_F(ShaperPipelineTest, FullClassQueueDropsOnlyItsTenant) {
  const ForwardingTables& t = build(kShaped8M);
  pipeline_->adoptShapers(t);
  const uint16_t train = pairSlot(t, "train"), bulk = pairSlot(t, "bulk");
  ASSERT_NE(train, bulk);
  const uint16_t l = line(t).slot;
  std::vector<std::pair<int, uint16_t>> burst;
  for (uint16_t i = 0; i < 20; ++i) {
    burst.emplace_back(kBulk, static_cast<uint16_t>(0x200 + i));
  }
  for (uint16_t i = 0; i < 5; ++i) {
    burst.emplace_back(kTrain, static_cast<uint16_t>(0x100 + i));
  }
  send(t, burst);
  EXPECT_EQ(drops(DropReason::kLINE_FULL), 4u);
  EXPECT_EQ(toString(DropReason::kLINE_FULL), "line-full");
  EXPECT_EQ(allDrops(), 4u);
  EXPECT_EQ(counters_->line_full[bulk].get(), 4u);
  EXPECT_EQ(counters_->line_full[train].get(), 0u);
  EXPECT_EQ(counters_->usage_tx[bulk].packets.get(), 16u);
  EXPECT_EQ(counters_->usage_tx[bulk].bytes.get(), 16u * kFrame);
  EXPECT_EQ(counters_->usage_tx[train].packets.get(), 5u);
  EXPECT_EQ(counters_->usage_tx[train].bytes.get(), 5u * kFrame);
  EXPECT_EQ(counters_->line_tx[l].packets.get(), 21u);
  EXPECT_EQ(counters_->line_tx[l].bytes.get(), 21u * kFrame);

  const auto out = drain(t, 5.0);
  std::vector<uint16_t> want = range(0x100, 5);
  const auto b = range(0x200, 16);  // the first 16 of bulk's burst
  want.insert(want.end(), b.begin(), b.end());
  EXPECT_EQ(tags(out), want);
  EXPECT_EQ(counters_->shaped.get(), 21u);
  EXPECT_EQ(counters_->line_tx[l].packets.get(), 21u) << "counted once, when admitted";
  EXPECT_EQ(counters_->usage_tx[bulk].packets.get(), 16u);

  // Room again: a later burst is admitted in full.
  sendRun(t, kBulk, 0x300, 16);
  EXPECT_EQ(drops(DropReason::kLINE_FULL), 4u);
  EXPECT_EQ(tags(drain(t, 5.0)), range(0x300, 16));
}

// Flow audit at 1-in-1: the packets the full queue dropped are sampled as
// line-full on the line they were headed into, the others as forwarded.
TEST_F(ShaperPipelineTest, LineFullDropsAreSampledForFlowAudit) {
  rte_ring* flows = rte_ring_create_elem("shp_flows", sizeof(FlowSample), 4096, SOCKET_ID_ANY,
                                         RING_F_SP_ENQ | RING_F_SC_DEQ);
  ASSERT_NE(flows, nullptr);
  pipeline_ = std::make_unique<Pipeline>(0, pool_, counters_.get(), &health_, nullptr, flows);
  health_.flow_sampling.store(1);
  const ForwardingTables& t = build(kShaped8M);
  pipeline_->adoptShapers(t);
  sendRun(t, kBulk, 0x200, 20);  // 16 admitted, 4 dropped
  health_.flow_sampling.store(0);
  EXPECT_EQ(drops(DropReason::kLINE_FULL), 4u);
  unsigned forwarded = 0, full = 0;
  FlowSample f;
  while (rte_ring_sc_dequeue_elem(flows, &f, sizeof(f)) == 0) {
    EXPECT_EQ(f.line, line(t).slot);
    EXPECT_EQ(f.direction, static_cast<uint8_t>(FlowDirection::kToTunnel));
    if (f.status == static_cast<uint8_t>(FlowStatus::kLineFull)) {
      ++full;
      EXPECT_EQ(f.rule, kNoRule);
    } else {
      EXPECT_EQ(f.status, static_cast<uint8_t>(FlowStatus::kForwarded));
      ++forwarded;
    }
  }
  EXPECT_EQ(full, 4u);
  EXPECT_EQ(forwarded, 16u);
  EXPECT_EQ(tags(drain(t, 5.0)), range(0x200, 16));
  pipeline_.reset();
  rte_ring_free(flows);
}

// A changed capacity: a new shaper, and the old one's packets leave before
// any of the new one's, the line's order kept; once everything has left
// the old shaper is freed (its queues' memory).  Tables adopted again
// unchanged make no shaper.
TEST_F(ShaperPipelineTest, ChangedCapacityKeepsTheOrderAndFreesTheOldShaper) {
  const ForwardingTables& t1 = build(kShaped8M);
  const uint64_t a0 = mallocBytes();
  pipeline_->adoptShapers(t1);
  const uint64_t old_size = mallocBytes() - a0;
  ASSERT_GT(old_size, 0u);
  sendRun(t1, kBulk, 0x100, 12);
  service(t1);
  auto out = sent();
  ASSERT_LT(out.size(), 12u) << "the old shaper should still hold packets";

  const ForwardingTables& t2 = build("        capacity: 400M\n        queue-ms: 10\n");
  ASSERT_NE(line(t2).shape, line(t1).shape);
  ASSERT_EQ(line(t2).slot, line(t1).slot);
  const uint64_t b0 = mallocBytes();
  pipeline_->adoptShapers(t2);
  const uint64_t b1 = mallocBytes();
  ASSERT_GT(b1, b0) << "no new shaper";
  sendRun(t2, kBulk, 0x200, 12);
  // The new shaper's bucket (400M: 250 kB) would send all of its packets
  // at once; they wait for the old shaper's.
  const auto rest = drain(t2, 5.0);
  out.insert(out.end(), rest.begin(), rest.end());
  std::vector<uint16_t> want = range(0x100, 12);
  const auto more = range(0x200, 12);
  want.insert(want.end(), more.begin(), more.end());
  EXPECT_EQ(tags(out), want);
  EXPECT_EQ(mallocBytes(), b1 - old_size) << "the drained shaper was not freed";

  // Unchanged tables: the same shaper.
  const uint64_t c0 = mallocBytes();
  pipeline_->adoptShapers(t2);
  EXPECT_EQ(mallocBytes(), c0);
  sendRun(t2, kBulk, 0x300, 4);
  EXPECT_TRUE(sent().empty());
  EXPECT_EQ(tags(drain(t2, 5.0)), range(0x300, 4));
  EXPECT_EQ(allDrops(), 0u);
}

// Two changes before the first shaper has drained: three shapers of one
// line, whose packets still leave oldest shaper first.
TEST_F(ShaperPipelineTest, TwoQuickChangesKeepTheOrder) {
  const ForwardingTables& t1 = build(kShaped8M);
  pipeline_->adoptShapers(t1);
  sendRun(t1, kBulk, 0x100, 14);
  service(t1);
  auto out = sent();
  ASSERT_LT(out.size(), 14u);
  const ForwardingTables& t2 = build("        capacity: 16M\n        queue-ms: 10\n");
  pipeline_->adoptShapers(t2);
  sendRun(t2, kBulk, 0x200, 14);
  const ForwardingTables& t3 = build("        capacity: 400M\n        queue-ms: 10\n");
  pipeline_->adoptShapers(t3);
  sendRun(t3, kBulk, 0x300, 14);
  const auto rest = drain(t3, 5.0);
  out.insert(out.end(), rest.begin(), rest.end());
  std::vector<uint16_t> want = range(0x100, 14);
  for (uint16_t base : {0x200, 0x300}) {
    const auto more = range(base, 14);
    want.insert(want.end(), more.begin(), more.end());
  }
  EXPECT_EQ(tags(out), want);
}

// The capacity removed: the line is unshaped at once (new packets go
// straight out, never queued), what the shaper held still leaves, and
// then the shaper is gone.
TEST_F(ShaperPipelineTest, RemovedCapacityUnshapesTheLine) {
  const ForwardingTables& t1 = build(kShaped8M);
  const uint64_t a0 = mallocBytes();
  pipeline_->adoptShapers(t1);
  const uint64_t shaper_size = mallocBytes() - a0;
  ASSERT_GT(shaper_size, 0u);
  sendRun(t1, kBulk, 0x100, 12);
  service(t1);
  auto queued_out = sent();
  ASSERT_LT(queued_out.size(), 12u);

  const ForwardingTables& t2 = build("");
  const uint64_t b0 = mallocBytes();
  pipeline_->adoptShapers(t2);
  EXPECT_EQ(mallocBytes(), b0) << "no shaper for an unshaped line";
  EXPECT_TRUE(pipeline_->shaping()) << "the old shaper still holds packets";
  sendRun(t2, kTrain, 0x200, 3);
  EXPECT_EQ(tags(sent()), range(0x200, 3)) << "an unshaped line's packets leave at once";
  const auto rest = drain(t2, 5.0);
  queued_out.insert(queued_out.end(), rest.begin(), rest.end());
  EXPECT_EQ(tags(queued_out), range(0x100, 12));
  EXPECT_EQ(mallocBytes(), b0 - shaper_size) << "the drained shaper was not freed";
  pipeline_->adoptShapers(t2);
  EXPECT_FALSE(pipeline_->shaping());
  sendRun(t2, kBulk, 0x300, 20);
  EXPECT_EQ(tags(sent()), range(0x300, 20));
  EXPECT_EQ(counters_->shaped.get(), 12u);
  EXPECT_EQ(allDrops(), 0u);
}

// Destroyed with packets queued in two priorities, one of them held as
// the head waiting for tokens, and some queued in the last poll: every
// mbuf goes back to the pool.
TEST_F(ShaperPipelineTest, DestroyedPipelineFreesQueuedPackets) {
  const ForwardingTables& t = build(kShaped8M);
  pipeline_->adoptShapers(t);
  sendRun(t, kBulk, 0x100, 12);
  sendRun(t, kTrain, 0x200, 10);
  service(t);                    // a few sent, the rest queued
  sendRun(t, kTrain, 0x300, 4);  // queued in this poll
  sent();
  ASSERT_TRUE(pipeline_->shaping());
  ASSERT_GT(rte_mempool_in_use_count(pool_), 4u);
  pipeline_.reset();
  EXPECT_TRUE(sent().empty());
  EXPECT_EQ(rte_mempool_in_use_count(pool_), 0u) << "queued mbufs leaked";
}

}  // namespace
}  // namespace mcgw::engine::shaping_test
