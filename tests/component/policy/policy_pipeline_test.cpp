// Tenant policy in the fast path (docs/policy.md): the real Pipeline over
// tables from the real TablesBuilder (net_ring ports, EAL --no-huge), with
// packets written out here and each one's verdict worked out here: which
// packets leave (by their tag, the inner IPv4 ID or IPv6 flow label), which
// are dropped and why, and which policy counter slot each one moves, in
// both directions (LAN -> tunnel, and tunnel -> LAN for t1).  Then
// the PolicyBuilder's caching and counter slots across builds, a build that
// fails, and `show policy --json` (control/policy/policy_view.cpp).
//
//   lan0 (t1) 10.1.0.1/24, 2001:db8:1::1/64   rules: web-b7, block-b7,
//                                               no-ssh; default allow
//   lan1 (t2) 10.5.0.1/24, 2001:db8:5::1/64   rules: web, dns6; default deny
//   lan2 (t3) 10.7.0.1/24                      no policy
//   wan0 203.0.113.1/24 ── site-b 203.0.113.10 (VXLAN, VNI 5001/5002/5003)
//   t1: 10.2/16, 2001:db8:2::/48, 10.60.5/24 to site-b; VPC b-train 10.2.7/24
//   t2: 10.2/16, 2001:db8:6::/48, 10.60/16 to site-b
//   t3: 10.2/16 to site-b
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_ring.h>
#include <rte_ring_elem.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/loader.hpp"
#include "control/policy/policy_view.hpp"
#include "dataplane/engine/counters.hpp"
#include "dataplane/engine/drop_reason.hpp"
#include "dataplane/engine/flow_sample.hpp"
#include "dataplane/engine/pipeline.hpp"
#include "dataplane/engine/tables.hpp"
#include "tests/support/eal.hpp"
#include "tests/support/ring_port.hpp"

namespace mcgw::engine {
namespace {

const auto* const kEal =
    ::testing::AddGlobalTestEnvironment(new test::EalEnvironment("policy_pipeline_test", 1024));

using Bytes = std::vector<uint8_t>;
using Ip4 = std::array<uint8_t, 4>;
using Ip6 = std::array<uint8_t, 16>;
using nlohmann::json;

constexpr size_t kEth = 14;
// Outer Ethernet, IPv4, UDP and VXLAN, then the inner Ethernet header.
constexpr size_t kInnerIp = 50 + kEth;

const Mac kLanMac[3] = {
    {0x02, 0, 0, 0, 0x01, 0x01}, {0x02, 0, 0, 0, 0x05, 0x01}, {0x02, 0, 0, 0, 0x07, 0x01}};
const Mac kWanMac = {0x02, 0, 0, 0, 0x02, 0x01};
const Mac kHostMac = {0x02, 0, 0, 0, 0x01, 0x10};

const Ip4 kHost4[3] = {{10, 1, 0, 10}, {10, 5, 0, 10}, {10, 7, 0, 10}};

// The tenants' policies as the config writes them.
const char* const kT1Policy = R"(    policy:
      rules:
        - name: web-b7
          action: allow
          destination: [vpc b-train]
          protocol: tcp
          destination-ports: "443"
        - name: block-b7
          action: deny
          destination: [vpc b-train]
        - name: no-ssh
          action: deny
          protocol: tcp
          destination-ports: "22"
)";
const char* const kT2Policy = R"(    policy:
      default: deny
      rules:
        - name: web
          action: allow
          protocol: tcp
          destination-ports: "443"
        - name: dns6
          action: allow
          destination: ["2001:db8:6::/48"]
          protocol: udp
          destination-ports: "53"
)";

// The config with each tenant's policy text (after its routes).
std::string configText(const std::string& t1, const std::string& t2, const std::string& t3 = "") {
  return R"(node:
  name: gw-a
  site: site-a
eal:
  hugepages: false
ports:
  - name: lan0
    role: lan
    vdev: net_ring0
    addresses: [10.1.0.1/24, "2001:db8:1::1/64"]
    tenant: t1
    neighbors:
      - address: 10.1.0.10
        mac: 02:00:00:00:01:10
      - address: "2001:db8:1::10"
        mac: 02:00:00:00:01:10
  - name: lan1
    role: lan
    vdev: net_ring1
    addresses: [10.5.0.1/24, "2001:db8:5::1/64"]
    tenant: t2
  - name: lan2
    role: lan
    vdev: net_ring2
    addresses: [10.7.0.1/24]
    tenant: t3
  - name: wan0
    role: wan
    vdev: net_ring3
    addresses: [203.0.113.1/24]
    neighbors:
      - address: 203.0.113.10
        mac: 02:00:00:00:02:10
address-plan:
  clouds:
    - name: aws
      regions:
        - name: r1
          vpcs:
            - {name: b-train, prefixes: [10.2.7.0/24], tenant: t1, site: site-b}
tenants:
  - name: t1
    vni: 5001
    routes:
      - prefix: 10.2.0.0/16
        peer: site-b
      - prefix: "2001:db8:2::/48"
        peer: site-b
      - prefix: 10.60.5.0/24
        peer: site-b
)" + t1 + R"(  - name: t2
    vni: 5002
    routes:
      - prefix: 10.2.0.0/16
        peer: site-b
      - prefix: "2001:db8:6::/48"
        peer: site-b
      - prefix: 10.60.0.0/16
        peer: site-b
)" + t2 + R"(  - name: t3
    vni: 5003
    routes:
      - prefix: 10.2.0.0/16
        peer: site-b
)" + t3 + R"(peers:
  - name: site-b
    lines:
      - name: l1
        port: wan0
        local-vtep: 203.0.113.1
        remote-vtep: 203.0.113.10
)";
}

