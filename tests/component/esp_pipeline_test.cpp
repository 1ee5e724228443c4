// ESP in the real pipeline (docs/encryption.md), two gateways in one
// process on net_ring ports (EAL --no-huge), tables from the real
// TablesBuilder with SAs as the key agreement would hand them over:
//
//   hostA 10.1.0.10 -- lan (gw-a) wan 203.0.113.1 ==== 203.0.113.10 wan (gw-b) lan --
//   hostB 10.2.0.10
//                      a→b: SPI 0x1001 key Kab          b→a: SPI 0x2001 key Kba
//
// What is checked, each against something independent of mcgw's code:
// * gw-a's output is ESP (IP protocol 50, or UDP 4500 with NAT-T), and
//   scapy's SecurityAssociation decrypts it into the tunnel's UDP datagram
//   (port 4789, VXLAN VNI 5001, the inner frame as sent);
// * packets scapy encrypted with Kba are accepted by gw-a and reach hostA;
// * gw-a → gw-b end to end, with every drop counted by reason: a replay,
//   each single-bit flip of the ESP part, an unknown SPI, clear-text VXLAN
//   on the encrypted line, an encrypted line without an SA;
// * a shaped line seals packets as they leave their priority's queue: ESP
//   sequence numbers in the order gw-a sends, none a replay at gw-b;
// * the largest inner packet that fits a 1500-byte underlay is the one
//   docs/encryption.md's table gives (1416 bytes of IPv4 over VXLAN/IPv4,
//   1408 with NAT-T), one byte more gets ICMP frag-needed.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include <array>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "config/loader.hpp"
#include "control/lines/mss_policy.hpp"
#include "dataplane/engine/counters.hpp"
#include "dataplane/engine/drop_reason.hpp"
#include "dataplane/engine/esp_sa.hpp"
#include "dataplane/engine/pipeline.hpp"
#include "dataplane/engine/tables.hpp"
#include "tests/support/eal.hpp"
#include "tests/support/ring_port.hpp"

namespace mcgw::engine {
namespace {

const auto* const kEal =
    ::testing::AddGlobalTestEnvironment(new test::EalEnvironment("esp_pipeline_test", 512));

using Bytes = std::vector<uint8_t>;
using test::RingPort;

const Mac kLanAMac = {0x02, 0, 0, 0, 0x0a, 0x01};
const Mac kWanAMac = {0x02, 0, 0, 0, 0x0a, 0x02};
const Mac kLanBMac = {0x02, 0, 0, 0, 0x0b, 0x01};
const Mac kWanBMac = {0x02, 0, 0, 0, 0x0b, 0x02};
const Mac kHostAMac = {0x02, 0, 0, 0, 0x0a, 0x10};

constexpr uint32_t kSpiAb = 0x1001, kSpiBa = 0x2001;

std::string configText(const std::string& site, const std::string& lan_net,
                       const std::string& host_mac, const std::string& wan, const std::string& peer,
                       const std::string& peer_vtep, const std::string& peer_mac,
                       const std::string& remote_net, const std::string& ring_lan,
                       const std::string& ring_wan, bool natt,
                       const std::string& encapsulation = "vxlan", int wan_len = 24) {
  std::ostringstream s;
  s << "node:\n  name: gw-" << site << "\n  site: site-" << site << "\n"
    << "eal:\n  hugepages: false\n"
    << "ports:\n"
    << "  - name: lan0\n    role: lan\n    vdev: " << ring_lan << "\n    addresses: [" << lan_net
    << ".1/24]\n    tenant: t1\n    neighbors:\n      - address: " << lan_net
    << ".10\n        mac: " << host_mac << "\n"
    << "  - name: wan0\n    role: wan\n    vdev: " << ring_wan << "\n    mtu: 1500\n"
    << "    addresses: [" << wan << "/" << wan_len
    << "]\n    neighbors:\n      - address: " << peer_vtep << "\n        mac: " << peer_mac << "\n"
    << "tenants:\n  - name: t1\n    vni: 5001\n    routes:\n      - prefix: " << remote_net
    << "\n        peer: site-" << peer << "\n"
    << "peers:\n  - name: site-" << peer << "\n    encapsulation: " << encapsulation
    << "\n    encryption:\n      mode: esp-aes-256-gcm\n"
    << "      udp-encapsulation: " << (natt ? "true" : "false") << "\n"
    << "    lines:\n      - name: line1\n        port: wan0\n        local-vtep: " << wan
    << "\n        remote-vtep: " << peer_vtep << "\n";
  return s.str();
}

std::string hex(const uint8_t* p, size_t n) {
  static const char* d = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    s += d[p[i] >> 4];
    s += d[p[i] & 15];
  }
  return s;
}
std::string hex(const Bytes& b) {
  return hex(b.data(), b.size());
}

Bytes unhex(const std::string& h) {
  Bytes b;
  for (size_t i = 0; i + 1 < h.size(); i += 2) {
    b.push_back(static_cast<uint8_t>(std::stoul(h.substr(i, 2), nullptr, 16)));
  }
  return b;
}

std::string run(const std::string& cmd) {
  std::string out;
  FILE* f = ::popen(cmd.c_str(), "r");
  if (!f) {
    return out;
  }
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) {
    out.append(buf, n);
  }
  EXPECT_EQ(::pclose(f), 0) << cmd;
  return out;
}

