// The fixture of the shaped-line pipeline tests (shaper_pipeline_test.cpp:
// one worker; shaper_workers_test.cpp: several): the real Pipeline over
// tables from the real TablesBuilder (net_ring ports, EAL --no-huge, the
// real TSC the shapers read), two tenants on one line with a capacity:
// train (priority 6) and bulk (priority 0).
//
//   lan0 (train) 10.1.0.1/24 ─┐
//   lan1 (bulk)  10.5.0.1/24 ─┴─ wan0 203.0.113.1 ── site-b 203.0.113.10
//                                 (VXLAN, VNI 5001 / 5002, line l1)
//
// Each test file registers its EAL environment (tests/support/eal.hpp).
#pragma once

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
#include "tests/support/ring_port.hpp"

namespace mcgw::engine::shaping_test {

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
inline std::string configText(const std::string& line_extra, unsigned workers = 1) {
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

inline void put16(Bytes& b, size_t at, uint16_t v) {
  b[at] = static_cast<uint8_t>(v >> 8);
  b[at + 1] = static_cast<uint8_t>(v);
}
inline uint16_t get16(const Bytes& b, size_t at) {
  return static_cast<uint16_t>(b[at] << 8 | b[at + 1]);
}
inline uint16_t checksum(const Bytes& b, size_t from, size_t len) {
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
inline Bytes lanFrame(int lan, uint16_t tag) {
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

inline config::ConfigPtr loadConfig(const std::string& text) {
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

inline uint64_t mallocBytes() {
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

  static inline rte_mempool* pool_ = nullptr;
  static inline test::RingPort lan_[2], wan0_;
  LiveState health_;
  std::unique_ptr<WorkerCounters> counters_;
  std::unique_ptr<Pipeline> pipeline_;
  std::unique_ptr<TablesBuilder> builder_;
  std::vector<config::ConfigPtr> configs_;
  std::vector<std::unique_ptr<ForwardingTables>> tables_;
};

inline std::vector<uint32_t> vnis(const std::vector<Out>& out) {
  std::vector<uint32_t> v;
  for (const Out& o : out) {
    v.push_back(o.vni);
  }
  return v;
}
inline std::vector<uint16_t> tags(const std::vector<Out>& out) {
  std::vector<uint16_t> v;
  for (const Out& o : out) {
    v.push_back(o.tag);
  }
  return v;
}
inline std::vector<uint16_t> range(uint16_t first, unsigned n) {
  std::vector<uint16_t> v;
  for (unsigned i = 0; i < n; ++i) {
    v.push_back(static_cast<uint16_t>(first + i));
  }
  return v;
}

}  // namespace mcgw::engine::shaping_test
