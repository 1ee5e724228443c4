// planReload: what a reload must do, for every kind of change, from literal
// configs loaded by the config loader.
#include "control/daemon/reload_plan.hpp"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "config/loader.hpp"
#include "tests/support/config_text.hpp"

namespace mcgw::daemon {
namespace {

using Names = std::vector<std::string>;

constexpr std::string_view kBase = R"yaml(node:
  name: gw-a1
  site: idc-a
eal:
  hugepages: false
  memory-mb: 128
ports:
  - name: lan0
    role: lan
    vdev: net_null0
    addresses: [10.1.0.1/24]
  - name: wan0
    role: wan
    vdev: net_null1
    addresses: [203.0.113.1/29]
tenants:
  - name: blue
    vni: 1001
    routes:
      - prefix: 10.2.0.0/16
        peer: site-b
peers:
  - name: site-b
    lines:
      - name: line1
        port: wan0
        local-vtep: 203.0.113.1
        remote-vtep: 203.0.113.2
)yaml";

// kBase with `from` (which must occur once) replaced by `to`.
std::string edited(std::string_view from, std::string_view to) {
  return test::replacedOnce(kBase, from, to);
}

config::ConfigPtr load(std::string_view text) {
  config::LoadResult r = config::loadConfigText(text, "plan.yaml");
  if (!r.ok()) {
    std::string all;
    for (const auto& e : r.error()) {
      all += e.toString() + "\n";
    }
    ADD_FAILURE() << "config does not load:\n" << all << text;
    return nullptr;
  }
  return *r;
}

ReloadPlan plan(std::string_view before, std::string_view after) {
  config::ConfigPtr a = load(before);
  config::ConfigPtr b = load(after);
  if (!a || !b) {
    return {};
  }
  return planReload(*a, *b);
}

// The plan of a reload that only touches what `check` looks at: nothing
// else may be planned.
void expectOnly(const ReloadPlan& p, Names close, Names open, Names reopen, Names adjust) {
  EXPECT_EQ(p.close, close);
  EXPECT_EQ(p.open, open);
  EXPECT_EQ(p.reopen, reopen);
  EXPECT_EQ(p.adjust, adjust);
}

TEST(ReloadPlanTest, SameConfigPlansNothing) {
  ReloadPlan p = plan(kBase, kBase);
  EXPECT_TRUE(p.changes.empty());
  EXPECT_TRUE(p.restart_required.empty());
  expectOnly(p, {}, {}, {}, {});
  EXPECT_FALSE(p.portsChange());
  EXPECT_TRUE(p.lines_added.empty() && p.lines_removed.empty() && p.lines_changed.empty());
  EXPECT_TRUE(p.tunnels_added.empty() && p.tunnels_removed.empty() && p.tunnels_changed.empty());
  EXPECT_TRUE(p.routes_changed.empty());
  EXPECT_FALSE(p.path_mtu_changed);
  EXPECT_FALSE(p.log_level);
}

TEST(ReloadPlanTest, MtuChangeAdjustsThePortInPlace) {
  ReloadPlan p =
      plan(kBase, edited("    vdev: net_null1\n", "    vdev: net_null1\n    mtu: 9000\n"));
  expectOnly(p, {}, {}, {}, {"wan0"});
  ASSERT_EQ(p.changes.size(), 2u);
  EXPECT_EQ(p.changes[0].toString(), "port wan0: changed (mtu 1500 -> 9000)");
  // A line without its own MTU takes its port's: it changes too.
  EXPECT_EQ(p.changes[1].toString(), "peer site-b: changed (lines)");
  EXPECT_EQ(p.lines_changed, Names{"site-b/line1"});
  EXPECT_TRUE(p.restart_required.empty());
}

TEST(ReloadPlanTest, AddressChangeAdjustsThePortInPlace) {
  ReloadPlan p = plan(kBase, edited("[10.1.0.1/24]", "[10.1.0.1/24, 10.1.1.1/24]"));
  expectOnly(p, {}, {}, {}, {"lan0"});
}

TEST(ReloadPlanTest, NewDeviceReopensThePort) {
  ReloadPlan p = plan(kBase, edited("vdev: net_null1", "vdev: net_null7"));
  expectOnly(p, {"wan0"}, {"wan0"}, {"wan0"}, {});
  EXPECT_TRUE(p.restart_required.empty());
}

TEST(ReloadPlanTest, NewQueueLayoutReopensThePort) {
  ReloadPlan p =
      plan(kBase, edited("    vdev: net_null0\n", "    vdev: net_null0\n    rx-queues: 2\n"));
  expectOnly(p, {"lan0"}, {"lan0"}, {"lan0"}, {});
}

TEST(ReloadPlanTest, AddedPortOpensAndRemovedPortCloses) {
  const std::string with_lan1 = edited("  - name: wan0\n",
                                       "  - name: lan1\n    role: lan\n    vdev: net_null2\n"
                                       "  - name: wan0\n");
  expectOnly(plan(kBase, with_lan1), {}, {"lan1"}, {}, {});
  expectOnly(plan(with_lan1, kBase), {"lan1"}, {}, {}, {});
}

TEST(ReloadPlanTest, RenamedPortClosesTheOldNameAndOpensTheNew) {
  std::string renamed = edited("  - name: lan0\n", "  - name: inside\n");
  ReloadPlan p = plan(kBase, renamed);
  expectOnly(p, {"lan0"}, {"inside"}, {}, {});
}

TEST(ReloadPlanTest, EalChangeNeedsARestart) {
  ReloadPlan p = plan(kBase, edited("memory-mb: 128", "memory-mb: 256"));
  ASSERT_EQ(p.restart_required.size(), 1u);
  EXPECT_EQ(p.restart_required[0],
            "eal: changed (DPDK EAL settings) [needs restart]: this needs a restart (systemctl "
            "restart mcgw)");
}

TEST(ReloadPlanTest, NewPciDeviceNeedsARestart) {
  ReloadPlan p = plan(kBase, edited("    vdev: net_null0\n", "    pci: '00:08.0'\n"));
  ASSERT_EQ(p.restart_required.size(), 1u);
  EXPECT_NE(p.restart_required[0].find("port lan0: changed"), std::string::npos)
      << p.restart_required[0];
  EXPECT_NE(p.restart_required[0].find("new PCI device 0000:00:08.0"), std::string::npos)
      << p.restart_required[0];
}

TEST(ReloadPlanTest, LinesAddedRemovedAndChanged) {
  const std::string two_lines =
      std::string(kBase) +
      "      - name: line2\n        port: wan0\n        local-vtep: 203.0.113.1\n"
      "        remote-vtep: 203.0.113.3\n";
  ReloadPlan added = plan(kBase, two_lines);
  EXPECT_EQ(added.lines_added, Names{"site-b/line2"});
  EXPECT_TRUE(added.lines_removed.empty() && added.lines_changed.empty());
  EXPECT_FALSE(added.portsChange());

  ReloadPlan removed = plan(two_lines, kBase);
  EXPECT_EQ(removed.lines_removed, Names{"site-b/line2"});

  ReloadPlan changed = plan(kBase, edited("remote-vtep: 203.0.113.2", "remote-vtep: 203.0.113.4"));
  EXPECT_EQ(changed.lines_changed, Names{"site-b/line1"});
  EXPECT_TRUE(changed.lines_added.empty() && changed.lines_removed.empty());
  // A line belongs to its peer's tunnels: they change with it.
  EXPECT_EQ(changed.tunnels_changed, Names{"site-b/blue"});
}

TEST(ReloadPlanTest, TenantAddedMakesATunnelPerPeer) {
  // With two tenants a LAN port names its own (the loader fills it in only
  // when there is one).
  const std::string one =
      edited("    addresses: [10.1.0.1/24]\n", "    addresses: [10.1.0.1/24]\n    tenant: blue\n");
  std::string two = one;
  two.replace(two.find("peers:\n"), 7, "  - name: red\n    vni: 1002\npeers:\n");
  ReloadPlan p = plan(one, two);
  EXPECT_EQ(p.tunnels_added, Names{"site-b/red"});
  EXPECT_TRUE(p.tunnels_removed.empty() && p.tunnels_changed.empty());
  EXPECT_TRUE(p.routes_changed.empty());  // red has no routes
  EXPECT_FALSE(p.portsChange());

  ReloadPlan back = plan(two, one);
  EXPECT_EQ(back.tunnels_removed, Names{"site-b/red"});

  std::string routed = one;
  routed.replace(routed.find("peers:\n"), 7,
                 "  - name: red\n    vni: 1002\n    routes:\n      - prefix: 10.9.0.0/16\n"
                 "        peer: site-b\npeers:\n");
  EXPECT_EQ(plan(one, routed).routes_changed, Names{"red"});
  EXPECT_EQ(plan(routed, one).routes_changed, Names{"red"});
}

TEST(ReloadPlanTest, RoutesChanged) {
  ReloadPlan p = plan(kBase, edited("prefix: 10.2.0.0/16", "prefix: 10.3.0.0/16"));
  EXPECT_EQ(p.routes_changed, Names{"blue"});
  // The tenant's tunnel follows its settings (routes included).
  EXPECT_EQ(p.tunnels_changed, Names{"site-b/blue"});
  EXPECT_TRUE(p.lines_changed.empty());
  EXPECT_FALSE(p.portsChange());
}

TEST(ReloadPlanTest, PeerSettingChangesItsTunnelsNotItsLines) {
  ReloadPlan p =
      plan(kBase, edited("  - name: site-b\n", "  - name: site-b\n    mss-clamp: 1300\n"));
  EXPECT_EQ(p.tunnels_changed, Names{"site-b/blue"});
  EXPECT_TRUE(p.tunnels_added.empty() && p.tunnels_removed.empty());
  EXPECT_TRUE(p.lines_changed.empty());
  EXPECT_TRUE(p.routes_changed.empty());
}

TEST(ReloadPlanTest, LoggingLevel) {
  ReloadPlan p = plan(kBase, std::string(kBase) + "logging:\n  level: debug\n");
  ASSERT_TRUE(p.log_level);
  EXPECT_EQ(*p.log_level, "debug");
  EXPECT_TRUE(p.restart_required.empty());
  ASSERT_EQ(p.changes.size(), 1u);
  EXPECT_EQ(p.changes[0].section, "logging");
}

TEST(ReloadPlanTest, PathMtuSettings) {
  ReloadPlan p = plan(kBase, std::string(kBase) + "path-mtu:\n  probe: false\n");
  EXPECT_TRUE(p.path_mtu_changed);
  EXPECT_FALSE(p.log_level);
  EXPECT_FALSE(p.portsChange());
}

TEST(ReloadPlanTest, SeveralChangesAtOnce) {
  std::string text = edited("vdev: net_null1", "vdev: net_null5");
  text.replace(text.find("memory-mb: 128"), 14, "memory-mb: 64");
  text += "logging:\n  level: warning\n";
  ReloadPlan p = plan(kBase, text);
  EXPECT_EQ(p.restart_required.size(), 1u);
  EXPECT_EQ(p.close, Names{"wan0"});
  EXPECT_EQ(p.open, Names{"wan0"});
  ASSERT_TRUE(p.log_level);
  EXPECT_EQ(*p.log_level, "warning");
  EXPECT_EQ(p.changes.size(), 3u);
}

}  // namespace
}  // namespace mcgw::daemon