std::string scapy(const std::string& args) {
  return run("/usr/bin/python3 " MCGW_SOURCE_DIR "/tests/tools/esp_scapy.py " + args);
}

uint16_t ipChecksum(const uint8_t* h, size_t n) {
  uint32_t sum = 0;
  for (size_t i = 0; i < n; i += 2) {
    sum += static_cast<uint32_t>(h[i] << 8 | h[i + 1]);
  }
  while (sum >> 16) {
    sum = (sum & 0xffff) + (sum >> 16);
  }
  return static_cast<uint16_t>(~sum);
}

// An Ethernet frame with IPv4/UDP from src to dst carrying `payload` bytes
// (a pattern with the tag in front); DF set.
Bytes udpFrame(const Mac& dst_mac, const Mac& src_mac, const char* src, const char* dst,
               size_t payload, uint8_t tag) {
  Bytes f(14 + 20 + 8 + payload);
  std::memcpy(f.data(), dst_mac.data(), 6);
  std::memcpy(f.data() + 6, src_mac.data(), 6);
  f[12] = 0x08;
  uint8_t* ip = f.data() + 14;
  ip[0] = 0x45;
  const uint16_t total = static_cast<uint16_t>(20 + 8 + payload);
  ip[2] = total >> 8;
  ip[3] = total & 0xff;
  ip[4] = 0;
  ip[5] = tag;
  ip[6] = 0x40;  // DF
  ip[8] = 64;
  ip[9] = 17;
  inet_pton(AF_INET, src, ip + 12);
  inet_pton(AF_INET, dst, ip + 16);
  const uint16_t c = ipChecksum(ip, 20);
  ip[10] = c >> 8;
  ip[11] = c & 0xff;
  uint8_t* udp = ip + 20;
  udp[0] = 0x30;
  udp[1] = 0x39;
  udp[2] = 0x27;
  udp[3] = 0x0f;
  udp[4] = static_cast<uint8_t>((8 + payload) >> 8);
  udp[5] = static_cast<uint8_t>(8 + payload);
  for (size_t i = 0; i < payload; ++i) {
    udp[8 + i] = static_cast<uint8_t>(i == 0 ? tag : i * 7 + tag);
  }
  return f;
}

class EspPipelineTest : public ::testing::TestWithParam<bool> {
 protected:
  static void SetUpTestSuite() {
    pool_ = rte_pktmbuf_pool_create("esp_pool", 2047, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
                                    static_cast<int>(rte_socket_id()));
    ASSERT_NE(pool_, nullptr);
    lan_a_ = test::ringPort("esp_lan_a", pool_);
    wan_a_ = test::ringPort("esp_wan_a", pool_);
    lan_b_ = test::ringPort("esp_lan_b", pool_);
    wan_b_ = test::ringPort("esp_wan_b", pool_);
    lan_a2_ = test::ringPort("esp_lan_a2", pool_);  // a second tenant's (shaping)
  }
  static void TearDownTestSuite() {
    for (RingPort* p : {&lan_a_, &wan_a_, &lan_b_, &wan_b_, &lan_a2_}) {
      rte_eth_dev_stop(p->id);
      rte_eth_dev_close(p->id);
      rte_ring_free(p->ring);
    }
    rte_mempool_free(pool_);
  }

  void SetUp() override {
    natt_ = GetParam();
    for (size_t i = 0; i < 32; ++i) {
      kab_[i] = static_cast<uint8_t>(0x10 + i);
      kba_[i] = static_cast<uint8_t>(0xa0 + i);
    }
    sab_ = {0xca, 0xfe, 0xba, 0xbe};
    sba_ = {0xde, 0xad, 0xbe, 0xef};
    for (auto& up : health_.up) {
      up.store(true);
    }
    a_ = build(configText("a", "10.1.0", "02:00:00:00:0a:10", "203.0.113.1", "b", "203.0.113.10",
                          "02:00:00:00:0b:02", "10.2.0.0/16", "net_ring0", "net_ring1", natt_),
               {{"lan0", {lan_a_.id, kLanAMac, 1}}, {"wan0", {wan_a_.id, kWanAMac, 1}}},
               "site-b/line1", kSpiAb, kab_, sab_, kSpiBa, kba_, sba_, builder_a_);
    b_ = build(configText("b", "10.2.0", "02:00:00:00:0b:10", "203.0.113.10", "a", "203.0.113.1",
                          "02:00:00:00:0a:02", "10.1.0.0/16", "net_ring2", "net_ring3", natt_),
               {{"lan0", {lan_b_.id, kLanBMac, 1}}, {"wan0", {wan_b_.id, kWanBMac, 1}}},
               "site-a/line1", kSpiBa, kba_, sba_, kSpiAb, kab_, sab_, builder_b_);
    ASSERT_TRUE(a_ && b_);
    ca_ = std::make_unique<WorkerCounters>();
    cb_ = std::make_unique<WorkerCounters>();
    pa_ = std::make_unique<Pipeline>(0, pool_, ca_.get(), &health_);
    pb_ = std::make_unique<Pipeline>(0, pool_, cb_.get(), &health_);
  }
  void TearDown() override {
    pa_.reset();
    pb_.reset();
    a_.reset();
    b_.reset();
    for (auto* b : {&builder_a_, &builder_b_}) {
      if (*b) {
        (*b)->clear();
        b->reset();
      }
    }
    for (const RingPort* p : {&lan_a_, &wan_a_, &lan_b_, &wan_b_, &lan_a2_}) {
      EXPECT_EQ(rte_ring_count(p->ring), 0u);
    }
    EXPECT_EQ(rte_mempool_in_use_count(pool_), 0u) << "mbufs leaked";
  }

