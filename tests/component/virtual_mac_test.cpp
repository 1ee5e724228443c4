// Virtual MACs (VRRP) in the real fast path: engine::Pipeline over tables
// from TablesBuilder on net_ring ports (EAL --no-huge), the live set in
// LiveState changed as Dataplane::setVirtualMacs changes it.  A unicast frame
// to a virtual MAC the port does not have (now) is other-host; to an active
// one it is forwarded as if to the port's MAC, and what leaves carries the
// port's MAC as its source.
//
//   host 10.1.0.10 ── lan0 10.1.0.1/24 (tenant t1, kernel side: a ring as
//   its "TAP") ── gateway ── wan0 203.0.113.1 ── site-b (10.2.0.0/16)
//   host2 10.1.0.20 on lan0 too.
#include <gtest/gtest.h>
#include <rte_errno.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "config/loader.hpp"
#include "dataplane/engine/counters.hpp"
#include "dataplane/engine/pipeline.hpp"
#include "dataplane/engine/tables.hpp"
#include "tests/support/eal.hpp"
#include "tests/support/ring_port.hpp"

namespace mcgw::engine {
namespace {

const auto* const kEal =
    ::testing::AddGlobalTestEnvironment(new test::EalEnvironment("virtual_mac_test", 512));

using Bytes = std::vector<uint8_t>;

const Mac kLanMac = {0x02, 0, 0, 0, 0x01, 0x01};
const Mac kWanMac = {0x02, 0, 0, 0, 0x02, 0x01};
const Mac kHostMac = {0x02, 0, 0, 0, 0x01, 0x10};   // 10.1.0.10
const Mac kHost2Mac = {0x02, 0, 0, 0, 0x01, 0x20};  // 10.1.0.20
const Mac kVrid10 = {0x00, 0x00, 0x5e, 0x00, 0x01, 0x0a};
const Mac kVrid11 = {0x00, 0x00, 0x5e, 0x00, 0x01, 0x0b};
const Mac kVrid10v6 = {0x00, 0x00, 0x5e, 0x00, 0x02, 0x0a};

const char* const kConfig = R"(node:
  name: gw-a
  site: site-a
eal:
  hugepages: false
ports:
  - name: lan0
    role: lan
    vdev: net_ring0
    addresses: [10.1.0.1/24, 2001:db8:1::1/64]
    tenant: t1
    neighbors:
      - address: 10.1.0.10
        mac: 02:00:00:00:01:10
      - address: 10.1.0.20
        mac: 02:00:00:00:01:20
  - name: wan0
    role: wan
    vdev: net_ring1
    addresses: [203.0.113.1/24]
    neighbors:
      - address: 203.0.113.10
        mac: 02:00:00:00:02:10
tenants:
  - name: t1
    vni: 5001
    routes:
      - prefix: 10.2.0.0/16
        peer: site-b
peers:
  - name: site-b
    inner-mac: 02:00:00:00:0b:01
    lines:
      - name: l1
        port: wan0
        local-vtep: 203.0.113.1
        remote-vtep: 203.0.113.10
)";

using test::RingPort;
using test::ringPort;

Mac macAt(const Bytes& f, size_t at) {
  Mac m;
  std::copy(f.begin() + static_cast<long>(at), f.begin() + static_cast<long>(at) + 6, m.begin());
  return m;
}

void put16(Bytes& b, uint16_t v) {
  b.push_back(static_cast<uint8_t>(v >> 8));
  b.push_back(static_cast<uint8_t>(v));
}

// An Ethernet frame from the host on lan0.
Bytes frame(const Mac& dst, uint16_t type, const Bytes& payload) {
  Bytes f(dst.begin(), dst.end());
  f.insert(f.end(), kHostMac.begin(), kHostMac.end());
  put16(f, type);
  f.insert(f.end(), payload.begin(), payload.end());
  return f;
}

// IPv4/UDP from 10.1.0.10 to 10.1.0.<last> or, with `remote`, 10.2.0.5.
Bytes udp4(uint8_t dst_last, bool remote = false) {
  Bytes ip = {0x45, 0, 0, 36, 0x12, 0x34, 0x40, 0, 64, 17, 0, 0, 10, 1, 0, 10};
  const Bytes dst = remote ? Bytes{10, 2, 0, 5} : Bytes{10, 1, 0, dst_last};
  ip.insert(ip.end(), dst.begin(), dst.end());
  uint32_t sum = 0;
  for (size_t i = 0; i < 20; i += 2) {
    sum += static_cast<uint32_t>(ip[i] << 8 | ip[i + 1]);
  }
  while (sum >> 16) {
    sum = (sum & 0xffff) + (sum >> 16);
  }
  ip[10] = static_cast<uint8_t>(~sum >> 8);
  ip[11] = static_cast<uint8_t>(~sum);
  const Bytes udp = {0x9c, 0x40, 0x13, 0x89, 0, 16, 0, 0, 'v', 'r', 'r', 'p', 0, 0, 0, 1};
  ip.insert(ip.end(), udp.begin(), udp.end());
  return ip;
}

// ICMPv6 Neighbor Solicitation from 2001:db8:1::10 for 2001:db8:1::fe, sent
// unicast to that address (a host probing its neighbour entry).
Bytes neighbourSolicitation() {
  Bytes ip = {0x60, 0, 0, 0, 0, 24, 58, 255};
  const Bytes src = {0x20, 0x01, 0x0d, 0xb8, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10};
  const Bytes target = {0x20, 0x01, 0x0d, 0xb8, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xfe};
  ip.insert(ip.end(), src.begin(), src.end());
  ip.insert(ip.end(), target.begin(), target.end());
  const Bytes ns = {135, 0, 0, 0, 0, 0, 0, 0};  // checksum not checked here
  ip.insert(ip.end(), ns.begin(), ns.end());
  ip.insert(ip.end(), target.begin(), target.end());
  return ip;
}

class VirtualMacTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    pool_ = rte_pktmbuf_pool_create("vmac_pool", 1023, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
                                    static_cast<int>(rte_socket_id()));
    ASSERT_NE(pool_, nullptr) << rte_strerror(rte_errno);
    lan_ = ringPort("vmac_lan0", pool_);
    wan_ = ringPort("vmac_wan0", pool_);
    tap_ = ringPort("vmac_tap", pool_);
    auto c = config::loadConfigText(kConfig, "virtual_mac_test.yaml");
    ASSERT_TRUE(c.ok());
    config_ = *c;
    OpenPort lan{lan_.id, kLanMac, 1};
    lan.tap_port_id = tap_.id;
    std::map<std::string, OpenPort> ports = {{"lan0", lan}, {"wan0", {wan_.id, kWanMac, 1}}};
    builder_ = std::make_unique<TablesBuilder>();
    auto built = builder_->build(TablesInput::fromConfig(*config_, ports, 1), {});
    ASSERT_TRUE(built) << built.error();
    tables_ = std::move(*built);
    ASSERT_EQ(tables_->ports[lan_.id].exception, static_cast<int32_t>(tap_.id));
  }
  static void TearDownTestSuite() {
    tables_.reset();
    builder_->clear();
    builder_.reset();
    for (RingPort* p : {&lan_, &wan_, &tap_}) {
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
  }
  void TearDown() override {
    pipeline_.reset();
    for (const RingPort* p : {&lan_, &wan_, &tap_}) {
      EXPECT_EQ(rte_ring_count(p->ring), 0u);
    }
  }

  // What Dataplane::setVirtualMacs does.
  bool setVirtualMacs(const RingPort& port, std::vector<Mac> macs) {
    return health_.virtual_macs.set(port.id, macs);
  }

  // One frame into the pipeline on lan0, then flushed.
  void send(const Bytes& f) {
    rte_mbuf* m = rte_pktmbuf_alloc(pool_);
    ASSERT_NE(m, nullptr);
    std::memcpy(rte_pktmbuf_append(m, static_cast<uint16_t>(f.size())), f.data(), f.size());
    pipeline_->process(*tables_, lan_.id, &m, 1);
    pipeline_->flush();
  }
  // Every frame a port sent.
  static std::vector<Bytes> sent(const RingPort& port) {
    std::vector<Bytes> out;
    void* objs[64];
    unsigned n;
    while ((n = rte_ring_dequeue_burst(port.ring, objs, 64, nullptr)) > 0) {
      for (unsigned i = 0; i < n; ++i) {
        auto* m = static_cast<rte_mbuf*>(objs[i]);
        const auto* d = rte_pktmbuf_mtod(m, const uint8_t*);
        out.emplace_back(d, d + m->data_len);
        rte_pktmbuf_free(m);
      }
    }
    return out;
  }
  uint64_t drops(DropReason r) const { return counters_->drops[static_cast<size_t>(r)].get(); }
  uint64_t accepted() const { return counters_->virtual_mac.get(); }

  // A frame to host2 through `dst` on lan0: forwarded back out of lan0 to
  // host2 with the port's MAC as source and the TTL lowered, or dropped.
  void expectForwardedToHost2(const Mac& dst) {
    send(frame(dst, 0x0800, udp4(20)));
    auto out = sent(lan_);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(macAt(out[0], 0), kHost2Mac);
    EXPECT_EQ(macAt(out[0], 6), kLanMac);
    EXPECT_EQ(out[0][14 + 8], 63);  // TTL
  }
  void expectOtherHost(const Mac& dst) {
    const uint64_t before = drops(DropReason::kOTHER_HOST);
    const uint64_t accepted_before = accepted();
    send(frame(dst, 0x0800, udp4(20)));
    EXPECT_EQ(drops(DropReason::kOTHER_HOST), before + 1);
    EXPECT_EQ(accepted(), accepted_before);
    EXPECT_TRUE(sent(lan_).empty());
    EXPECT_TRUE(sent(wan_).empty());
    EXPECT_TRUE(sent(tap_).empty());
  }

  static rte_mempool* pool_;
  static RingPort lan_, wan_, tap_;
  static config::ConfigPtr config_;
  static std::unique_ptr<TablesBuilder> builder_;
  static std::unique_ptr<ForwardingTables> tables_;
  LiveState health_;
  std::unique_ptr<WorkerCounters> counters_;
  std::unique_ptr<Pipeline> pipeline_;
};

