// FRR's routes as zebra sends them (decoded FPM messages) → the fast path's
// route updates: tenancy from the plan, next hops to tunnels and LAN
// routers, refusals, next-hop groups, stale routes and the sweep.
#include "control/frr/frr_routes.hpp"

#include <gtest/gtest.h>

#include "config/loader.hpp"

namespace mcgw::frr {
namespace {

using config::IpAddress;
using config::IpPrefix;
using engine::RouteUpdate;
using engine::Via;

// Two tenants; the plan gives each its VPCs; peer site-b carries both over
// two lines, peer site-c only tenant red; a mapped range at site-b.
constexpr const char* kConfig = R"(
node: {name: gw-a1, site: site-a}
eal: {hugepages: false}
ports:
  - {name: lan0, role: lan, vdev: net_null0, addresses: [10.1.0.1/24, "fd00:a::1/64"], tenant: blue}
  - {name: lan1, role: lan, vdev: net_null1, addresses: [10.9.0.1/24], tenant: red}
  - {name: wan0, role: wan, vdev: net_null2, addresses: [100.64.1.1/30, "fd00:64:1::1/64"]}
tenants:
  - {name: blue, vni: 1000}
  - {name: red, vni: 2000}
peers:
  - name: site-b
    lines:
      - {name: line1, port: wan0, local-vtep: 100.64.1.1, remote-vtep: 100.64.3.1, next-hop: 100.64.1.2}
      - {name: line2, port: wan0, local-vtep: "fd00:64:1::1", remote-vtep: "fd00:64:3::1", next-hop: "fd00:64:1::2"}
  - name: site-c
    tenants: [red]
    lines:
      - {name: line1, port: wan0, local-vtep: 100.64.1.1, remote-vtep: 100.64.5.1, next-hop: 100.64.1.2}
address-plan:
  clouds:
    - name: lab
      regions:
        - name: r1
          vpcs:
            - {name: vpc-a, prefixes: [10.1.0.0/16, "fd00:a::/64"], tenant: blue, site: site-a}
            - {name: vpc-b, prefixes: [10.2.0.0/16], tenant: blue, site: site-b}
            - {name: vpc-r, prefixes: [10.9.0.0/16], tenant: red, site: site-a}
            - {name: vpc-c, prefixes: [10.3.0.0/16], tenant: red, site: site-c}
            - {name: vpc-l, prefixes: [10.1.0.0/16], tenant: blue, site: site-b}
  mapped-ranges:
    - {name: legacy, real: 10.1.0.0/16, mapped: 100.65.0.0/16, site: site-b}
)";

config::ConfigPtr load(const std::string& text) {
  auto r = config::loadConfigText(text, "test.yaml");
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().front().toString());
  return r.ok() ? *r : nullptr;
}

IpPrefix P(const char* s) {
  return *IpPrefix::parse(s);
}
IpAddress A(const char* s) {
  return *IpAddress::parse(s);
}

FpmRoute route(const char* prefix, std::vector<const char*> gateways) {
  FpmRoute r;
  r.prefix = P(prefix);
  r.protocol = 186;
  for (const char* g : gateways) {
    r.next_hops.push_back({A(g), 7, 1});
  }
  return r;
}

FpmRoute withdrawal(const char* prefix) {
  FpmRoute r;
  r.prefix = P(prefix);
  r.withdraw = true;
  return r;
}

class FrrRoutesTest : public ::testing::Test {
 protected:
  config::ConfigPtr config_ = load(kConfig);
  Tenancy tenancy_{*config_};
};

