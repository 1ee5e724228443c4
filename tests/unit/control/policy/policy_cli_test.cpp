// mcgwctl's side of tenant policy (control/policy/policy_cli.hpp): a policy
// file (YAML or JSON) as the JSON `policy-rules-set` carries, and where
// `show policy`'s text says the rules come from.
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "control/policy/policy_cli.hpp"

namespace mcgw::policyview {
namespace {

using nlohmann::json;

TEST(PolicyFile, YamlBecomesJsonWithStringScalars) {
  json out;
  ASSERT_EQ(policyFromYaml("# comment\n"
                           "default: deny\n"
                           "rules:\n"
                           "  - name: web\n"
                           "    action: allow\n"
                           "    protocol: tcp\n"
                           "    destination: [vpc gpu-b, 10.2.0.0/16]\n"
                           "    destination-ports: 443\n"
                           "    dscp: 10\n"
                           "    source:\n",
                           out),
            "");
  EXPECT_EQ(out, json::parse(R"({"default": "deny", "rules": [{"name": "web", "action": "allow",
      "protocol": "tcp", "destination": ["vpc gpu-b", "10.2.0.0/16"], "destination-ports": "443",
      "dscp": "10", "source": null}]})"));
}

TEST(PolicyFile, JsonIsReadToo) {
  json out;
  ASSERT_EQ(policyFromYaml(R"({"rules": [{"name": "a", "action": "deny", "dscp": 46}]})", out), "");
  EXPECT_EQ(out, json::parse(R"({"rules": [{"name": "a", "action": "deny", "dscp": "46"}]})"));
}

// An empty file or stdin (a failed pipe) would open the tenant: refused, as
// is anything but a mapping.
TEST(PolicyFile, EmptyOrNotAMappingIsRefused) {
  json out;
  EXPECT_EQ(policyFromYaml("", out),
            "the policy must be a mapping with default and/or rules (the file is empty)");
  EXPECT_EQ(policyFromYaml("# nothing\n", out),
            "the policy must be a mapping with default and/or rules (the file is empty)");
  EXPECT_EQ(policyFromYaml("[a, b]", out),
            "the policy must be a mapping with default and/or rules (the file is not a mapping)");
  EXPECT_EQ(policyFromYaml("{}", out),
            "the policy must be a mapping with default and/or rules (the file is not a mapping)");
  ASSERT_EQ(policyFromYaml("default: deny\n", out), "");
  EXPECT_EQ(out, json::parse(R"({"default": "deny"})"));
}

TEST(PolicyFile, RefusedWithTheLine) {
  json out;
  EXPECT_EQ(policyFromYaml("rules:\n  - name: a\n    name: b\n", out),
            "line 3: key \"name\" appears twice");
  EXPECT_EQ(policyFromYaml("rules:\n  - ? [a]\n    : b\n", out).substr(0, 7), "line 2:");
  const std::string bad = policyFromYaml("rules: [\n  {name: a\n", out);
  EXPECT_TRUE(bad.starts_with("line ")) << bad;
  std::string deep;
  for (int i = 0; i < 40; ++i) {
    deep += "[";
  }
  EXPECT_EQ(policyFromYaml("rules: " + deep + std::string(40, ']'), out),
            "nested more than 32 levels");
}

TEST(PolicyView, SaysWhereTheRulesComeFrom) {
  const json view = json::parse(R"({"schema": "mcgw.policy/1", "tenants": [
      {"name": "a", "vni": 1, "default": "allow", "rules": [], "rules_source": "config",
       "isolation": {"prefixes": 0, "packets": 0}},
      {"name": "b", "vni": 2, "default": "deny", "default_packets": 0,
       "rules": [{"name": "x", "action": "allow", "match": "icmp any -> any", "packets": 3}],
       "rules_source": "live by local socket since 2026-12-05T12:30:00Z",
       "isolation": {"prefixes": 0, "packets": 0}},
      {"name": "c", "vni": 3, "default": "allow", "rules": [],
       "isolation": {"prefixes": 0, "packets": 0}}]})");
  const std::string text = renderPolicy(view);
  EXPECT_NE(text.find("tenant a (VNI 1): default allow, 0 rules from the config\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("tenant b (VNI 2): default deny, 1 rule live by local socket since "
                      "2026-12-05T12:30:00Z\n"),
            std::string::npos)
      << text;
  // An older mcgwd without the field: nothing said.
  EXPECT_NE(text.find("tenant c (VNI 3): default allow, 0 rules\n"), std::string::npos) << text;
}

}  // namespace
}  // namespace mcgw::policyview