  std::unique_ptr<ForwardingTables> build(const std::string& text,
                                          std::map<std::string, OpenPort> ports,
                                          const std::string& line, uint32_t out_spi,
                                          const crypto::Key& out_key, const crypto::Salt& out_salt,
                                          uint32_t in_spi, const crypto::Key& in_key,
                                          const crypto::Salt& in_salt,
                                          std::unique_ptr<TablesBuilder>& builder) {
    auto c = config::loadConfigText(text, "esp_pipeline_test.yaml");
    EXPECT_TRUE(c.ok()) << (c.ok() ? "" : c.error().front().toString());
    if (!c.ok()) {
      return nullptr;
    }
    configs_.push_back(*c);
    TablesInput in = TablesInput::fromConfig(**c, std::move(ports), 1);
    LineSas sas;
    if (with_sas_) {
      sas.outbound = std::make_shared<EspSa>(EspSa::Direction::kOutbound, line,
                                             SaMaterial{1, out_spi, out_key, out_salt}, 1, 1024);
      sas.inbound.push_back(std::make_shared<EspSa>(
          EspSa::Direction::kInbound, line, SaMaterial{1, in_spi, in_key, in_salt}, 1, 1024));
    }
    in.sas[line] = sas;
    builder = std::make_unique<TablesBuilder>();
    auto built = builder->build(in, {});
    EXPECT_TRUE(built) << (built ? "" : built.error());
    return built ? std::move(*built) : nullptr;
  }

  rte_mbuf* mbuf(const Bytes& f) {
    rte_mbuf* m = rte_pktmbuf_alloc(pool_);
    EXPECT_NE(m, nullptr);
    std::memcpy(rte_pktmbuf_append(m, static_cast<uint16_t>(f.size())), f.data(), f.size());
    return m;
  }

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

  std::vector<Bytes> through(Pipeline& p, const ForwardingTables& t, const RingPort& in,
                             const std::vector<Bytes>& frames, const RingPort& out) {
    std::vector<rte_mbuf*> ms;
    for (const auto& f : frames) {
      ms.push_back(mbuf(f));
    }
    p.process(t, in.id, ms.data(), static_cast<uint16_t>(ms.size()));
    p.flush();
    return sent(out);
  }

  uint64_t dropsOf(const WorkerCounters& c, DropReason r) const {
    return c.drops[static_cast<size_t>(r)].get();
  }

  // hostA → gw-a: n frames with `payload` bytes each.
  std::vector<Bytes> fromHostA(size_t n, size_t payload) {
    std::vector<Bytes> f;
    for (size_t i = 0; i < n; ++i) {
      f.push_back(udpFrame(kLanAMac, kHostAMac, "10.1.0.10", "10.2.0.10", payload,
                           static_cast<uint8_t>(i + 1)));
    }
    return f;
  }

  std::string keysalt(const crypto::Key& k, const crypto::Salt& s) {
    return hex(k.data(), k.size()) + hex(s.data(), s.size());
  }

  static rte_mempool* pool_;
  static RingPort lan_a_, wan_a_, lan_b_, wan_b_, lan_a2_;
  bool natt_ = false;
  bool with_sas_ = true;
  crypto::Key kab_{}, kba_{};
  crypto::Salt sab_{}, sba_{};
  std::vector<config::ConfigPtr> configs_;
  std::unique_ptr<TablesBuilder> builder_a_, builder_b_;
  std::unique_ptr<ForwardingTables> a_, b_;
  LiveState health_;
  std::unique_ptr<WorkerCounters> ca_, cb_;
  std::unique_ptr<Pipeline> pa_, pb_;
};

rte_mempool* EspPipelineTest::pool_ = nullptr;
RingPort EspPipelineTest::lan_a_, EspPipelineTest::wan_a_, EspPipelineTest::lan_b_,
    EspPipelineTest::wan_b_, EspPipelineTest::lan_a2_;

// Where the ESP header starts in a frame gw-a sent.
size_t espOffset(const Bytes&, bool natt) {
  return 14 + 20 + (natt ? 8 : 0);
}