TEST_F(FrrRoutesTest, TenantIsThePlansVpcOrMappedRange) {
  EXPECT_EQ(*tenancy_.tenantOf(P("10.2.0.0/16")), "blue");
  EXPECT_EQ(*tenancy_.tenantOf(P("10.2.7.0/24")), "blue");  // inside a VPC
  EXPECT_EQ(*tenancy_.tenantOf(P("10.3.0.0/16")), "red");
  EXPECT_EQ(*tenancy_.tenantOf(P("fd00:a::/64")), "blue");
  // The mapped range belongs to the tenant of the VPC at its site that holds the real range.
  EXPECT_EQ(*tenancy_.tenantOf(P("100.65.0.0/16")), "blue");
  // site-b's legacy VPC overlaps site-a's vpc-a: 10.1.0.0/16 is vpc-a's,
  // site-b's is reached at 100.65.0.0/16 only.
  auto a = tenancy_.claim(P("10.1.0.0/16"));
  ASSERT_TRUE(a.ok()) << a.error();
  EXPECT_EQ(a->site, "site-a");
  auto none = tenancy_.tenantOf(P("10.200.0.0/16"));
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().find("outside every VPC"), std::string::npos) << none.error();
  // Wider than any VPC: no VPC contains it.
  EXPECT_FALSE(tenancy_.tenantOf(P("10.0.0.0/8")).ok());
}

TEST_F(FrrRoutesTest, WithoutAPlanTheSingleTenantTakesEverything) {
  auto c = load(R"(
node: {name: gw, site: s}
eal: {hugepages: false}
ports:
  - {name: lan0, role: lan, vdev: net_null0, addresses: [10.1.0.1/24]}
  - {name: wan0, role: wan, vdev: net_null1, addresses: [100.64.1.1/30]}
tenants: [{name: only, vni: 5}]
peers:
  - name: b
    lines: [{name: l1, port: wan0, local-vtep: 100.64.1.1, remote-vtep: 100.64.3.1}]
)");
  ASSERT_TRUE(c);
  Tenancy t(*c);
  EXPECT_EQ(*t.tenantOf(P("192.0.2.0/24")), "only");
  EXPECT_EQ(*t.tenantOf(P("0.0.0.0/0")), "only");
}

TEST_F(FrrRoutesTest, NextHopsBecomeTunnelsOrLanRouters) {
  auto t = translate(*config_, tenancy_, route("10.2.0.0/16", {"100.64.3.1"}));
  ASSERT_TRUE(t.ok()) << t.error();
  EXPECT_EQ(t->tenant, "blue");
  ASSERT_EQ(t->vias.size(), 1u);
  EXPECT_EQ(t->vias[0].kind, Via::Kind::kTunnel);
  EXPECT_EQ(t->vias[0].peer, "site-b");
  EXPECT_EQ(describe(t->vias), "peer site-b");

  // Both lines of one peer: one tunnel (the peer's line-mode picks the line).
  t = translate(*config_, tenancy_, route("10.2.0.0/16", {"100.64.3.1", "fd00:64:3::1"}));
  ASSERT_TRUE(t.ok()) << t.error();
  EXPECT_EQ(describe(t->vias), "peer site-b");

  // An IPv4 route with an IPv6 next hop (RFC 8950) over an IPv6 line.
  t = translate(*config_, tenancy_, route("10.2.0.0/16", {"fd00:64:3::1"}));
  ASSERT_TRUE(t.ok()) << t.error();
  EXPECT_EQ(describe(t->vias), "peer site-b");

  // A router on the tenant's LAN.
  t = translate(*config_, tenancy_, route("10.1.128.0/17", {"10.1.0.254"}));
  ASSERT_TRUE(t.ok()) << t.error();
  ASSERT_EQ(t->vias.size(), 1u);
  EXPECT_EQ(t->vias[0].kind, Via::Kind::kGateway);
  EXPECT_EQ(t->vias[0].port, "lan0");
  EXPECT_EQ(describe(t->vias), "10.1.0.254 on lan0");

  // Two peers: an ECMP group of both tunnels, in the order given.
  t = translate(*config_, tenancy_, route("10.3.0.0/16", {"100.64.5.1", "100.64.3.1"}));
  ASSERT_TRUE(t.ok()) << t.error();
  EXPECT_EQ(describe(t->vias), "peer site-c + peer site-b");
}

