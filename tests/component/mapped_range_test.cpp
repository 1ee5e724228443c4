// Mapped ranges through the real fast path (engine::Pipeline over tables from
// TablesBuilder, the input made by daemon::tablesInput from a config), on
// net_ring ports (EAL --no-huge): packets from the LAN into the tunnel get
// their source mapped, packets out of the tunnel their destination unmapped,
// ICMP errors the gateway makes quote the real addresses, and the counters
// of each range count both ways.  Expected inner packets were built by scapy
// (tests/component/mapped_range_vectors.py).
//
//   lan0 10.1.0.1/16 (tenant t1) ── gateway, site-a ── wan0 203.0.113.1 ── site-b 203.0.113.10
//   host 10.1.2.3 is 100.65.2.3 to the rest (mapped range legacy4, site-a);
//   fd12:3456:789a:1000::/52 is fd99:8888:7777:6000::/52 (legacy6, site-a);
//   10.4.0.0/16 as 100.66.0.0/16 lives at site-b: not translated here.
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

#include "control/daemon/forwarding_state.hpp"
#include "dataplane/engine/counters.hpp"
#include "dataplane/engine/pipeline.hpp"
#include "dataplane/engine/tables.hpp"
#include "dataplane/proto/tunnel.hpp"
#include "tests/support/eal.hpp"
#include "tests/support/hex.hpp"
#include "tests/support/ring_port.hpp"