TEST_P(EspPipelineTest, OutputIsEspThatScapyDecrypts) {
  const auto frames = fromHostA(3, 100);
  const auto out = through(*pa_, *a_, lan_a_, frames, wan_a_);
  ASSERT_EQ(out.size(), 3u);
  std::string args = keysalt(kab_, sab_) + " " + std::to_string(kSpiAb);
  for (size_t i = 0; i < out.size(); ++i) {
    const Bytes& f = out[i];
    ASSERT_GE(f.size(), 60u);
    EXPECT_EQ(f[23], natt_ ? 17 : 50) << "IP protocol";
    const size_t esp = espOffset(f, natt_);
    if (natt_) {
      EXPECT_EQ(f[34] << 8 | f[35], 4500);
      EXPECT_EQ(f[36] << 8 | f[37], 4500);
      EXPECT_EQ(size_t(f[38] << 8 | f[39]), f.size() - 34) << "NAT-T UDP length";
    }
    EXPECT_EQ(size_t(f[16] << 8 | f[17]), f.size() - 14) << "IP total length";
    EXPECT_EQ(hex(f.data() + esp, 8), "00001001" + hex(Bytes{0, 0, 0, uint8_t(i + 1)}))
        << "SPI and sequence number";
    EXPECT_EQ((f.size() - esp - 16 - 16) % 4, 0u) << "the encrypted part is 4-byte aligned";
    args += " " + hex(f);
  }
  std::istringstream lines(scapy("decrypt " + args));
  std::string line;
  size_t i = 0;
  for (; std::getline(lines, line); ++i) {
    ASSERT_LT(i, frames.size());
    std::istringstream w(line);
    std::string ok, plain;
    unsigned seq = 0, nh = 0;
    w >> ok >> seq >> nh >> plain;
    ASSERT_EQ(ok, "ok") << line;
    EXPECT_EQ(seq, i + 1);
    EXPECT_EQ(nh, 17u);
    const Bytes p = unhex(plain);
    ASSERT_EQ(p.size(), 8 + 8 + frames[i].size()) << "UDP + VXLAN + the inner frame";
    EXPECT_EQ(p[2] << 8 | p[3], 4789) << "VXLAN port";
    EXPECT_EQ(size_t(p[4] << 8 | p[5]), p.size()) << "the tunnel's UDP length";
    EXPECT_EQ(hex(p.data() + 8, 8), "0800000000138900") << "VXLAN, VNI 5001";
    // The inner frame: MACs rewritten, TTL 63 and its checksum; the rest
    // as sent.
    Bytes inner(p.begin() + 16, p.end());
    Bytes want = frames[i];
    EXPECT_EQ(hex(inner.data() + 14 + 12, inner.size() - 26),
              hex(want.data() + 14 + 12, want.size() - 26));
    EXPECT_EQ(inner[14 + 8], 63);
  }
  EXPECT_EQ(i, frames.size());
  EXPECT_EQ(a_->lines[0].esp->packets(), 3u);
}

// A shaped encrypted line (docs/policy.md, "Priority when a line is
// full"): gw-a's line with a capacity, its tenant t1 (priority 0) and a
// second tenant t2 (priority 6) on another LAN port.  600 packets of t1
// are queued first, then 1,100 of t2, which leave first.  ESP numbers the
// packets as they leave their queue: the sequence numbers on the line rise
// by one from 1 in the order gw-a sends, and gw-b (replay window 1,024)
// accepts all of them and delivers t1's 600.  (Numbered before the queue,
// t1's 1..600 would reach gw-b behind t2's 601..1,700: replays.)
TEST_P(EspPipelineTest, AShapedLineSealsPacketsAsTheyLeaveTheirQueue) {
  const RingPort& lan_a2 = lan_a2_;
  std::ostringstream c;
  c << "node: {name: gw-a, site: site-a}\n"
    << "eal: {hugepages: false}\n"
    << "ports:\n"
    << "  - {name: lan0, role: lan, vdev: net_ring0, addresses: [10.1.0.1/24], tenant: t1,\n"
    << "     neighbors: [{address: 10.1.0.10, mac: '02:00:00:00:0a:10'}]}\n"
    << "  - {name: lan1, role: lan, vdev: net_ring4, addresses: [10.5.0.1/24], tenant: t2}\n"
    << "  - {name: wan0, role: wan, vdev: net_ring1, mtu: 1500, addresses: [203.0.113.1/24],\n"
    << "     neighbors: [{address: 203.0.113.10, mac: '02:00:00:00:0b:02'}]}\n"
    << "tenants:\n"
    << "  - {name: t1, vni: 5001, routes: [{prefix: 10.2.0.0/16, peer: site-b}]}\n"
    << "  - {name: t2, vni: 5002, bandwidth: {priority: 6},\n"
    << "     routes: [{prefix: 10.6.0.0/16, peer: site-b}]}\n"
    << "peers:\n"
    << "  - name: site-b\n"
    << "    encryption: {mode: esp-aes-256-gcm, udp-encapsulation: " << (natt_ ? "true" : "false")
    << "}\n"
    << "    lines:\n"
    << "      - {name: line1, port: wan0, local-vtep: 203.0.113.1, remote-vtep: 203.0.113.10,\n"
    << "         capacity: 16M, queue-ms: 1000}\n";
  std::unique_ptr<TablesBuilder> builder;
  auto shaped = build(c.str(),
                      {{"lan0", {lan_a_.id, kLanAMac, 1}},
                       {"lan1", {lan_a2.id, kLanAMac, 1}},
                       {"wan0", {wan_a_.id, kWanAMac, 1}}},
                      "site-b/line1", kSpiAb, kab_, sab_, kSpiBa, kba_, sba_, builder);
  ASSERT_TRUE(shaped);
  ASSERT_EQ(shaped->lines.at(0).shape.queue, 2048u);
  ASSERT_TRUE(shaped->lines.at(0).esp);
  pa_->adoptShapers(*shaped);
  // t1's 600, then t2's 1,100, 32 per burst.
  auto queue = [&](const RingPort& port, const char* src, const char* dst, unsigned n) {
    for (unsigned done = 0; done < n;) {
      std::vector<rte_mbuf*> ms;
      for (; done < n && ms.size() < 32; ++done) {
        ms.push_back(mbuf(udpFrame(kLanAMac, kHostAMac, src, dst, 64, static_cast<uint8_t>(done))));
      }
      pa_->process(*shaped, port.id, ms.data(), static_cast<uint16_t>(ms.size()));
    }
  };
  queue(lan_a_, "10.1.0.10", "10.2.0.10", 600);
  queue(lan_a2, "10.5.0.10", "10.6.0.10", 1100);
  EXPECT_EQ(dropsOf(*ca_, DropReason::kLINE_FULL), 0u);
  EXPECT_EQ(ca_->shaped.get(), 1700u);
  EXPECT_EQ(rte_ring_count(wan_a_.ring), 0u) << "nothing leaves before serviceShapers()";
  // Service gw-a's line until it is empty; what it sends goes to gw-b.
  std::vector<uint32_t> seqs;
  size_t delivered = 0;
  const uint64_t deadline = rte_get_tsc_cycles() + 10 * rte_get_tsc_hz();
  while ((pa_->shaping() || rte_ring_count(wan_a_.ring)) && rte_get_tsc_cycles() < deadline) {
    pa_->serviceShapers(*shaped);
    pa_->flush();
    void* objs[32];
    const unsigned n = rte_ring_dequeue_burst(wan_a_.ring, objs, 32, nullptr);
    std::vector<rte_mbuf*> ms;
    for (unsigned i = 0; i < n; ++i) {
      auto* m = static_cast<rte_mbuf*>(objs[i]);
      const auto* d = rte_pktmbuf_mtod(m, const uint8_t*);
      const size_t at = 14 + 20 + (natt_ ? 8 : 0) + 4;
      seqs.push_back(uint32_t{d[at]} << 24 | uint32_t{d[at + 1]} << 16 | d[at + 2] << 8 |
                     d[at + 3]);
      ms.push_back(m);
    }
    if (!ms.empty()) {
      pb_->process(*b_, wan_b_.id, ms.data(), static_cast<uint16_t>(ms.size()));
      pb_->flush();
      delivered += sent(lan_b_).size();
      if (seqs.size() <= 1100) {
        EXPECT_EQ(delivered, 0u) << "a packet of t1 (priority 0) before all of t2's";
      }
    }
  }
  ASSERT_EQ(seqs.size(), 1700u) << "not all packets left the line within 10 s";
  for (size_t i = 0; i < seqs.size(); ++i) {
    ASSERT_EQ(seqs[i], i + 1) << "ESP sequence numbers in the order gw-a sent";
  }
  EXPECT_EQ(dropsOf(*cb_, DropReason::kESP_REPLAY), 0u);
  EXPECT_EQ(dropsOf(*cb_, DropReason::kESP_AUTH), 0u);
  EXPECT_EQ(dropsOf(*cb_, DropReason::kESP_MALFORMED), 0u);
  EXPECT_EQ(delivered, 600u) << "t1's packets at hostB (gw-b has no t2)";
  EXPECT_EQ(shaped->lines.at(0).esp->packets(), 1700u);
  pa_.reset();  // its shapers before the tables they were made with
  shaped.reset();
  builder->clear();
}