// zebra resolves a multihop BGP next hop (the peer's VTEP behind the underlay
// router) to the router itself: the plan's site of the prefix picks the peer.
TEST_F(FrrRoutesTest, UnderlayNextHopsLeadToThePeerOfThePrefixsSite) {
  const PortsByIfindex ports{{7, "wan0"}, {9, "lan0"}};
  auto t = translate(*config_, tenancy_, route("10.2.0.0/16", {"100.64.1.2"}), ports);
  ASSERT_TRUE(t.ok()) << t.error();
  EXPECT_EQ(describe(t->vias), "peer site-b");
  // Behind the same router, a red range of site C goes to site-c.
  t = translate(*config_, tenancy_, route("10.3.0.0/16", {"100.64.1.2"}), ports);
  ASSERT_TRUE(t.ok()) << t.error();
  EXPECT_EQ(describe(t->vias), "peer site-c");
  // Both lines of site B (IPv4 and IPv6 underlay next hops): one tunnel.
  t = translate(*config_, tenancy_, route("10.2.0.0/16", {"100.64.1.2", "fd00:64:1::2"}), ports);
  ASSERT_TRUE(t.ok()) << t.error();
  EXPECT_EQ(describe(t->vias), "peer site-b");
  // Only one peer behind fd00:64:1::2: it, whatever the prefix's site.
  t = translate(*config_, tenancy_, route("10.9.128.0/17", {"fd00:64:1::2"}), ports);
  ASSERT_TRUE(t.ok()) << t.error();
  EXPECT_EQ(describe(t->vias), "peer site-b");
  // Two peers behind 100.64.1.2 and the prefix's site (site-a) is neither.
  t = translate(*config_, tenancy_, route("10.9.128.0/17", {"100.64.1.2"}), ports);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().find("leads to several peers (site-b, site-c) and the plan gives the "
                           "prefix no site among them"),
            std::string::npos)
      << t.error();
  // The right router on the wrong interface is no line's next hop.
  FpmRoute wrong = route("10.2.0.0/16", {"100.64.1.2"});
  wrong.next_hops[0].ifindex = 9;
  t = translate(*config_, tenancy_, wrong, ports);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().find("nor the underlay next hop of a line"), std::string::npos) << t.error();
}

TEST_F(FrrRoutesTest, KernelRoutesZebraPassesOnAreIgnored) {
  FrrRoutes routes(config_);
  FpmRoute connected = route("10.1.0.0/24", {});
  connected.protocol = kRtprotKernel;
  FpmRoute boot = route("100.64.3.0/30", {"100.64.1.2"});
  boot.protocol = kRtprotBoot;
  EXPECT_TRUE(routes.receive({connected, boot}).empty());
  auto c = routes.counts();
  EXPECT_EQ(c.routes, 0u);
  EXPECT_EQ(c.refused, 0u);
  EXPECT_EQ(c.ignored, 2u);
  // A route of another kernel table neither enters nor withdraws the main
  // table's route of the same prefix.
  (void)routes.receive({route("10.2.0.0/16", {"100.64.3.1"})});
  FpmRoute other = withdrawal("10.2.0.0/16");
  other.table = 100;
  EXPECT_TRUE(routes.receive({other}).empty());
  EXPECT_EQ(routes.counts().installed, 1u);
  EXPECT_EQ(routes.counts().other_tables, 1u);
}

// A new zebra session numbers its next-hop objects again: a stale route
// keeps what it has until zebra sends it again, whatever an object of the
// same id now says.
TEST_F(FrrRoutesTest, ANewSessionForgetsTheOldNextHopObjects) {
  FrrRoutes routes(config_);
  FpmNextHopObject nh{false, 11, 2, false, FpmNextHop{A("100.64.3.1"), 7, 1}, {}};
  FpmRoute r = route("10.2.0.0/16", {});
  r.nh_id = 11;
  ASSERT_EQ(routes.receive({nh, r}).size(), 1u);
  routes.newSession();
  EXPECT_EQ(routes.counts().next_hop_groups, 0u);
  FpmNextHopObject reused{false, 11, 2, false, FpmNextHop{A("100.64.5.1"), 7, 1}, {}};
  EXPECT_TRUE(routes.receive({reused}).empty());  // the stale route stays on site-b
  EXPECT_EQ(routes.entries().at(P("10.2.0.0/16")).installed->vias[0].peer, "site-b");
  // Sent again, it follows the new object (site-c does not carry blue: refused).
  auto out = routes.receive({r});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(out[0].withdraw);
  EXPECT_EQ(routes.counts().refused, 1u);
}

