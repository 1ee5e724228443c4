// Line shaping in the fast path (docs/policy.md, "Priority when a line is
// full"): the real Pipeline over tables from the real TablesBuilder
// (net_ring ports, EAL --no-huge, the real TSC the shapers read), two
// tenants on one line with a capacity: train (priority 6) and bulk
// (priority 0).
//
//   lan0 (train) 10.1.0.1/24 ─┐
//   lan1 (bulk)  10.5.0.1/24 ─┴─ wan0 203.0.113.1 ── site-b 203.0.113.10
//                                 (VXLAN, VNI 5001 / 5002, line l1)
//
// What the tables carry (ShapeParams per worker, priorities); a line left
// unshaped until the worker adopts shapers; nothing leaves a shaped line
// before serviceShapers(), then never more than the rate allows and
// everything admitted within a deadline; strict priority; a full class
// queue drops its own tenant's packets only (line-full); usage and line
// counters count admitted packets only; a changed capacity keeps the
// line's packets in order (also across two quick changes) and frees the
// old shaper; a removed capacity; a pipeline destroyed with packets queued
// gives every mbuf back.  Two workers sharing the line's bucket (two
// Pipelines; two worker threads of a Dataplane): the rate holds for both,
// priority across them.
#include <gtest/gtest.h>
#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "config/loader.hpp"
#include "dataplane/engine/counters.hpp"
#include "dataplane/engine/dataplane.hpp"
#include "dataplane/engine/drop_reason.hpp"
#include "dataplane/engine/pipeline.hpp"
#include "dataplane/engine/tables.hpp"
#include "dataplane/policy/shaper.hpp"
#include "tests/support/eal.hpp"
#include "tests/support/ring_port.hpp"