TEST_P(EspPipelineTest, ScapyEncryptedPacketsReachTheLan) {
  // hostB's packet as gw-b's tunnel would carry it: UDP 4789 / VXLAN / frame.
  Bytes inner = udpFrame({0x02, 0, 0, 0, 0, 0x01}, kLanBMac, "10.2.0.10", "10.1.0.10", 64, 9);
  Bytes dgram = {0xc0, 0x01, 0x12, 0xb5, 0, 0, 0, 0, 0x08, 0, 0, 0, 0x00, 0x13, 0x89, 0x00};
  dgram.insert(dgram.end(), inner.begin(), inner.end());
  dgram[4] = static_cast<uint8_t>(dgram.size() >> 8);
  dgram[5] = static_cast<uint8_t>(dgram.size());
  std::vector<Bytes> frames;
  for (unsigned seq : {1u, 2u, 7u, 5u}) {
    frames.push_back(unhex(scapy("encrypt " + keysalt(kba_, sba_) + " " + std::to_string(kSpiBa) +
                                 " " + std::to_string(seq) +
                                 " 203.0.113.10 203.0.113.1 02:00:00:00:0b:02 02:00:00:00:0a:02 " +
                                 hex(dgram) + (natt_ ? " natt" : ""))));
    ASSERT_GT(frames.back().size(), 60u);
  }
  frames.push_back(frames[1]);  // a replay of seq 2
  const auto out = through(*pa_, *a_, wan_a_, frames, lan_a_);
  ASSERT_EQ(out.size(), 4u);
  for (const Bytes& f : out) {
    EXPECT_EQ(hex(f.data(), 6), hex(kHostAMac.data(), 6));
    EXPECT_EQ(f.size(), inner.size());
    EXPECT_EQ(hex(f.data() + 14 + 12, f.size() - 26),
              hex(inner.data() + 14 + 12, inner.size() - 26));
  }
  EXPECT_EQ(dropsOf(*ca_, DropReason::kESP_REPLAY), 1u);
}