TEST_F(FrrRoutesTest, RefusesWhatTheFastPathCannotFollow) {
  struct Case {
    FpmRoute route;
    const char* reason;
  };
  FpmRoute blackhole = route("10.2.0.0/16", {});
  blackhole.type = 6;
  FpmRoute other_table = route("10.2.0.0/16", {"100.64.3.1"});
  other_table.table = 100;
  FpmRoute interface_only = route("10.2.0.0/16", {});
  interface_only.next_hops.push_back({std::nullopt, 3, 1});
  const Case cases[] = {
      {route("10.200.0.0/16", {"100.64.3.1"}), "no tenant claims it"},
      {route("10.2.0.0/16", {"100.64.9.9"}),
       "neither a peer gateway's VTEP, nor the underlay next hop of a line, nor on a LAN subnet"},
      // site-c does not carry blue.
      {route("10.2.0.0/16", {"100.64.5.1"}), "does not carry tenant blue"},
      // A LAN router of another tenant.
      {route("10.2.0.0/16", {"10.9.0.254"}), "neither a peer gateway's VTEP"},
      {blackhole, "blackhole route"},
      {other_table, "kernel table 100"},
      {interface_only, "without an address"},
  };
  for (const auto& c : cases) {
    auto t = translate(*config_, tenancy_, c.route);
    ASSERT_FALSE(t.ok()) << c.reason;
    EXPECT_NE(t.error().find(c.reason), std::string::npos) << t.error();
  }
  // One usable next hop is enough: the unusable one is left out.
  auto t = translate(*config_, tenancy_, route("10.2.0.0/16", {"100.64.9.9", "100.64.3.1"}));
  ASSERT_TRUE(t.ok()) << t.error();
  EXPECT_EQ(describe(t->vias), "peer site-b");
}

TEST_F(FrrRoutesTest, ReceiveTurnsMessagesIntoUpdates) {
  FrrRoutes routes(config_);
  auto out = routes.receive(
      {route("10.2.0.0/16", {"100.64.3.1"}), route("10.200.0.0/16", {"100.64.3.1"})});
  ASSERT_EQ(out.size(), 1u);  // the refused one changes nothing in the fast path
  EXPECT_EQ(out[0].tenant, "blue");
  EXPECT_EQ(out[0].source, engine::RouteSource::kFrr);
  EXPECT_EQ(out[0].prefix, P("10.2.0.0/16"));
  EXPECT_FALSE(out[0].withdraw);
  EXPECT_EQ(out[0].distance, 20);
  EXPECT_EQ(describe(out[0].vias), "peer site-b");
  auto c = routes.counts();
  EXPECT_EQ(c.routes, 2u);
  EXPECT_EQ(c.installed, 1u);
  EXPECT_EQ(c.refused, 1u);
  auto refused = routes.refusedList();
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_EQ(refused[0].first, "10.200.0.0/16");

  // The same route again: nothing to do.  A changed next hop: one update.
  EXPECT_TRUE(routes.receive({route("10.2.0.0/16", {"100.64.3.1"})}).empty());
  out = routes.receive({route("10.2.0.0/16", {"100.64.5.1", "100.64.3.1"})});
  // site-c does not carry blue: the route keeps only site-b.  Unchanged.
  EXPECT_TRUE(out.empty());

  // A withdrawal of an installed route withdraws it; of a refused one, nothing.
  out = routes.receive({withdrawal("10.2.0.0/16"), withdrawal("10.200.0.0/16")});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(out[0].withdraw);
  EXPECT_EQ(out[0].tenant, "blue");
  EXPECT_EQ(routes.counts().routes, 0u);
  // A withdrawal of something never sent is ignored.
  EXPECT_TRUE(routes.receive({withdrawal("10.3.0.0/16")}).empty());
}

