// FRR's integrated config rendered from mcgw configs, compared byte for byte
// with golden files (tests/unit/control/frr_golden/*.conf); the component
// test frr_render_frr loads the same goldens into a real FRR 8.4 and checks
// they round-trip.  The sessions and ranges the rendering derives are checked
// against literal values.
//
// After a deliberate change of the rendering, rewrite the goldens with
//   MCGW_UPDATE_GOLDEN=1 build/tests/unit/frr_render_test
// and read the diff (git diff tests/unit/control/frr_golden) before
// committing it.
#include "control/frr/render.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "config/loader.hpp"

namespace mcgw::frr {
namespace {

namespace fs = std::filesystem;
using config::IpAddress;
using config::IpPrefix;

const fs::path kGoldenDir = fs::path(MCGW_SOURCE_DIR) / "tests/unit/control/frr_golden";

std::string readFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

config::ConfigPtr load(const fs::path& path) {
  auto r = config::loadConfigFile(path.string());
  if (!r.ok()) {
    std::string all;
    for (const auto& e : r.error()) {
      all += "  " + e.toString() + "\n";
    }
    ADD_FAILURE() << path << " does not load:\n" << all;
    return nullptr;
  }
  return *r;
}

config::ConfigPtr loadGoldenInput(const std::string& name) {
  return load(kGoldenDir / (name + ".yaml"));
}

IpAddress ip(const char* text) {
  return IpAddress::parse(text).value();
}

IpPrefix prefix(const char* text) {
  return IpPrefix::parse(text).value();
}

std::vector<IpPrefix> prefixes(std::initializer_list<const char*> texts) {
  std::vector<IpPrefix> out;
  for (const char* t : texts) {
    out.push_back(prefix(t));
  }
  return out;
}

// Compares the rendering of config with golden name.conf; with
// MCGW_UPDATE_GOLDEN=1 rewrites the golden instead.
void expectGolden(const config::Config& config, const std::string& name,
                  const BgpStanding& standing = {}) {
  const std::string actual = renderFrrConfig(config, standing);
  const fs::path golden = kGoldenDir / (name + ".conf");
  if (const char* update = std::getenv("MCGW_UPDATE_GOLDEN");
      update && std::string(update) == "1") {
    std::ofstream(golden, std::ios::binary) << actual;
    GTEST_SKIP() << "rewrote " << golden;
  }
  const std::string expected = readFile(golden);
  if (actual == expected) {
    return;
  }
  // The first line that differs, and where the whole rendering is to diff.
  std::istringstream a(actual), e(expected);
  std::string la, le;
  int line = 0;
  while (true) {
    ++line;
    bool more_a = static_cast<bool>(std::getline(a, la));
    bool more_e = static_cast<bool>(std::getline(e, le));
    if (!more_a && !more_e) {
      break;
    }
    if (!more_a || !more_e || la != le) {
      break;
    }
  }
  const fs::path actual_path = fs::temp_directory_path() / ("frr_render_" + name + ".conf");
  std::ofstream(actual_path, std::ios::binary) << actual;
  ADD_FAILURE() << "rendering differs from " << golden << " at line " << line
                << ":\n  golden: " << le << "\n  actual: " << la << "\nsee: diff -u " << golden
                << " " << actual_path
                << "\n(MCGW_UPDATE_GOLDEN=1 rewrites the golden after a deliberate change)";
}

TEST(FrrRenderGolden, BgpBfdExample) {
  auto c = load(fs::path(MCGW_SOURCE_DIR) / "config/examples/bgp-bfd.yaml");
  ASSERT_TRUE(c);
  expectGolden(*c, "bgp-bfd");
}

TEST(FrrRenderGolden, PlanWithMappedRangesTwoPeersTwoLinesEach) {
  auto c = loadGoldenInput("plan-two-peers");
  ASSERT_TRUE(c);
  expectGolden(*c, "plan-two-peers");
}

TEST(FrrRenderGolden, Ipv6Lines) {
  auto c = loadGoldenInput("ipv6-lines");
  ASSERT_TRUE(c);
  expectGolden(*c, "ipv6-lines");
}

TEST(FrrRenderGolden, NoPlan) {
  auto c = loadGoldenInput("no-plan");
  ASSERT_TRUE(c);
  expectGolden(*c, "no-plan");
}

// The two ends of one line; the component test lets their session come up.
TEST(FrrRenderGolden, PairOfGateways) {
  for (const char* name : {"pair-a", "pair-b"}) {
    SCOPED_TRACE(name);
    auto c = loadGoldenInput(name);
    ASSERT_TRUE(c);
    expectGolden(*c, name);
  }
}

// The VRRP standing (docs/routing.md "BGP follows VRRP") in the out
// route-maps: to the lines (MCGW-OUT) and to the LAN neighbours
// (MCGW-OUT-LAN), IPv4 and IPv6.
TEST(FrrRenderGolden, StandingPrepend) {
  auto c = loadGoldenInput("plan-two-peers");
  ASSERT_TRUE(c);
  expectGolden(*c, "plan-two-peers-prepend", {BgpStanding::Mode::kPrepend, 3});
}

TEST(FrrRenderGolden, StandingWithdraw) {
  auto c = loadGoldenInput("plan-two-peers");
  ASSERT_TRUE(c);
  expectGolden(*c, "plan-two-peers-withdraw", {BgpStanding::Mode::kWithdraw, 3});
}

TEST(FrrRenderGolden, StandingPrependIpv6) {
  auto c = loadGoldenInput("ipv6-lines");
  ASSERT_TRUE(c);
  expectGolden(*c, "ipv6-lines-prepend", {BgpStanding::Mode::kPrepend, 2});
}

// Every golden ends with a newline, has no trailing spaces and no tabs.
TEST(FrrRenderGolden, GoldensAreCleanText) {
  for (const char* name :
       {"bgp-bfd", "plan-two-peers", "ipv6-lines", "no-plan", "pair-a", "pair-b",
        "plan-two-peers-prepend", "plan-two-peers-withdraw", "ipv6-lines-prepend"}) {
    SCOPED_TRACE(name);
    const std::string text = readFile(kGoldenDir / (std::string(name) + ".conf"));
    ASSERT_FALSE(text.empty());
    EXPECT_EQ(text.back(), '\n');
    EXPECT_EQ(text.find(" \n"), std::string::npos);
    EXPECT_EQ(text.find('\t'), std::string::npos);
  }
}

TEST(FrrRender, NothingWithoutBgp) {
  auto c = load(fs::path(MCGW_SOURCE_DIR) / "config/examples/address-plan.yaml");
  ASSERT_TRUE(c);
  EXPECT_EQ(renderFrrConfig(*c), "");
  EXPECT_TRUE(bgpSessions(*c).empty());
}

TEST(FrrRender, SameConfigSameBytes) {
  auto a = loadGoldenInput("plan-two-peers");
  auto b = loadGoldenInput("plan-two-peers");
  ASSERT_TRUE(a && b);
  EXPECT_EQ(renderFrrConfig(*a), renderFrrConfig(*b));
}

TEST(FrrRender, SiteRangesReplaceRealByMapped) {
  auto c = loadGoldenInput("plan-two-peers");
  ASSERT_TRUE(c);
  // 10.11.0.0/16 is reached at its mapped range; 10.1.0.0/16 stays: the
  // mapping of that prefix belongs to huawei-gz's legacy copy.
  EXPECT_EQ(siteRanges(*c, "idc-a"), prefixes({"10.1.0.0/16", "10.67.0.0/16"}));
  EXPECT_EQ(siteRanges(*c, "aws.use1_b"), prefixes({"10.2.0.0/16", "10.12.0.0/16"}));
  EXPECT_EQ(siteRanges(*c, "aliyun-sh"), prefixes({"10.3.0.0/16", "10.66.0.0/16"}));
  EXPECT_EQ(siteRanges(*c, "huawei-gz"), prefixes({"10.65.0.0/16"}));
  EXPECT_TRUE(siteRanges(*c, "nowhere").empty());
  EXPECT_EQ(announcedRanges(*c), prefixes({"10.1.0.0/16", "10.67.0.0/16"}));
  // Every other site's: what LAN neighbours are sent.
  EXPECT_EQ(remoteRanges(*c), prefixes({"10.2.0.0/16", "10.3.0.0/16", "10.12.0.0/16",
                                        "10.65.0.0/16", "10.66.0.0/16"}));
}

TEST(FrrRender, SiteRangesOfBothFamilies) {
  auto c = loadGoldenInput("ipv6-lines");
  ASSERT_TRUE(c);
  EXPECT_EQ(siteRanges(*c, "site-a"), prefixes({"10.1.0.0/16", "fd00:a::/48"}));
  EXPECT_EQ(announcedRanges(*c), prefixes({"10.2.0.0/16", "fd00:b::/48"}));
  EXPECT_EQ(remoteRanges(*c), prefixes({"10.1.0.0/16", "fd00:a::/48"}));
}

TEST(FrrRender, WithoutAPlanTheLanSubnetsAreAnnounced) {
  auto c = loadGoldenInput("no-plan");
  ASSERT_TRUE(c);
  EXPECT_EQ(announcedRanges(*c), prefixes({"10.5.0.0/24", "10.6.0.0/24"}));
  EXPECT_TRUE(siteRanges(*c, "site-a").empty());
  EXPECT_TRUE(remoteRanges(*c).empty());
}

TEST(FrrRender, SessionsInConfigOrderWithOverrides) {
  auto c = loadGoldenInput("plan-two-peers");
  ASSERT_TRUE(c);
  const std::vector<BgpSession> s = bgpSessions(*c);
  ASSERT_EQ(s.size(), 7u);
  using K = BgpSession::Kind;
  // kind, peer, line, port, site, address, local, asn, bfd, interval, multiplier, max-prefix
  const std::vector<BgpSession> expected = {
      {K::kLine, "aws.use1_b", "dx-1", "wan0", "aws.use1_b", ip("203.0.113.2"), ip("203.0.113.1"),
       65002, true, 50, 5, 20000},
      {K::kLine, "aws.use1_b", "vpn-1", "wan1", "aws.use1_b", ip("198.51.100.2"),
       ip("198.51.100.1"), 65002, true, 100, 3, 20000},
      {K::kLine, "aliyun-sh", "dx-1", "wan0", "aliyun-sh", ip("203.0.113.3"), ip("203.0.113.1"),
       65003, true, 100, 3, 20000},
      {K::kLine, "aliyun-sh", "vpn-1", "wan1", "aliyun-sh", ip("198.51.100.3"), ip("198.51.100.1"),
       65003, true, 100, 4, 20000},
      {K::kNeighbor, "", "", "lan0", "idc-a", ip("10.1.0.254"), std::nullopt, 64512, true, 100, 3,
       500},
      {K::kNeighbor, "", "", "lan0", "huawei-gz", ip("10.1.0.253"), std::nullopt, 64513, true, 300,
       3, 20000},
      {K::kNeighbor, "", "", "lan0", "nowhere", ip("10.1.0.252"), std::nullopt, 64514, false, 100,
       3, 20000},
  };
  for (size_t i = 0; i < expected.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(s[i].kind, expected[i].kind);
    EXPECT_EQ(s[i].peer, expected[i].peer);
    EXPECT_EQ(s[i].line, expected[i].line);
    EXPECT_EQ(s[i].port, expected[i].port);
    EXPECT_EQ(s[i].site, expected[i].site);
    EXPECT_EQ(s[i].address, expected[i].address);
    EXPECT_EQ(s[i].local, expected[i].local);
    EXPECT_EQ(s[i].asn, expected[i].asn);
    EXPECT_EQ(s[i].bfd, expected[i].bfd);
    EXPECT_EQ(s[i].bfd_interval_ms, expected[i].bfd_interval_ms);
    EXPECT_EQ(s[i].bfd_multiplier, expected[i].bfd_multiplier);
    EXPECT_EQ(s[i].maximum_prefix, expected[i].maximum_prefix);
  }
}

TEST(FrrRender, LineBfdFollowsTheBgpSwitch) {
  auto c = loadGoldenInput("no-plan");
  ASSERT_TRUE(c);
  const std::vector<BgpSession> s = bgpSessions(*c);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_FALSE(s[0].bfd);  // bgp.bfd.enabled: false
  EXPECT_TRUE(s[1].bfd);   // the neighbour's own bfd (default true)
  EXPECT_EQ(s[1].maximum_prefix, 2000u);
}

// The filters as text, for the rules that matter most.
TEST(FrrRender, FiltersFollowThePlan) {
  auto c = loadGoldenInput("plan-two-peers");
  ASSERT_TRUE(c);
  const std::string conf = renderFrrConfig(*c);
  auto has = [&](const std::string& line) {
    return conf.find("\n" + line + "\n") != std::string::npos;
  };
  EXPECT_TRUE(has("ip prefix-list MCGW-ANNOUNCE seq 5 permit 10.1.0.0/16"));
  EXPECT_TRUE(has("ip prefix-list MCGW-ANNOUNCE seq 10 permit 10.67.0.0/16"));
  EXPECT_TRUE(has("ip prefix-list MCGW-SITE-aliyun-sh seq 10 permit 10.66.0.0/16 le 32"));
  EXPECT_TRUE(has("ip prefix-list MCGW-SITE-nowhere seq 5 deny any"));
  EXPECT_TRUE(has("  neighbor 10.1.0.253 route-map MCGW-IN-huawei-gz in"));
  EXPECT_TRUE(has("  neighbor 10.1.0.254 maximum-prefix 500"));
  // Peers get this site's ranges, LAN neighbours the remote sites'.
  EXPECT_TRUE(has("  neighbor 203.0.113.2 route-map MCGW-OUT out"));
  EXPECT_TRUE(has("  neighbor 10.1.0.254 route-map MCGW-OUT-LAN out"));
  EXPECT_TRUE(has("ip prefix-list MCGW-REMOTE seq 25 permit 10.66.0.0/16 le 32"));
  EXPECT_FALSE(has(" neighbor 10.1.0.252 bfd"));
  // No IPv6 session: no IPv6 filters or address family.
  EXPECT_EQ(conf.find("ipv6"), conf.find("no ipv6 forwarding") + 3);
  EXPECT_EQ(conf.find("address-family ipv6"), std::string::npos);
}

TEST(FrrRender, OpenImportWithoutAPlan) {
  auto c = loadGoldenInput("no-plan");
  ASSERT_TRUE(c);
  const std::string conf = renderFrrConfig(*c);
  EXPECT_NE(conf.find("\nip prefix-list MCGW-SITE-site-a seq 5 permit 0.0.0.0/0 le 32\n"),
            std::string::npos);
  EXPECT_NE(conf.find("\nfpm address 127.0.0.1 port 2621\n"), std::string::npos);
  EXPECT_EQ(conf.find("timers bgp"), std::string::npos);  // FRR's defaults
  EXPECT_EQ(conf.find("graceful-restart"), std::string::npos);
}

TEST(FrrRenderStanding, ActiveIsTheDefaultRendering) {
  auto c = loadGoldenInput("pair-a");
  ASSERT_TRUE(c);
  EXPECT_EQ(renderFrrConfig(*c, {}), renderFrrConfig(*c));
  EXPECT_EQ(renderFrrConfig(*c, {BgpStanding::Mode::kActive, 7}), renderFrrConfig(*c));
  // Route-map changes are applied by mcgwd's soft refresh, not bgpd's timer.
  EXPECT_NE(renderFrrConfig(*c).find("\nbgp route-map delay-timer 0\n!\nrouter bgp 65001\n"),
            std::string::npos);
}

TEST(FrrRenderStanding, EqualWhenRenderedTheSame) {
  using M = BgpStanding::Mode;
  EXPECT_EQ((BgpStanding{M::kActive, 3}), (BgpStanding{M::kActive, 5}));
  EXPECT_EQ((BgpStanding{M::kWithdraw, 3}), (BgpStanding{M::kWithdraw, 5}));
  EXPECT_FALSE((BgpStanding{M::kPrepend, 3}) == (BgpStanding{M::kPrepend, 5}));
  EXPECT_FALSE((BgpStanding{M::kPrepend, 3}) == (BgpStanding{M::kActive, 3}));
  EXPECT_STREQ(toString(M::kActive), "active");
  EXPECT_STREQ(toString(M::kPrepend), "prepend");
  EXPECT_STREQ(toString(M::kWithdraw), "withdraw");
}

TEST(FrrRenderStanding, OutRouteMapsOfTheSessions) {
  auto pair = loadGoldenInput("pair-a");
  auto plan = loadGoldenInput("plan-two-peers");
  auto v6 = loadGoldenInput("ipv6-lines");
  ASSERT_TRUE(pair && plan && v6);
  EXPECT_EQ(outRouteMaps(*pair), (std::vector<std::string>{"MCGW-OUT"}));
  EXPECT_EQ(outRouteMaps(*plan), (std::vector<std::string>{"MCGW-OUT", "MCGW-OUT-LAN"}));
  EXPECT_EQ(outRouteMaps(*v6),
            (std::vector<std::string>{"MCGW-OUT", "MCGW-OUT-LAN", "MCGW-OUT6", "MCGW-OUT6-LAN"}));
}

// The vtysh commands of each change, literally: only the standing lines
// (the out route-maps, then MCGW-ORIGIN), what weakens the announcement
// first; the own ranges' `network` lines again, which re-originates them at
// once; then an outbound soft refresh for what else the out route-maps send.
TEST(FrrRenderStanding, CommandsOfEachChange) {
  using M = BgpStanding::Mode;
  using V = std::vector<std::string>;
  auto c = loadGoldenInput("plan-two-peers");
  ASSERT_TRUE(c);
  const BgpStanding active{M::kActive, 3}, prepend{M::kPrepend, 3}, prepend2{M::kPrepend, 2},
      withdraw{M::kWithdraw, 3};
  EXPECT_TRUE(standingCommands(*c, active, active).empty());
  EXPECT_TRUE(standingCommands(*c, withdraw, withdraw).empty());
  EXPECT_TRUE(standingCommands(*c, prepend, prepend).empty());
  const std::string p3 = "set as-path prepend 65001 65001 65001";
  const V tail = {"router bgp 65001",
                  "address-family ipv4 unicast",
                  "network 10.1.0.0/16 route-map MCGW-ORIGIN",
                  "network 10.67.0.0/16 route-map MCGW-ORIGIN",
                  "exit-address-family",
                  "exit",
                  "end",
                  "clear bgp * soft out"};
  auto with = [&](V head) {
    head.insert(head.end(), tail.begin(), tail.end());
    return head;
  };
  EXPECT_EQ(standingCommands(*c, active, prepend),
            with({"configure terminal", "route-map MCGW-OUT permit 10", p3, "exit",
                  "route-map MCGW-OUT-LAN permit 10", p3, "exit", "route-map MCGW-ORIGIN permit 10",
                  p3, "exit"}));
  const std::string p2 = "set as-path prepend 65001 65001";
  EXPECT_EQ(standingCommands(*c, prepend, prepend2),
            with({"configure terminal", "route-map MCGW-OUT permit 10", p2, "exit",
                  "route-map MCGW-OUT-LAN permit 10", p2, "exit", "route-map MCGW-ORIGIN permit 10",
                  p2, "exit"}));
  const std::string no = "no set as-path prepend";
  EXPECT_EQ(standingCommands(*c, prepend, active),
            with({"configure terminal", "route-map MCGW-OUT permit 10", no, "exit",
                  "route-map MCGW-OUT-LAN permit 10", no, "exit", "route-map MCGW-ORIGIN permit 10",
                  no, "exit"}));
  EXPECT_EQ(
      standingCommands(*c, active, withdraw),
      with({"configure terminal", "route-map MCGW-OUT deny 5", "exit",
            "route-map MCGW-OUT-LAN deny 5", "exit", "route-map MCGW-ORIGIN deny 5", "exit"}));
  EXPECT_EQ(standingCommands(*c, withdraw, active),
            with({"configure terminal", "no route-map MCGW-OUT deny 5",
                  "no route-map MCGW-OUT-LAN deny 5", "no route-map MCGW-ORIGIN deny 5"}));
  // Prepend to withdraw: the deny entry before the prepend goes.
  EXPECT_EQ(
      standingCommands(*c, prepend, withdraw),
      with({"configure terminal", "route-map MCGW-OUT deny 5", "exit",
            "route-map MCGW-OUT permit 10", no, "exit", "route-map MCGW-OUT-LAN deny 5", "exit",
            "route-map MCGW-OUT-LAN permit 10", no, "exit", "route-map MCGW-ORIGIN deny 5", "exit",
            "route-map MCGW-ORIGIN permit 10", no, "exit"}));
  // Withdraw to prepend: the prepend before the deny entry goes.
  EXPECT_EQ(standingCommands(*c, withdraw, prepend),
            with({"configure terminal", "route-map MCGW-OUT permit 10", p3, "exit",
                  "no route-map MCGW-OUT deny 5", "route-map MCGW-OUT-LAN permit 10", p3, "exit",
                  "no route-map MCGW-OUT-LAN deny 5", "route-map MCGW-ORIGIN permit 10", p3, "exit",
                  "no route-map MCGW-ORIGIN deny 5"}));
}

TEST(FrrRenderStanding, NothingWithoutBgp) {
  auto c = load(fs::path(MCGW_SOURCE_DIR) / "config/examples/address-plan.yaml");
  ASSERT_TRUE(c);
  EXPECT_EQ(renderFrrConfig(*c, {BgpStanding::Mode::kWithdraw, 3}), "");
  EXPECT_TRUE(outRouteMaps(*c).empty());
  EXPECT_TRUE(standingCommands(*c, {}, {BgpStanding::Mode::kWithdraw, 3}).empty());
}

}  // namespace
}  // namespace mcgw::frr