TEST_P(EspPipelineTest, EndToEndAndEveryRefusalCounted) {
  const auto frames = fromHostA(1, 200);
  auto esp = through(*pa_, *a_, lan_a_, frames, wan_a_);
  ASSERT_EQ(esp.size(), 1u);
  // gw-b opens it and delivers the inner packet to hostB.
  auto out = through(*pb_, *b_, wan_b_, esp, lan_b_);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].size(), frames[0].size());
  EXPECT_EQ(hex(out[0].data() + 14 + 12, out[0].size() - 26),
            hex(frames[0].data() + 14 + 12, frames[0].size() - 26));
  EXPECT_EQ(out[0][14 + 8], 62) << "TTL: one hop per gateway";
  // The same packet again: a replay.
  EXPECT_TRUE(through(*pb_, *b_, wan_b_, esp, lan_b_).empty());
  EXPECT_EQ(dropsOf(*cb_, DropReason::kESP_REPLAY), 1u);
  // Every single-bit flip from the SPI to the end of the ICV is refused:
  // an SPI flip as an unknown SPI, the rest by the ICV (or the window, for
  // a sequence number that became another one already seen).
  auto more = through(*pa_, *a_, lan_a_, fromHostA(1, 60), wan_a_);
  ASSERT_EQ(more.size(), 1u);
  const size_t at = espOffset(more[0], natt_);
  std::vector<Bytes> flipped;
  for (size_t byte = at; byte < more[0].size(); ++byte) {
    for (int bit = 0; bit < 8; ++bit) {
      Bytes f = more[0];
      f[byte] ^= static_cast<uint8_t>(1 << bit);
      flipped.push_back(f);
    }
  }
  for (size_t i = 0; i < flipped.size(); i += 32) {
    std::vector<Bytes> burst(flipped.begin() + i,
                             flipped.begin() + std::min(flipped.size(), i + 32));
    EXPECT_TRUE(through(*pb_, *b_, wan_b_, burst, lan_b_).empty());
  }
  const uint64_t refused =
      dropsOf(*cb_, DropReason::kESP_UNKNOWN_SPI) + dropsOf(*cb_, DropReason::kESP_AUTH) +
      dropsOf(*cb_, DropReason::kESP_REPLAY) - 1 + dropsOf(*cb_, DropReason::kESP_MALFORMED);
  EXPECT_EQ(refused, flipped.size());
  EXPECT_EQ(dropsOf(*cb_, DropReason::kESP_UNKNOWN_SPI), 32u);
  EXPECT_GE(dropsOf(*cb_, DropReason::kESP_AUTH), flipped.size() - 32 - 32);
  // The unflipped packet still goes through: no flip advanced the window.
  EXPECT_EQ(through(*pb_, *b_, wan_b_, more, lan_b_).size(), 1u);
}

TEST_P(EspPipelineTest, ClearTextOnAnEncryptedLineIsDropped) {
  // gw-b's VXLAN packet in clear text (what gw-a would send without ESP):
  // the same bytes scapy decrypted, re-wrapped in a plain outer header.
  Bytes inner = udpFrame({0x02, 0, 0, 0, 0, 0x01}, kLanBMac, "10.2.0.10", "10.1.0.10", 64, 3);
  Bytes f(14 + 20 + 8 + 8);
  std::memcpy(f.data(), kWanAMac.data(), 6);
  std::memcpy(f.data() + 6, kWanBMac.data(), 6);
  f[12] = 0x08;
  uint8_t* ip = f.data() + 14;
  ip[0] = 0x45;
  const uint16_t total = static_cast<uint16_t>(20 + 16 + inner.size());
  ip[2] = total >> 8;
  ip[3] = total & 0xff;
  ip[8] = 64;
  ip[9] = 17;
  inet_pton(AF_INET, "203.0.113.10", ip + 12);
  inet_pton(AF_INET, "203.0.113.1", ip + 16);
  const uint16_t c = ipChecksum(ip, 20);
  ip[10] = c >> 8;
  ip[11] = c & 0xff;
  uint8_t* udp = ip + 20;
  udp[0] = 0xc0;
  udp[2] = 0x12;
  udp[3] = 0xb5;
  udp[4] = static_cast<uint8_t>((16 + inner.size()) >> 8);
  udp[5] = static_cast<uint8_t>(16 + inner.size());
  udp[8] = 0x08;
  udp[12] = 0x00;
  udp[13] = 0x13;
  udp[14] = 0x89;
  f.insert(f.end(), inner.begin(), inner.end());
  EXPECT_TRUE(through(*pa_, *a_, wan_a_, {f}, lan_a_).empty());
  EXPECT_EQ(dropsOf(*ca_, DropReason::kCLEAR_TEXT), 1u);
}

TEST_P(EspPipelineTest, UnknownSpiIsCounted) {
  auto esp = through(*pa_, *a_, lan_a_, fromHostA(1, 80), wan_a_);
  ASSERT_EQ(esp.size(), 1u);
  // gw-a's own packet back to gw-a: SPI 0x1001 is gw-b's inbound SA, not
  // gw-a's (and from the wrong address, which gw-a's VTEP index misses).
  Bytes f = esp[0];
  std::memcpy(f.data(), kWanAMac.data(), 6);
  std::memcpy(f.data() + 6, kWanBMac.data(), 6);
  EXPECT_TRUE(through(*pa_, *a_, wan_a_, {f}, lan_a_).empty());
  EXPECT_EQ(dropsOf(*ca_, DropReason::kESP_UNKNOWN_SPI), 1u);
}