TEST_F(FrrRoutesTest, NextHopGroupsResolveAndFollowChanges) {
  FrrRoutes routes(config_);
  FpmNextHopObject nh1{false, 11, 2, false, FpmNextHop{A("100.64.3.1"), 7, 1}, {}};
  FpmNextHopObject nh2{false, 12, 2, false, FpmNextHop{A("100.64.5.1"), 7, 1}, {}};
  FpmNextHopObject group{false, 20, 0, false, std::nullopt, {{11, 0}, {12, 0}}};
  FpmRoute r = route("10.3.0.0/16", {});
  r.nh_id = 20;
  auto out = routes.receive({nh1, nh2, group, r});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(describe(out[0].vias), "peer site-b + peer site-c");
  EXPECT_EQ(out[0].tenant, "red");
  // Member 11 now points at site-c too: the route follows without being resent.
  FpmNextHopObject nh1b = nh1;
  nh1b.next_hop->gateway = A("100.64.5.1");
  out = routes.receive({nh1b});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(describe(out[0].vias), "peer site-c");
  // The same object again (a reconnect): nothing.
  EXPECT_TRUE(routes.receive({nh1b}).empty());
  // A route naming an unknown group is refused.
  FpmRoute unknown = route("10.2.0.0/16", {});
  unknown.nh_id = 99;
  EXPECT_TRUE(routes.receive({unknown}).empty());
  EXPECT_EQ(routes.counts().refused, 1u);
  EXPECT_NE(routes.refusedList()[0].second.find("next-hop object 99 is unknown"),
            std::string::npos);
}

TEST_F(FrrRoutesTest, StaleRoutesAreSweptUnlessSentAgain) {
  FrrRoutes routes(config_);
  (void)routes.receive(
      {route("10.2.0.0/16", {"100.64.3.1"}), route("10.3.0.0/16", {"100.64.5.1"})});
  routes.markStale();
  EXPECT_EQ(routes.counts().stale, 2u);
  // zebra is back and sends one of them again, unchanged: no update.
  EXPECT_TRUE(routes.receive({route("10.2.0.0/16", {"100.64.3.1"})}).empty());
  EXPECT_EQ(routes.counts().stale, 1u);
  auto out = routes.sweep();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(out[0].withdraw);
  EXPECT_EQ(out[0].prefix, P("10.3.0.0/16"));
  EXPECT_EQ(out[0].tenant, "red");
  EXPECT_EQ(routes.counts().routes, 1u);
  EXPECT_TRUE(routes.sweep().empty());
}

TEST_F(FrrRoutesTest, ReconfigureMovesRoutesToTheirNewTenant) {
  FrrRoutes routes(config_);
  (void)routes.receive({route("10.2.0.0/16", {"100.64.3.1"})});
  // vpc-b now belongs to red (site-b carries every tenant).
  std::string text = kConfig;
  text.replace(text.find("[10.2.0.0/16], tenant: blue"), 27, "[10.2.0.0/16], tenant: red");
  auto next = load(text);
  ASSERT_TRUE(next);
  auto out = routes.reconfigure(next);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_TRUE(out[0].withdraw);
  EXPECT_EQ(out[0].tenant, "blue");
  EXPECT_FALSE(out[1].withdraw);
  EXPECT_EQ(out[1].tenant, "red");
  // The fast path refused it: kept as refused, no longer installed.
  routes.refuse(out[1], "FIB full");
  EXPECT_EQ(routes.counts().installed, 0u);
  EXPECT_EQ(routes.refusedList().at(0).second, "FIB full");
}

}  // namespace
}  // namespace mcgw::frr