rte_mempool* VirtualMacTest::pool_ = nullptr;
RingPort VirtualMacTest::lan_, VirtualMacTest::wan_, VirtualMacTest::tap_;
config::ConfigPtr VirtualMacTest::config_;
std::unique_ptr<TablesBuilder> VirtualMacTest::builder_;
std::unique_ptr<ForwardingTables> VirtualMacTest::tables_;

TEST_F(VirtualMacTest, PortMacIsForwardedAsBefore) {
  expectForwardedToHost2(kLanMac);
  EXPECT_EQ(accepted(), 0u);
}

TEST_F(VirtualMacTest, InactiveVirtualMacIsOtherHost) {
  expectOtherHost(kVrid10);
}

TEST_F(VirtualMacTest, ActiveVirtualMacIsForwardedAsIfToThePortMac) {
  ASSERT_TRUE(setVirtualMacs(lan_, {kVrid10}));
  expectForwardedToHost2(kVrid10);
  EXPECT_EQ(accepted(), 1u);

  // Into the tunnel too: the inner frame is the peer's inner MAC from the
  // WAN port's MAC, as for any frame.
  send(frame(kVrid10, 0x0800, udp4(0, true)));
  auto out = sent(wan_);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(macAt(out[0], 0), (Mac{0x02, 0, 0, 0, 0x02, 0x10}));
  EXPECT_EQ(macAt(out[0], 6), kWanMac);
  EXPECT_EQ(accepted(), 2u);
  EXPECT_EQ(drops(DropReason::kOTHER_HOST), 0u);

  // Another group's MAC is still another host's.
  expectOtherHost(kVrid11);
}