config::ConfigPtr loadConfig(const std::string& text) {
  auto c = config::loadConfigText(text, "policy_pipeline_test.yaml");
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

// ---------------------------------------------------------------- packets

void put16(Bytes& b, size_t at, uint16_t v) {
  b[at] = static_cast<uint8_t>(v >> 8);
  b[at + 1] = static_cast<uint8_t>(v);
}
uint16_t get16(const Bytes& b, size_t at) {
  return static_cast<uint16_t>(b[at] << 8 | b[at + 1]);
}

Ip6 ip6(const char* text) {
  Ip6 a{};
  EXPECT_EQ(inet_pton(AF_INET6, text, a.data()), 1) << text;
  return a;
}
Ip4 ip4(const char* text) {
  Ip4 a{};
  EXPECT_EQ(inet_pton(AF_INET, text, a.data()), 1) << text;
  return a;
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

// TCP (an ACK, no options), UDP or an ICMP echo with a few bytes of data.
constexpr uint8_t kTcp = 6, kUdp = 17, kIcmp = 1, kIcmp6 = 58;
Bytes l4(uint8_t proto, uint16_t sport, uint16_t dport) {
  Bytes b;
  if (proto == kTcp) {
    b.assign(20, 0);
    put16(b, 0, sport);
    put16(b, 2, dport);
    b[12] = 0x50;
    b[13] = 0x10;
    put16(b, 14, 8192);
  } else if (proto == kUdp) {
    b.assign(8, 0);
    put16(b, 0, sport);
    put16(b, 2, dport);
  } else {
    b = {proto == kIcmp6 ? uint8_t{128} : uint8_t{8}, 0, 0, 0, 0, 1, 0, 1};
  }
  for (int i = 0; i < 12; ++i) {
    b.push_back(static_cast<uint8_t>(i * 5));
  }
  if (proto == kUdp) {
    put16(b, 4, static_cast<uint16_t>(b.size()));
  }
  return b;
}

Bytes frame4(int lan, const Ip4& dst, uint8_t proto, uint16_t sport, uint16_t dport, uint16_t tag) {
  const Bytes p = l4(proto, sport, dport);
  Bytes f(kLanMac[lan].begin(), kLanMac[lan].end());
  f.insert(f.end(), kHostMac.begin(), kHostMac.end());
  f.push_back(0x08);
  f.push_back(0x00);
  Bytes ip = {0x45, 0, 0, 0, 0, 0, 0x40, 0, 64, proto, 0, 0};
  ip.insert(ip.end(), kHost4[lan].begin(), kHost4[lan].end());
  ip.insert(ip.end(), dst.begin(), dst.end());
  put16(ip, 2, static_cast<uint16_t>(20 + p.size()));
  put16(ip, 4, tag);
  put16(ip, 10, checksum(ip, 0, 20));
  f.insert(f.end(), ip.begin(), ip.end());
  f.insert(f.end(), p.begin(), p.end());
  return f;
}

Bytes frame6(int lan, const Ip6& dst, uint8_t proto, uint16_t sport, uint16_t dport, uint16_t tag) {
  const Bytes p = l4(proto, sport, dport);
  Bytes f(kLanMac[lan].begin(), kLanMac[lan].end());
  f.insert(f.end(), kHostMac.begin(), kHostMac.end());
  f.push_back(0x86);
  f.push_back(0xdd);
  Bytes ip = {0x60, 0, static_cast<uint8_t>(tag >> 8), static_cast<uint8_t>(tag), 0, 0, proto, 64};
  put16(ip, 4, static_cast<uint16_t>(p.size()));
  const Ip6 src = lan == 0 ? ip6("2001:db8:1::10") : ip6("2001:db8:5::10");
  ip.insert(ip.end(), src.begin(), src.end());
  ip.insert(ip.end(), dst.begin(), dst.end());
  f.insert(f.end(), ip.begin(), ip.end());
  f.insert(f.end(), p.begin(), p.end());
  return f;
}

// The tag of a frame that left wan0: its inner packet's.
std::optional<uint16_t> tagOf(const Bytes& f) {
  if (f.size() < kInnerIp + 40 || get16(f, 12) != 0x0800 || f[kEth + 9] != 17) {
    return std::nullopt;
  }
  if (get16(f, kInnerIp - 2) == 0x0800) {
    return get16(f, kInnerIp + 4);
  }
  if (get16(f, kInnerIp - 2) == 0x86dd) {
    return get16(f, kInnerIp + 2);
  }
  return std::nullopt;
}

// The tag of a frame that left a LAN port.
std::optional<uint16_t> lanTagOf(const Bytes& f) {
  if (f.size() >= kEth + 40 && get16(f, 12) == 0x86dd) {
    return get16(f, kEth + 2);
  }
  if (f.size() >= kEth + 20 && get16(f, 12) == 0x0800) {
    return get16(f, kEth + 4);
  }
  return std::nullopt;
}

// A frame from site-b's VTEP to wan0: VXLAN (VNI `vni`) around the IP
// packet of `lan_frame` (its Ethernet header replaced).
Bytes fromSiteB(uint32_t vni, const Bytes& lan_frame) {
  const Mac peer = {0x02, 0, 0, 0, 0x02, 0x10};
  const Mac inner_src = {0x02, 0, 0, 0, 0x0b, 0x01};
  Bytes inner(kLanMac[0].begin(), kLanMac[0].end());
  inner.insert(inner.end(), inner_src.begin(), inner_src.end());
  inner.insert(inner.end(), lan_frame.begin() + 12, lan_frame.end());
  Bytes u = {0xc3,
             0x50,
             0x12,
             0xb5,
             0,
             0,
             0,
             0,
             0x08,
             0,
             0,
             0,
             static_cast<uint8_t>(vni >> 16),
             static_cast<uint8_t>(vni >> 8),
             static_cast<uint8_t>(vni),
             0};
  put16(u, 4, static_cast<uint16_t>(u.size() + inner.size()));
  u.insert(u.end(), inner.begin(), inner.end());
  Bytes ip = {0x45, 0, 0, 0, 0, 0, 0x40, 0, 64, 17, 0, 0, 203, 0, 113, 10, 203, 0, 113, 1};
  put16(ip, 2, static_cast<uint16_t>(20 + u.size()));
  put16(ip, 10, checksum(ip, 0, 20));
  Bytes f(kWanMac.begin(), kWanMac.end());
  f.insert(f.end(), peer.begin(), peer.end());
  f.push_back(0x08);
  f.push_back(0x00);
  f.insert(f.end(), ip.begin(), ip.end());
  f.insert(f.end(), u.begin(), u.end());
  return f;
}

// A frame4 / frame6 the other way: from `src` (site-b's side) to lan0's
// host.
Bytes reply4(const Ip4& src, uint8_t proto, uint16_t sport, uint16_t dport, uint16_t tag) {
  Bytes f = frame4(0, src, proto, sport, dport, tag);
  std::swap_ranges(f.begin() + kEth + 12, f.begin() + kEth + 16, f.begin() + kEth + 16);
  return f;  // the header checksum is the same: a sum
}
Bytes reply6(const Ip6& src, uint8_t proto, uint16_t sport, uint16_t dport, uint16_t tag) {
  Bytes f = frame6(0, src, proto, sport, dport, tag);
  std::swap_ranges(f.begin() + kEth + 8, f.begin() + kEth + 24, f.begin() + kEth + 24);
  return f;
}

// ------------------------------------------------------------ expectations

// Slot names: "t1/no-ssh", "t1/(default)", "t1/(isolation)".
struct Case {
  std::string kind;
  int lan = 0;
  Bytes frame;
  std::optional<DropReason> drop;  // none: leaves wan0
  std::vector<std::string> slots;  // the policy slots it moves by one
  bool from_wan = false;           // VXLAN from site-b to `lan`'s host (leaves `lan`)
};
using Make = std::function<Case(uint16_t tag)>;

// The slot of a name in the tables.
uint16_t slotOf(const ForwardingTables& t, const std::string& name) {
  const auto slash = name.find('/');
  const std::string tenant = name.substr(0, slash), what = name.substr(slash + 1);
  for (const TenantEntry& te : t.tenants) {
    if (te.name != tenant) {
      continue;
    }
    if (what == "(isolation)") {
      return te.isolation_slot;
    }
    EXPECT_TRUE(te.policy) << name;
    if (!te.policy) {
      return 0;
    }
    if (what == "(default)") {
      return te.policy->default_slot;
    }
    for (size_t i = 0; i < te.policy->rules.size(); ++i) {
      if (te.policy->rules[i].name == what) {
        EXPECT_EQ(te.policy->rules[i].slot, te.policy->slot_of_rule[i]);
        return te.policy->slot_of_rule[i];
      }
    }
  }
  ADD_FAILURE() << "no slot " << name;
  return 0;
}

// Every packet kind of the config above with its verdict.
std::vector<std::pair<std::string, Make>> kinds() {
  std::vector<std::pair<std::string, Make>> k;
  auto add4 = [&](const char* kind, int lan, const char* dst, uint8_t proto, uint16_t dport,
                  std::optional<DropReason> drop, std::vector<std::string> slots) {
    const Ip4 d = ip4(dst);
    k.emplace_back(kind, [=](uint16_t tag) {
      return Case{kind, lan, frame4(lan, d, proto, 40000, dport, tag), drop, slots};
    });
  };
  auto add6 = [&](const char* kind, int lan, const char* dst, uint8_t proto, uint16_t dport,
                  std::optional<DropReason> drop, std::vector<std::string> slots) {
    const Ip6 d = ip6(dst);
    k.emplace_back(kind, [=](uint16_t tag) {
      return Case{kind, lan, frame6(lan, d, proto, 40000, dport, tag), drop, slots};
    });
  };
  const auto deny = DropReason::kPOLICY_DENY;
  const auto iso = DropReason::kTENANT_ISOLATION;
  const auto none = DropReason::kNO_ROUTE;
  const std::nullopt_t pass = std::nullopt;
  // t1: first match wins; default allow (counted too).
  add4("t1 tcp 22 denied", 0, "10.2.3.4", kTcp, 22, deny, {"t1/no-ssh"});
  add4("t1 tcp 443 default", 0, "10.2.3.4", kTcp, 443, pass, {"t1/(default)"});
  add4("t1 tcp 443 to b-train allowed", 0, "10.2.7.9", kTcp, 443, pass, {"t1/web-b7"});
  add4("t1 tcp 22 to b-train blocked", 0, "10.2.7.9", kTcp, 22, deny, {"t1/block-b7"});
  add4("t1 udp 53 to b-train blocked", 0, "10.2.7.9", kUdp, 53, deny, {"t1/block-b7"});
  add4("t1 udp 22 default", 0, "10.2.3.4", kUdp, 22, pass, {"t1/(default)"});
  add4("t1 icmp default", 0, "10.2.3.4", kIcmp, 0, pass, {"t1/(default)"});
  add6("t1 v6 tcp 22 denied", 0, "2001:db8:2::5", kTcp, 22, deny, {"t1/no-ssh"});
  add6("t1 v6 udp 22 default", 0, "2001:db8:2::5", kUdp, 22, pass, {"t1/(default)"});
  add6("t1 v6 tcp 443 default", 0, "2001:db8:2::5", kTcp, 443, pass, {"t1/(default)"});
  // t1 without a route: another tenant's only (isolation), a prefix two
  // tenants share (no-route), nobody's (no-route).  The policy stage saw
  // them first: allowed by default.
  add4("t1 to t2's LAN", 0, "10.5.0.9", kUdp, 9, iso, {"t1/(default)", "t1/(isolation)"});
  add4("t1 to t3's LAN", 0, "10.7.0.9", kTcp, 80, iso, {"t1/(default)", "t1/(isolation)"});
  add6("t1 v6 to t2's LAN", 0, "2001:db8:5::9", kUdp, 9, iso, {"t1/(default)", "t1/(isolation)"});
  add6("t1 v6 to t2's route", 0, "2001:db8:6::9", kUdp, 9, iso, {"t1/(default)", "t1/(isolation)"});
  add4("t1 to a prefix t2 shares", 0, "10.60.9.9", kUdp, 9, none, {"t1/(default)"});
  add4("t1 to nowhere", 0, "10.99.0.1", kUdp, 9, none, {"t1/(default)"});
  add6("t1 v6 to nowhere", 0, "2001:db8:99::1", kUdp, 9, none, {"t1/(default)"});
  // Into t1 from the tunnel: the same rules, source and destination as
  // they are (site-b's 10.2.3.4 to the LAN host).
  auto in4 = [&](const char* kind, const char* src, uint8_t proto, uint16_t sport, uint16_t dport,
                 std::optional<DropReason> drop, std::vector<std::string> slots) {
    const Ip4 s = ip4(src);
    k.emplace_back(kind, [=](uint16_t tag) {
      Case c{kind, 0, fromSiteB(5001, reply4(s, proto, sport, dport, tag)), drop, slots};
      c.from_wan = true;
      return c;
    });
  };
  auto in6 = [&](const char* kind, const char* src, uint8_t proto, uint16_t sport, uint16_t dport,
                 std::optional<DropReason> drop, std::vector<std::string> slots) {
    const Ip6 s = ip6(src);
    k.emplace_back(kind, [=](uint16_t tag) {
      Case c{kind, 0, fromSiteB(5001, reply6(s, proto, sport, dport, tag)), drop, slots};
      c.from_wan = true;
      return c;
    });
  };
  in4("into t1 tcp 22 denied", "10.2.3.4", kTcp, 50000, 22, deny, {"t1/no-ssh"});
  in4("into t1 udp default", "10.2.3.4", kUdp, 53, 40000, pass, {"t1/(default)"});
  in4("into t1 from b-train (block-b7 is on destinations)", "10.2.7.9", kUdp, 53, 40000, pass,
      {"t1/(default)"});
  in6("into t1 v6 tcp 22 denied", "2001:db8:2::5", kTcp, 50000, 22, deny, {"t1/no-ssh"});
  in6("into t1 v6 tcp 443 reply", "2001:db8:2::5", kTcp, 443, 40000, pass, {"t1/(default)"});
  // t2: default deny.
  add4("t2 tcp 443 allowed", 1, "10.2.3.4", kTcp, 443, pass, {"t2/web"});
  add4("t2 tcp 80 default deny", 1, "10.2.3.4", kTcp, 80, deny, {"t2/(default)"});
  add4("t2 udp 53 v4 default deny", 1, "10.2.3.4", kUdp, 53, deny, {"t2/(default)"});
  add4("t2 icmp default deny", 1, "10.2.3.4", kIcmp, 0, deny, {"t2/(default)"});
  add6("t2 v6 udp 53 allowed", 1, "2001:db8:6::1", kUdp, 53, pass, {"t2/dns6"});
  add6("t2 v6 udp 54 default deny", 1, "2001:db8:6::1", kUdp, 54, deny, {"t2/(default)"});
  add6("t2 v6 tcp 443 allowed", 1, "2001:db8:6::1", kTcp, 443, pass, {"t2/web"});
  add6("t2 v6 icmp default deny", 1, "2001:db8:6::1", kIcmp6, 0, deny, {"t2/(default)"});
  // t2 to t1's LAN: denied by its policy before any lookup.
  add4("t2 to t1's LAN default deny", 1, "10.1.0.9", kUdp, 9, deny, {"t2/(default)"});
  // t3: no policy, but isolation.
  add4("t3 tcp 22", 2, "10.2.3.4", kTcp, 22, pass, {});
  add4("t3 udp 53", 2, "10.2.7.9", kUdp, 53, pass, {});
  add4("t3 to t1's LAN", 2, "10.1.0.77", kUdp, 9, iso, {"t3/(isolation)"});
  add4("t3 to t1's route 10.60.5/24", 2, "10.60.5.5", kUdp, 9, iso, {"t3/(isolation)"});
  add4("t3 to nowhere", 2, "10.99.0.1", kUdp, 9, none, {});
  return k;
}

// ------------------------------------------------------------------ fixture

class PolicyPipelineTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    pool_ = rte_pktmbuf_pool_create("policy_pool", 4095, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
                                    static_cast<int>(rte_socket_id()));
    ASSERT_NE(pool_, nullptr) << rte_strerror(rte_errno);
    const char* names[] = {"pol_lan0", "pol_lan1", "pol_lan2"};
    for (int i = 0; i < 3; ++i) {
      lan_[i] = test::ringPort(names[i], pool_);
    }
    wan0_ = test::ringPort("pol_wan0", pool_);
  }
  static void TearDownTestSuite() {
    for (test::RingPort* p : {&lan_[0], &lan_[1], &lan_[2], &wan0_}) {
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
    for (const test::RingPort* p : {&lan_[0], &lan_[1], &lan_[2], &wan0_}) {
      EXPECT_EQ(rte_ring_count(p->ring), 0u);
    }
    EXPECT_EQ(rte_mempool_in_use_count(pool_), 0u) << "mbufs leaked";
  }

  static std::map<std::string, OpenPort> ports() {
    return {{"lan0", {lan_[0].id, kLanMac[0], 1}},
            {"lan1", {lan_[1].id, kLanMac[1], 1}},
            {"lan2", {lan_[2].id, kLanMac[2], 1}},
            {"wan0", {wan0_.id, kWanMac, 1}}};
  }

  // Builds tables from `text`; keeps them (earlier ones stay alive, as a
  // worker may still use them).
  Result<const ForwardingTables*, std::string> build(const std::string& text) {
    config::ConfigPtr c = loadConfig(text);
    if (!c) {
      return unexpected(std::string("config refused"));
    }
    configs_.push_back(c);
    auto built = builder_->build(TablesInput::fromConfig(*c, ports(), 1), {});
    if (!built) {
      return unexpected(built.error());
    }
    tables_.push_back(std::move(*built));
    return tables_.back().get();
  }
  const ForwardingTables& buildOk(const std::string& text) {
    auto t = build(text);
    EXPECT_TRUE(t) << t.error();
    if (!t) {
      throw std::runtime_error(t.error());
    }
    return **t;
  }

  static std::vector<Bytes> sent(const test::RingPort& port) {
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

  std::map<std::string, uint64_t> drops() const {
    std::map<std::string, uint64_t> d;
    for (size_t i = 0; i < kDropReasonCount; ++i) {
      if (uint64_t v = counters_->drops[i].get()) {
        d[std::string(kDropReasons[i].name)] = v;
      }
    }
    return d;
  }
  std::vector<uint64_t> policyCounters() const {
    std::vector<uint64_t> v(kMaxPolicySlots);
    for (size_t i = 0; i < kMaxPolicySlots; ++i) {
      v[i] = counters_->policy[i].get();
    }
    return v;
  }

  // The cases as one process() call, flushed; every packet's verdict and
  // every counter checked.  False on a mismatch (reported).
  bool run(const ForwardingTables& t, const std::vector<Case>& burst,
           const std::vector<uint16_t>& tags) {
    std::vector<rte_mbuf*> mbufs;
    for (const Case& c : burst) {
      rte_mbuf* m = rte_pktmbuf_alloc(pool_);
      if (!m) {
        ADD_FAILURE() << "no mbuf";
        return false;
      }
      std::memcpy(rte_pktmbuf_append(m, static_cast<uint16_t>(c.frame.size())), c.frame.data(),
                  c.frame.size());
      m->port = c.from_wan ? wan0_.id : lan_[c.lan].id;
      mbufs.push_back(m);
    }
    const auto drops_before = drops();
    const auto policy_before = policyCounters();
    pipeline_->process(t, mbufs.data(), static_cast<uint16_t>(mbufs.size()));
    pipeline_->flush();

    std::string errors;
    std::map<std::string, uint64_t> want_drops = drops_before;
    std::vector<uint64_t> want_policy = policy_before;
    std::set<std::pair<uint16_t, uint16_t>> want_out;  // port, tag
    for (size_t i = 0; i < burst.size(); ++i) {
      const Case& c = burst[i];
      if (c.drop) {
        ++want_drops[std::string(toString(*c.drop))];
      } else {
        want_out.insert({c.from_wan ? lan_[c.lan].id : wan0_.id, tags[i]});
      }
      for (const std::string& slot : c.slots) {
        ++want_policy[slotOf(t, slot)];
      }
    }
    std::map<uint16_t, std::string> kind_of;
    for (size_t i = 0; i < burst.size(); ++i) {
      kind_of[tags[i]] = burst[i].kind;
    }
    std::set<std::pair<uint16_t, uint16_t>> out;
    for (const test::RingPort* p : {&wan0_, &lan_[0], &lan_[1], &lan_[2]}) {
      for (const Bytes& f : sent(*p)) {
        auto tag = p == &wan0_ ? tagOf(f) : lanTagOf(f);
        if (!tag || !kind_of.count(*tag)) {
          errors += "port " + std::to_string(p->id) + " sent a frame of no packet\n";
          continue;
        }
        if (!out.insert({p->id, *tag}).second) {
          errors += "packet " + kind_of[*tag] + " left twice\n";
        }
      }
    }
    for (const auto& [port, tag] : want_out) {
      if (!out.count({port, tag})) {
        errors += "packet " + kind_of[tag] + " did not leave port " + std::to_string(port) + "\n";
      }
    }
    for (const auto& [port, tag] : out) {
      if (!want_out.count({port, tag})) {
        errors += "packet " + kind_of[tag] + " left port " + std::to_string(port) + "\n";
      }
    }
    const auto got_drops = drops();
    if (got_drops != want_drops) {
      for (const auto& [k, v] : want_drops) {
        const uint64_t g = got_drops.count(k) ? got_drops.at(k) : 0;
        if (g != v) {
          errors +=
              "drops." + k + ": " + std::to_string(g) + ", expected " + std::to_string(v) + "\n";
        }
      }
      for (const auto& [k, v] : got_drops) {
        if (!want_drops.count(k)) {
          errors += "drops." + k + ": " + std::to_string(v) + ", expected 0\n";
        }
      }
    }
    const auto got_policy = policyCounters();
    for (size_t s = 0; s < kMaxPolicySlots; ++s) {
      if (got_policy[s] != want_policy[s]) {
        errors += "policy[" + std::to_string(s) + "]: " + std::to_string(got_policy[s]) +
                  ", expected " + std::to_string(want_policy[s]) + "\n";
      }
    }
    if (!errors.empty()) {
      std::string kinds;
      for (const Case& c : burst) {
        kinds += c.kind + "; ";
      }
      ADD_FAILURE() << "burst [" << kinds << "]\n" << errors;
      return false;
    }
    return true;
  }

  bool runKinds(const ForwardingTables& t, const std::vector<std::pair<std::string, Make>>& all,
                const std::vector<size_t>& which) {
    std::vector<Case> burst;
    std::vector<uint16_t> tags;
    for (size_t k : which) {
      tags.push_back(next_tag_);
      burst.push_back(all[k].second(next_tag_++));
      if (next_tag_ == 0) {
        next_tag_ = 0x0101;
      }
    }
    return run(t, burst, tags);
  }

  static rte_mempool* pool_;
  static test::RingPort lan_[3], wan0_;
  LiveState health_;
  std::unique_ptr<WorkerCounters> counters_;
  std::unique_ptr<Pipeline> pipeline_;
  std::unique_ptr<TablesBuilder> builder_;
  std::vector<config::ConfigPtr> configs_;
  std::vector<std::unique_ptr<ForwardingTables>> tables_;
  uint16_t next_tag_ = 0x0101;
};

rte_mempool* PolicyPipelineTest::pool_ = nullptr;
test::RingPort PolicyPipelineTest::lan_[3], PolicyPipelineTest::wan0_;

size_t kindIndex(const std::vector<std::pair<std::string, Make>>& all, const std::string& name) {
  for (size_t i = 0; i < all.size(); ++i) {
    if (all[i].first == name) {
      return i;
    }
  }
  ADD_FAILURE() << "no kind " << name;
  return 0;
}

// ------------------------------------------------------------------ tests

TEST_F(PolicyPipelineTest, TablesCarryThePolicies) {
  const ForwardingTables& t = buildOk(configText(kT1Policy, kT2Policy));
  ASSERT_EQ(t.tenants.size(), 3u);
  EXPECT_TRUE(t.any_policy);
  ASSERT_TRUE(t.tenants[0].policy);
  ASSERT_TRUE(t.tenants[1].policy);
  EXPECT_FALSE(t.tenants[2].policy);  // t3: no rules, default allow
  EXPECT_FALSE(t.tenants[0].policy->default_deny);
  EXPECT_TRUE(t.tenants[1].policy->default_deny);
  EXPECT_EQ(t.tenants[0].policy->deny_of_rule, (std::vector<uint8_t>{0, 1, 1}));
  EXPECT_EQ(t.tenants[1].policy->deny_of_rule, (std::vector<uint8_t>{0, 0}));
  // Every slot its own: 3 isolation, 5 rules, 2 defaults.
  std::set<uint16_t> slots;
  for (const char* n : {"t1/(isolation)", "t1/web-b7", "t1/block-b7", "t1/no-ssh", "t1/(default)",
                        "t2/(isolation)", "t2/web", "t2/dns6", "t2/(default)", "t3/(isolation)"}) {
    slots.insert(slotOf(t, n));
  }
  EXPECT_EQ(slots.size(), 10u);
  // Isolation: the other tenants' prefixes that overlap none of the
  // tenant's own (10.2/16 is everybody's; 10.60/16 of t2 covers t1's
  // 10.60.5/24).
  ASSERT_TRUE(t.tenants[0].isolation);
  EXPECT_EQ(t.tenants[0].isolation->prefixes, 4u);  // 10.5/24, 2001:db8:5::/64, :6::/48, 10.7/24
  EXPECT_EQ(t.tenants[1].isolation->prefixes, 4u);  // 10.1/24, 2001:db8:1::/64, :2::/48, 10.7/24
  EXPECT_EQ(t.tenants[2].isolation->prefixes, 8u);
  EXPECT_EQ(t.tenants[0].isolation->slot, t.tenants[0].isolation_slot);

  // No policy anywhere: the stage does not run.
  const ForwardingTables& none = buildOk(configText("", ""));
  EXPECT_FALSE(none.any_policy);
  for (const TenantEntry& te : none.tenants) {
    EXPECT_FALSE(te.policy) << te.name;
  }
}

TEST_F(PolicyPipelineTest, EachKindAlone) {
  const ForwardingTables& t = buildOk(configText(kT1Policy, kT2Policy));
  const auto all = kinds();
  for (size_t k = 0; k < all.size(); ++k) {
    SCOPED_TRACE(all[k].first);
    EXPECT_TRUE(runKinds(t, all, {k}));
  }
}

// A deny rule drops exactly its packets: the same burst, each kind 3 times,
// with and without t1's rules.
TEST_F(PolicyPipelineTest, DenyRuleDropsExactlyTheMatchingPackets) {
  const ForwardingTables& t = buildOk(configText(kT1Policy, kT2Policy));
  const auto all = kinds();
  std::vector<size_t> t1;
  for (size_t k = 0; k < all.size(); ++k) {
    if (all[k].first.rfind("t1 ", 0) == 0) {
      t1.push_back(k);
    }
  }
  std::vector<size_t> burst;
  for (int i = 0; i < 3; ++i) {
    burst.insert(burst.end(), t1.begin(), t1.end());
  }
  ASSERT_TRUE(runKinds(t, all, burst));  // 51 packets: two process() bursts
  // 4 of t1's kinds are denied, 3 times each.
  EXPECT_EQ(counters_->drops[size_t(DropReason::kPOLICY_DENY)].get(), 12u);
  EXPECT_EQ(counters_->policy[slotOf(t, "t1/no-ssh")].get(), 6u);
  EXPECT_EQ(counters_->policy[slotOf(t, "t1/block-b7")].get(), 6u);
  EXPECT_EQ(counters_->policy[slotOf(t, "t1/web-b7")].get(), 3u);

  // The same t1 packets without a policy: only the routing verdicts remain.
  const ForwardingTables& plain = buildOk(configText("", kT2Policy));
  EXPECT_FALSE(plain.tenants[0].policy);
  std::vector<Case> cases;
  std::vector<uint16_t> tags;
  for (size_t k : t1) {
    Case c = all[k].second(next_tag_);
    if (c.drop == DropReason::kPOLICY_DENY) {
      c.drop.reset();
    }
    std::erase_if(c.slots, [](const std::string& x) { return x != "t1/(isolation)"; });
    cases.push_back(c);
    tags.push_back(next_tag_++);
  }
  EXPECT_TRUE(run(plain, cases, tags));
}

// Bursts mixing the three tenants and both families: every packet its own
// verdict, wherever it sits.
TEST_F(PolicyPipelineTest, MixedBurstsClassifyEachPacket) {
  const ForwardingTables& t = buildOk(configText(kT1Policy, kT2Policy));
  const auto all = kinds();
  // Every ordered pair, and a kind between two of every other.
  for (size_t a = 0; a < all.size(); ++a) {
    for (size_t b = 0; b < all.size(); ++b) {
      ASSERT_TRUE(runKinds(t, all, {a, b}));
      ASSERT_TRUE(runKinds(t, all, {b, a, b}));
    }
  }
  // Seeded random mixes of 1..32, and of up to 100 (several bursts).
  std::mt19937 rng(19);
  for (int i = 0; i < 1500; ++i) {
    const size_t n = 1 + rng() % (i % 5 == 0 ? 100 : 32);
    std::vector<size_t> which;
    for (size_t j = 0; j < n; ++j) {
      which.push_back(rng() % all.size());
    }
    ASSERT_TRUE(runKinds(t, all, which)) << "mix " << i;
  }
  // One tenant and family interleaved with another: the group walk.
  const size_t a = kindIndex(all, "t1 tcp 22 denied"), b = kindIndex(all, "t2 v6 udp 53 allowed"),
               c = kindIndex(all, "t3 tcp 22"), d = kindIndex(all, "t2 tcp 80 default deny");
  std::vector<size_t> zebra;
  for (int i = 0; i < 8; ++i) {
    zebra.insert(zebra.end(), {a, b, c, d});
  }
  ASSERT_TRUE(runKinds(t, all, zebra));
}

TEST_F(PolicyPipelineTest, IsolationAndNoRoute) {
  const ForwardingTables& t = buildOk(configText(kT1Policy, kT2Policy));
  const auto all = kinds();
  for (const char* k :
       {"t1 to t2's LAN", "t1 to t3's LAN", "t1 v6 to t2's LAN", "t1 v6 to t2's route",
        "t1 to a prefix t2 shares", "t1 to nowhere", "t1 v6 to nowhere", "t3 to t1's LAN",
        "t3 to t1's route 10.60.5/24", "t3 to nowhere"}) {
    SCOPED_TRACE(k);
    EXPECT_TRUE(runKinds(t, all, {kindIndex(all, k)}));
  }
  EXPECT_EQ(counters_->policy[t.tenants[0].isolation_slot].get(), 4u);
  EXPECT_EQ(counters_->policy[t.tenants[1].isolation_slot].get(), 0u);
  EXPECT_EQ(counters_->policy[t.tenants[2].isolation_slot].get(), 2u);
  EXPECT_EQ(counters_->drops[size_t(DropReason::kTENANT_ISOLATION)].get(), 6u);
  EXPECT_EQ(counters_->drops[size_t(DropReason::kNO_ROUTE)].get(), 4u);
}

// A tenant without policy whose packets pass the stage untouched even when
// every other tenant's are denied.
TEST_F(PolicyPipelineTest, TenantWithoutPolicyIsUntouched) {
  const char* deny_all = "    policy:\n      default: deny\n";
  const ForwardingTables& t = buildOk(configText(deny_all, deny_all));
  EXPECT_TRUE(t.any_policy);
  ASSERT_TRUE(t.tenants[0].policy);
  EXPECT_FALSE(t.tenants[0].policy->acl);  // no rule: no classifier
  EXPECT_FALSE(t.tenants[2].policy);
  std::vector<Case> cases;
  std::vector<uint16_t> tags;
  for (int i = 0; i < 30; ++i) {
    const int lan = i % 3;
    Case c{"", lan, {}, std::nullopt, {}};
    if (lan == 2) {
      c.kind = "t3 tcp";
      c.frame = frame4(2, ip4("10.2.0.7"), kTcp, 1000, static_cast<uint16_t>(i), next_tag_);
    } else {
      c.kind = lan == 0 ? "t1 denied" : "t2 denied";
      c.frame = i % 2 ? frame6(lan, ip6("2001:db8:2::7"), kUdp, 1, 2, next_tag_)
                      : frame4(lan, ip4("10.2.0.7"), kTcp, 1000, 443, next_tag_);
      c.drop = DropReason::kPOLICY_DENY;
      c.slots = {lan == 0 ? "t1/(default)" : "t2/(default)"};
    }
    cases.push_back(c);
    tags.push_back(next_tag_++);
  }
  EXPECT_TRUE(run(t, cases, tags));
}

// The builder keeps what did not change: the same compiled policy (same
// pointer) for the same rules, counter slots by name.
TEST_F(PolicyPipelineTest, BuilderReusesAndKeepsSlots) {
  const ForwardingTables& a = buildOk(configText(kT1Policy, kT2Policy));
  const ForwardingTables& b = buildOk(configText(kT1Policy, kT2Policy));
  EXPECT_EQ(a.tenants[0].policy.get(), b.tenants[0].policy.get());
  EXPECT_EQ(a.tenants[1].policy.get(), b.tenants[1].policy.get());
  EXPECT_EQ(a.tenants[0].isolation.get(), b.tenants[0].isolation.get());
  EXPECT_EQ(a.tenants[2].isolation.get(), b.tenants[2].isolation.get());
  EXPECT_TRUE(builder_->freshPolicySlots().empty());

  // t1's no-ssh now port 23: a new t1 policy, t2's kept; slots kept.
  std::string t1b = kT1Policy;
  t1b.replace(t1b.find("\"22\""), 4, "\"23\"");
  const ForwardingTables& c = buildOk(configText(t1b, kT2Policy));
  EXPECT_NE(c.tenants[0].policy.get(), b.tenants[0].policy.get());
  EXPECT_EQ(c.tenants[1].policy.get(), b.tenants[1].policy.get());
  EXPECT_EQ(c.tenants[0].isolation.get(), b.tenants[0].isolation.get());
  for (const char* n : {"t1/web-b7", "t1/block-b7", "t1/no-ssh", "t1/(default)", "t1/(isolation)",
                        "t2/web", "t2/(default)", "t3/(isolation)"}) {
    EXPECT_EQ(slotOf(c, n), slotOf(a, n)) << n;
  }
  EXPECT_TRUE(builder_->freshPolicySlots().empty());
  // And the new tables decide by the new rule.
  std::vector<uint16_t> tags = {next_tag_, static_cast<uint16_t>(next_tag_ + 1)};
  next_tag_ += 2;
  EXPECT_TRUE(run(c,
                  {Case{"22 now allowed",
                        0,
                        frame4(0, ip4("10.2.3.4"), kTcp, 1, 22, tags[0]),
                        std::nullopt,
                        {"t1/(default)"}},
                   Case{"23 denied",
                        0,
                        frame4(0, ip4("10.2.3.4"), kTcp, 1, 23, tags[1]),
                        DropReason::kPOLICY_DENY,
                        {"t1/no-ssh"}}},
                  tags));

  // Only the action changes (allow → deny), right after a build of the
  // rules with allow (which the cache holds): a new compiled policy too.
  const ForwardingTables& a2 = buildOk(configText(kT1Policy, kT2Policy));
  std::string t1c = kT1Policy;
  t1c.replace(t1c.find("action: allow"), 13, "action: deny");
  const ForwardingTables& d = buildOk(configText(t1c, kT2Policy));
  EXPECT_NE(d.tenants[0].policy.get(), a2.tenants[0].policy.get());
  EXPECT_EQ(d.tenants[1].policy.get(), a2.tenants[1].policy.get());
  EXPECT_EQ(d.tenants[0].policy->deny_of_rule, (std::vector<uint8_t>{1, 1, 1}));
  tags = {next_tag_++};
  EXPECT_TRUE(run(d,
                  {Case{"443 to b-train now denied",
                        0,
                        frame4(0, ip4("10.2.7.9"), kTcp, 1, 443, tags[0]),
                        DropReason::kPOLICY_DENY,
                        {"t1/web-b7"}}},
                  tags));

  // The plan moves b-train: same rule text, new prefixes, a new policy.
  std::string moved = configText(kT1Policy, kT2Policy);
  moved.replace(moved.find("prefixes: [10.2.7.0/24]"), 23, "prefixes: [10.2.8.0/24]");
  const ForwardingTables& e = buildOk(moved);
  EXPECT_NE(e.tenants[0].policy.get(), a.tenants[0].policy.get());
  EXPECT_EQ(e.tenants[1].policy.get(), a.tenants[1].policy.get());
}

TEST_F(PolicyPipelineTest, RemovedRuleFreesItsSlot) {
  const ForwardingTables& a = buildOk(configText(kT1Policy, kT2Policy));
  const uint16_t block = slotOf(a, "t1/block-b7");
  // block-b7 removed: the others keep their slots.
  std::string t1 = kT1Policy;
  const size_t from = t1.find("        - name: block-b7"), to = t1.find("        - name: no-ssh");
  t1.erase(from, to - from);
  const ForwardingTables& b = buildOk(configText(t1, kT2Policy));
  ASSERT_EQ(b.tenants[0].policy->rules.size(), 2u);
  for (const char* n : {"t1/web-b7", "t1/no-ssh", "t1/(default)", "t2/web", "t2/dns6"}) {
    EXPECT_EQ(slotOf(b, n), slotOf(a, n)) << n;
  }
  // Its slot is free: the next new name takes it (the lowest free), afresh.
  std::string t3 =
      "    policy:\n      rules:\n        - {name: newcomer, action: deny, protocol: gre}\n";
  const ForwardingTables& c = buildOk(configText(t1, kT2Policy, t3));
  ASSERT_TRUE(c.tenants[2].policy);
  EXPECT_EQ(slotOf(c, "t3/newcomer"), block);
  const auto& fresh = builder_->freshPolicySlots();
  EXPECT_NE(std::find(fresh.begin(), fresh.end(), block), fresh.end());
  for (const char* n : {"t1/web-b7", "t1/no-ssh", "t2/web", "t3/(isolation)"}) {
    EXPECT_EQ(slotOf(c, n), slotOf(a, n)) << n;
    EXPECT_EQ(std::find(fresh.begin(), fresh.end(), slotOf(c, n)), fresh.end()) << n;
  }
}

// More entries than one family of a classifier takes: the build fails, and
// the builder is as it was (slots, compiled policies).
TEST_F(PolicyPipelineTest, FailedBuildLeavesThePreviousSlots) {
  const ForwardingTables& a = buildOk(configText(kT1Policy, kT2Policy));
  std::map<std::string, uint16_t> before;
  for (const char* n : {"t1/web-b7", "t1/block-b7", "t1/no-ssh", "t1/(default)", "t2/web",
                        "t2/dns6", "t2/(default)", "t1/(isolation)", "t3/(isolation)"}) {
    before[n] = slotOf(a, n);
  }
  // 17 rules of 64 x 64 IPv4 prefixes: 69,632 entries > kMaxEntries.
  const size_t rules = policy::kMaxEntries / (64 * 64) + 1;
  std::string big = "    policy:\n      rules:\n";
  for (size_t r = 0; r < rules; ++r) {
    big += "        - name: big" + std::to_string(r) + "\n          action: deny\n";
    for (const char* side : {"source", "destination"}) {
      big += std::string("          ") + side + ":\n";
      for (int i = 0; i < 64; ++i) {
        big += "            - 10." + std::string(side[0] == 's' ? "100" : "101") + "." +
               std::to_string(i) + "." + std::to_string(r * 8) + "/29\n";
      }
    }
  }
  auto failed = build(configText(kT1Policy, kT2Policy, big));
  ASSERT_FALSE(failed);
  EXPECT_NE(failed.error().find("brings the IPv4 entries to 69632, more than the 65536"),
            std::string::npos)
      << failed.error();
  EXPECT_NE(failed.error().find("t3"), std::string::npos) << failed.error();

  // The same config as before: nothing fresh, the same slots, the same
  // compiled policies (the cache survived).
  const ForwardingTables& b = buildOk(configText(kT1Policy, kT2Policy));
  EXPECT_TRUE(builder_->freshPolicySlots().empty());
  for (const auto& [n, s] : before) {
    EXPECT_EQ(slotOf(b, n), s) << n;
  }
  EXPECT_EQ(b.tenants[0].policy.get(), a.tenants[0].policy.get());
  EXPECT_EQ(b.tenants[1].policy.get(), a.tenants[1].policy.get());
  // And the tables work.
  const auto all = kinds();
  EXPECT_TRUE(runKinds(b, all, {kindIndex(all, "t1 tcp 22 denied"), kindIndex(all, "t3 tcp 22")}));
}

// `show policy --json` for tables and counters after some traffic.
TEST_F(PolicyPipelineTest, PolicyViewJson) {
  const ForwardingTables& t = buildOk(configText(kT1Policy, kT2Policy));
  const auto all = kinds();
  std::vector<size_t> which;
  for (const char* k :
       {"t1 tcp 22 denied", "t1 v6 tcp 22 denied", "t1 tcp 443 default", "t1 to t2's LAN",
        "t2 tcp 443 allowed", "t2 tcp 80 default deny", "t2 icmp default deny", "t3 to t1's LAN"}) {
    which.push_back(kindIndex(all, k));
  }
  ASSERT_TRUE(runKinds(t, all, which));
  CountersSnapshot snap;
  for (size_t s = 0; s < kMaxPolicySlots; ++s) {
    snap.policy[s] = counters_->policy[s].get();
  }
  const json view = policyview::policyView(&t, snap, "");
  const json want = json::parse(R"({
    "schema": "mcgw.policy/1",
    "tenants": [
      {"name": "t1", "vni": 5001, "default": "allow", "default_packets": 2,
       "rules": [
         {"name": "web-b7", "action": "allow", "match": "tcp any -> vpc b-train dport 443",
          "entries": 1, "packets": 0},
         {"name": "block-b7", "action": "deny", "match": "any any -> vpc b-train",
          "entries": 1, "packets": 0},
         {"name": "no-ssh", "action": "deny", "match": "tcp any -> any dport 22",
          "entries": 2, "packets": 2}],
       "isolation": {"prefixes": 4, "packets": 1}},
      {"name": "t2", "vni": 5002, "default": "deny", "default_packets": 2,
       "rules": [
         {"name": "web", "action": "allow", "match": "tcp any -> any dport 443",
          "entries": 2, "packets": 1},
         {"name": "dns6", "action": "allow", "match": "udp any -> 2001:db8:6::/48 dport 53",
          "entries": 1, "packets": 0}],
       "isolation": {"prefixes": 4, "packets": 0}},
      {"name": "t3", "vni": 5003, "default": "allow", "rules": [],
       "isolation": {"prefixes": 8, "packets": 1}}
    ]})");
  json got = view;
  for (auto& te : got["tenants"]) {
    if (te.contains("build_seconds")) {
      EXPECT_TRUE(te["build_seconds"].is_number()) << te["name"];
      EXPECT_GE(te["build_seconds"].get<double>(), 0.0);
      te.erase("build_seconds");
    }
  }
  EXPECT_EQ(got, want) << got.dump(2);
  // One tenant only; an unknown one: none.
  const json t2 = policyview::policyView(&t, snap, "t2");
  ASSERT_EQ(t2["tenants"].size(), 1u);
  EXPECT_EQ(t2["tenants"][0]["name"], "t2");
  EXPECT_TRUE(policyview::policyView(&t, snap, "nope")["tenants"].empty());
  EXPECT_TRUE(policyview::policyView(nullptr, snap, "")["tenants"].empty());

  // A rule whose object is not in the plan: no entry, its note.
  std::string t1 = kT1Policy;
  t1.replace(t1.find("[vpc b-train]"), 13, "[vpc gone]");
  const ForwardingTables& n = buildOk(configText(t1, kT2Policy));
  const json nv = policyview::policyView(&n, snap, "t1");
  EXPECT_EQ(nv["tenants"][0]["rules"][0]["entries"], 0);
  EXPECT_EQ(nv["tenants"][0]["rules"][0]["note"],
            "vpc gone is not in the address plan in force: matches nothing");
  EXPECT_FALSE(nv["tenants"][0]["rules"][1].contains("note"));
}

// ------------------------------------------------------- meters and usage
//
// The (tenant, line) meters and usage counters in encapsulate(): the same
// tables with site-b on one line, or on two lines (l1 to 203.0.113.10, l2 to
// 203.0.113.11) in ECMP or active-backup, and a Pipeline with a worker's
// meters (policy::MeterTable for one worker on the real TSC).  Every metered
// burst is one process() call of at most 32 packets: one burst, one meter
// clock, so which packet is green, yellow or red is worked out here exactly
// (RFC 2698, colour-blind, on the inner IP packet's length).

// The config above without rules, t1's `bandwidth` text, and with `mode`
// site-b's second line l2 in that line-mode.
std::string meterConfig(const std::string& t1_bandwidth, const std::string& mode = "") {
  std::string c = configText(t1_bandwidth, "");
  const std::string wan_neighbor = "        mac: 02:00:00:00:02:10\n";
  c.insert(c.find(wan_neighbor) + wan_neighbor.size(),
           "      - address: 203.0.113.11\n        mac: 02:00:00:00:02:11\n");
  if (!mode.empty()) {
    const std::string peer = "  - name: site-b\n";
    c.insert(c.find(peer) + peer.size(), "    line-mode: " + mode + "\n");
    c += "      - name: l2\n        port: wan0\n        local-vtep: 203.0.113.1\n"
         "        remote-vtep: 203.0.113.11\n";
  }
  return c;
}

// A UDP packet of `ip_len` bytes (IP header included) from `lan`'s host to
// `dst`, with TOS `tos`, TTL `ttl`, tagged by its IPv4 ID.
Bytes udp4(int lan, const Ip4& src, const Ip4& dst, uint16_t ip_len, uint8_t tos, uint16_t tag,
           uint16_t sport, uint8_t ttl = 64) {
  Bytes f(kLanMac[lan].begin(), kLanMac[lan].end());
  f.insert(f.end(), kHostMac.begin(), kHostMac.end());
  f.push_back(0x08);
  f.push_back(0x00);
  Bytes ip = {0x45, tos, 0, 0, 0, 0, 0x40, 0, ttl, kUdp, 0, 0};
  ip.insert(ip.end(), src.begin(), src.end());
  ip.insert(ip.end(), dst.begin(), dst.end());
  put16(ip, 2, ip_len);
  put16(ip, 4, tag);
  put16(ip, 10, checksum(ip, 0, 20));
  Bytes u(static_cast<size_t>(ip_len - 20), 0);
  put16(u, 0, sport);
  put16(u, 2, 9);
  put16(u, 4, static_cast<uint16_t>(u.size()));
  for (size_t i = 8; i < u.size(); ++i) {
    u[i] = static_cast<uint8_t>(i * 7);
  }
  f.insert(f.end(), ip.begin(), ip.end());
  f.insert(f.end(), u.begin(), u.end());
  return f;
}
Bytes lan4(int lan, const char* dst, uint16_t ip_len, uint8_t tos, uint16_t tag, uint16_t sport) {
  return udp4(lan, kHost4[lan], ip4(dst), ip_len, tos, tag, sport);
}

// The same in IPv6 (`ip_len` with the 40-byte header), traffic class `tc`,
// tagged by the flow label's low 16 bits.
Bytes lan6(int lan, const char* dst, uint16_t ip_len, uint8_t tc, uint16_t tag, uint16_t sport) {
  Bytes f(kLanMac[lan].begin(), kLanMac[lan].end());
  f.insert(f.end(), kHostMac.begin(), kHostMac.end());
  f.push_back(0x86);
  f.push_back(0xdd);
  Bytes ip = {static_cast<uint8_t>(0x60 | tc >> 4),
              static_cast<uint8_t>((tc & 0x0f) << 4),
              static_cast<uint8_t>(tag >> 8),
              static_cast<uint8_t>(tag),
              0,
              0,
              kUdp,
              64};
  put16(ip, 4, static_cast<uint16_t>(ip_len - 40));
  const Ip6 src = lan == 0 ? ip6("2001:db8:1::10") : ip6("2001:db8:5::10");
  const Ip6 d = ip6(dst);
  ip.insert(ip.end(), src.begin(), src.end());
  ip.insert(ip.end(), d.begin(), d.end());
  Bytes u(static_cast<size_t>(ip_len - 40), 0);
  put16(u, 0, sport);
  put16(u, 2, 9);
  put16(u, 4, static_cast<uint16_t>(u.size()));
  f.insert(f.end(), ip.begin(), ip.end());
  f.insert(f.end(), u.begin(), u.end());
  return f;
}

// fromSiteB from the VTEP 203.0.113.`vtep_last` instead of .10.
Bytes fromVtep(uint8_t vtep_last, uint32_t vni, const Bytes& lan_frame) {
  Bytes f = fromSiteB(vni, lan_frame);
  f[kEth + 15] = vtep_last;
  f[kEth + 10] = f[kEth + 11] = 0;
  put16(f, kEth + 10, checksum(f, kEth, 20));
  return f;
}

// A frame wan0 sent, decoded.
struct Outer {
  uint32_t vni = 0;
  uint8_t vtep_last = 0;  // the outer destination's last byte
  uint8_t outer_tos = 0;
  bool outer_checksum_ok = false;
  bool v6 = false;
  uint16_t tag = 0;
  uint8_t dscp_ecn = 0;  // the inner TOS / traffic class
  bool inner_checksum_ok = false;
  uint32_t flow_label = 0;  // IPv6
  uint8_t inner_proto = 0;
  size_t size = 0;
};
std::optional<Outer> decodeOuter(const Bytes& f) {
  if (f.size() < kInnerIp + 40 || get16(f, 12) != 0x0800 || f[kEth + 9] != kUdp) {
    return std::nullopt;
  }
  Outer o;
  o.size = f.size();
  o.outer_tos = f[kEth + 1];
  o.outer_checksum_ok = checksum(f, kEth, 20) == 0;
  o.vtep_last = f[kEth + 19];
  o.vni = uint32_t{f[kEth + 32]} << 16 | uint32_t{f[kEth + 33]} << 8 | f[kEth + 34];
  const uint16_t type = get16(f, kInnerIp - 2);
  if (type == 0x0800) {
    o.tag = get16(f, kInnerIp + 4);
    o.dscp_ecn = f[kInnerIp + 1];
    o.inner_checksum_ok = checksum(f, kInnerIp, 20) == 0;
    o.inner_proto = f[kInnerIp + 9];
  } else if (type == 0x86dd) {
    o.v6 = true;
    o.tag = get16(f, kInnerIp + 2);
    o.dscp_ecn = static_cast<uint8_t>((f[kInnerIp] & 0x0f) << 4 | f[kInnerIp + 1] >> 4);
    o.flow_label = uint32_t{f[kInnerIp + 1] & 0x0fu} << 16 | get16(f, kInnerIp + 2);
    o.inner_proto = f[kInnerIp + 6];
  } else {
    return std::nullopt;
  }
  return o;
}

constexpr uint8_t kEf = 46 << 2 | 1;      // DSCP EF, ECT(1)
constexpr uint8_t kYellow = 10 << 2 | 1;  // yellow-dscp 10, the ECN bits kept

class PolicyMeterTest : public PolicyPipelineTest {
 protected:
  void SetUp() override {
    PolicyPipelineTest::SetUp();
    meters_ = std::make_unique<policy::MeterTable>(1, rte_get_tsc_hz(), [] {});
    worker_meters_ = std::make_unique<policy::WorkerMeters>(*meters_, 0);
    pipeline_ = std::make_unique<Pipeline>(0, pool_, counters_.get(), &health_, nullptr, nullptr,
                                           worker_meters_.get());
  }
  void TearDown() override {
    for (auto& up : health_.up) {
      up.store(true);
    }
    PolicyPipelineTest::TearDown();  // the pipeline goes before its meters
    worker_meters_.reset();
    meters_.reset();
  }

  // The (tenant, line) slot, from the tables' list, checked against the
  // tunnel's own table.
  static uint16_t pairSlot(const ForwardingTables& t, const std::string& tenant,
                           const std::string& line) {
    for (const TenantLineEntry& e : t.tenant_lines) {
      if (e.tenant == tenant && e.peer == "site-b" && e.line == line) {
        bool in_tunnel = false;
        for (const TunnelEntry& tu : t.tunnels) {
          for (unsigned i = 0; i < tu.n_lines; ++i) {
            in_tunnel |= tu.tenant_line[t.lines[tu.lines[i]].pos] == e.slot &&
                         t.tenants[tu.tenant].name == tenant && t.lines[tu.lines[i]].name == line;
          }
        }
        EXPECT_TRUE(in_tunnel) << tenant << "/site-b/" << line;
        return e.slot;
      }
    }
    ADD_FAILURE() << "no pair " << tenant << "/site-b/" << line;
    return 0;
  }
  static const LineEntry& lineOf(const ForwardingTables& t, const std::string& name) {
    for (const LineEntry& l : t.lines) {
      if (l.peer == "site-b" && l.name == name) {
        return l;
      }
    }
    throw std::runtime_error("no line " + name);
  }
  void setRate(uint16_t slot, uint64_t cir, uint64_t pir, uint64_t cbs, uint64_t pbs) {
    auto rate = policy::Rate::make(cir, pir, cbs, pbs);
    ASSERT_TRUE(rate) << rate.error();
    auto r = meters_->set(slot, *rate);
    ASSERT_TRUE(r) << r.error();
  }

  // The frames as one process() call (their own ports: lan / wan0), flushed.
  void send(const ForwardingTables& t, const std::vector<std::pair<int, Bytes>>& frames) {
    std::vector<rte_mbuf*> mbufs;
    for (const auto& [port, f] : frames) {
      rte_mbuf* m = rte_pktmbuf_alloc(pool_);
      ASSERT_NE(m, nullptr);
      std::memcpy(rte_pktmbuf_append(m, static_cast<uint16_t>(f.size())), f.data(), f.size());
      m->port = port < 0 ? wan0_.id : lan_[port].id;
      mbufs.push_back(m);
    }
    pipeline_->process(t, mbufs.data(), static_cast<uint16_t>(mbufs.size()));
    pipeline_->flush();
  }
  // What wan0 sent, decoded (a frame that does not decode is a failure).
  std::vector<Outer> wanOut() {
    std::vector<Outer> out;
    for (const Bytes& f : sent(wan0_)) {
      auto o = decodeOuter(f);
      EXPECT_TRUE(o) << "wan0 sent a frame of " << f.size() << " bytes that is no tunnel packet";
      if (o) {
        out.push_back(*o);
      }
    }
    return out;
  }
  uint64_t drop(DropReason r) const { return counters_->drops[size_t(r)].get(); }
  uint64_t allDrops() const {
    uint64_t n = 0;
    for (size_t i = 0; i < kDropReasonCount; ++i) {
      n += counters_->drops[i].get();
    }
    return n;
  }

  std::unique_ptr<policy::MeterTable> meters_;
  std::unique_ptr<policy::WorkerMeters> worker_meters_;
};

// No rate: everything leaves, and each (tenant, line) pair counts exactly
// the tunnel frames the line sent for it; the pairs of a line add up to
// the line.
TEST_F(PolicyMeterTest, UnmeteredPairsForwardAndCountUsageExactly) {
  const ForwardingTables& t = buildOk(meterConfig(""));
  const uint16_t slot[3] = {pairSlot(t, "t1", "l1"), pairSlot(t, "t2", "l1"),
                            pairSlot(t, "t3", "l1")};
  EXPECT_EQ(std::set<uint16_t>(slot, slot + 3).size(), 3u);
  const uint16_t line = lineOf(t, "l1").slot;
  const uint32_t vni[3] = {5001, 5002, 5003};
  std::map<uint32_t, size_t> sent_per_vni;
  std::mt19937 rng(1919);
  uint16_t tag = 1;
  for (int round = 0; round < 5; ++round) {
    std::vector<std::pair<int, Bytes>> burst;
    for (int i = 0; i < 30; ++i) {
      const int lan = static_cast<int>(rng() % 3);
      const uint16_t len = static_cast<uint16_t>(60 + rng() % 1300);
      if (lan != 2 && rng() % 2) {
        burst.emplace_back(lan, lan6(lan, lan == 0 ? "2001:db8:2::5" : "2001:db8:6::5", len, kEf,
                                     tag++, static_cast<uint16_t>(rng())));
      } else {
        burst.emplace_back(lan,
                           lan4(lan, "10.2.3.4", len, kEf, tag++, static_cast<uint16_t>(rng())));
      }
      ++sent_per_vni[vni[lan]];
    }
    send(t, burst);
  }
  std::map<uint32_t, std::pair<uint64_t, uint64_t>> got;  // VNI: frames, bytes
  for (const Outer& o : wanOut()) {
    EXPECT_EQ(o.dscp_ecn, kEf) << "unmetered: no remarking";
    ++got[o.vni].first;
    got[o.vni].second += o.size;
  }
  EXPECT_EQ(allDrops(), 0u);
  uint64_t packets = 0, bytes = 0;
  for (int i = 0; i < 3; ++i) {
    SCOPED_TRACE(vni[i]);
    EXPECT_EQ(got[vni[i]].first, sent_per_vni[vni[i]]);
    EXPECT_EQ(counters_->usage_tx[slot[i]].packets.get(), got[vni[i]].first);
    EXPECT_EQ(counters_->usage_tx[slot[i]].bytes.get(), got[vni[i]].second);
    EXPECT_EQ(counters_->usage_rx[slot[i]].packets.get(), 0u);
    EXPECT_EQ(counters_->meter_yellow[slot[i]].get(), 0u);
    EXPECT_EQ(counters_->meter_red[slot[i]].get(), 0u);
    packets += counters_->usage_tx[slot[i]].packets.get();
    bytes += counters_->usage_tx[slot[i]].bytes.get();
  }
  EXPECT_EQ(packets, 150u);
  EXPECT_EQ(counters_->line_tx[line].packets.get(), packets);
  EXPECT_EQ(counters_->line_tx[line].bytes.get(), bytes);
}

// cir = pir = 8 kbit/s, bursts of 2000 bytes: the first four 500-byte
// packets leave, the rest of the burst is red (rate-limit); the other
// tenants' packets on the same line are untouched.  A second later the
// bucket has refilled by the rate (1000 bytes/s), never beyond its size.
TEST_F(PolicyMeterTest, TinyRateSendsTheBurstAndDropsTheRest) {
  const ForwardingTables& t = buildOk(meterConfig(""));
  const uint16_t s1 = pairSlot(t, "t1", "l1"), s2 = pairSlot(t, "t2", "l1");
  ASSERT_NO_FATAL_FAILURE(setRate(s1, 1000, 1000, 2000, 2000));
  std::vector<std::pair<int, Bytes>> burst;
  for (uint16_t i = 0; i < 10; ++i) {
    burst.emplace_back(0, lan4(0, "10.2.3.4", 500, 0, static_cast<uint16_t>(0x100 + i), 1000));
    if (i % 2) {
      burst.emplace_back(1, lan4(1, "10.2.3.4", 500, 0, static_cast<uint16_t>(0x200 + i), 1000));
    }
  }
  send(t, burst);
  std::vector<uint16_t> t1_tags, t2_tags;
  uint64_t t1_bytes = 0;
  for (const Outer& o : wanOut()) {
    if (o.vni == 5001) {
      t1_tags.push_back(o.tag);
      t1_bytes += o.size;
    } else {
      t2_tags.push_back(o.tag);
    }
  }
  EXPECT_EQ(t1_tags, (std::vector<uint16_t>{0x100, 0x101, 0x102, 0x103}));
  EXPECT_EQ(t2_tags.size(), 5u);
  EXPECT_EQ(drop(DropReason::kRATE_LIMIT), 6u);
  EXPECT_EQ(allDrops(), 6u);
  EXPECT_EQ(counters_->meter_red[s1].get(), 6u);
  EXPECT_EQ(counters_->meter_yellow[s1].get(), 0u);
  EXPECT_EQ(counters_->meter_red[s2].get(), 0u);
  EXPECT_EQ(counters_->usage_tx[s1].packets.get(), 4u);
  EXPECT_EQ(counters_->usage_tx[s1].bytes.get(), t1_bytes);
  EXPECT_EQ(t1_bytes, 4u * (500 + 50 + kEth));
  EXPECT_EQ(counters_->usage_tx[s2].packets.get(), 5u);

  // 1.2 s later: at least 1200 bytes of credit (2 packets), at most the
  // bucket's 2000 (4).
  std::this_thread::sleep_for(std::chrono::milliseconds(1200));
  burst.clear();
  for (uint16_t i = 0; i < 8; ++i) {
    burst.emplace_back(0, lan4(0, "10.2.3.4", 500, 0, static_cast<uint16_t>(0x300 + i), 1000));
  }
  send(t, burst);
  const auto out = wanOut();
  EXPECT_GE(out.size(), 2u);
  EXPECT_LE(out.size(), 4u);
  for (size_t i = 0; i < out.size(); ++i) {
    EXPECT_EQ(out[i].tag, 0x300 + i) << "the first packets of the burst are the green ones";
  }
  EXPECT_EQ(counters_->meter_red[s1].get(), 6u + 8u - out.size());
  EXPECT_EQ(counters_->usage_tx[s1].packets.get(), 4u + out.size());
}

// pir > cir: cir 8 kbit/s with 1518 bytes, pir 16 kbit/s with 3036: of
// eight 500-byte packets three are green (their DSCP kept), three yellow
// (DSCP 10 with their ECN bits, checksum right, the outer header copying
// it) and two red.  t2 has no yellow-dscp: its yellow packets leave as
// they came, counted yellow.
TEST_F(PolicyMeterTest, YellowPacketsLeaveWithTheYellowDscp) {
  const ForwardingTables& t = buildOk(meterConfig("    bandwidth:\n      yellow-dscp: 10\n"));
  EXPECT_EQ(t.tenants[0].yellow_dscp, 10);
  EXPECT_EQ(t.tenants[1].yellow_dscp, -1);
  const uint16_t s1 = pairSlot(t, "t1", "l1"), s2 = pairSlot(t, "t2", "l1");
  ASSERT_NO_FATAL_FAILURE(setRate(s1, 1000, 2000, 1518, 3036));
  ASSERT_NO_FATAL_FAILURE(setRate(s2, 1000, 2000, 1518, 3036));
  std::vector<std::pair<int, Bytes>> burst;
  for (uint16_t i = 0; i < 8; ++i) {
    burst.emplace_back(0, lan4(0, "10.2.3.4", 500, kEf, static_cast<uint16_t>(0x100 + i), 7));
    burst.emplace_back(1, lan4(1, "10.2.3.4", 500, kEf, static_cast<uint16_t>(0x200 + i), 7));
  }
  send(t, burst);
  std::map<uint16_t, Outer> by_tag;
  for (const Outer& o : wanOut()) {
    by_tag[o.tag] = o;
  }
  ASSERT_EQ(by_tag.size(), 12u);
  for (uint16_t i = 0; i < 8; ++i) {
    for (uint16_t base : {0x100, 0x200}) {
      const uint16_t tag = static_cast<uint16_t>(base + i);
      SCOPED_TRACE(tag);
      if (i >= 6) {
        EXPECT_FALSE(by_tag.count(tag)) << "red";
        continue;
      }
      ASSERT_TRUE(by_tag.count(tag));
      const Outer& o = by_tag[tag];
      const uint8_t want = i < 3 || base == 0x200 ? kEf : kYellow;
      EXPECT_EQ(o.dscp_ecn, want);
      EXPECT_TRUE(o.inner_checksum_ok);
      EXPECT_EQ(o.outer_tos, want);
      EXPECT_TRUE(o.outer_checksum_ok);
    }
  }
  for (uint16_t s : {s1, s2}) {
    EXPECT_EQ(counters_->meter_yellow[s].get(), 3u);
    EXPECT_EQ(counters_->meter_red[s].get(), 2u);
    EXPECT_EQ(counters_->usage_tx[s].packets.get(), 6u);
  }
  EXPECT_EQ(drop(DropReason::kRATE_LIMIT), 4u);
  EXPECT_EQ(allDrops(), 4u);
}

// The same in IPv6: the traffic class's DSCP remarked, its ECN bits and the
// flow label kept.
TEST_F(PolicyMeterTest, YellowIpv6PacketsLeaveWithTheYellowDscp) {
  const ForwardingTables& t = buildOk(meterConfig("    bandwidth:\n      yellow-dscp: 10\n"));
  const uint16_t s1 = pairSlot(t, "t1", "l1");
  ASSERT_NO_FATAL_FAILURE(setRate(s1, 1000, 2000, 1518, 3036));
  std::vector<std::pair<int, Bytes>> burst;
  for (uint16_t i = 0; i < 8; ++i) {
    burst.emplace_back(0, lan6(0, "2001:db8:2::5", 500, kEf, static_cast<uint16_t>(0x100 + i), 7));
  }
  send(t, burst);
  const auto out = wanOut();
  ASSERT_EQ(out.size(), 6u);
  for (uint16_t i = 0; i < 6; ++i) {
    SCOPED_TRACE(i);
    EXPECT_TRUE(out[i].v6);
    EXPECT_EQ(out[i].tag, 0x100 + i);
    EXPECT_EQ(out[i].flow_label, 0x100u + i);
    EXPECT_EQ(out[i].dscp_ecn, i < 3 ? kEf : kYellow);
    EXPECT_EQ(out[i].outer_tos, i < 3 ? kEf : kYellow);
    EXPECT_TRUE(out[i].outer_checksum_ok);
  }
  EXPECT_EQ(counters_->meter_yellow[s1].get(), 3u);
  EXPECT_EQ(counters_->meter_red[s1].get(), 2u);
  EXPECT_EQ(drop(DropReason::kRATE_LIMIT), 2u);
}

// ECMP over l1 and l2: each flow's line is the one its packets are metered
// and counted on.  Only l2 is metered (1518 bytes of credit: seven 200-byte
// packets), so l1's flows all leave and l2's first seven.
TEST_F(PolicyMeterTest, EcmpMetersAndCountsTheChosenLine) {
  const ForwardingTables& t = buildOk(meterConfig("", "ecmp"));
  const uint16_t s1 = pairSlot(t, "t1", "l1"), s2 = pairSlot(t, "t1", "l2");
  EXPECT_NE(s1, s2);
  auto burst = [&](uint16_t base) {
    std::vector<std::pair<int, Bytes>> b;
    for (uint16_t i = 0; i < 32; ++i) {
      b.emplace_back(0, lan4(0, "10.2.3.4", 200, 0, static_cast<uint16_t>(base + i),
                             static_cast<uint16_t>(20000 + 97 * i)));
    }
    return b;
  };
  // Unmetered first: which line each flow takes (and the usage per line).
  send(t, burst(0x100));
  std::map<uint16_t, uint8_t> line_of;  // flow index: VTEP
  std::map<uint8_t, std::pair<uint64_t, uint64_t>> per_line;
  for (const Outer& o : wanOut()) {
    line_of[static_cast<uint16_t>(o.tag - 0x100)] = o.vtep_last;
    ++per_line[o.vtep_last].first;
    per_line[o.vtep_last].second += o.size;
  }
  ASSERT_EQ(line_of.size(), 32u);
  const size_t on_l2 = per_line[11].first;
  ASSERT_GE(per_line[10].first, 1u) << "the flows should spread over both lines";
  ASSERT_GE(on_l2, 8u) << "the flows should spread over both lines";
  EXPECT_EQ(counters_->usage_tx[s1].packets.get(), per_line[10].first);
  EXPECT_EQ(counters_->usage_tx[s1].bytes.get(), per_line[10].second);
  EXPECT_EQ(counters_->usage_tx[s2].packets.get(), on_l2);
  EXPECT_EQ(counters_->usage_tx[s2].bytes.get(), per_line[11].second);
  EXPECT_EQ(counters_->line_tx[lineOf(t, "l2").slot].packets.get(), on_l2);

  ASSERT_NO_FATAL_FAILURE(setRate(s2, 1000, 1000, 1518, 1518));
  send(t, burst(0x200));
  std::set<uint16_t> want;
  size_t l2_green = 0;
  for (uint16_t i = 0; i < 32; ++i) {
    if (line_of[i] == 10 || l2_green++ < 7) {
      want.insert(static_cast<uint16_t>(0x200 + i));
    }
  }
  std::set<uint16_t> got;
  for (const Outer& o : wanOut()) {
    got.insert(o.tag);
    EXPECT_EQ(o.vtep_last, line_of[static_cast<uint16_t>(o.tag - 0x200)]) << "a flow moved";
  }
  EXPECT_EQ(got, want);
  EXPECT_EQ(counters_->meter_red[s2].get(), on_l2 - 7);
  EXPECT_EQ(counters_->meter_red[s1].get(), 0u);
  EXPECT_EQ(drop(DropReason::kRATE_LIMIT), on_l2 - 7);
  EXPECT_EQ(counters_->usage_tx[s1].packets.get(), 2 * per_line[10].first);
  EXPECT_EQ(counters_->usage_tx[s2].packets.get(), on_l2 + 7);
}

// Active-backup: l1 carries everything while it is up, and l2's meter does
// not touch it; l1 down, l2 carries, meters and counts the traffic.
TEST_F(PolicyMeterTest, ActiveBackupMetersAndCountsTheLineInUse) {
  const ForwardingTables& t = buildOk(meterConfig("", "active-backup"));
  const uint16_t s1 = pairSlot(t, "t1", "l1"), s2 = pairSlot(t, "t1", "l2");
  ASSERT_NO_FATAL_FAILURE(setRate(s2, 1000, 1000, 1518, 1518));
  auto burst = [&](uint16_t base) {
    std::vector<std::pair<int, Bytes>> b;
    for (uint16_t i = 0; i < 10; ++i) {
      b.emplace_back(0, lan4(0, "10.2.3.4", 200, 0, static_cast<uint16_t>(base + i),
                             static_cast<uint16_t>(20000 + 97 * i)));
    }
    return b;
  };
  send(t, burst(0x100));
  auto out = wanOut();
  ASSERT_EQ(out.size(), 10u);
  for (const Outer& o : out) {
    EXPECT_EQ(o.vtep_last, 10);
  }
  EXPECT_EQ(counters_->usage_tx[s1].packets.get(), 10u);
  EXPECT_EQ(counters_->usage_tx[s2].packets.get(), 0u);
  EXPECT_EQ(counters_->meter_red[s2].get(), 0u);

  health_.up[lineOf(t, "l1").slot].store(false);
  send(t, burst(0x200));
  out = wanOut();
  ASSERT_EQ(out.size(), 7u);  // 7 x 200 bytes of l2's 1518
  for (size_t i = 0; i < out.size(); ++i) {
    EXPECT_EQ(out[i].vtep_last, 11);
    EXPECT_EQ(out[i].tag, 0x200 + i);
  }
  EXPECT_EQ(counters_->usage_tx[s1].packets.get(), 10u);
  EXPECT_EQ(counters_->usage_tx[s2].packets.get(), 7u);
  EXPECT_EQ(counters_->usage_tx[s2].bytes.get(), 7u * (200 + 50 + kEth));
  EXPECT_EQ(counters_->meter_red[s2].get(), 3u);
  EXPECT_EQ(counters_->meter_red[s1].get(), 0u);
  EXPECT_EQ(drop(DropReason::kRATE_LIMIT), 3u);
}

// Out of a tunnel: usage_rx of the line the packet came in on, with the
// tunnel frame's length as received; not metered (the sender's gateway
// metered it), even with both of t1's pairs at the smallest rate.
TEST_F(PolicyMeterTest, UsageRxCountsTheLineAPacketCameFrom) {
  const ForwardingTables& t = buildOk(meterConfig("", "ecmp"));
  const uint16_t s1 = pairSlot(t, "t1", "l1"), s2 = pairSlot(t, "t1", "l2");
  ASSERT_NO_FATAL_FAILURE(setRate(s1, 1000, 1000, 1518, 1518));
  ASSERT_NO_FATAL_FAILURE(setRate(s2, 1000, 1000, 1518, 1518));
  std::vector<std::pair<int, Bytes>> burst;
  uint64_t bytes[2] = {0, 0}, packets[2] = {0, 0};
  for (uint16_t i = 0; i < 30; ++i) {
    const int which = i % 3 == 0 ? 1 : 0;
    const uint16_t len = static_cast<uint16_t>(300 + 37 * i);
    Bytes inner = udp4(0, ip4("10.2.3.4"), kHost4[0], len, 0, static_cast<uint16_t>(0x100 + i), 53);
    Bytes f = fromVtep(which ? 11 : 10, 5001, inner);
    bytes[which] += f.size();
    ++packets[which];
    burst.emplace_back(-1, f);
  }
  send(t, burst);
  size_t delivered = 0;
  for (const Bytes& f : sent(lan_[0])) {
    auto tag = lanTagOf(f);
    EXPECT_TRUE(tag && *tag >= 0x100 && *tag < 0x100 + 30);
    ++delivered;
  }
  EXPECT_EQ(delivered, 30u);
  EXPECT_EQ(allDrops(), 0u);
  EXPECT_EQ(counters_->usage_rx[s1].packets.get(), packets[0]);
  EXPECT_EQ(counters_->usage_rx[s1].bytes.get(), bytes[0]);
  EXPECT_EQ(counters_->usage_rx[s2].packets.get(), packets[1]);
  EXPECT_EQ(counters_->usage_rx[s2].bytes.get(), bytes[1]);
  EXPECT_EQ(counters_->line_rx[lineOf(t, "l1").slot].bytes.get(), bytes[0]);
  EXPECT_EQ(counters_->line_rx[lineOf(t, "l2").slot].bytes.get(), bytes[1]);
  for (uint16_t s : {s1, s2}) {
    EXPECT_EQ(counters_->usage_tx[s].packets.get(), 0u);
    EXPECT_EQ(counters_->meter_red[s].get(), 0u);
    EXPECT_EQ(counters_->meter_yellow[s].get(), 0u);
  }
}

// The gateway's own ICMP errors into the tunnel are not metered: with t1's
// bucket on l1 spent, a time-exceeded about a packet from site-b still
// leaves, and the next packet from the LAN is red again.
TEST_F(PolicyMeterTest, GatewayIcmpErrorsAreNotMetered) {
  const ForwardingTables& t = buildOk(meterConfig(""));
  const uint16_t s1 = pairSlot(t, "t1", "l1");
  ASSERT_NO_FATAL_FAILURE(setRate(s1, 1000, 1000, 1518, 1518));
  std::vector<std::pair<int, Bytes>> burst;
  for (uint16_t i = 0; i < 4; ++i) {
    burst.emplace_back(0, lan4(0, "10.2.3.4", 500, 0, static_cast<uint16_t>(0x100 + i), 7));
  }
  send(t, burst);
  EXPECT_EQ(wanOut().size(), 3u);
  EXPECT_EQ(counters_->meter_red[s1].get(), 1u);
  // TTL 1 out of the tunnel: time exceeded back into it (a quote of up to
  // 576 bytes: far more than the 18 bytes of credit left).
  send(t, {{-1, fromSiteB(5001, udp4(0, ip4("10.2.3.4"), kHost4[0], 500, 0, 0x0777, 53, 1))}});
  const auto out = wanOut();
  ASSERT_EQ(out.size(), 1u) << "the ICMP error did not leave";
  EXPECT_EQ(out[0].vni, 5001u);
  EXPECT_EQ(out[0].inner_proto, kIcmp);
  EXPECT_GT(out[0].size, 200u);
  EXPECT_EQ(counters_->icmp_time_exceeded.get(), 1u);
  EXPECT_EQ(counters_->meter_red[s1].get(), 1u);
  EXPECT_EQ(drop(DropReason::kTTL_EXPIRED), 1u);
  // The meter still holds next to nothing.
  send(t, {{0, lan4(0, "10.2.3.4", 500, 0, 0x0200, 7)}});
  EXPECT_TRUE(wanOut().empty());
  EXPECT_EQ(counters_->meter_red[s1].get(), 2u);
  EXPECT_EQ(drop(DropReason::kRATE_LIMIT), 2u);
}

// ------------------------------------------------------------ flow audit
//
// Flow audit (flow_sample.hpp) through the same pipeline: a packet the
// policy denied (a rule, a deny default), one dropped as isolation and
// one dropped red by the meter leave a sample with that status and the
// deciding slot, counted down with the packets that cross a tunnel.

// The samples in `ring`, in order.
std::vector<FlowSample> takeSamples(rte_ring* ring) {
  std::vector<FlowSample> out;
  FlowSample got[64];
  unsigned n;
  while ((n = rte_ring_sc_dequeue_burst_elem(ring, got, sizeof(FlowSample), 64, nullptr)) > 0) {
    out.insert(out.end(), got, got + n);
  }
  return out;
}

// site-b's line (the config has one) and site-b's peer index.
std::pair<uint16_t, uint16_t> siteBHop(const ForwardingTables& t) {
  uint16_t line = kNoLine, peer = kNoPeer;
  for (const LineEntry& l : t.lines) {
    if (l.peer == "site-b") {
      line = l.slot;
    }
  }
  for (const TunnelEntry& tu : t.tunnels) {
    peer = tu.peer;
  }
  return {peer, line};
}

class PolicyFlowAuditTest : public PolicyPipelineTest {
 protected:
  void SetUp() override {
    PolicyPipelineTest::SetUp();
    flows_ = rte_ring_create_elem("pol_flows", sizeof(FlowSample), 4096, SOCKET_ID_ANY,
                                  RING_F_SP_ENQ | RING_F_SC_DEQ);
    ASSERT_NE(flows_, nullptr);
    pipeline_ = std::make_unique<Pipeline>(0, pool_, counters_.get(), &health_, nullptr, flows_);
  }
  void TearDown() override {
    health_.flow_sampling.store(0);
    PolicyPipelineTest::TearDown();
    rte_ring_free(flows_);
  }
  rte_ring* flows_ = nullptr;
};

// At 1-in-1, each kind alone: a denied packet leaves one sample with
// policy-deny and the slot of the rule (or default) that denied it, an
// isolated one with tenant-isolation and the tenant's isolation slot, a
// forwarded one (every one crosses the tunnel) with forwarded and no rule,
// a packet without a route none.  Out of the tunnel: the line it came on;
// from a LAN port and denied: no line.  The verdicts stay what they were.
TEST_F(PolicyFlowAuditTest, EachKindLeavesTheSampleOfItsVerdict) {
  const ForwardingTables& t = buildOk(configText(kT1Policy, kT2Policy));
  const auto [peer_b, line_b] = siteBHop(t);
  ASSERT_NE(line_b, kNoLine);
  health_.flow_sampling.store(1);
  const auto all = kinds();
  size_t denied = 0, isolated = 0;
  for (size_t k = 0; k < all.size(); ++k) {
    SCOPED_TRACE(all[k].first);
    const Case c = all[k].second(next_tag_);
    ASSERT_TRUE(runKinds(t, all, {k}));
    const auto got = takeSamples(flows_);
    if (c.drop == DropReason::kNO_ROUTE) {
      EXPECT_TRUE(got.empty());
      continue;
    }
    ASSERT_EQ(got.size(), 1u);
    const FlowSample& s = got[0];
    const uint16_t tenant = static_cast<uint16_t>(all[k].first.substr(0, 2) == "t2"   ? 1
                                                  : all[k].first.substr(0, 2) == "t3" ? 2
                                                                                      : 0);
    EXPECT_EQ(s.vni, t.tenants[tenant].vni);
    EXPECT_EQ(s.ip_version, all[k].first.find("v6") != std::string::npos ? 6 : 4);
    EXPECT_EQ(s.direction, static_cast<uint8_t>(c.from_wan ? FlowDirection::kFromTunnel
                                                           : FlowDirection::kToTunnel));
    if (c.drop == DropReason::kPOLICY_DENY) {
      ++denied;
      EXPECT_EQ(s.status, static_cast<uint8_t>(FlowStatus::kPolicyDeny));
      ASSERT_EQ(c.slots.size(), 1u);
      EXPECT_EQ(s.rule, slotOf(t, c.slots[0]));
    } else if (c.drop == DropReason::kTENANT_ISOLATION) {
      ++isolated;
      EXPECT_EQ(s.status, static_cast<uint8_t>(FlowStatus::kIsolation));
      EXPECT_EQ(s.rule, t.tenants[tenant].isolation_slot);
    } else {
      ASSERT_FALSE(c.drop);
      EXPECT_EQ(s.status, static_cast<uint8_t>(FlowStatus::kForwarded));
      EXPECT_EQ(s.rule, kNoRule);
    }
    if (c.from_wan || !c.drop) {  // out of the tunnel, or into it
      EXPECT_EQ(s.peer, peer_b);
      EXPECT_EQ(s.line, line_b);
    } else {
      EXPECT_EQ(s.peer, kNoPeer);
      EXPECT_EQ(s.line, kNoLine);
    }
  }
  EXPECT_EQ(denied, 12u);  // every denied kind was seen
  EXPECT_EQ(isolated, 6u);
  EXPECT_EQ(counters_->flow_samples.get(), all.size() - 4) << "all but the 4 without a route";
  EXPECT_EQ(counters_->flow_ring_full.get(), 0u);
}

// Mixed bursts at 1-in-7: one countdown over the denied and the routed
// packets, one decision per packet: of 31 x 40 packets (no kind without a
// route), exactly every 7th is sampled, denied and forwarded ones alike;
// each sample says what became of its packet.
TEST_F(PolicyFlowAuditTest, OneCountdownOverDeniedAndRoutedPackets) {
  const ForwardingTables& t = buildOk(configText(kT1Policy, kT2Policy));
  const auto all = kinds();
  const std::vector<size_t> mix = {
      kindIndex(all, "t1 tcp 22 denied"), kindIndex(all, "t2 v6 udp 53 allowed"),
      kindIndex(all, "t2 tcp 80 default deny"), kindIndex(all, "t1 tcp 443 default"),
      kindIndex(all, "into t1 tcp 22 denied")};
  health_.flow_sampling.store(7);
  size_t sent = 0;
  std::map<std::pair<uint8_t, uint16_t>, size_t> want_by;  // (status, rule) of every packet
  for (int b = 0; b < 40; ++b) {
    std::vector<size_t> burst;
    for (size_t i = 0; i < 31; ++i) {
      burst.push_back(mix[(i + static_cast<size_t>(b)) % mix.size()]);
    }
    ASSERT_TRUE(runKinds(t, all, burst));
    sent += burst.size();
  }
  const auto got = takeSamples(flows_);
  EXPECT_EQ(got.size(), (sent + 6) / 7) << "the first packet, then every 7th";
  std::map<std::pair<uint8_t, uint16_t>, size_t> by;
  for (const FlowSample& s : got) {
    ++by[{s.status, s.rule}];
  }
  const auto deny = static_cast<uint8_t>(FlowStatus::kPolicyDeny);
  ASSERT_EQ(by.size(), 3u) << "forwarded, t1/no-ssh and t2/(default)";
  EXPECT_GT((by[{deny, slotOf(t, "t1/no-ssh")}]), 0u);
  EXPECT_GT((by[{deny, slotOf(t, "t2/(default)")}]), 0u);
  EXPECT_GT((by[{static_cast<uint8_t>(FlowStatus::kForwarded), kNoRule}]), 0u);
  // 3 of the 5 kinds are denied: the denied samples are near 3/5.
  const size_t denied_samples =
      by[{deny, slotOf(t, "t1/no-ssh")}] + by[{deny, slotOf(t, "t2/(default)")}];
  EXPECT_NEAR(static_cast<double>(denied_samples) / static_cast<double>(got.size()), 0.6, 0.1);

  // Sampling off: no sample, the same verdicts.
  health_.flow_sampling.store(0);
  ASSERT_TRUE(runKinds(t, all, mix));
  EXPECT_TRUE(takeSamples(flows_).empty());
}

class MeterFlowAuditTest : public PolicyMeterTest {
 protected:
  void SetUp() override {
    PolicyMeterTest::SetUp();
    flows_ = rte_ring_create_elem("met_flows", sizeof(FlowSample), 4096, SOCKET_ID_ANY,
                                  RING_F_SP_ENQ | RING_F_SC_DEQ);
    ASSERT_NE(flows_, nullptr);
    pipeline_ = std::make_unique<Pipeline>(0, pool_, counters_.get(), &health_, nullptr, flows_,
                                           worker_meters_.get());
  }
  void TearDown() override {
    health_.flow_sampling.store(0);
    PolicyMeterTest::TearDown();
    rte_ring_free(flows_);
  }
  rte_ring* flows_ = nullptr;
};

// The tiny rate of TinyRateSendsTheBurstAndDropsTheRest at 1-in-1: t1's 4
// green packets are forwarded samples, its 6 red ones rate-limit samples
// on the line whose meter dropped them (no rule); t2's 5 are forwarded.
TEST_F(MeterFlowAuditTest, RedPacketsAreSampledAsRateLimitOnTheirLine) {
  const ForwardingTables& t = buildOk(meterConfig(""));
  const uint16_t s1 = pairSlot(t, "t1", "l1");
  ASSERT_NO_FATAL_FAILURE(setRate(s1, 1000, 1000, 2000, 2000));
  const uint16_t line = lineOf(t, "l1").slot;
  health_.flow_sampling.store(1);
  std::vector<std::pair<int, Bytes>> burst;
  for (uint16_t i = 0; i < 10; ++i) {
    burst.emplace_back(0, lan4(0, "10.2.3.4", 500, 0, static_cast<uint16_t>(0x100 + i), 1000));
    if (i % 2) {
      burst.emplace_back(1, lan4(1, "10.2.3.4", 500, 0, static_cast<uint16_t>(0x200 + i), 1000));
    }
  }
  send(t, burst);
  EXPECT_EQ(wanOut().size(), 9u);
  EXPECT_EQ(drop(DropReason::kRATE_LIMIT), 6u);
  const auto got = takeSamples(flows_);
  ASSERT_EQ(got.size(), 15u);
  std::map<std::pair<uint32_t, uint8_t>, size_t> by;  // (VNI, status)
  for (const FlowSample& s : got) {
    ++by[{s.vni, s.status}];
    EXPECT_EQ(s.line, line);
    EXPECT_EQ(s.rule, kNoRule);
    EXPECT_EQ(s.direction, static_cast<uint8_t>(FlowDirection::kToTunnel));
    EXPECT_EQ(s.ip_len, 500);
  }
  const auto fwd = static_cast<uint8_t>(FlowStatus::kForwarded);
  const auto red = static_cast<uint8_t>(FlowStatus::kRateLimit);
  EXPECT_EQ(by, (std::map<std::pair<uint32_t, uint8_t>, size_t>{
                    {{5001, fwd}, 4}, {{5001, red}, 6}, {{5002, fwd}, 5}}));
  // The 7th t1 packet of the burst is red: its sample is the 7th of t1's.
  std::vector<uint8_t> t1_status;
  for (const FlowSample& s : got) {
    if (s.vni == 5001) {
      t1_status.push_back(s.status);
    }
  }
  EXPECT_EQ(t1_status, (std::vector<uint8_t>{fwd, fwd, fwd, fwd, red, red, red, red, red, red}));
}

}  // namespace
}  // namespace mcgw::engine
