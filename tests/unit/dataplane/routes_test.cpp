// Route sources and next hops (dataplane/engine/routes.hpp) on literal
// tables: best-path selection by distance and source, falling back when the
// best is withdrawn, next-hop reference counts and index reuse after a grace
// period, ECMP group deduplication, a staged change that is aborted, and the
// routes TablesInput::fromConfig derives from a config.  No DPDK: the RIB,
// the next-hop table and the derivation are plain C++.
#include "dataplane/engine/routes.hpp"

#include <gtest/gtest.h>

#include "dataplane/engine/tables.hpp"

namespace mcgw::engine {
namespace {

config::IpPrefix pfx(const char* text) {
  return *config::IpPrefix::parse(text);
}

NextHop tunnel(uint16_t slot) {
  NextHop nh;
  nh.kind = NextHop::Kind::kTunnel;
  nh.tunnel = slot;
  return nh;
}

NextHop connected(uint16_t port) {
  NextHop nh;
  nh.kind = NextHop::Kind::kConnected;
  nh.port = port;
  return nh;
}

// A reference to nh in rib's table, as a candidate of source at distance.
Candidate take(TenantRib& rib, const NextHop& nh, RouteSource source, uint8_t distance) {
  auto i = rib.nextHops().acquire(nh);
  EXPECT_TRUE(i.ok());
  return Candidate{source, distance, *i};
}

std::string text(const std::vector<TenantFib::Change>& changes) {
  std::string s;
  for (const auto& c : changes) {
    s += c.prefix.toString() + (c.withdraw ? " withdraw" : " -> " + std::to_string(c.next_hop)) +
         "; ";
  }
  return s;
}

TEST(RouteSource, NamesAndDefaultDistances) {
  EXPECT_STREQ(toString(RouteSource::kLocal), "local");
  EXPECT_STREQ(toString(RouteSource::kConnected), "connected");
  EXPECT_STREQ(toString(RouteSource::kStatic), "static");
  EXPECT_STREQ(toString(RouteSource::kFrr), "frr");
  EXPECT_STREQ(toString(RouteSource::kPlan), "plan");
  EXPECT_EQ(defaultDistance(RouteSource::kLocal), 0);
  EXPECT_EQ(defaultDistance(RouteSource::kConnected), 0);
  EXPECT_EQ(defaultDistance(RouteSource::kStatic), 1);
  EXPECT_EQ(defaultDistance(RouteSource::kFrr), 20);
  EXPECT_EQ(defaultDistance(RouteSource::kPlan), 10);
}

TEST(TenantRib, LowestDistanceWinsThenSourceOrder) {
  TenantRib rib("blue");
  // FRR's eBGP route (20) to tunnel 7, then a static one (1) to tunnel 3.
  rib.set(pfx("10.2.0.0/16"), RouteSource::kFrr, take(rib, tunnel(7), RouteSource::kFrr, 20));
  EXPECT_EQ(text(rib.changes()), "10.2.0.0/16 -> 0; ");
  rib.commit();
  rib.set(pfx("10.2.0.0/16"), RouteSource::kStatic, take(rib, tunnel(3), RouteSource::kStatic, 1));
  EXPECT_EQ(text(rib.changes()), "10.2.0.0/16 -> 1; ");
  rib.commit();
  EXPECT_EQ(rib.best(pfx("10.2.0.0/16")), 1u);
  // Host bits are ignored: the same prefix.
  EXPECT_EQ(rib.best(pfx("10.2.3.4/16")), 1u);

  // A tie of distances: the source listed first (static before FRR) wins,
  // whatever the order the candidates came in.
  rib.set(pfx("10.3.0.0/16"), RouteSource::kFrr, take(rib, tunnel(7), RouteSource::kFrr, 5));
  rib.set(pfx("10.3.0.0/16"), RouteSource::kStatic, take(rib, tunnel(3), RouteSource::kStatic, 5));
  EXPECT_EQ(text(rib.changes()), "10.3.0.0/16 -> 1; ");
  rib.commit();
  const auto& cs = rib.routes().at(pfx("10.3.0.0/16"));
  ASSERT_EQ(cs.size(), 2u);
  EXPECT_EQ(cs[0], (Candidate{RouteSource::kStatic, 5, 1}));
  EXPECT_EQ(cs[1], (Candidate{RouteSource::kFrr, 5, 0}));

  // Connected (0) beats static (1) for the same subnet.
  rib.set(pfx("10.1.0.0/24"), RouteSource::kStatic, take(rib, tunnel(3), RouteSource::kStatic, 1));
  rib.set(pfx("10.1.0.0/24"), RouteSource::kConnected,
          take(rib, connected(2), RouteSource::kConnected, 0));
  EXPECT_EQ(text(rib.changes()), "10.1.0.0/24 -> 2; ");
  rib.commit();
}

TEST(TenantRib, WithdrawingTheBestFallsBackToTheNext) {
  TenantRib rib("blue");
  rib.set(pfx("10.2.0.0/16"), RouteSource::kStatic,
          take(rib, tunnel(3), RouteSource::kStatic, 1));  // index 0
  rib.set(pfx("10.2.0.0/16"), RouteSource::kFrr, take(rib, tunnel(7), RouteSource::kFrr, 200));
  rib.commit();
  EXPECT_EQ(rib.best(pfx("10.2.0.0/16")), 0u);

  rib.set(pfx("10.2.0.0/16"), RouteSource::kStatic, std::nullopt);
  EXPECT_EQ(text(rib.changes()), "10.2.0.0/16 -> 1; ");
  EXPECT_EQ(text(rib.reverse()), "10.2.0.0/16 -> 0; ");
  rib.commit();
  EXPECT_EQ(rib.best(pfx("10.2.0.0/16")), 1u);
  // The static route's next hop had no other user: retired, not yet free.
  EXPECT_EQ(rib.nextHops().refs(0), 0u);
  EXPECT_TRUE(rib.nextHops().retiring());

  // Withdrawing a candidate that is not the best changes nothing in the FIB.
  rib.set(pfx("10.2.0.0/16"), RouteSource::kStatic,
          take(rib, tunnel(4), RouteSource::kStatic, 250));
  EXPECT_EQ(text(rib.changes()), "");
  rib.commit();
  rib.set(pfx("10.2.0.0/16"), RouteSource::kStatic, std::nullopt);
  EXPECT_EQ(text(rib.changes()), "");
  rib.commit();

  // The last candidate gone: the prefix leaves the FIB.
  rib.set(pfx("10.2.0.0/16"), RouteSource::kFrr, std::nullopt);
  EXPECT_EQ(text(rib.changes()), "10.2.0.0/16 withdraw; ");
  rib.commit();
  EXPECT_TRUE(rib.routes().empty());
  EXPECT_EQ(rib.nextHops().used(), 0u);
}

TEST(NextHopTable, EqualNextHopsShareAnIndexReusedOnlyAfterReclaim) {
  NextHopTable t;
  EXPECT_EQ(*t.acquire(tunnel(3)), 0u);
  EXPECT_EQ(*t.acquire(tunnel(3)), 0u);  // the same next hop, the same index
  EXPECT_EQ(*t.acquire(connected(1)), 1u);
  EXPECT_EQ(t.refs(0), 2u);
  EXPECT_EQ(t.used(), 2u);
  EXPECT_EQ(t.at(1).kind, NextHop::Kind::kConnected);
  EXPECT_EQ(t.at(1).port, 1);

  t.release(0);
  EXPECT_EQ(t.refs(0), 1u);
  EXPECT_FALSE(t.retiring());
  t.release(0);  // the last: retired
  EXPECT_EQ(t.refs(0), 0u);
  EXPECT_TRUE(t.retiring());
  EXPECT_EQ(t.find(tunnel(3)), std::nullopt);
  // Until the grace period is over a new next hop gets another index, and
  // the retired entry still reads as it did.
  EXPECT_EQ(*t.acquire(tunnel(9)), 2u);
  EXPECT_EQ(t.at(0).tunnel, 3);
  t.reclaim();
  EXPECT_FALSE(t.retiring());
  EXPECT_EQ(*t.acquire(tunnel(10)), 0u);  // now reused
  EXPECT_EQ(t.at(0).tunnel, 10);
  EXPECT_EQ(t.used(), 3u);
}

TEST(NextHopTable, EcmpGroupsAreDeduplicated) {
  NextHopTable t;
  const uint32_t a = *t.acquire(tunnel(1));    // 0
  const uint32_t b = *t.acquire(tunnel(2));    // 1
  const uint32_t g = *t.acquireGroup({b, a});  // 2: takes over the caller's references
  EXPECT_EQ(g, 2u);
  EXPECT_EQ(t.at(g).kind, NextHop::Kind::kEcmp);
  EXPECT_EQ(t.at(g).n_members, 2);
  EXPECT_EQ(t.at(g).members[0], 0u);  // ascending
  EXPECT_EQ(t.at(g).members[1], 1u);
  EXPECT_EQ(t.refs(a), 1u);  // held by the group only
  EXPECT_EQ(t.refs(b), 1u);

  // The same members in another order, with a duplicate: the same group.
  const uint32_t a2 = *t.acquire(tunnel(1)), b2 = *t.acquire(tunnel(2)), a3 = *t.acquire(tunnel(1));
  EXPECT_EQ(*t.acquireGroup({a2, b2, a3}), 2u);
  EXPECT_EQ(t.refs(2), 2u);
  EXPECT_EQ(t.refs(a), 1u);
  EXPECT_EQ(t.refs(b), 1u);
  EXPECT_EQ(t.used(), 3u);

  // One distinct member is that member, not a group.
  const uint32_t a4 = *t.acquire(tunnel(1)), a5 = *t.acquire(tunnel(1));
  EXPECT_EQ(*t.acquireGroup({a4, a5}), 0u);
  EXPECT_EQ(t.refs(a), 2u);
  t.release(a);

  // Nine members are refused, and nothing is kept of them.
  std::vector<uint32_t> nine;
  for (uint16_t s = 10; s < 19; ++s) {
    nine.push_back(*t.acquire(tunnel(s)));
  }
  EXPECT_FALSE(t.acquireGroup(nine).ok());
  EXPECT_EQ(t.used(), 3u);
  t.reclaim();

  // The group's last reference goes: its members go with it.
  t.release(2);
  t.release(2);
  EXPECT_EQ(t.used(), 0u);
}

TEST(TenantRib, AbortPutsEverythingBack) {
  TenantRib rib("blue");
  rib.set(pfx("10.2.0.0/16"), RouteSource::kStatic, take(rib, tunnel(3), RouteSource::kStatic, 1));
  rib.commit();
  rib.set(pfx("10.2.0.0/16"), RouteSource::kStatic, take(rib, tunnel(4), RouteSource::kStatic, 1));
  rib.set(pfx("fd00:2::/64"), RouteSource::kFrr, take(rib, tunnel(5), RouteSource::kFrr, 20));
  rib.set(pfx("10.2.0.0/16"), RouteSource::kStatic, std::nullopt);
  EXPECT_EQ(text(rib.changes()), "10.2.0.0/16 withdraw; fd00:2::/64 -> 2; ");
  rib.abort();
  rib.nextHops().reclaim();
  EXPECT_FALSE(rib.staged());
  ASSERT_EQ(rib.routes().size(), 1u);
  EXPECT_EQ(rib.routes().at(pfx("10.2.0.0/16")).front(), (Candidate{RouteSource::kStatic, 1, 0}));
  EXPECT_EQ(rib.nextHops().used(), 1u);
  EXPECT_EQ(rib.nextHops().refs(0), 1u);
  // The indexes the aborted change took are free again, in the same order.
  EXPECT_EQ(*rib.nextHops().acquire(tunnel(8)), 1u);
  EXPECT_EQ(*rib.nextHops().acquire(tunnel(9)), 2u);
}

TEST(TablesInput, FromConfigGivesLocalConnectedAndStaticRoutes) {
  config::Config c;
  config::PortConfig lan0, lan1, wan0;
  lan0.name = "lan0";
  lan0.tenant = "blue";
  lan0.addresses = {pfx("10.1.0.1/24"), pfx("fd00:1::1/64")};
  lan1.name = "lan1";  // configured, not open
  lan1.tenant = "blue";
  lan1.addresses = {pfx("10.9.0.1/24")};
  wan0.name = "wan0";
  wan0.role = config::PortRole::kWan;
  wan0.addresses = {pfx("203.0.113.1/24")};
  c.ports = {lan0, lan1, wan0};
  config::TenantConfig blue, red;
  blue.name = "blue";
  config::StaticRoute via_peer, via_router;
  via_peer.prefix = pfx("10.2.0.0/16");
  via_peer.peer = "b";
  via_router.prefix = pfx("10.3.0.0/16");
  via_router.next_hop = config::IpAddress::parse("10.1.0.254");
  blue.routes = {via_peer, via_router};
  red.name = "red";
  c.tenants = {blue, red};
  std::map<std::string, OpenPort> open;
  open["lan0"] = OpenPort(0, Mac{}, 1);
  open["wan0"] = OpenPort(1, Mac{}, 1);

  const TablesInput in = TablesInput::fromConfig(c, open, 2);
  EXPECT_EQ(in.config, &c);
  EXPECT_EQ(in.workers, 2u);
  ASSERT_EQ(in.routes.size(), 2u);
  auto list = [](const std::vector<RouteSpec>& specs) {
    std::string s;
    for (const auto& r : specs) {
      s += r.prefix.toString() + " d" + std::to_string(r.distance);
      for (const auto& v : r.vias) {
        switch (v.kind) {
          case Via::Kind::kTunnel:
            s += " peer " + v.peer;
            break;
          case Via::Kind::kGateway:
            s += " gw " + v.address.toString() + (v.port.empty() ? "" : " on " + v.port);
            break;
          case Via::Kind::kConnected:
            s += " connected " + v.port;
            break;
          case Via::Kind::kLocal:
            s += " local";
            break;
        }
      }
      s += "; ";
    }
    return s;
  };
  const auto& b = in.routes.at("blue");
  EXPECT_EQ(list(b.at(RouteSource::kStatic)),
            "10.2.0.0/16 d1 peer b; 10.3.0.0/16 d1 gw 10.1.0.254; ");
  // Only open ports: lan1 is not.
  EXPECT_EQ(list(b.at(RouteSource::kConnected)),
            "10.1.0.0/24 d0 connected lan0; fd00:1::/64 d0 connected lan0; ");
  const std::string local =
      "10.1.0.1/32 d0 local; fd00:1::1/128 d0 local; 203.0.113.1/32 d0 local; ";
  EXPECT_EQ(list(b.at(RouteSource::kLocal)), local);
  // A tenant without ports or routes still gets the gateway's addresses.
  const auto& r = in.routes.at("red");
  EXPECT_EQ(list(r.at(RouteSource::kStatic)), "");
  EXPECT_EQ(list(r.at(RouteSource::kConnected)), "");
  EXPECT_EQ(list(r.at(RouteSource::kLocal)), local);
}

}  // namespace
}  // namespace mcgw::engine