TEST_F(VirtualMacTest, RemovalTakesEffectAtOnce) {
  ASSERT_TRUE(setVirtualMacs(lan_, {kVrid10, kVrid10v6}));
  expectForwardedToHost2(kVrid10v6);
  ASSERT_TRUE(setVirtualMacs(lan_, {kVrid10v6}));  // VRID 10 (IPv4) goes Backup
  expectOtherHost(kVrid10);
  expectForwardedToHost2(kVrid10v6);
  ASSERT_TRUE(setVirtualMacs(lan_, {}));
  expectOtherHost(kVrid10v6);
  EXPECT_EQ(accepted(), 2u);
}

TEST_F(VirtualMacTest, SetsArePerPort) {
  ASSERT_TRUE(setVirtualMacs(wan_, {kVrid10}));
  expectOtherHost(kVrid10);  // on lan0
  EXPECT_EQ(health_.virtual_macs.get(wan_.id), std::vector<Mac>{kVrid10});
  EXPECT_TRUE(health_.virtual_macs.get(lan_.id).empty());
}

TEST_F(VirtualMacTest, AtMostEightPerPortAndMoreChangesNothing) {
  std::vector<Mac> eight;
  for (uint8_t vrid = 1; vrid <= 8; ++vrid) {
    eight.push_back({0x00, 0x00, 0x5e, 0x00, 0x01, vrid});
  }
  eight.push_back(eight.front());  // a duplicate counts once
  ASSERT_TRUE(setVirtualMacs(lan_, eight));
  EXPECT_EQ(health_.virtual_macs.get(lan_.id).size(), 8u);
  expectForwardedToHost2(Mac{0x00, 0x00, 0x5e, 0x00, 0x01, 8});

  std::vector<Mac> nine;
  for (uint8_t vrid = 1; vrid <= 9; ++vrid) {
    nine.push_back({0x00, 0x00, 0x5e, 0x00, 0x01, vrid});
  }
  EXPECT_FALSE(setVirtualMacs(lan_, nine));
  EXPECT_EQ(health_.virtual_macs.get(lan_.id).size(), 8u);
  expectOtherHost(Mac{0x00, 0x00, 0x5e, 0x00, 0x01, 9});
  expectForwardedToHost2(Mac{0x00, 0x00, 0x5e, 0x00, 0x01, 1});
  EXPECT_FALSE(health_.virtual_macs.set(kMaxPorts, {}));
}

