// config::loadConfigTextWith (a tenant's policy given apart from the file:
// the live rules, docs/policy.md "Changing rules live"): the overlay takes
// the place of the tenant's policy (or becomes it), goes through every
// check a file's policy does, its problems are numbered from its
// first_line and the file's stay where they are; the checksum stays the
// file text's.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "config/loader.hpp"

namespace mcgw::config {
namespace {

constexpr const char* kFile = "overlay.yaml";

// 24 lines; tenant blue has a policy of its own, red none.
constexpr const char* kText = R"yaml(node:
  name: gw-a1
  site: idc-a
eal:
  hugepages: false
ports:
  - name: lan0
    role: lan
    vdev: net_null0
    tenant: blue
  - name: wan0
    role: wan
    vdev: net_null1
tenants:
  - name: red
    vni: 200
  - name: blue
    vni: 100
    policy:
      default: deny
      rules:
        - name: web
          action: allow
          protocol: tcp
)yaml";

std::string all(const ConfigErrors& errors) {
  std::string out;
  for (const auto& e : errors) {
    out += e.toString() + "\n";
  }
  return out;
}

TEST(PolicyOverlay, ReplacesOrAddsTheTenantsPolicyAndKeepsTheChecksum) {
  auto file = loadConfigText(kText, kFile);
  ASSERT_TRUE(file) << all(file.error());
  auto r = loadConfigTextWith(
      kText, kFile,
      {{"blue", R"({"rules": [{"name": "no-ping", "action": "deny", "protocol": "icmp"}]})", 100},
       {"red",
        "default: deny\nrules:\n  - {name: dns, action: allow, protocol: udp, "
        "destination-ports: 53}\n",
        200}});
  ASSERT_TRUE(r) << all(r.error());
  const Config& c = **r;
  EXPECT_EQ(c.checksum, (*file)->checksum);
  EXPECT_EQ(c.source, kFile);
  const TenantConfig* blue = c.findTenant("blue");
  ASSERT_NE(blue, nullptr);
  EXPECT_FALSE(blue->policy.default_deny);  // the overlay's default, not the file's deny
  ASSERT_EQ(blue->policy.rules.size(), 1u);
  EXPECT_EQ(blue->policy.rules[0].name, "no-ping");
  EXPECT_TRUE(blue->policy.rules[0].deny);
  EXPECT_EQ(blue->policy.rules[0].protocol, uint8_t{1});
  const TenantConfig* red = c.findTenant("red");
  ASSERT_NE(red, nullptr);
  EXPECT_TRUE(red->policy.default_deny);
  ASSERT_EQ(red->policy.rules.size(), 1u);
  EXPECT_EQ(red->policy.rules[0].dport_lo, 53);
  EXPECT_EQ(red->policy.rules[0].dport_hi, 53);
  // Everything else is the file's.
  EXPECT_EQ(c.ports, (*file)->ports);
  EXPECT_EQ(c.tenants.size(), 2u);
  // No overlay: the file as loadConfigText reads it.
  auto same = loadConfigTextWith(kText, kFile, {});
  ASSERT_TRUE(same);
  EXPECT_EQ((*same)->tenants, (*file)->tenants);
}

TEST(PolicyOverlay, ProblemsAreNumberedFromFirstLine) {
  // Line 2 of the overlay (rules[0]) has a DSCP beyond 63; line 3 a bad
  // action.
  auto r = loadConfigTextWith(kText, kFile,
                              {{"blue",
                                "rules:\n"
                                "  - {name: a, action: deny, dscp: 99}\n"
                                "  - {name: b, action: maybe}\n",
                                101}});
  ASSERT_FALSE(r);
  const std::string text = all(r.error());
  ASSERT_EQ(r.error().size(), 2u) << text;
  for (const auto& e : r.error()) {
    EXPECT_GE(e.line, 101) << text;
    EXPECT_EQ(e.file, kFile);
  }
  EXPECT_NE(text.find("overlay.yaml:102:"), std::string::npos) << text;
  EXPECT_NE(text.find("expected an integer in 0..63, found \"99\""), std::string::npos) << text;
  EXPECT_NE(text.find("overlay.yaml:103:"), std::string::npos) << text;
  EXPECT_NE(text.find("expected one of allow, deny, found \"maybe\""), std::string::npos) << text;

  // A semantic check's problem likewise.
  r = loadConfigTextWith(
      kText, kFile, {{"blue", "rules:\n  - {name: a, action: deny, destination-ports: 22}\n", 40}});
  ASSERT_FALSE(r);
  ASSERT_EQ(r.error().size(), 1u) << all(r.error());
  EXPECT_EQ(r.error()[0].line, 41) << all(r.error());
  EXPECT_NE(r.error()[0].message.find("ports need protocol tcp, udp or sctp"), std::string::npos);

  // YAML that does not parse: its line, from first_line.
  r = loadConfigTextWith(kText, kFile, {{"blue", "rules: [\n  {name: a\n", 500}});
  ASSERT_FALSE(r);
  EXPECT_GE(r.error().front().line, 500) << all(r.error());

  // A tenant the file does not have.
  r = loadConfigTextWith(kText, kFile, {{"green", "{}", 300}});
  ASSERT_FALSE(r);
  ASSERT_EQ(r.error().size(), 1u) << all(r.error());
  EXPECT_EQ(r.error()[0].line, 300);
  EXPECT_EQ(r.error()[0].message, "tenant 'green' is not in the config");
}

TEST(PolicyOverlay, TheFilesOwnProblemsStayWhereTheyAre) {
  std::string bad = kText;
  bad.replace(bad.find("vni: 200"), 8, "vni: 0x");  // line 16
  auto r = loadConfigTextWith(bad, kFile, {{"blue", "{}", 100}});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().front().line, 16) << all(r.error());
}

// The bound of all tenants' rules counts the overlays' (and not the
// file's policy an overlay replaced).
TEST(PolicyOverlay, BoundsCountTheOverlays) {
  auto rules = [](size_t n) {
    std::string out = "rules:\n";
    for (size_t i = 0; i < n; ++i) {
      out += "  - {name: r" + std::to_string(i) + ", action: deny}\n";
    }
    return out;
  };
  auto r =
      loadConfigTextWith(kText, kFile, {{"red", rules(10000), 100}, {"blue", rules(6384), 20000}});
  ASSERT_TRUE(r) << all(r.error()).substr(0, 500);
  r = loadConfigTextWith(kText, kFile, {{"red", rules(10000), 100}, {"blue", rules(6385), 20000}});
  ASSERT_FALSE(r);
  EXPECT_NE(all(r.error()).find("tenant 'blue' brings the policy rules of all tenants to 16385"),
            std::string::npos)
      << all(r.error()).substr(0, 500);
  EXPECT_GE(r.error().front().line, 20000);
  r = loadConfigTextWith(kText, kFile, {{"red", rules(10001), 100}});
  ASSERT_FALSE(r);
  EXPECT_NE(all(r.error()).find("10001 'rule' entries, more than the 10000 allowed"),
            std::string::npos)
      << all(r.error()).substr(0, 500);
}

}  // namespace
}  // namespace mcgw::config