TEST_P(EspPipelineTest, LargestInnerPacketIsTheDocumentedOne) {
  // docs/encryption.md, "Overhead": IPv4 over VXLAN over IPv4 on a
  // 1500-byte underlay carries inner IPv4 packets of up to 1416 bytes with
  // ESP, 1408 with NAT-T.
  const unsigned largest = natt_ ? 1408 : 1416;
  EXPECT_EQ(lines::innerIpMtu({1500, false, proto::Encapsulation::kVxlan, true, natt_}), largest);
  const auto fits = fromHostA(1, largest - 28);
  auto out = through(*pa_, *a_, lan_a_, fits, wan_a_);
  ASSERT_EQ(out.size(), 1u);
  const size_t ip_len = out[0].size() - 14;
  EXPECT_LE(ip_len, 1500u);
  EXPECT_GE(ip_len, 1497u) << "the padding is at most 3 bytes";
  const auto too_big = fromHostA(1, largest - 28 + 1);
  EXPECT_TRUE(through(*pa_, *a_, lan_a_, too_big, wan_a_).empty());
  const auto icmp = sent(lan_a_);
  ASSERT_EQ(icmp.size(), 1u) << "ICMP frag-needed back to hostA";
  EXPECT_EQ(icmp[0][14 + 9], 1);
  EXPECT_EQ(icmp[0][14 + 20], 3);
  EXPECT_EQ(icmp[0][14 + 21], 4);
  EXPECT_EQ(icmp[0][14 + 26] << 8 | icmp[0][14 + 27], int(largest)) << "the MTU it names";
  EXPECT_EQ(dropsOf(*ca_, DropReason::kTOO_BIG), 1u);
}

TEST_P(EspPipelineTest, TheOldSpiAfterARekeyIsDroppedAndCounted) {
  // A packet gw-a sealed under the first keys, kept back.
  const auto old_esp = through(*pa_, *a_, lan_a_, fromHostA(1, 80), wan_a_);
  ASSERT_EQ(old_esp.size(), 1u);
  // The rekey: gw-a sends with SPI 0x1002 under a new key; gw-b, its grace
  // over, holds only the new inbound SA.
  crypto::Key k2 = kab_;
  k2[0] ^= 0xff;
  const crypto::Salt s2{1, 2, 3, 4};
  std::unique_ptr<TablesBuilder> ba, bb;
  auto a2 = build(configText("a", "10.1.0", "02:00:00:00:0a:10", "203.0.113.1", "b", "203.0.113.10",
                             "02:00:00:00:0b:02", "10.2.0.0/16", "net_ring0", "net_ring1", natt_),
                  {{"lan0", {lan_a_.id, kLanAMac, 1}}, {"wan0", {wan_a_.id, kWanAMac, 1}}},
                  "site-b/line1", 0x1002, k2, s2, kSpiBa, kba_, sba_, ba);
  auto b2 = build(configText("b", "10.2.0", "02:00:00:00:0b:10", "203.0.113.10", "a", "203.0.113.1",
                             "02:00:00:00:0a:02", "10.1.0.0/16", "net_ring2", "net_ring3", natt_),
                  {{"lan0", {lan_b_.id, kLanBMac, 1}}, {"wan0", {wan_b_.id, kWanBMac, 1}}},
                  "site-a/line1", kSpiBa, kba_, sba_, 0x1002, k2, s2, bb);
  ASSERT_TRUE(a2 && b2);
  const auto new_esp = through(*pa_, *a2, lan_a_, fromHostA(1, 80), wan_a_);
  ASSERT_EQ(new_esp.size(), 1u);
  EXPECT_EQ(new_esp[0][espOffset(new_esp[0], natt_) + 3], 0x02) << "SPI 0x1002";
  EXPECT_EQ(through(*pb_, *b2, wan_b_, new_esp, lan_b_).size(), 1u);
  EXPECT_TRUE(through(*pb_, *b2, wan_b_, old_esp, lan_b_).empty());
  EXPECT_EQ(dropsOf(*cb_, DropReason::kESP_UNKNOWN_SPI), 1u);
  EXPECT_EQ(dropsOf(*cb_, DropReason::kESP_AUTH), 0u);
  a2.reset();
  b2.reset();
  ba->clear();
  bb->clear();
}

TEST_P(EspPipelineTest, NothingIsSentPastTheReservedSequenceNumbers) {
  // Static keys: the SA may use sequence numbers up to what is reserved on
  // disk; past that a packet is dropped, never sent with an unreserved IV.
  EspSa& sa = *a_->lines[0].esp;
  sa.setSeqLimit(3);
  auto esp = through(*pa_, *a_, lan_a_, fromHostA(5, 60), wan_a_);
  ASSERT_EQ(esp.size(), 3u);
  const size_t at = espOffset(esp[0], natt_);
  for (size_t i = 0; i < esp.size(); ++i) {
    const Bytes& f = esp[i];
    const uint32_t seq = uint32_t(f[at + 4]) << 24 | uint32_t(f[at + 5]) << 16 |
                         uint32_t(f[at + 6]) << 8 | f[at + 7];
    EXPECT_EQ(seq, i + 1);
  }
  EXPECT_EQ(dropsOf(*ca_, DropReason::kESP_SEQ_LIMIT), 2u);
  // The reservation renewed: sending goes on.
  sa.setSeqLimit(100);
  esp = through(*pa_, *a_, lan_a_, fromHostA(1, 60), wan_a_);
  ASSERT_EQ(esp.size(), 1u);
  EXPECT_EQ(esp[0][at + 7], 4) << "the dropped packets took no sequence number";
  EXPECT_EQ(through(*pb_, *b_, wan_b_, esp, lan_b_).size(), 1u);
  EXPECT_EQ(dropsOf(*ca_, DropReason::kESP_SEQ_LIMIT), 2u);
}

