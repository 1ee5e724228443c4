// diffConfigs: what a reload would change, and which changes need a restart.
#include "config/diff.hpp"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "config/loader.hpp"
#include "tests/support/config_text.hpp"

namespace mcgw::config {
namespace {

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
  - name: wan0
    role: wan
    vdev: net_null1
    addresses: [203.0.113.1/29]
tenants:
  - name: blue
    vni: 1001
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

ConfigPtr load(std::string_view text) {
  LoadResult r = loadConfigText(text, "diff.yaml");
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

std::string describe(const std::vector<ConfigChange>& changes) {
  std::string out;
  for (const auto& c : changes) {
    out += "  " + c.toString() + "\n";
  }
  return out;
}

using Kind = ConfigChange::Kind;

TEST(DiffTest, IdenticalConfigsHaveNoChanges) {
  ConfigPtr a = load(kBase);
  ConfigPtr b = load(kBase);
  ASSERT_TRUE(a && b);
  EXPECT_TRUE(diffConfigs(*a, *b).empty()) << describe(diffConfigs(*a, *b));
  EXPECT_TRUE(diffConfigs(*a, *a).empty());
}

TEST(DiffTest, CommentsAndKeyOrderAreNoChange) {
  ConfigPtr a = load(kBase);
  ConfigPtr b = load("# reordered\n" + edited("node:\n  name: gw-a1\n  site: idc-a\n",
                                              "node:\n  site: idc-a   # same\n  name: gw-a1\n"));
  ASSERT_TRUE(a && b);
  EXPECT_NE(a->checksum, b->checksum);
  EXPECT_TRUE(diffConfigs(*a, *b).empty()) << describe(diffConfigs(*a, *b));
}

TEST(DiffTest, PortMtuChange) {
  ConfigPtr a = load(kBase);
  ConfigPtr b = load(edited("    vdev: net_null0\n", "    vdev: net_null0\n    mtu: 9000\n"));
  ASSERT_TRUE(a && b);
  std::vector<ConfigChange> changes = diffConfigs(*a, *b);
  ASSERT_EQ(changes.size(), 1u) << describe(changes);
  const ConfigChange& c = changes[0];
  EXPECT_EQ(c.section, "port");
  EXPECT_EQ(c.name, "lan0");
  EXPECT_EQ(c.kind, Kind::kChanged);
  EXPECT_NE(c.detail.find("mtu 1500 -> 9000"), std::string::npos) << c.detail;
  EXPECT_FALSE(c.needs_restart);
  EXPECT_EQ(c.toString(), "port lan0: changed (mtu 1500 -> 9000)");

  // And back.
  std::vector<ConfigChange> back = diffConfigs(*b, *a);
  ASSERT_EQ(back.size(), 1u) << describe(back);
  EXPECT_NE(back[0].detail.find("mtu 9000 -> 1500"), std::string::npos) << back[0].detail;
}

TEST(DiffTest, AddedAndRemovedTenant) {
  ConfigPtr one = load(kBase);
  // With two tenants lan0 must name its own; with one it carries blue anyway.
  std::string text = edited("    vni: 1001\n", "    vni: 1001\n  - name: red\n    vni: 1002\n");
  text.replace(text.find("    vdev: net_null0\n"), 20, "    vdev: net_null0\n    tenant: blue\n");
  ConfigPtr two = load(text);
  ASSERT_TRUE(one && two);

  std::vector<ConfigChange> added = diffConfigs(*one, *two);
  ASSERT_EQ(added.size(), 1u) << describe(added);
  EXPECT_EQ(added[0].section, "tenant");
  EXPECT_EQ(added[0].name, "red");
  EXPECT_EQ(added[0].kind, Kind::kAdded);
  EXPECT_FALSE(added[0].needs_restart);
  EXPECT_EQ(added[0].toString(), "tenant red: added");

  std::vector<ConfigChange> removed = diffConfigs(*two, *one);
  ASSERT_EQ(removed.size(), 1u) << describe(removed);
  EXPECT_EQ(removed[0].section, "tenant");
  EXPECT_EQ(removed[0].name, "red");
  EXPECT_EQ(removed[0].kind, Kind::kRemoved);
  EXPECT_FALSE(removed[0].needs_restart);
}

TEST(DiffTest, TenantVniChangeNamesTheField) {
  ConfigPtr a = load(kBase);
  ConfigPtr b = load(edited("vni: 1001", "vni: 2001"));
  ASSERT_TRUE(a && b);
  std::vector<ConfigChange> changes = diffConfigs(*a, *b);
  ASSERT_EQ(changes.size(), 1u) << describe(changes);
  EXPECT_EQ(changes[0].name, "blue");
  EXPECT_EQ(changes[0].kind, Kind::kChanged);
  EXPECT_NE(changes[0].detail.find("vni 1001 -> 2001"), std::string::npos) << changes[0].detail;
}

// Changes to what the fast path forwards with are applied by a reload.
struct ReloadCase {
  const char* name;
  std::string before;
  std::string after;
  const char* section;
  const char* entry;
  const char* detail;  // a substring of the change's detail
};

TEST(DiffTest, ForwardingKeysChangeWithoutRestart) {
  const std::string two_tenants =
      edited("    vni: 1001\n", "    vni: 1001\n  - name: red\n    vni: 1002\n");
  auto lan0_with = [&](const std::string& base, const std::string& extra) {
    std::string text = base;
    text.replace(text.find("    vdev: net_null0\n"), 20, "    vdev: net_null0\n" + extra);
    return text;
  };
  auto line1_with = [&](const std::string& extra) {
    std::string text(kBase);
    text.replace(text.find("remote-vtep: 203.0.113.2\n"), 25, "remote-vtep: 203.0.113.2\n" + extra);
    return text;
  };
  const std::string neighbor =
      "    addresses: [10.1.0.1/24]\n    neighbors:\n      - address: 10.1.0.9\n        mac: "
      "02:00:00:00:00:09\n";
  const ReloadCase cases[] = {
      {"tenant of a lan port", lan0_with(two_tenants, "    tenant: blue\n"),
       lan0_with(two_tenants, "    tenant: red\n"), "port", "lan0", "tenant blue -> red"},
      {"tenant that a lan port carries implicitly", std::string(kBase),
       edited("  - name: blue\n", "  - name: green\n"), "port", "lan0", "tenant blue -> green"},
      {"a neighbour added", lan0_with(std::string(kBase), "    addresses: [10.1.0.1/24]\n"),
       lan0_with(std::string(kBase), neighbor), "port", "lan0", "neighbors"},
      {"a neighbour's MAC", lan0_with(std::string(kBase), neighbor),
       lan0_with(std::string(kBase),
                 [&] {
                   std::string n = neighbor;
                   n.replace(n.find(":09\n"), 4, ":0a\n");
                   return n;
                 }()),
       "port", "lan0", "neighbors"},
      {"a line's next hop", std::string(kBase), line1_with("        next-hop: 203.0.113.6\n"),
       "peer", "site-b", "lines"},
      {"a peer's inner MAC", std::string(kBase),
       edited("  - name: site-b\n", "  - name: site-b\n    inner-mac: 5e:00:53:00:00:01\n"), "peer",
       "site-b", "inner-mac 02:00:00:00:00:01 -> 5e:00:53:00:00:01"},
      {"fast-path sleep", std::string(kBase),
       std::string(kBase) + "fast-path:\n  idle-sleep-max-us: 50\n", "fast-path", "",
       "idle-sleep-max-us 200 -> 50"},
      {"path-mtu probing", std::string(kBase),
       std::string(kBase) + "path-mtu:\n  probe: false\n  aging: 60\n", "path-mtu", "",
       "probe true -> false, aging 600 -> 60"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    ConfigPtr a = load(c.before);
    ConfigPtr b = load(c.after);
    ASSERT_TRUE(a && b);
    std::vector<ConfigChange> changes = diffConfigs(*a, *b);
    bool found = false;
    for (const auto& ch : changes) {
      EXPECT_FALSE(ch.needs_restart) << ch.toString();
      found = found || (ch.section == c.section && ch.name == c.entry &&
                        ch.kind == Kind::kChanged && ch.detail.find(c.detail) != std::string::npos);
    }
    EXPECT_TRUE(found) << "expected " << c.section << " " << c.entry << " changed (" << c.detail
                       << "); got:\n"
                       << describe(changes);
  }
}

// FRR applies BGP changes in place (frr-reload.py): none needs a restart.
TEST(DiffTest, BgpChangesNeedNoRestart) {
  const std::string bgp = edited("  - name: site-b\n", "  - name: site-b\n    asn: 65002\n") +
                          "bgp:\n  asn: 65001\n  router-id: 10.255.0.1\n";
  auto with = [&](const std::string& from, const std::string& to) {
    return test::replacedOnce(bgp, from, to);
  };
  const ReloadCase cases[] = {
      {"bgp enabled", edited("  - name: site-b\n", "  - name: site-b\n    asn: 65002\n"), bgp,
       "bgp", "", "enabled false -> true"},
      {"maximum-prefix", bgp, bgp + "  maximum-prefix: 500\n", "bgp", "",
       "maximum-prefix 10000 -> 500"},
      {"graceful restart", bgp, bgp + "  graceful-restart: false\n", "bgp", "",
       "graceful-restart true -> false"},
      {"BFD interval", bgp, bgp + "  bfd:\n    interval-ms: 50\n", "bgp", "",
       "bfd.interval-ms 100 -> 50"},
      {"FPM stale time", bgp, bgp + "  fpm:\n    stale-time: 30\n", "bgp", "",
       "fpm.stale-time 120 -> 30"},
      {"FRR directories", bgp, bgp + "  frr:\n    config-dir: /run/frr\n", "bgp", "",
       "frr.config-dir /etc/frr -> /run/frr"},
      {"a line's BFD", bgp,
       with("remote-vtep: 203.0.113.2\n", "remote-vtep: 203.0.113.2\n        bfd-multiplier: 5\n"),
       "peer", "site-b", "lines"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    ConfigPtr a = load(c.before);
    ConfigPtr b = load(c.after);
    ASSERT_TRUE(a && b);
    std::vector<ConfigChange> changes = diffConfigs(*a, *b);
    ASSERT_EQ(changes.size(), 1u) << describe(changes);
    EXPECT_FALSE(changes[0].needs_restart) << changes[0].toString();
    EXPECT_EQ(changes[0].section, c.section);
    EXPECT_EQ(changes[0].name, c.entry);
    EXPECT_EQ(changes[0].kind, Kind::kChanged);
    EXPECT_NE(changes[0].detail.find(c.detail), std::string::npos) << changes[0].toString();
  }
}

TEST(DiffTest, EalChangeNeedsRestart) {
  ConfigPtr a = load(kBase);
  ConfigPtr b = load(edited("memory-mb: 128", "memory-mb: 256"));
  ASSERT_TRUE(a && b);
  std::vector<ConfigChange> changes = diffConfigs(*a, *b);
  ASSERT_EQ(changes.size(), 1u) << describe(changes);
  EXPECT_EQ(changes[0].section, "eal");
  EXPECT_EQ(changes[0].kind, Kind::kChanged);
  EXPECT_TRUE(changes[0].needs_restart);
  EXPECT_NE(changes[0].toString().find("[needs restart]"), std::string::npos);
}

TEST(DiffTest, NewPciDeviceNeedsRestartKnownOneDoesNot) {
  // The EAL allow-lists PCI devices at start.
  ConfigPtr a = load(kBase);
  ConfigPtr b = load(edited("    vdev: net_null0\n", "    pci: '00:08.0'\n"));
  auto changes = diffConfigs(*a, *b);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_TRUE(changes[0].needs_restart);
  EXPECT_NE(changes[0].detail.find("new PCI device 0000:00:08.0"), std::string::npos)
      << changes[0].detail;
  // Same device, other spelling, new MTU: no restart.
  ConfigPtr c = load(edited("    vdev: net_null0\n", "    pci: '0000:00:08.0'\n    mtu: 9000\n"));
  changes = diffConfigs(*b, *c);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_FALSE(changes[0].needs_restart) << changes[0].toString();
}

TEST(DiffTest, LoggingLevelChangeDoesNotNeedRestart) {
  ConfigPtr a = load(kBase);
  ConfigPtr b = load(std::string(kBase) + "logging:\n  level: debug\n");
  ASSERT_TRUE(a && b);
  std::vector<ConfigChange> changes = diffConfigs(*a, *b);
  ASSERT_EQ(changes.size(), 1u) << describe(changes);
  EXPECT_EQ(changes[0].section, "logging");
  EXPECT_FALSE(changes[0].needs_restart);
  EXPECT_EQ(changes[0].detail, "level info -> debug");
}

TEST(DiffTest, SeveralChangesAreAllReported) {
  ConfigPtr a = load(kBase);
  std::string text = edited("memory-mb: 128", "memory-mb: 256");
  text.replace(text.find("remote-vtep: 203.0.113.2"), 24, "remote-vtep: 203.0.113.3");
  text += "logging:\n  level: warning\n";
  ConfigPtr b = load(text);
  ASSERT_TRUE(a && b);
  std::vector<ConfigChange> changes = diffConfigs(*a, *b);
  ASSERT_EQ(changes.size(), 3u) << describe(changes);
  int restarts = 0;
  bool peer_changed = false;
  for (const auto& c : changes) {
    restarts += c.needs_restart ? 1 : 0;
    peer_changed = peer_changed || (c.section == "peer" && c.name == "site-b" &&
                                    c.detail.find("lines") != std::string::npos);
  }
  EXPECT_EQ(restarts, 1) << describe(changes);
  EXPECT_TRUE(peer_changed) << describe(changes);
}

}  // namespace
}  // namespace mcgw::config