namespace mcgw::engine {
namespace {

const auto* const kEal =
    ::testing::AddGlobalTestEnvironment(new test::EalEnvironment("shaper_pipeline_test", 1024));

using Bytes = std::vector<uint8_t>;

constexpr size_t kEth = 14;
// Outer Ethernet, IPv4, UDP and VXLAN, then the inner Ethernet header.
constexpr size_t kInnerIp = 50 + kEth;
// Every test packet: 936 bytes of inner IP, a 1000-byte frame on the line.
constexpr uint16_t kIpLen = 936;
constexpr uint64_t kFrame = kIpLen + kInnerIp;
static_assert(kFrame == 1000);

const Mac kLanMac[2] = {{0x02, 0, 0, 0, 0x01, 0x01}, {0x02, 0, 0, 0, 0x05, 0x01}};
const Mac kWanMac = {0x02, 0, 0, 0, 0x02, 0x01};
const Mac kHostMac = {0x02, 0, 0, 0, 0x01, 0x10};
const std::array<uint8_t, 4> kHost4[2] = {{10, 1, 0, 10}, {10, 5, 0, 10}};
constexpr int kTrain = 0, kBulk = 1;  // by LAN port
constexpr uint32_t kTrainVni = 5001, kBulkVni = 5002;

// The config; `line_extra` goes into l1 (e.g. "        capacity: 8M\n"),
// `workers` worker lcores.
std::string configText(const std::string& line_extra, unsigned workers = 1) {
  std::string lcores;
  for (unsigned w = 1; w <= workers; ++w) {
    lcores += (w > 1 ? ", " : "") + std::to_string(w);
  }
  return R"(node:
  name: gw-a
  site: site-a
eal:
  hugepages: false
  workers: [)" +
         lcores + R"(]
ports:
  - name: lan0
    role: lan
    vdev: net_ring0
    addresses: [10.1.0.1/24]
    tenant: train
  - name: lan1
    role: lan
    vdev: net_ring1
    addresses: [10.5.0.1/24]
    tenant: bulk
  - name: wan0
    role: wan
    vdev: net_ring2
    addresses: [203.0.113.1/24]
    neighbors:
      - address: 203.0.113.10
        mac: 02:00:00:00:02:10
tenants:
  - name: train
    vni: 5001
    bandwidth:
      priority: 6
    routes:
      - prefix: 10.2.0.0/16
        peer: site-b
  - name: bulk
    vni: 5002
    routes:
      - prefix: 10.2.0.0/16
        peer: site-b
peers:
  - name: site-b
    lines:
      - name: l1
        port: wan0
        local-vtep: 203.0.113.1
        remote-vtep: 203.0.113.10
)" + line_extra;
}

// 8 Mbit/s: 1,000,000 bytes/s, a 5000-byte bucket (5 ms, above two
// 1646-byte frames), 16 packets per class (10 ms at 8M is 6 packets).
constexpr uint64_t kRate8M = 1'000'000;
constexpr uint64_t kBucket8M = 5000;
const std::string kShaped8M = "        capacity: 8M\n        queue-ms: 10\n";

void put16(Bytes& b, size_t at, uint16_t v) {
  b[at] = static_cast<uint8_t>(v >> 8);
  b[at + 1] = static_cast<uint8_t>(v);
}
uint16_t get16(const Bytes& b, size_t at) {
  return static_cast<uint16_t>(b[at] << 8 | b[at + 1]);
}
uint16_t checksum(const Bytes& b, size_t from, size_t len) {
  uint32_t sum = 0;
  for (size_t i = 0; i + 1 < len; i += 2) {
    sum += static_cast<uint32_t>(b[from + i] << 8 | b[from + i + 1]);
  }
  while (sum >> 16) {
    sum = (sum & 0xffff) + (sum >> 16);
  }
  return static_cast<uint16_t>(~sum);
}

// A UDP packet of kIpLen bytes from `lan`'s host to 10.2.3.4, tagged by
// its IPv4 ID.
Bytes lanFrame(int lan, uint16_t tag) {
  Bytes f(kLanMac[lan].begin(), kLanMac[lan].end());
  f.insert(f.end(), kHostMac.begin(), kHostMac.end());
  f.push_back(0x08);
  f.push_back(0x00);
  Bytes ip = {0x45, 0, 0, 0, 0, 0, 0x40, 0, 64, 17, 0, 0};
  ip.insert(ip.end(), kHost4[lan].begin(), kHost4[lan].end());
  ip.insert(ip.end(), {10, 2, 3, 4});
  put16(ip, 2, kIpLen);
  put16(ip, 4, tag);
  put16(ip, 10, checksum(ip, 0, 20));
  Bytes u(kIpLen - 20, 0);
  put16(u, 0, 40000);
  put16(u, 2, 9);
  put16(u, 4, static_cast<uint16_t>(u.size()));
  f.insert(f.end(), ip.begin(), ip.end());
  f.insert(f.end(), u.begin(), u.end());
  return f;
}

// A frame wan0 sent: its VNI and its inner packet's tag.
struct Out {
  uint32_t vni = 0;
  uint16_t tag = 0;
  size_t size = 0;
  bool operator==(const Out&) const = default;
};

config::ConfigPtr loadConfig(const std::string& text) {
  auto c = config::loadConfigText(text, "shaper_pipeline_test.yaml");
  if (!c.ok()) {
    std::string e;
    for (const auto& x : c.error()) {
      e += x.toString() + "\n";
    }
    ADD_FAILURE() << e;
    return nullptr;
  }
  return *c;
}

uint64_t mallocBytes() {
  rte_malloc_socket_stats s{};
  EXPECT_EQ(rte_malloc_get_socket_stats(static_cast<int>(rte_socket_id()), &s), 0);
  return s.heap_allocsz_bytes;
}

class ShaperPipelineTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    pool_ = rte_pktmbuf_pool_create("shp_pool", 4095, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
                                    static_cast<int>(rte_socket_id()));
    ASSERT_NE(pool_, nullptr) << rte_strerror(rte_errno);
    lan_[0] = test::ringPort("shp_lan0", pool_);
    lan_[1] = test::ringPort("shp_lan1", pool_);
    wan0_ = test::ringPort("shp_wan0", pool_);
  }
  static void TearDownTestSuite() {
    for (test::RingPort* p : {&lan_[0], &lan_[1], &wan0_}) {
      rte_eth_dev_stop(p->id);
      rte_eth_dev_close(p->id);
      rte_ring_free(p->ring);
    }
    rte_mempool_free(pool_);
  }

  void SetUp() override {
    counters_ = std::make_unique<WorkerCounters>();
    for (auto& up : health_.up) {
      up.store(true);
    }
    pipeline_ = std::make_unique<Pipeline>(0, pool_, counters_.get(), &health_);
    builder_ = std::make_unique<TablesBuilder>();
  }
  void TearDown() override {
    pipeline_.reset();
    tables_.clear();
    builder_->clear();
    builder_.reset();
    sent();
    for (const test::RingPort* p : {&lan_[0], &lan_[1], &wan0_}) {
      EXPECT_EQ(rte_ring_count(p->ring), 0u);
    }
    EXPECT_EQ(rte_mempool_in_use_count(pool_), 0u) << "mbufs leaked";
  }

  static std::map<std::string, OpenPort> ports() {
    return {{"lan0", {lan_[0].id, kLanMac[0], 1}},
            {"lan1", {lan_[1].id, kLanMac[1], 1}},
            {"wan0", {wan0_.id, kWanMac, 1}}};
  }

  // Tables from the config with `line_extra` for `workers` workers; kept
  // alive (a worker may still use earlier ones).
  const ForwardingTables& build(const std::string& line_extra, unsigned workers = 1) {
    config::ConfigPtr c = loadConfig(configText(line_extra, workers));
    if (!c) {
      throw std::runtime_error("config refused");
    }
    configs_.push_back(c);
    auto built = builder_->build(TablesInput::fromConfig(*c, ports(), workers), {});
    EXPECT_TRUE(built) << built.error();
    if (!built) {
      throw std::runtime_error(built.error());
    }
    tables_.push_back(std::move(*built));
    return *tables_.back();
  }

  // The frames (LAN port, tag) as one process() call of `worker` (default:
  // pipeline_), flushed.
  void send(const ForwardingTables& t, const std::vector<std::pair<int, uint16_t>>& frames,
            Pipeline* worker = nullptr) {
    Pipeline& p = worker ? *worker : *pipeline_;
    std::vector<rte_mbuf*> mbufs;
    for (const auto& [lan, tag] : frames) {
      const Bytes f = lanFrame(lan, tag);
      rte_mbuf* m = rte_pktmbuf_alloc(pool_);
      ASSERT_NE(m, nullptr);
      std::memcpy(rte_pktmbuf_append(m, static_cast<uint16_t>(f.size())), f.data(), f.size());
      m->port = lan_[lan].id;
      mbufs.push_back(m);
    }
    p.process(t, mbufs.data(), static_cast<uint16_t>(mbufs.size()));
    p.flush();
  }
  // `n` frames of one LAN port tagged from `first`.
  void sendRun(const ForwardingTables& t, int lan, uint16_t first, unsigned n,
               Pipeline* worker = nullptr) {
    std::vector<std::pair<int, uint16_t>> frames;
    for (unsigned i = 0; i < n; ++i) {
      frames.emplace_back(lan, static_cast<uint16_t>(first + i));
    }
    send(t, frames, worker);
  }

  // A poll's shaping: serviceShapers(), then the TX buffers flushed (the
  // worker flushes a poll that received nothing).
  void service(const ForwardingTables& t) {
    pipeline_->serviceShapers(t);
    pipeline_->flush();
  }

  // A frame `port` sent, decoded into `out` (and freed); a frame that is
  // no tunnel packet from the WAN port is a failure.
  static void take(rte_mbuf* m, uint16_t port, bool wan, std::vector<Out>& out) {
    const auto* d = rte_pktmbuf_mtod(m, const uint8_t*);
    const Bytes f(d, d + m->data_len);
    rte_pktmbuf_free(m);
    if (!wan || f.size() < kInnerIp + 20 || get16(f, 12) != 0x0800 ||
        get16(f, kInnerIp - 2) != 0x0800) {
      ADD_FAILURE() << "port " << port << " sent a frame of " << f.size()
                    << " bytes that is no tunnel packet";
      return;
    }
    Out o;
    o.vni = uint32_t{f[kEth + 32]} << 16 | uint32_t{f[kEth + 33]} << 8 | f[kEth + 34];
    o.tag = get16(f, kInnerIp + 4);
    o.size = f.size();
    out.push_back(o);
  }

  // What wan0 sent since the last call, decoded; anything else on the
  // ports is a failure.
  static std::vector<Out> sent() {
    std::vector<Out> out;
    for (const test::RingPort* p : {&lan_[0], &lan_[1], &wan0_}) {
      void* objs[64];
      unsigned n;
      while ((n = rte_ring_dequeue_burst(p->ring, objs, 64, nullptr)) > 0) {
        for (unsigned i = 0; i < n; ++i) {
          take(static_cast<rte_mbuf*>(objs[i]), p->id, p == &wan0_, out);
        }
      }
    }
    return out;
  }

  // serviceShapers() until the pipeline holds nothing or `seconds` pass;
  // everything sent, in order.  `bound`: checks after each call that the
  // bytes sent since `since` (TSC) stay within rate x time + bucket + a
  // frame.
  std::vector<Out> drain(const ForwardingTables& t, double seconds, uint64_t rate = 0,
                         uint64_t bucket = 0, uint64_t since = 0, uint64_t already = 0) {
    std::vector<Out> all;
    uint64_t bytes = already;
    const uint64_t hz = rte_get_tsc_hz();
    const uint64_t deadline = rte_get_tsc_cycles() + static_cast<uint64_t>(seconds * double(hz));
    while (pipeline_->shaping() && rte_get_tsc_cycles() < deadline) {
      service(t);
      const uint64_t now = rte_get_tsc_cycles();
      for (const Out& o : sent()) {
        all.push_back(o);
        bytes += o.size;
      }
      if (rate) {
        const double allowed =
            double(rate) * double(now - since) / double(hz) + double(bucket) + double(kFrame);
        EXPECT_LE(double(bytes), allowed) << "above the line's rate";
        if (double(bytes) > allowed) {
          break;
        }
      }
    }
    EXPECT_FALSE(pipeline_->shaping())
        << "the shapers still hold packets after " << seconds << " s";
    return all;
  }

  static uint16_t pairSlot(const ForwardingTables& t, const std::string& tenant) {
    for (const TenantLineEntry& e : t.tenant_lines) {
      if (e.tenant == tenant && e.peer == "site-b" && e.line == "l1") {
        return e.slot;
      }
    }
    ADD_FAILURE() << "no pair " << tenant << "/site-b/l1";
    return 0;
  }
  static const LineEntry& line(const ForwardingTables& t) {
    for (const LineEntry& l : t.lines) {
      if (l.peer == "site-b" && l.name == "l1") {
        return l;
      }
    }
    throw std::runtime_error("no line l1");
  }
  uint64_t drops(DropReason r) const { return counters_->drops[size_t(r)].get(); }
  uint64_t allDrops() const {
    uint64_t n = 0;
    for (size_t i = 0; i < kDropReasonCount; ++i) {
      n += counters_->drops[i].get();
    }
    return n;
  }

  static rte_mempool* pool_;
  static test::RingPort lan_[2], wan0_;
  LiveState health_;
  std::unique_ptr<WorkerCounters> counters_;
  std::unique_ptr<Pipeline> pipeline_;
  std::unique_ptr<TablesBuilder> builder_;
  std::vector<config::ConfigPtr> configs_;
  std::vector<std::unique_ptr<ForwardingTables>> tables_;
};

rte_mempool* ShaperPipelineTest::pool_ = nullptr;
test::RingPort ShaperPipelineTest::lan_[2], ShaperPipelineTest::wan0_;

std::vector<uint32_t> vnis(const std::vector<Out>& out) {
  std::vector<uint32_t> v;
  for (const Out& o : out) {
    v.push_back(o.vni);
  }
  return v;
}
std::vector<uint16_t> tags(const std::vector<Out>& out) {
  std::vector<uint16_t> v;
  for (const Out& o : out) {
    v.push_back(o.tag);
  }
  return v;
}
std::vector<uint16_t> range(uint16_t first, unsigned n) {
  std::vector<uint16_t> v;
  for (unsigned i = 0; i < n; ++i) {
    v.push_back(static_cast<uint16_t>(first + i));
  }
  return v;
}

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
}  // namespace mcgw::engine
