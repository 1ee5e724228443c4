// The flow-audit section of the config: what the reader makes of it, the
// semantic checks, and the reload's diff.
#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "config/diff.hpp"
#include "config/loader.hpp"

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
)yaml";

LoadResult load(std::string_view flow_audit) {
  return loadConfigText(std::string(kBase) + std::string(flow_audit), "flows.yaml");
}

std::string errors(const LoadResult& r) {
  std::string all;
  if (!r.ok()) {
    for (const auto& e : r.error()) {
      all += e.toString() + "\n";
    }
  }
  return all;
}

TEST(FlowAuditConfig, AbsentIsOff) {
  LoadResult r = load("");
  ASSERT_TRUE(r.ok()) << errors(r);
  const FlowAuditConfig& f = (*r)->flow_audit;
  EXPECT_FALSE(f.enabled());
  EXPECT_EQ(f.sampling, 0u);
  EXPECT_TRUE(f.collectors.empty());
  EXPECT_EQ(f.active_timeout_s, 60u);
  EXPECT_EQ(f.idle_timeout_s, 15u);
  EXPECT_EQ(f.template_refresh_s, 60u);
}

TEST(FlowAuditConfig, ReadsEveryKey) {
  LoadResult r = load(R"yaml(flow-audit:
  sampling: 1000
  collectors:
    - address: 127.0.0.1
      port: 2055
    - address: "2001:db8::9"
  active-timeout: 30
  idle-timeout: 5
  template-refresh: 20
)yaml");
  ASSERT_TRUE(r.ok()) << errors(r);
  const FlowAuditConfig& f = (*r)->flow_audit;
  EXPECT_TRUE(f.enabled());
  EXPECT_EQ(f.sampling, 1000u);
  ASSERT_EQ(f.collectors.size(), 2u);
  EXPECT_EQ(f.collectors[0].address.toString(), "127.0.0.1");
  EXPECT_EQ(f.collectors[0].port, 2055);
  EXPECT_EQ(f.collectors[1].address.toString(), "2001:db8::9");
  EXPECT_EQ(f.collectors[1].port, 4739);
  EXPECT_EQ(f.active_timeout_s, 30u);
  EXPECT_EQ(f.idle_timeout_s, 5u);
  EXPECT_EQ(f.template_refresh_s, 20u);
}

TEST(FlowAuditConfig, SamplingNeedsACollector) {
  LoadResult r = load("flow-audit:\n  sampling: 1\n");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(errors(r).find("flows.yaml:15:"), std::string::npos) << errors(r);
  EXPECT_NE(errors(r).find("needs at least one collector"), std::string::npos) << errors(r);
}

TEST(FlowAuditConfig, IdleLongerThanActiveIsRefused) {
  LoadResult r = load(
      "flow-audit:\n  sampling: 10\n  collectors: [{address: 127.0.0.1}]\n  idle-timeout: 120\n");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(errors(r).find("idle-timeout 120 s is longer than active-timeout 60 s"),
            std::string::npos)
      << errors(r);
}

TEST(FlowAuditConfig, CollectorsMustBeUnicast) {
  const std::pair<const char*, const char*> cases[] = {
      {"0.0.0.0", "is the unspecified address"}, {"255.255.255.255", "is the broadcast address"},
      {"239.1.2.3", "is a multicast address"},   {"\"::\"", "is the unspecified address"},
      {"ff02::1", "is a multicast address"},     {"fe80::1", "is a link-local address"},
  };
  for (const auto& [address, why] : cases) {
    LoadResult r = load(std::string("flow-audit:\n  sampling: 10\n  collectors:\n    - address: ") +
                        address + "\n");
    ASSERT_FALSE(r.ok()) << address;
    EXPECT_NE(errors(r).find("flows.yaml:17:"), std::string::npos) << address << ": " << errors(r);
    EXPECT_NE(errors(r).find(why), std::string::npos) << address << ": " << errors(r);
    EXPECT_NE(errors(r).find("needs a unicast address"), std::string::npos) << errors(r);
  }
  // Unicast ones, global or not, are fine.
  for (const char* address : {"10.9.0.1", "127.0.0.1", "2001:db8::9", "fd00::1"}) {
    LoadResult r = load(std::string("flow-audit:\n  sampling: 10\n  collectors:\n    - address: ") +
                        address + "\n");
    EXPECT_TRUE(r.ok()) << address << ": " << errors(r);
  }
}

TEST(FlowAuditConfig, OutOfRangeValuesAreRefused) {
  EXPECT_FALSE(load("flow-audit:\n  sampling: 1000001\n").ok());
  EXPECT_FALSE(load("flow-audit:\n  active-timeout: 0\n").ok());
  EXPECT_FALSE(load("flow-audit:\n  collectors: [{address: 127.0.0.1, port: 0}]\n").ok());
}

TEST(FlowAuditConfig, ADifferenceIsAReloadableChange) {
  LoadResult a = load("");
  LoadResult b = load("flow-audit:\n  sampling: 100\n  collectors: [{address: 10.9.0.1}]\n");
  ASSERT_TRUE(a.ok() && b.ok()) << errors(a) << errors(b);
  const auto changes = diffConfigs(**a, **b);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].section, "flow-audit");
  EXPECT_FALSE(changes[0].needs_restart);
  EXPECT_EQ(changes[0].detail,
            "off -> 1-in-100 to 10.9.0.1:4739, active 60 s, idle 15 s, templates every 60 s");
}

}  // namespace
}  // namespace mcgw::config