TEST_P(EspPipelineTest, GeneveAndAnIpv6UnderlayAreProtectedToo) {
  // Geneve over IPv4 (with and without NAT-T), VXLAN and Geneve over IPv6
  // (NAT-T is IPv4 only): scapy opens what gw-a sealed, gw-b delivers it,
  // a flipped bit is refused.
  struct Variant {
    const char* encapsulation;
    bool v6;
    uint16_t port;
  };
  std::vector<Variant> variants = {{"geneve", false, 6081}};
  if (!natt_) {
    variants.push_back({"vxlan", true, 4789});
    variants.push_back({"geneve", true, 6081});
  }
  for (const Variant& v : variants) {
    SCOPED_TRACE(std::string(v.encapsulation) + (v.v6 ? " over IPv6" : " over IPv4"));
    const std::string wa = v.v6 ? "2001:db8::1" : "203.0.113.1";
    const std::string wb = v.v6 ? "2001:db8::10" : "203.0.113.10";
    const int len = v.v6 ? 64 : 24;
    std::unique_ptr<TablesBuilder> ba, bb;
    auto a = build(configText("a", "10.1.0", "02:00:00:00:0a:10", wa, "b", wb, "02:00:00:00:0b:02",
                              "10.2.0.0/16", "net_ring0", "net_ring1", natt_, v.encapsulation, len),
                   {{"lan0", {lan_a_.id, kLanAMac, 1}}, {"wan0", {wan_a_.id, kWanAMac, 1}}},
                   "site-b/line1", kSpiAb, kab_, sab_, kSpiBa, kba_, sba_, ba);
    auto b = build(configText("b", "10.2.0", "02:00:00:00:0b:10", wb, "a", wa, "02:00:00:00:0a:02",
                              "10.1.0.0/16", "net_ring2", "net_ring3", natt_, v.encapsulation, len),
                   {{"lan0", {lan_b_.id, kLanBMac, 1}}, {"wan0", {wan_b_.id, kWanBMac, 1}}},
                   "site-a/line1", kSpiBa, kba_, sba_, kSpiAb, kab_, sab_, bb);
    ASSERT_TRUE(a && b);
    const auto frames = fromHostA(2, 100);
    const auto out = through(*pa_, *a, lan_a_, frames, wan_a_);
    ASSERT_EQ(out.size(), 2u);
    std::string args = keysalt(kab_, sab_) + " " + std::to_string(kSpiAb);
    for (const Bytes& f : out) {
      ASSERT_GE(f.size(), 80u);
      if (v.v6) {
        EXPECT_EQ(f[12] << 8 | f[13], 0x86dd);
        EXPECT_EQ(f[20], 50) << "IPv6 next header ESP";
        EXPECT_EQ(size_t(f[18] << 8 | f[19]), f.size() - 54) << "IPv6 payload length";
      } else {
        EXPECT_EQ(f[23], natt_ ? 17 : 50);
      }
      args += " " + hex(f);
    }
    std::istringstream lines(scapy("decrypt " + args));
    std::string line;
    size_t i = 0;
    for (; std::getline(lines, line); ++i) {
      std::istringstream w(line);
      std::string ok, plain;
      unsigned seq = 0, nh = 0;
      w >> ok >> seq >> nh >> plain;
      ASSERT_EQ(ok, "ok") << line;
      const Bytes p = unhex(plain);
      ASSERT_GE(p.size(), 16u + frames[i].size());
      EXPECT_EQ(p[2] << 8 | p[3], v.port) << "the overlay's UDP port";
      EXPECT_EQ(hex(p.data() + p.size() - frames[i].size() + 26, frames[i].size() - 26),
                hex(frames[i].data() + 26, frames[i].size() - 26))
          << "the inner packet after its TTL and checksum";
    }
    EXPECT_EQ(i, out.size());
    const auto delivered = through(*pb_, *b, wan_b_, out, lan_b_);
    ASSERT_EQ(delivered.size(), 2u);
    for (size_t k = 0; k < delivered.size(); ++k) {
      EXPECT_EQ(hex(delivered[k].data() + 14 + 12, delivered[k].size() - 26),
                hex(frames[k].data() + 14 + 12, frames[k].size() - 26));
    }
    const uint64_t auth = dropsOf(*cb_, DropReason::kESP_AUTH);
    auto again = through(*pa_, *a, lan_a_, fromHostA(1, 100), wan_a_);
    ASSERT_EQ(again.size(), 1u);
    again[0][again[0].size() - 20] ^= 0x01;  // in the trailer, under the ICV
    EXPECT_TRUE(through(*pb_, *b, wan_b_, again, lan_b_).empty());
    EXPECT_EQ(dropsOf(*cb_, DropReason::kESP_AUTH), auth + 1);
    a.reset();
    b.reset();
    ba->clear();
    bb->clear();
  }
}

TEST_P(EspPipelineTest, AnEncryptedLineWithoutAnSaCarriesNothing) {
  TearDown();
  with_sas_ = false;
  SetUp();
  EXPECT_TRUE(through(*pa_, *a_, lan_a_, fromHostA(2, 50), wan_a_).empty());
  EXPECT_EQ(dropsOf(*ca_, DropReason::kNO_TUNNEL), 2u);
  EXPECT_EQ(a_->lines[0].esp, nullptr);
  EXPECT_TRUE(a_->lines[0].encrypted);
}

INSTANTIATE_TEST_SUITE_P(Esp, EspPipelineTest, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "NatT" : "Plain"; });

}  // namespace
}  // namespace mcgw::engine
