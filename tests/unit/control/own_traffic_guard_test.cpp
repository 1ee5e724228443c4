// The own-traffic guard's nft script: the plan's ranges, the WAN kernel
// sides, and nothing when there is nothing to guard.
#include "control/frr/own_traffic_guard.hpp"

#include <gtest/gtest.h>

#include "config/loader.hpp"

namespace mcgw::frr {
namespace {

constexpr const char* kConfig = R"(
node: {name: gw, site: site-a}
eal: {hugepages: false}
ports:
  - {name: lan0, role: lan, vdev: net_null0, addresses: [10.1.0.1/24]}
  - {name: wan0, role: wan, vdev: net_null1, addresses: [100.64.1.1/30]}
tenants: [{name: blue, vni: 1000}]
address-plan:
  clouds:
    - name: lab
      regions:
        - name: r1
          vpcs:
            - {name: a, prefixes: [10.1.0.0/16, "fd00:a::/64"], site: site-a}
            - {name: b, prefixes: [10.2.0.0/16], site: site-b}
  mapped-ranges:
    - {name: m, real: 10.2.0.0/16, mapped: 100.65.0.0/16, site: site-b}
)";

config::ConfigPtr load(const std::string& text) {
  auto r = config::loadConfigText(text, "t.yaml");
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().front().toString());
  return r.ok() ? *r : nullptr;
}

TEST(OwnTrafficGuard, RejectsPlanRangesOutOfWanSides) {
  auto c = load(kConfig);
  ASSERT_TRUE(c);
  EXPECT_EQ(renderOwnTrafficGuard(*c, {"wan1", "wan2"}),
            "table inet mcgw_guard\n"
            "delete table inet mcgw_guard\n"
            "table inet mcgw_guard {\n"
            "  set plan4 {\n"
            "    type ipv4_addr\n"
            "    flags interval\n"
            "    elements = { 10.1.0.0/16, 10.2.0.0/16, 100.65.0.0/16 }\n"
            "  }\n"
            "  set plan6 {\n"
            "    type ipv6_addr\n"
            "    flags interval\n"
            "    elements = { fd00:a::/64 }\n"
            "  }\n"
            "  chain output {\n"
            "    type filter hook output priority 0; policy accept;\n"
            "    oifname { \"wan1\", \"wan2\" } ip daddr @plan4 counter reject with icmpx "
            "admin-prohibited\n"
            "    oifname { \"wan1\", \"wan2\" } ip6 daddr @plan6 counter reject with icmpx "
            "admin-prohibited\n"
            "  }\n"
            "}\n");
}

TEST(OwnTrafficGuard, NothingToGuardRemovesTheTable) {
  auto c = load(kConfig);
  ASSERT_TRUE(c);
  const std::string removal = "table inet mcgw_guard\ndelete table inet mcgw_guard\n";
  EXPECT_EQ(renderOwnTrafficGuard(*c, {}), removal);
  // A name that could break out of the script's quotes is left out.
  EXPECT_EQ(renderOwnTrafficGuard(*c, {"a\"b"}), removal);
  auto no_plan = load(R"(
node: {name: gw, site: site-a}
eal: {hugepages: false}
ports:
  - {name: lan0, role: lan, vdev: net_null0, addresses: [10.1.0.1/24]}
  - {name: wan0, role: wan, vdev: net_null1, addresses: [100.64.1.1/30]}
tenants: [{name: blue, vni: 1000}]
)");
  ASSERT_TRUE(no_plan);
  EXPECT_EQ(renderOwnTrafficGuard(*no_plan, {"wan1"}), removal);
}

}  // namespace
}  // namespace mcgw::frr