namespace mcgw::engine {
namespace {

const auto* const kEal =
    ::testing::AddGlobalTestEnvironment(new test::EalEnvironment("mapped_range_test", 1024));

using Bytes = std::vector<uint8_t>;

constexpr uint32_t kVni = 5001;
const Mac kLanMac = {0x02, 0, 0, 0, 0x01, 0x01};
const Mac kWanMac = {0x02, 0, 0, 0, 0x02, 0x01};
const Mac kHostMac = {0x02, 0, 0, 0, 0x01, 0x23};  // 10.1.2.3
const Mac kPeerMac = {0x02, 0, 0, 0, 0x02, 0x10};  // 203.0.113.10
const Mac kInnerMac = {0x02, 0, 0, 0, 0x0b, 0x01};
constexpr size_t kEth = 14;
constexpr size_t kOuter = 14 + 20 + 8 + 8;  // VXLAN over IPv4, outer Ethernet included

Bytes hex(std::string_view s) {
  return test::hex<uint8_t>(s);
}
using test::toHex;
// Hex text as toHex writes it.
std::string h(std::string_view s) {
  return toHex(hex(s));
}

config::IpAddress ip(const char* text) {
  return *config::IpAddress::parse(text);
}
config::IpPrefix prefix(const char* text) {
  return *config::IpPrefix::parse(text);
}
config::MacAddress mac(const Mac& m) {
  config::MacAddress out;
  out.bytes = m;
  return out;
}

config::Config siteA() {
  config::Config c;
  c.node.name = "gw-a";
  c.node.site = "site-a";
  config::PortConfig lan;
  lan.name = "lan0";
  lan.role = config::PortRole::kLan;
  lan.mtu = 1500;
  lan.tenant = "t1";
  lan.addresses = {prefix("10.1.0.1/16"), prefix("fd12:3456:789a:1abc::1/64")};
  lan.neighbors = {{ip("10.1.2.3"), mac(kHostMac)}, {ip("fd12:3456:789a:1abc::7"), mac(kHostMac)}};
  config::PortConfig wan;
  wan.name = "wan0";
  wan.role = config::PortRole::kWan;
  wan.mtu = 1500;
  wan.addresses = {prefix("203.0.113.1/24")};
  wan.neighbors = {{ip("203.0.113.10"), mac(kPeerMac)}};
  c.ports = {lan, wan};
  config::TenantConfig t1;
  t1.name = "t1";
  t1.vni = kVni;
  t1.routes = {{prefix("10.2.0.0/16"), "site-b", {}}, {prefix("fd00:2::/32"), "site-b", {}}};
  config::TenantConfig t2;  // another tenant: the plan's VPC picks t1
  t2.name = "t2";
  t2.vni = kVni + 1;
  c.tenants = {t1, t2};
  config::PeerConfig b;
  b.name = "site-b";
  b.inner_mac = mac(kInnerMac);
  config::LineConfig l;
  l.name = "l1";
  l.port = "wan0";
  l.local_vtep = ip("203.0.113.1");
  l.remote_vtep = ip("203.0.113.10");
  l.mtu = 1500;
  b.lines = {l};
  c.peers = {b};
  auto& plan = c.address_plan;
  plan.vpcs = {{"idc", "east", "a-main", {prefix("10.0.0.0/12")}, "t1", "site-a"},
               {"idc", "east", "a-v6", {prefix("fd12:3456::/32")}, "t1", "site-a"}};
  plan.mapped_ranges = {
      {"legacy4", prefix("10.1.0.0/16"), prefix("100.65.0.0/16"), "site-a"},
      {"legacy6", prefix("fd12:3456:789a:1000::/52"), prefix("fd99:8888:7777:6000::/52"), "site-a"},
      {"elsewhere", prefix("10.4.0.0/16"), prefix("100.66.0.0/16"), "site-b"}};
  return c;
}

using test::RingPort;
using test::ringPort;

// The Internet checksum, written out here.
uint16_t fold(const uint8_t* p, size_t n, uint32_t sum = 0) {
  for (size_t i = 0; i + 1 < n; i += 2) {
    sum += static_cast<uint32_t>(p[i] << 8 | p[i + 1]);
  }
  if (n & 1) {
    sum += static_cast<uint32_t>(p[n - 1] << 8);
  }
  while (sum >> 16) {
    sum = (sum & 0xffff) + (sum >> 16);
  }
  return static_cast<uint16_t>(sum);
}

class MappedRangeTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    pool_ = rte_pktmbuf_pool_create("mapped_pool", 1023, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
                                    static_cast<int>(rte_socket_id()));
    ASSERT_NE(pool_, nullptr) << rte_strerror(rte_errno);
    lan_ = ringPort("mapped_lan0", pool_);
    wan_ = ringPort("mapped_wan0", pool_);
    config_ = std::make_unique<config::Config>(siteA());
    builder_ = std::make_unique<TablesBuilder>();
    std::map<std::string, OpenPort> ports = {{"lan0", {lan_.id, kLanMac, 1}},
                                             {"wan0", {wan_.id, kWanMac, 1}}};
    std::vector<std::string> not_translated;
    auto built = builder_->build(daemon::tablesInput(*config_, ports, 1, &not_translated), {});
    ASSERT_TRUE(built) << built.error();
    ASSERT_TRUE(not_translated.empty());
    tables_ = std::move(*built);
  }
  static void TearDownTestSuite() {
    tables_.reset();
    builder_->clear();
    builder_.reset();
    for (RingPort* p : {&lan_, &wan_}) {
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
    EXPECT_EQ(rte_ring_count(lan_.ring), 0u);
    EXPECT_EQ(rte_ring_count(wan_.ring), 0u);
  }

  // One frame into the pipeline on `port`, then flushed.
  void send(const RingPort& port, const Bytes& frame) {
    rte_mbuf* m = rte_pktmbuf_alloc(pool_);
    ASSERT_NE(m, nullptr);
    std::memcpy(rte_pktmbuf_append(m, static_cast<uint16_t>(frame.size())), frame.data(),
                frame.size());
    pipeline_->process(*tables_, port.id, &m, 1);
    pipeline_->flush();
  }
  // An IP packet from the host on lan0.
  void fromLan(const Bytes& ip) {
    Bytes f(kLanMac.begin(), kLanMac.end());
    f.insert(f.end(), kHostMac.begin(), kHostMac.end());
    f.push_back((ip[0] >> 4) == 6 ? 0x86 : 0x08);
    f.push_back((ip[0] >> 4) == 6 ? 0xdd : 0x00);
    f.insert(f.end(), ip.begin(), ip.end());
    send(lan_, f);
  }
  // An IP packet from site-b, VXLAN-encapsulated by its VTEP.
  void fromPeer(const Bytes& ip) {
    Bytes inner(kInnerMac.begin(), kInnerMac.end());
    inner.insert(inner.end(), kPeerMac.begin(), kPeerMac.end());
    inner.push_back((ip[0] >> 4) == 6 ? 0x86 : 0x08);
    inner.push_back((ip[0] >> 4) == 6 ? 0xdd : 0x00);
    inner.insert(inner.end(), ip.begin(), ip.end());
    proto::TunnelHeaderTemplate outer;
    std::copy(kPeerMac.begin(), kPeerMac.end(), outer.src_mac);
    std::copy(kWanMac.begin(), kWanMac.end(), outer.dst_mac);
    const uint8_t peer[4] = {203, 0, 113, 10}, us[4] = {203, 0, 113, 1};
    std::memcpy(outer.local, peer, 4);
    std::memcpy(outer.remote, us, 4);
    Bytes f(kOuter + inner.size());
    std::memcpy(f.data() + kOuter, inner.data(), inner.size());
    auto* b = reinterpret_cast<std::byte*>(f.data());
    ASSERT_EQ(proto::encodeTunnelHeaders(proto::MutableBytes(b, kOuter), outer, kVni,
                                         proto::Bytes(b + kOuter, inner.size()), 7),
              kOuter);
    send(wan_, f);
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
  // The inner IP packet of each frame sent into the tunnel (outer headers checked).
  static std::vector<Bytes> tunnelled() {
    std::vector<Bytes> out;
    for (const Bytes& f : sent(wan_)) {
      EXPECT_GT(f.size(), kOuter + kEth);
      EXPECT_EQ(toHex(Bytes(f.begin() + 46, f.begin() + 49)), h("00 13 89"));  // VNI 5001
      EXPECT_TRUE(std::equal(kInnerMac.begin(), kInnerMac.end(), f.begin() + kOuter));
      out.emplace_back(f.begin() + kOuter + kEth, f.end());
    }
    return out;
  }
  // The IP packet of each frame sent to the host on lan0.
  static std::vector<Bytes> toHost() {
    std::vector<Bytes> out;
    for (const Bytes& f : sent(lan_)) {
      EXPECT_TRUE(std::equal(kHostMac.begin(), kHostMac.end(), f.begin()));
      EXPECT_TRUE(std::equal(kLanMac.begin(), kLanMac.end(), f.begin() + 6));
      out.emplace_back(f.begin() + kEth, f.end());
    }
    return out;
  }
  uint16_t slot(const std::string& name) const {
    for (const auto& m : tables_->mapped) {
      if (m.name == name) {
        return m.slot;
      }
    }
    ADD_FAILURE() << "no mapped range " << name;
    return 0;
  }

  static rte_mempool* pool_;
  static RingPort lan_, wan_;
  static std::unique_ptr<config::Config> config_;
  static std::unique_ptr<TablesBuilder> builder_;
  static std::unique_ptr<ForwardingTables> tables_;
  LiveState health_;
  std::unique_ptr<WorkerCounters> counters_;
  std::unique_ptr<Pipeline> pipeline_;
};

rte_mempool* MappedRangeTest::pool_ = nullptr;
RingPort MappedRangeTest::lan_, MappedRangeTest::wan_;
std::unique_ptr<config::Config> MappedRangeTest::config_;
std::unique_ptr<TablesBuilder> MappedRangeTest::builder_;
std::unique_ptr<ForwardingTables> MappedRangeTest::tables_;

struct Case {
  const char* name;
  const char* before;
  const char* after;
};

const Case kEgress[] = {
    {"Udp4Mapped",
     "45 00 00 26 00 07 00 00 40 11 64 b6 0a 01 02 03 0a 02 00 05 14 e9 00 35 00 12 0c 86 6d 61 70 "
     "70 65 64 20 75 64 70",
     "45 00 00 26 00 07 00 00 3f 11 0b 76 64 41 02 03 0a 02 00 05 14 e9 00 35 00 12 b2 45 6d 61 70 "
     "70 65 64 20 75 64 70"},
    {"Tcp6Mapped",
     "60 00 00 00 00 16 06 40 fd 12 34 56 78 9a 1a bc 00 00 00 00 00 00 00 07 fd 00 00 02 00 00 00 "
     "00 00 00 00 00 00 00 00 05 9c 40 00 16 00 00 00 01 00 00 00 02 50 10 02 58 d9 1c 00 00 76 36",
     "60 00 00 00 00 16 06 3f fd 99 88 88 77 77 6a bc 00 00 00 00 00 00 00 07 fd 00 00 02 00 00 00 "
     "00 00 00 00 00 00 00 00 05 9c 40 00 16 00 00 00 01 00 00 00 02 50 10 02 58 35 86 00 00 76 "
     "36"},
    {"OtherSiteNotMapped",
     "45 00 00 26 00 07 00 00 40 11 66 af 0a 04 00 07 0a 02 00 05 14 e9 00 35 00 12 0e 7f 6d 61 70 "
     "70 65 64 20 75 64 70",
     "45 00 00 26 00 07 00 00 3f 11 67 af 0a 04 00 07 0a 02 00 05 14 e9 00 35 00 12 0e 7f 6d 61 70 "
     "70 65 64 20 75 64 70"},
};

const Case kIngress[] = {
    {"Tcp4Unmapped",
     "45 00 00 34 12 34 40 00 40 06 b8 45 0a 02 00 05 64 41 02 03 01 bb 9c 40 00 00 03 e8 00 00 07 "
     "d0 50 18 01 f5 41 99 00 00 72 65 70 6c 79 20 66 72 6f 6d 20 62",
     "45 00 00 34 12 34 40 00 3f 06 13 86 0a 02 00 05 0a 01 02 03 01 bb 9c 40 00 00 03 e8 00 00 07 "
     "d0 50 18 01 f5 9b d9 00 00 72 65 70 6c 79 20 66 72 6f 6d 20 62"},
    {"Tcp6Unmapped",
     "60 00 00 00 00 16 06 40 fd 00 00 02 00 00 00 00 00 00 00 00 00 00 00 05 fd 99 88 88 77 77 6a "
     "bc 00 00 00 00 00 00 00 07 9c 40 00 16 00 00 00 01 00 00 00 02 50 10 02 58 35 86 00 00 76 36",
     "60 00 00 00 00 16 06 3f fd 00 00 02 00 00 00 00 00 00 00 00 00 00 00 05 fd 12 34 56 78 9a 1a "
     "bc 00 00 00 00 00 00 00 07 9c 40 00 16 00 00 00 01 00 00 00 02 50 10 02 58 d9 1c 00 00 76 "
     "36"},
    {"FragNeededUnmapped",
     "45 00 00 38 00 01 00 00 40 01 0a 7e 0a 02 00 01 64 41 02 03 03 04 30 0e 00 00 05 78 45 00 00 "
     "26 00 07 00 00 3f 11 0b 76 64 41 02 03 0a 02 00 05 14 e9 00 35 00 12 b2 45",
     "45 00 00 38 00 01 00 00 3f 01 65 be 0a 02 00 01 0a 01 02 03 03 04 d5 cd 00 00 05 78 45 00 00 "
     "26 00 07 00 00 3f 11 65 b6 0a 01 02 03 0a 02 00 05 14 e9 00 35 00 12 0c 86"},
};

// Only this site's ranges, under the tenant whose VPC at the site holds them.
TEST_F(MappedRangeTest, TablesHoldThisSitesRanges) {
  ASSERT_EQ(tables_->mapped.size(), 2u);
  EXPECT_EQ(tables_->mapped[0].name, "legacy4");
  EXPECT_EQ(tables_->mapped[0].tenant, "t1");
  EXPECT_EQ(tables_->mapped[0].real.toString(), "10.1.0.0/16");
  EXPECT_EQ(tables_->mapped[0].mapped.toString(), "100.65.0.0/16");
  EXPECT_EQ(tables_->mapped[1].name, "legacy6");
  ASSERT_EQ(tables_->tenants.size(), 2u);
  ASSERT_NE(tables_->tenants[0].mapping, nullptr);
  EXPECT_EQ(tables_->tenants[0].mapping->out.size(), 2u);
  EXPECT_EQ(tables_->tenants[1].mapping, nullptr);
}

TEST_F(MappedRangeTest, LanToTunnelMapsTheSource) {
  for (const Case& c : kEgress) {
    fromLan(hex(c.before));
    const auto out = tunnelled();
    ASSERT_EQ(out.size(), 1u) << c.name;
    EXPECT_EQ(toHex(out[0]), toHex(hex(c.after))) << c.name;
  }
  EXPECT_EQ(counters_->mapped_out[slot("legacy4")].get(), 1u);
  EXPECT_EQ(counters_->mapped_out[slot("legacy6")].get(), 1u);
  EXPECT_EQ(counters_->mapped_in[slot("legacy4")].get(), 0u);
}

TEST_F(MappedRangeTest, TunnelToLanUnmapsTheDestination) {
  for (const Case& c : kIngress) {
    fromPeer(hex(c.before));
    const auto out = toHost();
    ASSERT_EQ(out.size(), 1u) << c.name;
    EXPECT_EQ(toHex(out[0]), toHex(hex(c.after))) << c.name;
  }
  EXPECT_EQ(counters_->mapped_in[slot("legacy4")].get(), 2u);
  EXPECT_EQ(counters_->mapped_in[slot("legacy6")].get(), 1u);
  EXPECT_EQ(counters_->mapped_out[slot("legacy4")].get(), 0u);
}

// A 1480-byte UDP packet with DF does not fit the tunnel (1500 - 50): the
// gateway's frag-needed goes back to the host quoting its real addresses.
TEST_F(MappedRangeTest, FragNeededQuotesTheRealAddresses) {
  Bytes p = hex(kEgress[0].before);  // UDP 10.1.2.3 -> 10.2.0.5
  p.resize(1480, 0x5a);
  p[2] = 0x05;  // total length 1480
  p[3] = 0xc8;
  p[6] = 0x40;  // DF
  p[10] = p[11] = 0;
  const uint16_t ck = static_cast<uint16_t>(~fold(p.data(), 20));
  p[10] = static_cast<uint8_t>(ck >> 8);
  p[11] = static_cast<uint8_t>(ck);
  fromLan(p);
  EXPECT_TRUE(tunnelled().empty());
  const auto out = toHost();
  ASSERT_EQ(out.size(), 1u);
  const Bytes& e = out[0];
  ASSERT_GE(e.size(), 20u + 8 + 28);
  EXPECT_EQ(toHex(Bytes(e.begin() + 12, e.begin() + 20)), h("0a 01 00 01 0a 01 02 03"));
  EXPECT_EQ(toHex(Bytes(e.begin() + 20, e.begin() + 22)), h("03 04"));  // frag-needed
  EXPECT_EQ(toHex(Bytes(e.begin() + 26, e.begin() + 28)), h("05 aa"));  // next-hop MTU 1450
  // The quote: from 10.1.2.3 (real) to 10.2.0.5, TTL 64 as sent.
  EXPECT_EQ(e[28 + 8], 64);
  EXPECT_EQ(toHex(Bytes(e.begin() + 28 + 12, e.begin() + 28 + 20)), h("0a 01 02 03 0a 02 00 05"));
  EXPECT_EQ(fold(e.data() + 20, e.size() - 20), 0xffff);
  EXPECT_EQ(counters_->mapped_out[slot("legacy4")].get(), 0u);
  EXPECT_EQ(counters_->drops[static_cast<size_t>(DropReason::kTOO_BIG)].get(), 1u);
}

// Without DF the packet is fragmented first, then each fragment mapped: the
// UDP checksum in the first one is right for the mapped source.
TEST_F(MappedRangeTest, FragmentsAreMappedEachAndTheChecksumHolds) {
  Bytes p = hex(kEgress[0].before);
  const size_t total = 1480;
  p.resize(total);
  for (size_t i = 28; i < total; ++i) {
    p[i] = static_cast<uint8_t>(i * 7);
  }
  p[2] = static_cast<uint8_t>(total >> 8);
  p[3] = static_cast<uint8_t>(total);
  p[24] = static_cast<uint8_t>((total - 20) >> 8);  // UDP length
  p[25] = static_cast<uint8_t>(total - 20);
  p[10] = p[11] = p[26] = p[27] = 0;
  uint16_t ck = static_cast<uint16_t>(~fold(p.data(), 20));
  p[10] = static_cast<uint8_t>(ck >> 8);
  p[11] = static_cast<uint8_t>(ck);
  const uint32_t pseudo = fold(p.data() + 12, 8) + 17u + (total - 20);
  ck = static_cast<uint16_t>(~fold(p.data() + 20, total - 20, pseudo));
  p[26] = static_cast<uint8_t>(ck >> 8);
  p[27] = static_cast<uint8_t>(ck);
  fromLan(p);
  const auto out = tunnelled();
  ASSERT_EQ(out.size(), 2u);
  Bytes udp;  // reassembled
  for (const Bytes& f : out) {
    EXPECT_EQ(toHex(Bytes(f.begin() + 12, f.begin() + 20)), h("64 41 02 03 0a 02 00 05"));
    EXPECT_EQ(fold(f.data(), 20), 0xffff);
    const size_t offset = ((f[6] & 0x1f) << 8 | f[7]) * 8u;
    udp.resize(std::max(udp.size(), offset + f.size() - 20));
    std::copy(f.begin() + 20, f.end(), udp.begin() + static_cast<ptrdiff_t>(offset));
  }
  ASSERT_EQ(udp.size(), total - 20);
  const uint8_t mapped_pseudo[8] = {100, 65, 2, 3, 10, 2, 0, 5};
  EXPECT_EQ(fold(udp.data(), udp.size(), fold(mapped_pseudo, 8) + 17u + udp.size()), 0xffff);
  EXPECT_EQ(counters_->mapped_out[slot("legacy4")].get(), 2u);
}

// A packet out of the tunnel that goes back into it (a hub's transit) comes
// from another site: its source is never mapped, even inside a real range.
TEST_F(MappedRangeTest, TransitIsNotMapped) {
  Bytes p = hex(kIngress[0].after);  // 10.2.0.5 -> 10.1.2.3: swap to 10.1.2.3 -> 10.2.0.9
  std::swap_ranges(p.begin() + 12, p.begin() + 16, p.begin() + 16);
  p[19] = 9;
  p[10] = p[11] = 0;
  const uint16_t ck = static_cast<uint16_t>(~fold(p.data(), 20));
  p[10] = static_cast<uint8_t>(ck >> 8);
  p[11] = static_cast<uint8_t>(ck);
  fromPeer(p);
  const auto out = tunnelled();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(toHex(Bytes(out[0].begin() + 12, out[0].begin() + 20)), h("0a 01 02 03 0a 02 00 09"));
  EXPECT_EQ(counters_->mapped_out[slot("legacy4")].get(), 0u);
}

}  // namespace
}  // namespace mcgw::engine