TEST_F(VirtualMacTest, ReplacingTheSetKeepsTheMacsThatStay) {
  ASSERT_TRUE(setVirtualMacs(lan_, {kVrid10, kVrid11}));
  ASSERT_TRUE(setVirtualMacs(lan_, {kVrid11, kVrid10v6}));
  auto now = health_.virtual_macs.get(lan_.id);
  // VRID 11 kept its slot (the second); VRID 10 (IPv6) took the freed first.
  EXPECT_EQ(now, (std::vector<Mac>{kVrid10v6, kVrid11}));
}

// ARP and ND for a virtual address reach the port's kernel side, where
// mcgwd answers them: broadcast / multicast always, unicast to the virtual
// MAC while it is active, then with the port's MAC as destination (the
// kernel takes only its own MAC as addressed to it: accept mode).
TEST_F(VirtualMacTest, ArpAndNeighbourDiscoveryForTheVirtualAddressReachTheKernelSide) {
  Bytes arp = {0, 1, 0x08, 0, 6, 4, 0, 1};
  arp.insert(arp.end(), kHostMac.begin(), kHostMac.end());
  arp.insert(arp.end(), {10, 1, 0, 10, 0, 0, 0, 0, 0, 0, 10, 1, 0, 254});
  const Bytes broadcast_arp = frame({0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, 0x0806, arp);
  send(broadcast_arp);
  EXPECT_EQ(sent(tap_), std::vector<Bytes>{broadcast_arp});
  const Bytes multicast_ns = frame({0x33, 0x33, 0xff, 0, 0, 0xfe}, 0x86dd, neighbourSolicitation());
  send(multicast_ns);
  EXPECT_EQ(sent(tap_), std::vector<Bytes>{multicast_ns});

  // Unicast to the virtual MAC: not while it is inactive.
  const Bytes unicast_ns = frame(kVrid10v6, 0x86dd, neighbourSolicitation());
  const Bytes unicast_arp = frame(kVrid10, 0x0806, arp);
  send(unicast_ns);
  send(unicast_arp);
  EXPECT_TRUE(sent(tap_).empty());
  EXPECT_EQ(drops(DropReason::kOTHER_HOST), 2u);

  ASSERT_TRUE(setVirtualMacs(lan_, {kVrid10, kVrid10v6}));
  send(unicast_ns);
  send(unicast_arp);
  auto toPort = [](Bytes f) {
    std::copy(kLanMac.begin(), kLanMac.end(), f.begin());
    return f;
  };
  EXPECT_EQ(sent(tap_), (std::vector<Bytes>{toPort(unicast_ns), toPort(unicast_arp)}));
  EXPECT_TRUE(sent(lan_).empty());  // the NS was not routed back to the LAN
  EXPECT_EQ(accepted(), 2u);
}

}  // namespace
}  // namespace mcgw::engine
